"""Fixes cost time in proportion to the findings, not findings x module size (issue 13).

Before: each finding's fix wrote the whole module with the node replaced (200 findings in one
15 KB file took 24 s, 500 took 169 s), and every fix was computed even when nothing looked at
it.  Now a fix is computed when first read (``Finding.fix``), its text is the replacement
node's own code with the indentation of its block, and ``Finding.has_fix`` answers flake8's
``[*]`` question without computing remedies of another applicability.

The counts below are of libcst's whole-module writes, so they do not depend on the speed of
the machine.
"""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from conftest import ROOT
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.rules import edits, remedies
from jaxinterop_lint.rules import ALL_RULES


def many_findings(n: int) -> str:
    """One module with ``n`` JXI002 findings (each with an unsafe fix) inside a function,
    and a JXI006 guard with a safe fix."""
    lines = ["import jax, torch", "from jax.sharding import NamedSharding, PartitionSpec as P", "",
             "def step(x, m):", "    y = jax.device_put(x, NamedSharding(m, P('x')))"]
    lines += [f"    t{i} = torch.from_dlpack(y)  # consumer {i:04d} of the sharded batch" for i in range(n)]
    lines += ["    if y.is_fully_replicated:", "        z = torch.from_dlpack(y)"]
    return "\n".join(lines) + "\n"


class WholeModuleWrites:
    """Counts libcst's writes of a whole module (``Module.code``) and ``deep_replace`` calls."""

    def __init__(self, monkeypatch):
        self.code = self.replaced = 0
        original_code = cst.Module.code
        original_replace = cst.CSTNode.deep_replace
        counter = self

        def code(module):
            counter.code += 1
            return original_code.fget(module)

        def deep_replace(node, old, new):
            if isinstance(node, cst.Module):
                counter.replaced += 1
            return original_replace(node, old, new)

        monkeypatch.setattr(cst.Module, "code", property(code))
        monkeypatch.setattr(cst.CSTNode, "deep_replace", deep_replace)


@pytest.mark.parametrize("n", [20, 200])
def test_computing_every_fix_writes_the_module_at_most_once(monkeypatch, n):
    result = lint_source(many_findings(n), "many.py", Config())
    assert len(result.findings) == n + 1 + 1, [f.code for f in result.findings]
    counter = WholeModuleWrites(monkeypatch)
    fixes = [f.fix for f in result.findings]
    assert sum(1 for fx in fixes if fx is not None and fx.edits) >= n + 1
    assert counter.replaced == 0
    assert counter.code <= 1, counter.code  # writes_back(): once per module


def test_fixes_are_not_computed_until_read(monkeypatch):
    calls = []
    real = remedies.device_put
    monkeypatch.setattr(remedies, "device_put", lambda *a: calls.append(1) or real(*a))
    result = lint_source(many_findings(50), "many.py", Config())
    assert calls == []
    # flake8's question: is there a safe fix?  JXI002's remedy is unsafe: never computed.
    marks = [f.has_fix(("safe",)) for f in result.findings]
    assert calls == [] and marks.count(True) == 1
    assert result.findings[0].has_fix() and len(calls) == 1


def test_a_failing_remedy_costs_the_fix_not_the_finding(monkeypatch):
    monkeypatch.delenv("JAXINTEROP_LINT_DEBUG", raising=False)
    monkeypatch.setattr(remedies, "device_put", lambda *a: 1 / 0)
    result = lint_source(many_findings(3), "many.py", Config())
    assert result.error is None and len(result.findings) == 5
    assert [f.fix for f in result.findings if f.code == "JXI002"] == [None] * 4


def fixable_texts():
    """Every text of the project that has fixes: rule examples and ``fixtures/fix``."""
    out = [(f"{rule.code}-invalid-{i}", textwrap.dedent(snippet))
           for rule in ALL_RULES for i, snippet in enumerate(rule.INVALID)]
    for path in sorted((ROOT / "fixtures" / "fix").rglob("*.py")):
        if not path.name.endswith(".fixed.py"):
            out.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    out.append(("many", many_findings(30)))
    out.append(("multiline", textwrap.dedent("""\
        import jax, torch
        from jax.sharding import NamedSharding, PartitionSpec as P

        class Trainer:
            def step(self, x, m):
                y = jax.device_put(x, NamedSharding(m, P('x')))
                if True:
                    t = torch.from_dlpack(
                        (  y  # the sharded batch
                         +
                           1)
                    )
                return t
        """)))
    return out


@pytest.mark.parametrize("name,text", fixable_texts(), ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "")
def test_fix_edits_are_those_of_rewriting_the_whole_module(monkeypatch, name, text):
    fast = [f.fix for f in lint_source(text, "case.py", Config(select=tuple(r.code for r in ALL_RULES))).findings]
    monkeypatch.setattr(remedies, "replace", edits.replace_by_rewriting)
    slow = [f.fix for f in lint_source(text, "case.py", Config(select=tuple(r.code for r in ALL_RULES))).findings]
    assert fast == slow
    if name in ("many", "multiline"):
        assert all(fast), fast
