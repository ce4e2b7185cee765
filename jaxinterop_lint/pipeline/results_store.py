"""Raw results and the store, the part of a :class:`~.session.Session` that records them.

The raw result of a file (:meth:`StoreMixin.raw`: its findings before the rule selection and
``noqa``, or the error that stopped its analysis) is stored with the hash of the bytes read
and of everything its analysis used (:meth:`StoreMixin.dependencies`); a decision that read
much of the project is stored with the plan's epoch instead (:data:`EPOCH`: the hashes of every
file whose facts the plan read).  The summaries of the modules analysed are stored for later
runs and workers (:meth:`StoreMixin.store_summaries`).  :meth:`StoreMixin.cached` reads a result
back while it holds; a run whose every result came from the store keeps the warm record
(:mod:`.warm`), which answers the next such run from stat stamps and hashes alone.
"""
from __future__ import annotations

import os
import time
from typing import Optional

from ..source import SourceError, internal_error, run_guarded
from .results import raw_to_json
from . import epoch as epochs
from .epoch import EPOCH
from .store import Store

MAX_PLAN_DEPS = 16
NOT_ANALYSED = {"findings": [], "handled": [], "error": None, "analysed": False}


class StoreMixin:
    """The results and store of a :class:`~.session.Session` (a mixin: it reads the session's
    ``plan``, ``project``, ``store``, ``reader``, ``enabled``, ``root``, ``key`` and the store
    attributes its ``__init__`` sets; :meth:`raw` judges through the session's ``_judged``)."""

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
        keeps the callers of those naming a consumer); both with the modules its imports
        passed through (re-exports, factories: :meth:`~.plan.Plan.read_for`)."""
        deps = set(extra)
        if planned is False:
            # What the decision read: the files it imports, and the import graph beyond
            # them only when it asked whether JAX code reaches the file.
            decided = self.plan.reach_decided(path)     # (first: what it reads counts below)
            deps |= self.plan.read_for(path)
            if decided:
                if self.plan.scanned_used:
                    return None         # it read the text of every module: the epoch's
                more = self.plan.consulted(path, MAX_PLAN_DEPS)
                if more is None:
                    return None
                deps |= more
        elif planned:
            deps |= self.plan.read_for(path)
        if self._project is not None:
            deps |= self.project.dependencies(path)
            for t in extra:
                deps |= self.project.dependencies(t)
        if self.plan.index is not None:
            # the __init__.py files that make the source roots of these files (s09)
            deps |= self.plan.index.root_makers([path, *deps])
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

    def _store_epoch(self, keep_holding: bool = False) -> None:
        """Store the results waiting for an epoch: the hashes of every file whose facts the
        plan read this run (and the files whose creation would change its imports), kept
        once under :data:`EPOCH`; each waiting result names that epoch.  A warm run checks
        the epoch once (the hashes are those it stats anyway) instead of re-planning.
        ``keep_holding`` (a file linted alone: flake8 in an editor) stores none when the
        stored epoch still holds: a run of the whole project made it, for the results of
        every file, and the decision about one file read less of the project."""
        waiting, self._waiting = self._waiting, None
        if not waiting or self.store.folder is None:
            return
        if keep_holding:
            old = self.store.get(os.path.join(self.store.folder, EPOCH))
            if old is not None and isinstance(old.get("hash"), str) and self._epoch_holds(old["hash"]):
                return
        read = [p for p, f in self.plan._facts.items() if f is not None and p not in self.plan.texts]
        absent, folders = self.plan.absent(read), None
        if self.plan.index is not None:
            read = sorted(set(read) | self.plan.index.root_makers(read))
        if self.plan.scanned_used:
            # decided from the text of every module (Plan.no_origin_anywhere): all of it
            if any(p in self.plan.texts for p in self.plan.scanned.files):
                return
            read = sorted(set(read) | set(self.plan.scanned.files))
            folders = self.plan.scanned.folders
        made = epochs.record(self.reader, read, absent, time.time_ns(), folders)
        if made is None:
            return
        epoch, field = made
        self.store.put(os.path.join(self.store.folder, EPOCH), epoch, None, plan=field)
        self._epochs[epoch] = True
        for path, raw, extra in waiting:
            digest = self.reader.digest(path)
            if digest is None:
                continue
            # the epoch holds every file (and absent file) the decision read: nothing more here
            self.store.put(path, digest, self.reader.stamp_to_store(path),
                           result={"data": raw, "deps": {}, "absent": [], "epoch": epoch})

    def _epoch_holds(self, epoch: str) -> bool:
        """Whether the stored epoch is ``epoch`` and still holds (:func:`.epoch.holds`)."""
        if epoch not in self._epochs:
            where = os.path.join(self.store.folder, EPOCH) if self.store.folder else None
            entry = self.store.get(where) if where is not None else None
            self._epochs[epoch] = entry is not None and entry.get("hash") == epoch \
                and epochs.holds(entry.get("plan"), self.reader)
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
        from . import warm

        warm.record(self.warm, self.reader, files, self.plan.enabled, out, time.time_ns())
