"""Where a project's modules are, as Python finds them: module names, files, project roots.

A module's name comes from the folder above its outermost package (the folder ``python -m``
would be run from: climb while ``__init__.py`` exists), also when the project's marker
(``pyproject.toml``, ``.git`` ...) is higher up, so a package nested anywhere in a repository
is followed across its imports.  Files outside any package are named from the project's
source roots (``<root>/src``, ``<root>``), which also gives namespace packages.

Installed third-party packages are never project code: names of the libraries in the API
tables and of the standard library never resolve to files.
"""
from __future__ import annotations

import os
import sys
from typing import Optional

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")

_LIBRARY_ROOTS: list = []


def library_roots() -> frozenset:
    """Top-level names of libraries, never of the project: the roots of the API tables'
    names (knowledge/apis.py, loaded on first use: finding a project root needs none of it)
    and the standard library's modules."""
    if not _LIBRARY_ROOTS:
        from ..knowledge import apis

        tables = frozenset(
            q.split(".")[0]
            for table in (apis.CALL_SINKS, apis.SOURCE_WRAPPERS, apis.DIRECT_SOURCES, apis.PLACEMENT_CALLS,
                          apis.REMOVED_CALLS, apis.SANITIZERS)
            for q in table
        ) | apis.JAX_ROOTS | {"functools", "builtins", "numpy", "torch", "cupy", "numba", "warp", "tensorflow"}
        _LIBRARY_ROOTS.append(tables | frozenset(getattr(sys, "stdlib_module_names", ())))
    return _LIBRARY_ROOTS[0]


def __getattr__(name: str):
    if name == "LIBRARY_ROOTS":
        return library_roots()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_MARKED: dict = {}
_LISTED: dict = {}    # absolute folder -> its names, case-folded, as discovery listed them


def forget_listings() -> None:
    """Forget what earlier listings and climbs found (a discovery starts: what it lists
    is what this run believes)."""
    _LISTED.clear()
    _MARKED.clear()
    _SEARCHED.clear()


def note_listing(folder: str, names) -> None:
    """Keep the case-folded ``names`` that a listing of the absolute ``folder`` found (the
    discovery's): a folder none of whose names is a marker is no project root, without a
    ``stat`` of each marker."""
    _LISTED[folder] = names


def _markers(folder: str) -> tuple:
    out = _MARKED.get(folder)
    if out is None:
        listed = _LISTED.get(folder)
        if listed is not None and not any(m in listed for m in ROOT_MARKERS):   # the markers are lower case
            out = ()
        else:
            out = tuple(m for m in ROOT_MARKERS if os.path.exists(os.path.join(folder, m)))
        _MARKED[folder] = out
    return out


_HOMES: dict = {}


def _home() -> Optional[str]:
    """The real path of the home folder (kept per value of ``$HOME``: a run asks once per
    folder of its files)."""
    key = os.environ.get("HOME")
    if key not in _HOMES:
        try:
            _HOMES[key] = os.path.realpath(os.path.expanduser("~"))
        except (KeyError, RuntimeError):  # pragma: no cover - no home at all
            _HOMES[key] = None
    return _HOMES[key]


def package_top(path: str) -> str:
    """The folder above the outermost package holding ``path`` (its own folder when that
    folder is not a package)."""
    full = os.path.abspath(path)
    folder = full if os.path.isdir(full) else os.path.dirname(full)
    while os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return folder


def find_root(paths) -> str:
    """The project root of the first of ``paths``: the nearest folder at or above it holding
    a project marker, never climbing above the git work tree that holds the path, and never
    a home folder or the file system's root (a dotfiles repository in ``$HOME`` is no
    project).  Without such a folder: the folder above the path's outermost package."""
    start = os.path.abspath(next(iter(paths), "."))
    folder = start if os.path.isdir(start) else os.path.dirname(start)
    found = _marked_above(folder, _home())
    return found if found is not None else package_top(folder)


_SEARCHED: dict = {}   # (folder, home) -> the marked folder find_root climbs to from it, or None


def _marked_above(folder: str, home: Optional[str]) -> Optional[str]:
    """The nearest folder at or above ``folder`` with a marker, not climbing past a work
    tree's top, ``home`` or ``/`` (None without one); kept for every folder climbed through
    (a run asks for each folder of its files)."""
    probe, seen, out = folder, [], None
    while True:
        key = (probe, home)
        if key in _SEARCHED:
            out = _SEARCHED[key]
            break
        seen.append(key)
        marks = _markers(probe)
        parent = os.path.dirname(probe)
        forbidden = probe == home or parent == probe
        if marks and not forbidden:
            out = probe
            break
        if ".git" in marks or forbidden:
            break        # never above the work tree, a home folder or /
        probe = parent
    for key in seen:
        _SEARCHED[key] = out
    return out


