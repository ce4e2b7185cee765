"""Stage 3, plan: which files are parsed, computed from cheap facts of their text.

A file's *facts* (:func:`~.facts.facts_of`) are read from its text by the scanners of
:mod:`.scan`, never parsed: its imports (absolute module names and the names taken), whether it names a
consumer (:data:`~.words.DEFAULT`), JAX words (where multi-device values start), words that
alone make a finding (removed APIs, FFI callbacks), array annotations (opt-in JXI009).  They
are stored with the file's hash, so a warm run plans without reading.

From the facts and the import graph (project imports resolved to files, re-exports of
packages followed) the plan decides, to a fixpoint over the graph:

- ``carrier(M)``: M can make or hand on a multi-device value: it names JAX words, or takes
  a name from a carrier (a package taken whole counts only for what its ``__init__`` itself
  names: see :meth:`Plan.carrier_name`), at the level of names: a function or class
  carries when it names JAX words or uses a name taken from a carrier.
- ``reach(F)``: JAX code reaches F: F names JAX words or takes a name from a carrier.
- ``direct(F)``: F can make a finding by itself: a word that alone makes one (of an enabled
  rule), or a consumer that JAX code reaches, or (JXI009 on) a consumer beside an array
  annotation.
- ``candidates``: F that JAX code reaches and that takes names from modules naming a
  consumer; the summaries of those modules (analysed first) refine them: F is analysed when
  one of its names exports a parameter (:meth:`Plan.calls_exporter`).
- ``gate(M)``: whether the analysis may parse a module it reaches through an import to get
  its summary: carriers, modules naming a consumer, and packages' ``__init__`` (re-exports);
  a function or class of M that uses a consumer and carries nothing is ``deferred``: opened
  only when a call hands it a value that may be multi-device.

So a file of PyTorch or CuPy code that no JAX code reaches is never parsed.  The plan also
keeps the reverse import graph (:attr:`Plan.importers`: file -> files that take names from
it, and which) and the set of reported files (:attr:`Plan.reported`).
"""
from __future__ import annotations

import os
import re
from itertools import chain
from operator import itemgetter
from typing import Optional

from ..relative import resolve_relative  # noqa: F401  (re-exported)
from .carriers import Carriers
from .handon import HandOn
from .imported import ImportedNames
from .facts import FACTS_VERSION, ORIGIN_STRONG, Words, can_find, facts_of, more_facts, words_for  # noqa: F401
from .modules import ModuleIndex
from .read import Reader
from .toplevel import units_of, with_users
from .scan import (Aliases, consumer, consumer_in, has_word, import_roots, imports_of, non_literal_use,  # noqa: F401
                   plain_lines, taken_names, uses_any, uses_in_role)

# Names the tests and older callers use.
_non_literal_use = non_literal_use
# A file naming JAX words that is longer than this (generated code) is planned whole, without
# the unit-level answer of Plan.sink_reached (its units would cost memory of their own).
_UNITS_MAX = 1 << 20
_first = itemgetter(0)
# A coding cookie is on one of the first two lines (PEP 263); a file whose first bytes say
# "coding" is decoded before its text is searched.
_COOKIE_BYTES = 1024
_TOP_DEF = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)


