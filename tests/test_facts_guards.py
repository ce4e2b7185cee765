"""Guards and handlers in their real forms, and getattr with a constant name (issue 12).
Each snippet's `# expect:` markers are exactly its findings; the runtime truth of each form is
fixtures/runtime/guards_handlers_forms.py (8 CPU devices, test_runtime_truth.py)."""
from __future__ import annotations

import textwrap

import pytest

from conftest import codes, lint
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.fix.apply import fix_text
from markers import expected

HEADER = """\
import contextlib
import unittest
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from jax.sharding import NamedSharding, PartitionSpec as P
r = jax.device_put(jnp.arange(8.0), NamedSharding(jax.make_mesh((8,), ("x",)), P()))
"""

CASES = {
    # ---- false guards through the sharding (JXI006) -------------------------------------
    "sharding_is_fully_replicated": """
        if r.sharding.is_fully_replicated:  # expect: JXI006
            torch.from_dlpack(r)  # expect: JXI002
    """,
    "not_sharding_is_fully_addressable": """
        def f():
            if not r.sharding.is_fully_addressable:  # expect: JXI006
                return None
            return np.from_dlpack(r)  # expect: JXI002
    """,
    "assert_sharding_is_fully_replicated": """
        def f():
            assert r.sharding.is_fully_replicated  # expect: JXI006
            return r.unsafe_buffer_pointer()  # expect: JXI003
    """,
    "sharding_property_of_another_array": """
        def f(t):
            if t.sharding.is_fully_replicated:
                return torch.from_dlpack(r)  # expect: JXI002
    """,
    # ---- real guards --------------------------------------------------------------------
    "num_devices_guard": """
        if r.sharding.num_devices == 1:
            torch.from_dlpack(r)
    """,
    "num_devices_not_one_raises": """
        def f():
            if r.sharding.num_devices > 1:
                raise ValueError("gather first")
            return torch.from_dlpack(r)
    """,
    "num_devices_greater_than_one_is_not_a_guard": """
        if r.sharding.num_devices > 1:
            torch.from_dlpack(r)  # expect: JXI002
    """,
    "addressable_shards_guard": """
        if len(r.addressable_shards) == 1:
            np.from_dlpack(r)
    """,
    "global_shards_guard": """
        if 1 == len(r.global_shards):
            np.from_dlpack(r)
    """,
    "addressable_devices_guard": """
        if len(r.sharding.addressable_devices) < 2:
            np.from_dlpack(r)
    """,
    "addressable_shards_else_branch": """
        if len(r.addressable_shards) == 1:
            pass
        else:
            np.from_dlpack(r)  # expect: JXI002
    """,
    "assert_device_count": """
        def f():
            assert len(r.devices()) == 1, "one device"
            return torch.from_dlpack(r)
    """,
    "assert_num_devices": """
        def f():
            assert r.sharding.num_devices == 1
            return torch.from_dlpack(r)
    """,
    "assert_addressable_shards": """
        def f():
            assert len(r.addressable_shards) == 1
            return r.unsafe_buffer_pointer()
    """,
    # ---- contextlib.suppress ---------------------------------------------------------------
    "suppress_catches": """
        with contextlib.suppress(BufferError):
            torch.from_dlpack(r)
    """,
    "suppress_imported_name_and_exception": """
        from contextlib import suppress
        with suppress(Exception):
            r.unsafe_buffer_pointer()
    """,
    "suppress_misses": """
        with contextlib.suppress(ValueError, TypeError):  # expect: JXI007
            torch.from_dlpack(r)
    """,
    "suppress_misses_pointer": """
        with contextlib.suppress(BufferError):  # expect: JXI007
            r.unsafe_buffer_pointer()
    """,
    "suppress_inside_try_that_catches": """
        try:
            with contextlib.suppress(ValueError):
                torch.from_dlpack(r)
        except BufferError:
            pass
    """,
    "suppress_then_after_the_with": """
        def f():
            with contextlib.suppress(BufferError):
                t = torch.from_dlpack(r)
            return torch.from_dlpack(r)  # expect: JXI002
    """,
    # ---- tests that assert the failure -------------------------------------------------------
    "pytest_raises": """
        def test_export_fails():
            with pytest.raises(BufferError):
                torch.from_dlpack(r)
    """,
    "pytest_raises_tuple_and_match": """
        def test_export_fails():
            with pytest.raises((TypeError, BufferError), match="unsharded"):
                np.from_dlpack(r)
    """,
    "pytest_raises_runtime_error_for_pointer": """
        def test_pointer_fails():
            with pytest.raises(RuntimeError):
                r.unsafe_buffer_pointer()
    """,
    "pytest_raises_keyword": """
        def test_export_fails():
            with pytest.raises(expected_exception=BufferError):
                torch.from_dlpack(r)
    """,
    "pytest_raises_wrong_class": """
        def test_export_fails():
            with pytest.raises(ValueError):  # expect: JXI007
                torch.from_dlpack(r)
    """,
    "pytest_raises_other_library_class_is_judged_like_except": """
        from mypkg.errors import ExportError
        def test_export_fails():
            with pytest.raises(ExportError):  # expect: JXI007
                torch.from_dlpack(r)
    """,
    "pytest_raises_class_in_a_parameter_is_not_judged": """
        def check_export_fails(error_class):
            with pytest.raises(error_class):
                torch.from_dlpack(r)
    """,
    "assert_raises": """
        class T(unittest.TestCase):
            def test_export_fails(self):
                with self.assertRaises(BufferError):
                    torch.from_dlpack(r)
                with self.assertRaisesRegex(RuntimeError, "unsharded"):
                    r.unsafe_buffer_pointer()
    """,
    "assert_raises_wrong_class": """
        class T(unittest.TestCase):
            def test_export_fails(self):
                with self.assertRaises(BufferError):  # expect: JXI007
                    r.unsafe_buffer_pointer()
    """,
    "numpy_testing_assert_raises": """
        def test_export_fails():
            with np.testing.assert_raises(BufferError):
                np.from_dlpack(r)
    """,
    "export_after_the_expected_failure": """
        def test_export_fails():
            with pytest.raises(BufferError):
                torch.from_dlpack(r)
            torch.from_dlpack(r)  # expect: JXI002
    """,
    "nested_contexts_outer_catches": """
        def test_export_fails():
            with pytest.raises(BufferError), contextlib.suppress(ValueError):
                torch.from_dlpack(r)
    """,
    "other_context_managers_are_not_handlers": """
        def f(path):
            with open(path) as fh:
                torch.from_dlpack(r)  # expect: JXI002
    """,
    # ---- getattr with a constant name -------------------------------------------------------
    "getattr_module_function": """
        getattr(torch, "from_dlpack")(r)  # expect: JXI002
    """,
    "getattr_with_default_module_function": """
        getattr(np, "from_dlpack", None)(r)  # expect: JXI002
    """,
    "getattr_array_method": """
        getattr(r, "unsafe_buffer_pointer")()  # expect: JXI003
    """,
    "getattr_array_attribute": """
        getattr(r, "__cuda_array_interface__")  # expect: JXI001
    """,
    "getattr_attribute_with_default_is_a_probe": """
        getattr(r, "__cuda_array_interface__", None)
    """,
    "getattr_name_not_constant": """
        def f(name):
            return getattr(torch, name)(r)
    """,
    "getattr_removed_api": """
        import jax.dlpack
        getattr(jax.dlpack, "to_dlpack")(jnp.ones(3))  # expect: JXI005
    """,
    "getattr_of_a_safe_value": """
        getattr(torch, "from_dlpack")(jnp.ones(3))
    """,
}


