"""The plan's text scanners (jaxinterop_lint/pipeline/scan.py and toplevel.py, issue 16): the fast scanners
decide exactly what the regular expressions they replace decided (tests/scan_reference.py,
the scanners of 80bf1f1), on edge cases, on random texts made of the pieces that trip
scanners, and on this repository's own sources; and the behaviours the plan relies on are
pinned by value."""
from __future__ import annotations

import glob
import os
import random
import re

import pytest
import scan_reference as ref

from jaxinterop_lint import Config, lint_paths
from jaxinterop_lint.pipeline import carriers, handon, scan, toplevel
from jaxinterop_lint.pipeline.facts import ORIGIN_WEAK, facts_of, words_for
from jaxinterop_lint.pipeline.run import Session
from jaxinterop_lint.pipeline.words import DEFAULT, bare_roles

from test_pipeline import project

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EDGES = [
    "", "\n", "import", "import torch", "import torch\n", "  import torch as t, numpy\n",
    "from . import (a,\n  b as c,\n)\nimport x\n", "from .mod import (\n a,  # one\n b)\n",
    "from a import (b,\nfrom c import d)\n", "from a import b; import c\n", "import a.b.c as d\n",
    "from importlib import import_module\n", "x = 'import y'\n", "\timport z\n", "import\\\n  a\n",
    "def f():\n    import jax\n    return jax.device_put(x, device=s)\n",
    "@decorator(\n    arg=1,\n)\n# note\ndef f():\n    pass\n",
    "@a\n@b\nclass C:\n    x = 1\nelse_value = 2\n", "@a\nimport b\nx = 1\n", "@a\nx = 1\n",
    "if TYPE_CHECKING:\n    y = 1\nelse:\n    y = 2\ntry:\n    z: int = 3\nexcept E:\n    z = 4\nfinally:\n    pass\n",
    "async def g():\n    await h()\n", "class K(Base):\n    '''doc'''\n    def m(self):\n        return self.to_device(d)\n",
    'x = """doc\nat column 0\n"""\ndef f():\n    return 1\n', "a = '\"\"\"'\nb = 1\nc = \"\"\"x\"\"\"\n",
    'r"""doc"""if x else y\n', "# comment\n  # indented\nx = 1  # trailing\n", "x = (\n1,\n)\n",
    "x\r= 1\r\ndef f():\r    pass\r", "\x0cdef f():\n    pass\n", "x = 1\x0b\ny = 2\n", "é = 1\ndef g():\n  pass\u2028x\n",
    "torch.tensor([1.0, 2.0])", "torch.tensor(x)", "torch .  tensor (1)", "torch.tensorx(1)", "torch.tensor",
    'getattr(torch, "tensor")(x)', "getattr(torch,'tensor')", "getattr(a.b, \"tensor\")", "mygetattr(t, 'tensor')",
    "np.asarray(x)\nimport numpy as np\n", "np = torch\nnp.asarray(x)\nimport numpy as np\n",
    "def tensor(x): pass\nclass tensor: pass\n", "f(device=d)", "f(x,\n  device = d)", "f(device==d)", "(\\\ndevice=1)",
    "x.to_device(d)", "x. to_device (d)", "x.to_devices(d)", "for device in jax.devices(): pass",
    "from_dlpack(x)", "torch.from_dlpack(x)\nfrom torch import from_dlpack\n", "x.__dlpack__()", "_from_dlpack(x)",
    # statements that bind or change a name without assigning it plainly
    "x, *y = f()\na , b, = 1, 2\nc,d=e\nz, = (y,)\n(u,) = v\n[w] = q\n(s) = 1\nt = 2\nk[0] = 1\n",
    "t = 0\nt += 1\nt[0] **= 2\nt.a //= 3\nt <= 1\nt != 2\nt.a >= 3\nt[1] == 4\nt <<= 5\nf(t=1)\n",
    "h = {}\nh['a'].append(y)\nh.b[0].extend(z)\nh[g(1)].add(2)\nh['a'].appendx(1)\n", "p = {}\np['w'] = v\np[k] == v\nq.append(v)\np .append (v)\n",
    "p = []\nfor k in ks:\n    p.extend(k)\nwith m:\n    p.attr = 1\np.attr == 2\ntorch.from_dlpack(p[0])\n",
    # attribute names and keyword names are no uses of a module's names; "x = 1" keeps x
    "y = x.dtype + f(dtype=t)\nz = a==b\nw = a<=b\nv=u\ndef f(m=m, *, k: K=None):\n    q := 1\n    x . dtype\n    x. dtype\n",
    "a=b=c\nf(a.b=1)\nx.a==b\n1e5\n0x1f.real\nmylib.f(x)\nx.mylib.g\nmylib . h\nmylibx.k\nmylib.a.b\n",
    "with f() as a, g() as (b):\n    pass\nfor (i, *j) in k:\n    pass\nasync for q in r: pass\ntry:\n    pass\n"
    "except E as e:\n    pass\n@d\ndef f():\n    for z in w: pass\nclass C:\n    with x as y: pass\n",
]

