"""``[tool.jaxinterop-lint]`` in pyproject.toml: discovery, every key, the command line winning,
errors that name the key and the file, and the flake8 plugin reading the same table."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from conftest import copy_tree, CASES, ROOT, run_cli
from jaxinterop_lint import pyproject
from jaxinterop_lint.config import Config, ConfigError

BAD = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
       "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
GUARD = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
         "y = jax.device_put(x, NamedSharding(m, P('x')))\nif y.is_fully_replicated:\n"
         "    t = torch.from_dlpack(y)\n")
LIB = "import jax, torch\ndef f(x: jax.Array):\n    return torch.from_dlpack(x)\n"
INHOUSE_SOURCE = "import mylib\nimport torch\nb = mylib.shard_batch(batch)\nt = torch.from_dlpack(b)\n"
INHOUSE_SINK = ("import jax\nimport mylib\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
                "y = jax.device_put(x, NamedSharding(m, P('x')))\nmylib.to_torch(y)\nmylib.to_cupy(y)\n"
                "mylib.pointer(y)\n")
# jnp.asarray propagates placement; declaring it a sanitizer shows the key reaches the analysis.
SANITIZED = ("import jax\nimport jax.numpy as jnp\nimport torch\nfrom jax.sharding import NamedSharding, "
             "PartitionSpec as P\ny = jax.device_put(x, NamedSharding(m, P('x')))\n"
             "t = torch.from_dlpack(jnp.asarray(y))\n")


def project(tmp_path, table: str, files: dict):
    """Write ``pyproject.toml`` with ``table`` under [tool.jaxinterop-lint], and ``files``."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.jaxinterop-lint]\n"
                                             + textwrap.dedent(table))
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def rows(stdout: str) -> list:
    """``(path, line, code)`` of concise output (flake8 spells the current folder's files
    ``./x.py``, the CLI as given: ``x.py``)."""
    out = []
    for ln in stdout.splitlines():
        path, line, _, rest = ln.split(":", 3)
        out.append((path[2:] if path.startswith("./") else path, int(line), rest.split()[0]))
    return sorted(out)


