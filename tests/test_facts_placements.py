"""Exact placements and more sources (issue 12): device counts where the code states them,
compiled executables, mesh contexts and flax.jax_utils.  Each snippet's `# expect:` markers
are exactly its findings; the runtime truth of each pattern is in fixtures/runtime/
placements_exact.py and sources_more.py (run on 8 CPU devices by test_runtime_truth.py)."""
from __future__ import annotations

import textwrap

import pytest

from conftest import codes, lint, run_cli
from markers import expected

HEADER = """\
import jax
import jax.numpy as jnp
import numpy as np
import torch
from jax.experimental import mesh_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding
devices = jax.devices()
x = jnp.arange(8.0)
"""

PLACEMENTS = {
    # ---- slices and indexes of jax.devices() / jax.local_devices() ---------------------
    "first_device": HEADER + """
        m = Mesh(np.array(devices[:1]), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P("x"))))
    """,
    "first_two_devices": HEADER + """
        m = Mesh(np.array(devices[:2]), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P("x"))))  # expect: JXI002
    """,
    "last_device": HEADER + """
        m = Mesh(np.asarray(jax.local_devices()[-1:]), ("x",))
        np.from_dlpack(jax.device_put(x, NamedSharding(m, P())))
    """,
    "last_two_devices": HEADER + """
        m = Mesh(np.asarray(jax.local_devices()[-2:]), ("x",))
        np.from_dlpack(jax.device_put(x, NamedSharding(m, P())))  # expect: JXI002
    """,
    "index_plus_one": HEADER + """
        def f(i):
            m = Mesh(np.array(devices[i:i + 1]), ("x",))
            return torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))
    """,
    "index_plus_two": HEADER + """
        def f(i):
            m = Mesh(np.array(devices[i:i + 2]), ("x",))
            return torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))  # expect: JXI002
    """,
    "one_to_two": HEADER + """
        m = Mesh(np.array(devices[1:2]), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))
    """,
    "every_other": HEADER + """
        m = Mesh(np.array(devices[::2]), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))  # expect: JXI002
    """,
    "count_in_a_variable_is_unknown": HEADER + """
        k = len(devices) // 2
        m = Mesh(np.array(devices[:k]), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))  # expect: JXI002
    """,
    "list_of_one_device": HEADER + """
        m = Mesh(np.array([devices[0]]), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))
    """,
    "list_of_two_devices": HEADER + """
        m = Mesh(np.array([devices[0], devices[1]]), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))  # expect: JXI002
    """,
    # ---- np.array(...).reshape(...) ----------------------------------------------------
    "reshape_one_by_one": HEADER + """
        m = Mesh(np.array(jax.local_devices()[:1]).reshape(1, 1), ("x", "y"))
        np.from_dlpack(jax.device_put(x, NamedSharding(m, P("x", "y"))))
    """,
    "reshape_two_by_four": HEADER + """
        m = Mesh(np.array(devices).reshape((2, 4)), ("x", "y"))
        np.from_dlpack(jax.device_put(x, NamedSharding(m, P("x", "y"))))  # expect: JXI002
    """,
    "row_of_a_column": HEADER + """
        m = Mesh(np.array(devices).reshape(-1, 1)[0], ("x",))
        np.from_dlpack(jax.device_put(x, NamedSharding(m, P())))
    """,
    "row_of_two_by_four": HEADER + """
        m = Mesh(np.array(devices).reshape(2, 4)[0], ("x",))
        np.from_dlpack(jax.device_put(x, NamedSharding(m, P())))  # expect: JXI002
    """,
    "element_of_a_grid": HEADER + """
        grid = np.array(devices).reshape(2, 4)
        y = jax.device_put(x, grid[0, 1])
        torch.from_dlpack(y)
    """,
    "flattened_single": HEADER + """
        m = Mesh(np.array(devices[:1]).reshape(1, 1).ravel(), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))
    """,
    # ---- jax.make_mesh / mesh_utils with literal shapes ---------------------------------
    "make_mesh_one": HEADER + """
        m = jax.make_mesh((1,), ("x",))
        jax.device_put(x, NamedSharding(m, P())).unsafe_buffer_pointer()
    """,
    "make_mesh_one_by_one_keyword": HEADER + """
        m = jax.make_mesh(axis_shapes=[1, 1], axis_names=("x", "y"))
        jax.device_put(x, NamedSharding(m, P())).unsafe_buffer_pointer()
    """,
    "make_mesh_two": HEADER + """
        m = jax.make_mesh((2,), ("x",))
        jax.device_put(x, NamedSharding(m, P())).unsafe_buffer_pointer()  # expect: JXI003
    """,
    "make_mesh_of_every_device": HEADER + """
        m = jax.make_mesh((len(devices),), ("x",))
        jax.device_put(x, NamedSharding(m, P())).unsafe_buffer_pointer()  # expect: JXI003
    """,
    # a module-level constant shape (analysis/constants.py): one device, runs on 8 (stop 36)
    "make_mesh_shape_variable": HEADER + """
        shape = (1,)
        m = jax.make_mesh(shape, ("x",))
        jax.device_put(x, NamedSharding(m, P())).unsafe_buffer_pointer()
    """,
    "make_mesh_shape_rebound": HEADER + """
        shape = (1,)
        shape = (len(devices),)
        m = jax.make_mesh(shape, ("x",))
        jax.device_put(x, NamedSharding(m, P())).unsafe_buffer_pointer()  # expect: JXI003
    """,
    "create_device_mesh_one": HEADER + """
        m = Mesh(mesh_utils.create_device_mesh((1,), devices=devices[:1]), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))
    """,
    "create_device_mesh_grid_row": HEADER + """
        grid = mesh_utils.create_device_mesh((2, 4))
        m = Mesh(grid[0], ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))  # expect: JXI002
    """,
    "hybrid_mesh_one": HEADER + """
        m = Mesh(mesh_utils.create_hybrid_device_mesh((1,), (1,)), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))
    """,
    "hybrid_mesh_two": HEADER + """
        m = Mesh(mesh_utils.create_hybrid_device_mesh((1,), (2,)), ("x",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))  # expect: JXI002
    """,
    "mesh_devices_attribute": HEADER + """
        solo = jax.make_mesh((1,), ("x",))
        m = Mesh(solo.devices, ("y",))
        torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))
    """,
    "mesh_of_unknown_devices": HEADER + """
        def f(devs):
            m = Mesh(devs, ("x",))
            return torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))  # expect: JXI002
    """,
    "either_mesh_is_unknown": HEADER + """
        def f(flag):
            m = jax.make_mesh((1,), ("x",)) if flag else jax.make_mesh((8,), ("x",))
            return torch.from_dlpack(jax.device_put(x, NamedSharding(m, P())))  # expect: JXI002
    """,
    # ---- shardings on a one-device mesh everywhere a placement goes ---------------------
    "one_device_sharding_keyword_forms": HEADER + """
        solo = NamedSharding(mesh=jax.make_mesh((1,), ("x",)), spec=P())
        a = jnp.zeros(8, device=solo)
        b = x.to_device(solo)
        c = jax.device_put(x, device=solo)
        torch.from_dlpack(a), torch.from_dlpack(b), torch.from_dlpack(c)
    """,
    "jit_on_a_one_device_mesh": HEADER + """
        solo = NamedSharding(jax.make_mesh((1,), ("x",)), P())
        f = jax.jit(lambda a: a * 2, in_shardings=solo)
        g = jax.jit(lambda a: a * 2, in_shardings=(solo,), out_shardings=solo)
        torch.from_dlpack(f(x)), torch.from_dlpack(g(x))
    """,
    "jit_on_every_device": HEADER + """
        full = NamedSharding(jax.make_mesh((8,), ("x",)), P())
        g = jax.jit(lambda a: a * 2, in_shardings=(full,))
        torch.from_dlpack(g(x))  # expect: JXI002
    """,
    "single_device_sharding": HEADER + """
        y = jax.device_put(x, SingleDeviceSharding(devices[0]))
        torch.from_dlpack(y)
    """,
    "mesh_built_in_a_function": HEADER + """
        def solo_mesh():
            return jax.make_mesh((1,), ("x",))
        y = jax.device_put(x, NamedSharding(solo_mesh(), P()))
        torch.from_dlpack(y)
    """,
}

