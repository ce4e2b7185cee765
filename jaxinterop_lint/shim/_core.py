"""State of the runtime shim and what happens at a hit: find the user's call site, write the
JSON line, build the exception JAX would raise.

Imports no JAX: JAX objects are only touched once a JAX array reaches a patched call, and JAX
exception classes are resolved from their dotted names (``knowledge.messages``) on first use.
"""
from __future__ import annotations

import dis
import importlib
import json
import os
import sys
import threading
from typing import Any, Optional

from jaxinterop_lint.knowledge import messages
from jaxinterop_lint.shim.report import _write_all, open_report, process_report_path

# type -> "array" (jax.Array implementation) or "buffer" (FFI Buffer).  Filled when JAX's
# modules are patched; the wrappers' fast path is one dict lookup on type(arg).
WATCHED: dict[type, str] = {}

# Modules whose frames are never "the call site": a hit is attributed to the first frame
# outside them (jax-interop.md: the consumer's own internals are not the user's code).
LIBRARY_PACKAGES = frozenset({"jax", "jaxlib", "torch", "numpy", "cupy", "cupyx", "numba", "numba_cuda",
                              "warp", "tensorflow"})
SHIM_PACKAGE = "jaxinterop_lint.shim"

_ATTRIBUTE_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


class _Guard(threading.local):
    """Per-thread re-entrancy depth: >0 while a recorded consumer call runs."""

    depth = 0


GUARD = _Guard()


class ShimState:
    """Everything install() decided.  One instance, :data:`STATE`."""

    def __init__(self) -> None:
        self.installed = False
        self.mode: Optional[str] = None
        self.report: Optional[str] = None  # the base path, absolute
        self.per_process = False
        self.fd: Optional[int] = None
        self.fd_pid: Optional[int] = None
        self.fd_id: Optional[tuple] = None  # (st_dev, st_ino) of the file self.fd was opened on
        self.hits = 0
        self.jax_version: Optional[str] = None

    def report_file(self) -> Optional[str]:
        """The file this process writes: the base path, or ``base.<pid>`` per process."""
        if self.report is None:
            return None
        if self.per_process:
            return process_report_path(self.report, os.getpid())
        return self.report

    def open(self) -> None:
        """Open this process's report file (raises ShimReportError when impossible).  A
        process that asked for the base path writes ``base.<pid>`` instead when another
        process holds the base file (one file per process, see :mod:`.report`)."""
        path = self.report_file()
        if path is None:
            return
        fd = open_report(path)
        if not self.per_process and not claim(fd):
            os.close(fd)
            self.per_process = True
            path = self.report_file()
            fd = open_report(path)
        st = os.fstat(fd)
        self.fd, self.fd_pid, self.fd_id = fd, os.getpid(), (st.st_dev, st.st_ino)

    def descriptor(self) -> Optional[int]:
        """The report descriptor, checked: if the program closed it (and perhaps opened a file
        of its own that got the same number), the report is opened again, never written
        through a descriptor that now belongs to someone else.  None when it cannot be."""
        fd = self.fd
        if fd is not None and self.fd_pid == os.getpid():
            try:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) == self.fd_id:
                    return fd
            except OSError:
                pass
        self.fd = None  # not ours any more: never close it, it may be the program's
        if self.fd_pid is not None and self.fd_pid != os.getpid():
            self.per_process = True  # forked without the at-fork hook: write our own file
        self.open()
        return self.fd

    def close(self) -> None:
        """Close the report descriptor if this process opened it (and it is still ours)."""
        if self.fd is not None and self.fd_pid == os.getpid():
            try:
                st = os.fstat(self.fd)
                if (st.st_dev, st.st_ino) == self.fd_id:
                    os.close(self.fd)
            except OSError:
                pass
        self.fd = None
        self.fd_pid = None
        self.fd_id = None

    def stop_recording(self, why: str) -> None:
        """Say once on stderr why this process records nothing more, and stop."""
        print(f"{why}; this process records nothing more", file=sys.stderr)
        self.fd = None
        self.report = None


