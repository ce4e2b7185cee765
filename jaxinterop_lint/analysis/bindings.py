"""Bindings of the provenance walk: assignment targets (names, unpacking, attributes,
entries), dotted keys read and written as parts of the value bound to a name, and the
refinements a guard applies.  A mixin of :class:`~.flow.Walker`."""
from __future__ import annotations

import libcst as cst

from . import conditions
from . import parts as P
from . import values as V
from .expr import constant_key
from .imports import dotted
from .values import Value

SINGLE = conditions.ALL


_DEFAULT_KINDS = frozenset({V.SHARDING, V.MESH, V.DEVICE_LIST, V.ARRAY})


# what a subscript store does not change the value of (a library object, devices, functions)
_NOT_CONTAINERS = frozenset({V.FOREIGN, V.DEVICE_LIST, V.SAFE_LIST, V.FFI_BUFFER, V.QNAME, V.FUNC, V.CLASS})


def _constant_index(target) -> object:
    """The part key of a subscript target's one constant index (``x["w"]``, ``x[0]``), or
    None."""
    if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
        return constant_key(target.slice[0].slice.value)
    return None


def _callable(v: Value, sinks) -> bool:
    """Whether ``v`` is something to call that a parameter's default hands on: a consumer of
    ``sinks``, a function (of the project, a partial, a lambda), or a list, tuple or dict of
    them (``stages=STAGES``)."""
    return P.holds(v, lambda x: x.kind == V.FUNC or x.kind == V.QNAME and x.qname in sinks, 2)


_PART_ALIASES = "_part_aliases"
_PART_READS = frozenset({"setdefault", "get"})


def part_read(value) -> tuple:
    """``(dotted container, index node or None, whole)`` when ``value`` (the right side of
    ``x = value``) reads a part of a dotted container that stays that container's object:
    ``d["a"]``, ``d[k]``, ``d.setdefault(k, {})``, ``d.get(k)`` (``whole`` False), or an
    attribute ``self.hist`` (``whole`` True: the key is the attribute itself); else
    ``(None, None, False)``.  ``d.get(k, default)`` is not one: its default may be a fresh
    object."""
    if isinstance(value, cst.Subscript) and len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Index):
        return dotted(value.value), value.slice[0].slice.value, False
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in _PART_READS and value.args and not value.args[0].keyword \
            and not value.args[0].star and (value.func.attr.value == "setdefault" or len(value.args) == 1):
        return dotted(value.func.value), value.args[0].value, False
    if isinstance(value, cst.Attribute):
        return dotted(value), None, True
    return None, None, False


def _held_by_class(owner: Value, attr: str, v: Value) -> None:
    """``v`` stored in attribute ``attr`` of ``owner`` (an instance or a class of this
    project): joined into what the class's instances may hold there."""
    if owner.kind in (V.INSTANCE, V.CLASS) and owner.cls is not None:
        # through the class: on the class that defines the attribute (one object in Python)
        attrs = (P.static_owner(owner.cls, attr) if owner.kind == V.CLASS else owner.cls).attrs
        attrs[attr] = V.join(attrs.get(attr), P.detach(v))


