"""Which JAX releases exist, and what each removed interop API and each exception name does in
each of them: the facts behind version-aware rules and version guards.

Pure data and small set functions; it imports no JAX.  A *version set* is a ``frozenset`` of
release tuples (``(0, 4, 31)``) taken from :data:`RELEASES`, plus :data:`FUTURE`, which stands
for every release newer than the newest one known here (the newest facts hold for it).

Sources, read in jax-ml/jax at the tags named (``git show jax-vX:path``):

* :data:`RELEASES`: the ``jax-v*`` tags and the ``## jax X`` headings of ``CHANGELOG.md``.
* :data:`REMOVED`: ``CHANGELOG.md`` (0.4.22, 0.4.27, 0.4.32, 0.6.0, 0.7.0, 0.7.2, 0.8.0,
  0.8.1, 0.10.0), ``jax/dlpack.py``, ``jax/__init__.py``, ``jax/sharding.py`` (their
  ``_deprecations`` tables: a ``None`` entry makes :func:`jax._src.deprecations.deprecation_getattr`
  raise ``AttributeError``; Python turns that into ``ImportError`` for ``from m import name``),
  ``jax/_src/array.py`` (``device_buffer(s)``), ``jax/_src/dlpack.py`` (capsules).
* :data:`NAMES`: ``jax/errors.py``, ``jax/lib/xla_client.py``, ``jax/lib/xla_extension.py``,
  ``jaxlib/`` (``xla_extension`` became ``_jax`` in 0.7.0), and ``jax/__init__.py`` for the
  newer public names that compatibility code probes with ``hasattr``.
* the per-path exception classes of the interop protocols are
  :data:`jaxinterop_lint.knowledge.messages.HISTORY` (one source of truth, read per version).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from .releases import (  # noqa: F401  (the release table, re-exported)
    ALL, DEFAULT, FAILING, FUTURE, GONE, NEWEST, RAISES, RELEASES, WARNS, WORKS, Version, _v, at_least, before, text,
)


@dataclass(frozen=True)
class Phase:
    """From release ``since`` on (until the next phase), the API is in ``state`` (WORKS,
    WARNS: works with a DeprecationWarning, RAISES: still listed but raises, GONE: deleted)."""

    since: Version
    state: str


@dataclass(frozen=True)
class RemovedApi:
    """A removed JAX interop API and its history.

    ``phases`` oldest first; ``raises`` the exception class of a use in a failing phase
    (``AttributeError`` for an attribute or call, ``ImportError`` for ``from m import name``
    of a module attribute, ``TypeError`` for a capsule); ``replacement`` what to do instead,
    giving the same values and shapes as the old call where it worked; ``source`` where the
    facts were read.
    """

    phases: tuple
    raises: str
    replacement: str
    source: str
    note: str = ""

    def state(self, version: Version) -> str:
        """The state of the API in ``version``."""
        out = WORKS
        for phase in self.phases:
            if version >= phase.since:
                out = phase.state
        return out

    def failing(self, versions: Iterable[Version]) -> frozenset:
        """The versions of ``versions`` in which a use fails."""
        return frozenset(v for v in versions if self.state(v) in FAILING)

    def available(self, versions: Iterable[Version]) -> frozenset:
        """The versions in which the name exists (works or warns): ``hasattr`` is True there."""
        return frozenset(v for v in versions if self.state(v) not in FAILING)

    def first_failing(self) -> Version:
        """The first release in which a use fails."""
        return next(p.since for p in self.phases if p.state in FAILING)

    def history(self) -> str:
        """``deprecated in JAX 0.6.0, raises since 0.7.0, deleted in 0.8.0`` (or ``note``)."""
        if self.note:
            return self.note
        has_raises = any(p.state == RAISES for p in self.phases)
        parts = []
        for phase in self.phases:
            at = text(phase.since)
            if phase.state == WARNS:
                parts.append(f"deprecated in JAX {at}")
            elif phase.state == RAISES:
                parts.append(f"raises since {at}")
            elif phase.state == GONE:
                parts.append(f"deleted in {at}" if has_raises else f"removed in {at} ({self.raises})")
        return ", ".join(parts)


_CL = "jax CHANGELOG.md"
_DRP_REPLACED = ("use jax.device_put(jnp.stack([x] * len(devices)), NamedSharding(Mesh(np.array(devices), "
                 "('x',)), P('x'))): it keeps the leading device axis of size len(devices) that pmap "
                 "expects (the drop-in replacement of JAX's docs/migrate_pmap.md; jax.tree.map it over a pytree)")
_DPS_REPLACED = ("use jax.device_put(jnp.stack(shards), NamedSharding(Mesh(np.array(devices), ('x',)), "
                 "P('x'))): it stacks the shards along a new leading axis, one slice per device (the drop-in "
                 "replacement of JAX's docs/migrate_pmap.md; jax.tree.map(lambda *xs: ..., *shards) for pytrees)")

# Removed APIs by the key the analysis records: a qualified name, ``.attr`` for an array
# attribute, ``capsule`` for a DLPack capsule handed to a JAX consumer.
REMOVED: dict[str, RemovedApi] = {
    "jax.dlpack.to_dlpack": RemovedApi(
        (Phase((0, 6, 0), WARNS), Phase((0, 7, 0), RAISES), Phase((0, 8, 0), GONE)), "AttributeError",
        "pass the array itself to the consumer: torch.from_dlpack(x)",
        _CL + " 0.6.0/0.8.0; jax/dlpack.py _deprecations at jax-v0.6.0 (warns), jax-v0.7.0 (None: raises)"),
    "capsule": RemovedApi(
        (Phase((0, 4, 32), WARNS), Phase((0, 7, 2), GONE)), "TypeError",
        "pass the tensor itself: jax.dlpack.from_dlpack(t)",
        _CL + " 0.4.32/0.7.2; jax/_src/dlpack.py from_dlpack at jax-v0.7.2 (TypeError: The array passed to "
              "from_dlpack must have __dlpack__ and __dlpack_device__ methods.)",
        note="DLPack capsules deprecated in JAX 0.4.32, rejected since 0.7.2 (TypeError)"),
    ".device_buffer": RemovedApi(
        (Phase((0, 4, 22), WARNS), Phase((0, 4, 27), GONE)), "AttributeError",
        "use x.addressable_data(0)",
        _CL + " 0.4.22/0.4.27; jax/_src/array.py device_buffer at jax-v0.4.26 (warns; ValueError for more "
              "than one shard) and jax-v0.4.27 (raises AttributeError)"),
    ".device_buffers": RemovedApi(
        (Phase((0, 4, 22), WARNS), Phase((0, 4, 27), GONE)), "AttributeError",
        "use [s.data for s in x.addressable_shards]",
        _CL + " 0.4.22/0.4.27; jax/_src/array.py device_buffers (a property) at jax-v0.4.26 and jax-v0.4.27"),
    "jax.device_put_replicated": RemovedApi(
        (Phase((0, 8, 1), WARNS), Phase((0, 10, 0), RAISES)), "AttributeError", _DRP_REPLACED,
        _CL + " 0.8.1/0.10.0; jax/__init__.py _deprecations at jax-v0.8.1 (warns) and jax-v0.10.0 (None)"),
    "jax.device_put_sharded": RemovedApi(
        (Phase((0, 8, 1), WARNS), Phase((0, 10, 0), RAISES)), "AttributeError", _DPS_REPLACED,
        _CL + " 0.8.1/0.10.0; jax/__init__.py _deprecations at jax-v0.8.1 (warns) and jax-v0.10.0 (None)"),
    "jax.sharding.PositionalSharding": RemovedApi(
        (Phase((0, 6, 0), WARNS), Phase((0, 7, 0), RAISES), Phase((0, 7, 1), GONE)), "AttributeError",
        "use jax.sharding.NamedSharding",
        _CL + " 0.6.0; jax/sharding.py _deprecations at jax-v0.6.0 (warns), jax-v0.7.0 (None), "
              "gone from jax-v0.7.1"),
}

# numpy.from_dlpack never took a capsule: ``AttributeError: 'PyCapsule' object has no attribute
# '__dlpack__'`` whatever the JAX version (numpy 2.4, run).
NUMPY_CAPSULE = RemovedApi((Phase((0,), GONE),), "AttributeError", "pass the tensor itself: np.from_dlpack(t)",
                           "numpy/_core from_dlpack (numpy 2.4, run)",
                           note="numpy.from_dlpack never took a capsule (AttributeError)")


def removed(key: str, consumer: Optional[str] = None) -> Optional[RemovedApi]:
    """The history of the removed API recorded as ``key`` (``consumer`` for capsules: the
    qualified name of the function the capsule was passed to); None when unknown."""
    if key == "capsule" and consumer == "numpy.from_dlpack":
        return NUMPY_CAPSULE
    return REMOVED.get(key)


# Exception names whose ``except`` clause can only work where the name resolves (an ``except
# X`` naming a missing attribute raises AttributeError instead of catching): name -> (first
# release it exists in, first release it is gone from or None).  Names not listed always resolve.
NAMES: dict[str, tuple[Version, Optional[Version]]] = {
    "jax.errors.JaxRuntimeError": ((0, 4, 34), None),          # jax/errors.py, CHANGELOG 0.4.34
    "jax.lib.xla_client.XlaRuntimeError": ((0,), (0, 6, 0)),   # deprecated 0.4.34, gone 0.6.0
    "jax.lib.xla_extension.XlaRuntimeError": ((0,), (0, 6, 0)),  # CHANGELOG 0.6.0: removed
    "jaxlib.xla_extension.XlaRuntimeError": ((0,), (0, 7, 0)),   # jaxlib/xla_extension -> _jax
    # newer public names that compatibility code probes with hasattr(jax..., name)
    "jax.shard_map": ((0, 6, 1), None),
    "jax.P": ((0, 7, 0), None),
    "jax.smap": ((0, 7, 0), None),
    "jax.make_mesh": ((0, 4, 32), None),
    "jax.typeof": ((0, 5, 3), None),
    "jax.NamedSharding": ((0, 4, 27), None),
    "jax.set_mesh": ((0, 7, 1), None),
    "jax.reshard": ((0, 8, 2), None),
    "jax.dlpack.is_supported_dtype": ((0, 7, 0), None),
}


def name_versions(qualified: str, within: Iterable[Version] = ALL) -> Optional[frozenset]:
    """The versions of ``within`` in which the module attribute ``qualified`` exists, or None
    when the tables know nothing of it."""
    api = REMOVED.get(qualified)
    if api is not None:
        return api.available(within)
    span = NAMES.get(qualified)
    if span is None:
        return None
    since, until = span
    return frozenset(v for v in within if v >= since and (until is None or v < until))


def resolves(name: str, version: Version) -> bool:
    """Whether the exception name ``name`` (as an ``except`` clause spells it) exists in ``version``."""
    span = NAMES.get(name)
    return span is None or (version >= span[0] and (span[1] is None or version < span[1]))


def describe(versions: Iterable[Version]) -> str:
    """A short text for a version set: ``0.4.31 to 0.6.2``, ``0.7.0 and newer``, ``0.10.2``."""
    vs = sorted(versions)
    if not vs:
        return "no release"
    lo, hi = vs[0], vs[-1]
    if hi == FUTURE:
        return f"{text(lo)} and newer" if lo != FUTURE else text(FUTURE)
    return text(lo) if lo == hi else f"{text(lo)} to {text(hi)}"
