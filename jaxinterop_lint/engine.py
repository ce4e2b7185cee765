"""The one engine behind the CLI, the flake8 plugin, the API and the tests.

``lint_source(source, path, config)`` lints one file's text; ``lint_paths(paths, config)``
discovers, reads and lints files.  Nothing else in the package parses Python.
"""
from __future__ import annotations

import ast
import io
import os
import re
import stat
import tokenize
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Optional


from . import prefilter as prefilter_mod
from .config import Config
from .finding import Finding

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
FILE_NOQA = re.compile(r"#\s*jaxinterop-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
                       re.IGNORECASE)
LINE_SPLIT = re.compile(r"\r\n|\r|\n")


class SourceError(Exception):
    """A file that cannot be linted: unreadable, undecodable or not valid Python.
    ``line``/``column`` locate the problem (1-based line, 1-based column)."""

    def __init__(self, message: str, line: int = 1, column: int = 1):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


@dataclass
class FileResult:
    """The outcome of linting one file: findings (after selection and noqa), an error, the
    sinks judged handled by an enclosing ``try`` (``(path, line)``), and what was suppressed."""

    path: str
    findings: list = field(default_factory=list)
    error: Optional[SourceError] = None
    handled: list = field(default_factory=list)
    suppressed: list = field(default_factory=list)
    analysed: bool = False


@dataclass
class LintResult:
    """The outcome of linting many files."""

    findings: list = field(default_factory=list)
    errors: list = field(default_factory=list)      # (path, SourceError)
    handled: list = field(default_factory=list)
    suppressed: list = field(default_factory=list)
    files: int = 0
    analysed: int = 0
    analysed_paths: list = field(default_factory=list)   # absolute paths of modules analysed