class BindingMixin:
    """Bind targets and keys in the walker's environment."""

    def bind_defaults(self, rec) -> None:
        """Evaluate the parameter defaults of ``rec``'s def or lambda where it is defined
        (Python evaluates them once, when the ``def`` runs) and keep in ``rec.defaults`` those
        a call that omits the argument gets as a placement or a multi-device array: a
        sharding, mesh or device list, or an array with a known source (``def put(x,
        device=S)``), or as something to call: a consumer, a function, or a container of
        them (``def export(x, conv=torch.from_dlpack): return conv(x)``).  A default that depends on the enclosing function's parameters is not
        kept (it is not the same value at every call)."""
        from .records import param_nodes

        for i, p in enumerate(param_nodes(rec.node)):
            if p.default is None:
                continue
            v = self.eval(p.default)
            if v.kind in _DEFAULT_KINDS and not v.deps and (v.kind != V.ARRAY or v.multi is not None) \
                    or _callable(v, self.ma.kb.call_sinks):
                rec.defaults[i] = v

    def assign(self, target, v: Value, node) -> None:
        """Bind ``target`` to ``v``: a name, a tuple or list of targets (unpacking element by
        element when the elements are known, a starred target getting a list), an attribute
        or an entry (a part of the value of the name it is read from)."""
        if isinstance(target, cst.Name):
            name = target.value
            if v.multi is not None:
                v = V.evolve(v, multi=v.multi.step(f"assigned to `{name}`", node, self.ma))
            self.env[name] = v
            aliases = self.__dict__.get(_PART_ALIASES)
            if aliases:
                aliases.pop(name, None)
            if name in self.declared_globals:
                self.note_global(name, False)
            elif name in self.declared_nonlocals:
                self.cell_writes[name] = V.join(self.cell_writes.get(name), v)
        elif isinstance(target, (cst.Tuple, cst.List)):
            els = target.elements
            star = next((i for i, e in enumerate(els) if isinstance(e, cst.StarredElement)), None)
            for el, part in zip(els, P.unpack(v, len(els), star)):
                self.assign(el.value, part, node)
        elif isinstance(target, cst.StarredElement):
            self.assign(target.value, v, node)
        elif isinstance(target, cst.Attribute):
            key = dotted(target)
            owner = self.lookup(target.value.value) if isinstance(target.value, cst.Name) else self.eval(target.value)
            # ``self.x = v``, or ``cls.x = v`` in a classmethod (``setUpClass``): every
            # instance reads it (:meth:`~.module.ModuleAnalysis.class_attribute`)
            _held_by_class(owner, target.attr.value, v)
            if key is not None:
                self.write_key(key, v)
                self.note_global(key, True)
        elif isinstance(target, cst.Subscript):
            self.eval_children(target)
            key = dotted(target.value)
            if key is None:
                if isinstance(target.value, cst.Subscript):
                    # ``params["fc"]["w"] = v``: the inner container with the entry, bound back
                    # where it was read (``params["fc"] = ...``, recursively)
                    inner = self.eval(target.value)
                    index = _constant_index(target)
                    if index is not None and inner.kind not in _NOT_CONTAINERS and \
                            not (inner.kind == V.ARRAY and not inner.structured and inner.ref is None):
                        self.assign(target.value, P.with_part(inner, index, v), node)
                return
            current = self.read_key(key)
            if current.kind in _NOT_CONTAINERS:
                return
            if current.kind == V.ARRAY and not current.structured and current.ref is None:
                # ``y[i] = v`` on an array (``.at[].set`` in JAX, in place in NumPy): computed.
                self.write_key(key, self.computed((current, v)))
                return
            index = _constant_index(target)
            new = P.with_part(current, index, v) if index is not None else P.with_rest(current, v)
            self.write_key(key, new)
            self.store_on_class(key, new)
            self.note_global(key, True)

    def note_part_alias(self, node: cst.Assign) -> None:
        """After ``x = d["a"]`` (or ``d.setdefault(k, {})``, ``d.get(k)``, ``self.hist``)
        binding a container: ``x`` is that part of ``d``'s object, so what later changes
        ``x`` in place (``x.append(v)``, ``x["last"] = v``, ``x.update(...)``) changes it
        in ``d`` too (:meth:`write_key`).  Hunt41 p13: ``bucket = stats.setdefault(name,
        {}); bucket.update(last=value)``.  Rebinding ``x`` ends it (:meth:`assign`)."""
        if self.env is None or len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        base, index, whole = part_read(node.value)
        if base is None:
            return
        name = node.targets[0].target.value
        held = self.env.get(name)
        if held is None or held.kind in _NOT_CONTAINERS or held.kind == V.ARRAY and not held.structured \
                or base.split(".")[0] == name:
            return
        key = None if whole else constant_key(index)
        self.__dict__.setdefault(_PART_ALIASES, {})[name] = (base, key, whole)

    def _write_through(self, name: str, depth: int) -> None:
        """``name`` (a part alias: :meth:`note_part_alias`) changed in place: the part of its
        container is its new value."""
        base, key, whole = self.__dict__[_PART_ALIASES][name]
        value = self.env[name]
        if not whole:
            current = self.read_key(base)
            if current.kind in _NOT_CONTAINERS or current.kind == V.ARRAY and not current.structured \
                    and current.ref is None:
                return
            value = P.with_part(current, key, value) if key is not None else P.with_rest(current, value)
        self.write_key(base, value, depth + 1)
        self.store_on_class(base, value)
        self.note_global(base, True)

    def store_on_class(self, key: str, new: Value) -> None:
        """``self.params[k] = v`` or ``self.cache.append(v)`` (``key`` ``"self.params"``,
        ``new`` the container's new value): what the instances of the class of ``self`` (or
        the class itself, ``cls.x`` in a classmethod) hold in that attribute, as for
        ``self.params = new`` (:meth:`~.module.ModuleAnalysis.class_attribute`)."""
        head, _, attr = key.partition(".")
        if attr and "." not in attr:
            owner = self.lookup(head)
            if owner.kind != V.CLASS or self.rec is None or self.env is None:
                _held_by_class(owner, attr, new)
            else:
                # ``Exporter.REGISTRY[name] = cls`` in a function (or ``cls.REGISTRY[...]`` in
                # a classmethod or ``__init_subclass__``): a write of the module's class,
                # applied at each call with its arguments (module_state.apply_globals; what
                # it holds depends on them: not stored on the class here)
                cls = P.static_owner(owner.cls, attr)
                held = self.ma.globals.get(cls.name)
                if head not in self.env or held is not None and held.kind == V.CLASS and held.cls is cls:
                    name = f"{cls.name}.{attr}" if head in self.env else key
                    self.global_writes[name] = V.join(self.global_writes.get(name), new)
                else:
                    _held_by_class(owner, attr, new)

    def read_key(self, key: str) -> Value:
        """The value of a dotted key (``x``, ``self.params``) without recording anything."""
        if "." not in key:
            return self.lookup(key)
        names = key.split(".")
        value = self.lookup(names[0])
        for name in names[1:]:
            if value.kind == V.QNAME:
                return V.UNKNOWN_VALUE
            if value.kind == V.CLASS and value.cls is not None:
                # ``Cls.REGISTRY``: the class attribute, so that ``Cls.REGISTRY[k] = v`` fills it
                value = P.class_static(value.cls, name) or V.UNKNOWN_VALUE
                continue
            value = P.read(value, V.attr_key(name))
        return value

    def write_key(self, key: str, value: Value, depth: int = 0) -> None:
        """Bind a dotted key: ``x`` itself, or the part ``.b.c`` of the value bound to ``a``
        for ``a.b.c`` (module references, classes and functions are left as they are).  When
        ``a`` is a part alias (:meth:`note_part_alias`), its container changes with it."""
        if self.env is None:
            return
        names = key.split(".")
        if len(names) == 1:
            self.env[key] = value
        else:
            holders = [self.lookup(names[0])]
            if holders[0].kind in (V.QNAME, V.CLASS, V.FUNC):
                return
            for name in names[1:-1]:
                holders.append(P.read(holders[-1], V.attr_key(name)))
            for holder, name in zip(reversed(holders), reversed(names[1:])):
                value = P.with_part(holder, V.attr_key(name), value)
            self.env[names[0]] = value
        aliases = self.__dict__.get(_PART_ALIASES)
        if aliases and names[0] in aliases and depth < 8:
            self._write_through(names[0], depth)

    def refine(self, refs: dict, test) -> None:
        """Apply a guard's refinements to the current environment."""
        if self.env is None:
            return
        for key, action in refs.items():
            if key == SINGLE:
                self.env[SINGLE] = V.SAFE_VALUE
            elif action == conditions.SAFE:
                self.write_key(key, V.SAFE_VALUE)
            elif action == conditions.NOT_ARRAY:
                # a value of this function that is no container (a parameter may be a pytree
                # of arrays: what its caller passes decides, as before)
                current = self.read_key(key)
                if not current.structured and current.kind in (V.ARRAY, V.UNKNOWN) and current.ref is None \
                        and not current.deps:
                    self.write_key(key, V.SAFE_VALUE)
            else:
                node = action[1] if isinstance(action, tuple) else test
                current = self.read_key(key)
                if current.kind not in (V.SAFE, V.FOREIGN):
                    self.write_key(key, V.evolve(current, false_guard=node))

    def tested_value(self, node) -> Value:
        """The value of a test expression (a name or a call) for :mod:`.conditions`: the
        value the walk just computed for it, or a fresh evaluation."""
        if self._tested is not None and self._tested[0] is node:
            return self._tested[1]
        if isinstance(node, cst.Name):
            return self.lookup(node.value)
        return self.eval(node)

    def still_holds(self, snapshot) -> bool:
        """Whether the keys a stored test measured still have the values they had."""
        for key, value in snapshot or ():
            now = self.read_key(key)
            if now is not value and now != value:
                return False
        return True
