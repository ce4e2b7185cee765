#!/usr/bin/env python3
"""Time the analysis of the jax wheel's interop files in one process (issue 12's
"no slower per file" check).

The files are those of the installed ``jax`` package that name an interop word (the subset
``bench/bench.py`` times with ``--jobs 1``) and that the linter's prefilter parses.  Each file
is linted with :func:`jaxinterop_lint.lint_source` (no project, no cache), ``--runs`` times;
the script prints the number of files, the best total over the runs and the time per file,
then the same for the analysis alone (each file parsed once beforehand, then analysed and
its rules run: parsing is libcst's and dominates the total).  Times are the CPU time of
this process, so that other load on the machine counts less.

``--whole`` measures instead the analysis of every interop file, parsed whole beforehand (no
plan, no masking): the same files for any version of the linter, so two versions compare per
file.  With ``--old-api`` it calls the engine of a checkout from before the pipeline (the
base of issue 12, 6a81c4a: ``engine.build_analysis`` and ``engine.rule_findings``); run it
with that checkout first on ``PYTHONPATH``.

Usage: python scripts/analysis_time.py [--runs 5] [--root DIR] [--whole [--old-api]]
"""
from __future__ import annotations

import argparse
import os
import re
import time

INTEROP_WORDS = re.compile(
    rb"dlpack|cuda_array_interface|unsafe_buffer_pointer|cupy|torch|numba|pycuda|"
    rb"buffer_callback|__array_interface__|tensorflow"
)


def files_of(root: str) -> list:
    """The ``.py`` files under ``root`` that name an interop word, sorted."""
    out = []
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, "rb") as fh:
                    if INTEROP_WORDS.search(fh.read()):
                        out.append(path)
    return sorted(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--root", help="package folder (default: the installed jax)")
    ap.add_argument("--whole", action="store_true", help="analyse every interop file, parsed whole")
    ap.add_argument("--old-api", action="store_true", help="with --whole: the engine API of before the pipeline")
    args = ap.parse_args()
    if args.whole:
        return whole(args)
    from jaxinterop_lint import Config, lint_source
    from jaxinterop_lint.pipeline.analyse import PARSES, parse_module
    from jaxinterop_lint.pipeline.judge import raw_findings
    from jaxinterop_lint.pipeline.masking import Masker
    from jaxinterop_lint.pipeline.words import DEFAULT

    root = args.root
    if root is None:
        import importlib.util

        root = os.path.dirname(importlib.util.find_spec("jax").origin)
    config = Config()
    texts = [(p, open(p, encoding="utf-8").read()) for p in files_of(root)]
    best = None
    for _ in range(args.runs):
        PARSES.clear()
        start = time.process_time()
        for path, text in texts:
            lint_source(text, path, config)
        took = time.process_time() - start
        best = took if best is None else min(best, took)
    parsed = [(p, t) for p, t in texts if PARSES.get(os.path.abspath(p))]   # what the plan parsed
    print(f"{len(texts)} files ({len(parsed)} parsed): best of {args.runs} runs {best:.3f} s, "
          f"{1000 * best / len(texts):.1f} ms per file, {1000 * best / max(1, len(parsed)):.1f} ms per parsed file")
    from jaxinterop_lint.analysis.module import ModuleAnalysis

    def masked(text):
        m = Masker(text, DEFAULT)
        m.callers = frozenset()
        return m

    modules = [(p, t, parse_module(t, p, masked(t))[0]) for p, t in parsed]
    best = None
    for _ in range(args.runs):
        start = time.process_time()
        for path, text, module in modules:
            ma = ModuleAnalysis(module, path, "", None, source=text, kb=config.knowledge())
            raw_findings(ma.run(), path)
        took = time.process_time() - start
        best = took if best is None else min(best, took)
    print(f"analysis alone: best of {args.runs} runs {best:.3f} s, "
          f"{1000 * best / max(1, len(parsed)):.1f} ms per parsed file")


def whole(args) -> None:
    """``--whole``: every interop file parsed whole, then analysed and its rules run."""
    import importlib.util

    import libcst as cst

    from jaxinterop_lint import Config

    root = args.root or os.path.dirname(importlib.util.find_spec("jax").origin)
    config = Config()
    if args.old_api:
        from jaxinterop_lint.engine import build_analysis, rule_findings

        def one(path, text, module):
            rule_findings(build_analysis(text, path, config, module=module), path)
    else:
        from jaxinterop_lint.analysis.module import ModuleAnalysis
        from jaxinterop_lint.pipeline.judge import raw_findings

        def one(path, text, module):
            ma = ModuleAnalysis(module, path, "", None, source=text, kb=config.knowledge())
            raw_findings(ma.run(), path)
    modules = []
    for path in files_of(root):
        text = open(path, encoding="utf-8").read()
        modules.append((path, text, cst.parse_module(text)))
    best = None
    for _ in range(args.runs):
        start = time.process_time()
        for path, text, module in modules:
            one(path, text, module)
        took = time.process_time() - start
        best = took if best is None else min(best, took)
    print(f"{len(modules)} files parsed whole: analysis and rules, best of {args.runs} runs {best:.3f} s, "
          f"{1000 * best / max(1, len(modules)):.1f} ms per file")


if __name__ == "__main__":
    main()
