"""What the analysis knows about the structures that hold arrays, as data.

Real training code keeps its arrays in records (dataclasses, NamedTuples, flax's
``TrainState``), dicts, lists and generators.  These tables say which classes are records and
how their instances are built and updated, which calls keep or rebuild a structure, and what
the container methods and iteration builtins do to parts.  Supporting a new record library
or container method is one line here; :mod:`jaxinterop_lint.analysis.structures` implements
the operations named in the values.

Operations (the values of :data:`CONTAINER_METHODS`, :data:`ITERATION_CALLS`):
``append``, ``extend``, ``insert``, ``update``, ``setdefault`` mutate the receiver;
``get``, ``pop`` read one entry; ``values``, ``items``, ``keys`` iterate a dict; ``copy`` and
``identity`` keep the structure; ``list``, ``tuple``, ``set``, ``iter``, ``sorted``,
``reversed``, ``enumerate``, ``zip``, ``next``, ``dict``, ``filter``, ``chain`` are the
iteration builtins of the same names; ``defaultdict`` an empty dict (its factory's entries
come from later stores).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Update:
    """How a record method or factory computes the fields of the instance it returns.

    ``derived`` maps a field to the names it is computed from: a field of the receiver, or a
    keyword argument written ``"=name"``; ``constants`` are fields set to host constants;
    ``keywords``: the call's other keyword arguments replace fields of the same name
    (``replace(**changes)``); ``new``: the result is a fresh instance of the class (a
    factory), not an update of the receiver.
    """

    derived: tuple = ()
    constants: tuple = ()
    keywords: bool = True
    new: bool = False


REPLACE = Update()
"""``obj.replace(**changes)`` / ``obj._replace(**changes)``: the receiver with these fields
changed (flax/struct.py ``dataclass``: ``replace = dataclasses.replace``; chex
_src/dataclass.py ``_replace``; CPython ``collections.namedtuple._replace``)."""


@dataclass(frozen=True)
class Record:
    """A class whose instances are records: one field per annotated class attribute, set by
    the generated ``__init__`` (positionally in order, or by keyword).

    ``fields`` are fields the class has before its own annotations (a library class's);
    ``tuple_like``: instances are tuples too (NamedTuple: indexable, unpackable);
    ``methods`` and ``factories`` (class methods) map names to :class:`Update` rules.
    """

    fields: tuple = ()
    tuple_like: bool = False
    methods: dict = field(default_factory=dict)
    factories: dict = field(default_factory=dict)


_DATACLASS = Record()
_WITH_REPLACE = Record(methods={"replace": REPLACE})

DATACLASS_DECORATORS: dict[str, Record] = {
    # CPython's dataclasses: fields from the annotations, no replace method.
    "dataclasses.dataclass": _DATACLASS,
    # flax/struct.py: ``dataclass(clz)`` = dataclasses.dataclass(frozen=True) + ``replace``.
    "flax.struct.dataclass": _WITH_REPLACE,
    # chex/_src/dataclass.py: ``_Dataclass.__call__`` wraps dataclasses.dataclass, sets replace.
    "chex.dataclass": _WITH_REPLACE,
    "chex._src.dataclass.dataclass": _WITH_REPLACE,
    # jax/_src/tree_util.py: register_dataclass registers an existing dataclass as a pytree.
    "jax.tree_util.register_dataclass": _DATACLASS,
    # attrs: annotation-based classes (``attrs.define``) get an __init__ per field and evolve().
    "attrs.define": _DATACLASS,
    "attrs.frozen": _DATACLASS,
    "attr.define": _DATACLASS,
    "attr.frozen": _DATACLASS,
    "pydantic.dataclasses.dataclass": _DATACLASS,
}
"""Class decorators (called or not: ``@dataclass`` and ``@dataclass(frozen=True)``) that
make a class a :class:`Record`."""

TRAIN_STATE = Record(
    fields=("step", "apply_fn", "params", "tx", "opt_state"),
    methods={
        "replace": REPLACE,
        # apply_gradients(self, *, grads, **kwargs): step + 1, optax updates of params and
        # opt_state from grads, then replace(**kwargs).
        "apply_gradients": Update(derived=(("step", ("step",)), ("params", ("params", "=grads")),
                                           ("opt_state", ("opt_state", "=grads")))),
    },
    factories={
        # create(cls, *, apply_fn, params, tx, **kwargs): step=0, opt_state=tx.init(params).
        "create": Update(derived=(("opt_state", ("=params",)),), constants=("step",), new=True),
    },
)
"""``flax.training.train_state.TrainState`` (flax/training/train_state.py, flax 0.8-0.10: a
``struct.PyTreeNode`` with fields step, apply_fn, params, tx, opt_state)."""

RECORD_BASES: dict[str, Record] = {
    # typing.NamedTuple subclasses: fields from the annotations; tuples; ``_replace``.
    "typing.NamedTuple": Record(tuple_like=True, methods={"_replace": REPLACE}),
    # flax/struct.py: ``PyTreeNode.__init_subclass__`` calls ``dataclass(cls)``.
    "flax.struct.PyTreeNode": _WITH_REPLACE,
    # equinox/_module.py: every ``eqx.Module`` subclass is turned into a dataclass.
    "equinox.Module": _DATACLASS,
    "flax.training.train_state.TrainState": TRAIN_STATE,
}
"""Base classes whose subclasses are records (a subclass adds its own annotated fields)."""

RECORD_METHODS: dict[str, Update] = {
    name: rule
    for table in (DATACLASS_DECORATORS, RECORD_BASES)
    for record in table.values()
    for name, rule in record.methods.items()
}
"""The record methods of the tables by name: a function that calls ``state.replace(...)`` or
``state.apply_gradients(...)`` on its parameter updates whatever record its caller passes."""

LIBRARY_RECORDS: dict[str, Record] = {
    "flax.training.train_state.TrainState": TRAIN_STATE,
}
"""Library classes that are records themselves (constructed, or built by a factory, in user
code)."""

RECORD_DICT_METHODS = frozenset({"_asdict"})
"""Methods of a record that give a dict of its fields, each entry the field itself
(CPython collections/__init__.py ``namedtuple._asdict``: ``{name: getattr(self, name)}``):
``weighted_ce(**batch._asdict())`` gives ``labels=`` the field ``batch.labels``."""

REPLACE_FUNCTIONS = frozenset({
    "dataclasses.replace",   # CPython: a copy with the given fields changed
    "copy.replace",          # CPython 3.13: the same for any class with __replace__
    "attrs.evolve",
    "attr.evolve",
})
"""``f(obj, **changes)``: ``obj`` with these fields changed."""

IDENTITY_CALLS = frozenset({
    "copy.copy", "copy.deepcopy",
    # flax/core/frozen_dict.py: FrozenDict wraps a dict; freeze/unfreeze convert, same entries.
    "flax.core.freeze", "flax.core.unfreeze", "flax.core.FrozenDict",
    "flax.core.frozen_dict.freeze", "flax.core.frozen_dict.unfreeze", "flax.core.frozen_dict.FrozenDict",
})
"""Calls whose result has the parts of their first argument."""

NAMESPACE_CALLS = frozenset({"types.SimpleNamespace", "argparse.Namespace"})
"""Calls that build an object whose attributes are their keyword arguments (CPython
``types.SimpleNamespace(**kwargs)``, ``argparse.Namespace(**kwargs)``): ``state.params``
reads what ``params=`` gave."""

FIELD_CALLS: dict[str, tuple[str, ...]] = {
    # jax/_src/api.py ShapeDtypeStruct(shape, dtype, *, sharding=None, weak_type=False):
    # an abstract array whose ``.sharding`` is the one given (orbax restores onto it)
    "jax.ShapeDtypeStruct": ("shape", "dtype", "sharding", "weak_type"),
}
"""Library calls that build an object whose attributes are their arguments, positional
ones by these names in order, keyword ones by their own: ``ref.sharding`` of
``jax.ShapeDtypeStruct(shape, dtype, sharding=s)`` is ``s``."""

OPTIMIZER_MODULES = ("optax.",)
"""Module prefixes whose calls on no array build a gradient transformation (optax/_src/
base.py ``GradientTransformation(init, update)``: ``optax.adam(1e-3)``, ``optax.chain(...)``,
``optax.inject_hyperparams(optax.sgd)(learning_rate=lr)``).  Its ``init(params)`` is a state
of arrays made like the parameters (``optax.tree.zeros_like``: the moments of
``scale_by_adam``), placed as they are; ``update(updates, state, params)`` gives updates like
the updates given and a state like the state given.  Called with arrays, a function of these
modules computes from them (``optax.apply_updates``: ``apis.PROPAGATING_MODULES``)."""

OPTIMIZER_METHODS: dict[str, str] = {"init": "init", "update": "update"}

OPTIMIZER_STATE_SCALARS = frozenset({"count", "hyperparams", "notfinite_count", "last_finite", "total_notfinite"})
"""Fields of optax's states that ``init`` makes as fresh arrays of their own, placed on the
default device whatever the parameters are (optax/_src/transform.py ``ScaleByAdamState.count``
is ``jnp.zeros([], jnp.int32)``; ``InjectHyperparamsState.hyperparams``)."""

OPTIMIZER_STATE_DEPTH = 3
"""How many reads deep into an optimizer's state (``opt_state[1][0].mu``: a chain's states,
a transformation's tuple, its named fields) :data:`OPTIMIZER_STATE_SCALARS` are told apart
from the arrays made like the parameters."""
"""The methods of a gradient transformation (:data:`OPTIMIZER_MODULES`) by what they return."""

GETTER_CALLS: dict[str, str] = {
    "operator.attrgetter": "attr",
    "operator.itemgetter": "item",
    "operator.methodcaller": "method",
}
"""Calls that make a reader of constant names (CPython Lib/operator.py):
``attrgetter("params.kernel")(obj)`` is ``obj.params.kernel``, ``itemgetter("k")(d)`` is
``d["k"]``, with several names a tuple of what each reads; ``methodcaller("name", *args)(obj)``
is ``obj.name(*args)``."""

CONTAINER_METHODS: dict[str, str] = {
    "append": "append",
    "appendleft": "append",     # collections.deque: order is not followed
    "extend": "extend",
    "extendleft": "extend",
    "insert": "insert",
    "update": "update",
    "setdefault": "setdefault",
    "get": "get",
    "pop": "pop",
    "popleft": "pop",
    "put": "append",            # queue.Queue (QUEUES): put(item, block, timeout)
    "put_nowait": "append",
    "values": "values",
    "items": "items",
    "keys": "keys",
    "copy": "copy",
}
"""Methods of lists and dicts (and of dict-like records such as flax's FrozenDict)."""

MUTATING = frozenset({"append", "extend", "insert", "update", "setdefault"})
"""Operations that change the receiver in place."""

MUTATING_METHODS = frozenset(name for name, op in CONTAINER_METHODS.items() if op in MUTATING)
"""The method names of :data:`CONTAINER_METHODS` that change the receiver in place
(``append``, ``appendleft``, a queue's ``put``...)."""

QUEUES = frozenset({
    "queue.Queue", "queue.LifoQueue", "queue.PriorityQueue", "queue.SimpleQueue",
    "asyncio.Queue", "asyncio.LifoQueue", "asyncio.PriorityQueue",
})
"""Queues between threads (CPython Lib/queue.py) or tasks (Lib/asyncio/queues.py): an empty
container of their own kind; ``put``/``put_nowait`` add an item, ``get``/``get_nowait``
take one (order is not followed).  The item is the object put, never a copy, so a sharded
array put by a producer thread is the one the consumer gets.  ``multiprocessing`` queues
pickle their items: not here."""

QUEUE_TAKES = frozenset({"get", "get_nowait"})
"""Methods of a queue (:data:`QUEUES`) that take an item out; their arguments are ``block``
and ``timeout``, never a key."""

QUEUE_PUTS = frozenset({"put", "put_nowait"})
"""Methods of a queue that put an item in (:data:`CONTAINER_METHODS`: an append).  On a
parameter, whose class the caller decides, the name is also an object's method whose result
the caller's object gives (``router.put(batch)`` of a request handler: hunt51a p20)."""

THREAD_EXECUTORS = frozenset({
    "concurrent.futures.ThreadPoolExecutor", "concurrent.futures.thread.ThreadPoolExecutor",
})
"""Executors that run a callable in a thread of this process (CPython
Lib/concurrent/futures/thread.py): ``submit(fn, *args, **kwargs)`` gives a Future of
``fn(*args, **kwargs)``, ``map(fn, *iterables)`` an iterator of ``fn`` of their items,
each the object ``fn`` returned.  ``ProcessPoolExecutor`` pickles arguments and results
across processes: not here."""

THREAD_TARGETS: dict[str, tuple[int, int, int]] = {
    "threading.Thread": (1, 3, 4),      # Thread(group, target, name, args, kwargs, *, daemon)
    "threading.Timer": (1, 2, 3),       # Timer(interval, function, args, kwargs)
}
"""Threads of this process and where their callable, its ``args`` tuple and its ``kwargs``
dict are given (positions; by keyword ``target``/``function``, ``args``, ``kwargs``)
(CPython Lib/threading.py).  The callable runs with them, in this process, on the objects
given: what it puts into a queue or a list it was handed is seen by the code that made the
thread (the analysis runs it where the thread is made)."""

THREAD_TARGET_KEYWORDS = ("target", "function")

THREAD_CLASSES = frozenset({"threading.Thread"})
"""Library thread classes whose ``start()`` runs the instance's ``run()`` in this process
(CPython Lib/threading.py): a subclass that defines ``run`` runs it on ``t.start()``."""

FUTURE_RESULTS = frozenset({"result"})
"""Methods of a Future (:data:`THREAD_EXECUTORS`) that give the callable's result."""

FUTURE_ITERATORS = frozenset({"concurrent.futures.as_completed"})
"""``as_completed(futures)``: an iterator over the futures given."""

ITERATION_CALLS: dict[str, str] = {
    "builtins.list": "list",
    "builtins.tuple": "tuple",
    "builtins.set": "set",
    "builtins.frozenset": "set",
    "builtins.iter": "iter",
    "builtins.sorted": "sorted",
    "builtins.reversed": "reversed",
    "builtins.enumerate": "enumerate",
    "builtins.zip": "zip",
    "builtins.next": "next",
    "builtins.dict": "dict",
    "builtins.filter": "filter",
    "itertools.chain": "chain",
    "collections.defaultdict": "defaultdict",
    "collections.OrderedDict": "dict",
    "collections.deque": "list",    # deque(iterable, maxlen): a list of the iterable's items
    "itertools.islice": "iter",
    "itertools.cycle": "iter",
    "itertools.dropwhile": "filter",
    "itertools.takewhile": "filter",
    "itertools.filterfalse": "filter",
    "itertools.tee": "tee",            # tee(it, n): n iterators over the items of it
    "itertools.groupby": "groupby",    # groupby(it, key): (key, iterator over a group's items)
    "itertools.pairwise": "pairwise",  # pairwise(it): (item, next item)
    "itertools.zip_longest": "zip_longest",    # zip_longest(*its, fillvalue=None): tuples, short ones filled
    "itertools.accumulate": "accumulate",      # accumulate(it[, func], initial=None): the running results
    **{qn: "queue" for qn in QUEUES},          # Queue(maxsize): an empty queue (the argument is no iterable)
    **{qn: "iter" for qn in FUTURE_ITERATORS},
}
"""Builtins (and itertools) that build or consume iterables, by operation."""

ELEMENT_CALLBACKS: dict[str, tuple] = {
    "builtins.sorted": (None, "key", 0),
    "builtins.min": (None, "key", 0),
    "builtins.max": (None, "key", 0),
    "builtins.filter": (0, None, 1),
    "itertools.filterfalse": (0, None, 1),
    "itertools.dropwhile": (0, None, 1),
    "itertools.takewhile": (0, None, 1),
    "itertools.groupby": (1, "key", 0),
    "heapq.nsmallest": (2, "key", 1),
    "heapq.nlargest": (2, "key", 1),
}
"""Library calls that call a function on each element of an iterable (CPython's builtins,
itertools and heapq): name -> (the function's position or None, its keyword or None, the
iterable's position).  ``sorted(xs, key=lambda a: np.from_dlpack(a).sum())`` exports each
element of ``xs``; ``min``/``max`` only in their one-iterable form."""

UNROLL_LIMIT = 8
"""``for`` loops over a tuple or list of at most this many known elements are walked once
per element, so correlated elements stay paired (``for fn, arg in ((f, a), (g, b)):``)."""
