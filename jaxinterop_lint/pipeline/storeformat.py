"""The layout of a store file's payload (format 6): one line per entry, each field its own
JSON text, so that a run reads only the entries, and of each entry only the fields, it uses.

The payload (what the MAC of :mod:`.store` covers) is lines joined by ``\\n``::

    {"format":6}
    <line MAC>\\t<JSON path>\\t<JSON head>[\\t<field name>\\t<JSON field>]...
    ...

Each entry line starts with its own MAC (:func:`~.storekey.line_mac` of the rest of the
line, :data:`~.storekey.LINE_MAC_HEX` hex digits), so that a process reading one entry
(flake8 on one file) checks that line alone instead of the whole file's MAC (issue 16: a
4.6 MB store of transformers cost every flake8 process about 3 ms to check whole).

The head holds the fields of :data:`HEAD` (``hash``, ``stamp``); every other field of the
entry (``facts``, ``result``, ``summary``, ``plan``) follows as its name and its own JSON
text.  ``json.dumps`` (ASCII, the default) escapes every control character, so neither a tab
nor a newline ever occurs inside a JSON text: splitting is exact.

Reading (:func:`index`) splits the lines and reads only each line's path: the entries stay
bytes until :func:`entry_of` reads one, when the store hands it out.  Then its head and the
fields of :data:`EAGER` are parsed and their shapes checked (a wrong shape: no entry); the
others (a module's facts and frozen summary, most of the bytes) are parsed the first time
they are read (:class:`Entry`), and one of the wrong shape reads as absent.  Writing
(:func:`payload`) copies the bytes of every entry and field never read, as they were.

A warm run thus parses the results and stamps of its files, not the facts and summaries of
every module; a flake8 process parses the few entries of one file's dependencies.
"""
from __future__ import annotations

import json
from typing import Optional

from ..lazydict import LazyDict

FORMAT = 6  # 5: the MAC is keyed BLAKE2b (was HMAC-SHA256); 6: each entry line has its own MAC
HEADER = b'{"format":6}'
HEAD = ("hash", "stamp")       # parsed with every entry
EAGER = ("result", "plan")     # parsed and checked when the entry is first read


_DECODE = json.JSONDecoder().decode


def loads(text: bytes):
    """The value of one JSON text of a payload (``json.loads`` without its guessing of the
    encoding: what :func:`dumps` writes is ASCII).  Raises ValueError (a
    UnicodeDecodeError too), RecursionError."""
    return _DECODE(text.decode())


# made once for each ``default``: a store writes thousands of values (an encoder made for each
# value cost transformers' cold run with the cache on 0.1 s of its 3.5 s).  The values are
# trees of plain data the linter made, never cyclic: no check for cycles (a quarter of the
# encoding's time there).
_COMPACT = {None: json.JSONEncoder(separators=(",", ":"), check_circular=False)}


def dumps(value, default=None) -> bytes:
    """``value`` (plain data, no cycle) as compact ASCII JSON bytes (no tab, no newline: see
    the module docstring)."""
    encoder = _COMPACT.get(default)
    if encoder is None:
        encoder = _COMPACT[default] = json.JSONEncoder(separators=(",", ":"), default=default, check_circular=False)
    return encoder.encode(value).encode()


# -- shapes --------------------------------------------------------------------------------------
def _str_list(v) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _valid_result(d) -> bool:
    return (isinstance(d, dict) and isinstance(d.get("findings"), list)
            and all(isinstance(x, dict) and isinstance(x.get("provenance", []), list) for x in d["findings"])
            and isinstance(d.get("handled", []), list) and isinstance(d.get("analysed", False), bool)
            and (d.get("error") is None or (isinstance(d["error"], list) and len(d["error"]) == 3
                                            and isinstance(d["error"][0], str)))
            and _str_list(d.get("enabled", [])) and _str_list(d.get("ctx_in", []))
            and isinstance(d.get("ctx_out", []), list)
            and all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) for x in d.get("ctx_out", [])))


def valid_field(f, name: str) -> bool:
    """Whether ``f`` has the shape of the field ``name`` of an entry: ``facts`` a dict; any
    other a dict with ``data`` and, if present, ``deps`` (``{path: hash or None}``) and
    ``absent`` (paths); a ``result``'s data the shape of a raw result.  Never raises."""
    if name == "facts":
        return isinstance(f, dict)
    if not isinstance(f, dict) or "data" not in f:
        return False
    deps = f.get("deps", {})
    if deps is not None and not (isinstance(deps, dict) and all(
            isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in deps.items())):
        return False
    absent = f.get("absent", [])
    if absent is not None and not _str_list(absent):
        return False
    return name != "result" or _valid_result(f["data"])


def valid_head(e) -> bool:
    """Whether ``e``'s ``hash`` and ``stamp`` have their shapes (a str; four ints or absent)."""
    if not isinstance(e, dict) or not isinstance(e.get("hash"), str):
        return False
    st = e.get("stamp")
    return st is None or (isinstance(st, list) and len(st) == 4 and all(type(x) is int for x in st))


def valid_entry(e) -> bool:
    """Whether the plain dict ``e`` has the shape of an entry (its head and every field
    :func:`valid_field`).  Never raises."""
    return valid_head(e) and all(valid_field(v, k) for k, v in e.items() if k not in HEAD)


