"""The walk of compound statements that branch: ``if`` (also on a pinned parameter),
loops to a fixpoint (``for``, unrolled over a few known elements, ``while``), ``try`` /
``except`` / ``finally``, ``with`` and ``match``.  A mixin of :class:`~.flow.Walker`, which
supplies the environment, ``suite``, ``eval``, ``assign``, ``test`` and ``refine``."""
from __future__ import annotations

import libcst as cst

from ..knowledge import structures as S
from . import handlers, pinned
from . import values as V
from . import versions
from .env import join_env, env_key
from .events import TryContext
from .imports import dotted


class BranchMixin:
    """``if``, loops, ``try``, ``with`` and ``match`` of the provenance walk."""

    def s_if(self, node: cst.If) -> None:
        if self.pinned_branch(node):
            return
        true, false = self.test(node.test)
        may_true, may_false = versions.branches(self, node.test)
        saved = self.env
        self.env = dict(saved)
        versions.narrow(self, may_true)
        self.refine(true, node.test)
        self.suite(node.body)
        after_true = self.env
        self.env = dict(saved)
        versions.narrow(self, may_false)
        self.refine(false, node.test)
        if isinstance(node.orelse, cst.If):
            self.s_if(node.orelse)
        elif node.orelse is not None:
            self.suite(node.orelse.body)
        self.env = join_env(after_true, self.env)

    def loop(self, node, head, leave=None) -> None:
        """Walk a loop to a fixpoint: ``head`` runs before each pass of the body, ``leave``
        (if given) where the loop ends without ``break``, before its ``else``."""
        state = self.env
        breaks = []
        for _ in range(3):
            self.env = dict(state)
            self.loops.append(([], []))
            head()
            self.suite(node.body)
            breaks, continues = self.loops.pop()
            end = self.env
            for c in continues:
                end = join_env(end, c)
            new = join_env(state, end)
            done = env_key(new) == env_key(state)
            state = new
            if done:
                break
        self.env = state
        if leave is not None:
            leave()
        if node.orelse is not None:
            self.suite(node.orelse.body)
        for b in breaks:
            self.env = join_env(self.env, b)

    def s_for(self, node: cst.For) -> None:
        iterated = self.eval(node.iter)
        els = iterated.elements
        if els is not None and len(els) <= S.UNROLL_LIMIT and iterated.container != "dict" and self.unrolling < 2:
            self.unrolled(node, els)
            return
        element = self.element_of(iterated, node.iter)
        self.loop(node, lambda: self.assign(node.target, element, node))

    def unrolled(self, node: cst.For, elements: tuple) -> None:
        """A ``for`` over a few known elements, walked once per element in order, so the
        elements of each (``for fn, arg in ((f, a), (g, b))``) stay paired; the events of
        the body join over the visits."""
        breaks = []
        self.unrolling += 1
        try:
            for element in elements:
                if self.env is None:
                    break
                self.env = dict(self.env)
                self.loops.append(([], []))
                self.assign(node.target, element, node)
                self.suite(node.body)
                done, continues = self.loops.pop()
                breaks.extend(done)
                for c in continues:
                    self.env = join_env(self.env, c)
        finally:
            self.unrolling -= 1
        if node.orelse is not None and self.env is not None:
            self.suite(node.orelse.body)
        for b in breaks:
            self.env = join_env(self.env, b)

    def s_while(self, node: cst.While) -> None:
        """``while test:``: the body runs where ``test`` holds, and the loop leaves (other
        than by ``break``) where it does not: ``while len(x.devices()) > 1: x = ...`` ends
        with ``x`` single-device (the refinements of :mod:`.conditions`)."""
        refs = []

        def head():
            true, false = self.test(node.test)
            refs[:] = [false]
            self.refine(true, node.test)

        self.loop(node, head, lambda: self.refine(refs[0], node.test) if refs else None)

    def s_with(self, node: cst.With) -> None:
        with handlers.entered(self, node):   # the items: handlers, mesh contexts, `as` names
            self.suite(node.body)

    def s_try(self, node) -> None:
        handlers = tuple((h, self.caught(h)) for h in node.handlers)
        entry = self.env
        outer = self.tries
        if handlers:
            again = tuple(i for i, h in enumerate(node.handlers) if always_raises(h.body))
            self.tries = outer + (TryContext(node, handlers, reraising=again),)
        self.env = dict(entry)
        self.suite(node.body)
        self.tries = outer
        after_body = self.env
        exits = []
        for h, _ in handlers:
            self.env = join_env(entry, after_body)
            if h.name is not None:
                self.assign(h.name.name, V.UNKNOWN_VALUE, h)
            self.suite(h.body)
            exits.append(self.env)
        self.env = after_body
        if node.orelse is not None and self.env is not None:
            self.suite(node.orelse.body)
        for e in exits:
            self.env = join_env(self.env, e)
        if node.finalbody is not None:
            reached = self.env
            self.env = reached if reached is not None else dict(entry)
            self.suite(node.finalbody.body)
            if reached is None:
                self.env = None

    def caught(self, handler):
        """The class names an ``except`` clause catches (None: a bare ``except``)."""
        if handler.type is None:
            return None
        names = []

        def collect(v):
            if v.kind == V.QNAME:
                names.append(v.qname[len("builtins."):] if v.qname.startswith("builtins.") else v.qname)
            for e in v.elements or ():
                collect(e)

        collect(self.eval(handler.type))
        return tuple(names)

    def pinned_branch(self, node: cst.If) -> bool:
        """Walk only the branch of ``node`` that the pinned parameters and the module's
        constants take (:func:`~.pinned.truth`, :meth:`test_constant`: ``if DEBUG:`` with
        ``DEBUG = False``); False when the test depends on anything else."""
        taken = pinned.truth(self.pinned or {}, node.test, self.eval, self.test_constant)
        if taken is None:
            return False
        self.eval(node.test)
        if taken:
            self.suite(node.body)
        elif isinstance(node.orelse, cst.If):
            self.s_if(node.orelse)
        elif node.orelse is not None:
            self.suite(node.orelse.body)
        return True

    def s_match(self, node) -> None:
        self.eval(node.subject)
        entry = self.env
        out = dict(entry)
        for case in node.cases:     # the first arm a pinned or constant subject takes, alone
            taken = pinned.arm_taken(self.pinned or {}, node.subject, case, self.eval, self.test_constant)
            if taken is None:
                break
            if taken:
                self.suite(case.body)
                return
        else:
            return      # no arm taken: the match does nothing
        for case in node.cases:
            self.env = dict(entry)
            self.suite(case.body)
            out = join_env(out, self.env)
        self.env = out


# calls that end the process: a handler making one handles nothing (its program stops)
_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})


def always_raises(body) -> bool:
    """Whether a block (an ``except`` clause's body) always ends by raising: a ``raise``
    (bare, another exception, ``from e``), a call of ``sys.exit`` / ``os._exit`` (by its
    spelling), or an ``if`` / ``else`` whose every arm does, before anything that could
    leave it otherwise (a ``return``, ``break`` or ``continue``)."""
    for stmt in getattr(body, "body", ()):
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Raise):
                    return True
                if isinstance(small, (cst.Return, cst.Break, cst.Continue)):
                    return False
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                        and dotted(small.value.func) in _EXITS:
                    return True
        elif isinstance(stmt, cst.If):
            arm = stmt
            while isinstance(arm, cst.If):
                if not always_raises(arm.body):
                    break
                arm = arm.orelse
            else:
                if isinstance(arm, cst.Else) and always_raises(arm.body):
                    return True
    return False

