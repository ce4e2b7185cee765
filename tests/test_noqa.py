"""``jaxinterop_lint/noqa.py``: the one reader of noqa directives, and JXI100 (unused-noqa,
ruff's RUF100) with its fix."""
from __future__ import annotations

import textwrap

import pytest

from conftest import run_cli
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.fix.apply import fix_text
from jaxinterop_lint.noqa import directives, file_noqa, line_codes

EXPORT = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
          "y = jax.device_put(x, NamedSharding(m, P('x')))\n")
WITH_100 = Config(extend_select=("JXI100",))


def unused(code: str, config=WITH_100):
    r = lint_source(textwrap.dedent(code), "m.py", config)
    assert r.error is None
    return [(f.line, f.message) for f in r.findings if f.code == "JXI100"]


def fixed(code: str, config=WITH_100) -> str:
    out = fix_text(textwrap.dedent(code), "m.py", config)
    assert out.error is None
    return out.text


def test_line_and_file_directives_are_parsed_as_flake8_does():
    assert line_codes("x = 1") is None
    assert line_codes("x = 1  # noqa") == frozenset()
    assert line_codes("x = 1  # NOQA:jxi002,E501") == {"JXI002", "E501"}
    assert line_codes("x = 1  # noqa: JXI002 JXI005") == {"JXI002", "JXI005"}
    assert file_noqa("x = 1\n") == frozenset()
    assert file_noqa("# jaxinterop-lint: noqa\n") is None
    assert file_noqa("# jaxinterop-lint: noqa: JXI002, JXI003\n") == {"JXI002", "JXI003"}
    (d,) = directives("s = '# noqa: JXI002'  # noqa: JXI003\n")     # the string is no directive
    assert d.codes == ("JXI003",) and not d.file_level and d.start == 22


def test_jxi100_is_opt_in():
    code = "x = 1  # noqa: JXI002\n"
    assert unused(code, Config()) == []
    assert unused(code) == [(1, "Unused noqa directive (unused: `JXI002`)")]
    assert unused(code, Config(select=("JXI",))) == []          # a prefix does not opt in
    assert unused(code, Config(select=("JXI100",))) != []


def test_each_kind_of_unused_code():
    assert unused("x = 1  # noqa: JXI099\n") == [(1, "Unused noqa directive (unknown: `JXI099`)")]
    assert unused(EXPORT + "t = torch.from_dlpack(y)  # noqa: JXI002, JXI002\n") == \
        [(4, "Unused noqa directive (duplicated: `JXI002`)")]
    assert unused("x = 1  # noqa: JXI009\n") == [(1, "Unused noqa directive (non-enabled: `JXI009`)")]
    assert unused(EXPORT + "t = torch.from_dlpack(y)  # noqa: JXI002, JXI003, E501\n") == \
        [(4, "Unused noqa directive (unused: `JXI003`)")]
    assert unused("# jaxinterop-lint: noqa: JXI003\nimport torch\n") == \
        [(1, "Unused file-level noqa directive (unused: `JXI003`)")]
    assert unused("# jaxinterop-lint: noqa\nx = 1\n") == \
        [(1, "Unused file-level noqa directive (unused: (every code))")]


def test_what_is_never_judged():
    assert unused(EXPORT + "t = torch.from_dlpack(y)  # noqa: JXI002\n") == []     # used
    assert unused("x = 1  # noqa: E501\n") == []           # another tool's code
    assert unused("x = 1  # noqa\n") == []                 # bare: may be for another tool
    assert unused("s = '# noqa: JXI002'\n") == []          # not a comment
    assert unused("# jaxinterop-lint: noqa: JXI005\nfrom jax.sharding import PositionalSharding\n") == []
    # a file without interop words is never parsed, but its directives are still judged
    assert unused("import os\nx = os.sep  # noqa: JXI001\n") == [(2, "Unused noqa directive (unused: `JXI001`)")]


def test_a_directive_silences_jxi100_only_by_naming_it():
    assert unused("x = 1  # noqa: JXI002, JXI100\n") == []
    assert unused("# jaxinterop-lint: noqa: JXI100\nx = 1  # noqa: JXI002\n") == []
    # A bare file directive silences the whole file, what JXI100 says of other directives
    # too; only its own unused report (the file has no enabled finding) remains.
    assert [line for line, _ in unused("# jaxinterop-lint: noqa\nx = 1  # noqa: JXI002\n")] == [1]
    assert unused("# jaxinterop-lint: noqa\n" + EXPORT + "t = torch.from_dlpack(y)\nx = 1  # noqa: JXI002\n") == []


