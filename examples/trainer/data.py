"""Batches placed across the mesh, and their export to a PyTorch data pipeline."""
import jax
import jax.numpy as jnp
import numpy as np
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((len(jax.devices()),), ("data",))
batch_sharding = NamedSharding(mesh, P("data"))


def load_batch(step: int):
    """A batch of 8 x 4 features, sharded along the batch axis."""
    host = np.arange(32, dtype=np.float32).reshape(8, 4) + step
    return jax.device_put(host, batch_sharding)


def batch_for_torch_wrong(step: int):
    batch = load_batch(step)
    return torch.as_tensor(batch)  # expect: JXI002


def batch_for_torch_right(step: int):
    batch = load_batch(step)
    return torch.from_numpy(np.asarray(batch))


def normalise(batch):
    centred = batch - jnp.mean(batch, axis=0)
    return centred / (jnp.std(batch, axis=0) + 1e-6)


def stats_for_torch(step: int):
    stats = {"mean": jnp.mean(load_batch(step)), "norm": normalise(load_batch(step))}
    return {k: torch.from_dlpack(v) for k, v in stats.items()}  # expect: JXI002
