"""Hostile inputs (issue 9): every bad file is one ``path:line:col: error: reason`` line on
stderr, exit status 2, no traceback, and every other file is still linted and reported.
Odd but valid files (BOM, CRLF, CR, tabs, form feeds, non-ASCII names, newer syntax) are
linted with correct lines and columns.

Files whose text names no interop API are never parsed (the prefilter, issue 8), so every
bad file here that is meant to reach the parser names one (``torch.from_dlpack``).
"""
from __future__ import annotations

import os
import re
import sys
import time

import pytest

from conftest import run_cli
from jaxinterop_lint import Config, engine, lint_source
from jaxinterop_lint.engine import SourceError, lint_paths, read_source

# A file JAX code reaches and that names a consumer: the plan parses it (issue 16).
WORD = "import torch, jax\ny = torch.from_dlpack(jax.device_put(x, jax.NamedSharding(m, s)))\n"
GOOD = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
GOOD_FINDING = "good.py:4:5: JXI002"
# `path:line:col: error: ...`, or `path: error: ...` for a problem of the path (no such file)
ERROR_LINE = re.compile(r"^(?P<path>[^:]+)(?::(?P<line>\d+):(?P<col>\d+))?: error: (?P<msg>[^\n]+)$")


def cli(tmp_path, *args):
    """Run the CLI without cache in ``tmp_path`` (a project of its own)."""
    (tmp_path / "pyproject.toml").touch()
    return run_cli("--no-cache", *args, cwd=tmp_path)


def errors_of(proc) -> dict:
    """``{path: (line, col, message)}`` of the error lines on stderr; asserts that stderr has
    nothing but error lines and the summary (no traceback)."""
    out = {}
    assert "Traceback" not in proc.stderr, proc.stderr
    for line in proc.stderr.splitlines():
        m = ERROR_LINE.match(line)
        if m:
            out[m["path"]] = (int(m["line"] or 0), int(m["col"] or 0), m["msg"])
        else:
            assert line.startswith(("Found ", "[*] ", "Fixed ")), f"unexpected stderr line: {line!r}"
    return out


BAD_FILES = {
    # name: (bytes, expected line, expected column or None, reason pattern)
    "syntax.py": (WORD.encode() + b"def f(:\n    pass\n", 3, 7, r"syntax error"),
    "utf8.py": (WORD.encode() + b"s = '\xff\xfe'\n", 3, 6, r"cannot decode as utf-8"),
    "nul.py": (WORD.encode() + b"z = 1\x00\n", 3, 1, r"NUL byte"),
    "python2.py": (b"import torch, jax\nprint 'x'\ny = torch.from_dlpack(jax.device_put(x, jax.NamedSharding(m, s)))\n", 2, None, r"syntax error: Missing parentheses"),
    "codec.py": (b"# -*- coding: klingon -*-\n" + WORD.encode(), 1, 1, r"unknown encoding: klingon"),
    "nested.py": (WORD.encode() + b"z = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n", 3, None,
                  r"too many nested parentheses"),
    "unary.py": (WORD.encode() + b"z = " + b"-" * 5000 + b"1\n", 3, 1, r"too deeply nested"),
    "binary.py": (WORD.encode() + b"z = 1" + b" + 1" * 5000 + b"\n", 3, 1, r"too deeply nested"),
    "chained.py": (WORD.encode() + b"z = x" + b".a()" * 10000 + b"\n", 3, 1, r"too deeply nested"),
}


