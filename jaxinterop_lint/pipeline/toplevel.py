"""A module's text as top-level units (stage 3, for :mod:`.carriers`): each def or class
with its decorators, and each other top-level statement with the names it assigns; and a
unit's text without its prose (docstrings, comment lines).  Read from the text alone,
never parsed.  Like :mod:`.scan`, fast spellings of regular expressions, checked against
them by ``tests/test_plan_scan.py``."""
from __future__ import annotations

import re

from .statements import module_writes, registrations

_TOP_NAME = re.compile(r"(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)")
_ASSIGNED = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
# The same matches on ``"\n" + text``, line end first (a search skips from line to line).
_ASSIGNED_NL = re.compile(r"\n[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)")


def assigned(text: str) -> tuple:
    """The names assigned at the start of a line of ``text`` (``_ASSIGNED.findall``)."""
    return tuple(_ASSIGNED_NL.findall("\n" + text)) if "=" in text else ()


# Docstrings and comment lines: prose, not code.
PROSE = re.compile(r'''"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|^[ \t]*#[^\n]*''', re.M)
# An identifier (the names a unit uses).
IDENT = re.compile(r"[A-Za-z_]\w*")
_CONTINUED = ("else", "elif", "except", "finally")
_NOT_TOP = " \t\r\n#)]}"
# Line ends ``str.splitlines`` knows besides ``\n`` (a text with one is split the slow way).
_ODD_ENDS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")
_ODD_WIDE = ("\x85", "\u2028", "\u2029")
_TOP_LINE = re.compile(r"\n[^ \t\r\n#)\]}]")


# ``a, b = ...``, ``a, *rest = ...``, ``z, = ...``, ``(z,) = ...``, ``[z] = ...`` at the start of
# a line: the names a tuple or list target binds (a match with no comma or bracket is a plain
# assignment: :func:`assigned` has it)
_TUPLE_NL = re.compile(r"\n[ \t]*[(\[]?[ \t]*(\*?[A-Za-z_]\w*(?:[ \t]*,[ \t]*\*?[A-Za-z_]\w*)*)"
                       r"[ \t]*,?[ \t]*[)\]]?[ \t]*=(?!=)")
# ``with f() as x``, ``except E as e``; ``for a, b in ...``
_AS = re.compile(r"\bas[ \t]+([A-Za-z_]\w*)")
_FOR = re.compile(r"^[ \t]*(?:async[ \t]+)?for[ \t]+([^\n]*?)[ \t]+in\b", re.M)
_TARGET = re.compile(r"[A-Za-z_]\w*")
_DEFINES = ("def ", "class ", "async ", "@")


def _bound_elsewhere(units: list) -> list:
    """``units`` with the names a statement other than a def or class binds or changes
    without assigning them plainly: tuple targets (``x, y = ...``), ``as`` and ``for``
    targets, and the names of other units whose contents it changes (:func:`registrations`:
    ``params["w"] = ...``, ``arrays.append(...)``, a subclass registered by its base's
    ``__init_subclass__``): what such a statement puts there is part of those names'
    values."""
    filled = registrations(units, [body.startswith(_DEFINES) for _, body in units])
    out = []
    for (names, body), more in zip(units, filled):
        extra: list = []
        if not body.startswith(_DEFINES):
            if "=" in body and ("," in body or "[" in body or "(" in body):
                extra += [t.strip().lstrip("*") for m in _TUPLE_NL.finditer("\n" + body)
                          if any(c in m.group(0) for c in ",([") for t in m.group(1).split(",")]
            if "as" in body:
                extra += _AS.findall(body)
            if "for" in body:
                extra += [t for m in _FOR.findall(body) for t in _TARGET.findall(m)]
        extra += sorted(more)
        if extra:
            names = tuple(dict.fromkeys(tuple(names) + tuple(extra)))
        out.append((names, body))
    return out


def _module_writes(units: list) -> list:
    """``units`` with the names of :func:`module_writes` added to each unit's names."""
    extra = module_writes(units)
    return [(tuple(dict.fromkeys(tuple(names) + tuple(sorted(e)))) if e else names, body)
            for (names, body), e in zip(units, extra)]


