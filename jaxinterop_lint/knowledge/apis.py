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
# Library base classes whose instances, called, run a method the subclass defines:
# ``Head()(x)`` is ``Head.forward`` for a torch.nn.Module (torch/nn/modules/module.py,
# ``__call__ = _wrapped_call_impl``), ``Layer.call`` for a Keras layer (keras/src/layers/layer.py).
CALL_METHODS = {
    "torch.nn.Module": "forward",
    "torch.nn.modules.module.Module": "forward",
    "keras.layers.Layer": "call",
    "keras.Layer": "call",
}

# Library calls that call a special method of their argument (the first one of these its class
# defines): ``repr(w)`` runs ``w.__repr__()``, ``np.asarray(w)`` ``w.__array__()`` (Python's data
# model; numpy/_core/src/multiarray/ctors.c for ``__array__``).  ``print`` does so for every
# positional argument; an f-string's ``{w}`` as ``format`` and ``{w!r}`` as ``repr``.
DUNDER_CALLS: dict[str, tuple[str, ...]] = {
    "builtins.repr": ("__repr__",),
    "builtins.str": ("__str__", "__repr__"),
    "builtins.format": ("__format__", "__str__", "__repr__"),
    "builtins.print": ("__str__", "__repr__"),
    "numpy.asarray": ("__array__",),
    "numpy.array": ("__array__",),
    # torch/utils/data/dataloader.py: a map-style dataset's items are read with __getitem__
    # (_MapDatasetFetcher), an IterableDataset's with __iter__
    "torch.utils.data.DataLoader": ("__getitem__", "__iter__"),
}

# Calls listing the leaves of a pytree (jax 0.10.2, jax/_src/tree_util.py): what they return,
# by the shape of their result: "leaves" a list of the leaves; "flatten" (leaves, treedef);
# "with_path" a list of (key path, leaf); "flatten_with_path" (that list, treedef).
TREE_LEAVES: dict[str, str] = {
    "jax.tree.leaves": "leaves", "jax.tree_util.tree_leaves": "leaves",
    "jax.tree.flatten": "flatten", "jax.tree_util.tree_flatten": "flatten",
    "jax.tree.leaves_with_path": "with_path", "jax.tree_util.tree_leaves_with_path": "with_path",
    "jax.tree.flatten_with_path": "flatten_with_path", "jax.tree_util.tree_flatten_with_path": "flatten_with_path",
}

# Decorators making a generator function a context manager: ``with f() as x`` binds ``x`` to
# what the generator yields (Lib/contextlib.py).
CONTEXT_MANAGER_DECORATORS = frozenset({"contextlib.contextmanager", "contextlib.asynccontextmanager"})

# Test-runner fixtures: a test function's parameter named after a fixture of its module gets
# the value the fixture returns or yields (pytest's own ``pytest.fixture``; pytest-asyncio's).
FIXTURE_DECORATORS = frozenset({"pytest.fixture", "pytest_asyncio.fixture"})
KERNEL_LAUNCH_SINK = Sink(CAI, "BufferError", arg=-1)

# Higher-order functions whose function argument is applied to the leaves of the others:
# name -> how many arguments come before the leaves in each call of the function.  The
# ``*_with_path`` maps call ``f(key_path, *leaves)`` (jax 0.10.2, jax/_src/tree_util.py
# ``tree_map_with_path``: ``treedef.unflatten(f(*xs) for xs in zip(*all_keypath_leaves))``,
# the key path first); ``jax.tree.map_with_path`` is its alias (jax/_src/tree.py).
TREE_MAPS: dict[str, int] = {
    "jax.tree.map": 0, "jax.tree_util.tree_map": 0, "builtins.map": 0,
    "jax.tree.map_with_path": 1, "jax.tree_util.tree_map_with_path": 1,
}
# Folds ``reduce(function, iterable[, initial])``: the function is called with the running
# value and each element (the leaves, for a tree), so the result is what it returns for them.
# (functools.reduce: the standard library; jax.tree.reduce: jax/_src/tree.py, jax 0.10.2.)
REDUCES = frozenset({"functools.reduce", "_functools.reduce", "jax.tree.reduce", "jax.tree_util.tree_reduce"})

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

