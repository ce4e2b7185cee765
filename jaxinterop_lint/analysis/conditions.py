"""Device-count guards: what an ``if``/``assert`` test proves on each branch.

``len(x.devices()) == 1``, ``len(x.sharding.device_set) == 1``, ``x.sharding.num_devices == 1``,
``len(x.addressable_shards) == 1``, ``len(x.global_shards) == 1`` and ``isinstance(x.sharding,
SingleDeviceSharding)`` make ``x`` single-device where they hold (in ``if`` and ``assert``
tests alike);
``len(jax.devices()) == 1`` and ``jax.device_count() == 1`` (no backend argument) make every
array single-device (jax-interop.md section 6): the key :data:`ALL`, and the join after the
``if`` takes the values of that branch as single-device (:func:`.env.join_env`).
``jax.local_device_count()`` and ``len(jax.local_devices())`` count this process's devices,
taken as the same guard (apis.GLOBAL_DEVICE_COUNTS says why, and where it is wrong).  ``x.is_fully_replicated`` and
``x.is_fully_addressable`` prove nothing (section 1), nor do the same properties of its
sharding (``x.sharding.is_fully_replicated``): they are remembered on ``x`` so that an
export under them is reported as an ineffective guard (rule JXI006).
"""
from __future__ import annotations

import libcst as cst

from ..knowledge import apis
from . import placements
from . import values as V
from .imports import dotted

SAFE = "safe"
FALSE_GUARD = "false-guard"
NOT_ARRAY = "not-array"     # no JAX array itself (``not isinstance(x, jax.Array)``): a container's parts may be
ALL = "@single"

# operator -> (branch where "count is 1" holds: True / False), for ``count OP 1``.
_OP_ONE = {cst.Equal: True, cst.LessThanEqual: True, cst.NotEqual: False, cst.GreaterThan: False}
# for ``count OP 2``.
_OP_TWO = {cst.LessThan: True, cst.GreaterThanEqual: False}
_FLIP = {cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan,
         cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThanEqual,
         cst.Equal: cst.Equal, cst.NotEqual: cst.NotEqual}


def count_subject(walker, node):
    """The key whose device count ``node`` measures, ALL for the process, or None
    (``(n := len(x.devices()))`` measures what its value does)."""
    while isinstance(node, cst.NamedExpr):
        node = node.value
    if isinstance(node, cst.Attribute) and node.attr.value in apis.MESH_SIZE_ATTRIBUTES:
        holder = walker.eval(node.value)
        if placements.every(holder):
            return ALL
    if isinstance(node, cst.Call):
        callee = walker.eval(node.func)
        if callee.kind == V.QNAME and callee.qname in apis.GLOBAL_DEVICE_COUNTS:
            return ALL if not node.args else None
        if callee.kind == V.QNAME and callee.qname == "builtins.len" and len(node.args) == 1:
            arg = node.args[0].value
            if isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute):
                if arg.func.attr.value in apis.DEVICE_COUNT_METHODS:
                    inner = walker.eval(arg.func.value)
                    if inner.kind == V.QNAME and inner.qname.rsplit(".", 1)[-1] in ("jax",):
                        return ALL if not arg.args else None
                    return dotted(arg.func.value)
                target = walker.eval(arg.func)
                if target.kind == V.QNAME and target.qname in apis.GLOBAL_DEVICE_LISTS and not arg.args:
                    return ALL
            if isinstance(arg, cst.Attribute) and arg.attr.value in apis.DEVICE_SET_ATTRIBUTES:
                return _sharding_owner(arg.value)
            if isinstance(arg, cst.Name):       # ``devs = x.devices()`` ... ``len(devs)``
                return _stored_count(walker, arg)
            if isinstance(arg, cst.Attribute) and arg.attr.value in apis.SHARD_LIST_ATTRIBUTES:
                return dotted(arg.value)
    if isinstance(node, cst.Attribute) and node.attr.value in apis.SHARDING_COUNT_ATTRIBUTES:
        return _sharding_owner(node.value)
    return None


def _device_set_of(walker, node):
    """The key whose devices ``node`` is (``x.devices()``, ``x.sharding.device_set``), or None."""
    kind = type(node)
    if kind is cst.Call and type(node.func) is cst.Attribute and not node.args \
            and node.func.attr.value in apis.DEVICE_COUNT_METHODS:
        inner = walker.eval(node.func.value)
        return None if inner.kind == V.QNAME else dotted(node.func.value)
    if kind is cst.Attribute and node.attr.value in apis.DEVICE_SET_ATTRIBUTES:
        return _sharding_owner(node.value)
    return None


def _sharding_owner(node):
    if isinstance(node, cst.Attribute) and node.attr.value == "sharding":
        return dotted(node.value)
    return None


def _int(node):
    return int(node.value, 0) if isinstance(node, cst.Integer) else None


