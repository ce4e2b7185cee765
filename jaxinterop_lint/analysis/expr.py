"""Expression evaluation of the provenance walk: names, attributes, subscripts, operators,
containers, comprehensions and lambdas.  Calls are in :mod:`.calls`."""
from __future__ import annotations

import builtins
from dataclasses import replace
from typing import Optional

import libcst as cst

from ..knowledge import apis
from . import parts as P
from . import placements
from . import values as V
from . import versions
from . import conditions, pinned
from .constants import constant_scalar, pinned_scalar
from .conditions import ALL as SINGLE
from .env import single_device
from .events import RemovedEvent, SinkEvent
from .values import Value

BUILTIN_NAMES = frozenset(dir(builtins))
_BUILTINS = {name: V.qname("builtins." + name) for name in BUILTIN_NAMES}


def _empty(node) -> bool:
    """Whether ``node`` is ``None`` or an empty list, tuple, dict or set display."""
    if isinstance(node, cst.Name):
        return node.value == "None"
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return not node.elements
    if isinstance(node, cst.Dict):
        return not node.elements
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("list", "dict", "tuple", "set") \
        and not node.args


class ExprMixin:
    """Evaluate expressions to :class:`Value`; record sink and removed-API events."""

    # -- entry ---------------------------------------------------------------------------
    def eval(self, node) -> Value:
        """Evaluate ``node`` in the current environment."""
        method = _DISPATCH.get(type(node))
        if method is None:
            return self.eval_children(node)
        return method(self, node)

    def eval_children(self, node) -> Value:
        """Evaluate the sub-expressions of an unmodelled node; the node itself is unknown."""
        for child in node.children:
            if isinstance(child, cst.BaseExpression):
                self.eval(child)
            elif isinstance(child, (cst.FormattedStringExpression, cst.Arg, cst.Element,
                                    cst.SubscriptElement, cst.Index, cst.Slice)):
                self.eval_children(child)
        return V.UNKNOWN_VALUE

    def lookup(self, name: str) -> Value:
        """The value bound to ``name`` here, in the closure, or as a builtin."""
        env = self.env
        if env is not None and name in env:
            value = env[name]
            cells = self.own_cells
            if cells and name in cells:
                # a name of this function that its nested functions rebind with ``nonlocal``,
                # also through a function between them (module_state.py)
                value = V.join(value, cells[name])
        elif self.closure is not None and name in self.closure:
            value = self.closure[name]
            if self.rec is not None and self.rec.parent is not None:
                value = self.with_cells(name, value)
        else:
            value = None
        if value is not None:
            if value.via_import and self.ma.project is not None:
                return self.ma.project_value(value)
            return value
        builtin = _BUILTINS.get(name)
        if builtin is not None:
            return builtin
        return self.ma.star_value(name) if self.ma.star_modules else V.UNKNOWN_VALUE

    # -- atoms ---------------------------------------------------------------------------
    def e_name(self, node: cst.Name) -> Value:
        return self.lookup(node.value)

    def e_constant(self, node) -> Value:
        return V.SAFE_VALUE

    def e_fstring(self, node: cst.FormattedString) -> Value:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                v = self.eval(part.expression)
                if v.kind == V.INSTANCE:    # ``{w}`` formats w, ``{w!r}`` is its repr
                    qn = "builtins.repr" if part.conversion == "r" else "builtins.format"
                    self.dispatch_dunder(v, apis.DUNDER_CALLS[qn], part.expression)
        return V.SAFE_VALUE

    def e_attribute(self, node: cst.Attribute) -> Value:
        recv = self.eval(node.value)
        return self.attribute(node, recv, node.attr.value)

    def attribute(self, node, recv: Value, attr: str) -> Value:
        """The value of ``<recv>.<attr>``, recording attribute sinks and removed APIs."""
        kind = recv.kind
        if kind == V.QNAME:
            qn = f"{recv.qname}.{attr}"
            removed = apis.REMOVED_CALLS.get(qn)
            if removed is not None and node is not self._callee:
                self.record(RemovedEvent(node, qn, removed, "attribute", self.function))
            if self.ma.project is not None:
                return self.ma.project_value(V.qname(qn))
            return V.qname(qn)
        if recv.parts:
            key = V.attr_key(attr)
            for k, p in recv.parts:
                if k == key:
                    return p
        sink = apis.ATTRIBUTE_SINKS.get(attr)
        if sink is not None:
            self.sink(node, f"`{attr}`", sink, recv, node.value)
            return V.UNKNOWN_VALUE
        removed = apis.REMOVED_ATTRIBUTES.get(attr)
        if removed is not None:
            if self.ma.is_removed_attribute_receiver(recv):
                self.record(RemovedEvent(node, f".{attr}", removed, "attribute", self.function,
                                         receiver=node.value))
            return V.UNKNOWN_VALUE
        if kind == V.INSTANCE:
            return self.instance_attribute(recv, attr, node)
        if kind == V.MESH and attr in apis.MESH_DEVICE_ATTRIBUTES:
            return placements.device_list(recv.devices, placements.every(recv))
        if kind == V.CLASS:
            method = recv.cls.methods.get(attr)
            if method is None:
                method = P.class_static(recv.cls, attr)
            if method is not None and _classmethod(method):
                return V.evolve(method, func=replace(method.func, bound=((recv, node.value if isinstance(node, cst.Attribute) else None),)))
            return method if method is not None else V.UNKNOWN_VALUE
        if kind == V.ARRAY and not recv.structured:
            special = P.array_attribute(recv, attr)
            return special if special is not None else V.extend(recv, V.attr_key(attr))
        if attr in ("addressable_shards", "global_shards"):
            return Value(kind=V.SAFE_LIST)
        if attr in apis.SAFE_ATTRIBUTES:
            return V.SAFE_VALUE if kind != V.UNKNOWN else V.UNKNOWN_VALUE
        if recv.structured:
            return P.read(recv, V.attr_key(attr))
        if kind in (V.SAFE, V.FOREIGN, V.FFI_BUFFER):
            return V.SAFE_VALUE if kind == V.FFI_BUFFER else recv
        return V.UNKNOWN_VALUE

    def instance_attribute(self, recv: Value, attr: str, node=None) -> Value:
        """``obj.attr`` on an instance of a class of this module: a method (bound to ``obj``),
        a property's value, or a stored value (see :func:`.parts.instance_attribute`).  An
        instance of one of several classes (``for cb in [Printer(), Mirror()]``) gives the
        join of each one's (its methods: a joined function value, each called)."""
        if recv.others:
            return V.join_all([self.instance_attribute(alt, attr, node)
                               for alt in (V.evolve(recv, others=()),) + recv.others])
        cls = recv.cls
        method = cls.methods.get(attr)
        if method is not None:
            if method.func is None:
                return V.UNKNOWN_VALUE
            rec = method.func.local
            receiver = (recv, node.value if isinstance(node, cst.Attribute) else None)
            if _classmethod(method):
                receiver = (Value(kind=V.CLASS, cls=cls), None)
            if rec is not None and getattr(rec, "is_property", False):
                summary = rec.owner.summary(rec)
                if summary.ret is None:
                    return V.UNKNOWN_VALUE
                return self.instantiate(summary.ret, {0: receiver}, rec, node)
            return V.evolve(method, func=replace(method.func, bound=(receiver,)))
        static = P.class_static(cls, attr)
        if static is not None and static.kind == V.INSTANCE and static.cls is not None \
                and "__get__" in static.cls.methods:
            # a descriptor (``down = ShardedParam(...)`` in the class body): reading it on an
            # instance is ``type(d).__get__(d, obj, type(obj))`` (Python's data model)
            obj = node.value if isinstance(node, cst.Attribute) else None
            got = self.call_dunder(static, "__get__", node, [(recv, obj), (Value(kind=V.CLASS, cls=cls), None)])
            if got is not None:
                return got
        return P.instance_attribute(recv, attr, self.ma.class_attribute(cls, attr))

    def e_subscript(self, node: cst.Subscript) -> Value:
        recv = self.eval(node.value)
        key = index = None
        sliced = False
        for el in node.slice:
            sl = el.slice
            if isinstance(sl, cst.Index):
                index = self.eval(sl.value)
                if len(node.slice) == 1:
                    key = constant_key(sl.value)
            else:
                sliced = True
                self.eval_children(sl)
        kind = recv.kind
        if kind == V.DEVICE_LIST:
            return placements.indexed(recv.devices, node.slice, self.int_constant)
        if kind == V.KERNEL:
            return Value(kind=V.LAUNCHER)
        if kind == V.SAFE_LIST:
            return V.SAFE_VALUE
        if kind == V.CLASS and getattr(recv.cls, "enum", False):
            # ``Policy["REPLICATED"]``: that member, or one of them
            name = V.keyword_of(key) if key is not None else None
            found = recv.cls.statics.get(name) if name is not None else None
            return found if found is not None and found.kind == V.INSTANCE else Value(kind=V.INSTANCE, cls=recv.cls)
        if key is None and index is not None and len(node.slice) == 1:
            key = V.member_key(index)    # ``PLACERS[Placement.LOCAL]``
            held = node.slice[0].slice.value
            pinned_key = pinned_scalar(self.pinned, held.value) if isinstance(held, cst.Name) else None
            if key is None and pinned_key is not None:
                key = V.item_key(pinned_key)   # a parameter pinned to a call's constant
            if key is None and recv.structured and recv.parts and recv.rest is None \
                    and isinstance(held, (cst.Name, cst.Subscript, cst.Attribute)):
                # a table of constant keys read with a module constant (``PLACERS[MODE]``,
                # ``PLACERS[CONFIG["placement"]]``): that entry
                folded = constant_scalar(self, held)
                if type(folded) in (str, int, bool):
                    key = V.item_key(folded)
        if kind == V.INSTANCE and recv.cls is not None and "__getitem__" in recv.cls.methods \
                and len(node.slice) == 1 and not sliced:
            # ``ds[i]``: ``type(ds).__getitem__(ds, i)``
            found = self.call_dunder(recv, "__getitem__", node.value, [(index, node.slice[0].slice.value)])
            if found is not None:
                return found
        if recv.structured:
            if sliced and len(node.slice) == 1:
                return P.iterable(P.any_item(recv), recv.container or "list")
            if key is not None:
                return P.read(recv, key)
            return self.chosen_entry(recv, P.any_item(recv), index if len(node.slice) == 1 else None)
        if kind == V.ARRAY:
            return V.extend(recv, key if key is not None else V.ITEM)
        if kind in (V.SAFE, V.FOREIGN):
            return recv
        return V.UNKNOWN_VALUE

    # -- operators -----------------------------------------------------------------------
    def e_binary(self, node: cst.BinaryOperation) -> Value:
        return self.computed((self.eval(node.left), self.eval(node.right)))

    def e_unary(self, node: cst.UnaryOperation) -> Value:
        v = self.eval(node.expression)
        if isinstance(node.operator, cst.Not):
            return V.SAFE_VALUE
        return self.computed((v,))

    def e_boolean(self, node: cst.BooleanOperation) -> Value:
        """``a or b`` / ``a and b``: the join of both, or the operand the result is when
        ``a`` is a pinned parameter (``n = n or jax.device_count()`` in a function pinned
        to ``n=1``: :mod:`.pinned`); ``x or []`` (``None`` or an empty display on the
        right) is what ``x`` gives: the empty value holds no element that could matter."""
        if self.pinned and isinstance(node.left, cst.Name) and node.left.value in self.pinned:
            held = pinned.truth(self.pinned, node.left, self.eval, self.test_constant)
            if held is not None:
                first = isinstance(node.operator, cst.Or) == held
                return self.eval(node.left if first else node.right)
        if isinstance(node.operator, cst.Or) and _empty(node.right):
            return self.eval(node.left)     # ``callbacks or []``: what the left gives (no element more)
        return V.join(self.eval(node.left), self.eval(node.right))

    def e_comparison(self, node: cst.Comparison) -> Value:
        vals = [self.eval(node.left)] + [self.eval(c.comparator) for c in node.comparisons]
        return self.computed(vals)

    def e_ifexp(self, node: cst.IfExp) -> Value:
        """``a if test else b``: each branch is evaluated where ``test`` says it runs, with
        the device-count refinements of the test (:mod:`.conditions`) and the version guards
        (:mod:`.versions`); the value is the join, a branch in a one-device process giving
        its value as it is there (:func:`.env.single_device`)."""
        if self.env is None:
            self.eval(node.test)
            return V.UNKNOWN_VALUE
        # the branch the pinned parameters or the module's constants take (pinned.py)
        taken = pinned.truth(self.pinned or {}, node.test, self.eval, self.test_constant)
        if taken is not None:
            self.eval(node.test)
            return self.eval(node.body if taken else node.orelse)
        outer = self._tested
        self._tested = (node.test, self.eval(node.test))
        try:
            true, false = conditions.refinements(self, node.test)
        finally:
            self._tested = outer
        may_true, may_false = versions.branches(self, node.test)   # version guards (analysis/versions.py)
        saved = self.env
        values = []
        for refs, may, branch in ((true, may_true, node.body), (false, may_false, node.orelse)):
            self.env = dict(saved) if refs else saved
            self.refine(refs, node.test)
            value = versions.under(self, may, lambda: self.eval(branch))
            if value is not None and self.env is not None and self.env.get(SINGLE) is not None \
                    and saved.get(SINGLE) is None:
                value = single_device(value)
            values.append(value)
        self.env = saved   # the refinements hold in the branches only
        joined = V.join(values[0], values[1])
        return joined if joined is not None else V.UNKNOWN_VALUE

    def computed(self, vals) -> Value:
        """The array computed from ``vals``: multi-device when one of them is."""
        out = None
        for v in vals:
            out = V.join(out, V.as_array(v))
        return out if out is not None else V.SAFE_VALUE

    # -- containers ----------------------------------------------------------------------
    def e_sequence(self, node) -> Value:
        vals = []
        starred = []
        for el in node.elements:
            v = self.eval(el.value)
            if isinstance(el, cst.StarredElement):
                starred.append(v)
            else:
                vals.append(v)
        container = "tuple" if isinstance(node, cst.Tuple) else "list" if isinstance(node, cst.List) else "set"
        if container != "set" and not starred:
            return P.sequence(vals, container)
        element = V.join_all(vals + [P.element_of(v) for v in starred]) if vals or starred else None
        return P.iterable(element, container)

    def e_dict(self, node: cst.Dict) -> Value:
        parts = {}
        rest = None
        splats = []
        for el in node.elements:
            if isinstance(el, cst.DictElement):
                k = self.eval(el.key)
                v = self.eval(el.value)
                key = constant_key(el.key)
                if key is None:
                    key = V.member_key(k)   # ``{Placement.LOCAL: place_local}``
                if key is None:
                    rest = V.join(rest, v)
                else:
                    parts[key] = v
            else:
                splats.append(self.eval(el.value))
        out = P.build(parts=tuple(parts.items()), rest=rest, container="dict")
        for other in splats:
            out = P.merged(out, other)
        return out

    def element_of(self, value: Value, node=None) -> Value:
        """The value of one element when iterating over ``value`` (at ``node``): for an
        instance of a class of this project with an ``__iter__``, what that method's
        iterator gives: a generator's yields, or the result of the ``__next__`` of the
        instance it returns (an iterator class: ``__iter__`` returning ``self``)."""
        if value.kind == V.INSTANCE and value.cls is not None and node is not None:
            it = self.call_dunder(value, "__iter__", node)
            if it is not None:
                following = self.call_dunder(it, "__next__", node)
                return following if following is not None else P.element_of(it)
        return P.element_of(value)

    def call_dunder(self, value: Value, name: str, node, args=()) -> Optional[Value]:
        """``value.<name>(*args)`` (``args``: ``(value, expression)`` pairs) for an instance
        of a project class defining that method, else None."""
        if value.kind != V.INSTANCE or value.cls is None:
            return None
        method = value.cls.methods.get(name)
        if method is None or method.kind != V.FUNC or method.func is None:
            return None
        bound = V.evolve(method, func=replace(method.func, bound=((value, node),)))
        return self.apply(node, bound, list(args), {})

    def e_comprehension(self, node) -> Value:
        saved = self.env
        self.env = dict(saved) if saved is not None else {}
        try:
            comp = node.for_in
            while comp is not None:
                it = self.eval(comp.iter)
                self.assign(comp.target, self.element_of(it, comp.iter), comp)
                for cond in comp.ifs:
                    # ``for v in vs if len(v.devices()) == 1``: what the test says holds for
                    # the element, as in an ``if`` (:mod:`.conditions`)
                    self.refine(self.test(cond.test)[0], cond.test)
                comp = comp.inner_for_in
            if isinstance(node, cst.DictComp):
                self.eval(node.key)
                element = self.eval(node.value)
            else:
                element = self.eval(node.elt)
        finally:
            self.env = saved
        return P.iterable(element, _COMPREHENSIONS[type(node)])

    def e_lambda(self, node: cst.Lambda) -> Value:
        from .records import function_record

        closure = self.snapshot()
        rec = self.ma.register(function_record(node, "<lambda>", closure, None), self.rec)
        if rec.parent is None and self.rec is not None and rec is not self.rec:
            rec.parent = self.rec   # (as a def's: its closure is this function's frame)
        self.bind_defaults(rec)
        return Value(kind=V.FUNC, func=V.FuncInfo(local=rec))

    def e_named(self, node: cst.NamedExpr) -> Value:
        v = self.eval(node.value)
        self.assign(node.target, v, node)
        return v

    def e_passthrough(self, node) -> Value:
        inner = getattr(node, "expression", None) or getattr(node, "value", None)
        if inner is None:
            return V.UNKNOWN_VALUE
        return self.eval(inner)

    def e_yield(self, node: cst.Yield) -> Value:
        """``yield x`` / ``yield from it``: what iterating the generator gives; the value of
        the expression (what ``send`` passes in) is unknown."""
        inner = node.value
        if inner is None:
            self.yields.append(V.SAFE_VALUE)
        elif isinstance(inner, cst.From):
            self.yields.append(self.element_of(self.eval(inner.item), inner.item))
        else:
            self.yields.append(self.eval(inner))
        return V.UNKNOWN_VALUE

    # -- sinks ---------------------------------------------------------------------------
    def sink(self, node, consumer: str, sink, value: Value, subject_node, via=None, inner=None, placed=False):
        """Record that ``value`` reaches ``sink`` at ``node``."""
        if value.donated is None:
            if value.kind in (V.SAFE, V.FOREIGN, V.QNAME, V.FUNC, V.CLASS, V.CAPSULE):
                return
            if value.multi is None and not value.deps and value.false_guard is None and not value.param_array \
                    and value.placed_by is None:     # placed on a parameter: an export effect
                return
        env = self.env or {}
        self.record(SinkEvent(node, consumer, sink, value, subject_node, self.function,
                              tries=self.tries, single_device_process=bool(env.get("@single")),
                              via=via, inner=inner, placed=placed, when=self.when))


