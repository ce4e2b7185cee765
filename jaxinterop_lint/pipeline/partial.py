"""Stage 4, analyse: a module parsed only for the names other modules take from it.

A module that can make no finding of its own (JAX code does not reach it and it makes none
by itself: :meth:`~.plan.Plan.direct`, :meth:`~.plan.Plan.reach`) is analysed only for what
other analyses take from it: the summaries of some functions and classes, and, when it is
reported, the calling contexts its importers give its exports (PLAN decision 1).  Issue 16:
such a module is parsed with libcst only for the top-level statements that define the names
asked for, the statements those use (transitively, by the names their code uses:
:mod:`.statements`), the statements that change a kept name without binding one
(``X.attr = ...``, ``register(X)``) and every import.  The first part is the text with
every other line blanked (line and column numbers unchanged, as :mod:`.masking` does for
reported files); a name asked for later adds the statements it needs that are not parsed
yet, each run of adjacent ones parsed alone, its lines offset (:meth:`Partial.more`), so no
statement is parsed twice.
"""
from __future__ import annotations

from typing import Optional

from .scanner import blank
from .statements import Unsplit, module_writes

MIN_LINES = 200         # shorter modules are parsed whole: little to gain
MIN_GAIN = 0.1          # the share of lines the first part must blank, else the text is parsed whole (as masking.py)


class Partial:
    """The top-level statements of ``text`` and which of them are parsed.  ``usable`` is
    False when CPython's ``ast`` cannot read the text, it is shorter than ``min_lines``, or
    it names an FFI callback (those are read from the whole module): it is parsed whole
    then.  ``names`` are the top-level names the first part is made for."""

    def __init__(self, text: str, names: frozenset, min_lines: Optional[int] = None):
        from .masking import _LINE

        self.names = frozenset(names)
        self.callers = frozenset()      # (the interface of a Masker that parse_module uses)
        self.text = None
        self.lines = _LINE.findall(text)
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.units = None
        if len(self.lines) >= (MIN_LINES if min_lines is None else min_lines) and "buffer_callback" not in text:
            self._source = text
            self._read(True)

    def _read(self, lazy: bool) -> None:
        """Cut the text into statements (``lazy``: each ``def`` and ``class`` parsed with
        ``ast`` only when its names are needed: :func:`~.masking.read_statements`)."""
        from .masking import _for_ast, read_statements

        readable = _for_ast(self._source)
        read = read_statements(readable, len(self.lines), lazy) if readable is not None else None
        self.units = None
        if read is not None and read[0]:
            self.units = read[0]
            self.parsed = [False] * len(self.units)
            self.by_name: dict = {}
            for i, u in enumerate(self.units):
                for n in u.defines:
                    self.by_name.setdefault(n, []).append(i)
            # a def writing a module name (``global G``, ``BUF.append(v)``) is part of that
            # name: what it leaves there is what another module reads (analysis/module_state.py
            # ``settle``; :func:`~.statements.module_writes`)
            units = [(tuple(u.defines), "".join(self.lines[u.first:u.last + 1])) for u in self.units]
            for i, more in enumerate(module_writes(units, [u.is_def for u in self.units])):
                for n in more:
                    self.by_name.setdefault(n, []).append(i)
            # statements that bind nothing but use names (module-level mutation, registration)
            self._binders = [i for i, u in enumerate(self.units)
                             if not u.is_import and not u.is_def and not (u.defines - {"__all__"})]
            self._needed: set = set()

    @property
    def usable(self) -> bool:
        """Whether the text was cut into statements (else it is parsed whole)."""
        return self.units is not None

    def _closure(self, names) -> list:
        """The statements not parsed yet that :meth:`names` need (see the module docstring)."""
        units, parsed = self.units, self.parsed
        keep = [not parsed[i] and (u.is_import or bool(u.defines & names)) for i, u in enumerate(units)]
        needed = set(self._needed)      # (committed at the end: an Unsplit leaves it as it was)
        todo = [i for i, k in enumerate(keep) if k]
        asked = set(names)
        while True:
            while todo:
                i = todo.pop()
                for name in units[i].uses - needed:
                    needed.add(name)
                    for j in self.by_name.get(name, ()):
                        if not keep[j] and not parsed[j]:
                            keep[j] = True
                            todo.append(j)
            for i in self._binders:
                if not keep[i] and not parsed[i] and units[i].uses & (needed | asked):
                    keep[i] = True
                    todo.append(i)
            if not todo:
                break
        new = [i for i, k in enumerate(keep) if k]
        for i in new:
            parsed[i] = True
            needed.update(units[i].defines)
        self._needed = needed
        return new

    def render(self, _callers=frozenset()) -> Optional[str]:
        """The first part: the text with every statement but those :attr:`names` need
        blanked; None (parse whole) when it is not :attr:`usable` or blanks less than
        :data:`MIN_GAIN` of the lines."""
        if not self.usable:
            return None
        try:
            new = self._closure(self.names)
        except Unsplit:             # a def cut wrongly from the text: read it whole
            self._read(False)
            if not self.usable:
                return None
            new = self._closure(self.names)
        out = [blank(line) for line in self.lines]
        kept_lines = 0
        dropped = set(range(len(self.lines)))   # all but whole statements kept (:mod:`.compact`)
        for i in new:
            u = self.units[i]
            out[u.first:u.last + 1] = self.lines[u.first:u.last + 1]
            dropped.difference_update(range(u.first, u.last + 1))
            kept_lines += u.last + 1 - u.first
        if kept_lines > len(self.lines) * (1 - MIN_GAIN):
            self.units = None       # parsed whole: nothing more is asked of this reading
            return None
        self.dropped = dropped
        return "".join(out)

    def misses(self, name: str) -> bool:
        """Whether a statement not parsed yet defines ``name``."""
        return any(not self.parsed[i] for i in self.by_name.get(name, ())) if self.usable else False

    def more(self, names) -> list:
        """``[(text, first line index)]``: the runs of adjacent statements ``names`` need
        that are not parsed yet (each parsed alone by the caller, its line numbers offset
        by its first line index); they count as parsed from now on."""
        try:
            new = self._closure(frozenset(names))
        except Unsplit:             # a def cut wrongly from the text: its names stay unknown
            return []
        runs: list = []
        for i in new:
            if runs and runs[-1][1] == i - 1:
                runs[-1][1] = i
            else:
                runs.append([i, i])
        out = []
        for a, b in runs:
            first, last = self.units[a].first, self.units[b].last
            out.append(("".join(self.lines[first:last + 1]), first))
        return out

    def extend(self, ma, names) -> None:
        """Parse the statements ``names`` need that are not parsed yet (:meth:`more`) and
        walk them into the analysis ``ma`` (:meth:`~jaxinterop_lint.analysis.module.ModuleAnalysis.add_part`).
        A run that libcst cannot take (over the parse budget, or a statement CPython read
        that libcst rejects) is left out: its names stay unknown, as a module that cannot be
        parsed gives none."""
        import libcst as cst

        from ..cstparse import parse_module
        from ..size import parseable, shrink
        from ..source import SourceError

        for text, first in self.more(names):
            readable, _ = shrink(text)
            try:
                parseable(readable, len(text))
                module = parse_module(readable)
            except (SourceError, cst.ParserSyntaxError, RecursionError, MemoryError):
                continue
            ma.add_part(module, first)
