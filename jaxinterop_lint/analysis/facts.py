"""The API facts of issue 12 applied to calls: exact placements (device arrays, meshes,
shardings on one-device meshes), mesh contexts, compiled stages, ``flax.jax_utils``, FFI
buffer methods, ``getattr`` with a constant name, and the project's own APIs named in the
configuration.  Every fact comes from a table of :mod:`jaxinterop_lint.knowledge.apis`, where
its source (JAX file and version, or a run on 8 CPU devices) is written.

:class:`FactsMixin` is a base of :class:`~jaxinterop_lint.analysis.calls.CallMixin`; the walk
calls :meth:`FactsMixin.known_method` for every method call, :meth:`placement_call` for every
library call, and :func:`declared_name` when it binds a ``def``.
"""
from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from ..knowledge import apis
from . import conditions, placements
from . import parts as P
from . import values as V
from .events import FfiCopyEvent
from .values import Origin, Value

MESH_KEY = "@mesh"
"""The environment key of the mesh set by ``jax.set_mesh`` (a MESH value) where one is set."""


def _short(qn: str) -> str:
    """``jnp.zeros`` for ``jax.numpy.zeros`` ...: a qualified name as messages write it."""
    for long, short in (("jax.numpy.", "jnp."), ("numpy.", "np."), ("builtins.", "")):
        if qn.startswith(long):
            return short + qn[len(long):]
    return qn


def module_name(ma) -> str:
    """The dotted name Python gives the module of ``ma`` (its project's name for the file,
    else its package plus its file name)."""
    project = getattr(ma, "project", None)
    path = getattr(ma, "path", "") or ""
    if project is not None:
        name = project.module_name(path)
        if name:
            return name
    stem = os.path.splitext(os.path.basename(path))[0]
    package = getattr(ma, "package", "") or ""
    if stem == "__init__":
        return package
    return f"{package}.{stem}" if package else stem


def declared_name(ma, rec) -> Optional[str]:
    """The name by which the configuration (extend-sources, extend-sinks, extend-sanitizers)
    declares the function ``rec`` of module ``ma``, else None: its qualified name in that
    module, or in a package above it (``mylib.shard_batch`` for ``shard_batch`` of
    ``mylib/interop.py``: the public name a package re-exports it under)."""
    if not ma.kb.declared:
        return None
    parts = module_name(ma).split(".")
    for i in range(len(parts), 0, -1):
        qn = ".".join(parts[:i] + [rec.name])
        if ma.kb.declares(qn):
            return qn
    return None


