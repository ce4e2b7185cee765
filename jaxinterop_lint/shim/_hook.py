"""Post-import hook: patch a watched module right after it finishes importing.

A ``sys.meta_path`` finder answers only for the watched module names.  It asks the finders
after it for the real spec, and wraps the spec's loader so that, once ``exec_module`` has run,
the module's ``__loader__`` and ``__spec__.loader`` are the original loader again and the
shim's callback patches the fresh module.  Every other import is untouched (one dict lookup).
"""
from __future__ import annotations

import sys
import threading
import warnings
from typing import Any, Callable


class _LoaderProxy:
    """Delegates to the real loader; runs ``callback(module)`` after ``exec_module``."""

    def __init__(self, loader: Any, callback: Callable[[str, Any], None]) -> None:
        self._loader = loader
        self._callback = callback

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec):
        """Delegate module creation to the real loader."""
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module) -> None:
        """Execute the module with the real loader, restore loader references, then patch it."""
        try:
            self._loader.exec_module(module)
        finally:
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is self:
                spec.loader = self._loader
            if getattr(module, "__loader__", None) is self:
                module.__loader__ = self._loader
        try:
            self._callback(module.__name__, module)
        except Exception as exc:  # never break the user's import
            warnings.warn(f"jaxinterop shim: could not patch {module.__name__}: {exc!r}", RuntimeWarning,
                          stacklevel=2)


class PostImportFinder:
    """A meta path finder that wraps the loaders of ``names`` (see module docstring)."""

    def __init__(self, names: frozenset[str], callback: Callable[[str, Any], None]) -> None:
        self.names = names
        self.callback = callback
        self._busy = threading.local()

    def find_spec(self, fullname: str, path=None, target=None):
        """Return the real spec of a watched module with its loader wrapped, else None."""
        if fullname not in self.names or getattr(self._busy, "name", None) == fullname:
            return None
        self._busy.name = fullname
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.name = None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _LoaderProxy(spec.loader, self.callback)
        return spec

    def invalidate_caches(self) -> None:
        """Nothing cached."""


def add_finder(finder: PostImportFinder) -> None:
    """Put ``finder`` first on ``sys.meta_path``."""
    if finder not in sys.meta_path:
        sys.meta_path.insert(0, finder)


def remove_finder(finder: PostImportFinder) -> None:
    """Take ``finder`` off ``sys.meta_path`` (no error when absent)."""
    while finder in sys.meta_path:
        sys.meta_path.remove(finder)
