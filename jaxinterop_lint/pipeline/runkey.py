"""The store file's key: what a raw result depends on besides the files it read.

A raw result (findings before the rule selection and ``noqa``) is made by this build of the
linter, by the Python and libcst it runs with, and under the configuration fields that
change what the analysis and the rules find.  :func:`store_key` stamps all of them, so a
cache written by another build, another interpreter or parser, or another such
configuration is never read (:mod:`.store` keeps one file per key).  Stdlib and
:mod:`.store` only: a warm run pays this in every flake8 process.
"""
from __future__ import annotations

import dataclasses
import os

from .store import FORMAT, key_of


# Configuration fields that change what is reported, not the raw results: the command line
# and the flake8 plugin (which selects differently) share one cache.
NOT_IN_KEY = ("select", "ignore", "extend_select", "per_file_ignores", "exclude", "extend_exclude",
              "respect_gitignore", "source")

_DIGEST: list = []


def package_digest() -> str:
    """A stamp of this package's own sources (each file's name, size and modification
    time, read with ``stat`` only: every process of flake8 pays it): a cache written by
    another build of the linter (an upgrade, a local edit) is never read, whatever its
    version number says."""
    if not _DIGEST:
        from .storekey import blake2b

        parts = []
        todo = [("", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]
        while todo:        # depth first, names sorted (one scandir per folder)
            rel, folder = todo.pop()
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
            subs = []
            for e in entries:
                name = e.name
                if name.endswith(".py") and e.is_file():
                    st = e.stat()
                    parts.append(f"{rel}{name}:{st.st_size}:{st.st_mtime_ns};")
                elif name != "__pycache__" and e.is_dir(follow_symlinks=False):
                    subs.append((f"{rel}{name}{os.sep}", e.path))
            todo.extend(reversed(subs))
        _DIGEST.append(blake2b("".join(parts).encode(), digest_size=16).hexdigest())
    return _DIGEST[0]


def parser_stamp() -> list:
    """What else a raw result depends on: the Python running the linter (its recursion
    limits decide what is too deeply nested) and the libcst installed (its parser), by the
    ``stat`` of libcst's version file, without importing it."""
    import importlib.util
    import sys

    try:
        spec = importlib.util.find_spec("libcst")
        st = os.stat(os.path.join(os.path.dirname(spec.origin), "_version.py"))
        libcst = [spec.origin, st.st_size, st.st_mtime_ns]
    except (ImportError, AttributeError, TypeError, OSError, ValueError):
        libcst = None
    return [list(sys.version_info[:2]), libcst]


def store_key(config) -> str:
    """The store file's key: the linter's own sources, the Python and libcst it runs with
    (:func:`parser_stamp`) and the configuration fields that change raw results (every
    field but those of :data:`NOT_IN_KEY`)."""
    from .. import __version__

    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in NOT_IN_KEY}
    return key_of([__version__, FORMAT, package_digest(), parser_stamp(), fields])
