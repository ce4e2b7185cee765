"""Turn libcst transformations of a reported node into :class:`~jaxinterop_lint.finding.Edit`
records, and find the names a fix may use for a module (``np``, ``jax``).

Positions come from the rule context (libcst's ``PositionProvider``), whose ranges leave out
the parentheses around an expression.  The replacement text is the part of the module,
written by libcst with the node replaced, that stands where the range was; the rest of the
written module must equal the linted text, so that a fix never rewrites text it did not read.
"""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst
from libcst._nodes.internal import CodegenState

from ..finding import Edit
from ..analysis.imports import dotted, import_bindings

_NEWLINE = re.compile(r"\r\n|\r|\n")


def _memo(ctx) -> dict:
    """Per-module cache of the fix helpers, kept on the rule context."""
    memo = getattr(ctx, "_fix_memo", None)
    if memo is None:
        memo = {}
        ctx._fix_memo = memo
    return memo


def source_of(ctx) -> str:
    """The exact text the positions of ``ctx`` refer to."""
    memo = _memo(ctx)
    if "source" not in memo:
        # The parsed text: with irrelevant statements blanked (masking) it differs from the
        # file outside the kept statements, but never inside them, and lines and columns
        # are the same, so an edit computed on it applies to the file.
        text = getattr(ctx.ma, "parsed_text", None) or getattr(ctx.ma, "source", None)
        memo["source"] = text if text is not None else ctx.ma.module.code
    return memo["source"]


def line_starts(text: str) -> list[int]:
    """Offsets of the first character of every line (1-based line ``n`` at index ``n - 1``);
    a line ends at ``\\r\\n``, ``\\r`` or ``\\n`` as in libcst and the engine."""
    starts = [0]
    starts.extend(m.end() for m in _NEWLINE.finditer(text))
    return starts


def offset(starts: list[int], line: int, column: int) -> int:
    """Character offset of a 1-based line and 0-based column."""
    return starts[line - 1] + column


def _span(ctx, node) -> Optional[tuple[int, int, int, int]]:
    line, col, end_line, end_col = ctx.position(node)
    if (line, col, end_line, end_col) == (1, 0, 1, 0):
        return None
    return line, col, end_line, end_col


def writes_back(ctx) -> bool:
    """Whether libcst writes the module back to exactly the text its positions refer to
    (not so when it dropped a form feed, or parsed a simplified text): only then is a
    replacement cut from a node's own code.  Computed once per module."""
    memo = _memo(ctx)
    if "exact" not in memo:
        line_map = getattr(ctx.ma, "line_map", None)     # parsed without blanked lines
        memo["exact"] = ctx.ma.module.code == (source_of(ctx) if line_map is None else line_map.text)
    return memo["exact"]


def _indent_of(ctx, node) -> list:
    """The indentation tokens libcst's code generator holds where ``node`` stands: one per
    enclosing indented block, outermost first."""
    module = ctx.ma.module
    tokens = []
    up = parent(ctx, node)
    while up is not None:
        if isinstance(up, cst.IndentedBlock):
            tokens.append(module.default_indent if up.indent is None else up.indent)
        up = parent(ctx, up)
    tokens.reverse()
    return tokens


def code_in_place(ctx, old, new) -> str:
    """The text libcst writes for ``new`` standing where ``old`` is (the indentation of the
    enclosing blocks on its continuation lines, the module's newline), without ``new``'s
    parentheses when it took over those of ``old``: the same text as cutting ``new`` out of the
    whole module written with ``old`` replaced, in time proportional to ``new`` (plus the
    depth of ``old``), not to the module."""
    module = ctx.ma.module
    if getattr(old, "lpar", None) and getattr(new, "lpar", None):
        new = new.with_changes(lpar=[], rpar=[])
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    for token in _indent_of(ctx, old):
        state.increase_indent(token)
    new._codegen(state)
    return "".join(state.tokens)


