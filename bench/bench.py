#!/usr/bin/env python3
"""Benchmark jaxinterop-lint against flake8, Fixit, ruff and bare libcst (issue 8).

The corpus is the pinned one of ``scripts/corpus_check.py`` (same cache, same
download code): the jax wheel plus flax, optax, brax, torchrl, gymnasium and
transformers, or the jax wheel alone with ``--corpus jax``.  The unpacked
sources are copied into a work tree and every tool runs on the same
directories, ``--runs`` times each, round by round (each round runs every
tool once, so drift hits all tools alike).  The script prints markdown
tables: the median wall time of each tool with its ratio to a cold
jaxinterop-lint run, and the targets of issue 8, met or not.

Usage::

    python bench/bench.py --corpus jax                # the issue's reference corpus
    python bench/bench.py --corpus jax --scaling      # plus the 1x/4x/16x copies
    python bench/bench.py --skip-slow --runs 5        # no Fixit
    python bench/bench.py --corpus jax --readme       # also update bench/README.md and README.md

Every tool runs as a child process; the times include interpreter start-up,
for the linters and for the baselines alike (the parse and hash baselines run
in a fresh ``python`` too).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "scripts"))
import corpus_check  # noqa: E402  (the shared download/unpack code)

CORPORA: dict[str, list[str]] = {
    "jax": ["jax"],
    "full": ["jax", "flax", "optax", "brax", "torchrl", "gymnasium", "transformers"],
}
BIN = Path(sys.executable).parent
BENCH_VENV = Path("/work/venv-bench")
README = Path(__file__).resolve().parent / "README.md"
README_START, README_END = "<!-- bench:start -->", "<!-- bench:end -->"

# Words that mark a file as an interop candidate: the rare names of issue 8's
# prefilter suggestion.  Used only to pick the "analysed files" subset on which
# the per-file target is approximated; the linter has its own list.
INTEROP_WORDS = re.compile(
    rb"dlpack|cuda_array_interface|unsafe_buffer_pointer|cupy|torch|numba|pycuda|"
    rb"buffer_callback|__array_interface__|tensorflow"
)

PARSE_SCRIPT = """\
import sys, libcst
paths = open(sys.argv[1], encoding="utf-8").read().split("\\n")
for p in paths:
    if p:
        with open(p, "rb") as f:
            libcst.parse_module(f.read())
"""

HASH_SCRIPT = """\
import hashlib, os, sys
n = 0
for top in sys.argv[1:]:
    for d, dirs, files in os.walk(top):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(d, name), "rb") as f:
                    hashlib.sha256(f.read()).hexdigest()
                n += 1
print(n)
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


# --------------------------------------------------------------------------
# Measuring one process
# --------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    """Return the pids of all live descendants of ``pid`` (Linux /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _rss_kb(pid: int) -> int:
    """Return the resident set size of ``pid`` in KiB (0 when it is gone)."""
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
    """One timed process: wall seconds, exit status and memory (KiB)."""

    seconds: float
    returncode: int
    maxrss_kb: int  # largest single process (getrusage/wait4 of the child tree)
    tree_peak_kb: int  # largest sum over the process tree, sampled every 20 ms
    stderr: str


