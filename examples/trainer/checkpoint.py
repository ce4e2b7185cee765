"""Raw device pointers for an asynchronous checkpoint writer."""
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((len(jax.devices()),), ("data",))
replicated = NamedSharding(mesh, P())


def pointers_wrong(params):
    placed = jax.device_put(params["w"], replicated)
    return placed.unsafe_buffer_pointer()  # expect: JXI003


def pointers_right(params):
    placed = jax.device_put(params["w"], replicated)
    return [s.data.unsafe_buffer_pointer() for s in placed.addressable_shards]


def legacy_pointer(params):
    placed = jax.device_put(params["w"], replicated)
    return placed.device_buffer.unsafe_buffer_pointer()  # expect: JXI005


def local_pointer(params):
    local = jax.device_put(jnp.asarray(params["w"]), jax.devices()[0])
    return local.unsafe_buffer_pointer()
