"""Run every ``case_*`` function of a fixture file and print what happened, as JSON.

Usage: python runtime_probe.py FILE  (with XLA_FLAGS forcing 8 CPU devices).
For each case: ``{"ok": true}`` or ``{"ok": false, "classes": [MRO names], "line": L,
"message": str, "frames": [[file name, line], ...], "chain": [...]}`` where L is the innermost
line of FILE in the traceback, the frames are the whole traceback's, outermost first, and
the chain holds the same fields for each exception it was raised from or while handling
(``__cause__``, else ``__context__``), innermost last.
"""
import importlib.util
import json
import os
import sys
import traceback
import warnings

warnings.simplefilter("ignore")


def _failure(exc, path) -> dict:
    frames = traceback.extract_tb(exc.__traceback__)
    lines = [f.lineno for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    return {"classes": [c.__name__ for c in type(exc).__mro__], "line": lines[-1] if lines else None,
            "message": str(exc), "frames": [[os.path.basename(f.filename), f.lineno] for f in frames]}


def main(path, extra_path=None):
    if extra_path:
        sys.path.insert(0, extra_path)
    spec = importlib.util.spec_from_file_location("fixture_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = {}
    for name in sorted(n for n in dir(module) if n.startswith("case_")):
        try:
            getattr(module, name)()
            out[name] = {"ok": True}
        except Exception as exc:  # every failure is data here
            out[name] = dict(_failure(exc, path), ok=False)
            chain, seen = [], {id(exc)}
            inner = exc.__cause__ or exc.__context__
            while inner is not None and id(inner) not in seen:   # what the handlers raised again as
                seen.add(id(inner))
                chain.append(_failure(inner, path))
                inner = inner.__cause__ or inner.__context__
            out[name]["chain"] = chain
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
