"""The runtime shim where it met other people's programs (issue 13 "The shim", issue 15's
shim items): a foreign interpreter under ``jaxinterop-lint run`` gets no package of the
linter's environment; a forked child whose report cannot be opened, a program that closes the
report's descriptor, and pickled consumer functions all behave as without the shim;
``verify`` refuses a corrupt report (exit 2); ``JAXINTEROP_SHIM`` acts on its own once the
start-up hook is enabled; each recording process writes its own file; a report without any
hit says why that usually happens.

Every JAX-using check runs in a subprocess with 8 forced CPU devices (real jax, torch, numpy).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from test_shim import REPO, last_json, read_lines, run_script, xla_env

from jaxinterop_lint import shim
from jaxinterop_lint.runtime_cli import verify_main
from jaxinterop_lint.shim import startup
from jaxinterop_lint.shim.report import read_hits

SHARDED = """
import json, os, sys
import jax, jax.numpy as jnp, numpy as np, torch
from jax.sharding import NamedSharding, PartitionSpec as P
from jaxinterop_lint import shim
y = jax.device_put(jnp.arange(16.0), NamedSharding(jax.make_mesh((8,), ("d",)), P("d")))

def export():
    try:
        torch.from_dlpack(y)
    except Exception as exc:
        return type(exc).__name__
    return "no error"
"""


def program(body: str) -> str:
    """A program: the sharded array and ``export()`` of :data:`SHARDED`, then ``body``."""
    return SHARDED + textwrap.dedent(body)


def foreign_venv(tmp_path: Path) -> Path:
    """A virtual environment of its own, without this one's packages (jaxinterop_lint, jax...)."""
    env = tmp_path / "foreign"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=300)
    return env / "bin" / "python"


