"""Gradual adoption: baselines and ``--add-noqa``.

A baseline records today's findings so that ``--baseline FILE`` reports only new ones.  An
entry is keyed on the rule, the path (relative to the baseline file's folder), the enclosing
function and the sink's source text, never on the line number: edits elsewhere in the file
do not resurrect it.  Each key carries a count, so a second identical export added to the same
function is still reported.
"""
from __future__ import annotations

import io
import json
import os
import pathlib
import re
import tokenize
from collections import Counter
from typing import Iterable, Optional

from .config import ConfigError
from .noqa import NOQA
from .finding import Finding

BASELINE_FORMAT = "jaxinterop-lint-baseline"
BASELINE_VERSION = 1
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def finding_key(f: Finding, root: Optional[str] = None) -> tuple[str, str, str, str]:
    """``(code, path, function, snippet)`` of a finding; the path is made relative to
    ``root`` when given, and always written with ``/``."""
    path = os.path.normpath(f.path)
    if root is not None:
        path = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    return f.code, pathlib.PurePath(path).as_posix(), f.function, f.snippet


def write_baseline(findings: Iterable[Finding], path: str) -> int:
    """Write the baseline of ``findings`` to ``path`` (JSON, sorted for stable diffs).

    Returns the number of findings recorded.  Raises :class:`OSError` when it cannot write."""
    root = os.path.dirname(os.path.abspath(path))
    counts = Counter(finding_key(f, root) for f in findings)
    entries = [{"code": c, "path": p, "function": fn, "snippet": s, "count": n}
               for (c, p, fn, s), n in sorted(counts.items())]
    doc = {"format": BASELINE_FORMAT, "version": BASELINE_VERSION, "findings": entries}
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(doc, fh, indent=2)
        fh.write("\n")
    return sum(counts.values())


def load_baseline(path: str) -> Counter:
    """Read a baseline written by :func:`write_baseline`: key -> count, paths relative to the
    baseline's folder.  Raises :class:`ConfigError` naming the file when it is missing or is
    not a baseline."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: --baseline: cannot read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: --baseline: not a jaxinterop-lint baseline (invalid JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != BASELINE_FORMAT or not isinstance(doc.get("findings"), list):
        raise ConfigError(f"{path}: --baseline: not a jaxinterop-lint baseline (write one with --write-baseline)")
    if doc.get("version") != BASELINE_VERSION:
        raise ConfigError(f"{path}: --baseline: unsupported baseline version {doc.get('version')!r}")
    out: Counter = Counter()
    fields = ("code", "path", "function", "snippet")
    for entry in doc["findings"]:
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in fields) \
                or not isinstance(entry.get("count", 1), int):
            raise ConfigError(f"{path}: --baseline: malformed entry {entry!r}")
        out[tuple(entry[k] for k in fields)] += entry.get("count", 1)
    return out


def apply_baseline(findings: Iterable[Finding], baseline: Counter, baseline_path: str):
    """Split ``findings`` into ``(new, known)``: a finding is known while its key has count
    left in ``baseline`` (findings in file order use it up first)."""
    root = os.path.dirname(os.path.abspath(baseline_path))
    left = Counter(baseline)
    new, known = [], []
    for f in findings:
        key = finding_key(f, root)
        if left[key] > 0:
            left[key] -= 1
            known.append(f)
        else:
            new.append(f)
    return new, known


# --- --add-noqa -------------------------------------------------------------------------------

def _lines_that_cannot_take_a_comment(text: str) -> set:
    """1-based lines whose end is inside a token (a multi-line string) or that continue with
    a backslash: a comment appended there would change the program."""
    out = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] < tok.end[0] and tok.type not in (tokenize.NEWLINE, tokenize.NL):
                out.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    for number, line in enumerate(_split(text), 1):
        if line.rstrip().endswith("\\"):
            out.add(number)
    return out


def _split(text: str) -> list:
    """The lines of ``text`` with their ends, split as Python does (``\\r\\n``, ``\\r``, ``\\n``)."""
    return LINE.findall(text)


def _with_codes(line: str, codes: set) -> str:
    """``line`` (without its end) with ``# noqa: codes`` added or merged into its noqa."""
    m = NOQA.search(line)
    if m is not None and m.group("codes"):
        merged = {c.upper() for c in re.split(r"[,\s]+", m.group("codes")) if c} | codes
        return line[:m.start()] + "# noqa: " + ", ".join(sorted(merged)) + line[m.end():]
    return line.rstrip() + "  # noqa: " + ", ".join(sorted(codes))


def add_noqa_to_text(text: str, codes_by_line: dict) -> tuple[str, int, int]:
    """Add ``# noqa: CODES`` to the given lines (1-based line -> set of codes) of ``text``.

    Returns ``(new text, lines changed, lines skipped)``; a line inside a multi-line string
    or ending with a backslash is skipped.  Line endings are kept."""
    unsafe = _lines_that_cannot_take_a_comment(text)
    lines = _split(text)
    changed = skipped = 0
    for number, codes in sorted(codes_by_line.items()):
        if not 0 < number <= len(lines) or number in unsafe:
            skipped += 1
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        lines[number - 1] = _with_codes(body, set(codes)) + line[len(body):]
        changed += 1
    return "".join(lines), changed, skipped


def add_noqa(findings: Iterable[Finding], roots: Optional[Iterable[str]] = None,
             refused: Optional[list] = None) -> tuple[int, int, int]:
    """Write ``# noqa: CODE`` on the line of every finding, file by file, keeping each file's
    encoding (BOM and coding cookie included) and line endings.  Files are written as
    ``--fix`` writes them (:mod:`jaxinterop_lint.fix.writer`: atomically, never through a
    symlink out of ``roots``, the linted paths, nor over an edit made meanwhile).

    Returns ``(comments added, files changed, findings skipped)``; a file that is not
    written is appended to ``refused`` as ``(path, reason)`` (when given; else the first one
    raises :class:`OSError`)."""
    from .fix import writer

    by_file: dict = {}
    for f in findings:
        by_file.setdefault(f.path, {}).setdefault(f.line, set()).add(f.code)
    real_roots = writer.allowed_roots(roots) if roots is not None else None
    writer.clean_stale({os.path.dirname(os.path.realpath(p)) for p in by_file})
    added = files = skipped = 0
    for path, codes_by_line in sorted(by_file.items()):
        try:
            snap = writer.snapshot(path)
            encoding, _ = tokenize.detect_encoding(io.BytesIO(snap.data).readline)
            text = snap.data.decode(encoding)
            new, changed, missed = add_noqa_to_text(text, codes_by_line)
            if changed:
                writer.replace(snap, new.encode(encoding), real_roots)
        except (OSError, ValueError, SyntaxError, LookupError, writer.WriteRefused) as exc:
            reason = str(exc) if isinstance(exc, writer.WriteRefused) else f"cannot rewrite: {exc}"
            if refused is None:
                raise OSError(f"{path}: {reason}") from None
            refused.append((path, reason.replace("not written", "no noqa added")))
            continue
        skipped += missed
        if changed:
            added += changed
            files += 1
    return added, files, skipped