def claim(fd: int) -> bool:
    """Take the report file of ``fd`` for this process (an exclusive ``flock`` held while the
    descriptor is open); False when another process holds it.  True where locks do not exist."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError:  # a file system without locks
        return True


STATE = ShimState()
_fork_hook_registered = False


def register_fork_hook() -> None:
    """Make children created by os.fork write their own ``base.<pid>`` file (once per process)."""
    global _fork_hook_registered
    if not _fork_hook_registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _fork_hook_registered = True


def _after_fork_in_child() -> None:
    if STATE.installed and STATE.report is not None:
        STATE.fd = None  # the parent's descriptor stays the parent's
        STATE.per_process = True
        try:
            STATE.open()
        except OSError as exc:  # the child must not die of this, nor raise at a hit
            STATE.stop_recording(str(exc))


def is_library_frame(frame) -> bool:
    """True when ``frame`` runs code of a library in LIBRARY_PACKAGES or of the shim itself."""
    name = frame.f_globals.get("__name__") or ""
    return name.partition(".")[0] in LIBRARY_PACKAGES or name.startswith(SHIM_PACKAGE)


def user_frame():
    """The innermost frame of the current stack that is not a library's (the call site).

    Returns a frame object, or None when every frame belongs to a library.
    """
    frame = sys._getframe(1)
    while frame is not None and is_library_frame(frame):
        frame = frame.f_back
    return frame


_OPCODE_CACHE: dict[tuple[Any, int], str] = {}


def current_opname(frame) -> str:
    """Name of the instruction ``frame`` is executing (``LOAD_ATTR`` for ``x.attr``, ``CALL`` for
    ``hasattr(x, ...)``)."""
    key = (frame.f_code, frame.f_lasti)
    name = _OPCODE_CACHE.get(key)
    if name is None:
        name = ""
        for ins in dis.get_instructions(frame.f_code):
            if ins.offset == frame.f_lasti:
                name = ins.opname
                break
        _OPCODE_CACHE[key] = name
    return name


def is_attribute_access(frame) -> bool:
    """True when ``frame`` is reading an attribute with ``.`` (not probing with hasattr/getattr)."""
    return current_opname(frame) in _ATTRIBUTE_OPS


def site_of(frame) -> tuple[str, int, str]:
    """``(absolute file, line, function qualname)`` of ``frame`` (``("<unknown>", 0, "")`` for None)."""
    if frame is None:
        return ("<unknown>", 0, "")
    code = frame.f_code
    filename = code.co_filename
    if not filename.startswith("<"):
        filename = os.path.abspath(filename)
    return (filename, frame.f_lineno, getattr(code, "co_qualname", code.co_name))


STACK_LIMIT = 64  # project frames kept per hit (the innermost ones)


def stack_of(frame) -> list:
    """``[[absolute file, line], ...]`` of the frames from ``frame`` outwards that are no
    library's (:func:`is_library_frame`) and come from a file (not ``<string>``), innermost
    first, at most :data:`STACK_LIMIT`: the project's callers of the call site, so that
    ``verify`` confirms a finding reported at a call that hands the value on (README "Whole
    projects and the cache") by a hit at the sink it leads to.  [] for None."""
    out: list = []
    while frame is not None and len(out) < STACK_LIMIT:
        if not is_library_frame(frame):
            filename = frame.f_code.co_filename
            if not filename.startswith("<"):
                out.append([os.path.abspath(filename), frame.f_lineno])
        frame = frame.f_back
    return out


def num_devices(x) -> int:
    """How many devices the jax.Array ``x`` spans (jax-interop.md section 1); 1 when unknown."""
    try:
        return len(x.sharding.device_set)
    except Exception:  # a deleted or odd array: let the real call decide
        return 1


def describe(x, kind: str) -> dict:
    """Shape, dtype, device count, sharding and process index of the exported value."""
    info: dict[str, Any] = {"shape": None, "dtype": None, "num_devices": 1, "sharding": None,
                            "process_index": 0}
    try:
        info["shape"] = [int(d) for d in x.shape]
        info["dtype"] = str(x.dtype)
    except Exception:
        pass
    if kind == "array":
        info["num_devices"] = num_devices(x)
        try:
            info["sharding"] = str(x.sharding)
        except Exception:
            pass
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            info["process_index"] = int(jax.process_index())
        except Exception:
            pass
    return info


def record(code: str, consumer: str, path_key: str, x, kind: str, site: tuple[str, int, str],
           stack: Optional[list] = None) -> None:
    """Count the hit and, when a report is open, append its JSON line (one write, flushed).
    ``stack`` is :func:`stack_of` the call site's frame (the call site alone when None); the
    line also holds ``exception`` and ``message``, what JAX raises on ``path_key`` for ``x``
    (``knowledge.messages``)."""
    STATE.hits += 1
    if STATE.report is None:
        return
    try:
        fd = STATE.descriptor()
    except OSError as exc:  # e.g. a forked child whose own file cannot be created
        STATE.stop_recording(str(exc))
        return
    if fd is None:
        return
    entry = {"code": code, "consumer": consumer, "interop": path_key, "path": site[0], "line": site[1],
             "function": site[2]}
    entry.update(describe(x, kind))
    entry["stack"] = stack if stack is not None else [[site[0], site[1]]]
    try:
        entry["exception"], entry["message"] = messages.format_message(path_key, entry["num_devices"], jax_version())
    except KeyError:
        pass
    entry["pid"] = os.getpid()
    entry["mode"] = STATE.mode
    try:
        _write_all(fd, (json.dumps(entry, sort_keys=False) + "\n").encode("utf-8"))
    except OSError as exc:  # a full disk, a revoked file: never break the user's call for it
        where = STATE.report_file()
        STATE.close()
        STATE.stop_recording(f"jaxinterop shim: cannot write the report file {where!r}: {exc.strerror or exc}")


PROCESS_EVENT = "process"  # the ``event`` of the line a recording process writes at exit


def devices_in_use() -> Optional[int]:
    """``jax.device_count()`` when this process has initialised a JAX backend (never
    initialises one: ``jax._src.xla_bridge.backends_are_initialized``, jax 0.10.2), else None."""
    xb = sys.modules.get("jax._src.xla_bridge")
    jax = sys.modules.get("jax")
    try:
        if xb is None or jax is None or not xb.backends_are_initialized():
            return None
        return int(jax.device_count())
    except Exception:
        return None


def record_process() -> None:
    """At exit of a recording process that recorded no hit but ran JAX: append
    ``{"event": "process", "pid", "device_count", "hits": 0}`` so that ``verify`` knows a
    report without hits came from a run on several devices (and does not advise forcing 8
    CPU devices).  Never raises."""
    if not STATE.installed or STATE.report is None or STATE.hits:
        return
    try:
        count = devices_in_use()
        fd = STATE.descriptor() if count is not None else None
        if fd is not None:
            line = {"event": PROCESS_EVENT, "pid": os.getpid(), "device_count": count, "hits": 0}
            _write_all(fd, (json.dumps(line) + "\n").encode("utf-8"))
    except Exception:
        pass


_exit_registered = False


def register_exit() -> None:
    """Register :func:`record_process` with ``atexit`` (once), right after ``jax._src.api`` is
    imported: after JAX registered its ``clean_up`` exit handler (jax/_src/api.py, 0.10.2),
    so it runs before that clears the backends (``atexit`` runs the last registered first)."""
    global _exit_registered
    if not _exit_registered:
        import atexit

        atexit.register(record_process)
        _exit_registered = True


_EXC_CACHE: dict[str, type] = {}


def exception_class(short_name: str) -> type:
    """Resolve a class named in ``messages.EXCEPTION_CANDIDATES`` (first importable candidate)."""
    cls = _EXC_CACHE.get(short_name)
    if cls is not None:
        return cls
    for dotted in messages.EXCEPTION_CANDIDATES[short_name]:
        module_name, _, attr = dotted.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError):
            continue
        _EXC_CACHE[short_name] = cls
        return cls
    raise LookupError(f"no importable exception class for {short_name}")


