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
    "values": "values",
    "items": "items",
    "keys": "keys",
    "copy": "copy",
}
"""Methods of lists and dicts (and of dict-like records such as flax's FrozenDict)."""

MUTATING = frozenset({"append", "extend", "insert", "update", "setdefault"})
"""Operations that change the receiver in place."""

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
}
"""Builtins (and itertools) that build or consume iterables, by operation."""

UNROLL_LIMIT = 8
"""``for`` loops over a tuple or list of at most this many known elements are walked once
per element, so correlated elements stay paired (``for fn, arg in ((f, a), (g, b)):``)."""
