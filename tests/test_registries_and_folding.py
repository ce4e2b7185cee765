"""Class registries (``@register`` on a class, ``__init_subclass__``, ``Cls.REG[k] = v``),
what module constants compute (mesh sizes, branch tests) and reads by name
(``SimpleNamespace``, ``operator`` getters, ``getattr`` with a computed name): the pieces
behind fixtures/runtime/class_registries.py, mesh_arithmetic.py, constant_branches.py and
dynamic_reads.py, which check the findings against real runs."""
from __future__ import annotations

from conftest import run_cli
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.analysis.constants import text_constants
from jaxinterop_lint.pipeline.statements import registrations
from jaxinterop_lint.pipeline.toplevel import units_of

HEAD = """\
import jax, numpy as np, torch
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((len(jax.devices()),), ("d",))
x = jax.device_put(np.ones(8), NamedSharding(mesh, P("d")))
"""


def _lines(body: str, head: str = HEAD):
    return [(f.line, f.code) for f in lint_source(head + body, "m.py", Config()).findings]


def test_text_constants_fold_arithmetic_nested_entries_and_products():
    consts = text_constants(
        "import math\nimport types\nA = 2\nB = A * 3 - 1\nC = {'m': {'d': 1, 'e': 'x'}}\nS = (1, 4)\n"
        "N = math.prod(S)\nL = len(S)\nT = S[-1]\nNS = types.SimpleNamespace(k=B // 2)\nD = C['m']['d'] + 1\n"
        "R = 1\nR = 2\nZ = 1 // 0\n")
    assert consts["B"] == 5 and consts[("C", "m", "d")] == 1 and consts[("C", "m", "e")] == "x"
    assert (consts["N"], consts["L"], consts["T"], consts[("NS", "k")], consts["D"]) == (4, 2, 4, 2, 2)
    assert "R" not in consts and "Z" not in consts     # bound twice; no constant (no crash)


def test_registrations_fill_registries_and_registering_bases():
    units = [(("Base",), "class Base:\n    REG = {}\n    def __init_subclass__(cls, name=None):\n        Base.REG[name] = cls\n"),
             (("Sub",), "class Sub(Base, name='s'):\n    pass\n"),
             (("Other",), "class Other(object):\n    pass\n"),
             ((), "Base.REG['o'] = Other\n"),
             ((), "Other.add(Sub)\n"),
             ((), "unknown.REG['o'] = Other\n")]
    assert registrations(units, [True, True, True, False, False, False]) == [set(), {"Base"}, set(), {"Base"},
                                                                             {"Other"}, set()]
    # only the names allowed as heads
    assert registrations(units, [True, True, True, False, False, False], {"Other"})[3] == set()
    # the plan's units: the subclass statement is part of the registering base's value
    names = dict((u[1][:9], u[0]) for u in units_of("".join(body for _, body in units)))
    assert "Base" in names["class Sub"] and "Base" in names["Base.REG["]


def test_class_decorator_and_init_subclass_fill_their_registries():
    body = ("REG = {}\ndef register(name):\n    def store(cls):\n        REG[name] = cls\n        return cls\n    return store\n"
            "@register('t')\nclass T:\n    def export(self, a):\n        return torch.from_dlpack(a)\n"
            "REG['t']().export(x)\n")
    assert _lines(body) == [(14, "JXI002")]
    body = ("class Base:\n    KINDS = {}\n    def __init_subclass__(cls, kind='', **kw):\n        cls.KINDS[kind] = cls\n"
            "class Ptr(Base, kind='p'):\n    def address(self, a):\n        return a.unsafe_buffer_pointer()\n"
            "Base.KINDS['p']().address(x)\n")
    assert _lines(body) == [(11, "JXI003")]
    # the same classes never registered: nothing reaches the export
    assert _lines(body.replace("        cls.KINDS[kind] = cls\n", "        pass\n")) == []


def test_class_registry_in_a_cached_module(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "exporters.py").write_text(
        "import torch\nclass Exporter:\n    REGISTRY = {}\n    @classmethod\n    def add(cls, name, sub):\n"
        "        cls.REGISTRY[name] = sub\n    def export(self, a):\n        raise NotImplementedError\n"
        "class TorchExporter(Exporter):\n    def export(self, a):\n        return torch.from_dlpack(a)\n"
        "Exporter.add('torch', TorchExporter)\n"
        "def export(a):\n    return Exporter.REGISTRY['torch']().export(a)\n")
    (tmp_path / "main.py").write_text(HEAD + "from exporters import export\nexport(x)\n")
    first = run_cli(".", cwd=tmp_path)
    assert first.returncode == 1 and "exporters.py:11:" in first.stdout, first.stdout
    (tmp_path / "main.py").write_text((tmp_path / "main.py").read_text() + "z = 1\n")
    again = run_cli(".", cwd=tmp_path)     # exporters.py's summaries read frozen from the cache
    assert again.returncode == 1 and "exporters.py:11:" in again.stdout, again.stdout


