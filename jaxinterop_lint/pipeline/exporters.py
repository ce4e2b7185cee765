"""Stage 3, plan (exporters): which functions of a module can export a parameter through a sink.

When the plan asks which functions of some top-level names export a parameter
(:meth:`~jaxinterop_lint.analysis.project.Project.exporting_tops`), only the functions that
*can* export are analysed (issue 16: a PyTorch class of 23 methods, one of which names a
consumer, is analysed for that one and what reaches it, not for all 23 and every module
their calls open).  A function can export when its own text uses a consumer (the test of
:meth:`~.plan.Plan.consumer_defs`: :func:`~.scan.consumer`) or when it uses a name that can
reach one: this is reachability in a graph read with CPython's :mod:`ast`, built lazily
across modules, whose nodes are

- the units of a module: each ``def`` (methods included, nested functions inside their
  function's text), each ``class``, and each other statement of a module or class body;
- a name looked up in a module (its local definers: the units that bind it, or write an
  attribute of that name anywhere in the module; its import, followed into the project
  module; a star import's modules);
- a member looked up on a class (its methods and class statements of that name, the methods
  writing ``self.<name>``, and the same member of each base class, in this module or another);
- a whole module (a module object handed around: every top-level unit).

A unit's edges are the names its code uses (:func:`~.statements.uses_of`: identifiers and
attribute names), looked up in its module, in its class (``self.``/``cls.``/``super()``
members, through the bases) and, for a dotted use of an imported module, in that module.
A reference to a class reaches all its members (an instance may call any of them).  A seed is
a unit whose text uses a consumer, or a module CPython cannot read.  A function can export
exactly when its unit reaches a seed: a superset of what the analysis finds, since a value the
analysis follows from one function into another is always named on the way (a call's callee,
a returned or stored value, a base class, an attribute written on ``self``).  Parameters are
never callees to the analysis (their values are symbolic), so a callback handed in is no edge.
"""
from __future__ import annotations

import ast
import os
from typing import Callable, Optional

from .scan import consumer, plain_lines, taken_names
from .statements import parse, uses_of

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCKS = (ast.If, ast.Try, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)
if hasattr(ast, "TryStar"):
    _BLOCKS = _BLOCKS + (ast.TryStar,)
_CLASS_BUILD = ("__init__", "__new__", "__post_init__", "__init_subclass__", "__class_getitem__")


class _Unit:
    __slots__ = ("node", "cls", "ids", "seed", "chains")

    def __init__(self, node, cls, ids, seed, chains):
        self.node, self.cls, self.ids, self.seed, self.chains = node, cls, ids, seed, chains


