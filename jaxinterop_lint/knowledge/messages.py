"""What JAX (and its consumers) raise at each interop path, byte for byte, per JAX version.

This module is pure data: it imports no JAX, so the static analyser (which needs to know
which ``except`` clauses catch what, and what to say in a message) and the runtime shim
(which must reproduce these exceptions exactly) share one source of truth.

Exception classes are named as strings.  ``"BufferError"`` and friends are builtins; the
JAX runtime error has moved between modules over time, so :data:`EXCEPTION_CANDIDATES` lists
the dotted names to try, newest first.  The shim resolves them lazily with
``importlib``; nothing here imports them.

Facts come from ``shared/docs/jax-interop.md`` (sections 2 and 3), which read them in the
JAX sources and checked them live with jax 0.10.2 on 8 forced CPU host devices:

* ``jax/_src/array.py`` (``ArrayImpl.__dlpack__``, ``ArrayImpl.__dlpack_device__``; the
  Python fallbacks of ``unsafe_buffer_pointer`` and ``__cuda_array_interface__``, which are
  dead code: ``use_cpp_method`` replaces them with the C++ methods of
  ``jaxlib/xla/py_array.cc``, whose messages are the ones below);
* ``jaxlib/xla/py_array.cc`` (``PyArray::UnsafeBufferPointer``, the buffer protocol
  ``PyArray_bf_getbuffer``, ``__cuda_array_interface__``);
* ``jaxlib/ffi.cc`` (``PyFfiBuffer``: the ``Buffer`` handed to ``buffer_callback``);
* ``torch/csrc/utils/tensor_new.cpp`` (``torch.asarray`` wraps the buffer-protocol failure);
* ``numba/cuda/api.py`` (``as_cuda_array``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = [
    "InteropError",
    "HISTORY",
    "MESSAGES",
    "EXCEPTION_CANDIDATES",
    "EXCEPTION_BASES",
    "CONSUMERS",
    "PATH_CODES",
    "parse_version",
    "lookup",
    "format_message",
    "catching_names",
]

Version = tuple[int, ...]


@dataclass(frozen=True)
class InteropError:
    """What one interop path raises for a multi-device array, for a range of JAX versions.

    ``exception`` is a short class name (a key of :data:`EXCEPTION_CANDIDATES`);
    ``template`` is a ``str.format`` template whose only field is ``{N}``, the number of
    devices the array spans.  ``since`` is the first JAX version (inclusive) the fact holds
    for, ``until`` the first version it no longer holds for (None: still true).  ``source``
    names the file the fact was read in.
    """

    path: str
    exception: str
    template: str
    source: str
    since: Version = (0,)
    until: Optional[Version] = None

    def applies_to(self, version: Version) -> bool:
        """True when this fact holds for JAX ``version`` (a tuple from :func:`parse_version`)."""
        return version >= self.since and (self.until is None or version < self.until)


_ARRAY_PY = "jax/_src/array.py"
_PY_ARRAY_CC = "jaxlib/xla/py_array.cc"
_FFI_CC = "jaxlib/ffi.cc"

# Every fact, per path, oldest first.  The last entry of each tuple is what current JAX does.
HISTORY: dict[str, tuple[InteropError, ...]] = {
    # x.__dlpack__(...) on a multi-device array: the device-count check comes before `copy`.
    "dlpack": (
        InteropError("dlpack", "BufferError", "__dlpack__ only supported for unsharded arrays.",
                     _ARRAY_PY + " (jax < 0.4.27)", until=(0, 4, 27)),
        InteropError("dlpack", "BufferError",
                     "to_dlpack can only pack a dlpack tensor from an array on a singular device, "
                     "but an array with a Sharding over {N} devices was provided.",
                     _ARRAY_PY + " ArrayImpl.__dlpack__ (jax >= 0.4.27; run on 0.10.2)", since=(0, 4, 27)),
    ),
    # x.__dlpack_device__(): torch, cupy, warp and jax.dlpack.from_dlpack call it first.
    "dlpack_device": (
        InteropError("dlpack_device", "BufferError", "__dlpack__ only supported for unsharded arrays.",
                     _ARRAY_PY + " ArrayImpl.__dlpack_device__ (run on 0.10.2)"),
    ),
    # x.__cuda_array_interface__: an AttributeError, so hasattr() is False for such arrays.
    "cuda_array_interface": (
        InteropError("cuda_array_interface", "AttributeError",
                     "__cuda_array_interface__ is only supported for unsharded arrays.",
                     _PY_ARRAY_CC + " (run on 0.10.2)"),
    ),
    # x.unsafe_buffer_pointer(): the C++ method; JaxRuntimeError was XlaRuntimeError before 0.8.
    "unsafe_buffer_pointer": (
        InteropError("unsafe_buffer_pointer", "XlaRuntimeError",
                     "INVALID_ARGUMENT: UnsafeBufferPointer() is supported only for unsharded arrays.",
                     _PY_ARRAY_CC + " (jax < 0.8)", until=(0, 8)),
        InteropError("unsafe_buffer_pointer", "JaxRuntimeError",
                     "INVALID_ARGUMENT: UnsafeBufferPointer() is supported only for unsharded arrays.",
                     _PY_ARRAY_CC + " PyArray::UnsafeBufferPointer (run on 0.10.2)", since=(0, 8)),
    ),
    # memoryview(x): the buffer protocol (numba kernel launches; torch.asarray underneath).
    "buffer_protocol": (
        InteropError("buffer_protocol", "BufferError",
                     "INVALID_ARGUMENT: Python buffer protocol is only defined for buffers with a single shard.",
                     _PY_ARRAY_CC + " PyArray_bf_getbuffer, CPU devices (run on 0.10.2)"),
    ),
    # cupy.asarray/array/asanyarray/ascontiguousarray(x), numba.cuda.to_device(x) do not raise:
    # they gather through the host.  The shim raises JAX's own (Python, now unreachable)
    # message for that case so that the silent gather fails loudly.
    "silent_gather": (
        InteropError("silent_gather", "ValueError",
                     "__cuda_array_interface__() is supported only for unsharded arrays.",
                     _ARRAY_PY + " ArrayImpl.__cuda_array_interface__ Python fallback"),
    ),
    # torch.asarray(x), torch.frombuffer(x, dtype=...): torch replaces JAX's BufferError from the
    # buffer protocol with its own RuntimeError.
    "torch_buffer": (
        InteropError("torch_buffer", "RuntimeError", "could not retrieve buffer from object",
                     "torch/csrc/utils/tensor_new.cpp (torch 2.13, run with jax 0.10.2)"),
    ),
    # numba.cuda.as_cuda_array(x): hasattr(x, '__cuda_array_interface__') is False.
    "numba_as_cuda_array": (
        InteropError("numba_as_cuda_array", "TypeError", "*obj* doesn't implement the cuda array interface.",
                     "numba/cuda/api.py as_cuda_array"),
    ),
    # FFI buffers handed to a buffer_callback (one device's buffer each).
    "ffi_dlpack_copy": (
        InteropError("ffi_dlpack_copy", "ValueError", "Buffer.__dlpack__ with copy=True is not supported.",
                     _FFI_CC + " PyFfiBuffer.__dlpack__ (run on 0.10.2)"),
    ),
    "ffi_array_copy": (
        InteropError("ffi_array_copy", "ValueError", "Buffer.__array__ with copy=True is not supported.",
                     _FFI_CC + " PyFfiBuffer.__array__ (run on 0.10.2)"),
    ),
    "ffi_array_dtype": (
        InteropError("ffi_array_dtype", "ValueError", "dtype parameter is not supported by Buffer.__array__.",
                     _FFI_CC + " PyFfiBuffer.__array__ (run on 0.10.2)"),
    ),
    "ffi_cuda_array_interface": (
        InteropError("ffi_cuda_array_interface", "JaxRuntimeError",
                     "UNIMPLEMENTED: Buffer.__cuda_array_interface__ is only supported on CUDA and ROCm.",
                     _FFI_CC + " PyFfiBuffer.__cuda_array_interface__ off CUDA/ROCm (run on 0.10.2)"),
    ),
    "ffi_array_gpu": (
        InteropError("ffi_array_gpu", "JaxRuntimeError", "UNIMPLEMENTED: Buffer.__array__ is only supported on CPU.",
                     _FFI_CC + " PyFfiBuffer.__array__ on GPU (source only)"),
    ),
}

# Current behaviour: path -> (exception class name, message template with {N}).
MESSAGES: dict[str, tuple[str, str]] = {p: (h[-1].exception, h[-1].template) for p, h in HISTORY.items()}

# Short class name -> dotted names to try, newest first (resolved by the shim, never here).
EXCEPTION_CANDIDATES: dict[str, tuple[str, ...]] = {
    "BufferError": ("builtins.BufferError",),
    "AttributeError": ("builtins.AttributeError",),
    "ValueError": ("builtins.ValueError",),
    "TypeError": ("builtins.TypeError",),
    "RuntimeError": ("builtins.RuntimeError",),
    "JaxRuntimeError": ("jax.errors.JaxRuntimeError", "jaxlib.xla_extension.XlaRuntimeError"),
    "XlaRuntimeError": ("jax.errors.JaxRuntimeError", "jaxlib.xla_extension.XlaRuntimeError",
                        "jax._src.lib.xla_client.XlaRuntimeError"),
}

# Short class name -> every name whose `except` clause catches it (class and its bases).
EXCEPTION_BASES: dict[str, tuple[str, ...]] = {
    "BufferError": ("BufferError", "Exception", "BaseException"),
    "AttributeError": ("AttributeError", "Exception", "BaseException"),
    "ValueError": ("ValueError", "Exception", "BaseException"),
    "TypeError": ("TypeError", "Exception", "BaseException"),
    "RuntimeError": ("RuntimeError", "Exception", "BaseException"),
    "JaxRuntimeError": ("JaxRuntimeError", "XlaRuntimeError", "RuntimeError", "Exception", "BaseException"),
    "XlaRuntimeError": ("JaxRuntimeError", "XlaRuntimeError", "RuntimeError", "Exception", "BaseException"),
}

# Rule code of each path (rules.md).
PATH_CODES: dict[str, str] = {
    "dlpack": "JXI002",
    "dlpack_device": "JXI002",
    "cuda_array_interface": "JXI001",
    "silent_gather": "JXI001",
    "numba_as_cuda_array": "JXI001",
    "unsafe_buffer_pointer": "JXI003",
    "buffer_protocol": "JXI003",
    "torch_buffer": "JXI003",
    "ffi_dlpack_copy": "JXI004",
    "ffi_array_copy": "JXI004",
    "ffi_array_dtype": "JXI004",
}

# Consumer (dotted name as users write it) -> (rule code, path it fails on for a multi-device
# jax.Array).  jax-interop.md section 2 "Consequences": torch and jax.dlpack call
# __dlpack_device__ first, numpy.from_dlpack calls __dlpack__ directly, the CuPy array
# constructors and numba's to_device gather silently.
CONSUMERS: dict[str, tuple[str, str]] = {
    "torch.from_dlpack": ("JXI002", "dlpack_device"),
    "torch.utils.dlpack.from_dlpack": ("JXI002", "dlpack_device"),
    "torch.as_tensor": ("JXI002", "dlpack_device"),
    "torch.tensor": ("JXI002", "dlpack_device"),
    "torch.asarray": ("JXI003", "torch_buffer"),
    "torch.frombuffer": ("JXI003", "torch_buffer"),
    "numpy.from_dlpack": ("JXI002", "dlpack"),
    "jax.dlpack.from_dlpack": ("JXI002", "dlpack_device"),
    "jax.numpy.from_dlpack": ("JXI002", "dlpack_device"),
    "cupy.from_dlpack": ("JXI002", "dlpack_device"),
    "cupy.asarray": ("JXI001", "silent_gather"),
    "cupy.array": ("JXI001", "silent_gather"),
    "cupy.asanyarray": ("JXI001", "silent_gather"),
    "cupy.ascontiguousarray": ("JXI001", "silent_gather"),
    "numba.cuda.as_cuda_array": ("JXI001", "numba_as_cuda_array"),
    "numba.cuda.to_device": ("JXI001", "silent_gather"),
    "warp.from_jax": ("JXI002", "dlpack_device"),
    "warp.from_dlpack": ("JXI002", "dlpack_device"),
    "tensorflow.experimental.dlpack.from_dlpack": ("JXI002", "dlpack"),
    "jax.Array.__dlpack__": ("JXI002", "dlpack"),
    "jax.Array.__dlpack_device__": ("JXI002", "dlpack_device"),
    "jax.Array.__cuda_array_interface__": ("JXI001", "cuda_array_interface"),
    "jax.Array.unsafe_buffer_pointer": ("JXI003", "unsafe_buffer_pointer"),
    "memoryview": ("JXI003", "buffer_protocol"),
}


def parse_version(version: str | Version | None) -> Version:
    """Turn ``"0.10.2"`` (or ``"0.4.36.dev2024"``) into ``(0, 10, 2)``.

    Non-numeric parts end the tuple.  None means "the newest": a very large version.
    """
    if version is None:
        return (1 << 30,)
    if isinstance(version, tuple):
        return version
    out = []
    for part in version.split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
        if len(digits) != len(part):
            break
    return tuple(out)


def lookup(path: str, jax_version: str | Version | None = None) -> InteropError:
    """The fact for ``path`` under ``jax_version`` (None: current JAX).

    Raises KeyError for an unknown path.  Versions older than every recorded fact get the
    oldest one.
    """
    history = HISTORY[path]
    version = parse_version(jax_version)
    for fact in reversed(history):
        if fact.applies_to(version):
            return fact
    return history[0]


def format_message(path: str, num_devices: int, jax_version: str | Version | None = None) -> tuple[str, str]:
    """Return ``(exception class name, exact message)`` for ``path`` and ``num_devices``."""
    fact = lookup(path, jax_version)
    return fact.exception, fact.template.format(N=num_devices)


def catching_names(path: str, jax_version: str | Version | None = None) -> tuple[str, ...]:
    """Names whose ``except`` clause catches what ``path`` raises (e.g. BufferError, Exception)."""
    return EXCEPTION_BASES[lookup(path, jax_version).exception]
