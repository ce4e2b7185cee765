"""Blank the statements of a file that cannot matter, before parsing.

libcst's parse is the cost of this linter, and in a large module the interop words usually
sit in a few functions.  CPython's ``ast`` (:mod:`.statements`) cuts the module into
top-level statements with exact ranges and says which names their code uses (a light line
scanner is the fallback where this Python cannot parse the text); the statements kept are
the imports, those whose code names an interop word (the prefilter's), and, transitively,
those that define a name a kept statement uses.  Inside a kept class the same rule keeps
only the methods that matter.  Every other line is replaced by an empty line, so line and
column numbers are unchanged.  The caller parses the masked text and falls back to the
whole text if that fails; where nothing a finding can stand at is left
(:meth:`Masker.holds_nothing`) it need not parse at all.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Optional

from .scanner import blank as _blank, class_lines, scan, statements as scan_statements
from .statements import (Unsplit, class_body, group, lazy_statements, module_writes, parse, registrations,
                         sink_aliases, statements, stored_attributes, uses_of)

_CLASS_START = re.compile(r"(?:[ \t]*@[^\n]*\n)*[ \t]*class\b")
_KERNEL = re.compile(r"^@\s*(?:numba\.)?cuda\.jit\b", re.M)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


MIN_LINES = 200     # shorter texts are parsed whole (a module whose names another one imports,
#                     unused here, would lose them: issue 16 leaves that for larger files only)
_MIN_CLASS = 20     # a kept class shorter than this is kept whole
# Dunders the analysis never reaches implicitly (display, comparison, pickling, copying):
# kept only when kept code names them.  Every other dunder is kept with its class
# (``__init__``, ``__call__``, ``__getitem__``, ``__enter__``, ``__post_init__`` ...).
_INERT_DUNDERS = frozenset({
    "__repr__", "__str__", "__format__", "__hash__", "__eq__", "__ne__", "__lt__", "__le__",
    "__gt__", "__ge__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__",
    "__copy__", "__deepcopy__", "__sizeof__", "__dir__", "__del__"})


def _for_ast(text: str) -> Optional[str]:
    """``text`` as CPython's ``ast`` may read it for the masking: long constant displays
    blanked (:func:`jaxinterop_lint.size.shrink`: same length, lines and columns, and a
    blanked item is a constant, never a name), or None when even that is over the parse
    budget of the file's size (:func:`jaxinterop_lint.size.within_budget`): the line scanner
    reads it then, so that an input too large to analyse costs no more memory here than
    before (``scripts/attack.py``'s memory attacks)."""
    from ..size import shrink, within_budget
    from ..source import SourceError

    readable, _ = shrink(text)
    try:
        within_budget(readable, len(text))
    except SourceError:
        return None
    return readable


class Masker:
    """The top-level statements of one text, and renderings of it with some blanked.

    A statement is kept when it is an import, names an interop word of ``prefilter`` (a
    :class:`~jaxinterop_lint.pipeline.words.Prefilter`) or a name an interop import binds, uses a
    name in ``callers_of`` (see :meth:`render`), or defines a name a kept statement uses
    (transitively): an assignment, and a function or class whatever it does, since its
    summary decides what a call of it returns (``def ident(a): return a``) and what a
    callback given to kept code does (a ``buffer_callback`` target exporting its buffer).
    Inside a kept class the same rule keeps only the methods that matter (:meth:`_member_keep`).
    The statements come from CPython's ``ast`` (:mod:`.statements`: exact ranges, and the
    names *code* uses, never docstrings, comments or def names; ``exact`` is True), or where
    this Python cannot parse the text from a line scanner (``exact`` False).  ``usable`` is
    False when the text is too short or the scanner lost track of it.
    """

    def __init__(self, text: str, prefilter, min_lines: int = MIN_LINES):
        self._args = (text, prefilter, min_lines)
        try:
            self._setup(text, prefilter, min_lines, True)
        except Unsplit:
            self._setup(text, prefilter, min_lines, False)

    def _exactly(self, method, *args):
        """``method(*args)``, read again from the whole text when a statement cut from the
        text lazily turns out to be none (:class:`~.statements.Unsplit`)."""
        try:
            return method(*args)
        except Unsplit:
            text, prefilter, min_lines = self._args
            self._setup(text, prefilter, min_lines, False)
            return method(*args)

    def _setup(self, text: str, prefilter, min_lines: int, lazy: bool) -> None:
        self.lines = _LINE.findall(text)
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.usable = self.exact = False
        self.interesting = False
        self.spelled = True
        self._rx: dict = {}
        if len(self.lines) < min_lines:
            return
        roots = {r for r, _ in prefilter.pairs if r in text}
        sink_names = set(prefilter.standalone).union(*(n for r, n in prefilter.pairs if r in roots))
        spelled = self._names_re(frozenset(sink_names))
        if spelled is None or spelled.search(text) is None:
            # No word anywhere in the text (as a whole identifier): no statement's code can
            # name one (nor an import bind one), so nothing to mask, nothing to read with ast.
            self.spelled, self._text = False, text
            return
        readable = _for_ast(text)
        read = read_statements(readable, len(self.lines), lazy) if readable is not None else None
        if read is not None:
            units, nodes = read
            self.exact = True
            self.stmts = [(u.first, u.last) for u in units]
            self.idents = _Uses(units)
            imports = [u.is_import for u in units]
            self.defines = [u.defines for u in units]
            self.is_def = [u.is_def for u in units]
            self.nodes = _Classes(units)
            aliases = sink_aliases(nodes, sink_names)
        else:
            self.stmts = scan_statements(self.lines)
            if not self.stmts:
                return
            self.idents, imports, self.defines, self.is_def, aliases = scan(self.lines, self.stmts, sink_names)
            self.nodes = [None] * len(self.stmts)
        if not self.stmts:
            return
        chunks = ["".join(self.lines[a:b + 1]) for a, b in self.stmts]
        self.registers: set = set()
        if "global" in text or "." in text:     # (both readers: the masking must not depend on which)
            self._module_writes(chunks)
            self._registrations(chunks)
        self.usable = True
        self._parts: dict = {}
        if "numba" in roots:
            # A kernel launch ``k[grid, block](x)`` is a sink: calls of kernels count.
            for chunk, names in zip(chunks, self.defines):
                if chunk.startswith("@") and _KERNEL.search(chunk):
                    aliases |= names
        self.prefilter, self.roots, self.aliases = prefilter, roots, aliases
        self.chunks = chunks
        # A statement whose text spells no word cannot use one: its names are not read.
        words = self._names_re(frozenset(prefilter.standalone) | aliases |
                               frozenset().union(*(n for r, n in prefilter.pairs if r in roots)), bounded=self.exact)
        self._words = words
        self.base = [imp or (words is not None and words.search(c) is not None and self._interop(c, self.idents[i]))
                     for i, (c, imp) in enumerate(zip(chunks, imports))]
        self.imports = imports
        self.interesting = any(k and not imp for k, imp in zip(self.base, imports))
        self.by_name: dict = {}
        for i, names in enumerate(self.defines):
            for n in names:
                self.by_name.setdefault(n, []).append(i)

    def _module_writes(self, chunks: list) -> None:
        """A def writing a module name (``global X``, ``BUF.append(v)``) defines it too, and
        so does a statement calling such a def (:func:`~.statements.module_writes`): kept
        code reading ``BUF`` keeps what fills it."""
        for i, more in enumerate(module_writes([(tuple(d), c) for d, c in zip(self.defines, chunks)], self.is_def)):
            if more:
                self.defines[i] = set(self.defines[i]) | more

    def _registrations(self, chunks: list) -> None:
        """A statement filling a registry of one of the module's classes defines it too
        (:func:`~.statements.registrations`: ``Sinks.TABLE["raw"] = RawExporter``,
        ``Table.add("tensor", TensorExporter)``, a subclass registered by its base's
        ``__init_subclass__``), and, when it uses a kept caller's name, makes that class's
        users callers too (:meth:`_render`).  Only classes: JAX's own modules fill their
        primitives' tables at the top level (``random_seed_p.def_impl(...)``) by the
        hundred."""
        classes = {n for d, names, c in zip(self.is_def, self.defines, chunks) if d and _CLASS_START.match(c)
                   for n in names}
        if not classes:
            return
        units = [(tuple(d), c) for d, c in zip(self.defines, chunks)]
        for i, more in enumerate(registrations(units, self.is_def, classes)):
            if more:
                self.defines[i] = set(self.defines[i]) | more
                self.registers.add(i)

    def _names_re(self, names: frozenset, bounded: bool = True):
        """A regex finding any of ``names`` in a text (None for no names), memoised."""
        key = (names, bounded)
        if key not in self._rx:
            alts = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
            self._rx[key] = re.compile(rf"\b(?:{alts})\b" if bounded else alts) if names else None
        return self._rx[key]

    def _uses_any(self, i: int, names: frozenset, rx) -> bool:
        """Whether statement ``i`` uses one of ``names`` (``rx`` finds them in its text)."""
        return rx is not None and rx.search(self.chunks[i]) is not None and bool(self.idents[i] & names)

    def _interop(self, text: str, ids) -> bool:
        """Whether a statement names an interop API (or a name an interop import binds)."""
        pf = self.prefilter
        if ids & self.aliases or any(r in self.roots and names & ids for r, names in pf.pairs):
            return True
        if self.exact:
            return bool(ids & pf.standalone)      # names its code uses, never its text
        # A word of the prefilter counts where it is used, not where a def of that name is.
        return any(text[max(0, m.start() - 4):m.start()] != "def " for m in pf._re.finditer(text))

    def _class_parts(self, i: int):
        """For statement ``i``, a class the ``ast`` reading can mask inside: ``(members,
        their texts, the attributes each stores on self, the names the header uses
        (decorators, bases, keywords))``; else None.  Computed once."""
        memo = self._parts
        if i not in memo:
            a, b = self.stmts[i]
            node = self.nodes[i]
            memo[i] = None
            if self.exact and node is not None and b - a >= _MIN_CLASS:
                members = group(node.body, len(self.lines), self.idents.units[i].offset)
                if len(members) >= 3:
                    header = frozenset().union(*(uses_of(n) for n in (*node.decorator_list, *node.bases, *node.keywords)))
                    texts = ["".join(self.lines[m.first:m.last + 1]) for m in members]
                    memo[i] = (members, texts, [stored_attributes(t) for t in texts], header)
        return memo[i]

    def _member_keep(self, parts, needed: set, callers_of) -> list:
        """Which members of a kept class (:meth:`_class_parts`) are kept: those that name an
        interop API, use a name in ``callers_of``, define a name in ``needed`` (used by kept
        code outside the class), dunders (but :data:`_INERT_DUNDERS`) and class-level statements, and, transitively,
        those a kept member uses (by name, or by storing on ``self`` an attribute it reads)."""
        members, texts, stores, _ = parts
        rx = self._names_re(frozenset(callers_of))
        words = self._words
        keep = [m.name is None or (m.name.startswith("__") and m.name not in _INERT_DUNDERS) or m.name in needed
                or (words is not None and words.search(t) is not None and self._interop(t, m.uses))
                or (rx is not None and rx.search(t) is not None and bool(m.uses & callers_of))
                for m, t in zip(members, texts)]
        by_name: dict = {}
        for q, (m, st) in enumerate(zip(members, stores)):
            for n in st if m.name is None else (m.name, *st):
                by_name.setdefault(n, []).append(q)
        todo = [j for j, k in enumerate(keep) if k]
        seen: set = set()
        while todo:
            j = todo.pop()
            for name in members[j].uses - seen:
                seen.add(name)
                for q in by_name.get(name, ()):
                    if not keep[q]:
                        keep[q] = True
                        todo.append(q)
        return keep

    def _member_lines(self, parts, keep: list) -> dict:
        """``{line index: replacement}`` blanking the members not kept."""
        members = parts[0]
        out = {}
        for m, k in zip(members, keep):
            if not k:
                for ln in range(m.first, m.last + 1):
                    out[ln] = _blank(self.lines[ln])
        if not any(keep):       # a class body may not be empty: one ``pass`` where it starts
            first = members[0].first
            line = self.lines[first]
            out[first] = line[:len(line) - len(line.lstrip(" \t"))] + "pass" + _blank(line)
        return out

    def render(self, callers_of=frozenset(), min_gain: float = 0.1) -> Optional[str]:
        """The text with the statements not kept blanked (line numbers unchanged), or None
        when less than ``min_gain`` of the lines would be blanked.  Statements that use a
        name in ``callers_of`` (functions found to export a parameter) are kept too."""
        return self._exactly(self._render, callers_of, min_gain)

    def _render(self, callers_of, min_gain: float) -> Optional[str]:
        if not self.usable or not self.interesting:
            return None
        # Functions of this file that name a consumer may export a parameter: their callers
        # are kept, so that the text is parsed once (never again after the analysis); so may
        # a name bound to one (``dl = partial(torch.from_dlpack)``, ``STAGES = [..., lambda a:
        # np.from_dlpack(a)]``, and ``def run(x, stages=STAGES)`` through the closure below).
        callers_of = set(callers_of).union(*(self.defines[i] for i, d in enumerate(self.is_def)
                                             if self.base[i] and not self.imports[i]))
        # ... and so may a function that calls one of them (``def relay(b): return
        # to_torch(b)``), or a module-level name bound to a table of them (``EXPORTERS =
        # {"zerocopy": ZeroCopyExporter}``, read by ``EXPORTERS[kind]()``): the closure, so
        # that a caller of a caller is kept too.
        grew = True
        while grew:
            grew = False
            frozen = frozenset(callers_of)
            rx = self._names_re(frozen)
            for i, d in enumerate(self.is_def):
                if (d or i in self.registers or self.defines[i] and not self.imports[i]) \
                        and not self.defines[i] <= callers_of and self._uses_any(i, frozen, rx):
                    callers_of |= self.defines[i]
                    grew = True
        callers_of = frozenset(callers_of)
        rx = self._names_re(callers_of)
        keep = [k or self._uses_any(i, callers_of, rx) for i, k in enumerate(self.base)]
        # The closure of the names kept code uses.  A kept class uses what its header and
        # its kept members use, and which members are kept depends on the names the rest
        # of the kept code uses: a fixpoint (both only grow).
        members: dict = {}          # class statement -> its members kept

        memo: dict = {}

        def used(i):
            parts = self._class_parts(i) if i in members else None
            if parts is None:
                return self.idents[i]
            key = tuple(members[i])
            if memo.get(i, (None,))[0] != key:
                memo[i] = (key, parts[3].union(*(m.uses for m, k in zip(parts[0], members[i]) if k)))
            return memo[i][1]

        needed: set = set()
        todo = [i for i, k in enumerate(keep) if k]
        while True:
            while todo:
                i = todo.pop()
                if i not in members and self._class_parts(i) is not None:
                    members[i] = self._member_keep(self._class_parts(i), needed, callers_of)
                for name in used(i) - needed:
                    needed.add(name)
                    for j in self.by_name.get(name, ()):
                        if not keep[j]:
                            keep[j] = True
                            todo.append(j)
            uses = Counter()
            for i, k in enumerate(keep):
                if k:
                    uses.update(used(i))
            for i, k in enumerate(keep):
                parts = self._class_parts(i) if k else None
                if parts is None:
                    continue
                # Names the rest of the kept code uses (not the class's own uses of itself).
                own = used(i)
                outside = {n for n in own if uses[n] > 1} | (needed - own)
                mk = [a or b for a, b in zip(members[i], self._member_keep(parts, outside, callers_of))]
                if members[i] != mk:
                    members[i] = mk
                    todo.append(i)
            if not todo:
                break
        out = list(self.lines)
        dropped: set = set()        # whole statements blanked: their lines can go (:mod:`.compact`)
        for i, ((a, b), k) in enumerate(zip(self.stmts, keep)):
            if not k:
                for ln in range(a, b + 1):
                    out[ln] = _blank(self.lines[ln])
                dropped.update(range(a, b + 1))
            elif i in members and not all(members[i]):
                for ln, repl in self._member_lines(self._class_parts(i), members[i]).items():
                    out[ln] = repl
                    if not repl.strip():
                        dropped.add(ln)
            elif self.is_def[i] and not self.exact:
                outside = {n for n in self.idents[i] if uses[n] > 1} | (needed - self.idents[i])
                a, b = self.stmts[i]
                for ln, repl in (class_lines(self.lines, a, b, outside, callers_of, self._interop) or {}).items():
                    out[ln] = repl
        if self.exact:      # comments between statements (those above the first stay)
            covered = self.stmts[0][0]
            for a, b in self.stmts:
                for ln in range(covered, a):
                    out[ln] = _blank(self.lines[ln])
                    dropped.add(ln)
                covered = max(covered, b + 1)
            for ln in range(covered, len(out)):
                out[ln] = _blank(self.lines[ln])
                dropped.add(ln)
        blanked = sum(1 for new, old in zip(out, self.lines) if new is not old and not new.strip())
        if blanked < len(self.lines) * min_gain:
            return None
        self.kept = keep
        self.dropped = dropped if self.exact else None
        return "".join(out)

    def holds_nothing(self, callers_of=frozenset()) -> bool:
        """Whether no finding can stand in this text: no interop word is spelled in it, or
        the ``ast`` reading (exact) found no statement but imports naming an interop word or
        a name an interop import binds; and none uses a name in ``callers_of`` (names whose calls may export a parameter
        in another module).  Every finding is reported at such a use (a sink, a removed
        API, an FFI export in a function taking a ``Buffer``, a guard beside a sink)."""
        return self._exactly(self._holds_nothing, callers_of)

    def _holds_nothing(self, callers_of) -> bool:
        callers_of = frozenset(callers_of)
        rx = self._names_re(callers_of)
        if not self.spelled:    # (a text this Python cannot parse is analysed, for its error)
            return (rx is None or rx.search(self._text) is None) and parse(self._text) is not None
        if not (self.usable and self.exact) or self.interesting:
            return False
        return not any(self._uses_any(i, callers_of, rx) for i, imp in enumerate(self.imports) if not imp)

    def blanked_use(self, names) -> bool:
        """Whether a blanked statement of the last rendering uses one of ``names``."""
        return self._exactly(self._blanked_use, names)

    def _blanked_use(self, names) -> bool:
        return any(not k and ids & names for k, ids in zip(self.kept, self.idents))


def read_statements(readable: str, n_lines: int, lazy: bool = True) -> Optional[tuple]:
    """``(statements, the ast statements that import)`` of ``readable`` (a text of
    ``n_lines`` lines): cut from the text and parsed only as asked
    (:func:`~.statements.lazy_statements`), or with ``lazy`` False (or where that cannot cut
    it) parsed whole (:func:`~.statements.statements`); None where ``ast`` cannot parse it.
    Raises :class:`~.statements.Unsplit` only from the statements' lazy fields."""
    if lazy:
        lines = _LINE.findall(readable)
        if lines and lines[-1] == "":
            lines.pop()
        try:
            read = lazy_statements(lines)
        except Unsplit:
            read = None
        if read is not None:
            return read
    read = statements(readable, n_lines)
    return None if read is None else (read[0], read[1].body)


class _Classes:
    """The ``ast`` node of each statement that is a ``class`` (else None), read on demand."""

    __slots__ = ("units",)

    def __init__(self, units):
        self.units = units

    def __getitem__(self, i):
        u = self.units[i]
        return u.node if u.is_def and class_body(u.node) is not None else None

    def __len__(self):
        return len(self.units)


class _Uses:
    """The ``uses`` of each statement, read on demand (a sequence of frozensets)."""

    __slots__ = ("units",)

    def __init__(self, units):
        self.units = units

    def __getitem__(self, i):
        return self.units[i].uses

    def __len__(self):
        return len(self.units)
