"""The words the plan looks for in a file's text, all derived from the tables of
:mod:`jaxinterop_lint.knowledge.apis` (and a configuration's own APIs), so that a new table
entry, or a new table, cannot be forgotten here.

Three families:

- **consumer words** (:class:`Prefilter`, :func:`build`): the sinks.  A qualified sink
  ``root.mod.name`` needs both ``root`` and ``name`` in the text (any use of it spells its
  last name, any import of it its root); method and attribute sinks need their own name.
- **JAX words** (:func:`jax_words`): where multi-device values start (sources, wrappers,
  placements, shardings, mesh contexts, donation ...): the tables of ``apis.ORIGIN_TABLES``
  (every table is classified, :func:`unclassified`).  An entry of a
  JAX library counts where any JAX root is imported (a re-export may spell it from another
  JAX root), another qualified entry where its own root is; a bare entry (a method, a
  keyword) where a JAX root is.
- **words that alone can make a finding** (:func:`alone_words`): removed APIs (JXI005) and
  FFI callbacks (JXI004), by rule code; and the array annotations of opt-in JXI009.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ..knowledge import apis

# What each table of ``apis`` is for the plan: where multi-device values start
# (``apis.ORIGIN_TABLES``: the JAX words), or anything else (consumers, sanitizers, guards,
# safe results, exceptions, FFI buffers, removed APIs, device arrays ...).  A table in
# neither list is reported by :func:`unclassified` (tests/test_prefilter.py), so a new table
# cannot be forgotten: its author says what it is.
OTHER_TABLES = frozenset({
    "CALL_SINKS", "METHOD_SINKS", "ATTRIBUTE_SINKS", "KERNEL_DECORATORS", "KERNEL_LAUNCH_SINK",
    "TREE_MAPS", "REDUCES", "PROPAGATING_WRAPPERS", "DONATING_WRAPPERS", "SINGLE_DEVICE_CONSTRUCTORS",
    "DEVICE_LISTS", "DEVICE_ARRAY_CONVERTERS", "DEVICE_ARRAY_METHODS", "MESH_SHAPE_CALLS", "MESH_SHAPE_DEVICES",
    "MESH_CONSTRUCTORS", "MESH_DEVICE_ATTRIBUTES", "MESH_CONTEXT_MODULES", "MESH_CONTEXT_EXEMPT",
    "COMPILE_STAGES", "SCALAR_REDUCTIONS", "SANITIZERS", "SAFE_METHODS", "SAFE_ATTRIBUTES",
    "PROPAGATING_MODULES", "PROPAGATING_FUNCTIONS", "FOREIGN_MODULES", "DEVICE_COUNT_METHODS",
    "DEVICE_SET_ATTRIBUTES", "SHARDING_COUNT_ATTRIBUTES", "SHARD_LIST_ATTRIBUTES",
    "GLOBAL_DEVICE_COUNTS", "GLOBAL_DEVICE_LISTS", "WRAPPER_PLACEMENTS", "MESH_SIZE_ATTRIBUTES", "FALSE_GUARD_ATTRIBUTES", "EXCEPTION_CONTEXTS", "EXPECTING_METHODS",
    "BUFFER_CALLBACK", "BUFFER_TYPES", "EXECUTION_CONTEXT_TYPES", "FFI_ARRAY_CALLS",
    "FFI_OTHER_COPIES", "FFI_MISSING_COPY_METHODS", "FFI_COPY_FAILURES", "FFI_COPYING_BY_DEFAULT",
    "FFI_COPY_IF_ASKED", "FFI_ZERO_COPY_VIEWS", "REMOVED_CALLS", "REMOVED_ATTRIBUTES",
    "CAPSULE_CONSUMERS", "CAPSULE_PRODUCER_NAMES", "EXCEPTION_BASES", "ARRAY_ANNOTATIONS",
    "JAX_ROOTS", "PROTOCOL_RULE", "ORIGIN_TABLES", "WEAK_ORIGIN_TABLES", "COUNT_TABLES", "PLACEMENT_MODULES",
    "PLACEMENT_ATTRIBUTES", "TREE_LEAVES", "DUNDER_CALLS", "DIRECT_SOURCE_PLACEMENTS", "CALL_METHODS", "CONTEXT_MANAGER_DECORATORS", "FIXTURE_DECORATORS",
    "ARRAY_METHODS", "MODULE_LOADERS", "ENUM_BASES", "HOST_TYPES",
})


def origin_tables() -> dict:
    """The tables of ``apis.ORIGIN_TABLES`` present in ``apis``."""
    return {n: t for n, t in tables().items() if n in apis.ORIGIN_TABLES}


def unclassified() -> list:
    """Tables of ``apis`` in neither ``apis.ORIGIN_TABLES`` nor :data:`OTHER_TABLES`."""
    return sorted(n for n in tables() if n not in apis.ORIGIN_TABLES and n not in OTHER_TABLES)


# Tables whose words alone can make a finding of a rule: rule -> [(table name fragments,
# fragments of the tables one of whose words must be used too, whether a JAX root must be
# imported)].  A DLPack capsule (JXI005) is a finding only where a capsule consumer takes
# it; an FFI buffer (JXI004) only where ``buffer_callback`` makes one (its types are imported
# from that module); JXI006 (a guard that does not guard) needs no JAX import, only a
# consumer (the plan asks for one); nor do the removed array attributes (``device_buffer``:
# names only JAX ever had, probed with ``hasattr`` in code that takes arrays of any library).
ALONE = {"JXI005": [(("REMOVED_CALLS",), (), True), (("REMOVED_ATTRIBUTES",), (), False),
                    (("CAPSULE_PRODUCER",), ("CAPSULE_CONSUMERS",), True)],
         "JXI004": [(("BUFFER_CALLBACK",), (), True)],
         "JXI006": [(("FALSE_GUARD",), (), False)]}
# The rules whose alone-words make a finding only beside a consumer.
NEEDS_CONSUMER = frozenset({"JXI006"})


@dataclass(frozen=True)
class Prefilter:
    """``standalone``: words that alone make a file name a consumer; ``pairs``: (root,
    names) where the root and one of the names must both appear."""

    standalone: frozenset
    pairs: tuple

    def __post_init__(self):
        pattern = "|".join(sorted(re.escape(w) for w in self.standalone)) or r"(?!x)x"
        object.__setattr__(self, "_re", re.compile(pattern))
        object.__setattr__(self, "_words", tuple(sorted(self.standalone, key=len)))

    def wants(self, text: str, present=None) -> bool:
        """Whether ``text`` names a consumer (``present(word)``: whether ``word`` occurs in
        ``text``, when the caller keeps that)."""
        # Plain substring tests: faster than one alternation regex over the whole text.
        has = text.__contains__ if present is None else present
        if any(has(word) for word in self._words):
            return True
        for root, names in self.pairs:
            if has(root) and any(has(n) for n in names):
                return True
        return False


_TABLES: list = []


def tables() -> dict:
    """Every table of ``apis``: upper-case module attributes that are collections of names
    (a dict's keys, or a set, frozenset or tuple of strings); read once per process (every
    word list asks for it: issue 16, a flake8 process on one file)."""
    key = [(name, id(value)) for name, value in vars(apis).items() if name.isupper()]
    if _TABLES and _TABLES[0] == key:     # (a table added or replaced later is read again)
        return _TABLES[1]
    out = {}
    for name, value in vars(apis).items():
        if not name.isupper() or name.startswith("_"):
            continue
        if isinstance(value, dict):
            keys = [k for k in value if isinstance(k, str)]
        elif isinstance(value, (set, frozenset, tuple, list)):
            keys = [k for k in value if isinstance(k, str)]
        else:
            continue
        if keys:
            out[name] = value
    _TABLES[:] = [key, out]
    return out


def _names(value) -> Iterable[str]:
    """The names of a table; in a table of name -> keyword arguments it needs (as
    ``SOURCE_WRAPPERS``: ``jax.jit`` is a source only with ``in_shardings``/``out_shardings``)
    an entry that needs keywords gives those keywords instead of its name."""
    for k in value:
        if isinstance(k, str):
            extra = value[k] if isinstance(value, dict) else None
            if isinstance(extra, (set, frozenset, tuple)) and extra and all(isinstance(e, str) for e in extra):
                yield from extra
            else:
                yield k


def _families(wanted) -> list:
    return [n for n in tables() if any(part in n for part in wanted)]


def build(extra_sinks=()) -> Prefilter:
    """The consumer words of the built-in sink tables plus ``extra_sinks`` (qualified names)."""
    standalone: set = set()
    pairs: dict = {}
    qualified = list(extra_sinks)
    for name in _families(("SINK", "KERNEL")):
        for q in _names(tables()[name]):
            if "." in q:
                qualified.append(q)
            else:
                standalone.add(q)
    extra = frozenset(extra_sinks)
    for q in qualified:
        root, last = q.partition(".")[0], q.rsplit(".", 1)[-1]
        if root == "builtins" or q in extra:
            # a project's own sink is also called where its root is not spelled: in the
            # module defining it, or after a relative import
            standalone.add(last)
        else:
            pairs.setdefault(root, set()).add(last)
    return Prefilter(frozenset(standalone), tuple((r, frozenset(n)) for r, n in sorted(pairs.items())))


@dataclass(frozen=True)
class Words:
    """Words as ``(root, last name)`` pairs: ``root`` None means any JAX root."""

    pairs: frozenset

    def by_root(self) -> dict:
        out: dict = {}
        for root, last in self.pairs:
            out.setdefault(root, set()).add(last)
        return {r: tuple(sorted(n, key=len, reverse=True)) for r, n in out.items()}


def _pairs(names: Iterable[str]) -> set:
    out = set()
    for q in names:
        root, last = q.partition(".")[0], q.rsplit(".", 1)[-1]
        if not last:
            continue
        if "." not in q:
            out.add((None, q))
        else:
            out.add((None if root in apis.JAX_ROOTS else root, last))
    return out


def jax_words(extra_sources=(), strong: bool = False) -> Words:
    """Where multi-device values start: the names of the origin tables, plus the
    configuration's ``extend-sources`` (counted where their own root is imported).  With
    ``strong``, only the tables that make one by themselves (all but
    ``apis.WEAK_ORIGIN_TABLES``)."""
    names: set = set()
    for table, value in origin_tables().items():
        if not (strong and table in apis.WEAK_ORIGIN_TABLES):
            names.update(_names(value))
    # ``PmapSharding.default`` is spelled with ``PmapSharding``: the parent's word covers it
    names = {q for q in names if "." not in q or q.rsplit(".", 1)[0] not in names}
    pairs = _pairs(names)
    for q in extra_sources:
        pairs.add((q.partition(".")[0], q.rsplit(".", 1)[-1]))
    return Words(frozenset(pairs))


def _table_words(tables) -> Words:
    """The words of the ``apis`` tables named ``tables``."""
    names: set = set()
    for name in tables:
        names.update(_names(getattr(apis, name)))
    return Words(frozenset(_pairs(names)))


def count_words() -> Words:
    """The words of ``apis.COUNT_TABLES`` (``make_mesh``, ``Mesh``, ``devices``): where a
    module-level name states a placement's device count."""
    return _table_words(apis.COUNT_TABLES)


