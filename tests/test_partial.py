"""Issue 16 (parse only what can hold a finding): a module that can make no finding of its own
is parsed only for the top-level names other analyses ask of it (pipeline/partial.py), more
of it when a later analysis asks for more (never a statement twice), and whole when it is
reported with calling contexts.  Differential tests: every finding, message and fix of the
fixture projects is the same with the partial parse forced on every module as with it off."""
from __future__ import annotations

import textwrap

import pytest

import jaxinterop_lint.pipeline.partial as partial
from test_masking_ast import project_copies
from jaxinterop_lint import Config, lint_paths
from jaxinterop_lint.pipeline import run
from jaxinterop_lint.pipeline.analyse import PARSES

FILLER = "".join(f"def filler_{i}(a):\n    return a + {i}\n\n" for i in range(120))


def _findings(root):
    result = lint_paths([str(root)], Config(), use_cache=False)
    return sorted((f.path, f.line, f.column, f.code, f.message, str(f.fix)) for f in result.findings)


@pytest.fixture
def always_partial(monkeypatch):
    """Parse every eligible module partially, however short and however little it saves;
    returns the analyses made partial."""
    made = []
    monkeypatch.setattr(partial, "MIN_LINES", 0)
    monkeypatch.setattr(partial, "MIN_GAIN", 0.0)
    real = partial.Partial.render

    def render(self, callers=frozenset()):
        out = real(self, callers)
        if out is not None:
            made.append(self)
        return out

    monkeypatch.setattr(partial.Partial, "render", render)
    return made


def _project(tmp_path, files: dict):
    (tmp_path / "pyproject.toml").touch()
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return tmp_path


def test_partial_parse_changes_no_finding_across_modules(monkeypatch, tmp_path, always_partial):
    roots = project_copies(tmp_path)
    parts = [_findings(r) for r in roots]
    assert len(always_partial) >= 2          # the forcing reached modules of these projects
    monkeypatch.undo()
    monkeypatch.setattr(run.Session, "may_be_partial", lambda self, path: False)
    whole = [_findings(r) for r in roots]
    assert all(whole) and parts == whole


HELPERS = textwrap.dedent('''\
    import torch

    def to_torch(t):
        return torch.from_dlpack(t)

    def passthrough(t):
        return _inner(t)

    def _inner(t):
        return t

    def other(t):
        return torch.from_dlpack(t) + 1
    ''') + FILLER


MAIN = '''\
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P
    from pkg.helpers import to_torch

    mesh = jax.make_mesh((len(jax.devices()),), ("data",))

    def f(x):
        y = jax.device_put(x, NamedSharding(mesh, P("data")))
        return to_torch(y)
    '''


def test_a_module_no_jax_code_reaches_is_parsed_only_for_the_names_asked(tmp_path):
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "pkg/main.py": MAIN})
    helpers = str(root / "pkg" / "helpers.py")
    PARSES.clear()
    session = run.Session(str(root), Config(), use_cache=False)
    result = session.lint([str(root / "pkg" / "main.py")])      # helpers.py is not reported
    findings = [(f["code"], f["line"]) for f in result[str(root / "pkg" / "main.py")]["findings"]]
    assert findings == [("JXI002", 9)]      # at the call: to_torch() exports its parameter
    ma = session.project.by_path[helpers]
    assert ma.partial is not None and "def to_torch" in ma.parsed_text and "import torch" in ma.parsed_text
    assert "def filler_7" not in ma.parsed_text and "def other" not in ma.parsed_text
    assert ma.parsed_text.count("\n") == HELPERS.count("\n")     # blanked in place
    assert PARSES[helpers] == 1


