"""A callee's values seen at a call: what its summary's returned, yielded or stored values
are with the call's arguments (:meth:`InstantiateMixin.instantiate`), the part of an argument
a summary names (:meth:`InstantiateMixin.argument_part`), a placement the callee makes on a
parameter's sharding (:meth:`InstantiateMixin.placed_through`) and a device-count test it
returns (:meth:`InstantiateMixin.map_guard`).  Split from :mod:`.invoke`, which makes the
calls."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from . import parts as P
from . import placements
from . import values as V
from .calls import MESH_WRAPPER_NAMES
from .facts import ON_MESH, sharding_on
from .param_calls import bound_method
from .imports import dotted
from .values import Origin, Value


def _on_one_device_mesh(ret: Value, placed) -> bool:
    """Whether ``ret``, put by the callee on a sharding it built on a parameter's mesh
    (multi-device unless told otherwise: ``facts.ON_MESH``), is given a one-device mesh by
    the call (``placed``: :meth:`InstantiateMixin.placed_through` of its placement)."""
    path = ret.placed_by[0][1] if ret.placed_by is not None else ()
    return bool(path) and path[-1] == ON_MESH and placed is not None and placed.kind == V.SAFE


def read_argument(rec, index: int, arg: tuple, path) -> Value:
    """The part at ``path`` of the argument ``arg`` bound to parameter ``index`` of ``rec``.
    For a ``**kw`` parameter an entry of a key no keyword argument gave is absent (a
    ``KeyError``, or ``kw.get``'s default): not the join of the others; one a ``**payload``
    argument of unknown keys may give is that payload's entry (hunt45 p16: ``evaluate(**batch)``
    with ``batch`` a placed dict)."""
    params = getattr(rec, "params", ())
    if path and isinstance(index, int) and index < len(params) and params[index].startswith("**") and path[0].startswith("[") \
            and path[0] != V.ITEM and arg[0].structured and arg[0].rest is None \
            and not any(k == path[0] for k, _ in arg[0].parts or ()):
        return V.SAFE_VALUE
    return P.read_path(arg[0], path)


def _is_property(method: Optional[Value]) -> bool:
    """Whether a class's method value is a ``@property`` of this project."""
    local = method.func.local if method is not None and method.kind == V.FUNC and method.func is not None else None
    return local is not None and getattr(local, "is_property", False)