def flake8(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "flake8", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_selection_keys(tmp_path):
    project(tmp_path, 'ignore = ["JXI006"]\nextend-select = ["JXI009"]\n',
            {"guard.py": GUARD, "lib.py": LIB})
    r = run_cli(".", cwd=tmp_path)
    assert rows(r.stdout) == [("guard.py", 6, "JXI002"), ("lib.py", 3, "JXI009")]
    project(tmp_path, 'select = ["JXI006"]\n', {})
    assert rows(run_cli(".", cwd=tmp_path).stdout) == [("guard.py", 5, "JXI006")]


def test_command_line_wins(tmp_path):
    project(tmp_path, 'select = ["JXI006"]\nextend-exclude = ["skipped"]\n',
            {"guard.py": GUARD, "skipped/bad.py": BAD, "build/bad.py": BAD})
    assert rows(run_cli(".", cwd=tmp_path).stdout) == [("guard.py", 5, "JXI006")]
    # --select replaces the file's selection
    assert rows(run_cli("--select", "JXI002", ".", cwd=tmp_path).stdout) == [("guard.py", 6, "JXI002")]
    # --extend-select adds to it, --ignore takes from it
    assert rows(run_cli("--extend-select", "JXI002", ".", cwd=tmp_path).stdout) == \
        [("guard.py", 5, "JXI006"), ("guard.py", 6, "JXI002")]
    assert run_cli("--ignore", "JXI006", ".", cwd=tmp_path).stdout == ""
    # --exclude replaces the default excludes (build/ ...); the file's extend-exclude stays
    r = run_cli("--exclude", "nothing", "--select", "JXI002", ".", cwd=tmp_path)
    assert rows(r.stdout) == [("build/bad.py", 5, "JXI002"), ("guard.py", 6, "JXI002")]
    # --isolated ignores the file
    assert rows(run_cli("--isolated", ".", cwd=tmp_path).stdout) == \
        [("guard.py", 5, "JXI006"), ("guard.py", 6, "JXI002"), ("skipped/bad.py", 5, "JXI002")]


def test_excludes_and_per_file_ignores(tmp_path):
    project(tmp_path, '''\
        extend-exclude = ["generated", "src/legacy/*.py"]
        [tool.jaxinterop-lint.per-file-ignores]
        "tests/*.py" = ["JXI002"]
        "conftest.py" = ["JXI"]
        ''', {"generated/a.py": BAD, "src/legacy/old.py": BAD, "src/new.py": BAD, "tests/t.py": BAD,
              "tests/deep/conftest.py": BAD, "tests/g.py": GUARD})
    r = run_cli(".", cwd=tmp_path)
    assert rows(r.stdout) == [("src/new.py", 5, "JXI002"), ("tests/g.py", 5, "JXI006")]
    # patterns with a folder are relative to the pyproject's folder, wherever we run from
    r = run_cli("..", cwd=tmp_path / "src")
    assert rows(r.stdout) == [("../src/new.py", 5, "JXI002"), ("../tests/g.py", 5, "JXI006")]
    project(tmp_path, 'exclude = ["tests"]\n', {})
    assert rows(run_cli(".", cwd=tmp_path).stdout) == [("generated/a.py", 5, "JXI002"),
                                                       ("src/legacy/old.py", 5, "JXI002"),
                                                       ("src/new.py", 5, "JXI002")]


def test_project_apis(tmp_path):
    files = {"source.py": INHOUSE_SOURCE, "sink.py": INHOUSE_SINK, "sanitized.py": SANITIZED}
    project(tmp_path, "", files)
    assert rows(run_cli(".", cwd=tmp_path).stdout) == [("sanitized.py", 6, "JXI002")]
    project(tmp_path, '''\
        extend-sources = ["mylib.shard_batch"]
        extend-sanitizers = ["jax.numpy.asarray"]
        [tool.jaxinterop-lint.extend-sinks]
        "mylib.to_torch" = "dlpack"
        "mylib.to_cupy" = "cuda-array-interface"
        "mylib.pointer" = "raw-buffer"
        ''', {})
    r = run_cli(".", cwd=tmp_path)
    assert rows(r.stdout) == [("sink.py", 5, "JXI002"), ("sink.py", 6, "JXI001"),
                              ("sink.py", 7, "JXI003"), ("source.py", 4, "JXI002")]
    assert "mylib.shard_batch() (extend-sources), line 3" in r.stdout


def test_nearest_pyproject_with_the_table(tmp_path):
    project(tmp_path, 'ignore = ["JXI002"]\n', {"pkg/sub/bad.py": BAD})
    # a pyproject.toml without the table is passed over, as ruff does
    (tmp_path / "pkg" / "pyproject.toml").write_text("[project]\nname = 'inner'\n")
    assert run_cli("pkg/sub/bad.py", cwd=tmp_path).returncode == 0
    assert run_cli("bad.py", cwd=tmp_path / "pkg" / "sub").returncode == 0
    # a nearer one with the table wins
    (tmp_path / "pkg" / "pyproject.toml").write_text("[tool.jaxinterop-lint]\nselect = ['JXI']\n")
    assert run_cli("pkg/sub/bad.py", cwd=tmp_path).returncode == 1
    assert pyproject.find_pyproject([str(tmp_path / "pkg/sub/bad.py")]) == str(tmp_path / "pkg" / "pyproject.toml")
    # --config names the file
    other = tmp_path / "other.toml"
    other.write_text("[tool.jaxinterop-lint]\nignore = ['JXI002']\n")
    assert run_cli("--config", other, "pkg/sub/bad.py", cwd=tmp_path).returncode == 0
    other.write_text("[tool.ruff]\n")
    r = run_cli("--config", other, "pkg/sub/bad.py", cwd=tmp_path)
    assert r.returncode == 2 and "other.toml: --config: the file has no [tool.jaxinterop-lint] table" in r.stderr
    r = run_cli("--config", "missing.toml", "pkg/sub/bad.py", cwd=tmp_path)
    assert r.returncode == 2 and "missing.toml: --config: no such file" in r.stderr


@pytest.mark.parametrize("table, key, words", [
    ('unknown-key = 1\n', "unknown-key", ["unknown key"]),
    ('select = ["JXI999"]\n', "select", ["unknown rule code", "JXI999"]),
    ('ignore = ["E501"]\n', "ignore", ["unknown rule code", "E501"]),
    ('extend-select = "JXI009"\n', "extend-select", ["expected a list of strings", "a string"]),
    ('exclude = [1, 2]\n', "exclude", ["expected a list of strings"]),
    ('per-file-ignores = ["x"]\n', "per-file-ignores", ["expected a table"]),
    ('[tool.jaxinterop-lint.per-file-ignores]\n"a.py" = ["JXI42"]\n', "per-file-ignores.'a.py'", ["unknown rule code"]),
    ('[tool.jaxinterop-lint.per-file-ignores]\n"a.py" = "JXI002"\n', "per-file-ignores.'a.py'", ["expected a list of strings"]),
    ('extend-sources = ["not a name"]\n', "extend-sources", ["not a qualified name"]),
    ('extend-sanitizers = true\n', "extend-sanitizers", ["a boolean"]),
    ('extend-sinks = ["mylib.f"]\n', "extend-sinks", ["expected a table"]),
    ('[tool.jaxinterop-lint.extend-sinks]\n"mylib.f" = "cuda"\n', "extend-sinks.'mylib.f'", ["unknown protocol", "dlpack"]),
    ('select = [\n', "", ["malformed TOML"]),
])
def test_bad_configuration_is_one_clear_error(tmp_path, table, key, words):
    project(tmp_path, table, {"bad.py": BAD})
    r = run_cli("bad.py", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"jaxinterop-lint: error: {tmp_path / 'pyproject.toml'}: {key}")
    for word in words:
        assert word in line
    # flake8 reads the same table: the same message, no traceback
    f = flake8("--select=JXI", "bad.py", cwd=tmp_path)
    assert f.returncode != 0 and "Traceback" not in f.stdout + f.stderr
    assert f"{tmp_path / 'pyproject.toml'}: {key}" in f.stdout + f.stderr


def test_the_tool_table_must_be_a_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool]\n"jaxinterop-lint" = 3\n')
    (tmp_path / "a.py").write_text(BAD)
    r = run_cli("a.py", cwd=tmp_path)
    assert r.returncode == 2 and "tool.jaxinterop-lint: expected a table" in r.stderr


