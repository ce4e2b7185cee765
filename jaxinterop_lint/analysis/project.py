"""Whole-project analysis: follow multi-device values across the modules of one project.

A :class:`Project` maps module names to files under the project root (``src/`` layouts and
namespace packages included) and analyses a module the first time another module uses one
of its names, so summaries are computed lazily, across ``import pkg.mod``, ``from pkg.mod
import f as g``, relative imports and ``__init__.py`` re-exports.  An import binds a lazy
reference that is resolved when it is used, so import cycles terminate: a module still being
analysed answers with what it has bound so far.

Installed third-party packages are never analysed: names of the libraries in the API tables
and of the standard library resolve through the tables only.
"""
from __future__ import annotations

import os
import sys
from typing import Optional

from ..knowledge import apis
from .values import QNAME, Value

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")

# Roots that are never project code: the libraries the tables describe, and the stdlib.
_TABLE_ROOTS = frozenset(
    q.split(".")[0]
    for table in (apis.CALL_SINKS, apis.SOURCE_WRAPPERS, apis.DIRECT_SOURCES, apis.PLACEMENT_CALLS,
                  apis.REMOVED_CALLS, apis.SANITIZERS)
    for q in table
) | apis.JAX_ROOTS | {"functools", "builtins", "numpy", "torch", "cupy", "numba", "warp", "tensorflow"}
LIBRARY_ROOTS = _TABLE_ROOTS | frozenset(getattr(sys, "stdlib_module_names", ()))


_MARKED: dict = {}


def _has_marker(folder: str) -> bool:
    if folder not in _MARKED:
        _MARKED[folder] = any(os.path.exists(os.path.join(folder, m)) for m in ROOT_MARKERS)
    return _MARKED[folder]


def find_root(paths) -> str:
    """The nearest folder at or above the first path holding a project marker
    (``pyproject.toml``, ``setup.cfg``, ``setup.py`` or ``.git``); without one, the folder
    above the outermost package (``__init__.py``) holding that path."""
    start = os.path.abspath(next(iter(paths), "."))
    folder = start if os.path.isdir(start) else os.path.dirname(start)
    probe = folder
    while True:
        if _has_marker(probe):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    while os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return folder


