"""Issue 16 (parse only what can hold a finding): the masking reads statements with CPython's
``ast`` -- exact ranges, names used by code (never docstrings, comments or def names) --
masks inside kept classes, and changes no finding and no fix: a differential test against
the whole-text analysis on every fixture, example and acceptance case, file by file and as
projects (cross-module summaries and calling contexts), with the ast reading and with the
line scanner it falls back to."""
from __future__ import annotations

import ast
import re
import shutil
import textwrap

import pytest

import jaxinterop_lint.pipeline.masking as masking
from conftest import ROOT, run_cli
from test_masking import always_mask  # noqa: F401  (the fixture)
from jaxinterop_lint import Config, lint_paths, lint_source
from jaxinterop_lint.pipeline import analyses, statements
from jaxinterop_lint.pipeline.analyse import PARSES, build_analysis, holds_no_finding
from jaxinterop_lint.pipeline.plan import Words

# The acceptance cases through their copies in fixtures/ (the suite needs nothing beside the
# checkout; tests/test_fixtures_sync.py keeps the copies identical to ../shared).
FILES = sorted(list((ROOT / "fixtures").rglob("*.py")) + list((ROOT / "examples").rglob("*.py")))
PROJECTS = [ROOT / "fixtures" / "project", ROOT / "fixtures" / "runtime" / "xmodule", ROOT / "fixtures" / "cases",
            ROOT / "fixtures" / "cases-depth", ROOT / "examples"]
MASKING = Words().masking


def _never_mask(monkeypatch):
    """The whole-text analysis: no masking, and no file skipped for holding nothing."""
    monkeypatch.setattr(masking.Masker, "render", lambda self, callers_of=frozenset(), min_gain=0.0: None)
    monkeypatch.setattr(analyses, "holds_no_finding", lambda text, sinks, callers=frozenset(): False)


def _findings(path):
    return [(f.line, f.column, f.code, f.message, f.fix) for f in lint_source(path.read_text(), str(path), Config()).findings]


def _project_findings(root):
    result = lint_paths([str(root)], Config(), use_cache=False)
    return sorted((f.path, f.line, f.column, f.code, f.message, str(f.fix)) for f in result.findings)


@pytest.mark.usefixtures("always_mask")
@pytest.mark.parametrize("reader", ["ast", "scanner"])
def test_masking_changes_no_finding_file_by_file(monkeypatch, reader):
    if reader == "scanner":
        monkeypatch.setattr(masking, "read_statements", lambda text, n, lazy=True: None)
    masked = {p: _findings(p) for p in FILES}
    monkeypatch.undo()
    _never_mask(monkeypatch)
    whole = {p: _findings(p) for p in FILES}
    assert len(FILES) > 40 and sum(map(len, whole.values())) > 40
    assert masked == whole


def project_copies(tmp_path) -> list:
    """Copies of :data:`PROJECTS` under ``tmp_path``, each a project (``pyproject.toml``)."""
    roots = []
    for i, src in enumerate(PROJECTS):
        dst = tmp_path / f"p{i}"
        shutil.copytree(src, dst)
        (dst / "pyproject.toml").touch()
        roots.append(dst)
    return roots


@pytest.mark.usefixtures("always_mask")
def test_masking_changes_no_finding_across_modules(monkeypatch, tmp_path):
    roots = project_copies(tmp_path)
    masked = [_project_findings(r) for r in roots]
    monkeypatch.undo()
    _never_mask(monkeypatch)
    whole = [_project_findings(r) for r in roots]
    assert all(whole) and masked == whole


def test_statements_have_exact_ranges_with_decorators_and_shared_lines():
    code = textwrap.dedent('''\
        """Doc: def not_a_def(): torch.from_dlpack(x)"""
        import torch; import jax

        @jax.jit
        @other(
            1)
        def f(a):
            s = """
        class NotAClass:
        """
            return a
        x = 1; y = (2,
        3)
        ''')
    units, tree = statements.statements(code, len(code.splitlines()))
    assert [(u.first, u.last) for u in units] == [(0, 0), (1, 1), (3, 10), (11, 12)]
    assert units[1].is_import and units[2].name == "f" and units[3].defines == {"x", "y"}
    assert "jit" in units[2].uses and "NotAClass" not in units[2].uses and "f" not in units[2].uses