def test_a_name_asked_later_is_added_without_parsing_a_statement_twice(tmp_path):
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS})
    helpers = str(root / "pkg" / "helpers.py")
    project = run.Session(str(root), Config(), use_cache=False).project
    PARSES.clear()
    ma = project.analysis_of_path(helpers, want=frozenset({"to_torch"}))
    assert ma.partial is not None and "passthrough" not in ma.globals and not ma.parts
    assert project.analysis_of("pkg.helpers", "passthrough") is ma
    assert {"passthrough", "_inner"} <= set(ma.globals) and len(ma.parts) == 1
    module, offset, _ = ma.parts[0]
    assert "def passthrough" in module.code and "def _inner" in module.code
    assert "def to_torch" not in module.code and "import torch" not in module.code and "filler" not in module.code
    line = HELPERS.splitlines().index("def passthrough(t):") + 1
    assert offset == line - 1 and ma.position(ma.globals["passthrough"].func.local.node)[0] == line
    assert not ma.partial.misses("passthrough") and ma.partial.misses("filler_3")
    project.analysis_of("pkg.helpers", "_inner")        # nothing new to parse
    assert len(ma.parts) == 1 and PARSES[helpers] == 1
    # a summary made through the added part: passthrough() returns its parameter
    assert project.exporting_of(helpers, frozenset({"to_torch", "passthrough"})) == {"to_torch"}


def test_a_reported_module_with_calling_contexts_is_analysed_whole_for_its_findings(tmp_path, always_partial):
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "pkg/main.py": MAIN})
    result = lint_paths([str(root)], Config(), use_cache=False)
    got = [(f.path.rsplit("/", 1)[-1], f.line, f.code, f.message) for f in result.findings]
    line = HELPERS.splitlines().index("    return torch.from_dlpack(t)") + 1
    assert [g[:3] for g in got] == [("helpers.py", line, "JXI002")]   # at the sink (PLAN decision 1)
    assert "to_torch() is called from f() at pkg/main.py:9" in got[0][3]


def test_a_module_asked_as_a_whole_is_parsed_whole(tmp_path):
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": HELPERS,
        "pkg/main.py": MAIN.replace("from pkg.helpers import to_torch", "from pkg import helpers").replace(
            "return to_torch(y)", "return helpers.to_torch(y)"),
    })
    session = run.Session(str(root), Config(), use_cache=False)
    out = session.lint([str(root / "pkg" / "main.py")])
    assert [f["code"] for f in out[str(root / "pkg" / "main.py")]["findings"]] == ["JXI002"]
    ma = session.project.by_path.get(str(root / "pkg" / "helpers.py"))
    assert ma is not None and ma.partial is None and "def filler_7" in ma.parsed_text


def test_a_statement_that_changes_a_kept_name_is_kept():
    text = textwrap.dedent('''\
        import torch
        REGISTRY = {}
        REGISTRY["a"] = torch.from_dlpack
        register(REGISTRY)
        UNRELATED = 3
        UNRELATED2 = UNRELATED + 1
        ''') + FILLER
    p = partial.Partial(text, frozenset({"REGISTRY"}), min_lines=0)
    out = p.render()
    assert 'REGISTRY["a"] = torch.from_dlpack' in out and "register(REGISTRY)" in out
    assert "UNRELATED" not in out and "filler_1" not in out
    assert out.count("\n") == text.count("\n")      # lines kept in place
    assert p.misses("UNRELATED2") and not p.misses("REGISTRY")
    runs = p.more({"UNRELATED2"})
    assert runs == [("UNRELATED = 3\nUNRELATED2 = UNRELATED + 1\n", 4)]
    assert p.more({"UNRELATED2"}) == [] and not p.misses("UNRELATED")


def test_the_callers_kept_by_the_masking_are_the_names_taken_from_modules_naming_a_consumer(tmp_path):
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": HELPERS,
        "pkg/plain.py": "def shape_of(a):\n    return a.shape\n",
        "pkg/star.py": "from pkg.helpers import *\nimport functools\n",
        "pkg/main.py": "import functools\nimport json as js\nfrom pkg.helpers import to_torch as tt, passthrough\n"
                       "from pkg.plain import shape_of\nimport jax\n",
    })
    session = run.Session(str(root), Config(), use_cache=False)
    assert session.callers(str(root / "pkg" / "main.py")) == {"tt", "passthrough"}
    # a star import of such a module may bind any name: every imported name counts
    assert session.callers(str(root / "pkg" / "star.py")) == {"*", "functools"}
    assert session.callers(str(root / "pkg" / "plain.py")) == frozenset()
