"""Fix files on disk: read the exact bytes, fix the decoded text, write back atomically.

``fix_paths(paths, config, unsafe=False, write=True)`` discovers the files as the linter does
and fixes each one with :func:`~jaxinterop_lint.fix.apply.fix_text`.  The text is decoded as
the interpreter does (BOM, PEP 263 cookie) and the result is encoded with the same encoding
and BOM, so everything outside the edits (CRLF, tabs, comments, the cookie) stays byte for
byte.  Every write goes through :mod:`.writer` (also used by ``--add-noqa``): a file is
written only if it was discovered under the given paths, its real path lies inside the folder
of a given path, the user may write it, and it is still exactly what was read; the new file
keeps the permission bits, owner and group, and takes the old one's place atomically.
"""
from __future__ import annotations

import difflib
import io
import os
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ..config import Config
from ..engine import FileResult, LintResult, SourceError, decode, lint_file, read_bytes
from ..finding import Finding
from . import writer
from .apply import FixOutcome, applicable, fix_text, lint_text
from .writer import allowed_roots  # noqa: F401  (re-exported)

_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


@dataclass
class FileFix:
    """What happened to one file: ``fixed`` findings fixed, ``old``/``new`` texts (equal
    when nothing changed), ``result`` the lint of ``new`` (remaining findings), ``error`` why
    the file was not fixed or written (printed on stderr), ``written`` whether it was written."""

    path: str
    fixed: int = 0
    old: str = ""
    new: str = ""
    result: Optional[FileResult] = None
    error: Optional[str] = None
    written: bool = False
    codes: list = field(default_factory=list)   # the codes of the fixed findings


@dataclass
class FixRun:
    """The outcome of a fix run over many files: ``lint`` the remaining findings as a
    :class:`~jaxinterop_lint.engine.LintResult` (whose ``errors`` include the files that could
    not be fixed or written), ``files`` one :class:`FileFix` per file."""

    lint: LintResult
    files: list = field(default_factory=list)

    @property
    def fixed(self) -> int:
        """Findings fixed in all files."""
        return sum(f.fixed for f in self.files)

    @property
    def changed(self) -> list:
        """The files whose text the fixes change."""
        return [f for f in self.files if f.new != f.old and f.error is None]

    @property
    def errors(self) -> list:
        """``(path, message)`` of the files that could not be fixed or written."""
        return [(f.path, f.error) for f in self.files if f.error is not None]

    def fixable(self, unsafe: bool) -> int:
        """Remaining findings that a run with ``unsafe`` would fix."""
        return sum(1 for f in self.lint.findings if applicable(f, unsafe))


