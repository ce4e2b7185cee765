"""Issue 12, reading: subscripts, attributes, unpacking (starred too), ``for`` over lists,
tuples and dicts (``.values()``, ``.items()``), ``zip``, ``enumerate``, ``reversed``,
``sorted``, ``list()``, ``tuple()``, ``next(...)``, and generators: what a function yields
(or yields from) is what iterating its result gives."""
from __future__ import annotations

import pytest

from depth_pairs import check_pair

GENERATORS = """
        def shards(n):
            for i in range(n):
                yield jax.device_put(x, s)
        def hosts(n):
            for i in range(n):
                yield np.ones(i)
        def relay(n):
            yield from shards(n)"""

PAIRS = {
    "unpacking_with_a_star": (
        """
        first, *rest = (np.ones(2), jax.device_put(x, s), np.ones(3))
        torch.from_dlpack(rest[0])  # expect: JXI002
        *init, last = [jax.device_put(x, s), np.ones(2)]
        torch.from_dlpack(init[0])  # expect: JXI002
        a, (b, c) = np.ones(1), (jax.device_put(x, s), np.ones(2))
        torch.from_dlpack(b)  # expect: JXI002
        """,
        """
        first, *rest = (np.ones(2), jax.device_put(x, s), np.ones(3))
        torch.from_dlpack(first)
        *init, last = [jax.device_put(x, s), np.ones(2)]
        torch.from_dlpack(last)
        a, (b, c) = np.ones(1), (jax.device_put(x, s), np.ones(2))
        torch.from_dlpack(c)
        """,
    ),
    "for_over_dict_views": (
        """
        d = {"w": jax.device_put(x, s)}
        for v in d.values():
            torch.from_dlpack(v)  # expect: JXI002
        for k, v in d.items():
            torch.from_dlpack(v)  # expect: JXI002
        """,
        """
        d = {"w": jax.device_put(x, s)}
        for k in d:
            torch.tensor(len(k))
        for k, v in d.items():
            torch.tensor(len(k))
        for k in d.keys():
            torch.tensor(len(k))
        """,
    ),
    "iteration_builtins": (
        """
        ys = [np.ones(2), jax.device_put(x, s)]
        for i, y in enumerate(ys):
            torch.from_dlpack(y)  # expect: JXI002
        for y in reversed(ys):
            torch.from_dlpack(y)  # expect: JXI002
        for y in sorted(ys, key=len):
            torch.from_dlpack(y)  # expect: JXI002
        torch.from_dlpack(list(ys)[1])  # expect: JXI002
        torch.from_dlpack(tuple(ys)[1])  # expect: JXI002
        torch.from_dlpack(next(iter(ys)))  # expect: JXI002
        """,
        """
        ys = [np.ones(2), np.ones(3)]
        for i, y in enumerate(ys):
            torch.from_dlpack(y)
            torch.tensor(i)
        for y in reversed(ys):
            torch.from_dlpack(y)
        zs = [np.ones(2), jax.device_put(x, s)]
        torch.from_dlpack(list(zs)[0])
        torch.from_dlpack(tuple(zs)[0])
        """,
    ),
    "zip_keeps_pairs": (
        """
        hosts = [np.ones(2), np.ones(3)]
        devs = [jax.device_put(x, s), jax.device_put(x, s)]
        for h, d in zip(hosts, devs):
            torch.from_dlpack(d)  # expect: JXI002
        """,
        """
        hosts = [np.ones(2), np.ones(3)]
        devs = [jax.device_put(x, s), jax.device_put(x, s)]
        for h, d in zip(hosts, devs):
            torch.from_dlpack(h)
        """,
    ),
    "generators": (
        GENERATORS + """
        for y in shards(2):
            torch.from_dlpack(y)  # expect: JXI002
        torch.from_dlpack(next(shards(1)))  # expect: JXI002
        torch.from_dlpack(next(relay(1)))  # expect: JXI002
        torch.from_dlpack(list(shards(2))[0])  # expect: JXI002
        for h, d in zip(hosts(2), shards(2)):
            torch.from_dlpack(d)  # expect: JXI002
        """,
        GENERATORS + """
        for y in hosts(2):
            torch.from_dlpack(y)
        torch.from_dlpack(next(hosts(1)))
        for h, d in zip(hosts(2), shards(2)):
            torch.from_dlpack(h)
        """,
    ),
    "generator_of_a_parameter": (
        """
        def each(items):
            for it in items:
                yield it
        for y in each([jax.device_put(x, s)]):
            torch.from_dlpack(y)  # expect: JXI002
        """,
        """
        def each(items):
            for it in items:
                yield it
        for y in each([np.ones(2)]):
            torch.from_dlpack(y)
        """,
    ),
    "class_with_a_generator_iter": (
        """
        class Loader:
            def __iter__(self):
                yield jax.device_put(x, s)
        for batch in Loader():
            torch.from_dlpack(batch)  # expect: JXI002
        """,
        """
        class Loader:
            def __iter__(self):
                yield np.ones(3)
        for batch in Loader():
            torch.from_dlpack(batch)
        """,
    ),
    "collected_then_read": (
        GENERATORS + """
        outs = []
        for y in shards(3):
            outs.append(y * 2)
        torch.from_dlpack(outs[-1])  # expect: JXI002
        """,
        GENERATORS + """
        outs = []
        for y in shards(3):
            outs.append(np.asarray(y))
        torch.from_dlpack(outs[-1])
        host = [np.asarray(o) for o in shards(3)]
        torch.from_dlpack(host[0])
        """,
    ),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_reading(name):
    check_pair(*PAIRS[name])
