"""The one engine behind the CLI, the flake8 plugin, the API and the tests.

``lint_source(source, path, config)`` lints one file's text; ``lint_paths(paths, config)``
discovers, reads and lints files.  Nothing else in the package parses Python.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional


from . import prefilter as prefilter_mod
from .config import Config
from .noqa import FILE_NOQA, NOQA, file_noqa, select_findings  # noqa: F401  (the select stage: noqa.py)
from .source import (  # noqa: F401  (re-exported: the engine's public reading API)
    LINE_SPLIT, SourceError, decode, guard, package_of, parse, read_bytes, read_source, run_guarded,
)

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from .analysis.module import ModuleAnalysis


@dataclass
class FileResult:
    """The outcome of linting one file: findings (after selection and noqa), an error, the
    sinks judged handled by an enclosing ``try`` (``(path, line)``), and what was suppressed."""

    path: str
    findings: list = field(default_factory=list)
    error: Optional[SourceError] = None
    handled: list = field(default_factory=list)
    suppressed: list = field(default_factory=list)
    analysed: bool = False


@dataclass
class LintResult:
    """The outcome of linting many files."""

    findings: list = field(default_factory=list)
    errors: list = field(default_factory=list)      # (path, SourceError)
    handled: list = field(default_factory=list)
    suppressed: list = field(default_factory=list)
    files: int = 0
    analysed: int = 0
    analysed_paths: list = field(default_factory=list)   # absolute paths of modules analysed


def parse_relevant(text: str, config: Config):
    """Parse ``text`` with its irrelevant top-level statements blanked (see
    :mod:`.masking`); returns ``(module, masker or None)``.  Falls back to the whole text
    when masking does not pay or the masked text does not parse.  Raises SourceError."""
    import libcst as cst

    from .masking import Masker

    guard(text)
    masker = Masker(text, _prefilter_for(config))
    masked = masker.render()
    if masked is not None:
        try:
            module = cst.parse_module(masked)
            masker.text = masked
            return module, masker
        except Exception:  # the scanner cut a statement wrongly: parse the whole text
            pass
    return parse(text, guarded=True), None


def build_analysis(text: str, path: str, config: Config, project=None,
                   module: Optional["cst.Module"] = None, run: bool = True, whole: bool = False) -> "ModuleAnalysis":
    """Parse and analyse one module (with ``project`` attached for cross-module names);
    with ``run`` False the analysis is made but not run; with ``whole`` the text is parsed
    whole, never masked.  Raises :class:`SourceError`."""
    masker = None
    if module is None:
        module, masker = (parse(text), None) if whole else parse_relevant(text, config)
    package = project.package_of(path) if project is not None else (package_of(path) if os.path.exists(path) else "")
    from .analysis.module import ModuleAnalysis

    ma = ModuleAnalysis(module, path, package, project, source=text, kb=config.knowledge())
    ma.masker = masker
    ma.parsed_text = masker.text if masker is not None else text
    if project is not None and os.path.isabs(path):
        try:
            ma.display_path = os.path.relpath(path)
        except ValueError:  # pragma: no cover - another drive on Windows
            pass
    try:
        return ma.run() if run else ma
    except RecursionError:
        raise SourceError("too deeply nested to analyse") from None


def rule_findings(ma: "ModuleAnalysis", path: str):
    """Run every rule over the events of ``ma``: ``(findings, handled (path, line) pairs)``."""
    from .analysis.events import SinkEvent
    from .rules import ALL_RULES, RuleContext
    from .rules.base import verdict

    ctx = RuleContext(ma, path)
    rules = [r() for r in ALL_RULES]
    findings, handled, seen = [], [], set()
    for event in ma.events:
        if isinstance(event, SinkEvent) and verdict(event)[0] == "handled":
            handled.append((path, ctx.line(event.node)))
        for rule in rules:
            f = rule.check(event, ctx)
            if f is not None and (f.line, f.column, f.code) not in seen:
                seen.add((f.line, f.column, f.code))
                findings.append(f)
    return findings, handled


def analyse(text: str, path: str, config: Config, module: Optional["cst.Module"] = None, project=None):
    """Parse and analyse ``text``; returns ``(ModuleAnalysis, raw findings, handled lines)``.
    With a ``project`` the module's analysis is shared with the modules that import it.
    Raises :class:`SourceError`."""
    if project is not None:
        ma = project.analysis_of_path(path, text=text, fresh=True)
        if ma is None:
            ma = build_analysis(text, path, config, project, module)
    else:
        ma = build_analysis(text, path, config, None, module)
    if getattr(ma, "masker", None) is not None:
        exporting = ma.exporting_names()
        if exporting and ma.masker.blanked_use(exporting):
            # A blanked statement calls a function that exports its parameter: the call may
            # be a finding, so this file is analysed whole.
            ma = build_analysis(text, path, config, project, whole=True)
            if project is not None:
                project.replace(path, ma)
    findings, handled = rule_findings(ma, path)
    return ma, findings, handled


def new_project(root: str, config: Config, cache=None):
    """A :class:`~jaxinterop_lint.analysis.project.Project` whose modules are analysed by
    this engine (or loaded from ``cache``, a :class:`~jaxinterop_lint.cache.Cache`); files
    that cannot be read or parsed are left out (None)."""
    from .analysis.project import Project

    def analyse_file(path, project, text=None):
        try:
            if text is None:
                text = read_source(path)
            return build_analysis(text, path, config, project, run=False)
        except SourceError:
            return None

    return Project(root, analyse_file, cache)


def lint_source(source, path: str = "<stdin>", config: Optional[Config] = None,
                prefilter: Optional[prefilter_mod.Prefilter] = None, project=None,
                force: bool = False) -> FileResult:
    """Lint one file's text (``str`` or undecoded ``bytes``).

    ``project`` (see :func:`new_project`) lets the analysis follow imports into the project's
    other modules; ``force`` analyses the file even when the prefilter finds no interop word
    (it calls a project function that exports its parameter).  Returns a :class:`FileResult`;
    a file that cannot be decoded or parsed gives a result whose ``error`` is set and whose
    findings are empty.  Never raises for bad input.
    """
    config = config or Config()
    result = FileResult(path)
    try:
        text = decode(source, path) if isinstance(source, bytes) else source
        pf = prefilter or _prefilter_for(config)
        if not force and not pf.wants(text):
            # Never parsed: a file that names no interop API cannot produce a finding, and
            # not parsing it is what makes the linter fast (its syntax is other tools' job).
            if "noqa" in text:   # only its noqa directives can be judged (JXI100, opt-in)
                select_findings((), text, path, config, result)
            return result
        _, raw, handled = run_guarded(analyse, text, path, config, project=project)  # deep-but-valid code
    except SourceError as exc:
        result.error = exc
        return result
    except Exception as exc:  # a bug of ours must not stop the run: report it on this file
        if os.environ.get("JAXINTEROP_LINT_DEBUG"):
            raise
        result.error = SourceError(f"internal error ({type(exc).__name__}: {exc}); please report it "
                                   f"with this file (JAXINTEROP_LINT_DEBUG=1 shows the traceback)")
        return result
    result.analysed = True
    result.handled = handled
    select_findings(raw, text, path, config, result)
    return result


_PREFILTERS: dict = {}


def _prefilter_for(config: Config) -> prefilter_mod.Prefilter:
    key = tuple(sorted(config.extend_sinks))
    pf = _PREFILTERS.get(key)
    if pf is None:
        pf = _PREFILTERS[key] = prefilter_mod.build(key)
    return pf


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
    of the project whose root is ``project_root`` (default: the nearest folder with
    ``pyproject.toml``, ``setup.cfg``, ``setup.py`` or ``.git`` above the paths); files
    outside ``paths`` are read for summaries only and never reported.  Returns a
    :class:`LintResult` with findings sorted by file and position; unreadable or invalid
    files are in ``errors``.  With ``use_cache`` results and summaries are kept in
    ``.jaxinterop_lint_cache/`` under the project root (the CLI's default); ``analysed``
    counts the module analyses the run performed.
    """
    from .discover import discover
    from .session import run_session

    config = config or Config()
    paths = list(paths) or ["."]
    files = list(discover(paths, config.exclude, config.extend_exclude))
    return run_session(files, paths, config, jobs, project_root, whole_project, use_cache)
