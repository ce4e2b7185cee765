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
    # a sharding handed to a function that places a value on it at the sink (helper C)
    "sharding_argument_placed_at_sink": ("""\
        def export(x, sharding):
            return torch.from_dlpack(jax.device_put(x, sharding))

        export(np.ones(8), S)
        """, 2),
    "sharding_argument_placed_then_exported": ("""\
        def export(x, sharding):
            y = jax.device_put(x, sharding)
            return torch.from_dlpack(y)

        export(np.ones(8), S)
        """, 3),
    # a sharding as a parameter's default: a call that omits the argument places with it
    # (stop 34's helper hunt: BufferError on 8 CPU devices)
    "sharding_default_parameter": ("""\
        def to_device(a, device=S):
            return jax.device_put(a, device)

        torch.from_dlpack(to_device(np.ones(8)))
        """, 4),
    "sharding_default_built_in_the_def": ("""\
        def to_device(a, *, sharding=NamedSharding(mesh, P("d"))):
            return jax.device_put(a, sharding)

        y = to_device(np.ones(8))
        torch.from_dlpack(y)
        """, 5),
    # ``cls.x = ...`` in a classmethod (unittest's setUpClass), read as ``self.x``
    "class_attribute_set_in_classmethod": ("""\
        class InteropTest:
            @classmethod
            def setUpClass(cls):
                cls.x = jax.device_put(jnp.ones(8), S)

            def test_export(self):
                return torch.from_dlpack(self.x)
        """, 7),
    # stop 34's helper hunt (each a BufferError on 8 CPU devices)
    "enumerate_over_iterator_class": (LOADER + """\
        for i, batch in enumerate(Loader(np.ones(8))):
            torch.from_dlpack(batch)
        """, 12),
    "zip_over_iterator_class": (LOADER + """\
        for batch, n in zip(Loader(np.ones(8)), range(3)):
            torch.from_dlpack(batch)
        """, 12),
    "nn_module_called": ("""\
        class Head(torch.nn.Module):
            def forward(self, x):
                return torch.from_dlpack(x)

        class Deeper(Head):
            pass

        Deeper()(jax.device_put(jnp.ones(8), S))
        """, 3),
    "contextmanager_yield": ("""\
        import contextlib

        @contextlib.contextmanager
        def scratch():
            yield jax.device_put(jnp.zeros(16), S)

        with scratch() as buf:
            pass
        np.from_dlpack(buf)
        """, 9),
    "enter_returns_value": ("""\
        class Scratch:
            def __enter__(self):
                return jax.device_put(jnp.zeros(16), S)

            def __exit__(self, *exc):
                return False

        def use():
            with Scratch() as buf:
                np.from_dlpack(buf)
        """, 10),
    # an attribute filled by a method other than __init__ (entries, appends)
    "attribute_entries_set_in_a_method": ("""\
        class Trainer:
            def __init__(self):
                self.params = {}

            def init(self):
                for name in ("w", "b"):
                    self.params[name] = jax.device_put(jnp.zeros(8), S)

            def export(self, name):
                return torch.from_dlpack(self.params[name])
        """, 10),
    "attribute_appended_in_a_method": ("""\
        class Store:
            def __init__(self):
                self.items = []

            def fill(self):
                self.items.append(jax.device_put(jnp.zeros(8), S))

            def export(self):
                return [torch.from_dlpack(a) for a in self.items]
        """, 9),
    # the device set measured is not the array exported any more
    "devices_held_then_array_changed": ("""\
        x = jax.device_put(jnp.ones(8), S)
        devs = x.devices()
        x = x * 2
        if len(devs) > 1:
            pass
        torch.from_dlpack(x)
        """, 6),
    "array_from_callback_on_a_sharding": ("""\
        host = np.ones(8, np.float32)
        a = jax.make_array_from_callback((8,), S, lambda i: host[i])
        torch.from_dlpack(a)
        """, 3),
    # stop 34's third helper hunt (each a BufferError on 8 CPU devices)
    "setter_method_stores_its_argument": ("""\
        class Sink:
            def __init__(self):
                self.v = None

            def set(self, x):
                self.v = x

            def close(self):
                return torch.from_dlpack(self.v)

        s = Sink()
        s.set(jax.device_put(jnp.ones(8), S))
        s.close()
        """, 9),
    "exit_exports_what_the_block_added": ("""\
        class TorchSink:
            def __init__(self):
                self.pending = []

            def __enter__(self):
                return self

            def add(self, x):
                self.pending.append(x)

            def __exit__(self, *exc):
                for x in self.pending:
                    torch.from_dlpack(x)
                return False

        def main():
            with TorchSink() as sink:
                sink.add(jax.device_put(jnp.ones(8), S))
        """, 13),
    # special methods run by library calls and f-strings, a class default overridden
    "repr_runs_dunder": ("""\
        class W:
            def __init__(self, v):
                self.v = v

            def __repr__(self):
                return str(np.from_dlpack(self.v))

        w = W(jax.device_put(jnp.ones(8), S))
        print(f"state: {w!r}")
        """, 6),
    "asarray_runs_array_dunder": ("""\
        class W:
            def __init__(self, v):
                self.v = v

            def __array__(self, dtype=None, copy=None):
                return np.from_dlpack(self.v)

        np.asarray(W(jax.device_put(jnp.ones(8), S)))
        """, 6),
    "class_default_overridden_by_subclass": ("""\
        class Base:
            w = None

            def export(self):
                return torch.from_dlpack(self.w)

        class Sub(Base):
            def __init__(self):
                self.w = jax.device_put(jnp.ones(8), S)

        Sub().export()
        """, 5),
    "defaultdict_history_stacked": ("""\
        import collections
        history = collections.defaultdict(list)
        for step in range(3):
            metrics = {"loss": jax.device_put(jnp.ones(8), S)}
            for name, value in metrics.items():
                history[name].append(value)
        summary = {name: jnp.stack(vals) for name, vals in history.items()}
        logged = {name: torch.from_dlpack(v) for name, v in summary.items()}
        """, 8),
    "tree_leaves_of_a_parameter": ("""\
        def save(p):
            for leaf in jax.tree.leaves(p):
                torch.from_dlpack(leaf)

        save({"a": jax.device_put(jnp.ones(8), S)})
        """, 3),
    "tree_flatten_with_path_of_a_parameter": ("""\
        def save(p):
            for path, leaf in jax.tree_util.tree_flatten_with_path(p)[0]:
                torch.from_dlpack(leaf)

        save({"a": {"w": jax.device_put(jnp.ones(8), S)}})
        """, 3),
    "list_in_a_dict_appended": ("""\
        h = {"a": []}
        h["a"].append(jax.device_put(jnp.ones(8), S))
        torch.from_dlpack(h["a"][0])
        """, 3),
    "multi_device_default_array": ("""\
        def export(a=jax.device_put(jnp.ones(8), S)):
            return np.from_dlpack(a)

        export()
        """, 2),
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
    "device_argument_placed_at_sink": """\
        def export(x, target):
            return torch.from_dlpack(jax.device_put(x, target))

        export(np.ones(8), jax.devices()[0])
        """,
    # the argument given in place of a sharding default
    "sharding_default_overridden": """\
        def to_device(a, device=S):
            return jax.device_put(a, device)

        torch.from_dlpack(to_device(np.ones(8), jax.devices()[0]))
        torch.from_dlpack(to_device(np.ones(8), device=jax.devices()[0]))
        """,
    # a default that is one device
    "device_default_parameter": """\
        def to_device(a, device=jax.devices()[0]):
            return jax.device_put(a, device)

        torch.from_dlpack(to_device(np.ones(8)))
        """,
}


