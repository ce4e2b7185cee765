"""The plan's text scanners: what a file's text imports, which words it uses (and in which
role), whether it uses a consumer, read from the text alone, never parsed (stage 3, below
:mod:`.facts` and :mod:`.plan`; the top-level units: :mod:`.toplevel`).

Every scanner is a fast spelling of a regular expression (kept beside it as the reference:
``tests/test_plan_scan.py`` checks the two agree on edge cases and on random texts): a
search for a literal word first (``str.find``, or a pattern that starts with the word, so
the regular expression engine skips to its occurrences), then the conditions around each
occurrence, instead of a pattern tried at every position of the text.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from ..relative import resolve_relative
from .words import Prefilter, bare_roles

_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
_ALIAS = re.compile(r"^([\w.]+)(?:\s+as\s+(\w+))?$")


def plain_lines(text: str) -> str:
    """``text`` with ``\\r\\n`` and lone ``\\r`` line ends made ``\\n`` (the plan's regular
    expressions see lines by ``\\n``; a file of ``\\r`` line ends is one line otherwise)."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _is_word(c: str) -> bool:
    # ``\w`` of a str pattern: alphanumeric (str.isalnum: alpha, decimal, digit, numeric) or "_"
    return c.isalnum() or c == "_"


# -- words used ------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def word_re(word: str):
    """A whole identifier ``word``, not the name of a def or class (defining an API is not
    using it): ``(?<![\\w])(?<!def )(?<!class )word(?![\\w])``, spelled word first (the
    look-behinds after it) so that a search skips to the word's occurrences."""
    w = re.escape(word)
    return re.compile(r"%s(?<![\w]%s)(?<!def %s)(?<!class %s)(?![\w])" % (w, w, w, w))


class Present:
    """Which words occur in one text, each searched for once (the facts of a file ask
    for some words several times): ``present(word)``.  ``guards`` (word -> a part of it,
    :func:`guards_of`) skip the words whose part is absent: one search for the part
    instead of one for each word that has it."""

    __slots__ = ("text", "_known", "_guards")

    def __init__(self, text: str, guards=None):
        self.text = text
        self._known: dict = {}
        self._guards = guards or {}

    def __call__(self, word: str) -> bool:
        found = self._known.get(word)
        if found is None:
            part = self._guards.get(word)
            found = self._known[word] = (part is None or self(part)) and word in self.text
        return found


def guards_of(words, shortest: int = 6) -> dict:
    """``{word: part}`` for the words of ``words`` that share a part (``shortest``
    characters or more, another word whole included) with another word: the longest such
    part (a long part is rarely in a text: its one search often saves several).  A word
    is absent from a text when its part is (the part is in the word)."""
    own = {w: {w[i:i + n] for n in range(shortest, len(w) + 1) for i in range(len(w) - n + 1)}
           for w in sorted(set(words))}
    parts: dict = {}
    for w, subs in own.items():
        for part in subs:
            parts.setdefault(part, set()).add(w)
    out = {}
    for w, subs in own.items():
        # the parts holding ``w`` are its own substrings (a walk of those, not of every part)
        best = max(((len(p), len(parts[p]), p) for p in subs if p != w and len(parts[p]) > 1), default=None)
        if best is not None:
            out[w] = best[2]
    return out


def uses_any(text: str, words, present=None) -> bool:
    """Whether one of ``words`` is used in ``text`` as a whole identifier (not defined);
    ``present`` (a :class:`Present` of ``text``) saves searching a word twice."""
    has = text.__contains__ if present is None else present
    for w in words:
        if has(w) and word_re(w).search(text) is not None:
            return True
    return False


def has_word(text: str, word: str) -> bool:
    """Whether ``word`` is used in ``text`` as a whole identifier."""
    return uses_any(text, (word,))


def used_as_method(text: str, word: str) -> bool:
    """Whether ``text`` has ``.word`` (spaces or tabs after the dot; no word character
    after the word): the regular expression ``\\.[ \\t]*word(?![\\w])``."""
    n, end = len(word), len(text)
    i = text.find(word)
    while i >= 0:
        j = i + n
        if j >= end or not _is_word(text[j]):
            k = i - 1
            while k >= 0 and text[k] in " \t":
                k -= 1
            if k >= 0 and text[k] == ".":
                return True
        i = text.find(word, i + 1)
    return False


