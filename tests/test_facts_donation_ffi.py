"""Donation precisely and every FFI copy (issue 12).  Each snippet's `# expect:` markers are
exactly its findings; the runtime truth is fixtures/runtime/donation_and_ffi_copies.py (8 CPU
devices, test_runtime_truth.py)."""
from __future__ import annotations

import textwrap

import pytest

from conftest import codes, lint
from jaxinterop_lint.knowledge import apis
from markers import expected

DONATION = """\
import jax
import jax.numpy as jnp
import numpy as np
import torch
step = jax.jit(lambda a: a * 2, donate_argnums=0)
"""

DONATION_CASES = {
    "alias_is_deleted_too": """
        def f():
            state = jnp.arange(4.0)
            prev = state
            state = step(state)
            return np.from_dlpack(prev)  # expect: JXI008
    """,
    "alias_made_the_other_way": """
        def f(x):
            state = jnp.asarray(x)
            kept = state
            out = step(kept)
            return torch.from_dlpack(state)  # expect: JXI008
    """,
    "alias_chain": """
        def f():
            a = jnp.arange(4.0)
            b = a
            c = b
            a = step(a)
            return c.unsafe_buffer_pointer()  # expect: JXI008
    """,
    "two_targets": """
        def f():
            a = jnp.arange(4.0)
            b = c = a
            a = step(a)
            t = np.from_dlpack(b)  # expect: JXI008
            return t, np.from_dlpack(c)  # expect: JXI008
    """,
    "alias_rebound_before": """
        def f():
            state = jnp.arange(4.0)
            prev = state
            prev = jnp.ones(4)
            state = step(state)
            return np.from_dlpack(prev)
    """,
    "source_rebound_before": """
        def f():
            state = jnp.arange(4.0)
            prev = state
            state = jnp.ones(4)
            state = step(state)
            return np.from_dlpack(prev)
    """,
    "alias_of_an_attribute": """
        class Trainer:
            def run(self):
                old = self.params
                self.params = step(self.params)
                return torch.from_dlpack(old)  # expect: JXI008
    """,
    "alias_in_a_loop": """
        def f(state):
            for _ in range(3):
                prev = state
                state = step(state)
                np.from_dlpack(prev)  # expect: JXI008
            return state
    """,
    "numpy_argument_is_not_donated": """
        def f():
            host = np.arange(4.0)
            out = step(host)
            return np.from_dlpack(host), torch.from_dlpack(host)
    """,
    "numpy_argument_alias_is_not_donated": """
        def f():
            host = np.arange(4.0)
            same = host
            out = step(host)
            return np.from_dlpack(same)
    """,
    "device_copy_of_numpy_is_donated": """
        def f():
            host = np.arange(4.0)
            dev = jnp.asarray(host)
            out = step(dev)
            return np.from_dlpack(host), np.from_dlpack(dev)  # expect: JXI008
    """,
    "result_of_the_call_is_fine": """
        def f():
            state = jnp.arange(4.0)
            prev = state
            state = step(prev)
            return np.from_dlpack(state)
    """,
}

FFI = """\
import copy
import pickle
import numpy as np
import torch
from jax.experimental.buffer_callback import buffer_callback
"""

