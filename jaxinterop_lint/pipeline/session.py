"""The session of one project: the driver of stage 7 for the files of one project root.

A :class:`Session` is one project root and configuration: its store (the cache), reader,
module index, plan and project (the analyses, shared by every file of the run).
:meth:`Session.lint` lints many files (the command line, through :func:`.run.run_session`);
:meth:`Session.lint_text` lints one text at a time (the flake8 plugin, standard input and
``--fix``, on the process's session of the file's project: :func:`.run.shared_project`), and
reads and fills the same cache, so a file whose result is cached is never analysed again,
and a file that is not is analysed with only the modules its analysis needs.

Its parts, one mixin each: the analyses (:mod:`.analyses`), the calling contexts across
modules (:mod:`.contexts`), the results and the store (:mod:`.results_store`).
"""
from __future__ import annotations

import os
from typing import Optional

from ..source import SourceError
from .analyses import AnalysesMixin
from .contexts import ContextsMixin
from .modules import ModuleIndex
from .read import Reader
from .results import FileResult, raw_to_json
from .results_store import StoreMixin
from .runkey import store_key
from .select import select
from .store import Store


def _layout_key(root: Optional[str], key: str) -> str:
    """The store key of ``root``: ``key`` (the configuration's, :func:`store_key`), mixed
    with the project's layout where it changes how modules resolve.  ``<root>/src`` is the
    first source root once it exists (:class:`~.modules.ModuleIndex`): a module created there
    shadows the one of the same name found at the root, so results decided while it was
    missing are kept apart (the attack of stop 48, s06: a result keeps no path under a
    missing ``src/`` for the modules it found)."""
    if root and os.path.isdir(os.path.join(root, "src")):
        from .store import key_of

        return key_of([key, "src"])
    return key