def decode(data: bytes, path: str = "<string>") -> str:
    """Decode Python source bytes as the interpreter would (BOM, PEP 263 cookie, UTF-8).

    Raises :class:`SourceError` for an unknown codec, bytes invalid in the encoding, or a NUL."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot decode: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise SourceError("source contains a NUL byte", line, 1)
    return text


def read_bytes(path: str) -> bytes:
    """The bytes of the file ``path``; raises :class:`SourceError` with a readable reason.

    Only regular files are read: a FIFO, a socket or a device named ``*.py`` is refused
    without blocking (it is opened non-blocking and checked before any read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise SourceError("no such file (deleted, or a broken symlink)") from None
    except IsADirectoryError:
        raise SourceError("is a directory, not a Python file") from None
    except PermissionError:
        raise SourceError("permission denied") from None
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise SourceError("is a directory, not a Python file")
        if not stat.S_ISREG(mode):
            raise SourceError("not a regular file (a FIFO, socket or device); not read")
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            return fh.read()
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        if fd >= 0:
            os.close(fd)


def read_source(path: str) -> str:
    """Read and decode a file (see :func:`read_bytes` and :func:`decode`); raises
    :class:`SourceError` with a readable reason."""
    return decode(read_bytes(path), path)


# libcst's native parser overflows its stack (a segfault that kills the process) on some
# hundreds of nested brackets or unary operators, and takes minutes on a few thousand chained
# calls.  Texts past these cheap bounds are first checked with CPython's parser, which has
# proper limits (200 nested brackets, 100 indentation levels, its recursion limit).
_BRACKET = re.compile(r"[()\[\]{}]")
_DEEP_INDENT = re.compile(r"^[ \t\f]{100,}\S", re.M)
RISKY_DEPTH = 50          # nested brackets
RISKY_SPAN = 2000         # characters inside one outermost bracket pair, or on one line
MAX_TREE_DEPTH = 1000     # syntax tree levels past which a text is refused (libcst is slow on it)
PROBE_TIMEOUT = 60.0      # seconds libcst may take on a risky text CPython cannot check


def _shape(text: str) -> tuple:
    """``(deepest bracket nesting, its offset, longest outermost bracketed span, its
    offset)``, counting brackets in strings and comments too (good enough for a bound)."""
    depth = deepest = deepest_at = span = span_at = start = 0
    for m in _BRACKET.finditer(text):
        if m.group() in "([{":
            if not depth:
                start = m.start()
            depth += 1
            if depth > deepest:
                deepest, deepest_at = depth, m.start()
        elif depth:
            depth -= 1
            if not depth and m.start() - start > span:
                span, span_at = m.start() - start, start
    if depth and len(text) - start > span:
        span, span_at = len(text) - start, start
    return deepest, deepest_at, span, span_at


def _location(text: str, offset: int) -> tuple:
    """1-based ``(line, column)`` of a character offset."""
    line_start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
    return len(LINE_SPLIT.findall(text, 0, line_start)) + 1, offset - line_start + 1


def _risk(text: str) -> Optional[tuple]:
    """None when ``text`` is within the bounds libcst parses quickly and safely, else the
    1-based ``(line, column)`` of the first thing past them."""
    deepest, deepest_at, span, span_at = _shape(text)
    if deepest > RISKY_DEPTH:
        return _location(text, deepest_at)
    if span > RISKY_SPAN:
        return _location(text, span_at)
    lines = LINE_SPLIT.split(text)
    if max(map(len, lines)) > RISKY_SPAN:
        line = next(i for i, t in enumerate(lines) if len(t) > RISKY_SPAN)
        return line + 1, 1
    m = _DEEP_INDENT.search(text)
    return _location(text, m.start()) if m else None


def _cpython_parse(text: str) -> ast.AST:
    """``ast.parse`` without the SyntaxWarnings it prints about the linted code."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def _deeper_than(tree: ast.AST, limit: int) -> bool:
    """Whether the syntax tree ``tree`` has more than ``limit`` levels (walked without
    recursion)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def _probe_libcst(text: str) -> Optional[str]:
    """Parse ``text`` with libcst in a forked child process: None when the child finished
    (parsed or raised), else why the text cannot be parsed safely (the child crashed or ran
    past :data:`PROBE_TIMEOUT`).  Without ``os.fork`` the text is refused."""
    if not hasattr(os, "fork"):  # pragma: no cover - Windows
        return "too deeply nested to parse safely"
    import signal
    import time

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            import faulthandler

            faulthandler.disable()  # its crash is expected: no dump on the user's stderr
            import libcst as cst

            cst.parse_module(text)
            code = 0
        except BaseException:
            pass
        os._exit(code)
    deadline = time.monotonic() + PROBE_TIMEOUT
    delay = 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return f"too complex to parse (gave up after {PROBE_TIMEOUT:.0f} s)"
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    if os.WIFSIGNALED(status):
        return "too deeply nested: the parser cannot handle it"
    return None


def guard(text: str) -> None:
    """Raise :class:`SourceError` for a text that libcst must not be given: a NUL character,
    or nesting that CPython rejects (too many nested brackets or indentation levels, its
    recursion limit) or that crashes or stalls libcst.  Cheap for ordinary code: CPython's
    parser runs only on texts past the bounds of :func:`_risk`."""
    if "\x00" in text:
        line, col = _location(text, text.index("\x00"))
        raise SourceError("source contains a NUL byte", line, col)
    where = _risk(text)
    if where is None:
        return
    try:
        tree = _cpython_parse(text)
        if _deeper_than(tree, MAX_TREE_DEPTH):
            raise SourceError(f"too deeply nested to analyse (over {MAX_TREE_DEPTH} levels)", *where)
        return
    except (RecursionError, MemoryError):
        raise SourceError("too deeply nested to parse (Python cannot compile it either)", *where) from None
    except SyntaxError as err:
        if err.msg.startswith("too many"):  # nested parentheses, levels of indentation
            raise SourceError(f"syntax error: {err.msg}", err.lineno or where[0], err.offset or where[1]) from None
    # Newer syntax than this Python's, or invalid: only libcst can tell, and it may crash.
    why = _probe_libcst(text)
    if why is not None:
        raise SourceError(why, *where)


def parse(text: str, guarded: bool = False) -> "cst.Module":
    """Parse with libcst; raises :class:`SourceError` for invalid Python, located with
    CPython's own message where CPython also rejects the text (it points more precisely).
    ``guarded``: :func:`guard` was already applied to ``text``."""
    import libcst as cst

    if not guarded:
        guard(text)
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        try:
            _cpython_parse(text)
        except SyntaxError as err:
            raise SourceError(f"syntax error: {err.msg}", err.lineno or 1, err.offset or 1) from None
        except (RecursionError, MemoryError, ValueError):
            pass
        raise SourceError(f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1) from None
    except RecursionError:
        raise SourceError("too deeply nested for the parser") from None
    except MemoryError:
        raise SourceError("file too large to parse") from None


def check_syntax(text: str, path: str = "<string>") -> None:
    """Raise :class:`SourceError` when ``text`` is not valid Python, cheaply: CPython's own
    parser first, and libcst's (which knows newer syntax than the running Python) only when
    CPython rejects the text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text, path)
        return
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    parse(text)


def package_of(path: str) -> str:
    """The dotted package a file belongs to, from the ``__init__.py`` files above it."""
    parts = []
    folder = os.path.dirname(os.path.abspath(path))
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parts.append(os.path.basename(folder))
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return ".".join(reversed(parts))


def _noqa_codes(line_text: str):
    """None when the line has no noqa; an empty set for a bare ``# noqa``; else its codes."""
    m = NOQA.search(line_text)
    if m is None:
        return None
    codes = m.group("codes")
    return frozenset() if not codes else frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c)


