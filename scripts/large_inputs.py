#!/usr/bin/env python3
"""Peak memory and time of the linter on large inputs (issue 13, "Inputs that take the run
down"): one file per shape and size, each linted by a fresh ``python -m jaxinterop_lint
--no-cache`` whose peak RSS comes from ``os.wait4`` (the child's own rusage).

Shapes (each file imports jax and has a consumer, so it is analysed):

- ``literal-used``: a list literal of N bytes passed to ``jax.device_put`` and exported;
- ``literal-unused``: the same literal bound to a name nothing uses (the masking blanks it);
- ``dense``: N bytes of small functions (statements, calls, arithmetic).

The target: peak RSS <= 50 MB + 30 x the file's size, time linear in the size; a file over
the analysis budget is one JXI000-style error line (exit 2), never a hang.

Usage::

    python scripts/large_inputs.py                       # 1, 2 and 4 MB of each shape
    python scripts/large_inputs.py --sizes 2,5 --shapes dense
    python scripts/large_inputs.py --json out.json

Prints a Markdown table (shape, MB, seconds, peak MB, target MB, exit, first line of output).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
HEAD = "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
TAIL = "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n"


def _literal(size: int) -> str:
    n, out = 0, []
    i = 0
    while n < size:
        item = f"{i * 7919 % 100000}, "
        out.append(item)
        n += len(item)
        i += 1
        if i % 16 == 0:
            out.append("\n    ")
            n += 5
    return "[\n    " + "".join(out) + "\n]"


def literal_used(size: int) -> str:
    return HEAD + "DATA = " + _literal(size) + "\n" + TAIL.replace("device_put(x", "device_put(DATA")


def literal_unused(size: int) -> str:
    return HEAD + "TABLE = " + _literal(size) + "\n" + TAIL


def dense(size: int) -> str:
    out, n, i = [HEAD], len(HEAD), 0
    while n < size:
        chunk = (f"def f{i}(a, b, c):\n    d = a + b * {i} - c\n    e = [d, a, (b, c)]\n"
                 f"    return g{i % 97}(d, e, key={i})\n\n\n")
        out.append(chunk)
        n += len(chunk)
        i += 1
    out.append(TAIL)
    return "".join(out)


SHAPES = {"literal-used": literal_used, "literal-unused": literal_unused, "dense": dense}


def measure(path: Path, timeout: float) -> dict:
    """Lint ``path`` in a fresh process; its seconds, peak RSS (MB), exit and first line."""
    start = time.monotonic()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXINTEROP_")}
    proc = subprocess.Popen([PY, "-m", "jaxinterop_lint", "--no-cache", path.name], cwd=path.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            return {"seconds": round(time.monotonic() - start, 1), "peak_mb": round(usage.ru_maxrss / 1024),
                    "exit": "timeout", "line": ""}
        time.sleep(0.05)
    seconds = time.monotonic() - start
    out = proc.stdout.read().decode(errors="replace")
    return {"seconds": round(seconds, 2), "peak_mb": round(usage.ru_maxrss / 1024),
            "exit": os.waitstatus_to_exitcode(status), "line": (out.splitlines() or [""])[0][:110]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,2,4", help="sizes in MB, comma-separated (default 1,2,4)")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="shapes, comma-separated")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="jxi-large-") as tmp:
        (Path(tmp) / "pyproject.toml").write_text("")
        for shape in args.shapes.split(","):
            for mb in (float(s) for s in args.sizes.split(",")):
                text = SHAPES[shape](int(mb * 2**20))
                path = Path(tmp) / f"{shape}-{mb:g}mb.py"
                path.write_text(text)
                row = {"shape": shape, "mb": round(len(text) / 2**20, 2), **measure(path, args.timeout)}
                row["target_mb"] = round(50 + 30 * len(text) / 2**20)
                rows.append(row)
                print(f"| {row['shape']} | {row['mb']} | {row['seconds']} | {row['peak_mb']} | {row['target_mb']} "
                      f"| {row['exit']} | {row['line']} |", flush=True)
                path.unlink()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    print("| shape | MB | seconds | peak MB | target MB | exit | first line |\n|---|---|---|---|---|---|---|")
    sys.exit(main())