def test_branches_on_module_constants_take_one_arm():
    body = ("SINGLE = {flag}\nCFG = {{'mode': '{mode}'}}\n"
            "def put(a):\n    if SINGLE:\n        return np.asarray(a)\n    return a\n"
            "def mode_put(a):\n    return np.asarray(a) if CFG['mode'] == 'host' else a\n"
            "torch.from_dlpack(put(x))\ntorch.from_dlpack(mode_put(x))\n")
    assert _lines(body.format(flag="True", mode="host")) == []
    assert _lines(body.format(flag="False", mode="device")) == [(13, "JXI002"), (14, "JXI002")]
    # a flag some function rebinds is no constant: both arms count
    rebound = body.format(flag="True", mode="host") + "def off():\n    global SINGLE\n    SINGLE = False\n"
    assert _lines(rebound) == [(13, "JXI002")]


def test_mesh_sizes_computed_from_constants_and_locals():
    body = ("DATA, MODEL = 1, 1\nSHAPE = (1, 1)\nN = 1 * 1\n"
            "def build():\n    shape = (SHAPE[0], SHAPE[1])\n    n = shape[0] * shape[1]\n"
            "    return jax.sharding.Mesh(np.array(jax.devices()[:n]).reshape(shape), ('a', 'b'))\n"
            "y = jax.device_put(np.ones(8), NamedSharding(build(), P('a')))\ntorch.from_dlpack(y)\n")
    assert _lines(body) == []
    assert _lines(body.replace("SHAPE = (1, 1)", "SHAPE = (4, 2)")) == [(13, "JXI002")]


def test_reads_by_name():
    body = ("import operator, types\n"
            "s = types.SimpleNamespace(p=types.SimpleNamespace(k=x))\n"
            "torch.from_dlpack(operator.attrgetter('p.k')(s))\n"
            "torch.from_dlpack(operator.itemgetter('w')({'w': x, 'b': 0}))\n"
            "torch.from_dlpack(operator.itemgetter('b')({'w': x, 'b': np.zeros(2)}))\n"
            "operator.methodcaller('__dlpack__')(x)\n"
            "class D:\n    def _put_fsdp(self, a):\n        return jax.device_put(a, NamedSharding(mesh, P('d')))\n"
            "    def place(self, a, how):\n        return getattr(self, f'_put_{how}')(a)\n"
            "torch.from_dlpack(D().place(np.ones(8), 'fsdp'))\n")
    assert _lines(body) == [(7, "JXI002"), (8, "JXI002"), (10, "JXI002"), (16, "JXI002")]


def test_reported_crashes_of_the_new_forms_stay_fixed(tmp_path):
    # a getter wrapped in functools.partial binds bare values (a TypeError before)
    body = ("import functools, operator\nfunctools.partial(operator.attrgetter('c'), x)()\n"
            "functools.partial(operator.methodcaller('m'), x)()\ntorch.from_dlpack(x)\n")
    result = lint_source(HEAD + body, "m.py", Config())
    assert result.error is None and [(f.line, f.code) for f in result.findings] == [(8, "JXI002")]
    # a chain of squares is no constant (a hang before); nor is a 4,000-digit literal, whose
    # digits the cache could not store (an internal error before)
    squares = "A = 3\n" + "".join(f"{b} = " + " * ".join([a] * 8) + "\n" for a, b in zip("ABCDEFGHI", "BCDEFGHIJ"))
    huge = "H = 0x" + "f" * 4000 + "\nm2 = jax.make_mesh((H,), ('d',))\n"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "a.py").write_text(HEAD + squares + huge + "torch.from_dlpack(x)\n")
    for _ in range(2):      # the cache written, then read
        out = run_cli(".", cwd=tmp_path)
        assert out.returncode == 1 and out.stdout.startswith("a.py:17:1: JXI002"), out.stdout + out.stderr
        assert "internal error" not in out.stdout + out.stderr
    assert text_constants(squares)["B"] == 3 ** 8 and "D" not in text_constants(squares)


def test_mutations_read_from_chains_of_subscripts_and_attributes():
    from jaxinterop_lint.pipeline.statements import _MUTATED

    found = {t: _MUTATED.findall(t) for t in ("a[b[0]] = v", "A.REG['x'] = C", "a.b.c[k] += 2", "a[0][1].update(x)",
                                                "x.y(z).w[k] = v", "a[k] == v", "f(a=1)")}
    assert found == {"a[b[0]] = v": ["a"], "A.REG['x'] = C": ["A"], "a.b.c[k] += 2": ["a"], "a[0][1].update(x)": ["a"],
                     "x.y(z).w[k] = v": [], "a[k] == v": [], "f(a=1)": []}
    # a long chain splits one way (exponential before: 26 subscripts took 15 s)
    assert _MUTATED.findall("x" + "[0]" * 60 + "\n") == [] and _MUTATED.findall("x" + "[0]" * 60 + " = 1") == ["x"]
