"""Analysing one function: parameters bound to symbolic values, one walk of the body, and
the :class:`~jaxinterop_lint.analysis.module.Summary` read off its returns, yields, events and
(for an ``__init__``) what it leaves on ``self``."""
from __future__ import annotations

import libcst as cst

from ..knowledge import apis
from . import values as V
from .events import ExportEffect, SinkEvent
from .classes import self_writes_of
from .flow import Walker
from .records import Summary
from .values import Value


def analyse_function(ma, rec) -> Summary:
    """Analyse the def or lambda of ``rec`` with symbolic parameters; returns its summary
    and leaves its events in ``rec.events``."""
    rec.events = {}
    env = {}
    walker = Walker(ma, rec, env, rec.closure, rec.name)
    for i, name in enumerate(rec.params):
        ann = rec.annotations[i]
        if i == 0 and rec.cls is not None and getattr(rec, "is_classmethod", False):
            env[name] = Value(kind=V.CLASS, cls=rec.cls)
            continue
        if i == 0 and rec.cls is not None and rec.name.endswith(".__init_subclass__"):
            # the class being created (a subclass: PEP 487), given by each class statement
            env[name] = Value(kind=V.CLASS, cls=rec.cls, deps=frozenset({(0, ())}), ref=(0, ()))
            continue
        if i == 0 and rec.cls is not None:
            env[name] = Value(kind=V.INSTANCE, cls=rec.cls, deps=frozenset({(0, ())}), ref=(0, ()))
            continue
        if (rec.ffi_shift is not None and i > rec.ffi_shift) or ma.ffi.is_buffer_annotation(ann):
            env[name] = Value(kind=V.FFI_BUFFER)
            continue
        annotated = ann is not None and names_array(walker, ann)
        env[name[2:] if name.startswith("**") else name] = V.param(i, name, annotated)
    node = rec.node
    if isinstance(node, cst.Lambda):
        walker.returns.append(walker.eval(node.body))
    else:
        walker.suite(node.body)
        if walker.env is not None:
            walker.returns.append(V.SAFE_VALUE)
            walker.exit()
    ret = V.join_all(walker.returns) if walker.returns else None
    yields = V.join_all(walker.yields) if walker.yields else None
    fields = ()
    if walker.exits:
        own = V.join_all(walker.exits)
        # an __init__ gives every attribute of self; another method those it stores
        stored = None if rec.name.endswith("__init__") else self_writes_of(rec)
        fields = tuple((k[1:], p) for k, p in own.parts or ()
                       if k.startswith(".") and (stored is None or k[1:] in stored))
    walker.publish_writes()
    walker.publish_cells()
    return _summary(walker, rec, ret, yields, fields)


def _summary(walker, rec, ret, yields, fields) -> Summary:
    """The :class:`Summary` of ``rec`` from its finished walk.  (Its own function for the
    same reason as :func:`_fills_of`.)"""
    return Summary(ret=ret, exports=_exports(list(rec.events.values()) + walker.context_events),
                   donates=walker.donated_params,
                   yields=yields, fields=fields, globals_=walker.globals_summary(), cells=walker.cells_summary(),
                   calls=tuple(walker.param_calls), fills=_fills_of(walker), called=tuple(walker.called_with))


def _fills_of(walker) -> tuple:
    """``Summary.fills``: each parameter filled where the function returns, joined.  (Its own
    function: the frame of :func:`analyse_function`, which the analysis recurses through,
    keeps its size; one a few slots larger made CPython 3.11 allocate and free a data-stack
    chunk at each crossing of a chunk's end in keras' deepest recursion, +20,000 page
    faults, +0.15 s of system time.)"""
    if not walker.fills:
        return ()
    return tuple((i, V.join_all(vs)) for i, vs in sorted(walker.fills.items()))


_UNIONS = frozenset({"typing.Optional", "typing.Union", "typing_extensions.Optional", "typing_extensions.Union"})
_ANNOTATED = frozenset({"typing.Annotated", "typing_extensions.Annotated"})


def names_array(walker, ann, depth: int = 0) -> bool:
    """Whether the annotation expression ``ann`` (a libcst expression of the function's
    module, evaluated by ``walker``) names a JAX array type (``apis.ARRAY_ANNOTATIONS``):
    itself, or as a member of ``Optional[...]`` / ``Union[...]`` / ``X | None``, the type of
    ``Annotated[X, ...]``, or inside a string annotation (PEP 563 / PEP 604 forms:
    ``"jax.Array | None"``).  A string that is not an expression names none."""
    if depth > 4:
        return False
    if isinstance(ann, (cst.SimpleString, cst.ConcatenatedString)):
        text = ann.evaluated_value
        if not isinstance(text, str):
            return False
        try:
            inner = cst.parse_expression(text.strip())
        except Exception:  # not an expression: names no type the analysis knows
            return False
        return names_array(walker, inner, depth + 1)
    if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
        return names_array(walker, ann.left, depth + 1) or names_array(walker, ann.right, depth + 1)
    if isinstance(ann, cst.Subscript):
        base = walker.eval(ann.value)
        if base.kind != V.QNAME or base.qname not in _UNIONS | _ANNOTATED:
            return False
        members = [e.slice.value for e in ann.slice if isinstance(e.slice, cst.Index)]
        if base.qname in _ANNOTATED:
            members = members[:1]
        return any(names_array(walker, m, depth + 1) for m in members)
    a = walker.eval(ann)
    return a.kind == V.QNAME and a.qname in apis.ARRAY_ANNOTATIONS


def _exports(events) -> tuple:
    """The export effects of a function's events: each part of a parameter that reaches a
    sink, or that places a value reaching one (``ExportEffect.placed``), outside a
    single-device guard and outside a ``try`` that catches what it raises (with a handler
    that does not raise again: ``TryContext.reraising``)."""
    out, seen = [], set()
    for ev in events:
        if not isinstance(ev, SinkEvent) or ev.single_device_process:
            continue
        placed = ev.value.placed_by if not ev.value.deps else None
        if not ev.value.deps and placed is None:
            continue
        raised = ev.sink.raises
        if ev.tries and raised is not None and any(_catches(names, raised) for t in ev.tries
                                                   for i, (_, names) in enumerate(t.handlers) if i not in t.reraising):
            continue
        call = id(ev.context[0].call) if ev.context else 0
        if placed is not None:
            p, path = placed[0]
            if (p, path, id(ev.node), call, True) not in seen:
                seen.add((p, path, id(ev.node), call, True))
                out.append(ExportEffect(p, ev, tuple(path), placed=True))
            continue
        for p, path in ev.value.deps:
            if (p, path, id(ev.node), call) not in seen:
                seen.add((p, path, id(ev.node), call))
                out.append(ExportEffect(p, ev, path))
    return tuple(out)


def _catches(names, raised: str) -> bool:
    """Whether an ``except`` catching ``names`` (None: bare) catches ``raised`` (the same test
    as :func:`jaxinterop_lint.rules.base.catches`)."""
    if names is None:
        return True
    bases = apis.EXCEPTION_BASES.get(raised, (raised, "Exception", "BaseException"))
    return any(name in bases for name in names)
