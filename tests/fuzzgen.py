"""Hypothesis strategies for fuzzing the engine (issue 9), shared by ``tests/test_fuzz.py``
and ``scripts/fuzz.py``.

``programs()`` builds Python programs out of the project's own fragments: sources (device_put
with NamedSharding, pjit / shard_map / jit-with-shardings wrappers, pmap), every sink of
``knowledge.apis`` (CALL_SINKS, METHOD_SINKS, ATTRIBUTE_SINKS), sanitizers, device-count
guards, and control flow (if/else, for, while, try/except with various classes, with,
def/return, classes with methods, comprehensions, lambdas).  Each program comes with the
lines where a finding may be reported: the sink lines, the lines that call a generated
function (an interprocedural finding is reported at the call), and the ``except`` lines
(JXI007 is reported on the handler that misses the error).

``check_engine(text)`` and ``check_fix(text)`` are the properties both runners assert.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from hypothesis import strategies as st

from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.knowledge import apis

HEADER = [
    "import jax",
    "import jax.numpy as jnp",
    "import numpy as np",
    "import torch",
    "from jax.sharding import NamedSharding, PartitionSpec as P",
    "from jax.experimental.pjit import pjit",
    "from jax.experimental.shard_map import shard_map",
    "mesh = jax.make_mesh((8,), ('x',))",
    "def f(z):",
    "    return z * 2",
    "flag = True",
    "a = jnp.zeros(16)",
    "b = jnp.ones(16)",
    "c = np.zeros(16)",
    "d = jnp.arange(16.0)",
]
NAMES = ("a", "b", "c", "d")

SOURCES = (
    "jax.device_put({u}, NamedSharding(mesh, P('x')))",
    "jax.device_put({u}, NamedSharding(mesh, P()))",
    "pjit(f)({u})",
    "shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P('x'))({u})",
    "jax.jit(f, out_shardings=NamedSharding(mesh, P('x')))({u})",
    "jax.pmap(f)({u})",
    "jax.make_array_from_callback((16,), NamedSharding(mesh, P('x')), lambda i: {u}[i])",
)
PROPAGATE = ("{u} + 1", "jnp.sin({u})", "{u}.T", "{u}[0]", "jax.jit(f)({u})", "jax.vmap(f)({u})")
SAFE = ("jnp.zeros(16)", "np.ones(3)", "jax.device_get({u})", "np.asarray({u})",
        "jax.device_put({u}, jax.devices()[0])", "{u}.addressable_data(0)", "float({u}.sum())")
HANDLERS = ("BufferError", "RuntimeError", "Exception", "ValueError", "AttributeError", "TypeError",
            "(BufferError, ValueError)", "KeyError")


def _module_of(qualified: str) -> str:
    return qualified.rsplit(".", 1)[0]


def sink_expressions() -> list:
    """``(expression template with {u}, import line or None)`` for every sink of the tables."""
    out = []
    for name in sorted(apis.CALL_SINKS):
        if name.startswith("builtins."):
            out.append((name.split(".", 1)[1] + "({u})", None))
        else:
            out.append((name + "({u})", "import " + _module_of(name)))
    for name in sorted(apis.METHOD_SINKS):
        out.append(("{u}." + name + "()", None))
    for name in sorted(apis.ATTRIBUTE_SINKS):
        out.append(("{u}." + name, None))
    return out


SINKS = sink_expressions()


@dataclass
class Program:
    """Lines (without the header) tagged ``sink``, ``call``, ``except`` or None."""

    lines: list = field(default_factory=list)
    imports: set = field(default_factory=set)

    def text(self) -> str:
        head = HEADER + sorted(self.imports)
        return "\n".join(head + [ln for ln, _ in self.lines]) + "\n"

    def allowed(self) -> dict:
        """``{line: tag}`` of the lines where a finding may be reported."""
        offset = len(HEADER) + len(self.imports)
        return {offset + i + 1: tag for i, (_, tag) in enumerate(self.lines) if tag}


names = st.sampled_from(NAMES)


@st.composite
def _fmt(draw, templates):
    return draw(st.sampled_from(templates)).format(u=draw(names))


@st.composite
def _sink(draw, imports, u=None):
    template, imp = draw(st.sampled_from(SINKS))
    if imp:
        imports.add(imp)
    return template.format(u=u or draw(names))


@st.composite
def _block(draw, imports, depth):
    """A list of ``(line, tag)`` (relative indentation in spaces)."""
    kinds = ["source", "propagate", "safe", "sink"]
    if depth < 3:
        kinds += ["if", "guard", "for", "while", "try", "with", "def", "class", "comp", "lambda"]
    out = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        v = draw(names)
        if kind == "source":
            out.append((f"{v} = " + draw(_fmt(SOURCES)), None))
        elif kind == "propagate":
            out.append((f"{v} = " + draw(_fmt(PROPAGATE)), None))
        elif kind == "safe":
            out.append((f"{v} = " + draw(_fmt(SAFE)), None))
        elif kind == "sink":
            out.append(("t = " + draw(_sink(imports)), "sink"))
        elif kind in ("if", "guard"):
            cond = draw(st.sampled_from(["flag", f"{v}.ndim > 1", "not flag"])) if kind == "if" else \
                draw(st.sampled_from([f"len({v}.devices()) == 1", f"len({v}.sharding.device_set) == 1",
                                      "jax.device_count() == 1"]))
            out.append((f"if {cond}:", None))
            out.extend(_indent(draw(_block(imports, depth + 1))))
            if draw(st.booleans()):
                out.append(("else:", None))
                out.extend(_indent(draw(_block(imports, depth + 1))))
        elif kind == "for":
            out.append(("for i in range(3):", None))
            out.extend(_indent(draw(_block(imports, depth + 1))))
        elif kind == "while":
            out.append(("while flag:", None))
            out.extend(_indent(draw(_block(imports, depth + 1)) + [("break", None)]))
        elif kind == "try":
            out.append(("try:", None))
            out.extend(_indent(draw(_block(imports, depth + 1))))
            for handler in draw(st.lists(st.sampled_from(HANDLERS), min_size=1, max_size=2, unique=True)):
                out.append((f"except {handler}:", "except"))
                out.extend(_indent(draw(_block(imports, depth + 1))))
            if draw(st.booleans()):
                out.append(("finally:", None))
                out.append(("    pass", None))
        elif kind == "with":
            out.append(("with open('data.bin') as fh:", None))
            out.extend(_indent(draw(_block(imports, depth + 1))))
        elif kind == "def":
            fn = f"helper_{len(out)}_{depth}"
            out.append((f"def {fn}(q):", None))
            body = [("t = " + draw(_sink(imports, "q")), "sink")] if draw(st.booleans()) else []
            out.extend(_indent(body + draw(_block(imports, depth + 1)) + [("return q", None)]))
            out.append((f"r = {fn}({draw(names)})", "call"))
        elif kind == "class":
            cls = f"Holder{len(out)}{depth}"
            out.append((f"class {cls}:", None))
            out.append(("    def meth(self, q):", None))
            out.append(("        return " + draw(_sink(imports, "q")), "sink"))
            out.append(("    def keep(self, q):", None))
            out.append(("        self.q = q", None))
            out.append(("        return self.q", None))
            u = draw(names)
            out.append((f"r = {cls}().meth({u})", "call"))
            out.append((f"s = {cls}().keep({u})", "call"))
        elif kind == "comp":
            sink = draw(_sink(imports, "w"))
            shape = draw(st.sampled_from(["[{s} for w in [{u}, {u}]]", "{{k: {s} for k, w in enumerate([{u}])}}",
                                          "list({s} for w in ({u},))"]))
            out.append(("t = " + shape.format(s=sink, u=draw(names)), "sink"))
        elif kind == "lambda":
            out.append(("g = lambda q: " + draw(_sink(imports, "q")), "sink"))
            out.append((f"t = g({draw(names)})", "call"))
    return out


def _indent(lines):
    return [("    " + ln, tag) for ln, tag in lines] or [("    pass", None)]


@st.composite
def programs(draw):
    """A :class:`Program` built from the project's fragments."""
    imports: set = set()
    lines = draw(_block(imports, 0))
    return Program(lines, imports)


