"""Rules JXI006 and JXI007: guards and handlers that do not do what they seem to."""
from __future__ import annotations

from typing import Optional

from ..analysis.events import SinkEvent
from ..finding import Finding, Fix
from ..fix import remedies
from .base import Rule, RuleContext, verdict


class IneffectiveSingleDeviceGuard(Rule):
    code = "JXI006"
    name = "ineffective-single-device-guard"
    summary = "`is_fully_replicated` / `is_fully_addressable` used as a single-device test before an export."
    fix_applicability = "safe"
    fix_title = "Test the device count: len(x.devices()) == 1"
    why = (
        "A fully replicated array on 8 devices holds 8 buffers, and a fully addressable one may "
        "span every local device: neither property says the array lives on one device, so the "
        "export under the test still fails.  `len(x.devices()) == 1` admits exactly the arrays "
        "that can be exported zero-copy.")
    versions = "All JAX versions with jax.Array."
    INVALID = (
        "import torch\ndef f(r):\n    if r.is_fully_replicated:\n        return torch.from_dlpack(r)\n",
        "import torch\ndef f(r):\n    if r.is_fully_addressable:\n        return torch.from_dlpack(r)\n",
        "import cupy as cp\ndef f(r):\n    if not r.is_fully_replicated:\n        return None\n    return cp.asarray(r)\n",
        "def f(r):\n    if r.is_fully_replicated and r.ndim == 1:\n        return r.unsafe_buffer_pointer()\n",
        "import numpy as np\ndef f(r):\n    if r.is_fully_replicated:\n        return np.from_dlpack(r)\n",
        "import torch as T\ndef f(r):\n    if r.is_fully_replicated:\n        t = T.utils.dlpack.from_dlpack(r)\n        return t\n",
    )
    VALID = (
        "import torch\ndef f(r):\n    if len(r.devices()) == 1:\n        return torch.from_dlpack(r)\n",
        "import torch\ndef f(r):\n    if r.is_fully_replicated:\n        return r.addressable_data(0)\n",
        "import torch\nimport numpy as np\ndef f(r):\n    if r.is_fully_replicated:\n        return torch.from_numpy(np.asarray(r))\n",
        "import torch\ndef f(r, t):\n    if r.is_fully_replicated:\n        return torch.from_dlpack(t)\n",
        "import torch\nimport numpy as np\ndef f():\n    r = np.ones(3)\n    if r.is_fully_replicated:\n        return torch.from_dlpack(r)\n",
        "import torch\ndef f(r):\n    ok = r.is_fully_replicated\n    return ok\n",
    )

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:
        if not isinstance(event, SinkEvent) or event.value.false_guard is None or event.via:
            return None
        guard = event.value.false_guard
        subject = ctx.text(event.subject)
        message = (f"`{ctx.text(guard)}` does not make the export by {event.consumer} safe: a replicated "
                   f"array still spans every device; test len({subject}.devices()) == 1 instead")
        return self.finding(ctx, guard, message, event, fix=self.fix(event, ctx))

    def fix(self, event, ctx: RuleContext) -> Optional[Fix]:
        """``x.is_fully_replicated`` -> ``len(x.devices()) == 1`` in the guard (safe)."""
        return remedies.single_device_guard(event, ctx, self.fix_title, self.fix_applicability)


class HandlerMissesInteropError(Rule):
    code = "JXI007"
    name = "handler-misses-interop-error"
    summary = "A try around a multi-device export whose handlers cannot catch what JAX raises."
    fix_applicability = "safe"
    fix_title = "Catch the class JAX raises"
    why = (
        "JAX raises BufferError for DLPack and the buffer protocol and a RuntimeError "
        "(JaxRuntimeError) for pointers.  A fallback under `except ValueError:` or "
        "`except TypeError:` never runs: the error escapes.  `except Exception`, a bare except "
        "and tuples that include the right class do catch it.")
    versions = "jax >= 0.4.27 for BufferError on __dlpack__; JaxRuntimeError since 0.8."
    INVALID = (
        "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "try:\n    t = torch.from_dlpack(y)\nexcept ValueError:\n    t = None\n",
        "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "try:\n    t = torch.from_dlpack(y)\nexcept (TypeError, ValueError):\n    t = None\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "try:\n    p = y.unsafe_buffer_pointer()\nexcept BufferError:\n    p = 0\n",
        "import jax, numpy as np\ny = jax.pmap(f)(x)\n"
        "try:\n    a = np.from_dlpack(y)\nexcept AttributeError:\n    a = None\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "try:\n    m = memoryview(y)\nexcept KeyError:\n    m = None\n",
        "import jax, torch as T\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "try:\n    t = T.as_tensor(y)\nexcept RuntimeError:\n    t = None\n",
    )
    VALID = (
        "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "try:\n    t = torch.from_dlpack(y)\nexcept (ValueError, BufferError):\n    t = None\n",
        "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "try:\n    t = torch.from_dlpack(y)\nexcept Exception:\n    t = None\n",
        "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "try:\n    t = torch.from_dlpack(y)\nexcept:\n    t = None\n",
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "try:\n    p = y.unsafe_buffer_pointer()\nexcept jax.errors.JaxRuntimeError:\n    p = 0\n",
        "import torch\ntry:\n    t = torch.from_dlpack(a)\nexcept ValueError:\n    t = None\n",
        "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\ny = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "try:\n    try:\n        t = torch.from_dlpack(y)\n    except ValueError:\n        t = None\n"
        "except BufferError:\n    t = None\n",
    )

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:
        if not isinstance(event, SinkEvent):
            return None
        code, handler = verdict(event)
        if code != self.code:
            return None
        subject = ctx.text(event.subject)
        sink_line = ctx.line(event.node)
        origin = event.value.multi
        caught = ", ".join(event.tries[-1].handlers[0][1] or ("everything",))
        message = (f"this handler catches {caught}, but {event.consumer} on line {sink_line} raises "
                   f"{event.sink.raises} for `{subject}`, which spans several devices "
                   f"({origin.description}, {ctx.where(origin)}); catch {event.sink.raises} too")
        provenance = ctx.provenance(origin, event.node, f"exported by {event.consumer}")
        return self.finding(ctx, handler, message, event, provenance, fix=self.fix(event, ctx),
                            sink_line=sink_line, raises=event.sink.raises)

    def fix(self, event, ctx: RuleContext) -> Optional[Fix]:
        """Add the class JAX raises to the reported handler (safe)."""
        handler = event.tries[-1].handlers[0][0]
        return remedies.catch_also(handler, event.sink.raises, ctx, self.fix_title, self.fix_applicability)
