"""A function that stores into the container or object it is given leaves what it stored in
the caller's argument (``Summary.fills``): ``d["x"] = v``, ``lst.append(v)``,
``obj.attr = v``, read back by the caller after the call, in one module and from a module
whose summary comes frozen from the cache; a parameter rebound inside (a local that took its
name) fills nothing; a host value stored is not handed back."""
from __future__ import annotations

from conftest import run_cli
from jaxinterop_lint import Config, lint_source

HEAD = """\
import jax, numpy as np, torch
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((len(jax.devices()),), ("d",))
x = jax.device_put(np.ones(8), NamedSharding(mesh, P("d")))

def put(d, v):
    d["x"] = v

def push(lst, v):
    lst.append(v)

def rebind(d, v):
    d = {}
    d["x"] = v

"""


def _lines(body: str):
    return [(f.line, f.code) for f in lint_source(HEAD + body, "m.py", Config()).findings]


def test_the_callers_container_holds_what_was_stored():
    assert _lines('d = {}\nput(d, x)\ntorch.from_dlpack(d["x"])\n') == [(18, "JXI002")]
    assert _lines("l = []\npush(l, x)\ntorch.from_dlpack(l[0])\n") == [(18, "JXI002")]


def test_a_rebound_parameter_or_a_host_value_fills_nothing():
    assert _lines('d = {"x": np.ones(8)}\nrebind(d, x)\ntorch.from_dlpack(d["x"])\n') == []
    assert _lines('d = {}\nput(d, np.ones(8))\ntorch.from_dlpack(d["x"])\n') == []


def test_fills_kept_in_the_cached_summary(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "store.py").write_text("def put(d, v):\n    d['x'] = v\n")
    (tmp_path / "main.py").write_text(
        "import jax, numpy as np, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "from store import put\nmesh = jax.make_mesh((len(jax.devices()),), ('d',))\n"
        "x = jax.device_put(np.ones(8), NamedSharding(mesh, P('d')))\nd = {}\nput(d, x)\ny = torch.from_dlpack(d['x'])\n")
    whole = run_cli(".", cwd=tmp_path)
    assert whole.returncode == 1 and "main.py:8:" in whole.stdout
    # main.py edited (analysed again), store.py not: its summary is read frozen from the cache
    (tmp_path / "main.py").write_text((tmp_path / "main.py").read_text() + "z = 1\n")
    for _ in range(2):
        alone = run_cli("main.py", cwd=tmp_path)
        assert alone.returncode == 1 and "main.py:8:" in alone.stdout, alone.stdout
