"""The analyses of a :class:`~.session.Session`: what the project's analyses ask of the run, and
the judgment of one reported file.

:class:`~jaxinterop_lint.analysis.project.Project` asks the session for a file's text (the
one read, or the text a front end gave), for a new module analysis (:mod:`.analyse` makes it:
masked for a file's own findings, parsed only for the names asked of it (:mod:`.partial`), or
whole) and for a module's stored summary.  :meth:`AnalysesMixin.analyse` is the analysis of a
reported file, and ``_judged`` its raw findings (:mod:`.judge`) once the calling contexts its
callers give it are known (:mod:`.contexts`).
"""
from __future__ import annotations

import os
from typing import Optional

from ..source import SourceError
from .store import Store


# The stages below the warm check are imported when first used: a run that the warm record
# answers (:mod:`.warm`) loads none of the plan, the demand, the analysis or the rules.
def build_analysis(*args, **kwargs):
    """:func:`.analyse.build_analysis`."""
    from .analyse import build_analysis as made

    return made(*args, **kwargs)


def holds_no_finding(*args, **kwargs):
    """:func:`.analyse.holds_no_finding`."""
    from .analyse import holds_no_finding as made

    return made(*args, **kwargs)


def run_analysis(*args, **kwargs):
    """:func:`.analyse.run_analysis`."""
    from .analyse import run_analysis as made

    return made(*args, **kwargs)


def raw_findings(*args, **kwargs):
    """:func:`.judge.raw_findings`."""
    from .judge import raw_findings as made

    return made(*args, **kwargs)


class AnalysesMixin:
    """The analyses of a :class:`~.session.Session` (a mixin: it reads the session's ``plan``,
    ``words``, ``project``, ``config``, ``reader``, ``store``, ``errors`` and ``analysed``)."""

    # -- callbacks of the project --------------------------------------------------------
    def _text(self, path: str) -> str:
        given = self.plan.texts.get(path)
        return given if given is not None else self.reader.text(path)

    def callers(self, path: str) -> frozenset:
        """Names bound in ``path`` by imports of modules that name a consumer (their calls
        may be findings: the masking keeps them), and names bound to what a module naming
        none hands on from one (a factory: :meth:`~.handon.HandOn.handed_targets`)."""
        f = self.plan.facts(path)
        if not f or self.index is None:
            return frozenset()
        self.plan.handed_targets(path)
        handed = frozenset(self.plan.handed_bound.get(path, ()))
        sinky = {t for t, _ in self.plan.targets(path) if (self.plan.facts(t) or {}).get("sink")}
        if not sinky:
            return handed
        bound = self.plan._bound.get(path, {})
        if any(t in sinky for t, _ in bound.get("*", ())):
            # a star import of such a module: any name may be one of its functions
            out = set()
            for module, names in f["imports"]:
                for name, alias in names or [[module.split(".")[0], None]]:
                    out.add(alias or name)
            return frozenset(out)
        return handed | frozenset(n for n, ts in bound.items() if any(t in sinky for t, _ in ts))

    def _make_analysis(self, path: str, project, text=None, want: Optional[frozenset] = None):
        try:
            text = text if text is not None else self._text(path)
            # A file that can make a finding by itself is masked for its own findings; a
            # module analysed only for what other analyses take from it (``want``: the names
            # they ask for) is parsed for those names (issue 16), or whole.
            masking = self.words.masking if self.plan.direct(path) else None
            if masking is None and want is not None and self.may_be_partial(path):
                return build_analysis(text, path, self.config, project, partial=want)
            return build_analysis(text, path, self.config, project, masking, self.callers(path))
        except SourceError as exc:
            self.errors[path] = exc
            return None

    def may_be_partial(self, path: str) -> bool:
        """Whether ``path``, a file that makes no finding by itself (not
        :meth:`~.plan.Plan.direct`: the caller asked), may be parsed only for the names asked
        of it (:mod:`.partial`): any but a package ``__init__`` (its names are mostly
        re-exports).  A module JAX code reaches may be too: keras' ``ops/nn.py`` (117 KB)
        was parsed whole for one function an analysis opened (0.17 s of a 1.4 s run); when
        its own result needs calling contexts, it is analysed whole then
        (:meth:`~jaxinterop_lint.analysis.project.Project.analysis_of_path`), and a partial
        analysis is never stored as a summary."""
        return os.path.basename(path) != "__init__.py"

    def _load_summary(self, path: str):
        data = Store.field(self.store.get(path), "summary", self.reader.digest(path), self.reader.digest,
                           self.reader.exists)
        if data is None:
            return None
        from ..summaries import thaw

        try:
            deps = self.store.get(path)["summary"].get("deps", {})
            return thaw(data, self.project.display(path), depends_on=deps.keys())
        except Exception:  # a malformed entry is no entry
            return None

    # -- one file --------------------------------------------------------------------------
    def analyse(self, path: str):
        """Analyse the file ``path`` (absolute) for reporting; returns the analysis, or
        raises :class:`SourceError` (an internal error is a SourceError saying so)."""
        text = self._text(path)
        if self.project is None:
            ma = build_analysis(text, path, self.config, None, self.words.masking, self.callers(path))
            self.analysed.append(path)
            return run_analysis(ma)
        ma = self.project.analysis_of_path(path, text=text, fresh=True)
        if ma is None:
            if path in self.errors:
                raise self.errors[path]
            raise SourceError("internal error: the analysis of this file failed; please report it "
                              "with this file (JAXINTEROP_LINT_DEBUG=1 shows the traceback)")
        return ma

    def _judged(self, path: str):
        self._fed[path] = self.feed_contexts(path)
        if path in self._only_contexts and not self.contexts_given(path):
            return [], []       # issue 16: planned for its callers' contexts, and none gave one
        made = self._project is not None and self._project.by_path.get(os.path.abspath(path)) is not None
        if not made and holds_no_finding(self._text(path), self.words.masking, self.callers(path)):
            return [], []       # issue 16: nothing a finding stands at; no libcst parse for it
        return raw_findings(self.analyse(path), path)
