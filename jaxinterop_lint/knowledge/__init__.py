"""What the linter knows about APIs (``apis``, ``versions``, ...), as data, and the per-run
view of it that a configuration can extend (:class:`Knowledge`, in :mod:`.view`).

Nothing is loaded when the package is imported: each table when first used (a flake8 process
whose file has a cached result reads only the JAX release table, :mod:`.versions`)."""
from __future__ import annotations

_VIEW = ("Knowledge", "DEFAULT_KNOWLEDGE")


def __getattr__(name: str):
    if name in _VIEW:
        from . import view

        return getattr(view, name)
    if name in ("apis", "versions", "messages", "structures"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
