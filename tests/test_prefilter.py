"""The plan's words are generated from the tables and reach every table entry (issue 16): a
consumer, a JAX word, a word that alone makes a finding, whatever table it is in, including
a table added later."""
from __future__ import annotations

import pytest

from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.knowledge import apis
from jaxinterop_lint.pipeline import words as prefilter
from jaxinterop_lint.pipeline.analyse import PARSES
from jaxinterop_lint.pipeline.plan import Words, facts_of

PF = prefilter.DEFAULT
W = Words()


def _snippet_for(qn: str) -> str:
    root, _, rest = qn.partition(".")
    if root == "builtins":
        return f"y = {rest}(x)\n"
    return f"import {root}\ny = {qn}(x)\n"


@pytest.mark.parametrize("qn", sorted(apis.CALL_SINKS))
def test_every_call_sink_is_a_consumer_word(qn):
    assert PF.wants(_snippet_for(qn))


@pytest.mark.parametrize("name", sorted(apis.METHOD_SINKS) + sorted(apis.ATTRIBUTE_SINKS))
def test_every_method_and_attribute_sink_is_a_consumer_word(name):
    assert PF.wants(f"y = x.{name}\n")


def test_kernel_launch_is_a_consumer_word():
    assert PF.wants("from numba import cuda\n@cuda.jit\ndef k(a):\n    pass\n")


def _origin_tables():
    return prefilter.origin_tables()


def _entries():
    out = []
    for name, table in sorted(_origin_tables().items()):
        for q in sorted(prefilter._names(table)):
            if q.rsplit(".", 1)[-1] and q.rsplit(".", 1)[0] not in table:
                out.append((name, q))
    assert len(out) > 25
    return out


@pytest.mark.parametrize("table,qn", _entries())
def test_every_entry_of_every_origin_table_is_a_jax_word(table, qn):
    last = qn.rsplit(".", 1)[-1]
    root = qn.partition(".")[0] if "." in qn else "jax"
    role = prefilter.bare_roles().get(qn) if "." not in qn else None
    # a bare word in its role: a keyword argument, or a method
    use = {"keyword": f"jax.thing.f(x, {last}=s)", "method": f"x.{last}(s)"}.get(role, f"{root}.thing.{last}(x)")
    text = f"import jax\nimport {root}\ny = {use}\n"
    assert facts_of(text, "", W)["origin"], (table, qn)


@pytest.mark.parametrize("text", [
    "import jax\nfor device in jax.devices():\n    print(device.id)\n",
    "import jax\ndef f(x):\n    device = x.device\n    return device == 1\n",
    "import jax\nto_device = None\nin_shardings = 3\n",
])
def test_a_bare_jax_word_outside_its_role_is_no_jax_word(text):
    """``device``, ``in_shardings``, ``to_device`` are JAX words only as a keyword argument
    or a method: a loop variable or an attribute read names no placement."""
    assert not facts_of(text, "", W)["origin"]


@pytest.mark.parametrize("text", [
    "import jax.numpy as jnp\ny = jnp.asarray(x,\n    device=s)\n",
    "import jax\nf = jax.jit(g, in_shardings=s)\n",
    "import jax\ny = x.to_device(s)\n",
    "import jax\nf = jax.jit(g,\n             donate_argnums=(0,))\n",
])
def test_a_bare_jax_word_in_its_role_is_a_jax_word(text):
    assert facts_of(text, "", W)["origin"]


@pytest.mark.parametrize("qn", sorted(apis.REMOVED_CALLS) + sorted(apis.BUFFER_CALLBACK))
def test_removed_apis_and_ffi_callbacks_alone_can_make_a_finding(qn):
    assert facts_of(_snippet_for(qn), "", W)["alone"]


@pytest.mark.parametrize("name", sorted(apis.REMOVED_ATTRIBUTES))
def test_removed_attributes_alone_can_make_a_finding(name):
    assert facts_of(f"import jax\ny = x.{name}\n", "", W)["alone"] == ["JXI005"]


def test_every_table_says_whether_it_is_where_multi_device_values_start():
    """A table is an origin (its names are JAX words) or not; one in neither list is found."""
    assert prefilter.unclassified() == []
    assert "SOURCE_WRAPPERS" in prefilter.origin_tables() and "SANITIZERS" not in prefilter.origin_tables()