# Source wrappers told where to run: qualified name -> (what the argument is: "mesh" or
# "devices", its positional index (-1: keyword only), its keyword).  On a mesh or a device
# list known to hold one device the function's outputs are on that device (single-device,
# no source), like a NamedSharding on a one-device mesh (MESH_SHARDINGS):
# - ``jax.shard_map(f, *, out_specs, in_specs, mesh=None, ...)``: ``mesh`` is keyword-only;
#   None takes the mesh set by ``jax.set_mesh`` (``get_abstract_mesh()``), jax/_src/shard_map.py
#   shard_map/_shard_map, jax 0.10.2.  Its outputs are global arrays on ``mesh``'s devices
#   (``_shard_map_impl`` runs the body on each device of the mesh and assembles the results).
# - ``jax.experimental.shard_map.shard_map(f, mesh, in_specs, out_specs, check_rep=True)``
#   passes ``mesh`` on to the same ``_shard_map`` (jax/experimental/shard_map.py, jax 0.10.2).
# - ``jax.pmap(fun, axis_name=None, *, ..., devices=None, ...)``: ``devices`` is "a sequence of
#   Devices to map over" (jax/_src/pmap.py, jax 0.10.2); with one device the output's
#   sharding holds that device.
# Run with jax 0.10.2 on 8 CPU devices: fixtures/runtime/guards_one_device.py.
WRAPPER_PLACEMENTS: dict[str, tuple[str, int, str]] = {
    "jax.shard_map": ("mesh", -1, "mesh"),
    "jax.experimental.shard_map.shard_map": ("mesh", 1, "mesh"),
    "jax.pmap": ("devices", -1, "devices"),
}

# Transformations whose result is multi-device exactly when an argument is.
PROPAGATING_WRAPPERS = frozenset({
    "jax.jit", "jax.vmap", "jax.grad", "jax.value_and_grad", "jax.checkpoint", "jax.remat",
    "jax.named_call", "jax.jacfwd", "jax.jacrev", "jax.hessian", "jax.custom_jvp",
    "jax.custom_vjp", "jax.named_scope", "equinox.filter_jit", "flax.linen.jit",
})

# Wrappers that accept ``donate_argnums`` / ``donate_argnames`` (rule JXI008), and those
# keywords (jax/_src/api.py ``jit``).
DONATING_WRAPPERS = frozenset({"jax.jit", "jax.experimental.pjit.pjit", "jax.pmap"})
DONATION_KEYWORDS = frozenset({"donate_argnums", "donate_argnames"})

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

# The placement argument of a direct source, (positional index, keyword names): the result is
# on one device when it is a Device or a one-device sharding (``SingleDeviceSharding(d)``), and
# multi-device otherwise, an unknown placement included (these calls exist to build global
# arrays).  jax 0.10.2: jax/_src/array.py make_array_from_callback(shape, sharding, ...),
# make_array_from_single_device_arrays(shape, sharding, arrays), make_array_from_process_local_data(
# sharding, local_data, ...); jax/_src/pjit.py with_sharding_constraint(x, shardings).
DIRECT_SOURCE_PLACEMENTS: dict[str, tuple[int, tuple[str, ...]]] = {
    "jax.make_array_from_callback": (1, ("sharding",)),
    "jax.make_array_from_single_device_arrays": (1, ("sharding",)),
    "jax.make_array_from_process_local_data": (0, ("sharding",)),
    "jax.lax.with_sharding_constraint": (1, ("shardings",)),
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
    "jax.sharding.PmapSharding", "jax.sharding.PmapSharding.default", "jax.sharding.GSPMDSharding",
    "jax.sharding.PositionalSharding",
})
SINGLE_DEVICE_CONSTRUCTORS = frozenset({"jax.sharding.SingleDeviceSharding"})
DEVICE_LISTS = frozenset({"jax.devices", "jax.local_devices"})

