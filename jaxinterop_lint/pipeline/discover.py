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

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether git ignores ``path``: the deepest ``.gitignore`` with a matching rule decides."""
        full = os.path.abspath(path)
        for base, spec in reversed(self.specs):
            rel = os.path.relpath(full, base).replace(os.sep, "/") + ("/" if is_dir else "")
            if rel.startswith("../"):
                continue
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
    patterns = tuple(exclude) + tuple(extend_exclude)
    cwd = os.getcwd()
    for top in paths:
        if not os.path.isdir(top):
            yield top
            continue
        start = "." if os.path.normpath(top) == "." else top
        rules = {}
        if respect_gitignore:
            ign = GitIgnore.above(start)
            if ign is not None:
                rules[os.path.abspath(start)] = ign
        for folder, dirs, files in os.walk(start, followlinks=False):
            ign = rules.get(os.path.abspath(folder)) if rules else None
            kept = []
            for d in sorted(dirs):
                full = os.path.join(folder, d)
                if _excluded(full, patterns, cwd) or os.path.exists(os.path.join(full, "pyvenv.cfg")):
                    continue
                if ign is not None:
                    if ign.specs and ign.ignored(full, True):
                        continue
                    rules[os.path.abspath(full)] = ign.entering(full)
                kept.append(d)
            dirs[:] = kept
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                full = os.path.join(folder, f)
                if _excluded(full, patterns, cwd) or (ign is not None and ign.specs and ign.ignored(full, False)):
                    continue
                yield full[2:] if start == "." and full.startswith("./") else full
