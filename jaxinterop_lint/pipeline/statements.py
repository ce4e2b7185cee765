"""The statements of a text read with CPython's :mod:`ast`, for the masking (:mod:`.masking`).

CPython's parser is about 25 times faster than libcst's, and its nodes carry exact line
ranges (``lineno``/``end_lineno``, decorators included), so the masking never loses track of
a statement the way a line scanner can.  For each statement (top-level, or of a class body)
this module gives its line range, the names it binds and the names its *code* uses:
identifiers, attributes, keyword arguments, import names, ``global`` names, the constant
names of ``getattr``/``hasattr``/``setattr``/``delattr`` and the names in string
annotations; never docstrings, comments, other string constants, or the names a ``def`` or
``class`` or a parameter defines (``def __dlpack__(self)`` uses no ``__dlpack__``).
Statements that share a line (``a = 1; b = 2``) make one :class:`Stmt`.
"""
from __future__ import annotations

import ast
import re
from typing import Optional

from ..astbinds import bound_into as _bound
from ..knowledge.structures import MUTATING_METHODS, QUEUES

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME_CALLS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class Stmt:
    """One statement (or several sharing lines): ``first``/``last`` 0-based line indexes
    (inclusive), ``uses`` (frozenset of names its code uses, computed on first use: most
    statements of a file are never asked), ``defines`` (names it binds in its scope),
    ``name`` (the name of a ``def``/``class``, else None), ``is_import``, ``node`` (its
    ``ast`` node; None for statements merged)."""

    __slots__ = ("first", "last", "_uses", "defines", "name", "is_import", "node", "nodes")
    offset = 0      # the line numbers of its ast nodes are the text's

    def __init__(self, first, last, defines, name, is_import, node):
        self.first, self.last, self.defines = first, last, defines
        self.name, self.is_import, self.node, self.nodes = name, is_import, node, [node]
        self._uses = None

    @property
    def uses(self) -> frozenset:
        """The names the code of the statement uses (:func:`uses_of`)."""
        if self._uses is None:
            self._uses = frozenset().union(*map(uses_of, self.nodes))
        return self._uses

    @property
    def is_def(self) -> bool:
        """Whether the statement is a lone ``def`` or ``class``."""
        return self.name is not None


def parse(text: str) -> Optional[ast.Module]:
    """``text`` parsed by CPython's ``ast`` (a leading BOM ignored), or None when this
    Python cannot parse it (newer syntax, a syntax error, too deep)."""
    try:
        return ast.parse(text[1:] if text.startswith("\ufeff") else text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _first_line(node) -> int:
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno] + [d.lineno for d in decorators]) if decorators else node.lineno


def _annotation_names(node, out: set) -> None:
    if type(node) is ast.Constant and isinstance(node.value, str):
        out.update(_IDENT.findall(node.value))


def uses_of(node) -> frozenset:
    """The names the code of ``node`` uses (see the module docstring).  One explicit walk
    (several times faster than ``ast.walk``: this runs over every kept statement)."""
    out: set = set()
    add = out.add
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        n = pop()
        t = type(n)
        if t is ast.Name:
            add(n.id)
            continue
        if t is ast.Constant:
            continue
        if t is ast.Attribute:
            add(n.attr)
        elif t is ast.keyword:
            if n.arg:
                add(n.arg)
        elif t is ast.Call:
            f = n.func
            if type(f) is ast.Name and f.id in _NAME_CALLS and len(n.args) >= 2:
                a = n.args[1]
                if type(a) is ast.Constant and isinstance(a.value, str):
                    add(a.value)
        elif t is ast.alias:
            out.update(n.name.split("."))
            if n.asname:
                add(n.asname)
            continue
        elif t is ast.ImportFrom:
            if n.module:
                out.update(n.module.split("."))
        elif t is ast.Global or t is ast.Nonlocal:
            out.update(n.names)
            continue
        elif t is ast.arg:
            _annotation_names(n.annotation, out)
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            _annotation_names(n.returns, out)
        elif t is ast.AnnAssign:
            _annotation_names(n.annotation, out)
        for field in n._fields:
            v = getattr(n, field, None)
            if v.__class__ is list:
                for x in v:
                    if isinstance(x, ast.AST):
                        push(x)
            elif isinstance(v, ast.AST):
                push(v)
    return frozenset(out)


