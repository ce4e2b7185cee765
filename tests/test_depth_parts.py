"""Issue 12, values with parts: each part of a tuple, list, dict, record or object keeps its
own provenance; an unknown index or key reads the join of all parts; a safe part next to a
multi-device part stays safe."""
from __future__ import annotations

import pytest

from depth_pairs import check_pair

PAIRS = {
    "tuple_elements_by_index": (
        """
        pair = (np.ones(3), jax.device_put(x, s))
        torch.from_dlpack(pair[1])  # expect: JXI002
        torch.from_dlpack(pair[-1])  # expect: JXI002
        """,
        """
        pair = (np.ones(3), jax.device_put(x, s))
        torch.from_dlpack(pair[0])
        torch.from_dlpack(pair[-2])
        """,
    ),
    "list_elements_by_index": (
        """
        xs = [jax.device_put(x, s), np.ones(3)]
        torch.from_dlpack(xs[0])  # expect: JXI002
        """,
        """
        xs = [jax.device_put(x, s), np.ones(3)]
        torch.from_dlpack(xs[1])
        """,
    ),
    "dict_entries_by_constant_key": (
        """
        d = {"w": jax.device_put(x, s), "n": np.ones(3), 0: jnp.ones(2)}
        torch.from_dlpack(d["w"])  # expect: JXI002
        """,
        """
        d = {"w": jax.device_put(x, s), "n": np.ones(3), 0: jnp.ones(2)}
        torch.from_dlpack(d["n"])
        torch.from_dlpack(d[0])
        """,
    ),
    "unknown_key_reads_the_join": (
        """
        d = {"w": jax.device_put(x, s), "n": np.ones(3)}
        torch.from_dlpack(d[name])  # expect: JXI002
        torch.from_dlpack(d["missing"])  # expect: JXI002
        xs = [np.ones(3), jax.device_put(x, s)]
        torch.from_dlpack(xs[i])  # expect: JXI002
        """,
        """
        d = {"w": np.ones(3), "n": np.ones(3)}
        torch.from_dlpack(d[name])
        xs = [np.ones(3), jnp.ones(3)]
        torch.from_dlpack(xs[i])
        """,
    ),
    "record_fields": (
        """
        @dataclasses.dataclass
        class State:
            params: dict
            step: int
        st = State(params=jax.device_put(x, s), step=0)
        torch.from_dlpack(st.params)  # expect: JXI002
        """,
        """
        @dataclasses.dataclass
        class State:
            params: dict
            step: int
        st = State(params=jax.device_put(x, s), step=0)
        torch.tensor(st.step)
        """,
    ),
    "nested_parts": (
        """
        cfg = {"model": {"w": jax.device_put(x, s), "b": np.ones(2)}, "lr": 0.1}
        torch.from_dlpack(cfg["model"]["w"])  # expect: JXI002
        """,
        """
        cfg = {"model": {"w": jax.device_put(x, s), "b": np.ones(2)}, "lr": 0.1}
        torch.from_dlpack(cfg["model"]["b"])
        torch.tensor(cfg["lr"])
        """,
    ),
    "object_attributes": (
        """
        class Box:
            pass
        box = Box()
        box.w = jax.device_put(x, s)
        box.n = 3
        torch.from_dlpack(box.w)  # expect: JXI002
        """,
        """
        class Box:
            pass
        box = Box()
        box.w = jax.device_put(x, s)
        box.n = 3
        torch.tensor(box.n)
        """,
    ),
    "safe_part_of_a_parameter_stays_safe": (
        """
        @dataclasses.dataclass
        class State:
            params: dict
            step: int
        def export(st):
            return torch.from_dlpack(st.params["w"])  # expect: JXI002
        def main():
            export(State(params={"w": jax.device_put(x, s)}, step=0))
        """,
        """
        @dataclasses.dataclass
        class State:
            params: dict
            step: int
        def export(st):
            return torch.tensor(st.step)
        def main():
            export(State(params={"w": jax.device_put(x, s)}, step=0))
        """,
    ),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_parts(name):
    check_pair(*PAIRS[name])


def test_joined_parts_keep_the_multi_device_side():
    from depth_pairs import with_header
    from conftest import codes

    code = with_header("""
        def f(c):
            d = {"w": np.ones(3)}
            if c:
                d = {"w": jax.device_put(x, s), "n": np.ones(2)}
            torch.from_dlpack(d["n"])
            return torch.from_dlpack(d["w"])
        """)
    assert codes(code) == [(16, "JXI002")]
