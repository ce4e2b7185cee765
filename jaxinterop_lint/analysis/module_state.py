"""Module-level state that functions write: ``global STATE; STATE = v``, and a module's
container filled inside a function (``BUF.append(v)``, ``CACHE[k] = v``); and the cells of
a function that its nested functions rebind with ``nonlocal`` (``def update(loss): nonlocal
total; total = total + loss`` beside ``def result(): return total``).

A function's walk notes each such write (:meth:`ModuleStateMixin.note_global`); its summary
keeps them in terms of its parameters (``Summary.globals_``), and a call of it joins them,
with the call's arguments, into the module's globals, where the functions analysed later
read them (:meth:`ModuleStateMixin.apply_globals`): ``collect(sharded); flush()`` exports
what ``collect`` put in ``BUF``.  A global holds whatever any call put there (the analysis
does not order calls across functions), so a write only adds to what the name may hold.
A cell is kept the same way on the record of the function that binds it
(``FunctionRecord.cells``): what a nested function writes there whatever its arguments when
its walk ends, what a call of it writes with the call's arguments, and every nested function
reading the name from its closure reads that too.
"""
from __future__ import annotations

import re

import libcst as cst

from . import parts as P
from . import values as V


class TargetBinds(cst.CSTVisitor):
    """The names a statement binds in its own scope (not inside the functions and classes
    it defines, whose names it binds): assignment, ``for`` and ``as`` targets, walrus."""

    def __init__(self):
        self.bound: set = set()

    def visit_FunctionDef(self, node) -> bool:
        self.bound.add(node.name.value)
        return False

    def visit_ClassDef(self, node) -> bool:
        self.bound.add(node.name.value)
        return False

    def visit_AssignTarget(self, node) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node) -> None:
        self._target(node.target)

    def visit_For(self, node) -> None:
        self._target(node.target)

    def visit_AsName(self, node) -> None:
        self._target(node.name)

    def visit_NamedExpr(self, node) -> None:
        self._target(node.target)

    def _target(self, t) -> None:
        if isinstance(t, cst.Name):
            self.bound.add(t.value)
        elif isinstance(t, (cst.Tuple, cst.List)):
            for el in t.elements:
                self._target(el.value)
        elif isinstance(t, cst.StarredElement):
            self._target(t.value)


class FunctionLocals(TargetBinds):
    """The names a function body binds in its own scope (not in nested defs, classes,
    lambdas or comprehensions), and those it declares ``global``/``nonlocal``."""

    def __init__(self):
        super().__init__()
        self.declared: set = set()
        self.depth = 0

    def visit_FunctionDef(self, node) -> bool:
        self.depth += 1
        if self.depth > 1:
            self.bound.add(node.name.value)
            return False
        return True

    def leave_FunctionDef(self, node) -> None:
        self.depth -= 1

    def visit_Lambda(self, node) -> bool:
        return False

    def visit_ListComp(self, node) -> bool:
        return False

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_Global(self, node) -> bool:
        self.declared.update(n.name.value for n in node.names)
        return False

    visit_Nonlocal = visit_Global

    def visit_Param(self, node) -> bool:
        self.bound.add(node.name.value)
        return False

    def visit_ImportAlias(self, node) -> bool:
        if node.asname is None:
            name = node.name
            while isinstance(name, cst.Attribute):
                name = name.value
            self._target(name)
        return False


def local_names(node) -> tuple:
    """``(names bound in the function's own scope, names it declares global or
    nonlocal)`` of a ``cst.FunctionDef``; computed once per node."""
    v = FunctionLocals()
    node.visit(v)
    return frozenset(v.bound - v.declared), frozenset(v.declared)


# a ``global`` statement inside a def (the text's test before any function is visited)
_GLOBAL_STATEMENT = re.compile(r"^[ \t]+global[ \t]+[A-Za-z_]", re.M)


def global_writers(ma) -> dict:
    """``{name: [records]}``: the functions of module analysis ``ma`` that declare ``global
    name`` (bound so far: the module's defs and its classes' methods), read once per
    module; ``{}`` at once for a text without a ``global`` statement."""
    found = getattr(ma, "_global_writers", None)
    if found is None:
        found = {}
        if "global" in ma.source and _GLOBAL_STATEMENT.search(ma.source):
            for rec in ma.functions:
                if isinstance(rec.node, cst.FunctionDef):
                    for name in local_names(rec.node)[1]:
                        found.setdefault(name, []).append(rec)
        ma._global_writers = found
    return found


