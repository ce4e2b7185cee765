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

from . import values as V
from .records import param_nodes

# the most specialisations of one function
MAX_PINNED = 8

_NOT = object()     # no constant


def literal(node):
    """The Python value of a literal expression (a number, a string, ``True``, ``False``,
    ``None``, ``-1``), or ``_NOT``."""
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
        try:
            value = node.evaluated_value
        except Exception:  # pragma: no cover - libcst evaluates every valid literal
            return _NOT
        return _NOT if value is None else value     # (an f-string has none)
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        return -node.expression.evaluated_value
    return _NOT


def _literals(node) -> Optional[tuple]:
    """The values of a tuple, list or set display of literals (``in ("a", "b")``), or None."""
    if not isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return None
    out = tuple(literal(e.value) for e in node.elements)
    return out if all(v is not _NOT for v in out) else None


class _Tests(cst.CSTVisitor):
    """The names a function's tests compare with constants, and the names it binds."""

    def __init__(self):
        self.tested: set = set()
        self.bound: set = set()
        self.depth = 0

    def _test(self, test) -> None:
        for name in _names_tested(test):
            self.tested.add(name)

    def visit_FunctionDef(self, node) -> bool:
        self.depth += 1
        return self.depth == 1

    def leave_FunctionDef(self, node) -> None:
        self.depth -= 1

    def visit_Lambda(self, node) -> bool:
        return False

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_If(self, node) -> None:
        self._test(node.test)

    def visit_IfExp(self, node) -> None:
        self._test(node.test)

    def visit_Match(self, node) -> None:
        if isinstance(node.subject, cst.Name):
            self.tested.add(node.subject.value)

    def visit_AssignTarget(self, node) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node) -> None:
        self._bind(node.target)

    def visit_AnnAssign(self, node) -> None:
        self._bind(node.target)

    def visit_For(self, node) -> None:
        self._bind(node.target)

    def visit_WithItem(self, node) -> None:
        if node.asname is not None:
            self._bind(node.asname.name)

    def visit_NamedExpr(self, node) -> None:
        self._bind(node.target)

    def visit_Del(self, node) -> None:
        self._bind(node.target)

    def visit_Nonlocal(self, node) -> None:
        self.bound.update(n.name.value for n in node.names)

    def visit_Global(self, node) -> None:
        self.bound.update(n.name.value for n in node.names)

    def visit_MatchAs(self, node) -> None:
        if node.name is not None:
            self.bound.add(node.name.value)

    def _bind(self, target) -> None:
        if isinstance(target, cst.Name):
            self.bound.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._bind(el.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)


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
        if isinstance(test.left, cst.Name) and (literal(right) is not _NOT or _literals(right) is not None):
            return [test.left.value]
        if isinstance(right, cst.Name) and literal(test.left) is not _NOT:
            return [right.value]
    return []


def tested_params(rec) -> frozenset:
    """The indexes of the parameters of ``rec`` (a function record of this module) that its
    tests compare with constants and that it never rebinds."""
    if rec.tested is None:
        names = frozenset()
        if isinstance(rec.node, cst.FunctionDef):
            visitor = _Tests()
            rec.node.visit(visitor)
            names = frozenset(visitor.tested - visitor.bound)
        rec.tested = frozenset(i for i, p in enumerate(rec.params) if p in names)
    return rec.tested


def _given(walker, rec, index: int, bind: dict, call):
    """The constant a call gives parameter ``index``: the literal passed or the module
    constant named (:func:`~.constants.constant_scalar`), or the literal default of one the
    call leaves out (with no ``*``/``**`` argument that may give it); ``_NOT`` otherwise."""
    arg = bind.get(index)
    if arg is not None and arg[1] is not None:
        value = literal(arg[1])
        if value is _NOT and isinstance(arg[1], (cst.Name, cst.Subscript, cst.Attribute)):
            from .constants import constant_scalar

            held = constant_scalar(walker, arg[1])
            value = held if type(held) in (bool, int, str) else _NOT
        return value
    if arg is not None and arg[0] is not (getattr(rec, "defaults", None) or {}).get(index):
        return _NOT     # a value with no expression (bound by a partial, a ``**`` payload)
    if any(a.star for a in getattr(call, "args", ())):
        return _NOT
    plist = param_nodes(rec.node)
    return literal(plist[index].default) if index < len(plist) and plist[index].default is not None else _NOT


def specialised(walker, rec, bind: dict, call):
    """The record of ``rec`` pinned to the constants this call of ``walker`` (``bind``:
    index -> (value, expression), ``call`` its node) gives the parameters it tests,
    analysed on demand; or ``rec`` itself (another module's function, no constant given,
    too many already)."""
    here = walker.ma
    if rec.owner is not here or getattr(rec, "pinned", None) is not None or not isinstance(rec.node, cst.FunctionDef):
        return rec
    given = {}
    for i, name in enumerate(rec.params):
        if not name.startswith("*"):
            value = _given(walker, rec, i, bind, call)
            if value is not _NOT and type(value) in (bool, int, float, str, type(None)):
                given[i] = value
    if not given or not _may_differ(here.summary(rec)):
        return rec
    tested = tested_params(rec)
    pins = {rec.params[i]: v for i, v in given.items() if i in tested}
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
    from its parameters."""
    return bool(summary.exports or summary.fields or summary.fills or summary.calls) \
        or V.carries_multi(summary.ret) or V.carries_multi(summary.yields)


def truth(pins: dict, test) -> Optional[bool]:
    """Whether ``test`` holds with the parameters ``pins`` (name -> constant) fixed; None
    when it depends on anything else."""
    if isinstance(test, cst.Name):
        return bool(pins[test.value]) if test.value in pins else None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = truth(pins, test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = truth(pins, test.left), truth(pins, test.right)
        if isinstance(test.operator, cst.And):
            return False if left is False or right is False else (True if left and right else None)
        return True if left is True or right is True else (False if left is False and right is False else None)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op, right = test.comparisons[0].operator, test.comparisons[0].comparator
        left = test.left
        if isinstance(right, cst.Name) and right.value in pins and not isinstance(left, cst.Name):
            left, right = right, left
        if not isinstance(left, cst.Name) or left.value not in pins:
            return None
        value = pins[left.value]
        if isinstance(op, (cst.In, cst.NotIn)):
            among = _literals(right)
            return None if among is None else (value in among) == isinstance(op, cst.In)
        other = literal(right)
        if other is _NOT:
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


def arm_taken(pins: dict, subject, case) -> Optional[bool]:
    """Whether the ``match`` arm ``case`` is taken for the pinned ``subject`` (a name in
    ``pins``), when every earlier arm was not: a literal pattern (or ``|`` of them) compares,
    a bare capture or ``_`` always takes; None when it depends on anything else (a class
    pattern, a guard)."""
    if not isinstance(subject, cst.Name) or subject.value not in pins or case.guard is not None:
        return None
    return _pattern(pins[subject.value], case.pattern)


def _pattern(value, pattern) -> Optional[bool]:
    if isinstance(pattern, cst.MatchValue):
        other = literal(pattern.value)
        return None if other is _NOT else value == other
    if isinstance(pattern, cst.MatchSingleton):
        other = literal(pattern.value)
        return None if other is _NOT else value is other
    if isinstance(pattern, cst.MatchOr):
        found = [_pattern(value, p.pattern) for p in pattern.patterns]
        return True if any(f is True for f in found) else (False if all(f is False for f in found) else None)
    if isinstance(pattern, cst.MatchAs) and pattern.pattern is None:
        return True
    return None
