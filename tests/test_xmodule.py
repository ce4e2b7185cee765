"""PLAN decision 1 across modules (issue 12): when a reported file calls an exporting function
of another reported file with a multi-device value, the finding is at the sink line in the
callee's file, naming the caller and the source; when the callee's file is not reported, it
stays at the call.  The caller's handlers and guards still apply; several callers give one
finding per sink; the cache judges the callee again when a caller changes; the CLI and
flake8 agree; the fixture pair in fixtures/runtime/xmodule fails at the flagged sink line on 8
CPU devices, and the shim records the hit there."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import copy_tree, EIGHT_DEVICES, ROOT, run_cli
from jaxinterop_lint import Config, lint_paths
from markers import expected

PROJECT = ROOT / "fixtures" / "project"
PAIR = ROOT / "fixtures" / "runtime" / "xmodule"

BRIDGE = """
    import torch
    def to_torch(a):
        return torch.from_dlpack(a)
"""
HEAD = """
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P
    from pkg.bridge import to_torch
    mesh = jax.make_mesh((8,), ("x",))
    def sharded(x):
        return jax.device_put(x, NamedSharding(mesh, P("x")))
"""


def _write(root, files):
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def _project(tmp_path, callers: dict):
    _write(tmp_path, {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/bridge.py": BRIDGE,
                      **{f"pkg/{n}.py": textwrap.dedent(HEAD) + textwrap.dedent(body) for n, body in callers.items()}})
    return tmp_path


def _found(result, root):
    return sorted((os.path.relpath(f.path, root), f.line, f.code) for f in result.findings)


def _copy(tmp_path, src=PROJECT):
    proj = tmp_path / "project"
    copy_tree(src, proj)
    return proj


# -- where the finding is -----------------------------------------------------------------
def test_reported_at_the_callee_sink_with_the_caller_named(tmp_path):
    proj = _copy(tmp_path)
    result = lint_paths([str(proj)], Config(), use_cache=False)
    (f,) = [f for f in result.findings if f.path.endswith("torch_bridge.py")]
    assert f.line == 8 and f.code == "JXI002"
    assert ("when to_torch() is called from publish() at src/shardproj/pipeline.py:19 with `out` "
            "(self._step() is a pjit function, in Model.__init__() at src/shardproj/parallel/model.py:14)") in f.message
    assert f.message.startswith("torch.from_dlpack() cannot export `a`: it spans several devices")
    steps = [(os.path.basename(s.path), s.line) for s in f.provenance]
    assert steps[0] == ("model.py", 14) and ("pipeline.py", 19) in steps and steps[-1] == ("torch_bridge.py", 8)
    assert f.extra["callers"] == ("publish",)
    assert not [f for f in result.findings if f.path.endswith("pipeline.py")]


def test_callee_not_reported_keeps_the_call_site(tmp_path):
    proj = _copy(tmp_path)
    r = run_cli("--no-cache", "src/shardproj/pipeline.py", cwd=proj)
    assert r.returncode == 1
    assert "src/shardproj/pipeline.py:19:12: JXI002 to_torch() cannot take `out`" in r.stdout
    assert "torch_bridge.py" not in r.stdout
    whole = run_cli("--no-cache", ".", cwd=proj)
    assert "src/shardproj/export/torch_bridge.py:8:12: JXI002 torch.from_dlpack() cannot export `a`" in whole.stdout
    assert "pipeline.py:19" not in whole.stdout.replace("at src/shardproj/pipeline.py:19", "")


def test_an_array_made_inside_the_callee_is_named_in_words(tmp_path):
    # hunt51b m7: fit() of another module makes the multi-device array and hands it to the
    # callback (of a third module) given here; linted alone, the finding is at the call, and the message has no
    # expression of this file to quote (it said "cannot take `?`" and "(?).addressable_shards").
    _write(tmp_path, {"pyproject.toml": "", "loop.py": """
        import jax
        import jax.numpy as jnp
        from jax.sharding import NamedSharding, PartitionSpec as P
        def fit(callbacks):
            w = jax.device_put(jnp.zeros(8), NamedSharding(jax.make_mesh((8,), ("d",)), P("d")))
            for cb in callbacks:
                cb(w)
    """, "hooks.py": """
        def log_pointer(w):
            return w.unsafe_buffer_pointer()
    """, "main.py": """
        from hooks import log_pointer
        from loop import fit
        fit([log_pointer])
    """})
    r = run_cli("--no-cache", "main.py", cwd=tmp_path)
    assert r.returncode == 1
    assert ("main.py:4:1: JXI003 log_pointer() cannot take the array it is given: log_pointer() exports it "
            "with `.unsafe_buffer_pointer()`, and that array spans several devices (jax.device_put with "
            "NamedSharding, in fit() at loop.py:6) and raises RuntimeError; export its addressable_shards, "
            "or jax.device_put it to one device first") in r.stdout
    assert "?" not in r.stdout.split("\n")[0]


def test_flake8_on_the_project_and_on_one_caller(tmp_path):
    proj = _copy(tmp_path)

    def flake8(*paths):
        r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", *paths], cwd=proj,
                           capture_output=True, text=True, timeout=300)
        return {(os.path.normpath(ln.split(":")[0]), int(ln.split(":")[1])) for ln in r.stdout.splitlines()}

    whole = flake8(".")
    assert ("src/shardproj/export/torch_bridge.py", 8) in whole and ("src/shardproj/pipeline.py", 19) not in whole
    cli = run_cli("--no-cache", ".", cwd=proj)
    assert whole == {(ln.split(":")[0], int(ln.split(":")[1])) for ln in cli.stdout.splitlines()}
    # flake8 on the caller alone (through the cache the whole run filled): at the call
    assert flake8("src/shardproj/pipeline.py") == {("src/shardproj/pipeline.py", 19)}
    assert flake8("src/shardproj/export/torch_bridge.py") == set()
    assert flake8(".") == whole


def test_two_callers_give_one_finding_naming_the_first(tmp_path):
    root = _project(tmp_path, {
        "b_second": """
            def second(x):
                return to_torch(sharded(x) * 2)
        """,
        "a_first": """
            def first(x):
                y = sharded(x)
                return to_torch(y)
        """,
    })
    for jobs in (1, 2):
        result = lint_paths([str(root)], Config(), use_cache=False, jobs=jobs)
        assert _found(result, root) == [("pkg/bridge.py", 4, "JXI002")]
        (f,) = result.findings
        assert "when to_torch() is called from first() at pkg/a_first.py:11 with `y`" in f.message


def test_caller_handler_and_guard_across_modules(tmp_path):
    root = _project(tmp_path, {
        "handled": """
            def careful(x):
                try:
                    return to_torch(sharded(x))
                except BufferError:
                    return None
        """,
        "guarded": """
            def checked(x):
                y = sharded(x)
                if len(y.devices()) == 1:
                    return to_torch(y)
                return None
        """,
        "barrier": """
            def logged(x):
                try:
                    return to_torch(sharded(x))
                except Exception as exc:
                    print(exc)
        """,
        "missed": """
            def wrong(x):
                try:
                    return to_torch(sharded(x))
                except ValueError:
                    return None
        """,
    })
    result = lint_paths([str(root)], Config(), use_cache=False)
    # the catch-all of logged() is no fallback: at the sink, naming logged(); the handler of
    # wrong() misses BufferError: JXI007 at that handler, in the caller
    assert _found(result, root) == [("pkg/bridge.py", 4, "JXI002"), ("pkg/missed.py", 12, "JXI007")]
    (sink,) = [f for f in result.findings if f.code == "JXI002"]
    assert "called from logged() at pkg/barrier.py:11" in sink.message
    assert (str(root / "pkg" / "bridge.py"), 4) in {(os.path.abspath(p), ln) for p, ln in result.handled}
    # only the safe callers: nothing at all
    (root / "pkg" / "barrier.py").unlink()
    (root / "pkg" / "missed.py").unlink()
    assert lint_paths([str(root)], Config(), use_cache=False).findings == []


# -- the cache ----------------------------------------------------------------------------
def test_cache_judges_the_callee_again_when_a_caller_changes(tmp_path):
    proj = _copy(tmp_path)
    pipeline = proj / "src" / "shardproj" / "pipeline.py"
    original = pipeline.read_text()
    bridge_at = ("src/shardproj/export/torch_bridge.py", 8, "JXI002")

    def run():
        return _found(lint_paths([str(proj)], Config(), use_cache=True), proj)

    assert bridge_at in run()
    assert bridge_at in run()                 # from the cache
    pipeline.write_text(original.replace("    return to_torch(out)\n", "    return to_torch(to_one_device(out))\n"))
    assert bridge_at not in run()             # the caller passes a safe value now
    assert bridge_at not in run()
    pipeline.write_text(original)
    assert bridge_at in run()                 # and back
    assert ("src/shardproj/pipeline.py", 19, "JXI002") not in run()


def test_cache_follows_which_files_are_reported(tmp_path):
    proj = _copy(tmp_path)
    call_site = ("src/shardproj/pipeline.py", 19, "JXI002")
    bridge_at = ("src/shardproj/export/torch_bridge.py", 8, "JXI002")

    def run(*paths):
        return _found(lint_paths([str(proj / p) for p in paths], Config(), use_cache=True), proj)

    assert bridge_at in run(".") and call_site not in run(".")
    assert run("src/shardproj/pipeline.py") == [call_site]
    assert run("src/shardproj/export/torch_bridge.py") == []
    assert bridge_at in run(".") and call_site not in run(".")


def test_a_new_caller_reaches_a_cached_callee(tmp_path):
    root = _project(tmp_path, {"first": """
        def first(x):
            return to_torch(x)
    """})
    assert lint_paths([str(root)], Config(), use_cache=True).findings == []
    (root / "pkg" / "first.py").write_text(textwrap.dedent(HEAD) + "def first(x):\n    return to_torch(sharded(x))\n")
    assert _found(lint_paths([str(root)], Config(), use_cache=True), root) == [("pkg/bridge.py", 4, "JXI002")]
    _write(root, {"pkg/later.py": textwrap.dedent(HEAD) + "def later(x):\n    return to_torch(sharded(x) + 1)\n"})
    (root / "pkg" / "first.py").write_text(textwrap.dedent(HEAD) + "def first(x):\n    return to_torch(x)\n")
    result = lint_paths([str(root)], Config(), use_cache=True)
    assert _found(result, root) == [("pkg/bridge.py", 4, "JXI002")]
    assert "called from later()" in result.findings[0].message


# -- proof by execution -------------------------------------------------------------------
def test_fixture_pair_markers():
    result = lint_paths([str(PAIR)], Config(), use_cache=False)
    want = set()
    for p in PAIR.glob("*.py"):
        want |= {(p.name, line, code) for line, code in expected(p.read_text())}
    assert {(os.path.basename(f.path), f.line, f.code) for f in result.findings} == want == {("xm_bridge.py", 9, "JXI002")}
    (f,) = result.findings
    # both callers that pass a sharded array (each fails at the sink: the test below)
    assert f.extra["callers"] == ("case_sharded_fails", "case_second_caller_fails")
    assert f.message.endswith("; also when called from case_second_caller_fails() at xm_main.py:25")
    alone = lint_paths([str(PAIR / "xm_main.py")], Config(), use_cache=False)
    assert {(os.path.basename(f.path), f.line) for f in alone.findings} == {("xm_main.py", 20), ("xm_main.py", 25)}


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_fixture_pair_fails_at_the_callee_sink_on_eight_devices():
    env = dict(os.environ, **EIGHT_DEVICES)
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "runtime_probe.py"), str(PAIR / "xm_main.py"), str(PAIR)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    outcome = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(outcome) == 6
    for case, res in outcome.items():
        if case.endswith("_fails"):
            assert not res["ok"] and "BufferError" in res["classes"], (case, res)
        else:
            assert res["ok"], (case, res)


@pytest.mark.slow   # real jax and torch on 8 CPU devices, under the shim
def test_shim_records_the_hit_at_the_callee_sink_line(tmp_path, capsys):
    from jaxinterop_lint.runtime_cli import verify_main

    report = tmp_path / "hits.jsonl"
    env = dict(os.environ, **EIGHT_DEVICES)
    env = {k: v for k, v in env.items() if not k.startswith("JAXINTEROP_")}
    r = subprocess.run([sys.executable, "-m", "jaxinterop_lint", "run", "--mode", "record", "--report", str(report),
                        "--", sys.executable, str(PAIR / "xm_main.py")], capture_output=True, text=True, env=env,
                       timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    hits = [json.loads(ln) for ln in report.read_text().splitlines() if ln.strip()]
    lines = {(os.path.basename(h["path"]), h["line"]) for h in hits}
    assert ("xm_bridge.py", 9) in lines and ("xm_main.py", 20) not in lines
    capsys.readouterr()
    status = verify_main(["--report", str(report), "--output-format", "json", str(PAIR)])
    result = json.loads(capsys.readouterr().out)
    assert status == 0 and result["missed"] == [], result
    assert ("xm_bridge.py", 9) in {(os.path.basename(c["path"]), c["line"]) for c in result["confirmed"]}


def test_import_forms_methods_and_unlinked_callers(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": "", "pkg/__init__.py": "",
        "pkg/bridge.py": """
            import torch
            class Exporter:
                def send(self, a):
                    return torch.from_dlpack(a)
            def to_torch(a):
                return torch.from_dlpack(a)
        """,
        "pkg/calls.py": textwrap.dedent(HEAD).replace("from pkg.bridge import to_torch", "import pkg.bridge as b\n"
                                                      "from pkg.bridge import Exporter") + textwrap.dedent("""
            def by_method(x):
                return Exporter().send(sharded(x))
            def by_module(x):
                return b.to_torch(sharded(x))
        """),
    })
    result = lint_paths([str(tmp_path)], Config(), use_cache=False)
    assert _found(result, tmp_path) == [("pkg/bridge.py", 5, "JXI002"), ("pkg/bridge.py", 7, "JXI002")]
    by_line = {f.line: f.message for f in result.findings}
    assert "when Exporter.send() is called from by_method()" in by_line[5]
    assert "when to_torch() is called from by_module()" in by_line[7]
    # `import pkg.bridge` then `pkg.bridge.to_torch(...)`: the plan links them too
    (tmp_path / "pkg" / "calls.py").write_text(textwrap.dedent(HEAD).replace(
        "from pkg.bridge import to_torch", "import pkg\nimport pkg.bridge") + "def far(x):\n    return pkg.bridge.to_torch(sharded(x))\n")
    found = lint_paths([str(tmp_path)], Config(), use_cache=False)
    assert _found(found, tmp_path) == [("pkg/bridge.py", 7, "JXI002")]
    assert "when to_torch() is called from far()" in found.findings[0].message


def test_torch_callers_no_jax_reaches_give_no_contexts_and_are_never_parsed(tmp_path):
    from jaxinterop_lint.pipeline.analyse import PARSES

    root = _project(tmp_path, {"first": """
        def first(x):
            return to_torch(sharded(x))
    """})
    _write(root, {"pkg/torch_user.py": """
        import torch
        from pkg.bridge import to_torch
        def host(n):
            return to_torch(torch.ones(n))
    """, "pkg/torch_helper.py": """
        import torch
        def as_torch(t):
            return torch.from_dlpack(t)
    """, "pkg/torch_caller.py": """
        import torch
        from pkg.torch_helper import as_torch
        def f(n):
            return as_torch(torch.ones(n))
    """})
    PARSES.clear()
    result = lint_paths([str(root)], Config(), use_cache=False, jobs=1)
    assert _found(result, root) == [("pkg/bridge.py", 4, "JXI002")]
    assert "called from first()" in result.findings[0].message
    parsed = {os.path.relpath(p, root) for p in PARSES}
    assert not parsed & {"pkg/torch_user.py", "pkg/torch_helper.py", "pkg/torch_caller.py"}, parsed


# A package's sink module and its sharding helper (the tests of names read on a package).
_AS_TORCH = """
    import torch
    def as_torch(x):
        return torch.from_dlpack(x)
