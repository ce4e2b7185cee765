"""Call semantics of structures: records (dataclasses, NamedTuples, flax ``TrainState``,
classes whose ``__init__`` stores its parameters), their construction and ``replace``;
container methods (``append``, ``update``, ``get``, ``items``...) and the iteration builtins
(``zip``, ``enumerate``, ``next``...).  The tables are in
:mod:`jaxinterop_lint.knowledge.structures`; the pure part operations in :mod:`.parts`."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..knowledge import structures as S
from . import donation
from . import parts as P
from . import values as V
from .facts import _short
from .imports import dotted
from .library_objects import KINDS as LIBRARY_OBJECTS, ROLES as LIBRARY_OBJECT_ROLES, LibraryObjectMixin
from .values import Value


GETTER_APPLIED = "()"
"""The suffix of the name of an ``attrgetter(...)`` result (a partial of ``qn + "()"``)."""

_CALL_ROLES: dict = {
    **{qn: ("iterate", op) for qn, op in S.ITERATION_CALLS.items()},
    **{qn: ("replace", None) for qn in S.REPLACE_FUNCTIONS},
    **{qn: ("identity", None) for qn in S.IDENTITY_CALLS},
    **{qn: ("record", None) for qn in S.LIBRARY_RECORDS},
    **{f"{qn}.{name}": ("factory", None) for qn, rule in S.LIBRARY_RECORDS.items() for name in rule.factories},
    **{qn: ("namespace", None) for qn in S.NAMESPACE_CALLS},
    **{qn: ("fields", names) for qn, names in S.FIELD_CALLS.items()},
    **{qn: ("getter", how) for qn, how in S.GETTER_CALLS.items()},
    **{qn + GETTER_APPLIED: ("get", how) for qn, how in S.GETTER_CALLS.items()},
    **LIBRARY_OBJECT_ROLES,
}
"""Qualified name -> what :meth:`StructureMixin.structure_call` does with it, from the tables."""


def class_record_rule(bases: list, decorators: list) -> tuple:
    """``(Record or None, inherited fields)`` of a class with these evaluated bases and
    decorators: a record decorator, a record base of a library, or a local record base."""
    rule, inherited = None, ()
    for d in decorators:
        if d.kind == V.QNAME and d.qname in S.DATACLASS_DECORATORS:
            rule = S.DATACLASS_DECORATORS[d.qname]
    for b in bases:
        if b.kind == V.QNAME and b.qname in S.RECORD_BASES:
            base_rule = S.RECORD_BASES[b.qname]
            rule, inherited = _merge(rule, base_rule), base_rule.fields
        elif b.kind == V.CLASS and b.cls is not None and b.cls.record is not None:
            rule, inherited = _merge(rule, b.cls.record), b.cls.fields
    return rule, tuple(inherited)


def _merge(own, base):
    if own is None:
        return base
    return S.Record(fields=base.fields, tuple_like=base.tuple_like or own.tuple_like,
                    methods={**base.methods, **own.methods}, factories={**base.factories, **own.factories})


def _same_callable(a: Value, b: Value) -> bool:
    """Whether two callable values are the same function (a library name, or the same
    function of the project)."""
    if a.kind != b.kind or a.others:
        return False
    return a.qname == b.qname if a.kind == V.QNAME else a.func == b.func


class StructureMixin(LibraryObjectMixin):
    """Construct and update records and containers (a mixin of the walker)."""

    # -- records ---------------------------------------------------------------------------
    def library_class(self, qn: str):
        """The class record standing for the library record class ``qn`` in this module."""
        from .records import ClassRecord

        table = self.ma.__dict__.setdefault("_library_classes", {})
        cls = table.get(qn)
        if cls is None:
            rule = S.LIBRARY_RECORDS[qn]
            cls = table[qn] = ClassRecord(None, qn.rsplit(".", 1)[-1], record=rule, fields=rule.fields)
        return cls

    def construct(self, node, cls, pos: list, kw: dict) -> Value:
        """``Cls(...)``: an instance whose fields are what ``__init__`` stores on ``self``
        (a user ``__init__``) or the arguments bound to the record's fields in order."""
        if getattr(cls, "enum", False) and len(pos) == 1 and not kw:
            return self.enum_lookup(cls, pos[0][1])
        init = cls.methods.get("__init__")
        if init is not None and init.kind == V.FUNC and init.func is not None and init.func.local is not None:
            inst = Value(kind=V.INSTANCE, cls=cls)
            rec, bind = self.bind_args(init.func, [(inst, None)] + list(pos), kw)
            self.call_local(node, rec, bind, store=False)     # the fields make the instance
            summary = rec.owner.summary(rec)
            fields = {name: self.instantiate(v, bind, rec, node) for name, v in summary.fields}
            return P.instance(cls, fields)
        if cls.record is None:
            return Value(kind=V.INSTANCE, cls=cls)
        fields = {}
        for name in cls.fields:
            default = cls.statics.get(name)
            fields[name] = default if default is not None and default.kind not in (V.FUNC, V.CLASS) else V.UNKNOWN_VALUE
        for i, (name, (v, n)) in enumerate(zip(cls.fields, pos)):
            if i == len(pos) - 1 and n is not None and id(n) in self.starred:
                # ``Batch(*xs)`` of a sequence of unknown length: each field from here any item
                for rest in cls.fields[i:]:
                    fields[rest] = P.element_of(v)
                break
            fields[name] = v
        for name, (v, _) in kw.items():
            if name in fields or not cls.fields:
                fields[name] = v
        return self.record_instance(cls, fields)

    def record_instance(self, cls, fields: dict) -> Value:
        """An instance of record ``cls`` with ``fields`` (a NamedTuple's are its elements too)."""
        positional = None
        if cls.record is not None and cls.record.tuple_like:
            positional = tuple(fields.get(n, V.UNKNOWN_VALUE) for n in cls.fields)
        return P.instance(cls, fields, positional)

    def update(self, node, recv: Value, cls, rule: S.Update, pos: list, kw: dict) -> Value:
        """Apply a record method or factory rule: a changed copy of ``recv`` (or, for a
        factory, a new instance of ``cls``)."""
        consumed = {src[1:] for _, srcs in rule.derived for src in srcs if src.startswith("=")}
        changes = {}
        if rule.keywords or rule.new:
            for name, (v, _) in kw.items():
                if rule.new or name not in consumed:
                    changes[name] = v
        for name in rule.constants:
            changes[name] = V.SAFE_VALUE
        for name, srcs in rule.derived:
            vals = []
            for src in srcs:
                if src.startswith("="):
                    if src[1:] in kw:
                        vals.append(kw[src[1:]][0])
                elif recv is not None:
                    vals.append(P.read(recv, V.attr_key(src)))
            changes[name] = self.computed(vals)
        if rule.new or recv is None:
            return self.record_instance(cls, changes) if cls is not None else V.UNKNOWN_VALUE
        return self.replaced(recv, changes)

    def replaced(self, recv: Value, changes: dict) -> Value:
        """``recv`` with the fields ``changes`` replaced (``dataclasses.replace``)."""
        out = recv
        cls = recv.cls if recv.kind == V.INSTANCE else None
        tuple_fields = cls.fields if cls is not None and cls.record is not None and cls.record.tuple_like else ()
        for name, v in changes.items():
            out = P.with_part(out, V.attr_key(name), v)
            if name in tuple_fields:
                out = P.with_part(out, V.item_key(tuple_fields.index(name)), v)
        return out

    def enum_lookup(self, cls, arg_node) -> Value:
        """``Placement("local")`` of an enum class of the project: the member whose value
        is that constant (a literal, or a module constant: ``Placement(CONFIG["mode"])``),
        else one of its members (Python's ``Enum.__call__`` looks a member up by value)."""
        from .constants import constant_scalar

        wanted = constant_scalar(self, arg_node) if arg_node is not None else None
        name = getattr(cls, "enum_values", {}).get(wanted) if wanted is not None else None
        found = cls.statics.get(name) if name is not None else None
        if found is not None and found.kind == V.INSTANCE:
            return found
        return Value(kind=V.INSTANCE, cls=cls)

    def record_method(self, node, recv: Value, attr: str, pos: list, kw: dict) -> Optional[Value]:
        """``obj.replace(...)``, ``obj._replace(...)``, ``state.apply_gradients(...)`` on a
        record the class does not define them for; None for other methods."""
        cls = recv.cls
        rule = cls.record if cls is not None else None
        if rule is None or attr not in rule.methods:
            return None
        return self.update(node, recv, cls, rule.methods[attr], pos, kw)

    def parameter_record_method(self, node, recv: Value, attr: str, pos: list, kw: dict) -> Optional[Value]:
        """``p.replace(...)`` / ``p.apply_gradients(...)`` on (a part of) a parameter: the
        parameter with those fields updated, resolved against the record each caller passes."""
        rule = S.RECORD_METHODS.get(attr)
        if rule is None or recv.ref is None:
            return None
        return self.update(node, recv, None, rule, pos, kw)

    def class_call(self, node, cls, attr: str, pos: list, kw: dict) -> Optional[Value]:
        """``Cls.create(...)``: a record factory of the class (``TrainState.create``)."""
        rule = cls.record
        if rule is None or attr not in rule.factories:
            return None
        return self.update(node, None, cls, rule.factories[attr], pos, kw)

    # -- library calls ---------------------------------------------------------------------
    def structure_call(self, node, qn: str, pos: list, kw: dict) -> Optional[Value]:
        """A library call that builds, copies or iterates a structure; None for any other."""
        role = _CALL_ROLES.get(qn)
        if role is None:
            return None
        what, arg = role
        first = pos[0][0] if pos else None
        if what == "iterate":
            # an instance of a project class with ``__iter__`` iterates as that method's
            # iterator gives (``enumerate(Loader())``: :meth:`~.expr.ExprMixin.element_of`)
            pos = [(P.iterable(self.element_of(v, node), "iter"), n) if v.kind == V.INSTANCE and v.cls is not None
                   and "__iter__" in v.cls.methods else (v, n) for v, n in pos]
            return self.iteration(arg, pos, kw)
        if what == "replace":
            return self.replaced(first, {name: v for name, (v, _) in kw.items()}) if first is not None else None
        if what == "identity":
            return first if first is not None else P.build(parts=tuple((V.item_key(k), v) for k, (v, _) in kw.items()),
                                                          container="dict")
        if what == "record":
            return self.construct(node, self.library_class(qn), pos, kw)
        if what == "namespace":
            return P.build(parts=tuple((V.attr_key(k), v) for k, (v, _) in kw.items())) if not pos else None
        if what == "fields":
            given = {**{name: v for name, (v, _) in zip(arg, pos)}, **{k: v for k, (v, _) in kw.items()}}
            return P.build(parts=tuple((V.attr_key(k), v) for k, v in given.items()))
        if what == "getter":
            names = pos[:1] if arg == "method" else pos
            if pos and (not kw or arg == "method") and all(_getter_key(n, arg) is not None for _, n in names):
                return Value(kind=V.FUNC, func=V.FuncInfo(partial_of=qn + GETTER_APPLIED, bound=tuple(pos),
                                                          kwargs=tuple(kw.items())))
            return None
        if what == "get":
            # (a partial of the getter binds bare values: ``partial(attrgetter("c"), obj)``)
            pos = [p if isinstance(p, tuple) else (p, None) for p in pos]
            if len(pos) < 2 or _getter_key(pos[0][1], arg) is None:
                return None
            return self.called_by_name(node, pos, kw) if arg == "method" else self.got(arg, pos)
        if what in LIBRARY_OBJECTS:
            return self.library_object_call(node, what, arg, pos, kw)
        owner, _, attr = qn.rpartition(".")
        return self.class_call(node, self.library_class(owner), attr, pos, kw)

    def element_callback(self, node, qn: str, pos: list, kw: dict) -> None:
        """Call the function that the library call ``qn`` (``S.ELEMENT_CALLBACKS``: ``sorted``
        with ``key=``, ``filter``...) calls on each element of its iterable with such an
        element, for what it does to it (an export in a key function); what it returns is
        not the call's result."""
        at, keyword, of = S.ELEMENT_CALLBACKS[qn]
        fn = kw.get(keyword) if keyword is not None else None
        if fn is None and at is not None and at < len(pos):
            fn = pos[at]
        if fn is None or of >= len(pos) or qn in ("builtins.min", "builtins.max") and len(pos) != 1:
            return
        element = (self.element_of(pos[of][0], node), None)
        fval = fn[0]
        if fval.kind == V.QNAME and fval.qname in self.ma.kb.call_sinks:
            self.sink(node, f"{_short(fval.qname)}() called by {_short(qn)}()",
                      self.ma.kb.call_sinks[fval.qname], element[0], pos[of][1])
        elif fval.kind == V.FUNC:
            self.apply(node, fval, [element], {})

    def got(self, how: str, pos: list) -> Value:
        """What ``attrgetter(*names)(obj)`` (``how`` ``"attr"``) or ``itemgetter(*keys)(d)``
        reads: ``pos`` is the names' arguments, then the object; one name, its value, more, a
        tuple."""
        obj = pos[-1][0]
        out = []
        for _, n in pos[:-1]:
            key = _getter_key(n, how)
            if key is None:
                return V.UNKNOWN_VALUE
            value = obj
            if how == "item":
                value = P.read(value, key)
            else:
                for attr in key.split("."):     # as ``obj.attr`` reads (expr.e_attribute)
                    part = next((p for k, p in value.parts or () if k == V.attr_key(attr)), None)
                    value = part if part is not None else self.instance_attribute(value, attr) \
                        if value.kind == V.INSTANCE and value.cls is not None else P.read(value, V.attr_key(attr))
            out.append(value)
        return out[0] if len(out) == 1 else P.sequence(tuple(out), "tuple")

    def called_by_name(self, node, pos: list, kw: dict) -> Value:
        """``methodcaller("name", *args)(obj)`` (``pos``: the name, the arguments, then the
        object): ``obj.name(*args)``, an interop method (``__dlpack__``) an export at the
        call ``node``, a method of a project class run with the arguments."""
        from ..knowledge import apis

        name = _getter_key(pos[0][1], "method")
        obj, obj_node = pos[-1]
        sink = apis.METHOD_SINKS.get(name)
        if sink is not None:
            self.sink(node, f"`.{name}()`", sink, obj, obj_node)
            return Value(kind=V.CAPSULE) if name == "__dlpack__" else V.SAFE_VALUE
        if obj.kind == V.INSTANCE and obj.cls is not None and name in obj.cls.methods:
            return self.apply(node, self.instance_attribute(obj, name), list(pos[1:-1]), kw)
        return V.UNKNOWN_VALUE

    def iteration(self, op: str, pos: list, kw: dict) -> Value:
        """The iteration builtin ``op`` (see :data:`~jaxinterop_lint.knowledge.structures.ITERATION_CALLS`)."""
        args = [v for v, _ in pos]
        first = args[0] if args else None
        if op == "defaultdict":     # defaultdict(list[, mapping], **kw): the factory is no entry
            op, args, first = "dict", args[1:], args[1] if len(args) > 1 else None
        if op == "dict":
            if first is not None and first.ref is not None and not first.structured and not kw:
                # ``dict(batch)`` of a parameter: a copy with the same entries, each read by
                # its key (``d["preds"]`` is the caller's ``batch["preds"]``), a mapping
                # rather than pairs (the review of stop 44: ``loss(**dict(batch))``)
                return first
            out = P.build(parts=(), container="dict")
            if first is not None:
                if first.container == "dict" or first.kind == V.INSTANCE:
                    out = P.merged(out, first)
                else:
                    out = P.with_rest(out, P.read(P.element_of(first), V.item_key(1)))
            for name, (v, _) in kw.items():
                out = P.with_part(out, V.item_key(name), v)
            return out
        if op == "queue":
            return P.sequence((), "queue")
        if first is None:
            return P.sequence((), "list" if op != "tuple" else "tuple") if op in ("list", "tuple") \
                else P.iterable(None, "set" if op == "set" else "iter")
        els = first.elements if first.container != "dict" else None
        if op in ("list", "tuple", "iter"):
            if els is not None:
                return P.sequence(els, op if op != "iter" else "iter")
            return P.iterable(P.element_of(first), op if op != "iter" else "iter")
        if op == "reversed":
            return P.sequence(tuple(reversed(els)), "iter") if els is not None else P.iterable(P.element_of(first))
        if op == "enumerate":
            if els is not None:
                return P.sequence(tuple(P.sequence((V.SAFE_VALUE, e)) for e in els), "iter")
            return P.iterable(P.sequence((V.SAFE_VALUE, P.element_of(first))))
        if op == "zip":
            if all(a.elements is not None and a.container != "dict" for a in args):
                n = min(len(a.elements) for a in args)
                return P.sequence(tuple(P.sequence(tuple(a.elements[i] for a in args)) for i in range(n)), "iter")
            return P.iterable(P.sequence(tuple(P.element_of(a) for a in args)))
        if op == "zip_longest":     # a shorter iterable's place holds the fill value
            fill = kw["fillvalue"][0] if "fillvalue" in kw else V.qname("builtins.None")
            return P.iterable(P.sequence(tuple(V.join(P.element_of(a), fill) for a in args)), "iter")
        if op == "accumulate":      # each item computed from the items so far (``func``'s, or a sum)
            item = P.element_of(first)
            out = self.computed((item, item))
            if "initial" in kw:
                out = V.join(out, kw["initial"][0])
            return P.iterable(V.join(item, out), "iter")
        if op == "next":
            out = P.element_of(first)
            return V.join(out, args[1]) if len(args) > 1 else out
        if op == "filter":
            return P.iterable(P.element_of(args[1]) if len(args) > 1 else V.UNKNOWN_VALUE, "iter")
        if op == "chain":
            return P.iterable(V.join_all(P.element_of(a) for a in args), "iter")
        if op == "tee":
            return P.iterable(P.iterable(P.element_of(first), "iter"), "tuple")
        if op in ("groupby", "pairwise"):
            item = P.element_of(first)
            head = (V.UNKNOWN_VALUE if len(args) > 1 or "key" in kw else item) if op == "groupby" else item
            return P.iterable(P.sequence((head, P.iterable(item, "iter") if op == "groupby" else item)), "iter")
        return P.iterable(P.element_of(first), "list" if op == "sorted" else "set" if op == "set" else "iter")

    # -- container methods -----------------------------------------------------------------
    def container_method(self, node, recv: Value, attr: str, pos: list, kw: dict) -> Optional[Value]:
        """``recv.attr(...)`` for the container methods of the table; mutations rebind the
        receiver (``outs.append(y)``).  None when ``attr`` is not one, or ``recv`` is a
        foreign object or an array."""
        if recv.kind == V.INSTANCE:
            return self.record_method(node, recv, attr, pos, kw)
        if recv.kind == V.CLASS and recv.cls is not None:
            return self.class_call(node, recv.cls, attr, pos, kw)
        if recv.ref is not None and attr in S.RECORD_METHODS:
            return self.parameter_record_method(node, recv, attr, pos, kw)
        if recv.container == "future" and attr in S.FUTURE_RESULTS:
            return P.element_of(recv)
        op = S.CONTAINER_METHODS.get(attr)
        if recv.container == "queue" and attr in S.QUEUE_TAKES:
            return P.element_of(recv)     # (``block``, ``timeout``: no key)
        if op == "get" and not pos and not kw:
            return None     # ``holder.get()``: no dict's (dict.get takes a key), a getter's
        if op is None or recv.kind in (V.FOREIGN, V.FFI_BUFFER, V.QNAME, V.FUNC, V.CLASS, V.DEVICE,
                                       V.SHARDING, V.CAPSULE, V.KERNEL):
            return None
        if recv.kind == V.ARRAY and not recv.structured and recv.ref is None and op in S.MUTATING:
            return None
        args = [v for v, _ in pos]
        key = None
        if pos and op in ("get", "pop", "setdefault"):
            from .expr import constant_key

            key = constant_key(pos[0][1]) if pos[0][1] is not None else None
        if op in S.MUTATING:
            new, result = self.mutated(op, recv, args, kw, key)
            target = dotted(node.func.value)
            if target is not None:
                self.write_key(target, new)
                self.store_on_class(target, new)
                self.note_global(target, True)
                if op == "append" and pos and isinstance(pos[0][1], cst.Name):
                    donation.note_held(self, target, pos[0][1].value)   # JXI008 of an element
            else:
                self.store_entry(node.func.value, new)
            return result
        if op == "get" and key is not None and P.lacks_key(recv, key):
            # ``shardings.get("step", device)`` on a dict whose every key is known: the default
            return args[1] if len(args) > 1 else V.qname("builtins.None")
        if op in ("get", "pop"):
            found = P.read(recv, key) if key is not None else (
                P.any_item(recv) if args or op == "get" else P.element_of(recv))
            return V.join(found, args[1]) if len(args) > 1 else found
        if op == "values":
            return P.values_of(recv)
        if op == "items":
            return P.items_of(recv)
        if op == "keys":
            return P.iterable(V.SAFE_VALUE, "list")
        return recv  # copy

    def store_entry(self, expr, new: Value) -> None:
        """``h["a"].append(y)``: ``new`` (the changed entry) is the entry at the constant key
        of the container a dotted name holds (``h``, ``self.hist``), or one of its entries
        (``h[name].append(y)``); also read with ``h.setdefault(k, [])`` or ``h.get(k)``
        (a registry: ``HANDLERS.setdefault(topic, []).append(fn)``)."""
        from .bindings import part_read
        from .expr import constant_key

        base, index, whole = part_read(expr)
        if base is not None and not whole:
            key = constant_key(index)
            container = self.read_key(base)
            if container.structured:    # ``h[name].append(v)``: some entry
                self.write_key(base, P.with_part(container, key, new) if key is not None else P.with_rest(container, new))
                self.note_global(base, True)

    def mutated(self, op: str, recv: Value, args: list, kw: dict, key) -> tuple:
        """``(new receiver, call result)`` of a mutating container method."""
        if op == "append":
            return (P.append(recv, args[0]) if args else recv), V.SAFE_VALUE
        if op == "extend":
            return (P.extended(recv, args[0]) if args else recv), V.SAFE_VALUE
        if op == "insert":
            if len(args) < 2:
                return recv, V.SAFE_VALUE
            new = P.with_rest(P.rebuild(recv, None, recv.parts, V.join(recv.rest, P.any_item(recv)))
                              if recv.elements else recv, args[1])
            return new, V.SAFE_VALUE
        if op == "update":
            new = recv
            for other in args:
                new = P.merged(new, other)
            for name, (v, _) in kw.items():
                new = P.with_part(new, V.item_key(name), v)
            return new, V.SAFE_VALUE
        # setdefault(key, default)
        default = args[1] if len(args) > 1 else V.SAFE_VALUE
        if key is not None:
            present = next((p for k, p in recv.parts or () if k == key), None)
            if present is not None:
                return recv, present
            return P.with_part(recv, key, default), default
        return P.with_rest(recv, default), V.join(P.any_item(recv), default)

    def chosen_entry(self, table: Value, entry: Value, index: Optional[Value]) -> Value:
        """``entry``, the join of the entries of the dict ``table`` read with the key
        ``index``; when that key is a parameter of the function walked and the entries are
        callables of known constant keys (``CONVERTERS = {"torch": torch.from_dlpack,
        "numpy": np.asarray}``, ``CONVERTERS[fmt](x)``), it says which keys pick each of its
        callables (``Value.chosen``): an export by one of them is reached only by a caller
        giving one of its keys or a key that is no constant (:func:`~.invoke.picks`)."""
        if index is None or index.ref is None or index.ref[1] or self.rec is None or not entry.others \
                or entry.kind not in (V.FUNC, V.QNAME) or table.rest is not None or table.elements is not None:
            return entry
        alternatives = (V.evolve(entry, others=()),) + entry.others
        keys = [frozenset(k for k, part in table.parts or () if k[:1] == "[" and _same_callable(part, alt))
                for alt in alternatives]
        if not all(keys):
            return entry
        return V.evolve(entry, chosen=(index.ref[0], tuple(keys)))


def _getter_key(node, how: str):
    """The constant an ``attrgetter`` (``how`` ``"attr"``: a dotted name) or ``itemgetter``
    (an item key: :func:`~.expr.constant_key`) argument ``node`` is written as, or None."""
    if how != "item":
        value = node.evaluated_value if isinstance(node, cst.SimpleString) else None
        if how == "method":
            return value if isinstance(value, str) and value.isidentifier() else None
        return value if isinstance(value, str) and all(p.isidentifier() for p in value.split(".")) else None
    from .expr import constant_key

    return constant_key(node) if node is not None else None
