"""Reading Python sources: decoding as the interpreter does, refusing what cannot be read,
guarding libcst against pathological nesting, and parsing.  Every failure is a
:class:`SourceError` with a one-line reason and a position."""
from __future__ import annotations

import ast
import codecs
import io
import os
import re
import stat
import sys
import tokenize
import warnings
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

LINE_SPLIT = re.compile(r"\r\n|\r|\n")


class SourceError(Exception):
    """A file that cannot be linted: unreadable, undecodable or not valid Python.
    ``line``/``column`` locate the problem (1-based line, 1-based column); 0 for a problem
    of the path itself (no such file), which is printed ``path: error: reason``."""

    def __init__(self, message: str, line: int = 1, column: int = 1):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


_NOT_BYTE_POSITIONS = frozenset({"punycode", "idna"})


def decode(data: bytes, path: str = "<string>") -> str:
    """Decode Python source bytes as the interpreter would (BOM, PEP 263 cookie, UTF-8).

    Raises :class:`SourceError` for an unknown codec, a codec that is no text encoding
    (``hex``, ``rot13``), one that fails on the bytes however it fails (``undefined``,
    ``punycode`` raise plain ``UnicodeError``), bytes invalid in the encoding, or a NUL."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot decode: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    except Exception as exc:  # a codec's own lookup or decoder failing in another way
        raise SourceError(f"cannot decode: {_one_line(exc)}") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:  # the line and column of the first bad byte
        if codecs.lookup(encoding).name in _NOT_BYTE_POSITIONS:
            # punycode's and idna's positions index their own parts of the text, not its bytes
            # (and Python 3.10-3.12 raise a plain UnicodeError there): the file, line 1
            raise SourceError(f"cannot decode as {encoding}: {_one_line(exc)}") from None
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise SourceError(f"cannot decode as {encoding}: {exc.reason} (byte 0x{data[start]:02x})",
                          line, column) from None
    except Exception as exc:  # LookupError, UnicodeError, TypeError ... from a codec
        reason = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
        raise SourceError(f"cannot decode as {encoding}: {_one_line(reason)}") from None
    if not isinstance(text, str):  # pragma: no cover - a codec registered to return bytes
        raise SourceError(f"cannot decode as {encoding}: it does not give text")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise SourceError("source contains a NUL byte", line, 1)
    return text


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line, at most 200 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def read_bytes(path: str) -> bytes:
    """The bytes of the file ``path``; raises :class:`SourceError` with a readable reason.

    Only regular files are read: a FIFO, a socket or a device named ``*.py`` is refused
    without blocking (it is opened non-blocking and checked before any read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        if os.path.islink(path):
            raise SourceError("broken symlink (its target does not exist)", 0, 0) from None
        raise SourceError("no such file or directory", 0, 0) from None
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
RISKY_CONTINUATIONS = 200  # backslash-continued lines in the file
MAX_TREE_DEPTH = 3000     # syntax tree levels past which CPython refuses to compile (3.11: 3 x its
                          # recursion limit of 1000); the check runs with the limit raised
MAX_EXPRESSION_DEPTH = 1000  # nested expressions past which libcst's parser is refused: its
                          # memory grows with the square of it (ternaries nested 500 deep:
                          # 68 MB, 1,000: 198 MB, 2,000: 709 MB, 2,900: 1.45 GB)
PROBE_TIMEOUT = 60.0      # seconds libcst may take on a risky text CPython cannot check
PROBE_STACK = 8 << 20     # bytes of stack libcst gets there


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
    if m:
        return _location(text, m.start())
    if text.count("\\\n") + text.count("\\\r") > RISKY_CONTINUATIONS:  # one statement may span them all
        return _location(text, text.index("\\\n") if "\\\n" in text else text.index("\\\r"))
    return None


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


# The operands that continue a chain rather than open a new nesting level in libcst's
# grammar (calls, attributes, subscripts and left operands are loops there, not recursion).
_CHAIN_FIELDS = {ast.Call: "func", ast.Attribute: "value", ast.Subscript: "value", ast.BinOp: "left"}


def _expression_depth(tree: ast.AST) -> int:
    """The deepest nesting of expressions in ``tree`` that libcst's parser recurses on (see
    :data:`_CHAIN_FIELDS`), walked without recursion."""
    deepest = 0
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        chain = _CHAIN_FIELDS.get(type(node))
        for name, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else (value,)
            for child in children:
                if not isinstance(child, ast.AST):
                    continue
                if isinstance(child, ast.expr):
                    d = depth if name == chain else depth + 1
                    deepest = max(deepest, d)
                    stack.append((child, d))
                else:
                    stack.append((child, depth))
    return deepest


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
            import threading

            faulthandler.disable()  # its crash is expected: no dump on the user's stderr
            import libcst as cst

            # On an ordinary 8 MiB stack, as a main thread has: the child may have been
            # forked from a deep thread (jaxinterop_lint.deep), whose stack would let libcst
            # grind through memory instead of failing fast on what it cannot parse safely.
            parsed = []
            threading.stack_size(PROBE_STACK)
            probe = threading.Thread(target=lambda: parsed.append(cst.parse_module(text)))
            probe.start()
            probe.join()
            code = 0 if parsed else 1
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
            raise SourceError(f"too deeply nested (over {MAX_TREE_DEPTH} levels: Python cannot compile it either)",
                              *where)
        if _expression_depth(tree) > MAX_EXPRESSION_DEPTH:
            raise SourceError(f"too deeply nested to analyse (expressions nested over {MAX_EXPRESSION_DEPTH} "
                              f"levels)", *where)
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
    ``guarded``: :func:`guard` was already applied to ``text``.

    Valid Python that libcst's parser cannot read (it stops at some 3,000 implicitly
    concatenated strings) is parsed as :func:`simplified` text: the module then writes back to
    that text, not to ``text`` (a fix checks :func:`jaxinterop_lint.rules.edits.writes_back`)."""
    import libcst as cst

    from .cstparse import parse_module

    if not guarded:
        guard(text)
    try:
        return parse_module(text)
    except cst.ParserSyntaxError as exc:
        try:
            _cpython_parse(text)
        except SyntaxError as err:
            raise SourceError(f"syntax error: {err.msg}", err.lineno or 1, err.offset or 1) from None
        except (RecursionError, MemoryError, ValueError):
            pass
        else:  # valid Python: try the text with the pieces libcst cannot take blanked
            easier = simplified(text)
            if easier != text:
                try:
                    return parse_module(easier)
                except cst.ParserSyntaxError:
                    pass
        raise SourceError(f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1) from None
    except RecursionError:
        raise SourceError("too deeply nested for the parser") from None
    except MemoryError:
        raise SourceError("file too large to parse") from None


LONG_CONCATENATION = 100   # implicitly concatenated string pieces kept as they are


def simplified(text: str) -> str:
    """``text`` with the string pieces of long implicit concatenations (over
    :data:`LONG_CONCATENATION` pieces) blanked out, except the first: every other character
    keeps its line and column, and the code means the same to the analysis (the value of a
    string does not matter to it).  Pieces that span lines or hold f-string expressions are
    kept.  Returns ``text`` itself when there is nothing to blank or it cannot be tokenized."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text, newline="").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text
    runs, run = [], []
    for tok in tokens:
        if tok.type == tokenize.STRING:
            run.append(tok)
        elif tok.type in (tokenize.NL, tokenize.COMMENT) and run:
            continue
        else:
            if len(run) > LONG_CONCATENATION:
                runs.append(run)
            run = []
    if not runs:
        return text
    lines = io.StringIO(text, newline="").readlines()  # the lines tokenize numbered
    for run in runs:
        for tok in run[1:]:
            (row, col), (end_row, end_col) = tok.start, tok.end
            prefix = tok.string[:len(tok.string) - len(tok.string.lstrip("rRbBuUfF"))]
            if row != end_row or "f" in prefix.lower():
                continue
            line = lines[row - 1]
            lines[row - 1] = line[:col] + " " * (end_col - col) + line[end_col:]
    out = "".join(lines)
    return out if len(out) == len(text) else text