# ---- Exact placements (issue 12): device arrays, meshes and how many devices they hold ----
# A device array is a list or ``np.ndarray`` of Devices; the analysis keeps its shape
# (``Value.devices``, unknown dimensions None) and a mesh's device count is its product.
# Every entry below was run with jax 0.10.2 on 8 CPU devices
# (``XLA_FLAGS=--xla_force_host_platform_device_count=8``).
#
# ``jax.devices()`` / ``jax.local_devices()`` hold an unknown number (>= 1) of devices;
# ``[:1]``, ``[-1:]``, ``[i:i+1]`` of them hold one; ``np.array(devs)`` / ``np.asarray(devs)``
# keep the shape; ``.reshape(1, 1)`` has the literal shape (a reshape to another count raises).
DEVICE_ARRAY_CONVERTERS = frozenset({"numpy.array", "numpy.asarray", "builtins.list", "builtins.tuple"})
# Methods of a device array: name -> what its result's shape is ("reshape": the literal shape
# given, "flat": one dimension of the same count, "same": unchanged, "reverse": transposed).
DEVICE_ARRAY_METHODS: dict[str, str] = {
    "reshape": "reshape", "flatten": "flat", "ravel": "flat", "copy": "same", "tolist": "same",
    "transpose": "reverse", "squeeze": "flat",
}
# Calls that build a device array or a mesh from a literal shape: qualified name -> (what it
# returns: "mesh" or "devices", indexes of the shape arguments whose product is the count,
# their keyword names).  ``jax.make_mesh((1,), ("x",))`` takes the first device of 8
# (jax/_src/mesh_utils.py and jax/_src/sharding_impls.py make_mesh, jax 0.10.2);
# ``create_device_mesh(shape)`` raises unless the product equals the devices it is given.
MESH_SHAPE_CALLS: dict[str, tuple[str, tuple[int, ...], tuple[str, ...]]] = {
    "jax.make_mesh": ("mesh", (0,), ("axis_shapes",)),
    "jax.experimental.mesh_utils.create_device_mesh": ("devices", (0,), ("mesh_shape",)),
    "jax.experimental.mesh_utils.create_hybrid_device_mesh": ("devices", (0, 1), ("mesh_shape", "dcn_mesh_shape")),
}
# The devices argument of those calls: qualified name -> (positional index or None, keyword).
# Given one, the mesh or device array is built on those devices (jax/_src/sharding_impls.py
# make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None); mesh_utils.py
# create_device_mesh(mesh_shape, devices=None, ...), jax 0.10.2): where the shape is not
# literal (``(len(devices),)``), the devices decide the count.
MESH_SHAPE_DEVICES: dict[str, tuple[Optional[int], str]] = {
    "jax.make_mesh": (None, "devices"),
    "jax.experimental.mesh_utils.create_device_mesh": (1, "devices"),
    "jax.experimental.mesh_utils.create_hybrid_device_mesh": (2, "devices"),
}
# ``Mesh(devices, axis_names)``: the mesh holds the device array it is given
# (jax/_src/mesh.py Mesh.__new__ takes ``np.ndarray | Sequence[Device]``, jax 0.10.2).
MESH_CONSTRUCTORS: dict[str, tuple[int, str]] = {
    "jax.sharding.Mesh": (0, "devices"),
    "jax.experimental.maps.Mesh": (0, "devices"),
}
# ``mesh.devices`` is the mesh's device array.
MESH_DEVICE_ATTRIBUTES = frozenset({"devices"})
# Shardings built on a mesh: qualified name -> (positional index, keyword) of the mesh.  On a
# one-device mesh the sharding is a single-device placement: ``jax.device_put(x,
# NamedSharding(jax.make_mesh((1,), ("x",)), P("x")))`` has one device and exports zero-copy
# (run: ../shared/cases-depth/mesh_sizes.py); ``sharding.num_devices`` is 1.
MESH_SHARDINGS: dict[str, tuple[int, str]] = {
    "jax.sharding.NamedSharding": (0, "mesh"),
    "jax.NamedSharding": (0, "mesh"),
}
# A PartitionSpec placement uses the mesh set by ``jax.set_mesh`` (jax/_src/sharding_impls.py,
# jax 0.10.2): under a one-device mesh ``jax.device_put(x, P("x"))`` has one device.
PARTITION_SPECS = frozenset({"jax.sharding.PartitionSpec", "jax.P"})

