"""Rules JXI006 and JXI007: guards and handlers that do not do what they seem to."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..analysis.events import SinkEvent
from ..finding import Finding, Fix
from . import remedies
from .edits import replace
from .base import Rule, RuleContext, missing_names, verdict


class IneffectiveSingleDeviceGuard(Rule):
    code = "JXI006"
    name = "ineffective-single-device-guard"
    summary = "`is_fully_replicated` / `is_fully_addressable` used as a single-device test before an export."
    fix_applicability = "safe"
    fix_title = "Test the device count: len(x.devices()) == 1"
    why = (
        "A fully replicated array on 8 devices holds 8 buffers, and a fully addressable one may "
        "span every local device: neither property says the array lives on one device, so the "
        "export under the test still fails; the same properties of its sharding "
        "(`x.sharding.is_fully_replicated`) are the same test.  `len(x.devices()) == 1` (or "
        "`x.sharding.num_devices == 1`, `len(x.addressable_shards) == 1`, in an `if` or an "
        "`assert`) admits exactly the arrays that can be exported zero-copy.")
    versions = "All JAX versions with jax.Array."
    INVALID = (
        "import torch\ndef f(r):\n    if r.is_fully_replicated:\n        return torch.from_dlpack(r)\n",
        "import torch\ndef f(r):\n    if r.is_fully_addressable:\n        return torch.from_dlpack(r)\n",
        "import cupy as cp\ndef f(r):\n    if not r.is_fully_replicated:\n        return None\n    return cp.asarray(r)\n",
        "def f(r):\n    if r.is_fully_replicated and r.ndim == 1:\n        return r.unsafe_buffer_pointer()\n",
        "import numpy as np\ndef f(r):\n    if r.is_fully_replicated:\n        return np.from_dlpack(r)\n",
        "import torch as T\ndef f(r):\n    if r.is_fully_replicated:\n        t = T.utils.dlpack.from_dlpack(r)\n        return t\n",
        "import torch\ndef f(r):\n    if r.sharding.is_fully_replicated:\n        return torch.from_dlpack(r)\n",
        "import numpy as np\ndef f(r):\n    assert r.sharding.is_fully_addressable\n    return np.from_dlpack(r)\n",
    )
    VALID = (
        "import torch\ndef f(r):\n    if len(r.devices()) == 1:\n        return torch.from_dlpack(r)\n",
        "import torch\ndef f(r):\n    if r.is_fully_replicated:\n        return r.addressable_data(0)\n",
        "import torch\nimport numpy as np\ndef f(r):\n    if r.is_fully_replicated:\n        return torch.from_numpy(np.asarray(r))\n",
        "import torch\ndef f(r, t):\n    if r.is_fully_replicated:\n        return torch.from_dlpack(t)\n",
        "import torch\nimport numpy as np\ndef f():\n    r = np.ones(3)\n    if r.is_fully_replicated:\n        return torch.from_dlpack(r)\n",
        "import torch\ndef f(r):\n    ok = r.is_fully_replicated\n    return ok\n",
        "import torch\ndef f(r):\n    if r.sharding.num_devices == 1:\n        return torch.from_dlpack(r)\n",
        "import numpy as np\ndef f(r):\n    assert len(r.addressable_shards) == 1\n    return np.from_dlpack(r)\n",
    )

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:
        if not isinstance(event, SinkEvent) or event.value.false_guard is None or event.via:
            return None
        guard = event.value.false_guard
        subject = ctx.text(event.subject)
        message = (f"`{ctx.text(guard)}` does not make the export by {event.consumer} safe: a replicated "
                   f"array still spans every device; test len({subject}.devices()) == 1 instead")
        return self.finding(ctx, guard, message, event, fix=self.deferred_fix(event, ctx))

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
        "and tuples that include the right class do catch it.  The same holds for handlers that "
        "are not `try`: `contextlib.suppress(...)`, and tests that assert the failure "
        "(`pytest.raises(...)`, `self.assertRaises(...)`, `assertRaisesRegex(...)`): with the class "
        "JAX raises they are no finding; with another class the finding is at the context "
        "manager (the test fails with JAX's error instead of the one it expects).")
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
        "import contextlib, jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "y = jax.device_put(x, NamedSharding(mesh, P()))\nwith contextlib.suppress(ValueError):\n    t = torch.from_dlpack(y)\n",
        "import jax, pytest\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "def test_pointer_fails():\n    y = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "    with pytest.raises(BufferError):\n        y.unsafe_buffer_pointer()\n",
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
        "import contextlib, jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "y = jax.device_put(x, NamedSharding(mesh, P()))\nwith contextlib.suppress(BufferError):\n    t = torch.from_dlpack(y)\n",
        "import jax, pytest, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "def test_export_fails():\n    y = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "    with pytest.raises(BufferError, match='unsharded'):\n        torch.from_dlpack(y)\n",
        "import jax, unittest\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "class T(unittest.TestCase):\n    def test_pointer_fails(self):\n"
        "        y = jax.device_put(x, NamedSharding(mesh, P()))\n"
        "        with self.assertRaises(RuntimeError):\n            y.unsafe_buffer_pointer()\n",
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
        innermost = event.tries[-1]
        caught = ", ".join(innermost.handlers[0][1] or ("everything",))
        raises = event.sink.raises
        spans = f"which spans several devices ({origin.description}, {ctx.where(origin)})"
        what = f"{event.consumer} on line {sink_line} raises {raises} for `{subject}`, {spans}"
        if innermost.kind == "suppress":
            message = f"`{ctx.text(handler)}` suppresses {caught}, but {what}; suppress {raises} too"
        elif innermost.kind == "expects":
            message = (f"`{ctx.text(handler)}` expects {caught}, but {what}: the test fails with "
                       f"{raises}; expect {raises}")
        else:
            message = f"this handler catches {caught}, but {what}; catch {raises} too"
        missing = missing_names(innermost.handlers[0][1], raises, event.versions)
        if missing:  # a version-dependent name (knowledge/versions.py NAMES)
            message += f" ({missing})"
        provenance = ctx.provenance(origin, event.node, f"exported by {event.consumer}")
        return self.finding(ctx, handler, message, event, provenance, fix=self.deferred_fix(event, ctx),
                            sink_line=sink_line, raises=raises)

    def fix(self, event, ctx: RuleContext) -> Optional[Fix]:
        """Add the class JAX raises to the reported handler, or to the classes of
        ``contextlib.suppress(...)`` (safe).  A test's expected class is not changed: which
        failure a test asserts is the author's decision."""
        innermost = event.tries[-1]
        handler = innermost.handlers[0][0]
        if innermost.kind == "suppress":
            return _suppress_also(handler, event.sink.raises, ctx, self.fix_title, self.fix_applicability)
        if innermost.kind != "except":
            return None
        return remedies.catch_also(handler, event.sink.raises, ctx, self.fix_title, self.fix_applicability)


def _suppress_also(call, raised, ctx, title: str, applicability: str) -> Optional[Fix]:
    """``contextlib.suppress(ValueError)`` -> ``contextlib.suppress(ValueError, BufferError)``."""
    if not isinstance(call, cst.Call) or not raised or not call.args or any(a.star for a in call.args):
        return None
    args = list(call.args)
    last = args[-1]
    if not isinstance(last.comma, cst.Comma):
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(cst.Arg(cst.Name(raised)))
    edit = replace(ctx, call, call.with_changes(args=args))
    return Fix(title, applicability, (edit,), ()) if edit is not None else None
