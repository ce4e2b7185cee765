"""Stage 2b, the warm record: a run where nothing changed answers from one small signed file.

A run over the reported files that found every result still valid in the store (each
result's own hash, dependencies, absent files, the plan's epoch and the stored calling
contexts all checked, :meth:`~.run.Session.cached`) consulted only the stat stamps and hashes
of a set of files and the absence of others (everything goes through its
:class:`~.read.Reader`).  :func:`record` keeps what it saw in a second store file
(``<key>.warm`` beside ``<key>.json``: the same MAC, the same safe opening, see
:mod:`.store`): the stamp of every file consulted, the paths that were absent, and the
results.  The next run over the same files with the same rules (:func:`record_key`)
stats each of those files, checks that the absent ones still are (:func:`answer`), and when
all hold takes the results without reading the store file, any result entry or the plan:
every check the full path would make reads those same stamps and absences, so it would
take the same results.  Any difference (an edit, a ``cp -p`` of other bytes: a new ctime or
inode, a file created, a file removed, other reported files or rules) falls back to the
full path, which writes a new record when everything in it held.

A stamp is recorded only when it is trusted as the store trusts one (its mtime older than
:data:`~.store.RACY_NS` when read); a file consulted that could not be read or existed
where the checks wanted it absent gives no record.
"""
from __future__ import annotations

import os
from typing import Optional

from .store import RACY_NS, Store, key_of, stamp_of
from .storeformat import _valid_result

SUFFIX = ".warm"        # the record's file: ``<store key>.warm`` in the cache folder
ENTRY = "warm-run"      # its one entry
MAX_RECORD_FILES = 200_000


def record_key(files, enabled) -> str:
    """The key of a record: the reported files (absolute, in any order) and the rule codes
    the run enables (a result the plan left out under fewer rules is planned again)."""
    return key_of([sorted(files), sorted(enabled)])


def store_for(root: Optional[str], key: str) -> Store:
    """The store of the warm record of store key ``key`` under the project ``root``
    (memory only without a root or a key)."""
    return Store(root, key, name=f"{key}{SUFFIX}")


def answer(warm: Store, files: list, enabled) -> Optional[dict]:
    """``{path: raw result}`` for every one of ``files`` from the warm record, when it was
    made for these files and rules and every file it consulted has its recorded stat stamp
    and every absent path is still absent; else None.  Never raises."""
    if warm.folder is None:
        return None
    order = sorted(files)
    e = warm.get(ENTRY)
    if e is None or e.get("hash") != record_key(order, enabled):
        return None
    f = e.get("plan")
    data = f.get("data") if isinstance(f, dict) else None
    if not isinstance(data, dict):
        return None
    stamps, more, absent = data.get("stamps"), data.get("more"), data.get("absent")
    raws, of = data.get("raws"), data.get("of")
    n = len(order)
    if not (isinstance(stamps, list) and len(stamps) == n and isinstance(of, list) and len(of) == n
            and isinstance(more, dict) and isinstance(absent, dict) and isinstance(raws, list)
            and all(isinstance(r, dict) and _valid_result(r) for r in raws)):
        return None
    out = {}
    k = len(raws)
    for p, i in zip(order, of):
        if type(i) is not int or not 0 <= i < k:
            return None
        out[p] = dict(raws[i])
    stat = os.stat
    for p, s in (*zip(order, stamps), *more.items()):
        try:
            st = stat(p)
        except (OSError, TypeError, ValueError):
            return None
        # a list of four ints equal to these (anything else, of any shape, is unequal)
        if s != stamp_of(st):
            return None
    if not all(isinstance(d, str) and isinstance(ns, list) and all(isinstance(n, str) for n in ns)
               for d, ns in absent.items()) or not still_absent(absent):
        return None
    return out


def _topmost_missing(path: str, missing: dict) -> str:
    """The outermost folder above ``path`` that does not exist now, else ``path`` (a run
    that wants ``path`` absent holds while that folder is missing)."""
    out, up = path, os.path.dirname(path)
    while up != os.path.dirname(up):
        if up not in missing:
            missing[up] = not os.path.lexists(up)
        if not missing[up]:
            break
        out, up = up, os.path.dirname(up)
    return out


