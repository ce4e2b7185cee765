"""One lint run over many files: the project, the two prefilter phases, parallel workers.

Phase 1 analyses the files that name an interop API.  Their summaries tell which project
functions export a parameter through a sink; phase 2 analyses the other files that call one
of those functions (by name), until no new such function appears.  Every other file is only
syntax-checked.
"""
from __future__ import annotations

import os
import re
from typing import Optional

from .analysis.project import find_root
from .engine import FileResult, LintResult, lint_file, new_project, read_source, SourceError
from .finding import Finding


def lint_files(files: list, config, root: Optional[str], force: bool = False):
    """Lint ``files`` in this process with one project rooted at ``root`` (None: no
    cross-module analysis).  Returns ``(results, exporting names, modules analysed)``."""
    project = new_project(root, config) if root is not None else None
    results = [lint_file(p, config, project, force=force) for p in files]
    if project is None:
        return results, frozenset(), sum(r.analysed for r in results)
    return results, project.exporting_names(), project.analysed


def _phase(files, config, jobs, root, force=False):
    if jobs > 1 and len(files) > 8:
        from .parallel import map_files

        return map_files(files, config, jobs, root, force)
    return lint_files(files, config, root, force)


def run_session(files: list, paths: list, config, jobs: int = 1, project_root: Optional[str] = None,
                whole_project: bool = True) -> LintResult:
    """Lint ``files`` (already discovered under ``paths``); see :func:`engine.lint_paths`.

    Without ``project_root``, each file belongs to the project of the nearest marker above
    it, so a folder holding several projects is linted project by project."""
    out = LintResult(files=len(files))
    if not whole_project:
        groups = {None: files}
    elif project_root:
        groups = {project_root: files}
    else:
        groups = {}
        by_dir: dict = {}
        for f in files:
            d = os.path.dirname(os.path.abspath(f))
            if d not in by_dir:
                by_dir[d] = find_root([d])
            groups.setdefault(by_dir[d], []).append(f)
    order = {f: i for i, f in enumerate(files)}
    for root, group in groups.items():
        _run_group(group, config, jobs, root, out)
    out.findings.sort(key=Finding.sort_key)
    out.errors.sort(key=lambda e: order.get(e[0], 0))
    return out


def _run_group(files: list, config, jobs: int, root: Optional[str], out: LintResult) -> None:
    """Lint the files of one project into ``out``."""
    results, names, analysed = _phase(files, config, jobs, root)
    out.analysed += analysed
    seen_names = set()
    done = {r.path for r in results if r.analysed or r.error is not None}
    while root is not None and names - seen_names:
        fresh = names - seen_names
        seen_names |= fresh
        pattern = re.compile(r"\b(?:%s)\b" % "|".join(sorted(map(re.escape, fresh))))
        more = []
        for r in results:
            if r.path in done:
                continue
            try:
                text = read_source(r.path)
            except SourceError:
                continue
            if pattern.search(text):
                more.append(r.path)
        if not more:
            break
        extra, names2, analysed2 = lint_files(more, config, root, force=True)
        out.analysed += analysed2
        names = names | names2
        replaced = {r.path: r for r in extra}
        results = [replaced.get(r.path, r) for r in results]
        done |= set(replaced)
    for r in results:
        if r.error is not None:
            out.errors.append((r.path, r.error))
        out.findings.extend(r.findings)
        out.handled.extend(r.handled)
        out.suppressed.extend(r.suppressed)


_SHARED: dict = {}


def shared_project(path: str, config):
    """The project of the file ``path`` for front ends that see one file at a time (the
    flake8 plugin): built on first use in the process by analysing every file of the
    project that names an interop API, then the files that call the project's exporting
    functions.  None when no project marker (``pyproject.toml``, ``setup.cfg``, ``setup.py``,
    ``.git``) is above the file."""
    import os

    from .analysis.project import ROOT_MARKERS

    root = find_root([path])
    if not any(os.path.exists(os.path.join(root, m)) for m in ROOT_MARKERS):
        return None
    project = _SHARED.get(root)
    if project is None:
        project = _SHARED[root] = prime(new_project(root, config), config)
    return project


def prime(project, config):
    """Analyse the files of ``project`` that can matter to others; sets
    ``project.calls_exporting``, a predicate on a file's text.  Returns the project."""
    from .discover import discover
    from .engine import _prefilter_for

    pf = _prefilter_for(config)
    texts = {}
    for f in discover([project.root], config.exclude, config.extend_exclude):
        try:
            texts[f] = read_source(f)
        except SourceError:
            continue
    pending = []
    for f, text in texts.items():
        if pf.wants(text):
            project.analysis_of_path(f, text=text)
        else:
            pending.append(f)
    seen: set = set()
    pattern = None
    while True:
        fresh = project.exporting_names() - seen
        if not fresh:
            break
        seen |= fresh
        pattern = re.compile(r"\b(?:%s)\b" % "|".join(sorted(map(re.escape, seen))))
        hits = [f for f in pending if pattern.search(texts[f])]
        pending = [f for f in pending if f not in hits]
        for f in hits:
            project.analysis_of_path(f, text=texts[f])
    project.calls_exporting = (lambda text: bool(pattern.search(text))) if pattern else (lambda text: False)
    return project
