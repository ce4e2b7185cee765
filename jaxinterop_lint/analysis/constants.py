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
import math
import os
import re
from typing import Optional

import libcst as cst

from ..astbinds import binds
from ..knowledge import structures as S


# ``ast`` operators a constant's arithmetic may use (a mesh size: ``DATA * MODEL``)
_OPERATORS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__,
              ast.Mod: int.__mod__}
# calls of a tuple of ints that give an int: the device count of a mesh shape
_PRODUCTS = frozenset({"math.prod", "numpy.prod", "np.prod"})


# the largest integer a constant may be (folded or written): a mesh has far fewer devices,
# and a larger one costs time to compute (a chain of squares) and cannot be stored as JSON
# past 4,300 digits
MAX_INT = 2 ** 62


def _bounded(value):
    """``value``, or None for an integer over :data:`MAX_INT` (or a tuple holding one)."""
    if type(value) is int:
        return value if -MAX_INT <= value <= MAX_INT else None
    if type(value) is tuple:
        return value if all(-MAX_INT <= v <= MAX_INT for v in value) else None
    return value


def _const(node, known=None, imported=None):
    """:func:`_fold`, within :data:`MAX_INT`."""
    return _bounded(_fold(node, known, imported))


def _fold(node, known=None, imported=None):
    """An int, or a tuple of ints, that ``node`` (an ``ast`` expression) is written as, or a
    string or bool (the constants a parameter is compared with: :mod:`.pinned`); None.
    With ``known`` (the module's constants found so far), also what it computes from them
    and from literals: ``+ - * // %`` of ints, ``SHAPE[0]``, ``CONFIG["mesh"]["data"]``,
    ``Cfg.n``, ``math.prod(SHAPE)``, ``len(SHAPE)``, ``min`` and ``max`` of them (``min`` of
    anything with 1 is 1: what it caps is a count) (``imported``: local name -> qualified
    name)."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, str, bool):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts:
        items = [_const(e, known, imported) for e in node.elts]
        return tuple(items) if all(type(i) is int for i in items) else None
    if known is None:
        return None
    if isinstance(node, ast.BoolOp) and len(node.values) == 2:
        # ``n_devices or jax.device_count()`` with ``n_devices`` pinned to 1: the operand taken
        first = _const(node.values[0], known, imported)
        if first is None:
            return None
        return first if bool(first) == isinstance(node.op, ast.Or) else _const(node.values[1], known, imported)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _const(node.operand, known, imported)
        return -v if type(v) is int else None
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        a, b = _const(node.left, known, imported), _const(node.right, known, imported)
        if type(a) is int and type(b) is int and not (b == 0 and type(node.op) in (ast.FloorDiv, ast.Mod)):
            return _OPERATORS[type(node.op)](a, b)
        return None
    fold = _qualified(node.func, imported or {}) if isinstance(node, ast.Call) and len(node.args) >= 2 \
        and not node.keywords else None
    if fold in ("min", "max"):
        ints = [a for a in (_const(a, known, imported) for a in node.args) if type(a) is int]
        if len(ints) == len(node.args):
            return min(ints) if fold == "min" else max(ints)
        # ``min(jax.device_count(), MAX_DP)`` with ``MAX_DP = 1``: a count is at least one
        return 1 if fold == "min" and ints and min(ints) == 1 else None
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        arg = _const(node.args[0], known, imported)
        name = _qualified(node.func, imported or {})
        if type(arg) is tuple and name in _PRODUCTS:
            return math.prod(arg)
        if type(arg) is tuple and name == "len":
            return len(arg)
        return arg if name == "int" and type(arg) is int else None
    if isinstance(node, ast.Subscript):
        index = _const(node.slice, known, imported)
        if type(index) is int:
            base = _const(node.value, known, imported)
            return base[index] if type(base) is tuple and -len(base) <= index < len(base) else None
        path = _path(node) if type(index) is str else None
        return known.get(path) if path is not None else None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return known.get((node.value.id, node.attr))
    if isinstance(node, ast.Name):
        return known.get(node.id)
    return None


def _path(node) -> Optional[tuple]:
    """``(name, key, ...)`` of ``NAME["a"]["b"]`` (string keys), or None."""
    keys = []
    while isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        keys.append(node.slice.value)
        node = node.value
    if not isinstance(node, ast.Name) or not keys:
        return None
    return (node.id, *reversed(keys))


def _entries(name, value, found: dict, imported=None) -> None:
    """The constant entries of a dict display bound to ``name`` (a tuple ``(name, key...)``
    for a nested display: ``CONFIG = {"mesh": {"data": 1}}`` has ``("CONFIG", "mesh", "data")``)."""
    for k, v in zip(value.keys, value.values):
        if isinstance(k, ast.Constant) and isinstance(k.value, str):
            key = (*name, k.value) if isinstance(name, tuple) else (name, k.value)
            if isinstance(v, ast.Dict) and len(key) < 6:
                _entries(key, v, found, imported)
                continue
            c = _const(v, found, imported)
            if c is not None:
                found[key] = c


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


# calls that build an object or dict of their keyword arguments: ``SimpleNamespace(data=1)``
_KEYWORD_OBJECTS = frozenset({"types.SimpleNamespace", "argparse.Namespace", "dict"})


def _instance(name: str, call, records: dict, found: dict, imported=None) -> None:
    """The constant fields of ``name = Cls(...)``, a record class of the module: the
    arguments given, or the fields' defaults (a ``**`` or ``*`` argument: none); or the
    constant keyword arguments of ``SimpleNamespace(...)`` or ``dict(...)``."""
    if _qualified(call.func, imported or {}) in _KEYWORD_OBJECTS and not call.args:
        for k in call.keywords:
            c = _const(k.value, found, imported) if k.arg is not None else None
            if c is not None:
                found[(name, k.arg)] = c
        return
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
    """:func:`module_constants`' constants alone."""
    return module_constants(text)[0]


