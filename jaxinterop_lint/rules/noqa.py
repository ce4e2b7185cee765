"""Rule JXI100: noqa directives that name unknown codes or silence nothing (ruff's RUF100).

The findings are made by :func:`jaxinterop_lint.noqa.unused_directives` in the select stage
(they depend on which findings the other rules made and which codes are enabled); this class
carries the rule's documentation and snippets like every other rule.
"""
from __future__ import annotations

from typing import Optional

from ..finding import Finding
from ..noqa import FIX_TITLE
from .base import Rule, RuleContext


class UnusedNoqa(Rule):
    code = "JXI100"
    name = "unused-noqa"
    summary = "A noqa directive that names an unknown JXI code or silences nothing."
    default = False
    fix_applicability = "safe"
    fix_title = FIX_TITLE
    why = (
        "A `# noqa: JXI002` that silences nothing hides the next real finding on that line, and "
        "one naming a code that does not exist (a typo, `JXI02`, or a rule that was renamed) "
        "silences nothing at all.  The rule reports, per directive, the JXI codes that are "
        "unknown, duplicated, not enabled, or unused (no finding of that code on the line; in "
        "the file for `# jaxinterop-lint: noqa: CODE`), and a bare `# jaxinterop-lint: noqa` in "
        "a file without findings.  Codes of other tools (`E501`, `F401`) and a bare `# noqa` "
        "are never judged: flake8, ruff or a type checker may need them.  Opt-in, as ruff's "
        "RUF100 is not in ruff's default selection: `--extend-select JXI100`.")
    versions = "Any JAX version: the rule reads comments only."
    INVALID = (
        "import torch\nt = torch.from_dlpack(x)  # noqa: JXI002\n",
        "x = 1  # noqa: JXI099\n",
        "# jaxinterop-lint: noqa: JXI003\nimport torch\n",
        "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)  # noqa: JXI002, JXI002\n",
        "# jaxinterop-lint: noqa\nx = 1\n",
        "import numpy as np\na = np.ones(3)  # noqa: E501, JXI001\n",
    )
    VALID = (
        "import torch\nt = torch.from_dlpack(x)\n",
        "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
        "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)  # noqa: JXI002\n",
        "x = 1  # noqa: E501\n",
        "x = 1  # noqa\n",
        "s = '# noqa: JXI002'\n",
        "# jaxinterop-lint: noqa: JXI005\nimport jax\nfrom jax.sharding import PositionalSharding\n",
    )

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:
        """Never from an event: see :func:`jaxinterop_lint.noqa.unused_directives`."""
        return None
