"""Call semantics of the provenance walk, driven by the tables of
:mod:`jaxinterop_lint.knowledge.apis`: sinks, sources, wrappers, placements, sanitizers,
removed APIs, FFI buffer copies, and calls of this module's own functions (summaries)."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from ..knowledge import apis
from ..knowledge import structures as S
from . import parts as P
from . import placements
from . import values as V
from .deferred import handed, names_class as _names_class
from .events import FfiCopyEvent, RemovedEvent
from .facts import ON_MESH, FactsMixin, _short
from .values import FuncInfo, Origin, Value, carries_multi

# An evaluated argument: (value, expression node or None).
Arg = tuple


def _true(arg: Optional[Arg]) -> bool:
    return arg is not None and isinstance(arg[1], cst.Name) and arg[1].value == "True"


def _placement_arg(pos: list, kw: dict, spec: tuple) -> Optional[Arg]:
    """The argument a ``(positional index, keyword names)`` spec of the tables names
    (:data:`~..knowledge.apis.PLACEMENT_CALLS`), or None."""
    index, names = spec
    return pos[index] if len(pos) > index else next((kw[k] for k in names if k in kw), None)


def _none_or_false(arg: Optional[Arg]) -> bool:
    return arg is not None and isinstance(arg[1], cst.Name) and arg[1].value in ("False", "None")


class CallMixin(FactsMixin):
    """Evaluate calls."""

    def e_call(self, node: cst.Call) -> Value:
        func = node.func
        f = recv = None
        named = self.constant_getattr(func) if isinstance(func, cst.Call) else None
        if named is not None:
            return self.call_named_attribute(node, func, *named)
        if isinstance(func, cst.Attribute):
            f = self.super_method(func)
            if f is None:
                f, recv = self.callee_of(func, self.eval(func.value))
        if f is None and recv is None:
            f = self.eval(func)
        pos, kw = self.arguments(node)
        if recv is not None:
            return self.method_call(node, recv, func.attr.value, pos, kw)
        return self.apply(node, f, pos, kw)

    def super_method(self, func: cst.Attribute) -> Optional[Value]:
        """``super().name`` (or ``super(C, self).name``) in a method of a class of this
        project: the first base (in the order of the ``class`` statement, each with what it
        inherits) that defines ``name``, bound to the method's own receiver, so that
        ``super().__init__(w)`` leaves ``self.w`` as the base's ``__init__`` does.  None
        elsewhere (a library base: the call is evaluated as before)."""
        call = func.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "super"):
            return None
        rec = self.rec
        cls = getattr(rec, "cls", None)
        if cls is None or not rec.params or "super" in (self.env or {}) or "super" in (self.closure or {}):
            return None     # (a name ``super`` of the program's own is not the builtin)
        attr = func.attr.value
        for base in cls.bases:
            method = base.methods.get(attr)
            if method is not None and method.kind == V.FUNC and method.func is not None:
                me = rec.params[0]
                receiver = (self.lookup(me), cst.Name(me))   # writes go to the receiver's name
                if not getattr(rec, "rebound", False):
                    # run as the class runs it: ``self.place(w)`` in the base's ``__init__`` is
                    # the override of the class (``ClassMixin.rebound``; one copy a class)
                    if attr not in cls.supers:
                        cls.supers[attr] = self.rebound(method, cls, attr, cls.own)
                    method = cls.supers[attr]
                return V.evolve(method, func=replace(method.func, bound=(receiver,)))
        return None

    def arguments(self, node: cst.Call):
        """Evaluate the arguments of a call: ``(positional, keyword)`` lists of Args."""
        pos, kw = [], {}
        for a in node.args:
            v = self.eval(a.value)
            if a.keyword is not None:
                kw[a.keyword.value] = (v, a.value)
            elif a.star == "*" and v.structured and v.elements is not None and v.rest is None \
                    and v.container in ("list", "tuple") and v.kind != V.INSTANCE:
                # ``f(*pair)`` of a sequence whose items are known: each a positional argument
                # (``loss(*jax.device_put([p, t], s))``: the review of stop 44)
                pos.extend((e, a.value) for e in v.elements)
            elif a.star != "**":
                pos.append((v, a.value))
                if a.star == "*":
                    self.starred.add(id(a.value))   # ``f(*xs)``: xs's items (invoke.star_tuple)
            else:
                self.splat(node, v, a.value, kw)
        return pos, kw

    def splat(self, node, v: Value, arg_node, kw: dict) -> None:
        """``f(**d)``: the entries of a dict with constant string keys become keyword
        arguments (``jax.device_put(x, **{"device": sharding})``); a dict of unknown keys
        that may hold a placement or an array (a ``**kw`` parameter passed on) is kept for the
        call's placement keyword (:meth:`splat_entry`)."""
        if v.structured:
            for key, part in v.parts or ():
                name = V.keyword_of(key)
                if name is not None and name not in kw:
                    kw[name] = (part, arg_node)
        elif v.deps or v.multi is not None:
            self.splats[id(node)] = (v, arg_node)

    def splat_entry(self, node, names) -> Optional[Arg]:
        """The entry ``names[0]`` of a ``**`` argument of unknown keys given to the call
        ``node`` (None: there is none)."""
        held = self.splats.get(id(node))
        if held is None or not names:
            return None
        v, arg_node = held
        return (P.read(v, V.item_key(names[0])), arg_node)

    def apply(self, node, f: Value, pos: list, kw: dict) -> Value:
        """Call the value ``f`` with evaluated arguments."""
        if f.others:
            return self.apply_each(node, f, pos, kw)
        kind = f.kind
        if kind == V.QNAME:
            deferred = self.deferred_class(f.qname)
            opened = self.opened_on_demand(node, f, pos, kw, deferred)
            if opened is not None:
                return self.apply(node, opened, pos, kw)
            if deferred:    # nothing multi-device handed to it: an instance opened on demand
                return Value(kind=V.DEFERRED, qname=f.qname)
            return self.library_call(node, f.qname, pos, kw)
        if kind == V.DEFERRED:
            return self.call_deferred(node, f, pos, kw)
        if kind == V.FUNC:
            fi = f.func
            if fi.local is not None and fi.qname is not None and self.ma.kb.declares(fi.qname):
                # a project function named in extend-sources/-sinks/-sanitizers: the
                # configuration says what it does (README "Configuration")
                return self.library_call(node, fi.qname, pos, kw)
            result = self.func_call(node, fi, pos, kw)
            if f.placed_by is not None and fi.source is not None:
                # a wrapper on a parameter's mesh (:meth:`wrapper_mesh`): its results are
                # placed on that mesh, which the callers say
                placed = Value(kind=V.ARRAY, placed_by=f.placed_by)
                result = placed if not result.structured else P.map_leaves(result, lambda _: placed)
            if fi.propagate and fi.source is None:
                result = self.under_mesh(node, result, self.text(node.func) + "(...)" if hasattr(node, "func") else "a jitted call")
            return result
        if kind == V.LAUNCHER:
            for v, n in pos:
                self.sink(node, "a numba.cuda kernel launch", apis.KERNEL_LAUNCH_SINK, v, n)
            return V.SAFE_VALUE
        if kind == V.CLASS:
            return self.construct(node, f.cls, pos, kw)
        if kind == V.INSTANCE and f.cls is not None:
            call = f.cls.methods.get("__call__")
            if call is None and f.cls.call_method is not None:    # nn.Module: forward
                call = f.cls.methods.get(f.cls.call_method)
            if call is not None and call.kind == V.FUNC and call.func is not None:
                # ``obj(x)`` is ``type(obj).__call__(obj, x)``: the method bound to ``obj``
                receiver = (f, getattr(node, "func", None))
                return self.apply(node, V.evolve(call, func=replace(call.func, bound=(receiver,))), pos, kw)
        ref = f.ref if f.ref is not None else (next(iter(f.deps)) if len(f.deps) == 1 else None)
        if ref is not None and kind in (V.UNKNOWN, V.ARRAY):
            # a parameter called (``def apply(fn, x): return fn(x)``), or what it holds
            # (``self.sink(x)``): what it is, the caller says (param_calls.py:
            # ``apply(torch.from_dlpack, sharded)``, ``Runner(torch.from_dlpack).run(sharded)``),
            # and what it returns too (``batch = place(x)`` with ``place`` a caller's
            # ``partial(jax.device_put, device=sharding)``: instantiate.argument_part calls it)
            self.note_param_call(node, V.evolve(f, ref=ref), None, pos, kw)
            # given whole parameters (``conv(fn(x))``), the caller calls its function with
            # its arguments for them; else with none
            given = [v.ref[0] for v, _ in pos if v.ref is not None and not v.ref[1]]
            key = V.called_key(given) if not kw and len(given) == len(pos) else \
                self.called_with_values(node, pos) if not kw else V.CALLED
            return V.extend(V.evolve(f, ref=ref), key)
        return V.UNKNOWN_VALUE

    def opened_on_demand(self, node, f: Value, pos: list, kw: dict, deferred: bool = False) -> Optional[Value]:
        """What the project name ``f`` (a reference the plan's gate left unopened: its text
        names nothing that makes or uses a multi-device value, ``def relay(v): return v``)
        is, opened now that a call hands it a multi-device value (issue 16: a file is
        analysed when "it defines a function that an analysed file calls with a
        multi-device value"), or a ``deferred`` class (:mod:`.deferred`: it uses a
        consumer).  None when no argument carries one, or the name is no project function or
        class."""
        project = self.ma.project
        if project is None or f.qname is None or f.qname.split(".")[0] not in project.top_names:
            return None
        args = [v for v, _ in pos] + [v for v, _ in kw.values()]
        known = any(carries_multi(v, False) for v in args)
        # Otherwise a value of a parameter: multi-device when a caller passes one (the calling
        # contexts, rules.md "Where a finding is reported"), also in a helper opened for a
        # caller (a helper of a helper hands the value back too).  A function is opened for
        # it; a class only for a known multi-device value, since a parameter handed to a
        # constructor is most often a configuration (in torchrl and keras, opening them added
        # 11 parses and 1.3 s, for no finding).
        # A deferred class uses a consumer: a parameter handed to it may be exported there.
        hands = handed(pos, kw) if deferred else not _names_class(f.qname) and any(carries_multi(v) for v in args)
        # A consumer handed over (``Runner(torch.from_dlpack)``, ``apply(TorchSink(), x)``):
        # what it is called with there may be multi-device (param_calls.py); or a function
        # making multi-device values (``Loop(partial(jax.device_put, device=sharding))``).
        consumer = any(self.is_consumer(v) or self.is_source(v) for v in args)
        if not (known or hands or consumer):
            return None
        opened = self.deferred_attribute(getattr(node, "func", None), f.qname)
        if opened is None:
            opened = project.resolve(f.qname, self.ma, demand=True)
        kinds = (V.FUNC, V.CLASS) if known or deferred or consumer else (V.FUNC,)
        return opened if opened is not None and opened.kind in kinds else None

    # -- library functions ---------------------------------------------------------------
    def library_call(self, node, qn: str, pos: list, kw: dict) -> Value:
        """A call of the library function ``qn`` (a qualified name).  Under a mesh context
        (``jax.set_mesh``) the arrays JAX makes are on every device of the mesh."""
        dunders = apis.DUNDER_CALLS.get(qn)
        if dunders is not None:
            for v, at in (pos if qn == "builtins.print" else pos[:1]):
                self.dispatch_dunder(v, dunders, at if at is not None else node)
        result = self._library_call(node, qn, pos, kw)
        if qn.startswith(apis.MESH_CONTEXT_MODULES) and qn not in apis.MESH_CONTEXT_EXEMPT \
                and not qn.startswith("jax.nn.initializers.") and "device" not in kw:
            result = self.under_mesh(node, result, f"{_short(qn)}()")
        return result

    def dispatch_dunder(self, value: Value, names: tuple, node) -> None:
        """Run the first special method of ``names`` that the class of ``value`` (an
        instance of a project class) defines, as ``repr(w)`` or ``np.asarray(w)`` does
        (:data:`~..knowledge.apis.DUNDER_CALLS`): its exports are seen with ``value``, the
        argument at ``node``."""
        if value.kind != V.INSTANCE or value.cls is None:
            return
        name = next((n for n in names if n in value.cls.methods), None)
        if name is not None:
            self.call_dunder(value, name, node)

    def _library_call(self, node, qn: str, pos: list, kw: dict) -> Value:
        first = pos[0] if pos else None
        removed = apis.REMOVED_CALLS.get(qn)
        if removed is not None:
            self.record(RemovedEvent(node, qn, removed, "call", self.function,
                                     argument=first[1] if first else None))
            if qn == "jax.dlpack.to_dlpack":
                return Value(kind=V.CAPSULE, removed_capsule=True)
            return V.UNKNOWN_VALUE
        if qn in apis.CAPSULE_CONSUMERS and first is not None and first[0].kind == V.CAPSULE \
                and not first[0].removed_capsule:
            self.record(RemovedEvent(node, qn, apis.CAPSULE_REMOVED, "capsule", self.function,
                                     argument=first[1]))
            return V.SAFE_VALUE
        if qn.rsplit(".", 1)[-1] in apis.CAPSULE_PRODUCER_NAMES:
            return Value(kind=V.CAPSULE)
        sink = self.ma.kb.call_sinks.get(qn)
        if sink is not None:
            return self.call_sink(node, qn, sink, pos, kw)
        if first is not None and first[0].kind == V.FFI_BUFFER and (qn in apis.FFI_ARRAY_CALLS or qn in apis.FFI_OTHER_COPIES):
            return self.ffi_host_copy(node, qn, pos, kw)
        placed = self.placement_call(node, qn, pos, kw)
        if placed is not None:
            return placed
        if qn in S.ELEMENT_CALLBACKS:
            self.element_callback(node, qn, pos, kw)
        structured = self.structure_call(node, qn, pos, kw)
        if structured is not None:
            return structured
        if qn in apis.TREE_MAPS and first is not None:
            return self.tree_map(node, qn, first, pos[1:])
        if qn in apis.REDUCES and first is not None and len(pos) >= 2:
            return self.fold(node, first, pos[1], pos[2] if len(pos) > 2 else kw.get("initializer", kw.get("initial")),
                             leaves=qn.startswith("jax."))
        if qn == "functools.partial" and first is not None:
            return self.partial(first[0], pos[1:], kw)
        if qn in apis.SOURCE_WRAPPERS or qn in apis.PROPAGATING_WRAPPERS:
            return self.wrap(node, qn, first[0] if first else None, kw, pos)
        if qn in apis.KERNEL_DECORATORS:
            if first is not None and first[0].kind == V.FUNC:
                return Value(kind=V.KERNEL)
            if _true(kw.get("device")):
                return V.UNKNOWN_VALUE
            return Value(kind=V.FUNC, func=FuncInfo(partial_of=qn, kwargs=tuple(kw.items())))
        placement = apis.PLACEMENT_CALLS.get(qn)
        if placement is not None:
            where = _placement_arg(pos, kw, placement)
            if where is None:
                where = self.splat_entry(node, placement[1])
            return self.placed(node, qn, where, first)
        if qn in self.ma.kb.direct_sources:
            given = apis.DIRECT_SOURCE_PLACEMENTS.get(qn)
            where = _placement_arg(pos, kw, given) if given is not None else None
            if where is not None and where[0].kind == V.DEVICE:     # one device given
                return V.SAFE_VALUE
            if where is not None and where[0].kind == V.SHARDING and where[0].ref is not None \
                    and where[0].ref[1][-1:] == (ON_MESH,):
                # on a parameter's mesh: one device where a caller gives a one-device mesh
                return self.placed_by_parameter(node, qn, where[0])
            return V.multi(Origin(self.ma.kb.direct_sources[qn], node, self.ma, self.function))
        if qn in apis.SHARDING_CONSTRUCTORS:
            return Value(kind=V.SHARDING, desc=qn.rsplit(".", 1)[-1])
        if qn in self.ma.kb.sanitizers:
            return V.FOREIGN_VALUE if qn.startswith(apis.FOREIGN_MODULES) else V.SAFE_VALUE
        if qn.startswith(apis.PLACEMENT_MODULES):
            for key in apis.PLACEMENT_KEYWORDS:
                if key in kw:
                    return self.placed(node, qn, kw[key], None, args=pos)
        shape = apis.TREE_LEAVES.get(qn)
        if shape is not None and first is not None:
            leaf = P.leaf_join(first[0])
            if shape.endswith("with_path"):
                leaf = P.sequence((V.SAFE_VALUE, leaf), "tuple")
            listed = P.iterable(leaf, "list")
            return P.sequence((listed, V.SAFE_VALUE), "tuple") if shape.startswith("flatten") else listed
        transformation = self.transformation(qn, pos, kw)
        if transformation is not None:
            return transformation
        if qn.startswith(apis.PROPAGATING_MODULES) or qn in apis.PROPAGATING_FUNCTIONS \
                or qn in _PROPAGATING_BUILTINS:
            return self.computed([v for v, _ in pos] + [v for v, _ in kw.values()])
        if qn.startswith(apis.FOREIGN_MODULES):
            return V.FOREIGN_VALUE
        if qn.startswith("builtins."):
            return V.SAFE_VALUE
        return V.UNKNOWN_VALUE

    def fold(self, node, function: Arg, items: Arg, initial: Optional[Arg], leaves: bool = False) -> Value:
        """``functools.reduce(function, items[, initial])`` (apis.REDUCES): ``function``
        called with the running value and an element (with ``leaves``, a leaf of the tree:
        ``jax.tree.reduce``): what it returns for them, joined with what it starts from."""
        element = P.leaf_join(items[0]) if leaves else self.element_of(items[0], node)
        start = V.join(element, initial[0]) if initial is not None else element
        out = self.apply(node, function[0], [(start, items[1]), (element, items[1])], {})
        known = items[0].elements
        if not leaves and known is not None and len(known) + (initial is not None) >= 2:
            return out      # the function runs at least once: what it returns
        return V.join(out, start)

    def closure_parameter(self, where: Arg) -> Optional[str]:
        """The name ``where`` spells when it is a parameter of an enclosing function read from
        this nested function's closure (not a name of its own frame), else None."""
        name = where[1].value if isinstance(where[1], cst.Name) else None
        if name is None or self.rec is None or getattr(self.rec, "parent", None) is None \
                or self.env is None or name in self.env or self.closure is None:
            return None
        held = self.closure.get(name)
        return name if held is not None and held.ref is not None and held.ref == where[0].ref else None

    def placed(self, node, qn: str, where: Optional[Arg], first: Optional[Arg], args=()) -> Value:
        """The result of putting a value somewhere: a sharding makes it multi-device, a device
        makes it safe, no target keeps what it was (``jax.device_put(x)``)."""
        if where is None or _none_or_false(where):
            if first is not None:
                return V.as_array(first[0])
            return self.computed([v for v, _ in args])
        target = where[0]
        if target.structured and target.kind != V.INSTANCE and (target.parts or target.elements is not None):
            return self.placed_tree(node, qn, target, first)
        if target.deps and target.multi is None:
            by_parameter = self.placed_by_parameter(node, qn, target, self.closure_parameter(where))
            if target.kind == V.SHARDING and target.ref is None:
                # the parameter, or a sharding of the function's own where the caller gives
                # none (values.join): several devices, or the caller's placement
                own = V.multi(Origin(f"{_short(qn)} with {target.desc or 'a sharding'}", node, self.ma, self.function))
                return V.join(own, by_parameter)
            return by_parameter
        if target.kind == V.SHARDING:
            if target.desc in ("PartitionSpec", "P") and placements.single(self.mesh_context()):
                return V.SAFE_VALUE
            placed = V.multi(Origin(f"{_short(qn)} with {target.desc}", node, self.ma, self.function))
            tree = first[0] if first is not None else None
            if tree is not None and tree.structured and tree.kind != V.INSTANCE and tree.container in ("dict", "list", "tuple"):
                # a dict or list put whole on a sharding keeps its keys, each leaf placed
                # (``batch.get("weights")`` of a dict without that key is no export)
                return P.map_leaves(tree, lambda _: placed)
            return placed
        if target.kind in (V.DEVICE,):
            return V.SAFE_VALUE
        return V.UNKNOWN_VALUE

    def placed_tree(self, node, qn: str, target: Value, first: Optional[Arg]) -> Value:
        """``jax.device_put(tree, shardings)`` with a pytree of placements (a tree prefix of
        ``tree``): each part is put by the placement at the same key or position (jax 0.10.2,
        jax/_src/api.py ``device_put``: ``device_flat = flatten_axes("device_put device",
        treedef, device)``, then one ``device_put_p`` per leaf and its placement)."""
        source = first[0] if first is not None else V.UNKNOWN_VALUE
        if target.elements is not None:
            elements = tuple(self.placed(node, qn, (t, None), (P.read(source, V.item_key(i)), None))
                             for i, t in enumerate(target.elements))
            return P.build(elements, None, None, container=target.container)
        parts = tuple((k, self.placed(node, qn, (t, None), (P.read(source, k), None))) for k, t in target.parts)
        return P.build(None, parts, None, container=target.container or "dict")

    def call_sink(self, node, qn: str, sink, pos: list, kw: dict) -> Value:
        """A call of an interop consumer."""
        arg = pos[sink.arg] if len(pos) > sink.arg else (next(iter(kw.values())) if kw and not pos else None)
        result = V.SAFE_VALUE if qn.startswith("jax.") else V.FOREIGN_VALUE
        if arg is None:
            return result
        value, subject = arg
        if value.kind == V.FFI_BUFFER:
            if sink.copy_kw and _true(kw.get("copy")):
                view = "torch" if qn.startswith("torch.") else "numpy"
                self.record(FfiCopyEvent(node, f"{_short(qn)}()", subject, "copy=True", self.function, view))
            return result
        called_by = f" called by {self.handed_to}()" if self.handed_to else ""   # ``apply(torch.from_dlpack, x)``
        self.sink(node, f"{_short(qn)}(){called_by}", sink, value, subject)
        return result

    def ffi_host_copy(self, node, qn: str, pos: list, kw: dict) -> Value:
        """A host-array function or a copy of an FFI buffer (apis.FFI_ARRAY_CALLS,
        FFI_OTHER_COPIES): ``np.array(buf)``, ``np.copy(buf)``, ``np.asarray(buf, copy=True |
        dtype=...)``, ``copy.deepcopy(buf)`` ..."""
        subject = pos[0][1]
        how = apis.FFI_OTHER_COPIES.get(qn)
        spec = apis.FFI_ARRAY_CALLS.get(qn)
        if spec is not None:
            copy = kw.get("copy") if spec.copy_kw else None
            if (spec.dtype_kw and "dtype" in kw and not _none_or_false(kw["dtype"])) or \
                    (spec.dtype_pos is not None and len(pos) > spec.dtype_pos
                     and not _none_or_false(pos[spec.dtype_pos])):
                how = "dtype"
            elif spec.copies and not _none_or_false(copy):
                how = "default-copy"
            elif _true(copy):
                how = "array-copy=True"
        if how is not None:
            self.record(FfiCopyEvent(node, f"{_short(qn)}()", subject, how, self.function))
        return V.FOREIGN_VALUE

    def tree_map(self, node, qn: str, fn: Arg, trees: list) -> Value:
        """``jax.tree.map(f, *trees)`` / ``map(f, *xs)``: ``f`` is applied to the leaves
        (``jax.tree_util.tree_map_with_path(f, tree)``: to a key path and the leaves)."""
        fval = fn[0]
        leaves = [(self.element_of(v) if qn == "builtins.map" else V.as_array(v), n) for v, n in trees]
        before = [(V.SAFE_VALUE, None)] * apis.TREE_MAPS.get(qn, 0)   # the key path of map_with_path
        if before:
            if fval.kind in (V.FUNC, V.QNAME):
                return self.computed([self.apply(node, fval, before + leaves, {})])
            return V.UNKNOWN_VALUE
        if fval.kind == V.QNAME and fval.qname in self.ma.kb.call_sinks:
            sink = self.ma.kb.call_sinks[fval.qname]
            for v, n in leaves:
                self.sink(node, f"{_short(fval.qname)}() mapped by {_short(qn)}()", sink, v, n)
            return V.FOREIGN_VALUE
        if fval.kind in (V.FUNC, V.QNAME):
            return self.computed([self.apply(node, fval, leaves, {})])
        if fval.ref is not None and fval.kind in (V.UNKNOWN, V.ARRAY):
            self.note_param_call(node, fval, None, leaves, {})     # a function the caller gives
        return V.UNKNOWN_VALUE

    def partial(self, fval: Value, pos: list, kw: dict) -> Value:
        """``functools.partial(f, *args, **kw)``."""
        if fval.kind == V.QNAME:
            return Value(kind=V.FUNC, func=FuncInfo(partial_of=fval.qname, kwargs=tuple(kw.items()),
                                                    bound=tuple(pos)))
        if fval.kind == V.FUNC:
            fi = fval.func
            return Value(kind=V.FUNC, func=replace(fi, bound=fi.bound + tuple(v for v, _ in pos),
                                                   kwargs=fi.kwargs + tuple(kw.items())))
        return V.UNKNOWN_VALUE

    def wrap(self, node, qn: str, inner: Optional[Value], kw: dict, pos: tuple = ()) -> Value:
        """``pjit(f, ...)``, ``jax.jit(f, ...)``, ``shard_map(f, ...)``, ``jax.pmap(f)``...
        (no source on a one-device mesh or device list: :meth:`one_device_wrapper`)."""
        if inner is None:
            return Value(kind=V.FUNC, func=FuncInfo(partial_of=qn, kwargs=tuple(kw.items())))
        base = inner.func if inner.kind == V.FUNC else FuncInfo(qname=inner.qname if inner.kind == V.QNAME else None)
        source = base.source
        required = apis.SOURCE_WRAPPERS.get(qn)
        if source is None and required is not None:
            present = [k for k in required if k in kw and not _none_or_false(kw[k])]
            single_out = _single_placement(kw["out_shardings"]) if "out_shardings" in kw else \
                bool(present) and all(_single_placement(kw[k]) for k in present)
            if (not required or present) and not single_out and not self.one_device_wrapper(qn, pos, kw):
                what = wrapper_name(qn) + " function"
                if present:
                    what = f"{what} with {'/'.join(sorted(present))}"
                source = Origin(what, node, self.ma, self.function)
        donate = base.donate
        donate_names = base.donate_names
        if qn in apis.DONATING_WRAPPERS:
            donate = donate | _literals(kw.get("donate_argnums"), cst.Integer)
            donate_names = donate_names | _literals(kw.get("donate_argnames"), cst.SimpleString)
        return Value(kind=V.FUNC, func=replace(
            base, source=source, propagate=base.propagate or qn in apis.PROPAGATING_WRAPPERS or source is not None,
            donate=donate, donate_names=donate_names, partial_of=None),
            placed_by=self.wrapper_mesh(node, qn, pos, kw) if source is not None and base.source is None else None)

    def wrapper_mesh(self, node, qn: str, pos, kw: dict):
        """For a source wrapper whose ``mesh=`` is (a part of) a parameter (``def smap(mesh):
        return jax.shard_map(f, mesh=mesh, ...)``), the placement on that mesh, as
        ``jax.device_put`` on a sharding built on it has (``Value.placed_by``): a call of the
        function made, and a caller of the function making it, resolve it with their mesh
        (instantiate.py: a one-device mesh makes it no source); else None."""
        where = apis.WRAPPER_PLACEMENTS.get(qn)
        if where is None or where[0] != "mesh" or self.rec is None:
            return None
        _, index, name = where
        arg = pos[index] if 0 <= index < len(pos) else kw.get(name)
        ref = arg[0].ref if arg is not None else None
        if ref is None or arg[0].kind in (V.MESH, V.SHARDING, V.DEVICE):
            return None
        return (ref[0], ref[1] + (ON_MESH,)), wrapper_name(qn), node, self.function


    def one_device_wrapper(self, qn: str, pos, kw: dict) -> bool:
        """Whether a source wrapper is told to run on one device (apis.WRAPPER_PLACEMENTS):
        ``mesh=`` a mesh known to hold one device (for ``jax.shard_map`` with no mesh, the
        one ``jax.set_mesh`` set), ``devices=`` a device list known to hold one."""
        where = apis.WRAPPER_PLACEMENTS.get(qn)
        if where is None:
            return False
        what, index, name = where
        arg = pos[index] if 0 <= index < len(pos) else kw.get(name)
        if what == "mesh":
            value = arg[0] if arg is not None else self.mesh_context() if qn == "jax.shard_map" else None
            return value is not None and value.kind == V.MESH and placements.single(value)
        return arg is not None and placements.count(placements.device_shape(arg[0])) == 1