# --- the properties ----------------------------------------------------------------------

def check_engine(text: str, force: bool = True):
    """Lint ``text``: no exception escapes and no internal error.  Returns the FileResult."""
    r = lint_source(text, "fuzzed.py", Config(), force=force)
    assert r.error is None or not r.error.message.startswith("internal error"), r.error.message
    return r


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def check_fix(text: str):
    """``--fix --unsafe-fixes`` on ``text``: no exception, the result parses (with CPython's
    parser when the input did), and fixing the result again changes nothing.  Returns the
    outcome."""
    from jaxinterop_lint.engine import SourceError, parse
    from jaxinterop_lint.fix.apply import fix_text

    out = fix_text(text, "fuzzed.py", Config(), unsafe=True)
    assert out.error is None or "internal error" not in out.error, out.error
    if out.text != text:
        try:
            parse(out.text)
        except SourceError as exc:  # pragma: no cover - a failure
            raise AssertionError(f"the fixed text does not parse: {exc.message}\n{out.text}")
        if _parses(text):
            assert _parses(out.text), out.text
    again = fix_text(out.text, "fuzzed.py", Config(), unsafe=True)
    assert again.text == out.text and again.fixed == 0, (out.text, again.text)
    return out


ALLOWED_AT = {"JXI001": {"sink", "call"}, "JXI002": {"sink", "call"}, "JXI003": {"sink", "call"},
              "JXI005": {"sink"}, "JXI007": {"except"}, "JXI008": {"sink", "call"}}


def check_program(program: Program):
    """The fragment program lints without error and every finding is at a line where one may
    be: sink lines (and calls of generated functions), handler lines for JXI007."""
    text = program.text()
    assert _parses(text), text
    r = check_engine(text, force=False)
    assert r.error is None, (r.error.message, text)
    allowed = program.allowed()
    for f in r.findings:
        assert allowed.get(f.line) in ALLOWED_AT.get(f.code, ()), (f.line, f.code, f.message, text)
    return r
