"""``jaxinterop-lint run`` / ``verify``, the sitecustomize start-up hook and the pytest plugin.

Commands run real Python children with real jax on 8 forced CPU devices; ``verify`` uses the
real static engine (``jaxinterop_lint.engine.lint_paths``).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_shim import REPO, read_lines, xla_env

from jaxinterop_lint import shim
from jaxinterop_lint.finding import Finding
from jaxinterop_lint.runtime_cli import classify, run_main, verify_main

pytestmark = pytest.mark.slow   # real jax and torch on 8 CPU devices (the quick tier leaves it out)

CASES = REPO / "fixtures" / "cases"   # the copy of ../shared/cases (test_fixtures_sync.py)
EXPECT = re.compile(r"#\s*expect:\s*(.*)$")
SINK = {"JXI001", "JXI002", "JXI003", "JXI004"}


DEPTH = REPO / "fixtures" / "cases-depth"   # issue 12: values with parts, generators, calling contexts


def runnable_files() -> list:
    """Every ``# runnable`` file of the repository's fixtures/ (the acceptance cases included);
    those of cases-depth are expected failures until the depth branches (issue 12) merge."""
    files = sorted(CASES.glob("*.py")) + sorted(p for p in (REPO / "fixtures").glob("**/*.py")
                                                  if CASES not in p.parents)
    files = [f for f in files if f.read_text().startswith("# runnable")]
    return files


def expected_sink_lines(path: Path) -> set[int]:
    """Lines whose ``# expect:`` marker names a JXI001-JXI004 code."""
    out = set()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        m = EXPECT.search(line)
        if m and SINK & {c.strip() for c in m.group(1).split(",")}:
            out.add(number)
    return out


@pytest.fixture
def jax_env(monkeypatch, tmp_path):
    """run_main's children inherit this process's environment: give them 8 CPU devices."""
    for key, value in xla_env().items():
        monkeypatch.setenv(key, value)
    for key in (shim.ENV_MODE, shim.ENV_REPORT):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, source: str) -> Path:
    """Write dedented ``source`` to ``path``."""
    path.write_text(textwrap.dedent(source))
    return path


FFI_DRIVER = """
import importlib.util, sys
import jax, jax.numpy as jnp
spec = importlib.util.spec_from_file_location("case", sys.argv[1])
case = importlib.util.module_from_spec(spec)
spec.loader.exec_module(case)
try:
    case.build(case.double_copying)(jnp.arange(4.0, dtype=jnp.float32)).block_until_ready()
except Exception as exc:
    print(type(exc).__name__)
"""


@pytest.mark.parametrize("case", runnable_files() + ["double_copying"], ids=lambda p: getattr(p, "name", p))
def test_runnable_cases_are_confirmed_by_verify(jax_env, capsys, case):
    report = jax_env / "hits.jsonl"
    if case == "double_copying":  # the copying FFI callback of buffer_callback_copy.py
        case = CASES / "buffer_callback_copy.py"
        command = [sys.executable, str(write(jax_env / "driver.py", FFI_DRIVER)), str(case)]
    else:
        command = [sys.executable, str(case)]
    status = run_main(["--mode", "record", "--report", str(report), "--", *command])
    assert status in (0, 1)  # sharded_to_torch.py dies of the real BufferError at its sink
    hits = read_lines(report) if report.exists() else []
    capsys.readouterr()
    assert verify_main(["--report", str(report), "--output-format", "json", str(case)]) == 0
    result = json.loads(capsys.readouterr().out)
    confirmed = {c["line"] for c in result["confirmed"]}
    handled = {c["line"] for c in result["handled"]}
    reached = {h["line"] for h in hits if h["path"] == str(case)}
    assert result["missed"] == [] and reached == confirmed | handled
    assert reached & expected_sink_lines(case) <= confirmed
    if case.name != "buffer_callback_copy.py" or command[1].endswith("driver.py"):
        assert confirmed, "the run must reach at least one sink of this case"


CASE_DRIVER = """
import importlib.util, sys
for number, path in enumerate(sys.argv[1:]):
    spec = importlib.util.spec_from_file_location(f"fixture{number}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in sorted(n for n in vars(module) if n.startswith("case_")):
        try:
            getattr(module, name)()
        except Exception:
            pass
"""


