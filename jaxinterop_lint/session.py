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
from .cache import Cache, result_from_json, result_to_json
from .engine import LintResult, lint_file, new_project, read_source, SourceError
from .finding import Finding


def lint_files(files: list, config, root: Optional[str], force: bool = False, use_cache: bool = False,
               project=None):
    """Lint ``files`` in this process with one project rooted at ``root`` (None: no
    cross-module analysis), reusing and filling the project's cache when ``use_cache``;
    ``project`` continues the project of an earlier phase in this process.

    Returns ``(results, exporting names, modules analysed, new cache entries)``."""
    if project is None:
        cache = Cache(root, config) if (use_cache and root is not None) else None
        project = new_project(root, config, cache) if root is not None else None
    cache = project.cache if project is not None else None
    start = len(project.analysed_paths) if project is not None else 0
    results, fresh, cached_names = [], [], set()
    for p in files:
        entry = cache.entry(p) if cache is not None else None
        if entry is not None and entry.get("summary"):
            cached_names.update(entry["summary"].get("exporting", ()))
        if entry is not None and "result" in entry and (not force or entry["result"]["analysed"]):
            results.append(result_from_json(p, entry["result"]))
            continue
        r = lint_file(p, config, project, force=force)
        results.append(r)
        fresh.append(r)
    if project is None:
        return results, frozenset(), [r.path for r in results if r.analysed], {}
    names = project.exporting_names() | cached_names
    if cache is not None:
        for r in fresh:
            if r.error is None or not r.error.message.startswith("internal error"):
                project.remember(r.path, result=result_to_json(r))
        project.remember_summaries()
        return results, names, project.analysed_paths[start:], cache.entries_written()
    return results, names, project.analysed_paths[start:], {}


def _phase(files, config, jobs, root, force=False, use_cache=False, project=None):
    if jobs > 1 and len(files) > 8 and use_cache and project is not None and project.cache is not None:
        # Only what the cache cannot answer goes to the workers.
        cache = project.cache
        todo = [p for p in files if not _cached(cache, p, force)]
        if len(todo) <= 8:
            return lint_files(files, config, root, force, use_cache, project)
        from .parallel import map_files

        done, names, analysed, entries = lint_files([p for p in files if p not in set(todo)], config, root,
                                                    force, use_cache, project)
        more, names2, analysed2, entries2 = map_files(todo, config, jobs, root, force, use_cache)
        entries.update(entries2)
        cache.entries.update(entries2)
        by_path = {r.path: r for r in done + more}
        return [by_path[p] for p in files], names | names2, analysed + analysed2, entries
    if jobs > 1 and len(files) > 8:
        from .parallel import map_files

        return map_files(files, config, jobs, root, force, use_cache)
    return lint_files(files, config, root, force, use_cache, project)


def _cached(cache, path, force) -> bool:
    entry = cache.entry(path)
    return entry is not None and "result" in entry and (not force or entry["result"]["analysed"])


def run_session(files: list, paths: list, config, jobs: int = 1, project_root: Optional[str] = None,
                whole_project: bool = True, use_cache: bool = True) -> LintResult:
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
        by_abs: dict = {}
        for f in files:
            d = os.path.dirname(f) or "."
            d = by_abs.get(d) or by_abs.setdefault(d, os.path.abspath(d))
            if d not in by_dir:
                by_dir[d] = find_root([d])
            groups.setdefault(by_dir[d], []).append(f)
    order = {f: i for i, f in enumerate(files)}
    for root, group in groups.items():
        _run_group(group, config, jobs, root, out, use_cache)
    out.findings.sort(key=Finding.sort_key)
    out.errors.sort(key=lambda e: order.get(e[0], 0))
    out.analysed = len(out.analysed_paths)
    return out


_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#]+)", re.M)


def imported_names(text: str, package: str, tops) -> list:
    """Qualified names a file imports from the project (``tops``: its top-level names),
    read from the text: ``from m import a`` gives ``m.a``, ``import m`` gives ``m``."""
    from .analysis.imports import resolve_relative

    out = []
    for dots, mod, names in _FROM.findall(text):
        base = resolve_relative(mod or None, len(dots), package)
        if not base or base.split(".")[0] not in tops:
            continue
        for name in names.strip("()").replace("\n", " ").split(","):
            name = name.strip().split(" as ")[0].strip()
            if name.isidentifier():
                out.append(f"{base}.{name}")
    for spec in _IMPORT.findall(text):
        for part in spec.split(","):
            mod = part.strip().split(" as ")[0].strip()
            if mod.split(".")[0] in tops:
                out.append(mod)
    return out


def probe_imports(texts: dict, config, project):
    """Exporting names of the project functions that the not-yet-analysed ``texts`` import.
    Only modules that name an interop API (and ``__init__.py`` files, for re-exports) are
    analysed, in ``project``.  Returns ``(names, paths of the modules analysed)``."""
    import os

    from .engine import _prefilter_for

    pf = _prefilter_for(config)
    start = len(project.analysed_paths)

    def worth(path):
        if os.path.basename(path) == "__init__.py":
            return True
        try:
            return pf.wants(read_source(path))
        except SourceError:
            return False

    project.gate = worth
    tops = project.top_names
    try:
        if tops:
            for path, text in texts.items():
                for qualified in imported_names(text, project.package_of(path), tops):
                    project.resolve(qualified)
    finally:
        project.gate = None
    return project.exporting_names(), project.analysed_paths[start:]


def _run_group(files: list, config, jobs: int, root: Optional[str], out: LintResult, use_cache: bool) -> None:
    """Lint the files of one project into ``out``; new cache entries are saved at the end."""
    project = None
    if root is not None:
        project = new_project(root, config, Cache(root, config) if use_cache else None)
    results, names, analysed, entries = _phase(files, config, jobs, root, use_cache=use_cache, project=project)
    out.analysed_paths.extend(analysed)
    seen_names = set()
    done = {r.path for r in results if r.analysed or r.error is not None}
    texts = {}
    tops = project.top_names if project is not None else frozenset()
    if tops:
        # Only a file that imports from the project can call a project function.
        for r in results:
            if r.path not in done:
                try:
                    text = read_source(r.path)
                except SourceError:
                    continue
                if imported_names(text, project.package_of(r.path), tops):
                    texts[r.path] = text
        if project.cache is not None:
            project.cache.entries.update(entries)
        probed, probe_paths = probe_imports(texts, config, project)
        names = names | probed
        out.analysed_paths.extend(probe_paths)
    while texts and names - seen_names:
        fresh = names - seen_names
        seen_names |= fresh
        pattern = re.compile(r"\b(?:%s)\b" % "|".join(sorted(map(re.escape, fresh))))
        more = [p for p, text in texts.items() if p not in done and pattern.search(text)]
        if not more:
            break
        extra, names2, analysed2, entries2 = lint_files(more, config, root, force=True, use_cache=use_cache,
                                                        project=project)
        entries.update(entries2)
        out.analysed_paths.extend(analysed2)
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
    if entries and root is not None:
        cache = Cache(root, config)
        cache.entries.update(entries)
        cache.changed = True
        cache.save()


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
