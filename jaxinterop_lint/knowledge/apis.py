"""What the analysis knows about APIs, as data: qualified name -> role.

Every fact here comes from ``../shared/docs/jax-interop.md`` (read in the jax-ml/jax sources
around 0.11/0.12 and run with jax 0.10.2 / 0.12.0.1, torch 2.13, numpy 2.4).  Supporting a new
library is one line in one of these tables; the analysis and the text prefilter
(:mod:`jaxinterop_lint.pipeline.words`) are driven by them.

Protocols: ``CAI`` (CUDA Array Interface), ``DLPACK``, ``RAW`` (raw buffer: pointers and the
Python buffer protocol).  ``raises`` is the exception class JAX raises on that path for a
multi-device array (jax-interop.md section 2), or ``None`` where nothing is raised and the
array is silently gathered through the host.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

CAI = "cuda-array-interface"
DLPACK = "dlpack"
RAW = "raw-buffer"

PROTOCOL_RULE = {CAI: "JXI001", DLPACK: "JXI002", RAW: "JXI003"}


@dataclass(frozen=True)
class Sink:
    """An interop consumer.

    ``protocol`` is CAI, DLPACK or RAW; ``raises`` the exception class name JAX raises there
    for a multi-device array (None: silent gather through the host); ``arg`` the positional
    index of the exported array (``-1``: every argument, as for a kernel launch);
    ``copy_kw`` whether the consumer accepts ``copy=`` (for FFI buffers, rule JXI004).
    """

    protocol: str
    raises: Optional[str]
    arg: int = 0
    copy_kw: bool = False


# Function sinks by qualified name (rules.md JXI001-JXI003; jax-interop.md section 2).
CALL_SINKS: dict[str, Sink] = {
    # CUDA Array Interface: AttributeError in JAX makes hasattr() False, so CuPy gathers silently.
    "cupy.asarray": Sink(CAI, None),
    "cupy.array": Sink(CAI, None),
    "cupy.asanyarray": Sink(CAI, None),
    "cupy.ascontiguousarray": Sink(CAI, None),
    "numba.cuda.as_cuda_array": Sink(CAI, "TypeError"),
    "numba.cuda.to_device": Sink(CAI, None),
    # DLPack: __dlpack_device__ / __dlpack__ raise BufferError (jax/_src/array.py, jax >= 0.8).
    "torch.from_dlpack": Sink(DLPACK, "BufferError", copy_kw=True),
    "torch.utils.dlpack.from_dlpack": Sink(DLPACK, "BufferError"),
    "torch.as_tensor": Sink(DLPACK, "BufferError"),
    "torch.tensor": Sink(DLPACK, "BufferError"),
    "cupy.from_dlpack": Sink(DLPACK, "BufferError", copy_kw=True),
    "numpy.from_dlpack": Sink(DLPACK, "BufferError", copy_kw=True),
    "jax.dlpack.from_dlpack": Sink(DLPACK, "BufferError", copy_kw=True),
    "jax.numpy.from_dlpack": Sink(DLPACK, "BufferError", copy_kw=True),
    "warp.from_jax": Sink(DLPACK, "BufferError"),
    "warp.from_dlpack": Sink(DLPACK, "BufferError"),
    "tensorflow.experimental.dlpack.from_dlpack": Sink(DLPACK, "BufferError"),
    # Raw buffers: the Python buffer protocol raises BufferError; torch (2.13, run on 8 CPU
    # devices) turns that into ``RuntimeError: could not retrieve buffer from object``.
    "builtins.memoryview": Sink(RAW, "BufferError"),
    "torch.asarray": Sink(RAW, "RuntimeError"),
    "torch.frombuffer": Sink(RAW, "RuntimeError"),
}

# Method sinks: ``x.name(...)`` on the array itself.
METHOD_SINKS: dict[str, Sink] = {
    "__dlpack__": Sink(DLPACK, "BufferError", copy_kw=True),
    "__dlpack_device__": Sink(DLPACK, "BufferError"),
    # JaxRuntimeError (XlaRuntimeError before 0.8) is a RuntimeError.
    "unsafe_buffer_pointer": Sink(RAW, "RuntimeError"),
    # Gone from jax.Array (jax 0.10.2 run: AttributeError whatever the sharding).
    "unsafe_raw_buffer": Sink(RAW, "AttributeError"),
}

# Attribute sinks: reading ``x.name``.
ATTRIBUTE_SINKS: dict[str, Sink] = {
    "__cuda_array_interface__": Sink(CAI, "AttributeError"),
}

# A ``@numba.cuda.jit`` kernel launch ``k[grid, block](x)`` goes through the buffer protocol.
KERNEL_DECORATORS = frozenset({"numba.cuda.jit"})
KERNEL_LAUNCH_SINK = Sink(CAI, "BufferError", arg=-1)

# Higher-order functions whose function argument is applied to the leaves of the others.
TREE_MAPS = frozenset({"jax.tree.map", "jax.tree_util.tree_map", "builtins.map"})

# Wrappers whose calls make functions that return multi-device values (section 5).
# value: the keyword arguments that must be present for it to count (empty: always).
SOURCE_WRAPPERS: dict[str, frozenset[str]] = {
    "jax.experimental.pjit.pjit": frozenset(),
    "jax.shard_map": frozenset(),
    "jax.experimental.shard_map.shard_map": frozenset(),
    "jax.smap": frozenset(),
    "jax.pmap": frozenset(),
    "jax.jit": frozenset({"in_shardings", "out_shardings"}),
}

# Transformations whose result is multi-device exactly when an argument is.
PROPAGATING_WRAPPERS = frozenset({
    "jax.jit", "jax.vmap", "jax.grad", "jax.value_and_grad", "jax.checkpoint", "jax.remat",
    "jax.named_call", "jax.jacfwd", "jax.jacrev", "jax.hessian", "jax.custom_jvp",
    "jax.custom_vjp", "jax.named_scope", "equinox.filter_jit", "flax.linen.jit",
})

# Wrappers that accept ``donate_argnums`` / ``donate_argnames`` (rule JXI008).
DONATING_WRAPPERS = frozenset({"jax.jit", "jax.experimental.pjit.pjit", "jax.pmap"})

# Direct producers of multi-device arrays, always (section 5).
DIRECT_SOURCES: dict[str, str] = {
    "jax.make_array_from_callback": "jax.make_array_from_callback",
    "jax.make_array_from_single_device_arrays": "jax.make_array_from_single_device_arrays",
    "jax.make_array_from_process_local_data": "jax.make_array_from_process_local_data",
    "jax.lax.with_sharding_constraint": "jax.lax.with_sharding_constraint",
    "jax.reshard": "jax.reshard",
    "jax.sharding.reshard": "jax.sharding.reshard",
    "jax.experimental.multihost_utils.host_local_array_to_global_array":
        "multihost_utils.host_local_array_to_global_array",
    "jax.experimental.multihost_utils.global_array_to_host_local_array":
        "multihost_utils.global_array_to_host_local_array",
}

# Producers whose result depends on where they put it: (positional index, keyword names) of
# the placement argument.  A sharding there makes a multi-device array, a Device a safe one.
PLACEMENT_CALLS: dict[str, tuple[int, tuple[str, ...]]] = {
    "jax.device_put": (1, ("device",)),
}
# Keyword arguments that place the result of any ``jax.numpy`` / ``jax.random`` creation call.
PLACEMENT_KEYWORDS = ("device", "out_sharding")
PLACEMENT_MODULES = ("jax.numpy.", "jax.random.")
# ``x.to_device(placement)``.
PLACEMENT_METHODS = frozenset({"to_device"})

# Constructors of placements.
SHARDING_CONSTRUCTORS = frozenset({
    "jax.sharding.NamedSharding", "jax.NamedSharding", "jax.sharding.PartitionSpec", "jax.P",
    "jax.sharding.PmapSharding", "jax.sharding.GSPMDSharding", "jax.sharding.PositionalSharding",
})
SINGLE_DEVICE_CONSTRUCTORS = frozenset({"jax.sharding.SingleDeviceSharding"})
DEVICE_LISTS = frozenset({"jax.devices", "jax.local_devices"})

# Calls whose result is a safe (host or single-device) value (section 6).
SANITIZERS = frozenset({
    "jax.device_get", "numpy.asarray", "numpy.array", "numpy.ascontiguousarray", "numpy.copy",
    "builtins.float", "builtins.int", "builtins.bool", "builtins.complex", "builtins.len",
    "builtins.str", "builtins.repr", "builtins.isinstance", "builtins.hasattr",
    "builtins.print", "builtins.type", "builtins.id", "builtins.hash",
    "jax.experimental.multihost_utils.process_allgather",
    "jax.experimental.multihost_utils.broadcast_one_to_all",
    "flax.jax_utils.unreplicate",
})
# Methods and attributes of an array whose result is safe.
SAFE_METHODS = frozenset({
    "addressable_data", "item", "tolist", "devices", "copy_to_host_async",
    "is_deleted", "delete", "__array__", "__len__", "__repr__", "__str__", "__float__",
    "__int__", "__bool__", "__index__", "__hash__", "platform", "on_device_size_in_bytes",
})
SAFE_ATTRIBUTES = frozenset({
    "addressable_shards", "global_shards", "sharding", "shape", "dtype", "ndim", "size",
    "itemsize", "nbytes", "is_fully_replicated", "is_fully_addressable", "committed",
    "weak_type", "aval", "format", "layout",
})

# Module prefixes whose functions compute arrays from arrays: the result is multi-device when
# an argument is (section 1: "any computation on a multi-device input stays multi-device").
PROPAGATING_MODULES = (
    "jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.tree.", "jax.tree_util.",
    "jax.random.", "jax.image.", "jax.ops.", "optax.",
)
PROPAGATING_FUNCTIONS = frozenset({"jax.block_until_ready", "jax.device_put"})

# Foreign libraries: their call results are never JAX arrays.
FOREIGN_MODULES = ("numpy.", "torch.", "cupy.", "numba.", "warp.", "tensorflow.", "cupyx.")

# Device-count guards (section 6).  Called as ``len(<x>.devices())``, compared with 1.
DEVICE_COUNT_METHODS = frozenset({"devices"})
DEVICE_SET_ATTRIBUTES = frozenset({"device_set"})
GLOBAL_DEVICE_COUNTS = frozenset({"jax.device_count", "jax.local_device_count"})
# Tests that do *not* guard (rule JXI006): a replicated array passes them and still spans
# every device.
FALSE_GUARD_ATTRIBUTES = frozenset({"is_fully_replicated", "is_fully_addressable"})

# FFI buffers (section 3): the callback of buffer_callback receives (ctx, out, *args).
BUFFER_CALLBACK = frozenset({"jax.experimental.buffer_callback.buffer_callback"})
BUFFER_TYPES = frozenset({"jax.experimental.buffer_callback.Buffer"})
EXECUTION_CONTEXT_TYPES = frozenset({"jax.experimental.buffer_callback.ExecutionContext"})
# Host copies of an FFI buffer: ``numpy.array`` copies by default under NumPy 2.
FFI_COPYING_BY_DEFAULT = frozenset({"numpy.array"})
FFI_COPY_IF_ASKED = frozenset({"numpy.asarray"})
FFI_ZERO_COPY_VIEWS = frozenset({
    "numpy.from_dlpack", "torch.from_dlpack", "numpy.asarray", "cupy.from_dlpack",
    "torch.utils.dlpack.from_dlpack",
})


@dataclass(frozen=True)
class Removed:
    """A removed JAX interop API (section 4): when it went, and what to do instead (an
    imperative phrase)."""

    gone: str
    replacement: str


REMOVED_CALLS: dict[str, Removed] = {
    "jax.dlpack.to_dlpack": Removed(
        "deprecated in JAX 0.6.0, raises since 0.7.0, deleted in 0.8.0",
        "pass the array itself to the consumer: torch.from_dlpack(x)"),
    "jax.device_put_replicated": Removed(
        "deprecated in JAX 0.8.1, raises since 0.10.0",
        "use jax.device_put(x, NamedSharding(mesh, P()))"),
    "jax.device_put_sharded": Removed(
        "deprecated in JAX 0.8.1, raises since 0.10.0",
        "use jax.device_put(x, NamedSharding(mesh, P(axis)))"),
    "jax.sharding.PositionalSharding": Removed(
        "deprecated in JAX 0.6.0, deleted in 0.8.0", "use jax.sharding.NamedSharding"),
}
REMOVED_ATTRIBUTES: dict[str, Removed] = {
    "device_buffer": Removed("removed in JAX 0.4.27", "use x.addressable_data(0)"),
    "device_buffers": Removed("removed in JAX 0.4.27", "use [s.data for s in x.addressable_shards]"),
}
CAPSULE_CONSUMERS = frozenset({"jax.dlpack.from_dlpack", "jax.numpy.from_dlpack", "numpy.from_dlpack"})
CAPSULE_REMOVED = Removed(
    "DLPack capsules deprecated in JAX 0.4.32, rejected since 0.7.2 (TypeError)",
    "pass the tensor itself: jax.dlpack.from_dlpack(t)")
# Calls (by last name) that produce a DLPack capsule.
CAPSULE_PRODUCER_NAMES = frozenset({"to_dlpack", "toDlpack", "__dlpack__"})

# Exception classes and their bases, for handlers (rule JXI007).
EXCEPTION_BASES: dict[str, tuple[str, ...]] = {
    "BufferError": ("BufferError", "Exception", "BaseException"),
    "RuntimeError": ("RuntimeError", "Exception", "BaseException", "jax.errors.JaxRuntimeError",
                     "jaxlib.xla_extension.XlaRuntimeError", "jax.errors.XlaRuntimeError"),
    "AttributeError": ("AttributeError", "Exception", "BaseException"),
    "TypeError": ("TypeError", "Exception", "BaseException"),
}

# Annotations that mark a parameter as a JAX array (rule JXI009).
ARRAY_ANNOTATIONS = frozenset({"jax.Array", "jax.numpy.ndarray", "jax.typing.ArrayLike"})

# Roots whose import makes a module "a JAX module" (rule JXI005 on unknown receivers).
JAX_ROOTS = frozenset({"jax", "jaxlib", "flax", "equinox", "optax"})
