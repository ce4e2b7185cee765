"""The flow-sensitive walk of statements: assignments, branches and joins, loops to a
fixpoint, ``try``/``except``, ``with``, ``def``/``class`` and returns."""
from __future__ import annotations

from collections import ChainMap
from dataclasses import replace

import libcst as cst

from ..knowledge import apis
from . import conditions
from . import values as V
from . import versions
from .calls import CallMixin
from .events import RemovedEvent, TryContext
from .expr import _DISPATCH as _EXPR_DISPATCH, ExprMixin
from .imports import dotted, import_bindings
from .invoke import InvokeMixin
from .module import ClassRecord, function_record
from .values import Value

SINGLE = conditions.ALL


_PROPERTIES = frozenset({"builtins.property", "functools.cached_property"})
_TRANSPARENT_DECORATORS = _PROPERTIES | {"builtins.classmethod", "functools.wraps", "functools.lru_cache",
                                         "functools.cache", "abc.abstractmethod", "typing.overload"}


def join_env(a, b):
    """Join two environments (None: unreachable)."""
    if a is None:
        return None if b is None else dict(b)
    if b is None:
        return dict(a)
    out = {}
    for k in a.keys() | b.keys():
        if k == SINGLE:
            if k in a and k in b:
                out[k] = a[k]
            continue
        if k == versions.KEY:  # the releases reaching either path (analysis/versions.py)
            joined = versions.join(a.get(k), b.get(k))
            if joined is not None:
                out[k] = joined
            continue
        out[k] = V.join(a.get(k), b.get(k))
    return out


def env_key(env):
    """Comparable form of an environment, for fixpoints."""
    if env is None:
        return None
    return frozenset((k, V.fixpoint_key(v)) for k, v in env.items())


