"""Class statements of the provenance walk: methods, class attributes, inheritance from
classes of this module, records (dataclasses, NamedTuples, flax ``TrainState``... see
:mod:`jaxinterop_lint.knowledge.structures`) and the attributes methods store on ``self``.
A mixin of :class:`~.flow.Walker`."""
from __future__ import annotations

from dataclasses import replace

import libcst as cst

from ..knowledge import apis
from ..knowledge import structures as S
from . import values as V
from .bindings import part_read
from .imports import dotted
from .records import ClassRecord
from .structures import class_record_rule
from .values import Value


class ClassMixin:
    """Walk a ``class`` body into a :class:`~.module.ClassRecord`."""

    def rebound(self, method: Value, cls, name: str, own: frozenset) -> Value:
        """The method ``name`` that ``cls`` inherits (``method``), as an instance of ``cls``
        runs it: when it reads or calls on ``self`` a name ``cls`` defines itself (``own``:
        a template method, ``Base.__call__`` running ``self.prepare(x)`` that the subclass
        overrides), a copy of its record whose ``self`` is an instance of ``cls``, analysed
        when a call runs it and from then on reported with the module's functions (hunt41
        p04/p05; eagerly, keras' layers would analyse every inherited method once per
        subclass); otherwise, and for a base of another module, the base's method itself."""

        rec = method.func.local if method.kind == V.FUNC and method.func is not None else None
        if rec is None or rec.cls is None or getattr(rec, "owner", None) is not self.ma \
                or getattr(rec, "is_classmethod", False) or not self_reads(rec) & own:
            return method   # (a base of another module: its method as it is, as before)
        # analysed, and then reported with the module's functions, once called (module.summary)
        copy = replace(rec, cls=cls, name=f"{cls.name}.{name}", summary=None, state="new", events={},
                       recursive=False, self_writes=None, rebound=True)
        return V.evolve(method, func=replace(method.func, local=copy))

    def s_class(self, node: cst.ClassDef) -> None:
        """Bind the class: its body walked with its own environment (methods and class
        attributes), local bases' methods and attributes inherited, its record rule and fields."""
        bases = [self.deferred_base(self.eval(base.value)) for base in node.bases]
        decorators = [self.eval(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                      for d in node.decorators]
        cls = ClassRecord(node, node.name.value)
        walker = type(self)(self.ma, self.rec, {}, self.snapshot(), node.name.value)
        walker.events = self.events
        walker.cls = cls
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
        walker.block(body)
        for name, v in (walker.env or {}).items():
            if name not in cls.methods and not name.startswith("@"):
                cls.statics[name] = v
        inherited = ()
        defined = set(cls.methods) | set(cls.statics)
        taken: dict = {}
        if any(b.kind == V.QNAME and b.qname in apis.ENUM_BASES for b in bases):
            # an enum's members: each constant of its body is an instance of the class
            cls.enum = True
            for name, v in cls.statics.items():
                if not name.startswith("_") and v.kind not in (V.FUNC, V.CLASS):
                    cls.statics[name] = V.member(cls, name)
            cls.enum_values = _member_values(body)
        for base in bases:
            if base.kind == V.QNAME and base.qname in apis.CALL_METHODS:
                cls.call_method = cls.call_method or apis.CALL_METHODS[base.qname]
            cls.thread = cls.thread or base.kind == V.QNAME and base.qname in S.THREAD_CLASSES
            if base.kind == V.CLASS and base.cls is not None:
                cls.call_method = cls.call_method or base.cls.call_method
                cls.thread = cls.thread or base.cls.thread
                for name, m in base.cls.methods.items():
                    if name not in cls.methods and name not in taken:
                        taken[name] = m
                for name, v in base.cls.statics.items():
                    cls.statics.setdefault(name, v)
        # an inherited method that reads a name the class defines, or an inherited method
        # rebound so, is rebound too (``to_torch`` calling ``self.put``, which reads the
        # class's own ``sharding``): to a fixpoint
        grew = True
        while grew:
            grew = False
            for name, m in taken.items():
                if name not in defined:
                    new = self.rebound(m, cls, name, frozenset(defined))
                    if new is not m:
                        taken[name] = new
                        defined.add(name)
                        grew = True
        cls.own = frozenset(defined)
        cls.methods.update(taken)
        cls.bases = tuple(b.cls for b in bases if b.kind == V.CLASS and b.cls is not None)
        cls.record, inherited = class_record_rule(bases, decorators)
        if cls.record is not None:
            own = tuple(n for n in _annotated_fields(body) if n not in inherited)
            cls.fields = inherited + own
        cls.writers = None      # found on first need: self_writers()
        value = Value(kind=V.CLASS, cls=cls)
        self.env[node.name.value] = value
        self.init_subclass(node, value)
        for dec, d in zip(reversed(node.decorators), reversed(decorators)):
            if d.kind == V.FUNC and d.func is not None and d.func.local is not None and d.func.local.owner is self.ma:
                # a decorator of the project (``@register("torch")`` filling a registry): what
                # it returns for the class, when that is a class
                full = self.eval(dec.decorator) if isinstance(dec.decorator, cst.Call) else d
                if full.kind == V.FUNC and full.func is not None:
                    out = self.func_call(dec, full.func, [(value, None)], {})
                    if out.kind == V.CLASS:
                        value = out
        self.env[node.name.value] = value

    def init_subclass(self, node: cst.ClassDef, value: Value) -> None:
        """A ``class`` statement runs the ``__init_subclass__`` of its nearest base that has
        one (an implicit classmethod), with the new class and the statement's keywords
        (PEP 487; ``class TorchExporter(Exporter, name="torch")``): a base that registers
        its subclasses (``Exporter.REGISTRY[name] = cls``) fills its registry.  Bases of
        this module's classes only."""
        for base in value.cls.bases:
            method = base.methods.get("__init_subclass__")
            if method is not None and method.kind == V.FUNC and method.func is not None \
                    and method.func.local is not None:
                break
        else:
            return
        kw = {a.keyword.value: (self.eval(a.value), a.value) for a in node.keywords
              if a.keyword is not None and a.keyword.value != "metaclass" and not a.star}
        self.func_call(node, replace(method.func, bound=((value, None),)), [], kw)


class _SelfReads(cst.CSTVisitor):
    """The attributes read on ``self_name`` (:func:`_on_self`) anywhere in the nodes visited."""

    def __init__(self, self_name: str) -> None:
        super().__init__()
        self.self_name, self.names = self_name, set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = _on_self(node, self.self_name)
        if attr is not None:
            self.names.add(attr)


def self_reads(rec) -> frozenset:
    """The attributes the method ``rec`` reads or calls on its first parameter
    (``self.prepare(x)``, ``self.sharding``), computed once."""
    if rec.self_reads is None:
        found = frozenset()
        if isinstance(rec.node, cst.FunctionDef) and rec.params:
            reader = _SelfReads(rec.params[0])
            rec.node.body.visit(reader)
            found = frozenset(reader.names)
        rec.self_reads = found
    return rec.self_reads


def self_writers(cls) -> dict:
    """Attribute -> the methods of ``cls`` that assign ``self.<attribute>``."""
    writers: dict = {}
    for method in cls.methods.values():
        if method.kind == V.FUNC and method.func is not None and method.func.local is not None:
            rec = method.func.local
            if rec.params and getattr(rec, "node", None) is not None:
                for attr in _self_writes(rec.node, rec.params[0]):
                    writers.setdefault(attr, []).append(rec)
    return writers


def _annotated_fields(body) -> list:
    """The names a class body annotates (``x: int`` or ``x: int = 0``), in order, without
    ``ClassVar``/``InitVar`` ones and ``_: KW_ONLY``: a record's fields."""
    out = []
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                ann = small.annotation.annotation
                head = ann.value if isinstance(ann, cst.Subscript) else ann
                name = dotted(head) or ""
                if name.rsplit(".", 1)[-1] in ("ClassVar", "InitVar", "KW_ONLY"):
                    continue
                out.append(small.target.value)
    return out


def self_writes_of(rec) -> frozenset:
    """The attributes the method ``rec`` assigns or fills on its first parameter
    (:func:`_self_writes`), computed once."""
    found = getattr(rec, "self_writes", None)
    if found is None:
        node = getattr(rec, "node", None)
        found = frozenset(_self_writes(node, rec.params[0])) if isinstance(node, cst.FunctionDef) and rec.params \
            else frozenset()
        rec.self_writes = found
    return found


def _on_self(node, self_name: str):
    """``x`` when ``node`` is ``<self_name>.x``, else None."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == self_name:
        return node.attr.value
    return None


def _container_root(expr):
    """The container whose entry ``expr`` reads (``self.handlers`` for
    ``self.handlers[event]`` or ``self.handlers.setdefault(event, [])``), to any depth; else
    ``expr``."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and part_read(expr)[0] is not None:
            expr = expr.func.value
        else:
            return expr


def _self_writes(fn, self_name: str):
    """Attributes that ``fn`` assigns or fills on its first parameter (``self.x = ...``,
    ``self.x[k] = ...``, ``self.x.append(...)``), found by a walk of its statements (nested
    functions and classes excluded)."""
    found = set()
    aliases, changed = {}, set()    # ``h = self.hist`` then ``h.append(v)`` fills ``hist``
    todo = [fn.body]
    while todo:
        node = todo.pop()
        if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite, cst.SimpleStatementLine)):
            todo.extend(node.body)
        elif isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for t in targets:
                inner = t.value if isinstance(t, cst.Subscript) else t
                attr = _on_self(inner, self_name)
                if attr is not None:
                    found.add(attr)
                elif isinstance(t, cst.Subscript) and isinstance(inner, cst.Name):
                    changed.add(inner.value)
            if isinstance(node, cst.Assign) and len(targets) == 1 and isinstance(targets[0], cst.Name):
                base = part_read(node.value)[0]
                if base is not None and base.startswith(self_name + "."):
                    aliases[targets[0].value] = base.split(".")[1]
        elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call) \
                and isinstance(node.value.func, cst.Attribute) and node.value.func.attr.value in S.MUTATING_METHODS:
            receiver = _container_root(node.value.func.value)
            attr = _on_self(receiver, self_name)
            if attr is not None:
                found.add(attr)
            elif isinstance(receiver, cst.Name):
                changed.add(receiver.value)
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
    return found | {aliases[n] for n in changed if n in aliases}


def _member_values(body) -> dict:
    """``{literal: member name}`` of the members an enum's ``body`` (its statements) binds
    to a literal (``LOCAL = "local"``): what ``Placement("local")`` looks up."""
    from .constants import literal_constant

    out = {}
    for stmt in body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                    and isinstance(small.targets[0].target, cst.Name) \
                    and isinstance(small.value, (cst.SimpleString, cst.Integer)):
                value = literal_constant(small.value)
                if value is not None:
                    out.setdefault(value, small.targets[0].target.value)
    return out