def test_words_in_prose_and_def_names_name_nothing_but_code_does(monkeypatch):
    code = textwrap.dedent('''\
        import torch
        import jax

        class Tracer:
            def __dlpack__(self):
                """Call torch.from_dlpack(x.__dlpack__()) to export."""
                raise TypeError(f"__dlpack__ is_fully_replicated {self}")  # x.unsafe_buffer_pointer()

            def is_fully_replicated(self):
                return False

        def by_name(x):
            return getattr(x, "__dlpack__")()

        def annotated(x: "torch.Tensor") -> None:
            pass
        ''')
    m = masking.Masker(code, MASKING, min_lines=0)
    assert m.exact
    base = dict(zip((m.lines[a].split("(")[0] for a, _ in m.stmts), m.base))
    assert base == {"import torch\n": True, "import jax\n": True, "class Tracer:\n": False,
                    "def by_name": True, "def annotated": False}
    assert "tensor" not in m.idents[-1] and "Tensor" in m.idents[-1]
    # the scanner, reading text, keeps the class for the words in its docstring
    monkeypatch.setattr(masking, "read_statements", lambda text, n, lazy=True: None)
    scanned = masking.Masker(code, MASKING, min_lines=0)
    assert not scanned.exact and scanned.base[2] is True


def test_scanner_reading_is_the_fallback_where_ast_cannot_parse(monkeypatch):
    code = "import torch\n" + "".join(f"def f{i}(a):\n    return a\n" for i in range(30)) + \
        "def g(x):\n    return torch.from_dlpack(x)\n"
    assert masking.Masker(code, MASKING, min_lines=0).exact
    monkeypatch.setattr(masking, "read_statements", lambda text, n, lazy=True: None)
    m = masking.Masker(code, MASKING, min_lines=0)
    assert m.usable and not m.exact and m.render() is not None
    # text neither reader can cut: parsed whole
    assert statements.statements("def f(:\n", 1) is None


BRIDGE = textwrap.dedent('''\
    import jax
    import torch
    from jax.sharding import NamedSharding, PartitionSpec as P


    class Bridge:
        def __init__(self, mesh):
            self.mesh = mesh

        def setup(self, x):
            self.arr = jax.device_put(x, NamedSharding(self.mesh, P("x")))

    {filler}
        def export(self):
            return torch.from_dlpack(self.arr), Helpers()


    class Helpers:
    {filler}
        def compiled(self, f):
            return jax.jit(f)
    ''')


@pytest.mark.usefixtures("always_mask")
def test_inside_a_kept_class_only_the_methods_that_matter_are_parsed(monkeypatch):
    filler = "".join(f"    def unrelated_{i}(self, a):\n        return a + {i}\n\n" for i in range(30))
    code = BRIDGE.format(filler=filler)
    m = masking.Masker(code, MASKING, min_lines=0)
    out = m.render(min_gain=0.0)
    assert out is not None and len(out.splitlines(True)) == len(code.splitlines(True))
    ast.parse(out)                            # a class left with no method gets one ``pass``
    # setup() stores on self the array export() reads: kept although nothing calls it
    assert "def unrelated_3" not in out and "def setup" in out and "def __init__" in out
    assert "class Helpers:" in out and "        pass\n" not in out and "    pass\n" in out
    masked = [(f.code, f.line, f.message) for f in lint_source(code, "b.py", Config()).findings]
    monkeypatch.undo()
    _never_mask(monkeypatch)
    assert masked == [(f.code, f.line, f.message) for f in lint_source(code, "b.py", Config()).findings]
    line = next(i for i, ln in enumerate(code.splitlines(), 1) if "torch.from_dlpack(self.arr)" in ln)
    assert [(c, n) for c, n, _ in masked] == [("JXI002", line)]


FIXABLE = textwrap.dedent('''\
    """A module long enough to be masked; the fix must land on the file's own text."""
    import jax


    # a comment between statements: blanked in the text parsed, kept in the file
    {filler}

    class Holder:
        """Holds an array."""
    {methods}
        def first(self, arr: jax.Array):
            return arr.device_buffer  # the old API


    def tail():
        return "arr.device_buffer"
    ''')