# -- entries read lazily -------------------------------------------------------------------------
class Entry(LazyDict):
    """An entry read from a store file: a dict whose fields not yet read are kept as their
    JSON text (``raw``: name -> bytes) and parsed, and their shape checked, on first access
    (``e[name]``, ``e.get(name)``, ``name in e``); a field that does not parse or has the wrong
    shape is absent.  Iterating or copying with ``dict(e)`` sees only the fields read."""

    def __init__(self, fields=(), raw: Optional[dict] = None):
        super().__init__(fields)
        self.raw = raw if raw is not None else {}

    def _take(self, name) -> bool:
        text = self.raw.pop(name, None)
        if text is None:
            return False
        try:
            value = loads(text)
        except (ValueError, RecursionError, MemoryError):
            return False
        if not valid_field(value, name):
            return False
        dict.__setitem__(self, name, value)
        return True

    def with_fields(self, fields: dict) -> "Entry":
        """A copy with ``fields`` set (the other fields kept, those never read still as text)."""
        out = Entry(dict(self), {k: v for k, v in self.raw.items() if k not in fields})
        dict.update(out, fields)
        return out


def entry_of(rest: bytes) -> Optional[Entry]:
    """The entry of one payload line after its path, or None when it has the wrong shape:
    a head that is not :func:`valid_head`, a field name that is not an identifier or comes
    twice, a field of :data:`EAGER` that does not parse or is not :func:`valid_field`."""
    parts = rest.split(b"\t")
    if len(parts) % 2 != 1:
        return None
    try:
        head = loads(parts[0])
    except (ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(head, dict) or not set(head) <= set(HEAD) or not valid_head(head):
        return None
    raw = {}
    for i in range(1, len(parts), 2):
        try:
            name = parts[i].decode("ascii")
        except UnicodeDecodeError:
            return None
        if not name.isidentifier() or name in HEAD or name in raw:
            return None
        raw[name] = parts[i + 1]
    e = Entry(head, raw)
    for name in EAGER:
        if name in raw and not e._take(name):
            return None
    return e


def head_of(rest: bytes) -> Optional[dict]:
    """The head (:data:`HEAD`: ``hash``, ``stamp``) of one payload line after its path, the
    rest not parsed, or None when it is not :func:`valid_head`."""
    try:
        head = loads(rest.split(b"\t", 1)[0])
    except (ValueError, RecursionError, MemoryError):
        return None
    return head if isinstance(head, dict) and set(head) <= set(HEAD) and valid_head(head) else None


def _path_of(text: bytes) -> Optional[str]:
    if len(text) >= 2 and text[:1] == b'"' and text[-1:] == b'"' and b"\\" not in text \
            and b'"' not in text[1:-1]:
        try:
            return text[1:-1].decode("ascii")   # what json.dumps writes for a plain ASCII path
        except UnicodeDecodeError:
            return None
    try:
        path = loads(text)
    except (ValueError, RecursionError):
        return None
    return path if isinstance(path, str) else None


def index(payload: bytes, skip: int = 0) -> Optional[dict]:
    """``{path: the rest of its line (bytes)}`` of a payload (after its first ``skip``
    lines: the store file's MAC line), None when it is not one of this format (a line
    without a path is skipped: that entry is a miss)."""
    lines = payload.split(b"\n")
    if len(lines) <= skip or lines[skip] != HEADER:
        return None
    out = {}
    for line in lines[skip + 1:]:
        parts = line.split(b"\t", 2)     # the line's MAC, its path, the rest
        path = _path_of(parts[1]) if len(parts) == 3 and len(parts[0]) == UNSIGNED_LEN else None
        if path is not None:
            out[path] = parts[2]
    return out


def line_of(path: str, e, default=None) -> bytes:
    """The payload line of entry ``e`` of ``path``: the bytes of an entry never read
    (``e`` bytes, from :func:`index`), else its head, the fields read and the text of those
    never read.  ``default`` turns objects JSON cannot hold into plain data; raises
    TypeError or ValueError for what it cannot."""
    if isinstance(e, bytes):
        return dumps(path) + b"\t" + e
    parts = [dumps(path), dumps({k: dict.__getitem__(e, k) for k in HEAD if dict.__contains__(e, k)})]
    for name, value in dict.items(e):
        if name not in HEAD:
            if not name.isidentifier():
                raise ValueError(f"not a field name: {name!r}")
            parts += [name.encode(), dumps(value, default)]
    for name, text in getattr(e, "raw", {}).items():
        if not dict.__contains__(e, name):
            parts += [name.encode(), text]
    return b"\t".join(parts)


UNSIGNED = b"0" * 32     # the MAC field of a line :func:`payload` writes with no ``sign``
UNSIGNED_LEN = len(UNSIGNED)


def payload(files: dict, default=None, sign=None) -> bytes:
    """The payload of ``{path: entry}`` (entries from :func:`index`, :func:`entry_of` or
    plain dicts), each line's MAC field ``sign(line)`` (:data:`UNSIGNED` without ``sign``: a
    line no reader of one entry believes)."""
    lines = [HEADER]
    for p, e in files.items():
        line = line_of(p, e, default)
        lines.append((sign(line) if sign is not None else UNSIGNED) + b"\t" + line)
    return b"\n".join(lines)


def decode(data: bytes) -> Optional[dict]:
    """Every entry of a payload as a plain dict (every field parsed), None when the payload
    is not of this format; entries of the wrong shape are left out (for tools and tests)."""
    found = index(data)
    if found is None:
        return None
    out = {}
    for path, rest in found.items():
        e = entry_of(rest)
        if e is not None:
            for name in list(e.raw):
                e.get(name)
            out[path] = dict(e)
    return out
