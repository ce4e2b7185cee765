"""Names handed on by a module that does not define them (issue 16, the plan's import graph):
re-exports and factories.

``pkg/tools.py`` imports ``Converter`` from ``pkg/impl.py`` (whose ``to_torch`` calls
``torch.from_dlpack``) and names no consumer itself; ``pkg/main.py`` takes ``Converter`` (or an
alias of it) from ``tools``.  The plan follows such a re-export to the module that defines the
name, as it does for a package's ``__init__`` (``Plan._origin``): the caller gives ``impl.py``
its calling context, and the export is flagged at ``impl.py``'s sink.  A factory of ``tools``
(``def converter(): return Converter()``, or ``conv = Converter(); return conv``), or of a module
taking it from ``tools``, hands on the same class (``pipeline/handon.py``):
``converter().to_torch(sharded)`` is flagged there too, cold and warm; so is ``tools.Converter()``
with ``import pkg.tools as tools`` (``import a.b as x`` binds ``x`` to ``a.b``: the plan's facts
once dropped the alias, and ``impl_mod.Converter()`` was not followed either).  Run for real on 8 CPU devices, each flagged program raises ``BufferError`` there.

A cached summary holding a function of another module (a factory returning that module's
class) once made a warm run fail with an internal error (``FrozenRecord`` had no ``state``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import EIGHT_DEVICES, write_files
from jaxinterop_lint import Config, lint_paths

IMPL = """\
import torch


class Converter:
    def to_torch(self, a):
        return torch.from_dlpack(a)
"""

TOOLS = """\
from .impl import Converter
from .impl import Converter as Conv


def converter():
    return Converter()


def built(dtype=None):
    conv = Converter()
    return conv


def converter_cls():
    return Converter
"""

HEAD = """\
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

{imports}


def sharded():
    mesh = Mesh(np.array(jax.devices()), ("x",))
    return jax.device_put(np.zeros(8, np.float32), NamedSharding(mesh, P("x")))
