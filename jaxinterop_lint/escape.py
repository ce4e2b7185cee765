"""Printing paths and messages safely: a file name or a quoted source line must never forge
an output line or a terminal escape (issue 13).  Below every front end and the fixer, which
all print paths."""
from __future__ import annotations

import re


# Characters that must never reach a terminal or a log raw from a file name: C0 and C1
# controls (a newline would forge an output line, ESC a terminal escape sequence), the
# line and paragraph separators, the bidirectional overrides (they reorder what is shown), and
# the surrogates that stand for undecodable bytes (os.fsdecode), which cannot be printed.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", '"': '\\"'}


def escape_path(path: str) -> str:
    """``path`` as it may be printed: unchanged when it holds no unsafe character (see
    :data:`_UNSAFE`); else in double quotes with C-style escapes (``\\n``, ``\\x1b``,
    ``\\u202e``, ``\\xff`` for an undecodable byte; ``\\`` and ``\"`` escaped too), as git
    quotes such names."""
    if not _UNSAFE.search(path):
        return path

    def one(ch: str) -> str:
        if ch in _ESCAPES:
            return _ESCAPES[ch]
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for the byte code - 0xDC00
            return f"\\x{code - 0xDC00:02x}"
        if _UNSAFE.match(ch):
            return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        return ch

    return '"' + "".join(one(ch) for ch in path) + '"'


def escape_text(text: str, keep: str = "\t") -> str:
    """``text`` (a message, a source line) with every unsafe character but those in ``keep``
    (see :data:`_UNSAFE`) written as an escape: a message quotes source text and other modules' paths, which must not forge an
    output line or a terminal escape either."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else escape_path(m.group())[1:-1], text)


def display_path(path: str) -> str:
    """The path as printed: the user's own spelling, escaped when it holds a control or
    other unsafe character (:func:`escape_path`)."""
    return escape_path(path)


def error_line(path: str, err) -> str:
    """The one stderr line of a file that could not be linted: ``path:line:col: error: reason``,
    or ``path: error: reason`` for a problem of the path itself (``err.line`` 0: no such file)."""
    where = f"{display_path(path)}:{err.line}:{err.column}" if err.line else display_path(path)
    return f"{where}: error: {err.message}"
