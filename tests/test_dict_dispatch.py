"""A consumer chosen from a dict by a parameter's key (``CONVERTERS[fmt](x)``): a call giving
a constant key whose entry copies reaches no export; another key, a key that is no
constant, or arguments given by ``*``/``**`` do; the parameter's default counts where no
argument gives it; the keys survive the frozen summary of a module read from the cache."""
from __future__ import annotations

from conftest import run_cli
from jaxinterop_lint import Config, lint_source

HEAD = """\
import jax, numpy as np, torch
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((len(jax.devices()),), ("d",))
CONVERTERS = {"torch": torch.from_dlpack, "numpy": np.asarray}

def export(x, fmt="numpy"):
    return CONVERTERS[fmt](x)

def sharded():
    return jax.device_put(np.ones(8), NamedSharding(mesh, P("d")))

def run(fmt, args, kw):
"""


def _callers(call: str):
    found = lint_source(HEAD + f"    return {call}\n", "m.py", Config()).findings
    return [(f.line, f.code) for f in found]


def test_a_copying_key_reaches_no_export():
    assert _callers('export(sharded(), "numpy")') == []
    assert _callers("export(sharded())") == []          # the default, "numpy"
    assert _callers('export(sharded(), fmt="numpy")') == []


def test_the_consumers_key_or_an_unknown_key_exports():
    assert _callers('export(sharded(), "torch")') == [(7, "JXI002")]
    assert _callers("export(sharded(), fmt)") == [(7, "JXI002")]
    assert _callers("export(sharded(), *args)") == [(7, "JXI002")]
    assert _callers('export(sharded(), **kw)') == [(7, "JXI002")]


def test_keys_kept_in_the_cached_summary(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "conv.py").write_text(
        'import numpy as np, torch\nCONVERTERS = {"torch": torch.from_dlpack, "numpy": np.asarray}\n\n'
        "def export(x, fmt):\n    return CONVERTERS[fmt](x)\n")
    (tmp_path / "main.py").write_text(
        "import jax, numpy as np\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nfrom conv import export\n"
        'mesh = jax.make_mesh((len(jax.devices()),), ("d",))\nx = jax.device_put(np.ones(8), NamedSharding(mesh, P("d")))\n'
        'a = export(x, "numpy")\nb = export(x, "torch")\n')
    whole = run_cli(".", cwd=tmp_path)                     # fills the cache with conv.py's summary
    assert whole.returncode == 1 and "conv.py:5:" in whole.stdout and "main.py:6" not in whole.stdout
    for _ in range(2):                                      # main.py alone: conv.py's summary frozen
        alone = run_cli("main.py", cwd=tmp_path)
        assert alone.returncode == 1, alone.stdout
        assert "main.py:7:" in alone.stdout and "main.py:6:" not in alone.stdout
