"""The calling contexts of one module's exports (PLAN decision 1).

When a caller reaches an export of a parameter inside a function of this module (an
:class:`~.events.ExportEffect` of its summary) with a multi-device value, the finding belongs
at the sink inside that function, with the caller's value, ``try`` blocks, process guard and
calling chain.  A :class:`ContextTable` holds those contexts for the module that owns the sink,
keyed by ``(function qualified name, export index in its summary)`` and, within a key, by the
calling site ``(caller, call, parameter)``; :meth:`ContextTable.events` turns them into the
sink events the rules judge.

Callers in the same module add to their own module's table.  The key names the callee by its
qualified name and the export by its index, which a frozen summary keeps too, so a caller in
another module adds its entries (without ``inner``) to the table the
:class:`~.project.Project` keeps for the callee's file (``Project.add_context``); the
callee's analysis resolves them against its own exports when its events are read
(:meth:`~.module.ModuleAnalysis.incoming_events`).  Such a site is
``(caller file, caller function, call id, parameter)``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

from . import values as V


@dataclass(frozen=True)
class ContextEntry:
    """One calling site's view of an export: the caller's ``value`` of the exported part,
    the ``tries`` around the call (marked ``caller``), whether the caller runs under a
    process-wide single-device guard, the call chain as :class:`~.events.CallFrame` records
    (outermost first), and the callee's sink event when the caller holds it (same module)."""

    value: V.Value
    tries: tuple
    single_device_process: bool
    frames: tuple
    inner: Any = None

    def event(self, inner):
        """The sink event ``inner`` (an export inside the callee) as this caller reaches it."""
        return replace(inner, value=self.value, tries=self.tries + inner.tries,
                       single_device_process=inner.single_device_process or self.single_device_process,
                       context=self.frames + inner.context, via=None, inner=None)


class ContextTable:
    """Calling contexts of the exports of one module's functions (see the module docstring)."""

    def __init__(self) -> None:
        self.entries: dict = {}

    def add(self, function: str, export: int, site, entry: ContextEntry, join: bool = False) -> None:
        """Record ``entry`` for export ``export`` of ``function`` seen at ``site``; a later
        entry for the same site replaces it (a loop's fixpoint only grows values), or joins
        with it (``join``: an unrolled loop visits the site once per element)."""
        sites = self.entries.setdefault((function, export), {})
        old = sites.get(site)
        if join and old is not None:
            entry = replace(entry, value=V.join(old.value, entry.value))
        sites[site] = entry

    def drop_caller(self, caller: str) -> None:
        """Forget the entries added by the module file ``caller`` (sites that start with it:
        its analysis is made again)."""
        for sites in self.entries.values():
            for site in [s for s in sites if s and s[0] == caller]:
                del sites[site]

    def events(self, resolve) -> list:
        """The sink events of every context: the callee's sink event (``entry.inner``, or
        ``resolve(function, export)`` for an entry added without it) seen with the caller's
        value, handlers, guard and chain.  Entries whose export cannot be resolved are left
        out."""
        out = []
        for (function, export), sites in self.entries.items():
            for entry in sites.values():
                inner: Optional[Any] = entry.inner if entry.inner is not None else resolve(function, export)
                if inner is not None:
                    out.append(entry.event(inner))
        return out


def silenced_at_call(ma, node) -> bool:
    """Whether a ``# noqa`` directive of the module analysis ``ma`` would silence a finding
    of the interop rules at the call ``node``: its first line's directive (bare, or naming
    a JXI code but JXI100) or a file directive ``# jaxinterop-lint: noqa`` (the same).  Such
    a call gives no calling context to another module's sink: its finding stays at the call,
    where the directive judges it, as it does when the callee's file is not reported
    (``flake8`` on the caller alone); so a project run reports what a run file by file does,
    and JXI100 counts the directive used.  Reads :mod:`jaxinterop_lint.noqa`'s syntax."""
    from ..noqa import LINE_SPLIT, PREFIX, UNUSED_NOQA, file_noqa, line_codes

    text = ma.source or ""
    if "noqa" not in text:
        return False

    def interop(codes) -> bool:
        return codes is not None and (not codes or any(c.startswith(PREFIX) and c != UNUSED_NOQA for c in codes))

    whole = file_noqa(text)
    if whole is None or interop(whole or None):
        return True
    lines = getattr(ma, "_lines", None)
    if lines is None:
        lines = ma._lines = LINE_SPLIT.split(text)
    line = ma.position(node)[0]
    return 0 < line <= len(lines) and interop(line_codes(lines[line - 1]))