def test_fix_of_a_masked_file_is_the_fix_of_the_whole_file(tmp_path):
    filler = "".join(f"def helper_{i}(a):\n    '''Doc.'''\n    return a + {i}\n\n\n" for i in range(30))
    methods = "".join(f"    def m_{i}(self):\n        return {i}\n\n" for i in range(30))
    code = FIXABLE.format(filler=filler, methods=methods)
    ma = build_analysis(code, str(tmp_path / "m.py"), Config(), sinks=MASKING)
    assert ma.masker is not None and ma.parsed_text != code and "def m_3" not in ma.parsed_text
    path = tmp_path / "m.py"
    path.write_text(code)
    r = run_cli("--fix", "m.py", cwd=tmp_path)
    assert "Fixed 1 finding (0 remaining)." in r.stderr, r.stderr
    assert path.read_text() == code.replace("arr.device_buffer  #", "arr.addressable_data(0)  #")


def test_a_large_file_is_parsed_once_with_most_of_it_blanked(tmp_path):
    filler = "".join(f"def helper_{i}(a):\n    '''torch.from_dlpack(a) in prose'''\n    return a + {i}\n\n" for i in range(60))
    code = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
            + filler + "def caller(x, m):\n    y = jax.device_put(x, NamedSharding(m, P('x')))\n"
            "    return torch.from_dlpack(y)\n")
    PARSES.clear()
    ma = build_analysis(code, str(tmp_path / "big.py"), Config(), sinks=MASKING)
    kept = [ln for ln in ma.parsed_text.splitlines() if ln.strip()]
    assert dict(PARSES) == {str(tmp_path / "big.py"): 1} and len(kept) == 6
    (f,) = lint_source(code, "big.py", Config()).findings
    assert f.code == "JXI002"


def test_libcst_is_given_the_masked_text_without_its_blanked_lines(tmp_path):
    """The statements blanked are dropped before the parse (a blank line costs libcst as
    much as a short line of code), and positions are the file's again (pipeline/compact.py)."""
    filler = "".join(f"def helper_{i}(a):\n    '''Doc.'''\n    return a + {i}\n\n" for i in range(60))
    code = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
            + filler + "def caller(x, m):\n    y = jax.device_put(x, NamedSharding(m, P('x')))\n"
            "    return torch.from_dlpack(y)\n")
    ma = build_analysis(code, str(tmp_path / "big.py"), Config(), sinks=MASKING)
    assert ma.line_map is not None and len(ma.module.code.splitlines()) == 6 < len(code.splitlines())
    assert len(ma.parsed_text.splitlines()) == len(code.splitlines())     # edits are cut from it
    (f,) = lint_source(code, "big.py", Config()).findings
    sink = code.splitlines().index("    return torch.from_dlpack(y)") + 1
    assert (f.code, f.line, f.column) == ("JXI002", sink, 11)
    assert any(step.line == sink - 1 for step in f.provenance)       # the source's line too


def test_compacted_lines_map_back_to_the_lines_they_were_cut_from():
    from jaxinterop_lint.pipeline.compact import compact

    lines = [f"line {i}\n" for i in range(20)]
    dropped = {0, 1, 5, 6, 7, 12, 19}
    line_map = compact(lines, dropped)
    kept = [i for i in range(20) if i not in dropped]
    assert line_map.text == "".join(lines[i] for i in kept)
    assert [line_map.original(n + 1) for n in range(len(kept))] == [i + 1 for i in kept]
    assert compact(lines, set()) is None


def test_a_text_with_form_feeds_is_parsed_with_its_lines(tmp_path):
    filler = "".join(f"def helper_{i}(a):\n    return a + {i}\n\n" for i in range(60))
    code = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\f\n"
            + filler + "def caller(x, m):\n    y = jax.device_put(x, NamedSharding(m, P('x')))\n"
            "    return torch.from_dlpack(y)\n")
    ma = build_analysis(code, str(tmp_path / "ff.py"), Config(), sinks=MASKING)
    assert ma.line_map is None      # libcst drops the form feed: rules.base.true_position needs the lines
    (f,) = lint_source(code, "ff.py", Config()).findings
    assert f.line == code.split("\n").index("    return torch.from_dlpack(y)") + 1