# ---- Mesh contexts (issue 12) ---------------------------------------------------------
# ``jax.set_mesh(mesh)``, as a context manager or a global setter (its docstring in
# jax/_src/sharding_impls.py, jax 0.10.2).  Run with jax 0.10.2 on 8 CPU devices, with a
# mesh of N > 1 devices set (Explicit or Auto axes): every array that ``jax.numpy``,
# ``jax.random``, ``jax.lax``, ``jax.nn`` create or compute, and every output of a jitted
# function, is replicated on the N devices (``jnp.zeros(8)`` -> 8 devices, and the export
# raises BufferError); ``jax.device_put(x)`` with no target, ``device=<Device>``,
# ``jnp.from_dlpack`` / ``jax.dlpack.from_dlpack`` keep one device; a one-device mesh keeps
# everything on one device.  ``jax.sharding.use_mesh`` set the same mesh before JAX 0.7.1
# (CHANGELOG 0.7.1: "Removed jax.sharding.use_mesh in favor of jax.set_mesh"; not run).
# ``with mesh:`` (the Mesh's own context manager) places nothing: arrays made under it keep
# one device (run) -- it only names axes for ``with_sharding_constraint`` and pjit.
MESH_CONTEXTS = frozenset({"jax.set_mesh", "jax.sharding.set_mesh", "jax.sharding.use_mesh"})
# Modules whose calls make arrays that a multi-device mesh context puts on every device.
MESH_CONTEXT_MODULES = ("jax.numpy.", "jax.random.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.image.")
# ... except these, which do not return a new array or keep their input's placement (run).
MESH_CONTEXT_EXEMPT = frozenset({
    "jax.numpy.from_dlpack", "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size",
    "jax.numpy.dtype", "jax.numpy.finfo", "jax.numpy.iinfo", "jax.numpy.issubdtype",
    "jax.numpy.result_type", "jax.numpy.promote_types", "jax.numpy.can_cast", "jax.numpy.isdtype",
    "jax.numpy.isscalar", "jax.numpy.iscomplexobj", "jax.numpy.isrealobj",
})

# ---- Compiled executables (issue 12) --------------------------------------------------
# ``f.lower(*args)``, ``.trace(*args)`` and ``.compile()`` of a jitted function give a stage
# whose call returns what the jitted function returns: with in/out shardings on 8 devices,
# ``jax.jit(f, in_shardings=s, out_shardings=s).lower(x).compile()(x)`` has 8 devices; a plain
# jit's compiled call follows its argument (run with jax 0.10.2 on 8 CPU devices; jax/_src/stages.py).
COMPILE_STAGES = frozenset({"lower", "trace", "compile"})

# ---- flax.jax_utils (issue 12; flax 0.12.8 flax/jax_utils.py, run on 8 CPU devices) ----
# ``replicate(tree, devices=None)``: ``jax.device_put(jnp.stack([x] * n), NamedSharding(Mesh(
# devices), P(axis)))`` for every leaf, ``devices`` defaulting to ``jax.local_devices()``: on
# every local device (a one-device list gives one device).  ``prefetch_to_device(iterator,
# size, devices=None)`` yields every batch placed the same way.  value: the positional index
# and keyword of the ``devices`` argument.
FLAX_REPLICATORS: dict[str, tuple[int, str]] = {
    "flax.jax_utils.replicate": (1, "devices"),
    "flax.jax_utils.prefetch_to_device": (2, "devices"),
}
# ``unreplicate(tree)`` returns, for each leaf, ``x`` itself when ``x.ndim == 0`` (a replicated
# scalar stays on every device: run, 8 devices, and the export raises BufferError),
# ``x.addressable_shards[0].data`` when it is fully replicated, else ``...data.squeeze(0)``:
# one device for every array with a dimension.
FLAX_UNREPLICATE = "flax.jax_utils.unreplicate"
# Reductions whose result is a 0-d array when called with no axis (so unreplicate keeps it on
# every device): ``jnp.mean(x)``, ``x.sum()`` ...
SCALAR_REDUCTIONS = frozenset({
    "sum", "mean", "max", "min", "prod", "std", "var", "all", "any", "argmax", "argmin",
    "median", "nanmean", "nansum", "nanmax", "nanmin", "amax", "amin", "average", "count_nonzero",
    "linalg.norm", "vdot", "logsumexp",
})

# getattr(module, "<constant>") is the attribute it names.
GETATTR = "builtins.getattr"
# Library bases whose subclasses' class-body constants are instances of the subclass (its
# members: ``Policy.REPLICATED.place(x)`` runs ``Policy.place``; the Python documentation of
# enum).
ENUM_BASES = frozenset({"enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag"})
# Calls that load a module named by a constant string: what they return.  ``import_module``
# returns the module named; ``__import__`` its top-level package, unless given a non-empty
# ``fromlist`` (its fourth argument) (the Python documentation of importlib and __import__).
MODULE_LOADERS = {"importlib.import_module": "named", "builtins.__import__": "top"}
SETATTR = "builtins.setattr"    # setattr(obj, "name", value) with a constant name: obj.name = value

