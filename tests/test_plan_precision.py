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


def test_the_epoch_is_checked_by_each_files_stamp_without_reading_its_entry(tmp_path, monkeypatch):
    """The epoch keeps each file's stat stamp beside its hash: a warm check is a stat of
    each file, not a read of each file's store entry (flake8 on one file of transformers read
    2,914 entries); a file rewritten with the same size and mtime (a new ctime) is hashed
    again and the epoch fails when its content changed."""
    import os
    import time

    from jaxinterop_lint.pipeline import results_store
    from jaxinterop_lint.pipeline.store import Store

    monkeypatch.setattr(results_store, "MAX_PLAN_DEPS", 0)      # every decision "reads much"
    files = {"pkg/base.py": "def helper(x):\n    return x\n",
             "pkg/mid.py": "from pkg.base import helper\n\ndef mid(x):\n    return helper(x)\n",
             "pkg/late.py": "import torch\nfrom pkg.mid import mid\n\ndef f(x):\n    return torch.from_dlpack(mid(x))\n"}
    proj = project(tmp_path, files)
    old = time.time() - 3600          # past the racily-clean window: the stamps are recorded
    for path in proj.rglob("*"):
        os.utime(path, (old, old))
    lint_paths([str(proj)], Config(), jobs=1, use_cache=True)
    late = str(proj / "pkg" / "late.py")
    s = Session(str(proj), Config())
    read = []
    real = Store.known_hash
    monkeypatch.setattr(Store, "known_hash", lambda self, p, st: read.append(p) or real(self, p, st))
    assert s.cached(late) is not None
    assert read == [late]             # the file itself; the epoch's files by their stamps alone
    base = proj / "pkg" / "base.py"
    base.write_text(files["pkg/base.py"].replace("x", "y"))     # the same size
    os.utime(base, (old, old))                                   # and mtime; a new ctime
    assert Session(str(proj), Config()).cached(late) is None


def test_the_epoch_fails_when_a_module_appears_in_a_folder_that_was_missing(tmp_path, monkeypatch):
    """The epoch keeps the paths whose creation would change an import the plan resolved,
    raised to the outermost missing folder and checked by listing its parent (one listing
    per folder, not an ``exists`` per path): creating ``pkg/sub/`` with the helper that
    ``late.py`` imports makes the finding, on the next warm run and on flake8's path (the
    stored result alone), and the warm record made while it was missing holds no more."""
    import time

    from jaxinterop_lint.pipeline import results_store, warm

    monkeypatch.setattr(results_store, "MAX_PLAN_DEPS", 0)      # every decision "reads much"
    files = {"pkg/base.py": "def helper(x):\n    return x\n",
             "pkg/mid.py": "from pkg.base import helper\n\ndef other(x):\n    return helper(x)\n",
             "pkg/late.py": "import torch\nfrom pkg.mid import other\nfrom pkg.sub.helpers import mid\n\n"
                            "def f(x):\n    return torch.from_dlpack(mid(other(x)))\n"}
    proj = project(tmp_path, files)
    old = time.time() - 3600          # past the racily-clean window: stamps and listings trusted
    for path in [proj, *proj.rglob("*")]:
        os.utime(path, (old, old))
    late = str(proj / "pkg" / "late.py")
    for _ in range(2):                # the second run answers from the warm record
        assert ("pkg/late.py", 6, "JXI002") not in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
    s = Session(str(proj), Config())
    assert s.cached(late) is not None and s._epochs and all(s._epochs.values())
    assert os.path.join(str(proj / "pkg"), "sub") in s.reader._exists     # consulted: the warm record keeps it
    sub = proj / "pkg" / "sub"
    sub.mkdir()
    (sub / "__init__.py").write_text("")
    (sub / "helpers.py").write_text("from pkg.shard import sharded\n\ndef mid(x):\n    return sharded(x, None)\n")
    s = Session(str(proj), Config())
    assert s.cached(late) is None and not any(s._epochs.values())
    assert warm.answer(warm.store_for(str(proj), s.key), [late], s.enabled) is None
    assert ("pkg/late.py", 6, "JXI002") in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)


_MAKES = ("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
          "def make(x):\n    mesh = jax.make_mesh((len(jax.devices()),), ('x',))\n"
          "    return jax.device_put(x, NamedSharding(mesh, P('x')))\n")


