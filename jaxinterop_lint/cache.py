"""The incremental cache: per-file results and module summaries, keyed by content hash.

One JSON file per configuration under ``<project root>/.jaxinterop_lint_cache/`` (its name
hashes the tool version and everything in the configuration that changes results).  An
entry is valid when the file's content hash and the hashes of every project file its
analysis used (transitively) are unchanged, so editing one file re-analyses that file and
the files whose summaries depend on it, and nothing else.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import tempfile
from typing import Optional

from . import __version__
from .finding import Edit, Finding, Fix, Step

CACHE_DIR = ".jaxinterop_lint_cache"
FORMAT = 1


_PACKAGE_DIGEST: list = []


def package_digest() -> str:
    """A hash of this package's own sources: a cache written by another build of the linter
    (an upgrade, a fix, a local edit) is never read, whatever its version number says."""
    if not _PACKAGE_DIGEST:
        h = hashlib.blake2b(digest_size=16)
        top = os.path.dirname(os.path.abspath(__file__))
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    h.update(os.path.relpath(path, top).encode())
                    with open(path, "rb") as fh:
                        h.update(fh.read())
        _PACKAGE_DIGEST.append(h.hexdigest())
    return _PACKAGE_DIGEST[0]


def config_key(config) -> str:
    """A hash of the tool version, its own sources and the configuration fields that change
    results."""
    fields = dataclasses.asdict(config)
    fields.pop("source", None)
    blob = json.dumps([__version__, FORMAT, package_digest(), fields], sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


_ABS: dict = {}


def _abspath(path: str) -> str:
    """``os.path.abspath`` memoised for the run (it asks the OS for the cwd every time)."""
    out = _ABS.get(path)
    if out is None:
        out = _ABS[path] = os.path.abspath(path)
    return out


def digest_bytes(data: bytes) -> str:
    """The content hash used in the cache (SHA-1: hardware-accelerated where OpenSSL is)."""
    return hashlib.sha1(data).hexdigest()


class Cache:
    """The cache of one project root and configuration.  Loading a missing or corrupt file
    gives an empty cache; :meth:`save` writes atomically."""

    def __init__(self, root: str, config):
        self.folder = os.path.join(root, CACHE_DIR)
        self.file = os.path.join(self.folder, f"{config_key(config)}.json")
        self.entries: dict = {}
        self.hashes: dict = {}
        self.stats: dict = {}
        self._written: set = set()
        self.changed = False
        try:
            with open(self.file, encoding="utf-8") as fh:
                data = json.load(fh)
            if data.get("format") == FORMAT:
                self.entries = data.get("files", {})
        except (OSError, ValueError):
            self.entries = {}

    def digest(self, path: str) -> Optional[str]:
        """The current content hash of ``path`` (memoised for the run), None if unreadable.

        A file whose size and modification time (nanoseconds) are those recorded with its
        hash is not read again, as git and ruff do."""
        key = _abspath(path)
        if key not in self.hashes:
            try:
                st = os.stat(key)
                stamp = [st.st_mtime_ns, st.st_size]
                known = self.entries.get(key)
                if known is not None and known.get("stat") == stamp and known.get("hash"):
                    self.hashes[key] = known["hash"]
                else:
                    with open(key, "rb") as fh:
                        self.hashes[key] = digest_bytes(fh.read())
                self.stats[key] = stamp
            except OSError:
                self.hashes[key] = None
        return self.hashes[key]

    def entry(self, path: str) -> Optional[dict]:
        """The valid entry of ``path``, or None."""
        key = _abspath(path)
        e = self.entries.get(key)
        if e is None or e.get("hash") != self.digest(key):
            return None
        for dep, h in e.get("deps", {}).items():
            if self.digest(dep) != h:
                return None
        return e

    def put(self, path: str, deps, **fields) -> None:
        """Record an entry for ``path``: its hash, its dependencies' hashes, and ``fields``
        (``result``, ``summary``, ``syntax_ok``).  Fields of a still-valid entry are kept."""
        key = os.path.abspath(path)
        digest = self.digest(key)
        if digest is None:
            return
        old = self.entries.get(key)
        dep_hashes = {os.path.abspath(d): self.digest(d) for d in deps if os.path.abspath(d) != key}
        if old is not None and old.get("hash") == digest and old.get("deps") == dep_hashes:
            merged = dict(old)
        else:
            merged = {"hash": digest, "deps": dep_hashes}
        merged.update(fields)
        if key in self.stats:
            merged["stat"] = self.stats[key]
        self.entries[key] = merged
        self._written.add(key)
        self.changed = True

    def entries_written(self) -> dict:
        """The entries recorded in this run (to merge into the main process's cache)."""
        return {k: v for k, v in self.entries.items() if k in self._written}

    def save(self) -> None:
        """Write the cache atomically (a temporary file in the same folder, then rename).
        A read-only project is not an error: the cache is only an optimisation."""
        if not self.changed:
            return
        try:
            os.makedirs(self.folder, exist_ok=True)
            tag = os.path.join(self.folder, ".gitignore")
            if not os.path.exists(tag):
                with open(tag, "w") as fh:
                    fh.write("# Created by jaxinterop-lint\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"format": FORMAT, "files": self.entries}, fh)
            os.replace(tmp, self.file)
        except OSError:
            pass


def result_to_json(result) -> dict:
    """A :class:`~jaxinterop_lint.engine.FileResult` as JSON-ready data."""
    err = result.error
    return {
        "findings": [dataclasses.asdict(f) for f in result.findings],
        "suppressed": [dataclasses.asdict(f) for f in result.suppressed],
        "handled": [list(h) for h in result.handled],
        "error": None if err is None else [err.message, err.line, err.column],
        "analysed": result.analysed,
    }


def _finding(d: dict) -> Finding:
    d = dict(d)
    d["provenance"] = tuple(Step(**s) for s in d["provenance"])
    if d.get("fix") is not None:
        fx = dict(d["fix"])
        fx["edits"] = tuple(Edit(**e) for e in fx["edits"])
        if "imports" in fx:
            fx["imports"] = tuple(tuple(i) if isinstance(i, list) else i for i in fx["imports"])
        d["fix"] = Fix(**fx)
    return Finding(**d)


def result_from_json(path: str, data: dict):
    """The inverse of :func:`result_to_json` (``path`` as the user spelled it)."""
    from .engine import FileResult, SourceError

    r = FileResult(path)
    r.findings = [dataclasses.replace(_finding(f), path=path) for f in data["findings"]]
    r.suppressed = [dataclasses.replace(_finding(f), path=path) for f in data["suppressed"]]
    r.handled = [(path, h[1]) for h in data["handled"]]
    if data["error"] is not None:
        r.error = SourceError(*data["error"])
    return r


def clean_main(argv) -> int:
    """``jaxinterop-lint clean [PATHS]``: remove the cache folder of each path's project."""
    from .analysis.project import find_root

    removed = 0
    for p in argv or ["."]:
        folder = os.path.join(find_root([p]), CACHE_DIR)
        if os.path.isdir(folder):
            shutil.rmtree(folder, ignore_errors=True)
            print(f"removed {folder}")
            removed += 1
    if not removed:
        print("no cache to remove", file=sys.stderr)
    return 0
