"""Values that cross modules in ways a module's own text does not show (hunt43):

- a global that its module's functions rebind with ``global`` (``def init(): global PARAMS;
  PARAMS = [sharded ...]``), read as a module attribute by a module that never calls them
  (``torch.from_dlpack(state.PARAMS[i])``, proj5; fixtures/runtime/xstate);
- a decorator imported from another module (``@gathered`` over a ``jax.jit`` with
  ``out_shardings``, proj2; fixtures/runtime/xdecorators): what its wrapper returns for the
  decorated function is what the decorated name returns, a gathered result included;
- a function of the importer that makes multi-device values handed to a class or a ``*args``
  function of a module the plan leaves unparsed (``Pipeline(jnp.tanh, shard)(x)``,
  fixtures/runtime/xcallables): that module is opened and the stages run.

Each holds whichever module is linted, with the cache on or off; the fixtures run for real
on 8 CPU devices: each flagged case fails through a flagged line, the others run."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EIGHT_DEVICES
from jaxinterop_lint import Config, lint_paths
from markers import expected

RUNTIME = Path(__file__).resolve().parent.parent / "fixtures" / "runtime"
FIXTURES = {"xstate": ("xs_main.py", ["xs_bridge.py"], 1), "xdecorators": ("xd_main.py", ["xd_main.py"], 2),
            "xcallables": ("xc_main.py", ["xc_main.py"], 2)}


def _want(root: Path) -> set:
    return {(p.name, line, code) for p in root.glob("*.py") for line, code in expected(p.read_text())}


def _got(result) -> set:
    return {(os.path.basename(f.path), f.line, f.code) for f in result.findings}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_the_markers_hold_linting_the_project(name):
    root = RUNTIME / name
    result = lint_paths([str(root)], Config(), use_cache=False)
    assert _got(result) == _want(root) and len(_want(root)) == FIXTURES[name][2]


@pytest.mark.parametrize("cache", [False, True])
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_the_reader_alone_sees_what_the_other_module_gives(tmp_path, name, cache):
    root = tmp_path / name
    shutil.copytree(RUNTIME / name, root)
    reader = [str(root / f) for f in FIXTURES[name][1]]
    assert _got(lint_paths(reader, Config(), project_root=str(root), use_cache=cache)) == _want(root)
    if cache:   # the other modules' summaries now come from the cache: the same findings
        assert _got(lint_paths([str(root)], Config(), project_root=str(root), use_cache=True)) == _want(root)
        assert _got(lint_paths(reader, Config(), project_root=str(root), use_cache=True)) == _want(root)


def test_a_global_no_function_rebinds_stays_what_the_module_binds(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "state.py").write_text(
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\nPARAMS = None\n\n\n"
        "def make(mesh):\n    params = jax.device_put(0.0, NamedSharding(mesh, P()))\n    return params\n")
    (tmp_path / "bridge.py").write_text("import torch\n\nimport state\n\n\ndef get():\n"
                                        "    return torch.from_dlpack(state.PARAMS)\n")
    result = lint_paths([str(tmp_path / "bridge.py")], Config(), project_root=str(tmp_path), use_cache=False)
    assert result.findings == []


def test_a_long_module_parsed_for_some_names_keeps_the_functions_writing_them(tmp_path):
    """A module of 200 lines or more is parsed only for the names another module takes from
    it (pipeline/partial.py): a def that rebinds such a name with ``global`` is one of the
    statements it needs (crash hunt 41: 49 setters, 201 lines, lost every finding)."""
    (tmp_path / "pyproject.toml").write_text("")
    head = ("import jax, numpy as np\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
            "S = NamedSharding(jax.make_mesh((8,), ('x',)), P('x'))\n\n")
    names = "".join(f"G{i} = None\n" for i in range(60))
    setters = "".join(f"def set{i}():\n    global G{i}\n    G{i} = jax.device_put(np.ones(8), S)\n"
                      for i in range(60))
    (tmp_path / "big.py").write_text(head + names + setters)
    assert len((tmp_path / "big.py").read_text().splitlines()) >= 200
    (tmp_path / "use.py").write_text("import torch\nimport big\n\n\ndef u():\n"
                                     "    return torch.from_dlpack(big.G0)\n")
    for cache in (False, True):
        result = lint_paths([str(tmp_path / "use.py")], Config(), project_root=str(tmp_path), use_cache=cache)
        assert [(os.path.basename(f.path), f.line, f.code) for f in result.findings] == [("use.py", 6, "JXI002")]


def test_an_imported_decorator_leaves_its_module_without_findings(tmp_path):
    """The wrapper specialised for an importer's function is that importer's: the
    decorator's module, linted with it, reports nothing of it."""
    root = tmp_path / "xdecorators"
    shutil.copytree(RUNTIME / "xdecorators", root)
    result = lint_paths([str(root)], Config(), project_root=str(root), use_cache=False)
    assert {f for f, _, _ in _got(result)} == {"xd_main.py"}


@pytest.mark.slow   # real jax and torch on 8 CPU devices
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_the_flagged_cases_fail_and_the_others_run_on_eight_devices(name):
    root = RUNTIME / name
    env = dict(os.environ, **EIGHT_DEVICES)
    r = subprocess.run([sys.executable, str(Path(__file__).parent / "runtime_probe.py"), str(root / FIXTURES[name][0]),
                        str(root)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    outcome = json.loads(r.stdout.strip().splitlines()[-1])
    flagged = {(f, line) for f, line, _ in _want(root)}
    assert len(outcome) == 3
    for case, res in outcome.items():
        if case.endswith("_fails"):
            assert not res["ok"] and "BufferError" in res["classes"], (case, res)
            assert any(tuple(frame) in flagged for frame in res["frames"]), (case, res)   # through a flagged line
        else:
            assert res["ok"], (case, res)


STAR_HELPERS = '''\
import jax.numpy as jnp


def last(*xs):
    return jnp.asarray(xs[-1])
'''
STAR_MAIN = '''\
import jax
import jax.numpy as jnp
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

from star_helpers import last

mesh = jax.make_mesh((len(jax.devices()),), ("m",))


def shard(x):
    return jax.device_put(x, NamedSharding(mesh, P("m")))


def local_last():
    return torch.from_dlpack(last(shard(jnp.ones(8)), jnp.ones(3)))


def sharded_last():
    return torch.from_dlpack(last(jnp.ones(3), shard(jnp.ones(8))))
'''


def test_a_star_parameter_of_another_module_binds_the_same_from_its_stored_summary(tmp_path):
    """``def last(*xs)`` of another module gets the tuple of the extra arguments, whether its
    analysis is run now or its summary is read from the cache (``FrozenRecord.star``):
    ``last(sharded, local)`` is the local array, ``last(local, sharded)`` the sharded one."""
    (tmp_path / "star_helpers.py").write_text(STAR_HELPERS)
    (tmp_path / "star_main.py").write_text(STAR_MAIN)
    (tmp_path / "pyproject.toml").write_text("")
    want = {("star_main.py", 20, "JXI002")}
    fresh = lint_paths([str(tmp_path)], Config(), project_root=str(tmp_path), use_cache=False)
    assert _got(fresh) == want
    lint_paths([str(tmp_path)], Config(), project_root=str(tmp_path), use_cache=True)
    # the caller edited: judged again with the helper's stored summary
    (tmp_path / "star_main.py").write_text(STAR_MAIN + "\n# edited\n")
    again = lint_paths([str(tmp_path)], Config(), project_root=str(tmp_path), use_cache=True)
    assert _got(again) == want