def test_runtime_fixtures_are_confirmed_by_verify(jax_env, capsys):
    """Every ``case_*`` function of fixtures/runtime runs under the shim; nothing is missed."""
    fixtures = sorted((REPO / "fixtures" / "runtime").glob("*.py"))
    assert fixtures, "fixtures/runtime has the ground-truth programs"
    driver = write(jax_env / "driver.py", CASE_DRIVER)
    report = jax_env / "hits.jsonl"
    assert run_main(["--report", str(report), "--", sys.executable, str(driver), *map(str, fixtures)]) == 0
    capsys.readouterr()
    status = verify_main(["--report", str(report), "--output-format", "json", *map(str, fixtures)])
    result = json.loads(capsys.readouterr().out)
    assert status == 0 and result["missed"] == [] and result["outside"] == []
    confirmed = {(c["path"], c["line"]) for c in result["confirmed"]}
    reached = {(h["path"], h["line"]) for h in read_lines(report)}
    expected = {(str(f), line) for f in fixtures for line in expected_sink_lines(f)}
    assert reached & expected <= confirmed
    assert len(confirmed) >= 15


def test_run_covers_every_python_child_and_merges_their_files(jax_env):
    child = write(jax_env / "child.py", """
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import NamedSharding, PartitionSpec as P
        y = jax.device_put(jnp.arange(16.0), NamedSharding(jax.make_mesh((8,), ("d",)), P("d")))
        for _ in range(5):
            try:
                np.from_dlpack(y)
            except BufferError:
                pass
    """)
    parent = write(jax_env / "parent.py", f"""
        import subprocess, sys
        procs = [subprocess.Popen([sys.executable, {str(child)!r}]) for _ in range(3)]
        assert all(p.wait() == 0 for p in procs)
        subprocess.run([sys.executable, {str(child)!r}], check=True)
    """)
    report = jax_env / "hits.jsonl"
    report.write_text('{"stale": true}\n')
    assert run_main(["--report", str(report), "--", sys.executable, str(parent)]) == 0
    hits = read_lines(report)
    assert len(hits) == 20 and len({h["pid"] for h in hits}) == 4
    assert {(h["path"], h["code"], h["consumer"]) for h in hits} == {(str(child), "JXI002", "numpy.from_dlpack")}
    assert list(jax_env.glob("hits.jsonl.*")) == []


def test_run_raise_mode_and_exit_status(jax_env, capfd):
    script = write(jax_env / "prog.py", """
        import sys
        import jax, jax.numpy as jnp, torch
        from jax.sharding import NamedSharding, PartitionSpec as P
        y = jax.device_put(jnp.arange(16.0), NamedSharding(jax.make_mesh((8,), ("d",)), P()))
        try:
            torch.as_tensor(y)
        except BufferError as e:
            print("caught", e.jaxinterop_code, e.jaxinterop_site[1])
        sys.exit(3)
    """)
    assert run_main(["--mode", "raise", "--", sys.executable, str(script)]) == 3
    assert "caught JXI002 7" in capfd.readouterr().out
    assert not (jax_env / shim.DEFAULT_REPORT).exists()


def test_run_usage_errors(jax_env, capfd):
    assert run_main(["--report", str(jax_env / "no" / "hits.jsonl"), "--", sys.executable, "-c", "1"]) == 2
    assert "cannot write the report file" in capfd.readouterr().err
    assert run_main(["--mode", "record"]) == 2
    assert run_main(["--", str(jax_env / "no-such-program")]) == 127


