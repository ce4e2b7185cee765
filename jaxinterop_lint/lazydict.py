"""A dict whose values are made when first read: the base of the store's entries (their
fields parsed from JSON text on first use, :class:`.pipeline.storeformat.Entry`) and of a
frozen module's globals (thawed on first use, :class:`.summaries.LazyGlobals`).  Imports
nothing."""
from __future__ import annotations


class LazyDict(dict):
    """A dict that asks :meth:`_take` to make a missing value when it is first read
    (``d[k]``, ``d.get(k)``, ``k in d``); ``_take(k)`` stores it with ``dict.__setitem__``
    and returns True, or returns False when there is no such value."""

    def _take(self, name) -> bool:  # pragma: no cover - every subclass has its own
        return False

    def __missing__(self, name):
        if self._take(name):
            return dict.__getitem__(self, name)
        raise KeyError(name)

    def get(self, name, default=None):
        if dict.__contains__(self, name) or self._take(name):
            return dict.__getitem__(self, name)
        return default

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or self._take(name)
