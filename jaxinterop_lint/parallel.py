"""Lint files in parallel worker processes."""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing


def _lint_chunk(args):
    from .session import lint_files

    paths, config, root, force, use_cache = args
    return lint_files(paths, config, root, force, use_cache)


def map_files(files: list, config, jobs: int, root=None, force: bool = False, use_cache: bool = False):
    """Lint ``files`` with ``jobs`` processes, each with its own project rooted at ``root``.

    Returns ``(results in input order, exporting names, modules analysed, new cache entries)``."""
    chunks = [files[i::jobs] for i in range(jobs)]
    chunks = [c for c in chunks if c]
    order = {p: i for i, p in enumerate(files)}
    ctx = multiprocessing.get_context("fork")
    results, names, analysed, entries = [], set(), [], {}
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        for chunk_results, chunk_names, chunk_analysed, chunk_entries in pool.map(
                _lint_chunk, [(c, config, root, force, use_cache) for c in chunks]):
            results.extend(chunk_results)
            names |= chunk_names
            analysed.extend(chunk_analysed)
            entries.update(chunk_entries)
    results.sort(key=lambda r: order[r.path])
    return results, frozenset(names), analysed, entries
