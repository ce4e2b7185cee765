"""A parameter called on the callee's own values (``out = model_fn(batch)``): the caller's
function is called with those values (``Summary.called``), for a sink in the callee and for
the returned result, in one module and from a module whose summary comes frozen from the
cache."""
from __future__ import annotations

from conftest import run_cli
from jaxinterop_lint import Config, lint_source

LOADER = """\
import jax, numpy as np, torch
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((len(jax.devices()),), ("d",))

def batches():
    for i in range(2):
        yield jax.device_put(np.ones(8), NamedSharding(mesh, P("d")))

def first_output(model_fn):
    for batch in batches():
        return model_fn(batch)
"""


def _lines(body: str):
    return [(f.line, f.code) for f in lint_source(LOADER + body, "m.py", Config()).findings]


def test_the_callers_function_runs_on_the_callees_values():
    assert _lines("torch.from_dlpack(first_output(lambda b: b * 2))\n") == [(12, "JXI002")]
    assert _lines("torch.from_dlpack(first_output(np.asarray))\n") == []
    assert _lines("torch.from_dlpack(first_output(lambda b: jax.device_put(b, jax.devices()[0])))\n") == []


def test_a_sink_in_the_callee_is_judged_with_the_callers_function():
    body = "def evaluate(fn):\n    for b in batches():\n        torch.from_dlpack(fn(b))\n"
    assert _lines(body + "evaluate(lambda b: b + 1)\n") == [(14, "JXI002")]
    assert _lines(body + "evaluate(np.asarray)\n") == []


def test_called_values_kept_in_the_cached_summary(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "loader.py").write_text(LOADER)
    (tmp_path / "main.py").write_text("import torch\nfrom loader import first_output\n"
                                      "y = torch.from_dlpack(first_output(lambda b: b * 2))\n")
    whole = run_cli(".", cwd=tmp_path)
    assert whole.returncode == 1 and "main.py:3:" in whole.stdout, whole.stdout
    # main.py edited (analysed again), loader.py not: its summary is read frozen from the cache
    (tmp_path / "main.py").write_text((tmp_path / "main.py").read_text() + "z = 1\n")
    for _ in range(2):
        alone = run_cli("main.py", cwd=tmp_path)
        assert alone.returncode == 1 and "main.py:3:" in alone.stdout, alone.stdout


def test_a_loop_feeding_a_result_back_to_its_call():
    # ``x = stage(x)`` records values that hold the call's own result: analysed, not a
    # "too deeply nested" error (hunt39 p16)
    body = ("def run(x, stages):\n    for stage in stages:\n        x = stage(x)\n    return x\n"
            "y = run(next(batches()), [lambda a: a * 2, lambda a: a + 1])\n")
    result = lint_source(LOADER + body + "torch.from_dlpack(y)\n", "m.py", Config())
    assert result.error is None
    assert [(f.line, f.code) for f in result.findings] == [(17, "JXI002")]


def test_joined_handlers_keep_the_functions_they_may_run():
    # a handler list's entries are handed on as ``others`` of a non-callable value; a join
    # keeps them from either path, but never adds functions to an instance's alternatives
    # (an instance's ``others`` are instances: a crash on tpu-inference's tests before)
    from jaxinterop_lint.analysis import values as V
    from jaxinterop_lint.analysis.records import ClassRecord

    fn = V.Value(kind=V.QNAME, qname="torch.from_dlpack")
    held = V.evolve(V.SAFE_VALUE, others=(fn,))
    assert V.join(held, V.SAFE_VALUE).others == (fn,)
    assert V.join(V.UNKNOWN_VALUE, held).others == (fn,)
    instance = V.Value(kind=V.INSTANCE, cls=ClassRecord(None, "C"))
    assert all(o.kind == V.INSTANCE for o in V.join(instance, held).others)