def has_marker(root: str) -> bool:
    """Whether ``root`` holds a project marker (it is a real project, not a bare folder)."""
    return bool(_markers(root))


class ModuleIndex:
    """The module names and files of one project: source roots ``<root>/src`` and
    ``<root>``, plus the folder above the outermost package of every file added with
    :meth:`add_file` (what ``python -m`` would use)."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.roots = [r for r in (os.path.join(self.root, "src"), self.root) if os.path.isdir(r)]
        self._tops: Optional[frozenset] = None
        self._paths: dict = {}
        self._names: dict = {}
        self._folders: set = set()      # folders whose files were added (one climb each)
        self._listed: dict = {}         # folder -> (files, folders) in it (_listing)
        self._absent: dict = {}         # module name -> absent_candidates (as _paths)
        self._bases: dict = {}          # folder -> [package_top] when it is a package, else []
        self._makers: dict = {}         # added root -> the __init__.py files that made it one

    def add_file(self, path: str) -> None:
        """Make the packages around ``path`` importable by their Python names."""
        full = os.path.abspath(path)
        folder = os.path.dirname(full)
        if folder in self._folders:
            return
        self._folders.add(folder)
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            return
        top = package_top(full)
        if top not in self.roots:
            self.roots.append(top)
            makers, probe = [], folder
            while probe != top:
                makers.append(os.path.join(probe, "__init__.py"))
                probe = os.path.dirname(probe)
            self._makers[top] = tuple(makers)
            self._tops = None
            self._paths.clear()
            self._names.clear()
            self._absent.clear()

    def root_makers(self, paths) -> set:
        """The ``__init__.py`` files that make a source root of the folder above a linted
        file's outermost package (:meth:`add_file`), for each such root holding one of
        ``paths``: removing one of them moves that root, and with it the names of the
        modules found there (for the cache: a result that used one of ``paths``
        depends on them, s09).  Empty when ``paths`` lie only in ``<root>`` and
        ``<root>/src``."""
        out: set = set()
        for top, makers in self._makers.items():
            if any(p.startswith(top + os.sep) for p in paths):
                out.update(makers)
        return out

    @property
    def top_names(self) -> frozenset:
        """Top-level module and package names found in the source roots."""
        if self._tops is None:
            names = set()
            for r in self.roots:
                try:
                    entries = os.listdir(r)
                except OSError:
                    continue
                for e in entries:
                    if e.endswith(".py"):
                        names.add(e[:-3])
                    elif e.isidentifier() and not e.startswith(".") and os.path.isdir(os.path.join(r, e)):
                        names.add(e)
            self._tops = frozenset(names - library_roots())
        return self._tops

    def module_name(self, path: str) -> Optional[str]:
        """The dotted module name of a file: from the folder above its outermost package when
        it is in a package, else from the first source root holding it; None outside them."""
        full = os.path.abspath(path)
        if full in self._names:
            return self._names[full]
        name = None
        for r in self._bases_of(full) + self.roots:
            if full.startswith(r + os.sep):
                rel = os.path.relpath(full, r)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                if rel and all(p.isidentifier() for p in rel):
                    name = ".".join(rel)
                    break
        self._names[full] = name
        return name

    def _bases_of(self, full: str) -> list:
        """``[the folder above the outermost package holding full]`` when ``full`` (an
        absolute path) is in a package, else ``[]``; one climb a folder (transformers'
        2,514 modules, 700 folders)."""
        folder = os.path.dirname(full)
        bases = self._bases.get(folder)
        if bases is None:
            bases = self._bases[folder] = [package_top(full)] if os.path.isfile(os.path.join(folder, "__init__.py")) else []
        return bases

    def first_root(self, importer: Optional[str]) -> Optional[str]:
        """The source root searched first for the absolute imports of the file ``importer``,
        when that is not the project's own order: the folder above ``importer``'s outermost
        package, where :meth:`add_file` added it as a root (a package beside the project's
        ``<root>`` and ``<root>/src``: ``services/b/app/``), since ``python -m`` run there
        finds the importer's own package first.  None otherwise (no importer, or one whose
        package lies in ``<root>``, ``<root>/src`` or nowhere): the roots in their order.
        Two folders of a monorepo holding a package of the same name (``services/a/app``,
        ``services/b/app``) each import their own then (attack48's s08)."""
        if importer is None or not self._makers:
            return None
        bases = self._bases_of(os.path.abspath(importer))
        top = bases[0] if bases else None
        return top if top in self._makers and top != self.roots[0] else None

    def _search_order(self, first: Optional[str]) -> list:
        return self.roots if first is None else [first] + [r for r in self.roots if r != first]

    def package_of(self, path: str) -> str:
        """The package relative imports of ``path`` start from."""
        name = self.module_name(path)
        if name is None:
            return ""
        if os.path.basename(path) == "__init__.py":
            return name
        return name.rpartition(".")[0]

    def is_project(self, name: str) -> bool:
        """Whether the top of ``name`` is one of the project's top-level names."""
        return name.split(".")[0] in self.top_names

    def find_module(self, name: str, importer: Optional[str] = None) -> Optional[str]:
        """The file of module ``name`` in this project, or None; as the file ``importer``
        imports it, when given (its own package's root first: :meth:`first_root`)."""
        first = self.first_root(importer)
        key = name if first is None else (name, first)
        if key in self._paths:
            return self._paths[key]
        found = None
        if self.is_project(name):
            rel = name.replace(".", os.sep)
            for r in self._search_order(first):
                folder, _, last = os.path.join(r, rel).rpartition(os.sep)
                files, folders = self._listing(folder)
                if last + ".py" in files:
                    found = os.path.join(folder, last + ".py")
                elif last in folders and "__init__.py" in self._listing(os.path.join(folder, last))[0]:
                    found = os.path.join(folder, last, "__init__.py")
                if found:
                    break
        self._paths[key] = found
        return found

    def _listing(self, folder: str) -> tuple:
        """``(files, folders)``: the names of the files and of the folders in ``folder``
        (symbolic links followed, as ``os.path.isfile`` and ``isdir``), listed once a run:
        a module search asks one folder about many names (``from pkg.data import A, B``
        tries ``pkg/data/A.py`` and ``pkg/data/A/__init__.py`` for each), where a ``stat``
        each cost torchrl 20,000 calls.  Both empty for a folder that cannot be listed.  Like
        the names found (``_paths``), a listing lasts as long as the index: one run, or a
        language-server session until the next save."""
        known = self._listed.get(folder)
        if known is None:
            files, folders = set(), set()
            try:
                with os.scandir(folder) as entries:
                    for e in entries:
                        try:
                            if e.is_file():
                                files.add(e.name)
                            elif e.is_dir():
                                folders.add(e.name)
                        except OSError:     # an entry that cannot be read: no module
                            pass
            except OSError:
                pass
            known = self._listed[folder] = (frozenset(files), frozenset(folders))
        return known

    def conftests(self, path: str) -> list:
        """The ``conftest.py`` files whose fixtures pytest gives the tests of the test module
        ``path`` (``test_*.py`` or ``*_test.py``): in its folder and each folder above it up
        to the project root, nearest first; [] for any other file."""
        return [c for c in self.conftest_candidates(path) if "conftest.py" in self._listing(os.path.dirname(c))[0]]

    def conftest_candidates(self, path: str) -> list:
        """Every ``conftest.py`` path whose fixtures pytest would give the test module
        ``path``, existing or not (:meth:`conftests` lists those that exist); [] for any
        other file."""
        base = os.path.basename(path)
        if not (base.startswith("test_") or base.endswith("_test.py")) or not base.endswith(".py"):
            return []
        out = []
        folder = os.path.dirname(os.path.abspath(path))
        while True:
            out.append(os.path.join(folder, "conftest.py"))
            if folder == self.root or not folder.startswith(self.root + os.sep):
                return out
            folder = os.path.dirname(folder)

    def absent_candidates(self, name: str, importer: Optional[str] = None) -> list:
        """Files that would make the missing module ``name`` importable, or that would
        shadow the module found from a source root searched before its own (for the cache:
        a result that used what ``name`` is, is stale once one of them exists); empty for
        library names and for modules found in the first root.  ``importer``: as
        :meth:`find_module`."""
        first = self.first_root(importer)
        key = name if first is None else (name, first)
        known = self._absent.get(key)
        if known is not None:
            return known
        top = name.split(".")[0]
        out = []
        found = self.find_module(name, importer) if top and top not in library_roots() else False
        if found is not False:
            rel = name.replace(".", os.sep)
            # (a <root>/src made later is the first root: the store key tells the layouts
            # apart, :func:`~.session._layout_key`)
            for r in self._search_order(first):
                if found in (os.path.join(r, rel + ".py"), os.path.join(r, rel, "__init__.py")):
                    if r not in (self.root, os.path.join(self.root, "src")):
                        # a root above a linted file's package: an __init__.py made in it
                        # makes it a package too, and the root the folder above (s09)
                        out.append(os.path.join(r, "__init__.py"))
                    break       # the roots before the one it was found in
                out += [os.path.join(r, rel + ".py"), os.path.join(r, rel, "__init__.py")]
                if "." not in name and not found:
                    out.append(os.path.join(r, rel))     # a namespace package folder (found:
                    # a regular module of any root comes before a namespace package)
        self._absent[key] = out = tuple(out)   # (kept as long as the names found: _paths)
        return out
