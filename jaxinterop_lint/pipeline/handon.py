"""Stage 3, plan: what a module hands on from another module without defining it.

A caller ``A`` takes a name from a module ``R`` that only hands on something of a module ``E``:

- a re-export: ``R`` imports the name and does not define it (``from .impl import Converter``
  in a ``utils.py``).  :meth:`HandOn.origin` follows it to the module that defines it, as for a
  package's ``__init__``; the import graph then has ``A`` taking the name from ``E``.
- a function of ``R`` (a factory) that returns an instance of a class of ``E`` whose text uses
  a consumer, or such a class or function itself, when ``E`` names a consumer: ``def
  converter(): return Converter()``, or the result of another such factory (``return
  converter()``, also through modules naming none, :data:`RELAYS` of them: ``layer.make()``
  returning ``tools.converter()``), or a name assigned such a call (``conv = Converter(); return
  conv``).  :meth:`HandOn.handed_on` reads that from the ``return`` statements; :meth:`HandOn.handed_targets` adds what is handed
  on to what ``A`` takes (a second import graph beside :meth:`~.plan.Plan.targets`, so that
  computing one module's targets never computes another's), and ``A`` becomes a caller that
  can give ``E``'s exporting methods calling contexts: ``converter().to_torch(sharded)`` is
  judged at ``E``'s sink.  A function that only calls an exporting function (a relay) is the
  demand's question already (:meth:`~.demand.Demand.relays`).
- a module taken whole (``import pkg.tools as tools``): the names ``A`` calls on it
  (``tools.Converter()``) that it re-exports (:meth:`HandOn._re_exported`) or hands on.

Subclasses are not followed (``class FastConverter(Converter)`` in a module naming no
consumer): subclassing an exporting base is the norm in PyTorch code bases, and following it
cost a fifth of a cold run on transformers.

Every module read on the way is a fact the decision about ``A`` read
(:meth:`~.plan.Plan.consulted`).  All of it is read from the text (the plan's facts and
top-level units), never parsed.
"""
from __future__ import annotations

import os
import re
from typing import Optional

from .scan import consumer, plain_lines, taken_names
from .toplevel import strip_prose, units_of

_TOP_STAR = re.compile(r"^from[ \t]+[\w.]+[ \t]+import[ \t]*\*", re.M)   # a star import that runs
DEPTH = 4       # re-exports and relay modules followed at most this deep
RELAYS = 2      # modules naming no consumer a factory's result is read through, beyond its own
# ``return Name(``, ``return mod.Name(``, ``return Name`` (the end of the statement after it);
# a literal first (no ``\b``), which the regex engine finds many times faster
_RETURN = re.compile(r"return[ \t]+([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?[ \t]*(\(|[ \t]*(?:$|[;#]))", re.M)


def _returned(code: str) -> list:
    """``[(name, attribute or "", called)]`` of what ``return`` statements of ``code``
    return: a name or ``module.name``, called or not."""
    return [(m.group(1), m.group(2) or "", m.group(3) == "(") for m in _RETURN.finditer(code)
            if not m.start() or not (code[m.start() - 1].isalnum() or code[m.start() - 1] in "_.")]


_ASSIGNED = re.compile(r"[ \t]*=[ \t]*([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?[ \t]*\(")
_NOT_ASSIGNED = frozenset(("None", "True", "False", "self", "cls"))


def _handed_names(code: str) -> list:
    """:func:`_returned` of ``code`` (a unit's), and the calls assigned to a name it returns
    (``conv = Converter(); return conv``), as called (the module docstring says why
    subclasses are not)."""
    out = _returned(code)
    for name in {h for h, a, c in out if not a and not c and h not in _NOT_ASSIGNED}:
        at = code.find(name + " =")
        while at >= 0:      # ``name = X(`` (a literal search, then a match where it is)
            m = _ASSIGNED.match(code, at + len(name))
            if m is not None and not (at and (code[at - 1].isalnum() or code[at - 1] in "_.")):
                out.append((m.group(1), m.group(2) or "", True))
            at = code.find(name + " =", at + len(name))
    return out


