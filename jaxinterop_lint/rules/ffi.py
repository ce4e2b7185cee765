"""Rule JXI004: a copying export of an FFI buffer inside a buffer_callback."""
from __future__ import annotations

from typing import Optional

from ..analysis.events import FfiCopyEvent
from ..finding import Finding, Fix
from . import remedies
from ..knowledge.apis import FFI_COPY_FAILURES
from .base import Rule, RuleContext



class FfiBufferCopyExport(Rule):
    code = "JXI004"
    name = "ffi-buffer-copy-export"
    summary = "A copying export of an FFI Buffer inside a jax buffer_callback."
    fix_applicability = "safe"
    fix_title = "Take the zero-copy view and copy on the consumer side"
    why = (
        "The callback of `jax.experimental.buffer_callback.buffer_callback` receives "
        "`(ctx, out, *args)` as FFI `Buffer` objects that only support zero-copy views.  "
        "`buf.__dlpack__(copy=True)` and `from_dlpack(buf, copy=True)` raise `ValueError: "
        "Buffer.__dlpack__ with copy=True is not supported.`; `np.array(buf)` (NumPy 2 passes "
        "copy=True by default), `np.copy(buf)` and `np.asarray(buf, copy=True)` raise `ValueError: "
        "Buffer.__array__ with copy=True is not supported.`; a dtype (`np.asarray`, "
        "`np.ascontiguousarray`, `np.require` ... with `dtype=`) raises `ValueError: dtype "
        "parameter is not supported by Buffer.__array__.`; `copy.copy`, `copy.deepcopy` and "
        "`pickle.dumps` raise `TypeError: cannot pickle 'Buffer' object`, and `buf.copy()` an "
        "AttributeError (Buffer has no such method).")
    versions = "jax.experimental.buffer_callback (jax >= 0.7); NumPy >= 2 for np.array's default copy."
    INVALID = (
        "import numpy as np\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    a = np.array(x)\nf = buffer_callback(cb, spec)\n",
        "import torch\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    t = torch.from_dlpack(x, copy=True)\nf = buffer_callback(cb, spec)\n",
        "from jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    c = x.__dlpack__(copy=True)\nf = buffer_callback(cb, spec)\n",
        "import numpy as np\nfrom jax.experimental import buffer_callback as bc\n"
        "def cb(ctx, out, x):\n    a = np.asarray(x, dtype=np.float64)\nf = bc.buffer_callback(cb, spec)\n",
        "import numpy\nfrom functools import partial\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(scale, ctx, out, x):\n    a = numpy.asarray(x, copy=True)\nf = buffer_callback(partial(cb, 2.0), spec)\n",
        "import numpy as np\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "f = buffer_callback(lambda ctx, out, x: np.from_dlpack(x, copy=True), spec)\n",
        "import numpy as np\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    a = np.copy(x)\nf = buffer_callback(cb, spec)\n",
        "import copy\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    kept = copy.deepcopy(x)\nf = buffer_callback(cb, spec)\n",
        "from jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    a = x.copy()\nf = buffer_callback(cb, spec)\n",
    )
    VALID = (
        "import numpy as np\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    a = np.from_dlpack(x).copy()\nf = buffer_callback(cb, spec)\n",
        "import torch\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    t = torch.from_dlpack(x).clone()\nf = buffer_callback(cb, spec)\n",
        "import numpy as np\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    a = np.asarray(x)\n    b = np.array(a)\nf = buffer_callback(cb, spec)\n",
        "import numpy as np\ndef not_a_callback(ctx, out, x):\n    a = np.array(x)\n",
        "import numpy as np\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    a = np.from_dlpack(x).astype(np.float64)\nf = buffer_callback(cb, spec)\n",
        "import numpy as np\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    a = np.array(x, copy=False)\nf = buffer_callback(cb, spec)\n",
        "import numpy as np, torch\nfrom jax.experimental.buffer_callback import buffer_callback\n"
        "def cb(ctx, out, x):\n    a = np.ascontiguousarray(x)\n    t = torch.tensor(x)\nf = buffer_callback(cb, spec)\n",
    )

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:
        if not isinstance(event, FfiCopyEvent):
            return None
        cls, msg = FFI_COPY_FAILURES[event.how]
        msg = msg.format(name=event.consumer.strip("`.()"))
        msg = msg if msg.endswith(".") else msg + "."
        subject = ctx.text(event.subject)
        view = f"torch.from_dlpack({subject}).clone()" if event.view == "torch" else f"np.from_dlpack({subject}).copy()"
        message = (f"{event.consumer} copies the FFI buffer `{subject}` and raises {cls}: {msg} "
                   f"Take the zero-copy view and copy it: {view}")
        return self.finding(ctx, event.node, message, event, fix=self.deferred_fix(event, ctx))

    def fix(self, event, ctx: RuleContext) -> Optional[Fix]:
        """Take the zero-copy view and copy on the consumer side (safe); None for
        ``buf.__dlpack__(copy=True)`` and unusual arguments."""
        return remedies.ffi_view(event, ctx, self.fix_title, self.fix_applicability)
