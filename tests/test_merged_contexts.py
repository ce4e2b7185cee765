"""One finding per sink, every calling context named: a helper's export reached by several
callers with multi-device values is one finding at its sink whose ``callers`` are all of
them and whose message says where the others enter ("; also when called from b() at line
13"), in one module and across modules, through the cache, and with its fix kept deferred."""
from __future__ import annotations

import textwrap

from conftest import run_cli
from jaxinterop_lint import Config, lint_paths, lint_source
from jaxinterop_lint.finding import DeferredFix

HEADER = """\
import jax, numpy as np, torch
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((len(jax.devices()),), ("d",))
"""


def _program(n_callers: int, safe_caller: bool = False) -> str:
    body = ["def to_torch(x):", "    return torch.from_dlpack(x)", ""]
    for i in range(n_callers):
        body += [f"def caller_{i}():", f"    return to_torch(jax.device_put(np.ones(8), NamedSharding(mesh, P())) + {i})", ""]
    if safe_caller:
        body += ["def host():", "    return to_torch(jax.device_put(np.ones(8), jax.devices()[0]))", ""]
    return HEADER + "\n".join(body)


def test_two_callers_one_finding_naming_both():
    (f,) = lint_source(_program(2, safe_caller=True), "m.py", Config()).findings
    assert (f.line, f.code) == (5, "JXI002")
    assert "when to_torch() is called from caller_0() at line 8 with" in f.message
    assert f.message.endswith("; also when called from caller_1() at line 11")
    assert f.extra["callers"] == ("caller_0", "caller_1")
    assert f.extra["also"] == ("caller_1() at line 11",)


def test_one_caller_message_unchanged():
    (f,) = lint_source(_program(1), "m.py", Config()).findings
    assert "also when called from" not in f.message and f.extra["callers"] == ("caller_0",)


def test_many_callers_named_up_to_three():
    (f,) = lint_source(_program(6), "m.py", Config()).findings
    assert f.message.endswith("; also when called from caller_1() at line 11, caller_2() at line 14, "
                              "caller_3() at line 17 and 2 more")
    assert len(f.extra["also"]) == 5 and f.extra["callers"] == tuple(f"caller_{i}" for i in range(6))


def test_fix_stays_deferred_and_is_the_first_contexts():
    (f,) = lint_source(_program(2), "m.py", Config()).findings
    assert isinstance(f.__dict__["_fix"], DeferredFix)
    assert f.fix.applicability == "unsafe" and f.fix.edits


def _project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "helpers.py").write_text("import torch\n\ndef to_torch(x):\n    return torch.from_dlpack(x)\n")
    for name, line in (("a", "to_torch(jax.device_put(np.ones(8), NamedSharding(mesh, P('d'))))"),
                       ("b", "to_torch(jax.device_put(np.ones(8), NamedSharding(mesh, P())))")):
        (root / f"{name}.py").write_text(HEADER + "from helpers import to_torch\n" + textwrap.dedent(f"""
            def run_{name}():
                return {line}
            """))
    return root


def test_across_modules_and_through_the_cache(tmp_path):
    root = _project(tmp_path)
    (f,) = lint_paths([str(root)], Config(), use_cache=False).findings
    assert f.path.endswith("helpers.py") and f.line == 4
    assert "is called from run_a() at a.py:7" in f.message and f.message.endswith("also when called from run_b() at b.py:7")
    assert set(f.extra["callers"]) == {"run_a", "run_b"}
    cold = run_cli(".", cwd=root)
    warm = run_cli(".", cwd=root)
    assert cold.returncode == warm.returncode == 1
    assert cold.stdout == warm.stdout and "also when called from run_b() at b.py:7" in warm.stdout
