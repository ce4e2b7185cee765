"""``with`` statements: what their context managers do to the body (issue 12).

- Handlers that are not ``try``: ``contextlib.suppress(...)`` catches the classes it names; a
  test that asserts the failure (``pytest.raises(...)``, ``self.assertRaises(...)`` and
  ``assertRaisesRegex(...)``, ``numpy.testing.assert_raises(...)``) catches the class it expects
  (apis.EXCEPTION_CONTEXTS, EXPECTING_METHODS).  They enclose the body like a ``try``
  (:class:`~jaxinterop_lint.analysis.events.TryContext` with kind ``suppress`` / ``expects``),
  so an export there is judged by the one verdict (rules/base.py ``verdict`` and ``catches``):
  caught -- handled, no finding; not caught -- JXI007 at the context manager.
- Mesh contexts: ``with jax.set_mesh(mesh):`` sets the mesh for the body and restores the one
  before it afterwards (apis.MESH_CONTEXTS; the call itself is evaluated by
  :meth:`~jaxinterop_lint.analysis.facts.FactsMixin.placement_call`).  ``with mesh:`` places
  nothing (run with jax 0.10.2), so it changes nothing here.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Optional

import libcst as cst

from ..knowledge import apis
from . import parts as P
from . import values as V
from .events import TryContext
from .facts import MESH_KEY
from .library_objects import EXECUTOR


def _class_names(value) -> Optional[list]:
    """The exception class names a value denotes (a class or a tuple of them); None when
    it is not known (a variable, a project class)."""
    if value.kind == V.QNAME:
        qn = value.qname
        return [qn[len("builtins."):] if qn.startswith("builtins.") else qn]
    if value.elements:
        out = []
        for e in value.elements:
            names = _class_names(e)
            if names is None:
                return None
            out.extend(names)
        return out
    return None


def catching(walker, expr) -> Optional[tuple]:
    """``(kind, caught class names, or None when unknown)`` when the context manager ``expr``
    catches what its body raises, else None."""
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    kind = None
    if isinstance(func, cst.Attribute) and func.attr.value in apis.EXPECTING_METHODS:
        kind = "expects"
    else:
        callee = walker.eval(func)
        if callee.kind == V.QNAME:
            kind = apis.EXCEPTION_CONTEXTS.get(callee.qname)
    if kind is None:
        return None
    positional = [a.value for a in expr.args if a.keyword is None and not a.star]
    if kind == "expects":
        named = [a.value for a in expr.args if a.keyword is not None and a.keyword.value in
                 ("expected_exception", "exception")]
        positional = (positional or named)[:1]
    if not positional or any(a.star for a in expr.args if a.keyword is None):
        return kind, None
    names = []
    for node in positional:
        found = _class_names(walker.eval(node))
        if found is None:
            return kind, None
        names.extend(found)
    return kind, tuple(names)


def _entered_value(walker, expr, value):
    """What ``with <expr> as x`` binds ``x`` to, ``value`` being ``expr``'s: the yield of a
    ``@contextlib.contextmanager`` generator called there, the result of ``__enter__`` of
    an instance of a project class; unknown otherwise."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, (cst.Name, cst.Attribute)):
        f = walker.eval(expr.func)
        if f.kind == V.FUNC and f.func is not None and getattr(f.func.local, "context_manager", False):
            return P.element_of(value)
    if value.kind == V.QNAME and value.qname == EXECUTOR:
        return value    # Executor.__enter__ returns self (CPython Lib/concurrent/futures/_base.py)
    entered_value = walker.call_dunder(value, "__enter__", expr)
    return entered_value if entered_value is not None else V.UNKNOWN_VALUE


def _exit(walker, value, name, expr) -> None:
    """Leaving a ``with`` block: the ``__exit__`` of a context manager that is an instance of
    a project class runs, on the instance as the block left it where ``as`` bound the
    instance itself (``__enter__`` returning ``self``)."""
    if value.kind != V.INSTANCE or value.cls is None or "__exit__" not in value.cls.methods:
        return
    if name is not None:
        now = walker.lookup(name)
        if now.kind == V.INSTANCE and now.cls is value.cls:
            value = now
    walker.call_dunder(value, "__exit__", expr)


@contextmanager
def entered(walker, node: cst.With):
    """Evaluate the items of ``node`` (binding their ``as`` names) and run the body, which
    the caller's ``with`` block walks, inside what they set up: enclosing handlers, the mesh
    context.  After a catching context, the code after the ``with`` may be reached from any
    point of the body: its environment is joined with the one on entry."""
    from .env import join_env

    env = walker.env
    had_mesh, mesh = MESH_KEY in env, env.get(MESH_KEY)
    contexts = []
    managers = []       # (the context manager's value, the name its ``as`` binds)
    for item in node.items:
        value = walker.eval(item.item)
        managers.append((value, item.asname.name.value if item.asname is not None
                         and isinstance(item.asname.name, cst.Name) else None, item.item))
        caught = catching(walker, item.item)
        if caught is not None:
            kind, names = caught
            # an unknown class (a variable, a project exception) is judged like a bare except
            contexts.append(TryContext(node, ((item.item, names),), kind))
        if item.asname is not None:
            walker.assign(item.asname.name, _entered_value(walker, item.item, value), node)
    outer = walker.tries
    walker.tries = outer + tuple(contexts)
    entry = dict(walker.env) if contexts else None
    try:
        yield
    finally:
        walker.tries = outer
        if walker.env is not None:
            for value, name, expr in reversed(managers):
                _exit(walker, value, name, expr)
        if entry is not None:
            walker.env = join_env(walker.env, entry)
        if walker.env is not None:
            if had_mesh:
                walker.env[MESH_KEY] = mesh
            else:
                walker.env.pop(MESH_KEY, None)