def units_of(text: str) -> list:
    """Split a module's text into top-level units: ``[(names it defines, text)]``.  A def
    or class defines its name (its decorators go with it); any other top-level statement
    defines the names assigned in it (at any depth: ``if``/``try`` blocks); imports are left
    out (the plan has them).  A line at column 0 inside a bracket or a string (rare) starts
    a unit of its own, which only makes the plan keep more.  A unit's text is its lines
    joined (a decorator's continuation lines are left out).  A statement assigning no plain
    name defines the names it binds or changes (:func:`_bound_elsewhere`)."""
    if any(c in text for c in _ODD_ENDS) or not text.isascii() and any(c in text for c in _ODD_WIDE):
        return _units_by_lines(text)
    units = []
    pending: list = []
    end = len(text)
    starts = [0] if text[:1] and text[0] not in _NOT_TOP else []
    starts += [m.start() + 1 for m in _TOP_LINE.finditer(text)]
    starts = [s for s in starts if not text.startswith(_CONTINUED, s)]
    for n, s in enumerate(starts):
        nxt = starts[n + 1] if n + 1 < len(starts) else end
        if text.startswith("@", s):
            eol = text.find("\n", s, nxt)
            pending.append(text[s:nxt if eol < 0 else eol + 1])
            continue
        m = _TOP_NAME.match(text, s)
        if m is not None:
            units.append(((m.group(1),), "".join(pending) + text[s:nxt] if pending else text[s:nxt]))
        elif not text.startswith(("import ", "from "), s):
            body = "".join(pending) + text[s:nxt] if pending else text[s:nxt]
            units.append((assigned(body), body))
        pending = []
    return _module_writes(_bound_elsewhere(units))


def _units_by_lines(text: str) -> list:
    """:func:`units_of` line by line (``str.splitlines``: every line end Python knows)."""
    units = []
    current = None
    pending: list = []
    for line in text.splitlines(True):
        head = line[:1]
        if head and head not in _NOT_TOP and not line.startswith(_CONTINUED):
            if line.startswith("@"):
                pending.append(line)
                current = None
                continue
            m = _TOP_NAME.match(line)
            if m:
                current = [*pending, line]
                units.append(((m.group(1),), current))
            elif line.startswith(("import ", "from ")):
                current = False
            else:
                current = [*pending, line]
                units.append((None, current))
            pending = []
            continue
        if current:
            current.append(line)
    out = []
    for names, lines in units:
        body = "".join(lines)
        out.append((names if names is not None else assigned(body), body))
    return _module_writes(_bound_elsewhere(out))


_COMMENT = re.compile(r"\n[ \t]*#[^\n]*")
_COMMENT_AT = re.compile(r"\n[ \t]*#")
_FIRST_COMMENT = re.compile(r"[ \t]*#")


def _next_comment(text: str, pos: int) -> int:
    """The first line start at or after ``pos`` whose line is a comment (``[ \\t]*#``), or -1."""
    if pos == 0 and _FIRST_COMMENT.match(text) is not None:
        return 0
    m = _COMMENT_AT.search(text, max(pos - 1, 0))
    return -1 if m is None else m.start() + 1


def strip_prose(text: str) -> str:
    """``text`` without docstrings (triple-quoted strings) and comment lines: what
    ``PROSE.sub("", text)`` gives, found from the occurrences of the quotes (a string's end
    is one ``str.find``, not a lazy match tried character by character) and of comment
    lines."""
    dq, sq = text.find('"""'), text.find("'''")
    if dq < 0 and sq < 0:
        if "#" not in text:
            return text
        return _COMMENT.sub("\n", "\n" + text)[1:]
    out = []
    pos = 0
    hs = _next_comment(text, 0)
    while True:
        if 0 <= dq < pos:
            dq = text.find('"""', pos)
        if 0 <= sq < pos:
            sq = text.find("'''", pos)
        if 0 <= hs < pos:
            hs = _next_comment(text, pos)
        c = min((x for x in (dq, sq, hs) if x >= 0), default=-1)
        if c < 0:
            break
        if c == hs:
            end = text.find("\n", hs)
            end = len(text) if end < 0 else end
        else:
            quote = text[c:c + 3]
            end = text.find(quote, c + 3)
            if end < 0:     # no end: no later string of these quotes has one either
                if quote == '"""':
                    dq = -1
                else:
                    sq = -1
                continue
            end += 3
        out.append(text[pos:c])
        pos = end
    out.append(text[pos:])
    return "".join(out)


def with_users(units: dict, names) -> frozenset:
    """``names`` with the names of ``units`` (a module's units as
    :meth:`~.carriers.Carriers.units` gives them: name -> (origin level, names used)) that
    use one of them, transitively."""
    out = set(names)
    grew = bool(out)
    while grew:
        grew = False
        for n, (_, used) in units.items():
            if n not in out and used & out:
                out.add(n)
                grew = True
    return frozenset(out)