def _scalar_reduction(node) -> bool:
    """``jnp.mean(x)``, ``x.sum()``, ``jax.numpy.linalg.norm(x)``: a reduction with no axis,
    whose result is a 0-d array (apis.SCALAR_REDUCTIONS)."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    names = []
    while isinstance(func, cst.Attribute):
        names.insert(0, func.attr.value)
        func = func.value
    if not names:
        return False
    last = names[-1]
    tail = ".".join(names[-2:])
    if last not in apis.SCALAR_REDUCTIONS and tail not in apis.SCALAR_REDUCTIONS:
        return False
    method = isinstance(node.func, cst.Attribute) and not (isinstance(func, cst.Name) and func.value in ("jnp", "np", "jax", "numpy"))
    positional = [a for a in node.args if a.keyword is None and not a.star]
    if any(a.keyword is not None and a.keyword.value in ("axis", "axes") for a in node.args):
        return False
    return len(positional) <= (0 if method else 1)


# the last key of a placement's parameter path when the callee built a sharding on that
# parameter (``NamedSharding(mesh, P())`` with ``mesh`` a parameter): InstantiateMixin.placed_through
ON_MESH = "@mesh"


def sharding_on(desc: str, mesh: Optional[Value]) -> Value:
    """A sharding ``desc`` (``NamedSharding``: apis.MESH_SHARDINGS) built on ``mesh`` (its
    value; None when not given): on a MESH of one device a single-device placement (a
    DEVICE), on another MESH a SHARDING of its devices, on (a part of) a parameter a
    SHARDING whose reference ends in :data:`ON_MESH` (each caller's mesh decides, where the
    callee places with it (InstantiateMixin.placed_through) or returns it (InstantiateMixin.
    instantiate)); on anything else a SHARDING, several devices as an unknown mesh is."""
    if mesh is not None and mesh.kind == V.MESH and mesh.devices is None and len(mesh.deps) == 1 \
            and next(iter(mesh.deps))[1][-1:] == (ON_MESH,):
        # a mesh of a parameter's devices (FactsMixin.parameter_devices): each caller's
        # devices decide, as for a parameter's mesh
        on = next(iter(mesh.deps))
        return Value(kind=V.SHARDING, desc=desc, deps=frozenset({on}), ref=on)
    shape = placements.device_shape(mesh) if mesh is not None and mesh.kind != V.MESH else None
    if shape is not None:
        # the devices a caller gives a mesh built on its parameter (parameter_devices)
        mesh = Value(kind=V.MESH, devices=shape)
    if mesh is not None and mesh.kind == V.MESH:
        if placements.single(mesh):
            return Value(kind=V.DEVICE, desc=f"{desc} on a one-device mesh", devices=(1,))
        return Value(kind=V.SHARDING, desc=desc, devices=mesh.devices)
    if mesh is not None and mesh.ref is not None and mesh.multi is None:
        on = (mesh.ref[0], mesh.ref[1] + (ON_MESH,))
        return Value(kind=V.SHARDING, desc=desc, deps=frozenset({on}), ref=on)
    return Value(kind=V.SHARDING, desc=desc)


class FactsMixin:
    """Calls and methods whose meaning is a fact of the tables (see the module docstring)."""

    # -- mesh contexts -------------------------------------------------------------------
    def mesh_context(self) -> Optional[Value]:
        """The mesh ``jax.set_mesh`` set where the walk is (a MESH value), or None."""
        env = self.env
        if env is not None and MESH_KEY in env:
            return env[MESH_KEY]
        closure = self.closure
        if closure is not None and MESH_KEY in closure:
            return closure[MESH_KEY]
        return None

    def under_mesh(self, node, result: Value, what: str) -> Value:
        """``result`` made under the mesh context: on every device of a mesh that is not
        known to hold one device (apis.MESH_CONTEXTS)."""
        mesh = self.mesh_context()
        if mesh is None or mesh.kind != V.MESH or placements.single(mesh):
            return result
        if result.multi is not None or result.kind not in (V.ARRAY, V.SAFE, V.UNKNOWN):
            return result
        return V.multi(Origin(f"{what} under {mesh.desc or 'jax.set_mesh'}", node, self.ma, self.function))

    def set_mesh(self, node, mesh: Optional[tuple]) -> None:
        """``jax.set_mesh(mesh)``: from here on (or until the ``with`` ends) ``mesh`` is set;
        ``jax.set_mesh(None)`` unsets it."""
        if self.env is None:
            return
        if mesh is None or (isinstance(mesh[1], cst.Name) and mesh[1].value == "None"):
            self.env.pop(MESH_KEY, None)
            return
        value, expr = mesh
        devices = value.devices if value.kind == V.MESH else None
        self.env[MESH_KEY] = Value(kind=V.MESH, devices=devices, desc=f"jax.set_mesh({self.text(expr)})")

    # -- library calls -------------------------------------------------------------------
    def placement_call(self, node, qn: str, pos: list, kw: dict) -> Optional[Value]:
        """The value of a library call that a placement table describes, or None."""
        first = pos[0] if pos else None
        if qn in apis.DEVICE_LISTS:
            return placements.device_list(placements.ANY_DEVICES, qn in apis.GLOBAL_DEVICE_LISTS and not pos and not kw)
        if qn in apis.DEVICE_ARRAY_CONVERTERS and first is not None:
            shape = placements.device_shape(first[0])
            if shape is not None:
                return placements.device_list(shape, placements.every(first[0]))
            return None
        built = apis.MESH_SHAPE_CALLS.get(qn)
        if built is not None:
            what, indexes, names = built
            shapes = []
            for i, name in zip(indexes, names):
                arg = pos[i] if len(pos) > i else kw.get(name)
                shapes.append(placements.literal_shape(arg[1], self.int_constant)
                              if arg is not None and arg[1] is not None else None)
            shape = placements.combined(shapes)
            whole = len(shapes) == 1 and self.counts_every_device(pos[indexes[0]] if len(pos) > indexes[0]
                                                                  else kw.get(names[0]))
            on = self._shape_call_devices(qn, pos, kw) if placements.count(shape) is None and not whole else None
            if on is not None:
                # ``jax.make_mesh((len(devices),), ..., devices=devices)`` with ``devices`` a
                # parameter: placed on the caller's devices, as ``Mesh(np.array(devices))``
                return Value(kind=V.MESH, deps=frozenset({on})) if what == "mesh" else None
            if what == "mesh":
                return Value(kind=V.MESH, devices=shape, desc=placements.EVERY if whole else None)
            return placements.device_list(shape, whole)
        mesh_ctor = apis.MESH_CONSTRUCTORS.get(qn)
        if mesh_ctor is not None:
            index, name = mesh_ctor
            arg = pos[index] if len(pos) > index else kw.get(name)
            shape = placements.device_shape(arg[0]) if arg is not None else None
            on = self.parameter_devices(arg[1]) if shape is None and arg is not None else None
            if on is not None:
                # ``Mesh(np.array(devices), ...)`` with ``devices`` a parameter: a sharding
                # built on it is placed on the caller's devices (sharding_on)
                return Value(kind=V.MESH, deps=frozenset({on}))
            return Value(kind=V.MESH, devices=shape,
                         desc=placements.EVERY if arg is not None and placements.every(arg[0]) else None)
        on_mesh = apis.MESH_SHARDINGS.get(qn)
        if on_mesh is not None:
            index, name = on_mesh
            arg = pos[index] if len(pos) > index else kw.get(name)
            return sharding_on(qn.rsplit(".", 1)[-1], arg[0] if arg is not None else None)
        if qn in apis.PARTITION_SPECS:
            return Value(kind=V.SHARDING, desc="PartitionSpec")
        if qn in apis.SINGLE_DEVICE_CONSTRUCTORS:
            return Value(kind=V.DEVICE)
        if qn in apis.MESH_CONTEXTS:
            self.set_mesh(node, first if first is not None else kw.get("mesh"))
            return V.UNKNOWN_VALUE
        replicator = apis.FLAX_REPLICATORS.get(qn)
        if replicator is not None:
            index, name = replicator
            arg = pos[index] if len(pos) > index else kw.get(name)
            if arg is not None and placements.count(placements.device_shape(arg[0])) == 1:
                return V.SAFE_VALUE
            return V.multi(Origin(qn, node, self.ma, self.function))
        if qn == apis.FLAX_UNREPLICATE:
            if first is not None and first[0].multi is not None and _scalar_reduction(first[1]):
                origin = first[0].multi.step(f"{_short(qn)}() keeps a 0-d array on every device", node, self.ma)
                return V.Value(kind=V.ARRAY, multi=origin)
            return V.SAFE_VALUE
        loader = apis.MODULE_LOADERS.get(qn)
        name = self.module_name_of(pos[0][1]) if loader is not None and pos else None
        if name is not None:
            # ``importlib.import_module("torch.utils.dlpack")``, ``import_module(FRAMEWORK)``
            # (a module constant): that module, as ``import`` binds it
            if loader == "top" and not (len(pos) > 3 or "fromlist" in kw):
                name = name.split(".")[0]
            value = V.qname(name)
            return self.ma.project_value(value) if self.ma.project is not None else value
        if qn == apis.GETATTR and len(pos) >= 2 and isinstance(pos[1][1], cst.SimpleString):
            return self.named_attribute(node, pos[0], pos[1][1].evaluated_value, default=len(pos) > 2)
        if qn == apis.GETATTR and len(pos) >= 2 and pos[0][0].kind in (V.INSTANCE, V.CLASS) and pos[0][0].cls is not None:
            # ``getattr(self, f"_place_{self.strategy}")``: any method whose name has that prefix
            prefix = name_prefix(pos[1][1])
            names = sorted(n for n in pos[0][0].cls.methods if prefix and n.startswith(prefix))
            if names:
                return V.join_all([self.named_attribute(node, pos[0], n, default=len(pos) > 2) for n in names])
        if qn == apis.GETATTR and len(pos) >= 2 and not isinstance(pos[1][1], cst.SimpleString) \
                and (pos[0][0].structured or pos[0][0].ref is not None):
            # ``getattr(head, f.name)`` over ``dataclasses.fields(head)``, ``getattr(state, name)``
            # for ``name in ("mu", "nu")``: any attribute it has
            found = P.read(pos[0][0], V.ANY_ATTR)
            return V.join(found, pos[2][0]) if len(pos) > 2 else found
        if qn == apis.SETATTR and len(pos) == 3 and isinstance(pos[1][1], cst.SimpleString) \
                and isinstance(pos[1][1].evaluated_value, str) and pos[0][1] is not None:
            # ``setattr(s, "w", v)`` is ``s.w = v``
            target = cst.Attribute(value=pos[0][1], attr=cst.Name(pos[1][1].evaluated_value))
            self.assign(target, pos[2][0], node)
            return V.SAFE_VALUE
        return None

    def parameter_devices(self, node) -> Optional[tuple]:
        """For the devices argument of a mesh constructor that is (a part of) a parameter,
        maybe converted and reshaped (``np.array(devices)``, ``np.asarray(devs).reshape(2,
        -1)``: apis.DEVICE_ARRAY_CONVERTERS, apis.DEVICE_ARRAY_METHODS), the parameter
        reference ending in :data:`ON_MESH` that a sharding on the mesh is placed by; None
        for anything else (hunt45 p20: ``restore(jax.devices()[:1])`` builds a one-device
        mesh)."""
        while isinstance(node, cst.Call) and node.args:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in apis.DEVICE_ARRAY_METHODS:
                node = func.value
                continue
            qn = self.eval(func).qname
            if qn in apis.DEVICE_ARRAY_CONVERTERS:
                node = node.args[0].value
            elif qn in apis.MESH_SHAPE_DEVICES:
                # ``create_device_mesh((len(devices),), devices)``: the devices it is given
                index, keyword = apis.MESH_SHAPE_DEVICES[qn]
                pos, kw = placements.own_arguments(node)
                found = pos[index] if index is not None and len(pos) > index else kw.get(keyword)
                if found is None:
                    return None
                node = found
            else:
                return None
        if not isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
            return None
        value = self.eval(node)
        if value.ref is None or value.multi is not None or value.kind in (V.DEVICE_LIST, V.MESH, V.SHARDING, V.DEVICE):
            return None
        return value.ref[0], value.ref[1] + (ON_MESH,)

    def _shape_call_devices(self, qn: str, pos: list, kw: dict) -> Optional[tuple]:
        """For a call of ``apis.MESH_SHAPE_DEVICES`` given devices that are (a part of) a
        parameter, the reference :meth:`parameter_devices` gives; None otherwise."""
        spec = apis.MESH_SHAPE_DEVICES.get(qn)
        if spec is None:
            return None
        index, keyword = spec
        arg = pos[index] if index is not None and len(pos) > index else kw.get(keyword)
        return self.parameter_devices(arg[1]) if arg is not None and arg[1] is not None else None

    def module_name_of(self, node) -> Optional[str]:
        """The absolute module name a string literal or a module constant spells, or None."""
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            name = node.evaluated_value
        elif isinstance(node, cst.Name):
            name = self.test_constant(node)
        else:
            return None
        return name if isinstance(name, str) and name and not name.startswith(".") else None

    def int_constant(self, node):
        """The module-level constant (an int or a tuple of ints) ``node`` stands for, or None
        (:mod:`.constants`)."""
        from .constants import constant_int

        return constant_int(self, node)

    def test_constant(self, node):
        """The module constant (an int, string or bool) a test reads: ``DEBUG``,
        ``CONFIG["mode"]``, ``Cfg.mode`` (:func:`~.constants.constant_scalar`), or None; a
        name the function binds, or a module name that holds no constant value (a
        function, a module, what a call returned), reads none."""
        head = node
        while isinstance(head, (cst.Subscript, cst.Attribute)):
            head = head.value
        if not isinstance(head, cst.Name) or self.rec is not None and self.env is not None and head.value in self.env:
            return None
        held = self.ma.globals.get(head.value)
        if held is None or held.kind != V.SAFE and not (held.kind == V.QNAME and held.qname in _BOOLS):
            return None
        from .constants import constant_scalar

        return constant_scalar(self, node)

    def counts_every_device(self, arg) -> bool:
        """Whether a mesh-shape argument is ``(jax.device_count(),)`` or ``(len(jax.devices()),)``:
        one dimension holding every device of the process (``jax.make_mesh`` takes the devices
        of ``jax.devices()``, jax/_src/sharding_impls.py make_mesh, jax 0.10.2)."""
        node = arg[1] if arg is not None else None
        if not isinstance(node, (cst.Tuple, cst.List)) or len(node.elements) != 1:
            return False
        return conditions.count_subject(self, node.elements[0].value) == conditions.ALL

    # -- getattr with a constant name ------------------------------------------------------
    def constant_getattr(self, expr) -> Optional[tuple]:
        """``(object node, name)`` when ``expr`` is ``getattr(obj, "name"[, default])``."""
        if not isinstance(expr, cst.Call) or not 2 <= len(expr.args) <= 3 \
                or any(a.keyword is not None or a.star for a in expr.args):
            return None
        name = expr.args[1].value
        if not isinstance(name, cst.SimpleString) or not isinstance(name.evaluated_value, str):
            return None
        callee = self.eval(expr.func)
        if callee.kind != V.QNAME or callee.qname != apis.GETATTR:
            return None
        return expr.args[0].value, name.evaluated_value

    def named_attribute(self, node, obj: tuple, name: str, default: bool = False) -> Value:
        """``getattr(obj, "name")`` read (not called): the attribute it names.  With a default
        a failing attribute is no error, so an attribute sink there is not an export."""
        value, expr = obj
        if value.kind in (V.QNAME, V.INSTANCE, V.CLASS):
            self._callee = node
            try:
                return self.attribute(node, value, name)
            finally:
                self._callee = None
        if value.structured:    # a record's field (``getattr(adam_state, "mu")``: as ``adam_state.mu``)
            return P.read(value, V.attr_key(name))
        sink = apis.ATTRIBUTE_SINKS.get(name)
        if sink is not None and not default:
            self.sink(node, f"`{name}`", sink, value, expr)
        return V.UNKNOWN_VALUE

    def call_named_attribute(self, node, getter, expr, name: str) -> Value:
        """``getattr(obj, "name")(*args)``: the call it names."""
        recv = self.eval(expr)
        for a in getter.args[1:]:
            self.eval(a.value)
        pos, kw = self.arguments(node)
        if recv.kind == V.DEFERRED:    # its class opened when the arguments may be multi-device
            recv = self.open_instance(recv, pos, kw) or V.UNKNOWN_VALUE
        if recv.kind in (V.QNAME, V.INSTANCE, V.CLASS):
            self._callee = getter
            try:
                f = self.attribute(getter, recv, name)
            finally:
                self._callee = None
            return self.apply(node, f, pos, kw)
        sink = apis.METHOD_SINKS.get(name)
        if sink is not None and recv.kind != V.FFI_BUFFER:
            self.sink(node, f"`.{name}()`", sink, recv, expr)
            return Value(kind=V.CAPSULE) if name == "__dlpack__" else V.SAFE_VALUE
        return V.UNKNOWN_VALUE

    # -- methods ---------------------------------------------------------------------------
    def known_method(self, node, recv: Value, attr: str, pos: list, kw: dict) -> Optional[Value]:
        """``recv.attr(...)`` when a table says what it is, else None: stages of a jitted
        function, device-array methods, and every method of an FFI buffer."""
        kind = recv.kind
        if kind == V.FUNC and attr in apis.COMPILE_STAGES:
            return recv
        if kind == V.DEVICE_LIST and attr in apis.DEVICE_ARRAY_METHODS:
            return placements.method_result(recv.devices, apis.DEVICE_ARRAY_METHODS[attr], [n for _, n in pos],
                                            placements.every(recv), self.int_constant)
        if kind == V.FFI_BUFFER:
            return self.ffi_method(node, attr, pos, kw)
        return None

    def ffi_method(self, node, attr: str, pos: list, kw: dict) -> Value:
        """A method of an FFI buffer: ``__dlpack__(copy=True)``, ``__array__(copy=True |
        dtype)`` and the copying methods Buffer lacks (``buf.copy()``) are JXI004."""
        receiver = node.func.value
        how = None
        if attr == "__dlpack__" and _is(kw.get("copy"), "True"):
            how = "copy=True"
        elif attr == "__array__":
            if pos or ("dtype" in kw and not _is(kw["dtype"], "None")):
                how = "dtype"
            elif _is(kw.get("copy"), "True"):
                how = "array-copy=True"
        elif attr in apis.FFI_MISSING_COPY_METHODS:
            how = "no-method"
        if how is not None:
            self.record(FfiCopyEvent(node, f"{attr}()" if attr.startswith("__") else f"`.{attr}()`",
                                     receiver, how, self.function))
        if attr == "__dlpack__":
            return Value(kind=V.CAPSULE)
        return V.FOREIGN_VALUE if attr == "__array__" else V.SAFE_VALUE


def _is(arg, name: str) -> bool:
    return arg is not None and isinstance(arg[1], cst.Name) and arg[1].value == name


_BOOLS = frozenset({"builtins.True", "builtins.False"})


def name_prefix(node) -> Optional[str]:
    """The literal start of an attribute name computed by ``node``: ``"_place_"`` of
    ``f"_place_{strategy}"`` or of ``"_place_" + strategy``; None when it starts with no
    literal text."""
    if isinstance(node, cst.FormattedString) and node.parts and isinstance(node.parts[0], cst.FormattedStringText):
        return node.parts[0].value or None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add) \
            and isinstance(node.left, cst.SimpleString) and isinstance(node.left.evaluated_value, str):
        return node.left.evaluated_value or None
    return None
