"""The statements of a text read with CPython's :mod:`ast`, for the masking (:mod:`.masking`).

CPython's parser is about 25 times faster than libcst's, and its nodes carry exact line
ranges (``lineno``/``end_lineno``, decorators included), so the masking never loses track of
a statement the way a line scanner can.  For each statement (top-level, or of a class body)
this module gives its line range, the names it binds and the names its *code* uses:
identifiers, attributes, keyword arguments, import names, ``global`` names, the constant
names of ``getattr``/``hasattr``/``setattr``/``delattr`` and the names in string
annotations; never docstrings, comments, other string constants, or the names a ``def`` or
``class`` or a parameter defines (``def __dlpack__(self)`` uses no ``__dlpack__``).
Statements that share a line (``a = 1; b = 2``) make one :class:`Stmt`.
"""
from __future__ import annotations

import ast
import re
from typing import Optional

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME_CALLS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class Stmt:
    """One statement (or several sharing lines): ``first``/``last`` 0-based line indexes
    (inclusive), ``uses`` (frozenset of names its code uses, computed on first use: most
    statements of a file are never asked), ``defines`` (names it binds in its scope),
    ``name`` (the name of a ``def``/``class``, else None), ``is_import``, ``node`` (its
    ``ast`` node; None for statements merged)."""

    __slots__ = ("first", "last", "_uses", "defines", "name", "is_import", "node", "nodes")

    def __init__(self, first, last, defines, name, is_import, node):
        self.first, self.last, self.defines = first, last, defines
        self.name, self.is_import, self.node, self.nodes = name, is_import, node, [node]
        self._uses = None

    @property
    def uses(self) -> frozenset:
        """The names the code of the statement uses (:func:`uses_of`)."""
        if self._uses is None:
            self._uses = frozenset().union(*map(uses_of, self.nodes))
        return self._uses

    @property
    def is_def(self) -> bool:
        """Whether the statement is a lone ``def`` or ``class``."""
        return self.name is not None


def parse(text: str) -> Optional[ast.Module]:
    """``text`` parsed by CPython's ``ast`` (a leading BOM ignored), or None when this
    Python cannot parse it (newer syntax, a syntax error, too deep)."""
    try:
        return ast.parse(text[1:] if text.startswith("\ufeff") else text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _first_line(node) -> int:
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno] + [d.lineno for d in decorators]) if decorators else node.lineno


def _annotation_names(node, out: set) -> None:
    if type(node) is ast.Constant and isinstance(node.value, str):
        out.update(_IDENT.findall(node.value))


def uses_of(node) -> frozenset:
    """The names the code of ``node`` uses (see the module docstring).  One explicit walk
    (several times faster than ``ast.walk``: this runs over every kept statement)."""
    out: set = set()
    add = out.add
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        n = pop()
        t = type(n)
        if t is ast.Name:
            add(n.id)
            continue
        if t is ast.Constant:
            continue
        if t is ast.Attribute:
            add(n.attr)
        elif t is ast.keyword:
            if n.arg:
                add(n.arg)
        elif t is ast.Call:
            f = n.func
            if type(f) is ast.Name and f.id in _NAME_CALLS and len(n.args) >= 2:
                a = n.args[1]
                if type(a) is ast.Constant and isinstance(a.value, str):
                    add(a.value)
        elif t is ast.alias:
            out.update(n.name.split("."))
            if n.asname:
                add(n.asname)
            continue
        elif t is ast.ImportFrom:
            if n.module:
                out.update(n.module.split("."))
        elif t is ast.Global or t is ast.Nonlocal:
            out.update(n.names)
            continue
        elif t is ast.arg:
            _annotation_names(n.annotation, out)
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            _annotation_names(n.returns, out)
        elif t is ast.AnnAssign:
            _annotation_names(n.annotation, out)
        for field in n._fields:
            v = getattr(n, field, None)
            if v.__class__ is list:
                for x in v:
                    if isinstance(x, ast.AST):
                        push(x)
            elif isinstance(v, ast.AST):
                push(v)
    return frozenset(out)


