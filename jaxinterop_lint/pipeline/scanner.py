"""The line scanner: the masking's fallback reading (:mod:`.masking`) where this Python's
``ast`` cannot parse a text.  It cuts lines into top-level statements by tracking strings,
brackets and continuations, and reads each statement's words from its text (docstrings and
comments included: a superset of what its code names).
"""
from __future__ import annotations

import re
from typing import Optional

_TOKEN = re.compile(r'''("""|\'\'\')|("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|(\#)|([(\[{])|([)\]}])''')
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTINUES = re.compile(r"(?:else|elif|except|finally|case)\b|[)\]}]")
_DEFINES = re.compile(r"(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")
_DEFINES_ANYWHERE = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.M)
_ASSIGNED = re.compile(r"^[ \t]*([A-Za-z_][\w, \t]*?)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
_IMPORT = re.compile(r"(?:import|from)\s")
_FROM_NAMES = re.compile(r"\b([A-Za-z_]\w*)(?:\s+as\s+([A-Za-z_]\w*))?")


def statements(lines: list) -> Optional[list]:
    """Split lines into top-level statements: a list of ``(first, last)`` line indexes.
    None when the scanner loses track (unterminated string or bracket)."""
    starts = []
    depth = 0
    triple = None
    continued = False
    decorating = False
    for i, line in enumerate(lines):
        if triple is None and depth == 0 and not continued and line[:1] not in ("", " ", "\t", "\r", "\n", "#", "\f") \
                and not _CONTINUES.match(line):
            if decorating and not line.startswith("@"):
                decorating = False          # the def or class of the decorators above
            elif not decorating:
                starts.append(i)
                decorating = line.startswith("@")
        pos = 0
        while True:
            if triple is not None:
                end = line.find(triple, pos)
                if end == -1:
                    break
                triple, pos = None, end + 3
                continue
            m = _TOKEN.search(line, pos)
            if m is None:
                break
            if m.group(1):
                triple, pos = m.group(1), m.end()
            elif m.group(3):
                break
            elif m.group(4):
                depth += 1
                pos = m.end()
            elif m.group(5):
                depth = max(0, depth - 1)
                pos = m.end()
            else:
                pos = m.end()
        stripped = line.rstrip("\r\n")
        continued = triple is None and stripped.endswith("\\")
    if triple is not None or depth:
        return None
    return [(s, (starts[k + 1] - 1) if k + 1 < len(starts) else len(lines) - 1) for k, s in enumerate(starts)]


def scan(lines: list, stmts: list, sink_names) -> tuple:
    """The line scanner's reading of the statements ``stmts`` of ``lines`` (see
    :func:`statements`): ``(identifiers (any word of each statement's text), whether each
    is an import, the names each defines, whether each is a def or class, the names bound
    by imports of a name in sink_names)``."""
    chunks = ["".join(lines[a:b + 1]) for a, b in stmts]
    idents = [frozenset(_IDENT.findall(c)) for c in chunks]
    imports = [bool(_IMPORT.match(c)) for c in chunks]
    aliases: set = set()
    for chunk, imp in zip(chunks, imports):
        if imp:
            for name, alias in _FROM_NAMES.findall(chunk):
                if name in sink_names:
                    aliases.add(alias or name)
    defines, is_def = [], []
    for chunk in chunks:
        m = _DEFINES_ANYWHERE.search(chunk) if chunk.startswith("@") else _DEFINES.match(chunk)
        is_def.append(m is not None)
        if m:
            defines.append({m.group(1)})
        else:
            names = set()
            for target in _ASSIGNED.findall(chunk):
                names |= set(_IDENT.findall(target))
            defines.append(names)
    return idents, imports, defines, is_def, aliases


def class_lines(all_lines: list, a: int, b: int, needed: set, callers_of, interop) -> Optional[dict]:
    """The scanner's reading of a kept class spanning lines ``a..b`` of ``all_lines``:
    ``{line index: replacement}`` blanking the methods that are no dunder, define no name
    in ``needed``, name no interop API (``interop(text, identifiers)``), use no name in
    ``callers_of`` and are not used by a kept method; None to keep the class whole."""
    lines = all_lines[a:b + 1]
    head = next((i for i, ln in enumerate(lines) if ln.startswith("class ")), None)
    if head is None or b - a < 40:
        return None
    depth, body = 0, None
    for i in range(head, len(lines)):
        code = lines[i].split("#", 1)[0]
        depth += code.count("(") + code.count("[") + code.count("{")
        depth -= code.count(")") + code.count("]") + code.count("}")
        if depth <= 0 and code.rstrip().endswith(":"):
            body = i + 1
            break
    if body is None or body >= len(lines):
        return None
    first = next((ln for ln in lines[body:] if ln.strip() and not ln.lstrip().startswith("#")), None)
    if first is None:
        return None
    indent = first[:len(first) - len(first.lstrip(" \t"))]
    if not indent:
        return None
    inner = [ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[body:]]
    stmts = statements(inner)
    if not stmts or len(stmts) < 3:
        return None
    texts = ["".join(inner[s:e + 1]) for s, e in stmts]
    ids = [frozenset(_IDENT.findall(t)) for t in texts]
    names = []
    for t in texts:
        m = _DEFINES_ANYWHERE.search(t) if t.startswith("@") else _DEFINES.match(t)
        names.append(m.group(1) if m else None)
    keep = [n is None or n.startswith("__") or n in needed or interop(t, i)
            or bool(callers_of and i & callers_of) for n, t, i in zip(names, texts, ids)]
    todo = [i for i, k in enumerate(keep) if k]
    seen: set = set()
    while todo:
        i = todo.pop()
        for name in ids[i] - seen:
            seen.add(name)
            for j, n in enumerate(names):
                if n == name and not keep[j]:
                    keep[j] = True
                    todo.append(j)
    if all(keep) or not any(keep):
        return None
    return {a + body + i: blank(all_lines[a + body + i])
            for (s, e), k in zip(stmts, keep) if not k for i in range(s, e + 1)}


def blank(line: str) -> str:
    """The line ending of ``line`` alone: the line blanked, its number kept."""
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith(("\n", "\r")):
        return line[-1]
    return ""
