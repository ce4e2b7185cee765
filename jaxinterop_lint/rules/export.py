"""Rules JXI001-JXI003: a multi-device array reaching a zero-copy consumer."""
from __future__ import annotations

from typing import Optional

from ..analysis.events import SinkEvent
from ..finding import Finding, Fix
from . import remedies
from .base import Rule, RuleContext, call_site, describe_raise, verdict


def export_message(event: SinkEvent, ctx: RuleContext) -> str:
    """The one-line message of an export of a multi-device value (rules.md example).  A
    value with no expression of this module to name (an array another module's function
    makes and hands to a callback given here: ``fit([log_pointer])``) is "the array it is
    given"."""
    subject = ctx.text(event.subject)
    named = event.subject is not None
    first, again = (f"`{subject}`", f"`{subject}`") if named else ("the array it is given", "that array")
    origin = event.value.multi
    source = f"{origin.description}, {ctx.where(origin)}"
    if event.context:
        head = (f"{event.consumer} cannot export {first}: it spans several devices "
                f"{calling_context(event, ctx)} ({source})")
    elif event.via and event.placed:
        return (f"{event.consumer} cannot take {first}: {event.via}, and {again} is a sharding over "
                f"several devices ({source}); the export {describe_raise(event.sink)}; pass one device, or "
                f"export the result's addressable_shards")
    elif event.via:
        head = (f"{event.consumer} cannot take {first}: {event.via}, and {again} spans "
                f"several devices ({source})")
    else:
        head = f"{event.consumer} cannot export {first}: it spans several devices ({source})"
    if not named:
        return (f"{head} and {describe_raise(event.sink)}; export its addressable_shards, or "
                f"jax.device_put it to one device first")
    owner = subject if _simple(event.subject) else f"({subject})"
    return (f"{head} and {describe_raise(event.sink)}; use {owner}.addressable_shards or "
            f"jax.device_put({subject}, device)")


def calling_context(event: SinkEvent, ctx: RuleContext) -> str:
    """``when f() is called from main() at line 88 with `state``` for the outermost call of
    an export's calling context (the call where the multi-device value enters)."""
    frame = event.context[0]
    owner = frame.owner
    if frame.caller == "<pytest>":      # a test given a fixture (analysis/fixtures.py)
        return f"when pytest runs {frame.callee}() with the fixture `{frame.param}`"
    other = owner is not None and owner is not ctx.ma   # a caller in another module
    if frame.argument is not None:
        argument = " ".join(owner.module.code_for_node(frame.argument).split()) if other else ctx.text(frame.argument)
    else:
        argument = frame.param
    where = f"from {frame.caller}() " if frame.caller and frame.caller != "<module>" else ""
    return f"when {frame.callee}() is called {where}at {call_site(frame, ctx)} with `{argument}`"


def _simple(node) -> bool:
    """Whether ``node`` can take ``.attr`` without parentheses."""
    import libcst as cst

    return isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Dict, cst.Tuple))


class ExportRule(Rule):
    """Shared check of JXI001-JXI003: the event's verdict is this rule's code."""

    fix_applicability = "unsafe"
    fix_title = "Put the value on one device first: jax.device_put(x, jax.local_devices()[0])"

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:
        if not isinstance(event, SinkEvent):
            return None
        code, node = verdict(event)
        if code != self.code:
            return None
        provenance = ctx.provenance(event.value.multi, event.node, f"exported by {event.consumer}")
        fix = None if event.placed else self.deferred_fix(event, ctx)   # `s` is a sharding: nothing to wrap
        return self.finding(ctx, node, export_message(event, ctx), event, provenance, fix=fix)

    def fix(self, event, ctx: RuleContext) -> Optional[Fix]:
        """Wrap the exported expression in ``jax.device_put(x, jax.local_devices()[0])``
        (unsafe: it gathers the whole array onto one device)."""
        if self.fix_applicability is None:
            return None
        return remedies.device_put(event, ctx, self.fix_title, self.fix_applicability)