def test_a_module_created_in_a_src_folder_made_after_the_run_is_followed(tmp_path):
    """``<root>/src`` becomes a source root once it exists: a result that relied on the
    absence of a module keeps that candidate too (the attack of stop 47, s03)."""
    proj = project(tmp_path, {"pkg/late.py": "import torch\nfrom extra import make\n\n\n"
                                             "def f(x):\n    return torch.from_dlpack(make(x))\n"})
    assert ("pkg/late.py", 6, "JXI002") not in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
    (proj / "src").mkdir()
    (proj / "src" / "extra.py").write_text(_MAKES)
    assert ("pkg/late.py", 6, "JXI002") in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)


def test_a_conftest_created_after_the_run_gives_its_fixtures(tmp_path):
    """A ``conftest.py`` created beside a test module (or above it) is a candidate the
    result relied on the absence of (the attack of stop 47, s19b)."""
    proj = project(tmp_path, {"tests/test_x.py": "import torch\n\n\ndef test_export(sharded):\n"
                                                 "    assert torch.from_dlpack(sharded).shape\n"})
    assert ("tests/test_x.py", 5, "JXI002") not in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
    (proj / "tests" / "conftest.py").write_text("import pytest\n" + _MAKES.replace(
        "def make(x):", "@pytest.fixture\ndef sharded():\n    x = 1").replace("    return jax", "    return jax"))
    assert ("tests/test_x.py", 5, "JXI002") in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)


# A test module whose JAX test makes a sharded array and whose PyTorch test converts NumPy
# data: the file names JAX words, but not in the unit that uses the consumer.
SPLIT_TEST = """\
import jax
import numpy as np
import torch
from jax.sharding import NamedSharding, PartitionSpec as P


def test_sharded(mesh):
    y = jax.device_put(np.ones(8), NamedSharding(mesh, P("x")))
    assert y.shape == (8,)


def test_torch(device):
    t = torch.tensor(np.ones(3), device=device)
    assert t.shape == (3,)
"""
# The same file with the export in the JAX test: analysed, and the finding made.
JOINED_TEST = SPLIT_TEST.replace('    assert y.shape == (8,)\n', '    return torch.from_dlpack(y)\n')
# A module-level statement that exports a sharded array (a script).
SCRIPT = """\
import jax
import numpy as np
import torch
from jax.sharding import NamedSharding, PartitionSpec as P


def helper(n):
    return torch.as_tensor(np.ones(n))


mesh = jax.make_mesh((2,), ("x",))
print(torch.from_dlpack(jax.device_put(np.ones(8), NamedSharding(mesh, P("x")))))
"""


def test_jax_words_of_a_file_count_only_in_the_units_that_use_a_consumer(tmp_path):
    proj = project(tmp_path, {"pkg/split_test.py": SPLIT_TEST, "pkg/joined_test.py": JOINED_TEST,
                              "pkg/script.py": SCRIPT})
    PARSES.clear()
    result = lint_paths([str(proj)], Config(), jobs=1)
    parsed = _parsed(proj)
    assert "pkg/split_test.py" not in parsed
    assert {"pkg/joined_test.py", "pkg/script.py"} <= parsed
    found = rows(result, proj)
    assert ("pkg/joined_test.py", 9, "JXI002") in found
    assert ("pkg/script.py", 12, "JXI002") in found
    assert not [r for r in found if r[0] == "pkg/split_test.py"]


def test_a_jax_keyword_in_a_call_of_another_library_is_no_placement():
    """``device=`` places a value only in JAX's own calls (analysis/calls.py ``placed``):
    ``torch.zeros(n, device=d)`` in a module that imports jax names no JAX word."""
    from jaxinterop_lint.config import Config as C
    from jaxinterop_lint.pipeline.facts import ORIGIN_NONE, ORIGIN_WEAK
    from jaxinterop_lint.pipeline.plan import facts_of, words_for

    w = words_for(C())
    head = "import jax\nimport jax.numpy as jnp\nimport numpy as np\nimport torch\nfrom functools import partial\n"

    def level(body):
        return facts_of(head + body, "", w)["origin"]

    for body in ("t = torch.zeros(3, device=d)\n", "t = torch.zeros(f(a)[0], dtype='f(', device=d)\n",
                 "t = torch.tensor(\n    np.ones(3),\n    device=d,\n)\n", "a = np.asarray(x, device=d)\n"):
        assert level(body) == ORIGIN_NONE, body
    for body in ("y = jnp.zeros(3, device=s)\n", "z = partial(jnp.zeros, device=s)\n",
                 "xp = torch\nt = xp.zeros(3, device=s)\n", "t = torch.zeros(3, d='x\\\\'', device=s)\n",
                 "y = jax.device_put(x, device=s)\n", "t = make(torch.zeros(3), device=s)\n"):
        assert level(body) == ORIGIN_WEAK, body


