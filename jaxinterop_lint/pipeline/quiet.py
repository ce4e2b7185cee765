"""Prove, from CPython's ``ast`` and without libcst, that a file alone can make no finding
because everything it exports is a parameter no caller in the run can fill (issue 16).

The editor's case: ``flake8 --select=JXI lib/interop.py`` reports that file alone.  A library
module often holds only the callee side of an export, ``def to_torch(x): return
torch.from_dlpack(x)``: a multi-device value reaches that sink only through a calling context,
and a context is given only by a caller in the same module or in another *reported* file
(PLAN.md decision 1; :meth:`~jaxinterop_lint.analysis.project.Project.gives_context`).  When
the file is the only one reported and no code of it calls or names such a function, the
analysis of the file can find nothing there, and the file need not be parsed with libcst (whose
import alone is most of a flake8 process on one file).

:func:`exports_only_parameters` says so only when every statement the masking keeps for its
interop words (:class:`~.masking.Masker`, read with ``ast``) satisfies all of:

- it is a top-level ``def`` without decorators, defined once, whose name no code of the file
  uses (no call, no alias, no ``buffer_callback(f)``, no recursion);
- it holds no nested ``def``, ``class`` or ``lambda`` (their own parameters and closures are
  not followed here);
- each use of an interop word in it is an attribute sink (:data:`ATTRIBUTE_SINKS`) on a
  *clean* parameter, or a call of a sink word (``torch.from_dlpack``, ``memoryview``, an
  alias an interop import binds) whose arguments are clean parameters or constants, or
  ``hasattr(x, "__dlpack__")``, or a pair's word on a module another library's import binds
  (``jnp.asarray`` where only a comment spells ``torch``: :func:`_foreign_words`); any other use of a word (a removed API, an FFI word, a guard,
  ``getattr`` of a sink, an annotation naming an interop import) refutes the proof;
- a clean parameter is never rebound in the function (assignment, ``for``/``with``/
  ``except``/walrus/``match`` target, ``del``, ``global``/``nonlocal``, an import), has no
  annotation (the opt-in JXI009 and FFI ``Buffer`` parameters are judged from annotations)
  and no default but a constant;

and no statement uses a name of ``callers`` (names that may be exporting functions of other
modules: a call-site finding there needs the full analysis).  A text spelling ``donate``
(an earlier donating call, JXI008) is never proved.  The proof is conservative: False means
only "analyse it".
"""
from __future__ import annotations

import ast

# Attribute uses that export (or query) their receiver and nothing else.
ATTRIBUTE_SINKS = frozenset({"__dlpack__", "__dlpack_device__", "__cuda_array_interface__",
                             "unsafe_buffer_pointer", "unsafe_raw_buffer"})
