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
    parsed, the spans shrunk)``.  Raises :class:`SourceError`, also for a text with more to
    parse than the memory budget of its size allows (:func:`~jaxinterop_lint.size.within_budget`)."""
    import libcst as cst

    from ..size import parseable, shrink

    PARSES[os.path.abspath(path)] += 1
    if masker is not None:
        masked = masker.render(masker.callers)
        if masked is not None:
            masked, spans = shrink(masked)
            parseable(masked, len(text))    # what libcst is given, not what the masking left out
            try:
                module = cst.parse_module(masked)
                masker.text = masked
                return module, masker, masked, spans
            except Exception:  # the scanner cut a statement wrongly: parse the whole text
                PARSES[os.path.abspath(path)] += 1
    whole, spans = shrink(text)
    parseable(whole, len(text))
    return parse(whole, guarded=True), None, whole, spans


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
    module, masker, parsed, shrunk = parse_module(text, path, masker)
    if project is not None:
        package = project.package_of(path)
    else:
        from ..source import package_of

        package = package_of(path) if os.path.exists(path) else ""
    ma = ModuleAnalysis(module, path, package, project, source=text, kb=config.knowledge())
    ma.masker = masker
    ma.partial = masker if partial is not None and masker is not None else None
    ma.parsed_text = parsed
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