def replace(ctx, old, new) -> Optional[Edit]:
    """An edit that replaces ``old`` (a node of the module) by ``new`` (a libcst node).

    ``new`` takes over the parentheses of ``old`` when ``old`` has some (they stay outside
    the edited range); otherwise ``new`` is written with its own.  A multi-line node keeps
    the indentation of its block (see :func:`code_in_place`).  None when ``old`` has no
    position or the module does not write back to the text the positions refer to (see
    :func:`writes_back`): a fix never rewrites text it did not read.
    """
    span = _span(ctx, old)
    if span is None or not writes_back(ctx):
        return None
    if getattr(old, "lpar", None) and hasattr(new, "lpar"):
        new = new.with_changes(lpar=old.lpar, rpar=old.rpar)
    memo = _memo(ctx)
    starts = memo.get("starts")
    if starts is None:
        starts = memo["starts"] = line_starts(source_of(ctx))
    line, col, end_line, end_col = span
    if end_line > len(starts):
        return None
    start, end = offset(starts, line, col), offset(starts, end_line, end_col)
    if any(s < end and start < e for s, e in getattr(ctx.ma, "shrunk", ())):
        return None      # it would write back constants blanked before parsing (jaxinterop_lint.size)
    return Edit(line, col, end_line, end_col, code_in_place(ctx, old, new))


def replace_by_rewriting(ctx, old, new) -> Optional[Edit]:
    """:func:`replace` as it was first written: the whole module written with ``old``
    replaced, the replacement cut out of it (time proportional to the module).  Kept as the
    reference that ``tests/test_fix_scaling.py`` compares :func:`replace` with."""
    span = _span(ctx, old)
    if span is None:
        return None
    if getattr(old, "lpar", None) and hasattr(new, "lpar"):
        new = new.with_changes(lpar=old.lpar, rpar=old.rpar)
    text = source_of(ctx)
    starts = line_starts(text)
    line, col, end_line, end_col = span
    if end_line > len(starts):
        return None
    start, end = offset(starts, line, col), offset(starts, end_line, end_col)
    written = ctx.ma.module.deep_replace(old, new).code
    stop = len(written) - (len(text) - end)
    if stop < start or written[:start] != text[:start] or written[stop:] != text[end:]:
        return None
    return Edit(line, col, end_line, end_col, written[start:stop])


def parent(ctx, node):
    """The parent node of ``node`` in the module (None for the module or an unknown node)."""
    memo = _memo(ctx)
    parents = memo.get("parents")
    if parents is None:
        parents = memo["parents"] = {}

        class _Parents(cst.CSTVisitor):
            def on_visit(self, n):
                for child in n.children:
                    parents[id(child)] = n
                return True

        ctx.ma.module.visit(_Parents())
    return parents.get(id(node))


def _imports(ctx) -> tuple[dict, frozenset]:
    """``(bound name -> qualified name of the module-level imports, every other name used)``;
    a name counts as used only where it means the module's (or a builtin) name: not where a
    scope around it binds it (a parameter ``jax`` of one function does not keep a fix
    elsewhere in the file from adding ``import jax``)."""
    memo = _memo(ctx)
    if "imports" in memo:
        return memo["imports"]
    bound: dict[str, str] = {}
    for stmt in ctx.ma.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                for name, qn, _, _ in import_bindings(small):
                    bound[name] = qn
    used: set[str] = set()

    scopes: list = []   # the names each enclosing scope binds (innermost last)

    class _Names(cst.CSTVisitor):
        def on_visit(self, node):
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                return False
            if isinstance(node, cst.Attribute):
                node.value.visit(self)
                return False
            if isinstance(node, _SCOPES):
                visitor = _Bindings(node)
                node.visit(visitor)
                scopes.append(frozenset(visitor.names))
            elif isinstance(node, cst.Name) and not any(node.value in names for names in scopes):
                used.add(node.value)
            return True

        def on_leave(self, node):
            if isinstance(node, _SCOPES):
                scopes.pop()

    ctx.ma.module.visit(_Names())
    memo["imports"] = (bound, frozenset(used))
    return memo["imports"]


