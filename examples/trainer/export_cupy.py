"""Handing sharded activations to CuPy and numba kernels."""
from functools import partial

import cupy as cp
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P
from numba import cuda

mesh = jax.make_mesh((len(jax.devices()),), ("data",))


@partial(jax.shard_map, mesh=mesh, in_specs=P("data"), out_specs=P("data"))
def activations(block):
    return jnp.tanh(block)


@cuda.jit
def clip_kernel(arr):
    i = cuda.grid(1)
    if i < arr.size and arr[i] > 1.0:
        arr[i] = 1.0


def to_cupy_wrong(x):
    acts = activations(x)
    return cp.asarray(acts)  # expect: JXI001


def clip_wrong(x):
    acts = activations(x)
    clip_kernel[8, 128](acts)  # expect: JXI001


def to_cupy_per_shard(x):
    acts = activations(x)
    return [cp.asarray(shard.data) for shard in acts.addressable_shards]


def to_cupy_gathered(x):
    acts = activations(x)
    return cp.asarray(jax.device_get(acts))


def cupy_only():
    a = cp.arange(16, dtype=cp.float32)
    clip_kernel[1, 16](a)
    return cp.asarray(a)
