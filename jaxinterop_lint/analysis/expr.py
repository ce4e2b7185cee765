"""Expression evaluation of the provenance walk: names, attributes, subscripts, operators,
containers, comprehensions and lambdas.  Calls are in :mod:`.calls`."""
from __future__ import annotations

import builtins
from dataclasses import replace

import libcst as cst

from ..knowledge import apis
from . import values as V
from . import versions
from .events import RemovedEvent, SinkEvent
from .imports import dotted
from .values import Value

BUILTIN_NAMES = frozenset(dir(builtins))


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
        elif self.closure is not None and name in self.closure:
            value = self.closure[name]
        else:
            value = None
        if value is not None:
            if value.via_import and self.ma.project is not None:
                return self.ma.project_value(value)
            return value
        if name in BUILTIN_NAMES:
            return V.qname("builtins." + name)
        return V.UNKNOWN_VALUE

    # -- atoms ---------------------------------------------------------------------------
    def e_name(self, node: cst.Name) -> Value:
        return self.lookup(node.value)

    def e_constant(self, node) -> Value:
        return V.SAFE_VALUE

    def e_fstring(self, node: cst.FormattedString) -> Value:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                self.eval(part.expression)
        return V.SAFE_VALUE

    def e_attribute(self, node: cst.Attribute) -> Value:
        key = dotted(node)
        env = self.env
        if key is not None and env is not None and key in env:
            return env[key]
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
            return self.instance_attribute(recv, attr)
        if kind == V.CLASS:
            method = recv.cls.methods.get(attr)
            return method if method is not None else V.UNKNOWN_VALUE
        if attr in ("addressable_shards", "global_shards"):
            return Value(kind=V.SAFE_LIST)
        if attr == "sharding" and recv.multi is not None:
            return Value(kind=V.SHARDING, desc="the sharding of a multi-device array")
        if attr in apis.SAFE_ATTRIBUTES:
            return V.SAFE_VALUE if kind != V.UNKNOWN else V.UNKNOWN_VALUE
        if kind == V.ARRAY:
            return V.as_array(recv)
        if kind in (V.SAFE, V.FOREIGN, V.FFI_BUFFER):
            return V.SAFE_VALUE if kind == V.FFI_BUFFER else recv
        return V.UNKNOWN_VALUE

    def instance_attribute(self, recv: Value, attr: str) -> Value:
        """``obj.attr`` on an instance of a class of this module: a method or a stored value."""
        cls = recv.cls
        method = cls.methods.get(attr)
        if method is not None:
            if method.func is None:
                return V.UNKNOWN_VALUE
            rec = method.func.local
            if rec is not None and getattr(rec, "is_property", False):
                summary = rec.owner.summary(rec)
                if summary.ret is None:
                    return V.UNKNOWN_VALUE
                return self.instantiate(summary.ret, {0: (recv, None)}, rec.name, getattr(self, "_attr_node", None))
            return replace(method, func=replace(method.func, bound=(recv,)))
        stored = self.ma.class_attribute(cls, attr)
        return stored if stored is not None else V.UNKNOWN_VALUE

    def e_subscript(self, node: cst.Subscript) -> Value:
        recv = self.eval(node.value)
        index = None
        for el in node.slice:
            sl = el.slice
            if isinstance(sl, cst.Index):
                self.eval(sl.value)
                if len(node.slice) == 1 and isinstance(sl.value, cst.Integer):
                    index = int(sl.value.value, 0)
            else:
                self.eval_children(sl)
        kind = recv.kind
        if kind == V.DEVICE_LIST:
            return Value(kind=V.DEVICE)
        if kind == V.KERNEL:
            return Value(kind=V.LAUNCHER)
        if kind == V.SAFE_LIST:
            return V.SAFE_VALUE
        if recv.elements is not None and index is not None and -len(recv.elements) <= index < len(recv.elements):
            return recv.elements[index]
        if kind == V.ARRAY:
            return V.as_array(recv)
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
        return V.join(self.eval(node.left), self.eval(node.right))

    def e_comparison(self, node: cst.Comparison) -> Value:
        vals = [self.eval(node.left)] + [self.eval(c.comparator) for c in node.comparisons]
        return self.computed(vals)

    def e_ifexp(self, node: cst.IfExp) -> Value:
        self.eval(node.test)
        may_true, may_false = versions.branches(self, node.test)   # version guards (analysis/versions.py)
        joined = V.join(versions.under(self, may_true, lambda: self.eval(node.body)),
                        versions.under(self, may_false, lambda: self.eval(node.orelse)))
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
        for el in node.elements:
            vals.append(self.eval(el.value))
        joined = self.computed(vals)
        if isinstance(node, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in node.elements):
            return replace(joined, elements=tuple(vals))
        return joined

    def e_dict(self, node: cst.Dict) -> Value:
        vals = []
        for el in node.elements:
            if isinstance(el, cst.DictElement):
                self.eval(el.key)
            vals.append(self.eval(el.value))
        return self.computed(vals)

    def element_of(self, value: Value) -> Value:
        """The value of one element when iterating over ``value``."""
        kind = value.kind
        if kind == V.DEVICE_LIST:
            return Value(kind=V.DEVICE)
        if kind == V.SAFE_LIST:
            return V.SAFE_VALUE
        if value.elements is not None:
            return V.join_all(value.elements) if value.elements else V.UNKNOWN_VALUE
        if kind == V.ARRAY:
            return V.as_array(value)
        if kind in (V.SAFE, V.FOREIGN):
            return value
        return V.UNKNOWN_VALUE

    def e_comprehension(self, node) -> Value:
        saved = self.env
        self.env = dict(saved) if saved is not None else {}
        try:
            comp = node.for_in
            while comp is not None:
                it = self.eval(comp.iter)
                self.assign(comp.target, self.element_of(it), comp)
                for cond in comp.ifs:
                    self.eval(cond.test)
                comp = comp.inner_for_in
            if isinstance(node, cst.DictComp):
                self.eval(node.key)
                result = self.computed((self.eval(node.value),))
            else:
                result = self.computed((self.eval(node.elt),))
        finally:
            self.env = saved
        return result

    def e_lambda(self, node: cst.Lambda) -> Value:
        from .module import function_record

        closure = self.snapshot()
        rec = self.ma.register(function_record(node, "<lambda>", closure, None))
        return Value(kind=V.FUNC, func=V.FuncInfo(local=rec))

    def e_named(self, node: cst.NamedExpr) -> Value:
        v = self.eval(node.value)
        self.assign(node.target, v, node)
        return v

    def e_passthrough(self, node) -> Value:
        inner = getattr(node, "expression", None) or getattr(node, "value", None)
        if inner is None:
            return V.UNKNOWN_VALUE
        v = self.eval(inner)
        return V.UNKNOWN_VALUE if isinstance(node, cst.Yield) else v

    # -- sinks ---------------------------------------------------------------------------
    def sink(self, node, consumer: str, sink, value: Value, subject_node, via=None, inner=None):
        """Record that ``value`` reaches ``sink`` at ``node``."""
        if value.donated is None:
            if value.kind in (V.SAFE, V.FOREIGN, V.QNAME, V.FUNC, V.CLASS, V.CAPSULE):
                return
            if value.multi is None and not value.deps and value.false_guard is None and not value.param_array:
                return
        env = self.env or {}
        self.record(SinkEvent(node, consumer, sink, value, subject_node, self.function,
                              tries=self.tries, single_device_process=bool(env.get("@single")),
                              via=via, inner=inner))


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
    cst.Yield: ExprMixin.e_passthrough,
    cst.StarredElement: ExprMixin.e_passthrough,
    cst.Integer: ExprMixin.e_constant,
    cst.Float: ExprMixin.e_constant,
    cst.Imaginary: ExprMixin.e_constant,
    cst.SimpleString: ExprMixin.e_constant,
    cst.ConcatenatedString: ExprMixin.e_constant,
    cst.Ellipsis: ExprMixin.e_constant,
    cst.FormattedString: ExprMixin.e_fstring,
}
