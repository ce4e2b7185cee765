"""Closures specialised per call: a function that returns a nested function closing over its
parameters (a decorator's ``wrapper`` over ``fn``, a factory's ``apply`` over ``model``) is
analysed again for each call that gives those parameters a known value, so
``@to_torch_output def step(x): ...`` then ``step(x)`` runs ``wrapper`` with ``fn`` being
``step``, and the export inside ``wrapper`` sees what ``step`` returns.  The general
``wrapper`` (its closure's parameters unknown) is still analysed as before.
"""
from __future__ import annotations

from collections import ChainMap
from dataclasses import replace

from . import values as V

# the most specialisations of one nested function (a decorator applied many times)
MAX_SPECIAL = 16


def _worth(v) -> bool:
    """Whether a parameter's value at a call says more than the symbolic parameter: a
    function, a class or an instance of the project, a placement (a sharding, a mesh, a
    device), or a multi-device array."""
    return v is not None and (v.kind in (V.FUNC, V.CLASS, V.INSTANCE, V.SHARDING, V.MESH, V.DEVICE, V.DEVICE_LIST)
                              or V.carries_multi(v, deps=False))


def specialize(ret, bind: dict, rec, node, here):
    """``ret`` (a function value ``rec`` returns) with its nested function analysed for these
    arguments (``bind``: index -> (value, expression)), or ``ret`` itself when it closes over
    none of ``rec``'s parameters or none of them is known better at this call.  A nested
    function of another module than ``here`` (the module analysis making the call) gives
    this call its result only: its events stay unreported (a module's findings never depend
    on the order other modules are analysed in)."""
    fi = ret.func
    local = fi.local if fi is not None else None
    closure = getattr(local, "closure", None)
    owner = getattr(local, "owner", None)
    if local is None or owner is None or not isinstance(closure, ChainMap) or not closure.maps:
        return ret
    frame = closure.maps[0]
    given = {}
    for i, name in enumerate(getattr(rec, "params", ())):
        held = frame.get(name)
        arg = bind.get(i)
        if held is not None and held.ref == (i, ()) and arg is not None and _worth(arg[0]):
            given[name] = arg[0]
    if not given:
        return ret
    # A nested function of another module (an imported decorator's ``wrapper``) is
    # specialised for this module only: kept in its memo, analysed when this module uses
    # it, never added to the other module's functions (whose findings and summary must not
    # depend on which of its importers was analysed first).
    memo = here.specialized
    key = (id(local.node), id(node))
    special = memo.get(key)
    if special is None:
        if sum(1 for k in memo if k[0] == id(local.node)) >= MAX_SPECIAL:
            return ret
        special = replace(local, closure=ChainMap(given, closure), summary=None, state="new", events={},
                          recursive=False, self_writes=None)
        special.specialized = True
        memo[key] = special
        if owner is here:
            owner.functions.append(special)     # analysed with the module's functions: its events are reported
    return V.evolve(ret, func=replace(fi, local=special))
