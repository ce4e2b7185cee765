"""Functions specialised for constant arguments: a function whose ``if``, conditional
expression or ``match`` tests a parameter against constants (``def place(x, mode): match
mode: case "dp": ... case "single": ...``, ``def maybe_host(x, host=True): return
np.asarray(x) if host else x``) is analysed again, for a call of the same module that gives
such a parameter a literal (or leaves it to a literal default), with that parameter *pinned*
to the constant: the walk takes only the branches the constant takes (hunt42 p08: a debug
script calling ``place(x, "single")`` exports what ``jax.device_put(x, jax.devices()[0])``
returns).  The general analysis (every branch) is kept for every other call.

Only calls of the module's own functions are specialised (as in :mod:`.closures`): a module's
result never depends on whether another module was analysed in this run or read from the
cache.  A parameter the function rebinds is never pinned.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from ..knowledge import apis
from . import values as V
from .module_state import FunctionLocals
from .records import default_node

# the most specialisations of one function
MAX_PINNED = 8

NOT_LITERAL = object()     # what literal() gives for an expression that is none


class InstanceOf:
    """A parameter pinned to an instance of a class of this project (``export(x,
    HostCopy())``): its tests are ``isinstance`` checks and ``match`` class patterns.
    Hashed by identity (its class record)."""

    __slots__ = ("cls",)

    def __init__(self, cls):
        self.cls = cls

    def __eq__(self, other) -> bool:
        return isinstance(other, InstanceOf) and other.cls is self.cls

    def __hash__(self) -> int:
        return id(self.cls)

    def is_a(self, value) -> Optional[bool]:
        """Whether the pinned instance is an instance of ``value`` (a class value, or a tuple
        of them): a class of the project decides, anything else is unknown (None)."""
        if value is None:
            return None
        if value.elements is not None:      # ``isinstance(x, (A, B))``
            return _any([self.is_a(e) for e in value.elements])
        if value.kind != V.CLASS or value.cls is None:
            return None
        todo, seen = [self.cls], set()
        while todo:
            c = todo.pop()
            if c is value.cls:
                return True
            if id(c) not in seen:
                seen.add(id(c))
                todo.extend(c.bases)
        # not among its bases of the project; a library base could still be it
        return None if self._library_bases() else False

    def _library_bases(self) -> bool:
        node = getattr(self.cls, "node", None)
        return len(getattr(node, "bases", ())) > len(self.cls.bases)


def _any(found) -> Optional[bool]:
    """Three-valued ``any``: True if one is True, False if all are False, else None."""
    return True if any(f is True for f in found) else (False if all(f is False for f in found) else None)


def _all(found) -> Optional[bool]:
    """Three-valued ``all``: False if one is False, True if all are True, else None."""
    return False if any(f is False for f in found) else (True if all(f is True for f in found) else None)


def literal(node):
    """The Python value of a literal expression (a number, a string, ``True``, ``False``,
    ``None``, ``-1``), or ``NOT_LITERAL``."""
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
        try:
            value = node.evaluated_value
        except Exception:  # pragma: no cover - libcst evaluates every valid literal
            return NOT_LITERAL
        return NOT_LITERAL if value is None else value     # (an f-string has none)
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        return -node.expression.evaluated_value
    return NOT_LITERAL


def _literals(node) -> Optional[tuple]:
    """The values of a tuple, list or set display of literals (``in ("a", "b")``), or None."""
    if not isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return None
    out = tuple(literal(e.value) for e in node.elements)
    return out if all(v is not NOT_LITERAL for v in out) else None


# the calls whose first argument is a mesh's shape, by their last name (``make_mesh``, a
# device array's ``reshape``): a parameter there is pinned to a call's constant like a tested one
_SHAPE_CALLS = frozenset({q.rsplit(".", 1)[-1] for q in apis.MESH_SHAPE_CALLS}
                         | {m for m, how in apis.DEVICE_ARRAY_METHODS.items() if how == "reshape"})


class _Tests(FunctionLocals):
    """The names a function's tests compare with constants (besides what
    :class:`~.module_state.FunctionLocals` collects: the names its body binds)."""

    def __init__(self):
        super().__init__()
        self.tested: set = set()
        self._kept = None       # the name a ``p = p or default`` keeps (no rebinding when pinned)
        self.defaulted: set = set()     # the names so kept

    def visit_Assign(self, node) -> None:
        value = node.value
        if isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or) \
                and isinstance(value.left, cst.Name):
            # ``n = n or jax.device_count()``, ``count = n_devices or len(jax.devices())``: the
            # left operand is read as a truth value (a default filled in)
            self.tested.add(value.left.value)
        kept = defaulted(node)
        if kept is not None:
            self._kept = kept
            self.defaulted.add(kept)

    def leave_Assign(self, node) -> None:
        self._kept = None

    def _target(self, t) -> None:
        if not (isinstance(t, cst.Name) and t.value == self._kept):
            super()._target(t)

    def visit_Param(self, node) -> bool:
        return False    # a parameter is bound by the call, not rebound by the body

    def visit_If(self, node) -> None:
        self.tested.update(_names_tested(node.test))

    def visit_IfExp(self, node) -> None:
        self.tested.update(_names_tested(node.test))

    def visit_Match(self, node) -> None:
        if isinstance(node.subject, cst.Name):
            self.tested.add(node.subject.value)

    def visit_Subscript(self, node) -> None:
        # a key (``{"host": HostCopy, ...}[kind]``, ``EXPORTERS[kind]``): a table read by it
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
                and isinstance(node.slice[0].slice.value, cst.Name):
            self.tested.add(node.slice[0].slice.value.value)

    def visit_Slice(self, node) -> None:
        # a bound of a slice (``jax.devices()[:n]``): a device list's, and so a mesh's, size
        for bound in (node.lower, node.upper):
            if isinstance(bound, cst.Name):
                self.tested.add(bound.value)

    def visit_Call(self, node) -> None:
        # a mesh's shape (``jax.make_mesh((n,), ...)``, ``devices.reshape(shape)``)
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in _SHAPE_CALLS and node.args:
            shape = node.args[0].value
            for e in shape.elements if isinstance(shape, (cst.Tuple, cst.List)) else (node.args[0],):
                if isinstance(e.value, cst.Name):
                    self.tested.add(e.value.value)

    def visit_MatchAs(self, node) -> None:
        if node.name is not None:
            self.bound.add(node.name.value)


def defaulted(node) -> Optional[str]:
    """The name ``p`` of an assignment ``p = p or default`` (one target), else None: with
    ``p`` pinned to a truthy constant it keeps that constant (:func:`tested_params` pins such
    a parameter; the walk's ``p or default`` is then ``p``: ``ExprMixin.e_boolean``)."""
    if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
            and isinstance(node.value, cst.BooleanOperation) and isinstance(node.value.operator, cst.Or) \
            and isinstance(node.value.left, cst.Name) and node.value.left.value == node.targets[0].target.value:
        return node.value.left.value
    return None


def _names_tested(test) -> list:
    """The names a test reads as a truth value or compares with constants."""
    if isinstance(test, cst.Name):
        return [test.value]
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _names_tested(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _names_tested(test.left) + _names_tested(test.right)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        right = test.comparisons[0].comparator
        if isinstance(test.left, cst.Name) and (literal(right) is not NOT_LITERAL or _literals(right) is not None):
            return [test.left.value]
        if isinstance(right, cst.Name) and literal(test.left) is not NOT_LITERAL:
            return [right.value]
    if _isinstance_of(test) is not None:
        return [test.args[0].value.value]
    return []


def _isinstance_of(test):
    """The class argument of ``isinstance(name, classes)``, or None."""
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "isinstance" \
            and len(test.args) == 2 and isinstance(test.args[0].value, cst.Name) \
            and not any(a.star or a.keyword for a in test.args):
        return test.args[1].value
    return None


def tested_params(rec) -> frozenset:
    """The indexes of the parameters of ``rec`` (a function record of this module) that its
    tests compare with constants and that it never rebinds."""
    if rec.tested is None:
        names = frozenset()
        if isinstance(rec.node, cst.FunctionDef):
            visitor = _Tests()
            rec.node.visit(visitor)
            names = frozenset(visitor.tested - visitor.bound - visitor.declared)
            rec.defaulted = frozenset(visitor.defaulted) & names
        rec.tested = frozenset(i for i, p in enumerate(rec.params) if p in names)
    return rec.tested


def _given(walker, rec, index: int, bind: dict, call):
    """The constant a call gives parameter ``index``: the literal passed or the module
    constant named (:func:`~.constants.constant_scalar`), or the literal default of one the
    call leaves out (with no ``*``/``**`` argument that may give it); ``NOT_LITERAL`` otherwise."""
    arg = bind.get(index)
    if arg is not None and arg[1] is not None:
        value = literal(arg[1])
        if value is NOT_LITERAL and isinstance(arg[1], (cst.Name, cst.Subscript, cst.Attribute)):
            from .constants import constant_scalar

            held = constant_scalar(walker, arg[1])
            value = held if type(held) in (bool, int, str) else NOT_LITERAL
        return value
    if arg is not None and arg[0] is not (getattr(rec, "defaults", None) or {}).get(index):
        return NOT_LITERAL     # a value with no expression (bound by a partial, a ``**`` payload)
    if any(a.star for a in getattr(call, "args", ())):
        return NOT_LITERAL
    default = default_node(rec, index)
    return literal(default) if default is not None else NOT_LITERAL


def specialised(walker, rec, bind: dict, call, general):
    """The record of ``rec`` pinned to the constants this call of ``walker`` (``bind``:
    index -> (value, expression), ``call`` its node) gives the parameters it tests, to be
    analysed by the caller; or ``rec`` itself (another module's function, no constant
    given, too many already, or nothing a branch could change in its ``general``
    summary)."""
    here = walker.ma
    if rec.owner is not here or getattr(rec, "pinned", None) is not None or not isinstance(rec.node, cst.FunctionDef) \
            or not _may_differ(general):
        return rec
    given = {}
    for i, name in enumerate(rec.params):
        if not name.startswith("*"):
            value = _given(walker, rec, i, bind, call)
            if value is not NOT_LITERAL:
                given[i] = value
            elif i in bind and bind[i][0].kind == V.INSTANCE and bind[i][0].cls is not None \
                    and not bind[i][0].others:
                given[i] = InstanceOf(bind[i][0].cls)
    if not given:
        return rec
    tested = tested_params(rec)
    kept = getattr(rec, "defaulted", frozenset())    # ``p = p or default``: pinned only when truthy
    pins = {rec.params[i]: v for i, v in given.items() if i in tested and (v or rec.params[i] not in kept)}
    if not pins:
        return rec
    memo = here.specialized
    key = ("pinned", id(rec), frozenset((k, type(v).__name__, v) for k, v in pins.items()))
    special = memo.get(key)
    if special is None:
        if sum(1 for k in memo if k[0] == "pinned" and k[1] == id(rec)) >= MAX_PINNED:
            return rec
        special = memo[key] = replace(rec, summary=None, state="new", events={}, recursive=False,
                                      self_writes=None, pinned=pins)
    return special


def _may_differ(summary) -> bool:
    """Whether a branch not taken can change what a call of a function with this (general)
    summary does: it exports, fills, stores or returns something multi-device or computed
    from its parameters, or returns one of several functions, classes or instances of
    different classes (a factory: ``make_exporter("host")``), or returns a mesh or a
    sharding (``make(n)``: its size may be a parameter's)."""
    return bool(summary.exports or summary.fields or summary.fills or summary.calls) \
        or V.carries_multi(summary.ret) or V.carries_multi(summary.yields) \
        or summary.ret is not None and bool(summary.ret.others) \
        or summary.ret is not None and summary.ret.kind in (V.MESH, V.SHARDING)   # sized by a parameter


def _held(pins: dict, node, const):
    """The constant ``node`` stands for: a pinned parameter's, else what ``const(node)``
    says (a module constant: ``DEBUG``, ``CONFIG["mode"]``), else ``NOT_LITERAL``."""
    if isinstance(node, cst.Name) and node.value in pins:
        return pins[node.value]
    if const is not None and isinstance(node, (cst.Name, cst.Subscript, cst.Attribute)):
        value = const(node)
        if value is not None:
            return value
    return NOT_LITERAL


def truth(pins: dict, test, resolve=None, const=None) -> Optional[bool]:
    """Whether ``test`` holds with the parameters ``pins`` (name -> constant, or
    :class:`InstanceOf`) fixed, and the constants ``const(node)`` reads (a module's
    ``DEBUG = False``, ``CONFIG = {"mode": "single"}``: :func:`~.constants.constant_scalar`);
    None when it depends on anything else.  ``resolve`` gives the value of an expression
    (the class of an ``isinstance`` test)."""
    if isinstance(test, cst.Name):
        held = _held(pins, test, const)
        if held is NOT_LITERAL:
            return None
        if isinstance(held, InstanceOf):    # truthy unless its class says otherwise
            return None if "__bool__" in held.cls.methods or "__len__" in held.cls.methods else True
        return bool(held)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = truth(pins, test.expression, resolve, const)
        return None if inner is None else not inner
    classes = _isinstance_of(test)
    if classes is not None:
        held = pins.get(test.args[0].value.value)
        return held.is_a(resolve(classes)) if isinstance(held, InstanceOf) and resolve is not None else None
    if isinstance(test, cst.BooleanOperation):
        both = [truth(pins, test.left, resolve, const), truth(pins, test.right, resolve, const)]
        return _all(both) if isinstance(test.operator, cst.And) else _any(both)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op, right = test.comparisons[0].operator, test.comparisons[0].comparator
        left = test.left
        value = _held(pins, left, const)
        if value is NOT_LITERAL and literal(left) is not NOT_LITERAL and not isinstance(op, (cst.In, cst.NotIn)):
            left, right = right, left       # ``"single" == MODE``
            value = _held(pins, left, const)
        if value is NOT_LITERAL:
            return None
        if isinstance(value, InstanceOf):
            if isinstance(op, (cst.Is, cst.IsNot)) and literal(right) is None:
                return isinstance(op, cst.IsNot)    # an instance is not None
            return None
        if isinstance(op, (cst.In, cst.NotIn)):
            among = _literals(right)
            return None if among is None else (value in among) == isinstance(op, cst.In)
        other = literal(right)
        if other is NOT_LITERAL:
            return None
        if isinstance(op, cst.Equal):
            return value == other
        if isinstance(op, cst.NotEqual):
            return value != other
        if isinstance(op, cst.Is):
            return value is other if other is None or isinstance(other, bool) else None
        if isinstance(op, cst.IsNot):
            return value is not other if other is None or isinstance(other, bool) else None
    return None


def arm_taken(pins: dict, subject, case, resolve=None, const=None) -> Optional[bool]:
    """Whether the ``match`` arm ``case`` is taken for the pinned ``subject`` (a name in
    ``pins``), when every earlier arm was not: a literal pattern (or ``|`` of them) compares,
    a class pattern whose sub-patterns only capture checks the class of an
    :class:`InstanceOf` (``resolve`` gives its value), a bare capture or ``_`` always takes;
    None when it depends on anything else (a guard, a sub-pattern that compares)."""
    held = _held(pins, subject, const) if case.guard is None else NOT_LITERAL
    return None if held is NOT_LITERAL else _pattern(held, case.pattern, resolve)


def _captures(pattern) -> bool:
    return isinstance(pattern, cst.MatchAs) and pattern.pattern is None


def _pattern(value, pattern, resolve=None) -> Optional[bool]:
    if isinstance(pattern, cst.MatchClass):
        if not isinstance(value, InstanceOf) or resolve is None \
                or not all(_captures(p.pattern) for p in (*pattern.patterns, *pattern.kwds)):
            return None
        return value.is_a(resolve(pattern.cls))
    if isinstance(value, InstanceOf) and not _captures(pattern) and not isinstance(pattern, cst.MatchOr):
        return None
    if isinstance(pattern, cst.MatchValue):
        other = literal(pattern.value)
        return None if other is NOT_LITERAL else value == other
    if isinstance(pattern, cst.MatchSingleton):
        other = literal(pattern.value)
        return None if other is NOT_LITERAL else value is other
    if isinstance(pattern, cst.MatchOr):
        return _any([_pattern(value, p.pattern, resolve) for p in pattern.patterns])
    return True if _captures(pattern) else None
