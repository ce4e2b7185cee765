"""Stage 3, plan (demand): which callers can pass a multi-device value to a module's names.

A reported file ``P`` with exporting functions is judged with the calling contexts its
reported callers give it (PLAN decision 1 across modules), so those callers are analysed
first (:meth:`~.run.Session.feed_contexts`).  A caller ``C`` can give ``P`` a context only
if it can pass a multi-device value to a name it takes from ``P``: :meth:`Demand.can_pass`
asks, from the text, whether a top-level unit of ``C`` that uses a name bound to ``P`` (or a
unit of ``C`` that uses such a unit: it may hand it its values) also uses a name that can
hand on a multi-device value (:meth:`~.plan.Plan.carrier_name`; a unit naming JAX words is
one, and so is a module-level statement of a file naming JAX words).  It is
:meth:`~.plan.Plan.sink_reached` with the names taken from ``P`` as the consumer words.
Only names of ``P`` that may export count (:meth:`Demand.may_export`: a function that uses a
consumer or a name from a module naming one, or that uses such a function; the module taken
whole and names ``P`` does not define always count).  String literals are no uses
(``__all__`` of a re-exporting package).  So a test module that calls ``P`` with NumPy or
PyTorch data in every unit that uses ``P`` is not analysed for ``P``'s sake, and the analysis
agrees: a caller gives a context only when the pipeline links it
(:meth:`~.run.Session.imports_from`, the same question).  A candidate of the plan (a file
taking names from modules naming a consumer) is analysed only when it can pass such a value
and the target's summary has an exporting function one of those names can hand over
(:meth:`Demand.hands_out`).

The context decisions of a run are stored once (:func:`store_contexts`) with the hashes of
everything the plan read; a warm run where none changed takes them (:func:`stored_contexts`).
"""
from __future__ import annotations

import os
import re
from typing import Optional

from .scan import plain_lines
from .toplevel import IDENT, strip_prose, units_of, with_users
from .store import Store, key_of

CONTEXTS = "contexts-epoch"   # the store entry (a name in the cache folder) of the stored contexts


# A one-line string literal that is no f-string (its words are no names the unit uses:
# ``__all__ = ["ParallelEnv", ...]`` uses nothing).
_STRING = re.compile(r"""(?<![\w'"])([A-Za-z]{0,2})("[^"\n\\]*(?:\\.[^"\n\\]*)*"|'[^'\n\\]*(?:\\.[^'\n\\]*)*')""")


def _no_strings(text: str) -> str:
    return _STRING.sub(lambda m: m.group(0) if "f" in m.group(1).lower() else m.group(1) + '""', text)


