"""The wrappers the shim puts around interop consumers and around jax.Array's export methods,
and the bookkeeping that puts every original object back.

What is patched, per module (applied when the module is already imported at ``install()``,
or right after it finishes importing, by the import hook of ``_hook.py``):

* consumers (module attributes, rules.md JXI001-JXI003): torch ``from_dlpack``, ``as_tensor``,
  ``tensor``, ``asarray``, ``frombuffer``; ``torch.utils.dlpack.from_dlpack``; ``numpy.from_dlpack``;
  CuPy
  ``asarray``, ``array``, ``asanyarray``, ``ascontiguousarray``, ``from_dlpack``; numba
  ``cuda.as_cuda_array``, ``cuda.to_device``; Warp ``from_jax``, ``from_dlpack``; TensorFlow
  ``experimental.dlpack.from_dlpack``; ``jax.dlpack.from_dlpack``, ``jax.numpy.from_dlpack``;
* the export methods of JAX's array class ``jaxlib._jax.ArrayImpl`` (``jax._src.array.ArrayImpl``):
  ``__dlpack__``, ``__dlpack_device__``, ``unsafe_buffer_pointer`` (methods) and
  ``__cuda_array_interface__`` (a property).  The class is a C++ (nanobind) type, but these
  entries live in its ``__dict__`` and are assignable on jax 0.10.2 (JAX itself sets the Python
  ones there with ``use_cpp_class``), so they are replaced in place and put back as the very
  same objects.  The buffer protocol itself is a C slot of the class (``bf_getbuffer``), not
  assignable before Python 3.12, so ``memoryview(x)`` is watched at the name: the builtin
  ``memoryview`` is replaced by :class:`ShimMemoryview` (``isinstance(m, memoryview)`` still
  holds for real views).  Buffer-protocol users in C (a numba kernel launch, ``bytes(x)``)
  are not seen; JAX raises its own BufferError there unaided;
* the FFI ``Buffer`` class (``jax._src.lib.ffi.Buffer``): ``__dlpack__`` and ``__array__``, to
  record copying exports (JXI004); JAX raises its own error, the shim annotates it.
"""
from __future__ import annotations

import builtins
import functools
import sys
import types
from typing import Any, Callable

from jaxinterop_lint.knowledge.messages import CONSUMERS
from jaxinterop_lint.shim import _core
from jaxinterop_lint.shim._core import GUARD, STATE, WATCHED

# module name -> [(attribute path inside the module, consumer name, keyword name of the argument)]
MODULE_TARGETS: dict[str, list[tuple[str, str, str]]] = {
    "torch": [("from_dlpack", "torch.from_dlpack", "ext_tensor"), ("as_tensor", "torch.as_tensor", "data"),
              ("tensor", "torch.tensor", "data"), ("asarray", "torch.asarray", "obj"),
              ("frombuffer", "torch.frombuffer", "buffer")],
    "torch.utils.dlpack": [("from_dlpack", "torch.utils.dlpack.from_dlpack", "ext_tensor")],
    "numpy": [("from_dlpack", "numpy.from_dlpack", "x")],
    "cupy": [("asarray", "cupy.asarray", "a"), ("array", "cupy.array", "obj"),
             ("asanyarray", "cupy.asanyarray", "a"), ("ascontiguousarray", "cupy.ascontiguousarray", "a"),
             ("from_dlpack", "cupy.from_dlpack", "array")],
    "numba.cuda": [("as_cuda_array", "numba.cuda.as_cuda_array", "obj"),
                   ("to_device", "numba.cuda.to_device", "obj")],
    "warp": [("from_jax", "warp.from_jax", "jax_array"), ("from_dlpack", "warp.from_dlpack", "source")],
    "tensorflow": [("experimental.dlpack.from_dlpack", "tensorflow.experimental.dlpack.from_dlpack",
                    "dlcapsule")],
    "jax.dlpack": [("from_dlpack", "jax.dlpack.from_dlpack", "external_array")],
    "jax.numpy": [("from_dlpack", "jax.numpy.from_dlpack", "x")],
}
ARRAY_MODULE = "jax._src.array"  # defines ArrayImpl's Python methods on the C++ class
BUFFER_MODULE = "jax._src.buffer_callback"  # exports the FFI Buffer class
API_MODULE = "jax._src.api"  # registers JAX's exit handler (clean_up: clears the backends)
ALL_MODULES = frozenset(MODULE_TARGETS) | {ARRAY_MODULE, BUFFER_MODULE, API_MODULE}