class Plan(Carriers, HandOn, ImportedNames):
    """The plan of one run over one project (or over lone files: ``index`` None).

    ``reader`` reads and hashes; ``store`` (or None) keeps facts by hash; ``enabled`` is the
    set of rule codes the run reports; ``reported`` the absolute paths of the files reported
    (the files under the linted paths)."""

    def __init__(self, reader: Reader, index: Optional[ModuleIndex], config, store=None,
                 enabled=frozenset(), reported=frozenset()):
        self.reader = reader
        self.index = index
        self.store = store
        self._config = config
        self._words: Optional[Words] = None
        self.enabled = frozenset(enabled)
        self.reported = set(reported)
        self.reported_under: list = []   # folders whose files are all reported (flake8's paths)
        self.discovered: Optional[dict] = None   # the files discovery finds under them (keys), once known
        self.importers: dict = {}       # file -> {importer: names taken (None: the module)}
        self._facts: dict = {}
        self._targets: dict = {}
        self._hand_on_init()
        self._carrier: dict = {}
        self._bound: dict = {}          # path -> {bound name: [(file, name or None)]}
        self._units: dict = {}
        self._carrier_name: dict = {}
        self._origin_reachable: dict = {}
        self._placing: dict = {}        # path -> names that build a mesh or device list (builds_placement)
        self.reach_asked: set = set()   # files whose decision followed the import graph
        self.unreached: set = set()     # files left without handed targets: JAX code reaches none
        self._too_many: set = set()
        self._absent_last: tuple = (None, [])   # (paths, absent(paths)) of the last question
        self._weak: Optional[bool] = None   # weak_counts, decided on first use
        self._reach: dict = {}          # path -> whether a name it takes carries (reach)
        self.texts: dict = {}           # path -> text given by the caller (flake8, stdin)
        self.scan_project = False       # may answer origin_reachable from every file's text (one file linted)
        self.scanned = None             # what that scan read (:class:`~.universe.Scanned`), once made
        self._no_origin: Optional[bool] = None
        self._scan_roots: tuple = ()

    @property
    def words(self) -> Words:
        """The word lists of the configuration (:func:`words_for`), built on first use: a
        run whose results are all cached reads no text."""
        if self._words is None:
            self._words = words_for(self._config)
        return self._words

    # -- origin levels ---------------------------------------------------------------------
    def no_origin_anywhere(self) -> bool:
        """Whether no module of the project can have a unit naming JAX words, decided from
        the text of every module under the root (:func:`~.universe.scan`) when
        :attr:`scan_project` allows it (a front end linting one file: the import graph from
        that file would otherwise be searched module by module): only the files that name a
        JAX root, or the root of a configured source, are asked
        (:meth:`~.carriers.Carriers._has_origin_unit`).  Then no search for such a module can
        succeed.  A decision that used the answer read every file and folder of the scan
        (:attr:`scanned`: the plan's epoch keeps them).  False when not allowed or not known."""
        if self._no_origin is not None and self.index is not None and self._scan_roots != tuple(self.index.roots):
            self.forget_scan()      # a source root added since (another file's package)
        if self._no_origin is None:
            self._no_origin = False
            if self.scan_project and self.index is not None:
                self._scan_roots = tuple(self.index.roots)
                from .universe import scan

                roots = set(self.words.jax_roots) | {r for r in self.words.origins if r}
                if any(self.index.is_project(r) for r in roots):
                    # a configured source defined in the project: a module can take it by
                    # a relative import, whose text never spells the root
                    return self._no_origin
                own = {*self.texts, *self.reported}
                # (a unit with a placement word stops it too: whether those count is a
                # question about every module, which the search it replaces never asks)
                got = scan(self.index.root, self.index.roots, roots, self._scanned_text,
                           lambda p: self._has_origin_unit(p, any_level=True), own)
                if got is not None:
                    self.scanned = got
                    self._no_origin = not got.origin
        return self._no_origin

    def _scanned_text(self, path: str) -> bytes:
        """The text of ``path`` for :func:`~.universe.scan`, as bytes: the one given, else
        the file's (:meth:`~.read.Reader.scanned`: hashed, its stat stamp taken before it
        is read, so that the plan's epoch keeps the stamp beside the hash; undecoded)."""
        if path in self.texts:
            return self.texts[path].encode("utf-8", "surrogatepass")
        if not self.reader.has_text(path):
            data = self.reader.scanned(path)
            if data is None:
                raise OSError(path)
            if b"coding" not in data[:_COOKIE_BYTES]:
                return data
            # a PEP 263 cookie: the bytes may spell the text in another encoding (utf-7)
        return self.reader.text(path).encode("utf-8", "surrogatepass")

    @property
    def scanned_used(self) -> bool:
        """Whether :meth:`no_origin_anywhere` answered True (decisions then read every module)."""
        return bool(self._no_origin)

    def forget_scan(self) -> None:
        """Drop :meth:`no_origin_anywhere`'s answer and what was decided from it (a text
        given for a file, or a source root added, since the scan)."""
        if self._no_origin:
            self._origin_reachable.clear()
            self._carrier_name.clear()
            self._reach.clear()
        self._no_origin = self.scanned = None

    def counts(self, level) -> bool:
        """Whether a unit or file of origin ``level`` (:data:`~.facts.ORIGIN_STRONG`) can make
        a multi-device value: a word that makes one by itself always, a placement word only
        where :meth:`weak_counts`."""
        return level == ORIGIN_STRONG or bool(level) and self.weak_counts()

    def weak_counts(self) -> bool:
        """Whether placement words (``jax.device_put(x, s)``, ``device=s``: the tables of
        ``apis.WEAK_ORIGIN_TABLES``) can make a multi-device value in this run: a file of the
        project names a word that makes a sharding or a multi-device value by itself (its
        ``origin`` fact is :data:`~.facts.ORIGIN_STRONG`), or JXI009 is on (an annotated
        parameter's ``.sharding``).  Otherwise no sharding exists for a placement to put a
        value on (analysis/calls.py ``placed``: an unknown placement is no source), and the
        PyTorch code such a project hands its arrays to is never parsed (issue 16: torchrl
        names ``jax.device_put(arr, self._jax_device)`` and no sharding anywhere).  Decided
        once per plan: the files whose facts are known first, then the reported files, then
        the project's files (:func:`~.discover.discover` of its root, the default excludes),
        stopping at the first such file.  Every file read is one the plan read, so a result
        that holds while those are unchanged (:meth:`consulted`, the plan's epoch) was decided
        with the same answer, and a file that starts naming such a word is read again."""
        if self._weak is None:
            self._weak = "JXI009" in self.enabled or self._names_strong()
        return self._weak

    def _names_strong(self) -> bool:
        seen: set = set()

        def strong(path: str) -> bool:
            if path in seen:
                return False
            seen.add(path)
            f = self.full_facts(path)
            return bool(f) and f.get("origin") == ORIGIN_STRONG

        if any(strong(p) for p in list(self._facts)) or any(strong(p) for p in sorted(self.reported)):
            return True
        if self.index is None:
            return False
        from .discover import discover

        return any(strong(os.path.abspath(p)) for p in discover([self.index.root]) if p.endswith(".py"))

    def is_reported(self, path: str) -> bool:
        """Whether the file ``path`` (absolute) is among the reported files: named, or below
        a reported folder and (once known: :attr:`discovered`) found there by discovery."""
        if path in self.reported:
            return True
        for r in self.reported_under:
            if path == r:
                return True
            if path.startswith(r + os.sep):
                return self.discovered is None or path in self.discovered
        return False

    # -- facts ---------------------------------------------------------------------------
    def facts(self, path: str) -> Optional[dict]:
        """The facts of ``path`` (absolute), None when it cannot be read."""
        if path in self._facts:
            return self._facts[path]
        given = self.texts.get(path)
        if given is None and self.reader.digest(path) is None:
            self._facts[path] = None
            return None
        f = self._stored_facts(path) if given is None else None
        if f is None:
            f = self.computed_facts(path)
            if f is not None:
                self._store_facts(path, f)
        self._facts[path] = f
        return f

    def _stored_facts(self, path: str) -> Optional[dict]:
        """The facts the store keeps for ``path`` as it is now (its hash), or None."""
        entry = self.store.get(path) if self.store is not None else None
        if entry is None or entry.get("hash") != self.reader.digest(path):
            return None
        f = entry.get("facts")
        return f if isinstance(f, dict) and f.get("v") == FACTS_VERSION else None

    def computed_facts(self, path: str) -> Optional[dict]:
        """:func:`~.facts.facts_of` of the text of ``path`` (given by the caller, else the
        file's), neither memoised nor stored; None when it cannot be read."""
        text = self.texts.get(path)
        if text is None:
            try:
                text = self.reader.text(path)
            except Exception:
                return None
        package = self.index.package_of(path) if self.index is not None else ""
        return facts_of(text, package, self.words, lazy=True)

    def _store_facts(self, path: str, f: dict) -> None:
        if self.store is not None and path not in self.texts:
            digest = self.reader.digest(path)
            if digest is not None:
                self.store.put(path, digest, self.reader.stamp_to_store(path), facts=f)

    def facts_to_compute(self, paths) -> list:
        """The files of ``paths`` whose facts :meth:`facts` would compute from a text this
        run has read already (none known, none stored for that text): what a pool can
        compute elsewhere (:func:`~.pool.plan_facts`) and hand back (:meth:`take_facts`)."""
        return [p for p in paths if p not in self._facts and p not in self.texts
                and self.reader.has_text(p) and self._stored_facts(p) is None]

    def take_facts(self, path: str, f: Optional[dict]) -> None:
        """Record ``f``, the :meth:`computed_facts` of ``path`` made elsewhere (a worker
        process of :func:`~.pool.plan_facts`), as :meth:`facts` would have: memoised, and
        stored with the file's hash.  Facts known already are kept."""
        if path in self._facts:
            return
        if f is not None:
            self._store_facts(path, f)
        self._facts[path] = f

    def full_facts(self, path: str) -> Optional[dict]:
        """:meth:`facts` with the JAX words and annotations (read from the text once)."""
        f = self.facts(path)
        if f is not None and "origin" not in f:
            try:
                text = self.texts.get(path)
                more_facts(f, text if text is not None else self.reader.text(path), self.words)
            except Exception:
                f["origin"] = f["annot"] = False
        return f

    # -- the import graph ----------------------------------------------------------------
    def targets(self, path: str) -> list:
        """``[(file, names)]``: the project files ``path`` takes names from (``names`` None:
        the module itself), re-exports of packages followed.  Fills :attr:`importers`."""
        if path in self._targets:
            return self._targets[path]
        self._targets[path] = out = []
        self._bound[path] = bound = {}
        f = self.facts(path)
        if f is None or self.index is None:
            return out
        idx = self.index
        for module, names in f["imports"]:
            if not idx.is_project(module):
                continue
            if names is None:
                target = idx.find_module(module, path)
                if target is not None:
                    out.append((target, None))
                    bound.setdefault(module.split(".")[0], []).append((target, None))
                    if os.path.basename(target) == "__init__.py":
                        # ``import pkg`` and ``import pkg as p``: names read as ``pkg.name``
                        # (``import pkg.sub``: ``pkg.sub.name``)
                        aliases = self._module_aliases(path, module) if "." not in module else []
                        for head in [module] + aliases:
                            if head != module:
                                bound.setdefault(head, []).append((target, None))
                            self._add_package_reads(path, head, target, out, bound)
                continue
            for name, alias in names:
                sub = idx.find_module(f"{module}.{name}", path) if name != "*" else None
                if sub is not None:
                    out.append((sub, None))
                    bound.setdefault(alias or name, []).append((sub, None))
                    if os.path.basename(sub) == "__init__.py":   # ``from pkg import sub``: ``sub.f``
                        self._add_package_reads(path, alias or name, sub, out, bound)
                    continue
                owner = idx.find_module(module, path)
                if owner is not None:
                    out.append(self.origin(owner, name, path) if name != "*" else (owner, name))
                    bound.setdefault(alias or name if name != "*" else "*", []).append(out[-1])
                    if name == "*" and os.path.basename(path) != "__init__.py":
                        # and what the module re-exports (a package's ``__init__``); a
                        # package's own star imports are followed by name (origin) instead
                        for taken, found in self._star_reexports(owner, path):
                            out.append(found)
                            bound.setdefault(taken, []).append(found)
        # pytest gives a test module the fixtures of the conftest.py files above it by name,
        # as a star import would (analysis/fixtures.py calls its tests with them)
        for conftest in idx.conftests(path):
            if conftest != path:
                out.append((conftest, "*"))
                bound.setdefault("*", []).append(out[-1])
        for target, name in out:
            if target != path:
                self.importers.setdefault(target, {}).setdefault(path, set()).add(name)
        return out

    def reach(self, path: str, decides: bool = True) -> bool:
        """Whether JAX code reaches ``path``: it names JAX words or takes a name from a
        carrier.  ``decides``: the answer decides the result of ``path`` (the import graph
        behind it becomes a dependency of that result: :attr:`reach_asked`)."""
        f = self.full_facts(path)
        if f is None:
            return False
        if self.counts(f["origin"]):
            return True
        if decides:
            self.reach_asked.add(path)
        known = self._reach.get(path)
        if known is None:   # asked again and again by the demand's questions (transformers: 20,000 times)
            self.targets(path)
            known = self._reach[path] = any(t != path and self.carrier_name(t, n)
                                            for ts in self._bound.get(path, {}).values() for t, n in ts)
        return known

    def direct(self, path: str) -> bool:
        """Whether ``path`` can make a finding by itself (see the module docstring)."""
        f = self.facts(path)
        if f is None:
            return False
        if f["sink"] and "JXI009" in self.enabled:
            f = self.full_facts(path)
        if can_find(f, self.enabled, self.words):
            return True
        # a consumer, or a removed API / FFI callback word of an enabled rule, that JAX code
        # reaches through an import (``arr.device_buffer`` on what a JAX helper returned)
        if set(f.get("alone_reached", ())) & set(self.enabled) and self.reach(path):
            return True
        return bool(f["sink"]) and self.sink_reached(path)

    def sink_reached(self, path: str) -> bool:
        """Whether JAX code reaches a consumer of ``path``: the file names JAX words, or
        one of its top-level units that use a consumer, or that use such a unit (its
        callers in the file, transitively), uses a name that can hand on a multi-device
        value (:meth:`carrier_name`).  A test module that imports a JAX-backed library for
        one test and feeds NumPy data to ``torch.as_tensor`` in another is not reached."""
        f = self.full_facts(path)
        if f is None:
            return False
        if self.index is None:
            return self.reach(path)
        own = self.counts(f["origin"])
        self.reach_asked.add(path)
        self.targets(path)
        if not own and not self.origin_reachable(path):
            return False        # no name of it or of its imports can carry (carrier_name)
        bound = self._bound.get(path, {})
        used = f.get("sink_uses")
        if not isinstance(used, list) or len(used) < 3:   # not stored with the facts: read the text once
            try:
                text = self.texts.get(path)
                text = text if text is not None else self.reader.text(path)
                if own and len(text) > _UNITS_MAX:
                    return True     # its analysis decides (it may be too large to analyse)
                used = self._sink_uses(path, f, plain_lines(text), bound)
            except Exception:
                return self.reach(path)
            f["sink_uses"] = used
        local, names, own_units = used
        # JAX words of the file count where a unit using a consumer (or calling one that
        # does) names them itself: a test module whose JAX test and PyTorch test share it
        # is not reached through the PyTorch one
        if own and any(self.counts(level) for level in own_units):
            return True
        for n in names:
            if n in local:
                if self.carrier_name(path, n):
                    return True
            elif any(self.carrier_name(t, k) for t, k in self.bound_to(path, n, bound)):
                return True
        return "*" in bound and any(t != path and self.carrier_name(t, k) for t, k in bound["*"])

    def exporter_targets(self, path: str) -> list:
        """``[(file, names)]`` of the targets of ``path`` that name a consumer (they may
        export a parameter), those handed on to it included
        (:meth:`~.handon.HandOn.handed_targets`), when JAX code reaches ``path``; else []."""
        out = [(t, n) for t, n in self.targets(path) if (self.facts(t) or {}).get("sink")]
        if self.may_be_reached(path):
            # and what a factory or wrapper of a module naming none hands on (:mod:`.handon`)
            out += [pair for pair in self.handed_targets(path) if pair not in out]
        elif not out and self.facts(path) is not None:
            # what is handed on was not asked: :meth:`reach_decided` asks it when the result
            # is stored (a run without a cache never needs the answer)
            self.unreached.add(path)
        return out if out and self.reach(path) else []

    def reach_decided(self, path: str) -> bool:
        """Whether the decision about ``path`` followed the import graph behind it (an edit
        there that brings JAX code may change it): :meth:`reach` was asked for it, or
        :meth:`exporter_targets` left out what factories hand on to it only because no JAX
        code reaches it (the attack of stop 47, s25: ``converter().to_torch(f0(x))``)."""
        if path in self.reach_asked:
            return True
        if path in self.unreached and self.handed_targets(path):
            self.reach_asked.add(path)
            return True
        return False

    def may_be_reached(self, path: str) -> bool:
        """Whether JAX code may reach ``path``, asked cheaply: a file importing a JAX root
        (whose JAX words, the lazy part of its facts, would cost a scan of its text to
        read) is taken as reached; any other file is asked :meth:`reach` (its facts name
        no JAX root: no scan)."""
        f = self.facts(path)
        if f is None:
            return False
        if any(m.split(".")[0] in self.words.jax_roots for m, _ in f["imports"]):
            return True
        return self.reach(path, decides=False)

    def gate(self, path: str, name: Optional[str] = None) -> bool:
        """Whether the analysis may parse module ``path`` for its summary, to get ``name``
        from it (None: the module itself): a package's ``__init__`` (re-exports), a name
        that can hand on a multi-device value, or a name it does not define at top level
        (an alias, a re-export) in a module naming a consumer, or re-exported from a module
        that the gate admits for it or defers it (:meth:`~.handon.HandOn.origin`), or a
        unit that hands on names of a module naming a consumer (a factory:
        :meth:`~.handon.HandOn.handed_on`), or one that builds a mesh or device list
        (:meth:`~.carriers.Carriers.builds_placement`).  A top-level function or
        class that uses a consumer and carries nothing is :meth:`deferred` instead."""
        f = self.facts(path)
        if f is None:
            return False
        if os.path.basename(path) == "__init__.py":
            return True
        if name is None:
            return bool(f["sink"] or self.carrier(path))
        if self.carrier_name(path, name):
            return True
        if name in self.units(path):
            # a factory or wrapper handing on a name that may export (:mod:`.handon`), or a
            # builder of a mesh or device list (its size decides a placement's)
            return bool(self.handed_on(path, name)[0]) or self.builds_placement(path, name)
        if f["sink"]:
            return True
        # a re-export (``from .impl import Converter`` in a module naming no consumer): as
        # the module that defines it would be, for that name
        origin, there = self.origin(path, name, path)
        return origin != path and (there is None or self.gate(origin, there) or self.deferred(origin, there))

    def deferred(self, path: str, name: str) -> bool:
        """Whether the analysis opens the top-level ``name`` of module ``path`` only on
        demand: a function or class whose text uses a consumer (:meth:`consumer_defs`: it
        may export a parameter) and that cannot hand on a multi-device value by itself (no
        carrier name, not a package's ``__init__``).  Only a value handed to it can reach
        its consumer, so it is opened when a call hands it one (a constructor's or a
        method's argument, a base class: :mod:`jaxinterop_lint.analysis.deferred`); torchrl's
        ``envs/libs/jax_utils.py`` builds ``Unbounded(shape=...)`` specs, and opening
        ``data/tensor_specs.py`` (269 KB) for them was a third of its run (issue 16)."""
        if os.path.basename(path) == "__init__.py" or not self.facts(path):
            return False
        return name in self.consumer_defs(path) and name in self.units(path) and not self.carrier_name(path, name)

    def consumer_defs(self, path: str) -> frozenset:
        """Names of the top-level functions and classes of ``path`` whose text uses a
        consumer, and of its module-level names bound by a statement using one (an alias or
        a ``functools.partial`` of a consumer), and the names of the module using those
        (:func:`~.toplevel.with_users`: ``def run(x, stages=STAGES)``): those that may export
        a parameter (read from the text, never parsed)."""
        f = self.facts(path)
        if not f or not f["sink"]:
            return frozenset()
        if "defs" not in f:
            try:
                text = self.texts.get(path)
                text = plain_lines(text if text is not None else self.reader.text(path))
            except Exception:
                return frozenset()
            roots = {m.split(".")[0] for m, _ in f["imports"]}
            taken = taken_names(f["imports"])
            aliases = Aliases(text)     # the file's imports (``import numpy as np``) name the roots

            def uses(part: str) -> bool:     # (the file's own text passed Prefilter.wants: f["sink"])
                return consumer_in(part, self.words.sinks, roots, taken, aliases)

            tops = [(m.start(), m.group(1)) for m in _TOP_DEF.finditer(text)]
            names = []
            for i, (start, name) in enumerate(tops):
                end = tops[i + 1][0] if i + 1 < len(tops) else len(text)
                if uses(text[start:end]):
                    names.append(name)
            # a module-level name bound to a consumer (``dl = functools.partial(torch.from_dlpack)``)
            names += [n for unit, body in units_of(text) if unit and not body.startswith(("def ", "class ", "async ", "@"))
                      and uses(body) for n in unit]
            # and the names of the module using one of them (``def run(x, stages=STAGES)``)
            f["defs"] = sorted(with_users(self.units(path), names))
        return frozenset(f["defs"])

    @staticmethod
    def calls_exporter(targets: list, exporting_of) -> bool:
        """Whether one of ``targets`` (from :meth:`exporter_targets`) hands over a function
        that exports a parameter: ``exporting_of(file)`` gives the short names of that
        file's exporting functions."""
        for target, name in targets:
            names = exporting_of(target)
            if names and (name is None or name == "*" or name in names):   # "*": from m import *
                return True
        return False

    # -- what a result depends on --------------------------------------------------------
    def consulted(self, path: str, limit: Optional[int] = None) -> Optional[set]:
        """The files whose facts the decision about ``path`` read (transitively); None when
        there are more than ``limit``."""
        seen, todo = set(), [path]
        too_many = self._too_many
        targets, passed = self._targets, self._passed
        while todo:
            p = todo.pop()
            if limit is not None and p != path and (p, limit) in too_many:
                return None     # what p consulted is already more than the limit
            for t in chain(map(_first, targets.get(p, ())), passed.get(p, ())):
                if t not in seen and t != path:
                    seen.add(t)
                    if limit is not None and (len(seen) > limit or (t, limit) in too_many):
                        too_many.add((path, limit))     # (stopping at the first file over it)
                        return None
                    todo.append(t)
        return seen

    def absent(self, paths) -> list:
        """Files whose creation would change what ``paths`` import (missing project or
        unknown modules, and names that could become submodules)."""
        if self.index is None:
            return []
        paths = frozenset(paths)
        if self._absent_last[0] == paths:     # the epoch and the stored contexts ask the same
            return list(self._absent_last[1])
        out, packages, asked = set(), {}, set()
        index, package = self.index, os.sep + "__init__.py"
        for path in paths:
            conftests = index.conftest_candidates(path)
            if conftests:   # a conftest.py created beside a test module or above it gives it fixtures
                out.update(set(conftests) - set(index.conftests(path)))
            first = index.first_root(path)
            # each module (or name of a package) once: the files of a project import the same
            # ones (transformers' epoch: 40,000 imports of 2,912 files, 9,000 of them apart)
            for module, names in (self.facts(path) or {}).get("imports", ()):
                is_package = packages.get((module, first))
                if is_package is None:
                    out.update(index.absent_candidates(module, path))
                    found = index.find_module(module, path)
                    is_package = packages[module, first] = found is not None and found.endswith(package)
                if names and is_package:
                    for name, _ in names:
                        key = (f"{module}.{name}", first)
                        if name != "*" and key not in asked:
                            asked.add(key)
                            out.update(index.absent_candidates(key[0], path))
        self._absent_last = (paths, sorted(out))
        return list(self._absent_last[1])