SOURCES = {
    # ---- compiled executables -----------------------------------------------------------
    "compiled_with_shardings": HEADER + """
        s = NamedSharding(jax.make_mesh((8,), ("x",)), P("x"))
        c = jax.jit(lambda a: a * 2, in_shardings=s, out_shardings=s).lower(x).compile()
        torch.from_dlpack(c(x))  # expect: JXI002
    """,
    "traced_lowered_compiled": HEADER + """
        from jax.experimental.pjit import pjit
        c = pjit(lambda a: a * 2).trace(x).lower().compile()
        y = c(x)
        y.unsafe_buffer_pointer()  # expect: JXI003
    """,
    "compiled_plain_jit": HEADER + """
        c = jax.jit(lambda a: a * 2).lower(x).compile()
        torch.from_dlpack(c(x))
    """,
    "compiled_plain_jit_of_sharded": HEADER + """
        s = NamedSharding(jax.make_mesh((8,), ("x",)), P("x"))
        y = jax.device_put(x, s)
        c = jax.jit(lambda a: a * 2).lower(y).compile()
        torch.from_dlpack(c(y))  # expect: JXI002
    """,
    "compiled_donates": HEADER + """
        c = jax.jit(lambda a: a * 2, donate_argnums=0).lower(x).compile()
        out = c(x)
        torch.from_dlpack(x)  # expect: JXI008
    """,
    # ---- mesh contexts --------------------------------------------------------------------
    "set_mesh_context": HEADER + """
        mesh = jax.make_mesh((8,), ("x",))
        with jax.set_mesh(mesh):
            a = jnp.zeros(8)
            b = jax.jit(lambda v: v + 1)(np.ones(8))
            r = jax.random.normal(jax.random.key(0), (8,))
            torch.from_dlpack(a)  # expect: JXI002
        torch.from_dlpack(b)  # expect: JXI002
        r.unsafe_buffer_pointer()  # expect: JXI003
    """,
    "after_the_context": HEADER + """
        mesh = jax.make_mesh((8,), ("x",))
        with jax.set_mesh(mesh):
            pass
        torch.from_dlpack(jnp.zeros(8))
    """,
    "global_setter": HEADER + """
        mesh = jax.make_mesh((8,), ("x",))
        jax.set_mesh(mesh)
        def f():
            return torch.from_dlpack(jnp.ones(8))  # expect: JXI002
        a = jnp.ones(8)
        torch.from_dlpack(a)  # expect: JXI002
    """,
    "set_mesh_none_unsets": HEADER + """
        jax.set_mesh(jax.make_mesh((8,), ("x",)))
        jax.set_mesh(None)
        torch.from_dlpack(jnp.ones(8))
    """,
    "sharding_module_set_mesh_and_use_mesh": HEADER + """
        mesh = jax.make_mesh((8,), ("x",))
        with jax.sharding.set_mesh(mesh):
            torch.from_dlpack(jnp.ones(8))  # expect: JXI002
        with jax.sharding.use_mesh(mesh):
            torch.from_dlpack(jnp.ones(8))  # expect: JXI002
    """,
    "unknown_mesh_context": HEADER + """
        def f(mesh):
            with jax.set_mesh(mesh):
                return torch.from_dlpack(jnp.ones(8))  # expect: JXI002
    """,
    "what_stays_on_one_device_under_a_mesh": HEADER + """
        mesh = jax.make_mesh((8,), ("x",))
        with jax.set_mesh(mesh):
            a = jnp.zeros(8, device=devices[0])
            b = jax.device_put(np.ones(8))
            c = np.ones(8) + 1
            d = jnp.from_dlpack(torch.ones(8))
            n = jnp.shape(a)
            torch.from_dlpack(a), torch.from_dlpack(b), torch.from_dlpack(c), torch.from_dlpack(d)
            torch.tensor(n)
    """,
    "one_device_mesh_context": HEADER + """
        with jax.set_mesh(jax.make_mesh((1,), ("x",))):
            a = jnp.zeros(8)
            y = jax.device_put(np.ones(8), P("x"))
            torch.from_dlpack(a), torch.from_dlpack(y)
    """,
    "partition_spec_under_a_mesh": HEADER + """
        with jax.set_mesh(jax.make_mesh((8,), ("x",))):
            y = jax.device_put(np.ones(8), P("x"))
        torch.from_dlpack(y)  # expect: JXI002
    """,
    "mesh_as_its_own_context_places_nothing": HEADER + """
        mesh = jax.make_mesh((8,), ("x",))
        with mesh:
            a = jnp.zeros(8)
            b = jax.jit(lambda v: v * 2)(a)
            torch.from_dlpack(a), torch.from_dlpack(b)
    """,
    # ---- flax.jax_utils -------------------------------------------------------------------
    "flax_replicate": HEADER + """
        from flax import jax_utils
        r = jax_utils.replicate({"w": x})
        torch.from_dlpack(r["w"])  # expect: JXI002
    """,
    "flax_replicate_module_path": HEADER + """
        import flax.jax_utils
        r = flax.jax_utils.replicate(x, jax.local_devices())
        np.from_dlpack(r)  # expect: JXI002
    """,
    "flax_replicate_one_device": HEADER + """
        from flax.jax_utils import replicate
        r = replicate(x, devices=jax.local_devices()[:1])
        torch.from_dlpack(r)
    """,
    "flax_unreplicate": HEADER + """
        from flax import jax_utils
        u = jax_utils.unreplicate(jax_utils.replicate(x))
        torch.from_dlpack(u)
    """,
    "flax_unreplicate_of_a_scalar": HEADER + """
        from flax import jax_utils
        r = jax_utils.replicate(x)
        torch.from_dlpack(jax_utils.unreplicate(r.sum()))  # expect: JXI002
        torch.from_dlpack(jax_utils.unreplicate(jnp.mean(r)))  # expect: JXI002
        torch.from_dlpack(jax_utils.unreplicate(jnp.mean(r, axis=0)))
    """,
    "flax_prefetch": HEADER + """
        from flax import jax_utils
        it = jax_utils.prefetch_to_device(iter([np.ones((8, 2))]), 2)
        torch.from_dlpack(next(it))  # expect: JXI002
        for batch in jax_utils.prefetch_to_device(iter([np.ones((8, 2))]), 2):
            np.from_dlpack(batch)  # expect: JXI002
        for batch in jax_utils.prefetch_to_device(iter([np.ones((1, 2))]), 2, devices[:1]):
            np.from_dlpack(batch)
    """,
}