def settle(ma, name: str) -> None:
    """Before another module reads the global ``name`` of module analysis ``ma``
    (``state.PARAMS`` after ``state.init()`` rebound it): analyse the functions of ``ma``
    that write it through ``global``, so what they leave there whatever their arguments
    (:meth:`ModuleStateMixin.publish_writes`) is part of the value read, whether or not the
    reader's module calls them, and in whatever order the modules are analysed."""
    for rec in global_writers(ma).get(name, ()):
        if rec.state == "new":
            ma.summary(rec)


# what a global may hold whatever the caller passed: arrays, placements, the project's callables
_KEPT = (V.FUNC, V.CLASS, V.INSTANCE, V.SHARDING, V.MESH, V.DEVICE, V.DEVICE_LIST)


def _leaf(v):
    if v.multi is not None and v.placed_by is None:   # (one placed on a parameter's mesh: the caller's)
        return V.evolve(v, deps=frozenset(), ref=None, param_array=None, placed_by=None)
    if v.kind in _KEPT and not v.deps and v.ref is None:
        return v
    return V.UNKNOWN_VALUE


def concrete(v):
    """The part of ``v`` that holds whatever the caller passes (no dependence on a parameter):
    multi-device arrays, placements (``DATA_SHARDING = NamedSharding(...)``) and the project's
    functions, classes and instances (a registry's ``EXPORTERS[name] = fn``); None when there
    is none.  What a call leaves in a global."""
    if v is None:
        return None
    if v.structured and v.kind != V.INSTANCE:
        out = P.map_leaves(v, _leaf)
        return out if V.carries_multi(out, deps=False) or _holds_kept(out) else None
    out = _leaf(v)
    return None if out is V.UNKNOWN_VALUE else out


def _holds_kept(v, depth: int = 0) -> bool:
    if v is None or depth > 4:
        return False
    if v.kind in _KEPT:
        return True
    return _holds_kept(v.rest, depth + 1) or any(_holds_kept(e, depth + 1) for e in v.elements or ()) \
        or any(_holds_kept(p, depth + 1) for _, p in v.parts or ())


def publish(ma, name: str, value) -> None:
    """Let module analysis ``ma``'s global ``name`` hold ``value`` too (:func:`~.values.written`),
    counting a change (``ma.globals_changed``: functions analysed before it are analysed
    again).  ``name`` ``"Cls.attr"`` is a class attribute of the module's class ``Cls``
    (a registry a function fills: ``Exporter.REGISTRY[name] = cls``): what the class
    holds there (:func:`~.parts.class_static`)."""
    head, _, attr = name.partition(".")
    if attr:
        holder = ma.globals.get(head)
        if holder is None or holder.kind != V.CLASS or holder.cls is None or "." in attr:
            return
        store, key = P.static_owner(holder.cls, attr).attrs, attr
        old = store.get(key)
        new = V.join(old, value)        # (a registry holds every class stored in it)
    else:
        store, key = ma.globals, name
        old = store.get(key)
        new = V.written(old, value)
    if old is None or V.fixpoint_key(old) != V.fixpoint_key(new):
        store[key] = new
        ma.globals_changed += 1


