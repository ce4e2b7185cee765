"""Functions pinned to constant arguments (analysis/pinned.py): the branches a literal, a
literal default or a module constant takes, and only those; a parameter the function
rebinds is never pinned; another module's function is not specialised, so a cached run and
a cold one agree."""
from __future__ import annotations

import libcst as cst
import pytest

from conftest import run_cli
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.analysis import pinned

HEAD = """\
import jax, numpy as np, torch
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((len(jax.devices()),), ("d",))
S = NamedSharding(mesh, P("d"))

"""


def _lines(body: str):
    return [(f.line, f.code) for f in lint_source(HEAD + body, "m.py", Config()).findings]


@pytest.mark.parametrize("test, pins, expected", [
    ("mode", {"mode": ""}, False),
    ("not flag", {"flag": False}, True),
    ("mode == 'dp'", {"mode": "dp"}, True),
    ("'dp' != mode", {"mode": "dp"}, False),
    ("mode in ('a', 'b')", {"mode": "b"}, True),
    ("mode not in ['a', 'b']", {"mode": "b"}, False),
    ("device is None", {"device": None}, True),
    ("flag and other", {"flag": False}, False),
    ("flag or other", {"flag": True}, True),
    ("flag and other", {"flag": True}, None),
    ("mode == other", {"mode": "a"}, None),
    ("n > 1", {"n": 2}, None),
])
def test_truth(test, pins, expected):
    assert pinned.truth(pins, cst.parse_expression(test)) is expected


def test_match_arms():
    match = cst.parse_module("match m:\n    case 'a' | 'b':\n        pass\n    case Point():\n        pass\n"
                             "    case _:\n        pass\n").body[0]
    first, cls, wild = match.cases
    assert pinned.arm_taken({"m": "b"}, match.subject, first) is True
    assert pinned.arm_taken({"m": "c"}, match.subject, first) is False
    assert pinned.arm_taken({"m": "c"}, match.subject, cls) is None
    assert pinned.arm_taken({"m": "c"}, match.subject, wild) is True
    assert pinned.arm_taken({"other": "c"}, match.subject, first) is None


def test_branches_the_constant_takes():
    body = ("def put(x, sharded=False):\n    if sharded:\n        return jax.device_put(x, S)\n    return x\n"
            "torch.from_dlpack(put(np.ones(8)))\n"
            "torch.from_dlpack(put(np.ones(8), True))\n")
    assert _lines(body) == [(11, "JXI002")]


def test_a_rebound_parameter_is_not_pinned():
    body = ("def put(x, sharded=False):\n    sharded = not sharded\n    if sharded:\n"
            "        return jax.device_put(x, S)\n    return x\n"
            "torch.from_dlpack(put(np.ones(8)))\n")
    assert _lines(body) == [(11, "JXI002")]


def test_another_modules_function_is_not_specialised(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "place.py").write_text(HEAD + "def put(x, sharded=True):\n    if sharded:\n"
                                       "        return jax.device_put(x, S)\n    return x\n")
    (tmp_path / "main.py").write_text("import numpy as np, torch\nfrom place import put\n"
                                      "torch.from_dlpack(put(np.ones(8), False))\n")
    cold = run_cli("--no-cache", ".", cwd=tmp_path)
    first = run_cli(".", cwd=tmp_path)
    (tmp_path / "main.py").write_text((tmp_path / "main.py").read_text() + "z = 1\n")
    warm = run_cli(".", cwd=tmp_path)     # place.py's summary read frozen from the cache
    assert cold.returncode == first.returncode == warm.returncode == 1
    assert "main.py:3:" in cold.stdout and "main.py:3:" in warm.stdout


def test_an_instance_pins_isinstance_and_class_patterns():
    body = ("class Host:\n    pass\nclass Sub(Host):\n    pass\nclass Zero:\n    pass\n"
            "class Falsy:\n    def __len__(self):\n        return 0\n"
            "def export(x, t):\n    if isinstance(t, (Host, Falsy)):\n        return np.asarray(x)\n"
            "    return torch.from_dlpack(x)\n"
            "def by_match(x, t):\n    match t:\n        case Host():\n            return np.asarray(x)\n"
            "        case _:\n            return torch.from_dlpack(x)\n"
            "y = jax.device_put(np.ones(8), S)\n")
    assert _lines(body + "export(y, Sub())\nby_match(y, Sub())\n") == []
    assert _lines(body + "export(y, Zero())\n") == [(18, "JXI002")]
    assert _lines(body + "by_match(y, Zero())\n") == [(24, "JXI002")]
    # truthiness of an instance whose class defines __len__ is unknown: both branches
    assert _lines(body.replace("isinstance(t, (Host, Falsy))", "t") + "export(y, Falsy())\n") == [(18, "JXI002")]
    assert _lines(body.replace("isinstance(t, (Host, Falsy))", "t") + "export(y, Host())\n") == []
