"""The cache: a store of plain data (JSON) below every stage; it imports nothing of the engine.

One file per configuration key under ``<project root>/.jaxinterop_lint_cache/``.  It maps the
absolute path of a file to an *entry*, a dict of plain data (one line of the file each, every
field its own JSON text, parsed only when read: :mod:`.storeformat`)::

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

Where the store is read and written: :meth:`Store.__init__` reads the file once
(``_load``); :meth:`Store.save` writes it (lock, reload, merge, write a temporary file,
rename).  Nothing else touches the disk.  Workers never ship the store: :meth:`Store.drain`
hands over only the entries written since the last drain, and :meth:`Store.merge` takes
them in.

The cache folder is repository content: a pull request can commit anything there (issue 13).
So only what this user wrote on this machine is believed:

- each store file is ``MAGIC <hex MAC>\\n<payload>``; the MAC (keyed BLAKE2b, see
  :mod:`.storekey`) covers the file's
  own path and the payload, under a per-user secret key (:func:`secret_key`) kept outside the
  repository, in the user cache folder of ``platformdirs`` (``JAXINTEROP_LINT_KEY_DIR``
  points elsewhere, for tests; see :mod:`.storekey`), and each entry line of the payload
  starts with its own MAC of the rest of the line and the file's path
  (:func:`~.storekey.line_mac`): the index of every entry (:attr:`Store.entries`) is made
  only when the file's MAC checks, one entry read without the index (:meth:`Store.get` in a
  flake8 process) only when its line's MAC checks.  No key (it cannot be made or read safely): no cache, no error;
- the folder is opened without following a symlink and must be a directory; the store file
  is opened relative to it with ``O_NOFOLLOW | O_NONBLOCK`` (a link to ``/dev/zero`` or a FIFO
  is refused, never read), must be a regular file, and at most :data:`MAX_BYTES` are read;
- the payload is parsed only after its MAC checks, and each entry when first read, its
  shape then checked (:func:`.storeformat.entry_of`; a field parsed later, such as a
  summary, is checked then and is absent when wrong); a stale, foreign (another format),
  malformed or oversized file or entry is a miss;
- writing: nothing through a symlink, nothing outside the folder (``.gitignore`` is created
  with ``O_CREAT | O_EXCL | O_NOFOLLOW``, the store file by a temporary file in the folder
  and ``os.replace``, all relative to the folder's descriptor).

Where ``os.open`` cannot open relative to a folder descriptor or lacks ``O_NOFOLLOW``
(Windows), the cache is off.
"""
from __future__ import annotations

import json
import os
import stat
import sys
import time
from typing import Callable, Optional

from . import storeformat as fmt
from .storekey import _CLOEXEC, _DIRECTORY, _NOFOLLOW, _NONBLOCK, blake2b, compare_digest, line_mac, mac_of, secret_key

CACHE_DIR = ".jaxinterop_lint_cache"
FORMAT = fmt.FORMAT
MAGIC = b"jaxinterop-lint-cache-%d " % FORMAT
MAX_BYTES = 128 * 2**20   # a store file larger than this is not read (a miss), nor written
STALE_TMP_S = 3600        # temporary files of a killed run older than this are removed on save
RACY_NS = 2_000_000_000   # a file modified less than 2 s before it was read gets no stamp


# The most entries read one line at a time (a search of the file each) before the index of
# every line is made (one pass): a result that holds for the plan's epoch reads the entry of
# every file of the project (transformers: 2,914 searches of a 4.6 MB file were 1.0 s of a
# flake8 process on one file); a result with no epoch reads a few.
EARLY_LINES = 8

SMALL_HASH_BYTES = 256 * 1024   # hashed without importing hashlib, in all, by one process


def digest_bytes(data: bytes) -> str:
    """The content hash used in the store: SHA-1, hex (OpenSSL's, hardware-accelerated,
    through ``hashlib``).  A process that hashes only a few small files (flake8 on one file:
    the file itself) hashes them with CPython's own ``_sha1`` (the same digests; about 10x
    slower per byte, but ``hashlib`` imports OpenSSL, about 3 ms); once it has hashed
    :data:`SMALL_HASH_BYTES` that way, or when ``hashlib`` is loaded already, OpenSSL's."""
    if not _SHA1:
        if _SMALL_SHA1 is not None and _SMALL_BUDGET[0] >= len(data) and "hashlib" not in sys.modules:
            _SMALL_BUDGET[0] -= len(data)
            return _SMALL_SHA1(data).hexdigest()
        import hashlib

        _SHA1.append(hashlib.sha1)
    return _SHA1[0](data).hexdigest()


