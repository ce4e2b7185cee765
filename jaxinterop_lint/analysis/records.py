"""The records of one module's analysis, as plain data: function summaries, classes and
functions (with their analysis state).  Below the walk and the module driver
(:mod:`.module`), which both use them.  Importing it does not import libcst: a warm run
thaws stored summaries into these records without it (only :func:`function_record`, which
reads a libcst node, needs it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .values import Value, fixpoint_key


@dataclass
class Summary:
    """What a call of a function does, in terms of its parameters.

    ``ret`` is the joined returned value (None: never returns normally); ``exports`` the
    parts of parameters that reach a sink unguarded (:class:`~.events.ExportEffect`);
    ``donates`` parameters donated to a jitted call; ``yields`` the joined value the function
    yields when it is a generator (None otherwise: iterating a call's result gives it);
    ``fields`` for an ``__init__``, the values it leaves in ``self.<name>`` as
    ``((name, value), ...)`` in terms of its parameters; ``globals_`` the same for the
    names of its module it writes (:mod:`.module_state`), and ``cells`` for the names of its
    enclosing function it rebinds with ``nonlocal``; ``calls`` the methods it calls on
    a parameter (:mod:`.param_calls`).
    ``fills`` what it stores into a parameter's container or object (``d["x"] = v``,
    ``lst.append(v)``, ``obj.attr = v``): ``((parameter, its value where the function
    returns), ...)``, held by the caller's argument afterwards
    (:meth:`~.invoke.InvokeMixin.fill_arguments`).
    ``called`` the positional values a parameter is called with where they are not all
    whole parameters (``model_fn(batch)``), by :func:`~.values.called_with_key` index: the
    caller calls its function with them (:meth:`~.instantiate.InstantiateMixin.argument_part`).
    """

    ret: Optional[Value] = None
    exports: tuple = ()
    donates: frozenset = frozenset()
    yields: Optional[Value] = None
    fields: tuple = ()
    globals_: tuple = ()
    cells: tuple = ()
    calls: tuple = ()
    fills: tuple = ()
    called: tuple = ()

    def key(self):
        """Comparable form for the recursion fixpoint."""
        return (fixpoint_key(self.ret), tuple(sorted((e.param, e.path, id(e.event.node), e.placed) for e in self.exports)),
                self.donates, fixpoint_key(self.yields), tuple((n, fixpoint_key(v)) for n, v in self.fields),
                tuple((n, fixpoint_key(v)) for n, v in self.globals_),
                tuple((n, fixpoint_key(v)) for n, v in self.cells),
                tuple((p, path, attr, id(node)) for p, path, attr, _, _, node in self.calls),
                tuple((p, fixpoint_key(v)) for p, v in self.fills),
                tuple(tuple(fixpoint_key(v) for v in vs) for vs in self.called))


@dataclass(eq=False)
class ClassRecord:
    """A class of this module: its methods by name, the values its methods store on
    ``self`` (joined over all methods, filled on demand), the values its body binds
    (``statics``: class attributes), and when it is a record (a dataclass, a NamedTuple, a
    ``TrainState``...) its ``record`` rule (:class:`~jaxinterop_lint.knowledge.structures.Record`)
    and ``fields`` in order; ``call_method`` the method a call of an instance runs when the
    class defines no ``__call__`` (``forward`` of a ``torch.nn.Module``: a library base's)."""

    node: Any
    name: str
    methods: dict = field(default_factory=dict)
    writers: Optional[dict] = field(default_factory=dict)   # attribute -> [FunctionRecord]; None: not found yet
    attrs: dict = field(default_factory=dict)
    statics: dict = field(default_factory=dict)
    record: Any = None
    fields: tuple = ()
    call_method: Optional[str] = None   # the method a call of an instance runs (apis.CALL_METHODS)
    bases: tuple = ()   # the ClassRecords of its bases of this project, in order (``super()``)
    enum: bool = False  # a subclass of a library enum (apis.ENUM_BASES): its body's constants are its members
    enum_values: dict = field(default_factory=dict)    # an enum's literal member values -> member names
    thread: bool = False    # a subclass of threading.Thread (knowledge/structures.py THREAD_CLASSES): start() runs run()
    own: frozenset = frozenset()    # the names its body defines, and the inherited methods rebound to it
    supers: dict = field(default_factory=dict)  # name -> the base's method ``super().name`` runs, rebound to this class


@dataclass(eq=False)
class FunctionRecord:
    """A ``def`` or ``lambda`` of this module, with its closure and analysis state.

    ``params`` are the positional-or-keyword parameter names in order (``self`` included for
    methods), then ``*args``' name, the keyword-only ones and ``**kw``'s spelled ``"**kw"``;
    ``annotations`` their annotation nodes; ``closure`` the mapping names are looked
    up in when not local; ``ffi_shift`` the number of leading parameters before the FFI
    context when the function is a ``buffer_callback`` callback (None otherwise);
    ``defaults`` the default values that place or are multi-device (``device=S`` with ``S``
    a sharding), by parameter index, evaluated where the ``def`` runs
    (:meth:`~.bindings.BindingMixin.bind_defaults`).
    """

    node: Any
    name: str
    params: list
    annotations: list
    closure: Any
    cls: Optional[ClassRecord] = None
    owner: Any = None
    ffi_shift: Optional[int] = None
    summary: Optional[Summary] = None
    state: str = "new"          # new -> running -> done
    events: dict = field(default_factory=dict)
    recursive: bool = False
    is_property: bool = False
    is_classmethod: bool = False   # its first parameter is the class (``@classmethod``)
    defaults: dict = field(default_factory=dict)   # parameter index -> placement default (bind_defaults)
    context_manager: bool = False   # a @contextlib.contextmanager generator: ``with f() as x`` gets its yield
    self_writes: Optional[frozenset] = None   # attributes it stores on self (classes.self_writes_of)
    self_reads: Optional[frozenset] = None    # attributes it reads or calls on self (classes.self_reads)
    rebound: bool = False       # an inherited method copied for a subclass (classes.ClassMixin.rebound)
    pinned: Optional[dict] = None   # parameter name -> the constant it is analysed with (pinned.py)
    tested: Optional[frozenset] = None  # parameters its tests compare with constants (pinned.tested_params)
    defaulted: frozenset = frozenset()  # those of them it keeps with ``p = p or default`` (the same)
    parent: Any = None          # the record of the function whose body defines it (None: a module's def)
    cells: dict = field(default_factory=dict)  # its names that nested functions rebind with ``nonlocal`` -> what they leave
    star: Optional[int] = None  # the index of its ``*args`` parameter (bound to the extra positional arguments)


def default_node(rec, index: int):
    """The default expression of parameter ``index`` of the project function ``rec`` (its
    libcst node), or None (none, or a frozen record of the cache, which keeps no nodes)."""
    node = getattr(rec, "node", None)
    if not hasattr(node, "params") or not hasattr(node.params, "params"):
        return None
    plist = param_nodes(node)
    return plist[index].default if index < len(plist) else None


def param_nodes(node) -> list:
    """The ``cst.Param`` nodes of a ``cst.FunctionDef`` or ``cst.Lambda`` in the order of
    :attr:`FunctionRecord.params`, without ``**kw``."""
    import libcst as cst

    params_node = node.params
    plist = list(params_node.posonly_params) + list(params_node.params)
    if params_node.star_arg is not None and isinstance(params_node.star_arg, cst.Param):
        plist.append(params_node.star_arg)
    return plist + list(params_node.kwonly_params)


def function_record(node, name: str, closure, cls=None) -> FunctionRecord:
    """Make the record of a ``cst.FunctionDef`` or ``cst.Lambda``."""
    import libcst as cst

    params_node = node.params
    plist = param_nodes(node)
    names = [p.name.value for p in plist]
    annotations = [p.annotation.annotation if p.annotation is not None else None for p in plist]
    if isinstance(params_node.star_kwarg, cst.Param):
        # ``**kw`` comes last, spelled with its stars: a call binds it to the dict of the
        # keyword arguments no named parameter takes (:meth:`~.invoke.InvokeMixin.bind_args`).
        names.append("**" + params_node.star_kwarg.name.value)
        annotations.append(None)
    star = len(params_node.posonly_params) + len(params_node.params) \
        if isinstance(params_node.star_arg, cst.Param) else None
    return FunctionRecord(node=node, name=name, params=names, annotations=annotations,
                          closure=closure, cls=cls, star=star)