def group(body: list, text_lines: int, offset: int = 0) -> list:
    """The :class:`Stmt` of each statement of ``body`` (a list of ``ast`` statements whose
    line numbers are ``offset`` lines short of the text's), statements sharing a line
    merged; ``text_lines`` bounds the last line."""
    out: list = []
    for node in body:
        first, last = _first_line(node) - 1 + offset, min(node.end_lineno + offset, text_lines) - 1
        defines: set = set()
        _bound(node, defines)
        alone = isinstance(node, _DEFS)
        if out and first <= out[-1].last:
            prev = out[-1]
            prev.last = max(prev.last, last)
            prev.nodes.append(node)
            prev.defines |= defines
            prev.name = prev.node = None
            prev.is_import = prev.is_import and isinstance(node, (ast.Import, ast.ImportFrom))
            continue
        out.append(Stmt(first, last, defines, node.name if alone else None,
                        isinstance(node, (ast.Import, ast.ImportFrom)), node))
    return out


def statements(text: str, n_lines: int) -> Optional[tuple]:
    """``(the top-level statements of text, its ast Module)`` (``n_lines`` lines), or None
    where ``ast`` cannot parse it."""
    tree = parse(text)
    if tree is None:
        return None
    return group(tree.body, n_lines), tree


def class_body(node) -> Optional[list]:
    """The body statements of ``node`` when it is a ``class``, else None."""
    return node.body if isinstance(node, ast.ClassDef) else None


_SELF_STORE = re.compile(
    r"\bself\.(\w+)\s*(?::[^=\n]*)?(?:[-+*/%&|^@]|//|\*\*|>>|<<)?=(?!=)"     # self.x (: T) (op)= ...
    r"|\bself\.(\w+)\s*[)\]]\s*=(?!=)"                                       # (a, self.x) = ...
    r"|(?:^|(?<=,))[ \t(\[]*self\.(\w+)\s*,"                                       # self.x, b = / a, self.x, b =
    r"|\b(?:for|as)\s+\(?self\.(\w+)", re.M)                                  # for self.x in / as self.x


def stored_attributes(text: str) -> frozenset:
    """The attributes the code ``text`` may assign on ``self`` (``self.x = ...``,
    ``self.x: T = ...``, ``self.x += ...``, ``self.a, self.b = ...``, ``for self.x in``,
    ``as self.x``): read from the text, a superset of what it stores."""
    return frozenset(n for groups in _SELF_STORE.findall(text) for n in groups if n)


def sink_aliases(tree_nodes, sink_names) -> set:
    """Names bound at module level (inside ``try``/``if`` blocks too) by imports of a name
    in ``sink_names`` (``from torch import from_dlpack as fd``: ``fd``), or by any import from
    a module whose dotted name has a part in ``sink_names`` (``from
    jax.experimental.buffer_callback import Buffer``: ``Buffer``, which makes a parameter
    an FFI buffer): code using them uses the word."""
    out: set = set()
    stack = list(tree_nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ImportFrom):
            whole = bool(node.module and set(node.module.split(".")) & sink_names)
            for a in node.names:
                if whole or a.name in sink_names:
                    out.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and set(a.name.split(".")) & sink_names:
                    out.add(a.asname)
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)
        elif isinstance(node, ast.stmt) and not isinstance(node, _SCOPES):
            stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, (ast.stmt, ast.ExceptHandler)))
    return out


# -- statements read lazily: cut from the text, each parsed when first asked ------------------
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b")
_DEF_HEAD = re.compile(r"(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)")
_NOT_START = " \t\r\n\f#)]}"
# Characters some readers take for line ends (``str.splitlines``): a text with one is read whole.
_ODD = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


# Strings and comments, left to right (a quote in a comment, a ``#`` in a string); only the
# triple-quoted ones can hold a line end.
_STRING_OR_COMMENT = re.compile(r"""(\"\"\"|\'\'\')(?:\\[\s\S]|(?!\1)[\s\S])*?(?:\1|$(?![\s\S]))|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|#[^\n]*""")


def _in_strings(lines: list, text: str) -> set:
    """Indexes of the ``lines`` (of ``text``) that start inside a triple-quoted string
    (their column 0 is no statement's)."""
    if '"""' not in text and "'''" not in text:
        return set()
    import bisect
    from itertools import accumulate

    starts = list(accumulate(map(len, lines), initial=0))
    out: set = set()
    for m in _STRING_OR_COMMENT.finditer(text):
        if m.group(1) is None:
            continue
        a = bisect.bisect_right(starts, m.start()) - 1
        b = bisect.bisect_right(starts, m.end() - 1) - 1
        out.update(range(a + 1, b + 1))
    return out


class Unsplit(Exception):
    """A unit cut from the text is not a statement CPython parses (a line at column 0
    inside a string or brackets): the text must be read whole (:func:`statements`)."""


