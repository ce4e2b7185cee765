"""Relative imports resolved to absolute module names: one rule for the plan (which reads
imports from text, without libcst) and the analysis (which reads them from the tree)."""
from __future__ import annotations

from typing import Optional


def resolve_relative(module: Optional[str], level: int, package: str) -> Optional[str]:
    """Absolute module name of ``from <level dots><module> import``, relative to ``package``
    (the importing module's package, ``""`` for a top-level module); None when it climbs
    above the top."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if module:
        base.append(module)
    return ".".join(base) if base else None
