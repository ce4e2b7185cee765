"""Blank the top-level statements of a file that cannot matter, before parsing.

libcst's parse is the cost of this linter, and in a large module the interop words usually
sit in a few functions.  A light line scanner cuts the module into top-level statements; the
statements kept are the imports, those that name an interop word (the prefilter's), and,
transitively, those that define a name a kept statement uses.  Every other line is replaced
by an empty line, so line and column numbers are unchanged.  The caller parses the masked
text and falls back to the whole text if that fails.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Optional

from ..knowledge.structures import DATACLASS_DECORATORS, RECORD_BASES, RECORD_METHODS

_TOKEN = re.compile(r'''("""|\'\'\')|("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|(\#)|([(\[{])|([)\]}])''')
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTINUES = re.compile(r"(?:else|elif|except|finally|case)\b|[)\]}]")
_DEFINES = re.compile(r"(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")
_DEFINES_ANYWHERE = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.M)
_ASSIGNED = re.compile(r"^[ \t]*([A-Za-z_][\w, \t]*?)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
_IMPORT = re.compile(r"(?:import|from)\s")
_FROM_NAMES = re.compile(r"\b([A-Za-z_]\w*)(?:\s+as\s+([A-Za-z_]\w*))?")
_KERNEL = re.compile(r"^@\s*(?:numba\.)?cuda\.jit\b", re.M)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
# What kept code needs although it names no source (issue 12, the value model): record
# classes hold the arrays they are given (a record decorator or base of the structure tables,
# or an ``__init__`` storing a parameter on ``self``), helpers that update a record pass its
# arrays on (``state.apply_gradients(...)``), and helpers returning a device-count test guard.
_RECORD_NAMES = "|".join(sorted({q.rsplit(".", 1)[-1] for q in (*DATACLASS_DECORATORS, *RECORD_BASES)}))
_HOLDS_OR_GUARDS = re.compile(
    rf"^@[^\n]*\b(?:{_RECORD_NAMES})\b|^class\s+\w+\([^)]*\b(?:{_RECORD_NAMES})\b|\bself\.(\w+)\s*=\s*\1\b"
    rf"|\.(?:{'|'.join(sorted(RECORD_METHODS))})\("
    r"|\breturn\b[^\n]*(?:devices\(|device_set\b|num_devices\b|device_count\()", re.M)


def _statements(lines: list) -> Optional[list]:
    """Split lines into top-level statements: a list of ``(first, last)`` line indexes.
    None when the scanner loses track (unterminated string or bracket)."""
    starts = []
    depth = 0
    triple = None
    continued = False
    decorating = False
    for i, line in enumerate(lines):
        if triple is None and depth == 0 and not continued and line[:1] not in ("", " ", "\t", "\r", "\n", "#", "\f") \
                and not _CONTINUES.match(line):
            if decorating and not line.startswith("@"):
                decorating = False          # the def or class of the decorators above
            elif not decorating:
                starts.append(i)
                decorating = line.startswith("@")
        pos = 0
        while True:
            if triple is not None:
                end = line.find(triple, pos)
                if end == -1:
                    break
                triple, pos = None, end + 3
                continue
            m = _TOKEN.search(line, pos)
            if m is None:
                break
            if m.group(1):
                triple, pos = m.group(1), m.end()
            elif m.group(3):
                break
            elif m.group(4):
                depth += 1
                pos = m.end()
            elif m.group(5):
                depth = max(0, depth - 1)
                pos = m.end()
            else:
                pos = m.end()
        stripped = line.rstrip("\r\n")
        continued = triple is None and stripped.endswith("\\")
    if triple is not None or depth:
        return None
    return [(s, (starts[k + 1] - 1) if k + 1 < len(starts) else len(lines) - 1) for k, s in enumerate(starts)]


class Masker:
    """The top-level statements of one text, and renderings of it with some blanked.

    A statement is kept when it is an import, names an interop word of ``prefilter`` (a
    :class:`~jaxinterop_lint.pipeline.words.Prefilter`) or a name an interop import binds, uses a
    name in ``callers_of`` (see :meth:`render`), or defines a name a kept statement uses: a
    module-level assignment always, a function or class only when it can make a
    multi-device value (it names a source API, or uses a function or class that does).
    ``usable`` is False when the text is too short or the scanner lost track of it.
    """

    def __init__(self, text: str, prefilter, min_lines: int = 200):
        self.lines = _LINE.findall(text)
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.stmts = _statements(self.lines) if len(self.lines) >= min_lines else None
        self.usable = bool(self.stmts)
        if not self.usable:
            return
        chunks = ["".join(self.lines[a:b + 1]) for a, b in self.stmts]
        self.idents = [frozenset(_IDENT.findall(c)) for c in chunks]
        imports = [bool(_IMPORT.match(c)) for c in chunks]
        roots = {r for r, _ in prefilter.pairs if r in text}
        sink_names = set(prefilter.standalone).union(*(n for r, n in prefilter.pairs if r in roots))
        aliases: set = set()
        for chunk, imp in zip(chunks, imports):
            if imp:
                for name, alias in _FROM_NAMES.findall(chunk):
                    if name in sink_names:
                        aliases.add(alias or name)
        self.defines = []
        self.is_def = []
        for chunk in chunks:
            m = _DEFINES_ANYWHERE.search(chunk) if chunk.startswith("@") else _DEFINES.match(chunk)
            self.is_def.append(m is not None)
            if m:
                self.defines.append({m.group(1)})
            else:
                names = set()
                for target in _ASSIGNED.findall(chunk):
                    names |= set(_IDENT.findall(target))
                self.defines.append(names)
        if "numba" in roots:
            # A kernel launch ``k[grid, block](x)`` is a sink: calls of kernels count.
            for chunk, names in zip(chunks, self.defines):
                if chunk.startswith("@") and _KERNEL.search(chunk):
                    aliases |= names
        self.prefilter, self.roots, self.aliases = prefilter, roots, aliases
        self.base = [imp or self._interop(c, ids) for c, ids, imp in zip(chunks, self.idents, imports)]
        self.interesting = any(k and not imp for k, imp in zip(self.base, imports))
        self.by_name: dict = {}
        for i, names in enumerate(self.defines):
            for n in names:
                self.by_name.setdefault(n, []).append(i)
        # Functions and classes that can make a multi-device value: they name a source, or
        # use one that does (fixpoint).  Only those are kept for the names kept code uses.
        from .words import SOURCE_RE

        self.carrying = [d and (b or bool(SOURCE_RE.search(c)) or bool(_HOLDS_OR_GUARDS.search(c)))
                         for d, b, c in zip(self.is_def, self.base, chunks)]
        carried = set().union(*(self.defines[i] for i, c in enumerate(self.carrying) if c))
        grew = True
        while grew:
            grew = False
            for i, d in enumerate(self.is_def):
                if d and not self.carrying[i] and self.idents[i] & carried:
                    self.carrying[i] = grew = True
                    carried |= self.defines[i]

    def _interop(self, text: str, ids) -> bool:
        """Whether a statement names an interop API (or a name an interop import binds)."""
        pf = self.prefilter
        if ids & self.aliases or any(r in self.roots and names & ids for r, names in pf.pairs):
            return True
        # A word of the prefilter counts where it is used, not where a def of that name is.
        return any(text[max(0, m.start() - 4):m.start()] != "def " for m in pf._re.finditer(text))

    def _class_lines(self, a: int, b: int, needed: set, callers_of) -> Optional[list]:
        """For a kept class spanning lines ``a..b``: which of its lines to keep, blanking the
        methods that name no interop API, define no name in ``needed`` and are not used by a
        kept method; None to keep the class whole."""
        from .words import SOURCE_RE

        lines = self.lines[a:b + 1]
        head = next((i for i, ln in enumerate(lines) if ln.startswith("class ")), None)
        if head is None or b - a < 40:
            return None
        depth, body = 0, None
        for i in range(head, len(lines)):
            code = lines[i].split("#", 1)[0]
            depth += code.count("(") + code.count("[") + code.count("{")
            depth -= code.count(")") + code.count("]") + code.count("}")
            if depth <= 0 and code.rstrip().endswith(":"):
                body = i + 1
                break
        if body is None or body >= len(lines):
            return None
        first = next((ln for ln in lines[body:] if ln.strip() and not ln.lstrip().startswith("#")), None)
        if first is None:
            return None
        indent = first[:len(first) - len(first.lstrip(" \t"))]
        if not indent:
            return None
        inner = [ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[body:]]
        stmts = _statements(inner)
        if not stmts or len(stmts) < 3:
            return None
        texts = ["".join(inner[s:e + 1]) for s, e in stmts]
        ids = [frozenset(_IDENT.findall(t)) for t in texts]
        names = []
        for t in texts:
            m = _DEFINES_ANYWHERE.search(t) if t.startswith("@") else _DEFINES.match(t)
            names.append(m.group(1) if m else None)
        keep = [n is None or n.startswith("__") or n in needed or self._interop(t, i)
                or bool(callers_of and i & callers_of) for n, t, i in zip(names, texts, ids)]
        carrying = [n is not None and (k or bool(SOURCE_RE.search(t))) for n, k, t in zip(names, keep, texts)]
        todo = [i for i, k in enumerate(keep) if k]
        seen: set = set()
        while todo:
            i = todo.pop()
            for name in ids[i] - seen:
                seen.add(name)
                for j, n in enumerate(names):
                    if n == name and not keep[j] and carrying[j]:
                        keep[j] = True
                        todo.append(j)
        if all(keep) or not any(keep):
            return None
        mask = [True] * len(lines)
        for (s, e), k in zip(stmts, keep):
            if not k:
                for i in range(s, e + 1):
                    mask[body + i] = False
        return mask

    def render(self, callers_of=frozenset(), min_gain: float = 0.3) -> Optional[str]:
        """The text with the statements not kept blanked (line numbers unchanged), or None
        when less than ``min_gain`` of the lines would be blanked.  Statements that use a
        name in ``callers_of`` (functions found to export a parameter) are kept too."""
        if not self.usable or not self.interesting:
            return None
        # Functions of this file that name a consumer may export a parameter: their callers
        # are kept, so that the text is parsed once (never again after the analysis).
        callers_of = set(callers_of).union(*(self.defines[i] for i, d in enumerate(self.is_def)
                                             if d and self.base[i]))
        # ... and so may a function that calls one of them (``def relay(b): return
        # to_torch(b)``): the closure, so that a caller of a caller is kept too.
        grew = True
        while grew:
            grew = False
            for i, d in enumerate(self.is_def):
                if d and self.idents[i] & callers_of and not self.defines[i] <= callers_of:
                    callers_of |= self.defines[i]
                    grew = True
        callers_of = frozenset(callers_of)
        keep = [k or bool(callers_of and ids & callers_of) for k, ids in zip(self.base, self.idents)]
        needed: set = set()
        todo = [i for i, k in enumerate(keep) if k]
        while todo:
            i = todo.pop()
            for name in self.idents[i] - needed:
                needed.add(name)
                for j in self.by_name.get(name, ()):
                    if not keep[j] and (self.carrying[j] or not self.is_def[j]):
                        keep[j] = True
                        todo.append(j)
        uses = Counter()
        for i, k in enumerate(keep):
            if k:
                uses.update(self.idents[i])
        line_masks = {}
        for i, ((a, b), k) in enumerate(zip(self.stmts, keep)):
            if k and self.is_def[i] and b - a >= 40:
                # Names the rest of the kept code uses (not the class's own uses of itself).
                outside = {n for n in self.idents[i] if uses[n] > 1} | (needed - self.idents[i])
                m = self._class_lines(a, b, outside, callers_of)
                if m is not None:
                    line_masks[i] = m
        kept = sum((sum(line_masks[i]) if i in line_masks else b - a + 1)
                   for i, ((a, b), k) in enumerate(zip(self.stmts, keep)) if k)
        if kept > len(self.lines) * (1 - min_gain):
            return None
        self.kept = keep
        self.inner_idents = {i: None for i in line_masks}
        out = self.lines[:self.stmts[0][0]]
        for i, ((a, b), k) in enumerate(zip(self.stmts, keep)):
            if not k:
                out.extend(_blank(ln) for ln in self.lines[a:b + 1])
            elif i in line_masks:
                out.extend(ln if m else _blank(ln) for ln, m in zip(self.lines[a:b + 1], line_masks[i]))
            else:
                out.extend(self.lines[a:b + 1])
        return "".join(out)

    def blanked_use(self, names) -> bool:
        """Whether a blanked statement of the last rendering uses one of ``names``."""
        return any(not k and ids & names for k, ids in zip(self.kept, self.idents))


def _blank(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith(("\n", "\r")):
        return line[-1]
    return ""
