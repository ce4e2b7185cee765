"""Device-count guards that re-place a value, and what they do not prove (the fresh-user
report, section C).  The forms that run fine, and their multi-device counterparts, are run on
8 CPU devices in ``fixtures/runtime/guards_one_device.py`` (tests/test_runtime_truth.py);
the cases here are the ones a single-process run cannot label: counts of part of the devices
(another backend's), this process's count taken as the process guard, and what the join after
a process guard keeps (donation, structure)."""
from __future__ import annotations

import textwrap

import pytest

from jaxinterop_lint import Config, lint_source

HEAD = """\
import jax
import jax.numpy as jnp
import numpy as np
import torch
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

S = NamedSharding(Mesh(np.array(jax.devices()), ("data",)), P("data"))
step = jax.jit(lambda a: a * 2, donate_argnums=0)


"""


def codes(body: str) -> list:
    """``(line in the body, code)`` of each finding of ``body`` linted after HEAD."""
    text = HEAD + textwrap.dedent(body)
    offset = HEAD.count("\n")
    return sorted((f.line - offset, f.code) for f in lint_source(text, "guards.py", Config()).findings)


@pytest.mark.parametrize("test", [
    "jax.device_count('cpu') > 1",      # another backend's count says nothing of this one's
    "len(jax.devices('cpu')) > 1",
])
def test_counts_of_part_of_the_devices_guard_nothing(test):
    assert codes(f"""\
        def f():
            x = jax.device_put(jnp.ones((8, 4)), S)
            if {test}:
                x = jax.device_put(x, jax.devices()[0])
            return torch.from_dlpack(x)
        """) == [(5, "JXI002")]


@pytest.mark.parametrize("test", ["jax.local_device_count() == 1", "len(jax.local_devices()) == 1"])
def test_the_process_local_count_is_a_guard_in_one_process(test):
    """This process's count is taken as the process guard (apis.GLOBAL_DEVICE_COUNTS: in one
    process it is every device; a multi-process job is where it guards nothing, README)."""
    assert codes(f"""\
        def f():
            x = jax.device_put(jnp.ones((8, 4)), S)
            if {test}:
                return torch.from_dlpack(x)
            if jax.local_device_count() > 1:
                x = jax.device_put(x, jax.devices()[0])
            return torch.from_dlpack(x)
        """) == []


def test_a_donation_on_the_one_device_path_is_kept_by_the_join():
    assert codes("""\
        def f():
            x = jax.device_put(jnp.ones(8), jax.devices()[0])
            if jax.device_count() == 1:
                step(x)
            else:
                x = jax.device_put(x, jax.devices()[0])
            return torch.from_dlpack(x)
        """) == [(7, "JXI008")]


def test_parts_re_placed_under_a_process_guard_are_safe_and_others_are_not():
    assert codes("""\
        def f():
            batch = {"x": jax.device_put(jnp.ones(8), S), "y": jax.device_put(jnp.ones(8), S)}
            if jax.device_count() > 1:
                batch = {"x": jax.device_put(batch["x"], jax.devices()[0]), "y": batch["y"]}
            torch.from_dlpack(batch["x"])
            return torch.from_dlpack(batch["y"])
        """) == [(6, "JXI002")]


def test_a_guard_in_a_conditional_expression_refines_its_branches_only():
    assert codes("""\
        def f():
            x = jax.device_put(jnp.ones(8), S)
            n = 1 if len(x.devices()) == 1 else 2
            return torch.from_dlpack(x), n
        """) == [(4, "JXI002")]


def test_a_process_guard_that_returns_keeps_working():
    assert codes("""\
        def f():
            x = jax.device_put(jnp.ones(8), S)
            if jax.device_count() > 1:
                return None
            return torch.from_dlpack(x)
        """) == []


def test_a_parameter_re_placed_under_a_process_guard_is_no_export_of_the_caller_value():
    assert codes("""\
        def to_torch(x):
            if jax.device_count() > 1:
                x = jax.device_put(x, jax.devices()[0])
            return torch.from_dlpack(x)

        def to_torch_unplaced(x):
            if jax.device_count() > 1:
                x = x + 1
            return torch.from_dlpack(x)

        def main():
            y = jax.device_put(jnp.ones(8), S)
            return to_torch(y), to_torch_unplaced(y)
        """) == [(9, "JXI002")]


def test_a_false_guard_is_still_reported_under_a_process_guard():
    assert ("JXI006" in {c for _, c in codes("""\
        def f():
            x = jax.device_put(jnp.ones(8), S)
            if x.is_fully_replicated:
                if jax.device_count() > 1:
                    x = jax.device_put(x, jax.devices()[0])
                return torch.from_dlpack(x)
            return None
        """)})


_PART = [
    'Mesh(np.array(jax.devices()[:4]), ("data",))',    # part of the devices: size 1 says nothing
]
_EVERY = [
    'Mesh(np.array(jax.devices()), ("data",))',
    'Mesh(jax.devices(), ("data",))',
    'Mesh(np.array(jax.devices()).reshape(2, -1), ("a", "b"))',
    'jax.make_mesh((jax.device_count(),), ("data",))',
    'jax.make_mesh((len(jax.devices()),), ("data",))',
    'Mesh(np.array(jax.local_devices()), ("data",))',  # every device in one process
    'jax.make_mesh((jax.local_device_count(),), ("data",))',
]


@pytest.mark.parametrize("mesh,found", [(m, [(6, "JXI002")]) for m in _PART] + [(m, []) for m in _EVERY])
def test_the_size_of_a_mesh_guards_when_the_mesh_holds_every_device(mesh, found):
    assert codes(f"""\
        def f():
            mesh = {mesh}
            x = jax.device_put(jnp.ones((8, 4)), S)
            if mesh.size > 1:
                x = jax.device_put(x, jax.devices()[0])
            return torch.from_dlpack(x)
        """) == found
