"""The flow-sensitive walk of statements: assignments, ``def``/``class``, returns, imports;
the statements that branch (``if``, loops to a fixpoint, ``try``, ``with``, ``match``) are
:class:`~.branches.BranchMixin`'s."""
from __future__ import annotations

from collections import ChainMap
from dataclasses import replace

import libcst as cst

from ..knowledge import apis
from . import conditions, donation
from . import parts as P
from . import values as V
from . import versions
from .bindings import BindingMixin
from .branches import BranchMixin
from .calls import CallMixin
from .classes import ClassMixin, self_writes_of
from .events import RemovedEvent, SinkEvent
from .facts import declared_name
from .expr import _DISPATCH as _EXPR_DISPATCH, ExprMixin
from .imports import import_bindings
from .deferred import DeferredMixin
from .instantiate import InstantiateMixin
from .invoke import InvokeMixin
from .module_state import ModuleStateMixin
from .param_calls import ParamCallsMixin
from .records import function_record
from .structures import StructureMixin
from .values import Value

SINGLE = conditions.ALL


_PROPERTIES = frozenset({"builtins.property", "functools.cached_property"})
_TRANSPARENT_DECORATORS = _PROPERTIES | {"builtins.classmethod", "functools.wraps", "functools.lru_cache",
                                         "functools.cache", "abc.abstractmethod", "typing.overload"}


from .env import env_key, join_env  # noqa: E402,F401  (re-exported)


# What a stored value must be for a caller to hold it (fill_arguments): an array of a known
# source or of another parameter, or something the analysis follows; a host value is not kept.
_FILLED_KINDS = frozenset({V.FUNC, V.QNAME, V.SHARDING, V.MESH, V.DEVICE, V.INSTANCE, V.CLASS, V.KERNEL})


def _fills(value: Value, index: int) -> bool:
    """Whether parameter ``index``'s value ``value`` holds a stored part worth handing back to
    the caller (:data:`_FILLED_KINDS`, a multi-device array, or a dependence on another
    parameter): most functions that fill their arguments store host values."""
    return P.holds(value, lambda p: p.multi is not None or p.kind in _FILLED_KINDS or p.placed_by is not None
                   or any(d[0] != index for d in p.deps), 1)


