"""The plan's facts of one file's text (stage 3, below :mod:`.plan`): read with the
scanners of :mod:`.scan`, never parsed, and stored with the file's hash (so a warm run
plans without reading).

- ``imports``: absolute module names and the names taken (:func:`~.scan.imports_of`);
- ``sink``: whether it names a consumer (:data:`~.words.DEFAULT`, or a configuration's);
- ``alone`` / ``alone_reached``: words that alone make a finding (removed APIs, FFI
  callbacks), where a JAX root is imported / where JAX code must reach the file;
- ``origin`` (JAX words: where multi-device values start, as a level:
  :data:`ORIGIN_STRONG`) and ``annot`` (array annotations, opt-in JXI009), filled in by
  :func:`more_facts` when the plan asks.

The plan adds ``units``, ``sink_uses`` and ``defs`` when it computes them (see
:class:`~.plan.Plan`); :data:`FACTS_VERSION` names the shape.
"""
from __future__ import annotations

from ..knowledge import apis
from .scan import Aliases, Present, alone, consumer, guards_of, imports_of, plain_lines, taken_names, uses_in_role
from .words import (DEFAULT, NEEDS_CONSUMER, Prefilter, alone_words, annotation_words, bare_jax_words, build,
                    count_words, jax_words, mesh_words)

FACTS_VERSION = 24


class Words:
    """The word lists of one configuration (see :mod:`.words`)."""

    def __init__(self, extra_sinks=(), extra_sources=()):
        self.sinks: Prefilter = build(tuple(sorted(extra_sinks))) if extra_sinks else DEFAULT
        self.origins = jax_words(tuple(extra_sources)).by_root()
        # the origin words that make a multi-device value by themselves (ORIGIN_STRONG)
        self.strong_origins = jax_words(tuple(extra_sources), strong=True).by_root()
        self.counts = count_words().by_root()
        self.meshes = mesh_words().by_root()
        bare = bare_jax_words()
        self.qualified_origins = {r: tuple(n for n in names if n not in bare) for r, names in self.origins.items()}
        self.bare_origins = tuple(sorted(bare, key=len, reverse=True))
        self.alone = alone_words()
        self.annotations = annotation_words().by_root()
        self.jax_roots = frozenset(apis.JAX_ROOTS)
        # the roots of the libraries JAX hands arrays to (``apis.FOREIGN_MODULES``): a JAX
        # keyword in a call of theirs (``torch.tensor(x, device=d)``) places nothing
        self.foreign_roots = frozenset(m.split(".", 1)[0] for m in apis.FOREIGN_MODULES)
        # What the masking keeps: statements naming a consumer or a word that alone makes a
        # finding.
        alone_names = frozenset(n for specs in self.alone.values() for names, _, _ in specs for n in names)
        self.masking = Prefilter(self.sinks.standalone | alone_names, self.sinks.pairs)
        # the words the facts search a text for, by a part several share (scan.Present)
        self.guards = guards_of(self.sinks.standalone | alone_names | {n for specs in self.alone.values()
                                                                        for _, needs, _ in specs for n in needs}
                                | {r for r, _ in self.sinks.pairs} | {n for _, ns in self.sinks.pairs for n in ns})


_WORDS: dict = {}


def words_for(config) -> Words:
    """The (memoised) word lists of ``config``."""
    key = (tuple(sorted(config.extend_sinks)), tuple(sorted(config.extend_sources)))
    w = _WORDS.get(key)
    if w is None:
        w = _WORDS[key] = Words(*key)
    return w


def named(text: str, by_root: dict, roots: set, jax: bool, foreign=None) -> bool:
    """Whether ``text`` uses a word of ``by_root`` (root -> words; root None: any JAX root,
    counted only when ``jax``) whose root is among ``roots``; ``foreign``: see
    :func:`~.scan.uses_in_role`."""
    for root, names in by_root.items():
        if root is None and not jax or root is not None and root not in roots:
            continue
        if uses_in_role(text, names, foreign):
            return True
    return False


