"""The command line's ruff habits: ``check`` as the explicit form, subcommands that parse
their arguments (``--help`` never acts), ``--exit-zero``, ``--output-file``, ``--show-fixes``,
``--show-files``, ``--watch``, ``--fix`` on standard input, and the summary line."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import run_cli

BAD = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
       "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
FIXABLE = "import jax\n\n\ndef first(arr: jax.Array):\n    return arr.device_buffer\n"
FIXED = "import jax\n\n\ndef first(arr: jax.Array):\n    return arr.addressable_data(0)\n"


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "old.py").write_text(FIXABLE)
    (tmp_path / "fine.py").write_text("x = 1\n")
    return tmp_path


def test_check_is_the_explicit_form_and_folders_named_like_commands_are_linted(tree):
    for name in ("run", "rule", "clean", "server", "verify"):
        (tree / name).mkdir()
        (tree / name / "m.py").write_text(BAD)
    bare = run_cli("bad.py", cwd=tree)
    explicit = run_cli("check", "bad.py", cwd=tree)
    assert bare.returncode == explicit.returncode == 1 and bare.stdout == explicit.stdout
    for name in ("run", "rule", "clean", "server", "verify"):
        r = run_cli("check", name, cwd=tree)
        assert r.returncode == 1 and f"{name}/m.py:5:5: JXI002" in r.stdout, name
    # the bare word is the command, and the CLI says how to lint the folder
    r = run_cli("clean", cwd=tree)
    assert "`jaxinterop-lint check clean` lints the path `clean`" in r.stderr


@pytest.mark.parametrize("command", ["check", "rule", "run", "verify", "clean", "server"])
def test_help_of_every_command_only_prints_help(tree, command):
    run_cli("bad.py", cwd=tree)                       # fills the cache
    cache = tree / ".jaxinterop_lint_cache"
    assert cache.is_dir()
    for flag in ("--help", "-h"):
        r = run_cli(command, flag, cwd=tree)
        assert r.returncode == 0 and r.stdout.startswith("usage: jaxinterop-lint"), (command, r.stderr)
        assert cache.is_dir(), f"`{command} {flag}` acted"
    assert sorted(p.name for p in tree.iterdir()) == sorted([".jaxinterop_lint_cache", "bad.py", "fine.py",
                                                             "old.py", "pyproject.toml"])


def test_clean_parses_its_arguments(tree):
    run_cli("bad.py", cwd=tree)
    r = run_cli("clean", "nowhere", "bad.py", cwd=tree)
    assert r.returncode == 2 and "clean: error: nowhere: no such file or folder" in r.stderr
    assert not (tree / ".jaxinterop_lint_cache").exists()   # the path that exists was still cleaned
    r = run_cli("clean", "--bogus", cwd=tree)
    assert r.returncode == 2 and "unrecognized arguments: --bogus" in r.stderr
    r = run_cli("clean", cwd=tree)
    assert r.returncode == 0 and "no cache to remove" in r.stderr


def test_summary_counts_files_with_findings_and_linted_files(tree):
    r = run_cli(".", cwd=tree)
    assert "Found 2 findings in 2 files (3 files linted)." in r.stderr
    r = run_cli("fine.py", cwd=tree)
    assert r.returncode == 0 and "Found 0 findings (1 file linted)." in r.stderr
    # a file that could not be linted is counted apart, never as linted
    r = run_cli("fine.py", "missing.py", cwd=tree)
    assert r.returncode == 2 and "Found 0 findings (1 file linted); 1 file could not be linted." in r.stderr


def test_exit_zero_and_output_file(tree):
    r = run_cli("--exit-zero", ".", cwd=tree)
    assert r.returncode == 0 and "bad.py:5:5: JXI002" in r.stdout
    r = run_cli("--exit-zero", "missing.py", cwd=tree)
    assert r.returncode == 2                              # a file that cannot be linted still fails
    r = run_cli("--output-format", "json", "--output-file", "out/../report.json", ".", cwd=tree)
    assert r.returncode == 2 and "cannot write" in r.stderr     # out/ does not exist: one line
    r = run_cli("--output-format", "json", "-o", "report.json", ".", cwd=tree)
    assert r.returncode == 1 and r.stdout == ""
    report = json.loads((tree / "report.json").read_text())
    assert sorted(f["code"] for f in report) == ["JXI002", "JXI005"]
    r = run_cli("--color", "always", "-o", "report.txt", ".", cwd=tree)
    text = (tree / "report.txt").read_text()
    assert "\033[" not in text and "bad.py:5:5: JXI002" in text and "Found 2 findings" in r.stderr


def test_show_files_lists_what_would_be_linted(tree):
    (tree / "build").mkdir()
    (tree / "build" / "gen.py").write_text(BAD)
    r = run_cli("--show-files", ".", cwd=tree)
    assert r.returncode == 0 and r.stdout.splitlines() == ["./bad.py", "./fine.py", "./old.py"] or \
        r.stdout.splitlines() == ["bad.py", "fine.py", "old.py"]
    r = run_cli("--show-files", "--extend-exclude", "old.py", ".", cwd=tree)
    assert [os.path.basename(p) for p in r.stdout.splitlines()] == ["bad.py", "fine.py"]


def test_show_fixes_previews_and_lists_what_was_fixed(tree):
    r = run_cli("--show-fixes", "old.py", cwd=tree)
    assert r.returncode == 1
    assert "    fix (safe): Use the current API\n" in r.stdout
    assert "    -    return arr.device_buffer\n    +    return arr.addressable_data(0)\n" in r.stdout
    assert (tree / "old.py").read_text() == FIXABLE                  # a preview writes nothing
    r = run_cli("--show-fixes", "--unsafe-fixes", "bad.py", cwd=tree)
    assert "fix (unsafe)" in r.stdout and "jax.device_put(y, jax.local_devices()[0])" in r.stdout
    r = run_cli("--fix", "--show-fixes", ".", cwd=tree)
    assert r.returncode == 1 and "Fixed 1 finding:\n- ./old.py:\n    1 × JXI005 (removed-jax-interop-api)\n" \
        in r.stdout.replace("- old.py:", "- ./old.py:")
    assert (tree / "old.py").read_text() == FIXED


def test_fix_on_standard_input_prints_the_fixed_text(tree):
    r = run_cli("--fix", "-", input=FIXABLE, cwd=tree)
    assert r.returncode == 0 and r.stdout == FIXED and "Fixed 1 finding (0 remaining)." in r.stderr
    r = run_cli("--fix", "--stdin-filename", "src/bad.py", input=BAD + FIXABLE.replace("import jax\n", ""),
                cwd=tree)
    assert r.returncode == 1 and "return arr.addressable_data(0)" in r.stdout
    assert "src/bad.py:5:5: JXI002" in r.stderr                     # what is left goes to stderr
    r = run_cli("--fix", "--unsafe-fixes", "-", input=BAD, cwd=tree)
    assert r.returncode == 0 and "torch.from_dlpack(jax.device_put(y, jax.local_devices()[0]))" in r.stdout
    r = run_cli("--diff", "-", input=FIXABLE, cwd=tree)
    assert r.returncode == 1 and "+    return arr.addressable_data(0)" in r.stdout
    r = run_cli("--fix-only", "-", input="x = (\n", cwd=tree)
    assert r.returncode == 0 and r.stdout == "x = (\n"                 # no interop word: never parsed
    # JAX code reaches it (a sharding: a placement alone makes nothing multi-device)
    broken = "import jax\nimport torch\ny = jax.device_put(x, jax.NamedSharding(m, s))\nt = torch.from_dlpack(y\n"
    r = run_cli("--fix", "-", input=broken, cwd=tree)
    assert r.returncode == 2 and r.stdout == broken and "-:" in r.stderr
    latin = "# -*- coding: latin-1 -*-\n# caf\xe9\n".encode("latin-1") + FIXABLE.encode()
    p = subprocess.run([sys.executable, "-m", "jaxinterop_lint", "--fix", "-"], input=latin, cwd=tree,
                       capture_output=True, timeout=300)
    assert p.returncode == 0 and p.stdout == latin.replace(b"arr.device_buffer", b"arr.addressable_data(0)")


def test_watch_lints_again_when_a_file_changes(tree):
    import queue
    import threading

    # SIGINT acts as it does by default in the child, even where this process inherited it
    # ignored (a job started with ``&`` or under nohup: Python then installs no handler)
    proc = subprocess.Popen([sys.executable, "-m", "jaxinterop_lint", "--watch", "--no-cache", "."], cwd=tree,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stderr], daemon=True).start()

    def wait_for(text, timeout=60):
        seen = ""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = lines.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                break
            seen += line
            if text in line:
                return seen
        raise AssertionError(f"{text!r} not seen in {seen!r}")

    try:
        first = wait_for("Watching for file changes.")
        assert "Starting linter in watch mode" in first and "Found 2 findings" in first
        (tree / "fine.py").write_text(BAD)
        second = wait_for("Watching for file changes.")
        assert "File change detected" in second and "Found 3 findings in 3 files" in second
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        out = proc.stdout.read()
        assert out.count("bad.py:5:5: JXI002") == 2 and out.count("fine.py:5:5: JXI002") == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_watch_refuses_standard_input():
    r = run_cli("--watch", "-", input="x = 1\n")
    assert r.returncode == 2 and "--watch lints files, not standard input" in r.stderr


def test_flake8_and_the_cli_agree_on_select_jxi(tmp_path):
    """`flake8 --select=JXI` turns on no opt-in rule, as `jaxinterop-lint --select JXI`."""
    lib = "import jax, torch\ndef f(x: jax.Array):\n    return torch.from_dlpack(x)\n"
    (tmp_path / "lib.py").write_text(lib)

    def flake8(*args):
        return subprocess.run([sys.executable, "-m", "flake8", *args, "lib.py"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300).stdout

    assert "JXI009" not in flake8("--select=JXI") and "JXI009" not in run_cli("--select", "JXI", "lib.py",
                                                                             cwd=tmp_path).stdout
    assert "JXI009" not in flake8()
    for args in (("--select=JXI009",), ("--extend-select=JXI009",), ("--select=JXI,JXI009",)):
        assert flake8(*args).count("JXI009") == 1, args
        cli = [a.replace("=", " ").split() for a in args]
        assert run_cli(*[x for pair in cli for x in pair], "lib.py", cwd=tmp_path).stdout.count("JXI009") == 1


def test_json_columns_are_one_based_everywhere(tree):
    (f,) = [d for d in json.loads(run_cli("--output-format", "json", "bad.py", cwd=tree).stdout)]
    assert f["column"] == 5 and f["provenance"][0]["column"] == 5 and f["provenance"][-1]["column"] == 5
    assert f["provenance"][0]["line"] == 4
    (g,) = json.loads(run_cli("--output-format", "json", "old.py", cwd=tree).stdout)
    assert g["column"] == 12 and g["fix"]["edits"][0]["start"]["column"] == 12


def test_json_positions_of_a_file_that_cannot_be_read_are_one_based(tree):
    rows = json.loads(run_cli("--output-format", "json", "missing.py", cwd=tree).stdout)
    assert [(r["path"], r["code"], r["line"], r["column"], r["end_line"], r["end_column"]) for r in rows] == [
        ("missing.py", "JXI000", 1, 1, 1, 1)]


def test_jobs_must_be_a_positive_number(tree):
    for value in ("0", "-3", "x"):
        r = run_cli("--jobs", value, "bad.py", cwd=tree)
        assert r.returncode == 2 and "argument --jobs/-j" in r.stderr and "Traceback" not in r.stderr, value
    assert run_cli("-j", "1", "bad.py", cwd=tree).returncode == 1


def test_gitignore_is_respected_unless_told_not_to(tree):
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    (tree / ".gitignore").write_text("generated.py\n")
    (tree / "generated.py").write_text(BAD)
    listed = [os.path.basename(p) for p in run_cli("--show-files", ".", cwd=tree).stdout.splitlines()]
    assert "generated.py" not in listed and "bad.py" in listed
    assert "generated.py" not in run_cli(".", cwd=tree).stdout
    r = run_cli("--no-respect-gitignore", ".", cwd=tree)
    assert "generated.py:5:5: JXI002" in r.stdout
