"""flake8 runs the same engine: same findings, noqa, per-file-ignores and --jobs work."""
from __future__ import annotations

import subprocess
import sys

from conftest import CASES, ROOT, run_cli


def flake8(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "flake8", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _rows(text):
    return sorted(ln for ln in text.splitlines() if ln.strip())


def test_flake8_and_cli_agree_on_examples_and_cases():
    for folder in (ROOT / "examples", CASES):
        ours = run_cli("--output-format", "concise", "--quiet", folder)
        theirs = flake8("--select=JXI", folder)
        assert _rows(ours.stdout) == _rows(theirs.stdout.replace("[*] ", "")), folder
        assert theirs.returncode == 1


def test_flake8_noqa_per_file_ignores_and_jobs(tmp_path):
    bad = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
           "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
    (tmp_path / "a.py").write_text(bad)
    (tmp_path / "b.py").write_text(bad.replace("from_dlpack(y)", "from_dlpack(y)  # noqa: JXI002"))
    (tmp_path / "c.py").write_text(bad)
    r = flake8("--select=JXI", "--per-file-ignores=c.py:JXI002", "--jobs=2", ".", cwd=tmp_path)
    assert [ln.split(":")[0] for ln in r.stdout.splitlines()] == ["./a.py"]


def test_flake8_jxi009_is_opt_in(tmp_path):
    (tmp_path / "lib.py").write_text("import jax, torch\ndef f(x: jax.Array):\n    return torch.from_dlpack(x)\n")
    # as on the command line, a prefix selects the default rules only
    assert "JXI009" not in flake8("--select=JXI", "lib.py", cwd=tmp_path).stdout
    assert flake8("--select=JXI009", "lib.py", cwd=tmp_path).stdout.count("JXI009") == 1
    assert "JXI009" not in flake8("lib.py", cwd=tmp_path).stdout
    assert "JXI009" in flake8("--extend-select=JXI009", "lib.py", cwd=tmp_path).stdout


def test_flake8_opt_in_named_beside_a_table_selection(tmp_path):
    """A table that selects or ignores (``ignore = ["JXI006"]``) does not hide an opt-in
    code flake8's options name (a new user's report, stop 32: nothing was printed)."""
    (tmp_path / "pyproject.toml").write_text('[tool.jaxinterop-lint]\nignore = ["JXI006"]\n')
    (tmp_path / "lib.py").write_text("import jax, torch\ndef f(x: jax.Array):\n    return torch.from_dlpack(x)\n")
    assert "JXI009" in flake8("--select=JXI", "--extend-select=JXI009", "lib.py", cwd=tmp_path).stdout
    assert flake8("--select=JXI009", "lib.py", cwd=tmp_path).stdout.count("JXI009") == 1
    assert "JXI009" not in flake8("--select=JXI", "lib.py", cwd=tmp_path).stdout
