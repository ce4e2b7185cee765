"""flake8 on one file of a project (the editor's case, issue 16) without a cache: the file is
judged without libcst when it only exports parameters no reported caller fills
(:mod:`jaxinterop_lint.pipeline.quiet`), and never misses what the command line reports for
the same paths: a finding that needs a caller in another file, or a callee module's summary."""
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


def test_a_file_exporting_only_parameters_is_judged_without_libcst(tmp_path, session_of):
    from jaxinterop_lint.pipeline.analyse import PARSES

    root = _project(tmp_path)
    lib = root / "pkg" / "lib.py"
    session = session_of(lib)
    session.plan.reported.add(str(lib))
    assert session.plan.direct(str(lib))      # it can make a finding: analysed before issue 16's proof
    before = PARSES[str(lib)]
    result = session.lint_text(LIB, str(lib))
    assert result.findings == [] and result.error is None
    assert PARSES[str(lib)] == before and session.analysed == []     # no libcst parse, no analysis
    # the same file with a caller of the exporting function in it is analysed (and reported)
    same = root / "pkg" / "same.py"
    session = session_of(same)
    result = session.lint_text(SAME, str(same))
    assert [f.code for f in result.findings] == ["JXI002"] and PARSES[str(same)] >= 1


def test_the_one_file_proof_fills_the_cache_for_the_next_save(tmp_path, session_of, monkeypatch):
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


def _proved(text):
    from jaxinterop_lint.config import Config
    from jaxinterop_lint.pipeline.analyse import exports_only_parameters
    from jaxinterop_lint.pipeline.facts import words_for

    return exports_only_parameters(text, words_for(Config()).masking)


HEAD = "import jax\nimport torch\nimport cupy\n\n\n"


@pytest.mark.parametrize("body", [
    "def f(x):\n    return torch.from_dlpack(x)\n",
    "def f(x, stream=None):\n    return x.__dlpack__(stream=stream)\n",
    "def f(x):\n    if hasattr(x, '__dlpack__'):\n        return x.__dlpack__()\n    return memoryview(x)\n",
    "def f(x):\n    return cupy.asarray(x), x.__cuda_array_interface__\n",
    # ``jnp.asarray``: JAX's own asarray, though ``torch`` names a consumer of that word
    "import jax.numpy as jnp\n\ndef f(x, y):\n    z = jnp.asarray(y)\n    return x.__dlpack__(), z\n",
])
def test_exports_of_parameters_only_are_proved(body):
    assert _proved(HEAD + body)


@pytest.mark.parametrize("body", [
    "def f(x):\n    return torch.from_dlpack(x)\n\nf(jax.numpy.ones(3))\n",        # called in the file
    "def f(x):\n    return torch.from_dlpack(x)\n\ng = f\n",                          # named in the file
    "def f(x):\n    x = jax.device_put(x, s)\n    return torch.from_dlpack(x)\n",    # rebound
    "def f(x=jax.numpy.ones(3)):\n    return torch.from_dlpack(x)\n",               # a default
    "def f(x: jax.Array):\n    return torch.from_dlpack(x)\n",                      # annotated
    "@jax.jit\ndef f(x):\n    return torch.from_dlpack(x)\n",                        # decorated
    "def f(x):\n    return torch.from_dlpack(jax.device_put(x, s))\n",              # not a parameter
    "def f(x):\n    return torch.from_dlpack(x.reshape(2))\n",
    "def f(x):\n    return jax.device_put_replicated(x, devices)\n",                 # a removed API
    "def f(x):\n    return getattr(x, '__dlpack__')()\n",
    "def f(x):\n    return x.is_fully_replicated and torch.from_dlpack(x)\n",        # a guard word
    "def f(x):\n    def g():\n        return torch.from_dlpack(x)\n    return g()\n",   # nested scope
    "def f(x):\n    return [torch.from_dlpack(s) for s in x]\n",
    "def f(x):\n    step(x)\n    return torch.from_dlpack(x)\n\nstep = jax.jit(h, donate_argnums=0)\n",
    "y = torch.from_dlpack(jax.numpy.ones(3))\n",                                   # module level
    "class C:\n    def f(self, x):\n        return torch.from_dlpack(x)\n",
    "def f(x):\n    from torch.utils.dlpack import from_dlpack as fd\n    return fd(x)\n",
    "def f(buf):\n    return buf.__dlpack__(copy=True)\n\njax.ffi.buffer_callback(f)\n",
])
def test_anything_else_is_left_to_the_analysis(body):
    assert not _proved(HEAD + body)


def test_the_proof_is_never_used_with_other_files_reported_or_jxi009(tmp_path, session_of):
    root = _project(tmp_path)
    lib = str(root / "pkg" / "lib.py")
    session = session_of(lib)
    session.plan.reported.add(lib)
    assert session._alone(lib)
    session.plan.reported.add(str(root / "pkg" / "main.py"))
    assert not session._alone(lib)
    import dataclasses

    from jaxinterop_lint.config import Config
    from jaxinterop_lint.pipeline.run import Session

    with_009 = Session(str(root), dataclasses.replace(Config(), extend_select=("JXI009",)), use_cache=False)
    with_009.plan.reported.add(lib)
    assert "JXI009" in with_009.enabled and not with_009._alone(lib)


def test_the_proof_refuses_a_text_it_cannot_read():
    assert not _proved(HEAD + "def f(x):\n    return torch.from_dlpack(x\n")
