"""The name-level half of the plan (stage 3): the top-level units of each module, the
names each uses, and which names can hand on a multi-device value (``carrier_name``), to
a fixpoint over the graph of (module, name) -> the names it uses.  :class:`Carriers` is
a base of :class:`~.plan.Plan` and works on its facts, import graph and texts.

Only a module that imports a JAX root (or the root of a configured source) can have a unit
naming JAX words, so a name can hand on a multi-device value only when such a module is
behind it in the import graph (:meth:`Carriers.origin_reachable`): the units of the other
modules are computed only when a question needs them (``Plan.gate``, or a search that such
a module is behind)."""
from __future__ import annotations

import os
import re
from functools import lru_cache

from .facts import ORIGIN_NONE, ORIGIN_STRONG, ORIGIN_WEAK, foreign_calls, named, origin_level, renamed
from .scan import Aliases, bound_names, consumer_in, import_roots, plain_lines, taken_names, uses_any
from .toplevel import strip_prose, units_of, with_users

# A unit that defines a function or class (its decorators first): device-count words there
# do not make its name a carrier (only module-level values, such as a mesh, do).
_DEFINES_UNIT = re.compile(r"(?:[ \t]*@[^\n]*\n)*[ \t]*(?:async[ \t]+)?(?:def|class)\b")


# A name a unit uses: an identifier that no word character or dot comes right before (not an
# attribute: ``x.dtype`` uses ``x``), nor a lone ``=`` right after (not a keyword argument or
# a parameter with a default: ``f(dtype=d)``, ``def f(dtype=None)``): free_names' reference
FREE_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?![\w]|=(?!=))")
# free_names' fast spelling for ASCII text: "==" made spaces and a space put after each "=",
# every byte but letters, digits, "_", "." and "=" made a space, then each dot with the
# attribute names (and a "=") after it left out; the words left that end with "=" are no
# identifier, so the callers' sets of identifiers keep none of them
_NAME_BYTES = bytes(c if c < 128 and (chr(c).isalnum() or chr(c) in "._=") else 0x20 for c in range(256))
_ATTRIBUTES = re.compile(rb"\.[A-Za-z0-9_.]*=?")


def free_names(body: str) -> set:
    """The names ``body`` uses as values: the words of :data:`FREE_NAME` (identifiers but
    attribute names and keyword or parameter names before a lone ``=``), and, for an ASCII
    text, maybe words that are no identifier (``1e5``, ``dtype=``): the callers keep those
    of a set of identifiers.  A top-level ``dtype`` is not used by ``x.dtype`` nor by
    ``np.array(x, dtype=t)`` (keras' ``convert_to_numpy`` does both, and counting them made
    every module converting to NumPy reached by a sharded ``dtype`` of the JAX backend:
    issue 16).  ``x = 1`` (spaces around ``=``) keeps ``x``: an assignment's target is the
    unit's own name (:func:`~.toplevel.units_of`), a use of it costs nothing."""
    if not body.isascii():
        return set(FREE_NAME.findall(body))
    raw = body.encode("ascii")
    if b"=" in raw:
        raw = raw.replace(b"==", b"  ").replace(b"=", b"= ")
    return set(_ATTRIBUTES.sub(b" ", raw.translate(_NAME_BYTES)).decode("ascii").split())


def plain_modules(f: dict, words) -> frozenset:
    """The names ``import m`` statements of a file bind (its facts ``f``), but those of
    JAX and of the foreign libraries (no project module has their names)."""
    return frozenset({m.split(".")[0] for m, names in f["imports"] if names is None}
                     - words.jax_roots - words.foreign_roots)


def used_names(body: str, known: set, modules: frozenset) -> frozenset:
    """The names of ``known`` that ``body`` uses (:func:`free_names`: not as attribute
    names), and ``"pkg.name"`` for each attribute it reads of a module of ``modules``
    (``mylib.shard_batch`` with ``import mylib``: what a package's ``__init__`` re-exports
    is followed to its module, :meth:`Carriers.bound_to`)."""
    used = known & free_names(body)
    for module in modules:
        if module in body:
            used.update(f"{module}.{b}" for b in attribute_of(module).findall(body))
    return frozenset(used)