def test_a_foreign_interpreter_gets_the_shim_and_nothing_else_of_the_linters_environment(tmp_path):
    """As installed from a wheel: the package sits in a site-packages folder among other
    packages (here a stand-in called ``linters_own_dependency``)."""
    site = tmp_path / "linter-site-packages"
    shutil.copytree(REPO / "jaxinterop_lint", site / "jaxinterop_lint",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "linters_own_dependency.py").write_text("")
    python = foreign_venv(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAXINTEROP_", "PYTHON"))}
    env.update({"PYTHONPATH": str(site / "jaxinterop_lint" / "shim" / "_site"), shim.ENV_MODE: "record",
                shim.ENV_REPORT: str(tmp_path / "hits.jsonl")})
    code = textwrap.dedent("""
        import importlib.util, json, sys
        from jaxinterop_lint import shim
        print(json.dumps({"installed": shim.is_installed(), "from": shim.__file__,
                          "dependency": importlib.util.find_spec("linters_own_dependency") is not None,
                          "on_path": [p for p in sys.path if "linter-site-packages" in p and "_site" not in p]}))
        """)
    proc = subprocess.run([str(python), "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc)
    assert out["installed"] is True and out["from"].startswith(str(site))
    assert out["dependency"] is False and out["on_path"] == []


def test_run_gives_a_foreign_interpreter_none_of_the_checkout(tmp_path, monkeypatch):
    """Through the real ``jaxinterop-lint run`` (here the linter is this checkout: its root
    holds ``scripts/`` and ``tests/``, which must not become importable in the program)."""
    python = foreign_venv(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = ("import importlib.util, json; from jaxinterop_lint import shim; "
            "print(json.dumps([shim.is_installed(), importlib.util.find_spec('scripts') is None, "
            "importlib.util.find_spec('tests') is None]))")
    proc = subprocess.run([sys.executable, "-m", "jaxinterop_lint", "run", "--report", "hits.jsonl", "--",
                           str(python), "-c", code], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc) == [True, True, True]


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_a_forked_child_whose_report_cannot_be_opened_never_raises_from_the_users_call(tmp_path):
    (tmp_path / "d").mkdir()
    proc, _ = run_script(tmp_path, program("""
        shim.install("record", "d/hits.jsonl")
        os.unlink("d/hits.jsonl")
        os.rmdir("d")                       # the child's own d/hits.jsonl.<pid> cannot be created
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.write(w, json.dumps([export(), export()]).encode())
            os._exit(0)
        os.close(w)
        child = json.loads(os.read(r, 1000).decode())
        os.waitpid(pid, 0)
        print(json.dumps({"child": child, "parent": export()}))
        """))
    out = last_json(proc)
    assert out == {"child": ["BufferError", "BufferError"], "parent": "BufferError"}
    notes = [line for line in proc.stderr.splitlines() if "jaxinterop shim" in line]
    assert len(notes) == 1 and "records nothing more" in notes[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_closing_the_reports_descriptor_never_sends_hits_into_the_programs_files(tmp_path):
    proc, _ = run_script(tmp_path, program("""
        shim.install("record", "hits.jsonl")
        report = os.path.realpath("hits.jsonl")
        fd = next(int(n) for n in os.listdir("/proc/self/fd")
                  if os.path.realpath(f"/proc/self/fd/{n}") == report)
        os.close(fd)                        # as os.closerange() or a daemonizing library does
        mine = os.open("mine.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        assert mine == fd                   # the program's own file now has that number
        print(json.dumps([export(), export()]))
        os.write(mine, b"the program's own data\\n")
        """))
    assert last_json(proc) == ["BufferError", "BufferError"]
    assert (tmp_path / "mine.txt").read_text() == "the program's own data\n"
    assert [h["consumer"] for h in read_lines(tmp_path / "hits.jsonl")] == ["torch.from_dlpack"] * 2


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_patched_functions_stay_picklable(tmp_path):
    proc, _ = run_script(tmp_path, program("""
        import functools, pickle
        import torch.utils.dlpack, jax.dlpack
        from jax._src.array import ArrayImpl
        names = ["torch.from_dlpack", "torch.as_tensor", "torch.tensor", "torch.asarray", "torch.frombuffer",
                 "torch.utils.dlpack.from_dlpack", "np.from_dlpack", "jax.dlpack.from_dlpack",
                 "jnp.from_dlpack", "ArrayImpl.__dlpack__", "ArrayImpl.__dlpack_device__",
                 "ArrayImpl.unsafe_buffer_pointer"]
        originals = {n: eval(n) for n in names}
        shim.install("raise")
        patched = {n: eval(n) for n in names}
        out = {"patched": sorted(n for n in names if patched[n] is not originals[n])}
        blobs = {}
        for n in names:
            try:
                blobs[n] = pickle.dumps(patched[n])
                out[n] = pickle.loads(blobs[n]) is patched[n]
            except Exception as exc:
                out[n] = repr(exc)
        out["partial"] = pickle.loads(pickle.dumps(functools.partial(torch.as_tensor, dtype=torch.float32))).func \\
            is torch.as_tensor
        shim.uninstall()
        out["after"] = all(pickle.loads(b) is originals[n] for n, b in blobs.items())
        print(json.dumps(out))
        """))
    out = last_json(proc)
    assert len(out.pop("patched")) == 12
    assert out == {**{k: True for k in out}}, out


@pytest.mark.parametrize("content,reason", [
    (b'{"path": "/a.py", "line": 3, "code": "JXI002", "consumer": "x"}\n\xff\xfe garbage\n', "not UTF-8"),
    (b'{"path": "/a.py", "line": 3, "code": "JXI002", "consumer": "x"}\n{"path": "/a.py", "li', "not a JSON object"),
    (b'[1, 2, 3]\n', "not a JSON object"),
    (b'{"path": "/a.py", "line": "3", "code": "JXI002", "consumer": "x"}\n', "not a hit record"),
])
def test_verify_refuses_a_corrupt_report(tmp_path, capsys, content, reason):
    src = tmp_path / "a.py"
    src.write_text("import numpy as np\n\n\ndef f(y):\n    return np.from_dlpack(y)\n")
    report = tmp_path / "hits.jsonl"
    report.write_bytes(content)
    assert verify_main(["--report", str(report), str(src)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and reason in err and str(report) in err and "Traceback" not in err, err


def test_verify_explains_a_report_without_any_hit(tmp_path, capsys):
    src = tmp_path / "a.py"
    src.write_text("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
                   "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
    report = tmp_path / "hits.jsonl"
    report.write_text("")
    assert verify_main(["--report", str(report), str(src)]) == 0
    captured = capsys.readouterr()
    assert "1 not exercised" in captured.out
    assert "XLA_FLAGS=--xla_force_host_platform_device_count=8" in captured.err


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_each_recording_process_writes_its_own_file(tmp_path):
    """Two independent processes that both install(report=PATH): one writes PATH, the other
    PATH.<pid>; the reader sees every hit."""
    script = tmp_path / "writer.py"
    script.write_text(program("""
        import time
        shim.install("record", sys.argv[1])
        export()
        open(f"ready.{os.getpid()}", "w").close()
        while len([n for n in os.listdir(".") if n.startswith("ready.")]) < 2:
            time.sleep(0.05)                # both are recording at the same time
        export()
        print(os.getpid())
        """))
    procs = [subprocess.Popen([sys.executable, str(script), "shared.jsonl"], cwd=tmp_path, env=xla_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    pids = set()
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        pids.add(int(out.split()[-1]))
    files = sorted(p.name for p in tmp_path.glob("shared.jsonl*"))
    assert len(files) == 2, files
    by_file = [{h["pid"] for h in read_lines(tmp_path / name)} for name in files]
    assert all(len(owners) == 1 for owners in by_file) and set().union(*by_file) == pids
    assert len(read_hits(str(tmp_path / "shared.jsonl"))) == 4


# -- JAXINTEROP_SHIM on its own: the start-up hook ---------------------------------------------
def bridged_venv(tmp_path: Path) -> tuple[Path, Path]:
    """A fresh environment that sees this one's packages (jax, torch, jaxinterop_lint) through
    a .pth file, as if they were installed in it; returns (python, its site-packages)."""
    python = foreign_venv(tmp_path)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    ours = sysconfig.get_paths()["purelib"]
    (site / "aaa_bridge.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    return python, site


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_jaxinterop_shim_alone_acts_once_the_start_up_hook_is_enabled(tmp_path):
    python, site = bridged_venv(tmp_path)
    prog = tmp_path / "prog.py"
    prog.write_text(program("""
        error = export()
        print(json.dumps([shim.is_installed(), error]))
        """))
    env = {k: v for k, v in xla_env().items() if k != "PYTHONPATH"}

    def run(**extra):
        proc = subprocess.run([str(python), str(prog)], cwd=tmp_path, env=dict(env, **extra), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return last_json(proc)

    assert run(JAXINTEROP_SHIM="raise") == [False, "BufferError"]  # no hook yet: nothing happens
    enabled = subprocess.run([str(python), "-m", "jaxinterop_lint.shim.startup", "enable"], capture_output=True,
                             text=True, timeout=300)
    assert enabled.returncode == 0 and (site / startup.PTH_NAME).is_file(), enabled.stderr
    assert run() == [False, "BufferError"]                          # enabled, but not asked for
    assert run(JAXINTEROP_SHIM="off") == [False, "BufferError"]
    assert run(JAXINTEROP_SHIM="raise") == [True, "BufferError"]
    out = run(JAXINTEROP_SHIM="record", JAXINTEROP_SHIM_REPORT=str(tmp_path / "hits.jsonl"))
    assert out == [True, "BufferError"]
    assert [h["consumer"] for h in read_hits(str(tmp_path / "hits.jsonl"))] == ["torch.from_dlpack"]
    bad = subprocess.run([str(python), str(prog)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=dict(env, JAXINTEROP_SHIM="record", JAXINTEROP_SHIM_REPORT=str(tmp_path / "no" / "x")))
    assert bad.returncode == 2 and "cannot write the report file" in bad.stderr and bad.stdout == ""
    subprocess.run([str(python), "-m", "jaxinterop_lint.shim.startup", "disable"], check=True, timeout=300)
    assert run(JAXINTEROP_SHIM="raise") == [False, "BufferError"]


def test_the_readme_says_where_the_shim_variables_act():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "python -m jaxinterop_lint.shim.startup enable" in readme
    assert "--xla_force_host_platform_device_count=8" in readme.split("## Runtime shim")[1].split("\n## ")[0]
