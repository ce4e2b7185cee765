"""Module state written by functions, and ``super()`` calls (stop 36; each flagged form
raised ``BufferError`` on 8 CPU devices: ``fixtures/runtime/module_state.py`` is run by
``tests/test_runtime_truth.py``).  Here: the plan's units and the masking of a large file
keep what writes the state, and the CLI in a git project flags it."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.pipeline import toplevel

HEAD = """\
import jax
import jax.numpy as jnp
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((jax.device_count(),), ("d",))
S = NamedSharding(mesh, P("d"))
"""

FILLED = HEAD + textwrap.dedent("""\
    BUF = []


    def collect(v):
        BUF.append(v)


    def flush():
        return [torch.from_dlpack(b) for b in BUF]


    collect(jax.device_put(jnp.ones(8), S))
    flush()
    """)

GLOBAL = HEAD + textwrap.dedent("""\
    STATE = None


    def setup():
        global STATE
        STATE = jax.device_put(jnp.ones(8), S)


    def use():
        return torch.from_dlpack(STATE)


    setup()
    use()
    """)


def _codes(text: str) -> list:
    return [(f.line, f.code) for f in lint_source(text, "state.py", Config()).findings]


def _pad(text: str, marker: str, n: int = 60) -> str:
    """``text`` with ``n`` small functions before ``marker``: over the masking's 200 lines."""
    filler = "".join(f"def filler_{i}(a):\n    return a + {i}\n\n\n" for i in range(n))
    head, tail = text.split(marker, 1)
    return head + filler + marker + tail


def test_a_list_filled_by_a_helper_is_flagged_where_it_is_exported():
    assert _codes(FILLED) == [(FILLED.splitlines().index("    return [torch.from_dlpack(b) for b in BUF]") + 1,
                               "JXI002")]


def test_a_global_assigned_in_a_function_is_flagged_where_it_is_read():
    assert _codes(GLOBAL) == [(GLOBAL.splitlines().index("    return torch.from_dlpack(STATE)") + 1, "JXI002")]


def test_a_helper_filling_it_with_host_data_is_not_flagged():
    safe = FILLED.replace("jax.device_put(jnp.ones(8), S)", "jnp.ones(8)")
    assert safe != FILLED
    assert _codes(safe) == []


def test_a_large_file_keeps_the_writer_and_its_caller():
    for text, marker in ((FILLED, "BUF = []"), (GLOBAL, "STATE = None")):
        big = _pad(text, marker)
        assert big.count("\n") > 250
        assert [c for _, c in _codes(big)] == ["JXI002"]


def test_the_plan_units_give_the_written_name_to_the_writer_and_its_callers():
    units = toplevel.units_of(FILLED)
    by_start = {body.split("\n")[0]: names for names, body in units}
    assert "BUF" in by_start["def collect(v):"]
    assert "BUF" in by_start["collect(jax.device_put(jnp.ones(8), S))"]     # the module-level call of the writer
    assert "BUF" not in by_start["def flush():"]         # a reader only
    by_start = {body.split("\n")[0]: names for names, body in toplevel.units_of(GLOBAL)}
    assert by_start["def setup():"] == ("setup", "STATE") and by_start["def use():"] == ("use",)


def test_a_local_list_of_the_same_name_is_not_the_module_s():
    text = FILLED.replace("def collect(v):\n    BUF.append(v)", "def collect(v):\n    BUF = []\n    BUF.append(v)")
    assert text != FILLED
    assert _codes(text) == []


SUPER = HEAD + textwrap.dedent("""\
    class Base:
        def __init__(self, w):
            self.w = w


    class Child(Base):
        def __init__(self, w):
            super().__init__(w)

        def export(self):
            return torch.from_dlpack(self.w)


    Child(ARG).export()
    """)


def test_super_init_stores_on_self():
    line = SUPER.splitlines().index("        return torch.from_dlpack(self.w)") + 1
    assert _codes(SUPER.replace("ARG", "jax.device_put(jnp.ones(8), S)")) == [(line, "JXI002")]
    assert _codes(SUPER.replace("ARG", "jnp.ones(8)")) == []


