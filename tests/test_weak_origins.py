"""Placement words alone make nothing multi-device (issue 16, ``apis.WEAK_ORIGIN_TABLES``).

``jax.device_put(x, s)``, ``jnp.zeros(n, device=s)`` and ``x.to_device(s)`` span several
devices only when ``s`` is a sharding, and a sharding is only made by the words of the other
origin tables.  In a project where no file names one, the plan counts placement words as no
JAX code (``Plan.weak_counts``): the PyTorch code they sit beside is never parsed.  Once a
file names a sharding, they count again, with the cache on as with it off."""
from __future__ import annotations

import os

from jaxinterop_lint import Config, lint_paths
from jaxinterop_lint.pipeline.analyse import PARSES
from jaxinterop_lint.pipeline.facts import ORIGIN_NONE, ORIGIN_STRONG, ORIGIN_WEAK, facts_of, words_for
from jaxinterop_lint.pipeline.run import Session

from test_pipeline import write

W = words_for(Config())

LIB = ("import jax\nimport torch\n\n\ndef put(x, s):\n    return jax.device_put(x, s)\n\n\n"
       "def export(x):\n    return torch.from_dlpack(x)\n")
ON_A_DEVICE = ("import jax\nimport torch\nfrom pkg.lib import put\n\n\n"
               "def run(x):\n    return torch.from_dlpack(put(x, jax.devices()[0]))\n")
SHARDED = ON_A_DEVICE.replace("jax.devices()[0]", "jax.NamedSharding(m, jax.P('x'))").replace("run(x)", "run(x, m)")
FILES = {"pyproject.toml": "[project]\nname = 'p'\n", "pkg/__init__.py": "", "pkg/lib.py": LIB,
         "pkg/main.py": ON_A_DEVICE}


def test_the_origin_level_of_a_text():
    assert facts_of("import jax\ny = jax.device_put(x, s)\n", "", W)["origin"] == ORIGIN_WEAK
    assert facts_of("import jax.numpy as jnp\ny = jnp.zeros(3, device=s)\n", "", W)["origin"] == ORIGIN_WEAK
    assert facts_of("import jax\ny = x.to_device(s)\n", "", W)["origin"] == ORIGIN_WEAK
    for strong in ("jax.device_put(x, jax.NamedSharding(m, jax.P('x')))", "jax.pmap(f)(x)",
                   "jax.jit(f, out_shardings=s)(x)", "jax.make_array_from_callback(a, s, cb)",
                   "jax.jit(f, donate_argnums=0)(x)"):
        assert facts_of(f"import jax\ny = {strong}\n", "", W)["origin"] == ORIGIN_STRONG, strong
    assert facts_of("import jax\ny = jax.jit(f)(x)\n", "", W)["origin"] == ORIGIN_NONE


def _session(proj, **kw):
    return Session(str(proj), Config(**kw), use_cache=False)


def test_without_a_sharding_in_the_project_placements_carry_nothing(tmp_path):
    proj = write(tmp_path, FILES)
    lib, main = str(proj / "pkg" / "lib.py"), str(proj / "pkg" / "main.py")
    plan = _session(proj).plan
    assert plan.units(lib)["put"][0] == ORIGIN_WEAK
    assert plan.weak_counts() is False
    assert plan.carrier_name(lib, "put") is False and not plan.reach(main)
    # one file naming a sharding, anywhere in the project, and they carry again
    (proj / "pkg" / "unrelated.py").write_text("import jax\n\nS = jax.NamedSharding(m, jax.P('x'))\n")
    plan = _session(proj).plan
    assert plan.weak_counts() is True
    assert plan.carrier_name(lib, "put") is True and plan.reach(main)
    # and with JXI009 on (an annotated parameter's .sharding is a sharding)
    (proj / "pkg" / "unrelated.py").unlink()
    assert _session(proj, extend_select=("JXI009",)).plan.weak_counts() is True


def test_nothing_is_parsed_then_a_sharding_makes_the_finding(tmp_path):
    proj = write(tmp_path, FILES)
    lib, main = str(proj / "pkg" / "lib.py"), str(proj / "pkg" / "main.py")
    PARSES.clear()
    r = lint_paths([str(proj)], Config(), jobs=1, use_cache=True)
    assert r.findings == [] and not PARSES
    (proj / "pkg" / "main.py").write_text(SHARDED)
    PARSES.clear()
    warm = lint_paths([str(proj)], Config(), jobs=1, use_cache=True)
    cold = lint_paths([str(proj)], Config(), jobs=1, use_cache=False)
    assert [(os.path.basename(f.path), f.line, f.code) for f in warm.findings] == [("main.py", 7, "JXI002")]
    assert [(f.path, f.line, f.code) for f in warm.findings] == [(f.path, f.line, f.code) for f in cold.findings]
    assert main in PARSES and lib in PARSES
    # and back: with no sharding left, the next run parses nothing again
    (proj / "pkg" / "main.py").write_text(ON_A_DEVICE)
    PARSES.clear()
    assert lint_paths([str(proj)], Config(), jobs=1, use_cache=True).findings == [] and not PARSES


def test_a_sharding_in_a_file_outside_the_linted_paths_counts(tmp_path):
    """The project's files are read for the answer, not only the linted ones (a placement's
    sharding may come from a caller that is not linted)."""
    proj = write(tmp_path, {**FILES, "train.py": "import jax\n\nS = jax.NamedSharding(m, jax.P('x'))\n"})
    plan = _session(proj).plan
    plan.reported.add(str(proj / "pkg" / "lib.py"))
    assert plan.weak_counts() is True
