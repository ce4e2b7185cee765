"""flake8 on one file of a project (the editor's case, issue 16) without a cache never misses
what the command line reports for the same paths: a finding that needs a caller in another
file, or a callee module's summary; and what it judged is stored for the next save."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import run_cli

LIB = ("import jax\nimport torch\n\n\ndef to_torch(x):\n    return torch.from_dlpack(x)\n\n\n"
       "def place(x, sharding):\n    return jax.device_put(x, sharding)\n")
MAIN = ("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "from pkg.lib import to_torch\n\n\ndef main(x, mesh):\n"
        "    y = jax.device_put(x, NamedSharding(mesh, P('x')))\n    return to_torch(y)\n")
MAKE = ("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
        "def sharded(x, mesh):\n    return jax.device_put(x, NamedSharding(mesh, P('x')))\n")
USE = ("import torch\nfrom pkg.make import sharded\n\n\ndef run(x, mesh):\n"
       "    return torch.from_dlpack(sharded(x, mesh))\n")
SAME = LIB + ("\n\ndef caller(x, mesh):\n    from jax.sharding import NamedSharding, PartitionSpec as P\n"
              "    return to_torch(jax.device_put(x, NamedSharding(mesh, P('x'))))\n")


def _project(tmp_path):
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    for name, text in {"__init__": "", "lib": LIB, "main": MAIN, "make": MAKE, "use": USE, "same": SAME}.items():
        (root / "pkg" / f"{name}.py").write_text(text)
    return root


def _flake8(root, *paths):
    import shutil

    shutil.rmtree(root / ".jaxinterop_lint_cache", ignore_errors=True)     # no cache: the cold case
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", *paths], cwd=root,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return sorted(ln.replace("[*] ", "").replace("./", "") for ln in r.stdout.splitlines() if ln.strip())


def _cli(root, *paths):
    r = run_cli("--no-cache", "--output-format", "concise", "--quiet", *paths, cwd=root)
    assert r.returncode in (0, 1), r.stderr
    return sorted(ln for ln in r.stdout.splitlines() if ln.strip())


@pytest.mark.parametrize("paths", [
    ("pkg/lib.py",),                       # exports a parameter; its caller is not reported
    ("pkg/main.py",),                      # the caller alone: the finding is at its call
    ("pkg/lib.py", "pkg/main.py"),         # both: the finding is at the sink (a calling context)
    ("pkg/use.py",),                       # needs the callee module's summary
    ("pkg/same.py",),                      # a caller in the same file gives the context
])
def test_flake8_on_one_file_without_cache_reports_what_the_cli_reports(tmp_path, paths):
    root = _project(tmp_path)
    ours, theirs = _cli(root, *paths), _flake8(root, *paths)
    assert ours == theirs
    expected = {("pkg/lib.py",): [], ("pkg/main.py",): ["pkg/main.py:8"], ("pkg/lib.py", "pkg/main.py"): ["pkg/lib.py:6"],
                ("pkg/use.py",): ["pkg/use.py:6"], ("pkg/same.py",): ["pkg/same.py:6"]}[paths]
    assert [":".join(ln.split(":")[:2]) for ln in theirs] == expected
    assert all(" JXI002 " in ln for ln in theirs)


@pytest.fixture
def session_of(monkeypatch):
    """A fresh shared session of one file, as the flake8 plugin makes it (nothing saved)."""
    from jaxinterop_lint.pipeline import run

    monkeypatch.setattr(run, "_SHARED", {})
    monkeypatch.setattr(run, "_ROOTS", {})
    monkeypatch.setattr(run, "_save_at_exit", lambda session: None)

    def make(path, use_cache=False):
        from jaxinterop_lint.config import Config

        if use_cache:
            return run.shared_project(str(path), Config(), reported=[str(path)])
        s = run.Session(run._root_of(str(path)), Config(), use_cache=False)
        s.report_under([str(path)])
        return s
    return make


def test_one_file_without_a_stored_result_fills_the_cache_for_the_next_save(tmp_path, session_of, monkeypatch):
    from jaxinterop_lint.pipeline import run

    root = _project(tmp_path)
    lib = root / "pkg" / "lib.py"
    first = session_of(lib, use_cache=True)
    assert first.lint_text(LIB, str(lib)).findings == []
    first.save()
    monkeypatch.setattr(run, "_SHARED", {})
    second = session_of(lib, use_cache=True)
    assert second.lint_text(LIB, str(lib)).findings == []
    assert second._plan is None          # answered from the stored result, with no plan (_holds_alone)
