"""The masked text without its blanked lines, and the map back to the file's lines.

libcst's parser pays for every line it is given, a blank one too: about 5 ms per thousand
(measured on libcst 1.x, 9,000 blank lines at 43 ms against 5 ms for the 140 lines of code
beside them).  The masking (:mod:`.masking`, :mod:`.partial`) blanks most lines of a long
module (9,418 of ``jax/_src/numpy/lax_numpy.py``'s 9,564), and those lines would cost more
than the code kept.  Whole statements only are blanked (a statement not kept, a member of a
kept class, comments between top-level statements), so their lines can go without changing
what the rest means: no such line is inside a string, a bracket or after a backslash.
:func:`compact` drops them; :class:`LineMap` turns a line of the compacted text back into the
line of the file (columns are unchanged), which is all
:meth:`~jaxinterop_lint.analysis.module.ModuleAnalysis.position` needs.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Optional


class LineMap:
    """Lines of a compacted text (:func:`compact`) back to the lines of the text it was cut
    from.  ``text`` is the compacted text (what libcst wrote back is compared with it);
    ``starts`` the 1-based compacted lines from which ``shifts[i]`` more lines were dropped
    above them."""

    __slots__ = ("text", "starts", "shifts")

    def __init__(self, text: str, starts: list, shifts: list):
        self.text = text
        self.starts = starts
        self.shifts = shifts

    def original(self, line: int) -> int:
        """The 1-based line of the original text that compacted ``line`` is."""
        i = bisect_right(self.starts, line) - 1
        return line + self.shifts[i] if i >= 0 else line


def compact(lines: list, dropped) -> Optional[LineMap]:
    """``lines`` (each with its line end) without the 0-based indexes in ``dropped``, as a
    :class:`LineMap`; None when nothing is dropped (parse the text as it is)."""
    if not dropped:
        return None
    kept: list = []
    starts: list = []
    shifts: list = []
    shift = 0
    for i, line in enumerate(lines):
        if i in dropped:
            shift += 1
            continue
        if not shifts or shifts[-1] != shift:
            starts.append(len(kept) + 1)
            shifts.append(shift)
        kept.append(line)
    return LineMap("".join(kept), starts, shifts)