class _Module:
    """One module read for the graph: its units, what binds each name, its classes and
    imports (``None`` for a module CPython cannot read: a seed)."""

    def __init__(self, path: str, text: str, tree: ast.Module, scope: "ExportScope"):
        self.path = path
        index = scope.index
        self.imports: dict = {}      # name -> ("module", file) | ("name", file, name)
        self.stars: list = []        # files of project star imports
        roots, taken = set(), []
        package = index.package_of(path)
        lines = plain_lines(text).split("\n")
        self.units: list = []
        self.definers: dict = {}     # module-level name -> [node key]
        self.attr_writers: dict = {}  # attribute name -> [unit index]
        self.members: dict = {}      # class name -> {member name -> [unit index]}
        self.class_units: dict = {}  # class name -> [unit index] (members, in order)
        self.bases: dict = {}        # class name -> [base expression]
        self.class_refs: dict = {}   # class name -> ids of its bases, keywords, decorators
        self.defs: dict = {}         # the analysis's name of a def -> [top unit index]

        def bind_import(node):
            if isinstance(node, ast.Import):
                for a in node.names:
                    roots.add(a.name.split(".")[0])
                    if a.asname:
                        self._bind(a.asname, a.name, None, index)
                    else:
                        top = a.name.split(".")[0]
                        self._bind(top, top, None, index)
            else:
                module = _absolute(node.module, node.level, package)
                if module is None:
                    return
                roots.add(module.split(".")[0])
                taken.append((module, [(a.name, a.asname) for a in node.names]))
                for a in node.names:
                    if a.name == "*":
                        found = index.find_module(module)
                        if found is not None:
                            self.stars.append(found)
                        continue
                    self._bind(a.asname or a.name, module, a.name, index)

        # the imports first: a unit's consumer test needs the file's roots and taken names
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bind_import(node)
        self._roots, self._taken = roots, taken_names(taken)
        self._lines, self._scope = lines, scope

        def unit(node, cls, prefix):
            ids = uses_of(node)
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
            seg = "\n".join(lines[first - 1:node.end_lineno])
            seed = consumer(seg, scope.sinks, roots, self._taken)
            chains = _chains(node, self.imports) if ids & self.imports.keys() else ((), ())
            i = len(self.units)
            self.units.append(_Unit(node, cls, ids, seed, chains))
            for n in _attr_writes(node):
                self.attr_writers.setdefault(n, []).append(i)
                if cls is not None:
                    self.members[cls].setdefault(n, []).append(("w", path, i, n))
            if isinstance(node, _DEFS):
                self._name_defs(node, cls, prefix, i)
            return i

        def walk(body, cls, prefix):
            for node in body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                if isinstance(node, _BLOCKS):
                    walk(_block_bodies(node), cls, prefix)
                    for part in _block_heads(node):
                        i = unit(part, cls, prefix)
                        self._bound(i, _stored_names(part), cls)
                    continue
                if isinstance(node, ast.ClassDef):
                    if cls is None:
                        self.definers.setdefault(node.name, []).append(("c", path, node.name))
                    else:
                        i = unit(node, cls, prefix)
                        self._bound(i, {node.name}, cls)
                        continue
                    self.members.setdefault(node.name, {})
                    self.class_units.setdefault(node.name, [])
                    self.bases.setdefault(node.name, []).extend(node.bases)
                    refs = set()
                    for part in node.bases + [k.value for k in node.keywords] + node.decorator_list:
                        refs |= uses_of(part)
                    self.class_refs.setdefault(node.name, set()).update(refs)
                    walk(node.body, node.name, node.name)
                    continue
                i = unit(node, cls, prefix)
                if isinstance(node, _DEFS):
                    self._bound(i, {node.name}, cls)
                else:
                    self._bound(i, _stored_names(node), cls)

        walk(tree.body, None, None)

    def _bind(self, name, module, attr, index) -> None:
        if attr is not None:
            sub = index.find_module(f"{module}.{attr}")
            if sub is not None:
                self.imports[name] = ("module", sub)
                return
            found = index.find_module(module)
            if found is not None:
                self.imports[name] = ("name", found, attr)
            return
        found = index.find_module(module)
        if found is not None:
            self.imports[name] = ("module", found)
        elif module.split(".")[0] in index.top_names:
            self.imports[name] = ("package", module)

    def _bound(self, i: int, names, cls) -> None:
        for n in names:
            if cls is None:
                self.definers.setdefault(n, []).append(("u", self.path, i))
            else:
                self.members[cls].setdefault(n, []).append(("u", self.path, i))
        if cls is not None:
            self.class_units[cls].append(i)

    def written(self, i: int, attr: str) -> tuple:
        """``(called, plain)``: the names the values unit ``i`` writes to ``<x>.attr`` can
        come from (:func:`_flow`), seeds of the assignments' values."""
        return _flow(self.units[i].node, lambda t: isinstance(t, ast.Attribute) and t.attr == attr)

    def returned(self, i: int) -> tuple:
        """``(called, plain)`` of what the def of unit ``i`` returns or yields."""
        return _flow(self.units[i].node, None)

    def _name_defs(self, node, cls, prefix, top: int) -> None:
        """Record the name the analysis gives ``node`` and each def nested in it
        (:meth:`~jaxinterop_lint.analysis.flow.Walker.qualify`), all for the unit ``top``."""
        name = f"{prefix}.{node.name}" if prefix else node.name
        self.defs.setdefault(name, []).append(top)
        todo = [(child, name, None) for child in node.body]
        while todo:
            n, outer, inner_cls = todo.pop()
            if isinstance(n, _DEFS):
                q = f"{inner_cls}.{n.name}" if inner_cls else f"{outer}.{n.name}"
                self.defs.setdefault(q, []).append(top)
                todo.extend((c, q, None) for c in n.body)
            elif isinstance(n, ast.ClassDef):
                todo.extend((c, outer, n.name) for c in n.body)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    for c in getattr(n, field, ()) or ():
                        todo.append((c, outer, inner_cls))
                for c in getattr(n, "cases", ()) or ():
                    todo.extend((b, outer, inner_cls) for b in c.body)