# Calls whose result is a safe (host or single-device) value (section 6).
SANITIZERS = frozenset({
    "jax.device_get", "numpy.asarray", "numpy.array", "numpy.ascontiguousarray", "numpy.copy",
    "builtins.float", "builtins.int", "builtins.bool", "builtins.complex", "builtins.len",
    "builtins.str", "builtins.repr", "builtins.isinstance", "builtins.hasattr",
    "builtins.print", "builtins.type", "builtins.id", "builtins.hash",
    "jax.experimental.multihost_utils.process_allgather",
    "jax.experimental.multihost_utils.broadcast_one_to_all",
})
# Methods and attributes of an array whose result is safe.
SAFE_METHODS = frozenset({
    "addressable_data", "item", "tolist", "devices", "copy_to_host_async",
    "is_deleted", "delete", "__array__", "__len__", "__repr__", "__str__", "__float__",
    "__int__", "__bool__", "__index__", "__hash__", "platform", "on_device_size_in_bytes",
})
# Methods of ``jax.Array`` (jax 0.10.2, jax/_src/numpy/array_methods.py ``_array_methods``
# and ``ArrayImpl``): called on a parameter they say nothing of its class, so a function's
# summary does not keep them as calls on it (analysis/param_calls.py).
ARRAY_METHODS = frozenset({
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "block_until_ready",
    "choose", "clip", "compress", "conj", "conjugate", "copy", "cumprod", "cumsum", "diagonal",
    "dot", "flatten", "max", "mean", "min", "nonzero", "prod", "ptp", "ravel", "repeat",
    "reshape", "round", "searchsorted", "sort", "squeeze", "std", "sum", "swapaxes", "take",
    "trace", "transpose", "var", "view", "to_device", "addressable_data", "copy_to_host_async",
})
# Attributes of an array that are its placement, never an array: ``.device`` of an array on
# several devices is its Sharding (jax 0.10.2, jax/_src/array.py ``ArrayImpl.device``).
PLACEMENT_ATTRIBUTES = frozenset({"sharding", "device"})
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
# ``len(x.sharding.<attr>) == 1``: jax/_src/sharding.py Sharding.device_set,
# addressable_devices (jax 0.10.2).
DEVICE_SET_ATTRIBUTES = frozenset({"device_set", "addressable_devices"})
# ``x.sharding.num_devices == 1``: Sharding.num_devices is ``len(self.device_set)``
# (jax/_src/sharding.py, jax 0.10.2; run: 8 for a replicated array on 8 devices).
SHARDING_COUNT_ATTRIBUTES = frozenset({"num_devices"})
# ``len(x.<attr>) == 1`` on the array: one shard per device it spans (run, jax 0.10.2:
# ``len(x.addressable_shards) == len(x.global_shards) == 8`` for a replicated array on 8
# devices).  ``addressable_shards`` counts this process's devices only: exact in one process.
SHARD_LIST_ATTRIBUTES = frozenset({"addressable_shards", "global_shards"})
# Counts of the devices every array can span, compared with 1 (``jax.device_count() == 1``,
# ``len(jax.devices()) == 1``, called with no backend argument): where the count is 1 every
# array of the process is single-device, so a branch there makes every value safe, and the
# join after ``if jax.device_count() > 1: x = jax.device_put(x, jax.devices()[0])`` has ``x``
# single-device on both paths (analysis/env.py join_env).
# ``jax.local_device_count()`` and ``len(jax.local_devices())`` count too, as before this
# table was split (a decision, not a fact of JAX): they are "the number of devices
# addressable by this process" (jax/_src/xla_bridge.py local_device_count, jax 0.10.2),
# which in one process is every device.  In a multi-process job with one device per process
# the local count is 1 while an array on a mesh of ``jax.devices()`` still spans every
# process's device (``Array.__dlpack__`` tests the global ``sharding.device_set``,
# jax/_src/array.py), so there such a test guards nothing; the README ("Device-count guards
# and one-device placements") says so.  Treating it as no guard flagged code that runs fine
# in every single-process run.
GLOBAL_DEVICE_COUNTS = frozenset({"jax.device_count", "jax.local_device_count"})
GLOBAL_DEVICE_LISTS = frozenset({"jax.devices", "jax.local_devices"})
# ``MESH.size == 1`` / ``MESH.devices.size == 1``: ``Mesh.size`` is the product of its axis
# sizes, ``mesh.devices`` its ``np.ndarray`` of devices (jax/_src/mesh.py, jax 0.10.2).  A
# guard like ``jax.device_count() == 1`` when the mesh is known to hold every device of the
# process (built on ``jax.devices()``, or ``jax.make_mesh((jax.device_count(),), ...)``);
# a mesh of a known count needs no guard, one of an unknown part of the devices proves nothing.
MESH_SIZE_ATTRIBUTES = frozenset({"size"})
# Tests that do *not* guard (rule JXI006): a replicated array passes them and still spans
# every device.  ``x.sharding.is_fully_replicated`` is the same property of the array's
# sharding (jax/_src/array.py ArrayImpl.is_fully_replicated returns
# ``self.sharding.is_fully_replicated``, jax 0.10.2).
FALSE_GUARD_ATTRIBUTES = frozenset({"is_fully_replicated", "is_fully_addressable"})