class MultiDeviceCudaArrayInterface(ExportRule):
    code = "JXI001"
    name = "multi-device-cuda-array-interface"
    summary = "A multi-device jax.Array reaches the CUDA Array Interface."
    why = (
        "A jax.Array that spans more than one device (the output of pjit, shard_map, jit with "
        "shardings, pmap, device_put with a sharding, and anything computed from them, "
        "replicated arrays included) has no single buffer.  Its `__cuda_array_interface__` "
        "raises AttributeError, so `hasattr` is False: CuPy's `asarray`/`array` then silently "
        "gather the whole array through the host onto one GPU, numba's `as_cuda_array` raises "
        "TypeError and a `@cuda.jit` kernel launch raises BufferError.  The bug hides on one-GPU "
        "machines and shows on the multi-GPU job.")
    versions = "All JAX versions with jax.Array (>= 0.4.1); messages as of jax 0.8-0.12."
    INVALID = (
        "import cupy as cp\nimport jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "mesh = jax.make_mesh((8,), ('x',))\ny = jax.device_put(x, NamedSharding(mesh, P('x')))\n"
        "c = cp.asarray(y)\n",
        "import jax\nfrom numba import cuda\nf = jax.pmap(lambda a: a * 2)\n"
        "d = cuda.as_cuda_array(f(x))\n",
        "import jax\nimport numba.cuda\nfrom jax.experimental.pjit import pjit\n"
        "step = pjit(lambda a: a + 1)\nout = step(x)\ndev = numba.cuda.to_device(out)\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "y = jax.device_put(x, NamedSharding(mesh, P()))\niface = y.__cuda_array_interface__\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nimport cupy\nfrom functools import partial\n\n"
        "@partial(jax.shard_map, mesh=mesh, in_specs=P('i'), out_specs=P())\ndef f(b):\n    return b\n\n"
        "c = cupy.ascontiguousarray(f(x).T)\n",
        "import jax\nfrom numba import cuda\n\n@cuda.jit\ndef k(a):\n    pass\n\n"
        "y = jax.make_array_from_callback(shape, sharding, cb)\nk[1, 32](y)\n",
    )
    VALID = (
        "import cupy as cp\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nimport jax\ny = jax.device_put(x, NamedSharding(mesh, P('x')))\n"
        "c = cp.asarray(y.addressable_data(0))\n",
        "import cupy as cp\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nimport jax\ny = jax.device_put(x, NamedSharding(mesh, P('x')))\n"
        "parts = [cp.asarray(s.data) for s in y.addressable_shards]\n",
        "import cupy as cp\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nimport jax\ny = jax.device_put(x, NamedSharding(mesh, P('x')))\n"
        "host = cp.asarray(jax.device_get(y))\n",
        "import cupy as cp\na = cp.arange(10)\nb = cp.asarray(a)\n",
        "import cupy as cp\nimport warp as wp\na = wp.zeros(8, device='cuda')\nb = cp.asarray(a)\n"
        "iface = a.__cuda_array_interface__\n",
        "import jax\nfrom numba import cuda\ny = jax.device_put(x, jax.devices()[0])\n"
        "d = cuda.as_cuda_array(y)\n",
        "import numpy as np\nimport cupy as cp\ny = np.ones(3)\niface = y.__cuda_array_interface__\n"
        "c = cp.asarray(y)\n",
    )


