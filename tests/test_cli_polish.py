"""One-line messages and machine-readable outputs of the command line (newuser report, F):
undecodable files, missing paths, no Python files, bad lists in the configuration,
--show-settings, --statistics in JSON, unlintable files in JSON/SARIF/github output, and
the unsafe fix next to a parameter called ``jax``.  Real subprocesses of the CLI and flake8."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema

from conftest import run_cli

SHARED_SCHEMA = Path("/work/shared/data/sarif-schema-2.1.0.json")
SCHEMA = SHARED_SCHEMA if SHARED_SCHEMA.exists() else \
    next(Path(__file__).resolve().parents[1].glob("fixtures/**/sarif-schema-2.1.0.json"))

FINDING = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
           "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
LATIN = FINDING.encode() + b"# caf\xe9\n"   # line 5, column 6: the stray latin-1 byte


def project(tmp_path: Path, files: dict) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(files.pop("pyproject.toml", ""))
    for name, data in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return tmp_path


def test_undecodable_file_names_the_line_and_flake8_agrees(tmp_path):
    root = project(tmp_path, {"latin.py": LATIN})
    proc = run_cli("--no-cache", "latin.py", cwd=root)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == "latin.py:5:6: error: cannot decode as utf-8: invalid continuation byte (byte 0xe9)"
    flake = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "latin.py"], cwd=root,
                           capture_output=True, text=True, timeout=300)
    assert flake.stdout.splitlines() == [
        "latin.py:5:6: JXI000 jaxinterop-lint cannot lint this file: cannot decode as utf-8: "
        "invalid continuation byte (byte 0xe9)"], flake.stdout
    # a coding cookie makes the same bytes valid (PEP 263): both front ends lint it
    root2 = project(tmp_path / "cookie", {"latin.py": b"# -*- coding: latin-1 -*-\n" + LATIN})
    assert "JXI002" in run_cli("--no-cache", "latin.py", cwd=root2).stdout
    flake = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "latin.py"], cwd=root2,
                           capture_output=True, text=True, timeout=300)
    assert "JXI002" in flake.stdout and "JXI000" not in flake.stdout


def test_missing_path_and_broken_symlink(tmp_path):
    root = project(tmp_path, {"good.py": FINDING})
    os.symlink("nowhere.py", root / "broken.py")
    proc = run_cli("--no-cache", "missing_dir/", "broken.py", "good.py", cwd=root)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert "missing_dir/: error: no such file or directory" in lines
    assert "broken.py: error: broken symlink (its target does not exist)" in lines
    assert "good.py:4:5: JXI002" in proc.stdout


def test_no_python_files_is_a_warning_with_ruffs_exit_status(tmp_path):
    root = project(tmp_path, {"empty/README.txt": "nothing"})
    proc = run_cli("--no-cache", "empty", cwd=root)
    assert proc.returncode == 0   # `ruff check emptydir`: "warning: No Python files found ...", 0
    assert "jaxinterop-lint: warning: no Python files found under the given paths" in proc.stderr.splitlines()


def test_a_list_with_a_wrong_item_names_it(tmp_path):
    root = project(tmp_path, {"pyproject.toml": "[tool.jaxinterop-lint]\nexclude = [1]\n", "a.py": "x = 1\n"})
    proc = run_cli("--no-cache", "a.py", cwd=root)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"jaxinterop-lint: error: {root / 'pyproject.toml'}: exclude: "
                                   "expected a list of strings, got a list containing 1 (int)")


def test_show_settings_prints_every_setting(tmp_path):
    root = project(tmp_path, {"pyproject.toml": (
        "[tool.jaxinterop-lint]\nextend-sources = ['mypkg.make_sharded']\n"
        "extend-sinks = {'mypkg.export' = 'dlpack'}\nextend-sanitizers = ['mypkg.gather']\n"
        "per-file-ignores = {'tests/*' = ['JXI002']}\n"), "a.py": "x = 1\n"})
    out = run_cli("--show-settings", "a.py", cwd=root).stdout.splitlines()
    assert "extend-sources: mypkg.make_sharded" in out
    assert "extend-sinks: mypkg.export = dlpack" in out
    assert "extend-sanitizers: mypkg.gather" in out
    assert any(line.startswith("per-file-ignores: ") and line.endswith("tests/* = JXI002") for line in out), out


def test_statistics_in_json(tmp_path):
    root = project(tmp_path, {"good.py": FINDING})
    proc = run_cli("--no-cache", "--statistics", "--output-format", "json", "good.py", cwd=root)
    assert json.loads(proc.stdout) == [{"code": "JXI002", "name": "multi-device-dlpack-export",
                                        "reported": 1, "noqa": 0, "baseline": 0}]


def test_unlintable_files_in_json_sarif_and_github(tmp_path):
    root = project(tmp_path, {"good.py": FINDING, "latin.py": LATIN, "bad.py": "import jax, torch\ny = torch.from_dlpack(jax.device_put(x))\ndef f(:\n"})
    args = ("--no-cache", "good.py", "latin.py", "bad.py", "missing.py")
    data = json.loads(run_cli(*args, "--output-format", "json", cwd=root).stdout)
    errors = {d["path"]: (d["line"], d["column"]) for d in data if d["code"] == "JXI000"}
    assert errors.pop("bad.py")[0] == 3, data
    assert errors == {"latin.py": (5, 6), "missing.py": (1, 1)}, data   # 1-based, as every finding
    assert [d["path"] for d in data if d["code"] == "JXI002"] == ["good.py"]
    sarif = json.loads(run_cli(*args, "--output-format", "sarif", cwd=root).stdout)
    jsonschema.validate(sarif, json.loads(SCHEMA.read_text()))
    invocation = sarif["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    notes = invocation["toolExecutionNotifications"]
    assert sorted(n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notes) == \
        ["bad.py", "latin.py", "missing.py"]
    assert all(n["level"] == "error" and n["message"]["text"].startswith("cannot lint this file: ") for n in notes)
    github = run_cli(*args, "--output-format", "github", cwd=root).stdout.splitlines()
    assert "::error file=latin.py,line=5,col=6,title=JXI000::cannot lint this file: cannot decode as utf-8: " \
           "invalid continuation byte (byte 0xe9)" in github
    assert "::error file=missing.py,title=JXI000::cannot lint this file: no such file or directory" in github
    assert any(line.startswith("::error file=good.py,line=4,col=5,title=JXI002::") for line in github)
    clean = json.loads(run_cli("--no-cache", "good.py", "--output-format", "sarif", cwd=root).stdout)
    assert clean["runs"][0]["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]


SHADOW = """\
import torch
from jax import device_put
import jax.numpy as jnp
from jax.sharding import NamedSharding


def f(mesh, spec):
    x = device_put(jnp.ones((8, 4)), NamedSharding(mesh, spec))
    return torch.from_dlpack(x)


def g(jax=None):
    return jax
"""


def test_a_parameter_named_jax_elsewhere_keeps_the_unsafe_fix(tmp_path):
    root = project(tmp_path, {"q.py": SHADOW})
    proc = run_cli("--no-cache", "--diff", "--unsafe-fixes", "q.py", cwd=root)
    assert "+import jax" in proc.stdout
    assert "+    return torch.from_dlpack(jax.device_put(x, jax.local_devices()[0]))" in proc.stdout
    # a module-level `jax` that is not the module does keep the fix out
    (root / "q.py").write_text(SHADOW + "\njax = None\n")
    proc = run_cli("--no-cache", "--diff", "--unsafe-fixes", "q.py", cwd=root)
    assert "+import jax" not in proc.stdout
    # and a parameter `jax` around the sink itself keeps it out there
    (root / "q.py").write_text(SHADOW.replace("def f(mesh, spec):", "def f(mesh, spec, jax=None):"))
    proc = run_cli("--no-cache", "--diff", "--unsafe-fixes", "q.py", cwd=root)
    assert "jax.local_devices" not in proc.stdout