# ---- Handlers that are not ``try`` (issue 12) -----------------------------------------
# Context managers that catch what their body raises: qualified name -> kind.  ``suppress``
# swallows the classes it names (contextlib); ``expects``: a test that asserts the failure
# (pytest.raises, numpy.testing.assert_raises): the export failing there is what the test
# wants.  The caught classes are the positional arguments (suppress) or the first one.
# (contextlib.suppress, pytest.raises and unittest.TestCase.assertRaises as documented; run
# with jax 0.10.2 on 8 CPU devices: fixtures/runtime/guards_handlers_forms.py.)
EXCEPTION_CONTEXTS: dict[str, str] = {
    "contextlib.suppress": "suppress",
    "pytest.raises": "expects",
    "numpy.testing.assert_raises": "expects",
    "numpy.testing.assert_raises_regex": "expects",
}
# ``self.assertRaises(BufferError)`` and the like (unittest.TestCase, absl.testing), as a
# context manager, on any receiver.
EXPECTING_METHODS = frozenset({
    "assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "assertRaisesWithLiteralMatch",
    "assertRaisesWithPredicateMatch",
})

# FFI buffers (section 3): the callback of buffer_callback receives (ctx, out, *args).
BUFFER_CALLBACK = frozenset({"jax.experimental.buffer_callback.buffer_callback"})
BUFFER_TYPES = frozenset({"jax.experimental.buffer_callback.Buffer"})
EXECUTION_CONTEXT_TYPES = frozenset({"jax.experimental.buffer_callback.ExecutionContext"})
# Host copies of an FFI buffer: ``numpy.array`` copies by default under NumPy 2.  (The two sets
# the JXI004 fix rewrites to ``np.from_dlpack(buf).copy()`` / ``.astype(dtype)``.)
FFI_COPYING_BY_DEFAULT = frozenset({"numpy.array"})
FFI_COPY_IF_ASKED = frozenset({"numpy.asarray", "numpy.asanyarray"})


@dataclass(frozen=True)
class FfiCopy:
    """How a host-array function treats an FFI ``Buffer`` argument (its first).

    ``copies``: it asks ``Buffer.__array__`` for a copy without being told (NumPy 2);
    ``copy_kw``: it takes ``copy=`` (``copy=True`` copies, ``False``/``None`` do not);
    ``dtype_pos``: the positional index of its ``dtype`` (None: keyword only or none) --
    any dtype makes ``Buffer.__array__`` raise; ``dtype_kw``: it takes ``dtype=``.
    """

    copies: bool = False
    copy_kw: bool = True
    dtype_pos: Optional[int] = 1
    dtype_kw: bool = True