HOLDS_NOTHING = textwrap.dedent('''\
    """Arrays: torch.from_dlpack(x.__dlpack__()) exports one; x.device_buffer is gone."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P


    class Tracer:
        def __dlpack__(self):
            raise TypeError(f"__dlpack__() of {self}: use torch.from_dlpack")  # memoryview(x)

        @property
        def is_fully_replicated(self):
            return False


    def shard(x, mesh):
        return jax.device_put(x, NamedSharding(mesh, P("x")))
    ''')


def test_a_file_whose_words_are_prose_and_def_names_is_not_parsed_for_its_report(tmp_path, monkeypatch):
    assert holds_no_finding(HOLDS_NOTHING, MASKING)
    # ... but a use in code, or a name an interop import binds, is something
    assert not holds_no_finding(HOLDS_NOTHING + "y = memoryview(b)\n", MASKING)
    assert not holds_no_finding(HOLDS_NOTHING + "y = getattr(b, '__dlpack__')()\n", MASKING)
    assert not holds_no_finding(HOLDS_NOTHING + "y = shard(b, m)\n", MASKING, callers={"shard"})
    ffi = ("import numpy as np\nfrom jax.experimental.buffer_callback import Buffer\n\n"
           "def cb(ctx, out, x: Buffer):\n    return np.array(x)\n")
    assert not holds_no_finding(ffi, MASKING)
    assert [f.code for f in lint_source(ffi, "ffi.py", Config()).findings] == ["JXI004"]
    assert not holds_no_finding("def f(:\n", MASKING)      # ast cannot read it: analysed as before
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "arrays.py").write_text(HOLDS_NOTHING)
    (tmp_path / "user.py").write_text("import torch\nfrom arrays import shard\n\n"
                                      "def f(x, m):\n    return torch.from_dlpack(shard(x, m))\n")
    PARSES.clear()
    result = lint_paths([str(tmp_path)], Config(), use_cache=False)
    assert [(f.path.rsplit("/", 1)[-1], f.code, f.line) for f in result.findings] == [("user.py", "JXI002", 5)]
    # arrays.py is parsed once, for the summary of shard() that user.py asks for, not for its report
    assert PARSES[str(tmp_path / "arrays.py")] <= 1
    _never_mask(monkeypatch)
    whole = lint_paths([str(tmp_path)], Config(), use_cache=False)
    assert [(f.path, f.code, f.line, f.message) for f in whole.findings] == \
        [(f.path, f.code, f.line, f.message) for f in result.findings]


def test_a_kept_class_needs_only_what_its_kept_methods_use():
    """A module-level helper used only by a blanked method is blanked too; one a kept
    method (or ``__call__``, which the analysis reaches implicitly) uses is kept; a display
    dunder is blanked unless kept code names it."""
    filler = "".join(f"    def unrelated_{i}(self, a):\n        return a + {i}\n\n" for i in range(25))
    code = textwrap.dedent('''\
        import torch


        def only_for_repr(x):
            return str(x)


        def for_call(x):
            return x


        def for_export(x):
            return x


        class Bridge:
            def __repr__(self):
                return only_for_repr(self)

            def __call__(self, x):
                return for_call(x)

        {filler}
            def export(self, x):
                return torch.from_dlpack(for_export(x))
        ''').format(filler=filler)
    out = masking.Masker(code, MASKING, min_lines=0).render(min_gain=0.0)
    assert "def for_export" in out and "def for_call" in out and "def __call__" in out
    assert "def only_for_repr" not in out and "def __repr__" not in out and "def unrelated_0" not in out
    named = code + "\ndef show(b):\n    return Bridge().__repr__(), torch.from_dlpack(b)\n"
    out = masking.Masker(named, MASKING, min_lines=0).render(min_gain=0.0)
    assert "def __repr__" in out and "def only_for_repr" in out


def test_the_attributes_read_as_stored_are_a_superset_of_those_the_code_stores():
    """The stores read from the text (:func:`statements.stored_attributes`) miss none that
    ``ast`` sees stored on ``self``: in the examples and forms here, and in every class of
    the fixtures, examples and acceptance cases."""
    forms = ("self.a = 1\nself.b: int = 2\nself.c += 1\nself.d, self.e, self.f = x\n(self.g, self.h) = y\n"
             "[self.i, *self.j] = z\nfor self.k in z: pass\nwith q as self.l: pass\nf(self.m)\nif self.n == 1: pass\n")
    assert set("abcdefghijkl") <= statements.stored_attributes(forms) and not {"m", "n"} & statements.stored_attributes(forms)
    checked = 0
    for path in FILES + sorted((ROOT / "jaxinterop_lint").rglob("*.py")):
        text = path.read_text()
        tree = statements.parse(text)
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stored = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                          and isinstance(n.value, ast.Name) and n.value.id == "self"}
                assert stored <= statements.stored_attributes(ast.get_source_segment(text, node, padded=True)), path
                checked += bool(stored)
    assert checked > 50


