"""The device mesh and the shardings every module uses."""
import jax
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((len(jax.devices()),), ("data",))
batch_sharding = NamedSharding(mesh, P("data"))
replicated = NamedSharding(mesh, P())