class LazyStmt(Stmt):
    """A top-level statement cut from the text by its lines (:func:`lazy_statements`),
    with the interface of :class:`Stmt`.  A ``def`` or ``class`` (most of a module's text)
    defines its name and is parsed with ``ast`` when ``node`` or ``uses`` is first asked
    (raising :class:`Unsplit` when it is no statement); any other unit is parsed at once."""

    __slots__ = ("chunk", "_nodes", "offset")

    def __init__(self, first, last, chunk, name, is_import):
        self.first, self.last, self.chunk, self.name, self.is_import = first, last, chunk, name, is_import
        self.offset = first         # what the line numbers of its ast nodes are counted from
        self._nodes = self._uses = None
        if name is not None:
            self.defines = {name}
        else:       # imports and other module-level statements are few and small: read now
            self.defines = set()
            for node in self.nodes:
                _bound(node, self.defines)

    @property
    def nodes(self) -> list:
        """The ``ast`` statements of the unit (their line numbers count from the unit's
        first line, :attr:`offset` lines into the text)."""
        if self._nodes is None:
            try:
                tree = ast.parse(self.chunk)
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                raise Unsplit(self.first) from None
            if not tree.body or self.name is not None and (
                    len(tree.body) != 1 or not isinstance(tree.body[0], _DEFS) or tree.body[0].name != self.name):
                raise Unsplit(self.first)
            self._nodes = tree.body     # (line numbers from the unit's first line: ``offset``)
        return self._nodes

    @property
    def node(self):
        """The unit's ``ast`` statement (None when it holds several)."""
        nodes = self.nodes
        return nodes[0] if len(nodes) == 1 else None


def lazy_statements(lines: list) -> Optional[tuple]:
    """``(the top-level units of the text of lines, the ast statements of those that
    import)``, cut at the lines that start at column 0 (not ``else``/``elif``/``except``/
    ``finally``, a comment or a closing bracket; decorators go with their ``def``).  Only
    the units a question needs are parsed (:class:`LazyStmt`), so a large module whose
    interop words sit in a few functions is never read whole.  None for a text with line
    ends other than ``\\n``/``\\r\\n``/``\\r`` (read whole then).  Raises :class:`Unsplit`
    when a unit other than a ``def`` or ``class`` does not parse."""
    text = "".join(lines)
    if any(c in text for c in _ODD):
        return None
    inside = _in_strings(lines, text)
    starts = []
    pending = None
    for i, line in enumerate(lines):
        head = line[:1]
        if not head or head in _NOT_START or i in inside or _CONTINUES.match(line):
            continue
        if head == "@":
            pending = i if pending is None else pending
            continue
        starts.append((i if pending is None else pending, i))
        pending = None
    units = []
    for n, (first, head_line) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        last = end - 1
        while last > head_line and (not lines[last].strip() or lines[last].lstrip().startswith("#")):
            last -= 1
        head = lines[head_line]
        m = _DEF_HEAD.match(head)
        chunk = "".join(lines[first:last + 1])
        units.append(LazyStmt(first, last, chunk, m.group(1) if m else None,
                              head.startswith(("import ", "from ")) and m is None))
    importing = [node for u in units if u.name is None and "import" in u.chunk for node in u.nodes]
    return units, importing


