"""Stage 2, read and hash: one reading of each file per run, and the hash of what was read.

:class:`Reader` memoises, per absolute path, the bytes, the content hash of exactly those
bytes (results are stored under it: a file edited during the run gets its new content
analysed next time, never its old result under its new hash) and the stat stamp taken
*before* the read.  A file whose stamp is the one recorded in the store is not read just to
be hashed (:meth:`Reader.digest`); it is read only when something needs its text.
"""
from __future__ import annotations

import os
import time
from typing import Optional

from ..source import SourceError, decode, read_bytes
from .store import RACY_NS, Store, digest_bytes, stamp_of


_UNSEEN = object()


class Reader:
    """Reads files for one run.  ``store`` (a :class:`~.store.Store`, or None) supplies the
    stat shortcut."""

    def __init__(self, store: Optional[Store] = None):
        self.store = store
        self._stamp: dict = {}     # path -> stamp list, or None (cannot stat)
        self._hash: dict = {}      # path -> digest or None
        self._text: dict = {}      # path -> text or SourceError
        self._exists: dict = {}
        self.listed: dict = {}     # folder -> the listing key an epoch check compared (.epoch)
        self.reads = 0

    def stamp(self, path: str) -> Optional[list]:
        """The stat stamp of ``path`` (None when it cannot be stat'ed)."""
        if path not in self._stamp:
            try:
                self._stamp[path] = stamp_of(os.stat(path))
            except OSError:
                self._stamp[path] = None
        return self._stamp[path]

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists (memoised for the run)."""
        out = self._exists.get(path)
        if out is None:
            out = self._exists[path] = os.path.exists(path)
        return out

    def digest(self, path: str) -> Optional[str]:
        """The content hash of ``path`` (absolute), None when it cannot be read."""
        known = self._hash.get(path, _UNSEEN)
        if known is not _UNSEEN:
            return known
        stamp = self.stamp(path)
        if stamp is None:
            self._read(path)       # for its error (no such file, a broken link ...)
            return self._hash[path]
        known = self.store.known_hash(path, stamp) if self.store is not None else None
        if known is not None:
            self._hash[path] = known
            return known
        self._read(path)
        return self._hash[path]

    def scanned(self, path: str) -> Optional[bytes]:
        """The bytes of ``path``, hashed as :meth:`digest` hashes them (its stat stamp taken
        first) but neither decoded nor kept: a search of every module's text for a few words
        (:mod:`.universe`) that needs the text of none of most of them.  None when it cannot
        be read."""
        if self.stamp(path) is None:
            self.digest(path)
            return None
        try:
            data = read_bytes(path)
        except SourceError:
            self.digest(path)
            return None
        self.reads += 1
        digest = digest_bytes(data)
        if self._hash.setdefault(path, digest) != digest:
            # read before with other bytes (edited since): what was read first stands, as
            # the text this run analyses is that one
            return self.text(path).encode("utf-8", "surrogatepass")
        return data

    def _read(self, path: str) -> None:
        try:
            data = read_bytes(path)
        except SourceError as exc:
            self._hash[path] = None
            self._text[path] = exc
            return
        self.reads += 1
        self._hash[path] = digest_bytes(data)
        try:
            self._text[path] = decode(data, path)
        except SourceError as exc:
            self._text[path] = exc

    def error(self, path: str) -> Optional[SourceError]:
        """Why ``path`` cannot be read or decoded, or None."""
        if self.digest(path) is not None and path not in self._text:
            return None
        if path not in self._text:
            try:
                data = read_bytes(path)
            except SourceError as exc:
                return exc
            self._text[path] = SourceError("cannot read") if data is None else None
        t = self._text.get(path)
        return t if isinstance(t, SourceError) else None

    def has_text(self, path: str) -> bool:
        """Whether this run has read ``path`` and decoded its text."""
        return isinstance(self._text.get(path), str)

    def text(self, path: str) -> str:
        """The decoded text of ``path`` (absolute); raises :class:`SourceError`.  The hash
        of the bytes read replaces one known from the stat shortcut."""
        if path not in self._text:
            self._read(path)
        t = self._text[path]
        if isinstance(t, SourceError):
            raise t
        return t

    def stamp_to_store(self, path: str) -> Optional[list]:
        """The stamp to record with ``path``'s hash: None when the file was modified too
        recently for its mtime to be trusted (it is hashed again next time)."""
        stamp = self._stamp.get(path)
        if stamp is None or time.time_ns() - stamp[0] < RACY_NS:
            return None
        return stamp