PIECES = ["+=", "<=", "!=", "append(", "update (", "a, b =", "*", "with", " as ", "for ", " in ", "import", "from", " ", "  ", "\t", "\n", "\n", "\r", "\r\n", "\x0c", "(", ")", "[", "]", ",", ".", "=", "==",
          "#", "'''", '"""', "'", '"', "\\", "@", "def", "class", "async", "else", "except", "torch", "numpy", "np",
          "jax", "tensor", "as_tensor", "from_dlpack", "__dlpack__", "device", "to_device", "device_put", "getattr(",
          "as", "x", "y1", "1", "2.0", "-", "_", ":", ";", "é", "\u2028", "if", "try:", "jnp", "mesh", "Mesh"]


def _random_texts(n: int, seed: int = 16) -> list:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 60))) for _ in range(n)]


def _own_sources() -> list:
    out = []
    for p in sorted(glob.glob(os.path.join(ROOT, "jaxinterop_lint", "**", "*.py"), recursive=True))[:120]:
        with open(p, encoding="utf-8") as fh:
            out.append(fh.read())
    return out


TEXTS = EDGES + _random_texts(2500)
WORDS = ("tensor", "device", "to_device", "from_dlpack", "x", "import", "jax", "np")


def _ref_units(text):
    return [(names, "".join(lines)) for names, lines in ref._units_of(text)]


@pytest.mark.parametrize("texts", [TEXTS, _own_sources()], ids=["edges-and-random", "own-sources"])
def test_the_fast_scanners_agree_with_the_regular_expressions(texts):
    for text in texts:
        for t in (text, scan.plain_lines(text)):
            assert scan.import_roots(t) == ref.import_roots(t), repr(t)
            assert list(scan.import_roots(t)) == list(ref.import_roots(t)), repr(t)
            assert toplevel.units_of(t) == _ref_units(t), repr(t)
            assert toplevel.strip_prose(t) == ref._PROSE.sub("", t), repr(t)
            assert toplevel.assigned(t) == tuple(ref._ASSIGNED.findall(t)), repr(t)
            for w in WORDS:
                assert scan.uses_any(t, (w,)) == ref.uses_any(t, (w,)), (w, t)
                assert scan.uses_in_role(t, (w,)) == ref.uses_in_role(t, (w,)), (w, t)
                assert scan.used_as_method(t, w) == (ref._role_re(w, "method").search(t) is not None), (w, t)
                assert scan.used_as_keyword(t, w) == (ref._role_re(w, "keyword").search(t) is not None), (w, t)
                for root in (None, "torch"):
                    assert scan.non_literal_use(t, w, root, scan.Aliases(t)) == \
                        ref._non_literal_use(t, w, root, ref.Aliases(t)), (w, root, t)
                assert scan.non_literal_use(t, w) == ref._non_literal_use(t, w), (w, t)
                assert handon._called(t, w) == ref.called(t, w), (w, t)
            known = set(ref._IDENT.findall(t))
            assert known & carriers.free_names(t) == known & set(carriers.FREE_NAME.findall(t)), repr(t)
            modules = frozenset({"x", "np", "torch", "jax"} | set(sorted(known)[:4]))
            assert carriers.used_names(t, set(), modules) == frozenset(
                f"{m}.{a}" for m in modules for a in re.findall(r"\b%s[ \t]*\.[ \t]*([A-Za-z_]\w*)" % re.escape(m), t)), \
                repr(t)
            for roots in ({"torch"}, {"numpy", "cupy"}, set()):
                assert scan.consumer(t, DEFAULT, roots, frozenset({"from_dlpack"})) == \
                    ref._consumer(t, DEFAULT, roots, frozenset({"from_dlpack"})), (roots, t)