def file_noqa(text: str):
    """Codes silenced in the whole file by ``# jaxinterop-lint: noqa[: codes]`` (a bare form
    silences all: returns None then); an empty set when there is none."""
    if "jaxinterop-lint" not in text:
        return frozenset()
    out = set()
    for m in FILE_NOQA.finditer(text):
        if not m.group("codes"):
            return None
        out |= {c.upper() for c in re.split(r"[,\s]+", m.group("codes")) if c}
    return frozenset(out)


def parse_relevant(text: str, config: Config):
    """Parse ``text`` with its irrelevant top-level statements blanked (see
    :mod:`.masking`); returns ``(module, masker or None)``.  Falls back to the whole text
    when masking does not pay or the masked text does not parse.  Raises SourceError."""
    import libcst as cst

    from .masking import Masker

    guard(text)
    masker = Masker(text, _prefilter_for(config))
    masked = masker.render()
    if masked is not None:
        try:
            module = cst.parse_module(masked)
            masker.text = masked
            return module, masker
        except Exception:  # the scanner cut a statement wrongly: parse the whole text
            pass
    return parse(text, guarded=True), None


def build_analysis(text: str, path: str, config: Config, project=None,
                   module: Optional["cst.Module"] = None, run: bool = True, whole: bool = False) -> "ModuleAnalysis":
    """Parse and analyse one module (with ``project`` attached for cross-module names);
    with ``run`` False the analysis is made but not run; with ``whole`` the text is parsed
    whole, never masked.  Raises :class:`SourceError`."""
    masker = None
    if module is None:
        module, masker = (parse(text), None) if whole else parse_relevant(text, config)
    package = project.package_of(path) if project is not None else (package_of(path) if os.path.exists(path) else "")
    from .analysis.module import ModuleAnalysis

    ma = ModuleAnalysis(module, path, package, project, source=text, kb=config.knowledge())
    ma.masker = masker
    ma.parsed_text = masker.text if masker is not None else text
    if project is not None and os.path.isabs(path):
        try:
            ma.display_path = os.path.relpath(path)
        except ValueError:  # pragma: no cover - another drive on Windows
            pass
    try:
        return ma.run() if run else ma
    except RecursionError:
        raise SourceError("too deeply nested to analyse") from None


def rule_findings(ma: "ModuleAnalysis", path: str):
    """Run every rule over the events of ``ma``: ``(findings, handled (path, line) pairs)``."""
    from .analysis.events import SinkEvent
    from .rules import ALL_RULES, RuleContext
    from .rules.base import verdict

    ctx = RuleContext(ma, path)
    rules = [r() for r in ALL_RULES]
    findings, handled, seen = [], [], set()
    for event in ma.events:
        if isinstance(event, SinkEvent) and verdict(event)[0] == "handled":
            handled.append((path, ctx.line(event.node)))
        for rule in rules:
            f = rule.check(event, ctx)
            if f is not None and (f.line, f.column, f.code) not in seen:
                seen.add((f.line, f.column, f.code))
                findings.append(f)
    return findings, handled


def analyse(text: str, path: str, config: Config, module: Optional["cst.Module"] = None, project=None):
    """Parse and analyse ``text``; returns ``(ModuleAnalysis, raw findings, handled lines)``.
    With a ``project`` the module's analysis is shared with the modules that import it.
    Raises :class:`SourceError`."""
    if project is not None:
        ma = project.analysis_of_path(path, text=text, fresh=True)
        if ma is None:
            ma = build_analysis(text, path, config, project, module)
    else:
        ma = build_analysis(text, path, config, None, module)
    if getattr(ma, "masker", None) is not None:
        exporting = {r.name.rsplit(".", 1)[-1] for r in ma.functions if r.summary is not None and r.summary.exports}
        if exporting and ma.masker.blanked_use(exporting):
            # A blanked statement calls a function that exports its parameter: the call may
            # be a finding, so this file is analysed whole.
            ma = build_analysis(text, path, config, project, whole=True)
            if project is not None:
                project.replace(path, ma)
    findings, handled = rule_findings(ma, path)
    return ma, findings, handled