def source_encoding(data: bytes) -> tuple[str, bool]:
    """``(encoding, has_bom)`` of Python source bytes, as the interpreter reads them.
    Raises :class:`SourceError` for an undecodable file."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot decode: {exc}") from None
    except Exception as exc:  # a codec failing in its own way (see source.decode)
        raise SourceError(f"cannot decode: {exc}") from None
    bom = data.startswith(b"\xef\xbb\xbf")
    return encoding, bom


def encode(text: str, encoding: str, bom: bool) -> bytes:
    """Encode fixed text as the original was (``utf-8-sig`` writes the BOM itself)."""
    data = text.encode(encoding)
    if bom and not data.startswith(b"\xef\xbb\xbf"):
        data = b"\xef\xbb\xbf" + data
    return data


def fix_file(path: str, config: Config, unsafe: bool = False, write: bool = True,
             roots: Optional[list] = None) -> FileFix:
    """Fix one file; with ``write`` store the result (see :mod:`.writer`).
    Never raises for bad input: problems are in ``error`` or ``result.error``."""
    out = FileFix(path)
    try:
        snap = writer.snapshot(path)
        text = decode(snap.data, path)
        encoding, bom = source_encoding(snap.data)
    except (OSError, ValueError, SourceError):
        out.result = _lint_path(path, config)
        return out
    project = _project(path, config)
    outcome: FixOutcome = fix_text(text, path, config, unsafe, project=project)
    out.old, out.new, out.fixed, out.result = text, outcome.text, outcome.fixed, outcome.result
    out.codes = list(outcome.codes)
    if outcome.error is not None:
        out.error = outcome.error
        return out
    if out.new == out.old:
        return out
    try:
        new_data = encode(out.new, encoding, bom)
    except (UnicodeError, LookupError, ValueError, TypeError) as exc:
        return _refuse(out, text, path, config, f"cannot encode the fixed code as {encoding}: {exc}")
    if not write:
        return out
    try:
        writer.replace(snap, new_data, roots)
    except writer.WriteRefused as exc:
        return _refuse(out, text, path, config, str(exc).replace("not written", "not fixed"))
    out.written = True
    return out


def _project(path: str, config: Config):
    """The whole-project analysis the command line uses for ``path`` (None outside a
    project, or where this build has no project analysis)."""
    try:
        from ..engine import shared_project
    except ImportError:  # pragma: no cover - older engine
        return None
    return shared_project(path, config)


def _lint_path(path: str, config: Config) -> FileResult:
    project = _project(path, config)
    try:
        text = decode(read_bytes(os.path.realpath(path)), path)
    except (OSError, SourceError):
        return lint_file(path, config)
    return lint_text(text, path, config, project)


def _refuse(out: FileFix, text: str, path: str, config: Config, error: str) -> FileFix:
    out.error, out.new, out.fixed = error, text, 0
    out.result = lint_text(text, path, config, _project(path, config))
    return out


def fix_paths(paths: Iterable[str], config: Optional[Config] = None, unsafe: bool = False,
              write: bool = True) -> FixRun:
    """Discover the files under ``paths`` and fix each one (``write=False``: compute the
    fixes only, for ``--diff``).  A file reached twice (through a symlink) is fixed once.
    Returns a :class:`FixRun`."""
    from ..pipeline.discover import discover

    config = config or Config()
    paths = list(paths)
    files = list(discover(paths, config.exclude, config.extend_exclude, config.respect_gitignore))
    roots = allowed_roots(paths)
    if write:  # temporary files a killed run left behind
        writer.clean_stale({os.path.dirname(os.path.realpath(f)) for f in files})
    run = FixRun(LintResult(files=len(files)))
    if files:
        # The files under ``paths`` are the reported ones: an export a caller among them
        # reaches is fixed at the callee's sink, as the plain run reports it (PLAN decision 1).
        try:
            from ..engine import shared_project

            for root_file in {os.path.dirname(os.path.abspath(f)): f for f in files}.values():
                shared_project(root_file, config, reported=paths)
        except ImportError:  # pragma: no cover - older engine
            pass
    seen: set = set()
    for path in files:
        real = os.path.realpath(path)
        if real in seen:
            fixed = FileFix(path, result=_lint_path(path, config))
        else:
            seen.add(real)
            fixed = fix_file(path, config, unsafe, write, roots)
        run.files.append(fixed)
        r = fixed.result
        if r.error is not None:
            run.lint.errors.append((r.path, r.error))
        if fixed.error is not None:
            run.lint.errors.append((path, SourceError(f"not fixed: {fixed.error}")))
        run.lint.findings.extend(r.findings)
        run.lint.handled.extend(r.handled)
        run.lint.suppressed.extend(r.suppressed)
        run.lint.analysed += r.analysed
    run.lint.findings.sort(key=Finding.sort_key)
    return run


def unified_diff(fixed: FileFix) -> str:
    """The unified diff of one file's fixes (``--- a/path`` / ``+++ b/path``), or ''."""
    if fixed.new == fixed.old:
        return ""
    old = _LINES.findall(fixed.old)
    new = _LINES.findall(fixed.new)
    from ..escape import escape_path

    name = escape_path(os.path.normpath(fixed.path))
    lines = list(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"))
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                   for line in lines)
