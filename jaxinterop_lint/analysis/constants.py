"""Module-level constants.  Integers, for the shapes of meshes and device lists:
``N_DEVICES = 1`` then ``jax.make_mesh((N_DEVICES,), ("d",))``, ``CONFIG = {"dp": 1}`` then
``jax.make_mesh((CONFIG["dp"],), ("dp",))``, ``SMALL = {"shape": (1,)}`` then
``jax.make_mesh(SMALL["shape"], ...)``, ``class Cfg: n = 1`` then ``(Cfg.n,)``, or ``N``
imported from another module of the project, is a mesh of one device (its arrays export).
Strings and bools, for the parameters a function compares with constants (:mod:`.pinned`:
``place(x, CONFIG["mode"])`` with ``CONFIG = {"mode": "single"}``).

A name counts when its module binds it once, at top level, to an integer or a tuple of
integers (or a dict display whose entries at string keys are such, or a class whose body
binds such names, or an instance of a dataclass or NamedTuple of the module built with
constants or left to constant defaults: ``SERVE = ServeConfig(data_parallel=1)`` then
``SERVE.data_parallel``), and nothing else in the text can change it: no other top-level binding,
no ``global`` statement naming it, no ``NAME[...] =``, ``NAME.attr =`` or ``NAME.update(``
(read from the module's text: a superset of what changes it).  Read with CPython's ``ast``
from the text, so another module's constants cost no libcst parse.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Optional

import libcst as cst

from ..astbinds import binds
from ..knowledge import structures as S


def _const(node):
    """An int, or a tuple of ints, that ``node`` (an ``ast`` expression) is written as, or a
    string or bool (the constants a parameter is compared with: :mod:`.pinned`); None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, str, bool):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts:
        items = [_const(e) for e in node.elts]
        return tuple(items) if all(type(i) is int for i in items) else None
    return None


def _entries(name: str, value, found: dict) -> None:
    """The constant entries of a dict display bound to ``name``."""
    for k, v in zip(value.keys, value.values):
        if isinstance(k, ast.Constant) and isinstance(k.value, str) and _const(v) is not None:
            found[(name, k.value)] = _const(v)


def _qualified(node, imported: dict) -> Optional[str]:
    """The dotted name an ``ast`` name or attribute chain stands for, through the module's
    imports (``imported``: local name -> qualified name), or None."""
    if isinstance(node, ast.Name):
        return imported.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        head = _qualified(node.value, imported)
        return f"{head}.{node.attr}" if head is not None else None
    return None


def _annotation_record(record) -> bool:
    """Whether a record rule of the tables takes its fields from the class's annotations
    alone (a library base with fields of its own, ``TrainState``, does not)."""
    return record is not None and not record.fields


def _record_fields(stmt, imported: dict) -> Optional[list]:
    """``[(field, default constant or None), ...]`` in order, of a class statement that is a
    record by the tables (:data:`~jaxinterop_lint.knowledge.structures.DATACLASS_DECORATORS`,
    called or not, and :data:`~jaxinterop_lint.knowledge.structures.RECORD_BASES`: a
    dataclass, a ``NamedTuple``...): its annotated class-body names, ``ClassVar`` ones left
    out; None for another class, or one that defines ``__init__``, ``__post_init__`` or
    ``__new__`` (its fields may not be the arguments)."""
    decorators = (_qualified(d.func if isinstance(d, ast.Call) else d, imported) for d in stmt.decorator_list)
    bases = (_qualified(b, imported) for b in stmt.bases)
    if not any(_annotation_record(S.DATACLASS_DECORATORS.get(d)) for d in decorators) \
            and not any(_annotation_record(S.RECORD_BASES.get(b)) for b in bases):
        return None
    if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in ("__init__", "__post_init__", "__new__")
           for s in stmt.body):
        return None
    fields = []
    for inner in stmt.body:
        if isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name) \
                and "ClassVar" not in ast.dump(inner.annotation):
            fields.append((inner.target.id, _const(inner.value) if inner.value is not None else None))
    return fields


def _instance(name: str, call, records: dict, found: dict) -> None:
    """The constant fields of ``name = Cls(...)``, a record class of the module: the
    arguments given, or the fields' defaults (a ``**`` or ``*`` argument: none)."""
    fields = records.get(call.func.id) if isinstance(call.func, ast.Name) else None
    if fields is None or any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return
    values = dict(fields)
    for (field, _), arg in zip(fields, call.args):
        values[field] = _const(arg)
    for k in call.keywords:
        values[k.arg] = _const(k.value)
    for field, v in values.items():
        if v is not None:
            found[(name, field)] = v


