"""Which functions of a module are ``buffer_callback`` callbacks (rule JXI004).

``jax.experimental.buffer_callback.buffer_callback(callback, result_shape_dtypes, ...)``
calls ``callback(ctx, out, *args)`` where ``out`` and every arg are FFI ``Buffer`` objects
(jax-interop.md section 3; signature from ``jax/experimental/buffer_callback.py``).  A
function is a callback when it is passed there by name, as a lambda, through
``functools.partial`` or as a decorator, when it is passed to a parameter of a function of
this module that forwards that parameter to ``buffer_callback``, or when its first
parameter is annotated ``ExecutionContext``.  When a module forwards a callback that cannot
be traced (a parameter of an exported helper), every function whose first parameter is
named ``ctx``, as in the documented signature, is taken as a callback.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..knowledge import apis
from .imports import dotted, import_bindings

CTX_NAMES = frozenset({"ctx"})


@dataclass
class FfiCallbacks:
    """The result: node ids of callback defs/lambdas -> number of leading bound arguments."""

    shifts: dict = field(default_factory=dict)
    by_ctx_name: bool = False
    ctx_types: frozenset = frozenset()
    buffer_types: frozenset = frozenset()

    def shift_for(self, rec) -> "int | None":
        """Leading parameters before ``ctx`` if ``rec`` is a callback, else None."""
        shift = self.shifts.get(id(rec.node))
        if shift is not None:
            return shift
        if rec.params and len(rec.params) >= 2 and isinstance(rec.node, cst.FunctionDef):
            first = rec.annotations[0]
            if first is not None and dotted(first) in self.ctx_types:
                return 0
            if self.by_ctx_name and rec.params[0] in CTX_NAMES:
                return 0
        return None

    def is_buffer_annotation(self, annotation) -> bool:
        """Whether a parameter annotation names the FFI ``Buffer`` type."""
        return annotation is not None and dotted(annotation) in self.buffer_types


class _Collector(cst.CSTVisitor):
    def __init__(self, package: str):
        self.package = package
        self.aliases: dict[str, str] = {}
        self.defs: dict[str, cst.FunctionDef] = {}
        self.calls: list[tuple[cst.Call, tuple]] = []
        self.stack: list[cst.FunctionDef] = []

    def visit_Import(self, node):
        for name, qn, _, _ in import_bindings(node, self.package):
            self.aliases[name] = qn

    def visit_ImportFrom(self, node):
        for name, qn, _, _ in import_bindings(node, self.package):
            self.aliases[name] = qn

    def visit_FunctionDef(self, node):
        self.defs.setdefault(node.name.value, node)
        self.stack.append(node)

    def leave_FunctionDef(self, node):
        self.stack.pop()

    def visit_Call(self, node):
        self.calls.append((node, tuple(self.stack)))

    def qualify(self, expr) -> "str | None":
        text = dotted(expr)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        base = self.aliases.get(head)
        if base is None:
            return None
        return base + ("." + rest if rest else "")


def _params(fn: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in list(fn.params.posonly_params) + list(fn.params.params)]


def find_callbacks(module: cst.Module, package: str = "") -> FfiCallbacks:
    """Find the callbacks of ``module`` (callers skip this for sources that never mention
    ``buffer_callback``)."""
    out = FfiCallbacks()
    col = _Collector(package)
    module.visit(col)
    bc_names = {n for n, q in col.aliases.items() if q.startswith("jax.experimental.buffer_callback")}
    if not bc_names:
        return out
    out.ctx_types = frozenset(
        n for n, q in col.aliases.items() if q in apis.EXECUTION_CONTEXT_TYPES
    ) | apis.EXECUTION_CONTEXT_TYPES
    out.buffer_types = frozenset(
        n for n, q in col.aliases.items() if q in apis.BUFFER_TYPES
    ) | apis.BUFFER_TYPES
    forwarding: dict[str, int] = {}

    def mark(expr, stack, shift=0):
        if isinstance(expr, cst.Lambda):
            out.shifts[id(expr)] = shift
        elif isinstance(expr, cst.Name):
            if stack and expr.value in _params(stack[-1]):
                forwarding[stack[-1].name.value] = _params(stack[-1]).index(expr.value)
                out.by_ctx_name = True
            elif expr.value in col.defs:
                out.shifts[id(col.defs[expr.value])] = shift
            else:
                out.by_ctx_name = True
        elif isinstance(expr, cst.Call) and col.qualify(expr.func) == "functools.partial" and expr.args:
            bound = sum(1 for a in expr.args[1:] if a.keyword is None and not a.star)
            mark(expr.args[0].value, stack, shift + bound)
        else:
            out.by_ctx_name = True

    for call, stack in col.calls:
        if col.qualify(call.func) in apis.BUFFER_CALLBACK and call.args:
            mark(call.args[0].value, stack)
    for fn in col.defs.values():
        for dec in fn.decorators:
            d = dec.decorator
            target = d.args[0].value if isinstance(d, cst.Call) and d.args else d
            if isinstance(d, cst.Call) and col.qualify(d.func) == "functools.partial":
                if col.qualify(target) in apis.BUFFER_CALLBACK:
                    out.shifts[id(fn)] = 0
            elif col.qualify(target if not isinstance(d, cst.Call) else d.func) in apis.BUFFER_CALLBACK:
                out.shifts[id(fn)] = 0
    for call, stack in col.calls:
        if isinstance(call.func, cst.Name) and call.func.value in forwarding:
            idx = forwarding[call.func.value]
            positional = [a for a in call.args if a.keyword is None and not a.star]
            if idx < len(positional):
                mark(positional[idx].value, stack)
    return out
