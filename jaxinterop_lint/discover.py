"""Find the Python files to lint under the given paths."""
from __future__ import annotations

import fnmatch
import functools
import os
import re
from typing import Iterable, Iterator

# Folders never descended into (flake8's and ruff's defaults, plus our cache).
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", ".tox", ".nox", ".venv", "venv", ".eggs", "*.egg-info",
    "__pycache__", "build", "dist", "node_modules", "site-packages", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".jaxinterop_lint_cache", "__pypackages__",
)


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


def _excluded(path: str, patterns: Iterable[str]) -> bool:
    matcher = _matcher(tuple(patterns))
    if matcher is None:
        return False
    name = os.path.basename(path.rstrip(os.sep)) or path
    if matcher.match(name):
        return True
    norm = os.path.normpath(path)
    return bool(matcher.match(norm) or matcher.match(os.path.abspath(path)))


def discover(paths: Iterable[str], exclude: Iterable[str] = DEFAULT_EXCLUDE,
             extend_exclude: Iterable[str] = ()) -> Iterator[str]:
    """Yield ``*.py`` files under ``paths`` in a stable order.

    Folders matching ``exclude`` or ``extend_exclude`` (fnmatch patterns on the name or the
    path, as flake8's ``--exclude``) and virtualenvs (a ``pyvenv.cfg`` inside) are skipped.
    A file given explicitly is yielded as it is, whatever its name, and so is a path that
    does not exist, so that errors about it (a missing file) reach the user.  A folder is
    walked whatever its name (a folder named ``x.py`` is a folder); symlinked folders are not
    followed, symlinked files are yielded (a loop or a broken link is then an error for that
    file).
    """
    patterns = tuple(exclude) + tuple(extend_exclude)
    for top in paths:
        if not os.path.isdir(top):
            yield top
            continue
        for folder, dirs, files in os.walk(top, followlinks=False):
            dirs[:] = sorted(
                d for d in dirs
                if not _excluded(os.path.join(folder, d), patterns)
                and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
            )
            for f in sorted(files):
                full = os.path.join(folder, f)
                if f.endswith(".py") and not _excluded(full, patterns):
                    yield full
