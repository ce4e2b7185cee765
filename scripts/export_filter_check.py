#!/usr/bin/env python3
"""Check that deciding a module's exporting functions early changes no decision (issue 16).

:meth:`Project.exports_known <jaxinterop_lint.analysis.project.Project.exports_known>`
analyses first the functions whose own text uses a consumer and stops as soon as the
caller's question (``enough``) is decided.  This script runs the command line's cold path
(``--no-cache --jobs 1``) on each folder twice in fresh processes, with
``Session.decide_early`` on and off, and records for every question asked of a module
(``exporting_tops`` / ``exporting_of``, in order) the module, the names wanted and the
decision (``enough`` of the answer), and the findings.  Then, in the run with early
decisions on, each module decided early is analysed whole afterwards and the question asked
again of the whole result (the same decision is required).  The two records must agree:
the same questions, the same decisions, the same findings.

Usage::

    python scripts/export_filter_check.py FOLDER [FOLDER ...] [--json OUT]

Exit status: 0 when every folder agrees, 1 when one differs, 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_CHILD = r"""
import json, os, sys
import jaxinterop_lint.analysis.project as pr
import jaxinterop_lint.pipeline.run as run
early = sys.argv[1] == "1"
run.Session.decide_early = early
asked, recheck = [], []
orig_tops, orig_of = pr.Project.exporting_tops, pr.Project.exporting_of

def record(kind, self, path, want, enough, answer):
    decided = bool(enough(answer)) if enough is not None else None
    asked.append([kind, os.path.relpath(path, ROOT), sorted(want) if want else None, decided])
    if early and enough is not None and os.path.abspath(path) not in self.complete:
        recheck.append((kind, self, path, want, enough, decided))

def tops(self, path, want=None, enough=None):
    r = orig_tops(self, path, want, enough)
    record("tops", self, path, want, enough, r)
    return r

def of(self, path, want=None, enough=None):
    r = orig_of(self, path, want, enough)
    record("of", self, path, want, enough, r)
    return r

pr.Project.exporting_tops, pr.Project.exporting_of = tops, of
ROOT = os.path.abspath(sys.argv[2])
from jaxinterop_lint.cli import main
import io, contextlib
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["--no-cache", "--jobs", "1", "--output-format", "json", "-q", ROOT])
    except SystemExit:
        pass
mismatch = []
for kind, project, path, want, enough, decided in recheck:
    ma = project.analysis_of_path(path, full=True, want=want)
    whole = pr._tops(ma) if kind == "tops" else (ma.exporting_names() if ma is not None else frozenset())
    if ma is None:
        whole = frozenset()
    if bool(enough(whole)) != decided:
        mismatch.append([kind, os.path.relpath(path, ROOT), sorted(want) if want else None, decided])
try:
    findings = json.loads(out.getvalue() or "[]")
except ValueError:
    findings = out.getvalue()
print(json.dumps({"asked": asked, "early": len(recheck), "mismatch": mismatch, "findings": findings}))
"""


def run_once(folder: str, early: bool) -> dict:
    """The record of one cold run on ``folder`` (see the module docstring)."""
    proc = subprocess.run([sys.executable, "-c", _CHILD, "1" if early else "0", folder],
                          capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise SystemExit(f"export_filter_check: the run on {folder} failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--json", help="write the records here")
    args = ap.parse_args(argv)
    bad = False
    out = {}
    for folder in args.folders:
        if not os.path.isdir(folder):
            print(f"export_filter_check: {folder}: not a folder", file=sys.stderr)
            return 2
        on, off = run_once(folder, True), run_once(folder, False)
        same_q = on["asked"] == off["asked"]
        same_f = on["findings"] == off["findings"]
        ok = same_q and same_f and not on["mismatch"]
        bad |= not ok
        n = len(on["findings"]) if isinstance(on["findings"], list) else "?"
        print(f"{folder}: {len(on['asked'])} questions ({on['early']} decided early), "
              f"decisions {'equal' if same_q else 'DIFFER'}, whole-module recheck "
              f"{'equal' if not on['mismatch'] else 'DIFFERS ' + json.dumps(on['mismatch'])}, "
              f"findings {n} {'equal' if same_f else 'DIFFER'}")
        if not same_q:
            for a, b in zip(on["asked"], off["asked"], strict=False):
                if a != b:
                    print(f"  first difference: early {a} / whole {b}")
                    break
            else:
                print(f"  {len(on['asked'])} questions early, {len(off['asked'])} whole")
        out[folder] = {"early": on, "whole": off}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, sort_keys=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
