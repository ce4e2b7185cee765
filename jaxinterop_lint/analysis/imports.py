"""Name resolution through a module's imports: what qualified name each import binds.

A light pass of our own instead of libcst's ``ScopeProvider``/``QualifiedNameProvider``: the
walk binds each imported name to its qualified name in the flow-sensitive environment, so
``import jax as J``, ``from jax import shard_map as smap``, ``from jax.experimental import
pjit as m`` then ``m.pjit`` and ``import jax.numpy as jnp`` all resolve.
"""
from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ..relative import resolve_relative  # noqa: F401  (re-exported)


def dotted(node: cst.CSTNode) -> Optional[str]:
    """The dotted text of a Name/Attribute chain (``a.b.c``), or None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else base + "." + node.attr.value
    return None


def from_module(node: cst.ImportFrom, package: str = "") -> Optional[str]:
    """The module a ``from ... import`` statement takes names from, relative imports resolved
    against ``package``; None when it cannot be resolved."""
    mod = get_full_name_for_node(node.module) if node.module is not None else None
    return resolve_relative(mod, len(node.relative), package)


def import_bindings(node: cst.CSTNode, package: str = "") -> Iterator[tuple[str, str, bool, cst.CSTNode]]:
    """Yield ``(bound name, qualified name, is_from_import, alias node)`` for an import.

    ``import a.b`` binds ``a`` to ``a``; ``import a.b as c`` binds ``c`` to ``a.b``;
    ``from a import b as c`` binds ``c`` to ``a.b``.  Star imports bind nothing.
    """
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = get_full_name_for_node(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                yield alias.asname.name.value, full, False, alias
            else:
                yield full.split(".")[0], full.split(".")[0], False, alias
    elif isinstance(node, cst.ImportFrom):
        if isinstance(node.names, cst.ImportStar):
            return
        base = from_module(node, package)
        if base is None:
            return
        for alias in node.names:
            name = get_full_name_for_node(alias.name)
            if name is None:
                continue
            bound = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                bound = alias.asname.name.value
            yield bound, f"{base}.{name}", True, alias
