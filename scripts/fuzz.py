#!/usr/bin/env python3
"""Fuzz the engine for longer than CI does (issue 9).

Runs the properties of ``tests/fuzzgen.py`` (the strategies ``tests/test_fuzz.py`` uses in
CI) with many more examples, until ``--minutes`` have passed or ``--examples`` per round
are done:

* grammar programs (``hypothesmith.from_grammar()``): the engine never raises, and
  ``--fix --unsafe-fixes`` gives text that parses, fixed again to the same text;
* fragment programs (sources, every sink, sanitizers, guards, control flow): no error,
  findings only at sink, call and handler lines, fixes parse and are idempotent.

Usage::

    python scripts/fuzz.py --minutes 10
    python scripts/fuzz.py --examples 5000 --only fragments

Exit status 0 when every property held, 1 with the falsifying example printed otherwise.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

import hypothesmith  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402

import fuzzgen  # noqa: E402

# hypothesmith compiles what it generates: CPython's SyntaxWarnings about it are noise.
warnings.filterwarnings("ignore", category=SyntaxWarning)

FOOTER = "\nimport torch\nt = torch.from_dlpack(x)\n"


def grammar(source):
    """Grammar programs: the engine and the fixes."""
    fuzzgen.check_engine(source, force=True)
    fuzzgen.check_fix(source + FOOTER)


def fragments(program):
    """Fragment programs: findings only where allowed, fixes clean."""
    fuzzgen.check_program(program)
    fuzzgen.check_fix(program.text())


PROPERTIES = {"grammar": (grammar, hypothesmith.from_grammar), "fragments": (fragments, fuzzgen.programs)}


def main(argv=None) -> int:
    """Run rounds of every property until the time is up; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5.0, help="stop starting rounds after this (default 5)")
    ap.add_argument("--examples", type=int, default=500, help="examples per property per round (default 500)")
    ap.add_argument("--only", choices=sorted(PROPERTIES), help="run one property")
    ap.add_argument("--seed", type=int, help="hypothesis seed (default: random)")
    opts = ap.parse_args(argv)
    deadline = time.monotonic() + opts.minutes * 60
    names = [opts.only] if opts.only else sorted(PROPERTIES)
    rounds = examples = 0
    start = time.monotonic()
    while time.monotonic() < deadline:
        for name in names:
            fn, strategy = PROPERTIES[name]
            test = settings(max_examples=opts.examples, deadline=None, database=None,
                            suppress_health_check=list(HealthCheck), derandomize=False)(given(strategy())(fn))
            if opts.seed is not None:
                from hypothesis import seed

                test = seed(opts.seed + rounds)(test)
            t0 = time.monotonic()
            try:
                test()
            except Exception:
                traceback.print_exc()
                print(f"fuzz: property {name!r} failed after {rounds} rounds", file=sys.stderr)
                return 1
            examples += opts.examples
            print(f"fuzz: {name}: {opts.examples} examples in {time.monotonic() - t0:.0f} s", file=sys.stderr)
            if time.monotonic() >= deadline:
                break
        rounds += 1
    print(f"fuzz: ok: {examples} examples in {rounds} rounds, {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
