"""The text prefilter: a file that names no interop API is never parsed.

The words are generated from the tables of :mod:`jaxinterop_lint.knowledge.apis` (and the
configuration's own sinks), so a new table entry cannot be forgotten here.  A qualified sink
``root.mod.name`` needs both ``root`` and ``name`` in the text (any use of it spells its last
name, and any import of it spells its root); method and attribute sinks and removed APIs need
their own name.  Prefiltering only ever skips files that cannot produce a finding.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .knowledge import apis


@dataclass(frozen=True)
class Prefilter:
    """``standalone``: words that alone make a file worth parsing; ``pairs``: (root, names)
    where the root and one of the names must both appear."""

    standalone: frozenset
    pairs: tuple

    def __post_init__(self):
        pattern = "|".join(sorted(re.escape(w) for w in self.standalone)) or r"(?!x)x"
        object.__setattr__(self, "_re", re.compile(pattern))
        object.__setattr__(self, "_words", tuple(sorted(self.standalone, key=len)))

    def wants(self, text: str) -> bool:
        """Whether ``text`` may produce a finding and must be parsed."""
        # Plain substring tests: faster than one alternation regex over the whole text.
        if any(word in text for word in self._words):
            return True
        for root, names in self.pairs:
            if root in text and any(n in text for n in names):
                return True
        return False


def build(extra_sinks=()) -> Prefilter:
    """The prefilter for the built-in tables plus ``extra_sinks`` (qualified names)."""
    standalone = set(apis.METHOD_SINKS) | set(apis.ATTRIBUTE_SINKS)
    standalone |= {q.rsplit(".", 1)[-1] for q in apis.REMOVED_CALLS}
    standalone |= set(apis.REMOVED_ATTRIBUTES)
    standalone |= {q.rsplit(".", 1)[-1] for q in apis.BUFFER_CALLBACK}
    standalone |= {q.rsplit(".", 1)[-1] for q in apis.CAPSULE_CONSUMERS}
    pairs: dict[str, set] = {}
    for q in list(apis.CALL_SINKS) + list(apis.KERNEL_DECORATORS) + list(extra_sinks):
        root, _, rest = q.partition(".")
        last = q.rsplit(".", 1)[-1]
        if root == "builtins" or q in extra_sinks:
            # a project's own sink is also called where its root is not spelled: in the
            # module defining it, or after a relative import
            standalone.add(last)
        else:
            pairs.setdefault(root, set()).add(last)
    return Prefilter(frozenset(standalone), tuple((r, frozenset(n)) for r, n in sorted(pairs.items())))


DEFAULT = build()


def _source_words() -> frozenset:
    """Last names of the APIs where multi-device values start (sources, wrappers,
    placements, shardings, donation): a function that names none of them, and calls no
    function that does, cannot make a multi-device value."""
    names = set()
    for table in (apis.SOURCE_WRAPPERS, apis.DIRECT_SOURCES, apis.PLACEMENT_CALLS,
                  apis.SHARDING_CONSTRUCTORS, apis.BUFFER_CALLBACK, apis.KERNEL_DECORATORS):
        names |= {q.rsplit(".", 1)[-1] for q in table}
    names |= set(apis.PLACEMENT_METHODS) | {"out_sharding", "donate_argnums", "donate_argnames",
                                            "in_shardings", "out_shardings"}
    return frozenset(names)


SOURCE_WORDS = _source_words()
SOURCE_RE = re.compile(r"\b(?:%s)\b" % "|".join(sorted(map(re.escape, SOURCE_WORDS))))
