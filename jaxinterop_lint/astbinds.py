"""The names a statement binds, read from CPython's ``ast``: one walk shared by the plan's
masking (:mod:`jaxinterop_lint.pipeline.statements`) and the analysis's module constants
(:mod:`jaxinterop_lint.analysis.constants`), neither of which may import the other's package."""
from __future__ import annotations

import ast

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def bound_into(node, out: set) -> None:
    """Add to ``out`` the names the ``ast`` node ``node`` binds in the scope it is in (not
    inside the functions and classes it defines, whose names it binds): assignment, ``del``,
    ``for``/``with``/``except`` targets, imports, defs, walrus."""
    if isinstance(node, _DEFS):
        out.add(node.name)
        return
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for a in node.names:
            out.add(a.asname or a.name.split(".")[0])
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        out.add(node.id)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        out.add(node.name)
    elif isinstance(node, ast.Lambda):
        return
    for child in ast.iter_child_nodes(node):
        bound_into(child, out)


def binds(node) -> set:
    """The names the ``ast`` statement ``node`` binds in its scope (:func:`bound_into`)."""
    out: set = set()
    bound_into(node, out)
    return out
