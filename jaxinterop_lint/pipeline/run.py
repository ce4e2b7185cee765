"""Stage 7, the run: discover -> read and hash -> plan -> analyse -> rules -> select.

A :class:`Session` is one project root and configuration: its store (the cache), reader,
module index, plan and project (the analyses, shared by every file of the run).  The
command line lints many files through :func:`run_session`; the flake8 plugin, standard
input and ``--fix`` lint one text at a time through :meth:`Session.lint_text` on the
process's session of the file's project (:func:`shared_project`), which reads and fills the
same cache, so a file whose result is cached is never analysed again, and a file that is
not is analysed with only the modules its analysis needs.

Cross-function exports across modules (PLAN.md decision 1): a reported file that calls an
exporting function of another reported file it imports gives it a calling context instead of
a finding at the call.  Before a reported file with exporting functions is judged, its
reported importers that can pass it a multi-device value are analysed
(:meth:`Session.feed_contexts`, from the plan's reverse import graph ``plan.importers`` and
:class:`~.demand.Demand`), so its sink-line findings are complete whatever the order; such a
file is planned even when no JAX code reaches it.  The contexts every file was judged with
are stored once per run (:meth:`Session.contexts_epoch`), so a warm run where nothing the
plan read changed checks them without the import graph.  A result records the callers whose
contexts it judged (``ctx_in``: they and what their analyses used are dependencies) and the
callee files whose reported state decided where its own exports are reported (``ctx_out``);
:meth:`Session.cached` judges the file again when either no longer holds.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Optional

from ..source import SourceError, internal_error, run_guarded
from .modules import ModuleIndex, find_root, has_marker
from .read import Reader
from .results import FileResult, LintResult, raw_to_json
from .select import select
from .store import FORMAT, Store, key_of


# The stages below the warm check are imported when first used: a run that the warm record
# answers (:mod:`.warm`) loads none of the plan, the demand, the analysis or the rules.
def build_analysis(*args, **kwargs):
    """:func:`.analyse.build_analysis`."""
    from .analyse import build_analysis as made

    return made(*args, **kwargs)


def holds_no_finding(*args, **kwargs):
    """:func:`.analyse.holds_no_finding`."""
    from .analyse import holds_no_finding as made

    return made(*args, **kwargs)


def run_analysis(*args, **kwargs):
    """:func:`.analyse.run_analysis`."""
    from .analyse import run_analysis as made

    return made(*args, **kwargs)


def raw_findings(*args, **kwargs):
    """:func:`.judge.raw_findings`."""
    from .judge import raw_findings as made

    return made(*args, **kwargs)


# Configuration fields that change what is reported, not the raw results: the command line
# and the flake8 plugin (which selects differently) share one cache.
NOT_IN_KEY = ("select", "ignore", "extend_select", "per_file_ignores", "exclude", "extend_exclude",
              "respect_gitignore", "source")

_DIGEST: list = []


def package_digest() -> str:
    """A stamp of this package's own sources (each file's name, size and modification
    time, read with ``stat`` only: every process of flake8 pays it): a cache written by
    another build of the linter (an upgrade, a local edit) is never read, whatever its
    version number says."""
    if not _DIGEST:
        from .storekey import blake2b

        parts = []
        todo = [("", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]
        while todo:        # depth first, names sorted (one scandir per folder)
            rel, folder = todo.pop()
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
            subs = []
            for e in entries:
                name = e.name
                if name.endswith(".py") and e.is_file():
                    st = e.stat()
                    parts.append(f"{rel}{name}:{st.st_size}:{st.st_mtime_ns};")
                elif name != "__pycache__" and e.is_dir(follow_symlinks=False):
                    subs.append((f"{rel}{name}{os.sep}", e.path))
            todo.extend(reversed(subs))
        _DIGEST.append(blake2b("".join(parts).encode(), digest_size=16).hexdigest())
    return _DIGEST[0]


def parser_stamp() -> list:
    """What else a raw result depends on: the Python running the linter (its recursion
    limits decide what is too deeply nested) and the libcst installed (its parser), by the
    ``stat`` of libcst's version file, without importing it."""
    import importlib.util
    import sys

    try:
        spec = importlib.util.find_spec("libcst")
        st = os.stat(os.path.join(os.path.dirname(spec.origin), "_version.py"))
        libcst = [spec.origin, st.st_size, st.st_mtime_ns]
    except (ImportError, AttributeError, TypeError, OSError, ValueError):
        libcst = None
    return [list(sys.version_info[:2]), libcst]


