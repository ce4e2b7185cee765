"""One module's analysis: globals, functions and their summaries, classes, events.

:class:`ModuleAnalysis` walks the module body once, binds every ``def`` and ``class`` it meets,
then analyses each function exactly once (on demand when a call needs its summary, otherwise
at the end).  A function's analysis binds its parameters to symbolic values, so one run gives
both its findings and its summary: what it returns (multi-device always, when given
parameters are, or safe) and which parameters it exports through a sink.  Recursion is cut
by using the summary computed so far and re-running the function until it is stable.
"""
from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from ..knowledge import apis
from . import ffi
from .values import Value


from .records import ClassRecord, FunctionRecord, Summary, function_record  # noqa: E402,F401  (re-exported)


class ModuleAnalysis:
    """Analyse one parsed module.

    ``module`` is a ``libcst.Module``, ``path`` the file path used in findings, ``package``
    the dotted package of the module (for relative imports).  After :meth:`run`, ``events``
    holds every observation of the walk (see :mod:`.events`); ``functions`` every function
    record.  Raises nothing for valid modules; the engine guards against the rest.
    """

    def __init__(self, module: cst.Module, path: str, package: str = "", project=None,
                 source: str = "", kb=None):
        from ..knowledge import DEFAULT_KNOWLEDGE

        self.kb = kb if kb is not None else DEFAULT_KNOWLEDGE
        self.module = module
        self.source = source
        self.tests_run = False      # analyse_functions called the tests with their fixtures
        self.star_modules: list = []     # the modules ``from m import *`` takes every name of
        self._star_values: dict = {}
        self.path = path
        self.package = package
        self.project = project
        self.globals: dict[str, Value] = {}
        self.module_events: dict = {}
        self.functions: list[FunctionRecord] = []
        self.by_node: dict = {}     # id(def or lambda node) [, id(specialised function)] -> record
        self.imports_jax = False
        self.ffi = ffi.FfiCallbacks()
        self.analysed_count = 0
        self.globals_changed = 0    # writes of functions into the globals (module_state.publish)
        self.specialized: dict = {}     # (nested def, call) -> its specialised record (closures.py)
        self.int_constants = None       # the module's constants, read on first use (constants.py)
        self.const_imports = None       # and its imports, read with them
        self._positions = None
        self.masker = None
        self.partial = None     # made for some top-level names only (pipeline/partial.py)
        self.parts: list = []   # [module, line offset, positions] of the statements added later
        self.parsed_text = None
        self.line_map = None    # lines of the module parsed -> the file's (pipeline/compact.py)
        self.display_path = path
        self.depends_on: set = set()
        from .contexts import ContextTable

        self.contexts = ContextTable()
        # callee file -> whether it was reported, for each exporting function of another
        # module this module calls (its result depends on it: PLAN decision 1)
        self.context_callees: dict = {}

    # -- driving -------------------------------------------------------------------------
    def run(self) -> "ModuleAnalysis":
        """Walk the module, then every function not yet analysed.  Returns self."""
        self.walk_body()
        return self.analyse_functions()

    def walk_body(self) -> "ModuleAnalysis":
        """Walk the module body: after this, ``globals`` holds every module-level name."""
        if "buffer_callback" in self.source:
            self.ffi = ffi.find_callbacks(self.module, self.package)
        self._walk(self.module.body)
        return self

    def add_part(self, module: cst.Module, offset: int) -> None:
        """Walk ``module``, more top-level statements of this module's text parsed alone
        (its first line is line ``offset + 1`` of the text), into the globals, as
        :meth:`walk_body` walks the first part (a module made for some names only:
        :mod:`jaxinterop_lint.pipeline.partial`)."""
        self.parts.append([module, offset, None])
        self._walk(module.body)

    def _walk(self, body) -> None:
        from .flow import Walker

        walker = Walker(self, None, self.globals, None, "<module>")
        for stmt in body:
            walker.block((stmt,))
            if walker.env is not None and walker.env is not self.globals:
                # a module-level if/try/for/with walks on a copy: the globals are what it
                # ends with, at once (functions look names up in this very dict, also those
                # the statements below call: ``try: import torch; conv = torch.from_dlpack``
                # then ``export(x)`` running ``conv``)
                self.globals.clear()
                self.globals.update(walker.env)
                walker.env = self.globals

    def analyse_functions(self) -> "ModuleAnalysis":
        """Analyse every function not analysed yet (on demand by a caller), the first time
        after calling the module's tests with its fixtures (:mod:`.fixtures`).  Returns self."""
        if not self.tests_run:
            self.tests_run = True
            if "fixture" in self.source or self.conftests():
                from .fixtures import run_tests_with_fixtures

                run_tests_with_fixtures(self)
        i = 0
        while i < len(self.functions):
            self.summary(self.functions[i])
            i += 1
        # A function analysed before another wrote a global it reads (``flush()`` defined
        # above the ``main()`` that fills ``BUF``): analysed again with what the globals hold
        # now (values only grow, so this ends; at most twice).
        for _ in range(2):
            stale = [r for r in self.functions
                     if r.state == "done" and getattr(r, "globals_seen", self.globals_changed) < self.globals_changed]
            if not stale:
                break
            for r in stale:
                r.state = "new"
            for r in stale:
                self.summary(r)
        return self

    def conftests(self) -> list:
        """The ``conftest.py`` files whose fixtures pytest gives this test module's tests
        (:meth:`~jaxinterop_lint.pipeline.modules.ModuleIndex.conftests`), or []."""
        index = getattr(self.project, "index", None)
        if index is None or not os.path.isabs(self.path):
            return []
        return [c for c in index.conftests(self.path) if c != self.path]

    def position(self, node) -> tuple:
        """``(line, column, end_line, end_column)`` of a node of this module (1-based lines,
        0-based columns); libcst's PositionProvider runs once, on first use."""
        if self._positions is None:
            self._positions = _positions_of(self.module)
        r = self._positions.get(node)
        offset = 0
        if r is not None and self.line_map is not None:    # parsed without its blanked lines
            lm = self.line_map.original
            return (lm(r.start.line), r.start.column, lm(r.end.line), r.end.column)
        if r is None:
            for part in self.parts:     # statements parsed alone, lines offset (add_part)
                if part[2] is None:
                    part[2] = _positions_of(part[0])
                r = part[2].get(node)
                if r is not None:
                    offset = part[1]
                    break
            else:
                return (1, 0, 1, 0)
        return (r.start.line + offset, r.start.column, r.end.line + offset, r.end.column)

    @property
    def events(self) -> list:
        """Every event, module level first, then function by function, then the calling
        contexts of this module's exports (:attr:`contexts`)."""
        out = list(self.module_events.values())
        for rec in self.functions:
            out.extend(rec.events.values())
        out.extend(self.contexts.events(self.export_event))
        out.extend(self.incoming_events())
        return out

    def incoming_events(self) -> list:
        """The sink events of the calling contexts that callers in other reported modules
        gave this module's exports (:meth:`~.project.Project.contexts_into`), each resolved
        against this analysis's own export (left out when the export is gone or names
        another parameter: the callee's text changed), in a stable order: by the caller's
        file, then the line of its call."""
        table = self.project.contexts_into(self.path) if self.project is not None else None
        if not table:
            return []
        found = []
        for (function, export), sites in table.entries.items():
            for entry in sites.values():
                frame = entry.frames[0] if entry.frames else None
                inner = self.export_event(function, export, frame.param if frame is not None else None)
                if inner is None:
                    continue
                owner = getattr(frame, "owner", None)
                where = (getattr(owner, "display_path", ""), owner.position(frame.call)[0] if owner is not None else 0)
                found.append((where, entry.event(inner)))
        found.sort(key=lambda item: item[0])
        return [event for _, event in found]

    def export_event(self, function: str, index: int, param: Optional[str] = None):
        """The sink event of the ``index``-th export of this module's function ``function``
        (a qualified name), or None: how a calling context added without it is resolved.
        With ``param`` (the parameter's name) the export must be of that parameter."""
        for rec in self.functions:
            if rec.name == function and rec.summary is not None and index < len(rec.summary.exports):
                effect = rec.summary.exports[index]
                if param is not None and (effect.param >= len(rec.params) or rec.params[effect.param] != param):
                    continue
                return effect.event
        return None

    def register(self, rec: FunctionRecord, within=None) -> FunctionRecord:
        """Add a function record (called by the walk when it meets a def or lambda) and
        return it, or the one its node has already.  ``within``: the function record whose
        walk meets it; a function specialised for a call (:mod:`.closures`) has records of
        its own for the defs and lambdas in it, whose closures hold that call's values
        (``def mover(target): def move(t): return jax.tree.map(lambda x:
        x.to_device(target), t)``: the lambda of ``mover(sharding)`` is not the one of
        ``mover(device)``, whichever was walked first)."""
        key = id(rec.node) if not getattr(within, "specialized", False) else (id(rec.node), id(within))
        existing = self.by_node.get(key)
        if existing is not None:
            return existing
        rec.owner = self
        shift = self.ffi.shift_for(rec)
        if shift is not None:
            rec.ffi_shift = shift
        self.functions.append(rec)
        self.by_node[key] = rec
        return rec

    def summary(self, rec: FunctionRecord) -> Summary:
        """The summary of ``rec``, analysing it first if needed (recursion-safe)."""
        if rec.state == "done":
            return rec.summary
        if rec.state == "running":
            rec.recursive = True
            return rec.summary or Summary()
        from .functions import analyse_function

        if rec.rebound and rec.state == "new" and rec not in self.functions:
            self.functions.append(rec)      # an inherited method run by a subclass (classes.rebound)

        rec.globals_seen = self.globals_changed
        for _ in range(4):
            rec.state = "running"
            rec.recursive = False
            previous = rec.summary
            rec.summary = analyse_function(self, rec)
            self.analysed_count += 1
            if not rec.recursive or (previous is not None and previous.key() == rec.summary.key()):
                break
        rec.state = "done"
        return rec.summary

    def exporting_names(self) -> frozenset:
        """Short names of this module's functions and methods that export a parameter
        through a sink (a call of one of them can be a finding).  Functions nested in other
        functions are left out: no other statement can call them by their name."""
        return frozenset(r.name.rsplit(".", 1)[-1] for r in self.functions
                         if r.summary is not None and (r.summary.exports or self.calls_consumer_default(r))
                         and r.name != "<lambda>" and ("." not in r.name or r.cls is not None)) | self.consumer_aliases()

    def calls_consumer_default(self, rec) -> bool:
        """Whether ``rec`` calls a parameter whose default is a consumer, a function that
        exports a parameter, or a container of them (``def run(x, stages=STAGES)`` with
        ``for s in stages: x = s(x)``): a call omitting it can export its arguments."""
        defaults = getattr(rec, "defaults", None) or {}
        return any(attr is None and param in defaults and self._exports_when_called(defaults[param])
                   for param, _, attr, *_ in rec.summary.calls)

    def _exports_when_called(self, v) -> bool:
        from . import parts as P
        from . import values as V

        def exports(x) -> bool:
            if _is_consumer(x, self.kb.call_sinks):
                return True
            local = x.func.local if x.kind == V.FUNC and x.func is not None else None
            owner = getattr(local, "owner", None)
            return owner is not None and bool(owner.summary(local).exports)

        return P.holds(v, exports, 3)

    def consumer_aliases(self) -> frozenset:
        """Module-level names bound to a consumer (``to_torch = torch.from_dlpack``, ``dl =
        functools.partial(torch.from_dlpack)``), or to a container holding one (``HANDLERS =
        {"torch": torch.from_dlpack}``): a call of one exports its argument, as a call of an
        exporting function does."""
        return frozenset(n for n, v in self.globals.items() if _holds_consumer(v, self.kb.call_sinks))

    def resolve_import(self, qualified: str) -> Value:
        """The value an import of ``qualified`` binds: a qualified-name reference.  Project
        names are resolved lazily, when used (:meth:`project_value`), so import cycles
        terminate."""
        from .values import qname

        return qname(qualified, via_import=True)

    def star_import(self, node) -> None:
        """Note the module of ``from m import *`` (``node``), resolved against this
        module's package (:meth:`star_value` reads its names)."""
        from .imports import from_module

        base = from_module(node, self.package)
        if base and base not in self.star_modules:
            self.star_modules.append(base)

    def star_value(self, name: str) -> Value:
        """The value of ``name``, bound by no statement of this module, taken from the
        modules of its star imports (the last one that has it): a project module's
        top-level name, or a library name the tables know (:meth:`~..knowledge.view.Knowledge.knows`);
        unknown otherwise."""
        from .values import UNKNOWN_VALUE, qname

        known = self._star_values.get(name)
        if known is not None:
            return known
        out = UNKNOWN_VALUE
        if name in self.globals:    # bound here (later than the code reading it): not the star's
            return out
        for base in reversed(self.star_modules):
            qn = f"{base}.{name}"
            if self.project is not None:
                resolved = self.project.resolve(qn, self)
                if resolved is not None:
                    out = resolved
                    break
            if self.kb.knows(qn):
                out = qname(qn)
                break
        self._star_values[name] = out
        return out

    def project_value(self, value: Value) -> Value:
        """``value`` with a reference to a project name replaced by what that name is."""
        if self.project is None or value.kind != "qname" or self.kb.declares(value.qname):
            return value   # a name the configuration declares means what it says (facts.py)
        resolved = self.project.resolve(value.qname, self)
        return resolved if resolved is not None else value

    # -- classes -------------------------------------------------------------------------
    def class_writers(self, cls: ClassRecord) -> dict:
        """Attribute -> the methods of ``cls`` that assign ``self.<attribute>`` (found on
        first use: most classes are never read through an instance)."""
        if cls.writers is None:
            from .classes import self_writers

            cls.writers = self_writers(cls)
        return cls.writers

    def class_attribute(self, cls: ClassRecord, attr: str) -> Optional[Value]:
        """The value methods of ``cls`` store in ``self.<attr>`` (analysing the writers first;
        those inherited from a base class store on the base's record), joined with the
        class attribute of that name."""
        from .values import join, written

        out = written(cls.statics.get(attr), cls.attrs.get(attr))
        for writer in self.class_writers(cls).get(attr, ()):
            writer.owner.summary(writer)
            owner = getattr(writer, "cls", None)
            if owner is not None and owner is not cls:
                # a method inherited from a base class (``setup()``) stores on the base's record
                out = join(out, owner.attrs.get(attr))
        return join(out, cls.attrs.get(attr))

    def is_removed_attribute_receiver(self, value: Value) -> bool:
        """Whether ``value.device_buffer`` is a removed-API use: not on known non-JAX objects,
        and on unknown objects only in modules that import jax (rules.md JXI005)."""
        from .values import ARRAY, FOREIGN, SAFE, UNKNOWN

        if value.kind == FOREIGN:
            return False
        if value.kind in (ARRAY,) or value.param_array:
            return True
        if value.kind in (UNKNOWN, SAFE):
            return self.imports_jax
        return False


JAX_ROOTS = apis.JAX_ROOTS


def _positions_of(module: cst.Module):
    """libcst's ``PositionProvider`` over ``module``: node -> its code range."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def _holds_consumer(v, sinks) -> bool:
    """Whether the value ``v`` is a consumer of ``sinks`` (:func:`_is_consumer`) or a
    container holding one (three deep at most)."""
    from . import parts as P

    return P.holds(v, lambda x: _is_consumer(x, sinks), 3)


def _is_consumer(v, sinks) -> bool:
    """Whether ``v`` is a library function of ``sinks`` or a ``functools.partial`` of one."""
    from . import values as V

    if v.kind == V.QNAME:
        return v.qname in sinks
    return v.kind == V.FUNC and v.func is not None and v.func.partial_of in sinks
