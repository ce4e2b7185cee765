"""What the README and the rule pages say each interop call raises, checked by running the
call: real jax, numpy and torch on 8 forced CPU devices.

Each claim names the page (``README`` or a rule code), the words of the page that make it,
the call, and the exception class the words name.  The test fails when the words are gone
from the page (the claim must then be updated here) or when the call raises something else.
"""
from __future__ import annotations

import json
import textwrap

import pytest

from conftest import ROOT, run_python
from jaxinterop_lint.docs import render
from jaxinterop_lint.rules import RULES_BY_CODE

pytestmark = pytest.mark.slow

PROBE = textwrap.dedent("""\
    import json, sys
    import jax, jax.numpy as jnp, numpy as np, torch
    from jax.sharding import NamedSharding, PartitionSpec as P
    mesh = jax.make_mesh((8,), ("x",))
    y = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("x")))
    r = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P()))      # fully replicated
    step = jax.jit(lambda a: a * 2, donate_argnums=0)
    d = jax.device_put(jnp.arange(16.0), jax.devices()[0])
    step(d)                                                              # d is donated
    CALLS = {
        "torch.from_dlpack(y)": lambda: torch.from_dlpack(y),
        "torch.as_tensor(y)": lambda: torch.as_tensor(y),
        "torch.tensor(y)": lambda: torch.tensor(y),
        "np.from_dlpack(y)": lambda: np.from_dlpack(y),
        "jax.dlpack.from_dlpack(y)": lambda: jax.dlpack.from_dlpack(y),
        "y.__dlpack_device__()": lambda: y.__dlpack_device__(),
        "y.__dlpack__()": lambda: y.__dlpack__(),
        "y.unsafe_buffer_pointer()": lambda: y.unsafe_buffer_pointer(),
        "memoryview(y)": lambda: memoryview(y),
        "torch.asarray(y)": lambda: torch.asarray(y),
        "torch.frombuffer(y)": lambda: torch.frombuffer(y, dtype=torch.float32),
        "y.__cuda_array_interface__": lambda: y.__cuda_array_interface__,
        "torch.from_dlpack(r)": lambda: torch.from_dlpack(r),
        "jax.dlpack.to_dlpack(y)": lambda: jax.dlpack.to_dlpack(y),
        "y.device_buffer": lambda: y.device_buffer,
        "np.from_dlpack(d)": lambda: np.from_dlpack(d),
        "d.unsafe_buffer_pointer()": lambda: d.unsafe_buffer_pointer(),
        "torch.from_dlpack(d)": lambda: torch.from_dlpack(d),
        "from jax.sharding import PositionalSharding": lambda: exec("from jax.sharding import PositionalSharding"),
    }
    out = {"replicated_buffers": len(r.addressable_shards), "replicated": bool(r.is_fully_replicated)}
    for name, call in CALLS.items():
        try:
            call()
            out[name] = None
        except BaseException as exc:
            out[name] = {"type": type(exc).__name__, "mro": [c.__name__ for c in type(exc).__mro__],
                         "message": str(exc)}
    json.dump(out, sys.stdout)
    """)

