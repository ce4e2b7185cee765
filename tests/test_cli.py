"""The command line: discovery, selection, formats, noqa, exit codes (real subprocesses)."""
from __future__ import annotations

import json

from conftest import ROOT, run_cli

BAD = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
       "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
GOOD = "import torch\nimport numpy as np\nt = torch.from_numpy(np.ones(3))\n"
LIB = "import jax, torch\ndef f(x: jax.Array):\n    return torch.from_dlpack(x)\n"


def write(tmp_path, files):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_exit_codes_and_concise_format(tmp_path):
    write(tmp_path, {"bad.py": BAD, "good.py": GOOD})
    r = run_cli("bad.py", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.startswith("bad.py:5:5: JXI002 torch.from_dlpack() cannot export `y`")
    assert run_cli("good.py", cwd=tmp_path).returncode == 0
    assert run_cli("--select", "JXI999", "good.py", cwd=tmp_path).returncode == 2


def test_default_path_is_current_folder_and_discovery_skips(tmp_path):
    write(tmp_path, {"pkg/a.py": BAD, ".venv/lib/x.py": BAD, "build/b.py": BAD, "dist/c.py": BAD,
                     ".git/d.py": BAD, "env1/pyvenv.cfg": "", "env1/e.py": BAD, "skipme/f.py": BAD,
                     "notes.txt": BAD})
    r = run_cli(cwd=tmp_path)
    # Paths print as given: the current folder's files without a ./ prefix (issue 15).
    assert [ln.split(":")[0] for ln in r.stdout.splitlines()] == ["pkg/a.py", "skipme/f.py"]
    r = run_cli(".", "--extend-exclude", "skipme,pkg/a.py", cwd=tmp_path)
    assert r.stdout == "" and r.returncode == 0
    r = run_cli(".", "--exclude", "pkg", cwd=tmp_path)
    rows = [ln.split(":")[0] for ln in r.stdout.splitlines()]
    assert "skipme/f.py" in rows and "build/b.py" in rows and "pkg/a.py" not in rows


def test_select_ignore_extend_select(tmp_path):
    write(tmp_path, {"bad.py": BAD, "lib.py": LIB})
    assert run_cli("--ignore", "JXI002", "bad.py", cwd=tmp_path).returncode == 0
    assert run_cli("--select", "JXI001,JXI003", "bad.py", cwd=tmp_path).returncode == 0
    assert run_cli("--select", "JXI", "bad.py", cwd=tmp_path).returncode == 1
    assert run_cli("lib.py", cwd=tmp_path).returncode == 0
    r = run_cli("--extend-select", "JXI009", "lib.py", cwd=tmp_path)
    assert r.returncode == 1 and "JXI009" in r.stdout


def test_noqa(tmp_path):
    write(tmp_path, {"a.py": BAD.replace("from_dlpack(y)", "from_dlpack(y)  # noqa"),
                     "b.py": BAD.replace("from_dlpack(y)", "from_dlpack(y)  # noqa: JXI002"),
                     "c.py": BAD.replace("from_dlpack(y)", "from_dlpack(y)  # noqa: JXI001")})
    assert run_cli("a.py", "b.py", cwd=tmp_path).returncode == 0
    assert run_cli("c.py", cwd=tmp_path).returncode == 1


def test_json_format(tmp_path):
    write(tmp_path, {"bad.py": BAD})
    r = run_cli("--output-format", "json", "bad.py", cwd=tmp_path)
    (f,) = json.loads(r.stdout)
    assert (f["path"], f["line"], f["column"], f["code"], f["name"]) == \
        ("bad.py", 5, 5, "JXI002", "multi-device-dlpack-export")
    assert f["end_line"] == 5 and f["end_column"] == 25
    assert f["provenance"][0]["line"] == 4 and "NamedSharding" in f["provenance"][0]["description"]
    assert "fix" in f


def test_full_format(tmp_path):
    write(tmp_path, {"bad.py": BAD})
    r = run_cli("--output-format", "full", "bad.py", cwd=tmp_path)
    assert "t = torch.from_dlpack(y)" in r.stdout
    assert "    ^^^^^^^^^^^^^^^^^^^^" in r.stdout
    assert "provenance:" in r.stdout and "bad.py:4: jax.device_put with NamedSharding" in r.stdout
    assert "docs/rules/JXI002.md" in r.stdout


def test_unparsable_file_is_reported_and_others_still_linted(tmp_path):
    # A file that JAX code cannot reach is never parsed (issue 16), so the broken one names
    # a consumer and a JAX source.
    write(tmp_path, {"broken.py": "import torch, jax\ndef f(:\n    return torch.from_dlpack(jax.device_put(x))\n",
                     "bad.py": BAD,
                     "never_parsed.py": "def g(:\n    pass\n"})
    r = run_cli(".", cwd=tmp_path)
    assert r.returncode == 2
    assert "JXI002" in r.stdout
    assert "broken.py:2:7: error: syntax error: invalid syntax" in r.stderr
    assert "never_parsed.py" not in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_path_is_an_error(tmp_path):
    r = run_cli("nope.py", cwd=tmp_path)
    assert r.returncode == 2 and "nope.py: error: no such file or directory" in r.stderr.splitlines()


def test_module_and_console_script_agree(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    write(tmp_path, {"bad.py": BAD})
    exe = Path(sys.executable).parent / "jaxinterop-lint"
    assert exe.exists(), "the console script must be installed beside the interpreter"
    a = subprocess.run([str(exe), "bad.py"], cwd=tmp_path, capture_output=True, text=True)
    b = run_cli("bad.py", cwd=tmp_path)
    assert a.stdout == b.stdout and a.returncode == b.returncode == 1


def test_jobs_give_the_same_result(tmp_path):
    files = {f"m{i}.py": BAD for i in range(12)}
    write(tmp_path, files)
    one = run_cli("--jobs", "1", ".", cwd=tmp_path)
    two = run_cli("--jobs", "2", ".", cwd=tmp_path)
    assert one.stdout == two.stdout and one.stdout.count("JXI002") == 12


def test_examples_project_findings():
    r = run_cli("--output-format", "concise", str(ROOT / "examples"))
    assert r.returncode == 1
    found = sorted((ln.split(":")[0].split("examples/")[1], int(ln.split(":")[1]), ln.split()[1])
                   for ln in r.stdout.splitlines())
    from markers import expected

    want = []
    for p in sorted((ROOT / "examples").rglob("*.py")):
        want += [(str(p.relative_to(ROOT / "examples")), line, code) for line, code in expected(p.read_text())]
    assert found == sorted(want)
