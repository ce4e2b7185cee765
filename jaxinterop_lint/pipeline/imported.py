"""Stage 3, plan (imported names): where the names a module reads on a package it imports
are defined, for the import graph of :meth:`~.plan.Plan.targets`.

``import pkg`` (or ``import pkg as p``, ``from pkg import sub``, ``import pkg.sub as s``)
binds a package; the names the module reads as its attributes (``p.as_torch(x)``) are taken
from the modules that define them, re-exports of the package's ``__init__`` followed
(:meth:`~.handon.HandOn.origin`), so a caller naming no consumer gives the sink's module
its calling context (hunt45 proj7, the review of stop 44).  ``from pkg import *`` of a
package whose ``__init__`` re-exports names by name binds those the module spells.  Read
from the text, never parsed.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from ..source import SourceError
from .carriers import attribute_of
from .toplevel import IDENT

@lru_cache(maxsize=1024)
def _alias_of(module: str):
    """``import module as alias`` (one name of an import statement): its group is the alias
    (memoised as :func:`~.carriers.attribute_of` is)."""
    m = re.escape(module)
    return re.compile(r"(?:^[ \t]*import[ \t]+|,[ \t]*)%s[ \t]+as[ \t]+(\w+)" % m, re.M)


class ImportedNames:
    """The part of a :class:`~.plan.Plan` that reads names taken through packages (a mixin:
    it uses the plan's ``texts``, ``reader``, ``facts``, ``index`` and ``origin``)."""

    def _text_or_none(self, path: str) -> Optional[str]:
        """The text of ``path`` (given by the caller, else the file's), None when unreadable."""
        text = self.texts.get(path)
        if text is None:
            try:
                text = self.reader.text(path)
            except SourceError:
                return None
        return text

    def _add_package_reads(self, path: str, head: str, init: str, out: list, bound: dict) -> None:
        """Add to ``out`` and ``bound`` (of :meth:`targets`) the names ``path`` reads as
        attributes of ``head``, a name bound to the package whose ``__init__`` is ``init``
        (:meth:`_package_reads`), bound as ``head.name``."""
        for name, found in self._package_reads(path, head, init):
            out.append(found)
            bound.setdefault(f"{head}.{name}", []).append(found)

    def _module_aliases(self, path: str, module: str) -> list:
        """The names ``import module as alias`` binds in ``path`` (the plan's facts keep
        only the module of such an import)."""
        text = self._text_or_none(path)
        return sorted(set(_alias_of(module).findall(text))) if text is not None and "as" in text else []

    def _star_reexports(self, owner: str, taker: str) -> list:
        """``[(name, (file, name there))]`` for ``from owner import *``: the public names
        the module ``owner`` binds by its own imports (``from .sinks import export_a`` in a
        package's ``__init__``), and those of the modules it star-imports in turn, a few
        levels, each where it is defined (:meth:`origin`), of the names ``taker`` spells
        (keras' backend packages star-import every backend: binding all their names made
        its plan four times slower), and ``("*", (module, "*"))`` for each module star-imported
        on the way (a package's ``from .core import *``: its definitions); the module's own
        definitions are what ``(owner, "*")`` stands for already."""
        text = self._text_or_none(taker)
        if text is None:
            return []
        used = set(IDENT.findall(text))
        out, seen, todo = [], {owner}, [(owner, 0)]
        while todo:
            module_file, depth = todo.pop()
            for module, names in (self.facts(module_file) or {}).get("imports", ()):
                if not names or not self.index.is_project(module):
                    continue
                for taken, alias in names:
                    bound = alias or taken
                    if taken == "*":
                        found = self.index.find_module(module, module_file)
                        if found is not None and found not in seen and depth < 4:
                            seen.add(found)
                            todo.append((found, depth + 1))
                            out.append(("*", (found, "*")))     # its own definitions too
                    elif bound in used and not bound.startswith("_"):
                        found = self.origin(module_file, bound, taker)
                        if found != (module_file, bound):
                            out.append((bound, found))
        return out

    def _package_reads(self, path: str, package: str, init: str) -> list:
        """For ``import package`` (a package of the project, ``init`` its ``__init__.py``),
        where the names ``path`` reads as its attributes (``package.as_torch(x)``) are
        defined, re-exports followed as for ``from package import as_torch``: the import
        graph then has ``path`` taking them from their modules (its calling contexts reach
        them: hunt45 proj7).  ``[(name, (file, name there))]``, but the package's own names."""
        text = self._text_or_none(path)
        if text is None:
            return []
        out = []
        for name in sorted(set(attribute_of(package).findall(text))):
            found = self.origin(init, name, path)
            if found != (init, name):
                out.append((name, found))
        return out
