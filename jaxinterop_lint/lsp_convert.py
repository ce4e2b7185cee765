"""Findings and fixes as LSP records, for :mod:`jaxinterop_lint.server`.

Positions: a finding has 1-based lines and 0-based columns in code points; LSP has 0-based
lines and columns in the client's units (UTF-16 by default), converted with the document's
``pygls`` position codec.  Needs ``lsprotocol`` (a dependency of ``pygls``).
"""
from __future__ import annotations

import os
from typing import Optional
from urllib.parse import unquote, urlparse

from lsprotocol import types

from .catalog import DOCS_URL
from .engine import LINE_SPLIT

SOURCE = "jaxinterop-lint"
FIX_ALL_KIND = "source.fixAll.jaxinterop-lint"


def uri_to_path(uri: str) -> Optional[str]:
    """The absolute path of a ``file:`` URI; None for other schemes (unsaved buffers)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return os.path.normpath(unquote(parsed.path))


def path_to_uri(path: str) -> str:
    """The ``file:`` URI of ``path`` (relative paths are taken from the current folder)."""
    from pathlib import Path

    return Path(os.path.abspath(path)).as_uri()


def _lines_of(path: str, cache: dict) -> list:
    if path not in cache:
        try:
            with open(path, encoding="utf-8", errors="replace", newline="") as fh:
                cache[path] = LINE_SPLIT.split(fh.read())
        except OSError:
            cache[path] = []
    return cache[path]


def position(lines: list, codec, line: int, column: int) -> types.Position:
    """LSP position of a 1-based ``line`` and 0-based code-point ``column`` in ``lines``."""
    return codec.position_to_client_units(lines, types.Position(line=max(line - 1, 0), character=max(column, 0)))


def span(lines: list, codec, line: int, column: int, end_line: int, end_column: int) -> types.Range:
    """LSP range of a finding-style span."""
    return types.Range(start=position(lines, codec, line, column), end=position(lines, codec, end_line, end_column))


def diagnostics(result, lines: list, codec) -> list:
    """The diagnostics of a :class:`~jaxinterop_lint.engine.FileResult`: one per finding
    (warning; the provenance steps as related information; the rule page as the code's
    link) and one error when the file could not be linted."""
    out = []
    others: dict = {}
    this = os.path.abspath(result.path)
    others[this] = lines
    for f in result.findings:
        related = []
        for step in f.provenance:
            where = os.path.abspath(step.path)
            step_lines = _lines_of(where, others)
            related.append(types.DiagnosticRelatedInformation(
                location=types.Location(uri=path_to_uri(where),
                                        range=span(step_lines, codec, step.line, step.column, step.line,
                                                   step.column)),
                message=step.description))
        out.append(types.Diagnostic(
            range=span(lines, codec, f.line, f.column, f.end_line, f.end_column),
            message=f.message, severity=types.DiagnosticSeverity.Warning, code=f.code,
            code_description=types.CodeDescription(href=DOCS_URL.format(code=f.code)),
            source=SOURCE, related_information=related or None,
            data={"fix": f.fix.applicability if f.fix is not None and f.fix.edits else None}))
    if result.error is not None:
        err = result.error
        line = max(err.line or 1, 1)
        out.append(types.Diagnostic(
            range=span(lines, codec, line, err.column or 0, line, (err.column or 0) + 1),
            message=err.message, severity=types.DiagnosticSeverity.Error, source=SOURCE))
    return out


def _overlaps(f, rng: types.Range) -> bool:
    start, end = (f.line - 1, f.column), (f.end_line - 1, f.end_column)
    return not (end < (rng.start.line, 0) or start > (rng.end.line, 10 ** 9))


def text_edit(old: str, new: str, lines: list, codec) -> types.TextEdit:
    """One edit turning ``old`` into ``new``: the changed lines between their common first
    and last lines."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = types.Position(line=head, character=0)
    end_line = len(a) - tail
    end = types.Position(line=end_line, character=0)
    if end_line >= len(a) and a and not a[-1].endswith(("\n", "\r")):
        end = position(lines, codec, len(a), len(a[-1]))
    return types.TextEdit(range=types.Range(start=start, end=end), new_text="".join(b[head:len(b) - tail]))


def quick_fixes(uri: str, text: str, findings: list, rng: types.Range, lines: list, codec) -> list:
    """Code actions for the findings that overlap ``rng``: the fix (safe ones preferred),
    and ``# noqa: CODE`` on the finding's line."""
    from .adoption import add_noqa_to_text
    from .fix.apply import add_imports, apply_edits

    out = []
    for f in findings:
        if not _overlaps(f, rng):
            continue
        diag = types.Diagnostic(range=span(lines, codec, f.line, f.column, f.end_line, f.end_column),
                                message=f.message, code=f.code, source=SOURCE)
        if f.fix is not None and f.fix.edits:
            try:
                new = add_imports(apply_edits(text, f.fix.edits), f.fix.imports)
            except Exception:  # a fix that cannot be applied to this text is not offered
                new = None
            if new is not None and new != text:
                unsafe = f.fix.applicability != "safe"
                out.append(types.CodeAction(
                    title=f"{f.fix.title} ({f.code}{', unsafe: it may change what the program does' if unsafe else ''})",
                    kind=types.CodeActionKind.QuickFix, diagnostics=[diag], is_preferred=not unsafe,
                    edit=types.WorkspaceEdit(changes={uri: [text_edit(text, new, lines, codec)]})))
        silenced, changed, _ = add_noqa_to_text(text, {f.line: {f.code}})
        if changed:
            out.append(types.CodeAction(
                title=f"Silence {f.code} on this line (# noqa: {f.code})", kind=types.CodeActionKind.QuickFix,
                diagnostics=[diag], edit=types.WorkspaceEdit(changes={uri: [text_edit(text, silenced, lines, codec)]})))
    return out


def fix_all(uri: str, path: str, text: str, linter, lines: list, codec) -> Optional[types.CodeAction]:
    """``source.fixAll.jaxinterop-lint``: the safe fixes of the whole buffer (as ``--fix``),
    or None when there is nothing to fix."""
    from .fix.apply import fix_text

    result, cfg = linter.lint(path, text)
    if cfg is None:
        return None
    outcome = fix_text(text, path, cfg, unsafe=False, result=result, project=linter.project_for(path, cfg))
    if outcome.error is not None or outcome.text == text:
        return None
    return types.CodeAction(title="Fix all safe jaxinterop-lint findings", kind=FIX_ALL_KIND,
                            edit=types.WorkspaceEdit(changes={uri: [text_edit(text, outcome.text, lines, codec)]}))
