"""Version guards: which JAX releases can reach each point of the walk.

The walk keeps the releases that can reach the current point in the environment under
:data:`KEY` (absent: the project's whole range, ``ma.kb.jax_versions``).  A test narrows it
on each branch (:func:`branches`, applied by :func:`narrow`): comparisons of
``jax.__version__``, ``jax.__version_info__``, ``importlib.metadata.version("jax")`` (raw,
through ``packaging.version.parse`` / ``Version``, ``LooseVersion``, tuples of ints, ``.release``
/ ``.major`` / ``.minor``), ``hasattr(<jax module>, "<name>")`` and ``getattr(..., None)``
probes, and names bound once to any of these.  A branch no release of the range can reach is
not walked (the environment becomes unreachable).  Events record the releases that reach
them (:func:`annotate`), so rules judge each use against the releases where it can run.

A probe of a removed attribute on a JAX array (``hasattr(x, "device_buffer")``) that is False
in every release of the range is a dead probe: it is recorded as a ``probe``
:class:`~jaxinterop_lint.analysis.events.RemovedEvent` (rule JXI005).

Each test is evaluated per release as Python would evaluate it (a string comparison is
lexicographic: ``"0.10.2" >= "0.4"`` is False), giving the releases where it may be True and
those where it may be False.  Releases newer than the newest known are evaluated at several
stand-ins, so a test that depends on the future stays undecided there.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from . import values as V
from .version_tests import KEY, SKIP_IF, SKIP_UNLESS, branches, current, project, releases  # noqa: F401
from .version_tests import POINTS, STANDINS, points  # noqa: F401  (re-exported)

KIND = "jax-versions"


@dataclass
class VersionsValue(V.Value):
    """The environment entry under :data:`KEY`: the releases that reach this point (never
    mutated, like every :class:`~jaxinterop_lint.analysis.values.Value`)."""

    versions: frozenset = frozenset()


def join(a: Optional[VersionsValue], b: Optional[VersionsValue]) -> Optional[VersionsValue]:
    """The entry after two paths meet (None on either side: that path had the whole range)."""
    if a is None or b is None:
        return None
    return a if a.versions >= b.versions else _entry(a.versions | b.versions)


def _entry(vs: frozenset) -> VersionsValue:
    return VersionsValue(kind=KIND, qname=f"{len(vs)}:{hash(vs)}", versions=vs)


def narrow(walker, reached: frozenset) -> None:
    """Restrict the current point to ``reached`` (evaluation points, as :func:`branches`
    gives them; intersected with what reaches it already); an empty set makes the point
    unreachable."""
    if walker.env is None or reached is POINTS:   # an unknown test: every release goes on
        return
    vs = current(walker) & releases(reached)
    if not vs:
        walker.env = None
    elif vs != current(walker):
        walker.env[KEY] = _entry(vs)


def annotate(walker, event):
    """``event`` with the releases reaching it (and the enclosing ``try`` blocks for removed
    APIs), for events that have those fields and do not carry them yet."""
    changes = {}
    if getattr(event, "versions", False) is None:
        changes["versions"] = current(walker)
    if hasattr(event, "tries") and not event.tries and walker.tries and type(event).__name__ == "RemovedEvent":
        changes["tries"] = walker.tries
    return dataclasses.replace(event, **changes) if changes else event


def enter_function(walker, rec) -> None:
    """Seed a function's walk with the releases that reach its ``def`` (see :func:`at_def`)."""
    vs = getattr(rec, "jax_versions", None)
    if vs is not None and walker.env is not None:
        walker.env[KEY] = _entry(vs)


def at_def(walker, node, rec) -> None:
    """Remember on ``rec`` the releases reaching the ``def`` ``node``, narrowed by
    ``@pytest.mark.skipif(test)`` / ``@unittest.skipIf(test)`` / ``@unittest.skipUnless(test)``."""
    vs = current(walker)
    for dec in getattr(node, "decorators", ()):
        call = dec.decorator
        if isinstance(call, cst.Call) and call.args:
            f = walker.eval(call.func)
            if f.kind == V.QNAME and f.qname in SKIP_IF | SKIP_UNLESS:
                may_true, may_false = branches(walker, call.args[0].value)
                vs = vs & releases(may_false if f.qname in SKIP_IF else may_true)
    if vs != project(walker):
        rec.jax_versions = vs


def under(walker, reached: frozenset, evaluate):
    """``evaluate()`` with the current point restricted to ``reached`` (evaluation points of a
    branch of a conditional expression); None, without evaluating, when no release reaches it."""
    if walker.env is None or reached is POINTS or releases(reached) >= current(walker):
        return evaluate()
    saved = walker.env
    walker.env = dict(saved)
    narrow(walker, reached)
    try:
        return evaluate() if walker.env is not None else None
    finally:
        walker.env = saved


# Test helpers that always raise (the skip family).  ``sys.exit`` is left out on purpose: the
# linter must still read a module that exits at import (tests/test_robustness.py).
NEVER_RETURN = frozenset({"pytest.skip", "pytest.xfail", "pytest.fail", "pytest.exit"})
NEVER_RETURN_METHODS = frozenset({"skipTest", "fail"})


def never_returns(walker, expr) -> bool:
    """Whether the expression statement ``expr`` always raises: ``pytest.skip(...)``,
    ``pytest.xfail``/``fail``/``exit``, ``self.skipTest(...)`` / ``self.fail(...)``
    in a method of a ``...TestCase`` subclass (unittest, absltest), so the code after it runs in no release that reaches it."""
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in NEVER_RETURN_METHODS and isinstance(func.value, cst.Name):
        rec = walker.rec
        if rec is None or rec.cls is None or not rec.params or func.value.value != rec.params[0]:
            return False
        bases = getattr(rec.cls.node, "bases", ())
        return any(walker.text(b.value).endswith("TestCase") for b in bases)
    value = walker.eval(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    return value is not None and value.kind == V.QNAME and value.qname in NEVER_RETURN
