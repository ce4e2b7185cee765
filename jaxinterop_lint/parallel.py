"""Lint files in parallel worker processes."""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing


def _lint_chunk(args):
    from .engine import lint_file

    paths, config = args
    return [lint_file(p, config) for p in paths]


def map_files(files: list, config, jobs: int):
    """Lint ``files`` with ``jobs`` processes; yields :class:`FileResult` in input order.

    Files are cut into chunks so that each worker gets a fair share of the work."""
    chunks = [files[i::jobs * 4] for i in range(jobs * 4)]
    chunks = [c for c in chunks if c]
    order = {p: i for i, p in enumerate(files)}
    ctx = multiprocessing.get_context("fork" if hasattr(multiprocessing, "get_context") else None)
    results = []
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        for chunk in pool.map(_lint_chunk, [(c, config) for c in chunks]):
            results.extend(chunk)
    results.sort(key=lambda r: order[r.path])
    return results