def measure(
    cmd: Sequence[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    sample_memory: bool = False,
    timeout: float = 3600,
) -> Sample:
    """Run ``cmd`` in ``cwd`` with stdout discarded and return its Sample.

    ``maxrss_kb`` is ``ru_maxrss`` from ``wait4`` (the child and the
    descendants it waited for, as ``getrusage(RUSAGE_CHILDREN)`` reports);
    with ``sample_memory`` the summed RSS of the whole tree is polled too.
    """
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        peak = [0]
        done = threading.Event()

        def poll() -> None:
            while not done.wait(0.02):
                total = sum(_rss_kb(p) for p in [proc.pid, *_children(proc.pid)])
                peak[0] = max(peak[0], total)

        poller = threading.Thread(target=poll, daemon=True) if sample_memory else None
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
        proc.returncode = os.waitstatus_to_exitcode(status)
        if poller:
            poller.join()
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    return Sample(seconds, proc.returncode, usage.ru_maxrss, peak[0], stderr)


# --------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------


@dataclass
class Tool:
    """A command to time: display name, argv, and how to run it."""

    key: str
    name: str
    cmd: list[str]
    env: dict[str, str] | None = None
    ok_codes: tuple[int, ...] = (0, 1)
    slow: bool = False
    memory: bool = False
    prime: list[str] | None = None  # run (untimed) before each timed run
    samples: list[Sample] = field(default_factory=list)
    note: str = ""

    @property
    def median(self) -> float | None:
        """Median wall seconds over the successful runs, or None."""
        good = [s.seconds for s in self.samples if s.returncode in self.ok_codes]
        return statistics.median(good) if good else None


def _version(cmd: Sequence[str]) -> str:
    """Return the first line ``cmd`` prints, or ``"?"``."""
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


def flake8_has_jxi() -> tuple[bool, str]:
    """Return (whether flake8 in this venv lists the JXI plugin, its version line)."""
    try:
        out = subprocess.run(
            [str(BIN / "flake8"), "--version"], capture_output=True, text=True, timeout=120
        ).stdout
    except OSError:
        return False, "flake8 not found"
    flat = " ".join(out.split())
    return ("jaxinterop" in flat.lower() or "JXI" in flat), flat


def fixit_exe() -> Path | None:
    """Return the ``fixit`` executable (bench venv first, then this venv), or None."""
    for cand in (BENCH_VENV / "bin" / "fixit", BIN / "fixit"):
        if cand.exists():
            return cand
    found = shutil.which("fixit")
    return Path(found) if found else None


def build_tools(
    paths: list[str], skip_slow: bool, linter_jobs: int | None
) -> tuple[list[Tool], list[str]]:
    """Return the tools to time on ``paths`` and notes about tools left out."""
    py = sys.executable
    lint_env = corpus_check.linter_env()
    jobs = ["--jobs", str(linter_jobs)] if linter_jobs else []
    lint = [py, "-m", "jaxinterop_lint", *jobs]
    notes: list[str] = []
    tools: list[Tool] = []
    probe = subprocess.run(
        [*lint, "--help"], capture_output=True, text=True, env=lint_env, timeout=120
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or [""])[-1]
        notes.append(
            "jaxinterop-lint: skipped, `python -m jaxinterop_lint --help` exited "
            f"{probe.returncode}: {last}"
        )
    else:
        tools += [
            Tool(
                "cold",
                "jaxinterop-lint (cold, --no-cache)",
                [*lint, "--no-cache", *paths],
                lint_env,
                memory=True,
            ),
            Tool(
                "warm",
                "jaxinterop-lint (warm cache)",
                [*lint, *paths],
                lint_env,
                memory=True,
                prime=[*lint, *paths],
            ),
        ]
    flake8 = str(BIN / "flake8")
    has_jxi, version = flake8_has_jxi()
    if has_jxi:
        tools.append(Tool("flake8_jxi", "flake8 --select=JXI", [flake8, "--select=JXI", *paths]))
    else:
        notes.append(
            "flake8 --select=JXI: skipped, the JXI plugin is not installed in this venv "
            f"(`flake8 --version`: {version})"
        )
    tools.append(Tool("flake8", "flake8 (default select)", [flake8, *paths]))
    if has_jxi:
        tools.append(
            Tool(
                "flake8_nojxi",
                "flake8 (default select, JXI plugin hidden)",
                [py, "-c", FLAKE8_WITHOUT_JXI, *paths],
            )
        )
    tools.append(Tool("flake8_b", "flake8 --select=B (bugbear)", [flake8, "--select=B", *paths]))
    fixit = fixit_exe()
    if skip_slow:
        notes.append("fixit lint: skipped (--skip-slow)")
    elif fixit is None:
        notes.append(
            "fixit lint: skipped, fixit is not installed "
            f"(python -m venv {BENCH_VENV} && {BENCH_VENV}/bin/pip install fixit)"
        )
    else:
        tools.append(Tool("fixit", "fixit lint", [str(fixit), "lint", *paths], slow=True))
    ruff = BIN / "ruff"
    ruff_cmd = str(ruff) if ruff.exists() else (shutil.which("ruff") or "ruff")
    tools.append(
        Tool(
            "ruff",
            "ruff check --select B --no-cache",
            [ruff_cmd, "check", "--select", "B", "--no-cache", "--quiet", *paths],
        )
    )
    return tools, notes


# --------------------------------------------------------------------------
# Corpus tree
# --------------------------------------------------------------------------


def prepare_tree(roots: dict[str, Path], work: Path, copies: int) -> list[Path]:
    """Copy the unpacked packages into ``work/copyNN/`` for NN < ``copies``.

    Returns the copy directories.  Existing complete copies are reused.
    """
    dirs = []
    for i in range(copies):
        dest = work / f"copy{i:02d}"
        marker = dest / ".complete"
        if not marker.exists():
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            for root in roots.values():
                shutil.copytree(root, dest / root.name, ignore=shutil.ignore_patterns(".unpacked"))
            marker.write_text("")
        dirs.append(dest)
    return dirs


def default_excluded(files: Sequence[Path]) -> list[Path]:
    """Return files under directories that flake8, ruff or the linter skip by default."""
    skip = {
        "build",
        "dist",
        "site-packages",
        "venv",
        ".venv",
        "node_modules",
        "_build",
        "buck-out",
        ".git",
        ".tox",
        ".nox",
        ".eggs",
        "__pypackages__",
        ".hg",
        ".svn",
    }
    return [f for f in files if skip & set(f.parts)]


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def _fmt(x: float | None, digits: int = 2, unit: str = "") -> str:
    """Format a number followed by ``unit``, or ``n/a``."""
    return "n/a" if x is None else f"{x:.{digits}f}{unit}"


def _verdict(value: float | None, limit: float) -> str:
    """Return ``met`` / ``not met`` (value <= limit) or ``n/a``."""
    if value is None:
        return "n/a"
    return "met" if value <= limit else "**not met**"


def targets(t: dict[str, Tool], extra: dict) -> list[list[str]]:
    """Return the issue-8 target rows: target, measured, limit, verdict."""

    def med(key: str) -> float | None:
        return t[key].median if key in t else None

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    cold, warm = med("cold"), med("warm")
    rows = []
    r = ratio(cold, med("ruff"))
    rows.append(
        ["cold <= 5x `ruff check --select B --no-cache`", _fmt(r, unit="x"), "5x", _verdict(r, 5)]
    )
    r = ratio(cold, med("flake8_b"))
    rows.append(
        ["cold <= 1/20 of `flake8 --select=B`", _fmt(r, 3, "x"), "0.05x", _verdict(r, 0.05)]
    )
    rows.append(["cold about one second", _fmt(cold, unit=" s"), "1.5 s", _verdict(cold, 1.5)])
    r = ratio(warm, extra.get("hash"))
    rows.append(["warm <= 2x read+hash every file", _fmt(r, unit="x"), "2x", _verdict(r, 2)])
    r = ratio(extra.get("subset_lint"), extra.get("subset_parse"))
    rows.append(
        [
            f"per analysed file <= 1.5x bare parse (proxy: {extra.get('subset_files', 0)} "
            "interop files, --jobs 1, vs libcst.parse_module of them)",
            _fmt(r, unit="x"),
            "1.5x",
            _verdict(r, 1.5),
        ]
    )
    if "flake8_nojxi" in t:
        for label, key in (
            ("JXI plugin adds <= 10% to plain flake8", "flake8"),
            ("`flake8 --select=JXI` vs flake8 without the plugin", "flake8_jxi"),
        ):
            r = ratio(med(key), med("flake8_nojxi"))
            over = None if r is None else (r - 1) * 100
            rows.append([label, _fmt(over, 1, "%"), "10%", _verdict(over, 10)])
    else:
        rows.append(
            ["JXI plugin adds <= 10% to flake8", "n/a (plugin not installed)", "10%", "n/a"]
        )
    mem = [s.tree_peak_kb or s.maxrss_kb for k in ("cold", "warm") if k in t for s in t[k].samples]
    rss = [s.maxrss_kb for k in ("cold", "warm") if k in t for s in t[k].samples]
    peak = max(mem) / 1024 if mem else None
    rows.append(
        [
            f"peak memory < 300 MB (whole process tree; largest single process "
            f"{_fmt(max(rss) / 1024 if rss else None, 0)} MB)",
            _fmt(peak, 0, " MB"),
            "300 MB",
            _verdict(peak, 299.99),
        ]
    )
    for k, secs in sorted(extra.get("scaling", {}).items()):
        if k == 1:
            continue
        base = extra["scaling"][1]
        r = secs / (k * base) if base else None
        rows.append(
            [f"linear scaling: t({k}x) / ({k} * t(1x))", f"{_fmt(r)}", "1.25", _verdict(r, 1.25)]
        )
    if not extra.get("scaling"):
        rows.append(["linear scaling 1x/4x/16x", "not measured (use --scaling)", "", "n/a"])
    return rows


def markdown(rows: list[list[str]]) -> str:
    """Render ``rows`` (first row = header) as a markdown table."""
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join("---" for _ in rows[0]) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(out)


def failures(tools: list[Tool]) -> list[str]:
    """Return a line for each tool run that exited with an unexpected status."""
    out = []
    for tool in tools:
        for s in tool.samples:
            if s.returncode not in tool.ok_codes:
                tail = " | ".join(s.stderr.strip().splitlines()[-3:])
                out.append(f"{tool.name}: exit {s.returncode}: {tail[:400]}")
                break
    return out


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; ``argv`` as for argparse.  Returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--corpus",
        choices=sorted(CORPORA),
        default="full",
        help="'jax': the jax wheel only (the issue's reference); 'full': plus flax, "
        "optax, brax, torchrl, gymnasium, transformers (default)",
    )
    ap.add_argument(
        "--dir",
        type=Path,
        default=corpus_check.DEFAULT_CACHE,
        help="corpus cache shared with corpus_check.py",
    )
    ap.add_argument("--runs", type=int, default=3, help="timed runs per tool (default 3)")
    ap.add_argument(
        "--slow-runs", type=int, default=1, help="timed runs of fixit (default 1: it takes minutes)"
    )
    ap.add_argument("--skip-slow", action="store_true", help="do not run fixit")
    ap.add_argument(
        "--scaling",
        action="store_true",
        help="also time a cold lint of the corpus copied 1x, 4x and 16x",
    )
    ap.add_argument("--linter-jobs", type=int, help="pass --jobs N to jaxinterop-lint")
    ap.add_argument(
        "--tools",
        help="comma-separated subset of tool keys: cold,warm,flake8_jxi,"
        "flake8,flake8_nojxi,flake8_b,fixit,ruff,parse,hash,subset",
    )
    ap.add_argument("--json", type=Path, help="also write the raw samples as JSON")
    ap.add_argument(
        "--readme",
        action="store_true",
        help=f"replace the table in {README.name} between its bench markers",
    )
    opts = ap.parse_args(argv)
    only = set(opts.tools.split(",")) if opts.tools else None

    cache = opts.dir.resolve()
    roots = corpus_check.ensure_corpus(CORPORA[opts.corpus], cache)
    work = cache / "bench" / opts.corpus
    copies = prepare_tree(roots, work, 16 if opts.scaling else 1)
    tree = copies[0]
    paths = [r.name for r in roots.values()]
    files = corpus_check.python_files(tree)
    stats = corpus_check.file_stats(files)
    excluded = default_excluded([f.relative_to(tree) for f in files])
    subset = [f for f in files if INTEROP_WORDS.search(f.read_bytes())]

    tools, notes = build_tools(paths, opts.skip_slow, opts.linter_jobs)
    linter_ok = any(t.key == "cold" for t in tools)
    if opts.corpus != "jax":
        notes.append("issue 8 defines its targets on `--corpus jax`; here they are applied as is")
    if excluded:
        notes.append(
            f"{len(excluded)} files lie under directories some tools skip by default, "
            f"e.g. {excluded[0]}"
        )
    if only:
        tools = [t for t in tools if t.key in only]
    py = sys.executable
    lists = Path(tempfile.mkdtemp(prefix="jxi-bench-"))
    all_list, subset_list = lists / "all.txt", lists / "subset.txt"
    all_list.write_text("\n".join(str(f) for f in files))
    subset_list.write_text("\n".join(str(f) for f in subset))
    baselines = [
        Tool(
            "parse",
            "libcst.parse_module, every file (1 process)",
            [py, "-c", PARSE_SCRIPT, str(all_list)],
        ),
        Tool("hash", "read + sha256 every file (1 process)", [py, "-c", HASH_SCRIPT, *paths]),
        Tool(
            "subset_lint",
            f"jaxinterop-lint --jobs 1 --no-cache, {len(subset)} interop files",
            [
                py,
                "-m",
                "jaxinterop_lint",
                "--jobs",
                "1",
                "--no-cache",
                *[str(f.relative_to(tree)) for f in subset],
            ],
            corpus_check.linter_env(),
        ),
        Tool(
            "subset_parse",
            f"libcst.parse_module, the same {len(subset)} files",
            [py, "-c", PARSE_SCRIPT, str(subset_list)],
        ),
    ]
    if not linter_ok:
        baselines = [b for b in baselines if b.key != "subset_lint"]
    if only:
        baselines = [
            b
            for b in baselines
            if b.key in only or (b.key.startswith("subset") and "subset" in only)
        ]
    everything = tools + baselines

    print(
        f"corpus: {opts.corpus} ({', '.join(r.name for r in roots.values())}): "
        f"{stats.files} files, {stats.lines} lines, {stats.mb:.1f} MB; "
        f"{len(subset)} files name an interop word",
        file=sys.stderr,
    )
    cache_dir = tree / ".jaxinterop_lint_cache"
    if cache_dir.exists():
        shutil.rmtree(cache_dir)
    for rnd in range(opts.runs):
        for tool in everything:
            if tool.slow and rnd >= opts.slow_runs:
                continue
            if tool.prime:
                measure(tool.prime, tree, tool.env)
            s = measure(tool.cmd, tree, tool.env, sample_memory=tool.memory)
            tool.samples.append(s)
            print(
                f"  run {rnd + 1}/{opts.runs}  {tool.name}: {s.seconds:.2f} s "
                f"(exit {s.returncode})",
                file=sys.stderr,
                flush=True,
            )
    shutil.rmtree(lists, ignore_errors=True)

    scaling: dict[int, float] = {}
    if opts.scaling and linter_ok:
        lint = [py, "-m", "jaxinterop_lint", "--no-cache"]
        if opts.linter_jobs:
            lint += ["--jobs", str(opts.linter_jobs)]
        for k in (1, 4, 16):
            args = [f"{c.name}/{p}" for c in copies[:k] for p in paths]
            times = [
                measure([*lint, *args], work, corpus_check.linter_env()) for _ in range(opts.runs)
            ]
            good = [s.seconds for s in times if s.returncode in (0, 1)]
            scaling[k] = statistics.median(good) if good else float("nan")
            print(f"  scaling {k}x: {scaling[k]:.2f} s", file=sys.stderr, flush=True)

    by_key = {t.key: t for t in everything}
    extra = {
        k: by_key[k].median for k in ("hash", "parse", "subset_lint", "subset_parse") if k in by_key
    }
    extra["subset_files"] = len(subset)
    extra["scaling"] = scaling
    cold = by_key["cold"].median if "cold" in by_key else None
    rows = [["tool", "median s", "runs", "ratio to jaxinterop-lint cold"]]
    for t in everything:
        m = t.median
        rows.append(
            [
                t.name,
                _fmt(m),
                str(len(t.samples)),
                f"{m / cold:.2f}x" if m is not None and cold else "n/a",
            ]
        )
    for k, secs in scaling.items():
        rows.append(
            [
                f"jaxinterop-lint cold, corpus copied {k}x ({k * stats.files} files)",
                _fmt(secs),
                str(opts.runs),
                f"{secs / cold:.2f}x" if cold else "n/a",
            ]
        )

    cmdline = "python bench/bench.py " + " ".join(sys.argv[1:] if argv is None else argv)
    head = (
        f"Corpus `{opts.corpus}`: {', '.join(r.name for r in roots.values())} "
        f"({stats.files} files, {stats.lines} lines, {stats.mb:.1f} MB). "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{_version([str(BIN / 'ruff'), '--version'])}, flake8 "
        f"{_version([str(BIN / 'flake8'), '--version']).split()[0]}, "
        f"median of {opts.runs} runs. Command: `{cmdline}`"
    )
    text = "\n\n".join(
        [
            head,
            markdown(rows),
            markdown(
                [["target (issue 8)", "measured", "limit", "verdict"], *targets(by_key, extra)]
            ),
            *(["Notes:\n" + "\n".join(f"- {n}" for n in notes)] if notes else []),
            *(
                ["Unexpected exit statuses:\n" + "\n".join(f"- {f}" for f in failures(everything))]
                if failures(everything)
                else []
            ),
        ]
    )
    print(text)
    if opts.json:
        opts.json.write_text(
            json.dumps(
                {
                    t.key: {
                        "name": t.name,
                        "cmd": t.cmd,
                        "median": t.median,
                        "samples": [s.__dict__ for s in t.samples],
                    }
                    for t in everything
                }
                | {"scaling": scaling},
                indent=1,
                default=str,
            )
        )
    if opts.readme:
        for readme in (README, README.parent.parent / "README.md"):
            old = readme.read_text()
            if README_START in old and README_END in old:
                pre, rest = old.split(README_START, 1)
                post = rest.split(README_END, 1)[1]
                readme.write_text(f"{pre}{README_START}\n{text}\n{README_END}{post}")
            else:
                print(f"bench: {readme} has no {README_START} marker; not updated", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
