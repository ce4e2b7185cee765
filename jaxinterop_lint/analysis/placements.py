"""Exact placements: how many devices a device array, a mesh or a sharding holds (issue 12).

A device array (``jax.devices()``, ``np.array(jax.devices()[:1]).reshape(1, 1)``, a mesh's
``devices``) is described by its shape, a tuple of dimensions where an unknown dimension is
None; the shape lives in ``Value.devices``.  ``jax.devices()`` has the shape ``(None,)``: at
least one device, how many is not known.  A mesh holds the device array it is built from, and
a ``NamedSharding`` on a mesh of one device is a single-device placement.  A count that cannot
be known stays unknown, which the analysis treats as several devices (as before).

The facts (what each call keeps or computes) are in :mod:`jaxinterop_lint.knowledge.apis`
(``DEVICE_ARRAY_*``, ``MESH_*``), each run with jax 0.10.2 on 8 CPU devices.
"""
from __future__ import annotations

import math
from typing import Optional

import libcst as cst

from . import values as V
from .values import Value

ANY_DEVICES = (None,)
"""The shape of ``jax.devices()``: one dimension, length unknown (at least 1)."""

EVERY = "@every-device"
"""The ``desc`` of a device array or mesh known to hold every device of the process
(``jax.devices()``, a mesh built on all of it): its size is 1 exactly when the process has one
device, so ``MESH.size == 1`` is a guard like ``jax.device_count() == 1``."""


def every(value: Optional[Value]) -> bool:
    """Whether a device array or mesh value holds every device of the process (:data:`EVERY`)."""
    return value is not None and value.desc == EVERY and value.kind in (V.DEVICE_LIST, V.MESH)


def count(shape: Optional[tuple]) -> Optional[int]:
    """The number of devices of a device-array shape, or None when a dimension is unknown."""
    if shape is None or any(d is None for d in shape):
        return None
    return math.prod(shape)


# what a constant may be computed by (``const``: :func:`~.constants.constant_int`)
_COMPUTED = (cst.Name, cst.Subscript, cst.Attribute, cst.BinaryOperation, cst.UnaryOperation, cst.Call)


def literal_int(node, const=None) -> Optional[int]:
    """The value of an integer literal (``3``, ``-1``), or of a constant ``const(node)`` says
    it stands for (:mod:`.constants`: a module constant, or what constants compute), or None."""
    if isinstance(node, cst.Integer):
        return _small(node)
    if const is not None and isinstance(node, _COMPUTED):
        value = const(node)
        return value if type(value) is int else None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, cst.Integer):
        n = _small(node.expression)
        return -n if n is not None else None
    return None


def _small(node: cst.Integer) -> Optional[int]:
    """An integer literal's value, or None over :data:`~.constants.MAX_INT` (no mesh is that
    large; its digits could not be stored): :func:`~.constants.literal_constant`."""
    from .constants import literal_constant

    return literal_constant(node)


def literal_shape(node, const=None) -> Optional[tuple]:
    """A shape written as literals: ``(1,)``, ``[2, 4]``, ``8`` -> a tuple of ints (a ``-1``
    or any other expression is an unknown dimension, None); None when not a tuple/list/int."""
    if const is not None and isinstance(node, _COMPUTED):
        value = const(node)     # a constant shape (``SHAPE = (1,)``)
        if isinstance(value, tuple):
            return tuple(n if n >= 0 else None for n in value)
    if isinstance(node, (cst.Tuple, cst.List)):
        dims = []
        for el in node.elements:
            if isinstance(el, cst.StarredElement):
                return None
            n = literal_int(el.value, const)
            dims.append(n if n is not None and n >= 0 else None)
        return tuple(dims)
    n = literal_int(node, const)
    if n is not None:
        return (n,) if n >= 0 else (None,)
    return None


def shape_of_args(nodes, const=None) -> Optional[tuple]:
    """The shape passed to ``reshape``: one tuple argument or the dimensions one by one
    (literals, or constants by ``const``)."""
    if len(nodes) == 1:
        return literal_shape(nodes[0], const)
    dims = []
    for n in nodes:
        v = literal_int(n, const)
        dims.append(v if v is not None and v >= 0 else None)
    return tuple(dims) if dims else None


def combined(shapes) -> Optional[tuple]:
    """The shape of a device mesh built from one literal shape, or from an ICI and a DCN
    shape (``create_hybrid_device_mesh``: their element-wise product); None if unknown."""
    if not shapes or any(s is None for s in shapes) or len({len(s) for s in shapes}) != 1:
        return None
    out = []
    for dims in zip(*shapes):
        out.append(None if any(d is None for d in dims) else math.prod(dims))
    return tuple(out)


