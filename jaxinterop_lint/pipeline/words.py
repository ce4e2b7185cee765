"""The words the plan looks for in a file's text, all derived from the tables of
:mod:`jaxinterop_lint.knowledge.apis` (and a configuration's own APIs), so that a new table
entry, or a new table, cannot be forgotten here.

Three families:

- **consumer words** (:class:`Prefilter`, :func:`build`): the sinks.  A qualified sink
  ``root.mod.name`` needs both ``root`` and ``name`` in the text (any use of it spells its
  last name, any import of it its root); method and attribute sinks need their own name.
- **JAX words** (:func:`jax_words`): where multi-device values start (sources, wrappers,
  placements, shardings, meshes, donation ...).  Every table of ``apis`` counts, except the
  families named in :data:`NOT_ORIGINS` (consumers, sanitizers, safe results, exceptions,
  foreign libraries, transformations that only propagate, annotations, protocol maps);
  a table added by someone else is therefore a JAX word table by default.  An entry of a
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

# Name fragments of the tables that are not where multi-device values start.
NOT_ORIGINS = ("SINK", "SANITIZER", "SAFE", "EXCEPTION", "FOREIGN", "PROPAGATING", "TREE_MAPS",
               "PROTOCOL", "FFI_COPY", "FFI_ZERO", "ANNOTATION", "ROOTS", "CAPSULE_CONSUMERS",
               "CAPSULE_PRODUCER", "KERNEL")
# Tables whose words alone can make a finding of a rule: rule -> [(table name fragments,
# fragments of the tables one of whose words must be used too, whether a JAX root must be
# imported)].  A DLPack capsule (JXI005) is a finding only where a capsule consumer takes
# it; an FFI buffer (JXI004) only where ``buffer_callback`` makes one (its types are imported
# from that module); JXI006 (a guard that does not guard) needs no JAX import, only a
# consumer (the plan asks for one).
ALONE = {"JXI005": [(("REMOVED",), (), True), (("CAPSULE_PRODUCER",), ("CAPSULE_CONSUMERS",), True)],
         "JXI004": [(("BUFFER_CALLBACK",), (), True)],
         "JXI006": [(("FALSE_GUARD",), (), False)]}


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

    def wants(self, text: str) -> bool:
        """Whether ``text`` names a consumer."""
        # Plain substring tests: faster than one alternation regex over the whole text.
        if any(word in text for word in self._words):
            return True
        for root, names in self.pairs:
            if root in text and any(n in text for n in names):
                return True
        return False


def tables() -> dict:
    """Every table of ``apis``: upper-case module attributes that are collections of names
    (a dict's keys, or a set, frozenset or tuple of strings)."""
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
    return out


def _names(value) -> Iterable[str]:
    """The names of a table; a table of name -> keyword arguments it needs (as
    ``SOURCE_WRAPPERS``) also gives those keywords."""
    for k in value:
        if isinstance(k, str):
            yield k
            extra = value[k] if isinstance(value, dict) else None
            if isinstance(extra, (set, frozenset, tuple)) and all(isinstance(e, str) for e in extra):
                yield from extra


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
    for q in qualified:
        root, last = q.partition(".")[0], q.rsplit(".", 1)[-1]
        if root == "builtins":
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


def jax_words(extra_sources=()) -> Words:
    """Where multi-device values start: every table not in :data:`NOT_ORIGINS`, plus the
    configuration's ``extend-sources`` (counted where their own root is imported)."""
    names: set = set()
    for name, value in tables().items():
        if not any(part in name for part in NOT_ORIGINS):
            names.update(_names(value))
    pairs = _pairs(names)
    for q in extra_sources:
        pairs.add((q.partition(".")[0], q.rsplit(".", 1)[-1]))
    return Words(frozenset(pairs))


def _last_names(parts) -> tuple:
    names = set()
    for name in _families(parts):
        names.update(q.rsplit(".", 1)[-1] for q in _names(tables()[name]))
    return tuple(sorted(n for n in names if n))


def bare_jax_words() -> frozenset:
    """The JAX words that are bare names in the tables (methods, keywords: ``device``,
    ``to_device``): in a function that does not itself name JAX they say nothing."""
    names = set()
    for name, value in tables().items():
        if not any(part in name for part in NOT_ORIGINS):
            names.update(q for q in _names(value) if "." not in q)
    return frozenset(names)


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

def _qualified_origins() -> frozenset:
    names = set()
    for name, value in tables().items():
        if not any(part in name for part in NOT_ORIGINS):
            for k in value:
                if isinstance(k, str) and "." in k:
                    names.add(k.rsplit(".", 1)[-1])
                    extra = value[k] if isinstance(value, dict) else None
                    if isinstance(extra, (set, frozenset, tuple)):
                        names.update(e for e in extra if isinstance(e, str))
    return frozenset(n for n in names if n)


# Last names of the qualified JAX words (and the keywords they need), for the masking of
# statements: a function that names none of them, and uses no function that does, cannot
# make a multi-device value.  Bare method and keyword names (``device``) are left out here:
# in JAX's own code nearly every function says them.
SOURCE_WORDS = _qualified_origins()
SOURCE_RE = re.compile(r"\b(?:%s)\b" % "|".join(sorted(map(re.escape, SOURCE_WORDS), key=len, reverse=True)))
