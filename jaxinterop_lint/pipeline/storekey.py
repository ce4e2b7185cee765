"""The per-user secret key of the cache and the MAC of a store file (issue 13: the cache is
repository content, so only what this user wrote on this machine is believed).

The key is :data:`KEY_BYTES` random bytes in ``<user cache folder>/key`` (``platformdirs``;
``$JAXINTEROP_LINT_KEY_DIR`` instead, for tests), created once with mode 0600 by a temporary
file linked into place, and used only when it is a regular file of this user that nobody else
can read.  Stdlib and platformdirs only: it imports nothing of the package.

The MAC is keyed BLAKE2b (:func:`mac_of`; each entry line has its own, :func:`line_mac`), not HMAC-SHA256: ``hashlib``'s module imports
OpenSSL (``_hashlib``, about 3 ms of every flake8 process, issue 16), CPython's own
``_blake2`` does not.  BLAKE2's keyed mode is a MAC by design (RFC 7693 section 2.9; the
Python documentation of ``hashlib.blake2b``: "keyed hashing ... a faster and simpler
replacement for HMAC"), with the same 256-bit key and tag as before, so a forgery still needs
the key.
"""
from __future__ import annotations

import os
import stat
import sys
from typing import Optional

try:   # CPython's own BLAKE2 (what hashlib.blake2b is), without hashlib's import of OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - another Python
    from hashlib import blake2b
try:   # what hmac.compare_digest is without OpenSSL: a comparison in constant time
    from _operator import _compare_digest as compare_digest
except ImportError:  # pragma: no cover - another Python
    from hmac import compare_digest

KEY_ENV = "JAXINTEROP_LINT_KEY_DIR"
APP = "jaxinterop-lint"       # the name of the key's folder in the user cache folder
KEY_BYTES = 32
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# The safe opening needs both; without them (Windows) the cache is off.
SAFE_OPEN = bool(_NOFOLLOW and _DIRECTORY) and {os.open, os.rename, os.unlink} <= os.supports_dir_fd


# -- the secret key ------------------------------------------------------------------------------
_KEYS: dict = {}


def key_folder() -> Optional[str]:
    """Where the per-user key lives: ``$JAXINTEROP_LINT_KEY_DIR``, else the user cache folder
    of ``platformdirs`` (``~/.cache/jaxinterop-lint`` on Linux); None without platformdirs.

    On Linux that folder is found without importing platformdirs (it imports ``tempfile``,
    ``shutil``, ``random`` ...: a few milliseconds of every flake8 process): the XDG rule
    platformdirs' ``Unix.user_cache_dir`` follows (platformdirs 4.x ``unix.py``/``_xdg.py``),
    ``$XDG_CACHE_HOME`` when set and not blank, else ``~/.cache``, then the app's name."""
    given = os.environ.get(KEY_ENV)
    if given:
        return os.path.abspath(given)
    if sys.platform.startswith("linux") and "ANDROID_DATA" not in os.environ:
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not base.strip():
            base = os.path.expanduser("~/.cache")
        if not base.startswith("~"):
            return os.path.join(base, APP)
    try:
        import platformdirs
    except ImportError:   # pragma: no cover - a declared dependency
        return None
    return platformdirs.user_cache_dir(APP, appauthor=False)


def _read_key(path: str) -> Optional[bytes]:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077 or (hasattr(os, "geteuid") and st.st_uid != os.geteuid()):
            return None    # someone else's, or readable by others: not a secret
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    return data if len(data) == KEY_BYTES else None


def _make_key(folder: str, path: str) -> None:
    """Create the key atomically: a 0600 temporary file in ``folder``, linked to ``path``
    (never replacing a key another process made first)."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    tmp = os.path.join(folder, f".key-{os.getpid()}-{os.urandom(8).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        try:
            os.write(fd, os.urandom(KEY_BYTES))   # what secrets.token_bytes reads
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


def secret_key() -> Optional[bytes]:
    """This user's secret key for the store's MACs (made on first use, mode 0600, in
    :func:`key_folder`), or None when it cannot be made or read safely: the cache is then
    off for the run.  Never raises."""
    folder = key_folder()
    if folder is None or not SAFE_OPEN:
        return None
    if folder not in _KEYS:
        path = os.path.join(folder, "key")
        key = None
        try:
            try:
                key = _read_key(path)
            except FileNotFoundError:
                _make_key(folder, path)
                key = _read_key(path)
        except OSError:
            key = None
        _KEYS[folder] = key
    return _KEYS[folder]


def mac_of(key: bytes, file: str, payload: bytes) -> str:
    """The MAC of a store file: its absolute path and payload under ``key`` (keyed BLAKE2b,
    a 32-byte tag as 64 hex digits; ``key`` at most 64 bytes: :data:`KEY_BYTES` is 32)."""
    h = blake2b(key=key, digest_size=32, person=b"jxi-store")
    h.update(b"jaxinterop-lint store\0" + os.fsencode(file) + b"\0")
    h.update(payload)
    return h.hexdigest()


LINE_MAC_HEX = 32   # a line's MAC: a 16-byte tag as hex digits


def line_mac(key: bytes, file: str, line: bytes) -> bytes:
    """The MAC of one entry line of the store file ``file`` (its path and entry, without
    the MAC itself) under ``key``: keyed BLAKE2b, a 16-byte tag as :data:`LINE_MAC_HEX` hex
    digits.  A reader of one entry (a flake8 process) checks its line alone, not the whole
    file's :func:`mac_of`; the file's path in it binds the line to its store file."""
    h = blake2b(key=key, digest_size=16, person=b"jxi-line")
    h.update(b"jaxinterop-lint line\0" + os.fsencode(file) + b"\0")
    h.update(line)
    return h.hexdigest().encode()