class InstantiateMixin:
    """The walker's side (:class:`~.flow.Walker` supplies ``ma``, ``rec``, ``apply``,
    ``text``, ``events``, ``context_events``, ``param_calls`` and ``element_of``,
    ``method_result``, ``instance_attribute``)."""

    def argument_part(self, rec, index: int, arg: tuple, path, node, bind=None) -> Value:
        """:func:`read_argument`, where an attribute the callee reads on its parameter is a
        property of the argument's class (``model.weight`` with ``@property def weight``):
        the property's value for that instance), or an element of iterating over it (an
        instance of an iterator class: :meth:`~.expr.ExprMixin.element_of`), or what a
        method called with no argument returns (``holder.get()``: :meth:`method_result`), or
        what the caller's function returns (a called parameter: :func:`~.values.called_key`,
        called with the arguments ``bind`` gives the parameters it was called with)."""
        if not path or (path[0][:1] not in ".(" and path[0] != V.ANY):
            return read_argument(rec, index, arg, path)
        value = arg[0]
        for key in path:
            given = V.called_args(key)
            recorded = V.called_with(key)
            method_call = V.method_called_with(key)
            if key == V.ANY and value.kind == V.INSTANCE and value.cls is not None:
                value = self.element_of(value, node)
            elif recorded is not None and value.kind in (V.FUNC, V.QNAME, V.CLASS, V.INSTANCE):
                value = self.returned_by(node, value, self.recorded_arguments(rec, recorded, bind, node))
            elif given is not None and value.kind in (V.FUNC, V.QNAME, V.CLASS, V.INSTANCE):
                args = [bind[i] for i in given if i in bind] if bind is not None else []
                value = self.returned_by(node, value, args) if args and len(args) == len(given) \
                    else self.apply(node, value, [], {})
            elif key.endswith(V.CALLED) and value.kind == V.INSTANCE and value.cls is not None:
                value = self.method_result(value, key[1:-len(V.CALLED)], node)
            elif method_call is not None and value.kind == V.INSTANCE and value.cls is not None:
                # ``placer.put(x)`` in the callee: the method of the caller's object, given the
                # values the callee recorded there
                method = bound_method(value, method_call[0])
                value = P.read(value, key) if method is None else \
                    self.returned_by(node, method, self.recorded_arguments(rec, method_call[1], bind, node))
            elif key[:1] == "." and value.kind == V.INSTANCE and value.cls is not None \
                    and _is_property(value.cls.methods.get(key[1:])):
                value = self.instance_attribute(value, key[1:], node)
            else:
                value = P.read(value, key)
        return value

    def recorded_arguments(self, rec, index: int, bind, node) -> list:
        """The values the callee ``rec`` called a parameter with (its summary's
        :attr:`~.records.Summary.called` ``[index]``), seen at this call (``bind``), as
        ``(value, None)`` arguments (no expression of the caller's gives them); none while
        its summary is not known yet (a recursion's first round)."""
        summary = getattr(rec, "summary", None)
        if summary is None or index >= len(summary.called) or bind is None:
            return []
        # a loop feeding a call's result back to it (``x = stage(x)``) records values that
        # hold the call's own result: that inner one is called with none
        active = self.__dict__.setdefault("_recorded_active", set())
        key = (id(summary), index)
        if key in active:
            return []
        active.add(key)
        try:
            return [(self.instantiate(v, bind, rec, node), None) for v in summary.called[index]]
        finally:
            active.discard(key)

    def returned_by(self, node, f: Value, args: list) -> Value:
        """What the caller's function ``f`` returns for ``args`` (a called parameter's
        result: ``conv(fn(x))``), without the call's effects: the call itself, its exports
        and their findings, is the summary's kept call (:mod:`.param_calls`).  A consumer
        returns a foreign array (a torch tensor, a CuPy array)."""
        if f.kind == V.QNAME and f.qname in self.ma.kb.call_sinks:
            return V.FOREIGN_VALUE
        events, contexts, calls = dict(self.events), len(self.context_events), len(self.param_calls)
        keys = set(self._param_call_keys)
        try:
            return self.apply(node, f, args, {})
        finally:
            self.events.clear()
            self.events.update(events)
            del self.context_events[contexts:]
            del self.param_calls[calls:]
            self._param_call_keys.intersection_update(keys)

    def instantiate(self, ret: Value, bind: dict, rec, node) -> Value:
        """A callee's returned (or yielded, or stored) value seen at a call with arguments
        ``bind``: a parameter's part is the argument's part itself, structures are rebuilt
        part by part, dependences become the arguments' values, a placement on a parameter's
        sharding is made, a returned device-count test guards the arguments."""
        name = getattr(rec, "name", "?")
        if ret.kind == V.SHARDING and ret.ref is not None and ret.ref[1][-1:] == (ON_MESH,):
            # a sharding the callee built on a parameter's mesh (``def make(mesh): return
            # NamedSharding(mesh, P())``): the same sharding on the caller's mesh
            arg = bind.get(ret.ref[0])
            mesh = self.argument_part(rec, ret.ref[0], arg, ret.ref[1][:-1], node, bind) if arg is not None else None
            return sharding_on(ret.desc, mesh)
        if ret.ref is not None:
            arg = bind.get(ret.ref[0])
            base = self.argument_part(rec, ret.ref[0], arg, ret.ref[1], node, bind) if arg is not None else V.UNKNOWN_VALUE
            if base.multi is not None:
                base = V.evolve(base, multi=base.multi.step(f"returned by {name}()", node, self.ma))
            for k, p in ret.parts or ():
                base = P.with_part(base, k, self.instantiate(p, bind, rec, node))
            if ret.rest is not None and ret.rest.ref is None and ret.rest.deps:
                # what the callee added at unknown positions of the parameter's container
                # (``self.handlers[event].append(fn)``), besides what the container held
                base = P.with_rest(base, self.instantiate(ret.rest, bind, rec, node))
            return base
        if ret.structured:
            elements = None if ret.elements is None else tuple(self.instantiate(e, bind, rec, node) for e in ret.elements)
            parts = None if ret.parts is None else tuple((k, self.instantiate(p, bind, rec, node)) for k, p in ret.parts)
            rest = None if ret.rest is None else self.instantiate(ret.rest, bind, rec, node)
            return P.build(elements, parts, rest, kind=V.INSTANCE if ret.kind == V.INSTANCE else None,
                           cls=ret.cls, container=ret.container)
        if ret.kind == V.FUNC and ret.placed_by is not None and ret.func is not None:
            return self._wrapper_on(ret, bind, rec, node)
        out = None
        placed = self.placed_through(ret.placed_by, bind, rec, node) if ret.placed_by is not None else None
        if ret.multi is not None and not _on_one_device_mesh(ret, placed):
            out = V.multi(ret.multi.step(f"returned by {name}()", node, self.ma))
        handed = []     # functions among the arguments the value is made of (``self.callbacks.append(fn)``)
        for p, path in ret.deps:
            arg = bind.get(p)
            if arg is None:
                continue
            part = self.argument_part(rec, p, arg, path, node, bind)
            if part.kind in (V.FUNC, V.QNAME) and not part.structured:
                handed.append(part)
                continue
            v = V.as_array(part)
            if v.multi is not None:
                given = self.text(arg[1]) if arg[1] is not None else (   # a default, a fixture
                    rec.params[p] if p < len(getattr(rec, "params", ())) else "?")
                v = V.evolve(v, multi=v.multi.step(f"{name}() of `{given}`", node, self.ma))
            out = V.join(out, v)
        if ret.placed_by is not None:
            out = V.join(out, placed)
        guard = self.map_guard(ret, bind, rec, node)
        if out is None and ret.kind == V.FUNC:
            from .closures import specialize

            ret = specialize(ret, bind, rec, node, self.ma)     # a nested function over these arguments
        # the functions a call of a value that is not one may run (``hook or torch.from_dlpack``),
        # and those handed in by the arguments it is made of
        alternatives = [] if ret.kind in (V.FUNC, V.QNAME) else [
            o if o.kind == V.QNAME else self.instantiate(o, bind, rec, node) for o in ret.others]
        for h in handed:
            alternatives += [V.evolve(h, others=()), *h.others]
        callables = tuple(dict.fromkeys(a for a in alternatives if a.kind in (V.FUNC, V.QNAME)))[:V.MAX_OTHERS]
        if out is None:
            if ret.kind in (V.SAFE, V.FOREIGN, V.SHARDING, V.DEVICE, V.DEVICE_LIST, V.MESH, V.FUNC, V.QNAME,
                            V.KERNEL, V.CAPSULE, V.SAFE_LIST, V.INSTANCE, V.DEFERRED, V.CLASS):
                out = V.evolve(ret, deps=frozenset(), param_array=None, donated=None, false_guard=None, ref=None,
                              placed_by=None, guard=None, count_of=None)
            elif guard is None and not callables:
                return V.UNKNOWN_VALUE
            else:
                out = V.SAFE_VALUE if guard is not None else V.UNKNOWN_VALUE
        if callables and not out.structured and out.kind not in (V.FUNC, V.QNAME, V.CLASS, V.INSTANCE):
            out = V.evolve(out, others=callables)
        if guard is not None:
            out = V.evolve(out, guard=guard[0], count_of=guard[1])
        return out

    def _wrapper_on(self, ret: Value, bind: dict, rec, node) -> Value:
        """A returned source wrapper on a parameter's mesh (``calls.wrapper_mesh``) seen at
        a call: no source on a one-device mesh the call gives, a placement on the caller's
        own parameter when it hands that on, else the wrapper as it is."""
        placed = self.placed_through(ret.placed_by, bind, rec, node)
        out = V.evolve(ret, placed_by=None, deps=frozenset(), ref=None)
        if placed is not None and placed.kind == V.SAFE:
            return V.evolve(out, func=replace(ret.func, source=None))
        if placed is not None and placed.placed_by is not None:
            return V.evolve(out, placed_by=placed.placed_by)
        return out

    def placed_through(self, placed_by: tuple, bind: dict, rec, node):
        """``jax.device_put(x, s)`` inside a callee where ``s`` is (a part of) a parameter:
        what the caller's argument makes of it."""
        (p, path), desc, where, function = placed_by
        arg = bind.get(p)
        if arg is None and isinstance(p, str):
            # a nested function (a lambda given to ``jax.tree.map``) placing on a sharding its
            # closure holds: ``p`` names a parameter of the function defining it
            parent = getattr(rec, "parent", None) if rec is not None else None
            if parent is None or self.rec is None:
                return None
            if parent is self.rec:      # called where it is defined: what the name holds here
                held = self.env.get(p) if self.env is not None else None
                if held is not None:    # (a parameter of this function, or a name bound to one)
                    return Value(kind=V.ARRAY, placed_by=((held.ref[0], held.ref[1] + path), desc, where, function)) \
                        if held.ref is not None and isinstance(held.ref[0], int) else None
                # or a parameter of the function enclosing this one, in turn
                return Value(kind=V.ARRAY, placed_by=placed_by) if self.closure is not None and p in self.closure else None
            # called from a sibling (a factory's ``run`` calling its ``place``): the parameter as
            # this frame's closure holds it (a specialised closure knows the caller's sharding)
            held = self.closure.get(p) if self.closure is not None else None
            if held is None or held.ref is not None:
                return None
            arg = (held, None)
        if arg is None:
            return None
        on_mesh = bool(path) and path[-1] == ON_MESH     # a sharding the callee built on this mesh
        if on_mesh:
            path = path[:-1]
        target = read_argument(rec, p, arg, path)
        if target.ref is not None and target.kind not in (V.SHARDING, V.DEVICE, V.MESH, V.DEVICE_LIST) \
                and self.rec is not None:
            # the caller's own parameter (``outer(sh): return place(sh)``): a placement on it,
            # for the caller's callers (a node of another module is not kept)
            local = getattr(rec, "owner", None) is self.ma
            return Value(kind=V.ARRAY, placed_by=((target.ref[0], target.ref[1] + ((ON_MESH,) if on_mesh else ())),
                                                  desc, where if local else None, function if local else None))
        if target.kind == V.SHARDING:
            owner = getattr(rec, "owner", None)
            local = owner is self.ma and where is not None
            origin = Origin(f"{desc} with {target.desc}", where if local else node, self.ma if local else self.ma,
                            function if local else self.function)
            return V.multi(origin.step(f"{rec.name}() called with `{self.text(arg[1])}`", node, self.ma))
        if target.kind == V.DEVICE or target.kind == V.MESH and placements.single(target) \
                or on_mesh and placements.count(placements.device_shape(target)) == 1:
            return V.SAFE_VALUE     # (a device array: given to a mesh built on the parameter)
        if target.kind == V.MESH or on_mesh:   # a sharding the callee built on the caller's mesh
            on = "on the mesh" if desc in MESH_WRAPPER_NAMES else "with a NamedSharding on"
            return V.multi(Origin(f"{desc} {on} `{self.text(arg[1])}`", node, self.ma,
                                  self.function).step(f"{rec.name}() called with `{self.text(arg[1])}`", node, self.ma))
        return None

    def map_guard(self, ret: Value, bind: dict, rec, node):
        """``(guard, count_of)`` of a returned device-count test, its keys (rooted at the
        callee's parameters) rewritten as the caller's argument expressions; None if none."""
        if ret.guard is None and ret.count_of is None:
            return None
        params = list(getattr(rec, "params", ()))
        local = getattr(rec, "owner", None) is self.ma

        def key_of(key):
            if key == "@single":
                return key
            root, dot, rest = key.partition(".")
            if root not in params:
                return None
            arg = bind.get(params.index(root))
            text = dotted(arg[1]) if arg is not None and arg[1] is not None else None
            return None if text is None else text + dot + rest

        def refs(items):
            out = []
            for key, action in items:
                k = key_of(key)
                if k is None:
                    continue
                if action != "safe":
                    original = action[1] if isinstance(action, tuple) else None
                    action = ("false-guard", original if local and original is not None else node)
                out.append((k, action))
            return tuple(out)

        guard = None
        if ret.guard is not None:
            true, false = refs(ret.guard[0]), refs(ret.guard[1])
            if true or false:
                guard = (true, false, node, None)
        count = None
        if ret.count_of is not None:
            k = key_of(ret.count_of[0])
            count = (k, None) if k is not None else None
        if guard is None and count is None:
            return None
        return guard, count
