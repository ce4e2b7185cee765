"""What a text costs to parse, and large constant displays shrunk before parsing (issue 13:
"no size or shape of input may blow memory or time").

libcst's parser is the cost of a large input: on CPython 3.11 with libcst 1.x it holds some
1.9-2.9 KB of memory per token and takes some 35-50 microseconds per token on this project's
2-core test machine (``scripts/large_inputs.py`` measures it: a 0.25 MB list literal of 75,000
tokens took 144 MB and 3.3 s to parse; 0.5 MB of dense code, 267,000 tokens, 496 MB and
13 s).  So, before a text is parsed:

- :func:`shrink` blanks the items of long displays of constants (a list, tuple, set or dict
  literal of at least :data:`MIN_ITEMS` numbers, strings, ``True``/``False``/``None``, or such
  displays nested) after the first one, keeping every newline: lines and columns are
  unchanged, and the analysis sees the same kind of value (constants hold no arrays).  The
  spans blanked are returned, so that no fix rewrites text inside them
  (:func:`jaxinterop_lint.rules.edits.replace`);
- :func:`within_budget` refuses a text whose parse would take more than
  :func:`memory_budget` allows for the file: the parser's share of the memory target,
  :data:`BUDGET_FIXED` plus :data:`BUDGET_PER_BYTE` times the file's size (never less than
  :data:`BUDGET_FLOOR` for a file of up to :data:`FLOOR_UP_TO`, so that the large modules
  people write are analysed), estimated at
  :data:`BYTES_PER_TOKEN` per token and :data:`BYTES_PER_LINE` per line (libcst makes a node
  of every empty line, and resolving positions writes them all out again: 100,000 empty
  lines cost 129 MB and 4.7 s).  Counting tokens stops at the limit, so a refusal costs time
  linear in the limit, never in the text.
"""
from __future__ import annotations

import keyword
import re

from .source import SourceError, guard

BYTES_PER_TOKEN = 2048        # libcst's memory per token (measured, see above)
BYTES_PER_LINE = 1536         # ... and per line, even an empty one (a masked statement's): 320
                              # for its node, the rest for the positions and the analysis (measured:
                              # 1 MB of masked code, 62,000 lines, took 97 MB over the interpreter)
BUDGET_FIXED = 50 * 2**20     # bytes the parse may take whatever the file's size ...
BUDGET_PER_BYTE = 30          # ... plus this many per byte of the file (issue 13's target)
BUDGET_FLOOR = 512 * 2**20    # ... but never less than this for a file of up to FLOOR_UP_TO: the
FLOOR_UP_TO = 2**20           # large modules people write (jax/_src/core.py, 155 KB: 78 MB to parse;
                              # keras' numpy_test.py, 437 KB: 422 MB) are analysed, not refused;
                              # larger files (generated code) get the 50 MB + 30x target exactly
MIN_ITEMS = 64                # items of a constant display past which it is shrunk
SHRINK_FROM = 64 * 2**10     # characters of text below which nothing is shrunk (the scan costs
                              # some 0.3 microseconds per character; libcst 10-20)
GUARD_FIRST = 2 * 2**20       # characters up to which a text over budget is checked for nesting first

_STRING = (r'(?:"""(?:\\[\s\S]|[^\\])*?"""|\'\'\'(?:\\[\s\S]|[^\\])*?\'\'\'|"(?:\\.|[^"\\\r\n])*"'
           r"|'(?:\\.|[^'\\\r\n])*')")
_LEX = re.compile(
    rf"(?P<s>(?:[rRbBuU]|[rR][bB]|[bB][rR])?{_STRING})"
    rf"|(?P<f>(?:[fF][rR]?|[rR][fF]){_STRING})"
    r"|(?P<c>\#[^\r\n]*)"
    r"|(?P<n>(?:\d|\.\d)(?:[\w.]|(?<=[eE])[-+])*)"
    r"|(?P<w>[^\W\d]\w*)"
    r"|(?P<o>[(\[{])|(?P<x>[)\]}])|(?P<p>\S)")
_TOKEN = re.compile(rf"[\w]*{_STRING}|\#[^\r\n]*|\w+|\S")
# A necessary condition for a display to be shrunk, checked at C speed first: a run of
# MIN_ITEMS constants with only whitespace, commas, colons and brackets between them.  (The
# look-ahead names the characters a constant starts with: the same matches, but the engine
# leaves the other positions at once, a third faster on jax/_src/numpy/lax_numpy.py.)
_RUN = re.compile(r"""(?=[-+\d.'"TFN])(?:[-+]?(?:(?:\d|\.\d)(?:[\w.]|(?<=[eE])[-+])*|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|"""
                  r"""(?:True|False|None)\b)[\s,:()\[\]{}]+){%d}""" % MIN_ITEMS)
_CONSTANT_WORDS = frozenset({"True", "False", "None"})
_KEYWORDS = frozenset(keyword.kwlist) - _CONSTANT_WORDS