def mesh_words() -> Words:
    """The words of the tables that build a mesh (``apis.MESH_SHAPE_CALLS``,
    ``MESH_CONSTRUCTORS``: ``make_mesh``, ``Mesh``, ``create_device_mesh``): a function
    naming one decides the size of the placements made on what it returns."""
    return _table_words(("MESH_SHAPE_CALLS", "MESH_CONSTRUCTORS"))


def _last_names(parts) -> tuple:
    names = set()
    for name in _families(parts):
        names.update(q.rsplit(".", 1)[-1] for q in _names(tables()[name]))
    return tuple(sorted(n for n in names if n))


def bare_jax_words() -> frozenset:
    """The JAX words that are bare names in the tables (methods, keywords: ``device``,
    ``to_device``): in a function that does not itself name JAX they say nothing."""
    names = set()
    for value in origin_tables().values():
        names.update(q for q in _names(value) if "." not in q)
    return frozenset(names)


def bare_roles() -> dict:
    """Bare JAX word -> the role it has in JAX's API: ``"method"`` (``x.to_device(...)``,
    ``PLACEMENT_METHODS``) or ``"keyword"`` (``device=``, ``in_shardings=``,
    ``donate_argnums=``: the keyword tables).  The plan matches a bare word only in its
    role: ``for device in jax.devices()`` names no placement, ``jnp.asarray(x,
    device=s)`` does."""
    out = {}
    for name, value in origin_tables().items():
        for q in _names(value):
            if "." not in q:
                out[q] = "method" if "METHOD" in name else "keyword"
    return out


def alone_words() -> dict:
    """Rule code -> ``[(words, words needed beside them, needs a JAX import)]``: words that
    alone (beside a consumer for JXI006) can make a finding of that rule."""
    return {code: [(_last_names(parts), _last_names(needs) if needs else (), jax) for parts, needs, jax in specs]
            for code, specs in ALONE.items()}


def annotation_words() -> Words:
    """The array annotations that make a parameter a JAX array (opt-in JXI009)."""
    names = set()
    for name in _families(("ANNOTATION",)):
        names.update(_names(tables()[name]))
    return Words(frozenset(_pairs(names)))


DEFAULT = build()
