"""Calling contexts across modules (PLAN.md decision 1), the part of a :class:`~.session.Session`
that decides them.

A reported file that calls an exporting function of another reported file it imports gives it
a calling context instead of a finding at the call.  Before a reported file with exporting
functions is judged, its reported importers that can pass it a multi-device value are analysed
(:meth:`ContextsMixin.feed_contexts`, from the plan's reverse import graph ``plan.importers``
and :class:`~.demand.Demand`), so its sink-line findings are complete whatever the order; such a
file is planned even when no JAX code reaches it.  The contexts every file was judged with
are stored once per run (:meth:`ContextsMixin.contexts_epoch`), so a warm run where nothing the
plan read changed checks them without the import graph.  A result records the callers whose
contexts it judged (``ctx_in``: they and what their analyses used are dependencies) and the
callee files whose reported state decided where its own exports are reported (``ctx_out``);
:meth:`~.session.Session.cached` judges the file again when either no longer holds.
"""
from __future__ import annotations

import os
from typing import Optional


def _names(taken) -> Optional[frozenset]:
    """The top-level names among ``taken`` (names taken from a module by imports), or None
    when the module itself or ``*`` is taken: every name may be asked for then."""
    return None if None in taken or "*" in taken else frozenset(taken)


class ContextsMixin:
    """The calling contexts of a :class:`~.session.Session` (a mixin: it reads the session's
    ``plan``, ``demand``, ``project``, ``index``, ``config``, ``store``, ``reader``, its
    reported paths and the context attributes its ``__init__`` sets)."""

    def know_importers(self, under: Optional[list] = None) -> None:
        """Fill the plan's reverse import graph (``plan.importers``) for the reported files,
        once: those of :meth:`lint`, or for a front end that sees one file at a time the
        files under its paths (flake8's: ``plan.reported_under``; ``under``: those files,
        absolute, when the caller discovered them already)."""
        if self._graph_known or self.index is None:
            return
        self._graph_known = True
        files = self._reported_files
        if files is None:
            files = self.discovered(under)
        for p in files:
            self.plan.targets(p)
            if self.plan.may_be_reached(p):     # a caller may give contexts only then
                self.plan.handed_targets(p)

    def discovered(self, under: Optional[list] = None) -> dict:
        """The files (absolute: the keys, in discovery's order) that discovery finds under
        the reported paths of a front end that sees one file at a time (flake8's paths:
        ``plan.reported_under``), as the command line would lint them: excludes and what
        ``.gitignore`` ignores left out (``under``: those files, when the caller discovered
        them already).  Found once; the plan then counts only these as reported below a
        folder (:meth:`~.plan.Plan.is_reported`), so a file that flake8 walks into but the
        command line skips gives no calling context to the files it imports, and gets none
        (the attack of stop 49)."""
        if self.plan.discovered is None:
            files = under
            if files is None:
                from .discover import discover

                cfg = self.config       # (as the command line discovers: engine.lint_paths)
                files = [os.path.abspath(p) for p in discover(
                    self.plan.reported_under, cfg.exclude, cfg.extend_exclude, cfg.respect_gitignore)]
            if self.index is not None:
                for p in files:
                    self.index.add_file(p)
            self.plan.discovered = dict.fromkeys(files)     # (in discovery's order)
        return self.plan.discovered

    def skips(self, path: str) -> bool:
        """Whether the file ``path`` (absolute), handed over by a front end that walked one
        of its folder paths, is one the command line would not lint there (an exclude, a
        ``.gitignore``): it is then reported on by neither.  A file named on its own is
        never skipped, as on the command line."""
        under = self._reported_under    # (not the plan's: a file named alone needs no plan)
        if not under or path in under or not any(path.startswith(r + os.sep) for r in under):
            return False
        return path not in self.discovered()

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
        if not takers or not self.relays_an_export(path):
            return []
        taken = self.plan.importers.get(path, {})
        if not self.exports_through(path, set().union(*(taken.get(a, {None}) for a in takers)), relayed=False):
            return []
        return takers

    def relays_an_export(self, path: str) -> bool:
        """For a file naming no consumer (a relay by :meth:`Demand.relays`: it takes names
        from modules that name one), whether one of the names it takes from such a module
        can hand over an exporting function (:meth:`exports_through`: the analysis of those
        modules, stopping at the first); True for a file naming a consumer.  Without one, no
        function of ``path`` can export in one step, and its own functions are never
        analysed for the question (issue 16: keras' ``models/model.py`` takes its
        ``Trainer`` base class from the PyTorch backend, and proving that none of its
        methods exports analysed ``Model`` and 69 modules).  The modules asked are
        dependencies of the result of ``path`` (:meth:`lint` stores it with them)."""
        f = self.plan.facts(path)
        if f is None or f["sink"]:
            return True
        by_target = self.demand.consumer_targets(path)
        self._relay_asked[path] = sorted(by_target)
        return any(self.exports_through(t, ks) for t, ks in sorted(by_target.items()))

    def exports_through(self, target: str, names, relayed: bool = True) -> bool:
        """Whether one of ``names`` (taken from the project file ``target``: None the
        module, ``*`` all) can hand over an exporting function (:meth:`Demand.hands_out`;
        ``relayed`` false: one of ``target``'s own), by the analysis of ``target``, stopping
        as soon as that is decided (``Project.exporting_tops``); True when it is not known
        (no project, or a cached summary: it keeps only short names).  Issue 16: an
        exporting function elsewhere in ``target`` does not count (keras'
        ``testing/test_case.py`` takes ``get_device`` from the PyTorch backend's
        ``core.py``, whose ``convert_to_tensor`` exports; proving that no method of
        ``TestCase`` exports analysed 46 modules)."""
        def enough(tops) -> bool:
            return tops is None or self.demand.hands_out(target, names, tops, relayed)

        project = self.project
        return enough(project.exporting_tops(target, _names(names), enough) if project is not None else None)

    def context_takers(self, path: str) -> list:
        """The part of :meth:`context_callers` read from the text (no analysis): the
        reported importers of ``path`` (a reported file naming a consumer, or taking names
        from one: :meth:`Demand.relays`) that JAX code
        reaches and that can pass a multi-device value to a name they take from it
        (:meth:`Demand.gives`), sorted."""
        self._ctx_decided.add(path)
        if self.index is None or not self.plan.is_reported(path) or not self.demand.relays(path):
            return []
        plan = self.plan
        if all(r == path for r in plan.reported) and all(r == path for r in plan.reported_under):
            return []       # the only file reported (the editor's flake8): no importer to read
        self.know_importers()
        return sorted(a for a in plan.importers.get(path, {})
                      if a != path and plan.is_reported(a) and plan.reach(a) and self.demand.gives(a, path))

    def feed_contexts(self, path: str) -> list:
        """Analyse the :meth:`context_callers` of ``path`` (a real analysis each, every
        function of it), so that the calling contexts they give ``path`` are known before it
        is judged; returns them."""
        callers = self.context_callers(path)
        for a in callers:
            self.project.analysis_of_path(a, fresh=True)
        return callers

    def contexts_given(self, path: str) -> bool:
        """Whether an analysed caller gave the file ``path`` a calling context: a
        multi-device value passed to one of its exports (``Project.add_context``).  A file
        planned only for such contexts (neither :meth:`Plan.direct` nor a candidate that
        hands a name over) has no finding without one."""
        table = self._project.contexts_into(path) if self._project is not None else None
        return table is not None and any(table.entries.values())

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
