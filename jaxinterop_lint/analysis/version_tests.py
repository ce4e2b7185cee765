"""Evaluating a test per JAX release: the half of :mod:`.versions` that reads expressions.

:func:`branches` gives, for an ``if``/``assert``/conditional-expression test, the evaluation
points (every known release, and stand-ins for the releases newer than the newest known) at
which it may be True and those at which it may be False.  It understands comparisons of
``jax.__version__`` / ``jax.__version_info__`` / ``importlib.metadata.version("jax")`` (raw,
parsed by ``packaging.version`` and friends, as tuples of ints, ``.release``/``.major``/...),
``hasattr``/``getattr(..., None)`` probes of JAX modules (the names of
:data:`~jaxinterop_lint.knowledge.versions.NAMES` and ``REMOVED``) and of removed array
attributes (a probe dead in the whole range is recorded as a ``probe`` event), ``not``,
``and``, ``or``, and names bound once in the module to any of these.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

import libcst as cst

from ..knowledge import apis
from ..knowledge import versions as VT
from . import values as V

# Tests are evaluated at points: every known release, and for FUTURE several stand-ins (a test
# may hold for 0.12 and not for 1.0), so that ``and``/``or`` keep the stand-ins apart.
STANDINS = ((0, 12, 0), (0, 99, 0), (1, 0, 0), (2, 0, 0))
POINTS = frozenset(VT.RELEASES) | frozenset(STANDINS)


KEY = "@jax-versions"     # the environment's entry of the releases reaching a point (analysis/versions.py)


def project(walker) -> frozenset:
    """The project's releases (the configuration's range)."""
    return getattr(walker.ma.kb, "jax_versions", VT.DEFAULT)


def current(walker) -> frozenset:
    """The releases that can reach the walker's current point."""
    env = walker.env
    entry = env.get(KEY) if env is not None else None
    return entry.versions if entry is not None else project(walker)


def points(vs) -> frozenset:
    """A version set as evaluation points (FUTURE becomes its stand-ins)."""
    return (frozenset(vs) - {VT.FUTURE}) | (frozenset(STANDINS) if VT.FUTURE in vs else frozenset())


@lru_cache(maxsize=1024)
def releases(pts) -> frozenset:
    """Evaluation points back to a version set (any stand-in stands for FUTURE); memoised
    (a module asks the same few sets thousands of times)."""
    out = frozenset(p for p in pts if p in VT.ALL)
    return out | {VT.FUTURE} if any(p in pts for p in STANDINS) else out


VERSION_STRINGS = frozenset({"jax.__version__", "jax.version.__version__", "jax.version._version"})
VERSION_INFOS = frozenset({"jax.__version_info__", "jax.version.__version_info__"})
METADATA_VERSION = frozenset({"importlib.metadata.version", "importlib_metadata.version"})
PARSERS = frozenset({"packaging.version.parse", "packaging.version.Version", "distutils.version.LooseVersion",
                     "distutils.version.StrictVersion", "looseversion.LooseVersion", "pkg_resources.parse_version"})
SKIP_IF = frozenset({"pytest.mark.skipif", "unittest.skipIf"})
SKIP_UNLESS = frozenset({"unittest.skipUnless"})
_OPS = {cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">=",
        cst.Equal: "==", cst.NotEqual: "!="}


def branches(walker, test, depth: int = 0) -> tuple[frozenset, frozenset]:
    """``(may be True, may be False)``: the evaluation points (:data:`POINTS`) at which
    ``test`` may hold and those at which it may fail (both all points when unknown)."""
    unknown = (POINTS, POINTS)
    if depth > 6:
        return unknown
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        t, f = branches(walker, test.expression, depth + 1)
        return f, t
    if isinstance(test, cst.BooleanOperation):
        lt, lf = branches(walker, test.left, depth + 1)
        rt, rf = branches(walker, test.right, depth + 1)
        if isinstance(test.operator, cst.And):
            return lt & rt, lf | rf
        return lt | rt, lf & rf
    if isinstance(test, cst.Comparison):
        return _comparison(walker, test, depth)
    if isinstance(test, cst.Call):
        probe = _probe(walker, test)
        if probe is not None:
            return probe, POINTS - probe
    if isinstance(test, cst.Name):
        bound = _bound_once(walker, test.value)
        if bound is not None:
            return branches(walker, bound, depth + 1)
    return unknown


