"""Deferred project names: functions and classes opened only when a value that may be
multi-device is handed to them (issue 16, "a file is analysed when it defines a function
that an analysed file calls with a multi-device value").

The plan defers a top-level function or class whose text uses a consumer but that names no
JAX word and takes no name from a carrier (:meth:`~jaxinterop_lint.pipeline.plan.Plan.deferred`):
it cannot make a multi-device value, so only one handed to it can reach its consumer.  Its
module is parsed when such a value reaches it (the constructor's or a function's arguments:
:meth:`~.calls.CallMixin.opened_on_demand`), when a method of one of its instances is called
with one, or when a class of the analysed code derives from it; never for
``Unbounded(shape=x.shape, dtype=x.dtype)``.

A deferred class called with nothing that may be multi-device gives a :data:`~.values.DEFERRED`
value: an instance whose class (``qname``) is opened when a method call or a call of the
instance hands it such a value.  What it holds is unknown (its constructor got no array).
"""
from __future__ import annotations

from typing import Optional

from ..knowledge import apis
from . import values as V
from .values import Value, carries_multi


def names_class(qname: str) -> bool:
    """Whether the last part of ``qname`` is spelled as a class (``CapWords``): read before
    the module is opened, so without knowing what it defines."""
    last = qname.rsplit(".", 1)[-1]
    return last[:1].isupper() and not last.isupper()


# A parameter's placement is never an array (knowledge.apis.PLACEMENT_ATTRIBUTES).
_PLACEMENT_KEYS = frozenset(V.attr_key(a) for a in apis.PLACEMENT_ATTRIBUTES)


def handed(pos: list, kw: dict) -> bool:
    """Whether one of a call's arguments (``(value, node)`` pairs) is, or holds, an array
    that may be multi-device: a known source, or a value of a parameter (a caller may pass
    one) other than its placement (``Unbounded(shape=x.shape, device=x.device)`` hands over
    none)."""
    return any(carries_multi(v, not_after=_PLACEMENT_KEYS) for v, _ in pos) or \
        any(carries_multi(v, not_after=_PLACEMENT_KEYS) for v, _ in kw.values())


class DeferredMixin:
    """Calls of deferred project names and of their instances (see the module docstring)."""

    def deferred_class(self, qname: str) -> bool:
        """Whether ``qname`` names a deferred class of the project (its module not opened)."""
        project = self.ma.project
        return project is not None and qname is not None and names_class(qname) and project.deferred_name(qname)

    def open_instance(self, recv: Value, pos: list, kw: dict) -> Optional[Value]:
        """An instance of the class of the deferred value ``recv``, the class opened now,
        when the call's arguments may hand it a multi-device value; else None."""
        if not handed(pos, kw):
            return None
        cls = self.ma.project.resolve(recv.qname, self.ma, demand=True)
        if cls is None or cls.kind != V.CLASS or cls.cls is None:
            return None
        return Value(kind=V.INSTANCE, cls=cls.cls)

    def deferred_method(self, node, recv: Value, attr: str, pos: list, kw: dict) -> Value:
        """``<recv>.<attr>(...)`` on a deferred instance: the method of its class, opened
        when the arguments may be multi-device (unknown otherwise)."""
        inst = self.open_instance(recv, pos, kw)
        if inst is None:
            return V.UNKNOWN_VALUE
        f, on = self.callee_of(node.func, inst)
        if on is not None:
            return self.method_call(node, on, attr, pos, kw)
        return self.apply(node, f, pos, kw)

    def call_deferred(self, node, recv: Value, pos: list, kw: dict) -> Value:
        """``<recv>(...)`` on a deferred instance: its class's ``__call__``, opened when the
        arguments may be multi-device (unknown otherwise)."""
        inst = self.open_instance(recv, pos, kw)
        return self.apply(node, inst, pos, kw) if inst is not None else V.UNKNOWN_VALUE

    def deferred_attribute(self, node, qname: str) -> Optional[Value]:
        """``C.m`` of a deferred class ``C``, opened on demand: the attribute read from the
        class itself (a class method bound to it), or None when ``qname``'s owner is no
        deferred class."""
        owner, _, attr = qname.rpartition(".")
        if not owner or not self.deferred_class(owner):
            return None
        cls = self.ma.project.resolve(owner, self.ma, demand=True)
        if cls is None or cls.kind != V.CLASS or cls.cls is None:
            return None
        held, self._callee = getattr(self, "_callee", None), node
        try:
            return self.attribute(node, cls, attr)
        finally:
            self._callee = held

    def deferred_base(self, base: Value) -> Value:
        """A base class named by a deferred project class, opened (its methods are the
        derived class's)."""
        if base.kind != V.QNAME or base.qname is None or not self.deferred_class(base.qname):
            return base
        opened = self.ma.project.resolve(base.qname, self.ma, demand=True)
        return opened if opened is not None else base