# Flagged programs made safe by one change (the value placed on one device, or on none):
# safe name -> (flagged name, the text replaced, its replacement).
ONE_DEVICE = {
    "class_attribute_set_in_classmethod_one_device": (
        "class_attribute_set_in_classmethod", "jax.device_put(jnp.ones(8), S)",
        "jax.device_put(jnp.ones(8), jax.devices()[0])"),
    "nn_module_called_one_device": ("nn_module_called", "jax.device_put(jnp.ones(8), S)", "jnp.ones(8)"),
    "contextmanager_yield_one_device": ("contextmanager_yield", "jax.device_put(jnp.zeros(16), S)", "jnp.zeros(16)"),
    "enumerate_over_iterator_class_one_device": (
        "enumerate_over_iterator_class", "jax.device_put(self.data, S)", "jnp.asarray(self.data)"),
    "attribute_appended_in_a_method_one_device": (
        "attribute_appended_in_a_method", "jax.device_put(jnp.zeros(8), S)", "jnp.zeros(8)"),
    "setter_method_stores_a_host_value": (
        "setter_method_stores_its_argument", "s.set(jax.device_put(jnp.ones(8), S))", "s.set(jnp.ones(8))"),
    "exit_exports_host_values": (
        "exit_exports_what_the_block_added", "sink.add(jax.device_put(jnp.ones(8), S))", "sink.add(jnp.ones(8))"),
    "repr_runs_dunder_on_one_device": ("repr_runs_dunder", "jax.device_put(jnp.ones(8), S)", "jnp.ones(8)"),
    "tree_leaves_of_host_parameters": ("tree_leaves_of_a_parameter", "jax.device_put(jnp.ones(8), S)", "jnp.ones(8)"),
    "property_on_one_device": (
        "property_of_parameter", "jax.device_put(jnp.zeros(8), S)", "jax.device_put(jnp.zeros(8), jax.devices()[0])"),
}
for _safe, (_flagged, _old, _new) in ONE_DEVICE.items():
    assert _old in FLAGGED[_flagged][0], _safe
    SAFE[_safe] = FLAGGED[_flagged][0].replace(_old, _new)
