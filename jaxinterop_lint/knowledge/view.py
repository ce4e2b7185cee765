"""The per-run view of the API tables (:class:`Knowledge`) that a configuration can extend."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from . import apis, versions


@lru_cache(maxsize=1)
def _table_names() -> frozenset:
    """Every qualified name of the tables of :mod:`.apis` (a dict's keys, a collection's
    strings): the library names the analysis knows something of."""
    out = set()
    for name, value in vars(apis).items():
        if name.isupper() and isinstance(value, (dict, set, frozenset, tuple)):
            out.update(k for k in value if isinstance(k, str) and "." in k)
    return frozenset(out)


@dataclass(frozen=True)
class Knowledge:
    """The tables the analysis consults: the built-in ones plus a project's own APIs
    (``extend-sources``, ``extend-sinks``, ``extend-sanitizers`` of the configuration)."""

    call_sinks: dict = field(default_factory=lambda: dict(apis.CALL_SINKS))
    direct_sources: dict = field(default_factory=lambda: dict(apis.DIRECT_SOURCES))
    sanitizers: frozenset = apis.SANITIZERS
    declared: frozenset = frozenset()
    """The qualified names the configuration added (they may name the project's own
    functions: a call of one of them means what the configuration says, not what the
    function's body does)."""

    def declares(self, qn: str) -> bool:
        """Whether the configuration names ``qn`` as a source, a sink or a sanitizer."""
        return qn in self.declared

    # The project's JAX releases (knowledge/versions.py) and how messages name the range.
    jax_versions: frozenset = versions.DEFAULT
    jax_range: str = ""

    def knows(self, qn: str) -> bool:
        """Whether a table (built in or of the configuration) names the qualified name
        ``qn``: ``from jax.sharding import *`` binds ``NamedSharding`` to what the analysis
        knows of ``jax.sharding.NamedSharding``, and no unknown name to anything."""
        return qn in _table_names() or qn in self.call_sinks or qn in self.direct_sources or qn in self.sanitizers

    def extended(self, sources=(), sinks=None, sanitizers=()) -> "Knowledge":
        """A copy with more sources (qualified names), sinks (qualified name -> protocol
        name: ``dlpack``, ``cuda-array-interface`` or ``raw-buffer``) and sanitizers."""
        call_sinks = dict(self.call_sinks)
        for qn, protocol in (sinks or {}).items():
            call_sinks[qn] = apis.Sink(protocol, None if protocol == apis.CAI else "BufferError")
        direct = dict(self.direct_sources)
        for qn in sources:
            direct[qn] = f"{qn}() (extend-sources)"
        declared = self.declared | frozenset(sources) | frozenset(sinks or ()) | frozenset(sanitizers)
        return Knowledge(call_sinks=call_sinks, direct_sources=direct,
                         sanitizers=self.sanitizers | frozenset(sanitizers), declared=declared,
                         jax_versions=self.jax_versions, jax_range=self.jax_range)


DEFAULT_KNOWLEDGE = Knowledge()