def test_every_bare_jax_word_is_matched_in_its_role_as_before():
    texts = TEXTS[:600]
    for w in bare_roles():
        for t in texts:
            assert scan.uses_in_role(t, (w,)) == ref.uses_in_role(t, (w,)), (w, t)


# -- behaviours pinned by value -------------------------------------------------------------
def test_imports_in_parentheses_aliases_and_relative_imports():
    text = "from .models import (\n    Bert as B,\n    gpt,\n)\nimport torch.nn as nn, numpy\n"
    assert scan.imports_of(text, "pkg.sub") == [["pkg.sub.models", [["Bert", "B"], ["gpt", None]]],
                                                ["torch.nn", None], ["torch", [["nn", "nn"]]], ["numpy", None]]
    assert scan.import_roots(text) == {"nn": {"torch"}, "numpy": {"numpy"}, "B": {"models"}, "gpt": {"models"}}


def test_carriage_return_line_ends_are_lines():
    text = "import torch\rfrom jax import device_put\r\ndef f(x):\r    return torch.as_tensor(x)\r"
    f = facts_of(text, "", words_for(Config()))
    assert f["imports"] == [["torch", None], ["jax", [["device_put", None]]]]
    assert f["sink"] is True and f["origin"] == ORIGIN_WEAK       # a placement, no sharding
    assert toplevel.units_of(scan.plain_lines(text)) == [(("f",), "def f(x):\n    return torch.as_tensor(x)\n")]


def test_a_getattr_constant_is_the_attribute_it_names():
    assert scan.non_literal_use('fn = getattr(torch, "from_dlpack")', "from_dlpack")
    assert not scan.non_literal_use('fn = getattr(torch, "from_dlpack_x")', "from_dlpack")


def test_literal_only_tensor_calls_and_other_libraries_are_no_consumer():
    w = words_for(Config())
    assert not facts_of("import torch\nx = torch.tensor([1.0, -2e3])\n", "", w)["sink"]
    assert facts_of("import torch\nx = torch.tensor([1.0, y])\n", "", w)["sink"]
    assert not facts_of("import torch\nimport numpy as np\nx = np.asarray(y)\n", "", w)["sink"]
    assert facts_of("import torch\nimport numpy as np\nnp = torch\nx = np.asarray(y)\n", "", w)["sink"]


def test_units_keep_decorators_and_blocks_and_leave_imports_out():
    text = ("import jax\n@jax.jit\n@other(\n    x=1,\n)\ndef f(a):\n    return a\n"
            "if FLAG:\n    MESH = 1\nelse:\n    MESH = 2\ntry:\n    from x import y\nexcept ImportError:\n    ALT: int = 0\n"
            "class K:\n    pass\n")
    assert toplevel.units_of(text) == [
        (("f",), "@jax.jit\n@other(\ndef f(a):\n    return a\n"),
        (("MESH", "MESH"), "if FLAG:\n    MESH = 1\nelse:\n    MESH = 2\n"),
        (("ALT",), "try:\n    from x import y\nexcept ImportError:\n    ALT: int = 0\n"),
        (("K",), "class K:\n    pass\n")]


def test_prose_is_not_code():
    assert toplevel.strip_prose('def f():\n    """uses jax.device_put"""\n    # and torch\n    return 1\n') == \
        "def f():\n    \n\n    return 1\n"


def test_plan_units_name_what_each_unit_uses(tmp_path):
    proj = project(tmp_path, {"pkg/units.py": (
        "import jax\nfrom pkg.shard import sharded\n\n\n@jax.jit\ndef placed(x):\n"
        "    '''not sharded here'''\n    return jax.device_put(x, device=d)\n\n\n"
        "def helper(x, m):\n    # placed(x)\n    return sharded(x, m)\n\n\nif True:\n    VALUE = helper\n")})
    s = Session(str(proj), Config(), use_cache=False)
    u = s.plan.units(str(proj / "pkg" / "units.py"))
    assert u == {"placed": (True, frozenset({"jax", "placed"})), "helper": (False, frozenset({"helper", "sharded"})),
                 "VALUE": (False, frozenset({"VALUE", "helper"}))}
    assert s.plan.carrier_name(str(proj / "pkg" / "units.py"), "VALUE")