def _python(env: dict, code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_sitecustomize_installs_from_env_and_chains(tmp_path):
    other = tmp_path / "other-site"
    other.mkdir()
    write(other / "sitecustomize.py", "import builtins\nbuiltins.OTHER_SITE_RAN = True\n")
    env = xla_env({"PYTHONPATH": os.pathsep.join([shim.site_dir(), str(other), str(REPO)])})
    off = _python(env, """
        import sys, builtins
        from jaxinterop_lint import shim
        print(shim.is_installed(), "jax" in sys.modules, getattr(builtins, "OTHER_SITE_RAN", False))
    """, tmp_path)
    assert off.stdout.split() == ["False", "False", "True"], off.stderr
    env.update({shim.ENV_MODE: "record", shim.ENV_REPORT: str(tmp_path / "hits.jsonl")})
    on = _python(env, """
        import os, jax, jax.numpy as jnp
        from jax.sharding import NamedSharding, PartitionSpec as P
        y = jax.device_put(jnp.arange(8.0), NamedSharding(jax.make_mesh((8,), ("d",)), P("d")))
        try:
            y.__dlpack__()
        except BufferError:
            print(os.getpid())
    """, tmp_path)
    pid = int(on.stdout.split()[-1])
    assert [h["consumer"] for h in read_lines(tmp_path / f"hits.jsonl.{pid}")] == ["jax.Array.__dlpack__"]
    env[shim.ENV_REPORT] = str(tmp_path / "missing" / "hits.jsonl")
    bad = _python(env, "print('ran')", tmp_path)
    assert bad.returncode == 2 and "cannot write the report file" in bad.stderr and "ran" not in bad.stdout


def _finding(path: str, line: int, code: str, **extra) -> Finding:
    return Finding(path=path, line=line, column=0, end_line=line, end_column=1, code=code, name="n",
                   message="m", extra=extra)


def test_classify_categories(tmp_path):
    src = str(tmp_path / "a.py")
    hits = [{"path": src, "line": 5, "code": "JXI002", "consumer": "torch.from_dlpack"},
            {"path": src, "line": 5, "code": "JXI002", "consumer": "torch.from_dlpack"},
            {"path": src, "line": 9, "code": "JXI002", "consumer": "torch.from_dlpack"},
            {"path": src, "line": 12, "code": "JXI003", "consumer": "jax.Array.unsafe_buffer_pointer"},
            {"path": src, "line": 14, "code": "JXI002", "consumer": "numpy.from_dlpack"},
            {"path": "/elsewhere/lib.py", "line": 3, "code": "JXI002", "consumer": "numpy.from_dlpack"},
            {"path": "<string>", "line": 1, "code": "JXI002", "consumer": "numpy.from_dlpack"}]
    findings = [_finding(src, 5, "JXI002"), _finding(src, 10, "JXI007", sink_line=9), _finding(src, 20, "JXI001"),
                _finding(src, 2, "JXI005")]
    v = classify(hits, findings, [(src, 14)], [str(tmp_path)])
    assert [(s.line, s.count, codes) for s, codes in v.confirmed] == [(5, 2, ["JXI002"]), (9, 1, ["JXI007"])]
    assert [s.line for s in v.missed] == [12] and [s.line for s in v.handled] == [14]
    assert [(f.line, f.code) for f in v.not_exercised] == [(20, "JXI001")]
    assert [s.path for s in v.outside] == ["/elsewhere/lib.py"]


def test_verify_exits_1_on_a_missed_hit_and_2_on_no_report(tmp_path, capsys):
    src = write(tmp_path / "plain.py", "import numpy as np\n\n\ndef f(y):\n    return np.asarray(y)\n")
    report = tmp_path / "hits.jsonl"
    report.write_text(json.dumps({"path": str(src), "line": 5, "code": "JXI002", "consumer": "x"}) + "\n")
    assert verify_main(["--report", str(report), str(src)]) == 1
    captured = capsys.readouterr()
    assert f"{src}:5: JXI002" in captured.out and "0 confirmed, 1 missed" in captured.out
    report.write_text(report.read_text() + "not json\n")  # corrupt: exit 2 (tests/test_shim_trust.py)
    assert verify_main(["--report", str(report), str(src)]) == 2
    assert "not a JSON object" in capsys.readouterr().err
    assert verify_main(["--report", str(tmp_path / "nothing.jsonl")]) == 2


PLUGIN_TEST = """
import sys
import pytest

def test_export():
    import jax, jax.numpy as jnp, torch
    from jax.sharding import NamedSharding, PartitionSpec as P
    y = jax.device_put(jnp.arange(16.0), NamedSharding(jax.make_mesh((8,), ("d",)), P("d")))
    with pytest.raises(BufferError) as info:
        torch.from_dlpack(y)
    if sys.argv[-1] == "raise" or "--jaxinterop-shim=raise" in sys.argv:
        assert info.value.jaxinterop_code == "JXI002"

def test_inert_without_option():
    from jaxinterop_lint import shim
    if not any(a.startswith("--jaxinterop-shim") for a in sys.argv):
        assert not shim.is_installed()
"""


@pytest.mark.parametrize("mode", [None, "raise", "record"])
def test_pytest_plugin(tmp_path, mode):
    write(tmp_path / "test_interop.py", PLUGIN_TEST)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "jaxinterop_lint.pytest_plugin", "-p", "no:cacheprovider",
            "test_interop.py"]
    if mode:
        args += [f"--jaxinterop-shim={mode}", "--jaxinterop-report", "r.jsonl"]
    env = xla_env({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if mode is None:
        assert "jaxinterop shim" not in proc.stdout and not (tmp_path / "r.jsonl").exists()
        return
    assert f"jaxinterop shim ({mode}): 1 hit(s)" in proc.stdout
    hits = read_lines(tmp_path / "r.jsonl")
    line = 1 + textwrap.dedent(PLUGIN_TEST).splitlines().index("        torch.from_dlpack(y)")
    assert [(h["line"], h["code"], h["function"]) for h in hits] == [(line, "JXI002", "test_export")]
