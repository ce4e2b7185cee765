"""Issue 16, demand-driven: a function or class of another module that uses a consumer but
names no JAX API (the plan's ``deferred`` names) is parsed only when a value that may be
multi-device reaches it: a constructor's or a function's argument, a method's or an
instance call's argument on one of its instances, or a class of the analysed code deriving
from it.  Built from an array's shape and device only (torchrl's ``Unbounded(shape=...,
device=...)``: its ``data/tensor_specs.py`` is 269 KB), it stays unparsed.  The fixture
``fixtures/runtime/deferred`` is run for real on 8 CPU devices."""
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
from jaxinterop_lint.pipeline.analyse import PARSES
from markers import expected

DEFERRED = Path(__file__).resolve().parent.parent / "fixtures" / "runtime" / "deferred"
CONVERT = (DEFERRED / "deferred_convert.py").read_text()

HEAD = """
    import jax
    import torch
    from jax.sharding import NamedSharding, PartitionSpec as P

    from pkg.convert import Converter, Holder, Spec, export


    def sharded(x, mesh):
        return jax.device_put(x, NamedSharding(mesh, P("x")))
"""


def _project(tmp_path, body: str) -> Path:
    files = {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/convert.py": CONVERT,
             "pkg/main.py": textwrap.dedent(HEAD) + textwrap.dedent(body)}
    return write_files(tmp_path, files)


def _lint_main(root: Path, use_cache: bool = False):
    PARSES.clear()
    main = root / "pkg" / "main.py"
    result = lint_paths([str(main)], Config(), project_root=str(root), use_cache=use_cache)
    parsed = {os.path.relpath(p, root) for p in PARSES}
    return result, parsed, main.read_text().splitlines()


def _line(lines, text):
    return next(i for i, ln in enumerate(lines, 1) if text in ln)


# Each way a multi-device value reaches a deferred name, alone in its program (so that no
# other case has opened the module first): the call is flagged in main.py.
REACHED = {
    "method": ("""
        def run(x, mesh):
            return Converter().to_torch(sharded(x, mesh))
    """, "return Converter().to_torch"),
    "instance call": ("""
        def run(x, mesh):
            convert = Converter(2)
            return convert(sharded(x, mesh))
    """, "return convert(sharded"),
    "class method": ("""
        def run(x, mesh):
            return Converter.convert(sharded(x, mesh))
    """, "return Converter.convert"),
    "constructor": ("""
        def run(x, mesh):
            return Holder(sharded(x, mesh)).t
    """, "return Holder("),
    "inherited method": ("""
        class Scaled(Converter):
            pass


        def run(x, mesh):
            return Scaled().to_torch(sharded(x, mesh))
    """, "return Scaled().to_torch"),
    "function": ("""
        def run(x, mesh):
            return export(sharded(x, mesh))
    """, "return export("),
    "method named by getattr": ("""
        def run(x, mesh):
            return getattr(Converter(), "to_torch")(sharded(x, mesh))
    """, "return getattr(Converter()"),
    "instance made by a factory": ("""
        def converter():
            return Converter(jax.device_count())


        def run(x, mesh):
            convert = converter()
            return convert.to_torch(sharded(x, mesh))
    """, "return convert.to_torch"),
    "instance kept on self": ("""
        class Trainer:
            def __init__(self):
                self.convert = Converter()

            def export(self, x, mesh):
                return self.convert.to_torch(sharded(x, mesh))


        def run(x, mesh):
            return Trainer().export(x, mesh)
    """, "return self.convert.to_torch"),
    "instance made at module level": ("""
        CONVERT = Converter()


        def run(x, mesh):
            return CONVERT.to_torch(sharded(x, mesh))
    """, "return CONVERT.to_torch"),
    "instance kept in a list": ("""
        def run(x, mesh):
            converters = [Converter()]
            return converters[0].to_torch(sharded(x, mesh))
    """, "return converters[0].to_torch"),
}


@pytest.mark.parametrize("case", sorted(REACHED))
def test_a_deferred_name_reached_by_a_multi_device_value_is_opened_and_flagged(tmp_path, case):
    body, flagged = REACHED[case]
    root = _project(tmp_path, body)
    result, parsed, lines = _lint_main(root)
    assert [(f.code, f.line) for f in result.findings] == [("JXI002", _line(lines, flagged))], result.findings
    assert os.path.join("pkg", "convert.py") in parsed


def test_a_parameter_handed_to_a_deferred_instance_gives_its_callers_the_finding(tmp_path):
    root = _project(tmp_path, """
        def to_torch(v):
            return Converter().to_torch(v)


        def run(x, mesh):
            return to_torch(sharded(x, mesh))
    """)
    result, parsed, lines = _lint_main(root)
    assert [(f.code, f.line) for f in result.findings] == [("JXI002", _line(lines, "return Converter().to_torch(v)"))]
    assert "when to_torch() is called from run()" in result.findings[0].message


NOT_REACHED = """
    def spec_of(x):
        return Spec(x.shape, device=x.device)


    def run(x, mesh, t):
        spec = spec_of(sharded(x, mesh))
        convert = Converter(scale=2)
        return spec.zero(), convert.to_torch(torch.ones(2)), export(torch.ones(2)), torch.from_dlpack(t)
"""