def _whole(table: dict) -> dict:
    """HEADER plus each dedented body."""
    return {k: HEADER + textwrap.dedent(v[len(HEADER):]) for k, v in table.items()}


PLACEMENTS, SOURCES = _whole(PLACEMENTS), _whole(SOURCES)


def _check(code):
    assert codes(code) == sorted(expected(code)), codes(code)


@pytest.mark.parametrize("name", sorted(PLACEMENTS))
def test_exact_placements(name):
    _check(PLACEMENTS[name])


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_more_sources(name):
    _check(SOURCES[name])


def test_messages_name_the_mesh_context_and_flax():
    found = lint(SOURCES["set_mesh_context"])
    assert "jnp.zeros() under jax.set_mesh(mesh)" in found[0].message
    assert "under jax.set_mesh(mesh)" in found[1].message
    found = lint(SOURCES["flax_unreplicate_of_a_scalar"])
    assert "unreplicate() keeps a 0-d array on every device" in " ".join(s.description for s in found[0].provenance)
    assert "flax.jax_utils.replicate" in found[0].message


def test_both_pairs_exist_for_every_form():
    """Every family above has cases that are findings and cases that are not."""
    for table in (PLACEMENTS, SOURCES):
        flagged = [n for n, c in table.items() if expected(c)]
        clean = [n for n, c in table.items() if not expected(c)]
        assert len(flagged) >= 8 and len(clean) >= 8


