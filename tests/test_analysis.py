"""The provenance analysis, feature by feature (issue 2): each snippet's `# expect:` markers
are exactly the findings."""
from __future__ import annotations

import textwrap

import pytest

from conftest import codes, lint
from markers import expected

HEADER = """\
import jax
import jax.numpy as jnp
import numpy as np
import torch
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((8,), ("x",))
s = NamedSharding(mesh, P("x"))
"""

CASES = {
    # ---- name resolution through imports ----------------------------------------------
    "import_alias": """
        import jax as J
        import torch
        y = J.device_put(x, J.sharding.NamedSharding(m, J.sharding.PartitionSpec("x")))
        torch.from_dlpack(y)  # expect: JXI002
    """,
    "from_import_alias": """
        from jax import shard_map as smap
        from torch import from_dlpack as fd
        f = smap(g, mesh=m, in_specs=P("i"), out_specs=P("i"))
        fd(f(x))  # expect: JXI002
    """,
    "module_alias_attribute": """
        from jax.experimental import pjit as m
        import numpy as np
        step = m.pjit(g)
        np.from_dlpack(step(x))  # expect: JXI002
    """,
    "jnp_alias": """
        import jax.numpy as jnp
        import jax
        import torch
        y = jnp.zeros((8,), device=jax.sharding.NamedSharding(m, jax.sharding.PartitionSpec("x")))
        torch.from_dlpack(y)  # expect: JXI002
    """,
    "functools_partial_decorator": """
        import functools
        import jax
        import cupy as cp
        @functools.partial(jax.shard_map, mesh=m, in_specs=P("i"), out_specs=P())
        def f(b):
            return b
        cp.asarray(f(x))  # expect: JXI001
    """,
    "partial_from_import": """
        from functools import partial
        import jax
        import torch
        @partial(jax.pmap, axis_name="i")
        def f(b):
            return b
        torch.from_dlpack(f(x)[0])  # expect: JXI002
    """,
    "shadowed_name_is_not_torch": """
        import jax
        def from_dlpack(a):
            return a
        y = jax.device_put(x, jax.sharding.NamedSharding(m, jax.sharding.PartitionSpec()))
        from_dlpack(y)
    """,
    "unimported_torch_is_unknown": """
        import jax
        y = jax.device_put(x, jax.sharding.NamedSharding(m, jax.sharding.PartitionSpec()))
        torch.from_dlpack(y)
    """,
    # ---- wrapped functions -------------------------------------------------------------
    "jit_with_shardings": HEADER + """
        f = jax.jit(g, in_shardings=s)
        torch.from_dlpack(f(x))  # expect: JXI002
        h = jax.jit(g, out_shardings=s)
        torch.from_dlpack(h(x))  # expect: JXI002
    """,
    "jit_out_shardings_single_device": HEADER + """
        f = jax.jit(g, out_shardings=jax.sharding.SingleDeviceSharding(jax.devices()[0]))
        torch.from_dlpack(f(x))
    """,
    "plain_jit_propagates": HEADER + """
        f = jax.jit(g)
        torch.from_dlpack(f(jax.device_put(x, s)))  # expect: JXI002
        torch.from_dlpack(f(jnp.ones(3)))
    """,
    "decorated_jit_propagates": HEADER + """
        @jax.jit
        def f(a):
            return a * 2
        torch.from_dlpack(f(jax.device_put(x, s)))  # expect: JXI002
        torch.from_dlpack(f(x))
    """,
    "experimental_shard_map": """
        from jax.experimental.shard_map import shard_map
        import torch
        f = shard_map(g, mesh=m, in_specs=P("i"), out_specs=P())
        torch.from_dlpack(f(x))  # expect: JXI002
    """,
    "pmap_indexing_still_multi": HEADER + """
        p = jax.pmap(lambda a: a + 1)(x)
        first = p[0]
        torch.from_dlpack(first)  # expect: JXI002
    """,
    "direct_sources": HEADER + """
        import jax.experimental.multihost_utils as mh
        a = jax.make_array_from_callback((8,), s, cb)
        torch.from_dlpack(a)  # expect: JXI002
        b = jax.lax.with_sharding_constraint(x, s)
        torch.from_dlpack(b)  # expect: JXI002
        c = mh.host_local_array_to_global_array(x, mesh, P("x"))
        torch.from_dlpack(c)  # expect: JXI002
        d = mh.global_array_to_host_local_array(c, mesh, P("x"))
        torch.from_dlpack(d)  # expect: JXI002
        e = x.to_device(s)
        torch.from_dlpack(e)  # expect: JXI002
        f = jax.random.normal(key, (8,), out_sharding=s)
        torch.from_dlpack(f)  # expect: JXI002
        g = jax.reshard(x, P("x"))
        torch.from_dlpack(g)  # expect: JXI002
    """,
    "device_put_variants": HEADER + """
        torch.from_dlpack(jax.device_put(x, P("x")))  # expect: JXI002
        torch.from_dlpack(jax.device_put(x, jax.devices()[0]))
        torch.from_dlpack(jax.device_put(x, jax.local_devices()[1]))
        torch.from_dlpack(jax.device_put(x))
        torch.from_dlpack(jax.device_put(x, device=s))  # expect: JXI002
        torch.from_dlpack(jax.device_put(x, unknown_target))
        y = jax.device_put(x, s)
        torch.from_dlpack(jax.device_put(y))  # expect: JXI002
        for d in jax.devices():
            torch.from_dlpack(jax.device_put(x, d))
    """,
    # ---- propagation -------------------------------------------------------------------
    "assignment_and_unpacking": HEADER + """
        y = jax.device_put(x, s)
        a = y
        b, c = y, np.ones(3)
        (d, (e, f)) = (1, (y, 2))
        torch.from_dlpack(a)  # expect: JXI002
        torch.from_dlpack(b)  # expect: JXI002
        torch.from_dlpack(c)
        torch.from_dlpack(e)  # expect: JXI002
        torch.from_dlpack(f)
    """,
    "augmented_assignment": HEADER + """
        acc = jnp.zeros(3)
        acc += jax.device_put(x, s)
        torch.from_dlpack(acc)  # expect: JXI002
    """,
    "pytrees_subscripts_attributes": HEADER + """
        step = jax.jit(g, out_shardings=s)
        metrics = step(x)
        torch.from_dlpack(metrics["loss"])  # expect: JXI002
        state = step(x)
        torch.from_dlpack(state.params)  # expect: JXI002
        out = step(x)
        torch.from_dlpack(out[0])  # expect: JXI002
        torch.from_dlpack(out.T)  # expect: JXI002
        torch.from_dlpack(out.sum())  # expect: JXI002
        torch.from_dlpack(out.reshape(2, 4))  # expect: JXI002
        torch.tensor(out.shape[0])
        torch.tensor(out.item())
    """,
    "container_store": HEADER + """
        d = {}
        d["y"] = jax.device_put(x, s)
        torch.from_dlpack(d["y"])  # expect: JXI002
    """,
    "tree_functions": HEADER + """
        y = jax.device_put(x, s)
        leaves = jax.tree.leaves({"a": y})
        torch.from_dlpack(leaves[0])  # expect: JXI002
        mapped = jax.tree_util.tree_map(lambda t: t + 1, [y])
        torch.from_dlpack(mapped[0])  # expect: JXI002
    """,
    "computation": HEADER + """
        y = jax.device_put(x, s)
        torch.from_dlpack(y + 1)  # expect: JXI002
        torch.from_dlpack(-y)  # expect: JXI002
        torch.from_dlpack(jnp.asarray(y))  # expect: JXI002
        torch.from_dlpack(jax.lax.psum(y, "x"))  # expect: JXI002
        torch.from_dlpack(jax.nn.relu(y))  # expect: JXI002
        torch.from_dlpack(y if c else y)  # expect: JXI002
        torch.from_dlpack(jnp.arange(3))
    """,
    "comprehensions_and_lambdas": HEADER + """
        ys = [jax.device_put(x, s) for _ in range(2)]
        ts = [torch.from_dlpack(y) for y in ys]  # expect: JXI002
        y = jax.device_put(x, s)
        ok = [torch.from_dlpack(sh.data) for sh in y.addressable_shards]
        conv = lambda a: torch.from_dlpack(a)  # expect: JXI002
        conv(y)
        conv(np.ones(3))
    """,
    "loops": HEADER + """
        y = jnp.ones(3)
        for i in range(3):
            torch.from_dlpack(y)  # expect: JXI002
            y = jax.device_put(x, s)
        while cond():
            torch.from_dlpack(z)
            z = 1
    """,
    "with_statement": HEADER + """
        with mesh:
            y = jax.device_put(x, s)
            torch.from_dlpack(y)  # expect: JXI002
    """,
    "tree_map_with_consumer": HEADER + """
        y = jax.device_put(x, s)
        jax.tree.map(torch.from_dlpack, {"a": y})  # expect: JXI002
        jax.tree_util.tree_map(torch.utils.dlpack.from_dlpack, [y])  # expect: JXI002
        list(map(torch.from_dlpack, [y]))  # expect: JXI002
        jax.tree.map(torch.from_dlpack, {"a": np.ones(3)})
    """,
    # ---- flow sensitivity --------------------------------------------------------------
    "reassignment_kills": HEADER + """
        y = jax.device_put(x, s)
        y = jax.device_get(y)
        torch.from_dlpack(y)
        z = jax.device_put(x, s)
        z = np.asarray(z)
        torch.from_dlpack(z)
        w = jax.device_put(x, s).addressable_data(0)
        torch.from_dlpack(w)
    """,
    "if_else_join": HEADER + """
        def f(c):
            y = jnp.ones(3)
            if c:
                y = jax.device_put(x, s)
            torch.from_dlpack(y)  # expect: JXI002
        def g(c):
            y = jax.device_put(x, s)
            if c:
                y = jax.device_put(y, jax.devices()[0])
            else:
                y = np.asarray(y)
            torch.from_dlpack(y)
    """,
    "branch_that_returns_or_raises": HEADER + """
        def f(c):
            y = jax.device_put(x, s)
            if c:
                y = jax.device_put(y, jax.devices()[0])
            else:
                return None
            return torch.from_dlpack(y)
        def g(c):
            y = jax.device_put(x, s)
            if not c:
                raise ValueError("no")
            return torch.from_dlpack(y)  # expect: JXI002
    """,
    "device_count_guards": HEADER + """
        def a(y):
            y = jax.device_put(y, s)
            if len(y.devices()) == 1:
                torch.from_dlpack(y)
            if len(y.sharding.device_set) == 1:
                torch.from_dlpack(y)
            if 1 == len(y.devices()):
                torch.from_dlpack(y)
            if y.sharding.num_devices == 1:
                torch.from_dlpack(y)
            if isinstance(y.sharding, jax.sharding.SingleDeviceSharding):
                torch.from_dlpack(y)
            if len(y.devices()) != 1:
                torch.from_dlpack(y)  # expect: JXI002
            torch.from_dlpack(y)  # expect: JXI002
        def b(y):
            y = jax.device_put(y, s)
            if len(y.devices()) > 1:
                raise ValueError("sharded")
            torch.from_dlpack(y)
        def c(y):
            y = jax.device_put(y, s)
            if len(y.devices()) > 1:
                y = jax.device_put(y, jax.devices()[0])
            torch.from_dlpack(y)
        def d(y):
            y = jax.device_put(y, s)
            assert len(y.devices()) == 1
            torch.from_dlpack(y)
        def e(y):
            y = jax.device_put(y, s)
            if jax.device_count() == 1:
                torch.from_dlpack(y)
            if len(jax.devices()) == 1 and y.ndim == 1:
                torch.from_dlpack(y)
    """,
    "handled_try_is_not_reported": HEADER + """
        y = jax.device_put(x, s)
        try:
            t = torch.from_dlpack(y)
        except BufferError:
            t = torch.from_numpy(np.asarray(y))
        try:
            p = y.unsafe_buffer_pointer()
        except RuntimeError:
            p = None
    """,
    # ---- summaries within a module -----------------------------------------------------
    "function_summaries": HEADER + """
        def make(a):
            return jax.device_put(a, s)
        def twice(a):
            return make(a) * 2
        def safe(a):
            return jax.device_get(make(a))
        def ident(a):
            return a
        torch.from_dlpack(twice(x))  # expect: JXI002
        torch.from_dlpack(safe(x))
        torch.from_dlpack(ident(make(x)))  # expect: JXI002
        torch.from_dlpack(ident(x))
    """,
    "recursion_terminates": HEADER + """
        def r(a, n):
            if n == 0:
                return jax.device_put(a, s)
            return r(a, n - 1)
        def ping(a):
            return pong(a)
        def pong(a):
            return ping(a)
        torch.from_dlpack(r(x, 3))  # expect: JXI002
        torch.from_dlpack(ping(x))
    """,
    "helper_exports_its_parameter": HEADER + """
        def to_torch(a):
            return torch.from_dlpack(a)  # expect: JXI002
        to_torch(jax.device_put(x, s))
        to_torch(np.ones(3))
    """,
    "class_attributes_and_methods": HEADER + """
        class Trainer:
            def __init__(self):
                self.step = jax.jit(g, out_shardings=s)
            def run(self, a):
                return self.step(a)
            def export(self, a):
                out = self.run(a)
                return torch.from_dlpack(out)  # expect: JXI002
        t = Trainer()
        torch.from_dlpack(t.run(x))  # expect: JXI002
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_analysis_feature(name):
    code = CASES[name]
    import textwrap
    code = textwrap.dedent(code) if not code.startswith(HEADER) else HEADER + textwrap.dedent(code[len(HEADER):])
    got = {(line, c) for line, c in codes(code)}
    assert got == expected(code)


def test_finding_carries_provenance_chain():
    code = HEADER + "y = jax.device_put(x, s)\nz = y * 2\nt = torch.from_dlpack(z)\n"
    (f,) = lint(code)
    assert f.code == "JXI002" and f.line == 10
    steps = [(s.line, s.description) for s in f.provenance]
    assert steps[0] == (8, "jax.device_put with NamedSharding")
    assert (9, "assigned to `z`") in steps
    assert steps[-1][0] == 10
    assert "jax.device_put with NamedSharding, line 8" in f.message
    assert "raises BufferError" in f.message


def test_message_format_matches_catalogue():
    code = HEADER + "\n\n\n\ny = jax.device_put(x, s)\nt = torch.from_dlpack(y)\n"
    (f,) = lint(code)
    assert f.message == ("torch.from_dlpack() cannot export `y`: it spans several devices (jax.device_put "
                         "with NamedSharding, line 12) and raises BufferError; use y.addressable_shards or "
                         "jax.device_put(y, device)")


def test_cupy_message_says_silent_gather():
    code = "import jax, cupy\ny = jax.device_put(x, jax.sharding.NamedSharding(m, jax.sharding.PartitionSpec()))\nc = cupy.asarray(y)\n"
    (f,) = lint(code)
    assert f.code == "JXI001" and "silently gathers the whole array through the host" in f.message


def test_property_and_methods_on_instances_do_not_crash():
    # Reported from the torch2jax corpus run: a property read through a method crashed.
    code = ("import torch\n\ndef export(x):\n    return torch.from_dlpack(x)\n\n"
            "class T:\n    @property\n    def shape(self):\n        return self.value.shape\n\n"
            "    def size(self):\n        return self.shape\n")
    from jaxinterop_lint import lint_source

    # No JAX code reaches this file, so a run never parses it (issue 16): forced here.
    r = lint_source(code, "t.py", force=True)
    assert r.error is None and r.analysed and r.findings == []


def test_property_returning_a_multi_device_value():
    code = HEADER + textwrap.dedent("""\
        class Holder:
            def __init__(self, x):
                self.x = x
            @property
            def sharded(self):
                return jax.device_put(self.x, s)
        h = Holder(x)
        torch.from_dlpack(h.sharded)  # expect: JXI002
    """)
    assert set(codes(code)) == expected(code)