class Demand:
    """The callers' side of the calling-context plan over one :class:`~.plan.Plan`.

    ``plan`` gives facts, the import graph (``targets``, its bound names) and
    ``carrier_name``; answers are kept for the run (the plan's facts do not change in one)."""

    def __init__(self, plan):
        self.plan = plan
        self._units: dict = {}      # path -> [(names it defines, identifiers used)]
        self._passes: dict = {}     # (caller, callee, names) -> bool
        self._exporting: dict = {}  # path -> may_export(path)
        self._relays: dict = {}     # path -> relays(path)

    def units(self, path: str) -> list:
        """``[(names, identifiers)]`` for every top-level unit of ``path`` (statements that
        define no name included: module-level calls), prose left out; [] if unreadable."""
        if path in self._units:
            return self._units[path]
        out: list = []
        try:
            given = self.plan.texts.get(path)
            text = plain_lines(given if given is not None else self.plan.reader.text(path))
        except Exception:
            text = None
        if text is not None:
            for names, body in units_of(text):
                out.append((tuple(names or ()), frozenset(IDENT.findall(_no_strings(strip_prose(body))))))
        self._units[path] = out
        return out

    def may_export(self, path: str) -> frozenset:
        """Top-level names of ``path`` (functions, classes, module-level names) that may
        export a parameter or hand out something that does: those whose text uses a
        consumer (:meth:`~.plan.Plan.consumer_defs`) or a name taken from a module naming
        one, and those that use such a name (transitively, in the file).  A superset of the
        top-level names of the functions and methods the analysis finds exporting."""
        known = self._exporting.get(path)
        if known is None:
            known = self._exporting[path] = self.handing_out(path, self.plan.consumer_defs(path))
        return known

    def relays(self, path: str) -> bool:
        """Whether module ``path`` can hold an exporting function by its text: it names a
        consumer, or it takes a name from a module that does (``relay(x)`` in a module that
        names neither JAX nor a consumer calls ``convert(x)`` of one that does).  One step
        of the import graph only (a chain of such modules is not followed: on keras, whose
        modules all take names from a backend package that re-exports PyTorch code, it
        would judge every module with its callers)."""
        known = self._relays.get(path)
        if known is None:
            f = self.plan.facts(path)
            known = self._relays[path] = bool(f and (f["sink"] or self.consumer_targets(path)))
        return known

    def consumer_targets(self, path: str) -> dict:
        """``{module file: names taken}`` of the modules naming a consumer that ``path``
        takes names from (None among the names: the module itself), read from the import
        graph."""
        out: dict = {}
        for t, k in self.plan.targets(path):
            if t != path and (self.plan.facts(t) or {}).get("sink"):
                out.setdefault(t, set()).add(k)
        return out

    def handing_out(self, path: str, exporting, relayed: bool = True) -> frozenset:
        """The top-level names of ``path`` that are in ``exporting`` (names of its units
        holding an exporting function or method), or that use a name taken from a module
        naming a consumer (they may hand out one of its exporting functions or objects;
        not with ``relayed`` false: only the file's own exporting functions count then),
        or that use such a name of the file (transitively)."""
        plan = self.plan
        units = plan.units(path)
        out = set(exporting)
        if relayed:
            bound = plan._bound.get(path, {})
            sinky = {n for n, ts in bound.items() if any(t != path and (plan.facts(t) or {}).get("sink") for t, _ in ts)}
            out |= {n for n, (_, used) in units.items() if used & sinky}
        return with_users(units, out)

    def hands_out(self, path: str, names, exporting, relayed: bool = True) -> bool:
        """Whether one of ``names`` (taken from ``path``: None the module, ``*`` all) can
        hand over an exporting function, given ``exporting``, the top-level names of
        ``path`` holding one (from its analysis): a name of :meth:`handing_out` (the module
        or ``*`` when there is one), or a name ``path`` does not define (a re-export).
        ``relayed`` false: only ``path``'s own exporting functions count (the names that
        hold one, or use one of the file, transitively), neither a re-export nor a name
        taken from another module naming a consumer."""
        units = self.plan.units(path)
        out = self.handing_out(path, exporting, relayed)
        for k in names:
            if k is None or k == "*":
                if out:
                    return True
            elif k in out or (relayed and k not in units):
                return True
        return False

    def gives(self, caller: str, callee: str) -> bool:
        """Whether the reported-or-not project file ``caller`` can give ``callee`` calling
        contexts: it takes from ``callee`` the module itself, or a name that may export
        (:meth:`may_export`; a name ``callee`` does not define counts), and :meth:`can_pass`
        holds for the names it binds to those."""
        names = self.plan.importers.get(callee, {}).get(caller)
        if not names:
            return False
        units = self.plan.units(callee)
        exporting = self.may_export(callee)
        counting = frozenset(k for k in names if k is None or k == "*" or k not in units or k in exporting)
        return bool(counting) and self.can_pass(caller, callee, counting)

    def can_pass(self, caller: str, callee: str, names=None) -> bool:
        """Whether the project file ``caller`` can pass a multi-device value to a name it
        takes from ``callee`` (only those of ``names``, a frozenset of names in ``callee``,
        None for the module itself, when given), or get one from it and hand it back: see
        the module docstring.  Conservative: a caller that cannot be read unit by unit can
        (when JAX code reaches it)."""
        key = (caller, callee, names)
        known = self._passes.get(key)
        if known is None:
            known = self._passes[key] = self._can_pass(caller, callee, names)
        return known

    def _can_pass(self, caller: str, callee: str, names) -> bool:
        plan = self.plan
        f = plan.full_facts(caller)
        if f is None:
            return False
        plan.targets(caller)
        plan.reach_asked.add(caller)    # the answer follows the import graph (a result's dependencies)
        bound = plan._bound.get(caller, {})
        plan.handed_targets(caller)     # names bound to what a module's factory hands on (:mod:`.handon`)
        taken = {n for table in (bound, plan.handed_bound.get(caller, {})) for n, ts in table.items()
                 if any(t == callee and (names is None or k in names) for t, k in ts)}
        if not taken:
            return False
        units = self.units(caller)
        if not units:
            return plan.reach(caller)
        star = "*" in taken
        # ``package.name`` (imported.ImportedNames._package_reads): a unit using ``package`` may read it
        dotted = {n: n.partition(".")[0] for n in bound if "." in n}
        taken = {dotted.get(n, n) for n in taken}
        reached = [i for i, (_, ids) in enumerate(units) if star or ids & taken]
        seen = {n for i in reached for n in units[i][0]}
        # The units of the file that use a reached unit (they may hand it their values): a
        # module-level statement too (``Sub().export(x)``, ``Sub`` a class of the file whose
        # base is taken from ``callee``: hunt51b v5), though nothing uses what it binds.
        grew = True
        while grew:
            grew = False
            for i, (defined, ids) in enumerate(units):
                if i not in reached and ids & seen:
                    reached.append(i)
                    if not set(defined) <= seen:    # (a statement binding nothing adds no use)
                        seen |= set(defined)
                        grew = True
        local = {n for defined, _ in units for n in defined}
        for i in reached:
            defined, ids = units[i]
            if plan.counts(f["origin"]) and not defined:
                return True     # a module-level statement of a file naming JAX words
            for n in sorted(ids & local):
                if plan.carrier_name(caller, n):
                    return True
            for n in sorted(ids & set(bound)):
                if n not in local and any(t != caller and plan.carrier_name(t, k) for t, k in bound[n]):
                    return True
            for n, head in sorted(dotted.items()):
                if head in ids and head not in local and any(t != caller and plan.carrier_name(t, k) for t, k in bound[n]):
                    return True
        return "*" in bound and any(t != caller and plan.carrier_name(t, k) for t, k in bound["*"])


