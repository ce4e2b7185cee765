"""Issue 12 / PLAN decision 1, calling contexts: an export of a parameter (or a part of it)
that a caller in the same module reaches with a multi-device value is reported at the sink
inside the callee, naming the caller; the caller's try handlers, guards and donation carry
over; loops over small literal tuples keep their elements paired; a joined function value
calls every callee; a jitted call keeps the structure its function returns.  Callees in
other modules keep the report at the call."""
from __future__ import annotations

import textwrap

import pytest

from conftest import codes, lint, run_cli
from depth_pairs import check_pair, with_header

JIT_STEP = """
        class Out(NamedTuple):
            loss: jax.Array
            aux: dict
        @jax.jit
        def step(w, b):
            return {"w": w * b}, Out(loss=(w * b).sum(), aux={"n": 1})
"""

PAIRS = {
    "reported_at_the_sink": (
        """
        def to_torch(a):
            return torch.from_dlpack(a)  # expect: JXI002
        def main():
            to_torch(jax.device_put(x, s))
        """,
        """
        def to_torch(a):
            return torch.from_dlpack(a)
        def main():
            to_torch(np.ones(3))
            to_torch(jax.device_put(x, jax.devices()[0]))
        """,
    ),
    "a_part_of_a_parameter": (
        """
        def export(state):
            return torch.from_dlpack(state["params"])  # expect: JXI002
        def main():
            export({"params": jax.device_put(x, s), "step": 0})
        """,
        """
        def export(state):
            return torch.tensor(state["step"])
        def main():
            export({"params": jax.device_put(x, s), "step": 0})
        """,
    ),
    "through_two_calls": (
        """
        def to_torch(a):
            return torch.from_dlpack(a)  # expect: JXI002
        def relay(b):
            return to_torch(b)
        relay(jax.device_put(x, s))
        """,
        """
        def to_torch(a):
            return torch.from_dlpack(a)
        def relay(b):
            return to_torch(np.asarray(b))
        relay(jax.device_put(x, s))
        """,
    ),
    "caller_handlers": (
        """
        def to_torch(a):
            return torch.from_dlpack(a)
        def main():
            try:
                to_torch(jax.device_put(x, s))
            except ValueError:  # expect: JXI007
                pass
        """,
        """
        def to_torch(a):
            return torch.from_dlpack(a)
        def main():
            try:
                to_torch(jax.device_put(x, s))
            except (BufferError, ValueError):
                pass
        """,
    ),
    "a_caller_catch_all_is_no_fallback": (
        """
        def to_torch(a):
            return torch.from_dlpack(a)  # expect: JXI002
        def main():
            try:
                to_torch(jax.device_put(x, s))
            except Exception as exc:
                print(exc)
        """,
        """
        def to_torch(a):
            try:
                return torch.from_dlpack(a)
            except Exception:
                return None
        def main():
            to_torch(jax.device_put(x, s))
        """,
    ),
    "callee_handler_that_misses": (
        """
        def to_torch(a):
            try:
                return torch.from_dlpack(a)
            except TypeError:  # expect: JXI007
                return None
        to_torch(jax.device_put(x, s))
        """,
        """
        def to_torch(a):
            try:
                return torch.from_dlpack(a)
            except BufferError:
                return None
        to_torch(jax.device_put(x, s))
        """,
    ),
    "caller_guards": (
        """
        def to_torch(a):
            return torch.from_dlpack(a)  # expect: JXI002
        def main():
            y = jax.device_put(x, s)
            if len(y.devices()) != 1:
                to_torch(y)
        """,
        """
        def to_torch(a):
            return torch.from_dlpack(a)
        def main():
            y = jax.device_put(x, s)
            if len(y.devices()) == 1:
                to_torch(y)
            if jax.device_count() == 1:
                to_torch(y)
        """,
    ),
    "caller_false_guard": (
        """
        def to_torch(a):
            return torch.from_dlpack(a)  # expect: JXI002
        def main():
            y = jax.device_put(x, NamedSharding(mesh, P()))
            if y.is_fully_replicated:  # expect: JXI006
                to_torch(y)
        """,
        """
        def to_torch(a):
            return torch.from_dlpack(a)
        def main():
            y = jax.device_put(x, NamedSharding(mesh, P()))
            if y.is_fully_replicated:
                to_torch(y.addressable_data(0))
        """,
    ),
    "caller_donation": (
        """
        step = jax.jit(lambda a: a * 2, donate_argnums=0)
        def to_torch(a):
            return torch.from_dlpack(a)  # expect: JXI008
        def main():
            a = jnp.ones(3)
            b = step(a)
            to_torch(a)
        """,
        """
        step = jax.jit(lambda a: a * 2, donate_argnums=0)
        def to_torch(a):
            return torch.from_dlpack(a)
        def main():
            a = jnp.ones(3)
            a = step(a)
            to_torch(a)
        """,
    ),
    "unrolled_loop_keeps_pairs": (
        """
        def weights(st):
            return torch.from_dlpack(st["w"])  # expect: JXI002
        def counts(n):
            return torch.tensor(n)
        def main():
            st = {"w": jax.device_put(x, s)}
            for fn, arg in ((weights, st), (counts, 3)):
                fn(arg)
        """,
        """
        def weights(st):
            return torch.from_dlpack(st["w"])
        def counts(n):
            return torch.tensor(n)
        def main():
            st = {"w": jax.device_put(x, s)}
            for fn, arg in ((weights, {"w": np.ones(2)}), (counts, st["w"].shape[0])):
                fn(arg)
        """,
    ),
    "joined_function_value_keeps_every_callee": (
        """
        def first(a):
            return np.asarray(a)
        def second(a):
            return torch.from_dlpack(a)  # expect: JXI002
        def main(flag):
            fn = first if flag else second
            fn(jax.device_put(x, s))
        """,
        """
        def first(a):
            return np.asarray(a)
        def second(a):
            return torch.from_dlpack(a)
        def main(flag):
            fn = first if flag else second
            fn(np.ones(3))
        """,
    ),
    "jit_keeps_the_structure": (
        JIT_STEP + """
        new, out = step(jax.device_put(x, s), jnp.ones(3))
        torch.from_dlpack(new["w"])  # expect: JXI002
        torch.from_dlpack(out.loss)  # expect: JXI002
        torch.from_dlpack(out.aux["n"])  # expect: JXI002
        """,
        JIT_STEP + """
        new, out = step(jnp.ones(3), jnp.ones(3))
        torch.from_dlpack(new["w"])
        torch.from_dlpack(out.loss)
        sharded, out = step(jax.device_put(x, s), jnp.ones(3))
        host = out._replace(loss=np.asarray(out.loss))
        torch.from_dlpack(host.loss)
        """,
    ),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_calling_contexts(name):
    check_pair(*PAIRS[name])


def test_message_and_provenance_name_the_caller():
    code = with_header("""
        def export_weights(state):
            return torch.from_dlpack(state["w"])

        def main():
            state = {"w": jax.device_put(x, s)}
            return export_weights(state)
        """)
    (f,) = lint(code)
    assert (f.line, f.code, f.function) == (12, "JXI002", "export_weights")
    assert f.message.startswith("torch.from_dlpack() cannot export `state[\"w\"]`: it spans several devices "
                                "when export_weights() is called from main() at line 16 with `state` "
                                "(jax.device_put with NamedSharding, line 15)")
    assert f.extra["callers"] == ("main",)
    assert [(st.line, st.description) for st in f.provenance] == [
        (15, "jax.device_put with NamedSharding"),
        (16, "passed to export_weights() as `state`"), (12, "exported by torch.from_dlpack()")]


def test_one_finding_per_sink_with_several_callers():
    code = with_header("""
        def to_torch(a):
            return torch.from_dlpack(a)
        to_torch(jax.device_put(x, s))
        to_torch(jax.device_put(x, NamedSharding(mesh, P())))
        """)
    assert codes(code) == [(12, "JXI002")]


def test_the_callee_in_another_module_is_reported_at_the_call(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "lib.py").write_text("import torch\n\ndef to_torch(a):\n    return torch.from_dlpack(a)\n")
    (tmp_path / "main.py").write_text(textwrap.dedent("""\
        import jax
        from jax.sharding import NamedSharding, PartitionSpec as P
        from lib import to_torch
        mesh = jax.make_mesh((8,), ("x",))
        to_torch(jax.device_put(1.0, NamedSharding(mesh, P())))
        """))
    r = run_cli("--no-cache", "--output-format", "concise", "main.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "main.py:5:1: JXI002 to_torch() cannot take" in r.stdout


def test_module_level_caller_is_named_as_such():
    code = with_header("""
        def to_torch(a):
            return torch.from_dlpack(a)
        to_torch(jax.device_put(x, s))
        """)
    (f,) = lint(code)
    assert "when to_torch() is called at line 13 with `jax.device_put(x, s)`" in f.message


def test_a_context_added_by_another_module_is_resolved_by_function_and_export():
    """Phase B's extension point: an importer holds no node of this module; it adds a
    context keyed by the callee's qualified name and the export's index."""
    from jaxinterop_lint import Config
    from jaxinterop_lint.analysis import values as V
    from jaxinterop_lint.analysis.contexts import ContextEntry
    from jaxinterop_lint.analysis.events import CallFrame
    from jaxinterop_lint.pipeline.analyse import build_analysis
    from jaxinterop_lint.pipeline.judge import raw_findings as rule_findings

    code = with_header("""
        class Bridge:
            def export(self, a):
                return torch.from_dlpack(a)
        """)
    ma = build_analysis(code, "bridge.py", Config(), whole=True).run()
    assert rule_findings(ma, "bridge.py")[0] == []
    origin = V.Origin("jax.device_put with NamedSharding", None, None, "main")
    entry = ContextEntry(value=V.multi(origin), tries=(), single_device_process=False,
                         frames=(CallFrame("main", "Bridge.export", None, None, "a", None),))
    ma.contexts.add("Bridge.export", 0, ("other.py", "main", 7), entry)
    (event,) = [e for e in ma.events if e.context]
    assert ma.position(event.node)[0] == 13 and event.value.is_multi
