"""Stage 7, the run: discover -> read and hash -> plan -> analyse -> rules -> select.

The entry points that drive a :class:`~.session.Session` (one project root and
configuration: :mod:`.session`).  The command line lints many files through
:func:`run_session`, one session per project; the flake8 plugin, standard input and
``--fix`` lint one text at a time through :meth:`Session.lint_text` on the process's session
of the file's project (:func:`shared_project`; flake8 on many files plans them first:
:func:`prepare_paths`), which reads and fills the same cache.  :func:`lint_lone` lints a text
with no project.  Every name of the session's modules that callers used from here stays
importable from here (one replaced for a test is replaced where it is defined:
:mod:`.analyses`, :mod:`.results_store`, :mod:`.runkey`).
"""
from __future__ import annotations

import os
from typing import Optional

from ..source import run_guarded
from .analyses import build_analysis, holds_no_finding, raw_findings, run_analysis  # noqa: F401
from .contexts import _names  # noqa: F401
from .modules import find_root, has_marker
from .results import FileResult, LintResult, raw_to_json
from .results_store import EPOCH, MAX_PLAN_DEPS, NOT_ANALYSED  # noqa: F401
from .runkey import _DIGEST, NOT_IN_KEY, package_digest, parser_stamp, store_key  # noqa: F401
from .select import select
from .session import Session, _frozen  # noqa: F401


def lint_lone(text: str, given: str, config, force: bool = False) -> FileResult:
    """Lint one text with no project (the API's :func:`~jaxinterop_lint.engine.lint_source`
    without ``project``): parsed only when the plan says it can make a finding."""
    from .plan import ORIGIN_STRONG, can_find, facts_of, words_for

    w = words_for(config)
    facts = facts_of(text, "", w)
    enabled = config.enabled()
    # alone, a placement word makes nothing multi-device without a sharding (facts.ORIGIN_STRONG)
    can = can_find(facts, enabled, w) or facts["sink"] and (
        facts["origin"] == ORIGIN_STRONG or facts["origin"] and "JXI009" in enabled)
    if not (force or can):
        return select(NOT_ANALYSED, given, config, lambda: text)   # its noqa directives may be judged (JXI100)

    def judged():
        return raw_findings(run_analysis(build_analysis(text, given, config, None, w.masking)), given)

    findings, handled = run_guarded(judged)   # deep-but-valid code: a thread with a large stack
    data = raw_to_json(findings, handled, None, True, given, None)
    return select(data, given, config, lambda: text)


def run_session(files: list, paths: list, config, jobs: int = 1, project_root: Optional[str] = None,
                whole_project: bool = True, use_cache: bool = True) -> LintResult:
    """Lint ``files`` (already discovered under ``paths``); see :func:`engine.lint_paths`.

    Without ``project_root``, each file belongs to the project of its nearest root (see
    :func:`~.modules.find_root`), so a folder holding several projects is linted project by
    project."""
    out = LintResult(files=len(files))
    cwd = os.getcwd()   # os.path.abspath asks for it once per file
    abs_of = {f: os.path.normpath(f if os.path.isabs(f) else os.path.join(cwd, f)) for f in files}
    if not whole_project:
        groups = {None: files}
    elif project_root:
        groups = {os.path.abspath(project_root): files}
    else:
        groups, by_dir = {}, {}
        for f in files:
            d = os.path.dirname(abs_of[f])
            if d not in by_dir:
                by_dir[d] = find_root([d])
            groups.setdefault(by_dir[d], []).append(f)
    order = {f: i for i, f in enumerate(files)}
    enabled = config.enabled()
    for root, group in groups.items():
        session = Session(root, config, use_cache=use_cache and root is not None)
        raws = session.lint([abs_of[f] for f in group], jobs)
        out.analysed_paths.extend(session.analysed)
        for f in group:
            r = select(raws[abs_of[f]], f, config, lambda p=abs_of[f], s=session: s.reader.text(p), enabled)
            if r.error is not None:
                out.errors.append((f, r.error))
            out.findings.extend(r.findings)
            out.handled.extend(r.handled)
            out.suppressed.extend(r.suppressed)
        session.save()
    if out.findings:
        from ..finding import Finding

        out.findings.sort(key=Finding.sort_key)
    out.errors.sort(key=lambda e: order.get(e[0], 0))
    out.analysed = len(out.analysed_paths)
    return out


