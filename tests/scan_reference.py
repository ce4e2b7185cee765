"""The plan's text scanners as they were at 80bf1f1 (regular expressions tried at every
position), kept as the reference the fast ones of ``jaxinterop_lint/pipeline/scan.py`` must
agree with (tests/test_plan_scan.py).  Not part of the package."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from jaxinterop_lint.pipeline.words import Prefilter, bare_roles




_TOP_DEF = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_TOP_NAME = re.compile(r"(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)")


# A unit that defines a function or class (its decorators first): device-count words there
# do not make its name a carrier (only module-level values, such as a mesh, do).
_DEFINES_UNIT = re.compile(r"(?:[ \t]*@[^\n]*\n)*[ \t]*(?:async[ \t]+)?(?:def|class)\b")
_PROSE = re.compile(r'''"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|^[ \t]*#[^\n]*''', re.M)
_ASSIGNED = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)


def _units_of(text: str) -> list:
    """Split a module's text into top-level units: ``[(names it defines, lines)]``.  A def
    or class defines its name (its decorators go with it); any other top-level statement
    defines the names assigned in it (at any depth: ``if``/``try`` blocks); imports are left
    out (the plan has them).  A line at column 0 inside a bracket or a string (rare) starts
    a unit of its own, which only makes the plan keep more."""
    units = []
    current = None
    pending: list = []
    for line in text.splitlines(True):
        head = line[:1]
        if head and head not in " \t\r\n#)]}" and not line.startswith(("else", "elif", "except", "finally")):
            if line.startswith("@"):
                pending.append(line)
                current = None
                continue
            m = _TOP_NAME.match(line)
            if m:
                current = [*pending, line]
                units.append(((m.group(1),), current))
            elif line.startswith(("import ", "from ")):
                current = False
            else:
                current = [*pending, line]
                units.append((None, current))
            pending = []
            continue
        if current:
            current.append(line)
    units = [(names if names is not None else tuple(_ASSIGNED.findall("".join(lines))), lines)
             for names, lines in units]
    # a statement other than a def or class: the names of its tuple, ``as`` and ``for``
    # targets, and the names of other units whose contents it changes
    defined = {n for names, _ in units for n in names}
    # a class defining ``__init_subclass__``: each subclass's class statement registers in it
    head = r"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?"
    registering = {names[0] for names, lines in units if names and re.match(r"def |class |async |@", "".join(lines))
                   and "__init_subclass__" in "".join(lines) and re.search(head, "".join(lines), re.M)}
    out = []
    for names, lines in units:
        body = "".join(lines)
        extra, more = [], set()
        if not re.match(r"def |class |async |@", body):
            extra = [t.strip().lstrip("*") for m in _TUPLE.finditer(body)
                     if re.search(r"[,(\[]", m.group(0)) for t in m.group(1).split(",")]
            extra += re.findall(r"\bas[ \t]+([A-Za-z_]\w*)", body)
            extra += [t for m in re.findall(r"^[ \t]*(?:async[ \t]+)?for[ \t]+([^\n]*?)[ \t]+in\b", body, re.M)
                      for t in re.findall(r"[A-Za-z_]\w*", m)]
            more = {n for n in _MUTATED.findall(body) if n in defined}
            more |= {n for n in re.findall(r"^[ \t]*([A-Za-z_]\w*)[ \t]*\.[ \t]*[A-Za-z_]\w*[ \t]*\(", body, re.M)
                     if n in defined}
        else:
            m = re.search(head, body, re.M) if registering else None
            if m is not None and m.group(1) not in registering:
                more = {b for b in re.findall(r"[A-Za-z_]\w*", m.group(2) or "") if b in registering}
        extra += sorted(more - set(names))
        if extra:
            names = tuple(dict.fromkeys(tuple(names) + tuple(extra)))
        out.append((names, lines))
    # a def or class writing a module name (``global X``, ``X.append(v)`` of a name another
    # unit defines) binds it too, and so does every unit calling such a writer (fixpoint)
    containers = set()
    for names, lines in out:
        body = "".join(lines)
        if names and not re.match(r"def |class |async |@", body):
            containers |= {n for n in re.findall(
                r"^[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*(?:[\[{]|(?:collections[ \t]*\.[ \t]*)?"
                r"(?:list|dict|set|defaultdict|OrderedDict|deque)[ \t]*\()", body, re.M) if n in names}
    writes = {}
    for names, lines in out:
        body = "".join(lines)
        if re.match(r"def |class |async |@", body) and names:
            w = {t for m in re.findall(r"^[ \t]+global[ \t]+([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)", body, re.M)
                 for t in re.findall(r"[A-Za-z_]\w*", m)}
            for n in containers:
                if re.search(r"(?<![\w.])%s[ \t]*(?:\[[^\n=]*\][ \t]*=(?!=)|\.[ \t]*(?:append|extend|insert|update|"
                             r"setdefault|add|appendleft)[ \t]*\()" % re.escape(n), body):
                    w.add(n)
            w -= set(names)
            if w:
                writes[names[0]] = w
    extra = [set(writes.get(names[0], ())) if names and re.match(r"def |class |async |@", "".join(lines)) else set()
             for names, lines in out]
    grew = bool(writes)
    while grew:
        grew = False
        for i, (names, lines) in enumerate(out):
            body = "".join(lines)
            more = set()
            for n in set(re.findall(r"[A-Za-z_]\w*", body)) & set(writes):
                if n not in names[:1]:
                    more |= writes[n]
            more -= set(names) | extra[i]
            if more:
                extra[i] |= more
                if names and re.match(r"def |class |async |@", body):
                    writes.setdefault(names[0], set()).update(more)
                grew = True
    out = [(tuple(dict.fromkeys(tuple(names) + tuple(sorted(e)))) if e else names, lines)
           for (names, lines), e in zip(out, extra)]
    return out


_TUPLE = re.compile(r"^[ \t]*[(\[]?[ \t]*(\*?[A-Za-z_]\w*(?:[ \t]*,[ \t]*\*?[A-Za-z_]\w*)*)[ \t]*,?[ \t]*[)\]]?[ \t]*=(?!=)",
                    re.M)
_SUBSCRIPT = r"\[(?:[^\n=\[\]]|\[[^\n=\[\]]*\])*\]"   # no bracket inside, or one level
_PART = r"(?:%s|\.[ \t]*[A-Za-z_]\w*)" % _SUBSCRIPT
_MUTATED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)[ \t]*(?:(?:%s[ \t]*)+"
                      r"(?:[-+*/@%%&|^]|//|\*\*|<<|>>)?=(?!=)|(?:[-+*/@%%&|^]|//|\*\*|<<|>>)=|"
                      r"(?:%s[ \t]*)*\.[ \t]*(?:append|extend|insert|update|setdefault|add)[ \t]*\()" % (_PART, _PART))


@lru_cache(maxsize=4096)
def _word_re(word: str):
    # A whole identifier, not the name of a def or class (defining an API is not using it).
    return re.compile(r"(?<![\w])(?<!def )(?<!class )%s(?![\w])" % re.escape(word))


def uses_any(text: str, words) -> bool:
    """Whether one of ``words`` is used in ``text`` as a whole identifier (not defined)."""
    for w in words:
        if w in text and _word_re(w).search(text) is not None:
            return True
    return False


@lru_cache(maxsize=256)
def _role_re(word: str, role: str):
    # ``.word`` for a method; ``word=`` after ``(`` or ``,`` for a keyword (a parameter's
    # default spelled so counts too: that only adds to the plan).
    w = re.escape(word)
    if role == "method":
        return re.compile(r"\.[ \t]*%s(?![\w])" % w)
    return re.compile(r"[(,][ \t\r\n\\]*%s[ \t]*=(?!=)" % w)


_ROLES: dict = {}


def uses_in_role(text: str, words) -> bool:
    """Whether one of ``words`` is used in ``text``: a bare JAX word (see
    :func:`~.words.bare_roles`) only in its role, any other word as a whole identifier."""
    if not _ROLES:
        _ROLES.update(bare_roles())
    for w in words:
        if w in text:
            role = _ROLES.get(w)
            if (_role_re(w, role) if role else _word_re(w)).search(text) is not None:
                return True
    return False


def has_word(text: str, word: str) -> bool:
    """Whether ``word`` is used in ``text`` as a whole identifier."""
    return uses_any(text, (word,))



@lru_cache(maxsize=4096)
def _attr_re(word: str):
    """``.word`` as an attribute, or ``getattr(obj, "word"...)`` (a constant name is the
    attribute it names, as the analysis reads it)."""
    w = re.escape(word)
    return re.compile(r"\.[ \t]*%s(?![\w])|\bgetattr\([^,()]*,[ \t]*[\"']%s[\"']" % (w, w))


def _consumer(text: str, sinks: Prefilter, roots: set, taken=frozenset()) -> bool:
    """Whether ``text`` uses a consumer: a method, attribute or builtin sink, or a sink of a
    library whose root it imports, used as an attribute (``torch.tensor(``, or
    ``getattr(torch, "tensor")``) or imported by name (``taken``: the names of its
    from-imports)."""
    if not sinks.wants(text):
        return False
    return _consumer_in(text, sinks, roots, taken, Aliases(text))


def _consumer_in(text: str, sinks: Prefilter, roots: set, taken=frozenset(), aliases=None) -> bool:
    """:func:`_consumer` of a part of a file (its imports, ``roots`` and ``aliases``,
    elsewhere)."""
    if uses_any(text, sinks.standalone):
        return True
    for root, names in sinks.pairs:
        if root in roots:
            for n in names:
                if n in text and (n in taken or _non_literal_use(text, n, root, aliases)):
                    return True
    return False


_IMPORT_AS = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
_FROM_AS = re.compile(r"^[ \t]*from[ \t]+\.*([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.M)


def import_roots(text: str) -> dict:
    """``{local name: {roots of the modules it may come from}}`` for every name an import
    statement of ``text`` binds, read from the text alone (never from what the imports
    resolve to, so facts stored by the file's hash stay true when other files come and go)."""
    out: dict = {}
    for m in _IMPORT_AS.finditer(text):
        for part in m.group(1).replace("\\", " ").split(","):
            words = part.split()
            if words:
                n = words[2] if len(words) == 3 and words[1] == "as" else words[0].split(".")[0]
                out.setdefault(n, set()).add(words[0].split(".")[0])
    for m in _FROM_AS.finditer(text):
        r = m.group(1).split(".")[0]
        for part in m.group(2).strip("() \t\n").replace("\n", " ").split(","):
            words = part.split()
            if words:
                out.setdefault(words[-1], set()).add(r)
    return out


class Aliases:
    """The libraries the names of one file's imports are bound to, computed when first
    asked (most files never need them): :meth:`foreign`."""

    def __init__(self, text: str):
        self.text = text
        self._imports = None
        self._rebound: dict = {}

    def bound(self) -> dict:
        """:func:`import_roots` of the text, computed once."""
        if self._imports is None:
            self._imports = import_roots(self.text)
        return self._imports

    def foreign(self, name: str, root: str) -> bool:
        """Whether ``name`` is bound only by imports, and none of them from ``root``."""
        self.bound()
        roots = self._imports.get(name)
        if not roots or root in roots:
            return False
        rebound = self._rebound.get(name)
        if rebound is None:
            # a name also bound otherwise (``xp = torch``, a parameter ``np=...``) may be anything
            e = re.escape(name)
            rebound = self._rebound[name] = re.search(
                r"(?<![\w.])%s[ \t]*=(?!=)|^[ \t]*%s[ \t]*:[^=\n]*=" % (e, e), self.text, re.M) is not None
        return not rebound


_RECEIVER = re.compile(r"(?<![\w.])([A-Za-z_]\w*)[ \t]*$")


_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?j?(?![\w.])")
_LITERAL_REST = re.compile(r"[\s,\[\]()+\-]*")


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


def _non_literal_use(text: str, name: str, root: Optional[str] = None, aliases=None) -> bool:
    """Whether ``text`` uses the sink ``name`` (of library ``root``) as an attribute, other
    than on a name an import binds to another library only (``np.asarray`` is no
    ``torch.asarray``; ``aliases``: :class:`Aliases`), or in a call whose
    first argument is a number or a (nested) list or tuple of numbers
    (``torch.tensor([1.0, 2.0])``: no JAX value can reach it)."""
    for m in _attr_re(name).finditer(text):
        if m.group(0).startswith("getattr"):
            return True
        if aliases is not None and root is not None:
            r = _RECEIVER.search(text, max(0, m.start() - 80), m.start())
            if r is not None and aliases.foreign(r.group(1), root):
                continue
        k = m.end()
        while k < len(text) and text[k] in " \t":
            k += 1
        if k >= len(text) or text[k] != "(":
            return True
        arg = _first_argument(text, k)
        if arg is None or not arg.strip() or not _LITERAL_REST.fullmatch(_NUMBER.sub("", arg)):
            return True
    return False


def _taken(imports) -> frozenset:
    """The names from-imports take (as the module spells them: ``from torch import
    from_dlpack as fd`` takes ``from_dlpack``)."""
    return frozenset(name for _, names in imports for name, _alias in names or ())


def _alone(text: str, specs, jax: bool) -> bool:
    return any((jax or not needs_jax) and uses_any(text, names) and (not needs or uses_any(text, needs))
               for names, needs, needs_jax in specs)


def plain_lines(text: str) -> str:
    """``text`` with ``\\r\\n`` and lone ``\\r`` line ends made ``\\n`` (the plan's regular
    expressions see lines by ``\\n``; a file of ``\\r`` line ends is one line otherwise)."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text




def called(text: str, local: str) -> set:
    """The attributes ``text`` calls on the module bound to ``local`` (handon.py's
    ``_called`` before stop 48: a pattern per name)."""
    if local + "." not in text:
        return set()
    return {m.group(1) for m in re.finditer(re.escape(local) + r"\.(\w+)[ \t]*\(", text)
            if not m.start() or not (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_.")}
