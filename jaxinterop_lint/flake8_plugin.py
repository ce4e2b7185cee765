"""The flake8 plugin: ``flake8 --select=JXI`` runs the same engine as the CLI.

flake8 applies its own ``--select``, ``--ignore``, ``--per-file-ignores`` and ``# noqa``; the
plugin reports every rule and registers JXI009 (opt-in) in flake8's default ignore list, so
``--extend-select=JXI009`` turns it on as on the command line.  flake8 runs every installed
plugin whatever ``--select`` says, so the plugin's cost on files without interop words is
one text search (the prefilter).
"""
from __future__ import annotations

from typing import Iterator

from . import __version__
from .config import Config
from .engine import lint_source
from .rules import ALL_RULES


class JaxInteropChecker:
    """flake8 tree plugin.  Takes the file's ``tree`` (unused: libcst parses), ``filename``
    and ``lines``; yields ``(line, column, "JXInnn message", type)``."""

    name = "jaxinterop-lint"
    version = __version__
    config = Config(select=tuple(r.code for r in ALL_RULES))

    def __init__(self, tree, filename: str, lines: list):
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, parser) -> None:
        """Register JXI009 as off by default (library mode is opt-in)."""
        parser.extend_default_ignore([r.code for r in ALL_RULES if not r.default])

    @classmethod
    def parse_options(cls, options) -> None:
        """Nothing to read from flake8's options yet; flake8 filters codes itself."""

    def run(self) -> Iterator[tuple]:
        """Lint the file and yield flake8's tuples (columns 0-based, as flake8 expects).  A
        message starts with ``[*]`` (after the code, as in ruff) when ``jaxinterop-lint --fix``
        fixes the finding (a safe fix)."""
        text = "".join(self.lines)
        result = lint_source(text, self.filename, self.config)
        for f in result.findings:
            mark = "[*] " if f.fix is not None and f.fix.applicability == "safe" and f.fix.edits else ""
            yield f.line, f.column, f"{f.code} {mark}{f.message}", type(self)