def test_each_bad_file_is_one_error_line_and_the_others_are_still_linted(tmp_path):
    for name, (data, *_rest) in BAD_FILES.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "x.py").mkdir()                          # a folder named like a module
    (tmp_path / "x.py" / "inner.py").write_text(GOOD.replace("t = ", "u = "))
    os.symlink("loop-b.py", tmp_path / "loop-a.py")      # a symlink loop
    os.symlink("loop-a.py", tmp_path / "loop-b.py")
    os.mkfifo(tmp_path / "fifo.py")                      # would block a naive open()
    start = time.monotonic()
    r = cli(tmp_path, ".", "gone.py")                    # gone.py: deleted before the run
    elapsed = time.monotonic() - start
    assert r.returncode == 2, r.stderr
    errors = errors_of(r)
    for name, (_, line, col, reason) in BAD_FILES.items():
        got = errors.pop(f"{name}")
        assert got[0] == line and (col is None or got[1] == col) and re.search(reason, got[2]), (name, got)
    assert re.search(r"too many levels of symbolic links", errors.pop("loop-a.py")[2], re.I)
    assert re.search(r"too many levels of symbolic links", errors.pop("loop-b.py")[2], re.I)
    assert "not a regular file" in errors.pop("fifo.py")[2]
    assert "no such file" in errors.pop("gone.py")[2]
    assert errors == {}                                  # empty.py and x.py/ are no errors
    assert r.stdout.splitlines()[0].startswith("good.py:4:5: JXI002")
    assert r.stdout.splitlines()[1].startswith("x.py/inner.py:4:5: JXI002")
    assert len(r.stdout.splitlines()) == 2
    assert "could not be linted" in r.stderr
    assert elapsed < 60, elapsed


def test_bad_files_in_parallel_workers_too(tmp_path):
    """The same with several worker processes (more than 8 files take the parallel path)."""
    for name, (data, *_rest) in BAD_FILES.items():
        (tmp_path / name).write_bytes(data)
    for i in range(4):
        (tmp_path / f"good{i}.py").write_text(GOOD)
    r = run_cli("--no-cache", "--jobs", "3", ".", cwd=tmp_path, env={"JAXINTEROP_LINT_POOL_BYTES": "0"})
    assert r.returncode == 2
    errors = errors_of(r)
    assert sorted(errors) == sorted(f"{n}" for n in BAD_FILES)
    assert len(r.stdout.splitlines()) == 4


def test_a_worker_that_dies_costs_only_its_file(tmp_path, monkeypatch):
    """A native crash in a worker (simulated: the worker kills itself on one file) does not
    stop the run: the other files are linted, the crashing one gets an error."""
    import signal

    from jaxinterop_lint.pipeline import pool

    real = pool.lint_one

    def crashing(session, path):
        if os.path.basename(path) == "crash.py":
            import faulthandler

            faulthandler.disable()  # no dump of the deliberate crash on the test's stderr
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(session, path)

    monkeypatch.setattr(pool, "lint_one", crashing)
    monkeypatch.setenv("JAXINTEROP_LINT_POOL_BYTES", "0")      # workers even for small files
    for i in range(10):
        (tmp_path / f"good{i}.py").write_text(GOOD)
    (tmp_path / "crash.py").write_text(GOOD)
    result = lint_paths([str(tmp_path)], Config(), jobs=2, whole_project=False)
    assert [os.path.basename(p) for p, _ in result.errors] == ["crash.py"]
    assert "crashed" in result.errors[0][1].message
    assert len(result.findings) == 10


