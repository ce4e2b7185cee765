"""The text prefilter is generated from the tables and reaches every table entry."""
from __future__ import annotations

import pytest

from conftest import lint
from jaxinterop_lint import prefilter
from jaxinterop_lint.knowledge import apis

PF = prefilter.DEFAULT


def _snippet_for(qn: str) -> str:
    root, _, rest = qn.partition(".")
    if root == "builtins":
        return f"y = {rest}(x)\n"
    return f"import {root}\ny = {qn}(x)\n"


@pytest.mark.parametrize("qn", sorted(apis.CALL_SINKS) + sorted(apis.REMOVED_CALLS) +
                         sorted(apis.CAPSULE_CONSUMERS) + sorted(apis.BUFFER_CALLBACK))
def test_every_call_entry_passes_the_prefilter(qn):
    assert PF.wants(_snippet_for(qn))


@pytest.mark.parametrize("name", sorted(apis.METHOD_SINKS) + sorted(apis.ATTRIBUTE_SINKS) +
                         sorted(apis.REMOVED_ATTRIBUTES))
def test_every_method_and_attribute_entry_passes_the_prefilter(name):
    assert PF.wants(f"y = x.{name}\n")


def test_kernel_launch_passes_the_prefilter():
    assert PF.wants("from numba import cuda\n@cuda.jit\ndef k(a):\n    pass\n")


def test_unrelated_files_are_skipped():
    assert not PF.wants("import jax.numpy as jnp\ny = jnp.asarray(x)\nz = np.array(y)\n")
    assert not PF.wants("def f():\n    return 1\n")


def test_config_sinks_extend_the_prefilter():
    pf = prefilter.build(["mylib.bridge.export_tensor"])
    assert pf.wants("import mylib\nmylib.bridge.export_tensor(y)\n")
    assert not PF.wants("import mylib\nmylib.bridge.export_tensor(y)\n")


def test_prefiltered_file_gives_no_finding_and_is_not_analysed():
    from jaxinterop_lint import lint_source

    r = lint_source("import jax\ny = jax.device_put(x, s)\n", "a.py")
    assert r.findings == [] and not r.analysed
