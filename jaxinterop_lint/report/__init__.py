"""Output formats: each formatter takes the findings and returns the text to print."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..catalog import DOCS_URL, NAMES
from .github import github
from ..escape import _UNSAFE, display_path, error_line, escape_path, escape_text  # noqa: F401  (re-exported)

if TYPE_CHECKING:   # annotations only: the reporters never need the class itself
    from ..finding import Finding


def concise(findings: list[Finding], **_) -> str:
    """``path:line:col: CODE message`` a line (flake8's format; columns 1-based)."""
    return "".join(f"{display_path(f.path)}:{f.line}:{f.column + 1}: {f.code} {escape_text(f.message)}\n"
                   for f in findings)


def full(findings: list[Finding], sources: dict | None = None, **_) -> str:
    """Concise line, the source line with a caret, the provenance chain, the fix title and
    the rule's page."""
    out = []
    for f in findings:
        out.append(f"{display_path(f.path)}:{f.line}:{f.column + 1}: {f.code} [{f.name}] {escape_text(f.message)}")
        lines = (sources or {}).get(f.path)
        if lines and 0 < f.line <= len(lines):
            text = escape_text(lines[f.line - 1].rstrip("\r\n"))
            out.append(f"    {f.line:>4} | {text}")
            width = max(1, (f.end_column - f.column) if f.end_line == f.line else len(text) - f.column)
            out.append("         | " + " " * f.column + "^" * width)
        if f.provenance:
            out.append("    provenance:")
            for i, step in enumerate(f.provenance):
                out.append(f"      {i + 1}. {display_path(step.path)}:{step.line}: {escape_text(step.description)}")
        if f.fix is not None:
            out.append(f"    fix ({f.fix.applicability}): {f.fix.title}")
        out.append(f"    docs: {DOCS_URL.format(code=f.code)}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


ERROR_CODE = "JXI000"   # a file that could not be linted (as the flake8 plugin says it)
ERROR_NAME = "cannot-lint"


def error_dict(path: str, err) -> dict:
    """The JSON object of a file that could not be linted: a finding's keys, code ``JXI000``
    (a problem of the path itself, no such file, stands at line 1, column 1, as ruff's
    ``E902``: every position of the JSON output is 1-based)."""
    line, column = max(err.line, 1), max(err.column, 1)
    return {"path": path, "line": line, "column": column, "end_line": line,
            "end_column": column, "code": ERROR_CODE, "name": ERROR_NAME,
            "message": f"cannot lint this file: {err.message}", "function": None, "provenance": [], "fix": None}


def json_format(findings: list[Finding], errors=(), **_) -> str:
    """A JSON list of finding objects (see :meth:`Finding.to_dict`), followed by one object
    per file that could not be linted (``errors``: ``(path, SourceError)``, :func:`error_dict`)."""
    return json.dumps([f.to_dict() for f in findings] + [error_dict(p, e) for p, e in errors], indent=2) + "\n"


def sarif(findings: list[Finding], **kwargs) -> str:
    """SARIF 2.1.0 (:mod:`.sarif`, loaded on use: it needs the rule pages)."""
    from .sarif import sarif as render

    return render(findings, **kwargs)


FORMATS = {"concise": concise, "full": full, "json": json_format, "sarif": sarif, "github": github}
FORMAT_NAMES = sorted(FORMATS)


def formatter(name: str):
    """The formatter called ``name`` (one of :data:`FORMAT_NAMES`)."""
    return FORMATS[name]


def rule_name(code: str) -> str:
    """The kebab-case name of a rule code."""
    return NAMES[code]
