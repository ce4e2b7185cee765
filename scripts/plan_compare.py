#!/usr/bin/env python3
"""Record the plan's decisions on a corpus folder, and compare two records (two checkouts).

The plan (``jaxinterop_lint/pipeline/plan.py``) must decide the same with faster text
scanners.  ``record`` runs the command line's cold path (``--no-cache --jobs 1``, the
folder's own configuration) on a folder with the package that Python imports (set
``PYTHONPATH`` to a checkout), then asks the run's plan, for every file: its facts as the
run left them, its fresh facts (:func:`facts_of`, not lazy), its units, whether it is a
carrier and every ``carrier_name`` of its units, ``reach``, ``direct``, ``sink_reached``,
``exporter_targets``, ``consumer_defs``, ``gate``, its targets, and then its facts again
(with every lazily computed part filled in).  It also records which files the run analysed
and parsed (``pipeline.analyse.PARSES``) and the findings.  ``compare`` prints every
difference between two records; ``both`` records a folder with this checkout and with
another one (``--base``) and compares them.

Usage::

    python scripts/plan_compare.py record FOLDER OUT.json
    python scripts/plan_compare.py compare BASE.json NEW.json
    python scripts/plan_compare.py both FOLDER --base /tmp/planbase [--keep DIR]

Exit status: 0 when the records agree, 1 when they differ, 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile


def _rel(root: str, value):
    """``value`` with absolute paths under ``root`` made relative (lists, tuples, dicts, sets)."""
    if isinstance(value, str):
        return os.path.relpath(value, root) if os.path.isabs(value) else value
    if isinstance(value, (list, tuple)):
        return [_rel(root, v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_rel(root, v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(_rel(root, k)): _rel(root, v) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))}
    return value


LAZY = ("units", "sink_uses", "defs", "origin", "annot")   # origin, annot: full_facts


def _decided(facts):
    """``facts`` without the parts the plan fills in lazily (:data:`LAZY`)."""
    return {k: v for k, v in facts.items() if k not in LAZY} if isinstance(facts, dict) else facts


def _lazy(facts) -> list:
    """Which lazily filled parts ``facts`` holds."""
    return sorted(k for k in LAZY if k in facts) if isinstance(facts, dict) else []


def record(folder: str) -> dict:
    """The plan's decisions on ``folder`` (see the module docstring)."""
    folder = os.path.abspath(folder)
    os.chdir(folder)
    from jaxinterop_lint import cli, engine
    from jaxinterop_lint.pipeline import analyse, run
    from jaxinterop_lint.pipeline.plan import facts_of, plain_lines

    sessions = []

    class Recorded(run.Session):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            sessions.append(self)

    run.Session = Recorded
    args = cli.build_parser().parse_args(["--no-cache", "--jobs", "1", "."])
    cfg = cli.config_from_args(args)
    analyse.PARSES.clear()
    result = engine.lint_paths(["."], cfg, jobs=1, use_cache=False)
    out = {"analysed": sorted(_rel(folder, p) for p in result.analysed_paths),
           "parses": _rel(folder, dict(analyse.PARSES)),
           "findings": sorted([f.path, f.line, f.column, f.code] for f in result.findings),
           "errors": sorted(str(e[0]) for e in result.errors),
           "files": {}}
    for s in sessions:
        plan = s.plan
        files = sorted(plan.reported)
        after_run = {p: json.loads(json.dumps(plan._facts.get(p))) for p in files}
        asked = set(plan.reach_asked)
        # what the run read (the plan's epoch holds these files) and whose imports it resolved
        out.setdefault("facts_read", []).extend(_rel(folder, sorted(p for p, f in plan._facts.items() if f)))
        out.setdefault("targets_known", []).extend(_rel(folder, sorted(plan._targets)))
        out.setdefault("importers", {}).update(_rel(folder, plan.importers))    # the run's reverse graph
        for p in files:
            left = after_run[p]
            # the units and the names the consumers use are filled in when the plan needs
            # them: kept apart (laziness, not a decision), and computed for every file below
            rec = {"after_run": _decided(left), "lazy_after_run": _lazy(left), "reach_asked_in_run": p in asked}
            try:
                text = s.reader.text(p)
                package = plan.index.package_of(p) if plan.index is not None else ""
                rec["fresh"] = facts_of(text, package, plan.words)
            except Exception as exc:     # unreadable: recorded as such
                rec["fresh"] = f"error {type(exc).__name__}"
            rec["direct"] = plan.direct(p)
            rec["reach"] = plan.reach(p)
            rec["carrier"] = plan.carrier(p)
            units = plan.units(p)
            rec["units"] = {n: [bool(o), sorted(u)] for n, (o, u) in sorted(units.items())}
            rec["carrier_names"] = {n: plan.carrier_name(p, n) for n in sorted(units)}
            rec["sink_reached"] = plan.sink_reached(p) if (plan.facts(p) or {}).get("sink") else None
            rec["exporter_targets"] = plan.exporter_targets(p)
            rec["consumer_defs"] = plan.consumer_defs(p)
            rec["gate"] = plan.gate(p)
            rec["targets"] = plan.targets(p)
            f = plan.full_facts(p)
            if f is not None and f["sink"] and not isinstance(rec["fresh"], str):
                text = plain_lines(s.reader.text(p))
                rec["sink_uses"] = plan._sink_uses(f, text, plan._bound.get(p, {}))
            out["files"][_rel(folder, p)] = _rel(folder, rec)
        for p in files:
            out["files"][_rel(folder, p)]["facts_end"] = _rel(folder, _decided(json.loads(json.dumps(plan._facts.get(p)))))
    return out


