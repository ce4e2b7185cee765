"""Analyse planned files, in this process or in worker processes: the same code either way.

:func:`lint_one` analyses one file of a session and stores its raw result (and the
summaries of the modules it needed) in the session's store.  :func:`analyse_files` runs it
over many files; with workers, the session (its plan and the project's analyses made so
far) is inherited through ``fork``, each worker takes chunks, largest files first, and sends
back only the raw results and the store entries it wrote for that chunk (never the store,
nor what this process wrote before the fork).  Workers get only files whose analyses are
independent (:func:`split`): a file whose analysis would parse a module not analysed yet is
analysed here, where that module's analysis is made once, not once per worker.
A worker that dies (a crash of the native parser) costs only its file: the chunk's files
are then linted one process per file.

Before that, :func:`plan_facts` computes the plan's facts of many files (stage 3's text
scanners, the cost of a run that parses little: transformers' 2,912 files) in shares, one
here and one in each forked worker, handed back through a pipe.
"""
from __future__ import annotations

import os
from typing import Optional

_SESSION = None   # the session the workers serve (inherited through fork)
# The least bytes of independent files for workers to pay on 2 cores (bench/ and the corpus:
# the jax sources hand 13 files, 0.78 MB, to workers and gain a third of the run; a fork,
# the pool and the results cost about 0.1 s).
MIN_POOL_BYTES = 400_000
# The least bytes of text whose plan facts are worth computing in forked workers: reading
# facts costs about 20-30 ms a MB (bench/ corpora), a fork and the facts sent back about
# 20 ms (``JAXINTEROP_LINT_POOL_BYTES`` overrides it as it does MIN_POOL_BYTES).
MIN_FACTS_BYTES = 2_000_000


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
    errors = {p: (e.message, e.line, e.column) for p, e in session.errors.items()}
    return raws, session.store.drain(), session.analysed[start:], parses, errors


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _may_fork(count: int, jobs: int) -> bool:
    """Whether ``count`` files can go to workers at all: ``jobs`` over 1, at least ``4 *
    jobs`` files, and ``os.fork``."""
    return jobs > 1 and count >= 4 * jobs and hasattr(os, "fork")


def _bytes_floor(default: int) -> int:
    """The least bytes worth a pool: ``JAXINTEROP_LINT_POOL_BYTES`` (the tests set 0), else
    ``default``."""
    return int(os.environ.get("JAXINTEROP_LINT_POOL_BYTES", default))


def uses_workers(paths: list, jobs: int, sizes=None) -> bool:
    """Whether :func:`analyse_files` would analyse ``paths`` (independent files: see
    :func:`split`) in worker processes.  Workers pay for themselves only on enough work,
    spread over enough files: at least ``4 * jobs`` files, :data:`MIN_POOL_BYTES` of them
    (``JAXINTEROP_LINT_POOL_BYTES`` overrides it; the tests set 0), none over half the bytes,
    and free cores for them (:func:`cores_busy`).  Below that this process is faster
    (bench/: workers are never slower than ``--jobs 1``)."""
    if not _may_fork(len(paths), jobs):
        return False
    each = [sizes[p] if sizes is not None and p in sizes else _size(p) for p in paths]
    total = sum(each)
    floor = _bytes_floor(MIN_POOL_BYTES)
    if floor and cores_busy():
        return False
    return not (total < floor or (floor and max(each) > total / 2))


