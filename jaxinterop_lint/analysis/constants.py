"""Module-level integer constants, for the shapes of meshes and device lists:
``N_DEVICES = 1`` then ``jax.make_mesh((N_DEVICES,), ("d",))``, or ``CONFIG = {"dp": 1}`` then
``jax.make_mesh((CONFIG["dp"],), ("dp",))``, is a mesh of one device (its arrays export).

A name counts when the module binds it once, at top level, to an integer literal (or a dict
display whose entries at string keys are integer literals), and nothing else in the text can
change it: no other top-level binding, no ``global`` statement naming it, no ``NAME[...] =``
or ``NAME.update(`` (read from the module's text: a superset of what changes it).
"""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst


def _int(node) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    return None


def _key(node) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def module_constants(module: cst.Module, source: str) -> dict:
    """``{name: int, (name, key): int}`` of the constants of ``module`` (see the module
    docstring); ``source`` is its text."""
    found: dict = {}
    bound: dict = {}
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                    targets = [small.target]
                for t in targets:
                    if isinstance(t, cst.Name):
                        bound[t.value] = bound.get(t.value, 0) + 1
                        value = getattr(small, "value", None)
                        if isinstance(small, cst.AugAssign) or len(targets) != 1:
                            continue
                        n = _int(value)
                        if n is not None:
                            found[t.value] = n
                        elif isinstance(value, cst.Dict):
                            for el in value.elements:
                                if isinstance(el, cst.DictElement) and _key(el.key) is not None \
                                        and _int(el.value) is not None:
                                    found[(t.value, _key(el.key))] = _int(el.value)
        else:   # a name an if/try/for/with/def/class binds too is bound twice: no constant
            for name in _compound_binds(stmt):
                bound[name] = bound.get(name, 0) + 1
    out = {}
    for k, v in found.items():
        name = k if isinstance(k, str) else k[0]
        if bound.get(name) != 1 or _changed(name, source):
            continue
        out[k] = v
    return out


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


def _compound_binds(stmt) -> set:
    """The names a compound top-level statement binds in the module (:class:`TargetBinds`)."""
    v = TargetBinds()
    stmt.visit(v)
    return v.bound


def _changed(name: str, source: str) -> bool:
    """Whether the text may change ``name`` besides its one binding."""
    e = re.escape(name)
    return re.search(r"\bglobal\b[^\n]*\b%s\b|(?<![\w.])%s[ \t]*(?:\[[^\n=]*\][ \t]*(?:[-+*/]?=)(?!=)|"
                     r"\.[ \t]*(?:update|setdefault|pop|clear)[ \t]*\()" % (e, e), source) is not None


def constant_int(walker, node) -> Optional[int]:
    """The constant integer ``node`` (a name or ``NAME["key"]``) stands for in ``walker``'s
    module, or None: a name bound in the function walked is never one."""
    ma = walker.ma
    consts = getattr(ma, "_int_constants", None)
    if consts is None:
        consts = ma._int_constants = module_constants(ma.module, ma.source or "")
    if not consts:
        return None
    if isinstance(node, cst.Name):
        name, key = node.value, node.value
    elif isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1 \
            and isinstance(node.slice[0].slice, cst.Index) and _key(node.slice[0].slice.value) is not None:
        name, key = node.value.value, (node.value.value, _key(node.slice[0].slice.value))
    else:
        return None
    if walker.rec is not None and walker.env is not None and name in walker.env:
        return None     # a local of the function
    return consts.get(key)
