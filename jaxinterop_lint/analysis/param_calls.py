"""Methods called on a parameter (``def consume(item): return item.to_torch()``), and
parameters called (``def apply(fn, x): return fn(x)``).

Inside ``consume`` the class of ``item`` is not known, so the call is kept in the summary
(``Summary.calls``: the parameter, the path read on it, the method's name and the
arguments, in terms of ``consume``'s parameters).  A call of ``consume`` whose argument is an
instance of a class of the project runs that method of it, with the receiver and arguments
the call gives (:meth:`ParamCallsMixin.run_param_calls`): ``consume(Item(sharded))`` reaches
the export inside ``Item.to_torch`` as a calling context, as ``Item(sharded).to_torch()``
would.  An argument that is itself a parameter of the caller hands the call on to the
caller's summary (``relay(item): consume(item)``).  A parameter that is called is kept the
same way, with no method name: a call of ``apply(torch.from_dlpack, sharded)`` calls the
consumer with ``sharded`` (a finding at that call), ``apply(helper, sharded)`` the
project's ``helper``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ..knowledge import apis
from . import parts as P
from . import values as V
from .env import SINGLE, single_device
from .imports import dotted
from .placements import own_arguments

def _argument_node(value, bind: dict):
    """The caller's expression for ``value`` (an argument the callee hands on, in terms of
    its parameters): the expression given for the parameter it is, or is a part of or
    computed from (``fn(x)`` in ``apply(fn, x)``: the expression given for ``x``; the
    leaves of ``jax.tree.map(fn, tree)``: the one given for ``tree``), else None (also for
    what a function given for a parameter returns: ``conv(fn(x))``'s ``fn(x)``)."""
    ref = value.ref if value.ref is not None else (min(value.deps) if value.deps else None)
    if ref is None or ref[0] not in bind:
        return None
    if any(V.is_called(k) for k in ref[1]):
        return None     # what a function the caller gave returns (``fn(x)``): not its expression
    return bind[ref[0]][1]


def _stored(recv, attr: str):
    """The value an instance holds in its attribute ``attr`` (stored by its ``__init__``:
    ``self.sink = sink``), when that is something to call rather than a method of its
    class; else None."""
    if recv.kind != V.INSTANCE or (recv.cls is not None and attr in recv.cls.methods):
        return None
    key = V.attr_key(attr)
    for k, part in recv.parts or ():
        if k == key and part.kind in (V.QNAME, V.FUNC, V.INSTANCE, V.CLASS, V.LAUNCHER, V.DEFERRED):
            return part
    return None


# the keyword under which a kept call keeps its ``**`` argument of unknown keys (no keyword
# argument is spelled so)
SPLAT = "**"

# the most method calls on parameters one summary keeps (a function calling many methods of
# its argument: the first ones, in the order of the walk)
MAX_CALLS = 32


class ParamCallsMixin:
    """The walker's side (:class:`~.flow.Walker` supplies ``ma``, ``rec``, ``instantiate``,
    ``argument_part``, ``apply``, ``param_calls`` and ``handed_to``: the function whose kept
    call of a parameter runs now, named in the consumer's message by ``calls.call_sink``)."""

    def note_param_call(self, node, recv, attr: str, pos: list, kw: dict) -> None:
        """``recv.attr(*pos, **kw)`` where ``recv`` is a part of a parameter of the function
        walked (its ``ref``), or with ``attr`` None ``recv(*pos, **kw)``: kept for the
        summary."""
        if self.rec is None or recv.ref is None or len(self.param_calls) >= MAX_CALLS:
            return
        key = (recv.ref, attr, id(node))
        if key not in self._param_call_keys:
            self._param_call_keys.add(key)
            # under ``if jax.device_count() == 1:`` every argument is single-device there
            one = single_device if (self.env or {}).get(SINGLE) is not None else (lambda v: v)
            named = tuple((k, one(v)) for k, (v, _) in kw.items())
            held = self.splats.get(id(node))     # ``fn(**payload)``: kept as the keyword "**"
            self.param_calls.append((recv.ref[0], recv.ref[1], attr, tuple(one(v) for v, _ in pos),
                                     named + ((SPLAT, one(held[0])),) if held is not None else named, node))

    def called_with_values(self, node, pos: list) -> str:
        """The part key of what a parameter returns at ``node``, called with the positional
        arguments ``pos`` that are not all whole parameters (``model_fn(batch)``, ``batch``
        one of the callee's values): their values are kept for the summary
        (:attr:`~.records.Summary.called`; joined when a loop walks the call again) and the
        caller calls its function with them."""
        if self.rec is None:
            return V.CALLED
        values = tuple(v for v, _ in pos)
        index = self._called_at.get(id(node))
        if index is None:
            index = self._called_at[id(node)] = len(self.called_with)
            self.called_with.append(values)
        else:
            self.called_with[index] = tuple(V.join(a, b) for a, b in zip(self.called_with[index], values))
        return V.called_with_key(index)

    def run_param_calls(self, node, rec, bind: dict, calls: tuple) -> None:
        """A call of ``rec`` with ``bind`` (index -> (value, expression)): each method its
        summary calls on a parameter (``calls``) runs on the argument given there when that
        is an instance of a class of the project, and a parameter it calls is the argument
        called (a library function, such as a consumer, or one of the project); an argument
        that is a parameter of this walk keeps the call for this walk's summary."""
        changed = False
        for param, path, attr, pos, kw, inner in calls:
            arg = bind.get(param)
            if arg is None:
                continue
            whole = self.argument_part(rec, param, arg, path, node, bind)
            # an instance of one of several classes (``[Printer(), Mirror()]``): each one's method
            one = whole.kind == V.INSTANCE and not whole.others and not path
            for recv in (V.evolve(whole, others=()),) + whole.others if whole.kind == V.INSTANCE else (whole,):
                stored = self._run_one(node, rec, bind, arg, path, recv, attr, pos, kw, inner)
                if one and stored is not None and arg[1] is not None and dotted(arg[1]) is None:
                    # ``fit(Trainer(s))`` with ``def fit(t): t.step(x); return t``: what the
                    # method stores on the instance is the argument's from now on (a name's is
                    # written back to the name by the method's call itself)
                    bind[param] = arg = (stored, arg[1])
                    changed = True
        return changed

    def _call_arguments(self, node, rec, bind: dict, pos: tuple, kw: tuple, inner=None) -> tuple:
        """``(positional, keyword)`` Args of a kept call, instantiated with the call of
        ``rec`` (``bind``), each with the caller's expression it comes from
        (:func:`_argument_node`), or else, when ``rec`` is of this module, the expression of
        the kept call ``inner`` itself (``self.hook(batch)``: ``batch``)."""
        own = own_arguments(inner) if inner is not None and getattr(rec, "owner", None) is self.ma else ([], {})
        return ([(self.instantiate(v, bind, rec, node), _argument_node(v, bind) or (own[0][i] if i < len(own[0]) else None))
                 for i, v in enumerate(pos)],
                {k: (self.instantiate(v, bind, rec, node), _argument_node(v, bind) or own[1].get(k)) for k, v in kw})

    def _run_one(self, node, rec, bind, arg, path, recv, attr, pos, kw, inner) -> None:
        called = recv if attr is None else _stored(recv, attr)
        if called is not None:
            # the parameter itself called (``apply(torch.from_dlpack, x)``), or a function or
            # callable object the argument holds (``self.sink(x)`` with ``Runner(sink)``)
            before, self.handed_to = self.handed_to, rec.name
            args, kwargs = self._call_arguments(node, rec, bind, pos, kw, inner)
            splat = kwargs.pop(SPLAT, None)
            held = self.splats.get(id(node))
            if splat is not None:
                self.splats[id(node)] = splat
            try:
                self.apply(node, called, args, kwargs)
            finally:
                self.handed_to = before
                if splat is not None:
                    if held is None:
                        del self.splats[id(node)]
                    else:
                        self.splats[id(node)] = held
            return
        method = recv.cls.methods.get(attr) if recv.kind == V.INSTANCE and recv.cls is not None else None
        if method is not None and (method.kind != V.FUNC or method.func is None or method.func.local is None):
            return
        if method is None and (recv.ref is None or self.rec is None):
            return
        args, kwargs = self._call_arguments(node, rec, bind, pos, kw, inner)
        if method is not None:
            receiver = (recv, arg[1] if not path else None)
            bound = V.evolve(method, func=replace(method.func, bound=(receiver,)))
            self.apply(node, bound, args, kwargs)
            return self._stored_on(node, recv, bound.func, args, kwargs)
        self.note_param_call(inner, recv, attr, args, kwargs)
        return None

    def _stored_on(self, node, recv, fi, args: list, kwargs: dict):
        """The instance ``recv`` with what the method ``fi`` (bound to it) stores on ``self``
        when called with ``args`` and ``kwargs`` (its summary's fields, instantiated), or
        None when it stores nothing."""
        mrec, mbind = self.bind_args(fi, args, kwargs)
        summary = mrec.summary if mrec is not None else None
        if summary is None or not summary.fields or mrec.name.endswith("__init__"):
            return None
        new = recv
        for name, v in summary.fields:
            new = P.with_part(new, V.attr_key(name), self.instantiate(v, mbind, mrec, node))
        return new

    def method_result(self, instance: V.Value, name: str, node) -> V.Value:
        """What ``instance.name()`` returns (a method of its class, of this project, called
        with no argument: ``holder.get()`` in a helper given ``holder``), or the attribute's
        part as before when the class has no such method."""
        method = bound_method(instance, name)
        if method is None:
            return P.read(instance, V.attr_key(name) + V.CALLED)
        return self.apply(node, method, [], {})

    @staticmethod
    def is_source(v: V.Value) -> bool:
        """Whether ``v`` is a function whose calls make a multi-device value: a wrapped one
        (pjit, shard_map: ``FuncInfo.source``), a function of the project whose summary
        returns one whatever its arguments, or a ``functools.partial`` of a placement
        call (``apis.PLACEMENT_CALLS``) given a sharding that is not known to be on one
        device (``partial(jax.device_put, device=NamedSharding(mesh, P("data")))``)."""
        fi = v.func if v.kind == V.FUNC else None
        if fi is None:
            return False
        if fi.source is not None:
            return True
        rec = fi.local
        if rec is not None and not fi.bound and getattr(rec, "owner", None) is not None:
            # a function of the project that returns a multi-device value whatever its
            # arguments (``def shard(x): return jax.device_put(x, rows)`` with ``rows`` a
            # module's sharding), handed to a class of a module the plan left unopened
            ret = rec.owner.summary(rec).ret
            return ret is not None and ret.multi is not None
        if fi.partial_of not in apis.PLACEMENT_CALLS:
            return False
        from .calls import _placement_arg

        bound = [b if isinstance(b, tuple) else (b, None) for b in fi.bound]
        placed = _placement_arg(bound, dict(fi.kwargs), apis.PLACEMENT_CALLS[fi.partial_of])
        return placed is not None and placed[0].kind == V.SHARDING

    def is_consumer(self, v: V.Value) -> bool:
        """Whether ``v`` is a consumer to call: a library function of the consumer tables
        (``torch.from_dlpack``), an instance of a class of the project the plan deferred
        (it uses one: :mod:`.deferred`), or a function of the project, or an instance whose
        ``__call__`` is one, that exports a parameter."""
        if v.kind in (V.QNAME, V.DEFERRED):
            return v.kind == V.DEFERRED or v.qname in self.ma.kb.call_sinks
        fn = v
        if v.kind == V.INSTANCE and v.cls is not None:
            fn = v.cls.methods.get("__call__") or (v.cls.methods.get(v.cls.call_method) if v.cls.call_method else None)
        rec = fn.func.local if fn is not None and fn.kind == V.FUNC and fn.func is not None else None
        return rec is not None and getattr(rec, "owner", None) is not None and bool(rec.owner.summary(rec).exports)


def bound_method(instance: V.Value, name: str) -> Optional[V.Value]:
    """The method ``name`` of the class of ``instance`` (an instance of a class of this
    project), bound to it; None when the class has no such method of the project."""
    method = instance.cls.methods.get(name)
    if method is None or method.kind != V.FUNC or method.func is None or method.func.local is None:
        return None
    return V.evolve(method, func=replace(method.func, bound=((instance, None),)))
