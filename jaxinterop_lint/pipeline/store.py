"""The cache: a store of plain data (JSON) below every stage; it imports nothing of the engine.

One file per configuration key under ``<project root>/.jaxinterop_lint_cache/``.  It maps the
absolute path of a file to an *entry*, a dict of plain data::

    {"hash": content hash of the bytes the entry was computed from,
     "stamp": [mtime_ns, size, ctime_ns, inode] seen when those bytes were read (optional),
     "facts": the plan's facts of the file (imports, words),
     "result": {"data": the raw lint result, "deps": ..., "absent": ...},
     "summary": {"data": the frozen module summary, "deps": ..., "absent": ...}}

``deps`` maps every project file a field was computed from (transitively) to its hash,
``absent`` lists files that did not exist and would change the field if they did (a module
the file imports that is missing).  A field is believed only when the entry's ``hash`` is
the hash of the file now, every dependency has the recorded hash, and every absent path is
still absent (:meth:`Store.field`).  The
stat shortcut (:meth:`Store.known_hash`) gives a file's hash without reading it when size,
mtime, ctime and inode all match, so ``cp -p`` or ``rsync -a`` of other content (same size
and mtime, but a new ctime or inode) is read again; a stamp is recorded only when the file's
mtime is older than :data:`RACY_NS` at the time it was read (git's "racily clean" rule).

Where the store is read and written (for the hardening layer): :meth:`Store.__init__` reads
the file once (``_load``); :meth:`Store.save` writes it (lock, reload, merge, write a
temporary file, rename).  Nothing else touches the disk.  Workers never ship the store:
:meth:`Store.drain` hands over only the entries written since the last drain, and
:meth:`Store.merge` takes them in.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Callable, Optional

CACHE_DIR = ".jaxinterop_lint_cache"
FORMAT = 2
RACY_NS = 2_000_000_000   # a file modified less than 2 s before it was read gets no stamp


def digest_bytes(data: bytes) -> str:
    """The content hash used in the store (SHA-1: hardware-accelerated where OpenSSL is)."""
    return hashlib.sha1(data).hexdigest()


def _plain(value):
    """What JSON cannot hold, as plain data: an object that says how (``to_json()``, such as
    a fix computed when it is first needed)."""
    to_json = getattr(value, "to_json", None)
    if to_json is None:
        raise TypeError(f"not plain data: {type(value).__name__}")
    return to_json()


def key_of(parts) -> str:
    """A short hash of JSON-able ``parts`` (the configuration key of a store file)."""
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def stamp_of(st: os.stat_result) -> list:
    """The stat fields the shortcut compares: mtime, size, ctime (never set by ``cp -p``,
    ``rsync -a`` or ``touch``) and inode."""
    return [st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino]


class Store:
    """The entries of one project root and configuration key.

    ``root`` None gives a store that keeps entries in memory only.  Loading a missing,
    corrupt or foreign-format file gives an empty store; nothing here raises for bad data."""

    def __init__(self, root: Optional[str], key: str):
        self.folder = os.path.join(root, CACHE_DIR) if root else None
        self.file = os.path.join(self.folder, f"{key}.json") if self.folder else None
        self.entries: dict = self._load() if self.file else {}
        self._written: dict = {}      # entries written since the last drain
        self._unsaved: dict = {}      # entries written since the last save

    def _load(self) -> dict:
        try:
            with open(self.file, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return {}
        files = data.get("files") if isinstance(data, dict) and data.get("format") == FORMAT else None
        return files if isinstance(files, dict) else {}

    # -- reading -------------------------------------------------------------------------
    def get(self, path: str) -> Optional[dict]:
        """The raw entry of ``path`` (absolute), or None; see :meth:`valid`."""
        e = self.entries.get(path)
        return e if isinstance(e, dict) else None

    def known_hash(self, path: str, stamp: list) -> Optional[str]:
        """The recorded hash of ``path`` when ``stamp`` is the one recorded with it."""
        e = self.get(path)
        if e is not None and e.get("stamp") == stamp and isinstance(e.get("hash"), str):
            return e["hash"]
        return None

    @staticmethod
    def field(entry: Optional[dict], name: str, digest: Optional[str], hash_of: Callable[[str], Optional[str]],
              exists: Callable[[str], bool] = os.path.exists):
        """The data of field ``name`` (``result``, ``summary``) of ``entry`` when it was
        computed from content ``digest`` and everything it used is unchanged:
        ``hash_of(dep)`` is the recorded hash of each dependency, ``exists(p)`` is False for
        each absent path.  None otherwise."""
        if entry is None or digest is None or entry.get("hash") != digest:
            return None
        f = entry.get(name)
        if not isinstance(f, dict) or "data" not in f:
            return None
        deps = f.get("deps") or {}
        if not isinstance(deps, dict) or any(hash_of(d) != h for d, h in deps.items()):
            return None
        if any(exists(p) for p in f.get("absent") or ()):
            return None
        return f["data"]

    # -- writing -------------------------------------------------------------------------
    def put(self, path: str, digest: str, stamp: Optional[list] = None, **fields) -> None:
        """Record ``fields`` for ``path`` computed from content ``digest``; fields of an
        entry of the same content are kept unless given (a ``result`` beside a ``summary``);
        an entry of other content is replaced."""
        old = self.get(path)
        e = dict(old) if old is not None and old.get("hash") == digest else {"hash": digest}
        e.update(fields)
        if stamp is not None:
            e["stamp"] = stamp
        self.entries[path] = e
        self._written[path] = e
        self._unsaved[path] = e

    def drain(self) -> dict:
        """The entries written since the last drain (what a worker sends back)."""
        out, self._written = self._written, {}
        return out

    def merge(self, entries: dict) -> None:
        """Take in entries drained from another store of the same key (a worker's)."""
        for path, e in entries.items():
            self.entries[path] = e
            self._unsaved[path] = e

    def save(self) -> None:
        """Write the entries of this run into the store file: under a lock, the file is read
        again and this run's entries merged in, then written to a temporary file and renamed
        (concurrent runs, such as flake8's processes, lose nothing and never see half a
        file).  A read-only project is not an error: the cache is only an optimisation."""
        if not self._unsaved or not self.file:
            return
        try:
            os.makedirs(self.folder, exist_ok=True)
            tag = os.path.join(self.folder, ".gitignore")
            if not os.path.exists(tag):
                with open(tag, "w") as fh:
                    fh.write("# Created by jaxinterop-lint\n*\n")
            with _Lock(os.path.join(self.folder, ".lock")):
                current = self._load()
                current.update(self._unsaved)
                fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".json")
                try:
                    with os.fdopen(fd, "w", encoding="utf-8") as fh:
                        json.dump({"format": FORMAT, "files": current}, fh, separators=(",", ":"), default=_plain)
                    os.replace(tmp, self.file)
                except BaseException:
                    if os.path.exists(tmp):
                        os.unlink(tmp)
                    raise
            self.entries = current
            self._unsaved = {}
        except OSError:
            pass


class _Lock:
    """An exclusive ``flock`` on ``path`` (no lock where fcntl is missing)."""

    def __init__(self, path: str):
        self.path = path
        self.fd = -1

    def __enter__(self):
        try:
            import fcntl

            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except (ImportError, OSError):
            self.fd = -1
        return self

    def __exit__(self, *exc):
        if self.fd >= 0:
            os.close(self.fd)   # closing releases the lock
        return False


def clean(folder_of_project: str) -> bool:
    """Remove the cache folder of a project root; True when there was one."""
    import shutil

    folder = os.path.join(folder_of_project, CACHE_DIR)
    if os.path.isdir(folder):
        shutil.rmtree(folder, ignore_errors=True)
        return True
    return False