def test_unreadable_file(tmp_path, monkeypatch):
    """EACCES: for real as an unprivileged user when this runs as root (root reads any file),
    and through the engine's read path in-process."""
    (tmp_path / "good.py").write_text(GOOD)
    secret = tmp_path / "secret.py"
    secret.write_text(GOOD)
    secret.chmod(0)
    real_open = os.open

    def deny(path, *args, **kwargs):
        if os.path.basename(str(path)) == "secret.py":
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(engine.os, "open", deny)
    with pytest.raises(SourceError, match="permission denied"):
        read_source(str(secret))
    result = lint_paths([str(tmp_path)], Config(), whole_project=False)
    assert [(os.path.basename(p), e.message) for p, e in result.errors] == [("secret.py", "permission denied")]
    assert len(result.findings) == 1
    monkeypatch.undo()
    # The real thing, through the CLI.  Root reads any file, so as root the linter runs
    # without the capabilities that allow it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH dropped
    # from the bounding set before exec): still uid 0, but mode 000 now means unreadable.
    import subprocess

    preexec = None
    if os.geteuid() == 0:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)

        def preexec():
            for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
                if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                    raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")
    proc = subprocess.run([sys.executable, "-m", "jaxinterop_lint", "--no-cache", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, preexec_fn=preexec)
    assert proc.returncode == 2, proc.stderr
    assert errors_of(proc) == {"secret.py": (1, 1, "permission denied")}
    assert proc.stdout.startswith("good.py:4:5: JXI002")


def test_file_deleted_during_the_run(tmp_path, monkeypatch):
    """A file discovered and then removed before it is read: an error for it, the others linted."""
    from jaxinterop_lint.pipeline import discover as discover_mod

    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(GOOD)
    real = discover_mod.discover

    def racing(*args, **kwargs):
        for path in real(*args, **kwargs):
            if path.endswith("b.py"):
                os.unlink(path)
            yield path

    monkeypatch.setattr(discover_mod, "discover", racing)
    import jaxinterop_lint.engine  # noqa: F401  (lint_paths imports discover from its module)
    result = lint_paths([str(tmp_path)], Config(), project_root=str(tmp_path))
    assert [(os.path.basename(p), "no such file" in e.message) for p, e in result.errors] == [("b.py", True)]
    assert sorted(os.path.basename(f.path) for f in result.findings) == ["a.py", "c.py"]


@pytest.mark.slow   # lints 5 MB (about 15 s)
def test_five_megabyte_generated_file(tmp_path):
    """A generated 5 MB module (a big table and some code) is linted, in reasonable time."""
    table = "TABLE = {\n" + "".join(f"    'k{i}': ({i}, 'v{i}', {i * 0.5}),\n" for i in range(130000)) + "}\n"
    code = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n" + table +
            "def f(x, m):\n    y = jax.device_put(x, NamedSharding(m, P('x')))\n    return torch.from_dlpack(y)\n")
    assert len(code) > 5_000_000
    (tmp_path / "gen.py").write_text(code)
    (tmp_path / "good.py").write_text(GOOD)
    start = time.monotonic()
    r = cli(tmp_path, ".")
    elapsed = time.monotonic() - start
    assert r.returncode == 1 and errors_of(r) == {}
    line = code.count("\n")
    assert r.stdout.splitlines()[0].startswith(f"gen.py:{line}:12: JXI002")
    assert elapsed < 90, elapsed


def test_one_long_line_of_data_is_linted(tmp_path):
    """A long flat line (CPython checks it first, then libcst parses it) is no error."""
    text = GOOD + "DATA = [" + ", ".join(map(str, range(20000))) + "]\n"
    r = lint_source(text, "gen.py")
    assert r.error is None and [(f.line, f.code) for f in r.findings] == [(4, "JXI002")]


def test_nesting_that_crashes_libcst_with_syntax_cpython_cannot_check(tmp_path):
    """Newer syntax (CPython 3.11 rejects it) plus unary nesting that overflows libcst's
    native stack: the probe in a child process refuses it, this process survives."""
    # (z is exported: the masking keeps its statement, so the parser would be given it)
    text = "import torch, jax\ntype X = int\nw = 1\nz = (" + "-\n" * 30000 + "1)\ny = torch.from_dlpack(jax.device_put(z, jax.NamedSharding(m, s)))\n"
    r = lint_source(text, "deep.py")
    assert r.error is not None and "too deeply nested" in r.error.message
    assert r.error.line == 4


def test_deep_but_valid_newer_syntax_is_linted():
    """Newer syntax plus moderately deep brackets: the probe passes, the file is linted."""
    text = ("import torch\ntype X = int\n" + GOOD.split("\n", 1)[1].replace("import jax, torch", "import jax") +
            "z = " + "[" * 60 + "1" + "]" * 60 + "\n")
    text = "import jax\n" + text
    r = lint_source(text, "deep.py")
    assert r.error is None, r.error.message
    assert [f.code for f in r.findings] == ["JXI002"]


def test_nul_in_a_str_source():
    """lint_source given a str with a NUL reports it (libcst is never given one)."""
    r = lint_source(WORD + "z = 1\x00\n", "x.py")
    assert r.error is not None and "NUL" in r.error.message and r.error.line == 3


# --- valid but unusual files: correct lines and columns ------------------------------------

LINES = ["import jax, torch", "from jax.sharding import NamedSharding, PartitionSpec as P",
         "y = jax.device_put(x, NamedSharding(m, P('x')))", "t = torch.from_dlpack(y)", ""]