# -- module state written by defs (the plan's units and the masking) ---------------------------
_WORD = re.compile(r"[A-Za-z_]\w*")   # as the plan's units read names (toplevel.IDENT)
# ``X = []``, ``X: dict = {}``, ``X = collections.defaultdict(list)``: a module's container
# (or a queue: knowledge/structures.py QUEUES, ``Q = queue.Queue()``)
_CONTAINER = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*(?:[\[{]|(?:(?:collections|queue|asyncio)[ \t]*\.[ \t]*)?"
                        r"(?:list|dict|set|defaultdict|OrderedDict|deque|%s)[ \t]*\()"
                        % "|".join(sorted({q.rsplit(".", 1)[1] for q in QUEUES})), re.M)
# the methods that change a container in place (analysis/structures.py: knowledge/structures.py MUTATING)
_CHANGES = tuple(sorted(MUTATING_METHODS | {"add"}))     # (and a set's add)
# ``global X, Y`` inside a def
_GLOBAL = re.compile(r"^[ \t]+global[ \t]+([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)", re.M)


def module_writes(units: list, is_def=None) -> list:
    """For ``units`` (``[(names, text)]``), the module names each one writes besides its
    own: a def or class (``is_def[i]``; by default a text starting a def, a class or a
    decorator) writing ``global X`` or changing another unit's name (``BUF.append(v)``,
    ``CACHE[k] = v``), and every unit that calls such a writer (to a fixpoint): what the
    writer leaves there is part of those names' values (``collect(sharded)`` then
    ``flush()`` exporting ``BUF``: analysis/module_state.py).  One set per unit, mostly
    empty (no text is scanned twice when no def writes)."""
    extra: list = [set() for _ in units]
    defs = [bool(names) and (is_def[i] if is_def is not None else body.startswith(("def ", "class ", "async ", "@")))
            for i, (names, body) in enumerate(units)]
    # the module's containers: names a statement binds to a list, dict or set display or call
    containers = {n for (names, body), d in zip(units, defs) if not d and names
                  for n in _CONTAINER.findall(body) if n in names}
    changes = re.compile(r"(?<![\w.])(%s)[ \t]*(?:\[[^\n=]*\][ \t]*=(?!=)|\.[ \t]*(?:%s)[ \t]*\()" % (
        "|".join(sorted(map(re.escape, containers))), "|".join(_CHANGES))) if containers else None
    writes: dict = {}
    for i, (names, body) in enumerate(units):
        if defs[i]:
            w = {t for m in _GLOBAL.findall(body) for t in _WORD.findall(m)} if "global" in body else set()
            if changes is not None:
                w.update(changes.findall(body))
            w.difference_update(names)
            if w:
                writes[names[0]] = w
                extra[i] |= w
    if not writes:
        return extra
    idents = [set(_WORD.findall(body)) for _, body in units]
    grew = True
    while grew:
        grew = False
        for i, (names, body) in enumerate(units):
            used = idents[i] & set(writes)
            more = set().union(*(writes[n] for n in used if n not in names[:1])) - set(names) - extra[i] \
                if used else set()
            if more:
                extra[i] |= more
                if defs[i]:
                    writes.setdefault(names[0], set()).update(more)
                grew = True
    return extra


# ``n[k] = v``, ``n.attr = v``, ``n.attr[k] = v`` (a class's registry), ``n += v``,
# ``n.append(v)``...: a statement that changes what ``n`` holds.  A subscript is one bracket
# pair holding no bracket or one level of brackets (``n[k[0]]``), so a chain of them
# (``x[0][0][0]``) splits one way only: a bracket that may hold brackets made the search
# exponential in the chain's length (26 subscripts: 15 s).  The name starts no attribute
# (``a.b.c = v`` changes ``a``; a search from each attribute of a long chain was quadratic).
_SUBSCRIPT = r"\[(?:[^\n=\[\]]|\[[^\n=\[\]]*\])*\]"
_PART = r"(?:%s|\.[ \t]*[A-Za-z_]\w*)" % _SUBSCRIPT
_MUTATED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)[ \t]*(?:(?:%s[ \t]*)+"
                      r"(?:[-+*/@%%&|^]|//|\*\*|<<|>>)?=(?!=)|(?:[-+*/@%%&|^]|//|\*\*|<<|>>)=|"
                      r"(?:%s[ \t]*)*\.[ \t]*(?:append|extend|insert|update|setdefault|add)[ \t]*\()" % (_PART, _PART))
# a statement that calls a method of a name (``holder.set(v)``), on ``"\n" + text``
_CALLED_ON = re.compile(r"\n[ \t]*([A-Za-z_]\w*)[ \t]*\.[ \t]*[A-Za-z_]\w*[ \t]*\(")
# a class statement's head: its name and what is between its parentheses (bases, keywords)
_CLASS_HEAD = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?", re.M)


def registrations(units: list, is_def: list, heads=None) -> list:
    """For ``units`` (``[(names, text)]``; ``is_def[i]``: a def or class), the module names
    each one fills besides its own, one set per unit: a class statement whose base (of this
    module) defines ``__init_subclass__`` fills that base (``class TorchExporter(Exporter,
    name="torch")`` registers itself: PEP 487); another statement fills the module names
    whose contents it changes (``Sinks.TABLE["raw"] = RawExporter``, ``REG["k"] = f``) or
    whose method it calls (``Table.add("tensor", TensorExporter)``: a method may store its
    argument).  What a registry holds is then part of that name's value.  ``heads``: the
    names such a statement may fill (None: any name a unit defines)."""
    defined = {n for names, _ in units for n in names} if heads is None else heads
    # a class whose ``__init_subclass__`` may register its subclasses
    registering = {names[0] for (names, body), d in zip(units, is_def) if d and names and "__init_subclass__" in body
                   and _CLASS_HEAD.search(body)} if any("__init_subclass__" in b for _, b in units) else ()
    out = []
    for (names, body), d in zip(units, is_def):
        extra: set = set()
        if d:
            m = _CLASS_HEAD.search(body) if registering and "class" in body else None
            if m is not None and m.group(1) not in registering:
                extra.update(b for b in _WORD.findall(m.group(2) or "") if b in registering)
        else:
            if "=" in body or "(" in body:
                extra.update(n for n in _MUTATED.findall(body) if n in defined)
            if "." in body and "(" in body:
                extra.update(n for n in _CALLED_ON.findall("\n" + body) if n in defined)
        out.append(extra - set(names))
    return out
