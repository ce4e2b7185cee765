"""Forms found by a fresh helper's 68 programs run on 8 CPU devices (stop 32): each flagged
program below raised ``BufferError`` at the marked line there, each safe one ran.  Linted
here with the engine alone (no ``../shared``, no devices)."""
from __future__ import annotations

import textwrap

import pytest

from jaxinterop_lint import Config, lint_source

HEAD = """\
import sys
import jax
import jax.numpy as jnp
import numpy as np
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((jax.device_count(),), ("d",))
S = NamedSharding(mesh, P("d"))
"""


def lines(body: str) -> list:
    """``(line in the body, code)`` of each finding of ``body`` linted after HEAD."""
    text = HEAD + textwrap.dedent(body)
    offset = HEAD.count("\n")
    return sorted((f.line - offset, f.code) for f in lint_source(text, "hunt.py", Config()).findings)


# an iterator class: __iter__ returns self, __next__ gives the batch
LOADER = """\
        class Loader:
            def __init__(self, data):
                self.data = data

            def __iter__(self):
                return self

            def __next__(self):
                return jax.device_put(self.data, S)

"""

FLAGGED = {
    # .items() / .values() of a dict handed in: its entries, not its keys
    "items_of_parameter": ("""\
        def save(params):
            for k, v in params.items():
                np.from_dlpack(v)

        save({"w": jax.device_put(jnp.ones(8), S)})
        """, 3),
    "values_of_jit_dict": ("""\
        @jax.jit
        def step(x):
            return {"mse": jnp.mean(x ** 2)}

        def log(metrics):
            return [torch.from_dlpack(v) for v in metrics.values()]

        log(step(jax.device_put(jnp.ones((32, 4)), S)))
        """, 6),
    "inherited_self_items": ("""\
        class Bridge:
            def export(self):
                return {k: torch.from_dlpack(v) for k, v in self.params.items()}

        class Trainer(Bridge):
            def __init__(self):
                self.params = {"w": jax.device_put(jnp.ones(8), S)}

        Trainer().export()
        """, 3),
    # a property read on a parameter
    "property_of_parameter": ("""\
        class Model:
            def __init__(self):
                self._w = jax.device_put(jnp.zeros(8), S)

            @property
            def weight(self):
                return self._w

        def export(model):
            return torch.from_dlpack(model.weight)

        export(Model())
        """, 10),
    # an iterator class: __iter__ returns self, __next__ gives the batch
    "iterator_protocol": (LOADER + """\
        for batch in Loader(np.ones(8)):
            torch.from_dlpack(batch)
        """, 12),
    "iterator_parameter": (LOADER + """\
        def consume(loader):
            for batch in loader:
                torch.from_dlpack(batch)

        consume(Loader(np.ones(8)))
        """, 13),
    # the placement given through ** of a dict literal
    "placement_through_splat": ("""\
        cfg = {"device": S}
        x = jax.device_put(jnp.ones(8), **cfg)
        torch.from_dlpack(x)
        """, 3),
    "placement_through_kw_parameter": ("""\
        def place(x, **cfg):
            return jax.device_put(x, **cfg)

        torch.from_dlpack(place(jnp.ones(8), device=S))
        """, 4),
    # a target that is a device on one branch and a sharding on the other
    "device_or_sharding_target": ("""\
        if "--debug" in sys.argv:
            target = jax.devices()[0]
        else:
            target = S
        torch.from_dlpack(jax.device_put(jnp.ones(8), target))
        """, 5),
}


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_flagged(name):
    body, line = FLAGGED[name]
    assert (line, "JXI002") in lines(body)


SAFE = {
    "placement_kw_parameter_device": """\
        def place(x, **cfg):
            return jax.device_put(x, **cfg)

        torch.from_dlpack(place(jnp.ones(8), device=jax.devices()[0]))
        """,
    # a device count kept with a walrus guards like the plain comparison
    "walrus_guard": """\
        x = jax.device_put(jnp.ones(8), S)
        if (n := len(x.devices())) != 1:
            x = jax.device_put(x, jax.devices()[0])
        torch.from_dlpack(x)
        """,
    "walrus_test_value": """\
        x = jax.device_put(jnp.ones(8), S)
        if (single := len(x.devices()) == 1):
            torch.from_dlpack(x)
        """,
    "keys_of_parameter": """\
        def names(params):
            return [np.asarray(k) for k in params]

        names({"w": jax.device_put(jnp.ones(8), S)})
        """,
}


# the flagged property program with the array on one device
SAFE["property_on_one_device"] = FLAGGED["property_of_parameter"][0].replace(
    "jax.device_put(jnp.zeros(8), S)", "jax.device_put(jnp.zeros(8), jax.devices()[0])")


@pytest.mark.parametrize("name", sorted(SAFE))
def test_safe(name):
    assert lines(SAFE[name]) == []


def test_walrus_without_guard_still_flagged():
    assert lines("""\
        x = jax.device_put(jnp.ones(8), S)
        if (n := len(x.devices())) == 1:
            pass
        torch.from_dlpack(x)
        """) == [(4, "JXI002")]
