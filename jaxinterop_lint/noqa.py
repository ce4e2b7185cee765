"""``# noqa`` directives: parsing them, selecting findings by them, and judging them.

The one place that reads noqa comments (the engine's select stage, ``--add-noqa`` and the
unused-noqa rule JXI100 all use it):

- a line directive ``# noqa`` (bare: every code) or ``# noqa: JXI002, JXI005`` silences the
  findings of its line, as in flake8 (whose regex this follows: ``:`` then codes separated by
  commas or spaces, case-insensitive);
- a file directive ``# jaxinterop-lint: noqa`` (bare: the whole file) or
  ``# jaxinterop-lint: noqa: JXI002`` anywhere in a file silences codes in the whole file.

:func:`select_findings` keeps the enabled findings that no directive silences.
:func:`unused_directives` is JXI100 (ruff's RUF100): it reports the directives that name an
unknown ``JXI`` code, a code twice, a code that is not enabled, or a code that silences no
finding, with a safe fix that removes those codes (the whole comment when nothing is left).
Codes of other tools (``E501``, ``F401``, ...) and bare line directives are never judged:
they may be there for flake8, ruff or a type checker.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Iterable, Optional

from .catalog import NAMES, UNUSED_NOQA  # noqa: F401  (UNUSED_NOQA re-exported)
from .finding import Edit, Finding, Fix

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
FILE_NOQA = re.compile(r"#\s*jaxinterop-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
                       re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
LINE_SPLIT = re.compile(r"\r\n|\r|\n")
PREFIX = "JXI"            # the codes this tool owns (and judges in noqa directives)
# UNUSED_NOQA: the code of the unused-noqa rule (rules/noqa.py documents it), from the catalogue
FIX_TITLE = "Remove the unused codes (the whole directive when none is left)"


def line_codes(line_text: str) -> Optional[frozenset]:
    """The codes a line's ``# noqa`` silences: None when the line has none, an empty set for
    a bare ``# noqa`` (every code), else its codes upper-cased."""
    m = NOQA.search(line_text)
    if m is None:
        return None
    codes = m.group("codes")
    return frozenset() if not codes else frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c)


def file_noqa(text: str) -> Optional[frozenset]:
    """Codes silenced in the whole file by ``# jaxinterop-lint: noqa[: codes]``: None when a
    bare directive silences every code, an empty set when there is no directive."""
    if "jaxinterop-lint" not in text:
        return frozenset()
    out: set = set()
    for m in FILE_NOQA.finditer(text):
        if not m.group("codes"):
            return None
        out |= {c.upper() for c in re.split(r"[,\s]+", m.group("codes")) if c}
    return frozenset(out)


def select_findings(raw: Iterable[Finding], text: str, path: str, config, result) -> None:
    """Keep the findings of ``raw`` that ``config`` enables for ``path`` in
    ``result.findings`` (sorted), and move those a noqa directive silences to
    ``result.suppressed``; with JXI100 enabled its findings (:func:`unused_directives`) are
    selected the same way.  ``result`` is an engine ``FileResult``."""
    raw = list(raw)
    enabled = config.enabled() - config.ignored_for(path)
    if UNUSED_NOQA in enabled:
        raw += unused_directives(text, path, raw, enabled)
    silenced_file = file_noqa(text)
    lines = LINE_SPLIT.split(text)
    for f in sorted(raw, key=Finding.sort_key):
        if f.code not in enabled:
            continue
        # A bare directive silences every code but JXI100, which judges directives: a
        # directive never silences what is said about itself unless it names JXI100.  A
        # bare file directive silences the whole file: JXI100 too, but for what it says of
        # the file directive itself (unused where the file has no enabled finding).
        bare_silences = f.code != UNUSED_NOQA
        line_text = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
        about_file_directive = f.code == UNUSED_NOQA and FILE_NOQA.search(line_text) is not None
        if (silenced_file is None and not about_file_directive) or (silenced_file and f.code in silenced_file):
            result.suppressed.append(f)
            continue
        codes = line_codes(line_text) if "noqa" in line_text.lower() else None
        if codes is not None and ((not codes and bare_silences) or f.code in codes):
            result.suppressed.append(f)
            continue
        result.findings.append(f)


@dataclass(frozen=True)
class Directive:
    """One noqa directive in a comment.  ``line`` 1-based; ``start``/``end`` 0-based columns
    of the directive (``#`` to its last code); ``codes`` as written, with their columns
    (``spans``); ``file_level`` for ``# jaxinterop-lint: noqa``; ``comment_start`` the column
    of the comment's ``#`` and ``own_line`` whether nothing but blanks precede it."""

    line: int
    start: int
    end: int
    codes: tuple
    spans: tuple
    file_level: bool
    comment_start: int
    own_line: bool


