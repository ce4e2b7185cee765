#!/usr/bin/env python3
"""Measure jaxinterop-lint against ruff, flake8 and a read+hash baseline (issue 16 targets).

Every corpus is a pinned PyPI wheel (download code of ``scripts/corpus_check.py``, never
imported or run) copied into a real project: a folder with ``.git`` and a
``pyproject.toml``, as users have it.  Each round runs every tool once on every corpus, so
drift on a shared machine hits all tools alike; the tables give medians and ratios of tools
run in the same rounds.

Usage::

    python bench/bench.py                          # every corpus, 3 rounds
    python bench/bench.py --corpora jax --runs 5
    python bench/bench.py --linter-src /tmp/base   # time another checkout (its "before")
    python bench/bench.py --readme                 # also write the README "Speed" table

Rows (per corpus): ``ruff check --select B --no-cache``, the linter cold without cache
(``--no-cache``), cold with the cache on (the cache folder removed first), warm (nothing
changed), ``--jobs 1`` cold, read+hash of every file in one fresh process.  On the jax
corpus also flake8 with and without the plugin, on the whole tree and on one file, and the
start-up rows (``--version``, a lint of one small file).  Peak memory: the largest
``ru_maxrss`` of a linter run and the largest summed RSS of its process tree.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "scripts"))
import corpus_check  # noqa: E402  (the shared download/unpack code)

# The corpora of issue 16, pinned.  keras is not in corpus_check's pins: pinned here.
PINS = dict(corpus_check.PINNED, keras="3.15.1")
CORPORA = ("jax", "transformers", "torchrl", "keras")
BIN = Path(sys.executable).parent
README = REPO_ROOT / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
# One file for the editor's case (flake8 on the file saved): in jax one that names an interop
# API (DLPack), analysed; in transformers one the plan leaves out (its stored result holds
# for the plan's epoch: every file of the project is checked unchanged).
ONE_FILE = {"jax": "jax/_src/dlpack.py", "transformers": "transformers/debug_utils.py"}
WHOLE_TREE_FLAKE8 = ("jax",)   # flake8 on every file (a minute and more on the larger corpora)
SMALL = "import torch\n\ndef f(x):\n    return torch.from_dlpack(x)\n"

HASH_SCRIPT = """\
import hashlib, os, sys
for top in sys.argv[1:]:
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if not x.startswith('.')]
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(d, name), "rb") as f:
                    hashlib.sha1(f.read()).hexdigest()
"""

FLAKE8_WITHOUT_JXI = """\
import sys
from flake8.plugins import finder
_orig = finder._find_importlib_plugins
def _without_jxi():
    for p in _orig():
        if p.entry_point.name != "JXI" and "jaxinterop" not in p.package.lower():
            yield p
finder._find_importlib_plugins = _without_jxi
from flake8.main.cli import main
sys.exit(main())
"""


def _children(pid: int) -> list:
    parents: dict = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    st = f.read()
                parents.setdefault(int(st[st.rindex(b")") + 2:].split()[1]), []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class Sample:
    """One timed process: wall seconds, exit status, largest process and tree RSS (KiB)."""

    seconds: float
    returncode: int
    maxrss_kb: int
    tree_kb: int
    stderr: str


def measure(cmd, cwd, env=None, memory=False, timeout=3600.0) -> Sample:
    """Run ``cmd`` in ``cwd`` (stdout discarded) and time it."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        peak, done = [0], threading.Event()

        def poll():
            while not done.wait(0.02):
                peak[0] = max(peak[0], sum(_rss_kb(p) for p in [proc.pid, *_children(proc.pid)]))

        poller = threading.Thread(target=poll, daemon=True) if memory else None
        if poller:
            poller.start()
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            done.set()
        seconds = time.perf_counter() - start
        if poller:
            poller.join()
        err.seek(0)
        return Sample(seconds, os.waitstatus_to_exitcode(status), usage.ru_maxrss, peak[0],
                      err.read().decode(errors="replace"))


@dataclass
class Tool:
    """A command to time on one corpus; ``before`` runs untimed before each timed run."""

    key: str
    name: str
    cmd: list
    cwd: Path
    env: dict = None
    before: object = None
    memory: bool = False
    ok: tuple = (0, 1)
    samples: list = field(default_factory=list)

    @property
    def median(self):
        good = [s.seconds for s in self.samples if s.returncode in self.ok]
        return statistics.median(good) if good else None


def make_project(name: str, src: Path, work: Path) -> Path:
    """A copy of the unpacked package ``src`` in a project folder with ``.git`` and
    ``pyproject.toml`` (what users have), reused when already there."""
    proj = work / name
    if not (proj / ".git").exists():
        shutil.rmtree(proj, ignore_errors=True)
        shutil.copytree(src, proj)
        subprocess.run(["git", "init", "-q", str(proj)], check=True)
        (proj / "pyproject.toml").write_text(f'[project]\nname = "{name}-bench"\nversion = "0"\n')
    return proj