_SHA1: list = []
_SMALL_BUDGET = [SMALL_HASH_BYTES]
try:
    from _sha1 import sha1 as _SMALL_SHA1
except ImportError:  # pragma: no cover - another Python
    _SMALL_SHA1 = None


def _plain(value):
    """What JSON cannot hold, as plain data: an object that says how (``to_json()``, such as
    a fix computed when it is first needed)."""
    to_json = getattr(value, "to_json", None)
    if to_json is None:
        raise TypeError(f"not plain data: {type(value).__name__}")
    return to_json()


def key_of(parts) -> str:
    """A short hash of JSON-able ``parts`` (the configuration key of a store file): 16 hex
    digits of BLAKE2b (no import of OpenSSL, see :mod:`.storekey`)."""
    return blake2b(json.dumps(parts, sort_keys=True, default=str).encode(), digest_size=8).hexdigest()


def stamp_of(st: os.stat_result) -> list:
    """The stat fields the shortcut compares: mtime, size, ctime (never set by ``cp -p``,
    ``rsync -a`` or ``touch``) and inode."""
    return [st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino]


valid_entry = fmt.valid_entry   # the shape of a plain entry (see :mod:`.storeformat`)


def _open_folder(folder: str) -> int:
    """A descriptor of the cache folder, which must be a real directory (a symlink or a
    file there raises OSError)."""
    return os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)


