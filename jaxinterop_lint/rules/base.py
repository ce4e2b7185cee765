"""The rule protocol, and what rules share: positions, provenance, the event verdict.

A rule is a small class with its ``code``, ``name``, one-line ``summary``, documentation
fields (``why``, ``versions``, ``fix_applicability``), ``INVALID``/``VALID`` snippets that
double as tests and docs, and ``check(event, ctx)`` that turns an analysis event into a
:class:`~jaxinterop_lint.finding.Finding` or None.
"""
from __future__ import annotations

from typing import ClassVar, Optional


from ..analysis.events import SinkEvent
from ..analysis.values import Origin
from ..finding import DeferredFix, Finding, Fix, Step
from ..knowledge import versions as VT
from ..knowledge.apis import EXCEPTION_BASES, PROTOCOL_RULE

from ..catalog import DOCS_URL  # noqa: E402,F401  (the rule pages; re-exported)


def true_position(ma, pos: tuple) -> tuple:
    """``pos`` (from libcst's ``PositionProvider`` over ``ma.module``) as columns of the
    linted text: libcst drops the form feeds that start some lines (its written module lacks
    them), so the columns of those lines are shifted back by the characters dropped."""
    shifts = getattr(ma, "_ff_shifts", None)
    if shifts is None:
        shifts = {}
        source = getattr(ma, "source", None)
        if source and "\f" in source:
            from ..source import LINE_SPLIT

            written = LINE_SPLIT.split(ma.module.code)
            for i, line in enumerate(LINE_SPLIT.split(source)):
                if "\f" in line and i < len(written) and len(line) > len(written[i]) \
                        and line.endswith(written[i]) and not line[:len(line) - len(written[i])].strip():
                    shifts[i + 1] = len(line) - len(written[i])
        try:
            ma._ff_shifts = shifts
        except AttributeError:  # pragma: no cover - a slotted analysis
            pass
    if not shifts:
        return pos
    line, col, end_line, end_col = pos
    return line, col + shifts.get(line, 0), end_line, end_col + shifts.get(end_line, 0)


class RuleContext:
    """Positions and source text of one analysed module, computed only when a finding needs
    them (libcst's ``PositionProvider`` over the module, once)."""

    def __init__(self, ma, path: str):
        self.ma = ma
        self.path = path
        self.handled: list[tuple[str, int]] = []

    def position(self, node) -> tuple[int, int, int, int]:
        """``(line, column, end_line, end_column)`` of ``node``: 1-based lines, 0-based columns."""
        return true_position(self.ma, self.ma.position(node))

    def line(self, node) -> int:
        """1-based line of ``node``."""
        return self.position(node)[0]

    def text(self, node) -> str:
        """Source text of ``node`` on one line."""
        if node is None:
            return "?"
        code = self.ma.module.code_for_node(node).strip()
        return " ".join(code.split())

    def where(self, origin: Origin) -> str:
        """``line 12``, or ``in f() at pkg/mod.py:12`` for an origin in another module."""
        owner = origin.owner
        if owner is not None and owner is not self.ma:
            inside = f"in {origin.function}() " if origin.function and origin.function != "<module>" else ""
            return f"{inside}at {owner.display_path}:{owner.position(origin.node)[0]}"
        return f"line {self.line(origin.node)}"

    def provenance(self, origin: Optional[Origin], sink_node, sink_text: str) -> tuple[Step, ...]:
        """The chain from ``origin`` to the sink as :class:`Step` records."""
        steps = []
        if origin is not None:
            steps.append(self._step(origin.description, origin.node, origin.owner))
            for desc, node, owner in origin.steps:
                steps.append(self._step(desc, node, owner))
        line, col, _, _ = self.position(sink_node)
        steps.append(Step(sink_text, self.path, line, col))
        return tuple(steps)

    def _step(self, desc, node, owner) -> Step:
        owner = owner if owner is not None else self.ma
        ln, col, _, _ = true_position(owner, owner.position(node))
        return Step(desc, self.path if owner is self.ma else owner.display_path, ln, col)


class Rule:
    """Base of every rule.  Subclasses set the class attributes and implement :meth:`check`."""

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    why: ClassVar[str] = ""
    versions: ClassVar[str] = ""
    fix_applicability: ClassVar[Optional[str]] = None
    fix_title: ClassVar[str] = ""
    default: ClassVar[bool] = True
    INVALID: ClassVar[tuple[str, ...]] = ()
    VALID: ClassVar[tuple[str, ...]] = ()

    def check(self, event, ctx: RuleContext) -> Optional[Finding]:  # pragma: no cover - abstract
        """Return the finding this rule makes of ``event``, or None."""
        raise NotImplementedError

    def fix(self, event, ctx: RuleContext) -> Optional[Fix]:
        """The automatic fix of this rule's finding of ``event`` (edits of the reported node,
        with ``fix_title`` and ``fix_applicability``), or None: the default, for rules and
        patterns without a mechanical remedy."""
        return None

    def deferred_fix(self, event, ctx: RuleContext) -> Optional[DeferredFix]:
        """:meth:`fix` of ``event``, computed only when the finding's fix is first read (a
        :class:`~jaxinterop_lint.finding.DeferredFix` of ``fix_applicability``); None for a
        rule without fixes."""
        if self.fix_applicability is None or type(self).fix is Rule.fix:
            return None
        return DeferredFix(self.fix_applicability, lambda: self.fix(event, ctx))

    def finding(self, ctx: RuleContext, node, message: str, event, provenance=(), fix: Optional[Fix] = None,
                **extra) -> Finding:
        """Build a finding of this rule at ``node``."""
        line, col, end_line, end_col = ctx.position(node)
        context = getattr(event, "context", ())
        if context:
            extra.setdefault("callers", tuple(frame.caller for frame in context))
            extra.setdefault("entered", entered_at(context[0], ctx))
        return Finding(path=ctx.path, line=line, column=col, end_line=end_line, end_column=end_col,
                       code=self.code, name=self.name, message=message, provenance=tuple(provenance),
                       fix=fix, function=getattr(event, "function", ""),
                       snippet=ctx.text(getattr(event, "inner_node", None) or node)[:200], extra=extra)