def _bound(node, out: set) -> None:
    """Names a statement binds in the scope it is in (not inside the functions and classes
    it defines): assignment, ``for``/``with``/``except`` targets, imports, defs, walrus."""
    if isinstance(node, _DEFS):
        out.add(node.name)
        return
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for a in node.names:
            out.add(a.asname or a.name.split(".")[0])
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        out.add(node.id)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        out.add(node.name)
    elif isinstance(node, ast.Lambda):
        return
    for child in ast.iter_child_nodes(node):
        _bound(child, out)


def group(body: list, text_lines: int) -> list:
    """The :class:`Stmt` of each statement of ``body`` (a list of ``ast`` statements),
    statements sharing a line merged; ``text_lines`` bounds the last line."""
    out: list = []
    for node in body:
        first, last = _first_line(node) - 1, min(node.end_lineno, text_lines) - 1
        defines: set = set()
        _bound(node, defines)
        alone = isinstance(node, _DEFS)
        if out and first <= out[-1].last:
            prev = out[-1]
            prev.last = max(prev.last, last)
            prev.nodes.append(node)
            prev.defines |= defines
            prev.name = prev.node = None
            prev.is_import = prev.is_import and isinstance(node, (ast.Import, ast.ImportFrom))
            continue
        out.append(Stmt(first, last, defines, node.name if alone else None,
                        isinstance(node, (ast.Import, ast.ImportFrom)), node))
    return out


def statements(text: str, n_lines: int) -> Optional[tuple]:
    """``(the top-level statements of text, its ast Module)`` (``n_lines`` lines), or None
    where ``ast`` cannot parse it."""
    tree = parse(text)
    if tree is None:
        return None
    return group(tree.body, n_lines), tree


def class_body(node) -> Optional[list]:
    """The body statements of ``node`` when it is a ``class``, else None."""
    return node.body if isinstance(node, ast.ClassDef) else None


_SELF_STORE = re.compile(
    r"\bself\.(\w+)\s*(?::[^=\n]*)?(?:[-+*/%&|^@]|//|\*\*|>>|<<)?=(?!=)"     # self.x (: T) (op)= ...
    r"|\bself\.(\w+)\s*[)\]]\s*=(?!=)"                                       # (a, self.x) = ...
    r"|(?:^|(?<=,))[ \t(\[]*self\.(\w+)\s*,"                                       # self.x, b = / a, self.x, b =
    r"|\b(?:for|as)\s+\(?self\.(\w+)", re.M)                                  # for self.x in / as self.x


def stored_attributes(text: str) -> frozenset:
    """The attributes the code ``text`` may assign on ``self`` (``self.x = ...``,
    ``self.x: T = ...``, ``self.x += ...``, ``self.a, self.b = ...``, ``for self.x in``,
    ``as self.x``): read from the text, a superset of what it stores."""
    return frozenset(n for groups in _SELF_STORE.findall(text) for n in groups if n)


def sink_aliases(tree_nodes, sink_names) -> set:
    """Names bound at module level (inside ``try``/``if`` blocks too) by imports of a name
    in ``sink_names`` (``from torch import from_dlpack as fd``: ``fd``), or by any import from
    a module whose dotted name has a part in ``sink_names`` (``from
    jax.experimental.buffer_callback import Buffer``: ``Buffer``, which makes a parameter
    an FFI buffer): code using them uses the word."""
    out: set = set()
    stack = list(tree_nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ImportFrom):
            whole = bool(node.module and set(node.module.split(".")) & sink_names)
            for a in node.names:
                if whole or a.name in sink_names:
                    out.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and set(a.name.split(".")) & sink_names:
                    out.add(a.asname)
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)
        elif isinstance(node, ast.stmt) and not isinstance(node, _SCOPES):
            stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, (ast.stmt, ast.ExceptHandler)))
    return out
