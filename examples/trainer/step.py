"""A pjit train step and a shard_map metric."""
from functools import partial

import jax
import jax.numpy as jnp
from jax.experimental.pjit import pjit
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((len(jax.devices()),), ("data",))
batch_sharding = NamedSharding(mesh, P("data"))
replicated = NamedSharding(mesh, P())


def _loss(params, batch):
    pred = batch @ params["w"] + params["b"]
    return jnp.mean(pred ** 2)


def _update(params, batch):
    grads = jax.grad(_loss)(params, batch)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


train_step = pjit(_update, in_shardings=(replicated, batch_sharding), out_shardings=replicated)


@partial(jax.shard_map, mesh=mesh, in_specs=P("data"), out_specs=P())
def global_norm(block):
    return jax.lax.psum(jnp.sum(block ** 2), "data")


def init_params():
    return {"w": jnp.ones((4, 1)), "b": jnp.zeros((1,))}
