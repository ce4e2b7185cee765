"""The project's own APIs (issue 12): `extend-sources`, `extend-sinks` and `extend-sanitizers`
name functions defined inside the linted project, and a call of one of them means what the
configuration says, whatever the analysis makes of the function's body.

The project below is the README's configuration example made real: the table is read out of
README.md itself, and `mylib` is a package of the project whose public names are re-exports
of `mylib.interop`, implemented through a compiled extension the linter cannot read (plus a
pure-Python fallback).  Before this change the README's example gave 0 of its 5 findings."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

from conftest import ROOT, run_cli
from markers import expected

INTEROP = '''\
"""In-house data and interop helpers, around a compiled extension."""
import jax
import numpy as np
import torch

try:
    from mylib_ext import bridge, host_sharding
except ImportError:
    bridge = host_sharding = None


def shard_batch(batch, sharding):
    return jax.device_put(batch, sharding)


def gather_to_host(x):
    return jax.jit(lambda a: a, out_shardings=host_sharding())(x)


def to_torch(x):
    if bridge is not None:
        return bridge.to_torch(x)
    return torch.from_dlpack(np.asarray(x))


def to_cupy(x):
    return bridge.to_cupy(x)


def pointer(x):
    if bridge is not None:
        return bridge.pointer(x)
    return x.addressable_data(0).unsafe_buffer_pointer()


def prepare(batch, sharding):
    """Used inside the module itself: the declared source holds here too."""
    b = shard_batch(batch, sharding)
    return torch.from_dlpack(b)  # expect: JXI002


class Loader:
    def place(self, batch):
        return jax.device_put(batch, self.sharding)
'''
INIT = '''\
"""The in-house API: the names the configuration uses."""
from .interop import gather_to_host, pointer, shard_batch, to_cupy, to_torch, Loader
'''
TRAIN = '''\
import jax
import jax.numpy as jnp
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

import mylib
from mylib import to_cupy

sharding = NamedSharding(jax.make_mesh((len(jax.devices()),), ("x",)), P("x"))


def step(batch):
    b = mylib.shard_batch(batch, sharding)
    t = torch.from_dlpack(b)  # expect: JXI002
    y = jax.device_put(jnp.ones(8), sharding)
    mylib.to_torch(y)  # expect: JXI002
    to_cupy(y)  # expect: JXI001
    mylib.pointer(y)  # expect: JXI003
    mylib.to_torch(mylib.shard_batch(batch, sharding))  # expect: JXI002
    h = mylib.gather_to_host(y)
    torch.from_dlpack(h)
    loaded = mylib.Loader().place(batch)
    return torch.from_dlpack(loaded), t  # expect: JXI002
'''


def readme_table() -> str:
    """The `[tool.jaxinterop-lint]` example of README.md, as written there."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```toml\n(\[tool\.jaxinterop-lint\]\n.*?)```", text, re.S).group(1)
    assert "extend-sources" in block and "extend-sinks" in block and "extend-sanitizers" in block
    return block


def make_project(tmp_path):
    table = readme_table()
    # the README's table, plus the method the example project declares too
    table = table.replace('extend-sources = ["mylib.shard_batch"]',
                          'extend-sources = ["mylib.shard_batch", "mylib.Loader.place"]')
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n" + table)
    (tmp_path / "mylib").mkdir()
    (tmp_path / "mylib" / "__init__.py").write_text(INIT)
    (tmp_path / "mylib" / "interop.py").write_text(INTEROP)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "tests").mkdir()
    return {("train.py", line, code) for line, code in expected(TRAIN)} | \
        {("mylib/interop.py", line, code) for line, code in expected(INTEROP)}


def rows(stdout: str) -> set:
    out = set()
    for ln in stdout.splitlines():
        m = re.match(r"^(?:\./)?(.+?):(\d+):\d+: (JXI\d+)", ln)
        if m:
            out.add((m.group(1), int(m.group(2)), m.group(3)))
    return out


def test_readme_configuration_example(tmp_path):
    want = make_project(tmp_path)
    assert len(want) == 7
    cold = run_cli("--no-cache", ".", cwd=tmp_path)
    assert rows(cold.stdout) == want, cold.stdout
    assert "mylib.shard_batch() (extend-sources)" in cold.stdout
    assert "mylib.to_torch() cannot export `y`" in cold.stdout
    # the summary cache gives the same (first run writes it, second reads it)
    for _ in range(2):
        assert rows(run_cli(".", cwd=tmp_path).stdout) == want
    # linting only the caller reads mylib for its summaries
    assert rows(run_cli("--no-cache", "train.py", cwd=tmp_path).stdout) == \
        {w for w in want if w[0] == "train.py"}


def test_readme_configuration_example_through_flake8(tmp_path):
    want = make_project(tmp_path)
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "."], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert rows(r.stdout) == want, r.stdout + r.stderr


def test_without_the_table_the_bodies_decide(tmp_path):
    """The same project with no declarations: the analysis reads the bodies.  `shard_batch`
    places its argument with the caller's sharding (a module-level NamedSharding over every
    device), so the export of its result is found; `to_torch` copies through the host, so
    passing it a sharded array is no finding."""
    make_project(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    got = rows(run_cli("--no-cache", ".", cwd=tmp_path).stdout)
    assert ("train.py", 14, "JXI002") in got
    assert ("train.py", 16, "JXI002") not in got


def test_declared_sink_in_one_file(tmp_path):
    """A project function declared as a sink is one also where it is defined and called."""
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent('''\
        [tool.jaxinterop-lint.extend-sinks]
        "tools.export" = "dlpack"
        '''))
    (tmp_path / "tools.py").write_text(textwrap.dedent('''\
        import jax
        import torch
        from jax.sharding import NamedSharding, PartitionSpec as P
        def export(x):
            return _native_export(x)
        y = jax.device_put(x, NamedSharding(jax.make_mesh((8,), ("x",)), P()))
        export(y)
        '''))
    r = run_cli("--no-cache", "tools.py", cwd=tmp_path)
    assert rows(r.stdout) == {("tools.py", 7, "JXI002")}, r.stdout
    assert "tools.export() cannot export `y`" in r.stdout


def test_names_defined_after_a_module_level_try():
    """A module-level `try`/`if` (the optional-import idiom) walks on a copy of the globals:
    the functions defined after it are still module globals for the functions that call them
    (found with the project above: before, `prepare` could not see `shard_batch`)."""
    from conftest import codes

    code = textwrap.dedent('''\
        import jax
        import torch
        from jax.sharding import NamedSharding, PartitionSpec as P
        try:
            import cupy
        except ImportError:
            cupy = None
        if cupy is None:
            fallback = True
        def make():
            return jax.device_put(x, NamedSharding(jax.make_mesh((8,), ("x",)), P()))
        def use():
            return torch.from_dlpack(make())  # expect: JXI002
        ''')
    assert codes(code) == sorted(expected(code))