# A module-level statement hands a JAX helper's value to a function of the file that exports
# it: the statement names no JAX word and defines no name, and it is the only caller.
MAIN_GUARD = """\
import torch

from pkg.shard import sharded


def export(a):
    return torch.from_dlpack(a)


if __name__ == "__main__":
    export(sharded(1, None))
"""


def test_a_module_level_statement_calling_an_exporting_function_reaches_it(tmp_path):
    own = MAIN_GUARD.replace("from pkg.shard import sharded\n", "import jax\nfrom jax.sharding import NamedSharding\n"
                             "\nsharded = jax.jit(lambda x: x, out_shardings=NamedSharding(None, None))\n")
    proj = project(tmp_path, {"pkg/main_guard.py": MAIN_GUARD, "pkg/own_guard.py": own})
    found = rows(lint_paths([str(proj)], Config(), jobs=1), proj)
    assert ("pkg/main_guard.py", 7, "JXI002") in found
    assert ("pkg/own_guard.py", 10, "JXI002") in found


# ``import pkg`` then ``pkg.name``: the name the package's __init__ re-exports
PACKAGE_INIT = """\
from .shard import sharded
from .torch_only import tensors
"""
ATTRIBUTE_USE = """\
import numpy as np
import torch

import pkg


def main(mesh):
    batch = pkg.sharded(np.ones(4), mesh)
    return torch.from_dlpack(batch)
"""
ATTRIBUTE_HOST = """\
import torch

import pkg


def main():
    return torch.as_tensor(pkg . tensors(3)[0])
"""


def test_a_name_read_off_an_imported_package_is_followed_to_its_module(tmp_path):
    """``pkg.sharded`` with ``import pkg`` reaches pkg/shard.py through the __init__'s
    re-export (a BufferError on 8 CPU devices, stop 34); ``pkg.tensors`` reaches only PyTorch
    code, so the file using it is not parsed."""
    proj = project(tmp_path, {"pkg/__init__.py": PACKAGE_INIT, "attr_use.py": ATTRIBUTE_USE,
                              "attr_host.py": ATTRIBUTE_HOST})
    PARSES.clear()
    found = rows(lint_paths([str(proj)], Config(), jobs=1), proj)
    assert ("attr_use.py", 9, "JXI002") in found
    assert "attr_host.py" not in _parsed(proj)
    PARSES.clear()
    alone = rows(lint_paths([str(proj / "attr_use.py")], Config(), jobs=1), proj)
    assert alone == [("attr_use.py", 9, "JXI002")]


MODULE_LEVEL_STORES = """\
import jax
import jax.numpy as jnp
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((8,), ("d",))
params = {}
params["w"] = jax.device_put(jnp.ones(16), NamedSharding(mesh, P("d")))
torch.from_dlpack(params["w"])
arrays = []
arrays.append(jax.device_put(jnp.ones(16), NamedSharding(mesh, P("d"))))
x, y = jax.device_put(jnp.ones(16), NamedSharding(mesh, P("d"))), 1


def export():
    return torch.from_dlpack(arrays[0]), torch.from_dlpack(x)
"""


def test_module_level_statements_that_store_into_a_name_count_for_it(tmp_path):
    """``params["w"] = sharded``, ``arrays.append(sharded)`` and ``x, y = sharded, 1`` at
    module level (stop 34's helper: BufferError on 8 CPU devices, unflagged through the
    plan, which took the statements for no name's)."""
    proj = project(tmp_path, {"stores.py": MODULE_LEVEL_STORES})
    found = rows(lint_paths([str(proj / "stores.py")], Config(), jobs=1), proj)
    assert found == [("stores.py", 9, "JXI002"), ("stores.py", 16, "JXI002"), ("stores.py", 16, "JXI002")]


