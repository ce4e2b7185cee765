"""Issue 16: a question about a module's exporting functions (does a name the plan takes
from it hold one?) analyses first the functions whose own text uses a consumer and stops
once decided (Project.exports_known, pipeline/exporters.py); the decision is the one the
whole analysis gives, including exports only through a base class in another module,
``self.other()`` or an imported helper (those are found by analysing the rest)."""
from __future__ import annotations

from test_partial import _project
from jaxinterop_lint import Config
from jaxinterop_lint.pipeline import run
from jaxinterop_lint.pipeline.exporters import ConsumerDefs

METHODS = "".join(f"    def m{i}(self, a):\n        return helper(a) + {i}\n\n" for i in range(20))

MANY = f"""\
import torch
from pkg.util import helper


class Env:
{METHODS}    def to_torch(self, x):
        return torch.from_dlpack(x)
"""

UTIL = """\
def helper(a):
    return a
"""

BASE = """\
import torch


class Base:
    def convert(self, x):
        return torch.from_dlpack(x)
"""

CONV = """\
import torch


def convert(x):
    return torch.from_dlpack(x)
"""

SUB = """\
from pkg.base import Base
from pkg.conv import convert


class ViaBase(Base):
    def step(self, x):
        return self.convert(x)


class ViaSelf:
    def step(self, x):
        return self.other(x)

    def other(self, y):
        return convert(y)


class ViaHelper:
    def step(self, x):
        return convert(x)


class Quiet:
    def step(self, x):
        return x
"""


def _session(root, early=True):
    session = run.Session(str(root), Config(), use_cache=False)
    session.decide_early = early
    return session


def test_consumer_defs_names_functions_as_the_analysis_does(tmp_path):
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/env.py": MANY, "pkg/util.py": UTIL})
    defs = _session(root).consumer_defs
    assert isinstance(defs, ConsumerDefs)
    assert defs(str(root / "pkg" / "env.py")) == {"Env.to_torch"}
    assert defs(str(root / "pkg" / "util.py")) == frozenset()
    nested = root / "pkg" / "nested.py"
    nested.write_text("import torch\n\ndef outer(a):\n    def inner(b):\n        return torch.from_dlpack(b)\n"
                      "    return inner(a)\n\nclass C:\n    def m(self):\n        class D:\n"
                      "            def n(self, z):\n                return torch.from_dlpack(z)\n")
    assert defs(str(nested)) == {"outer", "outer.inner", "C.m", "D.n"}
    assert defs(str(nested), frozenset({"C"})) == {"C.m", "D.n"}     # under the names asked only


def test_a_class_of_many_methods_is_decided_by_the_one_that_exports(tmp_path):
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/env.py": MANY, "pkg/util.py": UTIL})
    env = str(root / "pkg" / "env.py")
    project = _session(root).project
    tops = project.exporting_tops(env, frozenset({"Env"}), lambda t: t is None or "Env" in t)
    assert tops == {"Env"}
    ma = project.by_path[env]
    done = sorted(r.name for r in ma.functions if r.state == "done")
    assert done == ["Env.to_torch"]                 # not one of the 20 others
    assert str(root / "pkg" / "util.py") not in project.by_path   # their helper never opened
    # asked without a test of the answer: every function, as before
    assert project.exporting_tops(env, frozenset({"Env"})) == {"Env"}
    assert all(r.state == "done" for r in ma.functions) and len(ma.functions) == 21


def test_a_question_left_open_by_the_consumer_functions_analyses_the_rest(tmp_path):
    files = {"pkg/__init__.py": "", "pkg/sub.py": SUB, "pkg/base.py": BASE, "pkg/conv.py": CONV}
    root = _project(tmp_path, files)
    sub = str(root / "pkg" / "sub.py")
    for early in (True, False):
        project = _session(root, early).project
        for name in ("ViaBase", "ViaSelf", "ViaHelper"):
            tops = project.exporting_tops(sub, frozenset({name}), lambda t, n=name: t is None or n in t)
            assert name in tops, (early, name)
        assert project.exporting_of(sub, frozenset({"ViaBase"}), bool) >= {"step"}
        assert "Quiet" not in project.exporting_tops(sub, frozenset({"Quiet"}), lambda t: t is None or "Quiet" in t)


def test_the_plan_decides_the_same_with_and_without_early_answers(tmp_path):
    files = {"pkg/__init__.py": "", "pkg/sub.py": SUB, "pkg/base.py": BASE, "pkg/conv.py": CONV,
             "pkg/env.py": MANY, "pkg/util.py": UTIL,
             "pkg/main.py": "import jax\nfrom pkg.sub import ViaSelf, Quiet\nfrom pkg.env import Env\n\n"
                            "def main():\n    x = jax.device_put(jax.numpy.ones(8), jax.sharding.NamedSharding("
                            "jax.make_mesh((8,), ('d',)), jax.sharding.PartitionSpec('d')))\n"
                            "    Quiet().step(x)\n    ViaSelf().step(x)\n    Env().to_torch(x)\n"}
    root = _project(tmp_path, files)
    out = []
    for early in (True, False):
        session = _session(root, early)
        main = str(root / "pkg" / "main.py")
        targets = session.plan.exporter_targets(main)
        decided = session.calls_exporter(main, targets)
        result = session.lint([main])
        out.append((decided, sorted((f["code"], f["line"]) for r in result.values() for f in r.get("findings", ()))))
    assert out[0] == out[1] and out[0][0] is True


def _caller(passes: str) -> str:
    return ("import jax\nfrom pkg.env import Env\n\n\ndef main(mesh):\n"
            "    y = jax.device_put(jax.numpy.ones(8), jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec('d')))\n"
            f"    t = Env().to_torch({passes})\n    return y.sum(), t\n")


def test_a_file_judged_only_for_contexts_no_caller_gives_is_not_analysed_whole(tmp_path):
    """A reported file that names no JAX word and hands no name over is planned only for
    its callers' calling contexts (Session.context_callers).  When its analysed callers give
    none (no multi-device value reaches one of its exports), it has no finding, and its
    functions beyond those the plan's question needed are never analysed; when one does,
    the finding stands at its sink, as before."""
    findings, states = {}, {}
    for i, passes in enumerate(("jax.numpy.ones(3)", "y")):
        (tmp_path / str(i)).mkdir()
        root = _project(tmp_path / str(i), {"pkg/__init__.py": "", "pkg/env.py": MANY, "pkg/util.py": UTIL, "pkg/main.py": _caller(passes)})
        session = _session(root)
        files = [str(root / "pkg" / n) for n in ("env.py", "main.py", "util.py")]
        result = session.lint(files)
        env = str(root / "pkg" / "env.py")
        findings[passes] = [(f["code"], f["line"]) for f in result[env].get("findings", ())]
        assert result[env].get("ctx_in") == [str(root / "pkg" / "main.py")]
        states[passes] = sorted(r.name for r in session.project.by_path[env].functions if r.state == "done")
    assert findings["jax.numpy.ones(3)"] == [] and states["jax.numpy.ones(3)"] == ["Env.to_torch"]
    assert findings["y"] == [("JXI002", MANY.splitlines().index("        return torch.from_dlpack(x)") + 1)]
    assert len(states["y"]) == 21       # judged with a context: analysed whole
