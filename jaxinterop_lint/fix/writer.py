"""The one way the linter rewrites a user's file (``--fix`` and ``--add-noqa``).

:func:`snapshot` reads a file for update; :func:`replace` writes its new bytes, refusing
(:class:`WriteRefused`, a one-line reason) rather than doing harm:

* only a regular file whose real path (symlinks resolved) lies inside the real folders the
  user gave (:func:`allowed_roots`) is written, never through a symlink out of them;
* a file the user cannot write (``access(2)``: its mode, owner, read-only mount) is refused:
  replacing it by rename would need only the folder to be writable;
* the new file gets the old one's permission bits, owner and group (``fchown``; a file owned
  by someone else that the user could not give back to them is refused);
* the new bytes go to a temporary file in the same folder, fsynced, then take the file's
  place atomically: on Linux by exchanging the two names (``renameat2(RENAME_EXCHANGE)``), so
  that what was displaced can be checked afterwards: if it is not exactly the snapshot (an
  editor saved in place, or renamed its own file over it, after the last check) the exchange
  is undone and the user's edit stays.  Elsewhere ``os.replace`` follows a last check, and an
  in-place edit that still slips in is written back;
* SIGINT, SIGTERM and SIGHUP are held back while a temporary file exists (delivered right
  after), so no temporary file survives them; one left by SIGKILL or a crash is removed by
  :func:`clean_stale` at the start of the next run that writes in that folder (its name
  carries the pid of its writer, and a writer that is gone cannot come back for it).

Imports nothing of the engine or libcst: ``--add-noqa`` uses it too.
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import signal
import stat
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Optional

SUFFIX = ".jxitmp"
# ".<name>.<pid>.<random>.jxitmp" (this version) and ".<name>.<random>.jxifix" (0.1.0)
_TEMP = re.compile(r"^\..+\.(?P<pid>\d+)\.[0-9a-f]{16}\.jxitmp$|^\..+\.jxifix$")
STALE_AFTER = 600.0          # seconds after which a temporary file of a live pid is stale too
_HELD = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
_cleaned: set = set()


class WriteRefused(Exception):
    """The file was not written; ``str(exc)`` says why in one line."""


@dataclass(frozen=True)
class Snapshot:
    """A file as read for update: its real path, bytes and ``os.stat`` at the time."""

    real: str
    data: bytes
    stat: os.stat_result


def allowed_roots(paths: Iterable[str]) -> list[str]:
    """Real folders that may be written in: each given folder, and the folder of each given
    file."""
    roots = []
    for p in paths:
        folder = p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))
        roots.append(os.path.realpath(folder))
    return roots


def inside(real: str, roots: Iterable[str]) -> bool:
    """Whether the real path ``real`` lies inside one of ``roots``."""
    for root in roots:
        try:
            if os.path.commonpath([real, root]) == root:
                return True
        except ValueError:
            continue
    return False


def snapshot(path: str) -> Snapshot:
    """Read ``path`` for update.  Raises OSError (or ValueError for a file that is not a
    regular file)."""
    real = os.path.realpath(path)
    fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    return Snapshot(real, b"".join(chunks), st)


def _same(st: os.stat_result, before: os.stat_result) -> bool:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == \
        (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns)


def _still(path: str, snap: Snapshot) -> bool:
    """Whether ``path`` is still the snapshot's file with the snapshot's bytes."""
    try:
        st = os.lstat(path)
        if not _same(st, snap.stat):
            return False
        with open(path, "rb") as fh:
            return fh.read() == snap.data
    except OSError:
        return False


def clean_stale(folders: Iterable[str]) -> int:
    """Remove the temporary files that writers which are gone (SIGKILL, a crash, a power
    cut) left in ``folders``; each folder once per process.  Returns how many were removed."""
    removed = 0
    for folder in folders:
        folder = os.path.realpath(folder or ".")
        if folder in _cleaned:
            continue
        _cleaned.add(folder)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            m = _TEMP.match(name)
            if m is None:
                continue
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
                if not stat.S_ISREG(st.st_mode):
                    continue
                pid = int(m.group("pid")) if m.group("pid") else None
                if pid == os.getpid():
                    continue
                if (pid is not None and not _alive(pid)) or time.time() - st.st_mtime > STALE_AFTER:
                    os.unlink(path)
                    removed += 1
            except OSError:
                continue
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


class _SignalsHeld:
    """Hold back SIGINT/SIGTERM/SIGHUP in this thread (delivered on exit), where possible."""

    def __enter__(self):
        self.old = None
        if hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread():
            self.old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        return self

    def __exit__(self, *exc) -> None:
        if self.old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self.old)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _exchange(a: str, b: str) -> bool:
    """Swap the names ``a`` and ``b`` atomically (Linux ``renameat2(RENAME_EXCHANGE)``).
    False where the system or the file system cannot; raises OSError for other failures."""
    fn = _renameat2()
    if fn is None:
        return False
    import ctypes

    if fn(-100, os.fsencode(a), -100, os.fsencode(b), 2) == 0:  # AT_FDCWD, RENAME_EXCHANGE
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), b)


_RENAMEAT2: list = []


def _renameat2():
    if not _RENAMEAT2:
        fn = None
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            fn = libc.renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
        except (OSError, AttributeError, ImportError):
            fn = None
        _RENAMEAT2.append(fn)
    return _RENAMEAT2[0]


def _before_swap() -> None:
    """Called right before the new file takes the old one's place (a seam for the tests that
    play an editor saving at the worst moment)."""


def replace(snap: Snapshot, data: bytes, roots: Optional[Iterable[str]] = None) -> None:
    """Write ``data`` in place of the file of ``snap`` (see the module docstring for every
    rule).  ``roots``: the real folders writes may go to (None: anywhere).  Raises
    :class:`WriteRefused` with the reason; the file is then as it was."""
    real = snap.real
    if roots is not None and not inside(real, roots):
        raise WriteRefused("is a symlink out of the linted folders; not written")
    try:
        st = os.lstat(real)
    except OSError as exc:
        raise WriteRefused(f"cannot write: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused("is no longer a regular file; not written")
    if not os.access(real, os.W_OK):
        raise WriteRefused("is not writable by you (permission denied); not written")
    if not _same(st, snap.stat):
        raise WriteRefused("changed on disk while it was being fixed; not overwritten")
    folder = os.path.dirname(real) or "."
    clean_stale([folder])
    tmp = os.path.join(folder, f".{os.path.basename(real)}.{os.getpid()}.{secrets.token_hex(8)}{SUFFIX}")
    with _SignalsHeld():
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise WriteRefused(f"cannot write: {exc.strerror or exc}") from None
        holds = "new"  # what the temporary name holds: "new" (ours), "old" (displaced), "user"
        try:
            try:
                _write_all(fd, data)
                os.fsync(fd)
                os.fchmod(fd, stat.S_IMODE(snap.stat.st_mode))
                _keep_owner(fd, snap.stat)
            finally:
                os.close(fd)
            if not _still(real, snap):
                raise WriteRefused("changed on disk while it was being fixed; not overwritten")
            _before_swap()
            if _exchange(tmp, real):
                holds = "old"
                if not _still(tmp, snap):  # an edit landed after the last check: put it back
                    holds = "user"
                    _exchange(tmp, real)
                    holds = "new"
                    raise WriteRefused("changed on disk while it was being fixed; not overwritten")
            else:
                _replace_checked(tmp, real, snap)
                holds = "gone"
        except OSError as exc:
            if holds == "user":
                raise WriteRefused(f"changed on disk while it was being fixed, and could not be put back "
                                   f"({exc.strerror or exc}): your version is {tmp}") from None
            raise WriteRefused(f"cannot write: {exc.strerror or exc}") from None
        finally:
            if holds in ("new", "old"):
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _keep_owner(fd: int, before: os.stat_result) -> None:
    """Give the new file the old one's owner and group, or refuse."""
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) == (before.st_uid, before.st_gid):
        return
    try:
        os.fchown(fd, before.st_uid, before.st_gid)
    except PermissionError:
        whose = "another user" if mine.st_uid != before.st_uid else "a group you are not in"
        raise WriteRefused(f"belongs to {whose}: a rewritten file could not keep its owner and group; "
                           f"not written") from None


def _replace_checked(tmp: str, real: str, snap: Snapshot) -> None:
    """``os.replace`` where names cannot be exchanged: the old file is held open, and an
    in-place edit that lands between the last check and the rename is written back."""
    fd = os.open(real, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if not _same(os.fstat(fd), snap.stat):
            raise WriteRefused("changed on disk while it was being fixed; not overwritten")
        os.replace(tmp, real)
        now = os.fstat(fd)
        if _same(now, snap.stat) and os.pread(fd, len(snap.data) + 1, 0) == snap.data:
            return
        current = os.pread(fd, max(now.st_size, 1) + 1, 0)  # the user's edit
    finally:
        os.close(fd)
    back = os.path.join(os.path.dirname(tmp), f".{os.path.basename(real)}.{os.getpid()}.{secrets.token_hex(8)}{SUFFIX}")
    fd = os.open(back, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        _write_all(fd, current)
        os.fchmod(fd, stat.S_IMODE(snap.stat.st_mode))
    finally:
        os.close(fd)
    os.replace(back, real)
    raise WriteRefused("changed on disk while it was being fixed; not overwritten")
