"""Apply the fixes of one module's text until none is left.

``fix_text(text, path, config, unsafe)`` lints ``text``, applies every applicable fix whose
edits do not overlap an earlier one's (the safe fixes first: unsafe ones only in a round with
no safe fix left, since a safe fix may make an unsafe one needless), adds the imports the fixes need (libcst's
``AddImportsVisitor``), re-lints and repeats: overlapping fixes are thus applied one per
round.  The text outside the edited ranges and the added import lines is kept character for
character.  A result that does not parse, or fixes that do not converge, leave the text as
it was and set ``error``.
"""
from __future__ import annotations

import ast
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Optional

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from ..config import Config
from ..engine import FileResult, SourceError, lint_source, parse
from ..finding import Edit, Finding
from ..catalog import applicable  # noqa: F401  (re-exported)
from ..rules.edits import line_starts, offset

MAX_ROUNDS = 10
_IMPORT = re.compile(r"import ([A-Za-z_][\w.]*)(?: as ([A-Za-z_]\w*))?")


@dataclass
class FixOutcome:
    """The result of fixing one text.

    ``text`` the fixed text (the input when nothing applied or on error); ``fixed`` how many
    findings were fixed; ``result`` the lint of ``text`` (the remaining findings); ``error``
    why the fixes were not applied, or None; ``codes`` the codes of the fixed findings.
    """

    text: str
    fixed: int
    result: FileResult
    error: Optional[str] = None
    codes: list = field(default_factory=list)


def _spans(starts: list[int], edits: Iterable[Edit]) -> list[tuple[int, int, Edit]]:
    out = []
    for e in edits:
        if e.start_line > len(starts) or e.end_line > len(starts):
            raise ValueError(f"edit outside the text: line {e.end_line}")
        out.append((offset(starts, e.start_line, e.start_column), offset(starts, e.end_line, e.end_column), e))
    return out


def choose(findings: list[Finding], text: str) -> list[Finding]:
    """The findings whose fixes are applied together this round: in source order, each one
    whose edits overlap no edit of an earlier chosen fix."""
    starts = line_starts(text)
    taken: list[tuple[int, int]] = []
    chosen, seen = [], set()
    for f in sorted(findings, key=Finding.sort_key):
        spans = [(a, b) for a, b, _ in _spans(starts, f.fix.edits)]
        if any(a < d and c < b or (a == b == c == d) for a, b in spans for c, d in taken):
            continue
        key = tuple(f.fix.edits)
        if key in seen:
            continue
        seen.add(key)
        taken.extend(spans)
        chosen.append(f)
    return chosen


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with non-overlapping ``edits`` applied (positions refer to ``text``).
    Raises ValueError for overlapping edits or positions outside the text."""
    spans = sorted(_spans(line_starts(text), edits), key=lambda s: s[0])
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        if start < end:
            raise ValueError("overlapping edits")
    out, last = [], 0
    for start, end, e in spans:
        out.append(text[last:start])
        out.append(e.text)
        last = end
    out.append(text[last:])
    return "".join(out)


def add_imports(text: str, statements: Iterable[str]) -> str:
    """``text`` with the ``import m`` / ``import m as a`` statements added where libcst's
    ``AddImportsVisitor`` puts them (after the docstring, ``__future__`` imports and the
    leading imports), unless the module already has them.  Raises :class:`SourceError` when
    ``text`` does not parse."""
    statements = sorted(set(statements))
    if not statements:
        return text
    module = parse(text)
    if module.code != text:  # libcst would write back other text (a dropped form feed ...)
        raise SourceError("the module does not write back exactly; imports not added")
    context = CodemodContext()
    for statement in statements:
        m = _IMPORT.fullmatch(statement)
        if m is None:
            raise ValueError(f"not an import statement: {statement!r}")
        AddImportsVisitor.add_needed_import(context, m.group(1), asname=m.group(2))
    return AddImportsVisitor(context).transform_module(module).code


def _compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def check_parses(original: str, fixed: str) -> Optional[str]:
    """Why ``fixed`` is not acceptable Python, or None: it must parse with libcst, and with
    Python's own parser whenever ``original`` did."""
    try:
        parse(fixed)
    except SourceError as exc:
        return f"the fixed code does not parse ({exc.message}, line {exc.line})"
    if _compiles(original) and not _compiles(fixed):
        return "the fixed code is not valid Python"
    return None


def lint_text(text: str, path: str, config: Config, project=None) -> FileResult:
    """Lint ``text`` as the command line does, with the whole-``project`` analysis when given
    (see :func:`jaxinterop_lint.engine.shared_project`)."""
    if project is None:
        return lint_source(text, path, config)
    _forget_stale(project, path, text)
    return lint_source(text, path, config, project=project)


def _forget_stale(project, path: str, text: str) -> None:
    """Drop the project's analysis of ``path`` when it was made from another text: the
    project hands out the analysis it has for a path whatever text the caller passes."""
    by_path = getattr(project, "by_path", None)
    if not isinstance(by_path, dict):
        return
    key = os.path.abspath(path)
    ma = by_path.get(key)
    if ma is None or getattr(ma, "source", text) == text:
        return
    del by_path[key]
    modules = getattr(project, "modules", None)
    if isinstance(modules, dict):
        for name in [n for n, m in modules.items() if m is ma]:
            del modules[name]


def fix_text(text: str, path: str, config: Optional[Config] = None, unsafe: bool = False,
             result: Optional[FileResult] = None, project=None) -> FixOutcome:
    """Fix ``text`` (decoded source, no BOM) of the file ``path``.

    ``result`` is the lint of ``text`` when the caller has it; ``project`` the project whose
    modules the analysis follows.  Returns a :class:`FixOutcome`; never raises for bad input:
    a file that cannot be linted comes back unchanged with its lint error in ``result``.
    """
    config = config or Config()
    original = text
    if result is None:
        result = lint_text(text, path, config, project)
    fixed, codes = 0, []
    for _ in range(MAX_ROUNDS):
        if result.error is not None:
            break
        todo = [f for f in result.findings if applicable(f, False)] or \
            [f for f in result.findings if applicable(f, unsafe)]
        if not todo:
            return FixOutcome(text, fixed, result, None, codes)
        try:
            chosen = choose(todo, text)
            new = apply_edits(text, [e for f in chosen for e in f.fix.edits])
            new = add_imports(new, [i for f in chosen for i in f.fix.imports])
        except (ValueError, SourceError, cst.ParserSyntaxError) as exc:
            message = exc.message if isinstance(exc, SourceError) else str(exc)
            return _failed(original, path, config, f"could not apply the fixes: {message}", project)
        problem = check_parses(original, new)
        if problem is not None:
            return _failed(original, path, config, problem, project)
        if new == text:
            break
        text = new
        fixed += len(chosen)
        codes.extend(f.code for f in chosen)
        result = lint_text(text, path, config, project)
    else:
        if any(applicable(f, unsafe) for f in result.findings):
            return _failed(original, path, config, f"the fixes did not converge after {MAX_ROUNDS} rounds", project)
    if result.error is not None and text != original:
        return _failed(original, path, config, f"the fixed code cannot be linted ({result.error.message})", project)
    return FixOutcome(text, fixed, result, None, codes)


def _failed(original: str, path: str, config: Config, error: str, project=None) -> FixOutcome:
    return FixOutcome(original, 0, lint_text(original, path, config, project), error)
