"""Module summaries as JSON, so that the cache can stand in for a module's analysis.

A frozen module keeps what other modules can see of it: its module-level names bound to
functions (with their summaries: what they return or yield, which parts of which parameters
they export through which sink, which they donate, what an ``__init__`` stores on ``self``),
classes (methods, class attributes, record fields and the values stored on ``self``),
wrapped functions (pjit, jit with shardings, shard_map, pmap) and values (multi-device
arrays, shardings, devices, re-exported names, structures with their parts, returned
device-count tests).  Origins are stored resolved to a path and a line.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from .analysis import values as V
from .analysis.events import ExportEffect, SinkEvent
from .analysis.records import ClassRecord, Summary
from .knowledge.apis import Sink
from .lazydict import LazyDict

_KEEP = {V.FUNC, V.CLASS, V.ARRAY, V.SHARDING, V.DEVICE, V.DEVICE_LIST, V.KERNEL, V.QNAME, V.DEFERRED,
         V.SAFE, V.FOREIGN, V.SAFE_LIST, V.CAPSULE, V.INSTANCE, V.MESH}


@dataclass(frozen=True)
class Site:
    """A node of a frozen module: only its line is known."""

    line: int


@dataclass(eq=False)
class FrozenModule:
    """A module's analysis loaded from the cache: ``globals`` and ``depends_on`` as the
    real :class:`~jaxinterop_lint.analysis.module.ModuleAnalysis` has them."""

    display_path: str
    globals: dict = field(default_factory=dict, repr=False)   # (its values name the module: no loop)
    depends_on: set = field(default_factory=set)
    names: tuple = ()
    functions: tuple = ()
    star_modules: tuple = ()        # the modules of its ``from m import *`` (ModuleAnalysis.star_import)

    def position(self, node) -> tuple:
        """The stored line of a :class:`Site`."""
        line = node.line if isinstance(node, Site) else 1
        return (line, 0, line, 0)

    def summary(self, rec) -> Summary:
        """Frozen records carry their summary."""
        return rec.summary

    def exporting_names(self) -> frozenset:
        """The exporting functions recorded with the summary."""
        return frozenset(self.names)

    def class_attribute(self, cls, attr):
        """Values stored on ``self`` and class attributes are frozen with the class."""
        return V.join(cls.statics.get(attr), cls.attrs.get(attr))


@dataclass(eq=False)
class FrozenRecord:
    """A function of a frozen module: name, parameters, kept defaults and summary.  Its ``state`` is
    always ``"done"`` (a class attribute, as :class:`~.analysis.records.FunctionRecord`
    spells it): the summary was complete when it was stored, so freezing a module whose
    values hold it (a factory of another module returning its class's instance) never
    waits for it."""

    name: str
    params: list
    summary: Optional[Summary] = None
    owner: Any = None
    cls: Any = None
    defaults: dict = field(default_factory=dict)
    star: Optional[int] = None      # the index of its ``*args`` parameter (FunctionRecord.star)
    state: ClassVar[str] = "done"


class NotReady(Exception):
    """Freezing would have to analyse a function not analysed yet (``ready_only``)."""


class Freezer:
    """Turn the values of one analysed module into JSON-ready data.  With ``ready_only``,
    a value whose summary is not computed yet (a function, or a method storing an attribute,
    not analysed) raises :class:`NotReady` instead of being analysed now."""

    def __init__(self, ma, ready_only: bool = False):
        self.ma = ma
        self.ready_only = ready_only
        self.records: dict = {}
        self.classes: dict = {}

    def origin(self, o: Optional[V.Origin]):
        if o is None:
            return None
        owner = o.owner or self.ma
        steps = []
        for desc, node, step_owner in o.steps:
            so = step_owner or self.ma
            steps.append([desc, so.display_path, _line(so, node)])
        return {"d": o.description, "p": owner.display_path, "l": _line(owner, o.node), "f": o.function, "s": steps}

    def value(self, v: Optional[V.Value], depth: int = 0):
        if v is None or depth > 8:
            return None
        if v.kind not in _KEEP and not v.structured and v.placed_by is None and v.guard is None \
                and v.count_of is None:
            return None
        out = {"k": v.kind}
        if v.multi is not None:
            out["m"] = self.origin(v.multi)
        if v.deps:
            out["deps"] = sorted([p, list(path)] for p, path in v.deps)
        if v.qname:
            out["q"] = v.qname
        if v.desc:
            out["desc"] = v.desc
        if v.removed_capsule:
            out["rc"] = True
        if v.devices is not None:
            out["dv"] = list(v.devices)
        if v.elements is not None:
            out["el"] = [self.value(e, depth + 1) for e in v.elements]
        if v.parts is not None:
            out["pt"] = [[k, self.value(p, depth + 1)] for k, p in v.parts]
        if v.rest is not None:
            out["r"] = self.value(v.rest, depth + 1)
        if v.container:
            out["c"] = v.container
        if v.ref is not None:
            out["ref"] = [v.ref[0], list(v.ref[1])]
        if v.placed_by is not None:
            (p, path), desc, node, function = v.placed_by
            out["pb"] = [p, list(path), desc, _line(self.ma, node), function]
        if v.guard is not None:
            out["g"] = [[[k, "safe" if a == "safe" else "false-guard"] for k, a in refs] for refs in v.guard[:2]]
        if v.count_of is not None:
            out["cnt"] = v.count_of[0]
        if v.others:
            out["o"] = [self.value(o, depth + 1) for o in v.others]
        if v.func is not None:
            out["fn"] = self.func(v.func, depth)
        if v.cls is not None:
            out["cls"] = self.cls(v.cls, depth)
        return out

    def func(self, fi: V.FuncInfo, depth: int):
        out = {"q": fi.qname, "src": self.origin(fi.source), "prop": fi.propagate,
               "don": sorted(fi.donate), "donn": sorted(fi.donate_names), "po": fi.partial_of,
               "bound": [self.value(b if not isinstance(b, tuple) else b[0], depth + 1) for b in fi.bound]}
        if fi.local is not None:
            out["rec"] = self.record(fi.local, depth)
        return out

    def record(self, rec, depth: int):
        key = id(rec)
        if key not in self.records:
            self.records[key] = None
            if self.ready_only and getattr(rec, "owner", None) is not None and rec.state != "done":
                raise NotReady(rec.name)
            summary = rec.owner.summary(rec) if getattr(rec, "owner", None) is not None else rec.summary
            data = {"name": rec.name, "params": list(rec.params), "ret": None, "exports": [], "donates": []}
            owner = getattr(rec, "owner", None)
            at = getattr(owner, "path", None)
            if owner is not None and owner is not self.ma and isinstance(at, str) and os.path.isabs(at):
                # a function of another module (a factory's instance of its class): its
                # exports are that module's, for the calling contexts a caller gives it
                data["at"] = [at, owner.display_path]
            if getattr(rec, "star", None) is not None:
                data["star"] = rec.star
            if getattr(rec, "defaults", None):
                data["defaults"] = [[i, self.value(v, depth + 1)] for i, v in sorted(rec.defaults.items())]
            if summary is not None:
                data["ret"] = self.value(summary.ret, depth + 1)
                data["exports"] = [[e.param, e.event.consumer, e.event.sink.protocol, e.event.sink.raises,
                                    e.event.sink.arg, e.event.sink.copy_kw, list(e.path),
                                    e.event.value.placed_by[1] if e.placed else None,
                                    [e.event.when[0], sorted(e.event.when[1])] if e.event.when else None]
                                   for e in summary.exports]
                data["donates"] = sorted(summary.donates)
                if summary.yields is not None:
                    data["yields"] = self.value(summary.yields, depth + 1)
                if summary.fields:
                    data["fields"] = [[n, self.value(v, depth + 1)] for n, v in summary.fields]
                if summary.fills:
                    data["fills"] = [[i, self.value(v, depth + 1)] for i, v in summary.fills]
                if summary.called:
                    data["called"] = [[self.value(v, depth + 1) for v in vs] for vs in summary.called]
            self.records[key] = data
        return str(key)

    def cls(self, c: ClassRecord, depth: int):
        key = id(c)
        if key not in self.classes:
            self.classes[key] = None
            writers = self.ma.class_writers(c)
            if self.ready_only and any(w.state != "done" for ws in writers.values() for w in ws):
                raise NotReady(c.name)
            for attr in list(writers):
                self.ma.class_attribute(c, attr)
            self.classes[key] = {
                "name": c.name,
                "methods": {n: self.value(m, depth + 1) for n, m in c.methods.items()},
                "attrs": {n: self.value(a, depth + 1) for n, a in c.attrs.items()},
                "statics": {n: self.value(a, depth + 1) for n, a in c.statics.items()},
                "record": _record_name(c.record),
                "fields": list(c.fields),
                "call": c.call_method,
            }
        return str(key)


def _record_name(rule) -> Optional[str]:
    """The table entry a record rule is (a decorator or base of
    :mod:`~jaxinterop_lint.knowledge.structures`), by name, for the JSON summary."""
    if rule is None:
        return None
    from .knowledge import structures as S

    for table in (S.RECORD_BASES, S.DATACLASS_DECORATORS):
        for name, entry in table.items():
            if entry is rule or entry == rule:
                return name
    return "dataclasses.dataclass"


def _record_rule(name: Optional[str]):
    if name is None:
        return None
    from .knowledge import structures as S

    return S.RECORD_BASES.get(name) or S.DATACLASS_DECORATORS.get(name) or S.DATACLASS_DECORATORS["dataclasses.dataclass"]


def _line(owner, node) -> int:
    try:
        return owner.position(node)[0]
    except Exception:  # a node of another module: no position here
        return 0


def freeze(ma, ready_only: bool = False) -> dict:
    """The JSON-ready summary of an analysed module.  With ``ready_only``, raises
    :class:`NotReady` where that would analyse a function not analysed yet (:class:`Freezer`)."""
    fz = Freezer(ma, ready_only)
    names = {}
    for name, v in ma.globals.items():
        if name.startswith("@"):
            continue
        data = fz.value(v)
        if data is not None:
            names[name] = data
    exporting = sorted(ma.exporting_names())
    return {"globals": names, "records": {str(k): v for k, v in fz.records.items()},
            "classes": {str(k): v for k, v in fz.classes.items()}, "exporting": exporting,
            "star": list(getattr(ma, "star_modules", ()))}


class Thawer:
    """Rebuild values from :func:`freeze`'s data."""

    def __init__(self, data: dict, module: FrozenModule):
        self.data = data
        self.module = module
        self.records: dict = {}
        self.classes: dict = {}
        self.owners: dict = {}

    def owner_for(self, path: str):
        if path == self.module.display_path:
            return self.module
        if path not in self.owners:
            self.owners[path] = FrozenModule(display_path=path)
        return self.owners[path]

    def defined_in(self, path: str, display_path: str):
        """The owner of a record that another module defines (frozen with its absolute
        ``path``: calling contexts go to that file)."""
        key = ("at", path)
        if key not in self.owners:
            owner = self.owners[key] = FrozenModule(display_path=display_path)
            owner.path = path
        return self.owners[key]

    def origin(self, o):
        if o is None:
            return None
        steps = tuple((d, Site(l), self.owner_for(p)) for d, p, l in o["s"])
        return V.Origin(o["d"], Site(o["l"]), self.owner_for(o["p"]), o["f"], steps)

    def value(self, d):
        if d is None:
            return V.UNKNOWN_VALUE
        fn = self.func(d["fn"]) if "fn" in d else None
        cls = self.cls(d["cls"]) if "cls" in d else None
        placed = None
        if "pb" in d:
            p, path, desc, _line_no, function = d["pb"]
            placed = ((p, tuple(path)), desc, None, function)
        guard = None
        if "g" in d:
            guard = tuple(tuple((k, a) for k, a in refs) for refs in d["g"]) + (None, None)
        return V.Value(kind=d["k"], multi=self.origin(d.get("m")), deps=_deps(d.get("deps", ())),
                       qname=d.get("q"), func=fn, desc=d.get("desc"), cls=cls,
                       removed_capsule=d.get("rc", False),
                       devices=tuple(d["dv"]) if "dv" in d else None,
                       elements=tuple(self.value(e) for e in d["el"]) if "el" in d else None,
                       parts=tuple((k, self.value(p)) for k, p in d["pt"]) if "pt" in d else None,
                       rest=self.value(d["r"]) if "r" in d else None, container=d.get("c"),
                       ref=(d["ref"][0], tuple(d["ref"][1])) if "ref" in d else None, placed_by=placed,
                       guard=guard, count_of=(d["cnt"], None) if "cnt" in d else None,
                       others=tuple(self.value(o) for o in d.get("o", ())))

    def func(self, f):
        local = self.record(f["rec"]) if f.get("rec") else None
        return V.FuncInfo(local=local, qname=f["q"], source=self.origin(f["src"]), propagate=f["prop"],
                          donate=frozenset(f["don"]), donate_names=frozenset(f["donn"]),
                          partial_of=f["po"], bound=tuple(self.value(b) for b in f["bound"]))

    def record(self, key):
        if key in self.records:
            return self.records[key]
        data = self.data["records"].get(key)
        if data is None:
            return None
        at = data.get("at")
        rec = FrozenRecord(data["name"], data["params"], owner=self.module if not at else self.defined_in(*at))
        self.records[key] = rec
        rec.defaults = {i: self.value(v) for i, v in data.get("defaults", ())}
        star = data.get("star")
        rec.star = star if isinstance(star, int) and 0 <= star < len(rec.params) else None
        exports = []
        for param, consumer, protocol, raises, arg, copy_kw, *rest in data["exports"]:
            sink = Sink(protocol, raises, arg, copy_kw)
            path = tuple(rest[0]) if rest else ()
            placed = rest[1] if len(rest) > 1 else None     # the placement's description
            when = (rest[2][0], frozenset(rest[2][1])) if len(rest) > 2 and rest[2] else None
            value = V.UNKNOWN_VALUE if placed is None else V.Value(
                kind=V.UNKNOWN, placed_by=((param, path), placed, None, data["name"]))
            event = SinkEvent(Site(0), consumer, sink, value, None, data["name"], when=when)
            exports.append(ExportEffect(param, event, path, placed=placed is not None))
        ret = self.value(data["ret"]) if data["ret"] is not None else None
        yields = self.value(data["yields"]) if data.get("yields") is not None else None
        fields = tuple((n, self.value(v)) for n, v in data.get("fields", ()))
        fills = tuple((i, self.value(v)) for i, v in data.get("fills", ()))
        called = tuple(tuple(self.value(v) for v in vs) for vs in data.get("called", ()))
        rec.summary = Summary(ret=ret, exports=tuple(exports), donates=frozenset(data["donates"]),
                              yields=yields, fields=fields, fills=fills, called=called)
        return rec

    def cls(self, key):
        if key in self.classes:
            return self.classes[key]
        data = self.data["classes"].get(key)
        if data is None:
            return None
        c = ClassRecord(None, data["name"])
        self.classes[key] = c
        c.methods = {n: self.value(m) for n, m in data["methods"].items()}
        c.attrs = {n: self.value(a) for n, a in data["attrs"].items()}
        c.statics = {n: self.value(a) for n, a in data.get("statics", {}).items()}
        c.record = _record_rule(data.get("record"))
        c.fields = tuple(data.get("fields", ()))
        c.call_method = data.get("call")
        return c


def _deps(items) -> frozenset:
    """Parameter dependences from JSON: ``[param, path]`` pairs."""
    return frozenset((d, ()) if isinstance(d, int) else (d[0], tuple(d[1])) for d in items)


class LazyGlobals(LazyDict):
    """A frozen module's module-level names, each value thawed when first read (a warm run
    asks a cached module for its exporting names, an analysis for the few names it imports:
    thawing every value of a large module up front was most of a warm run on torchrl).  One
    :class:`Thawer` serves every name, so shared records and classes stay shared, whatever
    the order of the reads.  A value whose data cannot be thawed reads as absent (an unknown
    name), as a summary that cannot be thawed at all is no summary."""

    def __init__(self, raw: dict, thawer: Thawer):
        super().__init__()
        self._raw = dict(raw)
        self._thaw = thawer.value

    def _take(self, name) -> bool:
        if name not in self._raw:
            return False
        d = self._raw.pop(name)
        try:
            value = self._thaw(d)
        except Exception:  # malformed data: no value
            return False
        dict.__setitem__(self, name, value)
        return True

    def _all(self) -> None:
        for name in list(self._raw):
            self._take(name)

    def __len__(self) -> int:
        self._all()
        return dict.__len__(self)

    def __iter__(self):
        self._all()
        return dict.__iter__(self)

    def __eq__(self, other) -> bool:
        self._all()
        return dict.__eq__(self, other)

    __hash__ = None

    def keys(self):
        self._all()
        return dict.keys(self)

    def values(self):
        self._all()
        return dict.values(self)

    def items(self):
        self._all()
        return dict.items(self)

    def copy(self) -> dict:
        self._all()
        return dict(dict.items(self))


def thaw(data: dict, display_path: str, depends_on=()) -> FrozenModule:
    """A :class:`FrozenModule` from :func:`freeze`'s data (its globals thawed as they are
    read: :class:`LazyGlobals`).  Raises KeyError, TypeError ... for data of the wrong shape."""
    module = FrozenModule(display_path=display_path, depends_on=set(depends_on),
                          names=tuple(data.get("exporting", ())), star_modules=tuple(data.get("star", ())))
    th = Thawer(data, module)
    if not isinstance(data["globals"], dict) or not isinstance(data.get("records", {}), dict) \
            or not isinstance(data.get("classes", {}), dict):
        raise TypeError("not a frozen module")
    module.globals = LazyGlobals(data["globals"], th)
    return module
