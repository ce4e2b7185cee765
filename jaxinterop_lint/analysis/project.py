"""Whole-project analysis: follow multi-device values across the modules of one project.

A :class:`Project` analyses a module the first time another module uses one of its names,
so summaries are computed lazily, across ``import pkg.mod``, ``from pkg.mod import f as g``,
relative imports and ``__init__.py`` re-exports.  An import binds a lazy reference that is
resolved when it is used, so import cycles terminate: a module still being analysed answers
with what it has bound so far.  Where modules are comes from a
:class:`~jaxinterop_lint.pipeline.modules.ModuleIndex`; parsing, the cache and the plan are
the pipeline's, reached through the callbacks given to the constructor.

Installed third-party packages are never analysed: names of the libraries in the API tables
and of the standard library resolve through the tables only.
"""
from __future__ import annotations

import os
from typing import Callable, Optional

from .values import QNAME, Value


# the most names one resolution looks up (star imports of star imports ...): past it the
# name is unknown
_MAX_LOOKUPS = 64


def is_frozen(ma) -> bool:
    """Whether ``ma`` is a module summary loaded from the cache (it has globals but no
    syntax tree to walk), not a real analysis."""
    return ma is not None and not hasattr(ma, "walk_body")


class Project:
    """The modules of one project and their analyses.

    ``index`` finds modules (``module_name``, ``package_of``, ``find_module``,
    ``top_names``); ``engine_analyse(path, project, text, want) -> ModuleAnalysis | None``
    parses one file (``want``: the top-level names the caller needs, None: all of them) and
    makes its (not yet run) analysis; ``load_summary(path)`` gives a frozen
    module from the cache or None; ``gate(path)`` says whether a module reached through an
    import may be analysed (the plan's); ``reported(path)`` whether a file is among the
    reported files: a caller among them that passes a multi-device value to an exporting
    function of another reported file gives that file a calling context (:meth:`add_context`)
    instead of a finding at the call (PLAN decision 1, across modules), when ``linked(caller,
    callee)`` (the plan's: the caller is among the callee's importers, so the pipeline
    analyses it before it judges the callee).
    ``exporters(path, tops)`` (the plan's :class:`~jaxinterop_lint.pipeline.exporters.ConsumerDefs`)
    names the functions of ``path`` (under the top-level names ``tops``, None: all) whose
    own text uses a consumer (None: unknown): a
    question about a module's exporting functions analyses those first
    (:meth:`exports_known`).
    ``deferred(path, name)`` (the plan's :meth:`~jaxinterop_lint.pipeline.plan.Plan.deferred`)
    says whether the top-level ``name`` of module ``path`` is opened only on demand, when a
    value that may be multi-device is handed to it (:mod:`.deferred`).
    ``analysed_paths`` lists the module analyses run, for tests and benchmarks.
    """

    def __init__(self, index, engine_analyse, load_summary: Optional[Callable] = None,
                 gate: Optional[Callable] = None, reported: Optional[Callable] = None,
                 linked: Optional[Callable] = None, exporters: Optional[Callable] = None,
                 deferred: Optional[Callable] = None):
        self.index = index
        self.root = index.root
        self._analyse = engine_analyse
        self._load_summary = load_summary
        self.gate = gate
        self.reported = reported or (lambda path: False)
        self.linked = linked or (lambda caller, callee: True)
        self.exporters = exporters
        self.deferred = deferred
        self.modules: dict[str, object] = {}      # module name -> ModuleAnalysis (or None)
        self.by_path: dict[str, object] = {}
        self.running: set[str] = set()
        self._resolved: dict = {}
        self.text_constants: dict = {}  # file -> its constants (analysis/constants.py)
        self.analysed_paths: list = []
        self.complete: set = set()   # modules whose every function was analysed
        self.incoming: dict = {}     # callee file -> ContextTable of its reported callers' contexts

    # -- module index (delegated) ------------------------------------------------------
    @property
    def top_names(self) -> frozenset:
        """Top-level module and package names of the project."""
        return self.index.top_names

    def module_name(self, path: str) -> Optional[str]:
        """The dotted module name of a file, or None."""
        return self.index.module_name(path)

    def package_of(self, path: str) -> str:
        """The package relative imports of ``path`` start from."""
        return self.index.package_of(path)

    def find_module(self, name: str, importer: Optional[str] = None) -> Optional[str]:
        """The file of module ``name`` in this project, or None; as the file ``importer``
        imports it, when given (``ModuleIndex.find_module``)."""
        return self.index.find_module(name, importer)

    def display(self, path: str) -> str:
        """How another module's path is spelled in messages: relative to the project root,
        so that a message reads the same from any folder and from the cache."""
        try:
            rel = os.path.relpath(path, self.root)
        except ValueError:  # pragma: no cover - another drive on Windows
            return path
        return path if rel.startswith("..") else rel

    # -- analyses ------------------------------------------------------------------------
    def analysis_of(self, name: str, attr: Optional[str] = None, demand: bool = False,
                    importer: Optional[str] = None):
        """The analysis of module ``name`` (run on first use; a module still running
        returns its partial state, which ends import cycles).  ``attr`` is the name the
        caller wants from it: the gate may say that only some names are worth parsing the
        module for, unless ``demand`` (a call hands it a multi-device value: whatever the
        text says, its summary decides what comes back).  ``importer``: the file importing
        it (its own package's root first: ``ModuleIndex.first_root``; :attr:`modules` then
        names another root's module)."""
        own = importer is not None and self.index.first_root(importer) is not None
        if not own and name in self.modules:
            ma = self.modules[name]
            if attr is not None:
                self.extend(ma, (attr,))
            return ma
        path = self.find_module(name, importer)
        if path is None:
            return None
        key = os.path.abspath(path)
        if own and key in self.by_path:
            ma = self.by_path[key]
            if attr is not None and ma is not None:
                self.extend(ma, (attr,))
            return ma
        if key not in self.by_path and self.gate is not None and not demand and not self.gate(key, attr):
            return None
        return self.analysis_of_path(path, name, want=None if attr is None else frozenset((attr,)))

    def extend(self, ma, names) -> None:
        """Make the analysis ``ma``, made for some top-level names only (its ``partial``:
        :mod:`jaxinterop_lint.pipeline.partial`), cover ``names`` too: the statements they
        need are parsed and walked (``ma.partial.extend``), and their functions analysed
        when every function of ``ma`` was."""
        partial = getattr(ma, "partial", None)
        if partial is None or not any(partial.misses(n) for n in names):
            return
        partial.extend(ma, names)
        key = os.path.abspath(ma.path)
        if key in self.complete:
            ma.analyse_functions()

    def analysis_of_path(self, path: str, name: Optional[str] = None, text: Optional[str] = None,
                         fresh: bool = False, full: Optional[bool] = None, want: Optional[frozenset] = None):
        """The analysis of the file ``path`` (shared by every module that imports it);
        ``text`` is its source when the caller has already read it.  With ``fresh`` the
        result is a real analysis with its events (for reporting), never the cached summary,
        and every function of it is analysed (``full``, the default with ``fresh``); a module
        reached through an import has its body walked and its functions analysed only when
        a caller needs their summaries.  ``want``: the top-level names the caller needs
        (None: the module as a whole); the engine may parse only what those need, and a
        later call wanting more extends it (:meth:`extend`)."""
        full = fresh if full is None else full
        key = os.path.abspath(path)
        if fresh and getattr(self.by_path.get(key), "partial", None) is not None and self.contexts_into(key):
            # Made for some names only, and now reported with calling contexts (findings at
            # its sinks, with their fixes): analysed whole from now on.
            self.by_path.pop(key)
            self.complete.discard(key)
        if key in self.by_path and not (fresh and is_frozen(self.by_path[key])):
            ma = self.by_path[key]
            if want is not None and ma is not None:
                self.extend(ma, want)
            if full and ma is not None and not is_frozen(ma) and key not in self.complete and key not in self.running:
                ma.analyse_functions()
                self.complete.add(key)
            return ma
        name = self._slot(name or self.module_name(path) or key, key)
        if self._load_summary is not None and not fresh:
            frozen = self._load_summary(key)
            if frozen is not None:
                frozen.path = key      # the callee's file, for calling contexts across modules
                self.by_path[key] = self.modules[name] = frozen
                return frozen
        self.by_path[key] = None
        self.modules[name] = None
        self.running.add(name)
        try:
            ma = self._analyse(key, self, text, want)
            if ma is not None:
                ma.walk_body()
                # The globals are complete: other modules may use them while this module's
                # functions are analysed (import cycles through functions resolve fully).
                self.by_path[key] = ma
                self.modules[name] = ma
                if full:
                    ma.analyse_functions()
                    self.complete.add(key)
        except Exception:  # too deep, or a bug of ours: this module gives no summary
            if os.environ.get("JAXINTEROP_LINT_DEBUG"):
                raise
            ma = None
            self.by_path[key] = self.modules[name] = None
        finally:
            self.running.discard(name)
        self.analysed_paths.append(key)
        return ma

    def _slot(self, name: str, key: str) -> str:
        """The key of :attr:`modules` for the file ``key`` named ``name``: its name, unless
        another root's module has that name for an import without importer (two folders of
        a monorepo each holding a package ``app``: ``ModuleIndex.first_root``), then its path."""
        if name == key or self.index.first_root(key) is None:
            return name
        return name if self.index.find_module(name) in (None, key) else key

    def forget(self, path: str) -> None:
        """Drop the analysis of ``path`` (it was made from another text)."""
        key = os.path.abspath(path)
        self.by_path.pop(key, None)
        self._resolved.clear()
        for table in self.incoming.values():   # the contexts its old analysis gave
            table.drop_caller(key)
        for name in [n for n, m in self.modules.items() if m is not None and getattr(m, "path", None) == key]:
            del self.modules[name]
        name = self.module_name(key)
        if name is not None:
            self.modules.pop(self._slot(name, key), None)

    # -- calling contexts across modules (PLAN decision 1) ------------------------------
    def gives_context(self, caller: str, callee: Optional[str]) -> bool:
        """Whether an export inside module file ``callee`` reached from module file ``caller``
        is reported at the sink in ``callee`` (a calling context) rather than at the call:
        both are reported files, they differ, and they are ``linked``."""
        if not callee or not caller:
            return False
        a, b = os.path.abspath(caller), os.path.abspath(callee)
        return a != b and bool(self.reported(a)) and bool(self.reported(b)) and bool(self.linked(a, b))

    def add_context(self, callee: str, function: str, export: int, site: tuple, entry, join: bool = False) -> None:
        """Record the calling context ``entry`` of export ``export`` of ``function`` in the
        module file ``callee``; ``site`` starts with the caller's file (see
        :class:`~.contexts.ContextTable`)."""
        from .contexts import ContextTable

        table = self.incoming.setdefault(os.path.abspath(callee), ContextTable())
        table.add(function, export, site, entry, join=join)

    def contexts_into(self, path: str):
        """The :class:`~.contexts.ContextTable` of the contexts other modules gave the file
        ``path``, or None."""
        return self.incoming.get(os.path.abspath(path))

    def replace(self, path: str, ma) -> None:
        """Use ``ma`` as the analysis of ``path`` from now on."""
        key = os.path.abspath(path)
        self.by_path[key] = ma
        name = self.module_name(path)
        if name is not None:
            self.modules[self._slot(name, key)] = ma

    def dependencies(self, path: str) -> set:
        """Every project file the analysis of ``path`` used, transitively."""
        seen, todo = set(), [os.path.abspath(path)]
        while todo:
            p = todo.pop()
            ma = self.by_path.get(p)
            for dep in getattr(ma, "depends_on", ()) or ():
                if dep and dep not in seen:
                    seen.add(dep)
                    todo.append(os.path.abspath(dep))
        seen.discard(os.path.abspath(path))
        return seen

    def resolve(self, qualified: str, importer=None, demand: bool = False) -> Optional[Value]:
        """The value of a project name such as ``pkg.mod.f`` (None: not project code, or
        unknown).  ``importer`` is the analysis asking: every module the name was looked up
        in (re-exports included) becomes one of its dependencies.  ``demand``: past the
        plan's gate (:meth:`analysis_of`)."""
        if qualified.split(".")[0] not in self.top_names:
            return None
        path = getattr(importer, "path", None)
        first = self.index.first_root(path) if path is not None and os.path.isabs(path) else None
        memo = qualified if first is None else (qualified, first)
        if memo in self._resolved:
            value, owners = self._resolved[memo]
        else:
            owners: set = set()
            value = self._lookup(qualified, owners, 0, demand, set(), path if first is not None else None)
            if value is not None:
                self._resolved[memo] = (value, owners)
        if importer is not None:
            importer.depends_on.update(owners)
        return value

    def deferred_name(self, qualified: str) -> bool:
        """Whether the project name ``qualified`` (``pkg.mod.C``, ``pkg.mod.f``) is a top-level
        name that the plan opens only on demand (:attr:`deferred`), in a module not analysed
        yet (an analysed module gives its names as they are)."""
        parts = qualified.split(".")
        if self.deferred is None or parts[0] not in self.top_names:
            return False
        found = self._module_of(parts)
        if found is None:
            return False
        i, mod, path = found
        if i == len(parts) or mod in self.modules:
            return False
        key = os.path.abspath(path)
        return key not in self.by_path and self.deferred(key, parts[i])

    def _module_of(self, parts: list, importer: Optional[str] = None) -> Optional[tuple]:
        """``(i, module, path)`` for the longest prefix ``parts[:i]`` of a dotted name that is
        a project module (as the file ``importer`` imports it), or None."""
        for i in range(len(parts), 0, -1):
            mod = ".".join(parts[:i])
            path = self.find_module(mod, importer)
            if path is not None:
                return i, mod, path
        return None

    def _lookup(self, qualified: str, owners: set, depth: int, demand: bool = False,
                seen: Optional[set] = None, importer: Optional[str] = None) -> Optional[Value]:
        # ``seen``: the names this resolution looked up already (star imports form cycles and
        # fan out: scipy's ``from ._x import *`` chains made the search exponential)
        if depth > 20 or seen is not None and (qualified in seen or len(seen) > _MAX_LOOKUPS):
            return None
        if seen is not None:
            seen.add(qualified)
        parts = qualified.split(".")
        found = self._module_of(parts, importer)
        if found is None:
            return None
        i, mod, path = found
        owners.add(os.path.abspath(path))
        if i == len(parts):
            return Value(kind=QNAME, qname=qualified)
        ma = self.analysis_of(mod, parts[i], demand, importer)
        # names the module found binds are read as it imports them
        importer = os.path.abspath(path) if self.index.first_root(path) is not None else None
        if ma is None:
            return None
        if not is_frozen(ma):
            from .module_state import settle

            settle(ma, parts[i])      # (a function that rebinds it with ``global`` is part of its value)
        value = ma.globals.get(parts[i])
        rest = parts[i + 1:]
        if value is None:
            # a name its ``from m import *`` binds (the last such module that has it)
            for base in reversed(getattr(ma, "star_modules", ())):
                found = self._lookup(".".join([base, parts[i]] + rest), owners, depth + 1, demand, seen, importer)
                if found is not None:
                    return found
            return None
        if value.kind == QNAME and value.qname != ".".join(parts[:i + 1]):
            target = ".".join([value.qname] + rest)
            if target.split(".")[0] not in self.top_names:
                return Value(kind=QNAME, qname=target)
            return self._lookup(target, owners, depth + 1, demand, seen, importer) or Value(kind=QNAME, qname=target)
        for attr in rest:
            if value.cls is not None and attr in value.cls.methods:
                value = value.cls.methods[attr]
            else:
                return None
        return value

    def exporting_of(self, path: str, want: Optional[frozenset] = None,
                     enough: Optional[Callable] = None) -> frozenset:
        """Short names of the functions and methods of file ``path`` that export a parameter
        through a sink (its analysis is run, or loaded from the cache, first); ``want``: only
        those the top-level names ``want`` need (:meth:`analysis_of_path`).  ``enough``: a
        test of such a set that decides the caller's question (see :meth:`exports_known`)."""
        ma = self.exports_known(path, want, lambda m: m.exporting_names(), enough)
        return ma.exporting_names() if ma is not None else frozenset()

    def exporting_tops(self, path: str, want: Optional[frozenset] = None,
                       enough: Optional[Callable] = None) -> Optional[frozenset]:
        """Top-level names (functions, classes) of file ``path`` that hold a function or
        method exporting a parameter through a sink (a nested function counts for the
        function around it: it may be handed out); its analysis is run first.  None when
        that is not known: only a cached summary (it keeps short names), or an exporting
        lambda (no name of its own).  ``want`` and ``enough`` as for :meth:`exporting_of`."""
        ma = self.exports_known(path, want, _tops, enough)
        return frozenset() if ma is None else _tops(ma)

    def exports_known(self, path: str, want: Optional[frozenset], result: Callable,
                      enough: Optional[Callable] = None):
        """The analysis of ``path`` (:meth:`analysis_of_path` with ``want``) with its
        functions analysed far enough to answer a question about its exporting functions:
        every one, or, with ``enough`` (a test of ``result(analysis)`` that is monotone: what
        it accepts it accepts with more exporting functions) and :attr:`exporters`, first
        those whose own text uses a consumer, stopping as soon as ``enough`` accepts (issue
        16: a class of many methods is decided by the one that exports).  The answer
        ``enough`` gives is the one it would give on the whole analysis; the result may
        hold fewer functions then.  None or a frozen summary as :meth:`analysis_of_path`."""
        if enough is None or self.exporters is None:
            return self.analysis_of_path(path, full=True, want=want)
        ma = self.analysis_of_path(path, full=False, want=want)
        key = os.path.abspath(path)
        if ma is None or is_frozen(ma) or key in self.complete or key in self.running:
            return ma
        try:
            if enough(result(ma)):
                return ma
            first = self.exporters(key, want)
            if first:
                i = 0
                while i < len(ma.functions):
                    rec = ma.functions[i]
                    i += 1
                    if rec.state == "new" and rec.name in first:
                        summary = ma.summary(rec)
                        if summary.exports and enough(result(ma)):
                            return ma
            ma.analyse_functions()
            self.complete.add(key)
        except Exception:  # too deep, or a bug of ours: as analysis_of_path, no summary
            if os.environ.get("JAXINTEROP_LINT_DEBUG"):
                raise
            self.by_path[key] = None
            name = self.module_name(key)
            if name is not None:
                self.modules[self._slot(name, key)] = None
            return None
        return ma

    def exporting_names(self) -> frozenset:
        """Names of the project functions and methods analysed so far that export a
        parameter through a sink."""
        out = set()
        for ma in list(self.by_path.values()):
            if ma is not None:
                out.update(ma.exporting_names())
        return frozenset(out)


def _tops(ma) -> Optional[frozenset]:
    """:meth:`Project.exporting_tops` of the analysis ``ma`` as far as it has run."""
    if is_frozen(ma):
        return None
    out = set(ma.consumer_aliases())
    for r in ma.functions:
        if r.summary is not None and (r.summary.exports or ma.calls_consumer_default(r)):
            if r.name == "<lambda>":
                return None
            out.add(r.name.split(".", 1)[0])
    return frozenset(out)
