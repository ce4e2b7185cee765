"""libcst's ``parse_module`` without two costs that buy nothing for a tree just parsed.

libcst's native parser builds the tree by calling each node class, and every node's
``__post_init__`` runs its ``_validate`` (libcst ``_nodes/base.py``, ``CSTNode.__post_init__``,
whose own comment says the validation might move out of the parse).  The checks are about
nodes written by hand (a left parenthesis without a right one, a name with no text); a tree
that came out of the parser passes them by construction.  The hundred thousand nodes of a
large module also trigger the cyclic garbage collector hundreds of times, each collection
walking the young nodes, which hold no cycle and are all alive.

:func:`parse_module` parses with the collector paused and the validation skipped for the
nodes of that parse only; both are restored when it returns or raises, so nodes a fix
builds (``rules/remedies.py``) are validated as ever.  The validation is skipped only while
``CSTNode.__post_init__`` is the libcst 1.x method that does nothing but validate
(:func:`skips_validation`); a libcst whose method does more keeps it.  On the jax 0.10.2
sources this takes a quarter off the parse of ``core.py``, ``array.py`` and ``api.py``
(about 1.2 s to 0.9 s on a 2-core machine; ``bench/``'s corpora measure the runs).
"""
from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_depth = 0              # parses now running (in any thread)
_gc_was_enabled = False
_saved_post_init = None  # libcst's CSTNode.__post_init__ while a parse runs without it


def _noop_post_init(self) -> None:
    """Stands for ``CSTNode.__post_init__`` while a parse runs (see the module docstring)."""


def skips_validation() -> bool:
    """Whether :func:`parse_module` may skip libcst's node validation: True only when
    ``CSTNode.__post_init__`` (libcst ``_nodes/base.py``) is the method that calls
    ``self._validate()`` and nothing else."""
    from libcst._nodes.base import CSTNode

    method = CSTNode.__dict__.get("__post_init__")
    code = getattr(method, "__code__", None)
    return code is not None and code.co_names == ("_validate",) and code.co_argcount == 1


def _enter() -> None:
    global _depth, _gc_was_enabled, _saved_post_init
    from libcst._nodes.base import CSTNode

    with _lock:
        if _depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
            if skips_validation():
                _saved_post_init = CSTNode.__dict__["__post_init__"]
                CSTNode.__post_init__ = _noop_post_init
        _depth += 1


def _leave() -> None:
    global _depth, _saved_post_init
    from libcst._nodes.base import CSTNode

    with _lock:
        _depth -= 1
        if _depth == 0:
            if _saved_post_init is not None:
                CSTNode.__post_init__ = _saved_post_init
                _saved_post_init = None
            if _gc_was_enabled:
                gc.enable()


def parse_module(text: str):
    """``libcst.parse_module(text)``, faster (see the module docstring): the same tree, the
    same errors (``libcst.ParserSyntaxError``, ``RecursionError``, ``MemoryError``: the
    caller's to handle), and the collector and the validation as they were afterwards."""
    import libcst as cst

    _enter()
    try:
        return cst.parse_module(text)
    finally:
        _leave()
