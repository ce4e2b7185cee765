"""jaxinterop-lint: find multi-device JAX arrays handed to zero-copy interop, statically.

Importing this package imports neither jax nor libcst nor the runtime shim, and patches
nothing: the public names below load the engine on first use (the runtime shim's processes
import this package and must stay light).

Public API: :func:`lint_source`, :func:`lint_paths`, :class:`Config`, :class:`Finding`.
"""
__version__ = "0.1.0"

_EXPORTS = {
    "Config": "config", "ConfigError": "config",
    "FileResult": "engine", "LintResult": "engine", "SourceError": "engine",
    "lint_paths": "engine", "lint_source": "engine",
    "Edit": "finding", "Finding": "finding", "Fix": "finding", "Step": "finding",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name):
    """Load a public name from its module on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jaxinterop_lint' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
