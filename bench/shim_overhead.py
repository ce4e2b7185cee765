"""Measure what the runtime shim adds to a patched call whose argument is not a JAX array.

Usage: ``PYTHONPATH=. python bench/shim_overhead.py [--number N] [--repeat R] [--json]``

For each patched consumer it times the same call with the shim off and on (``record`` mode,
report in a temporary directory), takes the best of ``repeat`` runs of ``number`` calls each,
and prints the difference per call in microseconds.  The last line is the worst difference,
the figure quoted in the README.  A single-device jax.Array through ``torch.from_dlpack`` is
timed too (that path also checks the device count).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import timeit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cases():
    import jax.numpy as jnp
    import numpy as np
    import torch
    import torch.utils.dlpack  # noqa: F401

    a = np.arange(16.0)
    t = torch.arange(16.0)
    j = jnp.arange(16.0)
    return [
        ("numpy.from_dlpack(ndarray)", lambda: np.from_dlpack(a)),
        ("torch.from_dlpack(Tensor)", lambda: torch.from_dlpack(t)),
        ("torch.as_tensor(Tensor)", lambda: torch.as_tensor(t)),
        ("torch.asarray(Tensor)", lambda: torch.asarray(t)),
        ("torch.tensor(3.0)", lambda: torch.tensor(3.0)),
        ("torch.from_dlpack(1-device jax.Array)", lambda: torch.from_dlpack(j)),
    ]


def _best(fn, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def measure(number: int = 20000, repeat: int = 7) -> list[dict]:
    """Return ``[{"call", "off_us", "on_us", "overhead_us"}]`` for every case."""
    from jaxinterop_lint import shim

    cases = _cases()
    off = {name: _best(fn, number, repeat) for name, fn in cases}
    with tempfile.TemporaryDirectory() as tmp:
        with shim.active("record", os.path.join(tmp, "hits.jsonl")):
            cases = _cases()  # re-resolve the (now patched) module attributes
            on = {name: _best(fn, number, repeat) for name, fn in cases}
            assert shim.hit_count() == 0
    return [{"call": name, "off_us": off[name], "on_us": on[name], "overhead_us": on[name] - off[name]}
            for name, _ in cases]


def main(argv: list[str] | None = None) -> int:
    """Print the table (or JSON with --json) and the worst per-call overhead."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = measure(args.number, args.repeat)
    worst = max(r["overhead_us"] for r in rows)
    if args.json:
        print(json.dumps({"rows": rows, "worst_overhead_us": worst}, indent=2))
        return 0
    print(f"{'call':40} {'off (us)':>9} {'on (us)':>9} {'added (us)':>11}")
    for r in rows:
        print(f"{r['call']:40} {r['off_us']:9.3f} {r['on_us']:9.3f} {r['overhead_us']:11.3f}")
    print(f"worst added cost per patched call: {worst:.3f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