_SHARED: dict = {}
_ROOTS: dict = {}     # folder -> project root (front ends asking file by file)
_KEYS: dict = {}      # repr(config) -> (store key, enabled codes)


def shared_project(path: str, config, reported=None) -> Session:
    """The session of the project of ``path`` for front ends that see one file at a time
    (the flake8 plugin, standard input, ``--fix``): one per project root and configuration
    in this process, reading and filling the command line's cache, saved when the process
    ends.  ``reported`` (paths: files, or folders whose files all are) names the reported
    files, for flake8 the paths it was given."""
    root = _root_of(os.path.abspath(path))
    spelled = repr(config)
    held = _KEYS.get(spelled)
    if held is None:
        # the same configuration for every file of a flake8 process: its key once
        held = _KEYS[spelled] = (store_key(config), repr(config.enabled()))
    key = (root, *held)
    session = _SHARED.get(key)
    if session is None:
        # A real project (a marker at its root) shares the command line's cache; a bare
        # folder gets none written into it by an editor or a fixer.
        session = _SHARED[key] = Session(root, config, use_cache=has_marker(root), key=held[0])
        _save_at_exit(session)
    if reported:
        session.report_under(sorted({os.path.abspath(p) for p in reported}))
    return session


def prepare_paths(paths, config) -> int:
    """flake8 on many files (a folder, several paths): the plan of every project under
    ``paths`` made once, here (:meth:`Session.know_importers`: the facts of every file and
    the import graph), on the sessions that :func:`shared_project` then hands each file.
    Called by the flake8 plugin in flake8's main process before it starts its workers: they
    inherit the plan (``fork``), or read the facts from the cache saved here, so no worker
    reads and plans the whole project again; each worker then analyses only the files it is
    given that can make a finding, and what their analyses need.  The files are those
    :meth:`Session.know_importers` discovers under the same paths (the reported files).
    Returns how many projects were planned."""
    from .discover import discover

    reported = [os.path.abspath(p) for p in paths]
    files = [os.path.abspath(p) for p in discover(reported, config.exclude, config.extend_exclude,
                                                  config.respect_gitignore)]
    firsts: dict = {}
    for p in files:
        firsts.setdefault(_root_of(p), p)
    before = dict(_SHARED)
    n = 0
    try:
        for root, first in firsts.items():
            session = shared_project(first, config, reported=reported)
            if session.index is None:
                continue
            session.know_importers(files)   # every file under the paths, as each file's lint would
            session.save()      # the facts, for workers started another way than fork
            n += 1
    except BaseException:
        # a plan made in part is no plan: each file then makes its own, and says what failed
        _SHARED.clear()
        _SHARED.update(before)
        raise
    if n:
        import gc

        # The plan lives as long as the process and its workers: kept out of the collector
        # (no full collection walks it again, no worker copies its pages just to mark them).
        gc.freeze()
    return n


def _root_of(path: str) -> str:
    folder = os.path.dirname(path)
    root = _ROOTS.get(folder)
    if root is None:
        root = _ROOTS[folder] = find_root([path])
    return root


def _save_at_exit(session: Session) -> None:
    import atexit

    import sys

    atexit.register(session.save)
    if "multiprocessing" in sys.modules:  # flake8's workers end through it, which skips atexit
        try:
            from multiprocessing import util

            util.Finalize(session, _save_unless_pool_worker, args=(session,), exitpriority=10)
        except Exception:  # pragma: no cover
            pass


def _save_unless_pool_worker(session: Session) -> None:
    """The save of a flake8 worker at its exit; none in a worker of :mod:`.pool` (forked by
    :func:`prepare_paths` in flake8's main process: its entries went back with its chunks)."""
    import sys

    pool = sys.modules.get(__package__ + ".pool")
    if pool is None or getattr(pool, "_SESSION", None) is None:
        session.save()