_TOP_DEF = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+\w+", re.M)


def _class_line(text: str, name: str) -> int:
    """Where the line ``class name`` (at top level) starts in ``text``, or -1."""
    at = text.find("class " + name)
    while at >= 0:
        end = at + 6 + len(name)
        if (not at or text[at - 1] == "\n") and (end == len(text) or not (text[end].isalnum() or text[end] == "_")):
            return at
        at = text.find("class " + name, end)
    return -1


_CALLED_NAME = re.compile(r"(\w+)[ \t]*\(")


def _called(text: str, local: str) -> set:
    """The names of the attributes that ``text`` calls on the module bound to ``local``
    (``local.name(``), read from the text, comments and strings included (a spurious hit
    only costs a look).  A literal search for ``local.``, then a match at each hit (a
    pattern per name would be compiled again for each module: too many for ``re``'s cache)."""
    key = local + "."
    at = text.find(key)
    out = set()
    while at >= 0:
        if not at or not (text[at - 1].isalnum() or text[at - 1] in "_."):
            m = _CALLED_NAME.match(text, at + len(key))
            if m:
                out.add(m.group(1))
        at = text.find(key, at + len(key))
    return out


class HandOn:
    """Re-exports and handed-on names of a :class:`~.plan.Plan` (a mixin: the plan supplies
    ``facts``, ``index``, ``targets``, ``units``, ``_bound``, ``importers``, ``texts``,
    ``reader`` and ``_text_or_none``)."""

    def _hand_on_init(self) -> None:
        self._passed: dict = {}         # path -> modules its import graph passed through
        self._defined: dict = {}        # path -> {top-level name: its code}
        self._imported: dict = {}       # path -> {name its imports bind: (module, name taken)}
        self._returns: dict = {}        # path -> :func:`_handed_names` of its text
        self._may: dict = {}            # (path, relay) -> whether its functions may hand anything on
        self._may_read: dict = {}       # (path, relay) -> the modules _returns_bound consulted
        self._class_consumer: dict = {}  # (file, class) -> whether its text uses a consumer
        self._hands_memo: dict = {}     # (file, name, called, relay) -> :meth:`_hands`
        self._relevance: dict = {}      # (file, taken whole) -> what handed_targets asks of it
        self._re: dict = {}             # path -> {name re-exported: (file, name there)}
        self._handed: dict = {}         # (path, name) -> (handed-on (file, name)s, modules read)
        self._handed_targets: dict = {}  # path -> [(file, name)] handed on to it
        self.handed_bound: dict = {}    # path -> {bound name: [(file, name)]} handed on
        self._star: dict = {}           # (file, name) -> :meth:`_star_search`
        self._star_runs: dict = {}      # file -> :meth:`_stars_run`

    def _read_units(self, path: str) -> dict:
        """``{top-level name: the code of its units}`` of module file ``path`` (functions,
        classes, assignments; not imports), read from its text once
        (:func:`~.toplevel.units_of`)."""
        known = self._defined.get(path)
        if known is None:
            known = self._defined[path] = {}
            try:
                text = self.texts.get(path)
                for names, body in units_of(plain_lines(text if text is not None else self.reader.text(path))):
                    for n in names or ():
                        known.setdefault(n, []).append(body)
            except Exception:
                pass
        return known

    def origin(self, owner: str, name: str, taker: str, depth: int = 0) -> tuple:
        """``(file, name there)``: where ``name``, taken from module file ``owner`` by
        ``taker``, is defined, following ``from .x import name [as alias]`` re-exports (a
        few levels) of packages and of any module that imports the name without defining
        it at top level (:meth:`defined`); ``(submodule, None)`` for a submodule handed on.
        The modules passed through are recorded as read for ``taker``."""
        if depth > DEPTH:
            return owner, name
        imported = self._imported.get(owner)
        if imported is None:    # {bound name: (module, name taken)}, the first import binding it
            imported = self._imported[owner] = {}
            for module, names in (self.facts(owner) or {}).get("imports", ()):
                for taken, alias in names or ():
                    if taken != "*":
                        imported.setdefault(alias or taken, (module, taken))
        hit = imported.get(name)
        if hit is None:
            return self._star_origin(owner, name, taker, depth) or (owner, name)
        module, taken = hit
        if os.path.basename(owner) != "__init__.py" and name in self._read_units(owner):
            return owner, name      # imported, and defined there as well
        sub = self.index.find_module(f"{module}.{taken}", owner)
        if sub is not None:
            self._passed.setdefault(taker, set()).add(owner)
            return sub, None
        found = self.index.find_module(module, owner)
        if found is not None and found != owner:
            self._passed.setdefault(taker, set()).add(owner)
            return self.origin(found, taken, taker, depth + 1)
        return owner, name

    def _star_origin(self, owner: str, name: str, taker: str, depth: int) -> Optional[tuple]:
        """:meth:`origin` of a ``name`` that no import of ``owner`` binds by name and that
        ``owner`` does not define: the project module whose ``from m import *`` in ``owner``
        binds it (the last one that does, as Python binds them; a package's ``from .core
        import *``), where it is defined there, or None."""
        stars = self._stars_run(owner)
        if not stars or name.startswith("_"):
            return None
        key = (owner, name)
        known = self._star.get(key)
        if known is None:
            known = self._star[key] = self._star_search(owner, name, stars, depth)
        there, passed = known
        if there is not None:
            self._passed.setdefault(taker, set()).update(passed)
        return there

    def _star_search(self, owner: str, name: str, stars: list, depth: int) -> tuple:
        """``(origin or None, the modules passed through)`` for :meth:`_star_origin`
        (``stars``: the modules ``owner`` star-imports), searched once per ``(owner,
        name)``."""
        if self._defines(owner, name):
            return None, frozenset()
        self._star[(owner, name)] = (None, frozenset())       # a star-import cycle finds nothing more
        token = ("*", owner, name)       # collects what the search passes through
        for module in reversed(stars):
            found = self.index.find_module(module, owner)
            if found is None or found == owner:
                continue
            there = self.origin(found, name, token, depth + 1)
            if there != (found, name) or self._defines(found, name):
                return there, frozenset(self._passed.pop(token, set())) | {owner}
        self._passed.pop(token, None)
        return None, frozenset()

    def _stars_run(self, path: str) -> list:
        """The modules that module file ``path`` star-imports, when one of its star imports
        runs as it is imported (one at the start of a line, not under ``if TYPE_CHECKING:``:
        transformers' 562 lazy packages star-import their modules only for type
        checkers); else [].  Read once a file."""
        known = self._star_runs.get(path)
        if known is None:
            known = [m for m, names in (self.facts(path) or {}).get("imports", ())
                     if names and any(t == "*" for t, _ in names)]
            if known:
                text = self._text_or_none(path)
                known = known if text is not None and _TOP_STAR.search(text) is not None else []
            self._star_runs[path] = known
        return known

    def _defines(self, path: str, name: str) -> bool:
        """Whether module file ``path`` defines ``name`` at top level: its units when read
        already (:meth:`_read_units`), else a search of its text for a line starting
        ``def name``, ``class name`` or ``name =`` (the star search asks of large modules
        that no other question reads: transformers' modeling files)."""
        known = self._defined.get(path)
        if known is not None:
            return name in known
        text = self._text_or_none(path)
        if text is None or name not in text:
            return False
        word = re.escape(name)
        return re.search(r"^(?:(?:async[ \t]+)?def|class)[ \t]+%s\b|^%s[ \t]*(?::|=[^=])" % (word, word),
                         text, re.M) is not None

    def handed_on(self, path: str, name: str, depth: int = 0) -> tuple:
        """``(names, read)``: the ``(file, name)`` pairs of modules naming a consumer that the
        top-level function ``name`` of module file ``path`` (naming none) returns: an
        instance of such a module's class whose text uses a consumer (``return
        Converter()``), or that function or class itself (``return to_torch``), directly,
        through the module's own functions, or through a function of another module naming
        none that it returns the result of (``return tools.converter()``; that module's own
        such functions are followed, :data:`RELAYS` modules deep: :meth:`may_hand_on`); and
        the modules read for it.  Read from the text: ``return`` statements, the names bound by
        the module's imports.  Empty for a module that names a consumer (its own units are
        what the demand asks about) or a name it does not define."""
        key = (path, name)
        known = self._handed.get(key)
        if known is not None:
            return known
        self._handed[key] = ((), frozenset())      # a cycle hands on nothing more
        f = self.facts(path)
        if not f or f["sink"] or depth > DEPTH:
            return self._handed[key]
        bound = self._bound_of(path)
        if not self.may_hand_on(path):
            self._handed[key] = ((), frozenset((path,)))
            return self._handed[key]
        bodies = self._read_units(path)
        todo = [name] if name in bodies else []
        seen, out, read = set(todo), set(), {path}
        while todo:
            for head, attr, called in _handed_names(strip_prose("".join(bodies[todo.pop()]))):
                if head in bodies:
                    if head not in seen and not attr:
                        seen.add(head)
                        todo.append(head)
                    continue
                for t, k in bound.get(head, ()):
                    if k is None and attr:
                        k = attr
                    if t == path or k is None or k == "*":
                        continue
                    if (self.facts(t) or {}).get("sink"):
                        if self.hands_export(t, k, called):
                            out.add((t, k))
                    elif called:
                        more, also = self.handed_on(t, k, depth + 1)
                        out.update(more)
                        read.update(also)
        self._handed[key] = (tuple(sorted(out)), frozenset(read))
        return self._handed[key]

    def _returns_bound(self, path: str, bound: dict, relay: int) -> bool:
        """Whether some ``return`` statement of module file ``path`` returns a name its
        imports bind (``bound``) that may hand on an exporting function (:meth:`_hands`),
        or a name assigned a call of one (``conv = Converter(); return conv``): else none
        of its functions hands anything on.  :func:`_handed_names` of its whole text (a
        spurious hit in a string only costs a look)."""
        key = (path, relay)
        known = self._may.get(key)
        if known is not None:
            return known
        self._may[key] = False      # (the levels go down: no key is asked again while open)
        heads = self._return_heads(path)
        found = any(self._hands(path, t, k if k is not None else attr, called, relay)
                    for head, attr, called in heads for t, k in bound.get(head, ()))
        self._may[key] = found
        return found

    def _return_heads(self, path: str) -> frozenset:
        """:func:`_handed_names` of the text of module file ``path``, once a run."""
        heads = self._returns.get(path)
        if heads is None:
            heads = self._returns[path] = frozenset(_handed_names(self._text_of(path)))
        return heads

    def _returns_read(self, path: str, relay: int) -> frozenset:
        """The module files whose facts or text :meth:`_returns_bound` of ``path`` (at
        ``relay`` levels) consulted: the modules bound to the names its ``return``
        statements hand on, and those their own returns consult, one level down while
        ``relay`` is above 0 (as :meth:`_hands` descends), ``path`` left out."""
        key = (path, relay)
        known = self._may_read.get(key)
        if known is None:
            self._may_read[key] = frozenset()      # (a cycle consults nothing more)
            out: set = set()
            bound = self._bound_of(path)
            for head, attr, called in self._return_heads(path):
                for t, k in bound.get(head, ()):
                    if t == path or k == "*" or (k is None and not (attr or called)):
                        continue
                    out.add(t)
                    if relay > 0 and not (self.facts(t) or {}).get("sink"):
                        out |= self._returns_read(t, relay - 1)
            out.discard(path)
            known = self._may_read[key] = frozenset(out)
        return known

    def _hands(self, path: str, t: str, k, called: bool, relay: int) -> bool:
        """Whether the name ``k`` of module file ``t`` (None: the module), bound in ``path``,
        may hand on an exporting function: one that :meth:`hands_export` of a module naming
        a consumer (a module: one with such a function or class), or, while ``relay`` (the
        levels left) is above 0, one of a module naming none whose own ``return``
        statements may (:meth:`_returns_bound` one level down)."""
        if t == path or k == "*" or (k is None and not called):
            return False
        key = (t, k, called, relay)
        known = self._hands_memo.get(key)
        if known is None:
            if (self.facts(t) or {}).get("sink"):
                known = True if k is None else self.hands_export(t, k, called)
            else:
                known = relay > 0 and self._returns_bound(t, self._bound_of(t), relay - 1)
            self._hands_memo[key] = known
        return known

    def may_hand_on(self, path: str) -> bool:
        """:meth:`_returns_bound` of module file ``path`` and its imports, once a run."""
        return self._returns_bound(path, self._bound_of(path), RELAYS)

    def _bound_of(self, path: str) -> dict:
        """``{bound name: [(file, name)]}`` of the imports of module file ``path``."""
        bound = self._bound.get(path)
        if bound is None:
            self.targets(path)
            bound = self._bound.get(path, {})
        return bound

    def hands_export(self, path: str, name: str, called: bool) -> bool:
        """Whether ``name``, returned from a module naming a consumer (``path``), hands over
        a function that may export: a class whose text uses a consumer (``consumer_defs``),
        called or not, or such a function not called; or a name ``path`` imports (a
        re-export, followed by :meth:`origin` where it matters).  Literal searches of the
        facts and the text, never a parse: for a name called, only that class's text is
        read (:meth:`_class_uses_consumer`), not every unit of a large module."""
        if called and self._is_class(path, name):
            return self._class_uses_consumer(path, name)
        if not called and name in self.consumer_defs(path):
            return True
        self.origin(path, name, path)       # fills the module's map of what its imports bind
        return name in self._imported.get(path, {})

    def _class_uses_consumer(self, path: str, name: str) -> bool:
        """Whether the top-level class ``name`` of module file ``path`` uses a consumer in
        its text: :meth:`~.plan.Plan.consumer_defs` for that one unit (from its ``class``
        line to the next top-level ``def`` or ``class``), once a run."""
        key = (path, name)
        known = self._class_consumer.get(key)
        if known is None:
            f = self.facts(path) or {}
            if isinstance(f.get("defs"), list):
                known = name in f["defs"]
            else:
                text = plain_lines(self._text_of(path))
                start = _class_line(text, name)
                known = False
                if start >= 0:
                    nxt = _TOP_DEF.search(text, start + 1)
                    roots = {m.split(".")[0] for m, _ in f.get("imports", ())}
                    known = consumer(text[start:nxt.start() if nxt else len(text)], self.words.sinks, roots,
                                     taken_names(f.get("imports", ())))
            self._class_consumer[key] = known
        return known

    def _is_class(self, path: str, name: str) -> bool:
        """Whether module file ``path`` defines ``name`` with a top-level ``class``."""
        return _class_line(self._text_of(path), name) >= 0

    def handed_targets(self, path: str) -> list:
        """``[(file, name)]`` handed on to ``path``: for each name ``path`` takes from a module
        naming no consumer, what :meth:`handed_on` finds there.  Fills
        :attr:`handed_bound` (the names ``path`` binds to them) and ``importers``, and
        records the modules read."""
        known = self._handed_targets.get(path)
        if known is not None:
            return known
        self._handed_targets[path] = out = []
        self.targets(path)
        bound = self.handed_bound[path] = {}
        text = None
        for local, taken in list(self._bound.get(path, {}).items()):
            for t, k in taken:
                if t == path or k == "*":
                    continue
                called = ()
                if k is None:   # a module: the functions of it that ``path`` calls (first: a
                    # module taken whole and never called on costs no look at its re-exports)
                    if text is None:
                        text = self._text_of(path)
                    dotted = self.index.module_name(t) or local
                    # ``import pkg.tools`` binds ``pkg``: its calls are ``pkg.tools.f(``
                    called = _called(text, dotted if dotted.startswith(local + ".") else local)
                    if not called:
                        continue
                relevance = self._relevance.get((t, k is None))
                if relevance is None:   # (re-exports reached as attributes, may hand on), once a run
                    sink = (self.facts(t) or {}).get("sink")
                    again = self._re_exported(t) if k is None and not sink else {}
                    may = not sink and self.may_hand_on(t)
                    relevance = self._relevance[(t, k is None)] = (again, may) if again or may else False
                if relevance is False:
                    # what decided that ``t`` hands nothing on decides the result too: a
                    # module there that gains a consumer (or a factory) may change it (the
                    # attack of stop 48, s03 and s05)
                    if not (self.facts(t) or {}).get("sink"):
                        self._passed.setdefault(path, set()).update(self._returns_read(t, RELAYS))
                    continue
                again, may = relevance
                names, read = self._handed_by(t, k, called) if may else ((), frozenset())
                more = {again[a] for a in called if a in again}   # ``tools.Converter()``, a re-export
                if more:
                    # what the re-exports passed through (recorded for ``t``) decides too
                    names, read = tuple(sorted(set(names) | more)), read | {t} | self._passed.get(t, set())
                if read:    # what was read decides, whether or not something is handed on
                    self._passed.setdefault(path, set()).update(read)
                for pair in names:
                    bound.setdefault(local, []).append(pair)
                    if pair not in out:
                        out.append(pair)
        for target, name in out:
            if target != path:
                self.importers.setdefault(target, {}).setdefault(path, set()).add(name)
        return out

    def _re_exported(self, path: str) -> dict:
        """``{name: (file, name there)}`` of the names module file ``path`` (naming no
        consumer) imports without defining, whose origin (:meth:`origin`) is a class or
        function of a module naming a consumer that :meth:`hands_export` when called: what
        ``tools.Converter()`` reaches through a module taken whole.  From the facts and the
        text, once a run."""
        known = self._re.get(path)
        if known is None:
            known = self._re[path] = {}
            for module, names in (self.facts(path) or {}).get("imports", ()):
                for taken, alias in names or ():
                    if taken == "*":
                        continue
                    o, there = self.origin(path, alias or taken, path)
                    if o != path and there and (self.facts(o) or {}).get("sink") and self.hands_export(o, there, True):
                        known[alias or taken] = (o, there)
        return known

    def read_for(self, path: str) -> set:
        """The module files whose facts the import graph of ``path`` read: those it takes
        names from, and those its re-exports and handed-on names passed through."""
        return {t for t, _ in self.targets(path)} | self._passed.get(path, set())

    def _text_of(self, path: str) -> str:
        """The text of module file ``path`` (the caller's, when given), "" if unreadable."""
        text = self.texts.get(path)
        try:
            return text if text is not None else self.reader.text(path)
        except Exception:
            return ""

    def _handed_by(self, path: str, name, called) -> tuple:
        """:meth:`handed_on` of the unit ``name`` of ``path``, or, for the module taken whole
        (None), of each of its units in ``called`` (the attributes called on it)."""
        if name is not None:
            return self.handed_on(path, name)
        f = self.facts(path)
        if not f or f["sink"]:
            return (), frozenset()
        names, read = set(), set()
        bodies = self._read_units(path)
        for unit in sorted(u for u in called if u in bodies):
            more, also = self.handed_on(path, unit)
            names.update(more)
            read.update(also)
        return tuple(sorted(names)), frozenset(read)