def store_key(config) -> str:
    """The store file's key: the linter's own sources, the Python and libcst it runs with
    (:func:`parser_stamp`) and the configuration fields that change raw results (every
    field but those of :data:`NOT_IN_KEY`)."""
    from .. import __version__

    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in NOT_IN_KEY}
    return key_of([__version__, FORMAT, package_digest(), parser_stamp(), fields])


MAX_PLAN_DEPS = 16
EPOCH = "plan-epoch"    # the store entry (a name in the cache folder) of the plan's epoch
NOT_ANALYSED = {"findings": [], "handled": [], "error": None, "analysed": False}


def _names(taken) -> Optional[frozenset]:
    """The top-level names among ``taken`` (names taken from a module by imports), or None
    when the module itself or ``*`` is taken: every name may be asked for then."""
    return None if None in taken or "*" in taken else frozenset(taken)


class Session:
    """One project (``root``; None: lone files, no cross-module analysis) and configuration.

    ``use_cache`` reads and writes the store under the root; ``reported`` is the set of
    absolute paths reported (findings in other files are never made); ``key`` is the store
    key when the caller has it already (:func:`store_key` of ``config``)."""

    def __init__(self, root: Optional[str], config, use_cache: bool = True, reported=(), key: Optional[str] = None):
        self.root = os.path.abspath(root) if root else None
        self.config = config
        self.key = key or store_key(config)
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
                                    reported=self.plan.is_reported, linked=self.imports_from,
                                    exporters=self.consumer_defs)
            self._project.analysed_paths = self.analysed
        return self._project

    # -- callbacks of the project --------------------------------------------------------
    def _text(self, path: str) -> str:
        given = self.plan.texts.get(path)
        return given if given is not None else self.reader.text(path)

    def callers(self, path: str) -> frozenset:
        """Names bound in ``path`` by imports of modules that name a consumer (their calls
        may be findings: the masking keeps them)."""
        f = self.plan.facts(path)
        if not f or self.index is None:
            return frozenset()
        sinky = {t for t, _ in self.plan.targets(path) if (self.plan.facts(t) or {}).get("sink")}
        if not sinky:
            return frozenset()
        bound = self.plan._bound.get(path, {})
        if any(t in sinky for t, _ in bound.get("*", ())):
            # a star import of such a module: any name may be one of its functions
            out = set()
            for module, names in f["imports"]:
                for name, alias in names or [[module.split(".")[0], None]]:
                    out.add(alias or name)
            return frozenset(out)
        return frozenset(n for n, ts in bound.items() if any(t in sinky for t, _ in ts))

    def _make_analysis(self, path: str, project, text=None, want: Optional[frozenset] = None):
        try:
            text = text if text is not None else self._text(path)
            # A file that can make a finding by itself is masked for its own findings; a
            # module analysed only for what other analyses take from it (``want``: the names
            # they ask for) is parsed for those names (issue 16), or whole.
            masking = self.words.masking if self.plan.direct(path) else None
            if masking is None and want is not None and self.may_be_partial(path):
                return build_analysis(text, path, self.config, project, partial=want)
            return build_analysis(text, path, self.config, project, masking, self.callers(path))
        except SourceError as exc:
            self.errors[path] = exc
            return None

    def may_be_partial(self, path: str) -> bool:
        """Whether ``path``, a file that makes no finding by itself (not
        :meth:`~.plan.Plan.direct`: the caller asked), may be parsed only for the names asked
        of it (:mod:`.partial`): no JAX code reaches it, and it is no package ``__init__``
        (its names are mostly re-exports)."""
        return os.path.basename(path) != "__init__.py" and not self.plan.reach(path, decides=False)

    def _load_summary(self, path: str):
        data = Store.field(self.store.get(path), "summary", self.reader.digest(path), self.reader.digest,
                           self.reader.exists)
        if data is None:
            return None
        from ..summaries import thaw

        try:
            deps = self.store.get(path)["summary"].get("deps", {})
            return thaw(data, self.project.display(path), depends_on=deps.keys())
        except Exception:  # a malformed entry is no entry
            return None

    # -- one file --------------------------------------------------------------------------
    def analyse(self, path: str):
        """Analyse the file ``path`` (absolute) for reporting; returns the analysis, or
        raises :class:`SourceError` (an internal error is a SourceError saying so)."""
        text = self._text(path)
        if self.project is None:
            ma = build_analysis(text, path, self.config, None, self.words.masking, self.callers(path))
            self.analysed.append(path)
            return run_analysis(ma)
        ma = self.project.analysis_of_path(path, text=text, fresh=True)
        if ma is None:
            if path in self.errors:
                raise self.errors[path]
            raise SourceError("internal error: the analysis of this file failed; please report it "
                              "with this file (JAXINTEROP_LINT_DEBUG=1 shows the traceback)")
        return ma

    def _judged(self, path: str):
        self._fed[path] = self.feed_contexts(path)
        made = self._project is not None and self._project.by_path.get(os.path.abspath(path)) is not None
        if not made and holds_no_finding(self._text(path), self.words.masking, self.callers(path)):
            return [], []       # issue 16: nothing a finding stands at; no libcst parse for it
        return raw_findings(self.analyse(path), path)

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
        for t, ks in sorted(taken.items()):
            if self.demand.can_pass(path, t, frozenset(ks)):
                def enough(tops, t=t, ks=ks):
                    return tops is None or self.demand.hands_out(t, ks, tops)

                tops = self.project.exporting_tops(t, _names(ks), enough) if self.project is not None else None
                if enough(tops):
                    return True
        return False

    # -- calling contexts across modules (PLAN decision 1) ----------------------------------
    def know_importers(self, under: Optional[list] = None) -> None:
        """Fill the plan's reverse import graph (``plan.importers``) for the reported files,
        once: those of :meth:`lint`, or for a front end that sees one file at a time the
        files under its paths (flake8's: ``plan.reported_under``; ``under``: those files,
        absolute, when the caller discovered them already)."""
        if self._graph_known or self.index is None:
            return
        self._graph_known = True
        files = self._reported_files
        if files is None and under is not None:
            files = list(under)
            for p in files:
                self.index.add_file(p)
        if files is None:
            from .discover import discover

            files = []
            for p in discover(self.plan.reported_under, extend_exclude=self.config.extend_exclude,
                              respect_gitignore=self.config.respect_gitignore):
                files.append(os.path.abspath(p))
                self.index.add_file(files[-1])
        for p in files:
            self.plan.targets(p)

    def imports_from(self, caller: str, callee: str) -> bool:
        """Whether the plan's import graph has ``caller`` taking names from ``callee`` (a
        caller gives calling contexts only then: :meth:`context_callers` finds it)."""
        self.plan.targets(caller)
        return (caller in self.plan.importers.get(callee, {}) and self.plan.reach(caller)
                and self.demand.gives(caller, callee))

    def context_callers(self, path: str) -> list:
        """The reported files (sorted) that JAX code reaches and that take names from the
        reported file ``path``, when it has exporting functions: the callers that may give it
        calling contexts (a class taken may have an exporting method: every name counts).
        PyTorch code that no JAX code reaches gives none, so it is still never parsed."""
        takers = self.context_takers(path)
        if not takers:
            return []
        taken = self.plan.importers.get(path, {})
        if not self.project.exporting_of(path, _names(set().union(*(taken.get(a, {None}) for a in takers))), bool):
            return []
        return takers

    def context_takers(self, path: str) -> list:
        """The part of :meth:`context_callers` read from the text (no analysis): the
        reported importers of ``path`` (a reported file naming a consumer) that JAX code
        reaches and that can pass a multi-device value to a name they take from it
        (:meth:`Demand.gives`), sorted."""
        self._ctx_decided.add(path)
        if self.index is None or not self.plan.is_reported(path) or not (self.plan.facts(path) or {}).get("sink"):
            return []
        self.know_importers()
        return sorted(a for a in self.plan.importers.get(path, {})
                      if a != path and self.plan.is_reported(a) and self.plan.reach(a) and self.demand.gives(a, path))

    def feed_contexts(self, path: str) -> list:
        """Analyse the :meth:`context_callers` of ``path`` (a real analysis each, every
        function of it), so that the calling contexts they give ``path`` are known before it
        is judged; returns them."""
        callers = self.context_callers(path)
        for a in callers:
            self.project.analysis_of_path(a, fresh=True)
        return callers

    def context_fields(self, path: str) -> dict:
        """``ctx_in`` / ``ctx_out`` of the result of ``path`` (see the module docstring)."""
        out = {}
        if self._fed.get(path):
            out["ctx_in"] = list(self._fed[path])
        ma = self._project.by_path.get(path) if self._project is not None else None
        callees = getattr(ma, "context_callees", None)
        if callees:
            out["ctx_out"] = sorted([c, r] for c, r in callees.items())
        return out

    def contexts_hold(self, path: str, data: dict) -> bool:
        """Whether the context fields of the stored result of ``path`` still hold: its
        callers are the files it judged contexts of (``ctx_in``: a caller that became
        reported or stopped being, or that now takes an exporting function, judges it
        again), and each callee still has the reported state it had (``ctx_out``)."""
        if not all(self.plan.is_reported(c) == bool(r) for c, r in data.get("ctx_out", ())):
            return False
        epoch = self.contexts_epoch()
        if epoch is not None:
            return list(data.get("ctx_in", ())) == list(epoch.get(path, ()))
        return list(data.get("ctx_in", ())) == self.context_callers(path)

    def contexts_epoch(self) -> Optional[dict]:
        """``{file: ctx_in}`` that the last :meth:`lint` over the same reported files decided,
        when nothing its plan read changed since (:func:`~.demand.stored_contexts`); None
        when there is none, or for a session that sees one file at a time.  Checked once."""
        if not self._ctx_checked:
            self._ctx_checked = True
            if self._reported_files is not None:
                from .demand import stored_contexts

                self._ctx_epoch = stored_contexts(self.store, self.reader, self._reported_files)
        return self._ctx_epoch

    def _store_contexts_epoch(self, out: dict) -> None:
        """Record the contexts decided by this :meth:`lint` (``out``: its raw results, whose
        ``ctx_in`` are the decisions; :func:`~.demand.store_contexts`); nothing when the
        stored ones held (nothing changed) or when a text was given (not what is on disk)."""
        files = self._reported_files
        if self.store.folder is None or files is None or self._ctx_epoch is not None or self.plan.texts:
            return
        for p in files:
            if p not in self._ctx_decided:   # judged by a worker: what the decision reads, here
                self.context_takers(p)
        from .demand import store_contexts

        store_contexts(self.store, self.reader, self.plan, files, out)

    def raw(self, path: str) -> dict:
        """The raw result of analysing ``path`` (absolute)."""
        try:
            # deep-but-valid code: parse, analysis and rules in a thread with a large stack
            findings, handled = run_guarded(self._judged, path)
        except SourceError as exc:
            return raw_to_json([], [], exc, False, path, self.root)
        except Exception as exc:  # a bug of ours must not stop the run: report it on this file
            if os.environ.get("JAXINTEROP_LINT_DEBUG"):
                raise
            return raw_to_json([], [], internal_error(exc), False, path, self.root)
        data = raw_to_json(findings, handled, None, True, path, self.root)
        data.update(self.context_fields(path))
        return data

    def dependencies(self, path: str, extra=(), planned: Optional[bool] = None) -> Optional[dict]:
        """``{file: hash}`` of what the analysis of ``path`` used (transitively), plus, for
        a result, what its plan used: with ``planned`` False (not analysed) every file whose
        facts the decision read, with ``planned`` True the files it imports (the masking
        keeps the callers of those naming a consumer)."""
        deps = set(extra)
        if planned is False:
            # What the decision read: the files it imports, and the import graph beyond
            # them only when it asked whether JAX code reaches the file.
            deps |= {t for t, _ in self.plan.targets(path)}
            if path in self.plan.reach_asked:
                more = self.plan.consulted(path, MAX_PLAN_DEPS)
                if more is None:
                    return None
                deps |= more
        elif planned:
            deps |= {t for t, _ in self.plan.targets(path)}
        if self._project is not None:
            deps |= self.project.dependencies(path)
            for t in extra:
                deps |= self.project.dependencies(t)
        deps.discard(path)
        return {d: self.reader.digest(d) for d in sorted(deps)}

    def store_result(self, path: str, raw: dict, extra=()) -> None:
        """Record ``raw`` as the result of ``path`` computed from the bytes read this run."""
        if path in self.plan.texts or (raw.get("error") and raw["error"][0].startswith("internal error")):
            return
        digest = self.reader.digest(path)
        if digest is None:
            return
        # The callers whose contexts were judged, and what their analyses used: an edit of
        # one of them judges this file again (PLAN decision 1).
        extra = [*extra, *raw.get("ctx_in", ())]
        deps = self.dependencies(path, extra, planned=bool(raw.get("analysed")))
        if deps is None:
            # A decision that read much of the project: stored with the plan's epoch (see
            # :meth:`_store_epoch`) when the run can write one, else made again next time.
            if self._waiting is not None:
                self._waiting.append((path, raw, extra))
            return
        self.store.put(path, digest, self.reader.stamp_to_store(path),
                       result={"data": raw, "deps": deps, "absent": self.plan.absent([path, *deps])})

    def analyse_and_store(self, path: str) -> dict:
        """:meth:`raw` of ``path``, stored."""
        raw = self.raw(path)
        self.store_result(path, raw)
        return raw

    def store_summaries(self) -> None:
        """Record the summary of every module analysed in this process and not yet stored.
        Nothing without a cache folder: a summary is read back only by a later run or by a
        worker (forked after the modules it needs were analysed here, so it has them), and
        freezing one analyses the functions of other modules its values name."""
        if self.store.folder is None:
            return
        if self._project is None or not any(p not in self._summarised for p in self.analysed):
            return
        from ..analysis.project import is_frozen
        from ..summaries import NotReady, freeze

        for path in self.analysed:
            ma = self.project.by_path.get(path)
            if path in self._summarised or ma is None or is_frozen(ma) or path in self.plan.texts:
                continue
            if getattr(ma, "partial", None) is not None:
                continue    # made for some names only (:mod:`.partial`): another run may need others
            if path not in self.project.complete and any(r.state != "done" for r in ma.functions):
                # Reached through an import and analysed only as far as callers needed: a
                # summary would have to analyse the rest.
                continue
            self._summarised.add(path)
            digest = self.reader.digest(path)
            if digest is None:
                continue
            try:
                # Only what this run computed: analysing more to store it cost keras' cold run
                # with the cache on 2.4 s of 4.9 (the methods of classes its values name, and
                # the modules those call).  A module not stored is analysed again if a later
                # run needs it, as with no cache.
                data = freeze(ma, ready_only=True)
            except (RecursionError, ValueError, TypeError, NotReady):
                continue
            deps = self.dependencies(path)
            self.store.put(path, digest, self.reader.stamp_to_store(path),
                           summary={"data": data, "deps": deps, "absent": self.plan.absent([path, *deps])})

    def _store_epoch(self) -> None:
        """Store the results waiting for an epoch: the hashes of every file whose facts the
        plan read this run (and the files whose creation would change its imports), kept
        once under :data:`EPOCH`; each waiting result names that epoch.  A warm run checks
        the epoch once (the hashes are those it stats anyway) instead of re-planning."""
        waiting, self._waiting = self._waiting, None
        if not waiting or self.store.folder is None:
            return
        read = sorted(p for p, f in self.plan._facts.items() if f is not None and p not in self.plan.texts)
        deps = {p: self.reader.digest(p) for p in read}
        if any(d is None for d in deps.values()):
            return
        epoch = key_of(sorted(deps.items()))
        where = os.path.join(self.store.folder, EPOCH)
        self.store.put(where, epoch, None, plan={"data": True, "deps": deps, "absent": self.plan.absent(read)})
        self._epochs[epoch] = True
        for path, raw, extra in waiting:
            digest = self.reader.digest(path)
            if digest is None:
                continue
            # the epoch holds every file (and absent file) the decision read: nothing more here
            self.store.put(path, digest, self.reader.stamp_to_store(path),
                           result={"data": raw, "deps": {}, "absent": [], "epoch": epoch})

    def _epoch_holds(self, epoch: str) -> bool:
        if epoch not in self._epochs:
            where = os.path.join(self.store.folder, EPOCH) if self.store.folder else None
            self._epochs[epoch] = where is not None and Store.field(
                self.store.get(where), "plan", epoch, self.reader.digest, self.reader.exists) is not None
        return self._epochs[epoch]

    def cached(self, path: str) -> Optional[dict]:
        """The stored raw result of ``path`` when still valid.  A file the plan left out
        under another rule selection is planned again when this run enables more rules."""
        data = self._stored(path)
        if data is not None and not self.contexts_hold(path, data):
            return None
        return data

    def _stored(self, path: str) -> Optional[dict]:
        """:meth:`cached` but for its calling contexts: the stored result of ``path`` when it
        was made from the file as it is now, everything it used (its dependencies, the plan's
        epoch) is unchanged, and this run enables no rule the plan left out then."""
        entry = self.store.get(path)
        data = Store.field(entry, "result", self.reader.digest(path), self.reader.digest, self.reader.exists)
        if data is not None:
            epoch = entry["result"].get("epoch")
            if epoch is not None and not (isinstance(epoch, str) and self._epoch_holds(epoch)):
                return None
        if data is not None and not data.get("analysed") and not data.get("error"):
            if not self.enabled <= set(data.get("enabled", ())):
                return None
        return data

    def _holds_alone(self, path: str, text: str) -> Optional[dict]:
        """The cached result of ``path`` for :meth:`lint_text`, found without the plan (no
        import graph, no word lists: the editor's flake8 on one file after a command-line
        run): when no other file is reported (so no reported caller can give ``path`` a
        calling context), ``text`` is the file's, the stored result holds
        (:meth:`_stored`) and it was judged with no calling context.  None otherwise: the
        plan decides (:meth:`cached`)."""
        if any(r != path for r in self._reported_under) or any(r != path for r in self._reported):
            return None
        try:
            if self.reader.text(path) != text:
                return None
        except SourceError:
            return None
        data = self._stored(path)
        if data is None or data.get("ctx_in") or data.get("ctx_out"):
            return None
        return data

    def not_analysed(self) -> dict:
        """The raw result of a file the plan leaves out (under this run's rule selection)."""
        return dict(NOT_ANALYSED, enabled=sorted(self.enabled))

    # -- many files ------------------------------------------------------------------------
    @property
    def warm(self) -> Store:
        """The store of the warm record (:mod:`.warm`): memory only without a cache folder."""
        if self._warm is None:
            from . import warm

            self._warm = warm.store_for(self.root if self.store.folder else None, self.key)
        return self._warm

    def warm_answer(self, files: list) -> Optional[dict]:
        """The raw results of ``files`` from the warm record when nothing it consulted
        changed (:func:`.warm.answer`), else None; never with a text given instead of a
        file's."""
        if self.store.folder is None or (self._plan is not None and self._plan.texts) or not files:
            return None
        from . import warm

        return warm.answer(self.warm, files, self.enabled)

    def _record_warm(self, files: list, out: dict) -> None:
        """Keep the warm record of a :meth:`lint` whose every result came from the store
        with the stored calling contexts (so the checks read only stamps, hashes and
        absences through the reader: :func:`.warm.record`); saved with the store."""
        if self.store.folder is None or self.plan.texts or self._ctx_epoch is None or not files:
            return
        import time

        from . import warm

        warm.record(self.warm, self.reader, files, self.plan.enabled, out, time.time_ns())

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
        from .pool import analyse_files, uses_workers

        direct = [p for p in todo if self.plan.direct(p)]
        chosen_set = set(direct)
        candidates = {p: ts for p in todo if p not in chosen_set for ts in [self.plan.exporter_targets(p)] if ts}
        # A candidate is analysed when it takes a function or class that uses a consumer.
        chosen = [p for p, ts in candidates.items() if self.calls_exporter(p, ts)]
        planned = direct + chosen
        # A reported file with exporting functions and reported importers: judged with their
        # calling contexts (its callers are analysed first: feed_contexts).
        planned += [p for p in todo if p not in chosen_set and p not in chosen and self.context_callers(p)]
        if self.project is not None and uses_workers(planned, jobs):
            # Modules other planned files import are analysed before the workers start.
            inner: dict = {}
            for p in planned:
                for t, k in self.plan.targets(p):
                    if self.plan.gate(t):
                        inner.setdefault(t, set()).add(k)
            for t in sorted(inner):
                self.project.analysis_of_path(t, want=_names(inner[t]))
        done_here = {p for p in planned if self.project is not None and p in self.project.by_path
                     and not _frozen(self.project.by_path[p])}
        here = [p for p in planned if p in done_here]
        out.update({p: self.analyse_and_store(p) for p in here})
        self.store_summaries()
        out.update(analyse_files(self, [p for p in planned if p not in done_here], jobs))
        for p in todo:
            if p not in out:
                err = self.reader.error(p)
                if err is not None:
                    out[p] = raw_to_json([], [], err, False, p, self.root)
                    continue
                out[p] = self.not_analysed()
                if self.reader.digest(p) is not None:
                    self.store_result(p, out[p], [t for t, _ in candidates.get(p, ())])
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
        if same:
            self.plan.texts.pop(path, None)
        else:
            self.plan.texts[path] = text
        data = self.cached(path) if same and not force else None
        if data is None:
            targets = self.plan.exporter_targets(path)
            if force or self.plan.direct(path) or (targets and self.calls_exporter(path, targets)) \
                    or self.context_callers(path):
                data = self.raw(path)
            else:
                data = self.not_analysed()
            if same:
                self.store_result(path, data, [t for t, _ in targets])
                self.store_summaries()
        return select(data, given, self.config, lambda: text)

    def save(self) -> None:
        """Write what this session stored (and the warm record, replacing the one before)."""
        self.store.save()
        if self._warm is not None:
            self._warm.save(merge=False)


def _frozen(ma) -> bool:
    from ..analysis.project import is_frozen

    return ma is None or is_frozen(ma)


def lint_lone(text: str, given: str, config, force: bool = False) -> FileResult:
    """Lint one text with no project (the API's :func:`~jaxinterop_lint.engine.lint_source`
    without ``project``): parsed only when the plan says it can make a finding."""
    from .plan import can_find, facts_of, words_for

    w = words_for(config)
    facts = facts_of(text, "", w)
    enabled = config.enabled()
    can = can_find(facts, enabled, w) or facts["sink"] and facts["origin"]
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
    files = [os.path.abspath(p) for p in discover(reported, extend_exclude=config.extend_exclude,
                                                  respect_gitignore=config.respect_gitignore)]
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
