"""The abstract values of the provenance analysis.

A :class:`Value` says what the analysis knows of a Python value at one program point: whether
it may be a multi-device ``jax.Array`` (and where that came from), whether it depends on the
enclosing function's parameters (for summaries), or what other interesting thing it is (a
qualified name, a sharding, a device, a wrapped function, an FFI buffer, ...).  Unknown is not
multi-device: a finding needs a known source (design.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional

# Kinds of values that are not plain arrays.
UNKNOWN = "unknown"
ARRAY = "array"          # a JAX array (or pytree of them): see ``multi`` / ``deps``
SAFE = "safe"            # known single-device or host value
FOREIGN = "foreign"      # a NumPy / torch / CuPy / ... object: never a JAX array
QNAME = "qname"          # a module or module attribute: ``qname`` holds its qualified name
SHARDING = "sharding"    # a placement spanning several devices (NamedSharding, P(...))
DEVICE = "device"        # a placement on one device
DEVICE_LIST = "device-list"
SAFE_LIST = "safe-list"  # e.g. ``x.addressable_shards``: every element is single-device
FUNC = "func"            # something callable that the analysis understands: see ``func``
KERNEL = "kernel"        # a ``@numba.cuda.jit`` kernel
LAUNCHER = "launcher"    # ``kernel[grid, block]``
FFI_BUFFER = "ffi-buffer"
CAPSULE = "capsule"      # a DLPack capsule
INSTANCE = "instance"    # an instance of a class of this module: ``cls`` holds it
CLASS = "class"
MESH = "mesh"            # a jax.sharding.Mesh: ``devices`` holds the shape of its device array


@dataclass(frozen=True)
class Origin:
    """Where a multi-device value came from: a description, the node and the
    :class:`~jaxinterop_lint.analysis.module.ModuleAnalysis` that owns it (resolved to a path
    and line only when a finding needs it), the enclosing function, and the steps since, as
    ``(description, node, owner)`` triples."""

    description: str
    node: Any = None
    owner: Any = None
    function: str = ""
    steps: tuple = ()

    def step(self, description: str, node: Any, owner: Any = None) -> "Origin":
        """Return this origin with one more step (at most 12 are kept)."""
        if len(self.steps) >= 12:
            return self
        return replace(self, steps=self.steps + ((description, node, owner),))


@dataclass(frozen=True)
class FuncInfo:
    """A callable the analysis understands.

    ``local`` is the :class:`~jaxinterop_lint.analysis.module.FunctionDef` record of a def or
    lambda of this module (None for library functions); ``qname`` a library function's
    qualified name; ``source`` an :class:`Origin` when every call returns a multi-device value
    (pjit, shard_map, pmap, jit with shardings); ``propagate`` when a call returns a
    multi-device value exactly when an argument is one (plain jit); ``donate`` the donated
    positions and ``donate_names`` the donated parameter names; ``bound`` how many leading
    parameters are already bound (``functools.partial``, a bound method); ``kwargs`` the
    keyword arguments bound by ``functools.partial`` of a library function.
    """

    local: Any = None
    qname: Optional[str] = None
    source: Optional[Origin] = None
    propagate: bool = False
    donate: frozenset = frozenset()
    donate_names: frozenset = frozenset()
    bound: tuple = ()
    kwargs: tuple = ()
    partial_of: Optional[str] = None


@dataclass(frozen=True)
class Value:
    """An abstract value.  See the module docstring; every field has a neutral default."""

    kind: str = UNKNOWN
    multi: Optional[Origin] = None
    deps: frozenset = frozenset()
    qname: Optional[str] = None
    func: Optional[FuncInfo] = None
    desc: Optional[str] = None          # for shardings: the constructor's name
    donated: Any = None                 # the call node that donated this value
    false_guard: Any = None             # the is_fully_* test node guarding it (JXI006)
    param_array: Optional[str] = None   # the annotated parameter's name (JXI009)
    elements: Optional[tuple] = None    # tuple values, element by element
    cls: Any = None
    removed_capsule: bool = False
    # DEVICE_LIST / MESH / SHARDING: the shape of the device array (a tuple of ints, None for
    # an unknown dimension), or None when nothing is known (analysis/placements.py)
    devices: Optional[tuple] = None
    via_import: bool = field(default=False, compare=False)

    @property
    def is_multi(self) -> bool:
        """True when the value may be a multi-device JAX array (known source)."""
        return self.multi is not None


UNKNOWN_VALUE = Value()
SAFE_VALUE = Value(kind=SAFE)
FOREIGN_VALUE = Value(kind=FOREIGN)


def multi(origin: Origin) -> Value:
    """A multi-device array value coming from ``origin``."""
    return Value(kind=ARRAY, multi=origin)


def qname(name: str, via_import: bool = False) -> Value:
    """A reference to the qualified name ``name``."""
    return Value(kind=QNAME, qname=name, via_import=via_import)


def join(a: Optional[Value], b: Optional[Value]) -> Optional[Value]:
    """The value on either of two paths (None: the path does not reach here).

    Multi-device wins (keeping the first origin); parameter dependences are united; a
    donation, a false guard or an annotated parameter on either path is kept.  Two values of
    different kinds that are not arrays join to unknown.
    """
    if a is None:
        return b
    if b is None or a is b:
        return a
    if a == b:
        return a
    multi_origin = a.multi or b.multi
    deps = a.deps | b.deps
    if a.kind == b.kind and a.kind not in (ARRAY, UNKNOWN, SAFE):
        kind = a.kind
        base = a if a.multi or not b.multi else b
    elif multi_origin is not None or deps:
        kind, base = ARRAY, Value(kind=ARRAY)
    elif {a.kind, b.kind} <= {SAFE, FOREIGN}:
        kind, base = SAFE, SAFE_VALUE
    else:
        kind, base = UNKNOWN, UNKNOWN_VALUE
    elements = None
    if a.elements is not None and b.elements is not None and len(a.elements) == len(b.elements):
        elements = tuple(join(x, y) for x, y in zip(a.elements, b.elements))
    return replace(
        base, kind=kind, multi=multi_origin, deps=deps,
        donated=a.donated or b.donated, false_guard=a.false_guard or b.false_guard,
        param_array=a.param_array or b.param_array, elements=elements,
        devices=a.devices if a.devices == b.devices else None,
    )


def join_all(values) -> Value:
    """Join a sequence of values; the empty join is the safe value (a constant)."""
    out = None
    for v in values:
        out = join(out, v)
    return out if out is not None else SAFE_VALUE


def as_array(value: Value) -> Value:
    """The array computed from ``value`` (``y + 1``, ``y.sum()``, ``jnp.f(y)``): it keeps
    the multi-device origin and parameter dependences, and drops everything else."""
    if value.multi is None and not value.deps and not value.param_array and value.donated is None:
        if value.kind in (SAFE, FOREIGN):
            return SAFE_VALUE
        return UNKNOWN_VALUE
    return Value(kind=ARRAY, multi=value.multi, deps=value.deps, param_array=value.param_array)


def fixpoint_key(value: Optional[Value]):
    """A comparable summary of a value for loop and summary fixpoints (ignores origins)."""
    if value is None:
        return None
    return (value.kind, value.multi is not None, value.deps, value.qname,
            value.donated is not None, value.false_guard is not None, value.param_array, value.devices,
            None if value.elements is None else tuple(fixpoint_key(e) for e in value.elements))
