"""Issue 16, demand-driven: a module whose text names nothing that makes or uses a
multi-device value (``def relay(v): return v``) is not parsed for its summary (the plan's
gate), until an analysed call hands one of its functions or classes a multi-device value:
then it is opened for that name (``CallMixin.opened_on_demand``), and what comes back is
followed as for a function of the same module.  A helper called with plain values only stays
unparsed.  The programs are run for real on 8 CPU devices where the finding says they raise
(tests/test_runtime_truth.py runs the fixtures; the case here is the same shape)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import EIGHT_DEVICES
from jaxinterop_lint import Config, lint_paths
from jaxinterop_lint.pipeline.analyse import PARSES
from markers import expected

HELPERS = """
    def relay(v):
        return v


    def pick(batch, key):
        return batch[key]


    class Holder:
        def __init__(self, v):
            self.value = v

        def get(self):
            return self.value


    def size_of(v):
        return len(v)
"""
PLAIN = """
    def describe(n):
        return f"{n} items"
"""
MAIN = """
    import jax
    import torch
    from jax.sharding import NamedSharding, PartitionSpec as P

    import pkg.helpers as helpers
    from pkg.helpers import Holder, pick, relay
    from pkg.plain import describe


    def export(v):
        return torch.from_dlpack(relay(v))


    def main(x, mesh):
        y = jax.device_put(x, NamedSharding(mesh, P("x")))
        a = torch.from_dlpack(relay(y))
        b = torch.from_dlpack(helpers.relay(y))
        c = torch.from_dlpack(pick({"w": y}, "w"))
        d = torch.from_dlpack(Holder(y).get())
        e = export(y)
        print(describe(3))
        return a, b, c, d, e