def _comparison(walker, test: cst.Comparison, depth: int) -> tuple[frozenset, frozenset]:
    left = test.left
    may_true, may_false = set(POINTS), set()
    for comp in test.comparisons:
        right = comp.comparator
        if isinstance(comp.operator, (cst.Is, cst.IsNot)) and isinstance(right, cst.Name) and right.value == "None":
            probe = _probe(walker, left) if isinstance(left, cst.Call) else None
            if probe is None or len(test.comparisons) != 1:
                return POINTS, POINTS
            return (POINTS - probe, probe) if isinstance(comp.operator, cst.Is) else (probe, POINTS - probe)
        op = _OPS.get(type(comp.operator))
        a, b = _operand(walker, left, depth), _operand(walker, right, depth)
        if op is None or a is None or b is None or (a[0] == "const" and b[0] == "const"):
            return POINTS, POINTS
        t, f = set(), set()
        for point in POINTS:
            outcome = _compare(a, b, op, point)
            if outcome is None:
                return POINTS, POINTS
            (t if outcome else f).add(point)
        may_true &= t
        may_false |= f
        left = right
    return frozenset(may_true), frozenset(may_false)


def _operand(walker, node, depth: int):
    """``("str"|"parsed"|"info"|"ints", transform)`` for a JAX version expression, ``("const",
    value)`` for a constant, None otherwise.  ``transform`` maps a release to the value."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return ("const", value) if isinstance(value, str) else None
    if isinstance(node, cst.Integer):
        return "const", int(node.value, 0)
    if isinstance(node, cst.Tuple) and node.elements and all(isinstance(e.value, cst.Integer) for e in node.elements):
        return "const", tuple(int(e.value.value, 0) for e in node.elements)
    if isinstance(node, cst.Name):
        bound = _bound_once(walker, node.value)
        if bound is not None and depth < 6:
            return _operand(walker, bound, depth + 1)
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        inner = _operand(walker, node.value, depth + 1)
        sl = node.slice[0].slice
        if inner is not None and inner[0] in ("info", "ints"):
            if isinstance(sl, cst.Index) and isinstance(sl.value, cst.Integer):
                i = int(sl.value.value, 0)
                return "int", lambda r, f=inner[1]: _at(f(r), i)
            if isinstance(sl, cst.Slice) and sl.lower is None and isinstance(sl.upper, cst.Integer):
                k = int(sl.upper.value, 0)
                return inner[0], lambda r, f=inner[1]: tuple(f(r)[:k])
        return None
    if isinstance(node, cst.Attribute) and node.attr.value in ("release", "major", "minor", "micro"):
        inner = _operand(walker, node.value, depth + 1)
        if inner is not None and inner[0] == "parsed":
            field = node.attr.value
            if field == "release":
                return "ints", lambda r: tuple(r)
            index = ("major", "minor", "micro").index(field)
            return "int", lambda r, i=index: _at(r, i)
        return None
    if isinstance(node, cst.Call):
        return _call_operand(walker, node, depth)
    value = walker.eval(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    if value is not None and value.kind == V.QNAME:
        if value.qname in VERSION_STRINGS:
            return "str", _text
        if value.qname in VERSION_INFOS:
            return "info", lambda r: tuple(r)
    return None


def _call_operand(walker, node: cst.Call, depth: int):
    func = walker.eval(node.func)
    args = [a.value for a in node.args if a.keyword is None and not a.star]
    qn = func.qname if func.kind == V.QNAME else None
    if qn in METADATA_VERSION and len(args) == 1 and isinstance(args[0], cst.SimpleString) \
            and args[0].evaluated_value == "jax":
        return "str", _text
    if qn in PARSERS and len(args) == 1:
        inner = _operand(walker, args[0], depth + 1)
        if inner is not None and inner[0] == "str":
            return "parsed", lambda r: _parsed(_text(r))
        if inner is not None and inner[0] == "const" and isinstance(inner[1], str):
            parsed = _parsed(inner[1])
            return ("const", parsed) if parsed is not None else None
        return None
    if qn == "builtins.tuple" and len(args) == 1:
        text = walker.text(args[0]) if hasattr(walker, "text") else ""
        inner = _split_source(walker, args[0], depth)
        if inner is not None and ".split" in text:
            return inner
    return None


def _split_source(walker, node, depth: int):
    """``map(int, V.split(".")[:k])`` or ``(int(p) for p in V.split(".")[:k])`` over a version
    string ``V``: ``("ints", first k parts)``."""
    for sub in _walk(node):
        if isinstance(sub, cst.Call) and isinstance(sub.func, cst.Attribute) and sub.func.attr.value == "split":
            base = _operand(walker, sub.func.value, depth + 1)
            if base is None or base[0] != "str":
                return None
            k = None
            parent_slice = _slice_after(node, sub)
            if parent_slice is not None:
                k = parent_slice
            return "ints", lambda r, k=k: tuple(r[:k]) if k is not None else tuple(r)
    return None


def _slice_after(root, call):
    for sub in _walk(root):
        if isinstance(sub, cst.Subscript) and sub.value is call and len(sub.slice) == 1:
            sl = sub.slice[0].slice
            if isinstance(sl, cst.Slice) and sl.lower is None and isinstance(sl.upper, cst.Integer):
                return int(sl.upper.value, 0)
    return None


def _walk(node):
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(c for c in n.children if isinstance(c, cst.CSTNode))


def _text(release) -> str:
    return ".".join(map(str, release))


def _at(seq, i):
    return seq[i] if -len(seq) <= i < len(seq) else 0


def _parsed(text: str):
    """``packaging.version.Version(text)``, or None for a malformed version."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text)
    except InvalidVersion:
        return None


