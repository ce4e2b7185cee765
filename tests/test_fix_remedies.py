"""The fixes the rules compute (issue 4): applicability per rules.md, the exact replacement,
the imports, the cases without a fix, and how the front ends show fixes."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import lint, run_cli
from jaxinterop_lint import Config
from jaxinterop_lint.fix.apply import fix_text
from jaxinterop_lint.rules import ALL_RULES

MULTI = "from jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P('x')))\n"
FFI_HEAD = "from jax.experimental.buffer_callback import buffer_callback\n\n\ndef cb(ctx, out, x):\n"
FFI_TAIL = "\n\nf = buffer_callback(cb, spec)\n"


def fixed(code: str, unsafe: bool = True, config=None) -> str:
    """The text after all fixes of a dedented snippet (default rules, or ``config``'s)."""
    outcome = fix_text(textwrap.dedent(code), "snippet.py", config, unsafe=unsafe)
    assert outcome.error is None, outcome.error
    return outcome.text


def ffi(body: str, imports: str = "import numpy as np\nimport torch\n") -> str:
    return imports + FFI_HEAD + "    " + body + FFI_TAIL


def test_applicability_follows_rules_md():
    expected = {"JXI001": "unsafe", "JXI002": "unsafe", "JXI004": "safe", "JXI005": "safe",
                "JXI006": "safe", "JXI007": "safe", "JXI100": "safe"}
    for rule in ALL_RULES:
        assert rule.fix_applicability == expected.get(rule.code), rule.code


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.fix_applicability], ids=lambda r: r.code)
def test_every_invalid_example_of_a_fixable_rule_is_fixed_or_documented(rule):
    """Fixes carry the rule's title and applicability and produce code the rule accepts."""
    for snippet in rule.INVALID:
        for f in lint(snippet, select=(rule.code,)):
            if f.fix is None:
                continue
            assert f.fix.applicability == rule.fix_applicability and f.fix.title == rule.fix_title
            assert f.fix.edits
            after = fixed(snippet, config=Config(extend_select=(rule.code,)))
            assert after != snippet
            assert not [g for g in lint(after, extend_select=(rule.code,)) if g.fix is not None and g.code == rule.code]


@pytest.mark.parametrize("before,after", [
    ("a = np.array(x)", "a = np.from_dlpack(x).copy()"),
    ("a = np.asarray(x, copy=True)", "a = np.from_dlpack(x).copy()"),
    ("a = np.asarray(x, dtype=np.float64)", "a = np.from_dlpack(x).astype(np.float64)"),
    ("a = np.array(x, np.float32)", "a = np.from_dlpack(x).astype(np.float32)"),
    ("a = np.asarray(x, dtype=np.float64, copy=False)", "a = np.from_dlpack(x).astype(np.float64, copy=False)"),
    ("t = torch.from_dlpack(x, copy=True)", "t = torch.from_dlpack(x).clone()"),
    ("a = np.from_dlpack(x, copy=True)", "a = np.from_dlpack(x).copy()"),
    ("a = x.__array__(copy=True)", "a = np.from_dlpack(x).copy()"),
    ("a = x.__array__(np.float64)", "a = np.from_dlpack(x).astype(np.float64)"),
])
def test_jxi004_replacements(before, after):
    assert fixed(ffi(before), unsafe=False) == ffi(after)


@pytest.mark.parametrize("body", [
    "c = x.__dlpack__(copy=True)",              # the consumer of the capsule is unknown
    "a = np.array(x, order='F')",               # an argument the view cannot honour
    "t = torch.from_dlpack(x, copy=True, device='cpu')",
])
def test_jxi004_without_fix(body):
    findings = lint(ffi(body))
    assert [f.code for f in findings] == ["JXI004"]
    assert findings[0].fix is None


def test_jxi004_adds_numpy_import_or_reuses_alias():
    out = fixed(ffi("a = x.__array__(copy=True)", imports="import torch\n"), unsafe=False)
    assert "import numpy as np\n" in out and "a = np.from_dlpack(x).copy()" in out
    out = fixed(ffi("a = x.__array__(copy=True)", imports="import numpy as onp\n"), unsafe=False)
    assert "a = onp.from_dlpack(x).copy()" in out and "import numpy as np" not in out
    # np is taken by something else: import numpy under its own name
    out = fixed(ffi("a = x.__array__(copy=True)", imports="import torch\nnp = None\n"), unsafe=False)
    assert "import numpy\n" in out and "a = numpy.from_dlpack(x).copy()" in out


def test_jxi005_replacements_and_non_fixes():
    code = """\
        import jax
        import jax.dlpack
        import torch
        import tensorflow as tf
        a = torch.from_dlpack(jax.dlpack.to_dlpack(x))
        cap = jax.dlpack.to_dlpack(x)
        b = tf.experimental.dlpack.from_dlpack(jax.dlpack.to_dlpack(x))
        c = jax.dlpack.from_dlpack(cap2)
        d = x.device_buffers[0]
        jax.device_put_sharded(xs, jax.devices())
        """
    findings = {f.line: f for f in lint(code) if f.code == "JXI005"}
    assert findings[5].fix is not None
    assert findings[6].fix is None and findings[7].fix is None      # not a consumer of arrays
    assert findings[10].fix is None
    out = fixed(code)
    assert "a = torch.from_dlpack(x)\n" in out
    assert "cap = jax.dlpack.to_dlpack(x)\n" in out
    assert "d = [s.data for s in x.addressable_shards][0]\n" in out


