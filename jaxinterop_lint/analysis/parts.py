"""Pure operations on the parts of abstract values (no events, no environment): read a part
or a path, store a part, build containers and instances, unpack, iterate, map over leaves.

A structured value's own fields (``multi``, ``deps``, ``kind``) summarise all its parts, so
code that does not look at parts sees a conservative value; reading a part gives that part's
own provenance.  See :mod:`.values` for the key format.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from ..knowledge import apis
from ..knowledge import structures as S
from . import values as V
from .values import ANY, ITEM, Value


def array_attribute(value: Value, attr: str) -> Optional[Value]:
    """What the attributes of an array that are not arrays give (``x.sharding``,
    ``x.addressable_shards``, ``x.shape``...), or None for any other attribute."""
    if attr in ("addressable_shards", "global_shards"):
        return Value(kind=V.SAFE_LIST)
    if attr in apis.PLACEMENT_ATTRIBUTES:
        if value.multi is not None:
            return Value(kind=V.SHARDING, desc="the sharding of a multi-device array")
        if value.deps:
            return None
    if attr in apis.SAFE_ATTRIBUTES:
        return V.SAFE_VALUE if value.kind != V.UNKNOWN else V.UNKNOWN_VALUE
    return None


def _children(elements, parts, rest) -> Iterable[Value]:
    if elements:
        yield from elements
    if parts:
        for _, p in parts:
            yield p
    if rest is not None:
        yield rest


def holds(value: Value, test, depth: int) -> bool:
    """Whether ``test(value)``, or ``value`` is a container (``depth`` levels at most) one of
    whose elements, entries or rest holds it (``HANDLERS = {"torch": torch.from_dlpack}``)."""
    if test(value):
        return True
    return depth > 0 and value.structured and any(
        holds(child, test, depth - 1) for child in _children(value.elements, value.parts, value.rest))


def build(elements=None, parts=None, rest=None, *, kind: Optional[str] = None, cls=None,
          container: Optional[str] = None, base: Optional[Value] = None) -> Value:
    """A structured value with these parts; its summary is the join of its parts as arrays
    (and of ``base``'s own dependences when it is a parameter overlaid with parts).  Keyed
    parts beyond :data:`~.values.MAX_PARTS` and elements beyond
    :data:`~.values.MAX_ELEMENTS` fold into ``rest``; deeper than :data:`~.values.MAX_DEPTH`
    only the summary is kept."""
    if parts is not None and len(parts) > V.MAX_PARTS:
        for _, p in parts[V.MAX_PARTS:]:
            rest = V.join(rest, p)
        parts = parts[:V.MAX_PARTS]
    if elements is not None and len(elements) > V.MAX_ELEMENTS:
        for e in elements:
            rest = V.join(rest, e)
        elements = None
    # The summary: the join of the parts as arrays (:func:`~.values.as_array`), computed
    # without building the intermediate values.
    multi, deps, param_array, array, host, depth = None, frozenset(), None, False, True, 0
    for c in _children(elements, parts, rest):
        if c.multi is not None or c.deps or c.param_array or c.donated is not None:
            array = True
            if multi is None:
                multi = c.multi
            if c.deps:
                deps = deps | c.deps if deps else c.deps
            param_array = param_array or c.param_array
        elif c.kind not in (V.SAFE, V.FOREIGN):
            host = False
        if c.depth >= depth:
            depth = c.depth + 1
    ref = None
    if base is not None:
        ref = base.ref
        if base.deps or base.multi is not None:
            array = True
            multi = multi or base.multi
            deps = deps | base.deps
    if depth > V.MAX_DEPTH:
        if kind == V.INSTANCE:
            return Value(kind=V.INSTANCE, cls=cls, multi=multi, deps=deps, ref=ref)
        if array:
            return Value(kind=V.ARRAY, multi=multi, deps=deps, param_array=param_array)
        return V.SAFE_VALUE if host else V.UNKNOWN_VALUE
    if kind is None:
        kind = V.ARRAY if array else V.SAFE if host else V.UNKNOWN
    return Value(kind=kind, multi=multi, deps=deps, param_array=param_array,
                 elements=elements, parts=parts if parts else (() if parts is not None else None),
                 rest=rest, ref=ref, cls=cls, container=container, depth=depth)


def sequence(values, container: str = "tuple") -> Value:
    """A tuple or list of known length."""
    return build(elements=tuple(values), container=container)


def iterable(element: Optional[Value], container: str = "iter") -> Value:
    """A container (or iterator) whose every element is ``element``."""
    return build(rest=element if element is not None else None, container=container)


def instance(cls, fields: dict, positional: Optional[tuple] = None) -> Value:
    """An instance of ``cls`` with per-instance ``fields`` (name -> value); ``positional``
    the elements of a NamedTuple."""
    parts = tuple((V.attr_key(n), v) for n, v in fields.items())
    return build(elements=positional, parts=parts, kind=V.INSTANCE, cls=cls)


def rebuild(value: Value, elements, parts, rest) -> Value:
    """``value`` with new parts, keeping what it is (an instance of its class, a container of
    its sort, a parameter overlaid with parts)."""
    if value.kind in (V.FUNC, V.CLASS, V.QNAME):
        return value
    kind = V.INSTANCE if value.kind == V.INSTANCE else None
    base = value if (value.ref is not None or not value.structured) else None
    return build(elements, parts, rest, kind=kind, cls=value.cls, container=value.container, base=base)


def _class_value(cls, name: str) -> Optional[Value]:
    statics = getattr(cls, "statics", None) or {}
    v = statics.get(name)
    if v is None:
        methods = getattr(cls, "methods", None) or {}
        v = methods.get(name)
    attrs = getattr(cls, "attrs", None) or {}
    if name in attrs:
        v = V.join(v, attrs[name])
    return v


def static_owner(cls, name: str):
    """The class whose own ``class`` statement binds the class attribute ``name`` that
    ``cls`` (a :class:`~.records.ClassRecord`) has: ``cls``, or the base (of this module's
    classes, to any depth) it inherits it from.  Python keeps one object there, so
    ``Cls.REGISTRY[k] = v`` and ``cls.REGISTRY[k] = v`` in a subclass's
    ``__init_subclass__`` change the base's dict (PEP 487)."""
    seen = {id(cls)}
    while True:
        up = next((b for b in getattr(cls, "bases", ()) or () if name in (getattr(b, "statics", None) or {})
                   and id(b) not in seen), None)
        if up is None:
            return cls
        seen.add(id(up))
        cls = up


def class_static(cls, name: str) -> Optional[Value]:
    """What ``Cls.name`` reads on the class ``cls`` (not a method): the value its class
    statement binds, joined with what code stored through the class since
    (``Exporter.REGISTRY["torch"] = TorchExporter``, ``cls.REGISTRY[name] = cls``: kept in
    the ``attrs`` of :func:`static_owner`; over a ``None`` placeholder, :func:`~.values.written`);
    None when neither is known."""
    owner = static_owner(cls, name)
    out = V.written((getattr(cls, "statics", None) or {}).get(name), (getattr(cls, "attrs", None) or {}).get(name))
    if owner is not cls:
        out = V.join(out, V.written(owner.statics.get(name), owner.attrs.get(name)))
    return out


def _item_join(value: Value) -> Optional[Value]:
    out = None
    for e in value.elements or ():
        out = V.join(out, e)
    for k, p in value.parts or ():
        if k[0] != ".":
            out = V.join(out, p)
    return V.join(out, value.rest)


def _ref_part(value: Value, key: str) -> Optional[Value]:
    if value.ref is None:
        return None
    p, path = value.ref
    return V.extend(Value(kind=V.ARRAY, deps=frozenset({value.ref}), ref=value.ref), key) \
        if len(path) < V.MAX_PATH else Value(kind=V.ARRAY, deps=frozenset({value.ref}))


def read(value: Value, key: str) -> Value:
    """The part ``key`` of ``value``.  A listed part is itself; an attribute an instance does
    not list is its class's; an entry or element at an unknown or unlisted key is the join of
    every entry and element; an unstructured value's part is :func:`~.values.extend`'s."""
    if not value.structured:
        if key[0] == ".":
            if value.kind == V.INSTANCE:
                return _instance_attr(value, key)
            if value.kind == V.ARRAY:
                special = array_attribute(value, key[1:])
                if special is not None:
                    return special
        return V.extend(value, key)
    if key != ANY and key != ITEM:
        if value.parts:
            for k, p in value.parts:
                if k == key:
                    return p
        if value.elements is not None:
            i = V.index_of(key)
            if i is not None and -len(value.elements) <= i < len(value.elements):
                return value.elements[i]
    if key == V.ANY_ATTR:
        # ``getattr(obj, name)`` of a name that is not constant: any of its attributes
        out = None
        for k, p in value.parts or ():
            if k[:1] == ".":
                out = V.join(out, p)
        out = V.join(out, _ref_part(value, key))
        if value.container is None and value.rest is not None:
            out = V.join(out, value.rest)   # the attributes it does not list (optax's mu, nu)
        return out if out is not None else V.UNKNOWN_VALUE
    if key[0] == ".":
        if value.kind == V.INSTANCE:
            if key.endswith(V.CALLED) and key[1:-len(V.CALLED)] in S.RECORD_DICT_METHODS:
                return fields_dict(value)
            return _instance_attr(value, key)
        own = _ref_part(value, key)
        if value.container is None and value.rest is not None:
            own = V.join(own, value.rest)   # an object's attributes beyond MAX_PARTS
        if own is not None:
            return own
        return V.SAFE_VALUE if value.kind == V.SAFE else V.UNKNOWN_VALUE
    if value.container == "dict" and key == ANY:
        return V.join(V.SAFE_VALUE, _ref_part(value, key))
    out = V.join(_item_join(value), _ref_part(value, key))
    return out if out is not None else V.UNKNOWN_VALUE


def _instance_attr(value: Value, key: str, stored: Optional[Value] = None) -> Value:
    if stored is None and value.cls is not None:
        stored = _class_value(value.cls, key[1:])
    own = _ref_part(value, key) if value.ref is not None else (
        V.extend(value, key) if value.deps else None)
    if own is None:
        return stored if stored is not None else V.UNKNOWN_VALUE
    if stored is not None and stored.kind == V.QNAME and stored.qname in _CONSTANTS:
        stored = V.SAFE_VALUE   # a class default (``w = None``) that an instance overrides
    if stored is None or stored.kind in (V.UNKNOWN, V.ARRAY, V.SAFE):
        return V.join(stored, own)
    return stored


_CONSTANTS = frozenset({"builtins.None", "builtins.True", "builtins.False"})


def instance_attribute(value: Value, name: str, stored: Optional[Value]) -> Value:
    """``obj.name`` on an instance that lists no such part: the class's value ``stored``
    (a class attribute, or what its methods store on ``self``), joined with the parameter's
    own part when ``obj`` is a parameter (``self`` in a method); a stored non-array (a
    sharding, a function) stands alone."""
    return _instance_attr(value, V.attr_key(name), stored)


def fields_dict(value: Value) -> Value:
    """``record._asdict()`` of an instance that lists its fields (``S.RECORD_DICT_METHODS``):
    a dict whose entry of each field is the field."""
    parts = tuple((V.item_key(k[1:]), p) for k, p in value.parts or () if k[:1] == ".")
    return build(None, parts, None, container="dict")


def lacks_key(value: Value, key: str) -> bool:
    """Whether ``value`` is a dict whose every key is known (a display or a build of constant
    keys: no unknown entries, not a parameter's) and ``key`` is none of them."""
    if value.container != "dict" or value.rest is not None or value.ref is not None or value.deps \
            or value.parts is None or key[0] == "." or key in (ANY, ITEM):
        return False
    return all(k != key for k, _ in value.parts)


def read_path(value: Value, path) -> Value:
    """The part of ``value`` at ``path`` (a tuple of keys)."""
    for key in path:
        value = read(value, key)
    return value


def element_of(value: Value) -> Value:
    """One element of iterating over ``value``: a dict's keys, a sequence's elements."""
    return read(value, ANY)


def any_item(value: Value) -> Value:
    """``value[k]`` for a key that is not a constant: the join of every entry and element."""
    return read(value, ITEM)


def with_part(value: Value, key: str, new: Value) -> Value:
    """``value`` with its part ``key`` set to ``new`` (``d[k] = v``, ``obj.attr = v``)."""
    if key == ANY:
        return with_rest(value, new)
    elements, parts, rest = value.elements, value.parts, value.rest
    if elements is not None:
        i = V.index_of(key)
        if i is not None:
            if -len(elements) <= i < len(elements):
                elements = elements[:i % len(elements)] + (new,) + elements[i % len(elements) + 1:]
                return rebuild(value, elements, parts, rest)
    items = list(parts or ())
    for n, (k, _) in enumerate(items):
        if k == key:
            items[n] = (key, new)
            break
    else:
        items.append((key, new))
    return rebuild(value, elements, tuple(items), rest)


def with_rest(value: Value, new: Value) -> Value:
    """``value`` with ``new`` stored at an unknown position (``d[k] = v`` with a computed key,
    ``insert``, an append of unknown position)."""
    base = None if value.structured else V.generic(value)
    if base is not None and base.kind == V.UNKNOWN and not base.deps:
        base = None
    return rebuild(value, value.elements, value.parts, V.join(V.join(value.rest, base), new))


def append(value: Value, new: Value) -> Value:
    """``value.append(new)``: a known-length sequence grows by one element."""
    if value.elements is not None and len(value.elements) < V.MAX_ELEMENTS:
        return rebuild(value, value.elements + (new,), value.parts, value.rest)
    if value.elements is not None:
        return rebuild(value, None, value.parts, V.join(_item_join(value), new))
    return with_rest(value, new)


def extended(value: Value, other: Value) -> Value:
    """``value.extend(other)`` / ``value += other``."""
    if value.elements is not None and other.elements is not None \
            and len(value.elements) + len(other.elements) <= V.MAX_ELEMENTS:
        return rebuild(value, value.elements + other.elements, value.parts, value.rest)
    merged = with_rest(value, element_of(other))
    if merged.elements is not None:
        merged = rebuild(merged, None, merged.parts, V.join(merged.rest, _item_join(merged)))
    return merged


def merged(value: Value, other: Value) -> Value:
    """``value.update(other)`` / ``{**value, **other}``: the other's entries win."""
    out = value
    for k, p in other.parts or ():
        out = with_part(out, k, p)
    if other.rest is not None or not other.structured:
        g = V.generic(other)
        if g is not None and (g.multi is not None or g.deps):
            out = with_rest(out, g)
    return out


def values_of(value: Value) -> Value:
    """``d.values()``: an iterable of the dict's entries (of a parameter: its entries, the
    path :data:`~.values.ITEM`, never its keys)."""
    return iterable(_item_join(value) if value.structured else V.extend(value, ITEM), "list")


def items_of(value: Value) -> Value:
    """``d.items()``: an iterable of ``(key, entry)`` pairs."""
    entry = _item_join(value) if value.structured else V.extend(value, ITEM)
    return iterable(sequence((V.SAFE_VALUE, entry if entry is not None else V.UNKNOWN_VALUE)), "list")


def unpack(value: Value, count: int, star: Optional[int]) -> list:
    """The values bound by unpacking ``value`` into ``count`` targets, the one at ``star``
    (or None) starred (it receives a list)."""
    els = value.elements
    if els is not None and value.container != "dict":
        if star is None and len(els) == count:
            return list(els)
        if star is not None and len(els) >= count - 1:
            after = count - star - 1
            middle = els[star:len(els) - after]
            return list(els[:star]) + [sequence(middle, "list")] + list(els[len(els) - after:])
    each = element_of(value)
    out = [each] * count
    if star is not None:
        out[star] = iterable(each, "list")
    return out


def map_leaves(value: Value, fn: Callable[[Value], Value], depth: int = 0) -> Value:
    """``value`` with every leaf (a part that is not itself structured) replaced by ``fn(leaf)``."""
    if not value.structured or depth > V.MAX_DEPTH:
        return fn(value)
    elements = None if value.elements is None else tuple(map_leaves(e, fn, depth + 1) for e in value.elements)
    parts = None if value.parts is None else tuple((k, map_leaves(p, fn, depth + 1)) for k, p in value.parts)
    rest = None if value.rest is None else map_leaves(value.rest, fn, depth + 1)
    out = build(elements, parts, rest, kind=V.INSTANCE if value.kind == V.INSTANCE else None,
                cls=value.cls, container=value.container)
    return out


def leaf_join(value: Value, depth: int = 0) -> Value:
    """One leaf of the pytree ``value`` (the join of them all); of a parameter, an entry or
    element at any key as well (``jax.tree.leaves(params)``: a caller's dict of arrays gives
    one of its arrays)."""
    if value.structured and depth < 4 and value.kind != V.INSTANCE:
        out = None
        for child in _children(value.elements, value.parts, value.rest):
            out = V.join(out, leaf_join(child, depth + 1))
        return out if out is not None else V.SAFE_VALUE
    if value.ref is not None and not value.structured:
        return V.join(value, any_item(value))
    return value


def detach(value: Value) -> Value:
    """``value`` without what ties it to the parameters of the function it was computed in
    (a value stored on ``self`` seen from another method)."""
    if not value.deps and value.ref is None and value.placed_by is None and not value.param_array \
            and not value.structured:
        return value
    if value.structured:
        return map_leaves(value, detach)
    if value.multi is not None:
        return V.multi(value.multi)
    if value.kind == V.ARRAY:
        return V.UNKNOWN_VALUE
    return V.evolve(value, deps=frozenset(), ref=None, placed_by=None, param_array=None)