def test_a_module_analysed_only_for_a_summary_is_parsed_for_the_names_asked(tmp_path, monkeypatch):
    """Masking keeps what a file's own findings need; a module that can make no finding by
    itself, parsed for what its importers take from it, is parsed only for the names they
    ask (:mod:`jaxinterop_lint.pipeline.partial`), also when JAX code reaches it (keras'
    ``ops/nn.py`` was parsed whole for one function: issue 16)."""
    filler = "".join(f"def helper_{i}(a):\n    return a + {i}\n\n" for i in range(80))
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").touch()
    (tmp_path / "pkg" / "a.py").write_text(
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n" + filler +
        "def make(x, m):\n    return jax.device_put(x, NamedSharding(m, P('x')))\n")
    (tmp_path / "pkg" / "b.py").write_text(
        "import torch\nfrom pkg.a import make\n\n" + filler +
        "def f(x, m):\n    return torch.from_dlpack(make(x, m))\n")
    seen = {}
    real = analyses.build_analysis

    def spy(text, path, config, project=None, sinks=None, callers=frozenset(), whole=False, partial=None):
        ma = real(text, path, config, project, sinks, callers, whole, partial)
        seen[path.rsplit("/", 1)[-1]] = (sinks is not None, partial, "def helper_" in ma.parsed_text)
        return ma

    monkeypatch.setattr(analyses, "build_analysis", spy)
    result = lint_paths([str(tmp_path)], Config(), use_cache=False)
    assert [(f.path.rsplit("/", 1)[-1], f.code) for f in result.findings] == [("b.py", "JXI002")]
    # a.py: no masking of its own, parsed for ``make`` alone (the helpers blanked); b.py masked
    assert seen["a.py"] == (False, frozenset({"make"}), False) and seen["b.py"] == (True, None, False)


def test_the_names_used_are_those_of_a_plain_ast_walk():
    """:func:`statements.uses_of` (one explicit walk) gives, for every statement of the
    fixtures, examples, cases and the package itself, the names a plain ``ast.walk`` finds:
    identifiers, attributes, keywords, imports, globals, getattr constants, string
    annotations; never other constants."""
    def plain(node):
        out = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                out.add(n.id)
            elif isinstance(n, ast.Attribute):
                out.add(n.attr)
            elif isinstance(n, ast.keyword) and n.arg:
                out.add(n.arg)
            elif isinstance(n, ast.alias):
                out.update(n.name.split("."))
                out.update([n.asname] if n.asname else [])
            elif isinstance(n, ast.ImportFrom) and n.module:
                out.update(n.module.split("."))
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                out.update(n.names)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr", "setattr", "delattr") \
                    and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str):
                out.add(n.args[1].value)
            for ann in (getattr(n, "annotation", None), getattr(n, "returns", None)):
                if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
                    out.update(re.findall(r"[A-Za-z_]\w*", ann.value))
        return frozenset(out)

    count = 0
    for path in FILES + sorted((ROOT / "jaxinterop_lint").rglob("*.py")):
        tree = statements.parse(path.read_text())
        for node in tree.body if tree else ():
            assert statements.uses_of(node) == plain(node), (path, node.lineno)
            count += 1
    assert count > 1000


def test_a_text_over_the_parse_budget_is_never_read_with_ast(monkeypatch):
    """CPython's ast takes memory too: a text over the parse budget of its size is read by
    the line scanner (an input too large to analyse costs no more than before the ast
    reading; scripts/attack.py's memory attacks), one within it by ast."""
    import jaxinterop_lint.size as size

    text = "import torch\n" + "".join(f"x{i} = torch.from_dlpack(y{i})\n" for i in range(300))
    assert masking.Masker(text, MASKING).exact
    monkeypatch.setattr(size, "memory_budget", lambda n: 1)
    m = masking.Masker(text, MASKING)
    assert m.usable and not m.exact
