"""Method calls on values, and calls of this project's own functions through their summaries:
generators, fields stored, exports in calling contexts, donation.  What the summary's values
are at the call is :mod:`.instantiate`'s."""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Optional

from ..knowledge import apis
from ..knowledge import structures as S
from . import donation
from . import parts as P
from . import values as V
from .contexts import ContextEntry, silenced_at_call
from .events import CallFrame, RemovedEvent
from .expr import constant_key
from .imports import dotted
from .facts import ON_MESH
from .pinned import specialised
from .records import default_node
from .values import FuncInfo, Origin, Value


def catches_name(names, raised: str) -> bool:
    """Whether an ``except`` catching ``names`` (None: bare) catches ``raised`` (the test of
    :func:`jaxinterop_lint.rules.base.catches`, without the release check)."""
    if names is None:
        return True
    bases = apis.EXCEPTION_BASES.get(raised, (raised, "Exception", "BaseException"))
    return any(name in bases for name in names)


def bind_keywords(params: list, bind: dict, kw: dict) -> dict:
    """``bind`` (parameter index -> Arg, the positional arguments) with the keyword
    arguments ``kw`` bound to the parameters ``params`` names; when the last is ``**kw``
    (spelled so by :func:`~.records.function_record`), it is bound to a dict of the keyword
    arguments no named parameter takes (``kw["x"]`` is the argument ``x=``), and takes no
    positional argument."""
    star = len(params) - 1 if params and params[-1].startswith("**") else None
    if star is not None:
        bind.pop(star, None)
    rest = {}
    for name, arg in kw.items():
        if name in params:
            bind[params.index(name)] = arg
        else:
            rest[name] = arg
    if star is not None:
        bind[star] = (P.build(None, tuple((V.item_key(k), v) for k, (v, _) in rest.items()), None,
                              container="dict"), None)
    return bind


def _positional_count(rec) -> int:
    """How many parameters of the project function ``rec`` take positional arguments (its
    ``*args`` and keyword-only ones not counted); 0 for a record without its node (a
    summary from the cache)."""
    params = getattr(getattr(rec, "node", None), "params", None)
    if not hasattr(params, "posonly_params"):
        return 0
    return len(params.posonly_params) + len(params.params)


def keyword_node(call, arg: tuple, path):
    """The expression an Arg stands for in messages: its node, or for the dict bound to a
    ``**kw`` parameter (no node), the keyword argument ``path`` starts with."""
    if arg[1] is not None or not path or not hasattr(call, "args"):
        return arg[1]
    for a in call.args:
        if a.keyword is not None and V.item_key(a.keyword.value) == path[0]:
            return a.value
    return call


def picks(when, bind: dict, rec=None, call=None) -> bool:
    """Whether a call of ``rec`` with arguments ``bind`` can reach an export whose consumer
    a dict gives for some keys of a parameter (``when``: ``(parameter, keys)``, see
    :attr:`~.events.SinkEvent.when`): unless the argument, or the parameter's default where
    none is given (and ``call``, the call node, has no ``*``/``**`` argument that may give
    it), is a constant that is none of them (``export(x, "numpy")`` with
    ``CONVERTERS[fmt](x)`` inside)."""
    if when is None:
        return True
    arg = bind.get(when[0])
    node = arg[1] if arg is not None else None
    if node is None and not any(a.star for a in getattr(call, "args", ())):
        node = default_node(rec, when[0])
    key = constant_key(node) if node is not None else None
    return key is None or key in when[1]


