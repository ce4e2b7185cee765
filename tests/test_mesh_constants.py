"""Module-level integer constants size meshes (``analysis/constants.py``; the runtime
fixture ``fixtures/runtime/mesh_constants.py`` is run on 8 CPU devices by
``tests/test_runtime_truth.py``)."""
from __future__ import annotations

import pytest

from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.analysis.constants import text_constants

HEAD = """\
import jax
import jax.numpy as jnp
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

"""
BODY = """
mesh = jax.make_mesh((SIZE,), ("d",))
x = jax.device_put(jnp.ones(8), NamedSharding(mesh, P("d")))
torch.from_dlpack(x)
"""


def _flagged(consts: str, size: str) -> bool:
    body = BODY.replace("(SIZE,)", size[1:]) if size.startswith("*") else BODY.replace("SIZE", size)
    text = HEAD + consts + body
    return bool(lint_source(text, "m.py", Config()).findings)


@pytest.mark.parametrize("consts, size, flagged", [
    ("N = 1\n", "N", False),
    ("CFG = {'dp': 1}\n", "CFG['dp']", False),
    ("N = 8\n", "N", True),
    ("N = 1\nN = 8\n", "N", True),                         # bound twice: no constant
    ("N = 1\nif True:\n    N = 8\n", "N", True),           # bound again in a block
    ("N = 1\ndef grow():\n    global N\n    N = 8\n", "N", True),   # a global statement
    ("CFG = {'dp': 1}\nCFG['dp'] = 8\n", "CFG['dp']", True),        # an entry changed
    ("CFG = {'dp': 1}\nCFG.update(dp=8)\n", "CFG['dp']", True),
    ("N = jax.device_count()\n", "N", True),
    ("SHAPE = {'d': (1,)}\n", "*SHAPE['d']", False),
    ("class Cfg:\n    n = 1\n", "Cfg.n", False),
    ("class Cfg:\n    n = 1\nCfg.n = 8\n", "Cfg.n", True),
])
def test_a_mesh_sized_by_a_module_constant(consts, size, flagged):
    assert _flagged(consts, size) is flagged


def test_the_constants_of_a_module():
    text = ("A = 1\nB = {'x': 2, 'y': z, 's': (1, 2)}\nC = 3\nC += 1\nfor D in range(2):\n    pass\nD = 4\n"
            "class K:\n    n = 1\n    m = (2,)\nclass L:\n    n = 1\nL.n = 8\nS = (1,)\n")
    assert text_constants(text) == {"A": 1, ("B", "x"): 2, ("B", "s"): (1, 2), ("K", "n"): 1, ("K", "m"): (2,),
                                    "S": (1,)}


def test_strings_bools_and_record_instances():
    text = ("from dataclasses import dataclass\nfrom typing import NamedTuple, ClassVar\n"
            "MODE = 'single'\nON = True\n"
            "@dataclass(frozen=True)\nclass Cfg:\n    dp: int = 1\n    name: str = 'a'\n    k: ClassVar[int] = 5\n"
            "class Pair(NamedTuple):\n    a: int\n    b: int = 2\n"
            "@dataclass\nclass Post:\n    dp: int = 1\n    def __post_init__(self):\n        self.dp = 8\n"
            "SERVE = Cfg(dp=4)\nDEFAULT = Cfg()\nPAIR = Pair(1)\nP2 = Post()\nSPLAT = Cfg(**{'dp': 2})\n"
            "MIXED = (1, 'a')\n")
    found = text_constants(text)
    assert {k: v for k, v in found.items() if k in ("MODE", "ON", "MIXED")} == {"MODE": "single", "ON": True}
    assert found[("SERVE", "dp")] == 4 and found[("SERVE", "name")] == "a" and ("SERVE", "k") not in found
    assert found[("DEFAULT", "dp")] == 1 and found[("PAIR", "a")] == 1 and found[("PAIR", "b")] == 2
    assert not any(isinstance(k, tuple) and k[0] in ("P2", "SPLAT") for k in found)


def test_a_constant_shape_and_an_imported_constant(tmp_path):
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "pk").mkdir()
    (tmp_path / "pk" / "__init__.py").write_text("")
    (tmp_path / "pk" / "cfg.py").write_text("N = 1\nWIDE = 8\nSHAPE = (1,)\n")
    body = HEAD + "from pk.cfg import N, SHAPE, WIDE\n" + BODY
    (tmp_path / "one.py").write_text(body.replace("SIZE", "N"))
    (tmp_path / "shape.py").write_text(body.replace("(SIZE,)", "SHAPE"))
    (tmp_path / "wide.py").write_text(body.replace("SIZE", "WIDE"))
    r = subprocess.run([sys.executable, "-m", "jaxinterop_lint", "--no-cache", "."], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "wide.py:" in r.stdout and "one.py:" not in r.stdout and "shape.py:" not in r.stdout, r.stdout


def test_what_the_text_may_change_is_no_constant():
    # one pass over the text finds every name written besides its binding: a ``global``
    # line, ``NAME[...] =`` (also inside another subscript), ``NAME.attr =``, ``NAME.update(``
    text = ("A = 1\nB = 2\nC = 3\nD = {'k': 1}\nE = {'k': 1}\nF = 4\nG = 5\nH = 6\nKEEP = 7\n"
            "def f():\n    global A, B\n    A = 2\n"
            "D['k'] = 2\nE.update(k=3)\nX = [0]\nX[C] = 1\n"
            "class K:\n    pass\nK.n = F\nW = {}\nW[G[0]] = 1\nH.x += 1\n"
            "print(KEEP == 7, KEEP[0], KEEP.real)\n")
    found = text_constants(text)
    assert found.get("KEEP") == 7
    assert not {"A", "B", "D", "E", "H"} & {k if isinstance(k, str) else k[0] for k in found}
    assert found.get("C") == 3 and found.get("F") == 4     # read, not written
    assert "G" not in found     # ``G[0]] = 1``: a superset, as the regex of one name was
