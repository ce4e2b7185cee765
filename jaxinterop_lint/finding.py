"""The records the engine hands to every front end: findings, provenance steps and fixes.

A finding's fix may be *deferred* (:class:`DeferredFix`): the rule says which applicability
its remedy has, and the edits are computed on first access of ``Finding.fix``, so a run that
never looks at fixes (flake8 without a safe remedy, ``--statistics``, the API) never pays for
them.  Pickling a finding (parallel workers) resolves its fix first.
"""
from __future__ import annotations

import os
import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Optional


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


class DeferredFix:
    """A fix of known ``applicability`` whose edits ``compute()`` makes on first use (it
    returns a :class:`Fix` or None when the pattern has no remedy).  ``compute`` runs once,
    with room for deep recursion (:func:`jaxinterop_lint.deep.run_deep`); an exception in it
    counts as "no fix" (the finding stays) and is kept in ``error`` (re-raised under
    ``JAXINTEROP_LINT_DEBUG=1``)."""

    __slots__ = ("applicability", "_compute", "error", "_done")

    def __init__(self, applicability: str, compute: Callable[[], Optional["Fix"]]):
        self.applicability = applicability
        self._compute = compute
        self.error: Optional[str] = None

    def to_json(self) -> Optional[dict]:
        """The fix as plain data (computed now), or None: what a store writes in its place
        (the store knows nothing of findings: it calls ``to_json`` on what JSON cannot hold)."""
        fix = self.resolve_once()
        return None if fix is None else dataclasses.asdict(fix)

    def resolve_once(self) -> Optional["Fix"]:
        """:meth:`resolve`, memoised: the same fix however often it is asked for."""
        if self._compute is not None:
            self._done = self.resolve()
        return getattr(self, "_done", None)

    def __reduce__(self):
        """Pickled as the fix's plain data (computed now, :meth:`to_json`): a deferred fix
        holds the whole module analysis, which must not travel between processes; where
        it sits (a raw result, a store entry) plain data is what belongs."""
        return (_identity, (self.to_json(),))

    def resolve(self) -> Optional["Fix"]:
        """The fix (computed now), or None."""
        from .deep import run_deep

        compute, self._compute = self._compute, None
        if compute is None:
            return None
        try:
            return run_deep(compute)
        except Exception as exc:  # a bug in a remedy must not cost the finding
            if os.environ.get("JAXINTEROP_LINT_DEBUG"):
                raise
            self.error = f"{type(exc).__name__}: {exc}"
            return None


def _identity(value):
    return value


class _FixField:
    """The ``Finding.fix`` field: stores a :class:`Fix`, None or a :class:`DeferredFix`, and
    reading it resolves a deferred one (once)."""

    def __get__(self, obj, objtype=None):
        if obj is None:
            return None  # the dataclass default
        value = obj.__dict__.get("_fix")
        if isinstance(value, DeferredFix):
            value = value.resolve_once()
            obj.__dict__["_fix"] = value
        return value

    def __set__(self, obj, value) -> None:
        obj.__dict__["_fix"] = value


@dataclass(frozen=True)
class Finding:
    """One reported problem.

    ``line`` is 1-based, ``column`` 0-based (flake8 adds 1 when it prints).  ``provenance``
    is the chain from the source to the sink, source first.  ``fix`` is None when the rule
    has no mechanical remedy for this finding; it may be given as a :class:`DeferredFix`
    (computed when first read).
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
    fix: Optional[Fix] = _FixField()  # type: ignore[assignment]
    function: str = ""
    snippet: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def has_fix(self, applicabilities=("safe", "unsafe")) -> bool:
        """Whether the finding has a fix with edits whose applicability is one of
        ``applicabilities``; a deferred fix of another applicability is never computed."""
        pending = self.__dict__.get("_fix")
        if isinstance(pending, DeferredFix) and pending.applicability not in applicabilities:
            return False
        fix = self.fix
        return fix is not None and bool(fix.edits) and fix.applicability in applicabilities

    def __getstate__(self) -> dict:
        """Pickled with its fix resolved (a deferred fix holds the whole module analysis)."""
        state = dict(self.__dict__)
        state["_fix"] = self.fix
        return state

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
