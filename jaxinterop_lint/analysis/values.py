"""The abstract values of the provenance analysis.

A :class:`Value` says what the analysis knows of a Python value at one program point: whether
it may be a multi-device ``jax.Array`` (and where that came from), which parts of the
enclosing function's parameters it depends on (for summaries), what other interesting thing
it is (a qualified name, a sharding, a device, a wrapped function, an FFI buffer, ...), and
the values of its *parts*: the elements of a tuple or list of known length (``elements``),
entries and attributes by constant key (``parts``) and the join of everything stored at
unknown positions (``rest``).  A part keeps its own provenance: a safe part next to a
multi-device one stays safe.  Unknown is not multi-device: a finding needs a known source
(design.md).

Part keys are strings: ``".name"`` for an attribute or field, ``"[" + repr(constant)`` for an
entry or element read with a constant subscript, :data:`ANY` for "some element" of an
iteration, :data:`ITEM` for an entry read with a subscript that is not a constant.  A *path* is a tuple of keys; parameter dependences are
``(parameter index, path)`` pairs, so a summary says which part of a parameter reaches a sink.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Optional

# Kinds of values that are not plain arrays.
UNKNOWN = "unknown"
ARRAY = "array"          # a JAX array (or pytree of them): see ``multi`` / ``deps``
SAFE = "safe"            # known single-device or host value
FOREIGN = "foreign"      # a NumPy / torch / CuPy / ... object: never a JAX array
QNAME = "qname"          # a module or module attribute: ``qname`` holds its qualified name
SHARDING = "sharding"    # a placement spanning several devices (NamedSharding, P(...))
DEVICE = "device"        # a placement on one device
DEVICE_LIST = "device-list"
SAFE_LIST = "safe-list"  # e.g. ``x.addressable_shards``: every element is single-device
FUNC = "func"            # something callable that the analysis understands: see ``func``
KERNEL = "kernel"        # a ``@numba.cuda.jit`` kernel
LAUNCHER = "launcher"    # ``kernel[grid, block]``
FFI_BUFFER = "ffi-buffer"
CAPSULE = "capsule"      # a DLPack capsule
INSTANCE = "instance"    # an instance of a class of this module: ``cls`` holds it
CLASS = "class"
DEFERRED = "deferred"      # an instance of a deferred project class (analysis/deferred.py): ``qname`` is the class
MESH = "mesh"            # a jax.sharding.Mesh: ``devices`` holds the shape of its device array

ANY = "*"                # the key of "some element" of an iteration (a dict's keys)
ITEM = "[*"              # the key of an entry or element read with a subscript that is not constant
ANY_ATTR = ".*"          # the key of an attribute read by a name that is not constant (``getattr(obj, name)``)
MAX_PATH = 4             # parameter paths longer than this are cut (reads of the prefix are joins)
MAX_DEPTH = 5            # structures nested deeper than this keep only their joined summary
MAX_PARTS = 48           # keyed parts kept per value; more fold into ``rest``
MAX_ELEMENTS = 64        # elements of a known-length sequence; a longer one keeps only ``rest``
MAX_OTHERS = 8           # alternative callables kept by a joined function value


# The part key suffix of what a method called with no argument returns (``".get()"``: the
# result of ``holder.get()``, a part of the parameter ``holder``: instantiate.argument_part).
CALLED = "()"


def called_key(indexes=()) -> str:
    """The part key of what a parameter returns when called with the callee's parameters
    ``indexes`` as its positional arguments (``fn(x)`` in ``def then(conv, fn, x)``:
    ``"(2)"``); :data:`CALLED` with none."""
    return "(" + ",".join(map(str, indexes)) + ")"


def called_with_key(index: int) -> str:
    """The part key of what a parameter returns when called with the values the callee
    recorded as :attr:`~.records.Summary.called` ``[index]`` (``model_fn(batch)`` with
    ``batch`` a value of the callee's own, not a parameter: ``"(@0)"``)."""
    return f"(@{index})"


def called_with(key: str) -> Optional[int]:
    """The index of a :func:`called_with_key`, or None."""
    if key[:2] != "(@" or key[-1:] != ")" or not key[2:-1].isdigit():
        return None
    return int(key[2:-1])


def method_called_with(key: str) -> Optional[tuple]:
    """``(method name, index)`` of the part key of what a parameter's method returns, called
    with the values the callee recorded as :attr:`~.records.Summary.called` ``[index]``
    (``placer.put(x)``: ``".put(@0)"``), or None."""
    at = key.find("(@")
    index = called_with(key[at:]) if key[:1] == "." and at > 1 else None
    return (key[1:at], index) if index is not None and key[1:at].isidentifier() else None


def is_called(key: str) -> bool:
    """Whether ``key`` is the result of calling what it extends (a method's ``.get()`` or
    :func:`method_called_with`, a parameter's :func:`called_key` or :func:`called_with_key`)."""
    return key.endswith(CALLED) or called_args(key) is not None or called_with(key) is not None \
        or method_called_with(key) is not None


def called_args(key: str) -> Optional[tuple]:
    """The parameter indexes of a :func:`called_key` (``"(2)"`` -> ``(2,)``, ``"()"`` ->
    ``()``), or None when ``key`` is no such key (``".get()"`` is a method's)."""
    if key[:1] != "(" or key[-1:] != ")":
        return None
    inner = key[1:-1]
    if not inner:
        return ()
    parts = inner.split(",")
    return tuple(int(x) for x in parts) if all(x.isdigit() for x in parts) else None


def attr_key(name: str) -> str:
    """The part key of attribute or field ``name``."""
    return "." + name


def item_key(constant) -> str:
    """The part key of a constant subscript (``d["w"]``, ``t[0]``)."""
    return "[" + repr(constant)


def member(cls, name: str) -> "Value":
    """The member ``name`` of the enum class ``cls`` (a project class with a library enum
    base: ``apis.ENUM_BASES``): an instance of it that knows which member it is (its
    ``qname``, ``Placement.LOCAL``), so that a dict keyed by members is read by member."""
    return Value(kind=INSTANCE, cls=cls, qname=f"{cls.name}.{name}")


def member_key(value: "Value") -> Optional[str]:
    """The part key of ``value`` used as a subscript or dict key when it is one known enum
    member (:func:`member`): ``"[<Placement.LOCAL>"``, which no constant's key spells; else None."""
    if value.kind == INSTANCE and value.qname and getattr(value.cls, "enum", False) and not value.others:
        return "[<" + value.qname + ">"
    return None


def keyword_of(key: str) -> Optional[str]:
    """The string of an item key written for a string constant that can be a keyword
    argument's name (``"['device'"`` -> ``"device"``), else None: :func:`item_key`'s inverse."""
    if len(key) > 3 and key[0] == "[" and key[1] in "'\"" and key[-1] == key[1]:
        name = key[2:-1]
        return name if name.isidentifier() else None
    return None


def index_of(key: str) -> Optional[int]:
    """The integer of an item key written for an int constant (``"[0"``, ``"[-1"``), else None."""
    if len(key) > 1 and key[0] == "[" and (key[1:].isdigit() or (key[1] == "-" and key[2:].isdigit())):
        return int(key[1:])
    return None


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a multi-device value came from: a description, the node and the
    :class:`~jaxinterop_lint.analysis.module.ModuleAnalysis` that owns it (resolved to a path
    and line only when a finding needs it), the enclosing function, and the steps since, as
    ``(description, node, owner)`` triples."""

    description: str
    node: Any = None
    owner: Any = None
    function: str = ""
    steps: tuple = ()

    def step(self, description: str, node: Any, owner: Any = None) -> "Origin":
        """Return this origin with one more step (at most 12 are kept)."""
        if len(self.steps) >= 12:
            return self
        return Origin(self.description, self.node, self.owner, self.function,
                      self.steps + ((description, node, owner),))


@dataclass(frozen=True)
class FuncInfo:
    """A callable the analysis understands.

    ``local`` is the :class:`~jaxinterop_lint.analysis.module.FunctionDef` record of a def or
    lambda of this module (None for library functions); ``qname`` a library function's
    qualified name; ``source`` an :class:`Origin` when every call returns a multi-device value
    (pjit, shard_map, pmap, jit with shardings); ``propagate`` when a call returns a
    multi-device value exactly when an argument is one (plain jit); ``donate`` the donated
    positions and ``donate_names`` the donated parameter names; ``bound`` the leading
    arguments already bound (``functools.partial``, a bound method), each a value or a
    ``(value, node)`` pair; ``kwargs`` the keyword arguments bound by ``functools.partial``
    (name, (value, node)), of a library function or of one of this project.
    """

    local: Any = None
    qname: Optional[str] = None
    source: Optional[Origin] = None
    propagate: bool = False
    donate: frozenset = frozenset()
    donate_names: frozenset = frozenset()
    bound: tuple = ()
    kwargs: tuple = ()
    partial_of: Optional[str] = None


@dataclass(slots=True, unsafe_hash=True)
class Value:
    """An abstract value.  See the module docstring; every field has a neutral default.
    Values are never changed once made (:func:`evolve` makes a changed copy); the class is
    not frozen only because a frozen dataclass of this many fields is several times slower
    to create, and the walk creates values at every expression.

    ``ref`` is ``(parameter, path)`` when the value *is* that part of a parameter (not a
    computation on it), so that a summary's returned value can be the caller's argument
    itself, structure included.  ``guard`` is a stored device-count test ``(true refinements,
    false refinements, test node, snapshot)`` and ``count_of`` ``(key, snapshot)`` a stored
    device count (see :mod:`.conditions`); ``placed_by`` ``((parameter, path), description,
    node, function)`` a placement on a sharding that a parameter supplies; ``others`` the
    further callables of a joined function or class value; ``container`` what built a
    structured value (``"list"``, ``"tuple"``, ``"dict"``, ``"set"``, ``"iter"``: iterating a
    dict gives its keys); ``chosen`` which constant keys of a dict a parameter's key picks
    each callable with (:meth:`~.structures.StructureMixin.chosen_entry`).
    """

    kind: str = UNKNOWN
    multi: Optional[Origin] = None
    deps: frozenset = frozenset()
    qname: Optional[str] = None
    func: Optional[FuncInfo] = None
    desc: Optional[str] = None          # for shardings: the constructor's name
    donated: Any = None                 # the call node that donated this value
    false_guard: Any = None             # the is_fully_* test node guarding it (JXI006)
    param_array: Optional[str] = None   # the annotated parameter's name (JXI009)
    elements: Optional[tuple] = None    # a sequence of known length, element by element
    parts: Optional[tuple] = None       # ((key, Value), ...): entries and attributes by constant key
    rest: Optional["Value"] = None      # the join of the parts at unknown keys or positions
    ref: Optional[tuple] = None
    guard: Optional[tuple] = field(default=None, compare=False)
    count_of: Optional[tuple] = field(default=None, compare=False)
    placed_by: Optional[tuple] = None
    others: tuple = ()
    container: Optional[str] = None     # "list", "tuple", "dict", "set", "iter" for built containers
    cls: Any = None
    removed_capsule: bool = False
    depth: int = field(default=0, compare=False)
    # DEVICE_LIST / MESH / SHARDING: the shape of the device array (a tuple of ints, None for
    # an unknown dimension), or None when nothing is known (analysis/placements.py)
    devices: Optional[tuple] = None
    via_import: bool = field(default=False, compare=False)
    # a callable read from a dict by a parameter's key (``CONVERTERS[fmt]``): ``(parameter,
    # (the keys of each alternative: this value's own first, then each of ``others``))``
    chosen: Optional[tuple] = field(default=None, compare=False)

    @property
    def is_multi(self) -> bool:
        """True when the value may be a multi-device JAX array (known source)."""
        return self.multi is not None

    @property
    def structured(self) -> bool:
        """True when the value knows some of its parts."""
        return self.elements is not None or self.parts is not None or self.rest is not None


_KEEP = object()


def _make_evolve():
    names = [f.name for f in fields(Value)]
    params = ", ".join(f"{n}=_KEEP" for n in names)
    body = ", ".join(f"{n}=v.{n} if {n} is _KEEP else {n}" for n in names)
    namespace = {"Value": Value, "_KEEP": _KEEP}
    exec(f"def evolve(v, *, {params}):\n    return Value({body})\n", namespace)  # noqa: S102
    return namespace["evolve"]


evolve = _make_evolve()
evolve.__doc__ = """``evolve(value, **changes)``: a copy of ``value`` with some fields changed (what
``dataclasses.replace`` does, generated once for the fields of :class:`Value` because the walk
calls it at every binding)."""

UNKNOWN_VALUE = Value()
SAFE_VALUE = Value(kind=SAFE)
FOREIGN_VALUE = Value(kind=FOREIGN)


def multi(origin: Origin) -> Value:
    """A multi-device array value coming from ``origin``."""
    return Value(kind=ARRAY, multi=origin)


_QNAMES: dict = {}


def qname(name: str, via_import: bool = False) -> Value:
    """A reference to the qualified name ``name`` (values are shared: they never change)."""
    key = (name, via_import)
    value = _QNAMES.get(key)
    if value is None:
        value = Value(kind=QNAME, qname=name, via_import=via_import)
        if len(_QNAMES) < 50_000:
            _QNAMES[key] = value
    return value


def param(index: int, name: str, annotated_array: bool = False) -> Value:
    """The symbolic value of parameter ``index`` (``name``) at the start of its function."""
    where = ((index, ()),)
    return Value(kind=ARRAY, deps=frozenset(where), ref=where[0], param_array=name if annotated_array else None)


def carries_multi(v: Optional[Value], deps: bool = True, depth: int = 0, not_after: frozenset = frozenset()) -> bool:
    """Whether ``v`` is, or holds in a part or element, a multi-device array (a known
    source), or, with ``deps``, depends on a parameter of the function analysed (a caller
    may pass one); a dependence on a part whose path ends in a key of ``not_after`` (a
    parameter's ``.device``: a placement, not an array) does not count."""
    if v is None or depth > 4:
        return False
    if v.multi is not None or (deps and v.deps and (
            not not_after or any(not path or path[-1] not in not_after for _, path in v.deps))):
        return True
    if v.rest is not None and carries_multi(v.rest, deps, depth + 1, not_after):
        return True
    return any(carries_multi(e, deps, depth + 1, not_after) for e in v.elements or ()) or \
        any(carries_multi(p, deps, depth + 1, not_after) for _, p in v.parts or ())


def _interesting(v: Optional[Value]) -> bool:
    return v is not None and (v.multi is not None or bool(v.deps) or v.donated is not None
                              or v.false_guard is not None or v.placed_by is not None)


def written(old, new):
    """What a name holds once code wrote ``new`` into it after it held ``old``: ``new`` over
    a placeholder (``DATA_SHARDING = None`` until ``setup()`` sets it, a module global; a
    class attribute ``sharding = None`` that a classmethod sets: a join with ``None`` would
    lose the sharding), else the join of both; ``old`` when nothing was written."""
    if new is None:
        return old
    if old is None or old.kind == QNAME and old.qname == "builtins.None" \
            or old.kind in (SAFE, UNKNOWN) and not old.structured and old.multi is None and not old.deps:
        return new
    return join(old, new)


def join(a: Optional[Value], b: Optional[Value]) -> Optional[Value]:
    """The value on either of two paths (None: the path does not reach here).

    Multi-device wins (keeping the first origin); parameter dependences are united; a
    donation, a false guard or an annotated parameter on either path is kept; parts are
    joined part by part (a part one side lacks reads as that side's unknown element).  Two
    values of different kinds that are not arrays join to unknown, except that an instance
    joined with an unstructured value stays an instance, and two different callables of the
    same kind keep both (``others``), as does a function or library name joined with a
    value of another kind that is no container and not multi-device (a default or a
    parameter: ``fn = hook or torch.from_dlpack``).
    """
    if a is None:
        return b
    if b is None or a is b:
        return a
    if a.kind == b.kind and a.multi is b.multi and a.deps == b.deps and a == b:
        return a
    multi_origin = a.multi or b.multi
    deps = a.deps | b.deps if b.deps else a.deps
    others = ()
    if a.kind == b.kind and a.kind not in (ARRAY, UNKNOWN, SAFE):
        kind = a.kind
        base = a if a.multi or not b.multi else b
        if kind in (FUNC, CLASS) and (a.func != b.func or a.cls is not b.cls) or kind == QNAME and a.qname != b.qname \
                or kind == INSTANCE and a.cls is not b.cls and a.cls is not None and b.cls is not None:
            first, second = (a, b) if base is a else (b, a)
            others = _alternatives(first, second)
    elif {a.kind, b.kind} == {SHARDING, DEVICE}:
        # a placement that may be a sharding (``target = dev if debug else sharding``) may put
        # an array on several devices: the sharding stands for both
        kind = SHARDING
        base = a if a.kind == SHARDING else b
    elif a.kind == INSTANCE and not b.structured and b.kind in (SAFE, UNKNOWN, ARRAY):
        kind, base = INSTANCE, a
    elif b.kind == INSTANCE and not a.structured and a.kind in (SAFE, UNKNOWN, ARRAY):
        kind, base = INSTANCE, b
    elif a.kind in _CALLABLE and b.kind in _CALLABLE and multi_origin is None and not deps \
            and not a.structured and not b.structured and "builtins.None" not in (a.qname, b.qname):
        # a library function and a project function (``for step in (jnp.tanh, shard)``):
        # a call of the joined value may run either (calls.apply runs each of ``others``)
        kind, base = a.kind, a
        others = _alternatives(a, b)
    elif {a.kind, b.kind} == {SHARDING, ARRAY} and deps and multi_origin is None \
            and not a.structured and not b.structured:
        # a placement that is a parameter or a sharding the function makes (``if sharding is
        # None: sharding = rows()``, ``sharding or rows()``): calls.placed places on both
        kind = SHARDING
        base = a if a.kind == SHARDING else b
    elif multi_origin is not None or deps:
        kind, base = ARRAY, Value(kind=ARRAY)
    elif {a.kind, b.kind} <= {SAFE, FOREIGN}:
        kind, base = SAFE, SAFE_VALUE
    else:
        kind, base = UNKNOWN, UNKNOWN_VALUE
    if not others and multi_origin is None and (a.kind in _CALLABLE) != (b.kind in _CALLABLE) \
            and not a.structured and not b.structured:
        # ``hook if hook is not None else torch.from_dlpack``: the function is still one of
        # what a call of the joined value may run (calls.apply runs each of ``others``)
        call = a if a.kind in _CALLABLE else b
        others = (evolve(call, others=()),) + call.others[:MAX_OTHERS - 1]
    elif not others and (a.others or b.others) and kind in (SAFE, UNKNOWN, ARRAY):
        # the functions a value that is none may run, from either path (a handler list's
        # entries: ``instantiate`` hands them on as ``others``)
        others = tuple(dict.fromkeys(a.others + b.others))[:MAX_OTHERS]
    elements = parts = rest = None
    depth = 0
    if a.structured or b.structured:
        elements, parts, rest = _join_structure(a, b)
        depth = max(a.depth, b.depth)
    return Value(
        kind=kind, multi=multi_origin, deps=deps, func=base.func,
        qname=base.qname if kind != INSTANCE or a.qname == b.qname else None,     # (enum members)
        desc=base.desc if a.desc == b.desc or kind not in (MESH, DEVICE_LIST) else None,
        donated=a.donated or b.donated, false_guard=a.false_guard or b.false_guard,
        param_array=a.param_array or b.param_array, elements=elements, parts=parts, rest=rest,
        ref=a.ref if a.ref == b.ref else None,
        guard=a.guard if a.guard is not None and a.guard == b.guard else None,
        count_of=a.count_of if a.count_of is not None and a.count_of == b.count_of else None,
        placed_by=a.placed_by if a.placed_by == b.placed_by else (a.placed_by or b.placed_by),
        others=others, container=_container(a, b), cls=base.cls, removed_capsule=a.removed_capsule and b.removed_capsule, depth=depth,
        devices=a.devices if a.devices == b.devices else None,
    )


_CALLABLE = frozenset({"qname", "func"})


def _container(a: Value, b: Value) -> Optional[str]:
    if a.container == b.container:
        return a.container
    if not b.structured:
        return a.container
    if not a.structured:
        return b.container
    return None


def _alternatives(first: Value, second: Value) -> tuple:
    out = list(first.others)
    plain = evolve(first, others=())
    for v in (evolve(second, others=()),) + second.others:
        if v != plain and v not in out and len(out) < MAX_OTHERS:
            out.append(v)
    return tuple(out)


def _join_structure(a: Value, b: Value):
    """``(elements, parts, rest)`` of the join of ``a`` and ``b``, one of them structured."""
    if not b.structured or not a.structured:
        s, u = (a, b) if a.structured else (b, a)
        # the other's unknown entry: of a dict, read by key (iterating one gives its keys)
        g = extend(u, ITEM) if s.container == "dict" and not u.structured else generic(u)
        if not _interesting(g):
            return s.elements, s.parts, s.rest
        elements = None if s.elements is None else tuple(join(e, g) for e in s.elements)
        parts = None if s.parts is None else tuple((k, join(p, g)) for k, p in s.parts)
        return elements, parts, join(s.rest, g)
    rest = join(a.rest, b.rest)
    elements = None
    if a.elements is not None and b.elements is not None and len(a.elements) == len(b.elements):
        elements = tuple(join(x, y) for x, y in zip(a.elements, b.elements))
    else:
        for e in (a.elements or ()) + (b.elements or ()):
            rest = join(rest, e)
    parts = None
    if a.parts is not None or b.parts is not None:
        if a.parts is None or b.parts is None:
            parts = a.parts if b.parts is None else b.parts
        else:
            merged = dict(a.parts)
            for k, p in b.parts:
                merged[k] = join(merged.get(k), p)
            parts = tuple(merged.items())
    return elements, parts, rest


def join_all(values) -> Value:
    """Join a sequence of values; the empty join is the safe value (a constant)."""
    out = None
    for v in values:
        out = join(out, v)
    return out if out is not None else SAFE_VALUE


def as_array(value: Value) -> Value:
    """The array computed from ``value`` (``y + 1``, ``y.sum()``, ``jnp.f(y)``): it keeps
    the multi-device origin and parameter dependences, and drops everything else."""
    if value.multi is None and not value.deps and not value.param_array and value.donated is None \
            and value.placed_by is None:
        if value.kind in (SAFE, FOREIGN):
            return SAFE_VALUE
        return UNKNOWN_VALUE
    if value.kind == ARRAY and value.ref is None and not value.structured and value.placed_by is None \
            and value.false_guard is None and value.donated is None and value.func is None \
            and value.guard is None and value.count_of is None:
        return value
    # (a placement on a parameter's sharding is kept: ``device_put(x, sh) * 2`` is on ``sh``)
    return Value(kind=ARRAY, multi=value.multi, deps=value.deps, param_array=value.param_array,
                 placed_by=value.placed_by)


def extend(value: Value, key: str) -> Value:
    """The part ``key`` of an unstructured value: a host object's parts are host objects, a
    device list's elements devices; an array's part is an array whose parameter paths grow
    by ``key`` (so a summary knows which part of a parameter is read)."""
    kind = value.kind
    if kind in (SAFE, FOREIGN):
        return value if not value.structured else SAFE_VALUE
    if kind == DEVICE_LIST:
        return Value(kind=DEVICE)
    if kind == SAFE_LIST:
        return SAFE_VALUE
    if value.multi is None and not value.deps and not value.param_array and value.placed_by is None:
        return UNKNOWN_VALUE
    deps = frozenset((p, path + (key,)) if len(path) < MAX_PATH else (p, path) for p, path in value.deps)
    ref = None
    if value.ref is not None and len(value.ref[1]) < MAX_PATH:
        ref = (value.ref[0], value.ref[1] + (key,))
    # a leaf of a tree placed on a parameter's sharding is on it too (``device_put(batch, sh)["x"]``)
    return Value(kind=ARRAY, multi=value.multi, deps=deps, ref=ref, param_array=value.param_array,
                 placed_by=value.placed_by)


def generic(value: Value) -> Optional[Value]:
    """What a part of ``value`` that it does not list reads as: its ``rest`` when it is
    structured (None: nothing else), otherwise its unknown element (:func:`extend` with
    :data:`ANY`)."""
    if value.structured:
        return value.rest
    return extend(value, ANY)


def fixpoint_key(value: Optional[Value]):
    """A comparable summary of a value for loop and summary fixpoints (ignores origins)."""
    if value is None:
        return None
    if not value.structured and not value.others:
        return (value.kind, value.multi is not None, value.deps, value.qname, value.donated is not None,
                value.false_guard is not None, value.param_array, value.ref, value.placed_by is not None,
                value.devices)
    return (value.kind, value.multi is not None, value.deps, value.qname, value.donated is not None,
            value.false_guard is not None, value.param_array, value.ref, value.placed_by is not None,
            value.devices,
            None if value.elements is None else tuple(fixpoint_key(e) for e in value.elements),
            None if value.parts is None else tuple((k, fixpoint_key(p)) for k, p in value.parts),
            fixpoint_key(value.rest), len(value.others))