@lru_cache(maxsize=1024)
def attribute_of(module: str):
    """``pkg.name``, an attribute read of the module ``module`` bound by ``import pkg``:
    ``\\bmodule[ \\t]*\\.[ \\t]*([A-Za-z_]\\w*)``, spelled word first so that a search
    skips to its occurrences (:func:`~.scan.word_re`); its one group is ``name``."""
    m = re.escape(module)
    return re.compile(r"%s(?<![\w]%s)[ \t]*\.[ \t]*([A-Za-z_]\w*)" % (m, m))


# A comparison with 1 or 2, as a device-count guard makes one (``jax.device_count() > 1``,
# ``len(jax.devices()) == 1``): with a call of _count_call, builds_placement's test
_COUNT_TEST = re.compile(r"(?:==|!=|<=|>=|<|>)[ \t]*[12]\b|\b[12][ \t]*(?:==|!=|<=|>=|<|>)")


def _count_call(text: str, imports, jax_roots):
    """A pattern of the calls of the device counts a guard compares with 1 in ``text``
    (``apis.GLOBAL_DEVICE_COUNTS``, ``GLOBAL_DEVICE_LISTS``, with no argument):
    ``jax.device_count()``, ``J.devices()`` after ``import jax as J``, ``device_count()``
    after ``from jax import device_count``."""
    from ..knowledge import apis

    counts = sorted({q.rsplit(".", 1)[-1] for q in apis.GLOBAL_DEVICE_COUNTS | apis.GLOBAL_DEVICE_LISTS})
    heads = {n for n, r in import_roots(text).items() if r & jax_roots} | set(jax_roots)
    bare = {alias or name for module, names in imports if module.split(".")[0] in jax_roots
            for name, alias in names or () if name in counts}
    alternatives = [r"(?<![\w.])(?:%s)[ \t]*\.[ \t]*(?:%s)" % ("|".join(map(re.escape, sorted(heads))), "|".join(counts))]
    if bare:
        alternatives.append(r"(?<![\w.])(?:%s)" % "|".join(map(re.escape, sorted(bare))))
    return re.compile(r"(?:%s)[ \t]*\([ \t]*\)" % "|".join(alternatives))


def _search(memo: dict, start, step) -> bool:
    """Whether a node for which ``step(node)`` says True (``step``: node -> (found, the
    nodes it leads to)) is reachable from ``start``, with ``memo`` (node -> answer) kept
    across searches.  Cycles are common (a class and a helper that use each other): a memo
    set while a cycle is open would make the answer depend on the order of the questions,
    so only complete answers are kept: False for every node of a search that found
    nothing, True for the path to the node found."""
    parent = {start: None}
    todo = [start]
    while todo:
        node = todo.pop()
        found = memo.get(node)
        if found is None:
            origin, succ = step(node)
            found = origin or None
        if found:
            while node is not None:
                memo[node] = True
                node = parent[node]
            return True
        if found is False:
            continue
        for nxt in succ:
            if nxt not in parent:
                parent[nxt] = node
                todo.append(nxt)
    for node in parent:
        memo[node] = False
    return False


