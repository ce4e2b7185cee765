"""The records a run hands back (:class:`FileResult`, :class:`LintResult`) and the plain-data
form of a raw result, as the store keeps it and as workers send it.

A *raw* result is what the rules make of one file before selection and ``noqa``: every
rule's findings, the sinks judged handled, the error.  It depends on the file's content and
on what its analysis used, never on the rule selection, so the command line and the flake8
plugin share it.  Paths in it are absolute; :func:`raw_to_result` spells them for the
current run: the file as the user gave it, other files relative to the current folder.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Optional

from ..source import SourceError

if TYPE_CHECKING:   # finding.py is imported when a result has a finding (most have none)
    from ..finding import Finding


class _Record:
    """A record of named fields, compared and shown as a dataclass is (plain classes: making
    two dataclasses costs about 1 ms of every flake8 process, issue 16).  ``FIELDS`` names
    the fields in order; ``_defaults()`` gives the default of each one not passed."""

    FIELDS: tuple = ()

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.FIELDS)
        return f"{type(self).__name__}({inner})"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.FIELDS)

    __hash__ = None    # mutable, as a dataclass with eq


class FileResult(_Record):
    """The outcome of linting one file: findings (after selection and noqa), an error, the
    sinks judged handled by an enclosing ``try`` (``(path, line)``), and what was suppressed."""

    FIELDS = ("path", "findings", "error", "handled", "suppressed", "analysed")

    def __init__(self, path: str, findings: Optional[list] = None, error: Optional[SourceError] = None,
                 handled: Optional[list] = None, suppressed: Optional[list] = None, analysed: bool = False):
        self.path = path
        self.findings = [] if findings is None else findings
        self.error = error
        self.handled = [] if handled is None else handled
        self.suppressed = [] if suppressed is None else suppressed
        self.analysed = analysed


class LintResult(_Record):
    """The outcome of linting many files: findings, errors (``(path, SourceError)``), sinks
    handled, what was suppressed, how many files were linted and analysed, and the absolute
    paths of the modules analysed (``analysed_paths``)."""

    FIELDS = ("findings", "errors", "handled", "suppressed", "files", "analysed", "analysed_paths")

    def __init__(self, findings: Optional[list] = None, errors: Optional[list] = None,
                 handled: Optional[list] = None, suppressed: Optional[list] = None, files: int = 0,
                 analysed: int = 0, analysed_paths: Optional[list] = None):
        self.findings = [] if findings is None else findings
        self.errors = [] if errors is None else errors
        self.handled = [] if handled is None else handled
        self.suppressed = [] if suppressed is None else suppressed
        self.files = files
        self.analysed = analysed
        self.analysed_paths = [] if analysed_paths is None else analysed_paths


def _abs(path: str, base: Optional[str]) -> str:
    if os.path.isabs(path) or base is None:
        return os.path.abspath(path)
    return os.path.normpath(os.path.join(base, path))


def _finding_json(f: "Finding", given: str, absolute: str, base: Optional[str]) -> dict:
    from ..finding import DeferredFix

    # A fix not computed yet stays so (a DeferredFix: the store computes it when it writes the
    # entry, through its ``to_json``; a run without the store never computes an unread fix).
    import dataclasses

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
