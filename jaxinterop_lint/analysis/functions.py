"""Analysing one function: parameters bound to symbolic values, one walk of the body, and
the :class:`~jaxinterop_lint.analysis.module.Summary` read off its returns and events."""
from __future__ import annotations

from dataclasses import replace

import libcst as cst

from ..knowledge import apis
from . import values as V
from .events import ExportEffect, SinkEvent
from .flow import Walker
from .module import Summary
from .values import Value


def analyse_function(ma, rec) -> Summary:
    """Analyse the def or lambda of ``rec`` with symbolic parameters; returns its summary
    and leaves its events in ``rec.events``."""
    rec.events = {}
    env = {}
    walker = Walker(ma, rec, env, rec.closure, rec.name)
    for i, name in enumerate(rec.params):
        ann = rec.annotations[i]
        if i == 0 and rec.cls is not None:
            env[name] = Value(kind=V.INSTANCE, cls=rec.cls)
            continue
        if (rec.ffi_shift is not None and i > rec.ffi_shift) or ma.ffi.is_buffer_annotation(ann):
            env[name] = Value(kind=V.FFI_BUFFER)
            continue
        v = Value(kind=V.ARRAY, deps=frozenset({i}))
        if ann is not None:
            a = walker.eval(ann)
            if a.kind == V.QNAME and a.qname in apis.ARRAY_ANNOTATIONS:
                v = replace(v, param_array=name)
        env[name] = v
    node = rec.node
    if isinstance(node, cst.Lambda):
        walker.returns.append(walker.eval(node.body))
    else:
        walker.suite(node.body)
        if walker.env is not None:
            walker.returns.append(V.SAFE_VALUE)
    ret = V.join_all(walker.returns) if walker.returns else None
    exports = []
    for ev in rec.events.values():
        if isinstance(ev, SinkEvent) and ev.value.deps and not ev.tries and not ev.single_device_process:
            for p in ev.value.deps:
                exports.append(ExportEffect(p, ev))
    return Summary(ret=ret, exports=tuple(exports), donates=walker.donated_params)
