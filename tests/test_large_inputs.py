"""Issue 13, "no size or shape of input may blow memory or time": long displays of constants
are shrunk before parsing (lines and columns kept, no fix ever rewrites them), and a file
whose parse would pass the memory budget of its size is one clear error line, never a hang.
Behaviour only: the figures (peak memory, time for 1, 2, 4 MB) come from
``scripts/large_inputs.py``."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, run_cli
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint import size
from jaxinterop_lint.size import MIN_ITEMS, constant_displays, shrink, within_budget
from jaxinterop_lint.source import SourceError

sys.path.insert(0, str(ROOT / "scripts"))
import large_inputs  # noqa: E402  (the generators the measuring script uses)

ITEMS = ", ".join(str(i) for i in range(2 * MIN_ITEMS))


@pytest.mark.parametrize("code", [
    f"x = [{ITEMS}]\n", f"x = ({ITEMS},)\n", f"x = {{{ITEMS}}}\n",
    "x = {" + ", ".join(f"'k{i}': -{i}.5e-3" for i in range(2 * MIN_ITEMS)) + "}\n",
    "x = [" + ",\n     ".join(f"[{i}, None, 'a' 'b', True]" for i in range(2 * MIN_ITEMS)) + "]  # table\n",
    f"if v in ({ITEMS}):\n    pass\n", f"f([{ITEMS}])\n",
])
def test_long_constant_displays_are_shrunk_keeping_lines_and_columns(code, monkeypatch):
    monkeypatch.setattr(size, "SHRINK_FROM", 0)
    out, spans = shrink(code)
    assert len(spans) == 1 and len(out) == len(code) and out.count("\n") == code.count("\n")
    assert out != code
    compile(out, "<shrunk>", "exec")                 # still valid Python, the same kind of value


@pytest.mark.parametrize("code", [
    f"x = f({ITEMS})\n",                              # a call's arguments
    f"x = a[{ITEMS}]\n",                              # a subscript
    f"x = [{ITEMS}, y]\n",                            # a name among the items
    f"x = [{ITEMS}, y()]\n",
    f"x = [{ITEMS} for y in z]\n",
    f"x = [{ITEMS.replace(', 5,', ' 5,')}]\n",        # a syntax error stays visible
    "x = [" + ", ".join(f"f'{{{i}}}'" for i in range(2 * MIN_ITEMS)) + "]\n",
    "x = [" + ", ".join(str(i) for i in range(MIN_ITEMS - 2)) + "]\n",   # short
    f"x = [1 - {ITEMS}]\n",
])
def test_other_code_is_never_shrunk(code, monkeypatch):
    monkeypatch.setattr(size, "SHRINK_FROM", 0)
    assert constant_displays(code) == [] and shrink(code) == (code, [])


def test_a_syntax_error_in_a_long_list_is_still_reported(monkeypatch):
    monkeypatch.setattr(size, "SHRINK_FROM", 0)
    code = f"import jax\nimport torch\nx = [{ITEMS.replace(', 5,', ' 5,')}]\nt = torch.from_dlpack(jax.device_put(x, jax.NamedSharding(m, s)))\n"
    r = lint_source(code, "m.py", Config())
    assert r.error is not None and "syntax" in r.error.message


def _used(n: int) -> str:
    return large_inputs.literal_used(n)


def test_a_used_literal_is_shrunk_and_its_finding_made(tmp_path):
    code = _used(200_000)
    r = lint_source(code, "m.py", Config())
    assert r.error is None and [f.code for f in r.findings] == ["JXI002"]
    assert r.findings[0].line == code.count("\n")


REMOVED = "import jax\nimport jax.numpy as jnp\n\n\ndef first():\n    return jnp.asarray([{}]).device_buffer\n"


def test_no_fix_rewrites_a_shrunk_literal(tmp_path):
    """The fix of ``.device_buffer`` rewrites the whole expression: over a shrunk literal it
    would write back the blanked items (it did, before the check), so there is none; the
    finding stays.  With a short literal the fix is made."""
    long = REMOVED.format(", ".join(str(i) for i in range(20_000)))
    assert len(long) > size.SHRINK_FROM
    [f] = lint_source(long, "m.py", Config()).findings
    assert f.code == "JXI005" and f.fix is None
    [short] = lint_source(REMOVED.format("0, 1"), "m.py", Config()).findings
    assert short.fix is not None and short.fix.edits[0].text == "jnp.asarray([0, 1]).addressable_data(0)"
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "m.py").write_text(long)
    r = run_cli("--no-cache", "--fix", "--unsafe-fixes", "m.py", cwd=tmp_path)
    assert (tmp_path / "m.py").read_text() == long and r.returncode == 1, r.stderr


def test_the_masked_and_the_used_literal_through_the_cli(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "used.py").write_text(_used(2 * 2**20))
    (tmp_path / "unused.py").write_text(large_inputs.literal_unused(2 * 2**20))
    r = run_cli("--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    found = sorted((f["path"].lstrip("./"), f["code"]) for f in json.loads(r.stdout))
    assert found == [("unused.py", "JXI002"), ("used.py", "JXI002")]


def test_within_budget_refuses_what_the_budget_cannot_hold():
    within_budget("x = 1\n" * 1000, 6000)
    with pytest.raises(SourceError) as e:
        within_budget("x = 1\n" * 100_000, 600_000)
    assert e.value.message.startswith("too large to analyse") and "\n" not in e.value.message
    assert size.count_tokens("a = 'b c d' # e f\n", 100) == 4


def test_a_file_too_large_to_analyse_is_one_error_line_cli_and_flake8(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "big.py").write_text(large_inputs.dense(3 * 2**20))
    (tmp_path / "good.py").write_text("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
                                      "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
    r = run_cli("--no-cache", ".", cwd=tmp_path)
    errors = [line for line in r.stderr.splitlines() if ": error: " in line]
    assert r.returncode == 2 and len(errors) == 1 and "too large to analyse" in errors[0], r.stderr
    assert errors[0].lstrip("./").startswith("big.py:1:1:") and "Traceback" not in r.stderr
    assert "good.py:4:5: JXI002" in r.stdout
    fl = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "-j", "1", "big.py"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=600)
    assert fl.returncode == 1 and "JXI000" in fl.stdout and "too large to analyse" in fl.stdout, fl.stdout + fl.stderr


def test_a_large_module_people_write_is_analysed_not_refused():
    """A module of a few hundred KB of real code (jax/_src/core.py is 155 KB, keras'
    numpy_test.py 437 KB) is analysed: the budget is 512 MB at least for a file of up to
    1 MB; only larger files get the bare 50 MB + 30x."""
    text = large_inputs.dense(400 * 2**10)
    within_budget(text, len(text))                      # the whole text, unmasked: not refused
    assert size.memory_budget(2**20) == size.BUDGET_FLOOR
    assert size.memory_budget(3 * 2**20) == size.BUDGET_FIXED + 30 * 3 * 2**20
    text += "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n"
    r = lint_source(text, "big.py", Config())
    last = text.count("\n")
    assert r.error is None and ("JXI002", last) in [(f.code, f.line) for f in r.findings]