class ExportScope:
    """The graph of the module docstring over one project, built as it is asked and kept for
    the run.  ``index`` finds modules (``find_module``, ``package_of``, ``top_names``),
    ``text_of(path)`` reads a file (raises ``OSError``/``SourceError`` when it cannot),
    ``sinks`` are the consumer words (``Words.sinks``: the built-in sinks and the
    configuration's extra ones)."""

    def __init__(self, index, text_of: Callable[[str], str], sinks):
        self.index = index
        self.text_of = text_of
        self.sinks = sinks
        self._modules: dict = {}
        self._yes: set = set()
        self._no: set = set()
        self.modules_read = 0

    def module(self, path: str) -> Optional[_Module]:
        """The module read for the graph, or None when it cannot be read."""
        key = os.path.abspath(path)
        if key not in self._modules:
            m = None
            try:
                text = self.text_of(key)
                tree = parse(text)
                if tree is not None:
                    m = _Module(key, text, tree, self)
            except Exception:  # unreadable, or a text this reading cannot take: a seed
                m = None
            self._modules[key] = m
            self.modules_read += 1
        return self._modules[key]

    def can_export(self, path: str) -> Optional[Callable[[str], bool]]:
        """A test of the functions of module ``path`` by the names the analysis gives them
        (``C.m``, ``f.inner``, ``<lambda>``): False only for a function that cannot export a
        parameter through a sink (see the module docstring); None when the module cannot be
        read (every function is analysed)."""
        m = self.module(path)
        if m is None:
            return None
        cache: dict = {}

        def test(name: str) -> bool:
            tops = m.defs.get(name)
            if tops is None:
                return True         # a lambda, or a name this reading does not know
            if name not in cache:
                cache[name] = any(self.reaches_seed(("u", m.path, i)) for i in tops)
            return cache[name]

        return test

    # -- reachability ------------------------------------------------------------------------
    def reaches_seed(self, start) -> bool:
        """Whether graph node ``start`` reaches a seed (memoised: a search that finds none
        proves every node it visited reaches none)."""
        if start in self._yes:
            return True
        if start in self._no:
            return False
        seen = {start}
        todo = [start]
        used: set = set()       # every name the units reached use (members an instance may call)
        classes: list = []      # the classes reached
        while todo:
            node = todo.pop()
            new = []
            if node[0] == "u":
                m = self.module(node[1])
                if m is not None:
                    fresh = m.units[node[2]].ids - used
                    if fresh:
                        used |= fresh
                        for c in classes:
                            new.extend(("m", c[1], c[2], n) for n in fresh)
            elif node[0] == "c":
                classes.append(node)
                new.extend(("m", node[1], node[2], n) for n in used)
            for nxt in self._edges(node):
                new.append(nxt)
            for nxt in new:
                if nxt is True or nxt in self._yes:
                    self._yes.add(start)
                    return True
                if nxt not in seen and nxt not in self._no:
                    seen.add(nxt)
                    todo.append(nxt)
        # nothing reached a seed: neither does any node reached (what each reaches, with the
        # names it sees used, is a part of this search)
        self._no.update(seen)
        return False

    def _edges(self, node):
        """The successors of ``node`` (``True``: a seed)."""
        kind, path = node[0], node[1]
        m = self.module(path)
        if m is None:
            yield True
            return
        if kind == "u":
            u = m.units[node[2]]
            if u.seed:
                yield True
                return
            chains, bare = u.chains
            for n in u.ids:
                if n in bare or m.imports.get(n, ("name",))[0] == "name":
                    yield ("x", path, n)    # (a module named only in dotted uses: those)
                if u.cls is not None:
                    yield ("m", path, u.cls, n)
            for chain in chains:
                yield from self._chain(m, chain)
        elif kind == "x":
            name = node[2]
            for d in m.definers.get(name, ()):
                yield d
            for i in m.attr_writers.get(name, ()):
                yield ("w", path, i, name)
            imp = m.imports.get(name)
            if imp is not None:
                if imp[0] == "name":
                    yield ("x", imp[1], imp[2])
                elif imp[0] == "module":
                    yield ("M", imp[1])
                else:
                    yield True      # a project package that is no file here: unknown
            elif name not in m.definers:
                for star in m.stars:
                    yield ("x", star, name)
        elif kind in ("w", "r"):
            # a value: where it comes from.  A name it is called through gives its returned
            # value ("R"); a name used otherwise may be the value itself (then it may be
            # called: the unit that binds it)
            u = m.units[node[2]]
            if kind == "w":
                called, plain = m.written(node[2], node[3])
            elif isinstance(u.node, _DEFS):
                called, plain = m.returned(node[2])
            else:
                yield ("u", path, node[2])
                return
            for n in plain:
                yield ("x", path, n)
                if u.cls is not None:
                    yield ("m", path, u.cls, n)
            for n in called - plain:
                yield ("R", path, n, u.cls)
        elif kind == "R":
            # the value a call of ``name`` returns (looked up in the module, the unit's class)
            name, cls = node[2], node[3]
            found = list(m.definers.get(name, ()))
            if cls is not None:
                found += self._members(m, cls, name)
            for d in found:
                yield ("r",) + d[1:] if d[0] == "u" else d
            if name in m.imports or name in m.attr_writers or not found and m.stars:
                yield ("x", path, name)
        elif kind == "c":
            # a class used: building it (its class statements, its construction methods,
            # its bases and decorators); the members called on an instance are asked by
            # name (reaches_seed: every name the search has seen used)
            cls = node[2]
            for i in m.class_units.get(cls, ()):
                if not isinstance(m.units[i].node, _DEFS):
                    yield ("u", path, i)
            for n in _CLASS_BUILD:
                yield ("m", path, cls, n)
            for n in m.class_refs.get(cls, ()):
                yield ("x", path, n)
        elif kind == "m":
            cls, name = node[2], node[3]
            yield from m.members.get(cls, {}).get(name, ())
            for base in m.bases.get(cls, ()):
                target = self._class_of(m, base, 0)
                if target is True:
                    yield True
                elif target is not None:
                    yield ("m", target[0], target[1], name)
        elif kind == "M":
            for name, ds in m.definers.items():
                yield from ds
            for name in m.imports:
                yield ("x", path, name)

    def _members(self, m: _Module, cls: str, name: str, depth: int = 0) -> list:
        """The nodes member ``name`` of class ``cls`` of ``m`` is bound by, bases included."""
        out = list(m.members.get(cls, {}).get(name, ()))
        if depth > 20:
            return out + [("x", m.path, name)]
        for base in m.bases.get(cls, ()):
            target = self._class_of(m, base, 0)
            if target is True:
                out.append(("x", m.path, name))
            elif target is not None:
                bm = self.module(target[0])
                out += self._members(bm, target[1], name, depth + 1) if bm is not None else [True]
        return out

    def _chain(self, m: _Module, chain: tuple):
        """The node a dotted use ``alias.a.b`` of an imported module names."""
        imp = m.imports.get(chain[0])
        if imp is None or imp[0] == "name":
            return
        if imp[0] == "package":
            yield True
            return
        file, rest = imp[1], list(chain[1:])
        module = self.index.module_name(file)
        while rest and module is not None:
            sub = self.index.find_module(f"{module}.{rest[0]}")
            if sub is None:
                break
            file, module = sub, f"{module}.{rest[0]}"
            rest.pop(0)
        if rest:
            yield ("x", file, rest[0])
        else:
            yield ("M", file)

    def _class_of(self, m: _Module, expr, depth: int):
        """``(file, class name)`` of the project class a base expression names, None for no
        project class (a library's), True when it cannot be told."""
        if depth > 20:
            return True
        if isinstance(expr, ast.Name):
            name = expr.id
            if name in m.members:
                return (m.path, name)
            imp = m.imports.get(name)
            if imp is None:
                return True if name in m.definers else None
            if imp[0] == "name":
                return self._class_in(imp[1], imp[2], depth + 1)
            return True
        dotted = _dotted(expr)
        if dotted is None:
            return True if uses_of(expr) & (m.imports.keys() | m.definers.keys()) else None
        imp = m.imports.get(dotted[0])
        if imp is None:
            return True if dotted[0] in m.definers else None
        if imp[0] != "module":
            return True
        file, module = imp[1], self.index.module_name(imp[1])
        rest = list(dotted[1:])
        while len(rest) > 1 and module is not None:
            sub = self.index.find_module(f"{module}.{rest[0]}")
            if sub is None:
                break
            file, module = sub, f"{module}.{rest[0]}"
            rest.pop(0)
        return self._class_in(file, rest[0], depth + 1) if len(rest) == 1 else True

    def _class_in(self, path: str, name: str, depth: int):
        m = self.module(path)
        if m is None:
            return True
        if name in m.members:
            return (m.path, name)
        return self._class_of(m, ast.Name(id=name), depth)


