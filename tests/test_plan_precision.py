"""The plan's precision (issue 16, demand-driven): which files are parsed, asserted by
counting parses (never by time)."""
from __future__ import annotations

import os

from jaxinterop_lint import Config, lint_paths
from jaxinterop_lint.pipeline.analyse import PARSES
from jaxinterop_lint.pipeline.run import Session

from test_pipeline import project, rows

# A test module importing a JAX helper for one test, feeding NumPy data to torch in another.
MIXED = """\
import numpy as np
import torch

from pkg.shard import sharded


def test_shard(mesh):
    assert sharded(np.ones(4), mesh).shape == (4,)


def test_torch():
    t = torch.as_tensor(np.ones(3))
    assert t.shape == (3,)
"""
# The consumer sits in a helper; its caller in the same file hands it JAX values.
RELAY = """\
import torch

from pkg.shard import sharded


def convert(a):
    return torch.from_dlpack(a)


def main(x, mesh):
    return convert(sharded(x, mesh))
"""
# ``device`` as a loop variable is not a placement keyword.
LOOP = """\
import jax
import torch


def names():
    return [f"{device.platform}:{device.id}" for device in jax.devices()]


def host(n):
    return torch.as_tensor(list(range(n)))
"""


def _parsed(proj):
    return {os.path.relpath(p, proj) for p in PARSES}


def test_a_consumer_unit_no_jax_name_reaches_is_not_parsed(tmp_path):
    proj = project(tmp_path, {"pkg/mixed_test.py": MIXED})
    PARSES.clear()
    result = lint_paths([str(proj)], Config(), jobs=1)
    # the project's one finding, at the sink of bridge.py that use.py feeds (PLAN decision 1)
    assert rows(result, proj) == [("pkg/bridge.py", 5, "JXI002")]
    assert "pkg/mixed_test.py" not in _parsed(proj)


def test_a_consumer_reached_through_a_caller_in_the_same_file_is_analysed(tmp_path):
    proj = project(tmp_path, {"pkg/relay.py": RELAY})
    PARSES.clear()
    result = lint_paths([str(proj)], Config(), jobs=1)
    assert "pkg/relay.py" in _parsed(proj)
    assert ("pkg/relay.py", 7, "JXI002") in rows(result, proj)     # at the sink, called from main()


def test_a_bare_jax_word_outside_its_role_does_not_plan_a_file(tmp_path):
    proj = project(tmp_path, {"pkg/loop.py": LOOP})
    PARSES.clear()
    lint_paths([str(proj)], Config(), jobs=1)
    assert "pkg/loop.py" not in _parsed(proj)


def test_the_carrier_answer_does_not_depend_on_the_order_of_the_questions(tmp_path):
    # a cycle: a uses b, b uses a and the JAX helper
    files = {"pkg/a.py": "from pkg import b\n\ndef fa(x):\n    return b.fb(x)\n",
             "pkg/b.py": "from pkg import a\nfrom pkg.shard import sharded\n\n"
                         "def fb(x):\n    return a.fa(x)\n\ndef fc(x, m):\n    return sharded(x, m)\n"}
    proj = project(tmp_path, files)
    answers = set()
    for order in (("a", "b"), ("b", "a")):
        s = Session(str(proj), Config(), use_cache=False)
        for name in order:
            s.plan.carrier(str(proj / "pkg" / f"{name}.py"))
        answers.add(tuple(s.plan.carrier(str(proj / "pkg" / f"{n}.py")) for n in ("a", "b")))
    assert answers == {(True, True)}


LITERAL = """\
import torch

from pkg.shard import sharded


def test_grad(mesh):
    y = sharded(1, mesh)
    x1 = torch.tensor([1.0, 2.0], requires_grad=True)
    x2 = torch.tensor(100.0)
    return y, x1, x2
"""


def test_a_consumer_called_on_number_literals_only_is_not_parsed(tmp_path):
    proj = project(tmp_path, {"pkg/literal_test.py": LITERAL,
                              "pkg/not_literal.py": LITERAL.replace("[1.0, 2.0]", "[1.0, y]")})
    PARSES.clear()
    result = lint_paths([str(proj)], Config(), jobs=1)
    assert "pkg/literal_test.py" not in _parsed(proj)
    assert "pkg/not_literal.py" in _parsed(proj)       # a name among the numbers: analysed
    assert rows(result, proj) == [("pkg/bridge.py", 5, "JXI002"), ("pkg/not_literal.py", 8, "JXI002")]


def test_literal_arguments_are_told_apart_from_expressions():
    from jaxinterop_lint.pipeline.plan import _non_literal_use

    for text in ("torch.tensor([1.0, 2.0], requires_grad=True)", "torch.tensor(-1e-3)", "torch.tensor([[1, 2], [3, 4]])"):
        assert not _non_literal_use(text, "tensor"), text
    for text in ("torch.tensor(x)", "torch.tensor([e])", "torch.tensor(1 + x)", "torch.tensor((1, x))",
                 "torch.tensor(0x10)", "f = torch.tensor", 'getattr(torch, "tensor")(x)', "torch.tensor(\n"):
        assert _non_literal_use(text, "tensor"), text


def test_a_sink_name_on_another_library_is_no_consumer():
    """``np.asarray`` in a module that imports torch is not ``torch.asarray``; a name also
    assigned in the module may be anything."""
    from jaxinterop_lint.config import Config as C
    from jaxinterop_lint.pipeline.plan import facts_of, words_for

    w = words_for(C())
    head = "import numpy as np\nimport torch\n"
    assert not facts_of(head + "y = np.asarray(x)\n", "", w)["sink"]
    assert facts_of(head + "y = torch.asarray(x)\n", "", w)["sink"]
    assert facts_of(head + "np = torch\ny = np.asarray(x)\n", "", w)["sink"]
    assert facts_of(head + "y = self.np.asarray(x)\n", "", w)["sink"]


def test_a_result_stored_with_the_plans_epoch_is_planned_again_when_a_far_file_changes(tmp_path, monkeypatch):
    """A decision that read much of the project is stored with the plan's epoch (every
    file the plan read): a warm run reuses it, an edit two imports away plans it again."""
    from jaxinterop_lint.pipeline import results_store

    monkeypatch.setattr(results_store, "MAX_PLAN_DEPS", 0)      # every decision "reads much"
    files = {"pkg/base.py": "def helper(x):\n    return x\n",
             "pkg/mid.py": "from pkg.base import helper\n\ndef mid(x):\n    return helper(x)\n",
             "pkg/late.py": "import torch\nfrom pkg.mid import mid\n\ndef f(x):\n    return torch.from_dlpack(mid(x))\n"}
    proj = project(tmp_path, files)
    assert ("pkg/late.py", 5, "JXI002") not in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
    s = Session(str(proj), Config())
    assert s.cached(str(proj / "pkg" / "late.py")) is not None          # stored, with the epoch
    PARSES.clear()
    assert ("pkg/late.py", 5, "JXI002") not in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
    assert not PARSES                                                    # warm: nothing parsed
    (proj / "pkg" / "base.py").write_text("from pkg.shard import sharded\n\ndef helper(x):\n"
                                          "    return sharded(x, None)\n")
    s = Session(str(proj), Config())
    assert s.cached(str(proj / "pkg" / "late.py")) is None
    assert ("pkg/late.py", 5, "JXI002") in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
