"""Device-count guards: what an ``if``/``assert`` test proves on each branch.

``len(x.devices()) == 1``, ``len(x.sharding.device_set) == 1``, ``x.sharding.num_devices == 1``,
``len(x.addressable_shards) == 1``, ``len(x.global_shards) == 1`` and ``isinstance(x.sharding,
SingleDeviceSharding)`` make ``x`` single-device where they hold (in ``if`` and ``assert``
tests alike);
``len(jax.devices()) == 1``, ``jax.device_count() == 1`` and ``jax.local_device_count() == 1``
make every array single-device (jax-interop.md section 6).  ``x.is_fully_replicated`` and
``x.is_fully_addressable`` prove nothing (section 1), nor do the same properties of its
sharding (``x.sharding.is_fully_replicated``): they are remembered on ``x`` so that an
export under them is reported as an ineffective guard (rule JXI006).
"""
from __future__ import annotations

import libcst as cst

from ..knowledge import apis
from . import values as V
from .imports import dotted

SAFE = "safe"
FALSE_GUARD = "false-guard"
ALL = "@single"

# operator -> (branch where "count is 1" holds: True / False), for ``count OP 1``.
_OP_ONE = {cst.Equal: True, cst.LessThanEqual: True, cst.NotEqual: False, cst.GreaterThan: False}
# for ``count OP 2``.
_OP_TWO = {cst.LessThan: True, cst.GreaterThanEqual: False}
_FLIP = {cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan,
         cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThanEqual,
         cst.Equal: cst.Equal, cst.NotEqual: cst.NotEqual}


def _count_subject(walker, node):
    """The key whose device count ``node`` measures, ALL for the process, or None."""
    if isinstance(node, cst.Call):
        callee = walker.eval(node.func)
        if callee.kind == V.QNAME and callee.qname in apis.GLOBAL_DEVICE_COUNTS:
            return ALL
        if callee.kind == V.QNAME and callee.qname == "builtins.len" and len(node.args) == 1:
            arg = node.args[0].value
            if isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute):
                if arg.func.attr.value in apis.DEVICE_COUNT_METHODS:
                    inner = walker.eval(arg.func.value)
                    if inner.kind == V.QNAME and inner.qname.rsplit(".", 1)[-1] in ("jax",):
                        return ALL
                    return dotted(arg.func.value)
                target = walker.eval(arg.func)
                if target.kind == V.QNAME and target.qname in apis.DEVICE_LISTS:
                    return ALL
            if isinstance(arg, cst.Attribute) and arg.attr.value in apis.DEVICE_SET_ATTRIBUTES:
                return _sharding_owner(arg.value)
            if isinstance(arg, cst.Attribute) and arg.attr.value in apis.SHARD_LIST_ATTRIBUTES:
                return dotted(arg.value)
    if isinstance(node, cst.Attribute) and node.attr.value in apis.SHARDING_COUNT_ATTRIBUTES:
        return _sharding_owner(node.value)
    return None


def _sharding_owner(node):
    if isinstance(node, cst.Attribute) and node.attr.value == "sharding":
        return dotted(node.value)
    return None


def _int(node):
    return int(node.value, 0) if isinstance(node, cst.Integer) else None


def refinements(walker, test) -> tuple[dict, dict]:
    """``(true, false)``: what holds on each branch of ``test``, as key -> SAFE / FALSE_GUARD."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        t, f = refinements(walker, test.expression)
        return f, t
    if isinstance(test, cst.BooleanOperation):
        lt, lf = refinements(walker, test.left)
        rt, rf = refinements(walker, test.right)
        if isinstance(test.operator, cst.And):
            return {**lt, **rt}, {}
        return {}, {**lf, **rf}
    if isinstance(test, cst.Attribute) and test.attr.value in apis.FALSE_GUARD_ATTRIBUTES:
        key = _sharding_owner(test.value) or dotted(test.value)
        return ({key: FALSE_GUARD}, {}) if key else ({}, {})
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "isinstance" \
            and len(test.args) == 2:
        cls = walker.eval(test.args[1].value)
        owner = _sharding_owner(test.args[0].value)
        if owner and cls.kind == V.QNAME and cls.qname in apis.SINGLE_DEVICE_CONSTRUCTORS:
            return {owner: SAFE}, {}
        return {}, {}
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        op = type(comp.operator)
        left, right = test.left, comp.comparator
        key, number = _count_subject(walker, left), _int(right)
        if key is None:
            key, number = _count_subject(walker, right), _int(left)
            op = _FLIP.get(op, op)
        if key is None or number is None:
            return {}, {}
        holds = _OP_ONE.get(op) if number == 1 else _OP_TWO.get(op) if number == 2 else None
        if holds is None:
            return {}, {}
        return ({key: SAFE}, {}) if holds else ({}, {key: SAFE})
    return {}, {}