def _absolute(module: Optional[str], level: int, package: str) -> Optional[str]:
    if not level:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (level - 1)]
    if module:
        base = base + [module]
    return ".".join(base) if base else None


def _dotted(expr) -> Optional[tuple]:
    out = []
    while isinstance(expr, ast.Attribute):
        out.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    out.append(expr.id)
    return tuple(reversed(out))


def _chains(node, imports: dict) -> tuple:
    """``(chains, bare)``: the dotted uses ``alias.a.b`` in ``node`` of names bound to
    imported modules, and those names used otherwise (the module object handed on)."""
    out = set()
    under = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, (ast.Name, ast.Attribute)):
            d = _dotted(n)
            if d is not None and d[0] in imports and imports[d[0]][0] != "name":
                out.add(d)
                root = n.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                under.add(id(root))
    bare = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in imports and id(n) not in under}
    # a prefix of a longer chain names nothing more
    return tuple(d for d in out if not any(len(o) > len(d) and o[:len(d)] == d for o in out)), frozenset(bare)


def _flow(node, target) -> tuple:
    """``(called, plain)``: the names the values ``node`` (a unit) writes to a target that
    ``target`` accepts (None: the values it returns and yields) can come from, split into
    the names it calls (``f(...)``, ``x.f(...)``: what ``f`` returns) and the names used
    otherwise; the statements of ``node`` that bind the local names among them add theirs
    (transitively).  A call's receiver and arguments are plain."""
    binders: dict = {}
    roots: list = []
    for stmt in ast.walk(node):
        value = None
        targets = ()
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            targets, value = [stmt.target], stmt.value
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets, value = [stmt.target], stmt.iter
        elif isinstance(stmt, ast.withitem) and stmt.optional_vars is not None:
            targets, value = [stmt.optional_vars], stmt.context_expr
        elif isinstance(stmt, ast.NamedExpr):
            targets, value = [stmt.target], stmt.value
        elif target is None and isinstance(stmt, (ast.Return, ast.Yield, ast.YieldFrom)):
            if stmt.value is not None:
                roots.append(stmt.value)
            continue
        elif target is None and isinstance(stmt, ast.Lambda) and stmt is not node:
            roots.append(stmt)
            continue
        if value is None:
            continue
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    binders.setdefault(n.id, []).append(value)
                elif target is not None and target(n) and not isinstance(n.ctx, ast.Load):
                    roots.append(value)
    called: set = set()
    plain: set = set()
    done: set = set()
    todo = list(roots)
    while todo:
        expr = todo.pop()
        c, p = _split(expr)
        called |= c
        for n in p - plain:
            plain.add(n)
            if n not in done:
                done.add(n)
                todo.extend(binders.get(n, ()))
        for n in c:
            if n not in done and n in binders:
                done.add(n)
                todo.extend(binders[n])
    return frozenset(called), frozenset(plain)


