"""Run configuration: rule selection, excludes, per-file ignores and a project's own APIs."""
from __future__ import annotations

import dataclasses
import fnmatch
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from .catalog import DEFAULT_CODES, OPT_IN, NAMES as RULES_BY_CODE


# Folders never descended into (flake8's and ruff's defaults, plus our cache).
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", ".tox", ".nox", ".venv", "venv", ".eggs", "*.egg-info",
    "__pycache__", "build", "dist", "node_modules", "site-packages", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".jaxinterop_lint_cache", "__pypackages__",
)


from .errors import ConfigError  # noqa: E402,F401  (defined below everything that reads a configuration)

if TYPE_CHECKING:   # the tables are loaded on first use (flake8 imports this module in every process)
    from .knowledge import Knowledge


def expand_codes(selectors, where: str = "command line", key: str = "select", opt_in: bool = True) -> frozenset:
    """Codes matched by ``selectors`` (prefixes such as ``JXI``, ``JXI00``, ``JXI002``, or ``ALL``).

    With ``opt_in`` False (selection: ``select``, ``extend-select``) a prefix does not match
    the opt-in rules (JXI009, JXI100): only their full code or ``ALL`` selects them, so
    ``--select JXI`` on the command line and ``flake8 --select=JXI`` report the same codes.
    Raises :class:`ConfigError` for a selector that matches no rule."""
    out = set()
    for sel in selectors:
        sel = sel.strip().upper()
        if not sel:
            continue
        if sel == "ALL":
            matched = set(RULES_BY_CODE)
        else:
            matched = {c for c in RULES_BY_CODE if c.startswith(sel)}
            if not matched:
                raise ConfigError(f"{where}: {key}: unknown rule code {sel!r} (known: {', '.join(RULES_BY_CODE)})")
            if not opt_in and sel not in matched:
                matched -= OPT_IN
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
    # The project's JAX range (jaxinterop_lint.jaxrange): the alternatives as specifier texts
    # (() = the newest JAX the tables know) and where they were read.
    jax_range: tuple = ()
    jax_range_source: str = ""
    respect_gitignore: bool = True
    source: str = "defaults"

    def enabled(self) -> frozenset:
        """The codes reported."""
        base = DEFAULT_CODES if self.select is None else expand_codes(self.select, self.source, opt_in=False)
        base = base | expand_codes(self.extend_select, self.source, "extend-select", opt_in=False)
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

    def knowledge(self) -> "Knowledge":
        """The API tables for this run, with the project's JAX range."""
        from .knowledge import DEFAULT_KNOWLEDGE

        kb = DEFAULT_KNOWLEDGE
        if self.extend_sources or self.extend_sinks or self.extend_sanitizers:
            kb = kb.extended(self.extend_sources, self.extend_sinks, self.extend_sanitizers)
        if self.jax_range:
            kb = dataclasses.replace(kb, jax_versions=self.jax_versions(), jax_range=self.jax_range_text())
        return kb

    def jax_versions(self) -> frozenset:
        """The JAX releases of the project's range (:func:`jaxinterop_lint.jaxrange.versions_of`)."""
        from .jaxrange import versions_of

        return versions_of(tuple(self.jax_range))

    def jax_range_text(self) -> str:
        """The range as messages name it: ``jax>=0.4.31``."""
        from .jaxrange import describe

        return describe(tuple(self.jax_range))