def renamed(by_root: dict, imports, jax_roots) -> dict:
    """``by_root`` (root -> words, root None: any JAX root) with the aliases the file's
    from-imports bind its words to: ``from jax import pmap as parallel`` makes
    ``parallel`` a JAX word of that file.  ``by_root`` itself when there is none."""
    extra: dict = {}
    for module, names in imports:
        if not names:
            continue
        root = module.split(".")[0]
        key = None if root in jax_roots else root
        words = by_root.get(key, ())
        for name, alias in names:
            if alias and name in words:
                extra.setdefault(key, []).append(alias)
    if not extra:
        return by_root
    out = dict(by_root)
    for key, aliases in extra.items():
        out[key] = tuple(out.get(key, ())) + tuple(aliases)
    return out


def foreign_calls(text: str, w: "Words"):
    """The ``foreign`` predicate of :func:`named` for a file's ``text``: a name bound only
    by imports of the libraries JAX hands arrays to (``w.foreign_roots``: ``torch``, ``np``),
    so that ``torch.zeros(n, device=d)`` is no JAX placement (``analysis/calls.py`` places
    only with ``jax.device_put`` and the ``jax.numpy`` / ``jax.random`` creation calls)."""
    aliases = Aliases(text)
    return lambda name: aliases.only_from(name, w.foreign_roots)


def facts_of(text: str, package: str, w: Words, lazy: bool = False) -> dict:
    """The plan's facts of one file's text (see the module docstring).  With ``lazy`` the
    JAX words and annotations are left for :func:`more_facts` (the plan asks for them only
    where they decide something)."""
    text = plain_lines(text)
    imports = imports_of(text, package)
    roots = {m.split(".")[0] for m, _ in imports}
    jax = bool(roots & w.jax_roots)
    # per rule: whether its words are used where a JAX root is imported / where none is
    present = Present(text, w.guards)
    hits = {}
    for code, specs in w.alone.items():
        used = [(needs_jax, alone(text, [spec], True, present)) for spec in specs for needs_jax in [spec[2]]]
        hits[code] = (any(u for _, u in used), any(u for needs_jax, u in used if not needs_jax))
    f = {
        "v": FACTS_VERSION,
        "imports": imports,
        "sink": consumer(text, w.sinks, roots, taken_names(imports), present),
        "alone": sorted(code for code, (with_jax, without) in hits.items() if (with_jax if jax else without)),
        # the same words where no JAX root is imported: a finding when JAX code reaches the file
        "alone_reached": sorted(code for code, (with_jax, without) in hits.items()
                                if not jax and with_jax and not without),
    }
    return f if lazy else more_facts(f, text, w)


def more_facts(f: dict, text: str, w: Words) -> dict:
    """``f`` with ``origin`` (JAX words) and ``annot`` (array annotations) filled in."""
    text = plain_lines(text)
    roots = {m.split(".")[0] for m, _ in f["imports"]}
    jax = bool(roots & w.jax_roots)
    f["origin"] = origin_level(text, w, roots, jax, foreign_calls(text, w), f["imports"])
    f["annot"] = named(text, w.annotations, roots, jax)
    return f


# Origin levels (the ``origin`` fact of a file, the first item of a unit of ``Plan.units``):
# no JAX word; only placement words (``apis.WEAK_ORIGIN_TABLES``: multi-device only with a
# sharding made elsewhere); a word that makes a multi-device value by itself.
ORIGIN_NONE, ORIGIN_WEAK, ORIGIN_STRONG = 0, 1, 2


def origin_level(text: str, w: Words, roots: set, jax: bool, foreign=None, imports=()) -> int:
    """The origin level of ``text`` (see :data:`ORIGIN_STRONG`): which JAX words it names
    (:func:`named` of ``w.strong_origins``, then of ``w.origins``, with the aliases the
    file's ``imports`` bind them to: :func:`renamed`; ``foreign``: see
    :func:`foreign_calls`)."""
    if named(text, renamed(w.strong_origins, imports, w.jax_roots), roots, jax, foreign):
        return ORIGIN_STRONG
    return ORIGIN_WEAK if named(text, renamed(w.origins, imports, w.jax_roots), roots, jax, foreign) else ORIGIN_NONE


def can_find(f: dict, enabled, w: Words) -> bool:
    """Whether a file with facts ``f`` can make a finding of an ``enabled`` rule whatever
    JAX code reaches it: a word that alone makes one (the JXI006 words beside a consumer),
    or a consumer beside an array annotation with JXI009 on."""
    for code in set(f["alone"]) & set(enabled):
        if code not in NEEDS_CONSUMER or f["sink"]:
            return True
    return bool(f["sink"] and f.get("annot") and "JXI009" in enabled)
