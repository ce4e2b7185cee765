"""Which JAX releases exist (:data:`RELEASES`, from the ``jax-v*`` tags and the ``## jax X``
headings of jax-ml/jax's ``CHANGELOG.md``) and the version sets built from them: the part of
:mod:`.versions` that naming a project's JAX range needs (a flake8 process reads only this).

Pure data and small set functions; it imports no JAX.  A *version set* is a ``frozenset`` of
release tuples (``(0, 4, 31)``) taken from :data:`RELEASES`, plus :data:`FUTURE`, which stands
for every release newer than the newest one known here (the newest facts hold for it).
"""
from __future__ import annotations

from typing import Iterable

Version = tuple[int, ...]


def _v(text: str) -> Version:
    return tuple(map(int, text.split(".")))


RELEASES: tuple[Version, ...] = tuple(map(_v, (
    "0.1.55 0.1.58 0.1.59 0.1.60 0.1.61 0.1.62 0.1.63 0.1.64 0.1.65 0.1.66 0.1.67 0.1.68 0.1.69 "
    "0.1.70 0.1.71 0.1.72 0.1.73 0.1.74 0.1.75 0.1.76 0.1.77 "
    "0.2.0 0.2.1 0.2.2 0.2.3 0.2.4 0.2.5 0.2.6 0.2.7 0.2.8 0.2.9 0.2.10 0.2.11 0.2.12 0.2.13 0.2.14 "
    "0.2.15 0.2.16 0.2.17 0.2.18 0.2.19 0.2.20 0.2.21 0.2.22 0.2.23 0.2.24 0.2.25 0.2.26 0.2.27 0.2.28 "
    "0.3.0 0.3.1 0.3.2 0.3.3 0.3.4 0.3.5 0.3.6 0.3.7 0.3.8 0.3.9 0.3.10 0.3.11 0.3.12 0.3.13 0.3.14 "
    "0.3.15 0.3.16 0.3.17 0.3.18 0.3.19 0.3.20 0.3.21 0.3.22 0.3.23 0.3.24 0.3.25 "
    "0.4.0 0.4.1 0.4.2 0.4.3 0.4.4 0.4.5 0.4.6 0.4.7 0.4.8 0.4.9 0.4.10 0.4.11 0.4.12 0.4.13 0.4.14 "
    "0.4.15 0.4.16 0.4.17 0.4.18 0.4.19 0.4.20 0.4.21 0.4.22 0.4.23 0.4.24 0.4.25 0.4.26 0.4.27 "
    "0.4.28 0.4.29 0.4.30 0.4.31 0.4.32 0.4.33 0.4.34 0.4.35 0.4.36 0.4.37 0.4.38 "
    "0.5.0 0.5.1 0.5.2 0.5.3 0.6.0 0.6.1 0.6.2 0.7.0 0.7.1 0.7.2 0.8.0 0.8.1 0.8.2 0.8.3 "
    "0.9.0 0.9.0.1 0.9.1 0.9.2 0.10.0 0.10.1 0.10.2 0.11.0").split()))
NEWEST: Version = RELEASES[-1]
# Any release newer than NEWEST (a range such as ``jax>=0.4.31`` admits them).
FUTURE: Version = (1 << 30,)
ALL: frozenset = frozenset(RELEASES) | {FUTURE}
# The range used when a project declares nothing: the newest JAX the tables know (and later).
DEFAULT: frozenset = frozenset({NEWEST, FUTURE})

WORKS, WARNS, RAISES, GONE = "works", "warns", "raises", "gone"
FAILING = (RAISES, GONE)


def text(version: Version) -> str:
    """``(0, 4, 31)`` -> ``"0.4.31"``; FUTURE -> ``"a newer release"``."""
    return "a release newer than " + text(NEWEST) if version == FUTURE else ".".join(map(str, version))


def at_least(version: Version, within: Iterable[Version] = ALL) -> frozenset:
    """The versions of ``within`` that are ``>= version``."""
    return frozenset(v for v in within if v >= version)


def before(version: Version, within: Iterable[Version] = ALL) -> frozenset:
    """The versions of ``within`` that are ``< version``."""
    return frozenset(v for v in within if v < version)