def call_site(frame, ctx: RuleContext) -> str:
    """``line 13``, or ``pkg/run.py:13`` for a caller in another module: where the call of a
    calling context's ``frame`` (a :class:`~jaxinterop_lint.analysis.events.CallFrame`) is."""
    owner = frame.owner
    if owner is not None and owner is not ctx.ma:
        return f"{owner.display_path}:{owner.position(frame.call)[0]}"
    return f"line {ctx.line(frame.call)}"


def entered_at(frame, ctx: RuleContext) -> str:
    """``b() at line 13`` (``b() at pkg/run.py:13`` for a caller in another module): where
    the outermost call of a calling context ``frame`` (an event's ``context[0]``) is, as the
    messages of merged contexts name it (:func:`jaxinterop_lint.pipeline.judge.raw_findings`)."""
    if frame.caller and frame.caller != "<module>":
        return f"{frame.caller}() at {call_site(frame, ctx)}"
    return f"module level at {call_site(frame, ctx)}"


def catches(handler_names, raised: str, versions=None) -> bool:
    """Whether an ``except`` clause catching ``handler_names`` (None: bare) catches ``raised``
    in every JAX release of ``versions`` (None: the newest release the tables know; pass
    ``event.versions``, the releases reaching the event).  A name catches in a release when it
    is ``raised`` or one of its bases and exists there (``jax.errors.JaxRuntimeError`` only
    from 0.4.34: an ``except`` naming a missing attribute raises AttributeError instead;
    :data:`jaxinterop_lint.knowledge.versions.NAMES`)."""
    if handler_names is None:
        return True
    bases = EXCEPTION_BASES.get(raised, (raised, "Exception", "BaseException"))
    names = [n for n in handler_names if n in bases]
    if not names:
        return False
    releases = versions if versions is not None else (VT.NEWEST,)
    return all(any(VT.resolves(n, v) for n in names) for v in releases)


def missing_names(handler_names, raised: str, versions) -> str:
    """For JXI007 messages: why a handler that names a class catching ``raised`` still misses
    it in some releases of ``versions`` (the name does not exist there), or ``""``."""
    if not handler_names or versions is None:
        return ""
    bases = EXCEPTION_BASES.get(raised, (raised, "Exception", "BaseException"))
    notes = []
    for name in handler_names:
        if name in bases:
            absent = [v for v in versions if not VT.resolves(name, v)]
            if absent:
                notes.append(f"{name} does not exist in JAX {VT.describe(absent)}")
    return "; ".join(notes)


def verdict(event: SinkEvent) -> tuple[Optional[str], object]:
    """Which rule an export event belongs to, and the node to report it at.

    ``JXI008`` when the value was donated; for a multi-device value ``handled`` when an
    enclosing ``try`` catches what JAX raises, ``JXI007`` (at the innermost handler) when
    enclosing ``try`` blocks catch nothing of it, else the protocol's rule; None otherwise.
    The ``try`` blocks of a calling context's callers count too (innermost first), but a
    caller's handler that catches the error only as ``Exception``, ``BaseException`` or with
    a bare ``except`` is an error barrier around a call, not a fallback for the export: the
    export still fails, so it is reported at the sink.  So is one caught by a handler that
    raises again (``TryContext.reraising``) and by no enclosing one.
    """
    value = event.value
    if value.donated is not None:
        return "JXI008", event.node
    if value.multi is None or event.single_device_process:
        return None, None
    raised = event.sink.raises
    if raised is not None and event.tries:
        again = False
        for ctx in reversed(event.tries):
            for i, (_, names) in enumerate(ctx.handlers):
                if catches(names, raised, event.versions):
                    if i in getattr(ctx, "reraising", ()):
                        # the first handler that catches runs, and raises again: the export
                        # still fails unless an enclosing ``try`` handles what leaves this one
                        again = True
                        break
                    if getattr(ctx, "caller", False) and not names_error(names, raised):
                        return PROTOCOL_RULE[event.sink.protocol], event.node
                    return "handled", event.node
        if again:
            return PROTOCOL_RULE[event.sink.protocol], event.node
        return "JXI007", event.tries[-1].handlers[0][0]
    return PROTOCOL_RULE[event.sink.protocol], event.node


def names_error(handler_names, raised: str) -> bool:
    """Whether an ``except`` clause names ``raised`` or a base of it narrower than
    ``Exception`` (``except (BufferError, ValueError)``, ``except RuntimeError``)."""
    if handler_names is None:
        return False
    bases = EXCEPTION_BASES.get(raised, (raised,))
    return any(name in bases and name not in ("Exception", "BaseException") for name in handler_names)


def describe_raise(sink) -> str:
    """How the consumer fails for a multi-device array, for messages."""
    if sink.raises is None:
        return "silently gathers the whole array through the host onto one device"
    return f"raises {sink.raises}"