# (owner, attribute, original value or _ABSENT) in patch order; uninstall() replays it backwards.
_PATCHED: list[tuple[Any, str, Any]] = []
_ABSENT = object()
_MARK = "__jaxinterop_shim__"


class _ShimProperty(property):
    """The replacement of ``ArrayImpl.__cuda_array_interface__`` (recognisable by its type)."""


def is_shim_object(obj: Any) -> bool:
    """True for a wrapper this module made."""
    return isinstance(obj, _ShimProperty) or getattr(obj, _MARK, False) is True


def _unwrap(obj: Any) -> Any:
    """The original behind a shim wrapper (one left by an earlier installation, or copied by
    ``from module import name`` while installed), else ``obj``."""
    while is_shim_object(obj):
        obj = getattr(obj, "__wrapped__", obj)
    return obj


def _set(owner: Any, attr: str, make: Callable[[Any], Any]) -> None:
    """Replace ``owner.attr`` by ``make(original)``, remembering the original for restore_all."""
    if any(o is owner and a == attr for o, a, _ in _PATCHED):
        return
    original = vars(owner).get(attr, _ABSENT)
    if original is not _ABSENT:
        original = _unwrap(original)
        current = original
    else:
        current = _unwrap(getattr(owner, attr))
    setattr(owner, attr, _placed(make(current), owner, attr))
    _PATCHED.append((owner, attr, original))


def _placed(wrapper: Any, owner: Any, attr: str) -> Any:
    """Name ``wrapper`` after the place it is put (``torch.from_dlpack``, not the original's
    ``torch.utils.dlpack.from_dlpack``): pickle stores a function as a reference to its
    ``__module__`` and ``__qualname__`` and checks that the reference finds the very same
    object, so a patched function pickles (and unpickles to whatever stands there then:
    the original once the shim is gone, or in a process without it)."""
    if not isinstance(wrapper, types.FunctionType):
        return wrapper
    if isinstance(owner, types.ModuleType):
        module, qualname = owner.__name__, attr
    else:
        module, qualname = getattr(owner, "__module__", None), f"{getattr(owner, '__qualname__', '')}.{attr}"
    if isinstance(module, str) and _resolves_to(module, qualname, owner, attr):
        wrapper.__module__, wrapper.__qualname__ = module, qualname
    return wrapper


def _resolves_to(module: str, qualname: str, owner: Any, attr: str) -> bool:
    """Whether ``module.qualname`` names ``owner.attr`` (what pickle will look up)."""
    target = sys.modules.get(module)
    *path, _ = qualname.split(".")
    for name in path:
        target = getattr(target, name, None)
    return target is owner


def restore_all() -> None:
    """Put back every original object, in reverse patch order (deleting what was absent)."""
    while _PATCHED:
        owner, attr, original = _PATCHED.pop()
        if original is _ABSENT:
            try:
                delattr(owner, attr)
            except AttributeError:
                pass
        else:
            setattr(owner, attr, original)


def _mark(wrapper: Callable, original: Any) -> Callable:
    try:
        functools.update_wrapper(wrapper, original)
    except (AttributeError, TypeError):
        wrapper.__wrapped__ = original
    setattr(wrapper, _MARK, True)
    return wrapper