def test_command_line_codes_still_checked(tmp_path):
    project(tmp_path, 'ignore = ["JXI006"]\n', {"bad.py": BAD})
    r = run_cli("--extend-select", "JXI0100", "bad.py", cwd=tmp_path)
    assert r.returncode == 2 and "command line: extend-select: unknown rule code 'JXI0100'" in r.stderr


def test_overlay_semantics():
    base = pyproject.config_from_table({"select": ["JXI00"], "ignore": ["JXI006"],
                                        "per-file-ignores": {"t/*.py": ["JXI002"]}}, "/p/pyproject.toml")
    # a prefix selects the default rules only: the opt-in JXI009 needs its full code
    assert "JXI006" not in base.enabled() and "JXI009" not in base.enabled() and "JXI005" in base.enabled()
    opted = pyproject.config_from_table({"select": ["JXI00", "JXI009"]}, "/p/pyproject.toml")
    assert opted.enabled() == base.enabled() | {"JXI006", "JXI009"}
    assert base.per_file_ignores == {"/p/t/*.py": ("JXI002",)}
    assert pyproject.overlay(base).enabled() == base.enabled()
    assert pyproject.overlay(base, extend_select=["JXI006"]).enabled() == base.enabled() | {"JXI006"}
    assert pyproject.overlay(base, select=["JXI001"]).enabled() == {"JXI001"}
    assert pyproject.overlay(base, ignore=["JXI001"]).enabled() == base.enabled() - {"JXI001"}
    # per-file ignores and the project's APIs survive the overlay
    assert pyproject.overlay(base, select=["JXI"]).per_file_ignores == base.per_file_ignores
    assert pyproject.overlay(Config()).enabled() == Config().enabled()
    with pytest.raises(ConfigError, match="command line: select: unknown rule code 'X1'"):
        pyproject.overlay(base, select=["X1"])


