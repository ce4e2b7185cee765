"""Stage 3, plan (exporters): the functions of a module whose own text uses a consumer.

The plan asks of some modules whether a name it takes from them holds a function that
exports a parameter through a sink (:meth:`~.run.Session.calls_exporter`,
:meth:`~.run.Session.context_callers`).  The answer needs the analysis of every function of
the module only when it is no: one exporting function of the right name decides yes.  So
the analysis runs first the functions whose own text uses a consumer (the test of
:meth:`~.plan.Plan.consumer_defs`, :func:`~.scan.consumer`, applied to each ``def``: a
function whose text names none exports only through another function, which then names
one), and stops as soon as the question is decided
(:meth:`~jaxinterop_lint.analysis.project.Project.exports_known`); the other functions are
analysed only when it is not.  Issue 16: torchrl's ``ParallelEnv`` (23 methods, one naming a
consumer) is decided by that one.

The functions are named as the analysis names them
(:meth:`~jaxinterop_lint.analysis.flow.Walker.qualify`): ``f``, ``C.m``, ``f.inner``, the
methods of a class ``D`` nested anywhere ``D.m``.  Only the order of the analysis depends
on this reading, never its result.
"""
from __future__ import annotations

import ast
import os
from typing import Callable, Optional

from .scan import consumer, plain_lines, taken_names
from .statements import parse

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


class ConsumerDefs:
    """Which functions of a module use a consumer in their own text, read with CPython's
    :mod:`ast` once per module and kept for the run.  ``text_of(path)`` reads a file (any
    exception: the module is not read), ``sinks`` are the consumer words (``Words.sinks``:
    the built-in sinks and the configuration's extra ones), ``package_of(path)`` the package
    relative imports start from."""

    def __init__(self, text_of: Callable[[str], str], sinks, package_of: Callable[[str], str]):
        self.text_of = text_of
        self.sinks = sinks
        self.package_of = package_of
        self._known: dict = {}

    def __call__(self, path: str) -> Optional[frozenset]:
        """The names (as the analysis gives them) of the functions of ``path`` whose text,
        decorators included, uses a consumer; None when the file cannot be read."""
        key = os.path.abspath(path)
        if key not in self._known:
            try:
                self._known[key] = self._read(key)
            except Exception:  # unreadable, or a text ast cannot take: no order to give
                self._known[key] = None
        return self._known[key]

    def _read(self, path: str) -> Optional[frozenset]:
        text = plain_lines(self.text_of(path))
        tree = parse(text)
        if tree is None:
            return None
        roots, taken = set(), []
        package = self.package_of(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = _absolute(node.module, node.level, package)
                if module:
                    roots.add(module.split(".")[0])
                    taken.append((module, [(a.name, a.asname) for a in node.names]))
        taken_set = taken_names(taken)
        if not self.sinks.wants(text):
            return frozenset()
        lines = text.split("\n")
        out = set()
        for name, node in _defs(tree):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if consumer("\n".join(lines[first - 1:node.end_lineno]), self.sinks, roots, taken_set):
                out.add(name)
        return frozenset(out)


def _defs(tree):
    """``(name, node)`` of every ``def`` of ``tree``, named as the analysis names it."""
    todo = [(n, None, None) for n in tree.body]
    while todo:
        node, outer, cls = todo.pop()
        if isinstance(node, _DEFS):
            name = f"{cls}.{node.name}" if cls else f"{outer}.{node.name}" if outer else node.name
            yield name, node
            todo.extend((c, name, None) for c in node.body)
        elif isinstance(node, ast.ClassDef):
            todo.extend((c, outer, node.name) for c in node.body)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo.extend((c, outer, cls) for c in getattr(node, field, ()) or ())
            for case in getattr(node, "cases", ()) or ():
                todo.extend((c, outer, cls) for c in case.body)


def _absolute(module: Optional[str], level: int, package: str) -> Optional[str]:
    if not level:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (level - 1)]
    if module:
        base = base + [module]
    return ".".join(base) if base else None