@pytest.mark.parametrize("name,data,line,col", [
    ("bom", b"\xef\xbb\xbf" + "\n".join(LINES).encode(), 4, 5),
    ("crlf", "\r\n".join(LINES).encode(), 4, 5),
    ("cr", "\r".join(LINES).encode(), 4, 5),
    ("tabs", "\n".join(LINES[:3] + ["if True:\n\tt = torch.from_dlpack(y)", ""]).encode(), 5, 6),
    ("formfeed", "\n".join(LINES[:3] + ["\ft = torch.from_dlpack(y)", ""]).encode(), 4, 6),
    ("formfeed2", "\n".join(LINES[:3] + ["\f\f\ft = 1 ;  t = torch.from_dlpack(y)", ""]).encode(), 4, 17),
    ("nonascii", "\n".join(LINES[:2] + ["données = jax.device_put(x, NamedSharding(m, P('x')))",
                                        "ŧ = torch.from_dlpack(données)", ""]).encode(), 4, 5),
    ("latin1", b"# -*- coding: latin-1 -*-\n" + "\n".join(LINES[:3] + ["s = 'é'; t = torch.from_dlpack(y)", ""]).encode("latin-1"), 5, 14),
])
def test_unusual_but_valid_files_have_correct_positions(tmp_path, name, data, line, col):
    (tmp_path / f"{name}.py").write_bytes(data)
    r = cli(tmp_path, f"{name}.py")
    assert errors_of(r) == {}
    assert r.returncode == 1
    assert r.stdout.startswith(f"{name}.py:{line}:{col}: JXI002"), r.stdout


NEWER_SYNTAX = {
    "type_params": "def f[T](a: T) -> T:\n    return torch.from_dlpack(y)\nclass C[T, *Ts, **P]:\n    pass\n",
    "type_statement": "type Alias = list[int]\ntype Pair[T] = tuple[T, T]\nz = torch.from_dlpack(y)\n",
    "pep701_fstrings": 'd = {"a": y}\ns = f"{d["a"]}" + f"{"nested " + f"{1}"}"\nz = torch.from_dlpack(d["a"])\n',
    "pep696_defaults": "def f[T = int](a: T) -> T:\n    return torch.from_dlpack(y)\nclass K[T = str]:\n    pass\n",
    "except_star": "try:\n    z = torch.from_dlpack(y)\nexcept* ValueError:\n    pass\n",
}


@pytest.mark.parametrize("name", sorted(NEWER_SYNTAX))
def test_newer_python_syntax_is_parsed(tmp_path, name):
    """3.12/3.13 syntax parses under this Python (libcst's own parser) and is analysed."""
    head = LINES[:3]
    text = "\n".join(head) + "\n" + NEWER_SYNTAX[name]
    r = lint_source(text, f"{name}.py")
    assert r.error is None, r.error.message
    sink = next(i for i, ln in enumerate(text.splitlines(), 1) if "torch.from_dlpack" in ln)
    expected = [(sink + 1, "JXI007")] if name == "except_star" else [(sink, "JXI002")]  # handler misses BufferError
    assert [(f.line, f.code) for f in r.findings] == expected


def test_syntax_error_in_a_file_without_interop_words_is_not_reported(tmp_path):
    """The prefilter's design (issue 8): such a file is never parsed, so never an error."""
    (tmp_path / "plain.py").write_text("def f(:\n")
    r = cli(tmp_path, "plain.py")
    assert r.returncode == 0 and errors_of(r) == {}


# --- bad configuration ---------------------------------------------------------------------