def used_as_keyword(text: str, word: str, foreign=None) -> bool:
    """Whether ``text`` has ``word=`` after ``(`` or ``,`` (a parameter's default spelled so
    counts too: that only adds to the plan): ``[(,][ \\t\\r\\n\\\\]*word[ \\t]*=(?!=)``.
    ``foreign`` (a predicate on a name, or None) leaves out the keywords of a call whose
    callee starts with a name it accepts (``torch.tensor(x, device=d)``: see
    :func:`callee_root`)."""
    n, end = len(word), len(text)
    i = text.find(word)
    while i >= 0:
        k = i - 1
        while k >= 0 and text[k] in " \t\r\n\\":
            k -= 1
        if k >= 0 and text[k] in "(,":
            j = i + n
            while j < end and text[j] in " \t":
                j += 1
            if j < end and text[j] == "=" and not text.startswith("=", j + 1):
                if foreign is None:
                    return True
                root = callee_root(text, i)
                if root is None or not foreign(root):
                    return True
        i = text.find(word, i + 1)
    return False


_CALLEE_REACH = 4000    # characters a keyword's call is looked for before it


def callee_root(text: str, i: int) -> Optional[str]:
    """The first name of the callee of the call whose arguments hold position ``i`` of
    ``text`` (``torch`` for the ``device`` of ``torch.tensor(x, device=d)``), or None where
    that is not plain to see from the text: a comment sign or a string other than a
    one-line one without escapes between (a bracket in it would mislead the count), the call's ``(`` further than a few thousand
    characters, or no dotted name before it (``f(a)(device=d)``)."""
    depth = 0
    k = i - 1
    stop = max(0, i - _CALLEE_REACH)
    while k >= stop:
        c = text[k]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth:
                depth -= 1
            elif c != "(":
                return None
            else:
                j = k - 1
                while j >= 0 and text[j] in " \t":
                    j -= 1
                e = j + 1
                while j >= 0 and (_is_word(text[j]) or text[j] == "."):
                    j -= 1
                name = text[j + 1:e]
                root = name.split(".", 1)[0]
                return root if root.isidentifier() and not (j >= 0 and text[j] in "])}") else None
        elif c in "'\"":
            # a one-line string without escapes or triple quotes is skipped whole
            q = text.rfind(c, max(stop, text.rfind("\n", 0, k) + 1), k)
            if q < 0 or text[q - 1:q] in ("\\", c) or text[k - 1:k] in ("\\", c) or "\\" in text[q:k]:
                return None
            k = q
        elif c == "#":
            return None
        k -= 1
    return None


_ROLES: dict = {}


def uses_in_role(text: str, words, foreign=None) -> bool:
    """Whether one of ``words`` is used in ``text``: a bare JAX word (see
    :func:`~.words.bare_roles`) only in its role (a method: ``.word``; a keyword:
    ``word=`` in a call, not of a call of a library ``foreign`` accepts: see
    :func:`used_as_keyword`), any other word as a whole identifier."""
    if not _ROLES:
        _ROLES.update(bare_roles())
    for w in words:
        if w in text:
            role = _ROLES.get(w)
            if role == "method":
                if used_as_method(text, w):
                    return True
            elif role:
                if used_as_keyword(text, w, foreign):
                    return True
            elif word_re(w).search(text) is not None:
                return True
    return False


# -- imports ---------------------------------------------------------------------------------
_COMMENT = re.compile(r"#[^\n]*")


def imports_of(text: str, package: str) -> list:
    """``[[module, names]]`` imported by ``text``: ``names`` is a list of ``[name, alias]``
    for ``from m import ...`` (``["*", None]`` for a star import), None for ``import m``.
    Found from the occurrences of ``import`` (faster than a multi-line regex over the text);
    imports spelled in strings count too, which only adds to the plan."""
    out = []
    i = text.find("import")
    while i >= 0:
        start = text.rfind("\n", 0, i) + 1
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        head = text[start:i].lstrip(" \t")
        if head.startswith("from ") or not head:
            if text.find("(", i, end) >= 0 and text.find(")", i, end) < 0:
                close = text.find(")", end)
                end = len(text) if close < 0 else close + 1
            stmt = text[start:end]
            m = _FROM.match(stmt) if head else _IMPORT.match(stmt)
            if m is not None and head:
                dots, mod, names = m.groups()
                base = resolve_relative(mod or None, len(dots), package)
                if base:
                    taken = []
                    if "#" in names:    # a comment inside parentheses: ``(a,  # note\n b)`` takes b
                        names = _COMMENT.sub("", names)
                    for part in names.strip().strip("()").replace("\\\n", " ").replace("\n", " ").split(","):
                        a = _ALIAS.match(part.strip())
                        if a:
                            taken.append([a.group(1), a.group(2)])
                        elif part.strip() == "*":
                            taken.append(["*", None])
                    out.append([base, taken])
            elif m is not None:
                for part in m.group(1).replace("\\", " ").split(","):
                    a = _ALIAS.match(part.strip())
                    if a:
                        out.append([a.group(1), None])
                        parent, dot, last = a.group(1).rpartition(".")
                        if a.group(2) and dot:
                            # ``import a.b as x`` binds ``x`` to ``a.b``, as ``from a import b as x``
                            out.append([parent, [[last, a.group(2)]]])
        i = text.find("import", end)
    return out