def constant_key(node):
    """The part key of a constant subscript or dict key (``0``, ``-1``, ``"w"``, ``True``),
    or None when ``node`` is not a constant (a float is none: :func:`~.pinned.literal`)."""
    value = pinned.literal(node)
    return None if value is pinned.NOT_LITERAL or isinstance(value, float) else V.item_key(value)


_COMPREHENSIONS = {cst.ListComp: "list", cst.SetComp: "set", cst.GeneratorExp: "iter", cst.DictComp: "dict"}

_DISPATCH = {
    cst.Name: ExprMixin.e_name,
    cst.Attribute: ExprMixin.e_attribute,
    cst.Subscript: ExprMixin.e_subscript,
    cst.BinaryOperation: ExprMixin.e_binary,
    cst.UnaryOperation: ExprMixin.e_unary,
    cst.BooleanOperation: ExprMixin.e_boolean,
    cst.Comparison: ExprMixin.e_comparison,
    cst.IfExp: ExprMixin.e_ifexp,
    cst.Tuple: ExprMixin.e_sequence,
    cst.List: ExprMixin.e_sequence,
    cst.Set: ExprMixin.e_sequence,
    cst.Dict: ExprMixin.e_dict,
    cst.ListComp: ExprMixin.e_comprehension,
    cst.SetComp: ExprMixin.e_comprehension,
    cst.GeneratorExp: ExprMixin.e_comprehension,
    cst.DictComp: ExprMixin.e_comprehension,
    cst.Lambda: ExprMixin.e_lambda,
    cst.NamedExpr: ExprMixin.e_named,
    cst.Await: ExprMixin.e_passthrough,
    cst.Yield: ExprMixin.e_yield,
    cst.StarredElement: ExprMixin.e_passthrough,
    cst.Integer: ExprMixin.e_constant,
    cst.Float: ExprMixin.e_constant,
    cst.Imaginary: ExprMixin.e_constant,
    cst.SimpleString: ExprMixin.e_constant,
    cst.ConcatenatedString: ExprMixin.e_constant,
    cst.Ellipsis: ExprMixin.e_constant,
    cst.FormattedString: ExprMixin.e_fstring,
}


def _classmethod(method: Value) -> bool:
    """Whether ``method`` (a value a class binds) is a ``@classmethod`` of this project."""
    fi = method.func if method.kind == V.FUNC else None
    return fi is not None and fi.local is not None and getattr(fi.local, "is_classmethod", False)