_COMPARE = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
            ">=": lambda x, y: x >= y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y}


def _compare(a, b, op: str, release):
    """``a OP b`` at ``release`` as Python evaluates it; None when the values do not compare
    (a ``TypeError`` at run time, or a mix of kinds the analysis does not trust)."""
    x = a[1] if a[0] == "const" else a[1](release)
    y = b[1] if b[0] == "const" else b[1](release)
    if x is None or y is None or (isinstance(x, (int, str)) and type(x) is not type(y)):
        return None
    try:
        return bool(_COMPARE[op](x, y))
    except TypeError:
        return None


# -- probes ------------------------------------------------------------------------------
def _probe(walker, call: cst.Call) -> Optional[frozenset]:
    """The releases in which ``hasattr(M, "name")`` / ``getattr(M, "name", None)`` finds the
    name, for a JAX module ``M`` whose attribute the tables know, or for a removed attribute
    of a JAX array (a dead probe is recorded); None otherwise."""
    func = walker.eval(call.func)
    if func.kind != V.QNAME or func.qname not in ("builtins.hasattr", "builtins.getattr") or len(call.args) < 2:
        return None
    if func.qname == "builtins.getattr" and len(call.args) != 3:
        return None
    name_node = call.args[1].value
    if not isinstance(name_node, cst.SimpleString) or not isinstance(name_node.evaluated_value, str):
        return None
    name = name_node.evaluated_value
    owner = walker.eval(call.args[0].value)
    if owner.kind == V.QNAME:
        found = VT.name_versions(f"{owner.qname}.{name}")
        return points(found) if found is not None else None
    api = VT.REMOVED.get("." + name)
    if api is None or name not in apis.REMOVED_ATTRIBUTES or not walker.ma.is_removed_attribute_receiver(owner):
        return None
    found = api.available(VT.ALL)

    if walker.env is not None and not (current(walker) & found):
        from .events import RemovedEvent

        walker.record(RemovedEvent(call, "." + name, apis.REMOVED_ATTRIBUTES[name], "probe", walker.function,
                                   receiver=call.args[0].value))
    return points(found)


def _bound_once(walker, name: str):
    """The expression a module's name is bound to when it is bound exactly once (anywhere in
    the module) by a plain ``name = expr`` whose text can be a version test; None otherwise."""
    ma = walker.ma
    state = getattr(ma, "_bound_once", None)
    if state is None:
        source = getattr(ma, "source", "") or ""
        # Only names assigned an expression that spells a version test are candidates (one
        # regular expression over the text); the module is scanned only when a test asks
        # about a candidate (most tests name none).
        state = [_candidates(source), None]
        try:
            ma._bound_once = state
        except AttributeError:  # pragma: no cover - a slotted analysis
            pass
    candidates, table = state
    if name not in candidates:
        return None
    if table is None:
        table = state[1] = _scan_bindings(ma.module, candidates, getattr(ma, "source", "") or "")
    return table.get(name)


