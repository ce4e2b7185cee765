"""Every rule's INVALID snippets are flagged with its code and its VALID snippets are not
(the snippets are also the rule pages' examples)."""
from __future__ import annotations

import pytest

from conftest import lint
from jaxinterop_lint.rules import ALL_RULES, DEFAULT_CODES

OPT_IN = tuple(r.code for r in ALL_RULES if not r.default)

CASES = [(r, "INVALID", i, s) for r in ALL_RULES for i, s in enumerate(r.INVALID)] + \
        [(r, "VALID", i, s) for r in ALL_RULES for i, s in enumerate(r.VALID)]


@pytest.mark.parametrize("rule,kind,index,snippet", CASES,
                         ids=[f"{r.code}-{k}-{i}" for r, k, i, _ in CASES])
def test_rule_snippet(rule, kind, index, snippet):
    found = [f.code for f in lint(snippet, extend_select=OPT_IN)]
    if kind == "INVALID":
        assert rule.code in found, f"{rule.code} not reported on:\n{snippet}"
    else:
        assert rule.code not in found, f"{rule.code} reported on valid:\n{snippet}"


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_rule_has_docs_and_enough_snippets(rule):
    assert rule.code.startswith("JXI") and rule.name and rule.summary and rule.why and rule.versions
    assert len(rule.INVALID) >= 6 and len(rule.VALID) >= 6


def test_jxi009_is_opt_in():
    assert "JXI009" not in DEFAULT_CODES
    code = "import jax, torch\ndef f(x: jax.Array):\n    return torch.from_dlpack(x)\n"
    assert [f.code for f in lint(code)] == []
    assert [f.code for f in lint(code, extend_select=("JXI009",))] == ["JXI009"]


def test_guarded_export_under_false_guard_is_reported_twice():
    code = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
            "def f(x):\n    r = jax.device_put(x, NamedSharding(m, P()))\n"
            "    if r.is_fully_replicated:\n        return torch.from_dlpack(r)\n")
    assert sorted((f.line, f.code) for f in lint(code)) == [(5, "JXI006"), (6, "JXI002")]


def test_jxi007_reports_handler_only_and_names_sink_line():
    code = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
            "r = jax.device_put(x, NamedSharding(m, P()))\ntry:\n    t = torch.from_dlpack(r)\n"
            "except ValueError:\n    t = None\n")
    (f,) = lint(code)
    assert (f.line, f.code) == (6, "JXI007")
    assert f.extra["sink_line"] == 5 and "BufferError" in f.message


def test_jxi008_loop_donation_reaches_next_iteration():
    code = ("import jax, torch\nstep = jax.jit(f, donate_argnums=0)\nfor i in range(3):\n"
            "    torch.from_dlpack(x)\n    out = step(x)\n")
    assert [(f.line, f.code) for f in lint(code)] == [(4, "JXI008")]


def test_jxi005_import_of_removed_name():
    code = "from jax import device_put_sharded\ny = device_put_sharded(xs, devs)\n"
    assert [(f.line, f.code) for f in lint(code)] == [(1, "JXI005"), (2, "JXI005")]
    assert "0.10.0" in lint(code)[0].message


def test_jxi004_forwarded_callback_parameter():
    code = ("import numpy as np\nfrom jax.experimental.buffer_callback import buffer_callback\n"
            "def build(fn):\n    return buffer_callback(fn, spec)\n"
            "def cb(c, out, x):\n    a = np.array(x)\n"
            "f = build(cb)\n")
    assert [(f.line, f.code) for f in lint(code)] == [(6, "JXI004")]


def test_catalog_matches_the_rule_classes():
    from jaxinterop_lint import catalog

    assert catalog.NAMES == {r.code: r.name for r in ALL_RULES}
    assert catalog.DEFAULT_CODES == DEFAULT_CODES
