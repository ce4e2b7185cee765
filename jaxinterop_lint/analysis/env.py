"""Environments of the walk: joining the environments of two paths, and their comparable
form for loop fixpoints.  Below the walk (:mod:`.flow`) and the ``with`` handlers
(:mod:`.handlers`), which both join environments."""
from __future__ import annotations

from . import conditions
from . import values as V
from . import versions

SINGLE = conditions.ALL


def join_env(a, b):
    """Join two environments (None: unreachable).  When a device-count guard put one path
    in a one-device process (``@single``, from ``jax.device_count() == 1``) and not the
    other, the values of that path are joined as :func:`single_device` makes them: after
    ``if jax.device_count() > 1: x = jax.device_put(x, jax.devices()[0])`` ``x`` is
    single-device on both paths."""
    if a is None:
        return None if b is None else dict(b)
    if b is None:
        return dict(a)
    one_a, one_b = SINGLE in a, SINGLE in b
    out = {}
    for k in a.keys() | b.keys():
        if one_a != one_b and k != SINGLE and k != versions.KEY:
            # One path runs in a one-device process (a device-count guard said so): there
            # every array is single-device, whatever it was made from (jax-interop.md 6).
            va, vb = a.get(k), b.get(k)
            if va is not vb:
                out[k] = V.join(single_device(va) if one_a else va, single_device(vb) if one_b else vb)
                continue
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


def single_device(value, depth: int = 0):
    """``value`` as it is in a process of one device: every array in it (parts included) is
    single-device, so its multi-device origin, its parameter dependences (a caller's
    argument is single-device there too) and a parameter's placement are dropped; a
    donation and a false guard (rules JXI008, JXI006) are kept.  Values holding no array
    are returned as they are."""
    if value is None or depth > V.MAX_DEPTH or not V.carries_multi(value) and value.placed_by is None:
        return value
    if value.kind in (V.FUNC, V.CLASS, V.QNAME, V.KERNEL, V.LAUNCHER):
        return value
    if not value.structured and value.kind in (V.ARRAY, V.UNKNOWN, V.SAFE) and value.donated is None \
            and value.false_guard is None:
        return V.SAFE_VALUE
    elements = None if value.elements is None else tuple(single_device(e, depth + 1) for e in value.elements)
    parts = None if value.parts is None else tuple((k, single_device(p, depth + 1)) for k, p in value.parts)
    return V.evolve(value, multi=None, deps=frozenset(), ref=None, param_array=None, placed_by=None,
                    elements=elements, parts=parts, rest=single_device(value.rest, depth + 1))


def env_key(env):
    """Comparable form of an environment, for fixpoints."""
    if env is None:
        return None
    return frozenset((k, V.fixpoint_key(v)) for k, v in env.items())
