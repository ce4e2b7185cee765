"""Rules JXI008 (export after donation) and JXI009 (library mode: unchecked parameters)."""
from __future__ import annotations

from typing import Optional

from ..analysis.events import SinkEvent
from ..finding import Finding
from .base import Rule, RuleContext, describe_raise, verdict


class ExportAfterDonation(Rule):
    code = "JXI008"
    name = "export-after-donation"
    summary = "An interop export of a value whose buffer was donated to an earlier jitted call."
    why = (
        "`donate_argnums` / `donate_argnames` let XLA reuse the argument's buffer for the output: "
        "after the call the argument is deleted, and exporting it fails (jax 0.10.2 on CPU: "
        "`np.from_dlpack` raises `RuntimeError: Array has been deleted`, `unsafe_buffer_pointer` "
        "a JaxRuntimeError, `torch.from_dlpack` a TypeError).  Every name bound to the same "
        "array is deleted with it (`prev = state; state = step(state)` deletes `prev`).  A NumPy "
        "array passed there is not: JAX donates the device copy it makes of it.  Export the "
        "value returned by the call, or stop donating.")
    versions = "All JAX versions (donation exists since jax 0.2)."
    INVALID = (
        "import jax, torch\nstep = jax.jit(f, donate_argnums=0)\nnew = step(x)\nt = torch.from_dlpack(x)\n",
        "import jax, torch\nfrom functools import partial\n@partial(jax.jit, donate_argnums=(0,))\n"
        "def step(s):\n    return s + 1\ndef run(x):\n    y = step(x)\n    return torch.from_dlpack(x)\n",
        "import jax, torch\nstep = jax.jit(f, donate_argnames=('state',))\nout = step(state=s)\n"
        "t = torch.from_dlpack(s)\n",
        "import jax, numpy as np\nfrom jax.experimental.pjit import pjit\nstep = pjit(f, donate_argnums=0)\n"
        "out = step(x)\nc = np.from_dlpack(x)\n",
        "import jax, torch\nstep = jax.jit(f, donate_argnums=0)\nfor i in range(3):\n"
        "    out = step(x)\n    t = torch.from_dlpack(x)\n",
        "import jax\nstep = jax.jit(f, donate_argnums=1)\nout = step(a, b)\np = b.unsafe_buffer_pointer()\n",
        "import jax, numpy as np\nstep = jax.jit(f, donate_argnums=0)\ndef train(state):\n"
        "    prev = state\n    state = step(state)\n    return np.from_dlpack(prev)\n",
    )
    VALID = (
        "import jax, torch\nstep = jax.jit(f, donate_argnums=0)\nx = step(x)\nt = torch.from_dlpack(x)\n",
        "import jax, torch\nstep = jax.jit(f, donate_argnums=0)\nnew = step(x)\nt = torch.from_dlpack(new)\n",
        "import jax, torch\nstep = jax.jit(f)\nnew = step(x)\nt = torch.from_dlpack(x)\n",
        "import jax, torch\nstep = jax.jit(f, donate_argnums=1)\nnew = step(x, y)\nt = torch.from_dlpack(x)\n",
        "import jax, torch\nstep = jax.jit(f, donate_argnums=0)\nt = torch.from_dlpack(x)\nnew = step(x)\n",
        "import jax, torch\nstep = jax.jit(f, donate_argnums=0)\nfor i in range(3):\n"
        "    x = step(x)\n    t = torch.from_dlpack(x)\n",
        "import jax, numpy as np\nstep = jax.jit(f, donate_argnums=0)\nhost = np.arange(4.0)\n"
        "out = step(host)\nv = np.from_dlpack(host)\n",
    )

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:
        if not isinstance(event, SinkEvent) or verdict(event)[0] != self.code:
            return None
        subject = ctx.text(event.subject)
        donor = event.value.donated
        message = (f"{event.consumer} exports `{subject}` after it was donated to "
                   f"`{ctx.text(donor.func)}()` on line {ctx.line(donor)}: its buffer is deleted and the export "
                   f"fails; export the call's result instead")
        return self.finding(ctx, event.node, message, event)