def run_guarded(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` (a parse or an analysis) through
    :func:`jaxinterop_lint.deep.run_deep`, with room for deep recursion.  A ``RecursionError``
    that still happens becomes a :class:`SourceError`: Python 3.12 caps recursion through C
    code at a fixed depth whatever the stack (about 1,500 calls), which some hundreds of
    nested expressions reach; 3.11 and 3.13 go much further."""
    from .deep import run_deep

    try:
        return run_deep(fn, *args, **kwargs)
    except SourceError:
        raise
    except Exception as exc:
        if not _from_recursion(exc):
            raise
        where = "" if sys.version_info[:2] != (3, 12) else " on Python 3.12, whose limit for recursion through C code is fixed"
        raise SourceError(f"too deeply nested to analyse{where}") from None


def internal_error(exc: BaseException) -> SourceError:
    """The one-line error of a file whose analysis failed for a reason of ours (a bug):
    never fails itself, even on an exception whose text cannot be made."""
    from .errors import describe

    return SourceError(f"internal error ({describe(exc)}); please report it "
                       f"with this file (JAXINTEROP_LINT_DEBUG=1 shows the traceback)")


def _from_recursion(exc: BaseException) -> bool:
    """Whether ``exc`` is a RecursionError or was raised while one was being handled (libcst's
    code generator turns one into a long chain of KeyErrors); walked without recursion."""
    seen = 0
    while exc is not None and seen < 1_000_000:
        if isinstance(exc, RecursionError):
            return True
        exc, seen = exc.__context__, seen + 1
    return False


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
