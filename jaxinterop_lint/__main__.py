"""``python -m jaxinterop_lint``: the same as the ``jaxinterop-lint`` command."""
import sys

from .cli import main

sys.exit(main())