def test_a_table_added_later_must_be_classified(monkeypatch):
    """Other helpers add tables (mesh contexts, compiled calls ...): a new table is reported
    until its author says what it is; an origin table's names are JAX words at once."""
    monkeypatch.setattr(apis, "NEW_THING_FOR_TEST", frozenset({"jax.sharding.use_mesh_for_test"}), raising=False)
    assert prefilter.unclassified() == ["NEW_THING_FOR_TEST"]
    monkeypatch.setattr(apis, "ORIGIN_TABLES", apis.ORIGIN_TABLES + ("NEW_THING_FOR_TEST",))
    assert prefilter.unclassified() == [] and (None, "use_mesh_for_test") in prefilter.jax_words().pairs
    monkeypatch.undo()
    assert (None, "use_mesh_for_test") not in prefilter.jax_words().pairs


def test_general_words_of_other_tables_are_not_jax_words():
    """Consumers, guards, device-array methods and FFI tables say what a value becomes, not
    where a multi-device one starts: a JAX file using only them is no origin."""
    pairs = prefilter.jax_words().pairs
    for word in ("from_dlpack", "reshape", "devices", "assertRaises", "tolist", "jit", "default"):
        assert all(last != word for _, last in pairs), word


def test_consumer_words_alone_do_not_make_a_file_parsed():
    """A file of PyTorch code that names no JAX word is never parsed (issue 16)."""
    PARSES.clear()
    r = lint_source("import torch\nimport numpy as np\nt = torch.tensor(np.ones(3))\nu = torch.as_tensor(t)\n",
                    "/nowhere/torch_only.py")
    assert not r.analysed and r.findings == [] and not PARSES


def test_unrelated_files_are_skipped():
    assert not PF.wants("import jax.numpy as jnp\ny = jnp.asarray(x)\nz = np.array(y)\n")
    assert not PF.wants("def f():\n    return 1\n")


def test_config_sinks_extend_the_consumer_words():
    pf = prefilter.build(["mylib.bridge.export_tensor"])
    assert pf.wants("import mylib\nmylib.bridge.export_tensor(y)\n")
    assert not PF.wants("import mylib\nmylib.bridge.export_tensor(y)\n")


def test_config_sources_are_jax_words_where_their_root_is_imported():
    w = Words(extra_sources=("mylib.shard_batch",))
    assert facts_of("import mylib, torch\nt = torch.from_dlpack(mylib.shard_batch(x))\n", "", w)["origin"]
    assert not facts_of("import torch\nt = torch.from_dlpack(shard_batch(x))\n", "", w)["origin"]


def test_a_file_with_no_consumer_gives_no_finding_and_is_not_analysed():
    r = lint_source("import jax\ny = jax.device_put(x, s)\n", "a.py")
    assert r.findings == [] and not r.analysed


def test_jxi009_needs_an_annotation_and_is_planned_only_when_selected():
    code = "import jax, torch\ndef f(x: jax.Array):\n    return torch.from_dlpack(x)\n"
    assert not lint_source(code, "lib.py", Config()).analysed
    r = lint_source(code, "lib.py", Config(extend_select=("JXI009",)))
    assert r.analysed and [f.code for f in r.findings] == ["JXI009"]


def test_a_removed_array_attribute_is_a_finding_without_a_jax_import():
    """``device_buffer`` is a name only JAX arrays ever had: a helper that probes for it in a
    module importing no JAX (code that takes arrays of any library) is analysed, and the dead
    probe reported; ``to_dlpack`` (also torch's) still needs a JAX import."""
    PARSES.clear()
    probe = ("import numpy as np\n\ndef to_numpy(value):\n    if hasattr(value, 'device_buffer'):\n"
             "        return np.asarray(value)\n    return value\n")
    r = lint_source(probe, "/nowhere/loggers.py")
    assert [(f.code, f.line) for f in r.findings] == [("JXI005", 4)]
    PARSES.clear()
    r = lint_source("import torch\nfrom torch.utils import dlpack\ncap = dlpack.to_dlpack(torch.ones(3))\n",
                    "/nowhere/torch_only.py")
    assert not r.analysed and r.findings == [] and not PARSES