def test_jxi006_and_jxi007_shapes():
    assert "if len(r.devices()) != 1:" in fixed("""\
        import torch
        def f(r):
            if not (r.is_fully_replicated):
                return None
            return torch.from_dlpack(r)
        """)
    out = fixed("import jax, torch\n" + MULTI + "try:\n    t = torch.from_dlpack(y)\nexcept (ValueError) as e:\n    t = None\n")
    assert "except (ValueError, BufferError) as e:" in out
    out = fixed("import jax\n" + MULTI + "try:\n    p = y.unsafe_buffer_pointer()\n"
                "    t = memoryview(y)\nexcept KeyError:\n    p = 0\n")
    assert "except (KeyError, RuntimeError, BufferError):" in out


def test_jxi001_jxi002_reuse_alias_and_wrap_the_exported_expression():
    out = fixed("import jax as J\nimport torch\n" + MULTI.replace("y = jax.", "y = J.") + "t = torch.from_dlpack((y + 1))\n")
    assert "t = torch.from_dlpack((J.device_put(y + 1, J.local_devices()[0])))\n" in out
    assert "import jax\n" not in out
    # unsafe fixes only with unsafe=True
    code = "import jax\nimport torch\n" + MULTI + "t = torch.from_dlpack(y)\n"
    assert fixed(code, unsafe=False) == code


def test_safe_fix_first_makes_the_unsafe_one_needless():
    code = """\
        import jax
        import torch
        from jax.sharding import NamedSharding, PartitionSpec as P
        def f(x, mesh):
            r = jax.device_put(x, NamedSharding(mesh, P()))
            if r.is_fully_replicated:
                return torch.from_dlpack(r)
            return None
        """
    out = fixed(code)
    assert "if len(r.devices()) == 1:" in out and "return torch.from_dlpack(r)" in out


# -- front ends ---------------------------------------------------------------------------
def test_json_carries_the_fix_and_full_shows_its_title(tmp_path):
    (tmp_path / "m.py").write_text("import jax\n\ndef f(a: jax.Array):\n    return a.device_buffer\n")
    r = run_cli("--output-format", "json", "m.py", cwd=tmp_path)
    [finding] = json.loads(r.stdout)
    assert (finding["line"], finding["column"]) == (4, 12)   # the edit's columns count as the finding's
    assert finding["fix"] == {
        "title": "Use the current API", "applicability": "safe", "imports": [],
        "edits": [{"start": {"line": 4, "column": 12}, "end": {"line": 4, "column": 27},
                   "text": "a.addressable_data(0)"}]}
    full = run_cli("--output-format", "full", "m.py", cwd=tmp_path)
    assert "fix (safe): Use the current API" in full.stdout
    assert "[*] 1 fixable with --fix." in full.stderr


def test_flake8_marks_safe_fixes_only(tmp_path):
    (tmp_path / "m.py").write_text(
        "import jax\nimport torch\n" + MULTI + "t = torch.from_dlpack(y)\n\n\n"
        "def f(a: jax.Array):\n    return a.device_buffer\n")
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "m.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    lines = sorted(r.stdout.splitlines())
    assert len(lines) == 2, r.stdout + r.stderr
    assert " JXI002 torch.from_dlpack()" in lines[0]          # unsafe: no mark
    assert " JXI005 [*] `a.device_buffer`" in lines[1]


def test_summary_counts_unsafe_fixes(tmp_path):
    (tmp_path / "m.py").write_text(
        "import jax\nimport torch\n" + MULTI + "t = torch.from_dlpack(y)\n"
        "try:\n    u = torch.from_dlpack(y)\nexcept ValueError:\n    u = None\n")
    r = run_cli("--fix", "m.py", cwd=tmp_path)
    assert r.returncode == 1
    assert "Fixed 1 finding (1 remaining); 1 more fixable with --unsafe-fixes." in r.stderr
    r = run_cli("--fix", "--unsafe-fixes", "m.py", cwd=tmp_path)
    assert r.returncode == 0
    assert "Fixed 1 finding (0 remaining)." in r.stderr


def test_a_run_with_only_unsafe_fixes_says_so_without_a_zero(tmp_path):
    """Only an unsafe fix applies: the hint names ``--unsafe-fixes`` instead of "0 fixable
    with --fix (1 more ...)" (a new user found that wording odd)."""
    (tmp_path / "m.py").write_text("import jax\nimport torch\n" + MULTI + "t = torch.from_dlpack(y)\n")
    r = run_cli("m.py", cwd=tmp_path)
    assert r.returncode == 1
    assert "[*] 1 fixable with --fix --unsafe-fixes." in r.stderr
    assert "0 fixable" not in r.stderr
