"""Whole-project analysis (issue 7): findings across modules, by the CLI and flake8, proved
at run time, and an incremental cache that re-analyses only what depends on an edit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import copy_tree, EIGHT_DEVICES, ROOT, run_cli
from jaxinterop_lint import Config, lint_paths
from markers import expected

PROJECT = ROOT / "fixtures" / "project"
SRC = PROJECT / "src" / "shardproj"


def _markers():
    want = set()
    for p in PROJECT.rglob("*.py"):
        want |= {(str(p.relative_to(PROJECT)), line, code) for line, code in expected(p.read_text())}
    return want


def _rows(stdout, base):
    out = set()
    for ln in stdout.splitlines():
        path, line, _col, rest = ln.split(":", 3)
        out.add((os.path.relpath(os.path.join(base, path), base), int(line), rest.split()[0]))
    return out


def test_cli_finds_cross_module_bugs(tmp_path):
    proj = tmp_path / "project"
    copy_tree(PROJECT, proj)
    r = run_cli("--no-cache", "--quiet", ".", cwd=proj)
    assert r.returncode == 1, r.stderr
    assert _rows(r.stdout, proj) == _markers()
    assert len(_markers()) >= 4


def test_flake8_finds_the_same(tmp_path):
    proj = tmp_path / "project"
    copy_tree(PROJECT, proj)
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "."], cwd=proj,
                       capture_output=True, text=True, timeout=300)
    assert _rows(r.stdout.replace("[*] ", ""), proj) == _markers()


def test_message_names_the_source_module_and_line():
    result = lint_paths([str(SRC / "pipeline.py")], Config(), project_root=str(PROJECT))
    (f,) = result.findings
    assert "to_torch() exports it with torch.from_dlpack()" in f.message
    assert "in Model.__init__() at" in f.message and "parallel/model.py:14" in f.message
    steps = [(os.path.basename(s.path), s.line) for s in f.provenance]
    assert steps[0] == ("model.py", 14) and steps[-1] == ("pipeline.py", 19)


def test_files_outside_the_linted_paths_are_read_not_reported():
    result = lint_paths([str(SRC / "pipeline.py")], Config(), project_root=str(PROJECT))
    assert {os.path.basename(f.path) for f in result.findings} == {"pipeline.py"}
    analysed = {os.path.basename(p) for p in result.analysed_paths}
    assert {"pipeline.py", "sharding.py", "model.py", "torch_bridge.py"} <= analysed


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_runtime_proof_on_eight_cpu_devices():
    env = dict(os.environ, **EIGHT_DEVICES)
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "runtime_probe.py"), str(SRC / "checks.py"),
                        str(PROJECT / "src")], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    outcome = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(outcome) == 9
    for case, res in outcome.items():
        if case.endswith("_fails"):
            assert not res["ok"] and "BufferError" in res["classes"], (case, res)
        else:
            assert res["ok"], (case, res)


def _names(result):
    return sorted(os.path.basename(os.path.dirname(p)) + "/" + os.path.basename(p) for p in result.analysed_paths)


def test_incremental_cache_reanalyses_only_dependents(tmp_path):
    proj = tmp_path / "project"
    copy_tree(PROJECT, proj)
    paths = [str(proj)]
    first = lint_paths(paths, Config(), use_cache=True)
    # parallel/__init__.py names no interop API and nothing needs its names: never parsed.
    assert _names(first) == ["export/__init__.py", "export/torch_bridge.py", "parallel/model.py",
                             "parallel/sharding.py", "shardproj/__init__.py", "shardproj/checks.py",
                             "shardproj/pipeline.py", "shardproj/report.py"]
    assert (proj / ".jaxinterop_lint_cache").is_dir()
    second = lint_paths(paths, Config(), use_cache=True)
    assert second.analysed_paths == []
    assert [(f.path, f.line, f.code) for f in second.findings] == [(f.path, f.line, f.code) for f in first.findings]
    sharding = proj / "src" / "shardproj" / "parallel" / "sharding.py"
    sharding.write_text(sharding.read_text() + "\n# an edit\n")
    third = lint_paths(paths, Config(), use_cache=True)
    # torch_bridge.py's finding is judged with the value pipeline.py passes it, which comes
    # from sharding.py (PLAN decision 1): it is judged again, with the files its callers use.
    assert _names(third) == ["export/torch_bridge.py", "parallel/model.py", "parallel/sharding.py",
                             "shardproj/checks.py", "shardproj/pipeline.py", "shardproj/report.py"]
    bridge = proj / "src" / "shardproj" / "export" / "torch_bridge.py"
    bridge.write_text(bridge.read_text().replace("return torch.from_dlpack(a)  # expect: JXI002\n\n\ndef to_torch_checked",
                                                 "return torch.from_numpy(np.asarray(a))\n\n\ndef to_torch_checked"))
    fourth = lint_paths(paths, Config(), use_cache=True)
    # export/__init__.py re-exports to_torch by reference: it is not analysed again.
    assert _names(fourth) == ["export/torch_bridge.py", "shardproj/checks.py", "shardproj/pipeline.py",
                              "shardproj/report.py"]
    assert not {"pipeline.py", "torch_bridge.py"} & {os.path.basename(f.path) for f in fourth.findings}
    assert lint_paths(paths, Config(), use_cache=True).analysed_paths == []


def test_no_cache_and_clean(tmp_path):
    proj = tmp_path / "project"
    copy_tree(PROJECT, proj)
    run_cli("--no-cache", ".", cwd=proj)
    assert not (proj / ".jaxinterop_lint_cache").exists()
    run_cli(".", cwd=proj)
    assert (proj / ".jaxinterop_lint_cache").exists()
    r = run_cli("clean", cwd=proj)
    assert r.returncode == 0 and not (proj / ".jaxinterop_lint_cache").exists()


def _write(root, files):
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def test_namespace_packages_import_forms_and_cycles(tmp_path):
    _write(tmp_path, {
        "setup.cfg": "",
        "ns/sub/make.py": """
            import jax
            from jax.sharding import NamedSharding, PartitionSpec as P
            def sharded(x, mesh):
                return jax.device_put(x, NamedSharding(mesh, P("x")))
        """,
        "ns/sub/a.py": """
            import ns.sub.make
            import ns.sub.b as bee
            import torch
            def f(x, m):
                return torch.from_dlpack(ns.sub.make.sharded(x, m))  # expect: JXI002
            def g(x):
                return bee.h(x)
        """,
        "ns/sub/b.py": """
            from . import a
            from .make import sharded as s
            import numpy as np
            def h(x):
                return np.from_dlpack(s(x, None))  # expect: JXI002
            def k(x):
                return a.g(x)
        """,
    })
    result = lint_paths([str(tmp_path)], Config(), use_cache=False)
    got = {(os.path.relpath(f.path, tmp_path), f.line, f.code) for f in result.findings}
    want = set()
    for p in tmp_path.rglob("*.py"):
        want |= {(str(p.relative_to(tmp_path)), line, code) for line, code in expected(p.read_text())}
    assert got == want and len(want) == 2


def test_project_root_override(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": "import torch\ndef to_torch(a):\n    return torch.from_dlpack(a)\n",
        "pkg/app/pyproject.toml": "",
        "pkg/app/main.py": ("import jax\nfrom pkg.helpers import to_torch\n"
                            "from jax.sharding import NamedSharding, PartitionSpec as P\n"
                            "y = jax.device_put(x, NamedSharding(m, P()))\nto_torch(y)\n"),
    })
    app = tmp_path / "pkg" / "app"
    assert run_cli("--no-cache", "main.py", cwd=app).returncode == 0   # root: pkg/app, no `pkg` there
    r = run_cli("--no-cache", "--project-root", str(tmp_path), "main.py", cwd=app)
    assert r.returncode == 1 and "main.py:5:1: JXI002 to_torch() cannot take `y`" in r.stdout