def test_a_word_guarded_by_a_part_is_found_as_before():
    w = words_for(Config())
    assert w.guards and all(part in word and part != word for word, part in w.guards.items())
    words = sorted(set(w.guards) | set(w.guards.values()) | {"torch", "numpy"})
    for t in TEXTS[:800] + ["x.__dlpack__()", "device_buffers", "unsafe_raw_buffer", "as_tensor(x)"]:
        present = scan.Present(t, w.guards)
        assert [present(x) for x in words] == [x in t for x in words], t


def test_a_comment_inside_a_parenthesised_import_hides_no_name(tmp_path):
    """``from lib import (helper,  # note\\n shard)`` takes ``shard`` too: the plan read
    only ``helper`` (the comment swallowed the next name), so a file whose multi-device value
    comes from ``shard`` was never analysed and its finding was lost."""
    from jaxinterop_lint import Config, lint_paths
    from jaxinterop_lint.pipeline.scan import imports_of

    assert imports_of("from m import (a,  # c\n    b as bb,  # d\n)\n", "") == [["m", [["a", None], ["b", "bb"]]]]
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "lib.py").write_text(
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n"
        "def helper():\n    return 1\n\n"
        "def shard(x, mesh):\n    return jax.device_put(x, NamedSharding(mesh, P('x')))\n")
    (tmp_path / "use.py").write_text(
        "import torch\nfrom lib import (helper,  # a note\n                 shard)\n\n"
        "def export(x, mesh):\n    return torch.from_dlpack(shard(x, mesh))\n")
    result = lint_paths([str(tmp_path)], Config(), use_cache=False)
    assert [(f.path.rsplit("/", 1)[-1], f.code, f.line) for f in result.findings] == [("use.py", "JXI002", 6)]


def test_attribute_and_keyword_names_are_no_uses_of_a_module_name(tmp_path):
    # keras: the JAX backend defines a sharded ``dtype`` at top level; a NumPy converter that
    # reads ``x.dtype`` and passes ``dtype=...`` hands on nothing of it, a bare ``dtype`` does
    jax_backend = ("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n"
                   "if jax.device_count() > 1:\n    dtype = jax.device_put(1.0, NamedSharding(mesh, P()))\n\n\n"
                   "def convert(x):\n    if x.dtype == 'bfloat16':\n        return np.array(x, dtype=float)\n"
                   "    return np.array(x)\n\n\ndef leak(x):\n    return dtype\n")
    proj = project(tmp_path, {"pkg/backend.py": jax_backend,
                              "pkg/slicing.py": "import torch\nfrom pkg.backend import convert\n\n\n"
                                                "def to_torch(x):\n    return torch.from_dlpack(convert(x))\n",
                              "pkg/leaking.py": "import torch\nfrom pkg.backend import leak\n\n\n"
                                                "def to_torch(x):\n    return torch.from_dlpack(leak(x))\n"})
    s = Session(str(proj), Config(), use_cache=False)
    backend = str(proj / "pkg" / "backend.py")
    u = s.plan.units(backend)
    assert u["convert"][1] == frozenset({"convert"}) and "dtype" in u["leak"][1]
    assert not s.plan.carrier_name(backend, "convert") and s.plan.carrier_name(backend, "leak")
    assert not s.plan.direct(str(proj / "pkg" / "slicing.py"))
    assert s.plan.direct(str(proj / "pkg" / "leaking.py"))