def refinements(walker, test) -> tuple[dict, dict]:
    """``(true, false)``: what holds on each branch of ``test``, as key -> SAFE / FALSE_GUARD
    (``if (single := ...):`` tests what its value does)."""
    while isinstance(test, cst.NamedExpr):
        test = test.value
    stored = through_values(walker, test)
    if stored is not None:
        return stored
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
        key = dotted(test.args[0].value)
        classes = cls.elements if cls.elements is not None else (cls,)
        names = [c.qname for c in classes if c.kind == V.QNAME]
        if key and names and len(names) == len(classes):
            if all(n in apis.HOST_TYPES for n in names):
                return {key: SAFE}, {}          # a host value where it holds
            if all(n in apis.ARRAY_ANNOTATIONS for n in names):
                return {}, {key: NOT_ARRAY}     # no JAX array where it fails (a pytree may hold some)
        return {}, {}
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        op = type(comp.operator)
        left, right = test.left, comp.comparator
        key, number = count_subject(walker, left), _int(right)
        if key is None:
            key, number = count_subject(walker, right), _int(left)
            op = _FLIP.get(op, op)
        if key is None or number is None:
            return {}, {}
        holds = _OP_ONE.get(op) if number == 1 else _OP_TWO.get(op) if number == 2 else None
        if holds is None:
            return {}, {}
        return ({key: SAFE}, {}) if holds else ({}, {key: SAFE})
    return {}, {}


# -- tests through values: a test kept in a variable or returned by a helper ---------------
_TESTISH_CALLS = frozenset({"len", "isinstance", "device_count", "local_device_count"})
_TEST_NODES = frozenset({cst.Comparison, cst.BooleanOperation, cst.Attribute})


def through_values(walker, test):
    """The refinements of a test whose *value* carries a device-count test: a name bound to
    one (``single = len(x.devices()) == 1; if single:``), such a name of another module of
    the project (``env.MULTI``), a call of a helper that returns one
    (``if is_single(x):``), or a comparison of a stored device count (``n =
    len(x.devices()); if n == 1:``).  None when ``test`` is none of these (the syntactic forms
    above apply)."""
    kind = type(test)
    if kind is cst.Name or kind is cst.Call or kind is cst.Attribute:
        if kind is cst.Call and not _cached_or_helper(walker, test):
            return None
        held = walker.tested_value(test) if kind is not cst.Attribute else _module_global(walker, test)
        guard = held.guard if held is not None else None
        if guard is None or not walker.still_holds(guard[3]):
            return None
        return dict(guard[0]), dict(guard[1])
    if kind is cst.Comparison and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        op = type(comp.operator)
        key, number = _stored_count(walker, test.left), _int(comp.comparator)
        if key is None:
            key, number = _stored_count(walker, comp.comparator), _int(test.left)
            op = _FLIP.get(op, op)
        if key is None or number is None:
            return None
        holds = _OP_ONE.get(op) if number == 1 else _OP_TWO.get(op) if number == 2 else None
        if holds is None:
            return {}, {}
        return ({key: SAFE}, {}) if holds else ({}, {key: SAFE})
    return None


def _module_global(walker, node):
    """The value of ``module.NAME`` where ``module`` is a module of the project imported whole
    (``from proc import env``; ``env.MULTI``, bound there to ``jax.device_count() > 1``), or
    None for any other attribute (the guards on attributes are :func:`refinements`')."""
    base = node.value
    if type(base) is not cst.Name:
        return None
    module = walker.lookup(base.value)
    if module.kind != V.QNAME or walker.ma.project is None:
        return None
    value = walker.ma.project_value(V.qname(f"{module.qname}.{node.attr.value}"))
    return value if value.kind != V.QNAME else None


def _stored_count(walker, node):
    """The key a name or helper call holding a device count measures, or None."""
    kind = type(node)
    if kind is not cst.Name and not (kind is cst.Call and _cached_or_helper(walker, node)):
        return None
    count = walker.tested_value(node).count_of
    if count is None or not walker.still_holds(count[1]):
        return None
    return count[0]


def _cached_or_helper(walker, call) -> bool:
    """Whether a call's value is at hand or cheap: the test just evaluated, or a call of a
    function of this project (its summary is computed once)."""
    cached = walker._tested
    if cached is not None and cached[0] is call:
        return True
    if type(call.func) is cst.Name:
        return walker.lookup(call.func.value).kind == V.FUNC
    return False


def stored_test(walker, node, value, returned: bool = False):
    """``value`` (of expression ``node``, about to be bound or returned) with the
    device-count test or count it computes attached, so that a later ``if`` on the name (or
    on a call of the function returning it) guards like the test itself.  A bound test
    remembers the values it measured: it guards only while they are unchanged."""
    if value.guard is not None or value.count_of is not None:
        return value
    held = _device_set_of(walker, node)
    if held is not None:    # ``devs = x.devices()``: ``len(devs)`` counts the devices of x
        return V.evolve(value, count_of=(held, None if returned else ((held, walker.read_key(held)),)))
    kind = type(node)
    if kind is cst.Call:
        func = node.func
        name = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else None
        if name not in _TESTISH_CALLS:
            return value
    elif kind is cst.UnaryOperation:
        if type(node.operator) is not cst.Not:
            return value
    elif kind not in _TEST_NODES:
        return value
    saved = walker._tested
    walker._tested = (node, value)
    try:
        true, false = refinements(walker, node)
    finally:
        walker._tested = saved
    count = count_subject(walker, node) if kind is cst.Call or kind is cst.Attribute else None
    if not true and not false and count is None:
        return value

    def snap(keys):
        if returned:
            return None
        return tuple((k, walker.read_key(k)) for k in keys if k != ALL)

    def marked(refs):
        return tuple((k, a if a == SAFE or isinstance(a, tuple) else (FALSE_GUARD, node)) for k, a in refs.items())

    guard = (marked(true), marked(false), node, snap(set(true) | set(false))) if true or false else None
    counted = (count, snap([count])) if count is not None else None
    return V.evolve(value, guard=guard, count_of=counted)
