"""``--output-format github``: GitHub Actions workflow commands, one annotation a finding.

``::error file=PATH,line=L,col=C,title=JXI002::message``; values are escaped as the runner
expects (``%``, CR and LF everywhere, ``:`` and ``,`` in properties as well).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only: the reporters never need the class itself
    from ..finding import Finding


def escape_data(text: str) -> str:
    """Escape a workflow command's message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


_LINE_ENDS = "\t\r\n"  # escape_data encodes these as the runner expects


def github(findings: list[Finding], errors=(), **_) -> str:
    """One ``::error`` line a finding (columns 1-based), and one per file that could not be
    linted (``errors``: ``(path, SourceError)``, title ``JXI000``; no line for a problem of
    the path itself); a file name with control characters is quoted and escaped first (see
    :func:`jaxinterop_lint.report.escape_path`)."""
    from . import ERROR_CODE, escape_path, escape_text

    failed = "".join(
        f"::error file={escape_property(escape_path(path))}"
        + (f",line={err.line},col={err.column}" if err.line else "")
        + f",title={ERROR_CODE}::{escape_data(escape_text('cannot lint this file: ' + err.message, keep=_LINE_ENDS))}\n"
        for path, err in errors)
    return failed + "".join(
        f"::error file={escape_property(escape_path(f.path))},line={f.line},col={f.column + 1},"
        f"title={escape_property(f.code)}::{escape_data(escape_text(f.message, keep=_LINE_ENDS))}\n"
        for f in findings)
