"""Stage 1, discover: the Python files to lint under the given paths.

Paths are spelled as given: a folder ``src`` yields ``src/a.py``, the current folder ``.``
yields ``a.py`` (never ``./a.py``).  Inside a git work tree, files and folders its
``.gitignore`` files (and ``.git/info/exclude``) ignore are skipped, with git's own pattern
semantics through ``pathspec`` (``respect_gitignore=False`` turns that off); a file named
explicitly is always linted.
"""
from __future__ import annotations

import fnmatch
import functools
import os
import re
from typing import Iterable, Iterator, Optional

from ..config import DEFAULT_EXCLUDE  # noqa: F401  (re-exported: where discovery's defaults live)


@functools.lru_cache(maxsize=64)
def _matcher(patterns: tuple):
    """One compiled regex for a tuple of fnmatch patterns (flake8's --exclude semantics:
    a pattern matches a file or folder name, or a path, or a path prefix)."""
    parts = []
    for pat in patterns:
        pat = pat.rstrip("/")
        if not pat:
            continue
        parts.append(fnmatch.translate(pat))
        parts.append(fnmatch.translate(os.path.normpath(pat) + "/*"))
    return re.compile("|".join(parts)) if parts else None


class _Excludes:
    """The exclude patterns of one walk, matched as :func:`_matcher`'s regex matches them
    but with literal patterns (no ``*``, ``?``, ``[``) as sets: one matches a name or a path
    equal to it, or a path below it; whether an entry's path is below one is its folder's
    answer, found once per folder (:meth:`below`).  The others stay one regex."""

    def __init__(self, patterns: tuple):
        self.names: set = set()
        self.prefixes: set = set()
        rest = []
        for pat in patterns:
            pat = pat.rstrip("/")
            if not pat:
                continue
            if any(c in pat for c in "*?["):
                rest.append(pat)
            else:
                self.names.add(pat)
                self.prefixes.add(os.path.normpath(pat))
        self.slashed = any(os.sep in n or "/" in n for n in self.names)
        self.regex = _matcher(tuple(rest))

    def below(self, folder: str) -> bool:
        """Whether every path ``folder + sep + name`` is below a literal pattern: ``folder``
        (normalised) is one, or is below one."""
        if folder == "." or not self.prefixes:
            return False
        if folder in self.prefixes:
            return True
        i = folder.find(os.sep)
        while i >= 0:
            if folder[:i] in self.prefixes:
                return True
            i = folder.find(os.sep, i + 1)
        return False

    def match(self, name: str, norm: str, full: str, below: bool) -> bool:
        """Whether the entry ``name`` (its normalised path ``norm``, absolute path ``full``;
        ``below``: :meth:`below` of its folder) is excluded."""
        if below or name in self.names or (self.slashed and (norm in self.names or full in self.names)):
            return True
        r = self.regex
        return r is not None and bool(r.match(name) or r.match(norm) or r.match(full))


def _excluded(path: str, patterns: Iterable[str], cwd: Optional[str] = None) -> bool:
    """Whether ``path`` (relative to ``cwd``, default the current folder: one ``getcwd`` per
    walk instead of one per file) matches one of ``patterns`` by its name, its path or its
    absolute path."""
    matcher = _matcher(tuple(patterns))
    if matcher is None:
        return False
    name = os.path.basename(path.rstrip(os.sep)) or path
    if matcher.match(name):
        return True
    norm = os.path.normpath(path)
    full = os.path.abspath(path) if cwd is None else os.path.normpath(os.path.join(cwd, path))
    return bool(matcher.match(norm) or matcher.match(full))


def git_top(folder: str) -> Optional[str]:
    """The work tree above or at ``folder`` (the nearest folder holding ``.git``), or None."""
    probe = os.path.abspath(folder)
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent


class GitIgnore:
    """The ignore rules in force in one folder of a work tree: ``(folder, spec)`` pairs,
    outermost first."""

    def __init__(self, specs: tuple = ()):
        self.specs = specs

    @staticmethod
    def _load(path: str):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return None
        if not any(ln.strip() and not ln.startswith("#") for ln in lines):
            return None
        import pathspec

        return pathspec.GitIgnoreSpec.from_lines(lines)

    @classmethod
    def above(cls, folder: str) -> Optional["GitIgnore"]:
        """The rules in force in ``folder`` from its work tree's top down (None outside git)."""
        top = git_top(folder)
        if top is None:
            return None
        out = cls()
        spec = cls._load(os.path.join(top, ".git", "info", "exclude"))
        if spec is not None:
            out.specs += ((top, spec),)
        here = os.path.abspath(folder)
        chain = [here]
        while chain[-1] != top:
            chain.append(os.path.dirname(chain[-1]))
        for d in reversed(chain):
            out = out.entering(d)
        return out

    def entering(self, folder: str) -> "GitIgnore":
        """The rules in force inside ``folder`` (its own ``.gitignore`` added)."""
        spec = self._load(os.path.join(folder, ".gitignore"))
        return self if spec is None else GitIgnore(self.specs + ((os.path.abspath(folder), spec),))

    def ignored(self, path: str, is_dir: bool, full: Optional[str] = None) -> bool:
        """Whether git ignores ``path`` (``full``: its absolute path, when known): the
        deepest ``.gitignore`` with a matching rule decides."""
        full = os.path.abspath(path) if full is None else full
        for base, spec in reversed(self.specs):
            prefix = base if base.endswith(os.sep) else base + os.sep
            if not full.startswith(prefix):
                continue         # not below this .gitignore's folder
            rel = full[len(prefix):].replace(os.sep, "/") + ("/" if is_dir else "")
            res = spec.check_file(rel)
            if res.include is not None:
                return bool(res.include)
        return False


