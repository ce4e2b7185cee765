"""Run a callable with room for deep recursion: in a thread with a large stack and a high
recursion limit (PLAN.md decision 4).

Valid Python can nest far deeper than the interpreter's default limit of 1,000 frames lets a
recursive walk follow: CPython compiles a 1,000-branch ``elif`` or 900 unary minus signs, and
``a and b and ...`` or implicitly concatenated strings of any length (flat in CPython's
syntax tree, a nested chain of binary nodes in libcst's).  libcst's parser (native code) and
every visitor recurse once or more per level, so the engine parses and analyses each module
through :func:`run_deep` (or the :func:`deep` decorator).

The thread gets :data:`STACK_SIZE` bytes of stack (only the pages actually used cost memory)
and the process's recursion limit is raised to :data:`RECURSION_LIMIT` while any such call
runs: that limit is low enough for the stack never to overflow (a crash no ``except`` can
catch), since a Python frame that recurses through C code takes well under
``STACK_SIZE / RECURSION_LIMIT`` bytes of it.  Where a thread of that size cannot be had (a
tight ``ulimit -v``), smaller ones are tried with proportionally lower limits, and as a last
resort the callable runs in the calling thread with the limits as they are.

Python 3.12 and 3.13 also cap recursion through C code at a fixed depth whatever the stack
size; there the deepest inputs give ``RecursionError`` sooner, which the engine reports as
"too deeply nested", a clear line rather than a crash.
"""
from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable, TypeVar

T = TypeVar("T")

STACK_SIZE = 1 << 30          # 1 GiB of address space; pages are committed only when touched
RECURSION_LIMIT = 120_000     # frames: about 9 kB of C stack each at most, see the docstring
_FALLBACK_SIZES = (1 << 28, 1 << 26)   # 256 MiB, 64 MiB (limits scaled down with them)

_local = threading.local()
_lock = threading.Lock()
_active = 0                  # calls now running in deep threads
_saved_limit = None          # the recursion limit to restore when the last one ends


def in_deep_thread() -> bool:
    """True when the current thread is one that :func:`run_deep` started."""
    return getattr(_local, "deep", False)


def _raise_limit(limit: int) -> None:
    global _active, _saved_limit
    with _lock:
        if _active == 0:
            _saved_limit = sys.getrecursionlimit()
        _active += 1
        if sys.getrecursionlimit() < limit:
            sys.setrecursionlimit(limit)


def _restore_limit() -> None:
    global _active, _saved_limit
    with _lock:
        _active -= 1
        if _active == 0 and _saved_limit is not None:
            sys.setrecursionlimit(_saved_limit)
            _saved_limit = None


def _start(target: Callable[[], None], size: int) -> threading.Thread:
    """A started daemon thread of ``size`` bytes of stack; raises RuntimeError or
    ValueError when the system refuses one that large."""
    with _lock:
        old = threading.stack_size()
        try:
            threading.stack_size(size)
            thread = threading.Thread(target=target, name="jaxinterop-lint-deep", daemon=True)
            thread.start()
        finally:
            threading.stack_size(old)
    return thread


def run_deep(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Return ``fn(*args, **kwargs)``, computed in a thread with a large stack and a high
    recursion limit; whatever ``fn`` raises is raised here (the same exception object, with
    its traceback).  Called from such a thread, ``fn`` simply runs there.  A
    ``KeyboardInterrupt`` in the caller while ``fn`` runs is raised at once (the thread is a
    daemon: it never keeps the process alive)."""
    if in_deep_thread():
        return fn(*args, **kwargs)
    outcome: dict = {}

    def target() -> None:
        _local.deep = True
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller, re-raised there
            outcome["error"] = exc

    for size in (STACK_SIZE,) + _FALLBACK_SIZES:
        limit = max(1000, RECURSION_LIMIT * size // STACK_SIZE)
        _raise_limit(limit)
        try:
            try:
                thread = _start(target, size)
            except (RuntimeError, ValueError, MemoryError):
                continue
            thread.join()
        finally:
            _restore_limit()
        break
    else:  # no thread could be started: run here, with the limits as they are
        return fn(*args, **kwargs)
    if "error" in outcome:
        error = outcome.pop("error")
        try:
            raise error
        finally:
            del error
    return outcome["value"]


def deep(fn: Callable[..., T]) -> Callable[..., T]:
    """Decorator: every call of ``fn`` goes through :func:`run_deep`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        return run_deep(fn, *args, **kwargs)

    return wrapper