class MultiDeviceDlpackExport(ExportRule):
    code = "JXI002"
    name = "multi-device-dlpack-export"
    summary = "A multi-device jax.Array reaches a DLPack consumer."
    why = (
        "DLPack describes one buffer on one device.  For a jax.Array on more than one device "
        "(replicated included) `__dlpack_device__` raises `BufferError: __dlpack__ only supported "
        "for unsharded arrays.` and `__dlpack__` raises `BufferError: to_dlpack can only pack a "
        "dlpack tensor from an array on a singular device, ...`.  torch.from_dlpack, "
        "torch.as_tensor, torch.tensor, np.from_dlpack, cupy.from_dlpack, warp.from_jax and "
        "jax.dlpack.from_dlpack all go through them.")
    versions = "Messages of jax >= 0.4.27 (before it, `__dlpack__` raised the `__dlpack_device__` message)."
    INVALID = (
        "import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "y = jax.device_put(x, NamedSharding(mesh, P('data')))\nt = torch.from_dlpack(y)\n",
        "import jax as J\nimport torch.utils.dlpack\nout = J.pmap(f)(x)\n"
        "t = torch.utils.dlpack.from_dlpack(out[0])\n",
        "import jax\nimport numpy as np\nfrom jax.experimental import pjit as m\n"
        "step = m.pjit(f)\ntotal = step(x).sum()\narr = np.from_dlpack(total)\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nimport torch\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "ts = jax.tree.map(torch.from_dlpack, {'a': y})\n",
        "import jax\nimport warp as wp\ny = jax.lax.with_sharding_constraint(x, s)\nw = wp.from_jax(y)\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\ncap = y.__dlpack__()\n",
    )
    VALID = (
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nimport torch\ny = jax.device_put(x, NamedSharding(mesh, P('data')))\n"
        "t = torch.from_dlpack(jax.device_put(y, jax.local_devices()[0]))\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nimport torch\nimport numpy as np\n"
        "y = jax.device_put(x, NamedSharding(mesh, P('data')))\nt = torch.from_numpy(np.asarray(y))\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nimport torch\ny = jax.device_put(x, NamedSharding(mesh, P('data')))\n"
        "if len(y.devices()) == 1:\n    t = torch.from_dlpack(y)\n",
        "import torch\nimport numpy as np\na = np.ones(3)\nt = torch.from_dlpack(a)\n",
        "import torch\nimport warp as wp\na = wp.zeros(8)\nt = torch.from_dlpack(a)\nw = wp.from_dlpack(t)\n",
        "import jax\nimport torch\nf = jax.jit(lambda a: a * 2)\nt = torch.from_dlpack(f(jax.numpy.ones(3)))\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nimport torch\ny = jax.device_put(x, NamedSharding(mesh, P('data')))\n"
        "ts = [torch.from_dlpack(s.data) for s in y.addressable_shards]\n",
    )


class MultiDeviceRawBuffer(ExportRule):
    code = "JXI003"
    name = "multi-device-raw-buffer"
    summary = "A multi-device jax.Array reaches a raw buffer pointer or the buffer protocol."
    fix_applicability = None
    fix_title = ""
    why = (
        "`unsafe_buffer_pointer()` of a multi-device array raises `JaxRuntimeError: "
        "INVALID_ARGUMENT: UnsafeBufferPointer() is supported only for unsharded arrays.`; the "
        "Python buffer protocol (`memoryview(y)`) raises `BufferError`, which `torch.asarray(y)` "
        "and `torch.frombuffer(y)` turn into `RuntimeError: could not retrieve buffer from "
        "object`: such an array has one buffer per device.")
    versions = "JaxRuntimeError since jax 0.8 (XlaRuntimeError before); both are RuntimeError."
    INVALID = (
        "import jax\nfrom jax.experimental.pjit import pjit\nstep = pjit(f)\nout = step(x)\n"
        "p = out.unsafe_buffer_pointer()\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\nm = memoryview(y)\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nimport torch\ny = jax.device_put(x, NamedSharding(mesh, P()))\nt = torch.asarray(y)\n",
        "import jax\nimport torch as T\ny = jax.make_array_from_process_local_data(s, data)\n"
        "t = T.frombuffer(y, dtype=T.float32)\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\nz = (y * 2).reshape(-1)\n"
        "p = z.unsafe_buffer_pointer()\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nf = jax.jit(g, out_shardings=NamedSharding(mesh, P('x')))\n"
        "p = f(x).unsafe_buffer_pointer()\n",
    )
    VALID = (
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "ptrs = [s.data.unsafe_buffer_pointer() for s in y.addressable_shards]\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "p = y.addressable_data(0).unsafe_buffer_pointer()\n",
        "import numpy as np\na = np.ones(3)\nm = memoryview(a)\n",
        "import torch\nt = torch.ones(3)\nu = torch.asarray(t)\n",
        "import jax\ny = jax.device_put(x, jax.local_devices()[0])\np = y.unsafe_buffer_pointer()\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "if jax.device_count() == 1:\n    p = y.unsafe_buffer_pointer()\n",
    )