# (page, words on the page, call, exception class the words name)
CLAIMS = [
    ("README", "`torch.from_dlpack(y)` raises\n`BufferError`", "torch.from_dlpack(y)", "BufferError"),
    ("README", "`y.unsafe_buffer_pointer()` raises", "y.unsafe_buffer_pointer()", "RuntimeError"),
    ("JXI002", "`__dlpack_device__` raises `BufferError: __dlpack__ only supported for unsharded arrays.`",
     "y.__dlpack_device__()", "BufferError"),
    ("JXI002", "`__dlpack__` raises `BufferError: to_dlpack can only pack a dlpack tensor from an array on a "
               "singular device", "y.__dlpack__()", "BufferError"),
    *[("JXI002", "torch.from_dlpack, torch.as_tensor, torch.tensor, np.from_dlpack, cupy.from_dlpack, "
                 "warp.from_jax and jax.dlpack.from_dlpack all go through them", call, "BufferError")
      for call in ("torch.from_dlpack(y)", "torch.as_tensor(y)", "torch.tensor(y)", "np.from_dlpack(y)",
                   "jax.dlpack.from_dlpack(y)")],
    ("JXI003", "`unsafe_buffer_pointer()` of a multi-device array raises `JaxRuntimeError: INVALID_ARGUMENT: "
               "UnsafeBufferPointer() is supported only for unsharded arrays.`", "y.unsafe_buffer_pointer()",
     "JaxRuntimeError"),
    ("JXI003", "the Python buffer protocol (`memoryview(y)`) raises `BufferError`", "memoryview(y)", "BufferError"),
    ("JXI003", "`torch.asarray(y)` and `torch.frombuffer(y)` turn into `RuntimeError: could not retrieve buffer "
               "from object`", "torch.asarray(y)", "RuntimeError"),
    ("JXI003", "`torch.asarray(y)` and `torch.frombuffer(y)` turn into `RuntimeError: could not retrieve buffer "
               "from object`", "torch.frombuffer(y)", "RuntimeError"),
    ("JXI001", "Its `__cuda_array_interface__` raises AttributeError", "y.__cuda_array_interface__",
     "AttributeError"),
    ("JXI005", "`jax.dlpack.to_dlpack` (pass the array itself to the consumer)", "jax.dlpack.to_dlpack(y)",
     "AttributeError"),
    ("JXI005", "`x.device_buffer` / `x.device_buffers`", "y.device_buffer", "AttributeError"),
    ("JXI005", "`jax.sharding.PositionalSharding`", "from jax.sharding import PositionalSharding", "ImportError"),
    ("JXI006", "neither property says the array lives on one device, so the export under the test still fails",
     "torch.from_dlpack(r)", "BufferError"),
    ("JXI007", "JAX raises BufferError for DLPack", "torch.from_dlpack(y)", "BufferError"),
    ("JXI007", "a RuntimeError (JaxRuntimeError) for pointers", "y.unsafe_buffer_pointer()", "RuntimeError"),
    ("JXI008", "`np.from_dlpack` raises `RuntimeError: Array has been deleted`", "np.from_dlpack(d)", "RuntimeError"),
    ("JXI008", "`unsafe_buffer_pointer` a JaxRuntimeError", "d.unsafe_buffer_pointer()", "JaxRuntimeError"),
    ("JXI008", "`torch.from_dlpack` a TypeError", "torch.from_dlpack(d)", "TypeError"),
]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    script = tmp_path_factory.mktemp("claims") / "probe.py"
    script.write_text(PROBE)
    r = run_python(script)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def page(name: str) -> str:
    if name == "README":
        return (ROOT / "README.md").read_text(encoding="utf-8")
    return render(RULES_BY_CODE[name])


@pytest.mark.parametrize("where,words,call,raised", CLAIMS, ids=[f"{c[0]}:{c[2]}" for c in CLAIMS])
def test_documented_exception_is_what_the_call_raises(outcomes, where, words, call, raised):
    assert " ".join(words.split()) in " ".join(page(where).split()), f"{where} no longer says: {words}"
    got = outcomes[call]
    assert got is not None, f"{call} did not raise"
    assert raised in got["mro"], f"{where} says {call} raises {raised}; it raises {got['type']}: {got['message']}"
    if "`" + raised + ": " in words:          # the page quotes the message too
        quoted = words.split("`" + raised + ": ", 1)[1].split("`", 1)[0].rstrip(".")
        assert got["message"].startswith(quoted.rstrip(", .")), (got["message"], quoted)


def test_replicated_arrays_hold_one_buffer_per_device(outcomes):
    """JXI006's page: "A fully replicated array on 8 devices holds 8 buffers"."""
    assert "A fully replicated array on 8 devices holds 8 buffers" in page("JXI006")
    assert outcomes["replicated"] and outcomes["replicated_buffers"] == 8