def test_the_cli_in_a_git_project_flags_both(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "filled.py").write_text(FILLED)
    (tmp_path / "state.py").write_text(GLOBAL)
    r = subprocess.run([sys.executable, "-m", "jaxinterop_lint", "--no-cache", "."], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "filled.py:" in r.stdout and "state.py:" in r.stdout and r.stdout.count("JXI002") == 2


ITEM = HEAD + textwrap.dedent("""\
    class Item:
        def __init__(self, a):
            self.a = a

        def to_torch(self):
            return torch.from_dlpack(self.a)


    def consume(item):
        return item.to_torch()


    def relay(item):
        return consume(item)


    relay(Item(ARG))
    """)


def test_a_method_called_on_a_parameter_runs_on_the_caller_s_instance():
    line = ITEM.splitlines().index("        return torch.from_dlpack(self.a)") + 1
    assert _codes(ITEM.replace("ARG", "jax.device_put(jnp.ones(8), S)")) == [(line, "JXI002")]
    assert _codes(ITEM.replace("ARG", "jnp.ones(8)")) == []


def test_array_methods_on_a_parameter_are_not_kept_as_calls():
    from jaxinterop_lint.analysis.module import ModuleAnalysis
    import libcst as cst

    text = HEAD + "def f(x, item):\n    y = x.reshape(-1).astype(jnp.float32)\n    return item.save(y)\n"
    ma = ModuleAnalysis(cst.parse_module(text), "f.py", source=text).run()
    (rec,) = [r for r in ma.functions if r.name == "f"]
    assert [(p, attr) for p, _, attr, *_ in rec.summary.calls] == [(1, "save")]


def test_the_class_in_another_module_of_a_git_project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "data.py").write_text("import torch\n\n\nclass Item:\n    def __init__(self, a):\n        self.a = a\n\n"
                                 "    def to_torch(self):\n        return torch.from_dlpack(self.a)\n")
    (pkg / "train.py").write_text(HEAD + "from pkg.data import Item\n\n\ndef consume(item):\n    return item.to_torch()\n\n\n"
                                  "def main():\n    consume(Item(jax.device_put(jnp.ones(8), S)))\n")
    r = subprocess.run([sys.executable, "-m", "jaxinterop_lint", "--no-cache", "."], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "pkg/data.py:9:" in r.stdout and "called from main()" in r.stdout, r.stdout


def test_a_reader_defined_before_the_writer_s_caller_is_analysed_again():
    """``flush`` defined above the ``main`` that fills ``BUF`` (a new user's report, stop 36):
    functions are analysed in definition order, and a reader analysed before a write is
    analysed again once the module's functions are done."""
    text = HEAD + textwrap.dedent("""\
        BUF = []


        def collect(v):
            BUF.append(v)


        def flush():
            return [torch.from_dlpack(b) for b in BUF]


        def main():
            collect(jax.device_put(jnp.ones(8), S))
            flush()
        """)
    assert [c for _, c in _codes(text)] == ["JXI002"]


def test_a_setup_function_nobody_calls_here_still_fills_the_global():
    """A library's ``setup()`` is called by its users: what it writes whatever its arguments
    is what the global may hold for every function of the module."""
    text = GLOBAL[:GLOBAL.index("setup()\nuse()")]     # (neither function called)
    assert [c for _, c in _codes(text)] == ["JXI002"]
    assert _codes(text.replace("jax.device_put(jnp.ones(8), S)", "jnp.ones(8)")) == []


def test_the_result_does_not_depend_on_another_file_importing_the_module(tmp_path):
    """A module reached through another file's import first gave no finding of its own, and
    the cache made the result depend on which files were linted before (a new user's report)."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "reg.py").write_text(HEAD + textwrap.dedent("""\
        REGISTRY = {}


        def register(name, value):
            REGISTRY[name] = value


        def fill():
            register("w", jax.device_put(jnp.ones(8), S))


        def export_one():
            return torch.from_dlpack(REGISTRY["w"])
        """))
    (tmp_path / "c0.py").write_text("from pkg import reg\n")
    outs = []
    for args in (["--no-cache", "pkg"], ["--no-cache", "."], ["clean"], ["."], ["pkg/reg.py"], ["."]):
        r = subprocess.run([sys.executable, "-m", "jaxinterop_lint", *args], cwd=tmp_path, capture_output=True, text=True)
        if args != ["clean"]:
            outs.append(r.stdout.count("pkg/reg.py:") if args != ["pkg/reg.py"] else r.stdout.count("reg.py:"))
    assert outs == [1, 1, 1, 1, 1], outs
