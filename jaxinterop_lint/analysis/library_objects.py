"""Call semantics of library objects that run a callable of this process or make arrays
like their arguments: thread executors and their futures, threads, and optimizers'
gradient transformations (the tables are in :mod:`jaxinterop_lint.knowledge.structures`:
``THREAD_EXECUTORS``, ``THREAD_TARGETS``, ``OPTIMIZER_MODULES``).  The queues these hand
values through are containers (:mod:`.structures`)."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..knowledge import structures as S
from . import parts as P
from . import values as V
from .values import Value

TRANSFORMATION = "optax.GradientTransformation()"
"""The qualified name of a gradient transformation built by a call of
:data:`~jaxinterop_lint.knowledge.structures.OPTIMIZER_MODULES` on no array."""

EXECUTOR = "concurrent.futures.ThreadPoolExecutor()"
"""The qualified name of an instance of a thread executor (:data:`~jaxinterop_lint.knowledge.
structures.THREAD_EXECUTORS`): ``with ThreadPoolExecutor() as pool`` binds it (its
``__enter__`` returns the executor), ``pool.submit`` is ``EXECUTOR + ".submit"``."""

ROLES: dict = {
    **{qn: ("executor", None) for qn in S.THREAD_EXECUTORS},
    **{qn: ("thread", where) for qn, where in S.THREAD_TARGETS.items()},
    EXECUTOR + ".submit": ("submit", None),
    EXECUTOR + ".map": ("executor-map", None),
    TRANSFORMATION: ("transformation", None),     # ``inject_hyperparams(optax.sgd)(learning_rate=lr)``
    **{f"{TRANSFORMATION}.{name}": ("optimizer", how) for name, how in S.OPTIMIZER_METHODS.items()},
}
"""Qualified name -> ``(what, table entry)`` for :meth:`LibraryObjectMixin.library_object_call`."""

KINDS = frozenset(what for what, _ in ROLES.values())


class LibraryObjectMixin:
    """Calls of thread executors, threads and gradient transformations (a mixin of the
    walker: it calls ``apply`` and ``element_of``)."""

    def library_object_call(self, node, what: str, arg, pos: list, kw: dict) -> Optional[Value]:
        """The call ``node`` of a library object of kind ``what`` (:data:`ROLES`) with
        evaluated arguments; None where it is a library call like any other."""
        first = pos[0][0] if pos else None
        if what == "transformation":
            return V.qname(TRANSFORMATION)
        if what == "optimizer":
            return self.optimizer_method(arg, pos, kw)
        if what == "executor":
            return V.qname(EXECUTOR)
        if what == "thread":
            self.thread_target(node, arg, pos, kw)
            return None     # the thread itself: as any library object
        if what == "submit":    # a Future of fn(*args, **kwargs), run in a thread of this process
            return P.iterable(self.apply(node, first, pos[1:], kw), "future") if first is not None else None
        # executor-map: fn of the items of the iterables, in order
        if first is None or len(pos) < 2:
            return None
        items = [(self.element_of(v, node), n) for v, n in pos[1:]]
        return P.iterable(self.apply(node, first, items, {}), "iter")

    def transformation(self, qn: str, pos: list, kw: dict) -> Optional[Value]:
        """A call of an optimizer library on no array (:data:`~jaxinterop_lint.knowledge.
        structures.OPTIMIZER_MODULES`: ``optax.adam(3e-4)``): a gradient transformation;
        None for any other call (one with arrays computes from them)."""
        if not qn.startswith(S.OPTIMIZER_MODULES):
            return None
        for v, _ in list(pos) + list(kw.values()):
            if v.kind not in (V.SAFE, V.QNAME, V.FUNC) or v.structured or v.multi is not None or v.deps or v.ref:
                return None
        return V.qname(TRANSFORMATION)

    def optimizer_method(self, how: str, pos: list, kw: dict) -> Value:
        """``tx.init(params)`` / ``tx.update(updates, state, params)`` of a gradient
        transformation: arrays like the parameters; the updates and the state given."""
        def like(i: int, name: str) -> Value:
            given = pos[i][0] if len(pos) > i else kw[name][0] if name in kw else None
            return V.as_array(P.leaf_join(given)) if given is not None else V.SAFE_VALUE
        if how == "init":
            # a state: any read is like the parameters, but for the scalars init makes anew
            # (``state[0].count``), down to OPTIMIZER_STATE_DEPTH reads
            state = like(0, "params")
            scalars = tuple((V.attr_key(n), V.SAFE_VALUE) for n in sorted(S.OPTIMIZER_STATE_SCALARS))
            for _ in range(S.OPTIMIZER_STATE_DEPTH):
                state = P.build(parts=scalars, rest=state)
            return state
        return P.sequence((like(0, "updates"), like(1, "state")), "tuple")

    def thread_target(self, node, where: tuple, pos: list, kw: dict) -> None:
        """``threading.Thread(target=fn, args=(a, b), kwargs={...})``: ``fn(a, b, ...)``
        runs in this process on the objects given (:data:`~jaxinterop_lint.knowledge.
        structures.THREAD_TARGETS`: ``where`` the positions of the callable, ``args`` and
        ``kwargs``); it is called here, so that what it puts into a queue it was handed, or
        writes into the module's names, is seen after.  Arguments that are no tuple of
        known length (``args=params``) leave the call out."""
        at, args_at, kwargs_at = where
        target = pos[at] if len(pos) > at else next((kw[k] for k in S.THREAD_TARGET_KEYWORDS if k in kw), None)
        args = pos[args_at] if len(pos) > args_at else kw.get("args")
        kwargs = pos[kwargs_at] if len(pos) > kwargs_at else kw.get("kwargs")
        if target is None or args is not None and args[0].elements is None:
            return
        given = []
        if args is not None:
            # the tuple's own expressions, where it is written out: a queue or list the
            # target changes is changed in the caller's name (``args=(q, sharding)``)
            shown = args[1].elements if isinstance(args[1], (cst.Tuple, cst.List)) else ()
            nodes = [e.value for e in shown] if len(shown) == len(args[0].elements) \
                and not any(isinstance(e, cst.StarredElement) for e in shown) else [None] * len(args[0].elements)
            given = list(zip(args[0].elements, nodes))
        named = {}
        if kwargs is not None:
            for key, part in kwargs[0].parts or ():
                name = V.keyword_of(key)
                if name is not None:
                    named[name] = (part, None)
        self.apply(node, target[0], given, named)