def test_the_gate_admits_a_function_that_builds_a_mesh(tmp_path):
    """A mesh made by a helper of another module decides the size of a placement on it:
    ``m = literal_one_mesh()`` then ``jax.device_put(x, NamedSharding(m, P()))`` is on one
    device (hunt38 proj1, it ran).  The gate admits mesh builders (and the names of their
    module using them), not a function that only lists devices."""
    meshes = ("import jax\nimport numpy as np\nfrom jax.sharding import Mesh\n\n\n"
              "def literal_one_mesh():\n    return jax.make_mesh((1,), ('d',))\n\n\n"
              "def first_mesh():\n    return Mesh(np.array(jax.devices()[:1]), ('d',))\n\n\n"
              "def big_mesh():\n    return literal_one_mesh()\n\n\n"
              "def count():\n    return len(jax.devices())\n")
    place = ("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
             "def place(x, mesh):\n    return jax.device_put(x, NamedSharding(mesh, P()))\n")
    use = ("import jax.numpy as jnp\nimport torch\nfrom pkg.meshes import {name}\nfrom pkg.place import place\n\n"
           "t = torch.from_dlpack(place(jnp.ones(8), {name}()))\n")
    proj = project(tmp_path, {"pkg/meshes.py": meshes, "pkg/place.py": place,
                              "pkg/one.py": use.format(name="literal_one_mesh"),
                              "pkg/first.py": use.format(name="first_mesh")})
    s = Session(str(proj), Config(), use_cache=False)
    path = str(proj / "pkg" / "meshes.py")
    assert [n for n in ("literal_one_mesh", "first_mesh", "big_mesh", "count") if s.plan.gate(path, n)] == \
        ["literal_one_mesh", "first_mesh", "big_mesh"]
    result = lint_paths([str(proj)], Config(), jobs=1)
    assert not [f for f in result.findings if os.path.basename(f.path) in ("one.py", "first.py")], result.findings


def test_a_device_count_guard_of_another_module_guards(tmp_path):
    """``MULTI = jax.device_count() > 1`` and ``def single_device(): return jax.device_count()
    == 1`` in another module guard an export as they do in the module itself (hunt38 proj9:
    both forms ran on 8 devices, each taking the host-copy branch).  The gate admits the
    names that compare a device count with 1, not every function that lists devices."""
    env = ("import jax\n\nMULTI = jax.device_count() > 1\nSINGLE_HOST = jax.process_count() == 1\n\n\n"
           "def single_device():\n    return jax.device_count() == 1\n\n\n"
           "def names():\n    return [d.id for d in jax.devices()]\n")
    arrays = ("import jax\nimport jax.numpy as jnp\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
              "def make():\n    mesh = jax.make_mesh((jax.device_count(),), ('d',))\n"
              "    return jax.device_put(jnp.ones(16), NamedSharding(mesh, P('d')))\n")
    head = "import numpy as np\nimport torch\nfrom pkg import env\nfrom pkg.arrays import make\nfrom pkg.env import single_device\n\nx = make()\n"
    proj = project(tmp_path, {"pkg/env.py": env, "pkg/arrays.py": arrays,
                              "pkg/flag.py": head + "if not env.MULTI:\n    t = torch.from_dlpack(x)\n",
                              "pkg/helper.py": head + "a = np.from_dlpack(x) if single_device() else np.asarray(x)\n",
                              "pkg/host.py": head + "if env.SINGLE_HOST:\n    t = torch.from_dlpack(x)\n"})
    s = Session(str(proj), Config(), use_cache=False)
    path = str(proj / "pkg" / "env.py")
    assert [n for n in ("MULTI", "SINGLE_HOST", "single_device", "names") if s.plan.gate(path, n)] == \
        ["MULTI", "single_device"]
    result = lint_paths([str(proj)], Config(), jobs=1)
    assert sorted({os.path.basename(f.path) for f in result.findings} & {"flag.py", "helper.py", "host.py"}) == \
        ["host.py"], result.findings


def test_consumer_defs_read_the_file_s_import_aliases(tmp_path):
    """``np.from_dlpack`` with ``import numpy as np`` is a consumer in a function of the module
    (the plan read each def's text without the file's imports: ``np`` named no root); a
    module-level list of functions using one, and a function using that list, count too."""
    proj = project(tmp_path, {"pkg/conv.py": (
        "import numpy as np\nimport torch as T\n\n\ndef to_np(x):\n    return np.from_dlpack(x)\n\n\n"
        "def to_t(x):\n    return T.from_dlpack(x)\n\n\nSTAGES = [lambda a: a + 1.0, lambda a: np.from_dlpack(a)]\n\n\n"
        "def run(x, stages=STAGES):\n    for s in stages:\n        x = s(x)\n    return x\n\n\n"
        "def plain(x):\n    return x + 1\n")})
    s = Session(str(proj), Config(), use_cache=False)
    assert s.plan.consumer_defs(str(proj / "pkg" / "conv.py")) == frozenset({"to_np", "to_t", "STAGES", "run"})