class Session(AnalysesMixin, ContextsMixin, StoreMixin):
    """One project (``root``; None: lone files, no cross-module analysis) and configuration.

    ``use_cache`` reads and writes the store under the root; ``reported`` is the set of
    absolute paths reported (findings in other files are never made); ``key`` is the store
    key when the caller has it already (:func:`store_key` of ``config``)."""

    def __init__(self, root: Optional[str], config, use_cache: bool = True, reported=(), key: Optional[str] = None):
        self.root = os.path.abspath(root) if root else None
        self.config = config
        self.key = _layout_key(self.root, key or store_key(config))
        self.store = Store(self.root if (use_cache and self.root) else None, self.key)
        self.reader = Reader(self.store)
        self.index = ModuleIndex(self.root) if self.root else None
        self.enabled = config.enabled()
        self._plan = None
        self._demand = None
        self._reported = set(reported)  # the reported files while there is no plan (then plan.reported)
        self._reported_under: list = []
        self.errors: dict = {}
        self.analysed: list = []
        self._project = None
        self._summarised: set = set()
        self._fed: dict = {}            # path -> the callers whose contexts its judgment used
        self._graph_known = False       # importers of every reported file are in the plan
        self._reported_files = None     # the files of Session.lint (None: plan.reported_under)
        self._waiting: Optional[list] = None   # results waiting for the plan's epoch (lint)
        self._epochs: dict = {}
        self._ctx_epoch = None          # {path: ctx_in} of the stored contexts epoch when it holds
        self._ctx_checked = False
        self._ctx_decided: set = set()  # files whose context callers this process decided
        self._warm = None               # the store of the warm record (:mod:`.warm`), on first use
        self._consumer_defs = None
        self._only_contexts: set = set()    # files of a lint() planned for their callers' contexts alone
        self._relay_asked: dict = {}    # relay file -> the modules asked whether it relays an export

    @property
    def plan(self):
        """The plan (:class:`~.plan.Plan`), made on first use: a file whose cached result
        holds with no other file reported needs none (:meth:`_holds_alone`), nor a run the
        warm record answers (:mod:`.warm`)."""
        if self._plan is None:
            from .plan import Plan

            self._plan = Plan(self.reader, self.index, self.config, self.store, self.enabled, self._reported)
            self._plan.reported_under = self._reported_under
        return self._plan

    @property
    def demand(self):
        """The callers' side of the plan (:class:`~.demand.Demand`), made on first use."""
        if self._demand is None:
            from .demand import Demand

            self._demand = Demand(self.plan)
        return self._demand

    def report_under(self, folders: list) -> None:
        """Report every file under ``folders`` (absolute paths: flake8's paths)."""
        if self._plan is not None and folders != self._reported_under:
            self._plan.discovered = None    # (found again under the new paths, when asked)
        self._reported_under = folders
        if self._plan is not None:
            self._plan.reported_under = folders

    @property
    def words(self):
        """The word lists of the configuration (built on first use: a cached result needs none)."""
        return self.plan.words

    decide_early = True     # scripts/export_filter_check.py compares with False

    @property
    def consumer_defs(self):
        """The functions of a module whose own text uses a consumer
        (:class:`~.exporters.ConsumerDefs`), made on first use; None when
        :attr:`decide_early` is off (a question about a module's exporting functions then
        analyses them all)."""
        if not self.decide_early:
            return None
        if self._consumer_defs is None:
            from .exporters import ConsumerDefs

            self._consumer_defs = ConsumerDefs(self._text, self.words.sinks,
                                               lambda p: (self.plan.facts(p) or {}).get("imports", ()))
        return self._consumer_defs

    @property
    def project(self):
        """The project's analyses (made on first use: a warm run never needs them)."""
        if self._project is None and self.index is not None:
            from ..analysis.project import Project

            self._project = Project(self.index, self._make_analysis, self._load_summary, gate=self.plan.gate,
                                    deferred=self.plan.deferred,
                                    reported=self.plan.is_reported, linked=self.imports_from,
                                    exporters=self.consumer_defs)
            self._project.analysed_paths = self.analysed
        return self._project

    # -- one file --------------------------------------------------------------------------
    def calls_exporter(self, path: str, targets: list) -> bool:
        """Whether the candidate ``path`` is analysed: of its ``targets`` (from
        :meth:`Plan.exporter_targets`), one hands over a function or class that uses a
        consumer (:meth:`Plan.calls_exporter`), a unit of ``path`` that uses it can see a
        multi-device value (:meth:`Demand.can_pass`), and the target's summary has an
        exporting function such a name can hand over (:meth:`Demand.hands_out`; the
        target's analysis is run for it, and the result of ``path`` depends on it)."""
        taken: dict = {}
        for t, k in targets:
            if self.plan.calls_exporter([(t, k)], self.plan.consumer_defs):
                taken.setdefault(t, set()).add(k)
        return any(self.demand.can_pass(path, t, frozenset(ks)) and self.exports_through(t, ks)
                   for t, ks in sorted(taken.items()))

    # -- many files ------------------------------------------------------------------------
    def shares(self, path: str) -> bool:
        """Whether the planned file ``path`` is better analysed in this process than in a
        worker (:func:`.pool.split`): its analysis exists here already, or it may parse a
        module not analysed yet (a project module it takes a name from that the analysis may
        parse: :meth:`~.plan.Plan.gate`, followed through the modules analysed here; read from
        the import graph, no parse), which workers would each analyse again.  A lone file
        (no project) shares nothing."""
        if self.project is None:
            return False
        by_path = self.project.by_path
        if path in by_path and not _frozen(by_path[path]):
            return True
        seen, stack = {path}, [path]
        while stack:
            for t, k in self.plan.targets(stack.pop()):
                if t in seen or not (self.plan.gate(t, k) or k is not None and self.plan.deferred(t, k)):
                    continue
                seen.add(t)
                if t not in by_path:
                    return True
                stack.append(t)
        return False

    def lint(self, files: list, jobs: int = 1) -> dict:
        """Raw results of ``files`` (absolute paths), by path: from the warm record when
        nothing changed (:meth:`warm_answer`), else cached ones, analysed ones, and those
        the plan leaves out."""
        answered = self.warm_answer(files)
        if answered is not None:
            (self._plan.reported if self._plan is not None else self._reported).update(files)
            self._reported_files = list(files)
            return answered
        if self.index is not None:
            for p in files:
                self.index.add_file(p)
        self.plan.reported.update(files)
        self._reported_files = list(files)
        # the stored contexts are checked for these files (never with a text given instead
        # of a file's: they were decided from what is on disk)
        self._ctx_epoch, self._ctx_checked = None, bool(self.plan.texts)
        out, todo = {}, []
        self._waiting = []
        for p in files:
            data = self.cached(p)
            if data is not None:
                out[p] = data
            else:
                todo.append(p)
        if not todo:
            self._waiting = None
            self._store_contexts_epoch(out)
            self._record_warm(files, out)
            return out
        from . import pool

        pool.plan_facts(self.plan, todo, jobs)
        direct = [p for p in todo if self.plan.direct(p)]
        chosen_set = set(direct)
        candidates = {p: ts for p in todo if p not in chosen_set for ts in [self.plan.exporter_targets(p)] if ts}
        # A candidate is analysed when it takes a function or class that uses a consumer.
        chosen = [p for p, ts in candidates.items() if self.calls_exporter(p, ts)]
        planned = direct + chosen
        # A reported file with exporting functions and reported importers: judged with their
        # calling contexts (its callers are analysed first: feed_contexts).
        only_contexts = [p for p in todo if p not in chosen_set and p not in chosen and self.context_callers(p)]
        self._only_contexts = set(only_contexts)
        planned += only_contexts

        def here(p):
            out[p] = pool.lint_one(self, p)

        there = pool.split(planned, jobs, self.shares, here)
        self.store_summaries()
        out.update(pool.analyse_files(self, there, jobs))
        for p in todo:
            if p not in out:
                err = self.reader.error(p)
                if err is not None:
                    out[p] = raw_to_json([], [], err, False, p, self.root)
                    continue
                err = self.errors.get(p)
                if err is not None:
                    # parsed for what an analysed file takes from it, and not valid Python
                    # (or too large): its importers' findings may be missing, so it is an
                    # error of its own, stored with its hash like any result
                    out[p] = raw_to_json([], [], err, False, p, self.root)
                    self.store_result(p, out[p])
                    continue
                out[p] = self.not_analysed()
                if self.reader.digest(p) is not None:
                    self.store_result(p, out[p], [t for t, _ in candidates.get(p, ())] + self._relay_asked.get(p, []))
        self.store_summaries()
        self._store_epoch()
        self._store_contexts_epoch(out)
        return out

    def lint_text(self, text: str, given: str, force: bool = False) -> FileResult:
        """Lint one file's ``text`` (spelled ``given``) in this project: its cached result
        when the text is the file's and nothing it used changed, else an analysis of it
        and of the modules that analysis needs (never of the whole project)."""
        path = os.path.abspath(given)
        # texts given one at a time (flake8, --fix) may differ from what the stored contexts
        # epoch was checked against: their contexts are decided from the import graph
        self._ctx_epoch, self._ctx_checked = None, True
        if self.index is not None:
            self.index.add_file(path)
        if self._plan is None and not force:
            data = self._holds_alone(path, text)
            if data is not None:
                self._reported.add(path)
                return select(data, given, self.config, lambda: text)
        self.plan.reported.add(path)
        for memo in (self.plan._facts, self.plan._targets):
            memo.pop(path, None)
        if self._project is not None:
            ma = self.project.by_path.get(path)
            if ma is not None and getattr(ma, "source", text) != text:
                # An analysis of another text of this file (a round of --fix): made again.
                self.project.forget(path)
        try:
            same = self.reader.text(path) == text
        except SourceError:
            same = False
        before = self.plan.texts.get(path)
        if same:
            self.plan.texts.pop(path, None)
        else:
            self.plan.texts[path] = text
        if self.plan.texts.get(path) != before and self.plan.scanned is not None:
            self.plan.forget_scan()     # (the scan read another text of it)
        # one file decided alone: whether any module can hold JAX code is read from the
        # text of every module, not from the facts of each module of its import graph
        self.plan.scan_project = True
        data = self.cached(path) if same and not force else None
        if data is None:
            targets = self.plan.exporter_targets(path)
            if force or self.plan.direct(path) or (targets and self.calls_exporter(path, targets)) \
                    or self.context_callers(path):
                data = self.raw(path)
            else:
                data = self.not_analysed()
            if same:
                # a decision that read much of the project is stored with an epoch, as a
                # run of the whole project stores it: the editor's next flake8 on this file
                # stats the files the plan read instead of reading their facts again
                # (transformers' debug_utils.py: 1.1 s a save, before a command-line run)
                self._waiting = []
                self.store_result(path, data, [t for t, _ in targets])
                self.store_summaries()
                self._store_epoch(keep_holding=True)
        return select(data, given, self.config, lambda: text)

    def save(self) -> None:
        """Write what this session stored (and the warm record, replacing the one before)."""
        self.store.save()
        if self._warm is not None:
            self._warm.save(merge=False)


def _frozen(ma) -> bool:
    from ..analysis.project import is_frozen

    return ma is None or is_frozen(ma)