def text_constants(text: str) -> dict:
    """``{name: int or tuple, (name, key): ...}`` of the constants of a module's ``text``
    (see the module docstring; ``(name, key)`` for a dict's entry or a class's attribute);
    {} where ``ast`` cannot parse it."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict = {}
    bound: dict = {}
    records: dict = {}      # record class -> its fields (_record_fields)
    imported: dict = {}     # local name -> the qualified name it imports
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            imported.update((a.asname, a.name) for a in stmt.names if a.asname)
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
            imported.update((a.asname or a.name, f"{stmt.module}.{a.name}") for a in stmt.names)
        targets, value = [], None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            targets, value = [stmt.target], getattr(stmt, "value", None)
        if targets:
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        bound[n.id] = bound.get(n.id, 0) + 1
            t = targets[0]
            if len(targets) == 1 and isinstance(t, ast.Name) and not isinstance(stmt, ast.AugAssign):
                if _const(value) is not None:
                    found[t.id] = _const(value)
                elif isinstance(value, ast.Dict):
                    _entries(t.id, value, found)
                elif isinstance(value, ast.Call):
                    _instance(t.id, value, records, found)
            continue
        if isinstance(stmt, ast.ClassDef):
            bound[stmt.name] = bound.get(stmt.name, 0) + 1
            fields = _record_fields(stmt, imported)
            if fields is not None:
                records[stmt.name] = fields
            for inner in stmt.body:
                if isinstance(inner, ast.Assign) and len(inner.targets) == 1 \
                        and isinstance(inner.targets[0], ast.Name) and _const(inner.value) is not None:
                    found[(stmt.name, inner.targets[0].id)] = _const(inner.value)
            continue
        for k in binds(stmt):   # a name another statement binds is bound twice: no constant
            bound[k] = bound.get(k, 0) + 1
    out = {}
    for k, v in found.items():
        name = k if isinstance(k, str) else k[0]
        if bound.get(name) != 1 or _changed(name, text):
            continue
        out[k] = v
    return out


def _changed(name: str, source: str) -> bool:
    """Whether the text may change ``name`` besides its one binding."""
    e = re.escape(name)
    return re.search(r"\bglobal\b[^\n]*\b%s\b|(?<![\w.])%s[ \t]*(?:\[[^\n=]*\][ \t]*(?:[-+*/]?=)(?!=)|"
                     r"\.[ \t]*\w+[ \t]*(?:[-+*/]?=)(?!=)|\.[ \t]*(?:update|setdefault|pop|clear)[ \t]*\()"
                     % (e, e), source) is not None


def _key(node) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _constants_of(walker, name: str) -> tuple:
    """``(constants, key prefix)`` where ``name`` (a name the walked module uses) is found:
    the module's own constants, or those of the project module it imports ``name`` from
    (``from pk.cfg import N``: ``pk/cfg.py``'s, read from its text)."""
    ma = walker.ma
    consts = ma.int_constants
    if consts is None:
        consts = ma.int_constants = text_constants(ma.source or "")
    held = ma.globals.get(name)
    if held is None or not held.via_import or held.qname is None or ma.project is None:
        return consts, name
    module, _, attr = held.qname.rpartition(".")
    path = ma.project.find_module(module) if module else None
    if path is None:
        return {}, name
    cache = ma.project.text_constants
    key = os.path.abspath(path)
    ma.depends_on.add(key)      # its text decides (an edit of it judges this module again)
    if key not in cache:
        try:
            with open(key, encoding="utf-8") as f:
                cache[key] = text_constants(f.read())
        except (OSError, UnicodeDecodeError, ValueError):
            cache[key] = {}
    return cache[key], attr


def constant_int(walker, node):
    """The constant (an int, or a tuple of ints) ``node`` stands for in ``walker``'s module
    (a name, ``NAME["key"]`` or ``NAME.attr``; a name imported from a project module is
    that module's constant), or None: a name bound in the function walked is never one."""
    value = constant_scalar(walker, node)
    return value if type(value) is int or type(value) is tuple else None


def constant_scalar(walker, node):
    """:func:`constant_int`, where the constant may also be a string or a bool (``MODE =
    "single"``, ``CONFIG = {"mode": "single"}``), or None."""
    if isinstance(node, cst.Name):
        name, rest = node.value, None
    elif isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1 \
            and isinstance(node.slice[0].slice, cst.Index) and _key(node.slice[0].slice.value) is not None:
        name, rest = node.value.value, _key(node.slice[0].slice.value)
    elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        name, rest = node.value.value, node.attr.value
    else:
        return None
    if walker.rec is not None and walker.env is not None and name in walker.env:
        return None     # a local of the function
    consts, there = _constants_of(walker, name)
    return consts.get(there if rest is None else (there, rest))
