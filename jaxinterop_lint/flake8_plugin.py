"""The flake8 plugin: ``flake8 --select=JXI`` runs the same engine as the CLI.

flake8 applies its own ``--select``, ``--ignore``, ``--per-file-ignores`` and ``# noqa``; the
plugin reports every default rule, and an opt-in one (JXI009, JXI100) only when flake8's
``--select``/``--extend-select`` or the ``[tool.jaxinterop-lint]`` table names its full code,
as on the command line: ``flake8 --select=JXI`` reports what ``jaxinterop-lint`` reports.
The opt-in codes are also in flake8's default ignore list.  flake8 runs every installed
plugin whatever ``--select`` says, so the plugin runs the pipeline's plan for that file and analyses only
what can make a finding there, reading and filling the command line's cache.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Iterator

from . import __version__, pyproject
from .config import DEFAULT_EXCLUDE, Config, ConfigError
from .catalog import NAMES, OPT_IN

ALL_CODES = tuple(sorted(NAMES))
ERROR_CODE = "JXI000"  # a file that could not be linted (flake8 has no error channel for plugins)
OPT_IN_CODES = OPT_IN


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
        """Register the opt-in codes (JXI009, JXI100) as off by default."""
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
        cfg, cls.exclude, opted_in = plugin_view(file_cfg)
        # flake8's `--select=JXI` selects every JXI code, the opt-in ones too; the command
        # line selects those only by their full code, so the plugin reports an opt-in rule
        # only when flake8's options or the table name it.
        named = {c.strip().upper() for c in [*(getattr(options, "select", None) or ()),
                                             *(getattr(options, "extend_select", None) or ())]}
        opted_in = frozenset(opted_in | (named & OPT_IN_CODES))
        # (an opt-in code flake8's options name is reported even when the table's own
        # selection leaves it out: the command line wins, as in ``jaxinterop-lint``)
        select = tuple(c for c in cfg.select if c not in OPT_IN_CODES or c in opted_in)
        cls.config = dataclasses.replace(cfg, select=select + tuple(sorted(opted_in - set(select))))
        cls.paths = tuple(getattr(options, "filenames", None) or ["."])
        ignored = getattr(options, "extended_default_ignore", None)
        if opted_in and isinstance(ignored, list):
            ignored[:] = [c for c in ignored if c not in opted_in]
        if _many(cls.paths) and _main_process():
            # flake8 on a folder or several files: the plan of the project once, here, before
            # flake8 starts its workers (they inherit it, or read the facts from the cache
            # saved here), never a plan of the whole project in each worker (issue 16).
            from .pipeline.run import prepare_paths

            try:
                prepare_paths(cls.paths, cls.config)
            except Exception:  # a bug of ours: each file is then linted on its own, and says so
                if os.environ.get("JAXINTEROP_LINT_DEBUG"):
                    raise

    def run(self) -> Iterator[tuple]:
        """Lint the file and yield flake8's tuples (columns 0-based, as flake8 expects);
        nothing for a file the table excludes, nor for one that flake8 found in a folder it
        was given and that the command line skips there (``.gitignore``, its default
        excludes such as ``build``: :meth:`~.pipeline.session.Session.skips`), so that
        ``flake8 --select=JXI src/`` reports what ``jaxinterop-lint src/`` reports.  A message
        starts with ``[*]`` (after the code, as in ruff) when ``jaxinterop-lint --fix`` fixes
        the finding (a safe fix).

        A file the linter cannot lint (nesting past its limits, an internal error) is never
        passed over in silence: it gets one ``JXI000`` line saying why, so flake8 exits 1."""
        if self.exclude and pyproject.excluded(self.filename, self.exclude):
            return
        from .engine import lint_source, shared_project

        try:
            text = "".join(self.lines)
            problem = _undecodable(self.filename, text)
            if problem is not None:  # flake8 read it as latin-1; the command line refuses it
                yield max(problem.line, 1), max(problem.column - 1, 0), \
                    f"{ERROR_CODE} jaxinterop-lint cannot lint this file: {problem.message}", type(self)
                return
            # The file and the modules its analysis needs, through the command line's plan and
            # cache (never the whole project in each flake8 process).
            session = shared_project(self.filename, self.config, reported=self.paths)
            if session.skips(os.path.abspath(self.filename)):
                return      # flake8 walked into a file the command line skips (.gitignore)
            before = len(session.analysed)
            result = lint_source(text, self.filename, self.config, project=session)
            if len(session.analysed) > before:
                _keep_out_of_gc()
            found = [(f.line, f.column, f"{f.code} {'[*] ' if f.has_fix(('safe',)) else ''}{f.message}")
                     for f in result.findings]
        except Exception as exc:  # a bug of ours: say so on this file, never drop it
            if os.environ.get("JAXINTEROP_LINT_DEBUG"):
                raise
            from .errors import describe

            yield 1, 0, (f"{ERROR_CODE} jaxinterop-lint internal error ({describe(exc)}); "
                         f"please report it (JAXINTEROP_LINT_DEBUG=1 shows the traceback)"), type(self)
            return
        if result.error is not None:
            err = result.error
            yield max(err.line, 1), max(err.column - 1, 0), \
                f"{ERROR_CODE} jaxinterop-lint cannot lint this file: {err.message}", type(self)
        for line, column, message in found:
            yield line, column, message, type(self)


def _undecodable(filename: str, text: str):
    """The :class:`~jaxinterop_lint.source.SourceError` of the file ``filename`` when its bytes
    do not decode as Python says (PEP 263: UTF-8 without a coding cookie), else None.  flake8
    falls back to latin-1 for such a file (``FileProcessor._readlines_py3``), so its lines
    decode; the bytes are read again only for a file whose text is not all ASCII."""
    if text.isascii() or filename in ("-", "stdin") or not os.path.isfile(filename):
        return None
    from .source import SourceError, decode

    try:
        with open(filename, "rb") as fh:
            decode(fh.read(), filename)
    except SourceError as exc:
        return exc
    except OSError:
        return None
    return None


def _keep_out_of_gc() -> None:
    """Move every object alive now out of the cyclic garbage collector's reach
    (:func:`gc.freeze`), after the plugin analysed modules in this flake8 process: the
    session keeps their analyses (syntax trees, summaries) until the process ends, and each
    full collection of flake8's own garbage would walk them all again.  Measured on the jax
    sources (issue 16): without it a flake8 process with the plugin spent three times as
    long in the collector as one without the plugin.  Cycles that are garbage already stay
    in memory until the process ends (flake8's processes are short-lived)."""
    import gc

    gc.freeze()


def _many(paths) -> bool:
    """Whether flake8 was given a folder or several files (standard input is never linted
    ahead: its text comes later)."""
    if any(p == "-" for p in paths):
        return False
    return len(paths) > 1 or any(os.path.isdir(p) for p in paths)


def _main_process() -> bool:
    """Whether this is flake8's main process (not a worker it started: ``spawn`` and
    ``forkserver`` workers parse the options again)."""
    import multiprocessing

    return multiprocessing.parent_process() is None


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