class ModuleStateMixin:
    """The walker's side of module state (:class:`~.flow.Walker` supplies ``rec``, ``ma``,
    ``env``, ``closure``)."""

    def s_global(self, node) -> None:
        """``global X`` in a function: a later ``X = v`` there writes the module's ``X``."""
        if self.rec is not None:
            self.declared_globals |= {n.name.value for n in node.names}

    def _locals(self) -> frozenset:
        if self._local_names is None:
            node = getattr(self.rec, "node", None)
            self._local_names = local_names(node)[0] if isinstance(node, cst.FunctionDef) else None
        return self._local_names

    def note_global(self, key: str, mutation: bool) -> None:
        """``key`` (a dotted name written in this walk): when
        its head is the module's (declared ``global``, or, for a ``mutation`` such as
        ``BUF.append(v)``, a name the function does not bind), remember the write for the
        summary and make its multi-device part visible to the module at once."""
        if self.rec is None or self.env is None:
            return
        head = key.split(".", 1)[0]
        if head not in self.declared_globals:
            if not mutation:
                return
            if head not in self.ma.globals or head in self.rec.params:
                return      # (asked first: most writes are to locals, and the scope walk costs)
            local = self._locals()
            if local is None or head in local:
                return
        value = self.env.get(head)
        if value is not None:
            self.global_writes[head] = V.join(self.global_writes.get(head), value)

    def globals_summary(self) -> tuple:
        """``((name, value), ...)``: the module names this function writes, for its summary."""
        return tuple(sorted(self.global_writes.items(), key=lambda item: item[0]))

    def apply_globals(self, node, rec, bind: dict, writes: tuple) -> None:
        """A call of ``rec`` (a function of the module ``rec.owner``) with ``bind``: the
        values it writes into that module's names (``writes``, from its summary), seen with
        these arguments, join what those names hold; a write that still depends on the
        caller's own parameters goes into the caller's summary (same module only)."""
        owner = rec.owner
        for name, v in writes:
            got = self.instantiate(v, bind, rec, node)
            if self.rec is not None and owner is self.ma and V.carries_multi(got):
                self.global_writes[name] = V.join(self.global_writes.get(name), got)
            fixed = concrete(got)
            if fixed is None or owner is not self.ma:
                continue    # (another module's names: its result must not depend on the order files are analysed in)
            publish(owner, name, fixed)
            if "." not in name and owner is self.ma and self.env is not None and (self.rec is None or name in self.env):
                self.env[name] = V.written(self.env.get(name), fixed)

    def publish_writes(self) -> None:
        """At the end of a function's walk: what it writes into its module's names whatever
        its arguments (``def setup(): global STATE; STATE = sharded``) is what those names may
        hold for every function of the module, called or not (a library's ``setup()`` is
        called by its users); the module's functions that read them are analysed again
        (:meth:`~.module.ModuleAnalysis.analyse_functions`)."""
        for name, v in self.global_writes.items():
            fixed = concrete(v)
            if fixed is not None:
                publish(self.ma, name, fixed)

    # -- cells: an enclosing function's names rebound with ``nonlocal`` ------------------------
    def s_nonlocal(self, node) -> None:
        """``nonlocal X`` in a nested function: a later ``X = v`` there writes the cell ``X`` of
        the function that defines it."""
        if self.rec is not None and self.rec.parent is not None:
            self.declared_nonlocals |= {n.name.value for n in node.names}

    def with_cells(self, name: str, value):
        """``value`` (read from the closure) joined with what nested functions rebinding
        ``name`` with ``nonlocal`` left in the cell of the innermost enclosing function that
        has one."""
        p = self.rec.parent
        while p is not None:
            held = p.cells.get(name)
            if held is not None:
                return V.join(value, held)
            p = p.parent
        return value

    def cells_summary(self) -> tuple:
        """``((name, value), ...)``: the cells this function writes, for its summary."""
        return tuple(sorted(self.cell_writes.items(), key=lambda item: item[0]))

    def publish_cells(self) -> None:
        """At the end of a function's walk: what it writes into its enclosing functions' cells
        whatever its arguments (:func:`concrete`)."""
        for name, v in self.cell_writes.items():
            _publish_cell(self.ma, self.rec, name, concrete(v))

    def apply_cells(self, node, rec, bind: dict, writes: tuple) -> None:
        """A call of the nested function ``rec`` with ``bind``: the values it writes into its
        enclosing function's cells, seen with these arguments, join what they hold; the
        enclosing function's own walk (``update(x)`` then ``return total``) sees them at once."""
        for name, v in writes:
            fixed = concrete(self.instantiate(v, bind, rec, node))
            holder = _publish_cell(self.ma, rec, name, fixed)
            if holder is not None and self.rec is not None and getattr(self.rec, "node", None) is holder.node \
                    and self.env is not None and name in self.env:
                self.env[name] = V.join(self.env[name], fixed)


def _cell_holder(rec, name: str):
    """The record of the innermost function enclosing ``rec`` that binds ``name`` (whose cell
    ``nonlocal name`` rebinds, Python's rule), else ``rec``'s parent."""
    p = rec.parent
    while p is not None:
        bound = getattr(p, "_bound", None)
        if bound is None:
            bound = p._bound = local_names(p.node)[0] if isinstance(p.node, cst.FunctionDef) else frozenset()
        if name in bound:
            return p
        p = p.parent
    return rec.parent


def _publish_cell(ma, rec, name: str, value):
    """Let the cell ``name`` that ``rec`` writes with ``nonlocal`` hold ``value`` too,
    counting a change (``ma.globals_changed``: the functions analysed before read it again);
    returns the record holding the cell (None when ``value`` is None or there is none)."""
    holder = _cell_holder(rec, name) if value is not None else None
    if holder is None:
        return None
    old = holder.cells.get(name)
    new = V.join(old, value)
    if old is None or V.fixpoint_key(old) != V.fixpoint_key(new):
        holder.cells[name] = new
        ma.globals_changed += 1
    return holder