def grouped(paths) -> dict:
    """``{folder: [names]}`` of the absent ``paths``, each raised to the outermost missing
    folder above it, leaving out every path below another of them (what is below a
    missing path is missing): a few folder listings check them all (:func:`still_absent`)."""
    missing: dict = {}
    every = {_topmost_missing(p, missing) for p in paths}
    out: dict = {}
    for p in sorted(every):
        up, keep = os.path.dirname(p), True
        while True:
            if up in every:
                keep = False
                break
            nxt = os.path.dirname(up)
            if nxt == up:
                break
            up = nxt
        if keep:
            out.setdefault(os.path.dirname(p), []).append(os.path.basename(p))
    return out


def still_absent(groups: dict) -> bool:
    """Whether no path of ``groups`` (``{folder: [names]}``, from :func:`grouped`) exists
    (``os.path.exists``), read from one listing of each folder: a folder missing from its
    parent's listing is missing, and so is everything under it.  A name found in a listing
    (compared case-folded: a case-insensitive file system), or a folder that cannot be
    listed, is asked with ``os.path.exists`` itself (a broken link is listed but does not
    exist)."""
    listings: dict = {}

    def listing(folder: str):
        # the case-folded names in ``folder``; None: it does not exist; False: unknown
        if folder in listings:
            return listings[folder]
        parent = os.path.dirname(folder)
        got = False
        if parent != folder:
            above = listing(parent)
            if above is None or (above is not False and os.path.basename(folder).casefold() not in above):
                got = None
        if got is not None:
            try:
                got = set(map(str.casefold, os.listdir(folder)))
            except (FileNotFoundError, NotADirectoryError):
                got = None
            except OSError:
                got = False
        listings[folder] = got
        return got

    exists = os.path.exists
    for folder, names in groups.items():
        there = listing(folder)
        if there is None:
            continue
        if there is not False:
            if there.isdisjoint(map(str.casefold, names)):
                continue
            names = [n for n in names if n.casefold() in there]   # only those listed are asked
        if any(exists(os.path.join(folder, n)) for n in names):
            return False
    return True


def record(warm: Store, reader, files: list, enabled, out: dict, now_ns: int) -> bool:
    """Keep the warm record of a run whose results ``out`` (``{path: raw}`` of ``files``)
    all came from the store, ``reader`` being what its checks consulted: stamps (taken
    before any read) and hashes, and the paths asked about with ``exists``.  Nothing (False)
    when the checks compared a folder's listing (an epoch made from every module's text),
    when a consulted file had no trusted stamp, could not be read, or existed where the
    check wanted it absent, or a result is not plain data.  The record replaces the one
    before it (one per store key); it is written by :meth:`Store.save` of ``warm``."""
    if warm.folder is None or len(reader._hash) > MAX_RECORD_FILES or getattr(reader, "listed", None):
        return False    # (folder listings consulted, :mod:`.epoch`: a record keeps no listing)
    stamps, absent = {}, []
    for p, h in reader._hash.items():
        st = reader._stamp.get(p)
        if h is None:
            if st is None and not os.path.lexists(p):
                absent.append(p)     # a dependency recorded as missing: it must stay so
                continue
            return False
        if st is None or now_ns - st[0] < RACY_NS:
            return False
        stamps[p] = st
    for p, there in reader._exists.items():
        if there:
            return False
        absent.append(p)
    order = sorted(files)
    raws, index, of = [], {}, []
    for p in order:
        r = out.get(p)
        if not isinstance(r, dict) or not _valid_result(r) or p not in stamps:
            return False
        try:
            k = key_of(r)
        except (TypeError, ValueError):
            return False
        if k not in index:
            index[k] = len(raws)
            raws.append(r)
        of.append(index[k])
    mine = [stamps.pop(p) for p in order]
    warm.put(ENTRY, record_key(files, enabled), None,
             plan={"data": {"stamps": mine, "more": stamps, "absent": grouped(absent), "raws": raws, "of": of}})
    return True
