"""Module-level integer constants size meshes (``analysis/constants.py``; the runtime
fixture ``fixtures/runtime/mesh_constants.py`` is run on 8 CPU devices by
``tests/test_runtime_truth.py``)."""
from __future__ import annotations

import libcst as cst
import pytest

from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.analysis.constants import module_constants

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
    text = HEAD + consts + BODY.replace("SIZE", size)
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
])
def test_a_mesh_sized_by_a_module_constant(consts, size, flagged):
    assert _flagged(consts, size) is flagged


def test_the_constants_of_a_module():
    text = "A = 1\nB = {'x': 2, 'y': z}\nC = 3\nC += 1\nfor D in range(2):\n    pass\nD = 4\n"
    assert module_constants(cst.parse_module(text), text) == {"A": 1, ("B", "x"): 2}
