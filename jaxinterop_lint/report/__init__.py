"""Output formats: each formatter takes the findings and returns the text to print."""
from __future__ import annotations

import json
import re

from ..catalog import DOCS_URL, NAMES
from ..finding import Finding
from .github import github


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


def concise(findings: list[Finding], **_) -> str:
    """``path:line:col: CODE message`` a line (flake8's format; columns 1-based)."""
    return "".join(f"{display_path(f.path)}:{f.line}:{f.column + 1}: {f.code} {escape_text(f.message)}\n"
                   for f in findings)


def full(findings: list[Finding], sources: dict | None = None, **_) -> str:
    """Concise line, the source line with a caret, the provenance chain, the fix title and
    the rule's page."""
    out = []
    for f in findings:
        out.append(f"{display_path(f.path)}:{f.line}:{f.column + 1}: {f.code} [{f.name}] {escape_text(f.message)}")
        lines = (sources or {}).get(f.path)
        if lines and 0 < f.line <= len(lines):
            text = escape_text(lines[f.line - 1].rstrip("\r\n"))
            out.append(f"    {f.line:>4} | {text}")
            width = max(1, (f.end_column - f.column) if f.end_line == f.line else len(text) - f.column)
            out.append("         | " + " " * f.column + "^" * width)
        if f.provenance:
            out.append("    provenance:")
            for i, step in enumerate(f.provenance):
                out.append(f"      {i + 1}. {display_path(step.path)}:{step.line}: {escape_text(step.description)}")
        if f.fix is not None:
            out.append(f"    fix ({f.fix.applicability}): {f.fix.title}")
        out.append(f"    docs: {DOCS_URL.format(code=f.code)}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def json_format(findings: list[Finding], **_) -> str:
    """A JSON list of finding objects (see :meth:`Finding.to_dict`)."""
    return json.dumps([f.to_dict() for f in findings], indent=2) + "\n"


def sarif(findings: list[Finding], **kwargs) -> str:
    """SARIF 2.1.0 (:mod:`.sarif`, loaded on use: it needs the rule pages)."""
    from .sarif import sarif as render

    return render(findings, **kwargs)


FORMATS = {"concise": concise, "full": full, "json": json_format, "sarif": sarif, "github": github}
FORMAT_NAMES = sorted(FORMATS)


def formatter(name: str):
    """The formatter called ``name`` (one of :data:`FORMAT_NAMES`)."""
    return FORMATS[name]


def rule_name(code: str) -> str:
    """The kebab-case name of a rule code."""
    return NAMES[code]
