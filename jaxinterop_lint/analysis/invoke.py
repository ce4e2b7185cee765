"""Method calls on values, and calls of this module's own functions through their summaries."""
from __future__ import annotations

from dataclasses import replace

from ..knowledge import apis
from . import values as V
from .calls import _true
from .events import FfiCopyEvent, RemovedEvent
from .imports import dotted
from .values import FuncInfo, Value


class InvokeMixin:
    """Evaluate ``recv.method(...)`` and calls of local functions."""

    def method_call(self, node, recv: Value, attr: str, pos: list, kw: dict) -> Value:
        """``<recv>.<attr>(*pos, **kw)`` where ``recv`` is not a module or class."""
        receiver_node = node.func.value
        removed = apis.REMOVED_ATTRIBUTES.get(attr)
        if removed is not None and self.ma.is_removed_attribute_receiver(recv):  # x.device_buffers()
            self.record(RemovedEvent(node, f".{attr}", removed, "method-call", self.function, receiver=receiver_node))
            return V.UNKNOWN_VALUE
        sink = apis.METHOD_SINKS.get(attr)
        if sink is not None:
            if recv.kind == V.FFI_BUFFER:
                if attr == "__dlpack__" and _true(kw.get("copy")):
                    self.record(FfiCopyEvent(node, "__dlpack__()", receiver_node, "copy=True", self.function))
            else:
                self.sink(node, f"`.{attr}()`", sink, recv, receiver_node)
            return Value(kind=V.CAPSULE) if attr == "__dlpack__" else V.SAFE_VALUE
        if recv.kind == V.FFI_BUFFER:
            if attr == "__array__":
                how = "dtype" if (pos or "dtype" in kw) else ("copy=True" if _true(kw.get("copy")) else None)
                if how:
                    self.record(FfiCopyEvent(node, "__array__()", receiver_node, how, self.function))
                return V.FOREIGN_VALUE
            return V.SAFE_VALUE
        if attr in apis.CAPSULE_PRODUCER_NAMES:
            return Value(kind=V.CAPSULE)
        if attr in apis.PLACEMENT_METHODS:
            where = pos[0] if pos else kw.get("device")
            return self.placed(node, f"`.{attr}()`", where, (recv, receiver_node))
        if attr in apis.SAFE_METHODS:
            return V.SAFE_VALUE
        kind = recv.kind
        if kind == V.ARRAY:
            return V.as_array(recv)
        if kind in (V.SAFE, V.FOREIGN):
            return recv
        return V.UNKNOWN_VALUE

    def func_call(self, node, fi: FuncInfo, pos: list, kw: dict) -> Value:
        """Call a function the analysis understands: a partial of a library function, a
        wrapped function (pjit, jit, shard_map, pmap) or a def/lambda of this module."""
        if fi.partial_of is not None:
            merged = dict(fi.kwargs)
            merged.update(kw)
            return self.library_call(node, fi.partial_of, list(fi.bound) + pos, merged)
        args = [(v, None) if not isinstance(v, tuple) else v for v in fi.bound] + list(pos)
        rec = fi.local
        bind = dict(enumerate(args))
        if rec is not None:
            for name, arg in kw.items():
                if name in rec.params:
                    bind[rec.params.index(name)] = arg
        result = None
        if rec is not None:
            summary = rec.owner.summary(rec)
            if summary.ret is not None:
                result = self.instantiate(summary.ret, bind, rec.name, node)
            for effect in summary.exports:
                arg = bind.get(effect.param)
                if arg is not None:
                    inner = effect.event
                    self.sink(node, f"{rec.name}()", inner.sink, arg[0], arg[1],
                              via=f"{rec.name}() exports it with {inner.consumer}", inner=inner)
            for p in summary.donates:
                if p in bind:
                    self.donate(bind[p][1], node)
        if fi.source is not None:
            callee = self.text(node.func) if hasattr(node, "func") else (rec.name if rec else "it")
            result = V.multi(replace(fi.source, description=f"{callee}() is a {fi.source.description}"))
        elif fi.propagate:
            result = V.join(result, self.computed([v for v, _ in bind.values()] + [v for v, _ in kw.values()]))
        for i in fi.donate:
            if i in bind:
                self.donate(bind[i][1], node)
        for name in fi.donate_names:
            if name in kw:
                self.donate(kw[name][1], node)
            elif rec is not None and name in rec.params and rec.params.index(name) in bind:
                self.donate(bind[rec.params.index(name)][1], node)
        return result if result is not None else V.UNKNOWN_VALUE

    def instantiate(self, ret: Value, bind: dict, name: str, node) -> Value:
        """A callee's returned value seen at a call with arguments ``bind``."""
        if ret.elements is not None:
            return replace(ret, elements=tuple(self.instantiate(e, bind, name, node) for e in ret.elements),
                           deps=frozenset(), multi=ret.multi)
        out = None
        if ret.multi is not None:
            out = V.multi(ret.multi.step(f"returned by {name}()", node, self.ma))
        for d in ret.deps:
            arg = bind.get(d)
            if arg is None:
                continue
            v = V.as_array(arg[0])
            if v.multi is not None:
                v = replace(v, multi=v.multi.step(f"{name}() of `{self.text(arg[1])}`", node, self.ma))
            out = V.join(out, v)
        if out is None:
            if ret.kind in (V.SAFE, V.FOREIGN, V.SHARDING, V.DEVICE, V.DEVICE_LIST, V.FUNC,
                            V.KERNEL, V.CAPSULE, V.SAFE_LIST, V.INSTANCE):
                return replace(ret, deps=frozenset(), param_array=None, donated=None, false_guard=None)
            return V.UNKNOWN_VALUE
        return out

    def donate(self, arg_node, call_node) -> None:
        """Mark the variable passed as ``arg_node`` as donated to ``call_node``."""
        key = dotted(arg_node) if arg_node is not None else None
        if key is None or self.env is None:
            return
        current = self.lookup(key) if "." not in key else self.env.get(key, V.UNKNOWN_VALUE)
        self.env[key] = replace(current, donated=call_node)
        if current.deps and self.rec is not None:
            self.donated_params |= current.deps