def cores_busy() -> bool:
    """Whether other processes keep this machine's cores busy: the 1-minute load average is
    over the core count less half a core, and so is the count of tasks running now, this
    one left out (:func:`running_now`).  Measured on 2 cores, the jax sources with workers /
    without: 0.64x at a load of 1.0-1.3, 0.97x at 2.2, 1.2-1.3x at 3.5-4 (workers then only
    add the fork and the results to ship).  The average alone lags a minute behind: after a
    test suite or a flake8 run on every core it said busy on idle cores (bench/'s rows after
    its flake8 rows ran transformers without workers, 1.44 s against 1.09 s).  False where
    the load is unknown; the average alone where the count now is."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        return False
    cores = os.cpu_count() or 1
    if load <= cores - 0.5:
        return False
    now = running_now()
    return now is None or now > cores - 0.5


# The kernel's load figures: the fourth field is ``running/total`` tasks at this instant
# (Linux, proc(5)); elsewhere there is none.
PROC_LOADAVG = "/proc/loadavg"


def running_now() -> Optional[int]:
    """The tasks (threads) running or runnable at this instant on the machine, this
    process's one left out, from the fourth field of :data:`PROC_LOADAVG` (``"3/412"``:
    3 running); None where it cannot be read."""
    try:
        with open(PROC_LOADAVG, encoding="ascii") as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(running - 1, 0)


def split(paths: list, jobs: int, shares, analyse_here) -> list:
    """The files of ``paths`` (planned, in plan order) to hand to workers; the others are
    analysed here, in order, by ``analyse_here(path)``, before the workers start (they
    inherit those analyses).

    ``shares(path)`` says whether ``path`` is better analysed here: its analysis would parse
    a module not analysed yet (read from the plan's import graph, no parse: in workers each
    would analyse that module again), or it was analysed here already.  Each file is asked
    at its turn, after the files before it that were analysed here (the modules it shares
    may be analysed by then).  Nothing goes to workers unless the files that remain
    independent are worth a pool (:func:`uses_workers`); otherwise every file is analysed
    here, in plan order, as with ``--jobs 1``."""
    sizes = {p: _size(p) for p in paths}
    if not uses_workers(paths, jobs, sizes):
        for p in paths:
            analyse_here(p)
        return []
    there = []
    for p in paths:
        if shares(p):
            analyse_here(p)
        else:
            there.append(p)
    if uses_workers(there, jobs, sizes):
        return there
    for p in there:
        analyse_here(p)
    return []


def plan_facts(plan, paths: list, jobs: int) -> int:
    """Compute the plan facts of ``paths`` (absolute; those :meth:`~.plan.Plan.facts_to_compute`
    leaves) in ``jobs`` shares of about equal bytes: one here, each other in a forked child
    that sends back its facts (pickled, through a pipe), which this process records
    (:meth:`~.plan.Plan.take_facts`) as if it had computed them.  Done only where it pays:
    ``jobs`` over 1, at least ``4 * jobs`` files, :data:`MIN_FACTS_BYTES` of text, free cores
    (:func:`cores_busy`).  A child that fails leaves its files to be computed here when the
    plan asks.  Returns how many children ran."""
    if not _may_fork(len(paths), jobs):
        return 0
    todo = plan.facts_to_compute(paths)
    floor = _bytes_floor(MIN_FACTS_BYTES)
    sizes = {p: len(plan.reader.text(p)) for p in todo}
    if not _may_fork(len(todo), jobs) or sum(sizes.values()) < floor or (floor and cores_busy()):
        return 0
    import pickle

    shares: list = [[] for _ in range(jobs)]
    load = [0] * jobs
    for p in sorted(todo, key=sizes.get, reverse=True):
        i = load.index(min(load))
        shares[i].append(p)
        load[i] += sizes[p]
    children = []
    for share in shares[1:]:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:    # the child: its share's facts, then out without the parent's exit hooks
            try:
                os.close(r)
                data = pickle.dumps({p: plan.computed_facts(p) for p in share}, pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as out:
                    out.write(data)
            finally:
                os._exit(0)
        os.close(w)
        children.append((pid, r))
    for p in shares[0]:     # known to be neither memoised nor stored (facts_to_compute)
        plan.take_facts(p, plan.computed_facts(p))
    for pid, r in children:
        with os.fdopen(r, "rb") as f:
            data = f.read()
        os.waitpid(pid, 0)
        try:
            got = pickle.loads(data)
        except Exception:   # the child died: its files are read here when the plan asks
            continue
        for p, f in got.items():
            plan.take_facts(p, f)
    return len(children)


def analyse_files(session, paths: list, jobs: int) -> dict:
    """Raw results of ``paths`` (absolute) by path; the entries written in workers are
    merged into ``session.store``."""
    sizes = {p: _size(p) for p in paths}
    if not paths or not uses_workers(paths, jobs, sizes):
        return {p: lint_one(session, p) for p in paths}
    import concurrent.futures as cf   # here: a run without workers (one small file) never imports them
    import multiprocessing

    global _SESSION
    _SESSION = session
    session.store.drain()   # written here before the fork: never sent back by a worker
    by_size = sorted(paths, key=sizes.get, reverse=True)
    step = max(1, len(paths) // (jobs * 8))
    chunks = [by_size[i:i + step] for i in range(0, len(by_size), step)]
    ctx = multiprocessing.get_context("fork")
    out: dict = {}
    try:
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            for taken in pool.map(_chunk, chunks):
                _take(session, out, *taken)
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


def _take(session, out, raws, entries, analysed, parses, errors) -> None:
    from ..source import SourceError
    from .analyse import PARSES

    for p, (message, line, column) in errors.items():   # the modules a worker could not parse
        session.errors.setdefault(p, SourceError(message, line, column))
    out.update(raws)
    session.store.merge(entries)
    session.analysed.extend(analysed)
    PARSES.update(parses)