# a device set kept in a name and measured later (stop 34's second helper hunt: ran)
SAFE["devices_held_in_a_name"] = """\
        x = jax.device_put(jnp.ones(8), S)
        devs = x.devices()
        if len(devs) > 1:
            x = jax.device_put(x, jax.devices()[0])
        torch.from_dlpack(x)
        """
SAFE["device_set_held_in_a_name"] = SAFE["devices_held_in_a_name"].replace("x.devices()", "x.sharding.device_set")
# a global array built on one device (stop 34's second helper hunt: ran)
SAFE["array_from_callback_on_one_device"] = """\
        from jax.sharding import SingleDeviceSharding
        host = np.ones(8, np.float32)
        a = jax.make_array_from_callback((8,), SingleDeviceSharding(jax.devices()[1]), lambda i: host[i])
        b = jax.make_array_from_single_device_arrays((8,), sharding=SingleDeviceSharding(jax.devices()[0]),
                                                     arrays=[jnp.ones(8)])
        torch.from_dlpack(a), torch.from_dlpack(b)
        """
# setattr with a constant name rebinds the attribute (the third hunt: ran)
SAFE["setattr_rebinds_to_a_host_copy"] = """\
        class State:
            def __init__(self, w):
                self.w = w

        s = State(jax.device_put(jnp.ones(8), S))
        setattr(s, "w", jax.device_get(s.w))
        torch.from_dlpack(s.w)
        """


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


