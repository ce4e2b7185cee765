"""Which names can hand on a multi-device value (Plan.carrier_name, issue 16): the answer
through chains of modules, name by name, is the same whether or not the plan first asks
whether a module naming JAX words is reachable at all (Plan.origin_reachable), and the
units of modules that no such module is behind are not computed."""
from __future__ import annotations

from jaxinterop_lint import Config
from jaxinterop_lint.pipeline.run import Session

from test_pipeline import write

FILES = {
    "pyproject.toml": "[project]\nname = 'p'\n",
    "pkg/__init__.py": "",
    # JAX code: one name places values on devices, the other does not
    "pkg/placed.py": "import jax\n\n\ndef place(x, m):\n    return jax.device_put(x, jax.NamedSharding(m, jax.P()))\n\n\n"
                     "def host(x):\n    return x + 1\n",
    # imports jax, but no unit names a JAX word
    "pkg/quiet.py": "import jax\n\n\ndef version():\n    return '1'\n",
    "pkg/middle.py": "from pkg.placed import place, host\n\n\ndef relay(x, s):\n    return place(x, s)\n\n\n"
                     "def plain(x):\n    return host(x)\n",
    "pkg/top.py": "from pkg.middle import relay, plain\nfrom pkg import quiet\n\n\nA = relay\nB = plain\n",
    "pkg/torch_side.py": "import torch\nfrom pkg.quiet import version\nfrom pkg.helpers import util\n\n\n"
                         "def to_torch(x):\n    return torch.as_tensor(util(x), device=version())\n",
    "pkg/helpers.py": "def util(x):\n    return x\n",
}


def _plan(tmp_path):
    proj = write(tmp_path, FILES)
    return proj, Session(str(proj), Config(), use_cache=False).plan


def test_a_name_carries_only_through_the_names_it_uses(tmp_path):
    proj, plan = _plan(tmp_path)
    f = lambda name: str(proj / "pkg" / name)          # noqa: E731
    assert plan.carrier_name(f("top.py"), "A") is True
    assert plan.carrier_name(f("top.py"), "B") is False
    assert plan.carrier_name(f("middle.py"), "relay") is True
    assert plan.carrier_name(f("middle.py"), "plain") is False
    assert plan.carrier(f("top.py")) is True


def test_no_module_naming_jax_words_behind_a_file_means_no_carrier(tmp_path):
    proj, plan = _plan(tmp_path)
    side = str(proj / "pkg" / "torch_side.py")
    assert plan.origin_reachable(side) is False
    assert plan.carrier_name(side, "to_torch") is False
    assert not plan.reach(side) and not plan.sink_reached(side)
    # the answer needed no units of the modules between (only those that import JAX)
    assert str(proj / "pkg" / "helpers.py") not in plan._units
    assert plan.origin_reachable(str(proj / "pkg" / "top.py")) is True


def test_the_answers_do_not_depend_on_the_order_of_the_questions(tmp_path):
    proj, _ = _plan(tmp_path)
    questions = [("top.py", "A"), ("top.py", "B"), ("middle.py", "plain"), ("torch_side.py", "to_torch"),
                 ("quiet.py", "version"), ("placed.py", "host"), ("placed.py", "place")]
    answers = set()
    for order in (questions, questions[::-1]):
        plan = Session(str(proj), Config(), use_cache=False).plan
        answers.add(tuple(sorted((q, plan.carrier_name(str(proj / "pkg" / q[0]), q[1])) for q in order)))
    assert len(answers) == 1
    assert dict(answers.pop()) == {("top.py", "A"): True, ("top.py", "B"): False, ("middle.py", "plain"): False,
                                   ("torch_side.py", "to_torch"): False, ("quiet.py", "version"): False,
                                   ("placed.py", "host"): False, ("placed.py", "place"): True}


def test_a_module_naming_jax_words_appearing_deep_in_the_imports_replans_a_file(tmp_path):
    """The decision that no module naming JAX words is behind a file read the facts of every
    module behind it: when one of them starts naming JAX words, a warm run plans again."""
    import os

    from jaxinterop_lint import lint_paths
    from jaxinterop_lint.pipeline.analyse import PARSES

    files = {"pyproject.toml": "[project]\nname = 'p'\n", "pkg/__init__.py": "",
             "pkg/use.py": "import torch\nfrom pkg.mid import make\n\n\ndef run(m):\n"
                           "    return torch.from_dlpack(make(m))\n",
             "pkg/mid.py": "from pkg.deep import build\n\n\ndef make(m):\n    return build(m)\n",
             "pkg/deep.py": "def build(m):\n    return [1, 2]\n"}
    proj = write(tmp_path, files)
    use = os.path.join(str(proj), "pkg", "use.py")
    PARSES.clear()
    lint_paths([str(proj / "pkg" / "use.py")], Config(), jobs=1, use_cache=True)
    assert use not in PARSES
    (proj / "pkg" / "deep.py").write_text(
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
        "def build(m):\n    return jax.device_put([1, 2], NamedSharding(m, P('x')))\n")
    PARSES.clear()
    lint_paths([str(proj / "pkg" / "use.py")], Config(), jobs=1, use_cache=True)
    assert use in PARSES
