"""Rule JXI005: interop APIs that JAX removed, judged against the project's JAX range.

A use is a finding when it fails in some release that can reach it (the project's range,
narrowed by version guards: :mod:`jaxinterop_lint.analysis.versions`) and no enclosing
``try`` catches what it raises there (a fallback).  The facts per release are
:data:`jaxinterop_lint.knowledge.versions.REMOVED`.
"""
from __future__ import annotations

from typing import Optional

from ..analysis.events import RemovedEvent
from ..finding import Finding, Fix
from . import remedies
from ..knowledge import versions as VT
from .base import Rule, RuleContext, catches


class RemovedJaxInteropApi(Rule):
    code = "JXI005"
    name = "removed-jax-interop-api"
    summary = "An interop API that JAX removed."
    fix_applicability = "safe"
    fix_title = "Use the current API"
    why = (
        "These APIs are gone and fail with AttributeError, ImportError or TypeError on current "
        "JAX: `jax.dlpack.to_dlpack` (pass the array itself to the consumer), DLPack capsules "
        "passed to `jax.dlpack.from_dlpack` / `jnp.from_dlpack` / `np.from_dlpack` (pass the "
        "tensor), `x.device_buffer` / `x.device_buffers` (also called as `x.device_buffers()`, "
        "which never worked: it was a property), `jax.device_put_replicated`, "
        "`jax.device_put_sharded` and `jax.sharding.PositionalSharding`.  A `hasattr(x, "
        "\"device_buffer\")` probe on a JAX array is always False once the attribute is gone: the "
        "code behind it never runs.  A use is reported when it fails somewhere in the project's "
        "JAX range (`target-jax-version`, else the project's declared `jax` requirement, else "
        "the newest JAX); code behind a version guard (`jax.__version_info__ < (0, 7)`, "
        "`hasattr(jax.dlpack, \"to_dlpack\")`, ...) or inside a `try` whose handler catches the "
        "failure is judged for the releases that can run it.")
    versions = ("to_dlpack: deprecated 0.6.0, raises 0.7.0, deleted 0.8.0; capsules: deprecated 0.4.32, "
                "rejected 0.7.2; device_buffer(s): deprecated 0.4.22, removed 0.4.27; "
                "device_put_replicated/sharded: deprecated 0.8.1, raise 0.10.0; PositionalSharding: "
                "deprecated 0.6.0, raises 0.7.0, deleted 0.7.1.")
    INVALID = (
        "import jax.dlpack\nimport torch\nt = torch.from_dlpack(jax.dlpack.to_dlpack(x))\n",
        "import jax.dlpack\nimport torch.utils.dlpack\ny = jax.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))\n",
        "import jax\ndef f(arr: jax.Array):\n    return arr.device_buffer\n",
        "import jax\ndef f(arr):\n    return arr.device_buffers\n",
        "import jax\ndef f(arr: jax.Array):\n    return arr.device_buffers()\n",
        "import jax\ndef f(arr: jax.Array):\n    if hasattr(arr, 'device_buffers'):\n        return 1\n",
        "import jax as J\ny = J.device_put_replicated(x, J.devices())\n",
        "import jax\nfrom jax.sharding import PositionalSharding\n",
    )
    VALID = (
        "import jax.dlpack\nimport torch\nt = torch.from_dlpack(x)\n",   # the page's "use instead": the fix of INVALID[0]
        "import jax.dlpack\nimport torch\ny = jax.dlpack.from_dlpack(t)\n",
        "import jax\ndef f(arr):\n    return arr.addressable_data(0)\n",
        "import numpy as np\na = np.ones(3)\nb = a.device_buffer if hasattr(a, 'x') else None\n",
        "import torch\nt = torch.ones(3)\nb = t.device_buffer\n",
        "import cupy as cp\na = cp.ones(3)\ncap = a.toDlpack()\nb = cp.from_dlpack(a)\n",
        "import jax\nfrom jax.sharding import NamedSharding\n",
        "import jax\nimport torch\nif jax.__version_info__ < (0, 7):\n"
        "    t = torch.utils.dlpack.from_dlpack(jax.dlpack.to_dlpack(x))\nelse:\n    t = torch.from_dlpack(x)\n",
        "import jax\ntry:\n    from jax.dlpack import to_dlpack\nexcept ImportError:\n    to_dlpack = None\n",
    )

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:
        if not isinstance(event, RemovedEvent):
            return None
        kb = ctx.ma.kb
        project = getattr(kb, "jax_versions", VT.DEFAULT)
        reach = event.versions if event.versions is not None else project
        history = _history(event)
        allowed = _allowed(kb)
        if event.kind == "probe":
            gone = history.first_failing() if history is not None else None
            since = f" since JAX {VT.text(gone)}" if gone is not None else ""
            message = (f"hasattr({ctx.text(event.receiver)}, {event.api[1:]!r}) is always False{since} "
                       f"({event.api[1:]} was removed; {allowed}): the code it guards never runs; "
                       f"{_on(event.removed.replacement, event, ctx)}")
            return self.finding(ctx, event.node, message, event)
        # x.device_buffers() never worked: the attribute was a list (a property) before it went
        failing = history.failing(reach) if history is not None and event.kind != "method-call" else reach
        raised = _raised(event, history)
        escaping = [v for v in sorted(failing) if not _caught(event.tries, raised, v)]
        if not escaping:
            return None
        what = _what(event, ctx)
        if event.kind == "method-call" and history is not None:
            gone = VT.text(history.first_failing())
            told = (f"{event.api[1:]} was a property, removed in JAX {gone}: calling it raises AttributeError, "
                    f"and TypeError before")
        else:
            told = history.history() if history is not None else event.removed.gone
        replacement = history.replacement if history is not None else event.removed.replacement
        message = f"{what} is a removed JAX API ({told}; {allowed}); {_on(replacement, event, ctx)}"
        return self.finding(ctx, event.node, message, event, fix=self.deferred_fix(event, ctx))

    def fix(self, event, ctx: RuleContext) -> Optional[Fix]:
        """The current API for ``to_dlpack``, capsules and ``device_buffer(s)`` (safe); None
        for the other removed APIs (rules.md), whose message gives the drop-in replacement."""
        return remedies.removed_api(event, ctx, self.fix_title, self.fix_applicability)