"""

SINK_LINE = 6   # ``return torch.from_dlpack(a)`` in impl.py


def _project(root: Path, imports: str, body: str, tools: str = TOOLS) -> Path:
    files = {"pyproject.toml": "[project]\nname = \"pkg\"\nversion = \"0\"\n", "pkg/__init__.py": "",
             "pkg/impl.py": IMPL, "pkg/tools.py": tools, "pkg/layer.py": LAYER, "pkg/layer2.py": LAYER2,
             "pkg/main.py": HEAD.format(imports=imports) + "\n\n" + textwrap.dedent(body)}
    return write_files(root, files)


def _lint(root: Path, use_cache: bool = False):
    return lint_paths([str(root / "pkg")], Config(), project_root=str(root), use_cache=use_cache)


def _found(result):
    return sorted((os.path.basename(f.path), f.line, f.code) for f in result.findings)


REEXPORTED = {
    "the name": ("from pkg.tools import Converter", """\
        def case_reexport_fails():
            return Converter().to_torch(sharded())
    """),
    "an alias": ("from pkg.tools import Conv", """\
        def case_alias_fails():
            return Conv().to_torch(sharded())
    """),
    "relative": ("from .tools import Converter", """\
        def case_relative_fails():
            return Converter().to_torch(sharded())
    """),
    "a factory": ("from pkg.tools import converter", """\
        def case_factory_fails():
            return converter().to_torch(sharded())
    """),
    "a factory of the module": ("from pkg import tools", """\
        def case_module_factory_fails():
            return tools.converter().to_torch(sharded())
    """),
    "a factory's caller": ("from pkg.layer import make", """\
        def case_layer_fails():
            return make().to_torch(sharded())
    """),
    "a factory's caller's caller": ("from pkg.layer2 import make2", """\
        def case_layer2_fails():
            return make2().to_torch(sharded())
    """),
    "a factory's local": ("from pkg.tools import built", """\
        def case_local_fails():
            conv = built("f32")
            return conv.to_torch(sharded())
    """),
    "a factory of the class": ("from pkg.tools import converter_cls", """\
        def case_class_factory_fails():
            cls = converter_cls()
            return cls().to_torch(sharded())
    """),
    "a factory of the dotted module": ("import pkg.tools", """\
        def case_dotted_factory_fails():
            return pkg.tools.converter().to_torch(sharded())
    """),
    "import a.b as x": ("import pkg.impl as impl_mod", """\
        def case_import_as_fails():
            return impl_mod.Converter().to_torch(sharded())
    """),
    "a re-export through the module": ("import pkg.tools as tools_mod", """\
        def case_module_reexport_fails():
            return tools_mod.Converter().to_torch(sharded())
    """),
}

LAYER = "from .tools import converter\n\n\ndef make():\n    return converter()\n"
LAYER2 = "from .layer import make\n\n\ndef make2():\n    return make()\n"     # two relay modules


@pytest.mark.parametrize("case", sorted(REEXPORTED))
def test_a_name_re_exported_by_a_plain_module_gives_its_definer_the_calling_context(tmp_path, case):
    imports, body = REEXPORTED[case]
    result = _lint(_project(tmp_path, imports, body))
    assert _found(result) == [("impl.py", SINK_LINE, "JXI002")], result.findings
    assert "Converter.to_torch() is called from case_" in result.findings[0].message
    assert not result.errors


def test_a_re_exported_name_given_host_data_has_no_finding(tmp_path):
    result = _lint(_project(tmp_path, "from pkg.tools import Converter", """\
        def case_host_runs():
            return Converter().to_torch(np.zeros(8, np.float32))
    """))
    assert _found(result) == [] and not result.errors


def test_a_factory_given_host_data_has_no_finding(tmp_path):
    result = _lint(_project(tmp_path, "from pkg.tools import converter", """\
        def case_host_runs():
            return converter().to_torch(np.zeros(8, np.float32))
    """))
    assert _found(result) == [] and not result.errors


def test_a_warm_run_after_edits_finds_what_a_cold_run_finds(tmp_path):
    """The caller hands the factory's instance host data, then a sharded array again; and
    ``tools``' factory returns a class of its own, then ``impl``'s again.  The summary of
    ``tools`` stored in between holds ``impl``'s class: its exports stay ``impl``'s (the
    calling context goes to ``impl.py``), and what ``main`` read through ``tools`` is a
    dependency of its result."""
    root = _project(tmp_path, "from pkg.tools import converter", """\
        def case_factory_fails():
            return converter().to_torch(sharded())
    """)
    main, tools = root / "pkg" / "main.py", root / "pkg" / "tools.py"
    sharded_call, host_call = main.read_text(), main.read_text().replace("(sharded())", "(np.zeros(8))")
    safe = "class Safe:\n    def to_torch(self, a):\n        return a\n\n\ndef converter():\n    return Safe()\n"
    flagged = [("impl.py", SINK_LINE, "JXI002")]
    for main_text, tools_text, want in [(sharded_call, TOOLS, flagged), (host_call, TOOLS, []),
                                        (sharded_call, TOOLS, flagged), (sharded_call, safe, []),
                                        (sharded_call, TOOLS, flagged)]:
        main.write_text(main_text)
        tools.write_text(tools_text)
        warm = _lint(root, use_cache=True)
        assert _found(warm) == want == _found(_lint(root)), (main_text, tools_text)
        assert not warm.errors


@pytest.mark.parametrize("use_cache", [False, True])
def test_a_caller_naming_no_jax_word_is_planned_for_the_factory_it_calls(tmp_path, use_cache):
    """``train`` names no JAX word: it takes ``sharded`` from ``model`` and ``converter``
    from ``tools``.  The plan makes it a candidate for what the factory hands on
    (``Plan.exporter_targets``), and its call gives ``impl`` the calling context."""
    files = {"pkg/model.py": HEAD.format(imports=""),
             "pkg/train.py": "from pkg.model import sharded\nfrom pkg.tools import converter\n\n\n"
                             "def case_train_fails():\n    return converter().to_torch(sharded())\n"}
    root = _project(tmp_path, "", "")       # main.py calls nothing
    write_files(root, files)
    for _ in range(2 if use_cache else 1):
        result = _lint(root, use_cache=use_cache)
        assert _found(result) == [("impl.py", SINK_LINE, "JXI002")] and not result.errors
        assert "called from case_train_fails() at pkg/train.py:6" in result.findings[0].message


PARAM_CALLERS = """\
class Trainer:
    def __init__(self):
        self.conv = converter()

    def step(self, batch):
        return self.conv.to_torch(batch)


def step(batch):
    conv = converter()
    return conv.to_torch(batch)


def case_trainer_fails():
    return Trainer().step(sharded())


def case_step_fails():
    return step(sharded())


def case_host_runs():
    return step(np.zeros(8, np.float32))
