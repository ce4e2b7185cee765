"""Stage 2c, the plan's epoch: what a decision that read much of the project depends on.

A result decided from the facts of many files (a file the plan leaves out, because no file
of the project can reach it with a multi-device value) is stored with the plan's *epoch*
instead of its own dependencies: one store entry for the whole run (:data:`EPOCH`) holding
the hash of every file whose facts the plan read, with its stat stamp, and the paths whose
creation would change an import the plan resolved.  The editor's ``flake8`` on one file
after a command-line run checks that entry and nothing else of the plan, so the check is
kept to what it cannot avoid (one ``stat`` a file, one listing per folder of absent paths):

- :func:`record` writes ``files`` as ``{path: [hash, [mtime, size, ctime, inode]]}`` (the
  stamp None when too recent to be trusted, :data:`~.store.RACY_NS`), and the
  absent paths grouped by their outermost missing folder (:func:`.warm.grouped`);
- a decision taken from the text of every module (:mod:`.universe`) also keeps the module
  names of each folder listed, so that a module created anywhere in the tree makes it stale;
- :func:`holds` stats each file, hashes again only a file whose stamp changed or was not
  trusted, and checks the absent paths with one listing of each folder
  (:func:`.warm.still_absent`).  What it consulted is left in the reader, as its own
  checks leave it, so a warm record made afterwards (:mod:`.warm`) covers it.
"""
from __future__ import annotations

import os
from typing import Optional

from .store import RACY_NS, key_of, stamp_of

_UNSEEN = object()
EPOCH = "plan-epoch"    # the store entry (a name in the cache folder) of the plan's epoch


def record(reader, read: list, absent: list, now_ns: int, folders: Optional[dict] = None) -> Optional[tuple]:
    """``(epoch, field)`` for the files ``read`` (absolute paths whose facts or text the
    plan read), the ``absent`` paths and the ``folders`` whose listing it read (``{folder:
    listing key}``, :func:`.universe.listing_key`), as ``reader`` (a :class:`~.read.Reader`)
    saw them: the epoch is the key of their hashes and listings, the field the store entry's
    ``plan`` (``{"data": True, "files": ..., "groups": ..., "folders": ...}``).  None when a
    file read cannot be hashed now."""
    files = {}
    for p in sorted(read):
        digest = reader.digest(p)
        if digest is None:
            return None
        st = reader._stamp.get(p)
        files[p] = [digest, st] if st is not None and now_ns - st[0] >= RACY_NS else [digest, None]
    folders = dict(folders or {})
    from .warm import grouped

    epoch = key_of([sorted((p, f[0]) for p, f in files.items()), sorted(folders.items())])
    return epoch, {"data": True, "files": files, "groups": grouped(absent), "folders": folders}


def holds(field, reader) -> bool:
    """Whether the epoch's ``field`` (from :func:`record`, read back from the store) still
    holds: every file has the hash recorded (its stat stamp the one recorded, else its bytes
    hashed again through ``reader``) and every absent path is still absent.  A field of
    another shape does not hold.  Never raises."""
    if not isinstance(field, dict):
        return False
    files, groups = field.get("files"), field.get("groups")
    if not (isinstance(files, dict) and isinstance(groups, dict)):
        return False
    folders = field.get("folders", {})
    from .universe import listing_key
    from .warm import still_absent     # (here: a result that holds without an epoch needs neither)

    try:
        if not _files_hold(files, reader):
            return False
        for d, k in folders.items():     # a listing read: no module added, removed or renamed there
            if listing_key(d) != k:
                return False
            reader.listed[d] = k
    except (OSError, TypeError, ValueError, IndexError, AttributeError):   # a field of another shape
        return False
    if not all(isinstance(d, str) and isinstance(ns, list) and all(isinstance(n, str) for n in ns)
               for d, ns in groups.items()) or not still_absent(groups):
        return False
    exists = reader._exists
    for d, names in groups.items():
        for n in names:
            exists.setdefault(os.path.join(d, n), False)
    return True


def _files_hold(files: dict, reader) -> bool:
    """Whether each file of ``files`` (``{path: [hash, stamp or None]}``) has its hash: its
    stamp now (stat'ed here, or already by ``reader`` this run) the one recorded, else its
    bytes hashed through ``reader``.  The stamps taken and hashes so confirmed are left in
    ``reader``, as :meth:`~.read.Reader.digest` leaves them.  Raises on a malformed ``files``
    (the caller's ``except``)."""
    stat, stamps, hashes, unseen = os.stat, reader._stamp, reader._hash, _UNSEEN
    for p, (digest, stamp) in files.items():
        if type(digest) is not str:
            return False
        now = stamps.get(p, unseen)
        if now is unseen:
            try:
                x = stat(p)
            except OSError:
                return False
            now = stamps[p] = stamp_of(x)
        if now == stamp:
            if hashes.setdefault(p, digest) != digest:     # read this run, and other bytes
                return False
        elif reader.digest(p) != digest:
            return False
    return True
