"""The engine's public face: what the CLI, the flake8 plugin, the API and the tests call.

``lint_source(source, path, config)`` lints one file's text; ``lint_paths(paths, config)``
discovers, reads and lints files.  Both run the one pipeline of :mod:`jaxinterop_lint.pipeline`
(discover -> read and hash -> plan -> analyse -> rules -> select and noqa); reporting and
fixing sit above it.
"""
from __future__ import annotations

import os
from typing import Iterable, Optional

from .config import Config
from .pipeline.results import FileResult, LintResult  # noqa: F401  (public records)
from .source import (  # noqa: F401  (re-exported: the engine's public reading API)
    LINE_SPLIT, SourceError, decode, guard, internal_error, package_of, parse, read_bytes, read_source,
)

# Names re-exported from noqa.py (through pipeline/select.py), imported on first use: the flake8
# plugin imports this module in every process, and a file with no finding never needs them.
_NOQA_NAMES = ("FILE_NOQA", "NOQA", "file_noqa", "select_findings", "_noqa_codes")


def __getattr__(name: str):
    """The names of :mod:`jaxinterop_lint.noqa` the engine re-exports."""
    if name not in _NOQA_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .pipeline import select

    return getattr(select, name.lstrip("_"))


def shared_project(path: str, config: Config, reported=None):
    """The session of the project of ``path`` for front ends that see one file at a time
    (see :func:`jaxinterop_lint.pipeline.run.shared_project`); pass it as ``project`` to
    :func:`lint_source`."""
    from .pipeline.run import shared_project as _shared

    return _shared(path, config, reported)


def lint_source(source, path: str = "<stdin>", config: Optional[Config] = None, prefilter=None,
                project=None, force: bool = False) -> FileResult:
    """Lint one file's text (``str`` or undecoded ``bytes``).

    ``project`` (from :func:`shared_project`) lets the analysis follow imports into the
    project's other modules and use its cache; ``force`` analyses the file even when the plan
    finds that it cannot make a finding.  Returns a :class:`FileResult`; a file that cannot be
    decoded or parsed gives a result whose ``error`` is set and whose findings are empty.
    Never raises for bad input.  (``prefilter`` is accepted for compatibility and unused.)
    """
    config = config or Config()
    try:
        text = decode(source, path) if isinstance(source, bytes) else source
        if project is not None and hasattr(project, "lint_text"):
            return project.lint_text(text, path, force=force)
        from .pipeline.run import lint_lone

        return lint_lone(text, path, config, force=force)
    except SourceError as exc:
        return FileResult(path, error=exc)
    except Exception as exc:  # a bug of ours must not stop the run: report it on this file
        if os.environ.get("JAXINTEROP_LINT_DEBUG"):
            raise
        return FileResult(path, error=internal_error(exc))


def lint_file(path: str, config: Optional[Config] = None, project=None, force: bool = False) -> FileResult:
    """Read and lint one file; errors become ``FileResult.error``."""
    try:
        text = read_source(path)
    except SourceError as exc:
        return FileResult(path, error=exc)
    return lint_source(text, path, config, project=project, force=force)


def lint_paths(paths: Iterable[str], config: Optional[Config] = None, jobs: int = 1,
               project_root: Optional[str] = None, whole_project: bool = True,
               use_cache: bool = False) -> LintResult:
    """Discover and lint every Python file under ``paths``.

    With ``whole_project`` (the default) the analysis follows imports into the other modules
    of the project whose root is ``project_root`` (default: the nearest project root above
    each file, see :func:`~jaxinterop_lint.pipeline.modules.find_root`); files outside
    ``paths`` are read for summaries only and never reported.  Returns a :class:`LintResult`
    with findings sorted by file and position; unreadable or invalid files are in
    ``errors``.  With ``use_cache`` results and summaries are kept in
    ``.jaxinterop_lint_cache/`` under the project root (the CLI's default);
    ``analysed_paths`` lists the module analyses the run performed.
    """
    from .pipeline.discover import discover
    from .pipeline.run import run_session

    config = config or Config()
    paths = list(paths) or ["."]
    files = list(discover(paths, config.exclude, config.extend_exclude,
                          getattr(config, "respect_gitignore", True)))
    return run_session(files, paths, config, jobs, project_root, whole_project, use_cache)