class Walker(ExprMixin, CallMixin, InvokeMixin):
    """Walk one function body (``rec``) or the module body (``rec`` None) in ``env``, looking
    names up in ``closure`` when they are not local; events go to the function record."""

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
        versions.enter_function(self, rec)

    # -- utilities -----------------------------------------------------------------------
    def record(self, event) -> None:
        """Keep ``event``; a later visit of the same node (loops) replaces it."""
        event = versions.annotate(self, event)
        self.events[(type(event).__name__, id(event.node), id(getattr(event, "inner", None)))] = event

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
        v = self.eval(node.value)
        for t in node.targets:
            self.assign(t.target, v, node)

    def s_annassign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value), node)

    def s_augassign(self, node: cst.AugAssign) -> None:
        v = self.computed((self.eval(node.target), self.eval(node.value)))
        self.assign(node.target, v, node)

    def s_return(self, node: cst.Return) -> None:
        self.returns.append(self.eval(node.value) if node.value is not None else V.SAFE_VALUE)
        self.env = None

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
            key = dotted(t)
            if key is not None:
                self.env.pop(key, None)

    def s_assert(self, node: cst.Assert) -> None:
        self.eval(node.test)
        true, _ = conditions.refinements(self, node.test)
        self.refine(true, node.test)
        versions.narrow(self, versions.branches(self, node.test)[0])

    def s_import(self, node) -> None:
        for name, qn, is_from, alias in import_bindings(node, self.ma.package):
            if qn.split(".")[0] in apis.JAX_ROOTS:
                self.ma.imports_jax = True
            removed = apis.REMOVED_CALLS.get(qn)
            if removed is not None and is_from:
                self.record(RemovedEvent(alias, qn, removed, "import", self.function))
            self.env[name] = self.ma.resolve_import(qn)

    def assign(self, target, v: Value, node) -> None:
        """Bind ``target`` to ``v`` (tuple unpacking element by element when known)."""
        if isinstance(target, cst.Name):
            name = target.value
            if v.multi is not None:
                v = replace(v, multi=v.multi.step(f"assigned to `{name}`", node, self.ma))
            env = self.env
            env[name] = v
            prefix = name + "."
            for k in [k for k in env if k.startswith(prefix)]:
                del env[k]
        elif isinstance(target, (cst.Tuple, cst.List)):
            els = target.elements
            starred = any(isinstance(e, cst.StarredElement) for e in els)
            for i, el in enumerate(els):
                if v.elements is not None and not starred and len(v.elements) == len(els):
                    part = v.elements[i]
                else:
                    part = self.element_of(v) if v.kind in (V.DEVICE_LIST, V.SAFE_LIST) else (
                        V.as_array(v) if v.kind == V.ARRAY else v if v.kind in (V.SAFE, V.FOREIGN) else V.UNKNOWN_VALUE)
                self.assign(el.value, part, node)
        elif isinstance(target, cst.StarredElement):
            self.assign(target.value, v, node)
        elif isinstance(target, cst.Attribute):
            key = dotted(target)
            if key is not None:
                self.env[key] = v
            owner = self.eval(target.value) if not isinstance(target.value, cst.Name) else self.lookup(target.value.value)
            if owner.kind == V.INSTANCE:
                attrs = owner.cls.attrs
                attrs[target.attr.value] = V.join(attrs.get(target.attr.value), v)
        elif isinstance(target, cst.Subscript):
            key = dotted(target.value)
            self.eval_children(target)
            if key is not None and (v.multi is not None or v.deps):
                self.env[key] = V.join(self.lookup(key) if "." not in key else self.env.get(key), V.as_array(v))

    def refine(self, refs: dict, test) -> None:
        """Apply a guard's refinements to the current environment."""
        if self.env is None:
            return
        for key, action in refs.items():
            if key == SINGLE:
                self.env[SINGLE] = V.SAFE_VALUE
            elif action == conditions.SAFE:
                self.env[key] = V.SAFE_VALUE
            else:
                current = self.lookup(key) if "." not in key else self.env.get(key, V.UNKNOWN_VALUE)
                if current.kind not in (V.SAFE, V.FOREIGN):
                    self.env[key] = replace(current, false_guard=test)

    # -- compound statements -------------------------------------------------------------
    def s_if(self, node: cst.If) -> None:
        self.eval(node.test)
        true, false = conditions.refinements(self, node.test)
        may_true, may_false = versions.branches(self, node.test)
        saved = self.env
        self.env = dict(saved)
        versions.narrow(self, may_true)
        self.refine(true, node.test)
        self.suite(node.body)
        after_true = self.env
        self.env = dict(saved)
        versions.narrow(self, may_false)
        self.refine(false, node.test)
        if isinstance(node.orelse, cst.If):
            self.s_if(node.orelse)
        elif node.orelse is not None:
            self.suite(node.orelse.body)
        self.env = join_env(after_true, self.env)

    def loop(self, node, head) -> None:
        state = self.env
        breaks = []
        for _ in range(3):
            self.env = dict(state)
            self.loops.append(([], []))
            head()
            self.suite(node.body)
            breaks, continues = self.loops.pop()
            end = self.env
            for c in continues:
                end = join_env(end, c)
            new = join_env(state, end)
            done = env_key(new) == env_key(state)
            state = new
            if done:
                break
        self.env = state
        if node.orelse is not None:
            self.suite(node.orelse.body)
        for b in breaks:
            self.env = join_env(self.env, b)

    def s_for(self, node: cst.For) -> None:
        element = self.element_of(self.eval(node.iter))
        self.loop(node, lambda: self.assign(node.target, element, node))

    def s_while(self, node: cst.While) -> None:
        self.loop(node, lambda: self.eval(node.test))

    def s_with(self, node: cst.With) -> None:
        for item in node.items:
            self.eval(item.item)
            if item.asname is not None:
                self.assign(item.asname.name, V.UNKNOWN_VALUE, node)
        self.suite(node.body)

    def s_try(self, node) -> None:
        handlers = tuple((h, self.caught(h)) for h in node.handlers)
        entry = self.env
        outer = self.tries
        if handlers:
            self.tries = outer + (TryContext(node, handlers),)
        self.env = dict(entry)
        self.suite(node.body)
        self.tries = outer
        after_body = self.env
        exits = []
        for h, _ in handlers:
            self.env = join_env(entry, after_body)
            if h.name is not None:
                self.assign(h.name.name, V.UNKNOWN_VALUE, h)
            self.suite(h.body)
            exits.append(self.env)
        self.env = after_body
        if node.orelse is not None and self.env is not None:
            self.suite(node.orelse.body)
        for e in exits:
            self.env = join_env(self.env, e)
        if node.finalbody is not None:
            reached = self.env
            self.env = reached if reached is not None else dict(entry)
            self.suite(node.finalbody.body)
            if reached is None:
                self.env = None

    def caught(self, handler):
        """The class names an ``except`` clause catches (None: a bare ``except``)."""
        if handler.type is None:
            return None
        names = []

        def collect(v):
            if v.kind == V.QNAME:
                names.append(v.qname[len("builtins."):] if v.qname.startswith("builtins.") else v.qname)
            for e in v.elements or ():
                collect(e)

        collect(self.eval(handler.type))
        return tuple(names)

    def s_match(self, node) -> None:
        self.eval(node.subject)
        entry = self.env
        out = dict(entry)
        for case in node.cases:
            self.env = dict(entry)
            self.suite(case.body)
            out = join_env(out, self.env)
        self.env = out

    def s_def(self, node: cst.FunctionDef) -> None:
        rec = self.ma.register(function_record(node, self.qualify(node.name.value), self.snapshot(), self.cls))
        versions.at_def(self, node, rec)
        value = Value(kind=V.FUNC, func=V.FuncInfo(local=rec))
        for dec in reversed(node.decorators):
            d = self.eval(dec.decorator)
            if d.kind == V.QNAME and d.qname == "builtins.staticmethod":
                rec.cls = None
                continue
            if d.kind == V.QNAME and d.qname in _TRANSPARENT_DECORATORS:
                rec.is_property = d.qname in _PROPERTIES
                continue
            if d.kind == V.QNAME:
                out = self.library_call(dec, d.qname, [(value, None)], {})
            elif d.kind == V.FUNC and d.func.partial_of is not None:
                out = self.func_call(dec, d.func, [(value, None)], {})
            else:
                continue
            if out.kind != V.UNKNOWN:
                value = out
        if self.cls is not None:
            self.cls.methods[node.name.value] = value
        self.env[node.name.value] = value

    def qualify(self, name: str) -> str:
        if self.cls is not None:
            return f"{self.cls.name}.{name}"
        if self.rec is not None:
            return f"{self.rec.name}.{name}"
        return name

    def s_class(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            self.eval(base.value)
        cls = ClassRecord(node, node.name.value)
        walker = Walker(self.ma, self.rec, {}, self.snapshot(), node.name.value)
        walker.events = self.events
        walker.cls = cls
        walker.block(node.body.body if isinstance(node.body, cst.IndentedBlock) else [])
        for name, method in cls.methods.items():
            if method.kind == V.FUNC and method.func.local is not None:
                rec = method.func.local
                if rec.params:
                    for attr in _self_writes(rec.node, rec.params[0]):
                        cls.writers.setdefault(attr, []).append(rec)
        self.env[node.name.value] = Value(kind=V.CLASS, cls=cls)


def _self_writes(fn, self_name: str):
    """Attributes that ``fn`` assigns on its first parameter (``self.x = ...``), found by a
    walk of its statements (nested functions and classes excluded)."""
    found = set()
    todo = [fn.body]
    while todo:
        node = todo.pop()
        if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite, cst.SimpleStatementLine)):
            todo.extend(node.body)
        elif isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for t in targets:
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == self_name:
                    found.add(t.attr.value)
        elif isinstance(node, (cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar)):
            todo.append(node.body)
            for extra in ("orelse", "finalbody"):
                part = getattr(node, extra, None)
                if part is not None:
                    todo.append(part if isinstance(part, cst.If) else part.body)
            for h in getattr(node, "handlers", ()):
                todo.append(h.body)
        elif isinstance(node, cst.Else):
            todo.append(node.body)
    return found


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
    cst.ClassDef: Walker.s_class,
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
}