def new_project(root: str, config: Config, cache=None):
    """A :class:`~jaxinterop_lint.analysis.project.Project` whose modules are analysed by
    this engine (or loaded from ``cache``, a :class:`~jaxinterop_lint.cache.Cache`); files
    that cannot be read or parsed are left out (None)."""
    from .analysis.project import Project

    def analyse_file(path, project, text=None):
        try:
            if text is None:
                text = read_source(path)
            return build_analysis(text, path, config, project, run=False)
        except SourceError:
            return None

    return Project(root, analyse_file, cache)


def lint_source(source, path: str = "<stdin>", config: Optional[Config] = None,
                prefilter: Optional[prefilter_mod.Prefilter] = None, project=None,
                force: bool = False) -> FileResult:
    """Lint one file's text (``str`` or undecoded ``bytes``).

    ``project`` (see :func:`new_project`) lets the analysis follow imports into the project's
    other modules; ``force`` analyses the file even when the prefilter finds no interop word
    (it calls a project function that exports its parameter).  Returns a :class:`FileResult`;
    a file that cannot be decoded or parsed gives a result whose ``error`` is set and whose
    findings are empty.  Never raises for bad input.
    """
    config = config or Config()
    result = FileResult(path)
    try:
        text = decode(source, path) if isinstance(source, bytes) else source
        pf = prefilter or _prefilter_for(config)
        if not force and not pf.wants(text):
            # Never parsed: a file that names no interop API cannot produce a finding, and
            # not parsing it is what makes the linter fast (its syntax is other tools' job).
            return result
        _, raw, handled = analyse(text, path, config, project=project)
    except SourceError as exc:
        result.error = exc
        return result
    except Exception as exc:  # a bug of ours must not stop the run: report it on this file
        if os.environ.get("JAXINTEROP_LINT_DEBUG"):
            raise
        result.error = SourceError(f"internal error ({type(exc).__name__}: {exc}); please report it "
                                   f"with this file (JAXINTEROP_LINT_DEBUG=1 shows the traceback)")
        return result
    result.analysed = True
    result.handled = handled
    select_findings(raw, text, path, config, result)
    return result


def select_findings(raw, text: str, path: str, config: Config, result: FileResult) -> None:
    """Keep the enabled findings of ``raw`` in ``result.findings``; those silenced by
    ``# noqa`` or a file-level noqa go to ``result.suppressed``."""
    enabled = config.enabled() - config.ignored_for(path)
    silenced_file = file_noqa(text)
    lines = LINE_SPLIT.split(text)
    for f in sorted(raw, key=Finding.sort_key):
        if f.code not in enabled:
            continue
        if silenced_file is None or f.code in silenced_file:
            result.suppressed.append(f)
            continue
        line_text = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
        codes = _noqa_codes(line_text) if "noqa" in line_text.lower() else None
        if codes is not None and (not codes or f.code in codes):
            result.suppressed.append(f)
            continue
        result.findings.append(f)


_PREFILTERS: dict = {}


def _prefilter_for(config: Config) -> prefilter_mod.Prefilter:
    key = tuple(sorted(config.extend_sinks))
    pf = _PREFILTERS.get(key)
    if pf is None:
        pf = _PREFILTERS[key] = prefilter_mod.build(key)
    return pf


def lint_file(path: str, config: Optional[Config] = None, project=None, force: bool = False) -> FileResult:
    """Read and lint one file; errors become ``FileResult.error``."""
    try:
        text = read_source(path)
    except SourceError as exc:
        return FileResult(path, error=exc)
    return lint_source(text, path, config, project=project, force=force)


def lint_paths(paths: Iterable[str], config: Optional[Config] = None, jobs: int = 1,
               project_root: Optional[str] = None, whole_project: bool = True,
               use_cache: bool = False) -> LintResult:
    """Discover and lint every Python file under ``paths``.

    With ``whole_project`` (the default) the analysis follows imports into the other modules
    of the project whose root is ``project_root`` (default: the nearest folder with
    ``pyproject.toml``, ``setup.cfg``, ``setup.py`` or ``.git`` above the paths); files
    outside ``paths`` are read for summaries only and never reported.  Returns a
    :class:`LintResult` with findings sorted by file and position; unreadable or invalid
    files are in ``errors``.  With ``use_cache`` results and summaries are kept in
    ``.jaxinterop_lint_cache/`` under the project root (the CLI's default); ``analysed``
    counts the module analyses the run performed.
    """
    from .discover import discover
    from .session import run_session

    config = config or Config()
    paths = list(paths) or ["."]
    files = list(discover(paths, config.exclude, config.extend_exclude))
    return run_session(files, paths, config, jobs, project_root, whole_project, use_cache)