def _history(event) -> Optional[VT.RemovedApi]:
    if event.kind == "capsule":
        return VT.removed("capsule", event.api)
    return VT.removed(event.api)


def _raised(event, history) -> str:
    """The class a failing use raises: ImportError for ``from m import name``."""
    if event.kind == "import":
        return "ImportError"
    return history.raises if history is not None else "AttributeError"


def _caught(tries, raised: str, version) -> bool:
    """Whether an enclosing ``try`` catches ``raised`` in ``version``."""
    return any(catches(names, raised, (version,)) for t in tries for i, (_, names) in enumerate(t.handlers)
               if i not in getattr(t, "reraising", ()))


def _on(replacement: str, event, ctx) -> str:
    """The replacement written for the receiver of an array attribute (``x.`` -> ``arr.``)."""
    if event.receiver is None or not event.api.startswith("."):
        return replacement
    receiver = ctx.text(event.receiver)
    if not receiver.isidentifier() and not all(p.isidentifier() for p in receiver.split(".")):
        receiver = f"({receiver})"
    return replacement.replace(" x.", f" {receiver}.")


def _allowed(kb) -> str:
    text = getattr(kb, "jax_range", "")
    if text:
        return f"your project allows {text}"
    return f"checked against jax {VT.text(VT.NEWEST)}, the newest known"


def _what(event, ctx) -> str:
    if event.kind == "capsule":
        return f"{event.api.replace('jax.numpy.', 'jnp.').replace('numpy.', 'np.')}() of a DLPack capsule"
    if event.kind in ("attribute", "method-call") and event.api.startswith("."):
        return f"`{ctx.text(event.receiver)}{event.api}" + ("()`" if event.kind == "method-call" else "`")
    if event.kind == "import":
        return f"importing {event.api}"
    return f"{event.api}" + ("()" if event.kind == "call" else "")
