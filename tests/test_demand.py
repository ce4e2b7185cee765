"""Issue 16, demand-driven contexts: a reported file's callers are analysed to feed it calling
contexts (PLAN decision 1 across modules) only when they can pass it a multi-device value: a
top-level unit that uses a name taken from it (one that may export) also uses a name that can
hand one on (pipeline/demand.py).  A caller that cannot is never parsed, and the one that can
still gives its context: the finding at the callee's sink names it.  A warm run checks the
contexts of its cached results against the decisions the last run stored, without the import
graph, and an edit that changes a decision judges the callee again."""
from __future__ import annotations

import os
import textwrap

from jaxinterop_lint import Config, lint_paths
from jaxinterop_lint.pipeline import run as run_module
from jaxinterop_lint.pipeline.analyse import PARSES

SHARD = """
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P
    mesh = jax.make_mesh((8,), ("x",))
    def sharded(x):
        return jax.device_put(x, NamedSharding(mesh, P("x")))
"""
BRIDGE = """
    import torch
    def to_torch(a):
        return torch.from_dlpack(a)
    def device_name():
        return "cpu"
"""
FILES = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/shard.py": SHARD,
    "pkg/bridge.py": BRIDGE,
    # passes what sharded() returns to to_torch(): gives bridge.py a context
    "pkg/first.py": """
        from pkg.shard import sharded
        from pkg.bridge import to_torch
        def first(x):
            return to_torch(sharded(x))
    """,
    # JAX code reaches it, but the unit that calls to_torch() sees only NumPy data
    "pkg/host_test.py": """
        import numpy as np
        from pkg.shard import sharded
        from pkg.bridge import to_torch
        def test_host():
            return to_torch(np.ones(3))
        def test_shard():
            return sharded(np.ones(8))
    """,
    # takes only a name of bridge.py that exports nothing
    "pkg/names.py": """
        from pkg.shard import sharded
        from pkg.bridge import device_name
        def where(x):
            return sharded(x), device_name()
    """,
    # a package that re-exports both: its __all__ names them in strings, it calls nothing
    "pkg/api/__init__.py": """
        from pkg.shard import sharded
        from pkg.bridge import to_torch
        __all__ = ["sharded", "to_torch"]
    """,
}
SILENT = {"pkg/host_test.py", "pkg/names.py", "pkg/api/__init__.py"}
AT_SINK = ("pkg/bridge.py", 4, "JXI002")


def _write(root, files):
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def _found(result, root):
    return sorted((os.path.relpath(f.path, root), f.line, f.code) for f in result.findings)


def _lint(root, cache=False):
    PARSES.clear()
    result = lint_paths([str(root)], Config(), use_cache=cache, jobs=1)
    return result, {os.path.relpath(p, root) for p in PARSES}


def test_callers_that_cannot_pass_a_multi_device_value_are_never_parsed(tmp_path):
    _write(tmp_path, FILES)
    result, parsed = _lint(tmp_path)
    assert _found(result, tmp_path) == [AT_SINK]
    assert "when to_torch() is called from first()" in result.findings[0].message
    assert {"pkg/first.py", "pkg/bridge.py"} <= parsed
    assert not parsed & SILENT, parsed


def test_a_caller_that_can_pass_through_a_module_level_name_still_gives_its_context(tmp_path):
    # The unit calling to_torch() uses a module-level name of the file that holds a
    # multi-device value: the caller is analysed, and bridge.py's sink has the finding.
    _write(tmp_path, {**FILES, "pkg/first.py": """
        import numpy as np
        from pkg.shard import sharded
        from pkg.bridge import to_torch
        ARR = sharded(np.ones(8))
        def first():
            return to_torch(ARR)
    """})
    result, parsed = _lint(tmp_path)
    assert _found(result, tmp_path) == [AT_SINK]
    assert "when to_torch() is called from first()" in result.findings[0].message
    assert "pkg/first.py" in parsed and not parsed & SILENT


def test_a_caller_that_can_pass_through_its_callers_in_the_file_is_analysed(tmp_path):
    # The unit calling to_torch() gets its argument from a unit of the file that uses a
    # carrier (its caller in the file): the caller is analysed (the finding is at the call
    # of the in-file export, as in-module contexts report it).
    _write(tmp_path, {**FILES, "pkg/first.py": """
        import numpy as np
        from pkg.shard import sharded
        from pkg.bridge import to_torch
        def send(x):
            return to_torch(x)
        def first(x):
            return send(sharded(x))
        def host():
            return np.ones(3)
    """})
    result, parsed = _lint(tmp_path)
    assert _found(result, tmp_path) == [("pkg/first.py", 6, "JXI002")]
    assert "pkg/first.py" in parsed and not parsed & SILENT


