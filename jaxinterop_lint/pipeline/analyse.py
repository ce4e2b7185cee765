"""Stage 4, analyse: parse a planned file once with libcst and run its module analysis.

The only place the package parses with libcst (:func:`parse_module`; :data:`PARSES` counts
the parses per file in this process, for the tests that prove a file is parsed at most
once and a file no JAX code reaches never).  Files have the statements that cannot matter
blanked first (:mod:`.masking`, read with CPython's ``ast``); the callers of functions that
may export a parameter (this file's own, and those the plan found among its imports) are
kept, so the masked text is never parsed a second time after the analysis.  A file in which
nothing a finding can stand at is left is not parsed for its report at all
(:func:`holds_no_finding`).  The analysis itself is
reached through narrow entry points: :class:`~jaxinterop_lint.analysis.module.ModuleAnalysis`
construction, ``walk_body``/``analyse_functions``/``run``, ``events``.
"""
from __future__ import annotations

import os
from collections import Counter
from typing import Optional

from ..source import SourceError, parse
from .words import Prefilter

PARSES: Counter = Counter()


def parse_module(text: str, path: str, masker=None):
    """Parse ``text`` (masked by ``masker`` when it pays, long constant displays shrunk:
    :func:`jaxinterop_lint.size.shrink`); returns ``(module, masker or None, the text
    parsed, the spans shrunk, line map)``.  The masked text is given to libcst without the
    lines of the statements blanked (:mod:`.compact`): its nodes' lines are those of the
    compacted text, and the line map (a :class:`~.compact.LineMap`, or None when the text
    was parsed as it is) turns them back into the file's.  The text returned has the file's
    lines (what edits are cut from).  Raises :class:`SourceError`, also for a text with more
    to parse than the memory budget of its size allows (:func:`~jaxinterop_lint.size.within_budget`)."""
    from ..cstparse import parse_module as fast_parse
    from ..size import parseable, shrink

    PARSES[os.path.abspath(path)] += 1
    if masker is not None:
        masked = masker.render(masker.callers)
        if masked is not None:
            masked, spans = shrink(masked)
            # libcst drops the form feeds that start lines, which the positions of the rules
            # correct line by line (rules.base.true_position): such a text keeps its lines.
            line_map = _compact(masked, getattr(masker, "dropped", None)) if "\f" not in text else None
            given = masked if line_map is None else line_map.text
            parseable(given, len(text))    # what libcst is given, not what the masking left out
            try:
                module = fast_parse(given)
                masker.text = masked
                return module, masker, masked, spans, line_map
            except Exception:  # the scanner cut a statement wrongly: parse the whole text
                PARSES[os.path.abspath(path)] += 1
    whole, spans = shrink(text)
    parseable(whole, len(text))
    return parse(whole, guarded=True), None, whole, spans, None


def _compact(masked: str, dropped):
    """:func:`~.compact.compact` of the lines of ``masked`` (as the masking cut them)."""
    from .compact import compact
    from .masking import _LINE

    if not dropped:
        return None
    lines = _LINE.findall(masked)
    if lines and lines[-1] == "":
        lines.pop()
    return compact(lines, dropped)


_LAST: list = [None, None, 0, None]    # (text, sinks, min_lines, Masker) of the last file asked about


def _masker(text: str, sinks: Prefilter, min_lines: int):
    """The :class:`~.masking.Masker` of ``text`` (made once for the question of
    :func:`holds_no_finding` and the parse that may follow)."""
    from .masking import Masker

    if _LAST[1] is sinks and _LAST[0] == text and (_LAST[2] == min_lines or len(_LAST[3].lines) >= min_lines >= _LAST[2]):
        return _LAST[3]
    masker = Masker(text, sinks, min_lines)
    _LAST[:] = [text, sinks, min_lines, masker]
    return masker


def holds_no_finding(text: str, sinks: Prefilter, callers=frozenset()) -> bool:
    """Whether the analysis of ``text`` can find nothing, read from CPython's ``ast``
    without a libcst parse: no statement but imports names a word of ``sinks`` (the plan's
    masking words: consumers, and words that alone make a finding) or a name an interop
    import binds, and none uses a name in ``callers`` (see :func:`build_analysis`).  False
    where ``ast`` cannot parse the text.  The analysis of such a file has no finding and
    judges no sink handled (every event of the analysis stands at such a use); its module
    analysis for other modules' summaries is made when they ask for it."""
    return _masker(text, sinks, 0).holds_nothing(frozenset(callers))


def build_analysis(text: str, path: str, config, project=None, sinks: Optional[Prefilter] = None,
                   callers=frozenset(), whole: bool = False, partial: Optional[frozenset] = None):
    """Parse one module and make its (not yet run) analysis, with ``project`` attached for
    cross-module names.  ``sinks`` are the consumer words for masking, ``callers`` names
    whose callers must be kept; ``whole`` parses the text whole; ``partial`` (a set of
    top-level names) parses only what defines them (:mod:`.partial`; the analysis's
    ``partial`` is then the :class:`~.partial.Partial`, else None).  Raises SourceError."""
    from ..analysis.module import ModuleAnalysis
    from .masking import MIN_LINES

    masker = None
    if not whole and partial is not None:
        from .partial import Partial

        masker = Partial(text, partial)
    elif not whole and sinks is not None:
        masker = _masker(text, sinks, MIN_LINES)
        masker.callers = frozenset(callers)
    module, masker, parsed, shrunk, line_map = parse_module(text, path, masker)
    if project is not None:
        package = project.package_of(path)
    else:
        from ..source import package_of

        package = package_of(path) if os.path.exists(path) else ""
    ma = ModuleAnalysis(module, path, package, project, source=text, kb=config.knowledge())
    ma.masker = masker
    ma.partial = masker if partial is not None and masker is not None else None
    ma.parsed_text = parsed     # the file's lines (the module's are line_map's)
    ma.line_map = line_map
    ma.shrunk = shrunk          # offsets no fix may rewrite (constants blanked before parsing)
    if project is not None and os.path.isabs(path):
        ma.display_path = project.display(path)
    return ma


def run_analysis(ma):
    """Run a module analysis made by :func:`build_analysis`; raises SourceError when it is
    too deeply nested."""
    try:
        return ma.run()
    except RecursionError:
        raise SourceError("too deeply nested to analyse") from None