def _read_capped(fd: int, cap: int, size_hint: int = 0) -> Optional[bytes]:
    """At most ``cap`` bytes of ``fd`` (None when there are more): one read of
    ``size_hint + 1`` bytes when the file did not grow since its ``fstat``."""
    chunks, size = [], 0
    while size <= cap:
        chunk = os.read(fd, min(max(size_hint + 1 - size, 1 << 20), cap + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return None if size > cap else b"".join(chunks)


class Store:
    """The entries of one project root and configuration key.

    ``root`` None gives a store that keeps entries in memory only.  Loading a missing,
    corrupt or foreign-format file gives an empty store; nothing here raises for bad data."""

    def __init__(self, root: Optional[str], key: str, name: Optional[str] = None):
        self.folder = os.path.join(root, CACHE_DIR) if root else None
        self.name = name or f"{key}.json"
        self.secret = secret_key() if self.folder else None
        if self.secret is None:
            self.folder = None        # no key: the cache is off for this run
        self.file = os.path.join(self.folder, self.name) if self.folder else None
        self._entries: Optional[dict] = None if self.file else {}
        self._data: Optional[bytes] = None   # the store file's bytes, its MAC checked (_verified)
        self._raw: Optional[bytes] = None    # its bytes read for single lines (_line), the whole MAC unchecked
        self._early: dict = {}        # entries read before the index was made (get): path -> entry or None
        self._written: dict = {}      # entries written since the last drain
        self._unsaved: dict = {}      # entries written since the last save

    @property
    def entries(self) -> dict:
        """path -> entry: the bytes of its line until it is first read (:meth:`get`).  The
        store file is read (and its MAC checked) on first use: a warm run that the warm
        record answers (:mod:`.warm`) never reads it."""
        if self._entries is None:
            data = self._verified()
            files = fmt.index(data, skip=1) if data else None
            files = files or {}
            for path, e in self._early.items():   # what get() read (and judged) already
                if e is None:
                    files.pop(path, None)
                else:
                    files[path] = e
            self._entries, self._data, self._early = files, None, {}
        return self._entries

    @entries.setter
    def entries(self, value: dict) -> None:
        self._entries, self._data, self._early = value, None, {}

    def _verified(self) -> bytes:
        """The bytes of the store file when its MAC is this user's and its payload of this
        format (read once), else ``b""``.  Never raises."""
        if self._data is None:
            data = self._raw if self._raw is not None else self._bytes(None)
            self._data = data if data and self._signed(data) else b""
            self._raw = None
        return self._data

    def _unverified(self) -> bytes:
        """The bytes of the store file (read once) when it is of this format, else ``b""``:
        its whole MAC not checked (each line read is: :meth:`_line`).  Never raises."""
        if self._data is not None:
            return self._data
        if self._raw is None:
            self._raw = self._bytes(None) or b""
        return self._raw

    def _line(self, path: str) -> Optional[bytes]:
        """The rest of the line of ``path`` in the store file (what
        :func:`.storeformat.index` maps it to) when that line's own MAC is this user's
        (:func:`~.storekey.line_mac`), found without indexing, nor checking the MAC of, every
        line: a flake8 process reads a few entries of a store of the whole project.  The
        writer spells a path as ``dumps(path)`` after its line's MAC and writes each path
        once; the last line of a path is the one :func:`~.storeformat.index` keeps."""
        data = self._unverified()
        needle = b"\t" + fmt.dumps(path) + b"\t"
        end = len(data)
        while True:
            at = data.rfind(needle, 0, end)
            if at < 0:
                return None
            start = at - fmt.UNSIGNED_LEN        # where the line's MAC starts
            if start > 0 and data[start - 1] == 10:     # (a line's start: a field's tab otherwise)
                break
            end = at
        stop = data.find(b"\n", at)
        stop = len(data) if stop < 0 else stop
        line = data[at + 1:stop]
        if not compare_digest(data[start:at], line_mac(self.secret, self.file, line)):
            return None
        return data[at + len(needle):stop]

    def _load(self, folder_fd: Optional[int] = None) -> dict:
        """The valid entries of the store file (see the module's docstring); ``{}`` for a
        missing, foreign, stale, malformed or oversized file.  Never raises."""
        try:
            data = self._read(folder_fd)
            files = fmt.index(data, skip=1) if data is not None else None
        except (OSError, ValueError, MemoryError):
            return {}
        return files or {}   # each entry is parsed, and its shape checked, when first read (:meth:`get`)

    def _read(self, folder_fd: Optional[int]) -> Optional[bytes]:
        """The bytes of the store file when the MAC of its payload (all after the first
        line) is this user's, else None."""
        data = self._bytes(folder_fd)
        return data if data is not None and self._signed(data) else None

    def _signed(self, data: bytes) -> bool:
        """Whether the MAC on the first line of the store file's bytes ``data`` is this
        user's MAC of the rest (:func:`~.storekey.mac_of`)."""
        end = data.find(b"\n", 0, len(MAGIC) + 80)
        if end < 0:
            return False
        mac, payload = data[len(MAGIC):end], memoryview(data)[end + 1:]   # no copy of the payload
        return compare_digest(mac, mac_of(self.secret, self.file, payload).encode())

    def _bytes(self, folder_fd: Optional[int]) -> Optional[bytes]:
        """The bytes of the store file (opened safely, at most :data:`MAX_BYTES`) when they
        start with this format's magic and header line, else None; no MAC checked.  Never
        raises."""
        try:
            data = self._open_and_read(folder_fd)
        except (OSError, ValueError, MemoryError):
            return None
        if data is None or not data.startswith(MAGIC):
            return None
        first = data.find(b"\n", 0, len(MAGIC) + 80)
        if first < 0 or data[first + 1:first + 1 + len(fmt.HEADER) + 1] not in (fmt.HEADER, fmt.HEADER + b"\n"):
            return None
        return data

    def _open_and_read(self, folder_fd: Optional[int]) -> Optional[bytes]:
        own = folder_fd is None
        dfd = _open_folder(self.folder) if own else folder_fd
        try:
            fd = os.open(self.name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dfd)
        finally:
            if own:
                os.close(dfd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
                return None
            return _read_capped(fd, MAX_BYTES, st.st_size)
        finally:
            os.close(fd)

    # -- reading -------------------------------------------------------------------------
    def get(self, path: str) -> Optional[dict]:
        """The entry of ``path`` (absolute), or None.  An entry is parsed when first read,
        its head and result then (one of the wrong shape is none: :func:`.storeformat.entry_of`),
        its facts and summary when first used (:class:`.storeformat.Entry`)."""
        if self._entries is None and len(self._early) < EARLY_LINES:
            # no index yet: this one line (a flake8 process reads a few entries)
            if path not in self._early:
                rest = self._line(path)
                self._early[path] = fmt.entry_of(rest) if rest is not None else None
            return self._early[path]
        e = self.entries.get(path)
        if not isinstance(e, bytes):
            return e
        e = fmt.entry_of(e)
        if e is None:
            del self.entries[path]
            return None
        self.entries[path] = e
        return e

    def known_hash(self, path: str, stamp: list) -> Optional[str]:
        """The recorded hash of ``path`` when ``stamp`` is the one recorded with it.  Once
        the index is made, only the head of an entry not read yet is parsed (a result that
        holds for the plan's epoch asks it of every file of the project)."""
        if self._entries is None and len(self._early) < EARLY_LINES:
            e = self.get(path)
        else:
            e = self.entries.get(path)
            if isinstance(e, bytes):
                e = fmt.head_of(e)
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
        if not isinstance(deps, dict):
            return None
        for d, h in deps.items():     # a loop, not any(): results of large projects have hundreds
            if hash_of(d) != h:
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
        if old is not None and old.get("hash") == digest:
            e = old.with_fields(fields) if isinstance(old, fmt.Entry) else dict(old, **fields)
        else:
            e = dict(fields, hash=digest)
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

    def save(self, merge: bool = True) -> None:
        """Write the entries of this run into the store file: under a lock, the file is read
        again and this run's entries merged in (``merge`` False: they replace what it held),
        then written to a temporary file in the
        folder and renamed (concurrent runs, such as flake8's processes, lose nothing and
        never see half a file).  Nothing is written when the folder is a symlink or not a
        directory, nor through any symlink in it.  A read-only project is not an error: the
        cache is only an optimisation.  Never raises OSError."""
        if not self._unsaved or not self.file:
            return
        try:
            try:
                dfd = _open_folder(self.folder)
            except FileNotFoundError:
                os.mkdir(self.folder)
                dfd = _open_folder(self.folder)
        except OSError:
            return
        try:
            self._tag(dfd)
            with _Lock(dfd) as lock:
                if not lock.held:
                    return
                current = self._load(dfd) if merge else {}
                current.update(self._unsaved)
                data = self._encode(current)
                if len(data) > MAX_BYTES:      # only this run's entries, or nothing
                    current = dict(self._unsaved)
                    data = self._encode(current)
                    if len(data) > MAX_BYTES:
                        return
                self._write(dfd, data)
                _remove_stale(dfd)
            self.entries = current
            self._unsaved = {}
        except OSError:
            pass
        finally:
            os.close(dfd)

    def _encode(self, files: dict) -> bytes:
        secret, file = self.secret, self.file
        payload = fmt.payload(files, default=_plain, sign=lambda line: line_mac(secret, file, line))
        return MAGIC + mac_of(secret, file, payload).encode() + b"\n" + payload

    def _write(self, dfd: int, data: bytes) -> None:
        tmp = f".tmp-{os.getpid()}-{os.urandom(6).hex()}.json"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dfd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, self.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise

    @staticmethod
    def _tag(dfd: int) -> None:
        """Create ``.gitignore`` in the folder unless something (even a dangling symlink)
        is there already."""
        try:
            fd = os.open(".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644,
                         dir_fd=dfd)
        except FileExistsError:
            return
        try:
            os.write(fd, b"# Created by jaxinterop-lint\n*\n")
        finally:
            os.close(fd)


def _remove_stale(dfd: int) -> None:
    """Remove temporary files of runs killed mid-write (older than :data:`STALE_TMP_S`)."""
    now = time.time()
    try:
        with os.scandir(dfd) as it:
            names = [e.name for e in it if e.name.startswith(".tmp-") and e.is_file(follow_symlinks=False)
                     and now - e.stat(follow_symlinks=False).st_mtime > STALE_TMP_S]
        for name in names:
            os.unlink(name, dir_fd=dfd)
    except OSError:
        pass


class _Lock:
    """An exclusive ``flock`` on ``.lock`` in the folder of descriptor ``dfd``; ``held`` is
    False when it cannot be taken (a symlink or a FIFO there: nothing is written), True
    without locking where fcntl is missing."""

    def __init__(self, dfd: int):
        self.dfd = dfd
        self.fd = -1
        self.held = False

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover
            self.held = True
            return self
        try:
            self.fd = os.open(".lock", os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o600,
                              dir_fd=self.dfd)
            if not stat.S_ISREG(os.fstat(self.fd).st_mode):
                return self
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            self.held = True
        except OSError:
            pass
        return self

    def __exit__(self, *exc):
        if self.fd >= 0:
            os.close(self.fd)   # closing releases the lock
        return False


def clean(folder_of_project: str) -> bool:
    """Remove the cache folder of a project root; True when there was one."""
    import shutil

    folder = os.path.join(folder_of_project, CACHE_DIR)
    if os.path.isdir(folder) and not os.path.islink(folder):
        shutil.rmtree(folder, ignore_errors=True)
        return True
    return False


def seal(key: bytes, file: str, payload: bytes) -> bytes:
    """The bytes of the store file ``file`` holding ``payload`` (a payload of
    :mod:`.storeformat`, its lines' MAC fields whatever they are) signed under ``key``: each
    entry line's MAC and the whole file's, as :meth:`Store.save` writes them (for tools and
    tests that write a store file themselves)."""
    lines = payload.split(b"\n")
    for i in range(1, len(lines)):
        parts = lines[i].split(b"\t", 1)
        if len(parts) == 2:
            lines[i] = line_mac(key, file, parts[1]) + b"\t" + parts[1]
    payload = b"\n".join(lines)
    return MAGIC + mac_of(key, file, payload).encode() + b"\n" + payload