def _code(name: str) -> str:
    return HEADER + textwrap.dedent(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_guard_and_handler_forms(name):
    code = _code(name)
    assert codes(code) == sorted(expected(code)), codes(code)


def test_jxi007_messages_name_the_context_manager():
    (f,) = lint(_code("pytest_raises_wrong_class"))
    assert f.message.startswith("`pytest.raises(ValueError)` expects ValueError, but torch.from_dlpack() on line 13 "
                                "raises BufferError for `r`")
    assert "the test fails with BufferError; expect BufferError" in f.message
    assert f.extra["sink_line"] == 13 and f.fix is None      # which failure a test expects is the author's
    (f,) = lint(_code("suppress_misses"))
    assert f.message.startswith("`contextlib.suppress(ValueError, TypeError)` suppresses ValueError, TypeError, "
                                "but torch.from_dlpack() on line 12 raises BufferError")
    (f,) = lint(_code("assert_raises_wrong_class"))
    assert "`self.assertRaises(BufferError)` expects BufferError" in f.message and "raises RuntimeError" in f.message


def test_suppress_fix_adds_the_class():
    code = _code("suppress_misses")
    (f,) = lint_source(code, "snippet.py", Config()).findings
    assert f.fix is not None and f.fix.applicability == "safe"
    outcome = fix_text(code, "snippet.py")
    assert "with contextlib.suppress(ValueError, TypeError, BufferError):" in outcome.text
    assert outcome.result.findings == []


def test_jxi006_fix_of_the_sharding_form():
    code = _code("sharding_is_fully_replicated")
    guard = next(f for f in lint(code) if f.code == "JXI006")
    assert guard.fix is not None
    outcome = fix_text(code, "snippet.py")
    assert "if len(r.devices()) == 1:" in outcome.text
    assert outcome.result.findings == []


def test_handled_exports_are_reported_as_handled():
    """A test that asserts the failure is judged by the same verdict as a try: `handled`."""
    result = lint_source(_code("pytest_raises"), "snippet.py", Config())
    assert result.findings == [] and len(result.handled) == 1


def test_one_judgement_function():
    """Every handler kind goes through rules.base.catches (the versions work hooks there)."""
    import jaxinterop_lint.rules.base as base

    seen = []
    original = base.catches

    def spy(names, raised, versions=None):
        seen.append((names, raised))
        return original(names, raised, versions)

    base.catches = spy
    try:
        lint(_code("pytest_raises"))
        lint(_code("suppress_catches"))
        lint(_code("assert_raises"))
    finally:
        base.catches = original
    assert (("BufferError",), "BufferError") in seen and (("RuntimeError",), "RuntimeError") in seen