def discover(paths: Iterable[str], exclude: Iterable[str] = DEFAULT_EXCLUDE,
             extend_exclude: Iterable[str] = (), respect_gitignore: bool = True) -> Iterator[str]:
    """Yield ``*.py`` files under ``paths`` in a stable order.

    Folders matching ``exclude`` or ``extend_exclude`` (fnmatch patterns on the name or the
    path, as flake8's ``--exclude``), virtualenvs (a ``pyvenv.cfg`` inside) and, with
    ``respect_gitignore``, what git ignores are skipped.  A file given explicitly is yielded
    as it is, whatever its name, and so is a path that does not exist, so that errors about
    it (a missing file) reach the user.  A folder is walked whatever its name (a folder named
    ``x.py`` is a folder); symlinked folders are not followed, symlinked files are yielded (a
    loop or a broken link is then an error for that file).
    """
    from .modules import forget_listings

    forget_listings()      # the project roots of this run are read from its own listings
    patterns = tuple(exclude) + tuple(extend_exclude)
    matcher = _Excludes(patterns)
    cwd = os.getcwd()
    for top in paths:
        if not os.path.isdir(top):
            yield top
            continue
        start = "." if os.path.normpath(top) == "." else top
        ign = GitIgnore.above(start) if respect_gitignore else None
        yield from _walk(start, ign, matcher, cwd, start == ".")


def _under(folder: str, name: str) -> str:
    """``os.path.normpath(os.path.join(folder, name))`` for a normalised ``folder`` and a
    plain name (no separator, never ``.`` or ``..``)."""
    if folder == ".":
        return name
    return folder + name if folder.endswith(os.sep) else folder + os.sep + name


def _walk(start: str, ign: Optional[GitIgnore], matcher, cwd: str, dot: bool) -> Iterator[str]:
    """The files of :func:`discover` under the folder ``start``, in the order of ``os.walk``
    (top-down, names sorted: a folder's files, then each kept subfolder's), with one
    ``scandir`` per folder; ``ign`` is the rules in force in ``start``.  A folder that
    cannot be listed, or holds a ``pyvenv.cfg`` (a virtualenv), yields nothing; symlinked
    folders are not walked (``os.walk(followlinks=False)``)."""
    from .modules import note_listing   # (here: importing discovery loads no API tables)

    todo = [(start, ign, True)]      # (folder, rules in force above it, rules already its own)
    while todo:
        folder, ign, entered = todo.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        names = {e.name.casefold() for e in entries}   # a name found here is confirmed with a stat
        full = os.path.normpath(os.path.join(cwd, folder))
        note_listing(full, names)
        if not entered:
            if "pyvenv.cfg" in names and os.path.exists(os.path.join(folder, "pyvenv.cfg")):
                continue
            if ign is not None and ".gitignore" in names:
                ign = ign.entering(folder)
        check = ign is not None and bool(ign.specs)
        norm = os.path.normpath(folder)
        below = matcher.below(norm) or matcher.below(full)
        pre = folder if folder.endswith(os.sep) else folder + os.sep
        if dot and pre.startswith("./"):
            pre = pre[2:]
        dirs, files = [], []
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                try:
                    if e.is_symlink():
                        continue        # os.walk lists it and never enters it
                except OSError:
                    pass
                dirs.append(e.name)
            elif e.name.endswith(".py"):
                files.append(e.name)
        files.sort()
        for f in files:
            if matcher.match(f, _under(norm, f), _under(full, f), below):
                continue
            if check and ign.ignored(f, False, _under(full, f)):
                continue
            yield pre + f
        kept = []
        for d in sorted(dirs):
            if matcher.match(d, _under(norm, d), _under(full, d), below):
                continue
            if check and ign.ignored(d, True, _under(full, d)):
                continue
            kept.append((os.path.join(folder, d), ign, False))
        todo.extend(reversed(kept))
