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
import re
from typing import Callable, Optional

from .plan import _TOP_DEF
from .scan import consumer, plain_lines, taken_names
from .statements import parse

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


class ConsumerDefs:
    """Which functions of a module use a consumer in their own text, read with CPython's
    :mod:`ast` once per module and kept for the run.  ``text_of(path)`` reads a file (any
    exception: the module is not read), ``sinks`` are the consumer words (``Words.sinks``:
    the built-in sinks and the configuration's extra ones), ``package_of(path)`` the package
    relative imports start from."""

    def __init__(self, text_of: Callable[[str], str], sinks, imports_of: Callable[[str], list]):
        self.text_of = text_of
        self.sinks = sinks
        self.imports_of = imports_of
        self._known: dict = {}

    def __call__(self, path: str, tops: Optional[frozenset] = None) -> Optional[frozenset]:
        """The names (as the analysis gives them) of the functions of ``path`` whose text
        uses a consumer, in the top-level ``def``/``class`` statements of the names ``tops``
        (None: all); None when the file cannot be read.  ``imports_of(path)`` gives the
        file's imports as the plan's facts hold them (``[(module, [(name, alias)] or
        None)]``), as :meth:`~.plan.Plan.consumer_defs` reads them."""
        key = (os.path.abspath(path), tops)
        if key not in self._known:
            try:
                self._known[key] = self._read(key[0], tops)
            except Exception:  # unreadable, or a text ast cannot take: no order to give
                self._known[key] = None
        return self._known[key]

    def _read(self, path: str, tops: Optional[frozenset]) -> Optional[frozenset]:
        text = plain_lines(self.text_of(path))
        if not self.sinks.wants(text):
            return frozenset()
        imports = list(self.imports_of(path) or ())
        roots = {m.split(".")[0] for m, _ in imports}
        taken = taken_names(imports)
        out = set()
        # the top-level units as the plan cuts them (consumer_defs); only those of ``tops``
        # that use a consumer are read with ``ast``, each alone
        starts = [(m.start(), m.group(1)) for m in _TOP_DEF.finditer(text)]
        for i, (begin, name) in enumerate(starts):
            if tops is not None and name not in tops:
                continue
            piece = text[begin:starts[i + 1][0] if i + 1 < len(starts) else len(text)]
            if not consumer(piece, self.sinks, roots, taken):
                continue
            tree = _parse_unit(piece)
            if tree is None:
                continue
            lines = piece.split("\n")
            for qual, node in _defs(tree.body):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if consumer("\n".join(lines[first - 1:node.end_lineno]), self.sinks, roots, taken):
                    out.add(qual)
        return frozenset(out)


def _parse_unit(piece: str):
    """A top-level ``def``/``class`` cut from a text up to the next one, parsed (the
    decorators of the next one, at its end, cut off); None when ast cannot read it."""
    tree = parse(piece)
    if tree is None:
        cut = re.search(r"\n@[^\n]*(?:\n[\s\S]*)?\Z", piece)
        if cut is not None:
            tree = parse(piece[:cut.start() + 1])
    return tree


def _defs(body):
    """``(name, node)`` of every ``def`` in the statements ``body`` (of a module), named as
    the analysis names it."""
    todo = [(n, None, None) for n in body]
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
