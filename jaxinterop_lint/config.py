"""Run configuration: rule selection, excludes, per-file ignores and a project's own APIs."""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from typing import Optional

from .knowledge import DEFAULT_KNOWLEDGE, Knowledge
from .catalog import DEFAULT_CODES, NAMES as RULES_BY_CODE


# Folders never descended into (flake8's and ruff's defaults, plus our cache).
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", ".tox", ".nox", ".venv", "venv", ".eggs", "*.egg-info",
    "__pycache__", "build", "dist", "node_modules", "site-packages", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".jaxinterop_lint_cache", "__pypackages__",
)


class ConfigError(Exception):
    """A bad configuration value; the message names the key and where it came from."""


def expand_codes(selectors, where: str = "command line", key: str = "select") -> frozenset:
    """Codes matched by ``selectors`` (prefixes such as ``JXI``, ``JXI00``, ``JXI002``, or ``ALL``).

    Raises :class:`ConfigError` for a selector that matches no rule."""
    out = set()
    for sel in selectors:
        sel = sel.strip().upper()
        if not sel:
            continue
        matched = set(RULES_BY_CODE) if sel == "ALL" else {c for c in RULES_BY_CODE if c.startswith(sel)}
        if not matched:
            raise ConfigError(f"{where}: {key}: unknown rule code {sel!r} (known: JXI001-JXI009)")
        out |= matched
    return frozenset(out)


@dataclass
class Config:
    """Everything that changes what is reported.  ``select`` None means the default set
    (every rule but JXI009)."""

    select: Optional[tuple] = None
    ignore: tuple = ()
    extend_select: tuple = ()
    exclude: tuple = DEFAULT_EXCLUDE
    extend_exclude: tuple = ()
    per_file_ignores: dict = field(default_factory=dict)
    extend_sources: tuple = ()
    extend_sinks: dict = field(default_factory=dict)
    extend_sanitizers: tuple = ()
    respect_gitignore: bool = True
    source: str = "defaults"

    def enabled(self) -> frozenset:
        """The codes reported."""
        base = DEFAULT_CODES if self.select is None else expand_codes(self.select, self.source)
        base = base | expand_codes(self.extend_select, self.source, "extend-select")
        return base - expand_codes(self.ignore, self.source, "ignore")

    def ignored_for(self, path: str) -> frozenset:
        """Codes ignored for ``path`` by ``per-file-ignores`` (fnmatch patterns)."""
        out = set()
        norm = os.path.normpath(path)
        for pattern, codes in self.per_file_ignores.items():
            if fnmatch.fnmatch(norm, pattern) or fnmatch.fnmatch(os.path.basename(norm), pattern) \
                    or fnmatch.fnmatch(os.path.abspath(norm), pattern):
                out |= expand_codes(codes, self.source, "per-file-ignores")
        return frozenset(out)

    def knowledge(self) -> Knowledge:
        """The API tables for this run."""
        if not (self.extend_sources or self.extend_sinks or self.extend_sanitizers):
            return DEFAULT_KNOWLEDGE
        return DEFAULT_KNOWLEDGE.extended(self.extend_sources, self.extend_sinks, self.extend_sanitizers)