class Walker(ExprMixin, CallMixin, InvokeMixin, InstantiateMixin, StructureMixin, BindingMixin, ClassMixin,
             DeferredMixin, ModuleStateMixin, ParamCallsMixin, BranchMixin):
    """Walk one function body (``rec``) or the module body (``rec`` None) in ``env``, looking
    names up in ``closure`` when they are not local; events go to the function record.

    The environment maps names to values; a value stored in an attribute or an entry is a
    part of the value bound to the name (``obj.a = v`` rebinds ``obj`` to a value whose part
    ``.a`` is ``v``), so a binding costs the same however many names a scope has."""

    def __init__(self, ma, rec, env, closure, function: str):
        self.ma = ma
        self.rec = rec
        self.env = env
        self.closure = closure
        self.function = function
        self.tries = ()
        self.returns = []
        self.loops = []
        self.cls = None
        self._callee = None
        self.donated_params = frozenset()
        self.events = rec.events if rec is not None else ma.module_events
        self.yields = []
        self.exits = []           # the value of ``self`` where an ``__init__`` returns
        self.fills = None         # parameter -> its values, filled with parts, where the function returns
        self.unrolling = 0
        self._tested = None       # (test node, its value) of the test being refined
        self.context_events = []  # the calling contexts this walk added (for the summary)
        self.splats = {}          # id(call) -> its ``**`` argument of unknown keys (CallMixin.splat)
        self.starred = set()      # ids of the values of ``*xs`` arguments (CallMixin.arguments)
        self.declared_globals = set()   # ``global X`` names of this function (module_state.py)
        self.global_writes = {}   # module name -> the value this function leaves in it
        self.declared_nonlocals = set()   # ``nonlocal X`` names of this function (module_state.py)
        self.cell_writes = {}     # enclosing function's name -> the value this function leaves in it
        self.own_cells = getattr(rec, "cells", None)    # its names nested functions rebind (the record's dict)
        self._local_names = None
        self.param_calls = []     # methods called on a parameter (param_calls.py)
        self.handed_to = None     # the function a consumer is handed to, while its call runs (param_calls.py)
        self.when = None          # (parameter, keys) while a callable chosen by them runs (StructureMixin.chosen_entry)
        self._param_call_keys = set()
        self.called_with = []     # values a parameter is called with (Summary.called)
        self.pinned = getattr(rec, "pinned", None)    # parameter -> constant (pinned.py)
        self._called_at = {}      # call node -> its index in called_with
        versions.enter_function(self, rec)

    # -- utilities -----------------------------------------------------------------------
    def record(self, event) -> None:
        """Keep ``event``; a later visit of the same node replaces it (a loop's fixpoint only
        grows values), except in an unrolled loop, where the values of its visits join."""
        event = versions.annotate(self, event)
        key = (type(event).__name__, id(event.node), id(getattr(event, "inner", None)))
        old = self.events.get(key)
        if self.unrolling and isinstance(event, SinkEvent) and old is not None:
            event = replace(event, value=V.join(old.value, event.value))
        if isinstance(event, SinkEvent) and old is not None and old.when != event.when:
            # two callables of one dict reach the same call: either key picks an export
            same = old.when is not None and event.when is not None and old.when[0] == event.when[0]
            event = replace(event, when=(event.when[0], old.when[1] | event.when[1]) if same else None)
        self.events[key] = event

    def text(self, node) -> str:
        """The source text of ``node`` (for messages)."""
        if node is None:
            return "?"
        try:
            return self.ma.module.code_for_node(node).strip()
        except Exception:  # pragma: no cover - codegen of a valid node does not fail
            return "?"

    def snapshot(self):
        """The closure a function defined here sees."""
        if self.rec is None and self.cls is None:
            return self.ma.globals
        if self.rec is None:
            return self.closure
        return ChainMap(dict(self.env or {}), self.closure) if self.closure is not None else dict(self.env or {})

    # -- blocks --------------------------------------------------------------------------
    def block(self, stmts) -> None:
        for stmt in stmts:
            if self.env is None:
                return
            method = _STMT.get(type(stmt))
            if method is not None:
                method(self, stmt)

    def suite(self, body) -> None:
        if isinstance(body, cst.IndentedBlock):
            self.block(body.body)
        else:
            self.simple_line(body)

    def simple_line(self, node) -> None:
        for small in node.body:
            if self.env is None:
                return
            method = _SMALL.get(type(small))
            if method is not None:
                method(self, small)

    # -- simple statements ---------------------------------------------------------------
    def s_expr(self, node) -> None:
        self.eval(node.value)
        if versions.never_returns(self, node.value):  # pytest.skip(), self.skipTest()
            self.env = None

    def s_assign(self, node: cst.Assign) -> None:
        v = conditions.stored_test(self, node.value, self.eval(node.value))
        for t in node.targets:
            self.assign(t.target, v, node)
        donation.note_alias(self, node)
        self.note_part_alias(node)

    def s_annassign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, conditions.stored_test(self, node.value, self.eval(node.value)), node)

    def s_augassign(self, node: cst.AugAssign) -> None:
        current, v = self.eval(node.target), self.eval(node.value)
        if isinstance(node.operator, cst.AddAssign) and current.structured and current.kind != V.INSTANCE \
                and (v.structured or current.container == "list"):
            self.assign(node.target, P.extended(current, v), node)
            return
        self.assign(node.target, self.computed((current, v)), node)

    def s_return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.returns.append(conditions.stored_test(self, node.value, self.eval(node.value), returned=True))
        else:
            self.returns.append(V.SAFE_VALUE)
        self.exit()
        self.env = None

    def exit(self) -> None:
        """Remember ``self`` where a method that stores on it returns: an ``__init__`` (its
        fields, for construction), or a method assigning ``self.<attr>`` (what a call leaves
        on the receiver: :meth:`~.invoke.InvokeMixin.store_fields`)."""
        rec = self.rec
        if rec is not None and rec.cls is not None and rec.params and self.env is not None \
                and (rec.name.endswith("__init__") or self_writes_of(rec)):
            self.exits.append(self.lookup(rec.params[0]))
        if rec is not None and self.env is not None:
            # a parameter's own container or object, with what this function stored in it
            # (its ``ref`` is still the parameter: not a local that took its name)
            for i, name in enumerate(rec.params):
                if name.startswith("*") or (i == 0 and rec.cls is not None):
                    continue
                v = self.env.get(name)
                if v is not None and v.ref == (i, ()) and _fills(v, i):
                    if self.fills is None:
                        self.fills = {}
                    self.fills.setdefault(i, []).append(v)

    def s_raise(self, node: cst.Raise) -> None:
        if node.exc is not None:
            self.eval(node.exc)
        self.env = None

    def s_break(self, node) -> None:
        if self.loops:
            self.loops[-1][0].append(self.env)
        self.env = None

    def s_continue(self, node) -> None:
        if self.loops:
            self.loops[-1][1].append(self.env)
        self.env = None

    def s_delete(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.BaseElement) else t
            if isinstance(t, cst.Name):
                self.env.pop(t.value, None)

    def s_assert(self, node: cst.Assert) -> None:
        true, _ = self.test(node.test)
        self.refine(true, node.test)
        versions.narrow(self, versions.branches(self, node.test)[0])

    def test(self, test) -> tuple:
        """Evaluate an ``if``/``assert`` test; return its refinements (see :mod:`.conditions`)."""
        self._tested = (test, self.eval(test))
        try:
            return conditions.refinements(self, test)
        finally:
            self._tested = None

    def s_import(self, node) -> None:
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            self.ma.star_import(node)
            return
        for name, qn, is_from, alias in import_bindings(node, self.ma.package):
            if qn.split(".")[0] in apis.JAX_ROOTS:
                self.ma.imports_jax = True
            removed = apis.REMOVED_CALLS.get(qn)
            if removed is not None and is_from:
                self.record(RemovedEvent(alias, qn, removed, "import", self.function))
            self.env[name] = self.ma.resolve_import(qn)

    # -- compound statements: branches, loops, try, with, match (branches.py) ---------

    def s_def(self, node: cst.FunctionDef) -> None:
        rec = self.ma.register(function_record(node, self.qualify(node.name.value), self.snapshot(), self.cls), self.rec)
        if rec.parent is None and self.rec is not None and rec is not self.rec:
            rec.parent = self.rec       # (the cells its ``nonlocal`` names write: module_state.py)
        self.bind_defaults(rec)
        versions.at_def(self, node, rec)
        value = Value(kind=V.FUNC, func=V.FuncInfo(local=rec, qname=declared_name(self.ma, rec)))
        for dec in reversed(node.decorators):
            d = self.eval(dec.decorator)
            if d.kind == V.QNAME and value.kind == V.FUNC and value.func.source is not None:
                d = self.project_decorator(d)
            if d.kind == V.QNAME and d.qname == "builtins.staticmethod":
                rec.cls = None
                continue
            if d.kind == V.QNAME and d.qname in apis.CONTEXT_MANAGER_DECORATORS:
                rec.context_manager = True
                continue
            if d.kind == V.QNAME and d.qname in _TRANSPARENT_DECORATORS:
                rec.is_property = d.qname in _PROPERTIES
                rec.is_classmethod = rec.is_classmethod or d.qname == "builtins.classmethod"
                continue
            if d.kind == V.QNAME:
                out = self.library_call(dec, d.qname, [(value, None)], {})
            elif d.kind == V.FUNC and d.func.partial_of is not None:
                out = self.func_call(dec, d.func, [(value, None)], {})
            elif d.kind == V.FUNC and d.func.local is not None and d.func.local.owner is not None:
                # a decorator of the project: what it returns for this function (its wrapper,
                # analysed with ``fn`` being this function: closures.py), or the function
                out = self.func_call(dec, d.func, [(value, None)], {})
                local = out.func.local if out.kind == V.FUNC and out.func is not None else None
                if local is None or not (local is rec or getattr(local, "specialized", False)):
                    continue
            else:
                continue
            if out.kind != V.UNKNOWN:
                value = out
        if self.cls is not None:
            self.cls.methods[node.name.value] = value
        self.env[node.name.value] = value

    def project_decorator(self, d: Value) -> Value:
        """The project function a decorator ``d`` (a name of another module that the plan's
        gate left unopened) is, opened now that it decorates a function making multi-device
        values (``@gathered`` over a ``jax.jit`` with ``out_shardings``: a wrapper that
        gathers its results changes what the decorated name returns); ``d`` otherwise."""
        project = self.ma.project
        if project is None or d.qname.split(".")[0] not in project.top_names:
            return d
        opened = project.resolve(d.qname, self.ma, demand=True)
        return opened if opened is not None and opened.kind == V.FUNC else d

    def qualify(self, name: str) -> str:
        if self.cls is not None:
            return f"{self.cls.name}.{name}"
        if self.rec is not None:
            return f"{self.rec.name}.{name}"
        return name

_EXPR_DISPATCH[cst.Call] = CallMixin.e_call

_STMT = {
    cst.SimpleStatementLine: Walker.simple_line,
    cst.If: Walker.s_if,
    cst.For: Walker.s_for,
    cst.While: Walker.s_while,
    cst.With: Walker.s_with,
    cst.Try: Walker.s_try,
    cst.TryStar: Walker.s_try,
    cst.FunctionDef: Walker.s_def,
    cst.ClassDef: ClassMixin.s_class,
    cst.Match: Walker.s_match,
}
_SMALL = {
    cst.Expr: Walker.s_expr,
    cst.Assign: Walker.s_assign,
    cst.AnnAssign: Walker.s_annassign,
    cst.AugAssign: Walker.s_augassign,
    cst.Return: Walker.s_return,
    cst.Raise: Walker.s_raise,
    cst.Break: Walker.s_break,
    cst.Continue: Walker.s_continue,
    cst.Del: Walker.s_delete,
    cst.Assert: Walker.s_assert,
    cst.Import: Walker.s_import,
    cst.ImportFrom: Walker.s_import,
    cst.Global: Walker.s_global,
    cst.Nonlocal: Walker.s_nonlocal,
}