@pytest.mark.parametrize("body,reason", [
    ("[tool.jaxinterop-lint\n", "malformed TOML"),
    ("[tool.jaxinterop-lint]\nbogus = 1\n", "bogus: unknown key"),
    ("[tool.jaxinterop-lint]\nselect = \"JXI002\"\n", "select: expected a list of strings"),
    ("[tool.jaxinterop-lint]\nselect = [\"JXI999\"]\n", "unknown rule code 'JXI999'"),
    ("[tool.jaxinterop-lint]\nignore = [1]\n", "ignore: expected a list of strings"),
    ("[tool.jaxinterop-lint]\nper-file-ignores = [\"a\"]\n", "per-file-ignores: expected a table"),
    ("[tool.jaxinterop-lint]\nper-file-ignores = {\"a.py\" = [\"NOPE1\"]}\n", "unknown rule code 'NOPE1'"),
    ("[tool.jaxinterop-lint]\nextend-sinks = {\"a.b\" = \"smoke\"}\n", "unknown protocol 'smoke'"),
    ("[tool.jaxinterop-lint]\nextend-sources = [\"not a name\"]\n", "not a qualified name"),
    ("[tool]\njaxinterop-lint = 3\n", "expected a table"),
    ("[tool.jaxinterop-lint]\nselect = [\"__import__('os').system('touch PWNED')\"]\n", "unknown rule code"),
])
def test_bad_configuration_is_one_clear_error(tmp_path, body, reason):
    (tmp_path / "pyproject.toml").write_text(body)
    (tmp_path / "good.py").write_text(GOOD)
    r = run_cli("--no-cache", "good.py", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("jaxinterop-lint: error: ")
    assert "pyproject.toml" in r.stderr and reason in r.stderr, r.stderr
    assert not (tmp_path / "PWNED").exists()


def test_undecodable_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"\xff\xfe[tool]\n")
    (tmp_path / "good.py").write_text(GOOD)
    r = run_cli("--no-cache", "good.py", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    assert "pyproject.toml: cannot read" in r.stderr


# --- the linted code is data ---------------------------------------------------------------

def test_linting_never_imports_or_runs_the_linted_code(tmp_path):
    """Modules whose import would write a marker file or exit are linted (CLI, whole-project
    analysis following their imports, --fix, flake8): no marker appears, no exit status 3."""
    marker = tmp_path / "MARKER"
    evil = (f"import os, sys\nopen({str(marker)!r}, 'w').write('ran')\nsys.exit(3)\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(evil + "from .lib import export\n")
    (tmp_path / "pkg" / "lib.py").write_text(evil + "import torch\ndef export(q):\n    return torch.from_dlpack(q)\n")
    (tmp_path / "main.py").write_text(evil + GOOD.replace("t = torch.from_dlpack(y)", "from pkg import export\nt = export(y)"))
    (tmp_path / "conftest.py").write_text(evil)
    (tmp_path / "setup.py").write_text(evil)
    r = cli(tmp_path, ".")
    assert r.returncode == 1, r.stderr
    # at the sink in pkg/lib.py (PLAN decision 1), through pkg/__init__.py, never imported
    assert "pkg/lib.py:6:12: JXI002 torch.from_dlpack() cannot export `q`" in r.stdout
    assert "when export() is called at main.py:8 with `y`" in r.stdout
    r = cli(tmp_path, "--fix", "--unsafe-fixes", ".")
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr
    flake = subprocess_run([sys.executable, "-m", "flake8", "--select=JXI", "."], tmp_path)
    assert flake.returncode in (0, 1), flake.stderr
    assert not marker.exists()


def test_fix_mode_survives_the_bad_files(tmp_path):
    """--fix over a tree with every bad file: one error line each, the good file fixed."""
    for name, (data, *_rest) in BAD_FILES.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "good.py").write_text(GOOD)
    os.symlink("loop-b.py", tmp_path / "loop-a.py")
    os.symlink("loop-a.py", tmp_path / "loop-b.py")
    os.mkfifo(tmp_path / "fifo.py")
    r = cli(tmp_path, "--fix", "--unsafe-fixes", ".")
    assert r.returncode == 2
    errors = errors_of(r)
    assert sorted(errors) == sorted([f"{n}" for n in BAD_FILES] + ["loop-a.py", "loop-b.py", "fifo.py"])
    assert "jax.device_put(y, jax.local_devices()[0])" in (tmp_path / "good.py").read_text()
    for name, (data, *_rest) in BAD_FILES.items():
        assert (tmp_path / name).read_bytes() == data


def subprocess_run(cmd, cwd):
    """Run ``cmd`` in ``cwd``; the CompletedProcess."""
    import subprocess

    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
