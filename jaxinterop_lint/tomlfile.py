"""Reading a TOML file (``tomllib``, ``tomli`` before Python 3.11) with one-line errors.

A file read is kept, with the stat stamp it had before it was read (mtime, size, ctime,
inode, as the store's :func:`~.pipeline.store.stamp_of`), in this process and, when the
configuration loader installs one (:func:`use_cache`, :mod:`.pyproject`), in a cache across
runs (under the per-user key, signed: see :class:`.pyproject.ParsedToml`), so a run whose
``pyproject.toml`` did not change neither parses it nor imports the TOML parser (its regexes
and ``datetime``: about 5 ms of every run).  Only plain data is kept (a TOML date or time is
parsed each time), and only a file whose mtime was at least 2 s old when it was read (git's
"racily clean" rule, as the store's).
"""
from __future__ import annotations

import copy
import math
import os
import sys
import time
from typing import Optional

from .errors import ConfigError

RACY_NS = 2_000_000_000
_MEMO: dict = {}          # path -> (stamp, data): this process
_CACHE: list = []         # the cache across runs (get(path, stamp), put(path, stamp, data)), if any


def use_cache(cache) -> None:
    """Keep the files read in ``cache`` too (None: no cache across runs)."""
    _CACHE[:] = [cache] if cache is not None else []


def _stamp(path: str) -> Optional[list]:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino]


def plain(value) -> bool:
    """Whether ``value`` is made of JSON's own kinds only (str keys, lists, str, bool, int,
    finite floats): what a cache can keep exactly."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(plain(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (str, bool, int))


def read_toml(path: str) -> dict:
    """Parse the TOML file ``path``; raises :class:`ConfigError` naming the file for an
    unreadable or malformed one.  Returns a fresh dict (the caller may change it)."""
    stamp = _stamp(path)
    if stamp is not None:
        held = _MEMO.get(path)
        if held is not None and held[0] == stamp:
            return copy.deepcopy(held[1])
        for cache in _CACHE:
            data = cache.get(path, stamp)
            if isinstance(data, dict):
                _MEMO[path] = (stamp, data)
                return copy.deepcopy(data)
    data = _parse(path)
    if stamp is not None and plain(data):
        _MEMO[path] = (stamp, copy.deepcopy(data))
        if time.time_ns() - stamp[0] >= RACY_NS:
            for cache in _CACHE:
                cache.put(path, stamp, _MEMO[path][1])
    return data


def _parse(path: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: malformed TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