"""


def _param_callers(root: Path) -> Path:
    return _project(root, "from pkg.tools import converter", PARAM_CALLERS)


def test_a_factorys_instance_exporting_a_parameter_is_flagged_at_the_call(tmp_path):
    """The factory's instance exports a parameter of the caller (kept on ``self``, or in a
    local): flagged at the call in ``main.py`` with the caller's calling context, as for
    ``Converter()`` itself.  The file names no consumer: the masking once skipped it (the
    factory's name was not among the names that may export), 0 findings."""
    result = _lint(_param_callers(tmp_path))
    main_text = (tmp_path / "pkg" / "main.py").read_text().splitlines()
    calls = [i + 1 for i, line in enumerate(main_text) if ".to_torch(batch)" in line]
    assert _found(result) == [("main.py", line, "JXI002") for line in calls], result.findings
    assert not result.errors


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_a_factorys_instance_exporting_a_parameter_raises_where_flagged_on_eight_devices(tmp_path):
    root = _param_callers(tmp_path)
    probe = Path(__file__).parent / "runtime_probe.py"
    r = subprocess.run([sys.executable, str(probe), str(root / "pkg" / "main.py"), str(root)],
                       capture_output=True, text=True, env=dict(os.environ, **EIGHT_DEVICES), timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    outcome = json.loads(r.stdout.strip().splitlines()[-1])
    assert sorted(outcome) == ["case_host_runs", "case_step_fails", "case_trainer_fails"]
    for case, res in outcome.items():
        assert res["ok"] == case.endswith("_runs"), (case, res)
        if not res["ok"]:
            assert "BufferError" in res["classes"] and ["impl.py", SINK_LINE] in res["frames"], (case, res)


def test_a_module_that_defines_the_name_it_imports_is_not_followed(tmp_path):
    """``tools`` imports ``Converter`` and then defines its own (a fallback, a wrapper):
    ``main``'s ``Converter`` is ``tools``' one, which exports nothing."""
    own = TOOLS + "\n\nclass Converter:\n    def to_torch(self, a):\n        return a\n"
    result = _lint(_project(tmp_path, "from pkg.tools import Converter", """\
        def case_own_runs():
            return Converter().to_torch(sharded())
    """, tools=own))
    assert _found(result) == [] and not result.errors


def test_the_cached_result_follows_a_change_of_the_re_exporting_module(tmp_path):
    """``main``'s decision read ``tools``' imports: when ``tools`` starts defining its own
    ``Converter``, a warm run drops the finding, and brings it back when the re-export
    returns."""
    root = _project(tmp_path, "from pkg.tools import Converter", """\
        def case_reexport_fails():
            return Converter().to_torch(sharded())
    """)
    assert _found(_lint(root, use_cache=True)) == [("impl.py", SINK_LINE, "JXI002")]
    tools = root / "pkg" / "tools.py"
    tools.write_text("class Converter:\n    def to_torch(self, a):\n        return a\n")
    assert _found(_lint(root, use_cache=True)) == []
    tools.write_text(TOOLS)
    assert _found(_lint(root, use_cache=True)) == [("impl.py", SINK_LINE, "JXI002")]


def test_a_cached_summary_holding_another_modules_function_never_breaks_a_warm_run(tmp_path):
    """``impl``'s summary is stored while ``main`` uses ``Converter`` directly; then ``main``
    uses ``tools.converter()``, whose summary returns an instance of the stored class.
    Freezing ``tools`` met the stored record of ``Converter.to_torch``, which had no ``state``:
    every warm run failed with an internal error until the cache was removed."""
    root = _project(tmp_path, "from pkg.impl import Converter", """\
        def case_direct_fails():
            return Converter().to_torch(sharded())
    """)
    first = _lint(root, use_cache=True)
    assert _found(first) == [("impl.py", SINK_LINE, "JXI002")] and not first.errors
    main = root / "pkg" / "main.py"
    main.write_text(HEAD.format(imports="from pkg.tools import converter") + textwrap.dedent("""\


        def case_factory_fails():
            return converter().to_torch(sharded())
    """))
    for _ in range(2):
        again = _lint(root, use_cache=True)
        assert not again.errors, again.errors
        assert all(f.code != "JXI000" for f in again.findings)
        assert _found(again) == _found(_lint(root))    # as a run without the cache


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_the_re_exported_export_raises_where_flagged_on_eight_devices(tmp_path):
    """Each flagged program raises ``BufferError`` at ``impl.py``'s sink line (the line
    flagged); the one given host data runs."""
    absolute = [(i, b) for i, b in REEXPORTED.values() if not i.startswith("from .")]
    body = "\n\n".join(textwrap.dedent(b) for _, b in absolute)
    imports = "\n".join(i for i, _ in absolute)
    root = _project(tmp_path, imports, body + """

def case_host_runs():
    return Converter().to_torch(np.zeros(8, np.float32))
""")
    flagged = {(os.path.basename(f.path), f.line) for f in _lint(root).findings}
    assert flagged == {("impl.py", SINK_LINE)}
    probe = Path(__file__).parent / "runtime_probe.py"
    env = dict(os.environ, **EIGHT_DEVICES)
    r = subprocess.run([sys.executable, str(probe), str(root / "pkg" / "main.py"), str(root)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    outcome = json.loads(r.stdout.strip().splitlines()[-1])
    assert sorted(outcome) == ["case_alias_fails", "case_class_factory_fails", "case_dotted_factory_fails",
                               "case_factory_fails", "case_host_runs", "case_import_as_fails",
                               "case_layer2_fails", "case_layer_fails", "case_local_fails", "case_module_factory_fails",
                               "case_module_reexport_fails", "case_reexport_fails"]
    for case, res in outcome.items():
        if case.endswith("_fails"):
            assert not res["ok"] and "BufferError" in res["classes"], (case, res)
            assert ["impl.py", SINK_LINE] in res["frames"], (case, res)
        else:
            assert res["ok"], (case, res)


@pytest.mark.parametrize("length, flagged", [(3, True), (400, False)])
def test_a_chain_of_re_exports_is_followed_a_few_levels_and_never_recurses(tmp_path, length, flagged):
    """``m0`` re-exports ``Converter`` from ``m1``, which re-exports it from ``m2`` ... down to
    the module that defines it.  A short chain is followed to the sink; a chain of 400
    modules once exhausted the plan's recursion (an internal error, reading each module's
    import graph to learn what it defines): it is followed a few levels, and never fails."""
    files = {f"pkg/m{i}.py": f"from .m{i + 1} import Converter\n" for i in range(length)}
    files[f"pkg/m{length}.py"] = IMPL
    files["pkg/main.py"] = HEAD.format(imports="from pkg.m0 import Converter") + textwrap.dedent("""\


        def case_chain_fails():
            return Converter().to_torch(sharded())
    """)
    root = write_files(tmp_path, {"pyproject.toml": "", "pkg/__init__.py": "", **files})
    result = _lint(root)
    assert not result.errors and all(f.code != "JXI000" for f in result.findings)
    assert _found(result) == ([(f"m{length}.py", SINK_LINE, "JXI002")] if flagged else [])


STAR_CORE = """\
import jax
from jax.sharding import NamedSharding, PartitionSpec as P

__all__ = ["spread"]


def spread(x):
    mesh = jax.make_mesh((jax.device_count(),), ("x",))
    return jax.device_put(x, NamedSharding(mesh, P("x")))
"""
STAR_IO = "import numpy as np\n\n\ndef numpy_view(x):\n    return np.from_dlpack(x)\n"
STAR_MAIN = """\
import jax.numpy as jnp

{imports}


def case_sharded_view():
    return numpy_view(spread(jnp.arange(16.0)))


def case_host_view():
    return numpy_view(jnp.arange(16.0))


if __name__ == "__main__":
    for name in ("case_sharded_view", "case_host_view"):
        try:
            globals()[name]()
            print(name, "ok")
        except BufferError:
            print(name, "BufferError")
"""


STAR_FORMS = ["from meshlib import *  # noqa: F403", "from meshlib import spread, numpy_view",
              "import meshlib\nspread, numpy_view = meshlib.spread, meshlib.numpy_view"]


def _star_project(root: Path, imports: str) -> Path:
    return write_files(root, {"pyproject.toml": "[project]\nname = \"m\"\n",
                              "meshlib/__init__.py": "from .core import *  # noqa: F401,F403\n"
                                                     "from .io import *  # noqa: F401,F403\n",
                              "meshlib/core.py": STAR_CORE, "meshlib/io.py": STAR_IO,
                              "main.py": STAR_MAIN.format(imports=imports)})


@pytest.mark.parametrize("imports", STAR_FORMS)
def test_names_a_package_star_imports_from_its_modules_are_followed(tmp_path, imports):
    """``meshlib/__init__.py`` is ``from .core import *`` and ``from .io import *``: a caller
    taking ``spread`` and ``numpy_view`` from the package (by star, by name, or as its
    attributes) gives ``io.py``'s export its calling context (hunt46 proj2: the plan took the
    names as the package's own, reached no sink, and parsed nothing), cold and cached."""
    _star_project(tmp_path, imports)
    for use_cache in (False, True, True):
        result = lint_paths([str(tmp_path)], Config(), project_root=str(tmp_path), use_cache=use_cache)
        assert _found(result) == [("io.py", 5, "JXI002")]
        (finding,) = result.findings
        assert "case_sharded_view()" in finding.message and "case_host_view" not in finding.message


@pytest.mark.slow   # real jax on 8 CPU devices
@pytest.mark.parametrize("imports", STAR_FORMS)
def test_the_star_imported_export_fails_for_real(tmp_path, imports):
    """The program of the test above, run on 8 CPU devices: the sharded case raises
    BufferError (at ``io.py``'s flagged line), the host case runs."""
    _star_project(tmp_path, imports)
    ran = subprocess.run([sys.executable, "main.py"], cwd=tmp_path, capture_output=True, text=True,
                         env=dict(os.environ, **EIGHT_DEVICES), timeout=600)
    assert ran.stdout.split() == ["case_sharded_view", "BufferError", "case_host_view", "ok"], ran.stderr[-2000:]
