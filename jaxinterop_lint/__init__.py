"""jaxinterop-lint: find multi-device JAX arrays handed to zero-copy interop, statically.

Importing this package imports neither jax nor the runtime shim, and patches nothing.

Public API: :func:`lint_source`, :func:`lint_paths`, :class:`Config`, :class:`Finding`.
"""
__version__ = "0.1.0"

from .config import Config, ConfigError  # noqa: E402
from .engine import FileResult, LintResult, SourceError, lint_paths, lint_source  # noqa: E402
from .finding import Edit, Finding, Fix, Step  # noqa: E402

__all__ = [
    "__version__", "Config", "ConfigError", "Edit", "FileResult", "Finding", "Fix", "LintResult",
    "SourceError", "Step", "lint_paths", "lint_source",
]
