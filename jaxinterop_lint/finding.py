"""The records the engine hands to every front end: findings, provenance steps and fixes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class Step:
    """One step of a provenance chain: what happened to the value, and where.

    ``line``/``column`` are 1-based line and 0-based column in ``path``.
    """

    description: str
    path: str
    line: int
    column: int = 0

    def to_dict(self) -> dict:
        """Return the step as a JSON-ready dict; its column 1-based there, as the finding's."""
        return {"description": self.description, "path": self.path, "line": self.line, "column": self.column + 1}


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions with ``text``.

    Columns are 0-based character offsets as in libcst's ``CodeRange``.
    """

    start_line: int
    start_column: int
    end_line: int
    end_column: int
    text: str

    def to_dict(self) -> dict:
        """Return the edit as a JSON-ready dict; columns 1-based there, as the finding's."""
        return {
            "start": {"line": self.start_line, "column": self.start_column + 1},
            "end": {"line": self.end_line, "column": self.end_column + 1},
            "text": self.text,
        }


@dataclass(frozen=True)
class Fix:
    """An automatic remedy of a finding, with ruff's notion of applicability.

    ``applicability`` is ``"safe"`` or ``"unsafe"`` (rules.md, fixes column).  ``edits``
    replace ranges of the linted text; ``imports`` are the statements the new text needs
    (``"import jax"``, ``"import numpy as np"``), added by the fixer when missing.
    """

    title: str
    applicability: str
    edits: tuple[Edit, ...] = ()
    imports: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """Return the fix as a JSON-ready dict."""
        return {"title": self.title, "applicability": self.applicability,
                "edits": [e.to_dict() for e in self.edits], "imports": list(self.imports)}


@dataclass(frozen=True)
class Finding:
    """One reported problem.

    ``line`` is 1-based, ``column`` 0-based (flake8 adds 1 when it prints).  ``provenance``
    is the chain from the source to the sink, source first.  ``fix`` is None when the rule
    has no mechanical remedy for this finding.
    """

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    provenance: tuple[Step, ...] = ()
    fix: Optional[Fix] = None
    function: str = ""
    snippet: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def sort_key(self):
        """Key that orders findings by file, position and code."""
        return (self.path, self.line, self.column, self.code)

    def to_dict(self) -> dict:
        """Return the finding as the JSON object of ``--output-format json``."""
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column + 1,
            "end_line": self.end_line,
            "end_column": self.end_column + 1,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "function": self.function,
            "provenance": [s.to_dict() for s in self.provenance],
            "fix": self.fix.to_dict() if self.fix else None,
        }