ALIASED_CONSUMER = """\
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
from torch import from_dlpack as to_torch

x = jax.device_put(jnp.ones(8), NamedSharding(jax.make_mesh((8,), ("d",)), P("d")))
to_torch(x)
"""
ALIASED_SOURCE = """\
import jax.numpy as jnp
import torch
from jax import pmap as parallel

step = parallel(lambda a: a * 2)
torch.from_dlpack(step(jnp.ones((8, 2))))
"""
ONE_ELEMENT_UNPACK = """\
import jax
import jax.numpy as jnp
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

y = jax.device_put(jnp.ones(8), NamedSharding(jax.make_mesh((8,), ("d",)), P("d")))
z, = (y,)
torch.from_dlpack(z)
"""


def test_aliased_imports_and_one_element_unpacking_reach_the_sink(tmp_path):
    """``from torch import from_dlpack as to_torch``, ``from jax import pmap as parallel``
    and ``z, = (y,)`` at module level: each a BufferError on 8 CPU devices (stop 34's second
    helper hunt), each unflagged through the plan before."""
    proj = project(tmp_path, {"alias_sink.py": ALIASED_CONSUMER, "alias_source.py": ALIASED_SOURCE,
                              "unpack.py": ONE_ELEMENT_UNPACK})
    found = rows(lint_paths([str(proj / n) for n in ("alias_sink.py", "alias_source.py", "unpack.py")],
                            Config(), jobs=1), proj)
    assert found == [("alias_sink.py", 7, "JXI002"), ("alias_source.py", 6, "JXI002"), ("unpack.py", 8, "JXI002")]


STAR_FILES = {
    "star/__init__.py": "from .mesh import *\n",
    "star/mesh.py": ("import jax\nfrom jax.sharding import *\n\n\ndef shard(x):\n"
                     "    return jax.device_put(x, NamedSharding(jax.make_mesh((8,), ('d',)), PartitionSpec('d')))\n"),
    "star/utils.py": "import torch\n\n\ndef to_torch(x):\n    return torch.from_dlpack(x)\n",
    "star/producer.py": "import jax.numpy as jnp\nimport torch\nfrom star.mesh import *\n\n"
                        "torch.from_dlpack(shard(jnp.ones(8)))\n",
    "star/through_init.py": "import jax.numpy as jnp\nimport torch\nimport star\n\n"
                            "torch.from_dlpack(star.shard(jnp.ones(8)))\n",
    "star/consumer.py": "import jax.numpy as jnp\nfrom star.mesh import shard\nfrom star.utils import *\n\n"
                        "to_torch(shard(jnp.ones(8)))\n",
}


def test_star_imports_bind_the_names_of_their_module(tmp_path):
    """``from m import *`` of a library module (``jax.sharding``: the names the tables know)
    and of project modules (a producer, a consumer, a package ``__init__`` re-exporting):
    each a BufferError on 8 CPU devices (stop 34's second helper hunt), unflagged before;
    the same cold, warm, and with only the changed caller analysed again."""
    proj = project(tmp_path, STAR_FILES)
    expected = [("star/producer.py", 5, "JXI002"), ("star/through_init.py", 5, "JXI002"),
                ("star/utils.py", 5, "JXI002")]
    assert rows(lint_paths([str(proj / "star")], Config(), jobs=1), proj) == expected
    assert rows(lint_paths([str(proj / "star")], Config(), jobs=1, use_cache=True), proj) == expected
    for name in ("producer.py", "through_init.py", "consumer.py"):
        with open(proj / "star" / name, "a") as f:
            f.write("# changed\n")
    assert rows(lint_paths([str(proj / "star")], Config(), jobs=1, use_cache=True), proj) == expected
    alone = rows(lint_paths([str(proj / "star" / "consumer.py")], Config(), jobs=1), proj)
    assert alone == [("star/consumer.py", 5, "JXI002")]       # at the call: utils.py is not reported


AUGMENTED = """\
import jax
import jax.numpy as jnp
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

total = 0
total += jax.device_put(jnp.ones(8), NamedSharding(jax.make_mesh((8,), ("d",)), P("d")))
torch.from_dlpack(total)
"""