def test_a_module_level_statement_using_a_class_of_the_file_is_a_caller(tmp_path):
    # hunt51b v5: a module-level statement (it binds no name) calls the method a class of the
    # file inherits from bridge.py with a module-level multi-device value: the file is
    # analysed, and bridge.py's sink has the finding.  Assigned (``y = Sub().send(ARR)``) it
    # was found before; as an expression statement the file was never parsed.
    bridge = BRIDGE + """
    class Sender:
        def send(self, a):
            return torch.from_dlpack(a)
    """
    for call in ("Sub().send(ARR)", "print(Sub().send(ARR))", "y = Sub().send(ARR)"):
        _write(tmp_path, {**FILES, "pkg/bridge.py": bridge, "pkg/first.py": f"""
            import numpy as np
            from pkg.shard import sharded
            from pkg.bridge import Sender
            class Sub(Sender):
                pass
            ARR = sharded(np.ones(8))
            {call}
        """})
        result, parsed = _lint(tmp_path)
        assert _found(result, tmp_path) == [("pkg/bridge.py", 10, "JXI002")], call
        assert "pkg/first.py" in parsed and not parsed & SILENT


def test_a_caller_that_cannot_pass_keeps_no_finding_of_its_own(tmp_path):
    # The skipped caller's calls are no findings either: the callee is not linked to it, and
    # analysed for itself it finds nothing (NumPy data).
    _write(tmp_path, FILES)
    result = lint_paths([str(tmp_path / "pkg" / "host_test.py")], Config(), use_cache=False)
    assert result.findings == []


def test_warm_run_checks_contexts_without_the_import_graph(tmp_path, monkeypatch):
    _write(tmp_path, FILES)
    first, _ = _lint(tmp_path, cache=True)
    assert _found(first, tmp_path) == [AT_SINK]
    graph = []
    real = run_module.Session.know_importers
    monkeypatch.setattr(run_module.Session, "know_importers", lambda self: (graph.append(1), real(self))[1])
    warm, parsed = _lint(tmp_path, cache=True)
    assert _found(warm, tmp_path) == [AT_SINK] and warm.analysed_paths == [] and parsed == set()
    assert graph == []                   # the stored decisions held: no import graph
    # the NumPy test now feeds sharded data: bridge.py is judged again, with two callers
    _write(tmp_path, {"pkg/host_test.py": FILES["pkg/host_test.py"].replace("np.ones(3)", "sharded(np.ones(8))")})
    edited, parsed = _lint(tmp_path, cache=True)
    assert graph and _found(edited, tmp_path) == [AT_SINK]
    assert {"pkg/host_test.py", "pkg/bridge.py"} <= parsed
    assert "called from first()" in edited.findings[0].message
    # back: a warm run again (the new decisions were stored)
    _write(tmp_path, {"pkg/host_test.py": FILES["pkg/host_test.py"]})
    _lint(tmp_path, cache=True)
    graph.clear()
    again, parsed = _lint(tmp_path, cache=True)
    assert _found(again, tmp_path) == [AT_SINK] and parsed == set() and graph == []


def test_warm_run_judges_the_callee_again_for_a_new_caller(tmp_path):
    _write(tmp_path, {**FILES, "pkg/first.py": FILES["pkg/first.py"].replace("to_torch(sharded(x))", "to_torch(x)")})
    assert _found(_lint(tmp_path, cache=True)[0], tmp_path) == []
    assert _found(_lint(tmp_path, cache=True)[0], tmp_path) == []
    _write(tmp_path, {"pkg/later.py": """
        from pkg.shard import sharded
        from pkg.bridge import to_torch
        def later(x):
            return to_torch(sharded(x) + 1)
    """})
    result, parsed = _lint(tmp_path, cache=True)
    assert _found(result, tmp_path) == [AT_SINK] and "called from later()" in result.findings[0].message
    assert {"pkg/later.py", "pkg/bridge.py"} <= parsed


def test_warm_run_over_other_files_decides_the_contexts_again(tmp_path):
    # The stored decisions belong to one set of reported files: bridge.py alone has no
    # reported caller, so its sink is no finding (the call is reported where it is).
    _write(tmp_path, FILES)
    assert _found(_lint(tmp_path, cache=True)[0], tmp_path) == [AT_SINK]
    alone = lint_paths([str(tmp_path / "pkg" / "bridge.py")], Config(), use_cache=True)
    assert alone.findings == []
    assert _found(_lint(tmp_path, cache=True)[0], tmp_path) == [AT_SINK]


