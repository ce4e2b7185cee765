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


def _chain(root, links: int = 20):
    """``pkg/use.py`` exports what ``f0`` returns, and ``f0`` ... ``f{links}`` hand it on
    through ``links`` modules: the decision about ``use.py`` reads more files than a result
    keeps as its own dependencies (``MAX_PLAN_DEPS``), so it is stored with an epoch."""
    for i in range(links):
        (root / "pkg" / f"m{i}.py").write_text(f"from pkg.m{i + 1} import f{i + 1}\n\n\ndef f{i}(x):\n"
                                               f"    return f{i + 1}(x)\n")
    (root / "pkg" / f"m{links}.py").write_text(f"def f{links}(x):\n    return x\n")
    use = root / "pkg" / "use.py"
    use.write_text("import torch\nfrom pkg.m0 import f0\n\n\ndef run(x):\n    return torch.from_dlpack(f0(x))\n")
    return use


def test_one_file_whose_plan_reads_much_of_the_project_is_stored_for_the_next_save(tmp_path, session_of, monkeypatch):
    """Issue 16: flake8 on one file of transformers before any command-line run planned
    again on every save (1.1 s against flake8's 0.2 s): a decision that read more than
    ``MAX_PLAN_DEPS`` files was kept only by a whole-project run's epoch.  The editor's
    run now stores one; an edit of a file the plan read (a JAX source at the end of the
    chain) makes the next save plan again and report the export."""
    from jaxinterop_lint.pipeline import results_store, run

    root = _project(tmp_path)
    use = _chain(root, links=results_store.MAX_PLAN_DEPS + 4)
    text = use.read_text()
    first = session_of(use, use_cache=True)
    assert first.lint_text(text, str(use)).findings == []
    assert first.plan.reach_asked and first.plan.consulted(str(use), results_store.MAX_PLAN_DEPS) is None
    first.save()
    monkeypatch.setattr(run, "_SHARED", {})
    second = session_of(use, use_cache=True)
    assert second.lint_text(text, str(use)).findings == []
    assert second._plan is None          # the stored result and its epoch hold: no plan
    last = root / "pkg" / f"m{results_store.MAX_PLAN_DEPS + 4}.py"
    last.write_text("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
                    f"def f{results_store.MAX_PLAN_DEPS + 4}(x):\n"
                    "    mesh = jax.make_mesh((len(jax.devices()),), ('x',))\n"
                    "    return jax.device_put(x, NamedSharding(mesh, P('x')))\n")
    monkeypatch.setattr(run, "_SHARED", {})
    third = session_of(use, use_cache=True)
    found = third.lint_text(text, str(use)).findings
    assert [(f.code, f.line) for f in found] == [("JXI002", 6)]
    assert third._plan is not None
