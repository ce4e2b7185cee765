#!/usr/bin/env python3
"""Build hostile repositories and inputs (issue 13) in a temporary folder, run the real
linter, flake8 and runtime shim on them, and check each outcome.

Every attack is a function registered with :func:`attack` under a section; it builds what it
needs in its own folder and returns ``(passed, what happened)``.  The script prints a table
(section, attack, expected, result) and exits 0 when every attack is defended, 1 otherwise,
2 on a usage error.  ``tests/test_attack.py`` runs it in CI.

Adding an attack::

    @attack("cache", "cache file is a FIFO", "the run ignores it and ends")
    def _(work: Path):
        repo = project(work, {"a.py": FINDING})
        ...
        r = cli(repo, ".")
        return r.returncode == 1, f"exit {r.returncode}"

Usage::

    python scripts/attack.py                    # every attack, a Markdown table
    python scripts/attack.py --only shim        # the attacks whose section or name match
    python scripts/attack.py --list             # names only
    python scripts/attack.py --json out.json    # the table as JSON too

Everything runs with the interpreter that runs this script (``python -m jaxinterop_lint``,
``python -m flake8``); JAX programs get 8 forced CPU devices.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
XLA = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
FINDING = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
           "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
REMOVED = "import jax\n\n\ndef first(arr: jax.Array):\n    return arr.device_buffer\n"
REMOVED_FIXED = REMOVED.replace("arr.device_buffer", "arr.addressable_data(0)")


@dataclass
class Attack:
    """One hostile input: where it belongs, what it is, what must happen, and the check."""

    section: str
    name: str
    expected: str
    check: Callable[[Path], tuple]


ATTACKS: list[Attack] = []


def attack(section: str, name: str, expected: str):
    """Register the decorated ``check(work_dir) -> (passed, observed)`` as an attack."""
    def register(fn):
        ATTACKS.append(Attack(section, name, expected, fn))
        return fn
    return register


# -- helpers -----------------------------------------------------------------------------------
def clean_env(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAXINTEROP_", "PYTHONPATH"))}
    env.update(extra or {})
    return env


def project(folder: Path, files: dict) -> Path:
    """A project folder (``pyproject.toml``) holding ``files`` (name -> text or bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text("")
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return folder


def run(cmd: list, cwd: Path, env: dict | None = None, timeout: int = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=clean_env(env), capture_output=True, text=True, errors="replace",
                          timeout=timeout, **kw)


def cli(repo: Path, *args, **kw) -> subprocess.CompletedProcess:
    """``jaxinterop-lint --no-cache ARGS`` in ``repo``."""
    return run([PY, "-m", "jaxinterop_lint", "--no-cache", *map(str, args)], repo, **kw)


def flake8(repo: Path, *args) -> subprocess.CompletedProcess:
    return run([PY, "-m", "flake8", "--select=JXI", "-j", "1", *map(str, args)], repo)


def script(repo: Path, code: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """Run a Python snippet in ``repo`` (it may patch the linter, then call it)."""
    return run([PY, "-c", textwrap.dedent(code)], repo, env=env, **kw)


def errors(proc) -> list:
    return [line for line in proc.stderr.splitlines() if ": error: " in line]


def traceback(proc) -> bool:
    return "Traceback" in proc.stderr or "Traceback" in proc.stdout


def temps(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".jxitmp", ".jxifix")))


