"""Test functions run with their fixtures: pytest calls ``test_export(sharded)`` with the
value the fixture ``sharded`` of the same module returns (or yields), so a test exporting a
parameter named after a fixture that makes a multi-device array raises where the
fixture's value is given.  The tests of one module (functions ``test*`` and the ``test*``
methods of classes ``Test*``) are called here as the module level would call them, their
fixture parameters bound to the fixtures' values: the calling contexts of
:mod:`~.contexts`, each reported at the test's sink.  The fixtures of the ``conftest.py``
files above a test module count too, the nearest first, a module's own before them all
(pytest finds them by name, not by import)."""
from __future__ import annotations

import libcst as cst

from ..knowledge import apis
from . import values as V

CALLER = "<pytest>"      # the walker's function name: the caller of each test
_DEPTH = 4               # fixtures using fixtures: at most this deep


def run_tests_with_fixtures(ma) -> None:
    """Call each test of module analysis ``ma`` (after its module walk) with the values of
    the module's fixtures its parameters name; nothing when the module has no fixture."""
    from .flow import Walker

    walker = Walker(ma, None, dict(ma.globals), None, CALLER)
    fixtures, tests = {}, []
    for name, v in list(ma.globals.items()):
        rec = _local(v, ma)
        if rec is not None:
            if _is_fixture(walker, rec.node):
                fixtures[name] = rec
            elif name.startswith("test"):
                tests.append(rec)
        elif v.kind == V.CLASS and v.cls is not None and name.startswith("Test"):
            tests.extend(r for n, m in v.cls.methods.items() if n.startswith("test")
                         and (r := _local(m, ma)) is not None and r.cls is not None)
    for conftest in ma.conftests() if tests else ():
        for name, rec in _conftest_fixtures(ma, conftest).items():
            fixtures.setdefault(name, rec)
    if not fixtures:
        return
    values: dict = {}
    for rec in tests:
        first = 1 if rec.cls is not None else 0
        bind = _bind(walker, rec, fixtures, values, first, 0)
        if bind:
            walker.call_local(rec.node, rec, bind)


def _conftest_fixtures(ma, path: str) -> dict:
    """``{name: record}`` of the fixtures the ``conftest.py`` at ``path`` defines (its
    analysis, shared through the project; none from a summary read from the cache: it keeps
    no syntax tree)."""
    from .flow import Walker
    from .project import is_frozen

    try:
        other = ma.project.analysis_of_path(path, full=False)
    except Exception:   # a conftest.py that cannot be parsed gives no fixtures
        return {}
    if other is None or is_frozen(other) or other is ma:
        return {}
    out = {}
    walker = Walker(other, None, dict(other.globals), None, CALLER)    # its decorators are its names
    for name, v in list(other.globals.items()):
        rec = _local(v, other)
        if rec is not None and _is_fixture(walker, rec.node):
            out[name] = rec
    return out


def _local(v, ma):
    """The record of a def of module ``ma`` that value ``v`` is, or None."""
    if v.kind != V.FUNC or v.func is None or v.func.local is None:
        return None
    rec = v.func.local
    return rec if rec.owner is ma and isinstance(getattr(rec, "node", None), cst.FunctionDef) else None


def _is_fixture(walker, node: cst.FunctionDef) -> bool:
    """Whether ``node`` is decorated with a fixture decorator (``@pytest.fixture``, called
    or not: :data:`~..knowledge.apis.FIXTURE_DECORATORS`)."""
    for dec in node.decorators:
        expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
        d = walker.eval(expr)
        if d.kind == V.QNAME and d.qname in apis.FIXTURE_DECORATORS:
            return True
    return False


def _bind(walker, rec, fixtures: dict, values: dict, first: int, depth: int) -> dict:
    """``index -> (value, None)`` for each parameter of ``rec`` from ``first`` on that names
    a fixture whose value is known (:func:`_value`)."""
    bind = {}
    for i, name in enumerate(rec.params[first:], first):
        if name in fixtures:
            v = _value(walker, name, fixtures, values, depth)
            if v is not None:
                bind[i] = (v, None)
    return bind


def _value(walker, name: str, fixtures: dict, values: dict, depth: int):
    """The value fixture ``name`` gives a test: what its function returns, or the element
    it yields, called with its own fixture parameters; None past :data:`_DEPTH` or in a
    cycle of fixtures."""
    if name in values:
        return values[name]
    values[name] = None          # a cycle gives nothing
    if depth > _DEPTH:
        return None
    rec = fixtures[name]
    bind = _bind(walker, rec, fixtures, values, 0, depth + 1)
    out = walker.call_local(rec.node, rec, bind)
    yields = rec.owner.summary(rec).yields
    if yields is not None:      # a yield fixture: the test gets what it yields
        out = walker.instantiate(yields, bind, rec, rec.node)
    values[name] = out
    return out