def device_shape(value: Value) -> Optional[tuple]:
    """The shape of ``value`` as a device array: a DEVICE_LIST's own, ``(n,)`` for a list or
    tuple literal of n devices; None when ``value`` is no known device array."""
    if value.kind == V.DEVICE_LIST:
        return value.devices if value.devices is not None else ANY_DEVICES
    els = value.elements
    if els and all(e.kind == V.DEVICE for e in els):
        return (len(els),)
    return None


def device_list(shape: Optional[tuple], all_devices: bool = False) -> Value:
    """A device-array value of ``shape`` (an empty shape is one device); ``all_devices``: it
    holds every device of the process (:data:`EVERY`)."""
    if shape == ():
        return Value(kind=V.DEVICE)
    return Value(kind=V.DEVICE_LIST, devices=shape, desc=EVERY if all_devices else None)


def reshaped(shape: Optional[tuple], new: Optional[tuple]) -> Optional[tuple]:
    """The shape after ``.reshape(new)``: the literal dimensions, one unknown one (``-1``)
    filled in when the count is known."""
    if new is None:
        return None
    unknown = [i for i, d in enumerate(new) if d is None]
    total = count(shape)
    if len(unknown) == 1 and total is not None:
        known = math.prod(d for d in new if d is not None)
        if known and total % known == 0:
            return tuple(total // known if d is None else d for d in new)
    return new


def _slice_length(n: Optional[int], sl: cst.Slice, const=None) -> Optional[int]:
    """How many elements ``[lower:upper:step]`` keeps of a dimension of length ``n`` (None:
    unknown, at least 1).  With ``n`` unknown, a slice that keeps at most one element keeps
    exactly one (a program whose slice is empty fails when it builds the mesh)."""
    lower = None if sl.lower is None else literal_int(sl.lower, const)
    upper = None if sl.upper is None else literal_int(sl.upper, const)
    step = None if sl.step is None else literal_int(sl.step, const)
    if (sl.lower is not None and lower is None) or (sl.upper is not None and upper is None) \
            or (sl.step is not None and step is None):
        if sl.step is None and _is_plus_one(sl.lower, sl.upper):
            return 1
        return None
    if n is not None:
        return len(range(n)[slice(lower, upper, step)])
    if step not in (None, 1):
        return None
    if lower is None and upper is not None and upper > 0:
        at_most = upper
    elif upper is None and lower is not None and lower < 0:
        at_most = -lower
    elif lower is not None and upper is not None and (lower >= 0) == (upper >= 0):
        at_most = upper - lower
    else:
        return None
    return 1 if at_most == 1 else None


def _is_plus_one(lower, upper) -> bool:
    """``[i:i + 1]``: the upper bound is the lower one plus 1, written out."""
    if lower is None or not isinstance(upper, cst.BinaryOperation) or not isinstance(upper.operator, cst.Add):
        return False
    if literal_int(upper.right) != 1:
        return False
    return cst.Module([]).code_for_node(upper.left).strip() == cst.Module([]).code_for_node(lower).strip()


def indexed(shape: Optional[tuple], elements, const=None) -> Value:
    """``devs[...]`` of a device array of ``shape``: an index drops a dimension, a slice keeps
    it with the length it selects (its bounds literals, or module constants by ``const``); no
    dimension left is one device."""
    dims = list(shape if shape is not None else ANY_DEVICES)
    out = []
    pos = 0
    for el in elements:
        sl = el.slice
        if pos >= len(dims):
            return Value(kind=V.DEVICE_LIST)
        if isinstance(sl, cst.Slice):
            out.append(_slice_length(dims[pos], sl, const))
        pos += 1
    out.extend(dims[pos:])
    return device_list(tuple(out))


def method_result(shape: Optional[tuple], how: str, arg_nodes, all_devices: bool = False, const=None) -> Value:
    """A device array's method (apis.DEVICE_ARRAY_METHODS) applied to an array of ``shape``
    (every one keeps the devices: ``all_devices`` is kept; ``const`` reads a constant
    shape)."""
    if how == "reshape":
        return device_list(reshaped(shape, shape_of_args(arg_nodes, const)), all_devices)
    if how == "flat":
        return device_list((count(shape),), all_devices)
    if how == "reverse":
        return device_list(tuple(reversed(shape)) if shape is not None else None, all_devices)
    return device_list(shape, all_devices)


def single(value: Optional[Value]) -> bool:
    """Whether a mesh, sharding or device-array value is known to hold exactly one device."""
    return value is not None and count(value.devices) == 1


def own_arguments(call) -> tuple:
    """``([positional expressions], {keyword: expression})`` of the call node ``call`` (none
    after a ``*`` or ``**`` argument: their positions are not the values')."""
    pos, kw = [], {}
    for a in getattr(call, "args", ()):
        if a.star:
            break
        if a.keyword is not None:
            kw[a.keyword.value] = a.value
        else:
            pos.append(a.value)
    return pos, kw