"""
_DATA_PARALLEL = """
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P
    def data_parallel(x):
        mesh = jax.make_mesh((len(jax.devices()),), ("d",))
        return jax.device_put(x, NamedSharding(mesh, P("d")))
"""


def test_names_read_on_an_imported_package_reach_the_module_defining_them(tmp_path):
    """hunt45 proj7: ``import lib`` then ``lib.as_torch(lib.data_parallel(x))``, both names
    re-exported by ``lib/__init__.py`` from its submodules, in a caller naming no consumer:
    the plan's import graph takes them from the submodules, so the caller gives the sink's
    module its calling context (before, the package taken whole counted only for what its
    ``__init__`` itself defines, and nothing was found).  A package name the caller does not
    read as an attribute links nothing; the command line and flake8 on both files agree."""
    _write(tmp_path, {
        "pyproject.toml": "",
        "lib/__init__.py": "from lib.sharding import data_parallel\nfrom lib.interop import as_torch\n",
        "lib/interop.py": _AS_TORCH,
        "lib/sharding.py": _DATA_PARALLEL,
        "main.py": """
            import jax.numpy as jnp
            import lib
            def run():
                y = lib.data_parallel(jnp.ones((8, 2)))
                return lib.as_torch(y * 2)
        """,
        "other.py": """
            import jax.numpy as jnp
            import lib
            def host(x):
                return jnp.asarray(x)
        """,
    })
    result = lint_paths([str(tmp_path)], Config(), use_cache=False)
    assert _found(result, tmp_path) == [("lib/interop.py", 4, "JXI002")]
    assert "when as_torch() is called from run()" in result.findings[0].message
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "main.py", "lib/interop.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert [ln.split(":")[:2] for ln in r.stdout.splitlines()] == [["./lib/interop.py", "4"]] or \
        [ln.split(":")[:2] for ln in r.stdout.splitlines()] == [["lib/interop.py", "4"]], r.stdout + r.stderr


@pytest.mark.parametrize("imports, call", [
    ("import lib as L", "L.as_torch"),                          # an aliased package
    ("from lib import sub", "sub.as_torch"),                    # a subpackage taken by name
    ("import lib.sub as s", "s.as_torch"),                      # a subpackage imported under a name
    ("from lib.sub import *", "as_torch"),                      # a star import of a re-exporting package
    ("import lib.sub", "lib.sub.as_torch"),                     # a subpackage read through its package
])
def test_names_read_on_a_package_bound_under_another_name_reach_their_module(tmp_path, imports, call):
    """The review of stop 44: a package bound by ``import lib as L``, ``from lib import sub``,
    ``import lib.sub as s`` or ``import lib.sub``, its names read as attributes
    (``L.as_torch(y)``, ``lib.sub.as_torch(y)``), and a
    ``from lib.sub import *`` of a package ``__init__`` that re-exports the name from a
    submodule: the caller (naming no consumer) gives the sink's module its calling context,
    as ``import lib; lib.as_torch(y)`` does.  Before, nothing was found."""
    _write(tmp_path, {
        "pyproject.toml": "",
        "lib/__init__.py": "from lib.sub.interop import as_torch\n",
        "lib/sub/__init__.py": "from lib.sub.interop import as_torch\n",
        "lib/sub/interop.py": _AS_TORCH,
        "lib/sharding.py": _DATA_PARALLEL,
        "main.py": f"""
            import jax.numpy as jnp
            from lib.sharding import data_parallel
            {imports}
            def run():
                y = data_parallel(jnp.ones((8, 2)))
                return {call}(y * 2)
        """,
    })
    result = lint_paths([str(tmp_path)], Config(), use_cache=False)
    assert _found(result, tmp_path) == [("lib/sub/interop.py", 4, "JXI002")]
    assert "when as_torch() is called from run()" in result.findings[0].message
