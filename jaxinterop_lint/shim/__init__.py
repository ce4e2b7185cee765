"""Runtime shim: reproduce JAX's interop errors for multi-device arrays, or record every hit.

Off unless asked: importing this package imports no JAX and patches nothing.

* :func:`install` / :func:`uninstall` / :func:`active` (a context manager); ``install`` also
  returns a handle usable with ``with``;
* :func:`maybe_install_from_env` reads ``JAXINTEROP_SHIM=raise|record`` and
  ``JAXINTEROP_SHIM_REPORT=PATH``; :func:`site_dir` is the directory whose
  ``sitecustomize.py`` calls it in every Python process that has the directory on PYTHONPATH
  (``jaxinterop-lint run`` puts it there).

Modes (facts and messages: ``knowledge.messages``, from shared/docs/jax-interop.md):

* ``"raise"``: a ``jax.Array`` on more than one device (replicated included) reaching a watched
  consumer raises what JAX raises on that path, same class and message (BufferError for DLPack,
  JaxRuntimeError for pointers, AttributeError for the CUDA Array Interface), and
  ``ValueError("__cuda_array_interface__() is supported only for unsharded arrays.")`` where
  JAX would silently gather through the host (CuPy array constructors, numba ``to_device``).
  The exception has ``jaxinterop_code`` ("JXI002"...), ``jaxinterop_site`` (file, line,
  function) and ``jaxinterop_consumer``.
* ``"record"``: the hit is appended as one JSON line to the report (keys ``code``, ``consumer``,
  ``interop``, ``path``, ``line``, ``function``, ``shape``, ``dtype``, ``num_devices``,
  ``sharding``, ``process_index``, ``pid``, ``mode``), then the real call runs.

A hit is the call in user code: the first frame outside jax, jaxlib, torch, numpy, cupy,
numba, warp, tensorflow and the shim.  Calls a consumer makes internally while a recorded call
runs are not recorded again (a per-thread re-entrancy guard).  FFI ``Buffer`` copying exports
(JXI004) are recorded in both modes and JAX raises its own error, annotated the same way.
Report files: see :mod:`jaxinterop_lint.shim.report`.
"""
from __future__ import annotations

import os
import sys
from typing import Optional

from jaxinterop_lint.shim import _core, _hook, _patches
from jaxinterop_lint.shim.report import ShimReportError

__all__ = ["install", "uninstall", "active", "is_installed", "hit_count", "maybe_install_from_env",
           "site_dir", "ShimReportError", "MODES", "DEFAULT_REPORT", "ENV_MODE", "ENV_REPORT"]

MODES = ("raise", "record")
DEFAULT_REPORT = "jaxinterop-report.jsonl"
ENV_MODE = "JAXINTEROP_SHIM"
ENV_REPORT = "JAXINTEROP_SHIM_REPORT"

_finder: Optional[_hook.PostImportFinder] = None


class ShimHandle:
    """What :func:`install` returns: ``with install("raise"): ...`` uninstalls on exit."""

    def __enter__(self) -> "ShimHandle":
        return self

    def __exit__(self, *exc_info) -> None:
        uninstall()


def _on_import(name: str, module) -> None:
    if _core.STATE.installed:
        _patches.patch_module(name, module)


def install(mode: str = "raise", report: Optional[str] = None, per_process: bool = False) -> ShimHandle:
    """Install the shim in this process.

    ``mode`` is ``"raise"`` or ``"record"``.  ``report`` is the JSON-lines file hits are
    appended to; record mode without one uses ``DEFAULT_REPORT`` in the current directory;
    raise mode writes a report only when given one.  ``per_process=True`` makes this process
    write ``report.<pid>`` instead of ``report`` (so that concurrent processes never share a
    file); forked children always do.  Installing again replaces the previous installation.

    Raises ValueError for an unknown mode and ShimReportError (an OSError) when the report
    cannot be opened for appending, before anything is patched.
    """
    if mode not in MODES:
        raise ValueError(f"jaxinterop shim: mode must be one of {MODES}, not {mode!r}")
    if mode == "record" and not report:
        report = DEFAULT_REPORT
    if _core.STATE.installed:
        uninstall()
    state = _core.STATE
    state.mode = mode
    state.report = os.path.abspath(report) if report else None
    state.per_process = per_process
    state.hits = 0
    state.jax_version = None
    try:
        state.open()
    except OSError:
        state.report = None
        state.mode = None
        raise
    global _finder
    state.installed = True
    _core.register_fork_hook()
    _finder = _hook.PostImportFinder(_patches.ALL_MODULES, _on_import)
    _hook.add_finder(_finder)
    _patches.patch_builtins()
    for name in sorted(_patches.ALL_MODULES):
        module = sys.modules.get(name)
        if module is not None:
            _patches.patch_module(name, module)
    return ShimHandle()


def uninstall() -> None:
    """Remove the shim: every patched attribute gets back its original object, the import hook
    is removed and the report is closed.  A no-op when not installed."""
    global _finder
    if _finder is not None:
        _hook.remove_finder(_finder)
        _finder = None
    _patches.restore_all()
    _patches.unwatch_all()
    state = _core.STATE
    state.close()
    state.installed = False
    state.mode = None
    state.report = None


def active(mode: str = "raise", report: Optional[str] = None, per_process: bool = False) -> ShimHandle:
    """Context manager form: ``with active("record", "hits.jsonl"): ...`` (see :func:`install`)."""
    return install(mode, report, per_process)


def is_installed() -> bool:
    """True while the shim is installed in this process."""
    return _core.STATE.installed


def hit_count() -> int:
    """Hits seen in this process since the last install()."""
    return _core.STATE.hits


def maybe_install_from_env(environ: Optional[dict] = None) -> bool:
    """Install from ``JAXINTEROP_SHIM`` (``raise``/``record``; empty, ``0`` or ``off``: nothing)
    and ``JAXINTEROP_SHIM_REPORT``.  Every process installing this way writes its own
    ``REPORT.<pid>`` file (the variables are inherited by all children).

    Returns True when installed.  Raises ValueError for another value of the mode and
    ShimReportError when the report cannot be written.
    """
    env = os.environ if environ is None else environ
    mode = (env.get(ENV_MODE) or "").strip().lower()
    if mode in ("", "0", "off", "none"):
        return False
    install(mode, env.get(ENV_REPORT) or None, per_process=True)
    return True


def site_dir() -> str:
    """The directory holding the shim's ``sitecustomize.py`` (prepend it to PYTHONPATH)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_site")