def _array_hit(orig, consumer, code, path_key, x, args, kwargs):
    """A jax.Array reached a consumer: record it, then raise (raise mode) or run the call."""
    n = _core.num_devices(x)
    if n <= 1 or GUARD.depth or not STATE.installed:
        return orig(*args, **kwargs)
    frame = _core.user_frame()
    site = _core.site_of(frame)
    _core.record(code, consumer, path_key, x, "array", site, _core.stack_of(frame))
    del frame
    if STATE.mode == "raise":
        raise _core.make_exception(path_key, n, code, consumer, site)
    GUARD.depth += 1
    try:
        return orig(*args, **kwargs)
    finally:
        GUARD.depth -= 1


def _buffer_hit(orig, consumer, path_key, x, args, kwargs):
    """An FFI Buffer is exported with a copy (JXI004): record it, let JAX raise, annotate that."""
    if GUARD.depth or not STATE.installed:
        return orig(*args, **kwargs)
    frame = _core.user_frame()
    site = _core.site_of(frame)
    _core.record("JXI004", consumer, path_key, x, "buffer", site, _core.stack_of(frame))
    del frame
    GUARD.depth += 1
    try:
        return orig(*args, **kwargs)
    except Exception as exc:
        raise _core.annotate(exc, "JXI004", consumer, site)
    finally:
        GUARD.depth -= 1


def consumer_wrapper(orig: Callable, consumer: str, argname: str) -> Callable:
    """Wrap a consumer function; its first argument (or keyword ``argname``) is watched."""
    code, path_key = CONSUMERS[consumer]
    watched = WATCHED

    def wrapper(*args, **kwargs):
        x = args[0] if args else kwargs.get(argname)
        kind = watched.get(type(x))
        if kind is None:
            return orig(*args, **kwargs)
        if kind == "array":
            return _array_hit(orig, consumer, code, path_key, x, args, kwargs)
        if kwargs.get("copy") is True and consumer.endswith("from_dlpack"):
            # from_dlpack(buf, copy=True) asks Buffer.__dlpack__ for a copy and raises;
            # torch.asarray(buf, copy=True) copies a view and works (run, jax 0.10.2 CPU)
            return _buffer_hit(orig, consumer, "ffi_dlpack_copy", x, args, kwargs)
        return orig(*args, **kwargs)

    return _mark(wrapper, orig)


def method_wrapper(orig: Callable, name: str) -> Callable:
    """Wrap a jax.Array export method (``__dlpack__``, ``__dlpack_device__``, ...)."""
    consumer = "jax.Array." + name
    code, path_key = CONSUMERS[consumer]

    def wrapper(self, *args, **kwargs):
        return _array_hit(orig, consumer, code, path_key, self, (self,) + args, kwargs)

    return _mark(wrapper, orig)


def cai_property(original: property) -> _ShimProperty:
    """Wrap the ``__cuda_array_interface__`` property.  ``hasattr``/``getattr`` probes (consumers
    testing for the interface) pass through unrecorded; only ``x.__cuda_array_interface__``
    written in user code is a hit.  JAX raises AttributeError either way, so hasattr stays False.
    """
    consumer = "jax.Array.__cuda_array_interface__"
    code, path_key = CONSUMERS[consumer]
    getter = original.__get__

    def fget(self):
        if GUARD.depth or _core.num_devices(self) <= 1:
            return getter(self, type(self))
        caller = sys._getframe(1)
        if _core.is_library_frame(caller) or not _core.is_attribute_access(caller):
            return getter(self, type(self))
        return _array_hit(lambda s: getter(s, type(s)), consumer, code, path_key, self, (self,), {})

    prop = _ShimProperty(fget, None, None, original.__doc__)
    prop.__wrapped__ = original
    return prop


def _buffer_dlpack(orig: Callable) -> Callable:
    def wrapper(self, *args, **kwargs):
        copy = args[3] if len(args) > 3 else kwargs.get("copy")
        if copy is True:
            return _buffer_hit(orig, "Buffer.__dlpack__", "ffi_dlpack_copy", self, (self,) + args, kwargs)
        return orig(self, *args, **kwargs)

    return _mark(wrapper, orig)


