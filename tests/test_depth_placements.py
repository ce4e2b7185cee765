"""Issue 12, placements and guards through functions and variables: a sharding passed as a
parameter or kept as a class attribute places like the inline one; a device-count test
stored in a variable or returned by a helper guards like the inline test."""
from __future__ import annotations

import pytest

from conftest import codes, lint
from depth_pairs import check_pair, with_header

HELPERS = """
        def is_single(a):
            return len(a.devices()) == 1
        def count(a):
            return len(a.devices())
"""

PAIRS = {
    "sharding_passed_as_a_parameter": (
        """
        def place(a, where):
            return jax.device_put(a, where)
        torch.from_dlpack(place(x, s))  # expect: JXI002
        torch.from_dlpack(place(x, where=NamedSharding(mesh, P())))  # expect: JXI002
        """,
        """
        def place(a, where):
            return jax.device_put(a, where)
        torch.from_dlpack(place(x, jax.devices()[0]))
        torch.from_dlpack(place(x, unknown))
        """,
    ),
    "sharding_as_a_class_attribute": (
        """
        class Sharder:
            rows = NamedSharding(mesh, P("x"))
            def put(self, a):
                return jax.device_put(a, self.rows)
        torch.from_dlpack(Sharder().put(x))  # expect: JXI002
        """,
        """
        class Sharder:
            one = jax.devices()[0]
            def put(self, a):
                return jax.device_put(a, self.one)
        torch.from_dlpack(Sharder().put(x))
        """,
    ),
    "sharding_stored_by_init": (
        """
        class Sharder:
            def __init__(self, where):
                self.where = where
            def put(self, a):
                return jax.device_put(a, self.where)
        torch.from_dlpack(Sharder(s).put(x))  # expect: JXI002
        """,
        """
        class Sharder:
            def __init__(self, where):
                self.where = where
            def put(self, a):
                return jax.device_put(a, self.where)
        torch.from_dlpack(Sharder(jax.devices()[0]).put(x))
        """,
    ),
    "device_count_in_a_variable": (
        """
        def f(a):
            y = jax.device_put(a, s)
            n = len(y.devices())
            if n > 1:
                return torch.from_dlpack(y)  # expect: JXI002
            return None
        """,
        """
        def f(a):
            y = jax.device_put(a, s)
            n = len(y.devices())
            if n == 1:
                return torch.from_dlpack(y)
            return None
        """,
    ),
    "test_in_a_variable": (
        """
        def f(a):
            y = jax.device_put(a, s)
            single = len(y.devices()) == 1
            if not single:
                return torch.from_dlpack(y)  # expect: JXI002
            return None
        """,
        """
        def f(a):
            y = jax.device_put(a, s)
            single = len(y.devices()) == 1
            if single:
                return torch.from_dlpack(y)
            assert single
            return torch.from_dlpack(y)
        """,
    ),
    "stale_stored_test": (
        """
        def f(a):
            y = jnp.ones(3)
            single = len(y.devices()) == 1
            y = jax.device_put(a, s)
            if single:
                return torch.from_dlpack(y)  # expect: JXI002
            return None
        """,
        """
        def f(a):
            y = jax.device_put(a, s)
            single = len(y.devices()) == 1
            z = 2
            if single:
                return torch.from_dlpack(y)
            return None
        """,
    ),
    "test_returned_by_a_helper": (
        HELPERS + """
        def f(a):
            y = jax.device_put(a, s)
            if not is_single(y):
                torch.from_dlpack(y)  # expect: JXI002
            if count(y) != 1:
                torch.from_dlpack(y)  # expect: JXI002
        """,
        HELPERS + """
        def f(a):
            y = jax.device_put(a, s)
            if is_single(y):
                torch.from_dlpack(y)
            if count(y) == 1:
                torch.from_dlpack(y)
            if not is_single(y):
                raise ValueError("shard it first")
            torch.from_dlpack(y)
        """,
    ),
    "false_guard_in_a_variable": (
        """
        def f(a):
            y = jax.device_put(a, s)
            replicated = y.is_fully_replicated  # expect: JXI006
            if replicated:
                return torch.from_dlpack(y)  # expect: JXI002
            return None
        """,
        """
        def f(a):
            y = jax.device_put(a, s)
            replicated = y.is_fully_replicated
            if replicated:
                return torch.from_dlpack(y.addressable_data(0))
            return None
        """,
    ),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_placements_and_guards(name):
    check_pair(*PAIRS[name])


def test_placement_message_names_the_call():
    code = with_header("""
        def place(a, where):
            return jax.device_put(a, where)
        t = torch.from_dlpack(place(x, s))
        """)
    (f,) = lint(code)
    assert "jax.device_put with NamedSharding, line 12" in f.message
    assert [st.line for st in f.provenance] == [12, 13, 13]


def test_stored_false_guard_fix_edits_the_stored_test():
    code = with_header("""
        def f(a):
            y = jax.device_put(a, s)
            replicated = y.is_fully_replicated
            if replicated:
                return torch.from_dlpack(y)
        """)
    (guard,) = [f for f in lint(code) if f.code == "JXI006"]
    assert guard.line == 13 and guard.fix is not None
    assert "len(y.devices()) == 1" in str(guard.fix.to_dict())
    assert (13, "JXI006") in codes(code)
