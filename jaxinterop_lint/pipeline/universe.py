"""The project's importable files, read as text: which of them can hold JAX code at all.

Whether JAX code reaches a file is a search of the import graph from that file for a module
with a unit naming JAX words (:meth:`~.carriers.Carriers.origin_reachable`).  Such a module
imports a JAX root (``jax``, ``flax`` ..., or the root of a configured source), so its text
names that root.  In a project where no file names one except modules whose units name no
JAX word (transformers: three files say ``jax``, none at top level), no search can succeed,
and answering that from the text of every file is far cheaper than computing the facts of
each module of a large import graph (``flake8`` on one file of transformers read the facts of
2,514 modules to learn that ``debug_utils.py`` is reached by nothing).

:func:`scan` walks the project root as Python would find modules under it (folders whose
names are identifiers, ``__pycache__`` left out) and returns the files whose text names a
root, with every file and folder it read: a decision taken from the scan depends on all of
them (a new file in any of those folders may be a module that changes an import), so it is
stored with the plan's epoch (:mod:`.epoch`), which keeps the files' hashes and the folders'
listings of module names (:func:`listing_key`: a dotfile, an editor's backup or the cache
folder written beside the modules changes none).
"""
from __future__ import annotations

import os
from typing import Optional

from .store import key_of

MAX_FILES = 20_000      # a larger tree is searched module by module, as before


class Scanned:
    """What :func:`scan` read: ``named`` the files whose text names one of the roots (up to
    the first with a unit naming JAX words, when ``origin``), ``files`` every module file,
    ``folders`` ``{folder: listing_key}`` of every folder listed."""

    def __init__(self, named: list, files: list, folders: dict, origin: bool):
        self.named = named
        self.files = files
        self.folders = folders
        self.origin = origin


def listing(folder: str) -> tuple:
    """``(modules, packages, linked)``: the names in ``folder`` that a module search can
    use, sorted: files ``<identifier>.py`` and folders ``<identifier>`` (``__pycache__``
    left out), and whether one of those folders is a symbolic link.  Anything else (a
    dotfile, an editor's backup, the cache folder, data) is no module and is left out, so
    that writing it changes no listing.  Raises OSError."""
    modules, packages, linked = [], [], False
    with os.scandir(folder) as entries:
        for e in entries:
            name = e.name
            if name.endswith(".py"):
                if name[:-3].isidentifier() and e.is_file():
                    modules.append(name)
            elif name.isidentifier() and name != "__pycache__" and e.is_dir():
                packages.append(name)
                linked = linked or e.is_symlink()
    return sorted(modules), sorted(packages), linked


def listing_key(folder: str, listed: Optional[tuple] = None) -> str:
    """A short hash of :func:`listing` of ``folder`` (what the plan's epoch keeps of each
    folder the scan listed), or of ``listed`` when the caller listed it already.  Raises
    OSError."""
    return key_of(list(listed if listed is not None else listing(folder)))


def scan(root: str, roots, words, bytes_of, has_origin, own=()) -> Optional[Scanned]:
    """The modules under ``root`` (absolute) whose text names one of ``words`` (root module
    names, as substrings of its bytes: a superset of the files that import one), read by
    ``bytes_of(path)`` (the run's reader: raises for a file it cannot read, which then
    names nothing), each such file asked ``has_origin(path)`` (whether a unit of it names
    JAX words): the scan stops at the first that has one (:attr:`Scanned.origin`; a JAX
    project stops at its first JAX module).

    The modules are those a module search can find: under ``root`` and each of ``roots``
    (the module index's source roots, all of which must lie in ``root``: a package whose
    top folder is not an identifier is one), in folders whose names are identifiers; and
    ``own`` (the linted files, whose text may be given rather than on disk) with every
    module of their folders and of each folder above them up to ``root`` (the
    ``conftest.py`` files pytest gives a test module).  None when a source root lies
    outside ``root``, a folder is a symbolic link, the tree has more than
    :data:`MAX_FILES` modules, or a folder cannot be listed.  Never raises but what
    ``has_origin`` raises."""
    if any(r != root and not r.startswith(root + os.sep) for r in roots):
        return None
    files, folders = set(own), {}
    flat = set()        # the folders of the linted files and those above them
    for p in own:
        folder = os.path.dirname(p)
        while folder == root or folder.startswith(root + os.sep):
            flat.add(folder)
            folder = os.path.dirname(folder)
    todo = [root, *roots]
    while True:         # every module folder, then each folder of ``flat`` not among them
        if not todo:
            todo = sorted(flat - set(folders))
            if not todo:
                break
        folder = todo.pop()
        if folder in folders:
            continue
        try:
            modules, packages, linked = listing(folder)
        except FileNotFoundError:
            if folder not in flat:
                return None
            modules, packages, linked = [], [], False   # (a text given for a file not saved yet)
        except OSError:
            return None
        if linked:      # (a module search follows the link: the tree is not bounded)
            return None
        folders[folder] = listing_key(folder, (modules, packages, linked))
        files.update(os.path.join(folder, m) for m in modules)
        todo += [os.path.join(folder, p) for p in packages]
        if len(files) > MAX_FILES:
            return None
    named = []
    kept = [w for w in sorted(words) if not any(o != w and o in w for o in words)]    # "jax" covers "jaxlib"
    words = [w.encode() for w in kept]
    order = sorted(files)
    # the modules whose paths name a root first (``envs/libs/jax_utils.py``): in a project
    # with JAX code the scan then stops after reading a few files, not most of them
    for p in sorted(order, key=lambda p: not any(w in p for w in kept)):
        try:
            data = bytes_of(p)
        except Exception:   # unreadable: no facts, no import
            continue
        if any(w in data for w in words):
            named.append(p)
            if has_origin(p):
                return Scanned(named, order, folders, True)
    return Scanned(named, order, folders, False)