def test_an_augmented_assignment_at_module_level_counts_for_its_name(tmp_path):
    """``total += sharded`` (a BufferError on 8 CPU devices): the name's unit is not only
    ``total = 0``."""
    proj = project(tmp_path, {"aug.py": AUGMENTED})
    assert rows(lint_paths([str(proj / "aug.py")], Config(), jobs=1), proj) == [("aug.py", 8, "JXI002")]


def _factory_project(tmp_path, conv_exports=True):
    """``use.py`` calls ``converter().to_torch(f0(x))``: ``converter`` (``tools.py``, naming
    no consumer) returns ``conv.Converter()``, whose method exports when ``conv_exports``;
    ``f0`` returns what ``helper.make`` returns, through ``m0`` .. ``m3``."""
    chain = {f"pkg/m{i}.py": f"from pkg.m{i + 1} import f{i + 1}\n\n\ndef f{i}(x):\n    return f{i + 1}(x)\n"
             for i in range(3)}
    chain["pkg/m3.py"] = "from pkg.helper import make\n\n\ndef f3(x):\n    return make(x)\n"
    body = "torch.from_dlpack(y)" if conv_exports else "y"
    return project(tmp_path, {
        **chain,
        "pkg/helper.py": "def make(x):\n    return x\n",
        "pkg/conv.py": "import torch\n\n\nclass Converter:\n    def to_torch(self, y):\n"
                       f"        return {body}\n",
        "pkg/tools.py": "from pkg.conv import Converter\n\n\ndef converter():\n    return Converter()\n",
        "pkg/use.py": "from pkg.m0 import f0\nfrom pkg.tools import converter\n\n\n"
                      "def run(x):\n    return converter().to_torch(f0(x))\n"})


def _flake8_alone(path, monkeypatch):
    """flake8 on ``path`` alone in a new process: (its session, its findings)."""
    from jaxinterop_lint.pipeline import run

    monkeypatch.setattr(run, "_SHARED", {})
    s = run.shared_project(str(path), Config(), reported=[str(path)])
    found = sorted((f.code, f.line) for f in s.lint_text(path.read_text(), str(path)).findings)
    s.save()
    return s, found


_SHARDED_MAKE = "from pkg.shard import sharded\n\n\ndef make(x):\n    return sharded(x, None)\n"


def test_an_exporter_a_factory_module_hands_on_later_is_followed_too(tmp_path, monkeypatch):
    """As below, but ``conv.py`` exports nothing when the cache is filled: ``tools.py`` hands
    nothing on, and what decided that (``conv.py``) is a dependency of ``use.py``'s result.
    ``conv.py`` then gains its consumer and the end of the chain its JAX code (the attack
    of stop 48, s03: the result kept ``m0`` and ``tools`` alone and stayed)."""
    proj = _factory_project(tmp_path, conv_exports=False)
    use = proj / "pkg" / "use.py"
    assert _flake8_alone(use, monkeypatch)[1] == []
    assert str(proj / "pkg" / "conv.py") in Session(str(proj), Config()).store.get(str(use))["result"]["deps"]
    (proj / "pkg" / "conv.py").write_text("import torch\n\n\nclass Converter:\n    def to_torch(self, y):\n"
                                          "        return torch.from_dlpack(y)\n")
    (proj / "pkg" / "helper.py").write_text(_SHARDED_MAKE)
    assert _flake8_alone(use, monkeypatch)[1] == [("JXI002", 6)]


def test_a_src_folder_made_after_the_run_shadows_a_module_found_at_the_root(tmp_path):
    """``src/`` did not exist: ``helper`` was the root's ``helper.py``.  Making ``src/helper.py``
    makes ``src/`` the first source root, whose ``helper`` builds a sharded array: the store
    key tells the two layouts apart (the attack of stop 48, s06)."""
    proj = project(tmp_path, {"helper.py": "def make(x):\n    return x\n",
                              "pkg/late.py": "import torch\nfrom helper import make\n\n\n"
                                             "def f(x):\n    return torch.from_dlpack(make(x))\n"})
    assert ("pkg/late.py", 6, "JXI002") not in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
    (proj / "src").mkdir()
    (proj / "src" / "helper.py").write_text(_MAKES)
    assert ("pkg/late.py", 6, "JXI002") in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
    assert ("pkg/late.py", 6, "JXI002") in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=False), proj)