"""


def _project(tmp_path):
    files = {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/helpers.py": HELPERS,
             "pkg/plain.py": PLAIN, "pkg/main.py": MAIN}
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_a_helper_module_handed_a_multi_device_value_is_opened_for_it(tmp_path):
    root = _project(tmp_path)
    PARSES.clear()
    result = lint_paths([str(root / "pkg" / "main.py")], Config(), project_root=str(root))
    lines = (root / "pkg" / "main.py").read_text().splitlines()

    def line_of(text):
        return next(i for i, ln in enumerate(lines, 1) if text in ln)

    got = sorted((f.code, f.line) for f in result.findings)
    want = sorted(("JXI002", line_of(t)) for t in (
        "a = torch.from_dlpack(relay(y))", "b = torch.from_dlpack(helpers.relay(y))",
        'c = torch.from_dlpack(pick({"w": y}, "w"))', "d = torch.from_dlpack(Holder(y).get())",
        "return torch.from_dlpack(relay(v))"))
    assert got == want, result.findings
    exported = next(f for f in result.findings if f.line == line_of("return torch.from_dlpack(relay(v))"))
    assert "when export() is called from main()" in exported.message
    parsed = {os.path.relpath(p, root) for p in PARSES}
    assert os.path.join("pkg", "helpers.py") in parsed
    assert os.path.join("pkg", "plain.py") not in parsed     # called with a plain value only


def test_a_helper_called_with_plain_values_only_is_never_parsed(tmp_path):
    root = _project(tmp_path)
    (root / "pkg" / "main.py").write_text(textwrap.dedent("""
        import torch
        from pkg.helpers import relay, size_of


        def main(t):
            n = size_of([1, 2, 3])
            return torch.from_dlpack(relay(t)), n
    """))
    PARSES.clear()
    result = lint_paths([str(root / "pkg" / "main.py")], Config(), project_root=str(root))
    assert result.findings == []
    assert not any(p.endswith("helpers.py") for p in PARSES)


def test_storing_a_summary_never_analyses_what_the_run_did_not():
    """A summary is stored only from what the run computed (``freeze(ready_only=True)``):
    storing keras' summaries analysed the methods of the classes they name, and the modules
    those call (2.4 s of a 4.9 s cold run with the cache on).  A summary that would need more
    is not stored; without ``ready_only`` the functions are analysed, as before."""
    from jaxinterop_lint.pipeline.analyse import build_analysis
    from jaxinterop_lint.summaries import NotReady, freeze

    ma = build_analysis(textwrap.dedent(HELPERS), "/tmp/helpers.py", Config())
    ma.walk_body()
    assert {r.state for r in ma.functions} == {"new"}
    try:
        freeze(ma, ready_only=True)
    except NotReady:
        pass
    else:
        raise AssertionError("froze a class whose methods were never analysed")
    assert {r.state for r in ma.functions} == {"new"}
    data = freeze(ma)
    assert {"Holder", "relay", "pick"} <= set(data["globals"]) and {r.state for r in ma.functions} == {"done"}


def test_the_cache_on_cold_run_parses_what_the_run_without_cache_parses(tmp_path):
    parsed = {}
    for cache in (False, True):
        root = _project(tmp_path / str(cache))
        PARSES.clear()
        result = lint_paths([str(root / "pkg")], Config(), project_root=str(root), use_cache=cache)
        parsed[cache] = ({os.path.relpath(p, root): n for p, n in PARSES.items()}, len(result.findings))
    assert parsed[True] == parsed[False] and parsed[False][1] == 5


RELAY = Path(__file__).resolve().parent.parent / "fixtures" / "runtime" / "relay"


def test_relay_fixture_markers():
    result = lint_paths([str(RELAY)], Config(), use_cache=False)
    want = {(p.name, line, code) for p in RELAY.glob("*.py") for line, code in expected(p.read_text())}
    assert {(os.path.basename(f.path), f.line, f.code) for f in result.findings} == want and len(want) == 6


def _probe(name: str) -> dict:
    """The outcome of each case of the fixture file ``name`` of relay/, run on 8 CPU devices
    (tests/runtime_probe.py)."""
    env = dict(os.environ, **EIGHT_DEVICES)
    r = subprocess.run([sys.executable, str(Path(__file__).parent / "runtime_probe.py"), str(RELAY / name), str(RELAY)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_relay_fixture_fails_at_the_flagged_lines_on_eight_devices():
    outcome = _probe("relay_main.py")
    flagged = {f.line for f in lint_paths([str(RELAY)], Config(), use_cache=False).findings}
    assert len(outcome) == 6
    for case, res in outcome.items():  # relay_main.py's own flagged lines
        if case.endswith("_fails"):
            assert not res["ok"] and "BufferError" in res["classes"] and res["line"] in flagged, (case, res)
        else:
            assert res["ok"], (case, res)


def test_an_edit_of_a_module_opened_on_demand_judges_its_callers_again(tmp_path):
    root = _project(tmp_path)
    main = [str(root / "pkg" / "main.py")]
    assert len(lint_paths(main, Config(), project_root=str(root), use_cache=True).findings) == 5
    helpers = root / "pkg" / "helpers.py"
    helpers.write_text(helpers.read_text().replace("def relay(v):\n    return v", "def relay(v):\n    return None"))
    cached = lint_paths(main, Config(), project_root=str(root), use_cache=True)
    fresh = lint_paths(main, Config(), project_root=str(root), use_cache=False)
    assert [(f.line, f.code) for f in cached.findings] == [(f.line, f.code) for f in fresh.findings]
    assert len(fresh.findings) == 2     # pick() and Box.get() still hand the array on


def test_a_chain_of_helpers_across_modules_hands_the_value_back(tmp_path):
    root = _project(tmp_path)
    (root / "pkg" / "outer.py").write_text("from pkg.helpers import relay\n\n\ndef forward(v):\n    return relay(v)\n")
    main = root / "pkg" / "main.py"
    main.write_text(textwrap.dedent("""
        import jax
        import torch
        from jax.sharding import NamedSharding, PartitionSpec as P
        from pkg.outer import forward


        def main(x, mesh):
            y = jax.device_put(x, NamedSharding(mesh, P("x")))
            return torch.from_dlpack(forward(y))
    """))
    result = lint_paths([str(main)], Config(), project_root=str(root))
    assert [(f.code, f.line) for f in result.findings] == [("JXI002", 10)]


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_relay_chain_fails_on_the_stack_of_its_flagged_calls_on_eight_devices():
    """A helper in a module naming neither JAX nor a consumer, handing its parameter to a
    consumer's function imported from another module, is judged with its callers' contexts:
    the flagged call is on the stack where the consumer raises BufferError (before issue 16's
    fix, relay_bridge.py was never judged with its callers: no finding)."""
    outcome = _probe("relay_chain_main.py")
    flagged = {(os.path.basename(f.path), f.line) for f in lint_paths([str(RELAY)], Config(), use_cache=False).findings
               if os.path.basename(f.path) == "relay_bridge.py"}
    assert len(outcome) == 3 and len(flagged) == 2
    hit = set()
    for case, res in outcome.items():
        if case.endswith("_fails"):
            assert not res["ok"] and "BufferError" in res["classes"], (case, res)
            on_stack = flagged & {tuple(f) for f in res["frames"]}
            assert len(on_stack) == 1, (case, res["frames"])
            hit |= on_stack
        else:
            assert res["ok"], (case, res)
    assert hit == flagged


def test_a_helper_handing_a_parameter_to_a_consumer_of_another_module_is_judged_with_its_callers(tmp_path):
    """Only the reported files count: linting the helper's module alone reports nothing (no
    caller among the paths), linting it with its caller reports the helper's call."""
    root = tmp_path
    for name in ("relay_convert.py", "relay_bridge.py", "relay_chain_main.py"):
        (root / name).write_text((RELAY / name).read_text())
    (root / "pyproject.toml").write_text("")
    both = lint_paths([str(root)], Config(), project_root=str(root), use_cache=False)
    assert sorted((os.path.basename(f.path), f.line, f.code) for f in both.findings) == [
        ("relay_bridge.py", 9, "JXI002"), ("relay_bridge.py", 17, "JXI002")]
    alone = lint_paths([str(root / "relay_bridge.py")], Config(), project_root=str(root), use_cache=False)
    assert alone.findings == []