def compile_linter(src: Path) -> None:
    """Write the bytecode of the timed linter's sources, as ``pip install`` does for an
    installed package: the runs (``PYTHONDONTWRITEBYTECODE=1``, so nothing else is written
    there) then time the linter as users run it, not the compiling of its modules in
    every process (about 50 ms of each flake8 or start-up row)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "jaxinterop_lint")], env=env,
                   stdout=subprocess.DEVNULL, check=False)


def linter_env(src: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
    env.pop("JAXINTEROP_LINT_DEBUG", None)
    return env


def tools_for(name: str, proj: Path, src: Path, flake8: bool) -> list:
    """The rows timed on one corpus."""
    py, env = sys.executable, linter_env(src)
    lint = [py, "-m", "jaxinterop_lint", "--quiet"]
    pkgs = sorted(p.name for p in proj.iterdir() if not p.name.startswith(".") and p.name != "pyproject.toml")
    cache = proj / ".jaxinterop_lint_cache"
    rm_cache = lambda: shutil.rmtree(cache, ignore_errors=True)  # noqa: E731
    out = [
        Tool("ruff", "ruff check --select B --no-cache", [str(BIN / "ruff"), "check", "--select", "B", "--no-cache",
                                                          "--exit-zero", "-q", "."], proj),
        Tool("cold", "jaxinterop-lint --no-cache (cold)", [*lint, "--no-cache", "."], proj, env, memory=True),
        Tool("cold_cache", "jaxinterop-lint, cache on, cold", [*lint, "."], proj, env, before=rm_cache, memory=True),
        Tool("warm", "jaxinterop-lint, cache on, warm (nothing changed)", [*lint, "."], proj, env,
             before=[*lint, "."], memory=True),
        Tool("jobs1", "jaxinterop-lint --jobs 1 --no-cache (cold)", [*lint, "--jobs", "1", "--no-cache", "."],
             proj, env, memory=True),
        Tool("hash", "read + hash every file (1 process)", [py, "-c", HASH_SCRIPT, *pkgs], proj),
    ]
    if flake8:
        f8 = str(BIN / "flake8")
        one = ONE_FILE.get(name)
        fenv = dict(env)
        if name in WHOLE_TREE_FLAKE8:
            out += [
                Tool("f8_jxi", "flake8 --select=JXI, whole tree", [f8, "--select=JXI", *pkgs], proj, fenv,
                     before=rm_cache),
                Tool("f8_none", "flake8 --select=JXI without the plugin, whole tree",
                     [py, "-c", FLAKE8_WITHOUT_JXI, "--select=JXI", *pkgs], proj, fenv),
            ]
        if one:
            out += [
                Tool("f8_one", f"flake8 --select=JXI {one} (cache from the CLI)", [f8, "--select=JXI", one],
                     proj, fenv, before=[*lint, "."]),
                Tool("f8_one_cold", f"flake8 --select=JXI {one} (no cache)", [f8, "--select=JXI", one],
                     proj, fenv, before=rm_cache),
                Tool("f8_one_none", f"flake8 --select=JXI {one} without the plugin",
                     [py, "-c", FLAKE8_WITHOUT_JXI, "--select=JXI", one], proj, fenv),
            ]
    if flake8 and name == "jax":
        small = proj / "bench_small.py"
        small.write_text(SMALL)
        out += [
            Tool("version", "jaxinterop-lint --version", [py, "-m", "jaxinterop_lint", "--version"], proj, env,
                 ok=(0,)),
            Tool("small", "jaxinterop-lint --no-cache bench_small.py", [*lint, "--no-cache", "bench_small.py"],
                 proj, env),
        ]
    return out


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(v, digits=2, unit=""):
    return "n/a" if v is None else f"{v:.{digits}f}{unit}"


def verdict(v, limit):
    return "n/a" if v is None else ("met" if v <= limit else "**not met**")


def target_rows(by: dict) -> list:
    """``[target, measured, limit, verdict]`` for every target of issue 16."""
    rows = []
    for name, t in by.items():
        med = {k: x.median for k, x in t.items()}
        r = ratio(med.get("cold"), med.get("ruff"))
        rows.append([f"{name}: cold (--no-cache) <= 3x ruff", fmt(r, unit="x"), "3x", verdict(r, 3)])
        r = ratio(med.get("cold_cache"), med.get("ruff"))
        rows.append([f"{name}: cold, cache on <= 3x ruff", fmt(r, unit="x"), "3x", verdict(r, 3)])
        r = ratio(med.get("warm"), med.get("hash"))
        rows.append([f"{name}: warm <= 2x read+hash", fmt(r, unit="x"), "2x", verdict(r, 2)])
        r = ratio(med.get("cold"), med.get("jobs1"))
        rows.append([f"{name}: default jobs / --jobs 1 (workers never slower)", fmt(r, unit="x"), "1x",
                     verdict(r, 1.0)])
        for key, base, label in (("f8_jxi", "f8_none", "flake8 --select=JXI, whole tree"),
                                 ("f8_one", "f8_one_none", "flake8 --select=JXI, one file (CLI cache)"),
                                 ("f8_one_cold", "f8_one_none", "flake8 --select=JXI, one file (no cache)")):
            if key in med:
                r = ratio(med[key], med[base])
                over = None if r is None else (r - 1) * 100
                rows.append([f"{name}: {label}, over flake8 without the plugin", fmt(over, 1, "%"), "+10%",
                             verdict(over, 10)])
        for key, label in (("version", "start-up: --version"), ("small", "start-up: lint of one small file")):
            if key in med:
                ms = None if med[key] is None else med[key] * 1000
                rows.append([f"{name}: {label}", fmt(ms, 0, " ms"), "150 ms", verdict(ms, 150)])
        mem = [(s.maxrss_kb, s.tree_kb) for k in ("cold", "cold_cache", "warm", "jobs1") if k in t
               for s in t[k].samples]
        if mem:
            rows.append([f"{name}: peak memory (largest process / process tree)",
                         f"{max(m for m, _ in mem) / 1024:.0f} MB / {max(x for _, x in mem) / 1024:.0f} MB",
                         "reported", "-"])
    return rows


def markdown(rows: list) -> str:
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join("---" for _ in rows[0]) + "|"]
    return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows[1:]])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", default=",".join(CORPORA), help=f"comma-separated subset of {CORPORA}")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=corpus_check.DEFAULT_CACHE)
    ap.add_argument("--linter-src", type=Path, default=REPO_ROOT, help="the checkout whose linter is timed")
    ap.add_argument("--no-flake8", action="store_true", help="skip the flake8 and start-up rows")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--readme", action="store_true", help="write the tables into README.md's Speed section")
    opts = ap.parse_args(argv)
    names = [n.strip() for n in opts.corpora.split(",") if n.strip()]
    missing = [tool for tool in ("ruff", "flake8") if not (BIN / tool).exists()]
    if missing:
        print(f"bench: {', '.join(missing)} not installed beside {sys.executable} "
              f"(pip install -e '.[test,bench]')", file=sys.stderr)
        return 2
    roots = corpus_check.ensure_corpus(names, opts.dir.resolve(), PINS)
    work = opts.dir.resolve() / "bench16"
    by: dict = {}
    stats = {}
    for name in names:
        proj = make_project(name, roots[name], work)
        files = corpus_check.python_files(proj)
        stats[name] = corpus_check.file_stats(files)
        by[name] = {t.key: t for t in tools_for(name, proj, opts.linter_src.resolve(),
                                                 flake8=not opts.no_flake8)}
    compile_linter(opts.linter_src.resolve())
    for rnd in range(opts.runs):
        for name in names:
            for t in by[name].values():
                if callable(t.before):
                    t.before()
                elif t.before:
                    measure(t.before, t.cwd, t.env)
                s = measure(t.cmd, t.cwd, t.env, memory=t.memory)
                t.samples.append(s)
                print(f"  round {rnd + 1}/{opts.runs} {name}: {t.name}: {s.seconds:.2f} s (exit {s.returncode})",
                      file=sys.stderr, flush=True)
    rows = [["corpus", "row", "median s", "ratio to ruff"]]
    for name in names:
        ruff = by[name]["ruff"].median
        for t in by[name].values():
            rows.append([name, t.name, fmt(t.median), fmt(ratio(t.median, ruff), unit="x")])
    head = (f"{', '.join(f'{n} ({stats[n].files} files, {stats[n].mb:.1f} MB)' for n in names)}; "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()}, median of {opts.runs} rounds; "
            f"linter from `{opts.linter_src}`. Command: `python bench/bench.py "
            f"{' '.join(sys.argv[1:] if argv is None else argv)}`")
    bad = [f"{t.name} ({n}): exit {s.returncode}: {s.stderr.strip().splitlines()[-1:] }"
           for n in names for t in by[n].values() for s in t.samples[:1] if s.returncode not in t.ok]
    text = "\n\n".join([head, markdown(rows), markdown([["target (issue 16)", "measured", "limit", "verdict"],
                                                        *target_rows(by)])]
                       + (["Unexpected exit statuses:\n" + "\n".join(f"- {b}" for b in bad)] if bad else []))
    print(text)
    if opts.json:
        opts.json.write_text(json.dumps({n: {k: {"name": t.name, "median": t.median,
                                                 "samples": [s.__dict__ for s in t.samples]}
                                             for k, t in by[n].items()} for n in names}, indent=1, default=str))
    if opts.readme:
        old = README.read_text()
        if START in old and END in old:
            pre, rest = old.split(START, 1)
            README.write_text(f"{pre}{START}\n{text}\n{END}{rest.split(END, 1)[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
