"""Methods called on a parameter: ``def consume(item): return item.to_torch()``.

Inside ``consume`` the class of ``item`` is not known, so the call is kept in the summary
(``Summary.calls``: the parameter, the path read on it, the method's name and the
arguments, in terms of ``consume``'s parameters).  A call of ``consume`` whose argument is an
instance of a class of the project runs that method of it, with the receiver and arguments
the call gives (:meth:`ParamCallsMixin.run_param_calls`): ``consume(Item(sharded))`` reaches
the export inside ``Item.to_torch`` as a calling context, as ``Item(sharded).to_torch()``
would.  An argument that is itself a parameter of the caller hands the call on to the
caller's summary (``relay(item): consume(item)``).
"""
from __future__ import annotations

from dataclasses import replace

from . import values as V

# the most method calls on parameters one summary keeps (a function calling many methods of
# its argument: the first ones, in the order of the walk)
MAX_CALLS = 32


class ParamCallsMixin:
    """The walker's side (:class:`~.flow.Walker` supplies ``rec``, ``instantiate``,
    ``argument_part``, ``apply`` and ``param_calls``)."""

    def note_param_call(self, node, recv, attr: str, pos: list, kw: dict) -> None:
        """``recv.attr(*pos, **kw)`` where ``recv`` is a part of a parameter of the function
        walked (its ``ref``): kept for the summary."""
        if self.rec is None or recv.ref is None or len(self.param_calls) >= MAX_CALLS:
            return
        key = (recv.ref, attr, id(node))
        if key not in self._param_call_keys:
            self._param_call_keys.add(key)
            self.param_calls.append((recv.ref[0], recv.ref[1], attr, tuple(v for v, _ in pos),
                                     tuple((k, v) for k, (v, _) in kw.items()), node))

    def run_param_calls(self, node, rec, bind: dict, calls: tuple) -> None:
        """A call of ``rec`` with ``bind`` (index -> (value, expression)): each method its
        summary calls on a parameter (``calls``) runs on the argument given there when that
        is an instance of a class of the project; an argument that is a parameter of this
        walk keeps the call for this walk's summary."""
        for param, path, attr, pos, kw, inner in calls:
            arg = bind.get(param)
            if arg is None:
                continue
            whole = self.argument_part(rec, param, arg, path, node)
            # an instance of one of several classes (``[Printer(), Mirror()]``): each one's method
            for recv in (V.evolve(whole, others=()),) + whole.others if whole.kind == V.INSTANCE else (whole,):
                self._run_one(node, rec, bind, arg, path, recv, attr, pos, kw, inner)

    def _run_one(self, node, rec, bind, arg, path, recv, attr, pos, kw, inner) -> None:
        method = recv.cls.methods.get(attr) if recv.kind == V.INSTANCE and recv.cls is not None else None
        if method is not None and (method.kind != V.FUNC or method.func is None or method.func.local is None):
            return
        if method is None and (recv.ref is None or self.rec is None):
            return
        args = [(self.instantiate(v, bind, rec, node), None) for v in pos]
        kwargs = {k: (self.instantiate(v, bind, rec, node), None) for k, v in kw}
        if method is not None:
            receiver = (recv, arg[1] if not path else None)
            self.apply(node, V.evolve(method, func=replace(method.func, bound=(receiver,))), args, kwargs)
        else:
            self.note_param_call(inner, recv, attr, args, kwargs)