# Calls that export their arguments and nothing else (the consumers of the prefilter's pairs:
# ``torch.from_dlpack``, ``cupy.asarray``, ``numba.cuda.as_cuda_array`` ..., and the builtin
# ``memoryview``).  Never a removed API, an FFI word or ``numba.cuda.jit``: those are findings
# (or kernels) whatever their arguments.
CALL_SINKS = frozenset({"from_dlpack", "asarray", "asanyarray", "ascontiguousarray", "array", "as_tensor",
                        "tensor", "frombuffer", "as_cuda_array", "to_device", "from_jax", "memoryview"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def exports_only_parameters(masker, callers=frozenset()) -> bool:
    """Whether the :class:`~.masking.Masker` ``masker`` (of the whole text, ``min_lines``
    0) shows that the file can make no finding by itself (see the module docstring).
    ``callers`` are the names of :meth:`~.run.Session.callers`.  Never raises for a text
    ``ast`` reads; False where the masking could not read it exactly."""
    try:
        return masker._exactly(_proved, masker, frozenset(callers))
    except (RecursionError, MemoryError):
        return False


def _proved(m, callers: frozenset) -> bool:
    if not getattr(m, "spelled", True) or not (m.usable and m.exact) or not m.interesting:
        return False        # nothing spelled (holds_no_finding's case) or not read exactly
    if "donate" in "".join(m.chunks):
        return False
    rx = m._names_re(callers) if callers else None
    if rx is not None and any(m._uses_any(i, callers, rx) for i, imp in enumerate(m.imports) if not imp):
        return False
    words = frozenset(m.prefilter.standalone) | frozenset(m.aliases) | frozenset().union(
        *(names for r, names in m.prefilter.pairs if r in m.roots))
    units = m.idents.units
    foreign = _foreign_words(m, units)
    for i, (kept, imp) in enumerate(zip(m.base, m.imports)):
        if not kept or imp:
            continue
        node = units[i].node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list:
            return False
        name = frozenset({node.name})
        used = m._names_re(name)       # only statements spelling the name are read
        if len(m.by_name.get(node.name, ())) != 1 or any(m._uses_any(j, name, used) for j in range(len(m.imports))):
            return False
        if not _function_exports_only_parameters(node, words, m.idents[i] & words, foreign):
            return False
    return True


def _foreign_words(m, units) -> dict:
    """``{name: words}``: module-level names bound only by top-level imports (once) of a
    module whose top package pairs none of ``words`` (``from jax._src.numpy import lax_numpy
    as jnp`` where ``torch`` spelled in a comment makes ``asarray`` a word: ``jnp.asarray`` is
    JAX's, no consumer).  A word is foreign to a name when it is only a pair's word (never a
    standalone one, nor a name an interop import binds) and the import's top package is not
    a root of a pair holding it."""
    pf = m.prefilter
    paired: dict = {}
    for r, names in pf.pairs:
        for w in names:
            paired.setdefault(w, set()).add(r)
    loose = {w for w, roots in paired.items() if w not in pf.standalone and w not in m.aliases}
    tops: dict = {}
    for i, imp in enumerate(m.imports):
        if not imp:
            continue
        for node in units[i].nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    tops.setdefault(a.asname or a.name.split(".")[0], []).append(a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                top = node.module.split(".")[0] if node.module and not node.level else None
                for a in node.names:
                    tops.setdefault(a.asname or a.name, []).append(top)
    out = {}
    for name, found in tops.items():
        if len(found) != 1 or found[0] is None or any(not m.imports[j] for j in m.by_name.get(name, ())):
            continue
        out[name] = frozenset(w for w in loose if found[0] not in paired[w])
    return out


def _root_name(e):
    """The name an attribute chain ``a.b.c`` starts from, or None."""
    while type(e) is ast.Attribute:
        e = e.value
    return e.id if type(e) is ast.Name else None


def _function_exports_only_parameters(fn, words: frozenset, spelled: frozenset, foreign=None) -> bool:
    """Whether every use of a word of ``words`` in the function ``fn`` exports only clean
    parameters (see the module docstring); ``spelled``: the words the masking saw it use,
    each of which must be met here; ``foreign``: :func:`_foreign_words`."""
    foreign = foreign or {}
    a = fn.args
    params = {p.arg: p for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    defaults = dict(zip([p.arg for p in (*a.posonlyargs, *a.args)][::-1], a.defaults[::-1]))
    defaults.update((p.arg, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)
    bound: set = set()
    called: dict = {}           # id(func node) -> the Call
    nodes = []
    stack = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs, *fn.body]
    for extra in (a.vararg, a.kwarg, fn.returns, *a.defaults, *[d for d in a.kw_defaults if d is not None]):
        if extra is not None:
            stack.append(extra)
    while stack:
        n = stack.pop()
        if isinstance(n, _SCOPES):
            return False
        nodes.append(n)
        t = type(n)
        if t is ast.Name and not isinstance(n.ctx, ast.Load):
            bound.add(n.id)
        elif t is ast.Global or t is ast.Nonlocal:
            bound.update(n.names)
        elif t is ast.ExceptHandler and n.name:
            bound.add(n.name)
        elif t is ast.alias:
            bound.add(n.asname or n.name.split(".")[0])
        elif t in (ast.MatchAs, ast.MatchStar) and n.name:
            bound.add(n.name)
        elif t is ast.MatchMapping and n.rest:
            bound.add(n.rest)
        elif t is ast.Call:
            called[id(n.func)] = n
        stack.extend(ast.iter_child_nodes(n))
    clean = {name for name, p in params.items()
             if name not in bound and p.annotation is None
             and (name not in defaults or isinstance(defaults[name], ast.Constant))}

    def is_clean(e) -> bool:
        return (type(e) is ast.Name and e.id in clean) or type(e) is ast.Constant

    met: set = set()
    for n in nodes:
        t = type(n)
        if t is ast.Attribute and n.attr in words:
            met.add(n.attr)
            root = _root_name(n.value)
            if root is not None and root not in bound and root not in params and n.attr in foreign.get(root, ()):
                continue        # another library's function of that name (jnp.asarray)
            if n.attr in ATTRIBUTE_SINKS:
                if not (type(n.value) is ast.Name and n.value.id in clean):
                    return False
            elif n.attr not in CALL_SINKS or not _clean_call(called.get(id(n)), is_clean):
                return False
        elif t is ast.Name and n.id in words:
            met.add(n.id)
            if not (isinstance(n.ctx, ast.Load) and n.id in CALL_SINKS and _clean_call(called.get(id(n)), is_clean)):
                return False
        elif t is ast.keyword and n.arg in words:
            return False
        elif t is ast.Call and type(n.func) is ast.Name and n.func.id in ("getattr", "hasattr", "setattr", "delattr") \
                and len(n.args) >= 2 and type(n.args[1]) is ast.Constant and n.args[1].value in words:
            if n.func.id != "hasattr":
                return False
            met.add(n.args[1].value)    # ``hasattr(x, "__dlpack__")`` exports nothing
    return spelled <= met


def _clean_call(call, is_clean) -> bool:
    """Whether ``call`` (an ``ast.Call`` or None) passes only clean parameters and constants."""
    if call is None:
        return False
    return all(is_clean(x) for x in call.args) and all(k.arg is not None and is_clean(k.value)
                                                       for k in call.keywords)
