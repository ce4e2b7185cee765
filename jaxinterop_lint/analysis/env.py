"""Environments of the walk: joining the environments of two paths, and their comparable
form for loop fixpoints.  Below the walk (:mod:`.flow`) and the ``with`` handlers
(:mod:`.handlers`), which both join environments."""
from __future__ import annotations

from . import conditions
from . import values as V
from . import versions

SINGLE = conditions.ALL


def join_env(a, b):
    """Join two environments (None: unreachable)."""
    if a is None:
        return None if b is None else dict(b)
    if b is None:
        return dict(a)
    out = {}
    for k in a.keys() | b.keys():
        if k == SINGLE:
            if k in a and k in b:
                out[k] = a[k]
            continue
        if k == versions.KEY:  # the releases reaching either path (analysis/versions.py)
            joined = versions.join(a.get(k), b.get(k))
            if joined is not None:
                out[k] = joined
            continue
        out[k] = V.join(a.get(k), b.get(k))
    return out


def env_key(env):
    """Comparable form of an environment, for fixpoints."""
    if env is None:
        return None
    return frozenset((k, V.fixpoint_key(v)) for k, v in env.items())