CONFIG = """\
import jax
import numpy as np
solo = jax.make_mesh((1,), ("x",))
full = jax.make_mesh((8,), ("x",))
first = np.array(jax.devices()[:1])
"""
MAIN = """\
import jax
import jax.numpy as jnp
import torch
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from meshes import first, full, solo
a = jax.device_put(jnp.ones(8), NamedSharding(solo, P()))
b = jax.device_put(jnp.ones(8), NamedSharding(full, P()))
c = jax.device_put(jnp.ones(8), NamedSharding(Mesh(first, ("x",)), P()))
torch.from_dlpack(a), torch.from_dlpack(c)
torch.from_dlpack(b)  # expect: JXI002
"""


def test_meshes_from_another_module_cold_and_cached(tmp_path):
    """A mesh's device count crosses modules, and survives the summary cache."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "meshes.py").write_text(CONFIG)
    (tmp_path / "main.py").write_text(MAIN)
    want = {("./main.py", line, code) for line, code in expected(MAIN)}
    for _ in range(2):   # the second run reads the summary of meshes.py from the cache
        r = run_cli("main.py", "meshes.py", cwd=tmp_path)
        got = {(("./" + ln.split(":")[0]).replace("././", "./"), int(ln.split(":")[1]), ln.split()[1])
               for ln in r.stdout.splitlines() if ": JXI" in ln}
        assert got == want, r.stdout
    assert (tmp_path / ".jaxinterop_lint_cache").exists()


def test_table_entries_cite_where_they_come_from():
    """The placement tables say where each fact comes from (a JAX file or a run)."""
    from jaxinterop_lint.knowledge import apis

    source = textwrap.dedent(open(apis.__file__).read())
    for table in ("MESH_SHAPE_CALLS", "MESH_CONSTRUCTORS", "MESH_SHARDINGS", "MESH_CONTEXTS",
                  "COMPILE_STAGES", "FLAX_REPLICATORS", "FFI_ARRAY_CALLS", "EXCEPTION_CONTEXTS"):
        before = source[:source.index(f"\n{table}")]
        comment = before[before.rstrip().rfind("\n\n"):]
        assert "jax" in comment.lower() or "run" in comment, table
