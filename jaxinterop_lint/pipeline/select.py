"""Stage 6, select and noqa: from a raw result to what is reported.

Keeps the findings of the enabled rules (the configuration's selection and per-file
ignores) that no ``# noqa`` on their line and no ``# jaxinterop-lint: noqa`` in the file
silences; the silenced ones go to ``suppressed``.  The file's text is needed only when
there is a finding to judge.
"""
from __future__ import annotations

import re
from typing import Callable

from ..finding import Finding
from ..source import LINE_SPLIT
from .results import FileResult, raw_error, raw_findings

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
FILE_NOQA = re.compile(r"#\s*jaxinterop-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
                       re.IGNORECASE)


def noqa_codes(line_text: str):
    """None when the line has no noqa; an empty set for a bare ``# noqa``; else its codes."""
    m = NOQA.search(line_text)
    if m is None:
        return None
    codes = m.group("codes")
    return frozenset() if not codes else frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c)


def file_noqa(text: str):
    """Codes silenced in the whole file by ``# jaxinterop-lint: noqa[: codes]`` (a bare form
    silences all: returns None then); an empty set when there is none."""
    if "jaxinterop-lint" not in text:
        return frozenset()
    out = set()
    for m in FILE_NOQA.finditer(text):
        if not m.group("codes"):
            return None
        out |= {c.upper() for c in re.split(r"[,\s]+", m.group("codes")) if c}
    return frozenset(out)


def select_findings(raw, text: str, path: str, config, result: FileResult) -> None:
    """Keep the enabled findings of ``raw`` in ``result.findings``; those silenced by
    ``# noqa`` or a file-level noqa go to ``result.suppressed``."""
    enabled = config.enabled() - config.ignored_for(path)
    silenced_file = file_noqa(text)
    lines = LINE_SPLIT.split(text)
    for f in sorted(raw, key=Finding.sort_key):
        if f.code not in enabled:
            continue
        if silenced_file is None or f.code in silenced_file:
            result.suppressed.append(f)
            continue
        line_text = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
        codes = noqa_codes(line_text) if "noqa" in line_text.lower() else None
        if codes is not None and (not codes or f.code in codes):
            result.suppressed.append(f)
            continue
        result.findings.append(f)


def select(data: dict, given: str, config, text_of: Callable[[], str]) -> FileResult:
    """The :class:`FileResult` of the raw result ``data`` of the file spelled ``given``;
    ``text_of()`` gives its text (called only when there is a finding)."""
    r = FileResult(given, error=raw_error(data), analysed=bool(data.get("analysed")))
    r.handled = [(given, line) for line in data.get("handled", ())]
    findings = raw_findings(data, given)
    if findings:
        try:
            text = text_of()
        except Exception:
            text = ""
        select_findings(findings, text, given, config, r)
    return r