def _single_placement(arg: Arg) -> bool:
    """Whether a ``*_shardings=`` argument names one-device placements only (a Device, a
    SingleDeviceSharding, a NamedSharding on a one-device mesh, or a tuple of them)."""
    value = arg[0]
    if value.kind == V.DEVICE:
        return True
    return bool(value.elements) and all(e.kind == V.DEVICE for e in value.elements)


def _literals(arg: Optional[Arg], kind) -> frozenset:
    """The constants of type ``kind`` (``cst.Integer`` or ``cst.SimpleString``) in an
    argument written as one constant or a tuple/list of them (``donate_argnums=(0, 1)``)."""
    if arg is None:
        return frozenset()
    node = arg[1]
    items = node.elements if isinstance(node, (cst.Tuple, cst.List)) else [node]
    out = set()
    for it in items:
        n = it.value if isinstance(it, cst.BaseElement) else it
        if isinstance(n, kind):
            out.add(int(n.value, 0) if kind is cst.Integer else n.evaluated_value)
    return frozenset(out)


_WRAPPER_NAMES = {"jax.experimental.pjit.pjit": "pjit", "jax.experimental.shard_map.shard_map": "shard_map"}


def wrapper_name(qn: str) -> str:
    """How messages name the wrapper ``qn`` (``shard_map``, ``jax.shard_map``, ``pjit``)."""
    return _WRAPPER_NAMES.get(qn, _short(qn))


# the names of the wrappers placed on a ``mesh=`` (:meth:`CallMixin.wrapper_mesh`'s descriptions)
MESH_WRAPPER_NAMES = frozenset(wrapper_name(q) for q, (what, _, _) in apis.WRAPPER_PLACEMENTS.items() if what == "mesh")

_PROPAGATING_BUILTINS = frozenset({
    "builtins.list", "builtins.tuple", "builtins.zip", "builtins.enumerate", "builtins.iter",
    "builtins.next", "builtins.reversed", "builtins.sorted", "builtins.dict", "builtins.min",
    "builtins.max", "builtins.sum", "builtins.abs", "builtins.pow", "builtins.round",
})
