"""Closures specialised per call (``analysis/closures.py``): the fixture's failing cases fail
at flagged lines on 8 CPU devices, the others run and have no finding of their own."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import EIGHT_DEVICES, ROOT
from jaxinterop_lint import Config, lint_source

FIXTURE = ROOT / "fixtures" / "closures" / "decorators.py"


def _lines(text: str, needle: str) -> int:
    return text.splitlines().index(needle) + 1


def test_the_exports_inside_wrappers_factories_and_closures_are_flagged():
    text = FIXTURE.read_text()
    found = sorted({(f.line, f.code) for f in lint_source(text, str(FIXTURE), Config()).findings})
    assert found == sorted({
        (_lines(text, "            return torch.from_dlpack(fn(*args)).to(dtype)"), "JXI002"),
        (_lines(text, "        return np.from_dlpack(model(x))"), "JXI002"),
        (_lines(text, "        return torch.from_dlpack(x)"), "JXI002"),
    })


def test_the_cli_in_a_git_project_flags_the_same_lines(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    text = FIXTURE.read_text()
    (tmp_path / "main.py").write_text(text)
    r = subprocess.run([sys.executable, "-m", "jaxinterop_lint", "--no-cache", "."], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout.count("JXI002") == 3, r.stdout + r.stderr


@pytest.mark.slow
def test_failing_cases_fail_at_flagged_lines_and_the_others_run():
    text = FIXTURE.read_text()
    flagged = {f.line for f in lint_source(text, str(FIXTURE), Config()).findings}
    env = dict(os.environ, **EIGHT_DEVICES)
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "runtime_probe.py"), str(FIXTURE)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    outcome = json.loads(r.stdout.strip().splitlines()[-1])
    failed = {name: o["line"] for name, o in outcome.items() if not o["ok"]}
    assert set(failed) == {"case_decorator_with_arguments", "case_factory_over_a_jitted_function",
                           "case_closure_over_a_sharded_array", "case_decorated_method"}
    assert all(line in flagged for line in failed.values()), (failed, flagged)
    assert all(o["classes"][0] == "BufferError" for o in outcome.values() if not o["ok"])


_PIPELINE = """
import jax
import jax.numpy as jnp
import torch
from jax.sharding import NamedSharding, PartitionSpec as P


def make_pipeline(device=None, sharding=None):
    def place(x):
        if sharding is not None:
            return jax.device_put(x, sharding)
        return x

    def run(x):
        return torch.from_dlpack(place(x) * 3)
    return run


def case():
    return make_pipeline(sharding=%s)(jnp.ones(8))
"""


@pytest.mark.parametrize("given, flagged", [
    ('NamedSharding(jax.make_mesh((len(jax.devices()),), ("d",)), P("d"))', True),
    ("jax.devices()[2]", False),
    ("None", False),
])
def test_a_factory_closure_places_with_the_sharding_its_caller_gives(given, flagged):
    """A factory's returned ``run`` calling its sibling ``place``, which puts the value on the
    factory's ``sharding`` parameter (hunt46 p26): specialised for a sharding on every device
    the export fails; for one device, or none, it does not.  The parameter is not the
    factory's first, so an index would name the nested function's own ``x``: the placement
    names the closure's parameter instead (before, nothing was found)."""
    text = _PIPELINE % given
    found = [(f.line, f.code) for f in lint_source(text, "pipeline.py", Config()).findings]
    assert found == ([(text.splitlines().index("        return torch.from_dlpack(place(x) * 3)") + 1, "JXI002")]
                     if flagged else [])