class Project:
    """The modules of one project and their analyses.

    ``root`` is the project folder; ``engine_analyse(path, project, text) -> ModuleAnalysis |
    None`` parses one file and makes its (not yet run) analysis with this project attached (supplied by the engine, which owns
    parsing and errors).  ``analysed`` counts module analyses run, for tests and benchmarks.
    """

    def __init__(self, root: str, engine_analyse, cache=None):
        self.root = os.path.abspath(root)
        self.cache = cache
        self.source_roots = [r for r in (os.path.join(self.root, "src"), self.root) if os.path.isdir(r)]
        self._analyse = engine_analyse
        self.modules: dict[str, object] = {}      # module name -> ModuleAnalysis (or None)
        self.by_path: dict[str, object] = {}
        self.running: set[str] = set()
        self._paths: dict[str, Optional[str]] = {}
        self._resolved: dict = {}
        self._tops: Optional[frozenset] = None
        self.analysed = 0
        self.gate = None   # optional predicate on a path: may this module be analysed?
        self.analysed_paths: list = []

    # -- module index --------------------------------------------------------------------
    @property
    def top_names(self) -> frozenset:
        """Top-level module and package names found in the source roots."""
        if self._tops is None:
            names = set()
            for r in self.source_roots:
                try:
                    entries = os.listdir(r)
                except OSError:
                    continue
                for e in entries:
                    full = os.path.join(r, e)
                    if e.endswith(".py"):
                        names.add(e[:-3])
                    elif os.path.isdir(full) and e.isidentifier() and not e.startswith("."):
                        names.add(e)
            self._tops = frozenset(names - LIBRARY_ROOTS)
        return self._tops

    def module_name(self, path: str) -> Optional[str]:
        """The dotted module name of a file under a source root, or None."""
        full = os.path.abspath(path)
        for r in self.source_roots:
            if full.startswith(r + os.sep):
                rel = os.path.relpath(full, r)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                if rel and all(p.isidentifier() for p in rel):
                    return ".".join(rel)
        return None

    def package_of(self, path: str) -> str:
        """The package relative imports of ``path`` start from."""
        name = self.module_name(path)
        if name is None:
            return ""
        if os.path.basename(path) == "__init__.py":
            return name
        return name.rpartition(".")[0]

    def find_module(self, name: str) -> Optional[str]:
        """The file of module ``name`` in this project, or None."""
        if name in self._paths:
            return self._paths[name]
        found = None
        if name.split(".")[0] in self.top_names:
            rel = name.replace(".", os.sep)
            for r in self.source_roots:
                for cand in (os.path.join(r, rel + ".py"), os.path.join(r, rel, "__init__.py")):
                    if os.path.isfile(cand):
                        found = cand
                        break
                if found:
                    break
        self._paths[name] = found
        return found

    # -- analyses ------------------------------------------------------------------------
    def analysis_of(self, name: str):
        """The analysis of module ``name`` (run on first use; a module still running
        returns its partial state, which ends import cycles)."""
        if name in self.modules:
            return self.modules[name]
        path = self.find_module(name)
        if path is None or (self.gate is not None and not self.gate(path)):
            return None
        return self.analysis_of_path(path, name)

    def analysis_of_path(self, path: str, name: Optional[str] = None, text: Optional[str] = None,
                         fresh: bool = False):
        """The analysis of the file ``path`` (shared by every module that imports it);
        ``text`` is its source when the caller has already read it.  With ``fresh`` the
        result is a real analysis with its events (for reporting), never the cached summary."""
        from ..summaries import FrozenModule

        key = os.path.abspath(path)
        if key in self.by_path and not (fresh and isinstance(self.by_path[key], FrozenModule)):
            return self.by_path[key]
        name = name or self.module_name(path) or key
        if self.cache is not None and not fresh:
            frozen = self._from_cache(path)
            if frozen is not None:
                self.by_path[key] = self.modules[name] = frozen
                return frozen
        self.by_path[key] = None
        self.modules[name] = None
        self.running.add(name)
        try:
            ma = self._analyse(path, self, text)
            if ma is not None:
                ma.walk_body()
                # The globals are complete: other modules may use them while this module's
                # functions are analysed (import cycles through functions resolve fully).
                self.by_path[key] = ma
                self.modules[name] = ma
                ma.analyse_functions()
        except Exception:  # too deep, or a bug of ours: this module gives no summary
            if os.environ.get("JAXINTEROP_LINT_DEBUG"):
                raise
            ma = None
            self.by_path[key] = self.modules[name] = None
        finally:
            self.running.discard(name)
        self.analysed += 1
        self.analysed_paths.append(key)
        return ma

    def replace(self, path: str, ma) -> None:
        """Use ``ma`` as the analysis of ``path`` from now on."""
        key = os.path.abspath(path)
        self.by_path[key] = ma
        name = self.module_name(path)
        if name is not None:
            self.modules[name] = ma

    def _from_cache(self, path: str):
        from ..summaries import thaw

        entry = self.cache.entry(path)
        if entry is None or not entry.get("summary"):
            return None
        return thaw(entry["summary"], _display(path), depends_on=entry.get("deps", {}).keys())

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

    def remember(self, path: str, **fields) -> None:
        """Store cache fields for ``path`` with its current dependencies."""
        if self.cache is not None:
            self.cache.put(path, self.dependencies(path), **fields)

    def remember_summaries(self) -> None:
        """Store the summary of every module analysed in this run."""
        if self.cache is None or not self.analysed_paths:
            return
        from ..summaries import FrozenModule, freeze

        for path, ma in list(self.by_path.items()):
            if ma is None or isinstance(ma, FrozenModule):
                continue
            try:
                self.cache.put(path, self.dependencies(path), summary=freeze(ma))
            except (RecursionError, ValueError, TypeError):
                continue

    def resolve(self, qualified: str, importer=None) -> Optional[Value]:
        """The value of a project name such as ``pkg.mod.f`` (None: not project code, or
        unknown).  ``importer`` is the analysis asking: every module the name was looked up
        in (re-exports included) becomes one of its dependencies."""
        if qualified.split(".")[0] not in self.top_names:
            return None
        if qualified in self._resolved:
            value, owners = self._resolved[qualified]
        else:
            owners: set = set()
            value = self._lookup(qualified, owners, 0)
            if value is not None:
                self._resolved[qualified] = (value, owners)
        if importer is not None:
            importer.depends_on.update(owners)
        return value

    def _lookup(self, qualified: str, owners: set, depth: int) -> Optional[Value]:
        if depth > 20:
            return None
        parts = qualified.split(".")
        for i in range(len(parts), 0, -1):
            mod = ".".join(parts[:i])
            path = self.find_module(mod)
            if path is None:
                continue
            owners.add(path)
            if i == len(parts):
                return Value(kind=QNAME, qname=qualified)
            ma = self.analysis_of(mod)
            if ma is None:
                return None
            value = ma.globals.get(parts[i])
            if value is None:
                return None
            rest = parts[i + 1:]
            if value.kind == QNAME and value.qname != ".".join(parts[:i + 1]):
                target = ".".join([value.qname] + rest)
                if target.split(".")[0] not in self.top_names:
                    return Value(kind=QNAME, qname=target)
                return self._lookup(target, owners, depth + 1) or Value(kind=QNAME, qname=target)
            for attr in rest:
                if value.cls is not None and attr in value.cls.methods:
                    value = value.cls.methods[attr]
                else:
                    return None
            return value
        return None

    def exporting_names(self) -> frozenset:
        """Names of project functions and methods that export a parameter through a sink:
        a file that calls one of them must be analysed even if it names no sink itself."""
        out = set()
        for ma in list(self.by_path.values()):
            if ma is None:
                continue
            out.update(ma.exporting_names())
        return frozenset(out)


def _display(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # pragma: no cover - another drive on Windows
        return path
