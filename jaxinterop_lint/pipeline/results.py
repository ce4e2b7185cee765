"""The records a run hands back (:class:`FileResult`, :class:`LintResult`) and the plain-data
form of a raw result, as the store keeps it and as workers send it.

A *raw* result is what the rules make of one file before selection and ``noqa``: every
rule's findings, the sinks judged handled, the error.  It depends on the file's content and
on what its analysis used, never on the rule selection, so the command line and the flake8
plugin share it.  Paths in it are absolute; :func:`raw_to_result` spells them for the
current run: the file as the user gave it, other files relative to the current folder.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from ..source import SourceError

if TYPE_CHECKING:   # finding.py is imported when a result has a finding (most have none)
    from ..finding import Finding


@dataclass
class FileResult:
    """The outcome of linting one file: findings (after selection and noqa), an error, the
    sinks judged handled by an enclosing ``try`` (``(path, line)``), and what was suppressed."""

    path: str
    findings: list = field(default_factory=list)
    error: Optional[SourceError] = None
    handled: list = field(default_factory=list)
    suppressed: list = field(default_factory=list)
    analysed: bool = False


@dataclass
class LintResult:
    """The outcome of linting many files: findings, errors (``(path, SourceError)``), sinks
    handled, what was suppressed, how many files were linted and analysed, and the absolute
    paths of the modules analysed (``analysed_paths``)."""

    findings: list = field(default_factory=list)
    errors: list = field(default_factory=list)      # (path, SourceError)
    handled: list = field(default_factory=list)
    suppressed: list = field(default_factory=list)
    files: int = 0
    analysed: int = 0
    analysed_paths: list = field(default_factory=list)   # absolute paths of modules analysed


def _abs(path: str, base: Optional[str]) -> str:
    if os.path.isabs(path) or base is None:
        return os.path.abspath(path)
    return os.path.normpath(os.path.join(base, path))


def _finding_json(f: "Finding", given: str, absolute: str, base: Optional[str]) -> dict:
    from ..finding import DeferredFix

    # A fix not computed yet stays so (a DeferredFix: the store computes it when it writes the
    # entry, through its ``to_json``; a run without the store never computes an unread fix).
    pending = f.__dict__.get("_fix")
    if isinstance(pending, DeferredFix):
        d = dataclasses.asdict(dataclasses.replace(f, fix=None))
        d["fix"] = pending
    else:
        d = dataclasses.asdict(f)
    d["path"] = absolute
    d["provenance"] = [dict(s, path=absolute if s["path"] == given else _abs(s["path"], base))
                       for s in d["provenance"]]
    return d


def raw_to_json(findings, handled, error: Optional[SourceError], analysed: bool, given: str,
                base: Optional[str]) -> dict:
    """A raw result as plain data.  ``given`` is the file's path as the analysis spelled it,
    ``base`` the folder other modules' paths are relative to (the project root; None: the
    current folder)."""
    absolute = os.path.abspath(given)
    return {
        "findings": [_finding_json(f, given, absolute, base) for f in findings],
        "handled": [h[1] for h in handled],
        "error": None if error is None else [error.message, error.line, error.column],
        "analysed": analysed,
    }


def _spell(path: str, absolute: str, given: str) -> str:
    if path == absolute:
        return given
    try:
        return os.path.relpath(path)
    except ValueError:  # pragma: no cover - another drive on Windows
        return path


def finding_from_json(d: dict, given: str, absolute: str) -> "Finding":
    """A :class:`Finding` of plain data, its paths spelled for this run."""
    from ..finding import DeferredFix, Edit, Finding, Fix, Step

    d = dict(d)
    d["path"] = given
    d["provenance"] = tuple(Step(**dict(s, path=_spell(s["path"], absolute, given))) for s in d["provenance"])
    if d.get("fix") is not None and not isinstance(d["fix"], DeferredFix):
        fx = dict(d["fix"])
        fx["edits"] = tuple(Edit(**e) for e in fx["edits"])
        fx["imports"] = tuple(tuple(i) if isinstance(i, list) else i for i in fx.get("imports", ()))
        d["fix"] = Fix(**fx)
    return Finding(**d)


def raw_findings(data: dict, given: str) -> list:
    """The findings of a raw result, spelled for this run (``given``: the file as given)."""
    absolute = os.path.abspath(given)
    return [finding_from_json(f, given, absolute) for f in data["findings"]]


def raw_error(data: dict) -> Optional[SourceError]:
    """The error of a raw result, or None."""
    return None if data.get("error") is None else SourceError(*data["error"])