@pytest.mark.parametrize("before,after", [
    ("x = 1  # noqa: JXI002\n", "x = 1\n"),
    ("x = 1  # noqa: JXI099, E501\n", "x = 1  # noqa: E501\n"),
    ("x = 1  # noqa: JXI002  # keep me\n", "x = 1  # keep me\n"),
    ("x = 1  # noqa: JXI002 because of the cast\n", "x = 1  # because of the cast\n"),
    ("# jaxinterop-lint: noqa: JXI003\nimport torch\n", "import torch\n"),
    ("import torch\n# jaxinterop-lint: noqa: JXI003", "import torch"),
    ("x = 1\r\ny = 2  # noqa: JXI001\r\n", "x = 1\r\ny = 2\r\n"),
    (EXPORT + "t = torch.from_dlpack(y)  # noqa: JXI003, JXI002\n",
     EXPORT + "t = torch.from_dlpack(y)  # noqa: JXI002\n"),
])
def test_the_fix_removes_what_is_unused_and_keeps_the_rest(before, after):
    assert fixed(before) == after
    assert unused(after) == []
    assert fixed(after) == after


def test_cli_fix_and_flake8_see_the_same_jxi100(tmp_path):
    import subprocess
    import sys

    (tmp_path / "m.py").write_text("x = 1  # noqa: JXI002, E501\n")
    r = run_cli("--extend-select", "JXI100", "m.py", cwd=tmp_path)
    assert r.returncode == 1 and "m.py:1:8: JXI100 Unused noqa directive (unused: `JXI002`)" in r.stdout
    f8 = subprocess.run([sys.executable, "-m", "flake8", "--extend-select=JXI100", "m.py"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=300)
    assert "m.py:1:8: JXI100 [*] Unused noqa directive (unused: `JXI002`)" in f8.stdout
    f8 = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "m.py"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=300)
    assert "JXI100" not in f8.stdout
    r = run_cli("--extend-select", "JXI100", "--fix", "m.py", cwd=tmp_path)
    assert r.returncode == 0 and (tmp_path / "m.py").read_text() == "x = 1  # noqa: E501\n"


LIB = "import torch\n\n\ndef to_torch(x):\n    return torch.from_dlpack(x)\n"
CALLER = ("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\nfrom pkg.lib import to_torch\n\n"
          "mesh = jax.make_mesh((8,), ('x',))\n\n\ndef run(x):\n"
          "    y = jax.device_put(x, NamedSharding(mesh, P('x')))\n    return to_torch(y){}\n")


@pytest.mark.parametrize("directive, expected", [
    ("", ["pkg/lib.py:5:12: JXI002"]),                               # a calling context: at the sink
    ("  # noqa: JXI002", []),                                         # silenced at the call, as file by file
    ("  # noqa", []),
    ("  # noqa: JXI001", ["pkg/a.py:11:12: JXI002", "pkg/a.py:11:25: JXI100"]),   # another code: at the call
    ("\n# jaxinterop-lint: noqa: JXI002", []),
])
def test_a_noqa_on_the_call_keeps_a_calling_context_where_it_judges_it(tmp_path, directive, expected):
    """A call that hands a multi-device value to another reported file's exporting function
    is reported at that function's sink (a calling context); a ``# noqa`` on the call (or a
    file directive of the caller) keeps the finding at the call instead, where the
    directive judges it: the project run reports what the run of the caller alone reports,
    and JXI100 counts the directive used (it reported it unused, and ``--fix`` removed it)."""
    import subprocess
    import sys

    from conftest import write_files

    write_files(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", "pkg/__init__.py": "", "pkg/lib.py": LIB,
                           "pkg/a.py": CALLER.format(directive)})

    def codes(out: str) -> list:
        return sorted(" ".join(line.split()[:2]) for line in out.splitlines() if ": JXI" in line)

    for cache in ("--no-cache", "--jobs=1", "--jobs=1"):      # cold, then from the cache
        r = run_cli(cache, "--extend-select", "JXI100", "--output-format", "concise", ".", cwd=tmp_path)
        assert codes(r.stdout) == expected, r.stdout
    alone = run_cli("--no-cache", "--extend-select", "JXI100", "pkg/a.py", cwd=tmp_path)
    assert codes(alone.stdout) == [e for e in expected if e.startswith("pkg/a.py")] + \
        (["pkg/a.py:11:12: JXI002"] if not directive else [])
    f8 = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "--extend-select=JXI100", "."],
                        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert codes(f8.stdout.replace("./", "")) == expected, f8.stdout


SAME_MODULE = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n"
               "mesh = jax.make_mesh((8,), ('x',))\n\n\ndef to_torch(x):\n    return torch.from_dlpack(x)\n\n\n"
               "def run(x):\n    y = jax.device_put(x, NamedSharding(mesh, P('x')))\n    return to_torch(y){}\n")


@pytest.mark.parametrize("directive, expected", [
    ("", [(9, "JXI002")]),                      # the calling context, at the sink
    ("  # noqa: JXI002", []),
    ("  # noqa", []),
    ("  # noqa: JXI001", [(14, "JXI002"), (14, "JXI100")]),
])
def test_a_noqa_on_a_call_in_the_same_module_keeps_its_finding_at_the_call(directive, expected):
    """The calling context of a function of the same module follows the same rule as one of
    another module's (above): a directive on the call judges the finding there."""
    r = lint_source(SAME_MODULE.format(directive), "m.py", WITH_100)
    assert r.error is None
    assert [(f.line, f.code) for f in r.findings] == expected