_IMPORT_AS = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
_FROM_AS = re.compile(r"^[ \t]*from[ \t]+\.*([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.M)


def _import_matches(text: str) -> tuple:
    """The matches ``_IMPORT_AS.finditer(text)`` and ``_FROM_AS.finditer(text)`` give, found
    from the lines where ``import`` occurs (each match's line holds one): a pattern is tried
    only at the start of such a line, a ``from`` one not inside the previous ``from`` match
    (a parenthesised list can span lines)."""
    imports, froms = [], []
    from_end = 0
    last = -1
    i = text.find("import")
    while i >= 0:
        start = text.rfind("\n", 0, i) + 1
        if start != last:
            last = start
            head = text[start:i].lstrip(" \t")
            if not head:
                m = _IMPORT_AS.match(text, start)
                if m is not None:
                    imports.append(m)
            elif head.startswith("from") and start >= from_end:
                m = _FROM_AS.match(text, start)
                if m is not None:
                    froms.append(m)
                    from_end = m.end()
        i = text.find("import", i + 6)
    return imports, froms


@lru_cache(maxsize=64)
def _import_roots(text: str) -> dict:
    out: dict = {}
    imports, froms = _import_matches(text)
    for m in imports:
        for part in m.group(1).replace("\\", " ").split(","):
            words = part.split()
            if words:
                n = words[2] if len(words) == 3 and words[1] == "as" else words[0].split(".")[0]
                out.setdefault(n, set()).add(words[0].split(".")[0])
    for m in froms:
        r = m.group(1).split(".")[0]
        for part in m.group(2).strip("() \t\n").replace("\n", " ").split(","):
            words = part.split()
            if words:
                out.setdefault(words[-1], set()).add(r)
    return out


def bound_names(text: str) -> frozenset:
    """The names the import statements of ``text`` bind (the keys of :func:`import_roots`)."""
    return frozenset(_import_roots(text))


def import_roots(text: str) -> dict:
    """``{local name: {roots of the modules it may come from}}`` for every name an import
    statement of ``text`` binds, read from the text alone (never from what the imports
    resolve to, so facts stored by the file's hash stay true when other files come and go).
    A fresh copy of a memo (the plan asks for one text's several times)."""
    return {n: set(r) for n, r in _import_roots(text).items()}


class Aliases:
    """The libraries the names of one file's imports are bound to, computed when first
    asked (most files never need them): :meth:`foreign`."""

    def __init__(self, text: str):
        self.text = text
        self._imports = None
        self._rebound: dict = {}

    def bound(self) -> dict:
        """:func:`import_roots` of the text, computed once (read-only)."""
        if self._imports is None:
            self._imports = _import_roots(self.text)
        return self._imports

    def only_from(self, name: str, roots) -> bool:
        """Whether ``name`` is bound only by imports, all of them from modules under
        ``roots`` (``torch`` by ``import torch``, ``np`` by ``import numpy as np``), and never
        assigned otherwise."""
        bound = self.bound().get(name)
        return bool(bound) and bound <= roots and not self._is_rebound(name)

    def _is_rebound(self, name: str) -> bool:
        rebound = self._rebound.get(name)
        if rebound is None:
            # a name also bound otherwise (``xp = torch``, a parameter ``np=...``) may be anything
            e = re.escape(name)
            rebound = self._rebound[name] = re.search(
                r"(?<![\w.])%s[ \t]*=(?!=)|^[ \t]*%s[ \t]*:[^=\n]*=" % (e, e), self.text, re.M) is not None
        return rebound

    def foreign(self, name: str, root: str) -> bool:
        """Whether ``name`` is bound only by imports, and none of them from ``root``."""
        roots = self.bound().get(name)
        if not roots or root in roots:
            return False
        return not self._is_rebound(name)


# -- consumers -------------------------------------------------------------------------------
class Taken(frozenset):
    """The names from-imports take (a frozenset), with ``renamed``: name -> the aliases it
    is bound to (``from torch import from_dlpack as to_torch``)."""

    renamed: dict

    def __new__(cls, names, renamed=None):
        out = super().__new__(cls, names)
        out.renamed = renamed or {}
        return out


def taken_names(imports) -> Taken:
    """The names from-imports take (as the module spells them: ``from torch import
    from_dlpack as fd`` takes ``from_dlpack``; ``fd`` is in its ``renamed``)."""
    renamed: dict = {}
    for _, names in imports:
        for name, alias in names or ():
            if alias and alias != name:
                renamed.setdefault(name, []).append(alias)
    return Taken((name for _, names in imports for name, _alias in names or ()),
                 {name: tuple(aliases) for name, aliases in renamed.items()})


def consumer(text: str, sinks: Prefilter, roots: set, taken=frozenset(), present=None) -> bool:
    """Whether ``text`` uses a consumer: a method, attribute or builtin sink, or a sink of a
    library whose root it imports, used as an attribute (``torch.tensor(``, or
    ``getattr(torch, "tensor")``) or imported by name (``taken``: the names of its
    from-imports; ``present``: a :class:`Present` of ``text``)."""
    if not sinks.wants(text, present):
        return False
    return consumer_in(text, sinks, roots, taken, Aliases(text), present)


def consumer_in(text: str, sinks: Prefilter, roots: set, taken=frozenset(), aliases=None, present=None) -> bool:
    """:func:`consumer` of a part of a file (its imports, ``roots`` and ``aliases``,
    elsewhere)."""
    if uses_any(text, sinks.standalone, present):
        return True
    has = text.__contains__ if present is None else present
    renamed = getattr(taken, "renamed", None)
    for root, names in sinks.pairs:
        if root in roots:
            for n in names:
                if has(n) and (n in taken or non_literal_use(text, n, root, aliases)):
                    return True
                if renamed and n in renamed and uses_any(text, renamed[n]):   # ``to_torch(x)``
                    return True
    return False


_RECEIVER = re.compile(r"(?<![\w.])([A-Za-z_]\w*)[ \t]*$")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?j?(?![\w.])")
_LITERAL_REST = re.compile(r"[\s,\[\]()+\-]*")


@lru_cache(maxsize=256)
def _getattr_re(word: str):
    # ``getattr(obj, "word"...)``: a constant name is the attribute it names, as the
    # analysis reads it
    w = re.escape(word)
    return re.compile(r"\bgetattr\([^,()]*,[ \t]*[\"']%s[\"']" % w)


@lru_cache(maxsize=256)
def _attr_name_re(word: str):
    # ``word`` after a dot, a space or a tab and before no word character (where an
    # attribute ``.word`` can end), spelled word first: a search skips to its occurrences
    w = re.escape(word)
    return re.compile(r"%s(?<=[. \t]%s)(?![\w])" % (w, w))


def _first_argument(text: str, start: int) -> Optional[str]:
    """The text of the first argument of the call whose ``(`` is at ``start``; None when
    it cannot be told cheaply (a string, or no end)."""
    depth = 0
    for i in range(start + 1, min(len(text), start + 2000)):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return text[start + 1:i]
            depth -= 1
        elif c == "," and depth == 0:
            return text[start + 1:i]
        elif c in "\"'#":
            return None
    return None


def non_literal_use(text: str, name: str, root: Optional[str] = None, aliases=None) -> bool:
    """Whether ``text`` uses the sink ``name`` (of library ``root``) as an attribute
    (``.name``, or ``getattr(obj, "name")``), other than on a name an import binds to
    another library only (``np.asarray`` is no ``torch.asarray``; ``aliases``:
    :class:`Aliases`), or in a call whose first argument is a number or a (nested) list or
    tuple of numbers (``torch.tensor([1.0, 2.0])``: no JAX value can reach it).  The
    attribute uses are the occurrences of ``name`` with a dot before (spaces or tabs
    between) and no word character after."""
    g = text.find("getattr(")
    if g >= 0:
        pattern = _getattr_re(name)
        while g >= 0:
            if pattern.match(text, g) is not None:
                return True
            g = text.find("getattr(", g + 8)
    end = len(text)
    for m in _attr_name_re(name).finditer(text):
        dot = m.start() - 1
        while dot >= 0 and text[dot] in " \t":
            dot -= 1
        if dot < 0 or text[dot] != ".":
            continue
        if aliases is not None and root is not None:
            r = _RECEIVER.search(text, max(0, dot - 80), dot)
            if r is not None and aliases.foreign(r.group(1), root):
                continue
        k = m.end()
        while k < end and text[k] in " \t":
            k += 1
        if k >= end or text[k] != "(":
            return True
        arg = _first_argument(text, k)
        if arg is None or not arg.strip() or not _LITERAL_REST.fullmatch(_NUMBER.sub("", arg)):
            return True
    return False


def alone(text: str, specs, jax: bool, present=None) -> bool:
    """Whether ``text`` uses the words of one of ``specs`` (see :func:`~.words.alone_words`)."""
    return any((jax or not needs_jax) and uses_any(text, names, present) and (not needs or uses_any(text, needs, present))
               for names, needs, needs_jax in specs)
