"""Stage 6, select and noqa: from a raw result to what is reported.

Keeps the findings of the enabled rules (the configuration's selection and per-file
ignores) that no ``# noqa`` on their line and no ``# jaxinterop-lint: noqa`` in the file
silences; the silenced ones go to ``suppressed``.  The directives themselves are read by
:mod:`jaxinterop_lint.noqa` (the one place that parses them; with the opt-in JXI100 it also
judges them).  The file's text is needed only when there is a finding to judge, or when
JXI100 is enabled.
"""
from __future__ import annotations

from typing import Callable

from ..catalog import UNUSED_NOQA
from .results import FileResult, raw_error, raw_findings

_NOQA_NAMES = {"FILE_NOQA": "FILE_NOQA", "NOQA": "NOQA", "file_noqa": "file_noqa", "noqa_codes": "line_codes",
               "select_findings": "select_findings"}


def __getattr__(name: str):
    """The names this module re-exported from :mod:`jaxinterop_lint.noqa`, on first use."""
    if name in _NOQA_NAMES:
        from .. import noqa

        return getattr(noqa, _NOQA_NAMES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def select(data: dict, given: str, config, text_of: Callable[[], str], enabled=None) -> FileResult:
    """The :class:`FileResult` of the raw result ``data`` of the file spelled ``given``;
    ``text_of()`` gives its text (called only when there is a finding, or its noqa
    directives are judged).  ``enabled`` is ``config.enabled()`` when the caller has it
    (a run selects thousands of results with one configuration)."""
    if not data.get("findings") and not data.get("handled") and data.get("error") is None:
        # nothing to select (most files of a run): no noqa to judge unless JXI100 is on
        if UNUSED_NOQA not in (config.enabled() if enabled is None else enabled):
            return FileResult(given, analysed=bool(data.get("analysed")))
    r = FileResult(given, error=raw_error(data), analysed=bool(data.get("analysed")))
    r.handled = [(given, line) for line in data.get("handled", ())]
    findings = raw_findings(data, given)
    if findings or (r.error is None and UNUSED_NOQA in config.enabled()):
        try:
            text = text_of()
        except Exception:
            text = ""
        from ..noqa import select_findings

        select_findings(findings, text, given, config, r)
    return r