def no_dac_override():
    """preexec_fn: as root, drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (file modes apply)."""
    if os.geteuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def sarif_step() -> str:
    """The shell of the README's code-scanning step (the one that writes SARIF): a
    ``run: |`` block or a one-line ``run:``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for m in re.finditer(r"      - run: \|\n((?:          .*\n)+?)(?=      - )|      - run: (.*)\n", text):
        shell = textwrap.dedent(m.group(1)) if m.group(1) else m.group(2)
        if "--output-format sarif" in shell:
            return shell
    raise LookupError("no step that writes SARIF in README.md")


def step(repo: Path, bin_dir: Path) -> subprocess.CompletedProcess:
    env = clean_env({"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", sarif_step()], cwd=repo,
                          env=env, capture_output=True, text=True, errors="replace", timeout=300)


# -- inputs that took the run down -------------------------------------------------------------
def _bad_cookie(codec: str) -> bytes:
    return f"# -*- coding: {codec} -*-\nimport torch\nt = torch.from_dlpack(x)\n".encode()


for _codec in ("undefined", "punycode"):
    def _cookie(work: Path, codec=_codec):
        repo = project(work, {"bad.py": _bad_cookie(codec), "good.py": FINDING})
        seen = []
        for args in ((".",), ("--fix", "."), ("--jobs", "2", ".")):
            r = cli(repo, *args)
            seen.append(r.returncode)
            if r.returncode != 2 or len(errors(r)) != 1 or traceback(r) or "good.py:4:5: JXI002" not in r.stdout:
                return False, f"{' '.join(args)}: exit {r.returncode}, {len(errors(r))} error lines"
        f = flake8(repo, "good.py")
        ok = f.returncode == 1 and "JXI002" in f.stdout and not traceback(f)
        return ok, f"exit {seen} (plain, --fix, --jobs 2), one error line; flake8 exit {f.returncode}"

    attack("inputs", f"`# coding: {_codec}` in one file",
           "exit 2, one error line, the other files linted; flake8 unharmed")(_cookie)


@attack("inputs", "an internal error in the CLI", "exit 2 and one line (never 1, 'findings')")
def _(work: Path):
    repo = project(work, {"good.py": FINDING})
    r = script(repo, """
        import sys
        from jaxinterop_lint import cli, cli_extras
        def boom(*a, **k):
            raise KeyError("bug")
        cli_extras.lint_inputs = boom
        sys.exit(cli.main(["."]))
        """)
    return r.returncode == 2 and r.stderr.count("\n") == 1 and not traceback(r), \
        f"exit {r.returncode}, {r.stderr.count(chr(10))} stderr line(s)"


def _fake(folder: Path, body: str) -> Path:
    folder.mkdir()
    (folder / "jaxinterop-lint").write_text("#!/bin/sh\n" + body)
    (folder / "jaxinterop-lint").chmod(0o755)
    os.symlink(PY, folder / "python")
    return folder


@attack("inputs", "README SARIF step: the linter crashes (exit 1, traceback, no report)",
        "the CI step fails")
def _(work: Path):
    repo = project(work / "repo", {"good.py": FINDING})
    crash = step(repo, _fake(work / "crash", "echo Traceback >&2\nexit 1\n"))
    half = step(repo, _fake(work / "half", "printf '{\"runs\": [' \nexit 1\n"))
    return crash.returncode != 0 and half.returncode != 0, \
        f"step exit {crash.returncode} (crash), {half.returncode} (half a report)"


@attack("inputs", "README SARIF step: a file the linter cannot read; then findings only",
        "fails on the error; passes with a whole SARIF report on findings")
def _(work: Path):
    bin_dir = Path(PY).parent
    broken = step(project(work / "broken", {"good.py": FINDING, "bad.py": _bad_cookie("punycode")}), bin_dir)
    repo = project(work / "ok", {"good.py": FINDING})
    good = step(repo, bin_dir)
    try:
        results = len(json.loads((repo / "jaxinterop-lint.sarif").read_text())["runs"][0]["results"])
    except (OSError, ValueError, KeyError, IndexError):
        results = None
    return broken.returncode != 0 and good.returncode == 0 and results == 1, \
        f"step exit {broken.returncode} (error), {good.returncode} with {results} result(s) (findings)"


DEEP = {
    "5000 concatenated strings": "(\n" + "".join(f'    "piece {i}"\n' for i in range(5000)) + ")",
    "900 unary minus": "-" * 900 + "1",
    "900 not": "not " * 900 + "a",
    "3000 and": " and ".join(["a"] * 3000),
    "900 nested lambdas": "lambda: " * 900 + "a",
}


@attack("inputs", "deep but valid Python: " + ", ".join(DEEP) + ", a 1000-branch elif",
        "linted: one finding in each file, no error")
def _(work: Path):
    files = {f"deep{i}.py": "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
             f"z = {expr}\ny = jax.device_put((x, z), NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n"
             for i, expr in enumerate(DEEP.values())}
    files["elif.py"] = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
                        "def f(v, x, m):\n    if v == 0:\n        return 0\n"
                        + "".join(f"    elif v == {i}:\n        return {i}\n" for i in range(1, 1000))
                        + "    else:\n        y = jax.device_put(x, NamedSharding(m, P('x')))\n"
                          "        return torch.from_dlpack(y)\n")
    r = cli(project(work, files), ".")
    found = r.stdout.count("JXI002")
    if sys.version_info[:2] == (3, 12) and found >= 1 and all("too deeply nested" in e for e in errors(r)):
        return None, f"skipped: Python 3.12 caps recursion through C code ({found} linted, the rest one clear line)"
    return r.returncode == 1 and found == len(files) and not errors(r), \
        f"exit {r.returncode}, {found}/{len(files)} findings, {len(errors(r))} errors"


def _many(n: int) -> str:
    lines = ["import jax, torch", "from jax.sharding import NamedSharding, PartitionSpec as P", "",
             "def step(x, m):", "    y = jax.device_put(x, NamedSharding(m, P('x')))"]
    lines += [f"    t{i} = torch.from_dlpack(y)  # consumer number {i:04d} of the sharded batch" for i in range(n)]
    return "\n".join(lines) + "\n"


@attack("inputs", "200 and 500 findings in one file (15 and 38 KB), JSON output with every fix",
        "time linear in findings: CPU t(500) / t(200) under 4 (2.5 is linear, 6.25 quadratic)")
def _(work: Path):
    repo = project(work, {"many200.py": _many(200), "many500.py": _many(500)})
    times = {}
    for n in (200, 500):
        # this child's own CPU time (os.wait4), not the wall clock nor RUSAGE_CHILDREN: the
        # attacks run in threads, and another attack's children would be counted too
        out = work / f"many{n}.json"
        with open(out, "w") as fh:
            child = subprocess.Popen([PY, "-m", "jaxinterop_lint", "--no-cache", "--output-format", "json",
                                      f"many{n}.py"], cwd=repo, env=clean_env(), stdout=fh,
                                     stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        times[n] = usage.ru_utime + usage.ru_stime
        r = subprocess.CompletedProcess(child.args, child.returncode, out.read_text(), "")
        fixes = sum(1 for f in json.loads(r.stdout) if f["fix"]) if r.stdout.startswith("[") else -1
        if fixes != n:
            return False, f"{n} findings: {fixes} fixes, exit {r.returncode}"
    ratio = times[500] / times[200]
    return ratio < 4, f"{times[200]:.2f} s and {times[500]:.2f} s of CPU (ratio {ratio:.2f})"


def peak_run(repo: Path, *args, timeout: int = 300) -> tuple:
    """``jaxinterop-lint --no-cache ARGS`` in ``repo``: (exit status or "timeout", stdout,
    stderr, the child's peak RSS in MB from ``os.wait4``)."""
    proc = subprocess.Popen([PY, "-m", "jaxinterop_lint", "--no-cache", *map(str, args)], cwd=repo,
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    timer = __import__("threading").Timer(timeout, proc.kill)
    timer.start()
    try:
        out, err = proc.stdout.read(), proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    code = os.waitstatus_to_exitcode(status)
    return ("timeout" if code == -signal.SIGKILL else code), out.decode(errors="replace"), \
        err.decode(errors="replace"), usage.ru_maxrss / 1024


def _large(name: str):
    sys.path.insert(0, str(ROOT / "scripts"))
    import large_inputs

    return getattr(large_inputs, name)


@attack("inputs", "a 2 MB list literal exported, and one bound to a name nothing uses",
        "both files' findings; peak memory within 50 MB + 30x the file (110 MB)")
def _(work: Path):
    repo = project(work, {"used.py": _large("literal_used")(2 << 20), "unused.py": _large("literal_unused")(2 << 20)})
    seen = []
    for name in ("used.py", "unused.py"):
        code, out, _, peak = peak_run(repo, name)
        seen.append(f"{name}: exit {code}, {peak:.0f} MB")
        if code != 1 or "JXI002" not in out or peak > 50 + 30 * 2:
            return False, "; ".join(seen)
    return True, "; ".join(seen)


@attack("inputs", "5 MB of dense code (a file too large to analyse within the limits)",
        "one clear error line (exit 2), peak memory within 50 MB + 30x the file (200 MB)")
def _(work: Path):
    repo = project(work, {"dense.py": _large("dense")(5 << 20)})
    code, out, err, peak = peak_run(repo, "dense.py")
    lines = errors(subprocess.CompletedProcess((), code, out, err))
    ok = code == 2 and len(lines) == 1 and "too large to analyse" in lines[0] and peak <= 200 and "Traceback" not in err
    return ok, f"exit {code}, {len(lines)} error line(s), {peak:.0f} MB"


@attack("inputs", "flake8: a file the plugin cannot lint (1,200 nested lambdas); an internal error",
        "a JXI000 line for the file (exit 1), never silence")
def _(work: Path):
    # (JAX code reaches its export: a file no JAX code reaches is never parsed at all)
    repo = project(work, {"deep.py": "import jax\nimport torch\nz = " + "lambda: " * 1200 + "a\n"
                                     "t = torch.from_dlpack(jax.device_put(z, s))\n",
                          "good.py": FINDING})
    f = flake8(repo, "deep.py")
    bug = script(repo, """
        import sys
        from jaxinterop_lint import engine
        def boom(*a, **k):
            raise RuntimeError("a bug")
        engine.lint_source = boom   # the plugin lints through the engine
        from flake8.main.cli import main
        sys.exit(main(["--select=JXI", "-j", "1", "good.py"]))
        """)
    ok = f.returncode == 1 and "JXI000" in f.stdout and bug.returncode == 1 and "JXI000" in bug.stdout
    return ok, f"exit {f.returncode} / {bug.returncode}: {'JXI000 both' if ok else (f.stdout + bug.stdout)[:120]}"


# -- the cache is repository content ------------------------------------------------------------
CACHE = ".jaxinterop_lint_cache"
KEY_ENV = "JAXINTEROP_LINT_KEY_DIR"
MEMORY_LIMIT = 4 << 30      # a run that reads /dev/zero would pass it within seconds


def _limit_memory():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def cached(repo: Path, keys: Path, *args, timeout: int = 120) -> subprocess.CompletedProcess:
    """``jaxinterop-lint ARGS`` with the cache on, the per-user key in ``keys``, under a
    memory limit and a timeout (a timeout is a failure of the attack, not of the script)."""
    try:
        return run([PY, "-m", "jaxinterop_lint", *map(str, args)], repo, env={KEY_ENV: str(keys)},
                   timeout=timeout, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, -1, "", f"timed out after {timeout} s")


def store_file(repo: Path) -> Path:
    files = sorted((repo / CACHE).glob("*.json"))
    if len(files) != 1:
        raise RuntimeError(f"expected one store file, found {len(files)}")
    return files[0]


def reported(r, where: str = "a.py:4:5: JXI002") -> bool:
    return r.returncode == 1 and where in r.stdout and not traceback(r)


def _outcome(r) -> str:
    return "timed out" if r.returncode == -1 else f"exit {r.returncode}{', traceback' if traceback(r) else ''}"


def _sign(path: Path, payload: bytes, keys: Path) -> bytes:
    """``payload`` as the store file ``path`` signed with the key in ``keys`` (the store's
    own format: a header line with the file's MAC, then the payload, each entry line with
    its own MAC: :func:`~jaxinterop_lint.pipeline.store.seal`); a store without MACs
    (before issue 13) is plain JSON."""
    try:
        from jaxinterop_lint.pipeline import store

        key = (keys / "key").read_bytes()
        return store.seal(key, str(path), payload)
    except (ImportError, AttributeError, OSError):
        return payload


def _split(data: bytes) -> bytes:
    return data[data.index(b"\n") + 1:] if not data.startswith(b"{") else data


def _files_of(data: bytes) -> dict:
    """The entries of a store file, every field parsed (the store's own layout,
    :mod:`jaxinterop_lint.pipeline.storeformat`)."""
    from jaxinterop_lint.pipeline import storeformat

    return storeformat.decode(_split(data)) or {}


def _payload_of(files: dict) -> bytes:
    """A payload of ``{path: entry}`` in the store's own layout."""
    from jaxinterop_lint.pipeline import storeformat

    return storeformat.payload(files)


for _target in ("/dev/zero", "/dev/urandom", "FIFO"):
    def _device(work: Path, target=_target):
        repo = project(work / "repo", {"a.py": FINDING})
        cached(repo, work / "keys", ".")
        f = store_file(repo)
        f.unlink()
        os.mkfifo(f) if target == "FIFO" else f.symlink_to(target)
        r = cached(repo, work / "keys", ".", timeout=60)
        return reported(r), f"{_outcome(r)} under a {MEMORY_LIMIT >> 30} GB limit"

    attack("cache", f"the store file is a {'FIFO' if _target == 'FIFO' else 'symlink to ' + _target}",
           "not read: the finding reported, no memory growth, no hang")(_device)


@attack("cache", "a committed dangling `.gitignore` symlink (relative) in the cache folder",
        "nothing created where it points")
def _(work: Path):
    repo = project(work / "repo", {"a.py": FINDING})
    (repo / CACHE).mkdir()
    (repo / CACHE / ".gitignore").symlink_to("../../victim/ignore")
    (work / "victim").mkdir()
    r = cached(repo, work / "keys", ".")
    made = (work / "victim" / "ignore").exists()
    return not made and reported(r), f"{'FILE CREATED' if made else 'nothing created'}, {_outcome(r)}"


@attack("cache", "the cache folder is a committed symlink to a folder outside the tree",
        "nothing written there")
def _(work: Path):
    repo = project(work / "repo", {"a.py": FINDING})
    (work / "outside").mkdir()
    (repo / CACHE).symlink_to(work / "outside")
    r = cached(repo, work / "keys", ".")
    written = sorted(p.name for p in (work / "outside").iterdir())
    return not written and reported(r), f"written outside: {written or 'nothing'}, {_outcome(r)}"


@attack("cache", "a committed cache with blanked results, on a fresh clone (and under flake8)",
        "not believed: the finding reported")
def _(work: Path):
    repo = project(work / "repo", {"a.py": FINDING})
    cached(repo, work / "attacker", ".")              # the attacker's own run, at the path CI uses
    f = store_file(repo)
    files = _files_of(f.read_bytes())
    for e in files.values():
        if "result" in e:
            e["result"]["data"].update(findings=[], handled=[], error=None, analysed=True)
    forged = _sign(f, _payload_of(files), work / "attacker")
    f.write_bytes(forged)
    own = cached(repo, work / "attacker", ".")        # the forgery works where its key is
    r = cached(repo, work / "ci", ".")                 # a fresh clone in CI: another key
    f.write_bytes(forged)
    try:
        fl = run([PY, "-m", "flake8", "--select=JXI", "-j", "1", "a.py"], repo, env={KEY_ENV: str(work / "ci")},
                 timeout=120)
    except subprocess.TimeoutExpired:
        return False, "flake8 timed out"
    ok = own.returncode == 0 and reported(r) and fl.returncode == 1 and "JXI002" in fl.stdout
    return ok, f"{_outcome(r)} (the attacker's machine: exit {own.returncode}); flake8 exit {fl.returncode}"


@attack("cache", "store files of the wrong shape: `[]`, an entry that is a string, 100k nesting "
        "(unsigned, and signed with the user's own key)", "each a miss: the finding reported, no traceback")
def _(work: Path):
    repo = project(work / "repo", {"a.py": FINDING})
    keys = work / "keys"
    cached(repo, keys, ".")
    f = store_file(repo)
    path = str(repo / "a.py")
    from jaxinterop_lint.pipeline import storeformat

    shapes = {"[]": b"[]", "string entry": b"\n".join([storeformat.HEADER, storeformat.dumps(path) + b'\t"x"']),
              "100k nesting": b"[" * 100_000 + b"]" * 100_000}
    seen = []
    for name, payload in shapes.items():
        for data in (payload, _sign(f, payload, keys)):
            f.write_bytes(data)
            r = cached(repo, keys, ".")
            seen.append(r.returncode)
            if not reported(r):
                return False, f"{name}: {_outcome(r)}: {r.stderr.strip()[-120:]}"
    return True, f"exit {sorted(set(seen))} in all {len(seen)} runs"


@attack("cache", "a module that a cached file imports is created", "the new finding reported on the next run")
def _(work: Path):
    repo = project(work / "repo", {"a.py": "import torch\nfrom helpers import make\n\n\ndef main(x, m):\n"
                                            "    y = make(x, m)\n    return torch.from_dlpack(y)\n"})
    first = cached(repo, work / "keys", "a.py")
    (repo / "helpers.py").write_text("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
                                     "def make(x, m):\n    return jax.device_put(x, NamedSharding(m, P('x')))\n")
    r = cached(repo, work / "keys", "a.py")
    return first.returncode == 0 and reported(r, "a.py:7:12: JXI002"), \
        f"exit {first.returncode} before, {_outcome(r)} after"


@attack("cache", "`cp -p` of other content (same size and mtime) over a cached file",
        "linted again: the new finding reported")
def _(work: Path):
    clean = FINDING.replace("torch.from_dlpack(y)", "torch.from_numpy(y) ")
    repo = project(work / "repo", {"a.py": clean})
    old = time.time() - 3600
    os.utime(repo / "a.py", (old, old))
    codes = [cached(repo, work / "keys", "a.py").returncode for _ in range(2)]
    (work / "other.py").write_text(FINDING)
    os.utime(work / "other.py", (old, old))
    subprocess.run(["cp", "-p", str(work / "other.py"), str(repo / "a.py")], check=True)
    r = cached(repo, work / "keys", "a.py")
    return codes == [0, 0] and reported(r), f"exit {codes} before, {_outcome(r)} after"


# -- writing files ------------------------------------------------------------------------------
@attack("writing", "--fix on a file owned by another user and group", "owner, group and mode kept")
def _(work: Path):
    if os.geteuid() != 0:
        return None, "skipped: giving a file to another user needs root"
    repo = project(work, {"m.py": REMOVED})
    os.chown(repo / "m.py", 65534, 65534)
    os.chmod(repo / "m.py", 0o664)
    cli(repo, "--fix", "m.py")
    st = os.stat(repo / "m.py")
    got = (st.st_uid, st.st_gid, oct(st.st_mode & 0o7777))
    return got == (65534, 65534, "0o664") and (repo / "m.py").read_text() == REMOVED_FIXED, f"uid, gid, mode {got}"


@attack("writing", "--fix and --add-noqa on a read-only file (as root: without CAP_DAC_OVERRIDE)",
        "refused (exit 2), the file unchanged")
def _(work: Path):
    repo = project(work, {"ro.py": REMOVED, "ro2.py": FINDING})
    os.chmod(repo / "ro.py", 0o444)
    os.chmod(repo / "ro2.py", 0o444)
    codes = []
    for args, name, text in ((("--fix", "ro.py"), "ro.py", REMOVED), (("--add-noqa", "ro2.py"), "ro2.py", FINDING)):
        r = cli(repo, *args, preexec_fn=no_dac_override)
        codes.append(r.returncode)
        if r.returncode != 2 or (repo / name).read_text() != text or "not writable" not in r.stderr:
            return False, f"{args[0]}: exit {r.returncode}, {r.stderr.strip()[:100]}"
    return True, f"exit {codes}, files unchanged"


@attack("writing", "--fix and --add-noqa on symlinks to a file out of the tree",
        "the outside file untouched, exit 2")
def _(work: Path):
    (work / "outside").mkdir(parents=True)
    (work / "outside" / "a.py").write_text(REMOVED)
    (work / "outside" / "b.py").write_text(FINDING)
    tree = project(work / "tree", {})
    (tree / "a.py").symlink_to(work / "outside" / "a.py")
    (tree / "b.py").symlink_to(work / "outside" / "b.py")
    fix = cli(tree, "--fix", ".")
    noqa = cli(tree, "--add-noqa", ".")
    same = (work / "outside" / "a.py").read_text() == REMOVED and (work / "outside" / "b.py").read_text() == FINDING
    return same and fix.returncode == 2 and noqa.returncode == 2, \
        f"outside {'untouched' if same else 'WRITTEN'}, exit {fix.returncode} / {noqa.returncode}"


@attack("writing", "an editor saves (in place, or by renaming its file over) between the last check and the rename",
        "the editor's text stays, the fix is not written")
def _(work: Path):
    out = []
    for how in ("in-place", "rename"):
        repo = project(work / how, {"m.py": REMOVED})
        r = script(repo, f"""
            import os, sys
            from jaxinterop_lint.fix import writer
            def save():
                if {how!r} == "in-place":
                    with open("m.py", "r+") as fh:
                        fh.write({REMOVED + "# saved"!r})
                else:
                    with open(".swap", "w") as fh:
                        fh.write({REMOVED + "# saved"!r})
                    os.replace(".swap", "m.py")
            writer._before_swap = save
            from jaxinterop_lint import cli
            sys.exit(cli.main(["--no-cache", "--fix", "m.py"]))
            """)
        kept = (repo / "m.py").read_text() == REMOVED + "# saved"
        out.append(kept and r.returncode == 2 and not temps(repo))
    return all(out), "edit kept (in place, by rename)" if all(out) else f"kept: {out}"


_KILL = """
import os, signal, sys
# the signal sent acts as by default, even where this script inherited it ignored (nohup, `&`)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
real = os.fsync
def fsync(fd):
    real(fd)
    os.kill(os.getpid(), signal.{sig})
os.fsync = fsync
from jaxinterop_lint import cli
sys.exit(cli.main(["--no-cache", "--fix", "m.py"]))
"""


@attack("writing", "SIGTERM, SIGHUP while the temporary file exists; SIGKILL, then the next run",
        "no temporary file left (SIGKILL's removed by the next run), the file whole")
def _(work: Path):
    for sig in ("SIGTERM", "SIGHUP"):
        repo = project(work / sig, {"m.py": REMOVED})
        r = script(repo, _KILL.format(sig=sig))
        if r.returncode != -getattr(signal, sig) or temps(repo):
            return False, f"{sig}: exit {r.returncode}, left {temps(repo)}"
    repo = project(work / "SIGKILL", {"m.py": REMOVED})
    script(repo, _KILL.format(sig="SIGKILL"))
    left = temps(repo)
    r = cli(repo, "--fix", "m.py")
    ok = len(left) == 1 and not temps(repo) and (repo / "m.py").read_text() == REMOVED_FIXED and r.returncode == 0
    return ok, f"none after SIGTERM/SIGHUP; SIGKILL left {len(left)}, next run left {len(temps(repo))}"


@attack("writing", "the disk fills up while the fix is written (RLIMIT_FSIZE)",
        "one error line, exit 2, no temporary file, the file unchanged")
def _(work: Path):
    text = REMOVED + "# " + "x" * 4000 + "\n"
    repo = project(work, {"m.py": text})
    r = script(repo, """
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
        from jaxinterop_lint import cli
        sys.exit(cli.main(["--no-cache", "--fix", "m.py"]))
        """)
    ok = r.returncode == 2 and "cannot write" in r.stderr and not temps(repo) and (repo / "m.py").read_text() == text
    return ok, f"exit {r.returncode}, {len(temps(repo))} temporary files"


@attack("writing", "JXI004 fix where `np` is a local variable of the callback",
        "the fix uses a free name (`numpy`), never the local")
def _(work: Path):
    repo = project(work, {"cb.py": textwrap.dedent("""\
        import numpy as np
        from jax.experimental.buffer_callback import buffer_callback
        def cb(ctx, out, x):
            np = make_something()
            return x.__array__(copy=True)
        f = buffer_callback(cb, spec)
        """)})
    r = cli(repo, "--output-format", "json", "cb.py")
    edits = [e["text"] for f in json.loads(r.stdout) if f["fix"] for e in f["fix"]["edits"]]
    return edits == ["numpy.from_dlpack(x).copy()"], f"edit {edits}"


@attack("writing", "file names with a newline, ESC sequences, a bidi override, an undecodable byte",
        "printed escaped in every format; one output line per finding")
def _(work: Path):
    names = ["a\nx.py:1:1: JXI002 forged.py", "b\x1b[2J\x1b[31m.py", "c\u202eyp.py", os.fsdecode(b"d\xff.py")]
    repo = project(work, {n: FINDING for n in names})
    bad = []
    for fmt in ("concise", "full", "github", "json", "sarif"):
        r = cli(repo, "--output-format", fmt, "--color", "never", ".")
        raw = any(ch in r.stdout for ch in "\x1b\u202e") or r.returncode != 1
        if fmt in ("concise", "github") and len(r.stdout.splitlines()) != len(names):
            raw = True
        if fmt in ("json", "sarif"):
            try:
                json.loads(r.stdout)
            except ValueError:
                raw = True
        if raw:
            bad.append(fmt)
    return not bad, "escaped in concise, full, github, json, sarif" if not bad else f"raw in {bad}"


# -- the runtime shim ---------------------------------------------------------------------------
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


def jax_script(repo: Path, body: str) -> subprocess.CompletedProcess:
    return script(repo, SHARDED + textwrap.dedent(body), env=XLA)


@attack("shim", "`jaxinterop-lint run` starts an interpreter of another virtual environment",
        "the shim is installed there, and nothing else of the linter's environment is importable")
def _(work: Path):
    site = work / "site-packages"
    shutil.copytree(ROOT / "jaxinterop_lint", site / "jaxinterop_lint", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "six.py").write_text("")  # a dependency of the linter's environment
    subprocess.run([PY, "-m", "venv", "--without-pip", str(work / "venv")], check=True, timeout=300)
    env = {"PYTHONPATH": str(site / "jaxinterop_lint" / "shim" / "_site"), "JAXINTEROP_SHIM": "raise"}
    r = run([str(work / "venv" / "bin" / "python"), "-c",
             "import importlib.util as u; from jaxinterop_lint import shim; "
             "print(shim.is_installed(), u.find_spec('six') is None)"], work, env=env)
    return r.stdout.split() == ["True", "True"], f"installed, six not importable: {r.stdout.split() or r.stderr[-120:]}"


@attack("shim", "a forked child cannot open its own report (the folder is gone)",
        "the child's exports raise what JAX raises, never a report error")
def _(work: Path):
    (work / "d").mkdir(parents=True)
    r = jax_script(work, """
        shim.install("record", "d/hits.jsonl")
        os.unlink("d/hits.jsonl"); os.rmdir("d")
        rfd, wfd = os.pipe()
        if os.fork() == 0:
            os.write(wfd, json.dumps([export(), export()]).encode()); os._exit(0)
        os.close(wfd)
        print(os.read(rfd, 100).decode())
        """)
    return r.stdout.strip() == '["BufferError", "BufferError"]', r.stdout.strip() or r.stderr[-120:]


@attack("shim", "the program closes the report's descriptor and opens a file that gets its number",
        "no hit lands in the program's file; the report gets them")
def _(work: Path):
    work.mkdir(parents=True)
    r = jax_script(work, """
        shim.install("record", "hits.jsonl")
        report = os.path.realpath("hits.jsonl")
        fd = next(int(n) for n in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{n}") == report)
        os.close(fd)
        mine = os.open("mine.txt", os.O_WRONLY | os.O_CREAT, 0o644)
        print(mine == fd, export())
        """)
    mine = (work / "mine.txt").read_text() if (work / "mine.txt").exists() else "?"
    hits = (work / "hits.jsonl").read_text().count("\n") if (work / "hits.jsonl").exists() else 0
    return r.stdout.split() == ["True", "BufferError"] and mine == "" and hits == 1, \
        f"program's file {len(mine)} bytes, report {hits} hit(s)"


@attack("shim", "pickle the patched consumers (torch, numpy, jax.dlpack, jax.Array methods)",
        "they pickle and unpickle to the same objects")
def _(work: Path):
    work.mkdir(parents=True)
    r = jax_script(work, """
        import pickle, torch.utils.dlpack, jax.dlpack
        from jax._src.array import ArrayImpl
        shim.install("raise")
        fns = [torch.from_dlpack, torch.as_tensor, torch.tensor, torch.asarray, torch.frombuffer,
               torch.utils.dlpack.from_dlpack, np.from_dlpack, jax.dlpack.from_dlpack, jnp.from_dlpack,
               ArrayImpl.__dlpack__, ArrayImpl.unsafe_buffer_pointer]
        good = 0
        for f in fns:
            try:
                good += pickle.loads(pickle.dumps(f)) is f
            except Exception:
                pass
        print(good, len(fns))
        """)
    parts = r.stdout.split()
    return len(parts) == 2 and parts[0] == parts[1], f"{'/'.join(parts) or r.stderr[-120:]} pickle"


@attack("shim", "`verify` on a non-UTF-8 report, a torn line, a line of the wrong shape",
        "exit 2 with one line naming the file and line")
def _(work: Path):
    repo = project(work, {"a.py": FINDING})
    got = []
    for i, data in enumerate((b"\xff\xfe\n", b'{"path": "/a.py", "li', b'{"path": 1, "line": 2}\n')):
        (repo / f"r{i}.jsonl").write_bytes(data)
        r = run([PY, "-m", "jaxinterop_lint", "verify", "--report", f"r{i}.jsonl", "a.py"], repo)
        got.append(r.returncode)
        if r.returncode != 2 or r.stderr.count("\n") != 1 or traceback(r):
            return False, f"report {i}: exit {r.returncode}: {r.stderr.strip()[:100]}"
    return True, f"exit {got}"


# -- running the table --------------------------------------------------------------------------
def run_attack(a: Attack, base: Path) -> dict:
    work = base / re.sub(r"[^a-z0-9]+", "-", f"{a.section}-{a.name}".lower())[:80]
    start = time.monotonic()
    try:
        passed, observed = a.check(work)
    except Exception as exc:  # an attack that cannot even be built is a failure of the script
        passed, observed = False, f"{type(exc).__name__}: {exc}"
    return {"section": a.section, "attack": a.name, "expected": a.expected, "result": observed,
            "verdict": "skipped" if passed is None else ("defended" if passed else "FAILED"),
            "seconds": round(time.monotonic() - start, 1)}


def table(rows: list) -> str:
    def cell(text) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    out = ["| section | attack | expected | result | verdict |", "|---|---|---|---|---|"]
    out += [f"| {r['section']} | {cell(r['attack'])} | {cell(r['expected'])} | {cell(r['result'])} | "
            f"{r['verdict']} |" for r in rows]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--only", metavar="TEXT", help="only the attacks whose section or name contain TEXT")
    parser.add_argument("--list", action="store_true", help="list the attacks and exit")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--jobs", type=int, default=2, help="attacks run at once (default 2)")
    args = parser.parse_args(argv)
    chosen = [a for a in ATTACKS if not args.only or args.only.lower() in f"{a.section} {a.name}".lower()]
    if args.list:
        print("\n".join(f"{a.section}: {a.name}" for a in chosen))
        return 0
    if not chosen:
        print(f"attack.py: no attack matches {args.only!r}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="jxi-attack-") as tmp:
        with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda a: run_attack(a, Path(tmp)), chosen))
    sys.stdout.write(table(rows))
    failed = [r for r in rows if r["verdict"] == "FAILED"]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} attacks defended or skipped; {len(failed)} failed; "
          f"{sum(r['seconds'] for r in rows):.0f} s of attack time", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