def test_a_sharding_passed_to_a_placing_exporter_of_another_module(tmp_path):
    """Linted alone, the caller's call is the finding (the callee's file is not reported):
    the message says the argument is a sharding the callee places a value on, and there is
    no fix (wrapping the sharding in jax.device_put would be wrong)."""
    from jaxinterop_lint import lint_paths

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "exp.py").write_text(
        "import jax\nimport torch\n\n\ndef export(x, sharding):\n"
        "    return torch.from_dlpack(jax.device_put(x, sharding))\n")
    (tmp_path / "pkg" / "main.py").write_text(HEAD + "from pkg.exp import export\n\nexport(np.ones(8), S)\n"
                                              "export(np.ones(8), jax.devices()[0])\n")
    alone = lint_paths([str(tmp_path / "pkg" / "main.py")], Config(), jobs=1, use_cache=False)
    (f,) = alone.findings
    assert (f.code, f.line) == ("JXI002", HEAD.count("\n") + 3)
    assert "export() puts a value on it and exports that with torch.from_dlpack()" in f.message
    assert "`S` is a sharding over several devices" in f.message and f.fix is None
    whole = lint_paths([str(tmp_path / "pkg")], Config(), jobs=1, use_cache=False)
    assert [(g.path.rsplit("/", 1)[-1], g.line) for g in whole.findings] == [("exp.py", 6)]
    assert "when export() is called at pkg/main.py:" in whole.findings[0].message


def test_a_sharding_default_of_another_modules_function_cached_and_not(tmp_path):
    """``to_device(x)`` of another module whose ``device=`` defaults to a sharding: flagged
    at the caller's sink, the same from the cache (the default is kept with the summary)."""
    from jaxinterop_lint import lint_paths

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "lib.py").write_text(HEAD + "\n\ndef to_device(a, device=S):\n"
                                             "    return jax.device_put(a, device)\n")
    (tmp_path / "pkg" / "main.py").write_text(
        "import jax\nimport numpy as np\nimport torch\n\nfrom pkg.lib import to_device\n\n"
        "torch.from_dlpack(to_device(np.ones(8)))\n"
        "torch.from_dlpack(to_device(np.ones(8), jax.devices()[0]))\n")
    def run(target):
        result = lint_paths([str(target)], Config(), jobs=1, use_cache=True)
        assert [(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in result.findings] == [
            ("main.py", 7, "JXI002")]
        return sorted(p.rsplit("/", 1)[-1] for p in result.analysed_paths)

    assert "lib.py" in run(tmp_path / "pkg")
    with open(tmp_path / "pkg" / "main.py", "a") as f:   # changed: analysed again, lib.py thawed
        f.write("# changed\n")
    assert run(tmp_path / "pkg" / "main.py") == ["main.py"]


FIXTURES = """\
import pytest


@pytest.fixture
def sharded():
    return jax.device_put(jnp.ones(8), S)


@pytest.fixture(scope="module")
def batch(sharded):
    yield {"x": sharded * 2}


@pytest.fixture
def local():
    return jax.device_put(jnp.ones(8), jax.devices()[0])


def test_export(sharded):
    torch.from_dlpack(sharded)


class TestBatches:
    def test_batch(self, batch, tmp_path):
        np.from_dlpack(batch["x"])

    def test_local(self, local):
        np.from_dlpack(local)


def test_no_fixture():
    torch.from_dlpack(jnp.ones(3))


def helper(sharded):
    torch.from_dlpack(sharded)
"""


def test_a_test_given_a_multi_device_fixture_is_flagged_at_its_sink():
    """pytest runs each test with the values of the fixtures its parameters name (stop 34:
    test_export and test_batch raise BufferError on 8 CPU devices, the others pass); a
    function not named test* is not called with them."""
    text = HEAD + FIXTURES
    offset = HEAD.count("\n")
    found = lint_source(text, "test_fixtures.py", Config()).findings
    assert sorted((f.line - offset, f.code) for f in found) == [(20, "JXI002"), (25, "JXI002")]
    first, second = sorted(found, key=lambda f: f.line)
    assert "when pytest runs test_export() with the fixture `sharded`" in first.message
    assert "when pytest runs TestBatches.test_batch() with the fixture `batch`" in second.message
    assert "batch() of `sharded`" in [s.description for s in second.provenance]