_CANDIDATE = re.compile(r"[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)")
_VERSION_WORD = re.compile(r"__version|version\(|hasattr\(|getattr\(|\.release\b|\.minor\b|\.major\b")


def _candidates(source: str) -> frozenset:
    """Names assigned on a line that spells a version test (``v = jax.__version__``,
    ``ok = hasattr(...)``): the words are found first, then each of their lines is matched
    as an assignment (a scan for the words is much faster than an assignment pattern tried
    on every line)."""
    out = set()
    done = -1
    for m in _VERSION_WORD.finditer(source):
        start = source.rfind("\n", 0, m.start()) + 1
        if start == done:
            continue
        done = start
        a = _CANDIDATE.match(source, start)
        if a is not None and a.end() <= m.start():
            out.add(a.group(1))
    return frozenset(out)
_STATEMENT_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _expression_binders(name: str, source: str) -> int:
    """Bindings of ``name`` inside expressions, counted in the text (the statement walk of
    :func:`_scan_bindings` does not enter expressions): ``name :=``, ``for name in`` /
    ``for a, name in`` in comprehensions, ``lambda name:`` parameters."""
    n = re.escape(name)
    return len(re.findall(rf"\b{n}\s*:=|\bfor\b[^\n:]*?\b{n}\b[^\n:]*?\bin\b|\blambda\b[^\n:]*\b{n}\b", source))


def _scan_bindings(module, candidates: frozenset, source: str) -> dict:
    """``{name: expression}`` for the ``candidates`` bound exactly once in ``module``: a walk
    of its statements (never of its expressions: libcst's ``children`` is slow, and a module
    has far fewer statements than nodes), plus the binders inside expressions counted in the
    text (:func:`_expression_binders`, which only ever makes a name count more)."""
    counts: dict = {}
    values: dict = {}

    def bind(target, value=None):
        if isinstance(target, cst.Name):
            if target.value in candidates:
                counts[target.value] = counts.get(target.value, 0) + 1
                if value is not None:
                    values[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                bind(el.value)
        elif isinstance(target, cst.StarredElement):
            bind(target.value)

    def params(node):
        p = node.params
        for param in [*p.posonly_params, *p.params, *p.kwonly_params]:
            bind(param.name)
        for star in (p.star_arg, p.star_kwarg):
            if isinstance(star, cst.Param):
                bind(star.name)

    todo = [module]
    while todo:
        node = todo.pop()
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in node.body:
                if isinstance(small, cst.Assign):
                    for t in small.targets:
                        bind(t.target, small.value if len(small.targets) == 1 else None)
                elif isinstance(small, cst.AnnAssign):
                    bind(small.target, small.value)
                elif isinstance(small, cst.AugAssign):
                    bind(small.target)
                    bind(small.target)
                elif isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        bind(alias.asname.name if alias.asname is not None else alias.name)
                elif isinstance(small, (cst.Global, cst.Nonlocal)):
                    for n in small.names:
                        if n.name.value in candidates:
                            counts[n.name.value] = 2
            continue
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            bind(node.name)
            if isinstance(node, cst.FunctionDef):
                params(node)
        elif isinstance(node, cst.For):
            bind(node.target)
        elif isinstance(node, (cst.With, cst.ExceptHandler)):
            for item in getattr(node, "items", ()):
                if item.asname is not None:
                    bind(item.asname.name)
            if isinstance(node, cst.ExceptHandler) and node.name is not None:
                bind(node.name.name)
        for attr in _STATEMENT_BODIES:
            part = getattr(node, attr, None)
            if part is None:
                continue
            if isinstance(part, (tuple, list)):
                todo.extend(part)
            elif isinstance(part, cst.BaseSuite):
                todo.extend(part.body if isinstance(part, cst.IndentedBlock) else [part])
            else:
                todo.append(part)
    return {name: values[name] for name, n in counts.items()
            if n == 1 and name in values and not _expression_binders(name, source)}
