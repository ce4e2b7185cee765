"""Inputs that took a whole run down (issue 13, "Inputs that take the run down").

* A PEP 263 cookie naming a codec that fails in its own way (``undefined``, ``punycode``
  raise a bare ``UnicodeError``) crashed the CLI, ``--fix`` and every flake8 run of the
  project with exit status 1, which CI recipes read as "findings".  Now: one error line,
  exit 2, every other file linted; an internal error anywhere in the CLI is exit 2 too.
* The documented SARIF step read any exit 1 as success: it now fails on a crash.
* Valid Python that CPython compiles but that nests deeply (a 1,000-branch ``elif``, 900
  unary minus, 5,000 implicitly concatenated strings ...) is linted, not refused.
* The flake8 plugin said nothing (exit 0) when it could not lint a file.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run_cli
from jaxinterop_lint import Config, lint_source

FINDING = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
           "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
BAD_COOKIES = ["undefined", "punycode", "rot13", "hex", "zlib", "utf-32-be"]


def project(tmp_path: Path, files: dict) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("")
    for name, data in files.items():
        (tmp_path / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    return tmp_path


def plain(line: str) -> str:
    """A printed line without a leading ``./`` (paths are printed as given, or with it)."""
    return line[2:] if line.startswith("./") else line


def bad_cookie(codec: str) -> bytes:
    return f"# -*- coding: {codec} -*-\nimport torch\nt = torch.from_dlpack(x)\n".encode()


@pytest.mark.parametrize("codec", BAD_COOKIES)
def test_a_cookie_whose_codec_fails_is_one_error_line(tmp_path, codec):
    root = project(tmp_path, {"bad.py": bad_cookie(codec), "good.py": FINDING})
    for extra in ((), ("--fix",), ("--jobs", "2")):
        r = run_cli("--no-cache", *extra, ".", cwd=root)
        assert r.returncode == 2, (extra, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        errors = [plain(line) for line in r.stderr.splitlines() if ": error: " in line]
        assert len(errors) == 1 and errors[0].startswith("bad.py:1:1: error: cannot decode"), r.stderr
        assert "good.py:4:5: JXI002" in r.stdout


def test_flake8_runs_of_the_project_survive_a_bad_cookie(tmp_path):
    root = project(tmp_path, {"bad.py": bad_cookie("undefined"), "good.py": FINDING})
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "good.py"], cwd=root,
                       capture_output=True, text=True, timeout=300)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1 and "good.py:4:5: JXI002" in r.stdout, (r.stdout, r.stderr)


def test_an_internal_error_in_the_cli_is_exit_2_and_one_line(tmp_path):
    root = project(tmp_path, {"good.py": FINDING})
    script = ("import sys\nfrom jaxinterop_lint import cli, cli_extras\n"
              "def boom(*a, **k):\n    raise KeyError('no such thing')\n"
              "cli_extras.lint_inputs = boom\nsys.exit(cli.main(['.']))\n")
    env = {k: v for k, v in os.environ.items() if k != "JAXINTEROP_LINT_DEBUG"}
    r = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, env=env)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("jaxinterop-lint: internal error (KeyError"), r.stderr
    r = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True,
                       env=dict(env, JAXINTEROP_LINT_DEBUG="1"))
    assert "Traceback" in r.stderr and r.returncode == 1


def sarif_steps() -> list:
    """The shell of every documented step that writes SARIF (README, docs/integration.md)."""
    steps = []
    for page in (ROOT / "README.md", ROOT / "docs" / "integration.md"):
        text = page.read_text(encoding="utf-8")
        for block in text.split("```yaml")[1:]:
            doc = yaml.safe_load(block.split("```")[0])
            for job in (doc or {}).get("jobs", {}).values() if isinstance(doc, dict) else ():
                for step in job.get("steps", []):
                    if "--output-format sarif" in str(step.get("run", "")):
                        steps.append((page.name, step["run"]))
    return steps


def run_step(script: str, cwd: Path, bin_dir: Path):
    """Run a step's shell as GitHub Actions does (``bash -eo pipefail``), with ``bin_dir`` first
    on PATH (the linter and a python)."""
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)


def fake_linter(folder: Path, body: str) -> Path:
    folder.mkdir()
    exe = folder / "jaxinterop-lint"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)
    os.symlink(sys.executable, folder / "python")
    return folder


def test_the_documented_sarif_step_never_reads_a_crash_as_success(tmp_path):
    steps = sarif_steps()
    assert {page for page, _ in steps} == {"README.md", "integration.md"}, steps
    real = Path(sys.executable).parent
    assert (real / "jaxinterop-lint").exists()
    crash = fake_linter(tmp_path / "crash", "echo 'Traceback (most recent call last):' >&2\nexit 1\n")
    half = fake_linter(tmp_path / "half", "printf '{\"version\": \"2.1.0\", \"runs\": [' \nexit 1\n")
    for page, script in steps:
        findings = project(tmp_path / f"{page}-findings", {"good.py": FINDING})
        r = run_step(script, findings, real)
        assert r.returncode == 0, (page, r.stderr)
        assert len(json.loads((findings / "jaxinterop-lint.sarif").read_text())["runs"][0]["results"]) == 1
        clean = project(tmp_path / f"{page}-clean", {"ok.py": "x = 1\n"})
        assert run_step(script, clean, real).returncode == 0, page
        broken = project(tmp_path / f"{page}-broken", {"good.py": FINDING, "bad.py": bad_cookie("punycode")})
        assert run_step(script, broken, real).returncode != 0, page
        for fake in (crash, half):
            assert run_step(script, findings, fake).returncode != 0, (page, fake.name)


HEADER = "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
SINK = "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n"
# Each deep expression is part of the exported value, so the analysis has to go through it.
DEEP_EXPRESSIONS = {
    "5000 implicitly concatenated strings": "(\n" + "".join(f'    "piece {i}"\n' for i in range(5000)) + ")",
    "900 unary minus": "-" * 900 + "1",
    "900 not": "not " * 900 + "a",
    "3000 and": " and ".join(["a"] * 3000),
    "900 nested conditional expressions": "a if b else " * 900 + "c",
    "900 nested lambdas": "lambda: " * 900 + "a",
    "2000 chained calls": "a" + ".b()" * 1000,
    "2000 additions": " + ".join(["a"] * 2000),
}
DEEP_BUT_VALID = {name: f"z = {expr}\ny = jax.device_put((x, z), NamedSharding(m, P('x')))\n"
                        f"t = torch.from_dlpack(y)\n" for name, expr in DEEP_EXPRESSIONS.items()}
DEEP_BUT_VALID["1000-branch elif"] = (
    "def f(v, x, m):\n    if v == 0:\n        return 0\n"
    + "".join(f"    elif v == {i}:\n        return {i}\n" for i in range(1, 1000))
    + "    else:\n        y = jax.device_put(x, NamedSharding(m, P('x')))\n        return torch.from_dlpack(y)\n")


PYFLAKES_SURVIVES = {"5000 implicitly concatenated strings", "3000 and", "900 nested lambdas"}


# Python 3.12 caps recursion through C code at a fixed depth whatever the stack: there the
# deep shapes but the strings get one clear "too deeply nested" line (README, "Deep but valid").
PY312 = sys.version_info[:2] == (3, 12)
LINTED_ON_312 = {"5000 implicitly concatenated strings"}


@pytest.mark.parametrize("name", sorted(DEEP_BUT_VALID))
def test_deep_but_valid_python_is_linted(name):
    text = HEADER + DEEP_BUT_VALID[name]
    compile(text, name, "exec")  # CPython compiles it
    line = text.count("\n")
    r = lint_source(text, "deep.py", Config())
    if PY312 and name not in LINTED_ON_312:
        assert r.error is not None and r.error.message.startswith("too deeply nested to analyse"), r.error
        return
    assert r.error is None, r.error.message
    assert [(f.line, f.code) for f in r.findings] == [(line, "JXI002")]


def test_deep_but_valid_python_through_the_cli_and_flake8(tmp_path):
    texts = {f"deep{i}.py": HEADER + DEEP_BUT_VALID[n] for i, n in enumerate(sorted(DEEP_BUT_VALID))
             if not PY312 or n in LINTED_ON_312}
    root = project(tmp_path, texts)
    r = run_cli("--no-cache", ".", cwd=root)
    assert r.returncode == 1 and "error" not in r.stderr, r.stderr
    assert r.stdout.count("JXI002") == len(texts), r.stdout
    # pyflakes, which flake8 always runs, has a RecursionError on the other shapes
    names = [f"deep{i}.py" for i, n in enumerate(sorted(DEEP_BUT_VALID))
             if n in PYFLAKES_SURVIVES and f"deep{i}.py" in texts]
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "-j", "1", *names], cwd=root,
                       capture_output=True, text=True, timeout=600)
    assert r.stdout.count("JXI002") == len(names) == (1 if PY312 else 3) and "JXI000" not in r.stdout, \
        r.stdout + r.stderr


@pytest.mark.parametrize("where", ["own statement", "in the exported value"])
def test_implicit_concatenations_keep_their_positions_and_the_file_text(where):
    """The strings libcst cannot take are blanked for the parse only: positions are those of
    the file, and ``--fix`` never writes the blanked text back."""
    from jaxinterop_lint.fix.apply import fix_text

    pieces = "(\n" + "".join(f'    "piece {i}"\n' for i in range(4000)) + ")"
    if where == "own statement":
        body = f"s = {pieces}\ny = jax.device_put(x, NamedSharding(m, P('x')))\n"
    else:
        body = f"y = jax.device_put(x + len({pieces}), NamedSharding(m, P('x')))\n"
    text = HEADER + body + "t = torch.from_dlpack(y)  # the export\n"
    r = lint_source(text, "strings.py", Config())
    (f,) = r.findings
    assert (f.line, f.column) == (text.count("\n"), 4)
    out = fix_text(text, "strings.py", Config(), unsafe=True)
    assert out.error is None
    if f.fix is not None:
        assert out.text == text.replace("torch.from_dlpack(y)", "torch.from_dlpack(jax.device_put(y, "
                                        "jax.local_devices()[0]))")
    else:
        assert out.text == text


# CPython compiles these (its syntax tree is under 3,000 levels), but libcst's parser would
# need gigabytes: refused with a clear reason, never a crash.
PAST_LIBCST = "z = " + "lambda: " * 1200 + "a\n"


def test_flake8_never_drops_a_file_it_cannot_lint(tmp_path):
    root = project(tmp_path, {"deep.py": HEADER + PAST_LIBCST + SINK, "good.py": FINDING})
    compile((root / "deep.py").read_text(), "deep.py", "exec")
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "-j", "1", "."], cwd=root,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = [plain(line) for line in r.stdout.splitlines()]
    assert any(line.startswith("deep.py:3:1: JXI000 jaxinterop-lint cannot lint this file: too deeply nested")
               for line in lines), r.stdout
    assert any(line.startswith("good.py:4:5: JXI002") for line in lines), r.stdout


def test_flake8_reports_an_internal_error_on_the_file(tmp_path):
    root = project(tmp_path, {"good.py": FINDING})
    script = textwrap.dedent("""\
        import sys
        from jaxinterop_lint import engine
        def boom(*a, **k):
            raise RuntimeError("a bug")
        engine.lint_source = boom   # the plugin lints through the engine
        from flake8.main.cli import main
        sys.exit(main(["--select=JXI", "-j", "1", "good.py"]))
        """)
    env = {k: v for k, v in os.environ.items() if k != "JAXINTEROP_LINT_DEBUG"}
    r = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "good.py:1:1: JXI000 jaxinterop-lint internal error (RuntimeError: a bug)" in r.stdout, r.stdout
