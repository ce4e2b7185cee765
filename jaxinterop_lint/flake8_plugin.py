"""The flake8 plugin: ``flake8 --select=JXI`` runs the same engine as the CLI.

flake8 applies its own ``--select``, ``--ignore``, ``--per-file-ignores`` and ``# noqa``; the
plugin reports every rule and registers JXI009 (opt-in) in flake8's default ignore list, so
``--extend-select=JXI009`` turns it on as on the command line.  flake8 runs every installed
plugin whatever ``--select`` says; on one file the plugin runs the pipeline's plan for that
file and analyses only what can make a finding there, reading and filling the command
line's cache.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

from . import __version__, pyproject
from .config import Config, ConfigError
from .catalog import NAMES, OPT_IN
from .pipeline.discover import DEFAULT_EXCLUDE

ALL_CODES = tuple(sorted(NAMES))


class JaxInteropChecker:
    """flake8 tree plugin.  Takes the file's ``tree`` (unused: libcst parses), ``filename``
    and ``lines``; yields ``(line, column, "JXInnn message", type)``."""

    name = "jaxinterop-lint"
    version = __version__
    config = Config(select=ALL_CODES)
    exclude: tuple = ()
    paths: tuple = (".",)

    def __init__(self, tree, filename: str, lines: list):
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, parser) -> None:
        """Register JXI009 as off by default (library mode is opt-in)."""
        parser.extend_default_ignore(sorted(OPT_IN))

    @classmethod
    def parse_options(cls, options) -> None:
        """Read ``[tool.jaxinterop-lint]`` from the nearest pyproject.toml above flake8's paths,
        as the command line does: its ``extend-sources``/``-sinks``/``-sanitizers``,
        ``per-file-ignores``, ``exclude``/``extend-exclude`` and, when it sets any, its rule
        selection (an opt-in code it enables leaves flake8's default ignore list).  flake8's
        own ``--select``, ``--ignore`` and ``--per-file-ignores`` still filter on top.

        Raises flake8's ``ExecutionError`` (a message, no traceback) for a bad table."""
        try:
            file_cfg = pyproject.load(getattr(options, "filenames", None) or ["."])
        except ConfigError as exc:
            from flake8.exceptions import ExecutionError

            raise ExecutionError(f"jaxinterop-lint: {exc}") from None
        cls.config, cls.exclude, opted_in = plugin_view(file_cfg)
        cls.paths = tuple(getattr(options, "filenames", None) or ["."])
        ignored = getattr(options, "extended_default_ignore", None)
        if opted_in and isinstance(ignored, list):
            ignored[:] = [c for c in ignored if c not in opted_in]

    def run(self) -> Iterator[tuple]:
        """Lint the file and yield flake8's tuples (columns 0-based, as flake8 expects);
        nothing for a file the table excludes.  A message starts with ``[*]`` (after the code,
        as in ruff) when ``jaxinterop-lint --fix`` fixes the finding (a safe fix)."""
        if self.exclude and pyproject.excluded(self.filename, self.exclude):
            return
        from .engine import lint_source, shared_project

        text = "".join(self.lines)
        # The file and the modules its analysis needs, through the command line's plan and
        # cache (never the whole project in each flake8 process).
        session = shared_project(self.filename, self.config, reported=self.paths)
        result = lint_source(text, self.filename, self.config, project=session)
        for f in result.findings:
            mark = "[*] " if f.fix is not None and f.fix.applicability == "safe" and f.fix.edits else ""
            yield f.line, f.column, f"{f.code} {mark}{f.message}", type(self)


def plugin_view(cfg: Config) -> tuple[Config, tuple, frozenset]:
    """The plugin's configuration, exclude patterns and opted-in codes from a file's
    :class:`Config`.

    Without a selection in the file the plugin reports every rule (flake8 selects); with one
    it reports what the file enables, and the opt-in codes among them are returned so that
    they leave flake8's default ignore list.  Patterns are the file's ``exclude`` (when it
    sets one: flake8 has its own defaults) and ``extend-exclude``."""
    if cfg.select is None and not cfg.ignore and not cfg.extend_select:
        select, opted_in = ALL_CODES, frozenset()
    else:
        enabled = cfg.enabled()
        select, opted_in = tuple(sorted(enabled)), frozenset(c for c in enabled if c in OPT_IN)
    exclude = (cfg.exclude if cfg.exclude != DEFAULT_EXCLUDE else ()) + tuple(cfg.extend_exclude)
    return dataclasses.replace(cfg, select=select, ignore=(), extend_select=()), exclude, opted_in

