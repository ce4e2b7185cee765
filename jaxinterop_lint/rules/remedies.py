"""The mechanical remedies of rules.md (fixes column), one function per rule family.

Each function takes the analysis event and the :class:`~jaxinterop_lint.rules.base.RuleContext`
and returns a :class:`~jaxinterop_lint.finding.Fix` (edits of the reported node plus the
imports the new text needs) or None when the pattern has no remedy or its text is unusual
(extra keyword arguments, a capsule held in a variable, ...): a fix is only offered when it is
known to mean the same as the user's code, with the stated applicability.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..finding import Fix
from ..knowledge import apis
from ..analysis.imports import dotted
from .edits import module_name, parent, qualify, replace

# Consumers that take any object with ``__dlpack__`` as well as a capsule (jax-interop.md 4).
OBJECT_DLPACK_CONSUMERS = frozenset({
    "torch.from_dlpack", "torch.utils.dlpack.from_dlpack", "numpy.from_dlpack",
    "cupy.from_dlpack", "jax.dlpack.from_dlpack", "jax.numpy.from_dlpack",
})
# Capsule producers whose argument (or receiver) is the tensor itself.
CAPSULE_FUNCTIONS = frozenset({"torch.utils.dlpack.to_dlpack", "jax.dlpack.to_dlpack"})
CAPSULE_METHODS = frozenset({"__dlpack__", "toDlpack"})


def _fix(title: str, applicability: str, edits, imports=()) -> Optional[Fix]:
    edits = tuple(edits)
    if not edits or any(e is None for e in edits):
        return None
    return Fix(title, applicability, edits, tuple(sorted({i for i in imports if i})))


def _call(func: cst.BaseExpression, *args: cst.Arg) -> cst.Call:
    return cst.Call(func=func, args=list(args))


def _attr(value: cst.BaseExpression, name: str) -> cst.Attribute:
    if isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or getattr(value, "lpar", None):
        return cst.Attribute(value=value, attr=cst.Name(name))
    return cst.Attribute(value=value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
                         attr=cst.Name(name))


def _dotted_name(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


# -- JXI001 / JXI002 ----------------------------------------------------------------------
def device_put(event, ctx, title: str, applicability: str) -> Optional[Fix]:
    """``x`` -> ``jax.device_put(x, jax.local_devices()[0])`` at the exported expression."""
    subject = event.subject
    if not isinstance(subject, cst.BaseExpression) or isinstance(subject, (cst.GeneratorExp, cst.StarredElement)):
        return None
    named = module_name(ctx, "jax", "jax", at=subject)
    if named is None:
        return None
    jax, statement = named
    inner = subject.with_changes(lpar=[], rpar=[]) if getattr(subject, "lpar", None) else subject
    device = cst.parse_expression(f"{jax}.local_devices()[0]")
    new = _call(_dotted_name(f"{jax}.device_put"), cst.Arg(inner), cst.Arg(device))
    return _fix(title, applicability, [replace(ctx, subject, new)], [statement])


# -- JXI004 -------------------------------------------------------------------------------
def _plain_args(call: cst.Call, allowed: frozenset) -> Optional[tuple[list, dict]]:
    """Positional and keyword arguments of ``call``, or None with ``*``/``**`` or a keyword
    outside ``allowed``."""
    pos, kw = [], {}
    for a in call.args:
        if a.star:
            return None
        if a.keyword is None:
            pos.append(a.value)
        elif a.keyword.value in allowed:
            kw[a.keyword.value] = a.value
        else:
            return None
    return pos, kw


def _false(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def ffi_view(event, ctx, title: str, applicability: str) -> Optional[Fix]:
    """Take the zero-copy view of an FFI buffer and copy on the consumer side (rules.md
    JXI004): ``np.array(buf)`` -> ``np.from_dlpack(buf).copy()``; ``np.asarray(buf,
    dtype=d)`` -> ``np.from_dlpack(buf).astype(d)``; ``xp.from_dlpack(buf, copy=True)`` ->
    ``xp.from_dlpack(buf).copy()`` (``.clone()`` for torch); ``buf.__array__(...)`` likewise.
    ``buf.__dlpack__(copy=True)`` has no fix: the capsule's consumer is unknown, and dropping
    ``copy=True`` would hand out a view of a buffer that dies with the callback."""
    call = event.node
    if not isinstance(call, cst.Call):
        return None
    func = call.func
    qn = qualify(ctx, func)
    if event.how == "copy=True" and qn in OBJECT_DLPACK_CONSUMERS:
        parts = _plain_args(call, frozenset({"copy"}))
        if parts is None or len(parts[0]) != 1 or set(parts[1]) != {"copy"}:
            return None
        view = call.with_changes(args=[cst.Arg(parts[0][0])], lpar=[], rpar=[])
        method = "clone" if event.view == "torch" else "copy"
        return _fix(title, applicability, [replace(ctx, call, _call(_attr(view, method)))])
    if qn in apis.FFI_COPYING_BY_DEFAULT | apis.FFI_COPY_IF_ASKED:
        parts = _plain_args(call, frozenset({"dtype", "copy"}))
        if parts is None or not 1 <= len(parts[0]) <= 2 or (len(parts[0]) == 2 and "dtype" in parts[1]):
            return None
        buf, dtype = parts[0][0], (parts[0][1] if len(parts[0]) == 2 else parts[1].get("dtype"))
        copy = parts[1].get("copy")
    elif isinstance(func, cst.Attribute) and func.attr.value == "__array__" and qn is None:
        parts = _plain_args(call, frozenset({"dtype", "copy"}))
        if parts is None or len(parts[0]) > 1 or (parts[0] and "dtype" in parts[1]):
            return None
        buf, dtype = func.value, (parts[0][0] if parts[0] else parts[1].get("dtype"))
        copy = parts[1].get("copy")
    else:
        return None
    named = module_name(ctx, "numpy", "np", at=call)
    if named is None:
        return None
    np, statement = named
    view = _call(_dotted_name(f"{np}.from_dlpack"), cst.Arg(buf.with_changes(lpar=[], rpar=[])
                                                            if getattr(buf, "lpar", None) else buf))
    if dtype is None:
        new = _call(_attr(view, "copy"))
    else:
        extra = [cst.Arg(cst.Name("False"), keyword=cst.Name("copy"), equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))] \
            if _false(copy) else []
        new = _call(_attr(view, "astype"), cst.Arg(dtype), *extra)
    return _fix(title, applicability, [replace(ctx, call, new)], [statement])


# -- JXI005 -------------------------------------------------------------------------------
def _tensor_of_capsule(expr) -> Optional[cst.BaseExpression]:
    """``t`` for ``torch.utils.dlpack.to_dlpack(t)``-like calls, ``t.__dlpack__()`` and
    ``t.toDlpack()``; None for anything else (a capsule in a variable)."""
    if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Attribute):
        return None
    attr = expr.func.attr.value
    if attr in CAPSULE_METHODS and not expr.args:
        return expr.func.value
    return None


def removed_api(event, ctx, title: str, applicability: str) -> Optional[Fix]:
    """The replacements of rules.md JXI005: ``C(jax.dlpack.to_dlpack(x))`` -> ``C(x)``,
    ``from_dlpack(to_dlpack(t))`` -> ``from_dlpack(t)``, ``x.device_buffer`` ->
    ``x.addressable_data(0)``, ``x.device_buffers`` -> ``[s.data for s in
    x.addressable_shards]``.  None for the other removed APIs."""
    node = event.node
    if event.kind == "call" and event.api == "jax.dlpack.to_dlpack":
        return _unwrap_capsule(ctx, node, event.argument, title, applicability)
    if event.kind == "capsule" and isinstance(node, cst.Call) and node.args:
        arg = node.args[0].value
        tensor = None
        if isinstance(arg, cst.Call) and qualify(ctx, arg.func) in CAPSULE_FUNCTIONS:
            if len(arg.args) == 1 and arg.args[0].keyword is None and not arg.args[0].star:
                tensor = arg.args[0].value
        else:
            tensor = _tensor_of_capsule(arg)
        if tensor is None:
            return None
        return _fix(title, applicability, [replace(ctx, arg, tensor)])
    if event.kind == "attribute" and event.api in (".device_buffer", ".device_buffers") and event.receiver is not None:
        up = parent(ctx, node)
        if isinstance(up, (cst.AssignTarget, cst.Del)) or (isinstance(up, (cst.AnnAssign, cst.AugAssign))
                                                            and up.target is node):
            return None
        receiver = event.receiver
        if event.api == ".device_buffer":
            new = _call(_attr(receiver, "addressable_data"), cst.Arg(cst.Integer("0")))
        else:
            shards = _attr(receiver, "addressable_shards")
            new = cst.ListComp(elt=cst.parse_expression("s.data"),
                               for_in=cst.CompFor(target=cst.Name("s"), iter=shards))
        return _fix(title, applicability, [replace(ctx, node, new)])
    return None


def _unwrap_capsule(ctx, call, argument, title, applicability) -> Optional[Fix]:
    """``C(jax.dlpack.to_dlpack(x))`` -> ``C(x)`` when ``C`` takes the array itself."""
    if argument is None or not isinstance(call, cst.Call) or len(call.args) != 1 or call.args[0].keyword:
        return None
    arg = parent(ctx, call)
    outer = parent(ctx, arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(outer, cst.Call) or outer.args[0] is not arg or arg.keyword is not None:
        return None
    if qualify(ctx, outer.func) not in OBJECT_DLPACK_CONSUMERS:
        return None
    return _fix(title, applicability, [replace(ctx, call, argument)])


# -- JXI006 -------------------------------------------------------------------------------
def _one_device(receiver, equal: bool) -> cst.Comparison:
    count = _call(cst.Name("len"), cst.Arg(_call(_attr(receiver, "devices"))))
    op = cst.Equal() if equal else cst.NotEqual()
    return cst.Comparison(left=count, comparisons=[cst.ComparisonTarget(operator=op, comparator=cst.Integer("1"))])


def single_device_guard(event, ctx, title: str, applicability: str) -> Optional[Fix]:
    """``x.is_fully_replicated`` / ``x.is_fully_addressable`` in the guard -> ``len(x.devices())
    == 1``; ``not x.is_fully_replicated`` -> ``len(x.devices()) != 1``.  Only the attributes
    the condition analysis reads (through ``not``/``and``/``or``) whose receiver is the
    exported value are rewritten."""
    guard = event.value.false_guard
    want = dotted(event.subject) if isinstance(event.subject, cst.CSTNode) else None
    edits = []

    def walk(test, negated_by=None):
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            walk(test.expression, test)
        elif isinstance(test, cst.BooleanOperation):
            walk(test.left)
            walk(test.right)
        elif isinstance(test, cst.Attribute) and test.attr.value in apis.FALSE_GUARD_ATTRIBUTES:
            receiver = test.value
            if isinstance(receiver, cst.Attribute) and receiver.attr.value == "sharding":
                receiver = receiver.value   # x.sharding.is_fully_replicated: the same test of x
            key = dotted(receiver)
            if key is None or (want is not None and key != want):
                return
            if negated_by is not None:
                edits.append(replace(ctx, negated_by, _one_device(receiver, False)))
            else:
                edits.append(replace(ctx, test, _one_device(receiver, True)))

    walk(guard)
    return _fix(title, applicability, edits)


# -- JXI007 -------------------------------------------------------------------------------
def _without_comment(comma):
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        return comma.with_changes(whitespace_after=after.with_changes(first_line=cst.TrailingWhitespace(),
                                                                      empty_lines=[]))
    return comma


def _commas(between, trailing) -> tuple:
    """``(comma after the old last element, comma after the added one)`` for a tuple whose
    last element has the ``trailing`` comma: the layout of ``between`` (the comma between the
    two elements before it, or None), each comment staying with its element."""
    if not isinstance(between, cst.Comma):
        return cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")), cst.MaybeSentinel.DEFAULT
    own = trailing.whitespace_after
    if isinstance(between.whitespace_after, cst.ParenthesizedWhitespace):
        first = own.first_line if isinstance(own, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
        after = between.whitespace_after.with_changes(first_line=first, empty_lines=[])
        return between.with_changes(whitespace_after=after), _without_comment(trailing)
    return between, trailing


def catch_also(handler, raised: str, ctx, title: str, applicability: str) -> Optional[Fix]:
    """``except ValueError:`` -> ``except (ValueError, BufferError):``; a tuple gets the class
    appended, keeping its layout and comments."""
    kind = getattr(handler, "type", None)
    if kind is None or not raised:
        return None
    extra = cst.Name(raised)
    if isinstance(kind, cst.Tuple) and kind.elements:
        elements = list(kind.elements)
        last = elements[-1]
        mine = None
        if isinstance(last.comma, cst.Comma):
            mine, added = _commas(elements[-2].comma if len(elements) > 1 else None, last.comma)
            elements[-1] = last.with_changes(comma=mine)
            elements.append(cst.Element(extra, comma=added))
        else:
            elements[-1] = last.with_changes(comma=cst.MaybeSentinel.DEFAULT)
            elements.append(cst.Element(extra))
        new = kind.with_changes(elements=elements)
        closing = kind.rpar[-1].whitespace_before if kind.rpar else None
        if isinstance(closing, cst.ParenthesizedWhitespace) and closing.first_line.comment is not None \
                and isinstance(mine, cst.Comma) and isinstance(mine.whitespace_after, cst.ParenthesizedWhitespace):
            # the comment after the last element belongs to the closing parenthesis, outside
            # the edited range: add the class in front so that the comment keeps its element
            new = kind.with_changes(elements=[cst.Element(extra, comma=_without_comment(mine)), *kind.elements])
    elif isinstance(kind, (cst.Name, cst.Attribute)):
        new = cst.Tuple(elements=[cst.Element(kind.with_changes(lpar=[], rpar=[])), cst.Element(extra)])
    else:
        return None
    if not new.lpar:
        new = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return _fix(title, applicability, [replace(ctx, kind, new)])