def compare(a: dict, b: dict, limit: int = 40) -> list:
    """Differences between two records: ``[text]``."""
    diffs = []
    for key in ("analysed", "parses", "findings", "errors", "importers", "facts_read", "targets_known"):
        if a.get(key) != b.get(key):
            diffs.append(f"{key}: {json.dumps(a.get(key))[:300]} != {json.dumps(b.get(key))[:300]}")
    fa, fb = a["files"], b["files"]
    lazier = 0
    for p in sorted(set(fa) | set(fb)):
        ra, rb = fa.get(p), fb.get(p)
        if ra is None or rb is None:
            diffs.append(f"{p}: only in {'new' if ra is None else 'base'}")
            continue
        for k in sorted(set(ra) | set(rb)):
            if k == "lazy_after_run":
                lazier += ra.get(k) != rb.get(k)
            elif ra.get(k) != rb.get(k):
                diffs.append(f"{p}: {k}: {json.dumps(ra.get(k))[:300]} != {json.dumps(rb.get(k))[:300]}")
    if lazier:
        print(f"(not a difference: {lazier} files have lazily filled facts (units, sink_uses, defs) in one run "
              "and not in the other; their values are compared as computed for every file)")
    return diffs[:limit] + ([f"... {len(diffs) - limit} more"] if len(diffs) > limit else [])


def _record_with(checkout: str, folder: str, out: str) -> None:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    subprocess.run([sys.executable, os.path.abspath(__file__), "record", folder, out], env=env, check=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("folder")
    r.add_argument("out")
    c = sub.add_parser("compare")
    c.add_argument("base")
    c.add_argument("new")
    b = sub.add_parser("both")
    b.add_argument("folder")
    b.add_argument("--base", required=True, help="a checkout of the base commit")
    b.add_argument("--keep", help="folder to keep the two records in")
    opts = ap.parse_args(argv)
    if opts.cmd == "record":
        data = record(opts.folder)
        with open(opts.out, "w") as fh:
            json.dump(data, fh, sort_keys=True)
        print(f"{opts.folder}: {len(data['files'])} files, {len(data['analysed'])} analysed, "
              f"{len(data['findings'])} findings")
        return 0
    if opts.cmd == "compare":
        with open(opts.base) as fh:
            a = json.load(fh)
        with open(opts.new) as fh:
            n = json.load(fh)
    else:
        keep = opts.keep or tempfile.mkdtemp(prefix="plan_compare_")
        os.makedirs(keep, exist_ok=True)
        name = os.path.basename(os.path.abspath(opts.folder))
        pa, pn = os.path.join(keep, f"{name}.base.json"), os.path.join(keep, f"{name}.new.json")
        _record_with(opts.base, opts.folder, pa)
        _record_with(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), opts.folder, pn)
        with open(pa) as fh:
            a = json.load(fh)
        with open(pn) as fh:
            n = json.load(fh)
    diffs = compare(a, n)
    for d in diffs:
        print(d)
    print(f"{len(a['files'])} files: {'no differences' if not diffs else 'DIFFERENT'}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
