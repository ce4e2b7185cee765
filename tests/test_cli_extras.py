"""What users expect of a linter's command line: --version, --quiet, --color (NO_COLOR),
--stdin-filename, --force-exclude, --statistics and a clear --help."""
from __future__ import annotations

import io

import pytest

from conftest import run_cli
from jaxinterop_lint import __version__
from jaxinterop_lint.cli_extras import colorize, use_color

BAD = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
       "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
ESC = "\033["


def test_version():
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"jaxinterop-lint {__version__}"


def test_quiet_drops_the_summary_only(tmp_path):
    (tmp_path / "a.py").write_text(BAD)
    loud = run_cli("a.py", cwd=tmp_path)
    quiet = run_cli("--quiet", "a.py", cwd=tmp_path)
    assert loud.stdout == quiet.stdout and "JXI002" in quiet.stdout
    assert "Found 1 finding in 1 file (1 file linted)." in loud.stderr and quiet.stderr == ""
    assert quiet.returncode == loud.returncode == 1


def test_color(tmp_path):
    (tmp_path / "a.py").write_text(BAD)
    plain = run_cli("a.py", cwd=tmp_path).stdout          # not a terminal: auto means no colour
    assert ESC not in plain
    always = run_cli("--color", "always", "a.py", cwd=tmp_path, env={"NO_COLOR": "1"}).stdout
    assert always.startswith(f"{ESC}1ma.py{ESC}0m:5:5: {ESC}1;31mJXI002{ESC}0m torch.from_dlpack()")
    assert ESC not in run_cli("--color", "never", "a.py", cwd=tmp_path).stdout
    full = run_cli("--color", "always", "--output-format", "full", "a.py", cwd=tmp_path).stdout
    assert full.startswith(f"{ESC}1ma.py{ESC}0m:5:5: {ESC}1;31mJXI002{ESC}0m [multi-device-dlpack-export]")
    # machine formats are never coloured
    assert ESC not in run_cli("--color", "always", "--output-format", "json", "a.py", cwd=tmp_path).stdout
    assert run_cli("--color", "sometimes", "a.py", cwd=tmp_path).returncode == 2


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("env, choice, stream, want", [
    ({}, "auto", Tty(), True),
    ({}, "auto", io.StringIO(), False),
    ({"NO_COLOR": "1"}, "auto", Tty(), False),
    ({"NO_COLOR": ""}, "auto", Tty(), True),          # no-color.org: an empty value does not count
    ({"TERM": "dumb"}, "auto", Tty(), False),
    ({"NO_COLOR": "1"}, "always", io.StringIO(), True),
    ({}, "never", Tty(), False),
])
def test_use_color(monkeypatch, env, choice, stream, want):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert use_color(choice, stream) is want


def test_colorize_leaves_other_lines():
    text = "a.py:1:2: JXI001 msg\n    provenance:\n"
    assert colorize(text) == f"{ESC}1ma.py{ESC}0m:1:2: {ESC}1;31mJXI001{ESC}0m msg\n    provenance:\n"


def test_stdin_filename(tmp_path):
    (tmp_path / "pkg").mkdir()
    r = run_cli("--stdin-filename", "pkg/editor.py", "-", cwd=tmp_path, input=BAD)
    assert r.returncode == 1
    assert r.stdout.startswith("pkg/editor.py:5:5: JXI002 torch.from_dlpack()")
    # `-` is the default with --stdin-filename; the file on disk is not read
    (tmp_path / "pkg" / "editor.py").write_text("print('saved version')\n")
    assert run_cli("--stdin-filename", "pkg/editor.py", cwd=tmp_path, input=BAD).stdout == r.stdout
    # the configuration is found from the stdin name and its per-file-ignores apply
    (tmp_path / "pyproject.toml").write_text(
        "[tool.jaxinterop-lint.per-file-ignores]\n\"pkg/*.py\" = [\"JXI002\"]\n")
    r = run_cli("--stdin-filename", "pkg/editor.py", "-", cwd=tmp_path, input=BAD)
    assert r.returncode == 0 and r.stdout == ""
    assert run_cli("--stdin-filename", "other.py", "-", cwd=tmp_path, input=BAD).returncode == 1
    # without a name, `-` still reads standard input
    r = run_cli("-", cwd=tmp_path, input=BAD)
    assert r.returncode == 1 and r.stdout.startswith("-:5:5: JXI002")


def test_stdin_errors(tmp_path):
    r = run_cli("--stdin-filename", "x.py", "-", cwd=tmp_path, input=BAD + "def f(:\n")
    assert r.returncode == 2 and "x.py:6:" in r.stderr and "syntax error" in r.stderr
    assert "Traceback" not in r.stderr
    r = run_cli("--add-noqa", "--stdin-filename", "x.py", "-", cwd=tmp_path, input=BAD)
    assert r.returncode == 2 and "--add-noqa cannot rewrite standard input" in r.stderr


def test_force_exclude(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxinterop-lint]\nextend-exclude = [\"gen\"]\n")
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "a.py").write_text(BAD)
    (tmp_path / "b.py").write_text(BAD)
    assert run_cli("gen/a.py", cwd=tmp_path).returncode == 1        # named explicitly: linted
    r = run_cli("--force-exclude", "gen/a.py", "b.py", cwd=tmp_path)
    assert r.returncode == 1 and [ln.split(":")[0] for ln in r.stdout.splitlines()] == ["b.py"]
    r = run_cli("--force-exclude", "gen/a.py", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == ""                      # nothing left: not the whole folder
    r = run_cli("--force-exclude", "--stdin-filename", "gen/x.py", "-", cwd=tmp_path, input=BAD)
    assert r.returncode == 0 and r.stdout == ""


def test_help_is_clear():
    r = run_cli("--help")
    assert r.returncode == 0
    for option in ("--select CODES", "--output-format", "sarif", "github", "--statistics", "--color",
                   "--stdin-filename PATH", "--baseline FILE", "--write-baseline FILE", "--add-noqa",
                   "--config FILE", "--force-exclude", "--version", "--quiet", "exit status:",
                   "[tool.jaxinterop-lint]", "jaxinterop-lint rule JXI002"):
        assert option in r.stdout, option