def _split(expr) -> tuple:
    """``(called, plain)`` names of an expression (see :func:`_flow`)."""
    called_nodes = set()
    for n in ast.walk(expr):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, (ast.Name, ast.Attribute)):
                called_nodes.add(id(f))
    called, plain = set(), set()
    for n in ast.walk(expr):
        if isinstance(n, ast.Name):
            (called if id(n) in called_nodes else plain).add(n.id)
        elif isinstance(n, ast.Attribute):
            (called if id(n) in called_nodes else plain).add(n.attr)
        elif isinstance(n, ast.keyword) and n.arg:
            plain.add(n.arg)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) < 80:
            plain.update(n.value.split("."))     # getattr(x, "name"), string annotations
    return called, plain


def _attr_writes(node) -> set:
    """Attribute names ``node`` assigns (``x.name = ...``, ``del x.name`` included)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load):
            out.add(n.attr)
    return out


def _stored_names(node) -> set:
    """The names a statement binds or changes: its targets, the roots of attribute and
    subscript targets, and the receivers of method calls (``REGISTRY.append(f)``)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, (ast.Attribute, ast.Subscript)) and not isinstance(n.ctx, ast.Load):
            root = n.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):
                out.add(root.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            root = n.func.value
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name):
                out.add(root.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
    return out


def _block_bodies(node) -> list:
    out = list(getattr(node, "body", ()))
    for field in ("orelse", "finalbody"):
        out.extend(getattr(node, field, ()) or ())
    for h in getattr(node, "handlers", ()) or ():
        out.extend(h.body)
    return out


def _block_heads(node) -> list:
    """The parts of a compound statement outside its bodies (an ``if`` test, a ``with``
    item, a ``for`` target and iterable, an ``except`` type) as expression statements."""
    out = []
    for field in ("test", "iter", "target"):
        v = getattr(node, field, None)
        if v is not None:
            out.append(_expr(v))
    for item in getattr(node, "items", ()) or ():
        out.append(_expr(item.context_expr))
        if item.optional_vars is not None:
            out.append(_store(item.optional_vars, item.context_expr))
    for h in getattr(node, "handlers", ()) or ():
        if h.type is not None:
            out.append(_expr(h.type))
    return out


def _expr(v):
    e = ast.Expr(value=v)
    e.lineno, e.end_lineno = v.lineno, v.end_lineno
    return e


def _store(target, value):
    a = ast.Assign(targets=[target], value=value)
    a.lineno, a.end_lineno = min(target.lineno, value.lineno), max(target.end_lineno, value.end_lineno)
    return a