# -- the contexts of one run, stored (a warm run checks them without the import graph) ------
def stored_contexts(store, reader, files: list) -> Optional[dict]:
    """``{file: ctx_in}`` (files judged with callers only) stored by the last run over the
    reported ``files`` (absolute paths) when nothing that run's plan read has changed since:
    the files whose facts it read and every reported file (``reader.digest``), and no file
    whose creation would change their imports exists (``reader.exists``).  Then every context
    decision would be made again the same, so a cached result's ``ctx_in`` holds when it is
    the stored one.  None when there is none, it no longer holds, or it is malformed."""
    if store.folder is None:
        return None
    data = Store.field(store.get(os.path.join(store.folder, CONTEXTS)), "plan", key_of(sorted(files)),
                       reader.digest, reader.exists)
    ctx = data.get("ctx") if isinstance(data, dict) else None
    if isinstance(ctx, dict) and all(isinstance(k, str) and isinstance(v, list) and all(
            isinstance(c, str) for c in v) for k, v in ctx.items()):
        return ctx
    return None


def store_contexts(store, reader, plan, files: list, out: dict) -> None:
    """Store the context decisions of a run over the reported ``files``: ``out`` holds their
    raw results (``ctx_in``: the callers each was judged with), ``plan`` the facts read to
    decide them (every reported file's, and those the decisions followed).  Nothing when a
    file read has no hash now (it changed while read)."""
    read = set(files) | {p for p in plan._facts if p not in plan.texts}
    deps = {p: reader.digest(p) for p in sorted(read)}
    if any(deps[p] is None for p in read if plan._facts.get(p) is not None):
        return
    ctx = {p: list(out[p]["ctx_in"]) for p in files if p in out and out[p].get("ctx_in")}
    store.put(os.path.join(store.folder, CONTEXTS), key_of(sorted(files)), None,
              plan={"data": {"ctx": ctx}, "deps": deps,
                    "absent": plan.absent(sorted(p for p in read if plan._facts.get(p) is not None))})
