"""Analyse planned files, in this process or in worker processes: the same code either way.

:func:`lint_one` analyses one file of a session and stores its raw result (and the
summaries of the modules it needed) in the session's store.  :func:`analyse_files` runs it
over many files; with workers, the session (its plan and the project's analyses made so
far) is inherited through ``fork``, each worker takes chunks, largest files first, and sends
back only the raw results and the store entries it wrote for that chunk (never the store).
A worker that dies (a crash of the native parser) costs only its file: the chunk's files
are then linted one process per file.
"""
from __future__ import annotations

import os

_SESSION = None   # the session the workers serve (inherited through fork)
MIN_POOL_BYTES = 3_000_000


def lint_one(session, path: str) -> dict:
    """Analyse the reported file ``path`` (absolute) of ``session``; returns its raw result."""
    return session.analyse_and_store(path)


def _chunk(paths):
    from .analyse import PARSES

    session = _SESSION
    start = len(session.analysed)
    before = dict(PARSES)
    raws = [(p, lint_one(session, p)) for p in paths]
    session.store_summaries()
    parses = {p: n - before.get(p, 0) for p, n in PARSES.items() if n != before.get(p, 0)}
    return raws, session.store.drain(), session.analysed[start:], parses


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def uses_workers(paths: list, jobs: int, sizes=None) -> bool:
    """Whether :func:`analyse_files` would analyse ``paths`` in worker processes.  Workers
    pay for themselves only on enough work, spread over enough files: below that (or when
    one file is most of the work) this process is faster (bench/: workers are never slower
    than ``--jobs 1``)."""
    if jobs <= 1 or len(paths) < 4 * jobs or not hasattr(os, "fork"):
        return False
    sizes = sizes if sizes is not None else {p: _size(p) for p in paths}
    total = sum(sizes.values())
    floor = int(os.environ.get("JAXINTEROP_LINT_POOL_BYTES", MIN_POOL_BYTES))   # tests set 0
    return not (total < floor or (floor and max(sizes.values()) > total / 2))


def analyse_files(session, paths: list, jobs: int) -> dict:
    """Raw results of ``paths`` (absolute) by path; the entries written in workers are
    merged into ``session.store``."""
    sizes = {p: _size(p) for p in paths}
    if not uses_workers(paths, jobs, sizes):
        return {p: lint_one(session, p) for p in paths}
    import concurrent.futures as cf   # here: a run without workers (one small file) never imports them
    import multiprocessing

    global _SESSION
    _SESSION = session
    by_size = sorted(paths, key=sizes.get, reverse=True)
    step = max(1, len(paths) // (jobs * 8))
    chunks = [by_size[i:i + step] for i in range(0, len(by_size), step)]
    ctx = multiprocessing.get_context("fork")
    out: dict = {}
    try:
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            for raws, entries, analysed, parses in pool.map(_chunk, chunks):
                _take(session, out, raws, entries, analysed, parses)
    except cf.process.BrokenProcessPool:
        out = {}
        for p in paths:
            try:
                with cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
                    _take(session, out, *pool.submit(_chunk, [p]).result())
            except cf.process.BrokenProcessPool:
                out[p] = {"findings": [], "handled": [], "analysed": False,
                          "error": ["internal error: the linter's process crashed on this file; please report it",
                                    1, 1]}
    finally:
        _SESSION = None
    return out


def _take(session, out, raws, entries, analysed, parses) -> None:
    from .analyse import PARSES

    out.update(raws)
    session.store.merge(entries)
    session.analysed.extend(analysed)
    PARSES.update(parses)