class InvokeMixin:
    """Evaluate ``recv.method(...)`` and calls of local functions."""

    def method_call(self, node, recv: Value, attr: str, pos: list, kw: dict) -> Value:
        """``<recv>.<attr>(*pos, **kw)`` where ``recv`` is not a module or class."""
        if recv.kind == V.DEFERRED:
            return self.deferred_method(node, recv, attr, pos, kw)
        receiver_node = node.func.value
        known = self.known_method(node, recv, attr, pos, kw)   # facts.py: FFI buffers, stages, device arrays
        if known is not None:
            return known
        removed = apis.REMOVED_ATTRIBUTES.get(attr)
        if removed is not None and self.ma.is_removed_attribute_receiver(recv):  # x.device_buffers()
            self.record(RemovedEvent(node, f".{attr}", removed, "method-call", self.function, receiver=receiver_node))
            return V.UNKNOWN_VALUE
        sink = apis.METHOD_SINKS.get(attr)
        if sink is not None:
            self.sink(node, f"`.{attr}()`", sink, recv, receiver_node)
            return Value(kind=V.CAPSULE) if attr == "__dlpack__" else V.SAFE_VALUE
        if attr in apis.CAPSULE_PRODUCER_NAMES:
            return Value(kind=V.CAPSULE)
        if attr in apis.PLACEMENT_METHODS:
            where = pos[0] if pos else kw.get("device")
            return self.placed(node, f"`.{attr}()`", where, (recv, receiver_node))
        out = self.container_method(node, recv, attr, pos, kw)
        if out is not None and not (attr in S.QUEUE_PUTS and recv.ref is not None and recv.kind == V.ARRAY):
            return out
        if attr in apis.SAFE_METHODS:
            return V.SAFE_VALUE
        kind = recv.kind
        if recv.ref is not None and kind in (V.ARRAY, V.UNKNOWN) and attr not in apis.ARRAY_METHODS:
            self.note_param_call(node, recv, attr, pos, kw)    # its class is the caller's
            if kind == V.ARRAY and not pos and not kw:
                # ``holder.get()``: what the caller's object returns (argument_part runs it)
                return V.extend(recv, V.attr_key(attr) + V.CALLED)
            if kind == V.ARRAY and pos and not kw and self.rec is not None:
                # ``placer.put(x)``: what the caller's object returns for these values
                # (hunt51a p20: a router handed to a request handler)
                return V.extend(recv, V.attr_key(attr) + self.called_with_values(node, pos))
        if kind == V.ARRAY:
            return V.as_array(recv)
        if kind in (V.SAFE, V.FOREIGN):
            return recv
        return V.UNKNOWN_VALUE

    def callee_of(self, func, recv: Value) -> tuple:
        """``(called value, None)`` for a call of ``recv.attr`` that calls a value (a stored
        function, a module's function, a method of a class of this project), or ``(None,
        recv)`` for a method call on ``recv`` (:meth:`method_call`)."""
        attr = func.attr.value
        if recv.parts:
            key = V.attr_key(attr)
            for k, p in recv.parts:
                if k == key:
                    return p, None
        cls = recv.cls
        if recv.kind in (V.INSTANCE, V.CLASS) and cls is not None and attr not in cls.methods \
                and cls.record is not None and (attr in cls.record.methods or attr in cls.record.factories):
            return None, recv
        if recv.kind == V.INSTANCE and cls is not None and cls.thread and attr == "start" \
                and "start" not in cls.methods and "run" in cls.methods:
            attr = "run"    # Thread.start() runs run() in this process (knowledge/structures.py THREAD_CLASSES)
        if recv.kind in (V.QNAME, V.INSTANCE, V.CLASS):
            self._callee = func
            try:
                return self.attribute(func, recv, attr), None
            finally:
                self._callee = None
        return None, recv

    def apply_each(self, node, f: Value, pos: list, kw: dict) -> Value:
        """Call every callable of a joined function value (``for fn in (f, g): fn(x)``)."""
        out = None
        chosen = f.chosen
        for i, alt in enumerate((V.evolve(f, others=(), chosen=None),) + f.others):
            before = self.when
            if chosen is not None:
                self.when = (chosen[0], chosen[1][i])
            try:
                out = V.join(out, self.apply(node, alt, pos, kw))
            finally:
                self.when = before
        return out if out is not None else V.UNKNOWN_VALUE

    def placed_by_parameter(self, node, qn: str, target: Value, closure_name: Optional[str] = None) -> Value:
        """``jax.device_put(x, s)`` where ``s`` is (a part of) a parameter: the placement is
        made at each call, with the caller's sharding (:meth:`placed_through`).  With
        ``closure_name`` ``s`` is that name of the enclosing function's frame, a parameter of
        it (a lambda given to ``jax.tree.map``): the placement names it instead of an index
        (which would be read as one of this function's own parameters)."""
        from .calls import _short as short_name

        dep = target.ref if target.ref is not None else min(target.deps)
        if closure_name is not None:
            dep = (closure_name, dep[1])
        placed_by = (dep, short_name(qn), node, self.function)
        if dep[1] and dep[1][-1] == ON_MESH:
            # a sharding built on a parameter's mesh: multi-device unless a caller gives a
            # one-device mesh (_on_one_device_mesh), as a sharding on an unknown mesh is
            origin = Origin(f"{short_name(qn)} with {target.desc}", node, self.ma, self.function)
            return Value(kind=V.ARRAY, multi=origin, placed_by=placed_by)
        return Value(kind=V.UNKNOWN, placed_by=placed_by)

    def star_tuple(self, extra: list) -> Value:
        """The tuple a ``*args`` parameter gets from the positional arguments ``extra``
        (Args): their values, or where one is a ``*xs`` argument, every item of them."""
        if not any(n is not None and id(n) in self.starred for _, n in extra):
            return P.sequence(tuple(v for v, _ in extra), "tuple")
        items = [P.element_of(v) if n is not None and id(n) in self.starred else v for v, n in extra]
        return P.iterable(V.join_all(items), "tuple")

    def bind_args(self, fi: FuncInfo, pos: list, kw: dict, splat=None) -> tuple:
        """``(record, bind)``: the local function of ``fi`` (or None) and its parameters'
        arguments by position, ``index -> (value, node)``; a parameter no argument gives
        takes its kept default (:meth:`~.bindings.BindingMixin.bind_defaults`), or the entry
        of its name in a ``**`` argument of unknown keys (``splat``, ``(value, node)``:
        ``cb(**payload)`` with ``payload`` a ``**kw`` parameter passed on), joined with the
        default when it has one (the entry may be absent)."""
        args = [(v, None) if not isinstance(v, tuple) else v for v in fi.bound] + list(pos)
        rec = fi.local
        bind = dict(enumerate(args))
        star = getattr(rec, "star", None)
        if star is not None and not any(id(n) in self.starred for _, n in args[:star] if n is not None):
            # ``def run(x, *layers)``: the extra positional arguments, a tuple (a ``*xs``
            # argument there gives its items), never the keyword-only parameters after it
            extra = [bind.pop(i) for i in range(star, len(args))]
            if extra:
                bind[star] = (self.star_tuple(extra), extra[0][1] if len(extra) == 1 else None)
        elif rec is not None and args and args[-1][1] is not None and id(args[-1][1]) in self.starred:
            # ``loss(*pair)`` of a sequence of unknown length, last: each positional parameter
            # from there on may get any of its items (``P.element_of``)
            first, (v, n) = len(args) - 1, args[-1]
            item = P.element_of(v)
            for i in range(first, _positional_count(rec)):
                bind[i] = (item, n)
        if rec is not None:
            bind = bind_keywords(rec.params, bind, kw)
            defaults = getattr(rec, "defaults", None) or {}
            if splat is not None:
                for i, name in enumerate(rec.params):
                    if name.startswith("**"):    # the payload, with the call's other keywords
                        other = bind[i][0] if i in bind else None
                        # (no other keyword: the payload itself, so that a ``**batch``
                        # parameter passed on keeps its entries' keys: ``kw["preds"]``)
                        bind[i] = (P.merged(other, splat[0]) if other is not None and (other.parts or other.rest is not None)
                                   else splat[0], splat[1])
                    elif i in bind:
                        continue
                    elif not name.startswith("*"):
                        entry = P.read(splat[0], V.item_key(name))
                        bind[i] = (V.join(entry, defaults[i]) if i in defaults else entry, splat[1])
            for i, default in defaults.items():
                bind.setdefault(i, (default, None))
            return rec, bind
        return rec, bind

    def func_call(self, node, fi: FuncInfo, pos: list, kw: dict) -> Value:
        """Call a function the analysis understands: a partial of a library function, a
        wrapped function (pjit, jit, shard_map, pmap) or a def/lambda of this project.  A
        propagating wrapper (jit) returns the structure the function returns, every leaf
        multi-device when an argument is."""
        if fi.partial_of is not None:
            merged = dict(fi.kwargs)
            merged.update(kw)
            return self.library_call(node, fi.partial_of, list(fi.bound) + pos, merged)
        if fi.kwargs:       # ``functools.partial(place, sharding=s)``: the call's own keywords win
            kw = {**dict(fi.kwargs), **kw}
        rec, bind = self.bind_args(fi, pos, kw, self.splats.get(id(node)))
        result = None
        if rec is not None:
            result = self.call_local(node, rec, bind)
        if fi.source is not None:
            callee = self.text(node.func) if hasattr(node, "func") else (rec.name if rec else "it")
            source = V.multi(replace(fi.source, description=f"{callee}() is a {fi.source.description}"))
            result = source if result is None or not result.structured else P.map_leaves(result, lambda _: source)
        elif fi.propagate:
            args = self.computed([v for v, _ in bind.values()] + [v for v, _ in kw.values()])
            if result is None:
                result = args
            elif args.multi is not None or args.deps:
                result = P.map_leaves(result, lambda leaf: V.join(V.as_array(leaf), args))
        for i in fi.donate:
            if i in bind:
                self.donate(bind[i][1], node)
        for name in fi.donate_names:
            if name in kw:
                self.donate(kw[name][1], node)
            elif rec is not None and name in rec.params and rec.params.index(name) in bind:
                self.donate(bind[rec.params.index(name)][1], node)
        return result if result is not None else V.UNKNOWN_VALUE

    def call_local(self, node, rec, bind: dict, store: bool = True):
        """Call the project function ``rec`` with ``bind``: its returned value (an iterator
        of what it yields for a generator), its exports seen with these arguments, its
        donations.  Returns the value, or None when it never returns.  A function of this
        module that tests a parameter this call gives a constant runs pinned to it
        (:func:`~.pinned.specialised`)."""
        summary = rec.owner.summary(rec)
        rec = specialised(self, rec, bind, node, summary)
        if getattr(rec, "pinned", None) is not None:    # (no new local: this frame recurses)
            summary = rec.owner.summary(rec)
        result = None
        if summary.ret is not None:
            result = self.instantiate(summary.ret, bind, rec, node)
        if summary.yields is not None:
            result = P.iterable(self.instantiate(summary.yields, bind, rec, node), "iter")
        for index, effect in enumerate(summary.exports):
            self.export_at_call(node, rec, bind, effect, index)
        for p in summary.donates:
            if p in bind:
                self.donate(bind[p][1], node)
        if summary.fields and getattr(rec, "cls", None) is not None and 0 in bind and store:
            self.store_fields(node, rec, bind, summary.fields)
        if summary.globals_:
            self.apply_globals(node, rec, bind, summary.globals_)
        if summary.cells:
            self.apply_cells(node, rec, bind, summary.cells)
        if summary.fills and store:
            self.fill_arguments(node, rec, bind, summary.fills)
        if summary.calls and self.run_param_calls(node, rec, bind, summary.calls) and summary.ret is not None:
            result = self.instantiate(summary.ret, bind, rec, node)    # (an argument a method stored on)
        return result

    def fill_arguments(self, node, rec, bind: dict, fills: tuple) -> None:
        """A call of ``rec`` that stores into the containers or objects it is given
        (``def put(d, v): d["x"] = v``, ``lst.append(v)``, ``obj.attr = v``; ``fills``, see
        :class:`~.records.Summary`): the caller's argument, a name or attribute path, holds
        those values afterwards, instantiated with the call's arguments (hunt41 p13)."""
        for i, filled in fills:
            arg = bind.get(i)
            if arg is not None and arg[0].kind not in (V.QNAME, V.CLASS, V.FUNC):
                self.write_stored(arg, filled.parts or (), filled.rest, bind, rec, node)

    def store_fields(self, node, rec, bind: dict, fields: tuple) -> None:
        """A call of the method ``rec`` that stores on ``self`` (``s.set(x)``: ``self.v =
        x``): the receiver (``bind[0]``, the value and expression of ``s``) holds the stored
        values afterwards, instantiated with the call's arguments (a later ``s.close()``
        exporting ``self.v`` is a calling context with that value)."""
        if bind[0][0].kind == V.INSTANCE:
            self.write_stored(bind[0], [(V.attr_key(name), v) for name, v in fields], None, bind, rec, node)

    def write_stored(self, arg: tuple, parts, rest, bind: dict, rec, node) -> None:
        """The argument ``arg`` (its value and expression) with what the callee ``rec``
        stored in it (``parts`` by key, ``rest`` at unknown keys, in terms of its
        parameters, instantiated with ``bind``), bound back to the caller's expression when
        that is a name or an attribute path."""
        key = dotted(arg[1]) if arg[1] is not None else None
        if key is None:
            return
        new = arg[0]
        for k, v in parts:
            new = P.with_part(new, k, self.instantiate(v, bind, rec, node))
        if rest is not None:
            new = P.with_rest(new, self.instantiate(rest, bind, rec, node))
        self.write_key(key, new)

    def export_at_call(self, node, rec, bind: dict, effect, index: int) -> None:
        """A call passes ``bind`` to ``rec``, which exports a part of a parameter (``effect``,
        the ``index``-th export of its summary).  In this module the export is a calling
        context of the sink inside ``rec`` (PLAN decision 1), added to the module's
        :class:`~.contexts.ContextTable` with the caller's value, ``try`` blocks and process
        guard; for a function of another module it is recorded at the call, naming the callee,
        and so is the export of a call whose line has a ``# noqa`` for a JXI code
        (:func:`.contexts.silenced_at_call`: the directive judges it there, as it would the
        call of another module's function)."""
        arg = bind.get(effect.param)
        if arg is None or not picks(effect.event.when, bind, rec, node):
            return
        if effect.placed:   # the callee puts a value on this argument and exports it
            value = self.placed_through(effect.event.value.placed_by, bind, rec, node)
            if value is None or value.multi is None:
                return
        else:
            value = self.argument_part(rec, effect.param, arg, effect.path, node, bind)
        arg = (arg[0], keyword_node(node, arg, effect.path))
        inner = effect.event
        if rec.owner is not self.ma or getattr(rec, "node", None) is None:
            if not self.context_across(node, rec, arg, value, effect, index):
                self.export_here(node, rec, arg, value, effect)
            return
        if value.multi is not None and value.donated is None and value.false_guard is None \
                and silenced_at_call(self.ma, node):    # a noqa on the call: the finding stays here
            self.export_here(node, rec, arg, value, effect)
            return
        if value.kind in (V.SAFE, V.FOREIGN, V.QNAME, V.FUNC, V.CLASS, V.CAPSULE) and value.donated is None:
            return
        if value.multi is None and not value.deps and value.donated is None and value.false_guard is None:
            return
        name = rec.params[effect.param] if effect.param < len(rec.params) else "?"
        if value.multi is not None:
            value = V.evolve(value, multi=value.multi.step(f"passed to {rec.name}() as `{name}`", node, self.ma))
        env = self.env or {}
        entry = ContextEntry(value=V.evolve(value, param_array=None),
                             tries=tuple(replace(t, caller=True) for t in self.tries),
                             single_device_process=bool(env.get("@single")),
                             frames=(CallFrame(self.function, rec.name, node, arg[1], name, self.ma),),
                             inner=inner)
        self.ma.contexts.add(rec.name, index, (self.function, id(node), effect.param), entry,
                             join=bool(self.unrolling))
        # for this function's summary: the key the export needs is now this call's argument
        self.context_events.append(replace(entry.event(inner), when=self.passed_on(inner.when, bind)))

    def export_here(self, node, rec, arg, value, effect) -> None:
        """The export of ``effect`` (in ``rec``, reached by this call with ``value``) as a
        sink event at the call ``node`` itself, naming the callee."""
        inner = effect.event
        via = (f"{rec.name}() puts a value on it and exports that with {inner.consumer}" if effect.placed
               else f"{rec.name}() exports it with {inner.consumer}")
        self.sink(node, f"{rec.name}()", inner.sink, value, arg[1], via=via, inner=inner, placed=effect.placed)

    def passed_on(self, when, bind: dict):
        """The :attr:`~.events.SinkEvent.when` of a callee's export (``(its parameter, keys)``)
        as the function walked reaches it through a call with ``bind``: keyed by this
        function's own parameter when that is what the call gives (``relay(x, fmt): return
        export(x, fmt)``), else None (the call gave a key that picks it: :func:`picks`)."""
        if when is None:
            return None
        arg = bind.get(when[0])
        ref = arg[0].ref if arg is not None else None
        if self.rec is None or ref is None or ref[1]:
            return None
        return (ref[0], when[1])

    def context_across(self, node, rec, arg, value, effect, index: int) -> bool:
        """A call of ``rec``, an exporting function of another module, passes ``value``:
        when both files are reported and ``value`` is multi-device (not donated, no false
        guard: those messages name nodes of this module), the export is a calling context of
        the sink in the callee's file (PLAN decision 1, across modules), given to the project
        (:meth:`~.project.Project.add_context`), and True is returned.  A caller's ``try``
        that catches nothing of what the sink raises keeps the finding here (JXI007 at this
        module's handler), and so does a ``# noqa`` on the call (:func:`.contexts.silenced_at_call`).  The callee files whose reported state decided are noted in
        ``ma.context_callees`` (for the cache)."""
        project = self.ma.project
        callee = getattr(rec.owner, "path", None)
        if project is None or callee is None or not os.path.isabs(callee) or not os.path.isabs(self.ma.path):
            return False
        gives = project.gives_context(self.ma.path, callee)
        self.ma.context_callees[os.path.abspath(callee)] = bool(project.reported(os.path.abspath(callee)))
        if not gives or value.multi is None or value.donated is not None or value.false_guard is not None:
            return False
        raised = effect.event.sink.raises
        if self.tries and raised is not None and not any(
                catches_name(names, raised) for t in self.tries for _, names in t.handlers):
            return False
        if silenced_at_call(self.ma, node):    # the finding stays here, where its noqa judges it
            return False
        name = rec.params[effect.param] if effect.param < len(rec.params) else "?"
        value = V.evolve(value, multi=value.multi.step(f"passed to {rec.name}() as `{name}`", node, self.ma),
                         param_array=None)
        env = self.env or {}
        entry = ContextEntry(value=value, tries=tuple(replace(t, caller=True) for t in self.tries),
                             single_device_process=bool(env.get("@single")),
                             frames=(CallFrame(self.function, rec.name, node, arg[1], name, self.ma),))
        project.add_context(callee, rec.name, index, (os.path.abspath(self.ma.path), self.function, id(node),
                                                       effect.param), entry, join=bool(self.unrolling))
        return True

    def donate(self, arg_node, call_node) -> None:
        """Mark the variable passed as ``arg_node`` as donated to ``call_node`` (and its
        aliases; not a host value): see :mod:`.donation`."""
        donation.donate(self, arg_node, call_node)