def _buffer_array(orig: Callable) -> Callable:
    def wrapper(self, *args, **kwargs):
        dtype = args[0] if args else kwargs.get("dtype")
        copy = args[1] if len(args) > 1 else kwargs.get("copy")
        if dtype is not None:  # PyFfiBuffer.__array__ checks dtype first (ffi.cc)
            return _buffer_hit(orig, "Buffer.__array__", "ffi_array_dtype", self, (self,) + args, kwargs)
        if copy is True:
            return _buffer_hit(orig, "Buffer.__array__", "ffi_array_copy", self, (self,) + args, kwargs)
        return orig(self, *args, **kwargs)

    return _mark(wrapper, orig)


def _resolve(module: Any, dotted: str) -> tuple[Any, str] | None:
    owner = module
    *parents, attr = dotted.split(".")
    for name in parents:
        owner = getattr(owner, name, None)
        if owner is None:
            return None
    return owner, attr


def patch_module(name: str, module: Any) -> None:
    """Patch what the shim watches in the just-imported (or already imported) module ``name``."""
    if name == API_MODULE:
        _core.register_exit()   # after JAX's own handler, so it runs before the backends go
    elif name == ARRAY_MODULE:
        patch_array_class(module.ArrayImpl)
    elif name == BUFFER_MODULE:
        buffer_cls = getattr(module, "Buffer", None)
        if buffer_cls is not None:
            WATCHED[buffer_cls] = "buffer"
            _set(buffer_cls, "__dlpack__", _buffer_dlpack)
            _set(buffer_cls, "__array__", _buffer_array)
    for dotted, consumer, argname in MODULE_TARGETS.get(name, ()):
        found = _resolve(module, dotted)
        if found is None:
            continue
        owner, attr = found
        if getattr(owner, attr, None) is None:
            continue
        _set(owner, attr, functools.partial(consumer_wrapper, consumer=consumer, argname=argname))


def patch_array_class(cls: type) -> None:
    """Replace jax.Array's export methods on the (C++) class ``cls`` in place."""
    WATCHED[cls] = "array"
    for name in ("__dlpack__", "__dlpack_device__", "unsafe_buffer_pointer"):
        if name in vars(cls):
            _set(cls, name, functools.partial(method_wrapper, name=name))
    if isinstance(vars(cls).get("__cuda_array_interface__"), property):
        _set(cls, "__cuda_array_interface__", cai_property)


_REAL_MEMORYVIEW = builtins.memoryview


class _MemoryviewType(type):
    """Metaclass of :class:`ShimMemoryview`: instance and subclass checks, and attributes
    (``memoryview.cast``), answer for the real ``memoryview``."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _REAL_MEMORYVIEW)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, _REAL_MEMORYVIEW)

    def __getattr__(cls, name):
        return getattr(_REAL_MEMORYVIEW, name)


class ShimMemoryview(metaclass=_MemoryviewType):
    """What ``builtins.memoryview`` is while the shim is installed: ``memoryview(x)`` of a
    multi-device jax.Array is a hit (JXI003, path ``buffer_protocol``: jax-interop.md
    section 2, ``PyArray_bf_getbuffer`` in jaxlib/xla/py_array.cc, run on jax 0.10.2);
    every call returns a real ``memoryview``."""

    __jaxinterop_shim__ = True
    __wrapped__ = _REAL_MEMORYVIEW

    def __new__(cls, obj):
        if WATCHED.get(type(obj)) == "array":
            code, path_key = CONSUMERS["memoryview"]
            return _array_hit(_REAL_MEMORYVIEW, "memoryview", code, path_key, obj, (obj,), {})
        return _REAL_MEMORYVIEW(obj)


def patch_builtins() -> None:
    """Watch ``memoryview(x)``: put :class:`ShimMemoryview` in place of the builtin."""
    _set(builtins, "memoryview", lambda original: ShimMemoryview)


def unwatch_all() -> None:
    """Forget the watched types (after restore_all)."""
    WATCHED.clear()