class UncheckedArrayParameterExport(Rule):
    code = "JXI009"
    name = "unchecked-array-parameter-export"
    summary = "Library mode: a jax.Array parameter exported with no device-count check."
    default = False
    why = (
        "A library function that takes a `jax.Array` cannot know whether its callers pass a "
        "sharded array.  Exporting the parameter zero-copy without checking "
        "`len(x.devices()) == 1` fails for every caller that does.  Opt-in: select JXI009 for "
        "libraries.")
    versions = "All JAX versions with jax.Array."
    INVALID = (
        "import jax, torch\ndef to_torch(x: jax.Array):\n    return torch.from_dlpack(x)\n",
        "import jax.numpy as jnp, torch\ndef to_torch(x: jnp.ndarray):\n    return torch.from_dlpack(x)\n",
        "import jax, cupy\nfrom jax.typing import ArrayLike\ndef f(x: ArrayLike):\n    return cupy.asarray(x)\n",
        "import jax\ndef ptr(x: jax.Array) -> int:\n    return x.unsafe_buffer_pointer()\n",
        "import jax as J, numpy as np\ndef f(x: J.Array):\n    y = x * 2\n    return np.from_dlpack(y)\n",
        "import jax, torch\ndef f(x: jax.Array):\n    if x.is_fully_replicated:\n        return torch.from_dlpack(x)\n",
        "import jax, torch\nfrom typing import Optional\ndef f(x: Optional[jax.Array]):\n    return torch.from_dlpack(x)\n",
        "import jax, torch\ndef f(x: 'jax.Array | None'):\n    return torch.from_dlpack(x)\n",
        "import typing, jax, torch\ndef f(x: typing.Union[None, jax.Array]):\n    return torch.from_dlpack(x)\n",
        "import jax, torch\ndef f(x: jax.Array | None):\n    return torch.from_dlpack(x)\n",
        "import jax, torch\nfrom typing import Annotated\ndef f(x: Annotated[jax.Array, 'batch']):\n"
        "    return torch.from_dlpack(x)\n",
    )
    VALID = (
        "import jax, torch\ndef to_torch(x: jax.Array):\n    if len(x.devices()) != 1:\n"
        "        raise ValueError('shard it first')\n    return torch.from_dlpack(x)\n",
        "import jax, torch\ndef to_torch(x: jax.Array):\n    return torch.from_dlpack(x.addressable_data(0))\n",
        "import torch\ndef to_torch(x):\n    return torch.from_dlpack(x)\n",
        "import jax, torch\ndef to_torch(x: torch.Tensor):\n    return torch.from_dlpack(x)\n",
        "import jax, torch\ndef to_torch(x: jax.Array):\n    if len(x.devices()) == 1:\n        return torch.from_dlpack(x)\n",
        "import jax, torch, numpy as np\ndef to_torch(x: jax.Array):\n    return torch.from_numpy(np.asarray(x))\n",
        "import jax, torch\nfrom typing import Optional\ndef f(x: Optional[torch.Tensor]):\n    return torch.from_dlpack(x)\n",
        "import jax, torch\ndef f(x: 'not an expression ('):\n    return torch.from_dlpack(x)\n",
        "import jax, torch\nfrom typing import Annotated\ndef f(x: Annotated[torch.Tensor, jax.Array]):\n"
        "    return torch.from_dlpack(x)\n",
    )

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:
        if not isinstance(event, SinkEvent) or event.via:
            return None
        v = event.value
        if not v.param_array or v.multi is not None or v.donated is not None or event.single_device_process:
            return None
        message = (f"{event.consumer} exports the parameter `{v.param_array}` (a jax.Array) with no device-count "
                   f"check; a caller's multi-device array {describe_raise(event.sink)} there; test "
                   f"len({v.param_array}.devices()) == 1 first")
        return self.finding(ctx, event.node, message, event)