FFI_CASES = {
    "np_copy": "np.copy(x)  # expect: JXI004",
    "np_copy_order": "np.copy(x, order='K')  # expect: JXI004",
    "np_array_positional_dtype": "np.array(x, np.float32)  # expect: JXI004",
    "np_array_copy_none": "np.array(x, copy=None)",
    "np_asarray_positional_dtype_none": "np.asarray(x, None)",
    "np_array_dtype_none_still_copies": "np.array(x, dtype=None)  # expect: JXI004",
    "np_asarray_dtype_none": "np.asarray(x, dtype=None)",
    "np_asanyarray": "np.asanyarray(x)",
    "np_asanyarray_copy": "np.asanyarray(x, copy=True)  # expect: JXI004",
    "np_ascontiguousarray": "np.ascontiguousarray(x)",
    "np_ascontiguousarray_dtype": "np.ascontiguousarray(x, dtype=np.float64)  # expect: JXI004",
    "np_asfortranarray_dtype": "np.asfortranarray(x, np.float64)  # expect: JXI004",
    "np_require": "np.require(x, requirements=['O'])",
    "np_require_dtype": "np.require(x, dtype=np.float32)  # expect: JXI004",
    "np_ma_array_copy": "np.ma.array(x, copy=True)  # expect: JXI004",
    "np_ma_array": "np.ma.array(x)",
    "deepcopy": "copy.deepcopy(x)  # expect: JXI004",
    "copy_copy": "copy.copy(x)  # expect: JXI004",
    "pickle": "pickle.dumps(x)  # expect: JXI004",
    "bytes": "bytes(x)  # expect: JXI004",
    "method_copy": "x.copy()  # expect: JXI004",
    "method_astype": "x.astype(np.float64)  # expect: JXI004",
    "array_method_copy": "x.__array__(copy=True)  # expect: JXI004",
    "array_method_dtype_keyword": "x.__array__(dtype=np.float32)  # expect: JXI004",
    "array_method_plain": "x.__array__()",
    "dlpack_copy": "x.__dlpack__(copy=True)  # expect: JXI004",
    "dlpack_plain": "x.__dlpack__()",
    "torch_copies_work": "torch.tensor(x), torch.asarray(x, copy=True)",
    "reads_work": "np.stack([x]), np.sum(x), np.from_dlpack(x).copy()",
    "view_then_copy": "np.asarray(x).copy()",
}


def _donation(name):
    return DONATION + textwrap.dedent(DONATION_CASES[name])


def _ffi(name):
    return FFI + f"def cb(ctx, out, x):\n    y = {FFI_CASES[name]}\nf = buffer_callback(cb, None)\n"


@pytest.mark.parametrize("name", sorted(DONATION_CASES))
def test_donation(name):
    code = _donation(name)
    assert codes(code) == sorted(expected(code)), codes(code)


@pytest.mark.parametrize("name", sorted(FFI_CASES))
def test_ffi_copies(name):
    code = _ffi(name)
    assert codes(code) == sorted(expected(code)), codes(code)


@pytest.mark.parametrize("name, raised", [
    ("np_copy", "ValueError: Buffer.__array__ with copy=True is not supported."),
    ("np_array_positional_dtype", "ValueError: dtype parameter is not supported by Buffer.__array__."),
    ("deepcopy", "TypeError: cannot pickle 'Buffer' object."),
    ("bytes", "TypeError: cannot convert 'Buffer' object to bytes."),
    ("method_copy", "AttributeError: 'Buffer' object has no attribute 'copy'."),
    ("array_method_copy", "ValueError: Buffer.__array__ with copy=True is not supported."),
    ("dlpack_copy", "ValueError: Buffer.__dlpack__ with copy=True is not supported."),
])
def test_ffi_messages_say_what_is_raised(name, raised):
    (f,) = lint(_ffi(name))
    assert f"raises {raised}" in f.message, f.message


def test_ffi_fix_for_the_functions_it_knows():
    """np.asanyarray(buf, dtype=d) is fixed like np.asarray; np.copy and the pickling copies
    have no mechanical fix (no fix is better than a wrong one)."""
    code = FFI + "def cb(ctx, out, x):\n    y = np.asanyarray(x, dtype=np.float64)\nf = buffer_callback(cb, None)\n"
    (f,) = lint(code)
    assert f.fix is not None and "np.from_dlpack(x).astype(np.float64)" in f.fix.edits[0].text
    assert lint(_ffi("deepcopy"))[0].fix is None


def test_every_copying_function_of_the_table_is_a_finding():
    """Each row of the FFI tables is exercised above (a new row needs a case)."""
    written = " ".join(FFI_CASES.values())
    for qn in list(apis.FFI_ARRAY_CALLS) + list(apis.FFI_OTHER_COPIES):
        short = qn.replace("numpy.", "np.").replace("builtins.", "")
        assert short + "(" in written, qn
    for method in ("copy", "astype"):
        assert f"x.{method}(" in written