def qualify(ctx, expr) -> Optional[str]:
    """Qualified name of a dotted expression through the module-level imports, else None."""
    text = dotted(expr)
    if text is None:
        return None
    head, _, rest = text.partition(".")
    base = _imports(ctx)[0].get(head)
    if base is None:
        return None
    return base + ("." + rest if rest else "")


_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


# node type -> the field holding the target it binds
_TARGETS = {cst.AssignTarget: "target", cst.AnnAssign: "target", cst.AugAssign: "target",
            cst.NamedExpr: "target", cst.For: "target", cst.CompFor: "target", cst.AsName: "name",
            cst.Param: "name", cst.MatchAs: "name", cst.MatchStar: "name", cst.MatchMapping: "rest"}


class _Bindings(cst.CSTVisitor):
    """The names a scope binds (parameters, assignment, ``for``, ``with``, ``except`` and
    ``match`` targets, walrus, imports, nested ``def``/``class`` names, ``global``/``nonlocal``
    declarations), without entering the scopes nested in it."""

    def __init__(self, root):
        self.root = root
        self.names: set = set()

    def on_visit(self, node) -> bool:
        if node is not self.root and isinstance(node, _SCOPES):
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                self.names.add(node.name.value)
                for deco in node.decorators:
                    deco.visit(self)
            return False
        field = _TARGETS.get(type(node))
        if field is not None:
            self._target(getattr(node, field, None))
        elif isinstance(node, cst.ImportAlias) and node.asname is None:
            name = node.name
            while isinstance(name, cst.Attribute):
                name = name.value
            self._target(name)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            self.names.update(n.name.value for n in node.names)
        return True

    def _target(self, target) -> None:
        if isinstance(target, cst.Name):
            self.names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value)


def bound_around(ctx, node) -> frozenset:
    """Names bound in the scopes that enclose ``node`` other than the module (functions,
    lambdas, comprehensions, and the class body it stands in directly): a name generated
    code uses there must not be one of them, or it would mean the local, not the module."""
    memo = _memo(ctx).setdefault("bound", {})
    names: set = set()
    up, function_seen = parent(ctx, node), False
    while up is not None:
        if isinstance(up, _SCOPES) and not (isinstance(up, cst.ClassDef) and function_seen):
            key = id(up)
            if key not in memo:
                visitor = _Bindings(up)
                up.visit(visitor)
                memo[key] = frozenset(visitor.names)
            names |= memo[key]
        if isinstance(up, (cst.FunctionDef, cst.Lambda)):
            function_seen = True
        up = parent(ctx, up)
    return frozenset(names)


def module_name(ctx, module: str, preferred: str, at=None) -> Optional[tuple[str, Optional[str]]]:
    """How generated code names ``module`` (``"numpy"``) and the import it needs.

    Returns ``(name, None)`` when a module-level import already binds the module (``np`` for
    ``import numpy as np``, ``jax`` for ``import jax.numpy``), ``(preferred, "import numpy as
    np")`` or ``(module, "import numpy")`` when the name is free, None when both are taken.
    With ``at`` (the node the code replaces), a name bound in a scope around it (a local
    ``np``, a parameter called ``jax``) is taken too: there it would not be the module.
    """
    bound, used = _imports(ctx)
    local = bound_around(ctx, at) if at is not None else frozenset()
    for name, qn in sorted(bound.items(), key=lambda item: item[0] != preferred):
        if qn == module and "." not in name and name not in local:
            return name, None
    options = [(preferred, f"import {module} as {preferred}" if preferred != module else f"import {module}")]
    if "." not in module:
        options.append((module, f"import {module}"))
    for candidate, statement in options:
        if candidate not in bound and candidate not in used and candidate not in local:
            return candidate, statement
    return None