def module_constants(text: str) -> tuple:
    """``{name: int or tuple, (name, key): ...}`` of the constants of a module's ``text``
    (see the module docstring; ``(name, key)`` for a dict's entry or a class's attribute);
    {} where ``ast`` cannot parse it; with the module's imports (local name -> qualified
    name), read in the same pass, for the calls a constant folds (``math.prod``)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}, {}
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
                c = _const(value, found, imported)
                if c is not None:
                    found[t.id] = c
                elif isinstance(value, ast.Dict):
                    _entries(t.id, value, found, imported)
                elif isinstance(value, ast.Call):
                    _instance(t.id, value, records, found, imported)
            continue
        if isinstance(stmt, ast.ClassDef):
            bound[stmt.name] = bound.get(stmt.name, 0) + 1
            fields = _record_fields(stmt, imported)
            if fields is not None:
                records[stmt.name] = fields
            for inner in stmt.body:
                if isinstance(inner, ast.Assign) and len(inner.targets) == 1 \
                        and isinstance(inner.targets[0], ast.Name) and _const(inner.value, found, imported) is not None:
                    found[(stmt.name, inner.targets[0].id)] = _const(inner.value, found, imported)
            continue
        for k in binds(stmt):   # a name another statement binds is bound twice: no constant
            bound[k] = bound.get(k, 0) + 1
    out = {}
    changed = _changed_names(text) if found else frozenset()
    for k, v in found.items():
        name = k if isinstance(k, str) else k[0]
        if bound.get(name) != 1 or name in changed:
            continue
        out[k] = v
    return out, imported


# what in a module's text may change a name besides its one binding (a superset): a
# ``global`` statement naming it, ``NAME[...] =``, ``NAME.attr =``, ``NAME.update(`` and kin
_GLOBAL_LINE = re.compile(r"\bglobal\b([^\n]*)")
_WORD = re.compile(r"\w+")
_WRITTEN = re.compile(r"(?<![\w.])(\w+)(?=[ \t]*(?:\[[^\n=]*\][ \t]*(?:[-+*/]?=)(?!=)|"
                      r"\.[ \t]*\w+[ \t]*(?:[-+*/]?=)(?!=)|\.[ \t]*(?:update|setdefault|pop|clear)[ \t]*\())")


def _changed_names(source: str) -> frozenset:
    """The names the text may change besides their one binding, read in one pass each
    (a ``global`` line's words after ``global``; a name written through a subscript, an
    attribute, or a mutating method)."""
    names = {w for m in _GLOBAL_LINE.finditer(source) for w in _WORD.findall(m.group(1))}
    names.update(m.group(1) for m in _WRITTEN.finditer(source))
    return frozenset(names)


def pinned_scalar(pins: Optional[dict], name: str):
    """The string, int or bool ``pins`` (parameter -> constant: :mod:`.pinned`) fixes the
    parameter ``name`` to, or None (not pinned, or pinned to an instance of a class)."""
    value = pins.get(name) if pins else None
    return value if type(value) in (str, int, bool) else None


def _constants_of(walker, name: str) -> tuple:
    """``(constants, key prefix)`` where ``name`` (a name the walked module uses) is found:
    the module's own constants, or those of the project module it imports ``name`` from
    (``from pk.cfg import N``: ``pk/cfg.py``'s, read from its text)."""
    ma = walker.ma
    consts = _own_constants(ma)
    held = ma.globals.get(name)
    if held is None or not held.via_import or held.qname is None or ma.project is None:
        return consts, name
    module, _, attr = held.qname.rpartition(".")
    path = ma.project.find_module(module, ma.path) if module else None
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
    value = constant_scalar(walker, node, local=True)
    return value if type(value) is int or type(value) is tuple else None


def constant_scalar(walker, node, local: bool = False):
    """:func:`constant_int`, where the constant may also be a string or a bool (``MODE =
    "single"``, ``CONFIG = {"mode": "single"}``), or None.  What the module's constants and
    literals compute counts too (:func:`_const`: ``CONFIG["mesh"]["data"] * 2``,
    ``math.prod(SHAPE)``), and with ``local`` so does a name the function binds once, to
    such an expression (``n = shape[0] * shape[1]`` after ``shape = (DATA, MODEL)``: a
    mesh's size; reading the function's assignments costs a parse of its text, so only
    the rare questions of mesh and device-list sizes ask it)."""
    if isinstance(node, (cst.Integer, cst.SimpleString)):
        return literal_constant(node)
    known = _Known(walker, local)
    if isinstance(node, cst.Name):
        return known.get(node.value)
    if not isinstance(node, _FOLDED):
        return None
    try:
        code = walker.ma.module.code_for_node(node)
        tree = ast.parse(code.strip(), mode="eval").body
    except Exception:   # (the code of a node of a parsed module parses: never, but no crash)
        return None
    calls = any(isinstance(n, ast.Call) for n in ast.walk(tree))
    return _const(tree, known, _module_imports(walker.ma) if calls else {})


def literal_constant(node):
    """The int or string an ``Integer`` or ``SimpleString`` literal is written as, or None:
    an int over :data:`MAX_INT` is none (and so is one over the digits CPython converts)."""
    try:
        value = node.evaluated_value
    except Exception:  # noqa: BLE001 - libcst evaluates with int(): too many digits
        return None
    return _bounded(value) if type(value) in (int, str) else None


# the libcst expressions :func:`constant_scalar` reads as ``ast`` and folds
_FOLDED = (cst.Name, cst.Subscript, cst.Attribute, cst.BinaryOperation, cst.UnaryOperation, cst.Call)


def _own_constants(ma) -> dict:
    """The constants of the module analysis ``ma`` (:func:`module_constants`, read once
    from its text, with its imports: :func:`_module_imports`)."""
    if ma.int_constants is None:
        ma.int_constants, ma.const_imports = module_constants(ma.source or "")
    return ma.int_constants


def _module_imports(ma) -> dict:
    """Local name -> qualified name of the module's plain imports (``np`` -> ``numpy``),
    for :func:`_const`'s calls (read with its constants)."""
    _own_constants(ma)
    return ma.const_imports


class _Known:
    """The constants :func:`_const` may read while folding an expression of ``walker``'s
    function: with ``local``, a name (or ``(name, key...)``) the function binds once to a
    foldable expression; a module's constant (or the project module's it is imported from:
    :func:`_constants_of`); a parameter, or a local bound more than once, is none."""

    def __init__(self, walker, local: bool = False, depth: int = 0):
        self.walker, self.local, self.depth = walker, local, depth

    def get(self, key):
        name, rest = (key, ()) if isinstance(key, str) else (key[0], tuple(key[1:]))
        walker = self.walker
        pinned = pinned_scalar(getattr(walker, "pinned", None), name) if not rest else None
        if pinned is not None:
            return pinned   # a parameter pinned to a call's constant (``initialize(1)``: pinned.py)
        if walker.rec is not None and walker.env is not None and name in walker.env:
            value = _local_assignments(walker).get(name) if self.local and self.depth < 8 else None
            if value is None:
                return None
            held = _const(value, _Known(walker, True, self.depth + 1), _module_imports(walker.ma))
            if not rest:
                return held
            return None
        consts, there = _constants_of(walker, name)
        return consts.get(there if not rest else (there, *rest))


def _local_assignments(walker) -> dict:
    """Name -> the ``ast`` value of the one plain assignment (``name = expr``) binding it in
    the walked function, for the names the function binds exactly once (nested functions
    and classes left out); computed once per function."""
    node = getattr(walker.rec, "node", None)
    cache = walker.ma.__dict__.setdefault("local_constants", {})
    found = cache.get(id(node))
    if found is None:
        found = cache[id(node)] = {}
        if isinstance(node, cst.FunctionDef):
            try:
                tree = ast.parse(walker.ma.module.code_for_node(node).strip())
            except Exception:
                return found
            fn = tree.body[0] if tree.body else None
            counts: dict = {}
            todo = list(getattr(fn, "body", ()))
            for a in getattr(getattr(fn, "args", None), "args", ()) + getattr(getattr(fn, "args", None), "kwonlyargs", []):
                counts[a.arg] = 2
            while todo:
                stmt = todo.pop()
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    counts[getattr(stmt, "name", "")] = 2
                    continue
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    found[stmt.targets[0].id] = stmt.value
                for n in ast.iter_child_nodes(stmt):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                        counts[n.id] = counts.get(n.id, 0) + 1
                    elif isinstance(n, ast.AST):
                        todo.append(n)
            for name in list(found):
                if counts.get(name) != 1:
                    del found[name]
    return found
