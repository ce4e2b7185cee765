"""Lint files in parallel worker processes."""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os


_PROJECTS: dict = {}


def _lint_chunk(args):
    """Lint one chunk in a worker; the worker keeps one project per root and configuration
    across its chunks, so a module is analysed at most once per worker."""
    from .cache import Cache
    from .engine import new_project
    from .session import lint_files

    paths, config, root, force, use_cache = args
    project = None
    if root is not None:
        key = (root, use_cache, repr(config))
        project = _PROJECTS.get(key)
        if project is None:
            project = _PROJECTS[key] = new_project(root, config, Cache(root, config) if use_cache else None)
    return lint_files(paths, config, root, force, use_cache, project)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def map_files(files: list, config, jobs: int, root=None, force: bool = False, use_cache: bool = False):
    """Lint ``files`` with ``jobs`` processes, each with its own project rooted at ``root``.

    A worker that dies (a crash of the native parser on some file) does not stop the run:
    the files are then linted again one process per file, and a file whose process dies
    gets an error instead of results (see :func:`_isolated`).

    Returns ``(results in input order, exporting names, modules analysed, new cache entries)``."""
    # Largest files first, in small chunks handed out as workers free up: the few large
    # interop files do not all land on one worker.
    by_size = sorted(files, key=_size, reverse=True)
    step = max(1, len(files) // (jobs * 16))
    chunks = [by_size[i:i + step] for i in range(0, len(by_size), step)]
    order = {p: i for i, p in enumerate(files)}
    ctx = multiprocessing.get_context("fork")
    results, names, analysed, entries = [], set(), [], {}
    try:
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            for chunk_results, chunk_names, chunk_analysed, chunk_entries in pool.map(
                    _lint_chunk, [(c, config, root, force, use_cache) for c in chunks]):
                results.extend(chunk_results)
                names |= chunk_names
                analysed.extend(chunk_analysed)
                entries.update(chunk_entries)
    except cf.process.BrokenProcessPool:
        results, names, analysed, entries = _isolated(files, config, root, force, use_cache, ctx)
    results.sort(key=lambda r: order[r.path])
    return results, frozenset(names), analysed, entries


def _isolated(files: list, config, root, force: bool, use_cache: bool, ctx):
    """Lint each file in a process of its own (after a worker died): a file whose process
    dies too gets a :class:`~jaxinterop_lint.engine.SourceError` naming the crash."""
    from .engine import FileResult, SourceError

    results, names, analysed, entries = [], set(), [], {}
    for path in files:
        try:
            with cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
                r, n, a, e = pool.submit(_lint_chunk, ([path], config, root, force, use_cache)).result()
        except cf.process.BrokenProcessPool:
            results.append(FileResult(path, error=SourceError(
                "internal error: the linter's process crashed on this file; please report it")))
            continue
        results.extend(r)
        names |= n
        analysed.extend(a)
        entries.update(e)
    return results, names, analysed, entries