def jax_version() -> Optional[str]:
    """The installed JAX version string, read from the imported ``jax`` module (None if absent)."""
    if STATE.jax_version is None:
        jax = sys.modules.get("jax")
        STATE.jax_version = getattr(jax, "__version__", None)
    return STATE.jax_version


def annotate(exc: BaseException, code: str, consumer: str, site: tuple[str, int, str]) -> BaseException:
    """Attach ``jaxinterop_code``, ``jaxinterop_site`` and ``jaxinterop_consumer`` to ``exc``."""
    try:
        exc.jaxinterop_code = code
        exc.jaxinterop_site = site
        exc.jaxinterop_consumer = consumer
        if hasattr(exc, "add_note") and not any("jaxinterop" in n for n in getattr(exc, "__notes__", ())):
            exc.add_note(f"jaxinterop shim: {code} {consumer} at {site[0]}:{site[1]} ({site[2]})")
    except (AttributeError, TypeError):
        pass
    return exc


def make_exception(path_key: str, n_devices: int, code: str, consumer: str,
                   site: tuple[str, int, str]) -> BaseException:
    """The exception JAX raises on ``path_key`` for an array over ``n_devices``, annotated."""
    short_name, message = messages.format_message(path_key, n_devices, jax_version())
    return annotate(exception_class(short_name)(message), code, consumer, site)
