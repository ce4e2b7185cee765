"""Ground truth by execution (issues 2 and 3): every line the linter flags in the runtime
fixtures really fails with real jax on 8 CPU devices, with the class its message names, and
every case it does not flag runs."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import EIGHT_DEVICES, ROOT
from jaxinterop_lint import Config, lint_source
from markers import expected

pytestmark = pytest.mark.slow   # real jax and torch on 8 CPU devices (the quick tier leaves it out)

FIXTURES = sorted((ROOT / "fixtures" / "runtime").glob("*.py"))
SINK_CODES = {"JXI001", "JXI002", "JXI003", "JXI007", "JXI008", "JXI005"}


def _probe(path):
    import os

    env = dict(os.environ, **EIGHT_DEVICES)
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "runtime_probe.py"), str(path)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_flagged_lines_fail_and_unflagged_cases_run(path):
    text = path.read_text()
    findings = lint_source(text, str(path), Config()).findings
    assert {(f.line, f.code) for f in findings} == expected(text), "markers and findings differ"
    outcome = _probe(path)
    by_case: dict = {}
    for f in findings:
        # An export inside a helper is reported at its sink and belongs to the helper and to
        # the callers of its calling context (the case that passes the multi-device value).
        for name in {f.function, *f.extra.get("callers", ())}:
            by_case.setdefault(name, []).append(f)
    by_class: dict = {}
    for f in findings:
        # a method of a class whose instances export by themselves (a subclass running an
        # inherited template method, template_methods.py) belongs to the cases making one
        names = list(f.extra.get("callers", ())) or [f.function]    # where the value enters
        if f.code in SINK_CODES and not any(n.startswith("case_") for n in names):
            for owner in {n.split(".")[0] for n in names if "." in n}:
                by_class.setdefault(owner, []).append(f)
    callbacks = {}
    for f in findings:
        if f.code == "JXI004":
            callbacks.setdefault(f.function, []).append(f)
    assert outcome, "no case ran"
    flagged = unflagged = 0
    for case, result in outcome.items():
        mine = [f for f in by_case.get(case, []) if f.code in SINK_CODES]
        if not mine:
            mine = list({id(f): f for owner, fs in by_class.items()
                         if re.search(rf"\b{owner}\(", _source_of(text, case)) for f in fs}.values())
        called = [f for fn, fs in callbacks.items() for f in fs if re.search(rf"\b{fn}\b", _source_of(text, case))]
        if not mine and not called:
            unflagged += 1
            assert result["ok"], f"{case} is not flagged but fails: {result}"
            continue
        flagged += 1
        assert not result["ok"], f"{case} is flagged but runs"
        if called:
            # The callback's error surfaces wrapped by XLA; its text names the class and the line.
            (f,) = called
            named = re.search(r"raises (\w+)", f.message).group(1)
            assert f"{named}: " in result["message"] and f"line {f.line}" in result["message"], result
            continue
        (f,) = mine
        line = f.extra.get("sink_line", f.line)
        if " called by " in f.message:
            # a consumer handed to a helper (higher_order.py) raises inside the helper; the
            # call that handed it over is on the stack
            assert [path.name, line] in result["frames"] and result["line"] != line, (case, result)
        else:
            # the error itself, or the one a handler caught and raised again as another
            # (``raise ExportError(...) from exc``: reraising_handlers.py)
            at = [r for r in [result, *result.get("chain", ())] if r["line"] == line]
            assert at, f"{case}: flagged line {line}, failed at {result['line']}"
            result = at[0]
        named = re.search(r"raises (\w+)", f.message)
        if named and f.code in ("JXI001", "JXI002", "JXI003", "JXI007"):
            assert named.group(1) in result["classes"], f"{case}: {named.group(1)} not in {result['classes']}"
    assert flagged and unflagged


def _source_of(text: str, case: str) -> str:
    """The body of ``def case(...)`` in ``text``."""
    start = text.index(f"def {case}(")
    end = text.find("\ndef ", start + 1)
    return text[start:end if end != -1 else None]