class _Frame:
    __slots__ = ("display", "simple", "items", "after_first", "need_sep", "last")

    def __init__(self, display: bool):
        self.display = display
        self.simple = display
        self.items = 0
        self.after_first = -1     # offset just after the first top-level comma
        self.need_sep = False     # a value was seen since the last comma or colon
        self.last = ""            # kind of that value ("s" for a string)


def _value(top: _Frame, kind: str) -> None:
    if top.need_sep and not (kind == "s" and top.last == "s"):   # "a" "b" is one string
        top.simple = False
    top.need_sep, top.last = True, kind


def constant_displays(text: str) -> list:
    """``[(start, end), ...]``: for each outermost display of constants with at least
    :data:`MIN_ITEMS` items, the offsets from just after its first comma to its closing
    bracket.  Never raises; a text it cannot follow gives fewer spans, never a wrong one."""
    if text.count(",") < MIN_ITEMS or not _RUN.search(text):
        return []
    spans: list = []
    stack: list = []
    prev = ""          # kind of the previous significant token ("w" a name, "x" a closing bracket ...)
    for m in _LEX.finditer(text):
        kind = m.lastgroup
        if kind == "c":
            continue
        top = stack[-1] if stack else None
        if kind == "o":
            display = prev not in ("w", "x", "s", "f", "n")    # not a call or a subscript
            if top is not None:
                _value(top, "o")
            stack.append(_Frame(display))
        elif kind == "x":
            if top is None:
                prev = kind
                continue
            stack.pop()
            if top.simple and top.items + 1 >= MIN_ITEMS and top.after_first >= 0:
                spans = [s for s in spans if s[0] < top.after_first]   # inner ones are inside it
                spans.append((top.after_first, m.start()))
            if stack and not top.simple:
                stack[-1].simple = False
        elif top is not None:
            tok = m.group()
            if kind == "s" or kind == "n" or (kind == "w" and tok in _CONSTANT_WORDS):
                _value(top, kind)
            elif kind == "p" and tok == ",":
                top.items += 1
                top.need_sep = False
                if top.after_first < 0:
                    top.after_first = m.end()
            elif kind == "p" and tok == ":" and top.need_sep:
                top.need_sep = False
            elif kind == "p" and tok in "+-" and not top.need_sep:
                pass                                   # a unary sign
            elif kind == "p" and tok == "." and not top.need_sep:
                pass                                   # ... (Ellipsis)
            else:
                top.simple = False
        if kind == "w" and m.group() in _KEYWORDS:
            prev = "k"                                 # a keyword: ``in [1, 2]`` is a display
        else:
            prev = kind
    return spans


def shrink(text: str) -> tuple:
    """``(text with the items of long constant displays blanked, the spans blanked)``; see
    the module's docstring.  The text has the same length, lines and columns.  A text under
    :data:`SHRINK_FROM` characters is returned as it is (its parse is cheap anyway)."""
    spans = constant_displays(text) if len(text) >= SHRINK_FROM else []
    if not spans:
        return text, []
    out, at = [], 0
    for start, end in spans:
        out.append(text[at:start])
        out.append(re.sub(r"[^\r\n]", " ", text[start:end]))
        at = end
    out.append(text[at:])
    return "".join(out), spans


def memory_budget(size: int) -> int:
    """The bytes the parse of a file of ``size`` characters may take."""
    target = BUDGET_FIXED + BUDGET_PER_BYTE * size
    return max(BUDGET_FLOOR, target) if size <= FLOOR_UP_TO else target


def count_tokens(text: str, stop: int) -> int:
    """About how many tokens libcst makes of ``text`` (a string or a comment is one), counted
    up to ``stop + 1`` at most."""
    n = 0
    for _ in _TOKEN.finditer(text):
        n += 1
        if n > stop:
            break
    return n


def within_budget(text: str, size: int) -> None:
    """Raise :class:`SourceError` (one line) when parsing ``text``, what is left to parse of
    a file of ``size`` characters, would take more than :func:`memory_budget`: an estimate of
    :data:`BYTES_PER_TOKEN` per token and :data:`BYTES_PER_LINE` per line."""
    budget = memory_budget(size)
    room = budget - BYTES_PER_LINE * (text.count("\n") + 1)
    limit = max(room, 0) // BYTES_PER_TOKEN
    if room >= 0 and (len(text) <= limit or count_tokens(text, limit) <= limit):
        return
    raise SourceError(f"too large to analyse: parsing what is left after masking would take over "
                      f"{budget / 2**20:.0f} MB, the limit for a file of {size / 2**20:.1f} MB (50 MB + 30 times its "
                      f"size; 512 MB at least up to 1 MB)")


def parseable(text: str, size: int) -> None:
    """Raise :class:`SourceError` unless ``text`` (what is left to parse of a file of
    ``size`` characters) may be given to libcst: within :func:`within_budget` and
    :func:`jaxinterop_lint.source.guard`.  A text over budget gets the guard's more precise
    reason where it has one (nesting), when it is small enough for the guard to be cheap."""
    try:
        within_budget(text, size)
    except SourceError:
        if len(text) <= GUARD_FIRST:
            guard(text)
        raise
    guard(text)
