"""Report files of the runtime shim: where each process writes, how to read and merge them.

The shim writes one JSON object per line (a *hit*).  Every line is written with a single
``os.write`` on a descriptor opened with ``O_APPEND``, so lines written concurrently by the
threads of one process (or by processes that share a file) never interleave.

File layout (documented in the README):

* ``install(report=PATH)`` in a process writes ``PATH`` itself;
* a process that must not share a file (every process started under ``jaxinterop-lint run``,
  every process that installs the shim from the environment, and any child created by
  ``os.fork`` of a recording process) writes ``PATH.<pid>``: one file per process;
* :func:`read_hits` reads ``PATH`` and every ``PATH.<pid>``; :func:`merge_parts` appends the
  per-process files to ``PATH`` (ordered by pid) and deletes them.

This module imports no JAX: ``verify`` uses it too.
"""
from __future__ import annotations

import glob
import json
import os
from typing import Iterator

__all__ = ["ShimReportError", "CorruptReport", "process_report_path", "report_parts", "report_files",
           "read_hits", "merge_parts", "open_report"]


class ShimReportError(OSError):
    """The report file cannot be opened or written (raised by ``install()``, not at the first hit)."""

    def __str__(self) -> str:
        return str(self.strerror)


def process_report_path(base: str, pid: int) -> str:
    """The per-process report file of process ``pid`` for the report ``base``: ``base.<pid>``."""
    return f"{base}.{pid}"


def report_parts(base: str) -> list[str]:
    """Existing per-process files ``base.<pid>`` of the report ``base``, ordered by pid."""
    parts = []
    for name in glob.glob(glob.escape(base) + ".*"):
        suffix = name[len(base) + 1:]
        if suffix.isdigit():
            parts.append((int(suffix), name))
    return [name for _, name in sorted(parts)]


def report_files(base: str) -> list[str]:
    """``base`` (when it exists) followed by its per-process files."""
    files = [base] if os.path.isfile(base) else []
    return files + report_parts(base)


class CorruptReport(ValueError):
    """A report file that is not the shim's JSON lines: undecodable bytes, a line that is not
    a JSON object, or an object that is no hit record.  ``str(exc)`` names the file and line."""


HIT_FIELDS = {"path": str, "line": int, "code": str, "consumer": str}


def _iter_lines(path: str) -> Iterator[tuple[int, str]]:
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CorruptReport(f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}): "
                            f"not a report the shim wrote") from None
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            yield number, line


def _problem(hit) -> str | None:
    if not isinstance(hit, dict):
        return "not a JSON object"
    for key, kind in HIT_FIELDS.items():
        if not isinstance(hit.get(key), kind) or isinstance(hit.get(key), bool):
            return f"not a hit record ({key!r} missing or not a {kind.__name__})"
    return None


def read_hits(base: str, errors: list[str] | None = None, processes: list[dict] | None = None) -> list[dict]:
    """Every hit recorded under the report ``base`` (its own file and per-process files).

    Lines ``{"event": "process", "pid", "device_count", "hits"}`` (what each recording process
    writes at exit) are no hits: they go to ``processes`` when given, else are skipped.

    Strict without ``errors``: raises :class:`CorruptReport` for undecodable bytes or a line
    that is not a hit record (a JSON object with ``path``, ``line``, ``code``, ``consumer``).
    With an ``errors`` list such lines (and undecodable files) are skipped and described there.
    Raises FileNotFoundError when neither ``base`` nor any ``base.<pid>`` exists, and other
    OSErrors when a file cannot be read.
    """
    files = report_files(base)
    if not files:
        raise FileNotFoundError(f"no report file {base!r} (nor any {base}.<pid>)")
    hits = []
    for path in files:
        try:
            for number, line in _iter_lines(path):
                try:
                    hit = json.loads(line)
                except ValueError:
                    hit = None
                if isinstance(hit, dict) and hit.get("event") == "process":
                    if processes is not None:
                        processes.append(hit)
                    continue
                problem = _problem(hit)
                if problem is not None:
                    message = f"{path}:{number}: {problem}: not a report the shim wrote"
                    if errors is None:
                        raise CorruptReport(message)
                    errors.append(message.replace(": not a report the shim wrote", ", skipped"))
                    continue
                hits.append(hit)
        except CorruptReport as exc:
            if errors is None:
                raise
            errors.append(f"{exc}; file skipped")
    return hits


def merge_parts(base: str) -> int:
    """Append every ``base.<pid>`` to ``base`` (ordered by pid), delete them; return lines moved."""
    moved = 0
    parts = report_parts(base)
    if not parts:
        return 0
    fd = open_report(base)
    try:
        for part in parts:
            with open(part, "rb") as fh:
                data = fh.read()
            if data and not data.endswith(b"\n"):
                data += b"\n"
            _write_all(fd, data)
            moved += data.count(b"\n")
            os.unlink(part)
    finally:
        os.close(fd)
    return moved


def open_report(path: str, truncate: bool = False) -> int:
    """Open ``path`` for appending whole lines; return the descriptor.

    Raises ShimReportError (an OSError) with a clear message when it cannot be opened.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | (os.O_TRUNC if truncate else 0)
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        raise ShimReportError(exc.errno, f"jaxinterop shim: cannot write the report file {path!r}: "
                                         f"{exc.strerror}") from exc


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
