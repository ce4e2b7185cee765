"""Rule JXI005: interop APIs that JAX removed."""
from __future__ import annotations

from typing import Optional

from ..analysis.events import RemovedEvent
from ..finding import Finding, Fix
from ..fix import remedies
from .base import Rule, RuleContext


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
        "tensor), `x.device_buffer` / `x.device_buffers`, `jax.device_put_replicated`, "
        "`jax.device_put_sharded` and `jax.sharding.PositionalSharding`.")
    versions = ("to_dlpack: deprecated 0.6.0, deleted 0.8.0; capsules: rejected 0.7.2; device_buffer(s): "
                "removed 0.4.27; device_put_replicated/sharded: raise 0.10.0; PositionalSharding: deleted 0.8.0.")
    INVALID = (
        "import jax.dlpack\nimport torch\nt = torch.from_dlpack(jax.dlpack.to_dlpack(x))\n",
        "import jax.dlpack\nimport torch.utils.dlpack\ny = jax.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))\n",
        "import jax\ndef f(arr: jax.Array):\n    return arr.device_buffer\n",
        "import jax\ndef f(arr):\n    return arr.device_buffers\n",
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
    )

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:
        if not isinstance(event, RemovedEvent):
            return None
        r = event.removed
        if event.kind == "capsule":
            what = f"{event.api.replace('jax.numpy.', 'jnp.').replace('numpy.', 'np.')}() of a DLPack capsule"
        elif event.kind == "attribute" and event.api.startswith("."):
            what = f"`{ctx.text(event.receiver)}{event.api}`"
        elif event.kind == "import":
            what = f"importing {event.api}"
        else:
            what = f"{event.api}" + ("()" if event.kind == "call" else "")
        message = f"{what} is a removed JAX API ({r.gone}); {r.replacement}"
        return self.finding(ctx, event.node, message, event, fix=self.fix(event, ctx))

    def fix(self, event, ctx: RuleContext) -> Optional[Fix]:
        """The current API for ``to_dlpack``, capsules and ``device_buffer(s)`` (safe); None
        for the other removed APIs."""
        return remedies.removed_api(event, ctx, self.fix_title, self.fix_applicability)