class Carriers:
    """Units and carriers of a :class:`~.plan.Plan` (which supplies ``facts``, ``targets``,
    ``_bound``, ``texts``, ``reader``, ``words`` and ``counts``)."""

    def units(self, path: str) -> dict:
        """``{name: (origin level, names used)}`` for every top-level name ``path``
        defines (functions, classes, module-level assignments); the level says which JAX
        words it names (:data:`~.facts.ORIGIN_STRONG`; :meth:`~.plan.Plan.counts` says
        whether it makes the name a carrier); names used are those bound
        by the file's project imports and its own top-level names."""
        if path in self._units:
            return self._units[path]
        out: dict = {}
        self._units[path] = out
        f = self.facts(path)
        if f is None:
            return out
        self.targets(path)                          # the names its imports bind
        if isinstance(f.get("units"), dict):      # stored with the facts: no reading
            out.update({n: (int(o), frozenset(u)) for n, (o, u) in f["units"].items()})
            return out
        try:
            text = self.texts.get(path)
            text = plain_lines(text if text is not None else self.reader.text(path))
        except Exception:
            return out
        roots = {m.split(".")[0] for m, _ in f["imports"]}
        jax = bool(roots & self.words.jax_roots)
        jax_names = tuple({(alias or name) if names is not None else module.split(".")[0]
                           for module, names in f["imports"] if module.split(".")[0] in self.words.jax_roots
                           for name, alias in (names or [(None, None)]) if name != "*"} - {None}
                          | {n for n, r in import_roots(text).items() if r & self.words.jax_roots})  # import jax as J
        units = units_of(text)
        foreign = foreign_calls(text, self.words)
        # names bound by the text's imports, resolved or not: the units are stored with the
        # facts (by this file's hash), so they must not depend on which modules exist now
        known = set(self._bound.get(path, {})) | bound_names(text) | {n for names, _ in units for n in names}
        modules = plain_modules(f, self.words)
        w = self.words
        origins = renamed(w.origins, f["imports"], w.jax_roots)      # with their aliases
        strong_origins = renamed(w.strong_origins, f["imports"], w.jax_roots)
        rooted = {r: n for r, n in origins.items() if r is not None and r in roots}
        rooted_strong = {r: n for r, n in strong_origins.items() if r is not None and r in roots}
        for names, body in units:
            if not names:
                continue
            # Docstrings and comment lines are prose, not code.
            body = strip_prose(body)
            # A JAX word counts only in a unit that names JAX itself (a name a JAX import
            # binds: ``jax``, ``jnp``, ``NamedSharding``): ``torch.xpu.device_count()`` in a
            # module that imports jax elsewhere is no JAX code.
            # The level (facts.ORIGIN_STRONG): a placement word, or a device-count word of
            # a module-level value, makes a multi-device value only from a sharding made
            # elsewhere (Plan.weak_counts).
            named_jax = jax and uses_any(body, jax_names)
            if rooted_strong and named(body, rooted_strong, roots, False, foreign) or (
                    named_jax and named(body, strong_origins, roots, jax, foreign)):
                origin = ORIGIN_STRONG
            elif rooted and named(body, rooted, roots, False, foreign) or named_jax and (
                    named(body, origins, roots, jax, foreign) or (
                        not _DEFINES_UNIT.match(body) and named(body, w.counts, roots, jax))):
                origin = ORIGIN_WEAK
            else:
                origin = ORIGIN_NONE
            used = used_names(body, known, modules)
            for name in names:
                old = out.get(name)
                out[name] = (max(origin, old[0] if old else ORIGIN_NONE), used | (old[1] if old else frozenset()))
        f["units"] = {n: [o, sorted(u)] for n, (o, u) in out.items()}
        return out

    def carrier_name(self, path: str, name) -> bool:
        """Whether taking ``name`` from module ``path`` can hand on a multi-device value:
        the function, class or module-level name names JAX words, or uses (directly or
        through the module's own names) a name taken from a carrier; a name the module
        imports is followed.  ``name`` None (the module taken whole) counts as any of its
        names; for a package only as what its ``__init__`` itself names with JAX words, so
        a package that dispatches to submodules (one of them JAX code) does not make every
        module that imports it reachable."""
        key = (path, name)
        known = self._carrier_name.get(key)
        if known is not None:
            return known
        if not self.origin_reachable(path):
            self._carrier_name[key] = False
            return False
        # A search of the graph of (module, name) -> the names it uses, for a unit naming
        # JAX words (complete answers only: see _search).
        return _search(self._carrier_name, key, self._carrier_next)

    def _carrier_next(self, node: tuple) -> tuple:
        """:meth:`_carrier_step` of ``node``, leaving out the successors in files that no
        module naming JAX words is behind (:meth:`origin_reachable`)."""
        origin, succ = self._carrier_step(*node)
        return origin, [n for n in succ if self.origin_reachable(n[0])]

    def origin_reachable(self, path: str) -> bool:
        """Whether a module with a unit naming JAX words is ``path`` or among the files it
        takes names from, transitively (the import graph of :meth:`targets`): when none is,
        no name of ``path`` can hand on a multi-device value, and :meth:`carrier_name`
        answers without the units of the modules between.  Only a module that imports a
        JAX root (or a root of a configured source) can have such a unit (see
        :meth:`units`); only those modules' units are computed here.  The same discipline
        as :meth:`carrier_name`: only complete answers are kept.  False at once when no
        module of the project can have such a unit (:meth:`~.plan.Plan.no_origin_anywhere`,
        read from the text of every module when one file is linted alone)."""
        known = self._origin_reachable.get(path)
        if known is not None:
            return known
        if self.no_origin_anywhere():
            self._origin_reachable[path] = False
            return False
        return _search(self._origin_reachable, path,
                       lambda node: (self._has_origin_unit(node), [t for t, _ in self.targets(node)]))

    def _has_origin_unit(self, path: str, any_level: bool = False) -> bool:
        """Whether a top-level unit of ``path`` names JAX words (:meth:`units`), computed only
        for a module whose imports allow one.  ``any_level``: a placement word counts
        whether or not :meth:`~.plan.Plan.weak_counts` (a cheaper, larger answer: deciding
        that reads the facts of every module)."""
        f = self.facts(path)
        if f is None:
            return False
        roots = {m.split(".")[0] for m, _ in f["imports"]}
        if not roots & self.words.jax_roots and not any(r is not None and r in roots for r in self.words.origins):
            return False
        if any_level:
            return any(origin for origin, _ in self.units(path).values())
        return any(self.counts(origin) for origin, _ in self.units(path).values())

    def _carrier_step(self, path: str, name) -> tuple:
        """``(whether the unit ``name`` of ``path`` names JAX words, the (module, name)
        pairs it uses)`` (see :meth:`carrier_name`)."""
        u = self.units(path)
        bound = self._bound.get(path, {})
        if name is None or name == "*":     # the module taken whole (``from m import *``)
            if os.path.basename(path) == "__init__.py":
                # what the package itself names, and, for ``from pkg import *``, what its own
                # star imports re-export (``from .core import *`` in the ``__init__``)
                star = [(t, k) for t, k in bound.get("*", ()) if t != path] if name == "*" else []
                return any(self.counts(origin) for origin, _ in u.values()), star
            return False, [(path, n) for n in u]
        if name in u:
            origin, used = u[name]
            if self.counts(origin):
                return True, ()
            succ = []
            for n in sorted(used):
                if n in u:
                    if n != name:
                        succ.append((path, n))
                else:
                    succ.extend(self.bound_to(path, n, bound))
            return False, succ
        # a name it imports, or one its star imports may bind (each star module taken whole:
        # following the name into each made keras' plan 25 -> 102 parses)
        return False, [(t, k) for t, k in bound.get(name, bound.get("*", ())) if t != path]

    @staticmethod
    def bound_to(path: str, n: str, bound: dict) -> list:
        """The ``(module, name)`` pairs of other files a name ``n`` that ``path`` uses
        stands for, by ``bound`` (its imports: :meth:`~.plan.Plan.targets`); for
        ``"pkg.name"`` (:func:`used_names`) the name of the package's ``__init__``."""
        if "." in n:
            head, _, attr = n.partition(".")
            return [(t, attr) for t, k in bound.get(head, ())
                    if k is None and t != path and os.path.basename(t) == "__init__.py"]
        return [(t, k) for t, k in bound.get(n, ()) if t != path]

    def builds_placement(self, path: str, name: str) -> bool:
        """Whether the top-level name ``name`` of ``path`` builds a mesh (its text names a
        word of :func:`~.words.mesh_words`: ``make_mesh``, ``Mesh``), or compares a device
        count with 1 or 2 (``MULTI = jax.device_count() > 1``, ``def single_device(): return
        jax.device_count() == 1``: :func:`_count_call`), or uses a name of its module that
        does.  Such a name hands on no multi-device value, but decides whether a placement
        the analysis sees is on one device (``m = literal_one_mesh()`` from another module,
        then ``jax.device_put(x, NamedSharding(m, P()))``), or guards an export (``if not
        env.MULTI:``): :meth:`~.plan.Plan.gate` admits it."""
        names = self._placing.get(path)
        if names is None:
            names = self._placing[path] = self._placement_names(path)
        return name in names

    def _placement_names(self, path: str) -> frozenset:
        f = self.facts(path)
        roots = {m.split(".")[0] for m, _ in f["imports"]} if f is not None else set()
        if not roots & self.words.jax_roots:
            return frozenset()
        try:
            text = self.texts.get(path)
            text = plain_lines(text if text is not None else self.reader.text(path))
        except Exception:
            return frozenset()
        counted = _count_call(text, f["imports"], self.words.jax_roots)
        out = {n for names, body in units_of(text) for code in [strip_prose(body)] if names and (
               named(code, self.words.meshes, roots, True)
               or _COUNT_TEST.search(code) is not None and counted.search(code) is not None)
               for n in names}
        return with_users(self.units(path), out)     # and the names of the module using them

    def carrier(self, path: str) -> bool:
        """Whether module ``path`` can make or hand on a multi-device value."""
        return self.carrier_name(path, None)

    def _sink_uses(self, path: str, f: dict, text: str, bound: dict) -> list:
        """``[local names, names used, origin levels]`` of :meth:`sink_reached`: the
        top-level names of the file, the names (local or bound by imports) that its units
        using a consumer, and their callers in the file, use, and the origin levels of
        those units' own JAX words (:meth:`units`; empty where the file names none)."""
        roots = {m.split(".")[0] for m, _ in f["imports"]}
        taken = taken_names(f["imports"])
        aliases = Aliases(text)
        split = units_of(text)
        local = {n for names, _ in split for n in names}
        imported = set(aliases.bound()) | set(bound)
        known = local | imported        # the names used that count
        modules = plain_modules(f, self.words)
        units = [(names, used_names(body, known, modules),
                  consumer_in(body, self.words.sinks, roots, taken, aliases)) for names, body in split]
        reached = {n for names, _, sink in units if sink for n in names}
        # The callers in the file of a unit that uses a consumer (it may hand them its values).
        grew = True
        while grew:
            grew = False
            for names, ids, sink in units:
                if not sink and names and ids & reached and not set(names) <= reached:
                    reached |= set(names)
                    grew = True
        out: set = set()
        levels: set = set()
        own = self.units(path) if f.get("origin") else {}
        jax = bool(roots & self.words.jax_roots)
        foreign = foreign_calls(text, self.words) if own else None
        for (names, ids, sink), (_, body) in zip(units, split):
            # a unit using a consumer, one of its callers, or a module-level statement
            # calling one (``if __name__ == "__main__": main(sharded(x))``)
            if sink or set(names) & reached or not names and ids & reached:
                out |= ids
                if not own:
                    continue
                if names:
                    levels.update(own[n][0] for n in names if n in own)
                else:       # a module-level statement: its own JAX words
                    levels.add(origin_level(strip_prose(body), self.words, roots, jax, foreign, f["imports"]))
        return [sorted(local & out), sorted(out), sorted(levels)]