def _comments(text: str) -> list:
    """``(line, column, comment text)`` of every real comment (not text inside strings);
    falls back to every ``#`` found by line when the tokenizer rejects the text."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.start[1], tok.string))
        return out
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    for number, line in enumerate(LINE_SPLIT.split(text), 1):
        col = line.find("#")
        if col >= 0:
            out.append((number, col, line[col:]))
    return out


def directives(text: str) -> list:
    """Every noqa directive of ``text`` (line and file level) as :class:`Directive`s, in
    source order.  Only comments are read: ``"# noqa"`` inside a string is no directive."""
    if "noqa" not in text.lower():
        return []
    lines = LINE_SPLIT.split(text)
    out = []
    for number, col, comment in _comments(text):
        if "noqa" not in comment.lower():
            continue
        m = FILE_NOQA.search(comment)
        file_level = m is not None
        m = m or NOQA.search(comment)
        if m is None:
            continue
        codes, spans = [], []
        if m.group("codes"):
            base = m.start("codes")
            for c in _CODE.finditer(m.group("codes")):
                codes.append(c.group(0).upper())
                spans.append((col + base + c.start(), col + base + c.end()))
        own = not lines[number - 1][:col].strip() if number <= len(lines) else False
        out.append(Directive(number, col + m.start(), col + m.end(), tuple(codes), tuple(spans), file_level,
                             col, own))
    return out


def unused_directives(text: str, path: str, raw: Iterable[Finding], enabled: frozenset) -> list:
    """JXI100 findings for ``text``: one per directive that names a ``JXI`` code that is not
    a rule (unknown), twice (duplicated), not enabled for ``path`` (non-enabled), or whose
    rule made no finding it silences (unused: on its line for a line directive, in the file
    for a file directive); a bare file directive in a file with no enabled finding is unused.
    ``raw`` are the file's findings before selection (every code)."""
    raw = [f for f in raw if f.code != UNUSED_NOQA]
    at_line: dict = {}
    for f in raw:
        at_line.setdefault(f.line, set()).add(f.code)
    in_file = {f.code for f in raw}
    lines = LINE_SPLIT.split(text)
    out = []
    for d in directives(text):
        if d.file_level and not d.codes:
            if not (in_file & enabled):
                out.append(_finding(path, d, {"unused": ["(every code)"]}, (), lines))
            continue
        problems: dict = {}
        keep, seen = [], set()
        for code in d.codes:
            if not code.startswith(PREFIX):
                kind = "unknown" if d.file_level else None
            elif code in seen:
                kind = "duplicated"
            elif code not in NAMES:
                kind = "unknown"
            elif code not in enabled:
                kind = "non-enabled"
            elif code not in (in_file if d.file_level else at_line.get(d.line, ())):
                kind = "unused"
            else:
                kind = None
            seen.add(code)
            if kind is None:
                keep.append(code)
            else:
                problems.setdefault(kind, []).append(code)
        if problems:
            out.append(_finding(path, d, problems, tuple(keep), lines))
    return out


def _finding(path: str, d: Directive, problems: dict, keep: tuple, lines: list) -> Finding:
    parts = "; ".join(f"{kind}: {', '.join(f'`{c}`' if c[0] != '(' else c for c in codes)}"
                      for kind, codes in problems.items())
    what = "file-level noqa directive" if d.file_level else "noqa directive"
    return Finding(path=path, line=d.line, column=d.start, end_line=d.line, end_column=d.end,
                   code=UNUSED_NOQA, name=NAMES[UNUSED_NOQA], message=f"Unused {what} ({parts})",
                   fix=Fix(FIX_TITLE, "safe", (_edit(d, keep, lines),)), function="", snippet="")


def _edit(d: Directive, keep: tuple, lines: list) -> Edit:
    """The edit that leaves only ``keep`` in the directive's code list, or removes the
    directive: with the blanks before it when it ends its line, the whole line when the
    comment stood alone, and keeping the ``#`` of a comment whose prose follows it."""
    if keep:
        return Edit(d.line, d.spans[0][0], d.line, d.spans[-1][1], ", ".join(keep))
    line = lines[d.line - 1]
    after = line[d.end:]
    if not after.strip():
        if d.own_line and d.start == d.comment_start:
            if d.line < len(lines):
                return Edit(d.line, 0, d.line + 1, 0, "")
            if d.line > 1:
                return Edit(d.line - 1, len(lines[d.line - 2]), d.line, len(line), "")
            return Edit(d.line, 0, d.line, len(line), "")
        return Edit(d.line, len(line[:d.start].rstrip()), d.line, len(line), "")
    if after.lstrip().startswith("#"):
        return Edit(d.line, d.start, d.line, d.end + len(after) - len(after.lstrip()), "")
    if d.start == d.comment_start:       # `# noqa: JXI002 because ...` -> `# because ...`
        return Edit(d.line, d.start + 1, d.line, d.end, "")
    return Edit(d.line, d.start, d.line, d.end, "")