def test_a_skipped_caller_naming_jax_is_planned_again_when_a_module_it_reaches_becomes_a_carrier(tmp_path):
    # user.py names JAX words, but its unit calling to_torch() takes its value from
    # helper.get() -> deep.make(), no carrier at first: not analysed.  When deep.py starts to
    # shard, the stored "not analysed" must not hold (the decision followed the graph there).
    _write(tmp_path, {
        "pyproject.toml": "", "pkg/__init__.py": "", "pkg/bridge.py": BRIDGE,
        "pkg/deep.py": """
            def make():
                return [1.0] * 8
        """,
        "pkg/helper.py": """
            from pkg.deep import make
            def get():
                return make()
        """,
        "pkg/user.py": """
            import jax
            from jax.sharding import NamedSharding
            from pkg.helper import get
            from pkg.bridge import to_torch
            def place(x, mesh):
                return jax.device_put(x, NamedSharding(mesh, None))
            def send():
                return to_torch(get())
        """,
    })
    user = tmp_path / "pkg" / "user.py"

    def lint_user():
        PARSES.clear()
        result = lint_paths([str(user)], Config(), use_cache=True, jobs=1)
        return _found(result, tmp_path), {os.path.relpath(p, tmp_path) for p in PARSES}

    assert lint_user() == ([], set())
    assert lint_user() == ([], set())
    _write(tmp_path, {"pkg/deep.py": textwrap.dedent(SHARD) + "def make():\n    return sharded([1.0] * 8)\n"})
    found, parsed = lint_user()
    assert found == [("pkg/user.py", 9, "JXI002")] and "pkg/user.py" in parsed


TOOLS = """
    import torch
    DEFAULTS = [1.0, 2.0]
    def save(model, path):
        marker = torch.as_tensor(DEFAULTS)   # a consumer, but of no parameter
        return path, marker
    def to_torch(a):
        return torch.from_dlpack(a)
    class Exporter:
        def send(self, a):
            return torch.from_dlpack(a)
"""


def _candidate(tmp_path, body):
    _write(tmp_path, {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/shard.py": SHARD, "pkg/tools.py": TOOLS,
                      "pkg/user.py": "from pkg.shard import sharded\n" + textwrap.dedent(body)})
    PARSES.clear()
    # only the caller is reported: a call of an exporting function is a finding at the call
    result = lint_paths([str(tmp_path / "pkg" / "user.py")], Config(), use_cache=False, jobs=1)
    return _found(result, tmp_path), {os.path.relpath(p, tmp_path) for p in PARSES}


def test_a_candidate_taking_only_functions_that_export_nothing_is_never_parsed(tmp_path):
    # save() names a consumer (the text plan takes it for an exporter), its summary exports
    # no parameter: the file that hands it sharded data cannot make a finding through it
    found, parsed = _candidate(tmp_path, """
        from pkg.tools import save
        def keep(x):
            return save(sharded(x), "out.bin")
    """)
    assert found == [] and "pkg/user.py" not in parsed and "pkg/tools.py" in parsed


def test_a_candidate_taking_an_exporting_function_or_class_is_analysed(tmp_path):
    found, parsed = _candidate(tmp_path, """
        from pkg.tools import save, to_torch
        def keep(x):
            return save(sharded(x), "out.bin"), to_torch(sharded(x))
    """)
    assert found == [("pkg/user.py", 5, "JXI002")] and "pkg/user.py" in parsed
    found, parsed = _candidate(tmp_path, """
        from pkg.tools import Exporter
        def keep(x):
            return Exporter().send(sharded(x))
    """)
    assert found == [("pkg/user.py", 5, "JXI002")] and "pkg/user.py" in parsed


def test_contexts_decided_in_worker_processes_are_stored_and_hold(tmp_path, monkeypatch):
    # The files judged in workers: the main process reads what their context decisions
    # read before it stores them, so the warm run (workers again) needs no import graph.
    from jaxinterop_lint.pipeline import pool

    monkeypatch.setattr(pool, "uses_workers", lambda *a, **k: True)
    _write(tmp_path, FILES)

    def lint():
        return lint_paths([str(tmp_path)], Config(), use_cache=True, jobs=2)

    first = lint()
    assert _found(first, tmp_path) == [AT_SINK] and "called from first()" in first.findings[0].message
    graph = []
    real = run_module.Session.know_importers
    monkeypatch.setattr(run_module.Session, "know_importers", lambda self: (graph.append(1), real(self))[1])
    warm = lint()
    assert _found(warm, tmp_path) == [AT_SINK] and warm.analysed_paths == [] and graph == []
    _write(tmp_path, {"pkg/host_test.py": FILES["pkg/host_test.py"].replace("np.ones(3)", "sharded(np.ones(8))")})
    edited = lint()
    assert _found(edited, tmp_path) == [AT_SINK] and graph
    assert str(tmp_path / "pkg" / "bridge.py") in edited.analysed_paths
