"""Donation (rule JXI008): which variables a donating call deletes.

``jax.jit(f, donate_argnums=...)`` (and pjit, pmap, their compiled stages) deletes the device
buffers of the JAX arrays passed at the donated positions.  Run with jax 0.10.2 on 8 CPU
devices:

- an alias is the same array: after ``prev = state; state = step(state)``, ``prev.is_deleted()``
  is True and ``np.from_dlpack(prev)`` raises ``RuntimeError: Array has been deleted``;
- a host value passed there is not deleted: ``step(np_array)`` leaves the NumPy array intact
  (``np.from_dlpack(h)`` and ``torch.from_dlpack(h)`` work after it): JAX donates the device
  copy it makes of it.  (A torch tensor is not a valid argument at all: TypeError.)

Aliases are noted at ``x = y`` assignments with the value objects both names had then; an alias
counts only while both names still hold those very objects (rebinding either one ends it).
"""
from __future__ import annotations

import libcst as cst

from . import parts as P
from . import values as V
from .imports import dotted

_ALIASES = "_donation_aliases"
_HELD = "_donation_held"


def _current(walker, key: str):
    if "." not in key:
        value = walker.lookup(key)
        return value if value is not V.UNKNOWN_VALUE or key in (walker.env or {}) else None
    return walker.read_key(key)


def note_alias(walker, node: cst.Assign) -> None:
    """After ``x = y`` (names or dotted names): remember that ``x`` and ``y`` are one object."""
    if walker.env is None or not isinstance(node.value, (cst.Name, cst.Attribute)):
        return
    source = dotted(node.value)
    if source is None:
        return
    aliases = walker.__dict__.setdefault(_ALIASES, {})
    for name in [source] + [dotted(t.target) for t in node.targets]:
        # a fresh object per name, so that rebinding either one (even to an equal value,
        # such as another safe array) ends the alias; the aliases noted before follow it
        # (plain names only: writing a dotted key would add a part to the object it reads)
        if name is None or "." in name or name not in walker.env:
            continue
        old = walker.env[name]
        fresh = walker.env[name] = V.evolve(old)
        for alias, (src, src_value, alias_value) in list(aliases.items()):
            aliases[alias] = (src, fresh if src == name and src_value is old else src_value,
                              fresh if alias == name and alias_value is old else alias_value)
    for t in node.targets:
        key = dotted(t.target)
        if key is not None and key != source:
            aliases[key] = (source, _current(walker, source), _current(walker, key))


def _same(now, then, key: str) -> bool:
    """Whether ``key`` still holds the object it held when the alias was noted: the very
    object for a name; an equal value for a dotted key (its parts are rebuilt when read)."""
    return now is then or ("." in key and now is not None and now == then)


def _aliases_of(walker, key: str) -> list:
    """The names that hold the same object as ``key`` now (transitively)."""
    aliases = walker.__dict__.get(_ALIASES)
    if not aliases:
        return []
    found, todo = {key}, [key]
    while todo:
        k = todo.pop()
        for alias, (source, source_value, alias_value) in aliases.items():
            if alias_value is None or not _same(_current(walker, alias), alias_value, alias) \
                    or not _same(_current(walker, source), source_value, source):
                continue
            for other in ((alias,) if source == k else (source,) if alias == k else ()):
                if other not in found:
                    found.add(other)
                    todo.append(other)
    found.discard(key)
    return sorted(found)


def note_held(walker, container: str, name: str) -> None:
    """After ``container.append(name)``: the list holds the object ``name`` holds now, so a
    donation of ``name`` while it still holds it deletes that element too (jax 0.10.2, 8 CPU
    devices: ``snapshots.append(state); state = step(state)`` then
    ``np.from_dlpack(snapshots[0])`` raises ``RuntimeError: Array has been deleted``)."""
    if walker.env is None or name not in walker.env:
        return
    walker.__dict__.setdefault(_HELD, {}).setdefault(name, []).append((container, walker.env[name]))


def _mark_held(walker, key: str, current, call_node) -> None:
    """Mark the elements of the containers that hold ``key``'s object ``current`` donated:
    the element that is that very object, or (appended at a position the analysis does not
    know) the container's unknown element."""
    donated = V.evolve(current, donated=call_node)
    for container, obj in walker.__dict__.get(_HELD, {}).get(key, ()):
        if obj is not current:
            continue
        value = walker.read_key(container)
        if value.elements is not None and any(e is obj for e in value.elements):
            value = P.rebuild(value, tuple(donated if e is obj else e for e in value.elements), value.parts, value.rest)
        else:
            value = P.with_rest(value, donated)
        walker.write_key(container, value)


def _donate_entry(walker, arg_node, call_node) -> None:
    """``step(st["w"])``: the entry of ``st`` at that constant key is donated."""
    from .expr import constant_key

    if len(arg_node.slice) != 1 or not isinstance(arg_node.slice[0].slice, cst.Index):
        return
    key, k = dotted(arg_node.value), constant_key(arg_node.slice[0].slice.value)
    if key is None or k is None:
        return
    container = walker.read_key(key)
    current = P.read(container, k)
    if current.kind == V.FOREIGN or not (container.structured or container.deps):
        return
    walker.write_key(key, P.with_part(container, k, V.evolve(current, donated=call_node)))


def donate(walker, arg_node, call_node) -> None:
    """Mark the variable passed as ``arg_node`` (and its aliases, the list elements that hold
    it, or for ``st["w"]`` that entry) as donated to ``call_node``, unless it holds a host
    value (NumPy, torch ...: JAX donates its own copy)."""
    if isinstance(arg_node, cst.Subscript) and walker.env is not None:
        _donate_entry(walker, arg_node, call_node)
        return
    key = dotted(arg_node) if arg_node is not None else None
    if key is None or walker.env is None:
        return
    current = walker.read_key(key)
    if current.kind == V.FOREIGN:
        return
    others = _aliases_of(walker, key)
    _mark_held(walker, key, current, call_node)
    walker.write_key(key, V.evolve(current, donated=call_node))
    if current.deps and walker.rec is not None:
        walker.donated_params |= frozenset(p for p, _ in current.deps)
    for other in others:
        value = _current(walker, other)
        if value is not None and value.kind != V.FOREIGN:
            walker.write_key(other, V.evolve(value, donated=call_node))