def test_flake8_reads_the_table(tmp_path):
    project(tmp_path, '''\
        extend-sources = ["mylib.shard_batch"]
        extend-exclude = ["generated"]
        [tool.jaxinterop-lint.extend-sinks]
        "mylib.to_torch" = "dlpack"
        ''', {"source.py": INHOUSE_SOURCE, "sink.py": INHOUSE_SINK, "generated/bad.py": BAD})
    r = flake8("--select=JXI", ".", cwd=tmp_path)
    assert rows(r.stdout) == [("sink.py", 5, "JXI002"), ("source.py", 4, "JXI002")]
    # flake8's own options keep working on top
    r = flake8("--select=JXI", "--per-file-ignores=sink.py:JXI002", ".", cwd=tmp_path)
    assert rows(r.stdout) == [("source.py", 4, "JXI002")]
    # an opt-in code the table enables is reported by a plain `flake8` too
    project(tmp_path, 'extend-select = ["JXI009"]\n', {"lib.py": LIB})
    assert "lib.py:3:12: JXI009" in flake8("lib.py", cwd=tmp_path).stdout
    project(tmp_path, 'ignore = ["JXI002"]\n', {})
    assert flake8("--select=JXI", "source.py", "sink.py", "lib.py", cwd=tmp_path).stdout == ""


AGREE_TABLE = '''\
extend-select = ["JXI009"]
ignore = ["JXI006"]
extend-sources = ["mylib.shard_batch"]
extend-sanitizers = ["jax.numpy.asarray"]
extend-exclude = ["skipped"]
[tool.jaxinterop-lint.per-file-ignores]
"cases/removed_apis.py" = ["JXI005"]
[tool.jaxinterop-lint.extend-sinks]
"mylib.to_torch" = "dlpack"
"mylib.to_cupy" = "cuda-array-interface"
"mylib.pointer" = "raw-buffer"
'''


def test_flake8_and_cli_agree_with_a_config_file(tmp_path):
    """Every file of examples/, fixtures/ and the acceptance cases, plus files that use each
    key of the table: ``flake8 --select=JXI`` and the CLI report the same findings."""
    for name, src in (("examples", ROOT / "examples"), ("fixtures", ROOT / "fixtures"),
                      ("cases", CASES)):
        if src.is_dir():
            copy_tree(src, tmp_path / name)
    project(tmp_path, AGREE_TABLE, {"own/source.py": INHOUSE_SOURCE, "own/sink.py": INHOUSE_SINK,
                                    "own/sanitized.py": SANITIZED, "own/lib.py": LIB,
                                    "own/guard.py": GUARD, "skipped/bad.py": BAD})
    files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.py"))
    assert len(files) >= 12
    ours = run_cli("--quiet", ".", cwd=tmp_path)
    theirs = flake8("--select=JXI", ".", cwd=tmp_path)
    assert ours.returncode == 1 and theirs.returncode == 1, theirs.stdout + theirs.stderr
    assert rows(ours.stdout) == rows(theirs.stdout.replace("[*] ", ""))
    found = rows(ours.stdout)
    codes = {c for _, _, c in found}
    assert {"JXI001", "JXI002", "JXI003", "JXI009"} <= codes and "JXI006" not in codes
    assert not any(p.startswith("skipped") for p, _, _ in found)
    assert not any(p == "cases/removed_apis.py" for p, _, _ in found)
    # every file named on the command line, as pre-commit passes them (an excluded file given
    # by name is skipped by flake8, and by the CLI with --force-exclude, which the hooks pass)
    a = run_cli("--quiet", "--force-exclude", *files, cwd=tmp_path)
    b = flake8("--select=JXI", *files, cwd=tmp_path)
    assert rows(a.stdout) == rows(b.stdout.replace("[*] ", ""))
    assert {(p, n, c) for p, n, c in found} == set(rows(a.stdout))
    assert run_cli("skipped/bad.py", cwd=tmp_path).returncode == 1
    assert run_cli("--force-exclude", "skipped/bad.py", cwd=tmp_path).returncode == 0
