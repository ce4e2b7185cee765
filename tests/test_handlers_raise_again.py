"""A handler that catches what an export raises and raises again (``raise``, ``raise Other
from e``, ``sys.exit(...)``, every arm of an ``if``) handles nothing: the export is reported
at the sink under its protocol's rule, in the function itself and through a calling context,
unless an enclosing ``try`` handles what leaves the handler (hunt44 p31, p32).
fixtures/runtime/reraising_handlers.py runs such cases on 8 CPU devices."""
from __future__ import annotations

import pytest

from conftest import codes

HEAD = """
import sys
import jax, torch
from jax.sharding import NamedSharding, PartitionSpec as P

def export(x):
    try:
        return torch.from_dlpack(x)
    except BufferError as exc:
{handler}

y = jax.device_put(jax.numpy.ones(8), NamedSharding(m, P("x")))
export(y)
"""

RAISING = ["        raise", "        raise RuntimeError('no') from exc", "        print(exc)\n        raise exc",
           "        sys.exit(1)", "        if y.ndim:\n            raise\n        else:\n            raise exc"]
HANDLING = ["        return None", "        if y.ndim:\n            raise\n        return None",
            "        for _ in range(2):\n            raise\n        return None"]


@pytest.mark.parametrize("handler", RAISING)
def test_a_handler_raising_again_leaves_the_export_reported(handler):
    assert codes(HEAD.format(handler=handler)) == [(8, "JXI002")]


@pytest.mark.parametrize("handler", HANDLING)
def test_a_handler_that_may_return_handles_it(handler):
    assert codes(HEAD.format(handler=handler)) == []


def test_an_enclosing_try_handles_what_the_handler_raises_again():
    code = """
    import jax, torch
    from jax.sharding import NamedSharding, PartitionSpec as P

    y = jax.device_put(jax.numpy.ones(8), NamedSharding(m, P("x")))
    try:
        try:
            t = torch.from_dlpack(y)
        except BufferError:
            raise
    except BufferError:
        t = None
    """
    assert codes(code) == []


def test_a_handler_of_another_class_is_still_jxi007():
    code = """
    import jax, torch
    from jax.sharding import NamedSharding, PartitionSpec as P

    y = jax.device_put(jax.numpy.ones(8), NamedSharding(m, P("x")))
    try:
        t = torch.from_dlpack(y)
    except ValueError:
        raise
    """
    assert codes(code) == [(8, "JXI007")]