QUIET_CONVERT = '''\
import numpy as np
import torch


def to_torch(v):
    n = len(v)
    return torch.from_dlpack(np.zeros(n))
'''


def test_a_relay_taking_nothing_that_exports_is_never_analysed_and_an_edit_that_exports_judges_it(tmp_path):
    """A module naming neither JAX nor a consumer relays an export only when a name it takes
    from a consumer's module holds an exporting function (Session.relays_an_export): that
    module is asked first, and without one the relay's own functions are never analysed for
    the question.  The answer depends on the consumer's module: an edit of it that makes the
    name export judges the relay again with its callers, as a run without cache does."""
    root = tmp_path
    for name in ("relay_bridge.py", "relay_chain_main.py"):
        (root / name).write_text((RELAY / name).read_text())
    (root / "relay_convert.py").write_text(QUIET_CONVERT)
    (root / "pyproject.toml").write_text("")
    bridge = str(root / "relay_bridge.py")
    PARSES.clear()
    quiet = lint_paths([str(root)], Config(), project_root=str(root), use_cache=True)
    assert quiet.findings == [] and bridge not in PARSES
    (root / "relay_convert.py").write_text((RELAY / "relay_convert.py").read_text())
    cached = lint_paths([str(root)], Config(), project_root=str(root), use_cache=True)
    fresh = lint_paths([str(root)], Config(), project_root=str(root), use_cache=False)
    got = sorted((os.path.basename(f.path), f.line, f.code) for f in cached.findings)
    assert got == sorted((os.path.basename(f.path), f.line, f.code) for f in fresh.findings) == [
        ("relay_bridge.py", 9, "JXI002"), ("relay_bridge.py", 17, "JXI002")]


SPLIT_CONVERT = '''\
import torch


def to_torch(v):
    return torch.from_dlpack(v)


def shape_of(v):
    return tuple(v.shape)
'''
SPLIT_BRIDGE = '''\
from relay_convert import shape_of


def describe(v):
    return shape_of(v)


class Report:
    def rows(self, v):
        return self.first(v)

    def first(self, v):
        return describe(v)[0]
'''
SPLIT_MAIN = '''\
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

from relay_bridge import Report, describe

mesh = jax.make_mesh((len(jax.devices()),), ("x",))


def run():
    y = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("x")))
    return describe(y), Report().rows(y)
'''


def test_a_relay_taking_only_a_name_that_does_not_export_is_never_analysed(tmp_path):
    """Session.relays_an_export asks whether a name the relay takes from a consumer's
    module holds an exporting function, not whether that module has one anywhere: the
    relay takes ``shape_of`` (no export) from a module whose ``to_torch`` exports, so its
    own functions are never analysed for its callers' contexts (keras' testing/test_case.py
    takes ``get_device`` from the PyTorch backend's core.py).  Taking ``to_torch`` as well
    judges it with its callers."""
    root = tmp_path
    (root / "relay_convert.py").write_text(SPLIT_CONVERT)
    (root / "relay_bridge.py").write_text(SPLIT_BRIDGE)
    (root / "relay_main.py").write_text(SPLIT_MAIN)
    (root / "pyproject.toml").write_text("")
    bridge = str(root / "relay_bridge.py")
    PARSES.clear()
    quiet = lint_paths([str(root)], Config(), project_root=str(root), use_cache=False)
    assert quiet.findings == [] and bridge not in PARSES
    (root / "relay_bridge.py").write_text(SPLIT_BRIDGE.replace(
        "import shape_of", "import shape_of, to_torch").replace("describe(v)[0]", "to_torch(v)"))
    judged = lint_paths([str(root)], Config(), project_root=str(root), use_cache=False)
    assert [(os.path.basename(f.path), f.line, f.code) for f in judged.findings] == [
        ("relay_bridge.py", 13, "JXI002")]
