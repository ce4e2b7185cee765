"""Handing training results to PyTorch."""
import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.utils.dlpack
from jax.experimental.pjit import pjit
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((len(jax.devices()),), ("data",))
replicated = NamedSharding(mesh, P())
batch_sharding = NamedSharding(mesh, P("data"))


def _update(params, batch):
    return jax.tree.map(lambda p: p * 0.9, params)


train_step = pjit(_update, in_shardings=(replicated, batch_sharding), out_shardings=replicated)


def params_to_torch_wrong(params, batch):
    new = train_step(params, batch)
    # Replicated is still multi-device: every device holds a copy.
    return torch.utils.dlpack.from_dlpack(new["w"])  # expect: JXI002


def params_to_torch_tree_wrong(params, batch):
    new = train_step(params, batch)
    return jax.tree.map(torch.from_dlpack, new)  # expect: JXI002


def params_to_torch_right(params, batch):
    new = train_step(params, batch)
    # One device's copy of a replicated array is the whole value.
    return jax.tree.map(lambda p: torch.from_dlpack(p.addressable_data(0)), new)


def params_to_torch_checked(params, batch):
    new = train_step(params, batch)
    w = new["w"]
    if len(w.devices()) > 1:
        w = jax.device_put(w, jax.local_devices()[0])
    return torch.from_dlpack(w)


def loss_to_torch_fallback(params, batch):
    new = train_step(params, batch)
    loss = jnp.sum(new["w"])
    try:
        return torch.from_dlpack(loss)
    except TypeError:  # expect: JXI007
        return torch.tensor(float(loss))


def loss_to_torch_fallback_right(params, batch):
    new = train_step(params, batch)
    loss = jnp.sum(new["w"])
    try:
        return torch.from_dlpack(loss)
    except (BufferError, TypeError):
        return torch.tensor(float(loss))


def host_copy(params, batch):
    new = train_step(params, batch)
    return torch.from_numpy(np.asarray(new["w"]).copy())