def test_a_factory_handed_exporter_is_followed_when_a_far_module_gains_jax_code(tmp_path, monkeypatch):
    """``use.py`` names no consumer: it calls ``converter().to_torch(f0(x))``, where the
    factory ``converter`` (of ``tools.py``, naming none) hands over ``conv.Converter``,
    whose method exports.  While no JAX code reaches ``use.py`` the handed exporter is
    left out, so that decision rests on the import graph behind ``use.py``: once the end
    of the chain ``f0`` calls returns a multi-device value, the stored result is stale
    (the attack of stop 47, s25: flake8 on the file kept answering from the cache)."""
    proj = _factory_project(tmp_path)
    use = proj / "pkg" / "use.py"
    assert _flake8_alone(use, monkeypatch)[1] == []
    assert _flake8_alone(use, monkeypatch)[0]._plan is None          # answered from the stored result
    (proj / "pkg" / "helper.py").write_text(_SHARDED_MAKE)
    assert _flake8_alone(use, monkeypatch)[1] == [("JXI002", 6)]


def test_a_module_created_in_an_earlier_source_root_shadows_the_one_found(tmp_path):
    """``src/`` is searched before the project root: a ``src/helper.py`` created after the
    run is the ``helper`` that ``late.py`` imports from then on, and a result that used the
    root's ``helper.py`` is stale (the attack of stop 47, s04)."""
    proj = project(tmp_path, {"src/other.py": "X = 1\n", "helper.py": "def make(x):\n    return x\n",
                              "pkg/late.py": "import torch\nfrom helper import make\n\n\n"
                                             "def f(x):\n    return torch.from_dlpack(make(x))\n"})
    assert ("pkg/late.py", 6, "JXI002") not in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
    (proj / "src" / "helper.py").write_text(_MAKES)
    assert ("pkg/late.py", 6, "JXI002") in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
    assert ("pkg/late.py", 6, "JXI002") in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=False), proj)


def test_an_init_made_above_a_linted_package_moves_its_source_root(tmp_path):
    """``toolsx/`` is a source root only because it is the folder above the package of
    ``toolsx/pkg2/use.py``: an ``__init__.py`` made in it makes ``toolsx`` the package, and
    ``pkg2.helper`` is no top-level module any more (the attack of stop 48, s09)."""
    proj = project(tmp_path, {"toolsx/pkg2/__init__.py": "", "toolsx/pkg2/helper.py": _MAKES,
                              "toolsx/pkg2/use.py": "import torch\nfrom pkg2.helper import make\n\n\n"
                                                    "def f(x):\n    return torch.from_dlpack(make(x))\n"})
    use = ("toolsx/pkg2/use.py", 6, "JXI002")
    assert use in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
    (proj / "toolsx" / "__init__.py").write_text("")
    assert use not in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=False), proj)
    assert use not in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)


def test_removing_the_init_that_makes_a_source_root_moves_it_back(tmp_path, monkeypatch):
    """The other way: ``toolsx/pkg2/__init__.py`` is what makes ``toolsx/`` a source root.
    Once it is removed, ``use.py`` is in no package and ``pkg2.helper`` is found nowhere, in
    flake8 on the file and in the CLI alike (the attack of stop 48, s09 rminit: the result
    kept ``helper.py`` alone and stayed)."""
    proj = project(tmp_path, {"toolsx/pkg2/__init__.py": "", "toolsx/pkg2/helper.py": _MAKES,
                              "toolsx/pkg2/use.py": "import torch\nfrom pkg2.helper import make\n\n\n"
                                                    "def f(x):\n    return torch.from_dlpack(make(x))\n"})
    use = proj / "toolsx" / "pkg2" / "use.py"
    assert _flake8_alone(use, monkeypatch)[1] == [("JXI002", 6)]
    (proj / "toolsx" / "pkg2" / "__init__.py").unlink()
    assert _flake8_alone(use, monkeypatch)[1] == []
    assert ("toolsx/pkg2/use.py", 6, "JXI002") not in rows(lint_paths([str(proj)], Config(), jobs=1, use_cache=True), proj)