def test_a_deferred_name_handed_only_shapes_devices_and_host_values_is_never_parsed(tmp_path):
    """``spec_of`` hands ``Spec`` the shape and device of a parameter (a caller passes a
    sharded array): a placement, never an array.  ``Converter(scale=2)``, its ``to_torch``
    of a torch tensor, ``export`` of another: nothing multi-device reaches
    ``pkg/convert.py``.  (``torch.from_dlpack(t)`` makes ``main.py`` a file the plan
    analyses by itself, not a candidate whose question about ``convert.py``'s exporting
    functions would open it.)"""
    root = _project(tmp_path, NOT_REACHED)
    result, parsed, _ = _lint_main(root)
    assert result.findings == []
    assert os.path.join("pkg", "main.py") in parsed
    assert os.path.join("pkg", "convert.py") not in parsed


def test_linting_the_deferred_module_too_reports_its_own_sinks_with_the_calling_contexts(tmp_path):
    root = _project(tmp_path, REACHED["method"][0])
    result = lint_paths([str(root / "pkg")], Config(), project_root=str(root), use_cache=False)
    lines = CONVERT.splitlines()
    got = [(os.path.basename(f.path), f.line) for f in result.findings]
    assert got == [("convert.py", _line(lines, "def to_torch") + 1)]
    assert "when Converter.to_torch() is called from run()" in result.findings[0].message


def test_a_deferred_instance_in_a_cached_summary_is_opened_as_in_a_cold_run(tmp_path):
    """``tools.converter()`` (it names JAX: the plan opens it) returns a deferred instance
    beside a sharded array; the summary of ``pkg/tools.py`` keeps it (``summaries._KEEP``),
    so a run that loads that summary from the cache opens ``Converter`` for ``to_torch`` as
    the cold run does."""
    root = _project(tmp_path, "")
    (root / "pkg" / "tools.py").write_text(textwrap.dedent("""
        import jax
        from jax.sharding import NamedSharding, PartitionSpec as P

        from pkg.convert import Converter


        def converter(x, mesh):
            return Converter(), jax.device_put(x, NamedSharding(mesh, P("x")))
    """))
    main = root / "pkg" / "main.py"
    main.write_text(textwrap.dedent("""
        import torch

        from pkg import tools


        def run(x, mesh):
            convert, y = tools.converter(x, mesh)
            return convert.to_torch(y), torch.from_dlpack(torch.ones(2))
    """))
    flagged = _line(main.read_text().splitlines(), "return convert.to_torch(y)")
    cold = lint_paths([str(main)], Config(), project_root=str(root), use_cache=True)
    assert [(f.code, f.line) for f in cold.findings] == [("JXI002", flagged)]
    main.write_text(main.read_text() + "\n\ndef other():\n    return 1\n")   # main.py analysed again
    PARSES.clear()
    warm = lint_paths([str(main)], Config(), project_root=str(root), use_cache=True)
    assert os.path.join(str(root), "pkg", "main.py") in PARSES
    assert not any(p.endswith("tools.py") for p in PARSES)     # its summary came from the cache
    fresh = lint_paths([str(main)], Config(), project_root=str(root), use_cache=False)
    assert [(f.code, f.line) for f in warm.findings] == [(f.code, f.line) for f in fresh.findings] \
        == [("JXI002", flagged)]


def test_deferred_fixture_markers():
    result = lint_paths([str(DEFERRED)], Config(), use_cache=False)
    want = {(p.name, line, code) for p in DEFERRED.glob("*.py") for line, code in expected(p.read_text())}
    got = {(os.path.basename(f.path), f.line, f.code) for f in result.findings}
    assert got == want and len(want) == 6


@pytest.mark.slow   # real jax and torch on 8 CPU devices
def test_deferred_fixture_fails_where_flagged_on_eight_devices():
    """Each ``*_fails`` case raises BufferError at a flagged line (in deferred_convert.py,
    its call in deferred_main.py on the stack, or at ``torch.from_dlpack`` of an array put
    on a sharded array's ``.device``); the spec and one-device cases run."""
    env = dict(os.environ, **EIGHT_DEVICES)
    probe = Path(__file__).parent / "runtime_probe.py"
    r = subprocess.run([sys.executable, str(probe), str(DEFERRED / "deferred_main.py"), str(DEFERRED)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    outcome = json.loads(r.stdout.strip().splitlines()[-1])
    flagged = {(os.path.basename(f.path), f.line) for f in lint_paths([str(DEFERRED)], Config(), use_cache=False).findings}
    mine = {p.name for p in DEFERRED.glob("*.py")}
    assert len(outcome) == 9
    for case, res in outcome.items():
        if case.endswith("_fails"):
            assert not res["ok"] and "BufferError" in res["classes"], (case, res)
            raised_at = [tuple(f) for f in res["frames"] if f[0] in mine][-1]
            assert raised_at in flagged, (case, res)
        else:
            assert res["ok"], (case, res)