# Every NumPy function that reads an FFI buffer through ``__array__`` with a copy or a dtype,
# run under ``buffer_callback`` with jax 0.10.2 and numpy 2.4 on CPU (the ValueErrors of
# FFI_COPY_FAILURES); the other readers (``np.asarray(buf)``, ``np.ascontiguousarray(buf)``,
# ``np.stack``, ``np.sum``, ``np.from_dlpack``, ``torch.tensor``, ``torch.asarray(buf,
# copy=True)`` ...) work there.
FFI_ARRAY_CALLS: dict[str, FfiCopy] = {
    "numpy.array": FfiCopy(copies=True),
    "numpy.asarray": FfiCopy(),
    "numpy.asanyarray": FfiCopy(),
    "numpy.copy": FfiCopy(copies=True, copy_kw=False, dtype_pos=None, dtype_kw=False),
    "numpy.ascontiguousarray": FfiCopy(copy_kw=False),
    "numpy.asfortranarray": FfiCopy(copy_kw=False),
    "numpy.require": FfiCopy(copy_kw=False),
    "numpy.ma.array": FfiCopy(),
}
# Copies that go through pickling or the bytes protocol, which Buffer lacks (run as above):
# qualified name -> the "how" of FFI_COPY_FAILURES.
FFI_OTHER_COPIES: dict[str, str] = {
    "copy.copy": "pickle", "copy.deepcopy": "pickle", "pickle.dumps": "pickle",
    "builtins.bytes": "bytes",
}
# Copying methods that Buffer does not have (``buf.copy()``, ``.clone()``, ``.tobytes()``,
# ``.astype(...)``, ``.tolist()``: AttributeError, run as above; Buffer's public attributes are
# dtype, ndim, shape and writeable).
FFI_MISSING_COPY_METHODS = frozenset({"copy", "clone", "tobytes", "astype", "tolist"})
# What each copying path raises inside the callback (run as above; JAX wraps it in a
# JaxRuntimeError whose text has this line): how -> (class, message).
FFI_COPY_FAILURES: dict[str, tuple[str, str]] = {
    "copy=True": ("ValueError", "Buffer.__dlpack__ with copy=True is not supported."),
    "default-copy": ("ValueError", "Buffer.__array__ with copy=True is not supported."),
    "array-copy=True": ("ValueError", "Buffer.__array__ with copy=True is not supported."),
    "dtype": ("ValueError", "dtype parameter is not supported by Buffer.__array__."),
    "pickle": ("TypeError", "cannot pickle 'Buffer' object"),
    "bytes": ("TypeError", "cannot convert 'Buffer' object to bytes"),
    "no-method": ("AttributeError", "'Buffer' object has no attribute '{name}'"),
}
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
# Classes no JAX array is an instance of: ``isinstance(x, np.ndarray)`` holding makes ``x``
# a host (or PyTorch) value there; ``isinstance(x, jax.Array)`` failing does the same
# (analysis/conditions.py).
# (Containers are none of them: ``isinstance(batch, (list, tuple))`` says nothing of the items.)
HOST_TYPES = frozenset({"numpy.ndarray", "numpy.generic", "torch.Tensor", "builtins.int", "builtins.float",
                        "builtins.bool", "builtins.complex", "builtins.str", "builtins.bytes"})

# Roots whose import makes a module "a JAX module" (rule JXI005 on unknown receivers).
JAX_ROOTS = frozenset({"jax", "jaxlib", "flax", "equinox", "optax"})


# The tables where multi-device values start (or, for donation, where a JAX buffer is
# deleted): the plan's JAX words are their names (pipeline/words.py).  Every other table
# says what a value becomes, what consumes it or what guards it.  A new table goes in one
# of the two lists of pipeline/words.py (tests/test_prefilter.py fails on a table in neither).
ORIGIN_TABLES = ("SOURCE_WRAPPERS", "DIRECT_SOURCES", "PLACEMENT_CALLS", "PLACEMENT_KEYWORDS",
                 "PLACEMENT_METHODS", "SHARDING_CONSTRUCTORS", "MESH_SHARDINGS", "PARTITION_SPECS",
                 "MESH_CONTEXTS", "FLAX_REPLICATORS", "DONATION_KEYWORDS")
# The origin tables that only put a value where their argument says (``jax.device_put(x, s)``,
# ``jnp.zeros(n, device=s)``, ``x.to_device(s)``): the result spans several devices only when
# ``s`` is a sharding, and a sharding is only made by the other origin tables (constructors,
# mesh shardings, partition specs) or read off a multi-device array (``y.sharding``), which
# they made (analysis/calls.py ``placed``: an unknown placement is no source).  So in a project
# where no file names a word of the other tables, these words make no multi-device value
# (pipeline/plan.py ``Plan.weak_counts``).
WEAK_ORIGIN_TABLES = ("PLACEMENT_CALLS", "PLACEMENT_KEYWORDS", "PLACEMENT_METHODS")
# The tables that state a placement's device count (a mesh shape, a device list): a
# module-level name defined with them decides whether a sharding made from it spans several
# devices, so the plan analyses the module defining it for an importer that takes it
# (pipeline/plan.py ``Plan.units``); they make no file JAX origin code by themselves.
COUNT_TABLES = ("MESH_SHAPE_CALLS", "MESH_CONSTRUCTORS", "SINGLE_DEVICE_CONSTRUCTORS", "DEVICE_LISTS")
