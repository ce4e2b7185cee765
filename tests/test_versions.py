"""Issue 14: the project's JAX range, facts per release, version guards, dead probes and the
replacements of removed APIs (proved against the old calls on 8 CPU devices)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import EIGHT_DEVICES, ROOT, run_cli
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint import jaxrange
from jaxinterop_lint.pipeline.run import store_key as config_key
from jaxinterop_lint.config import ConfigError
from jaxinterop_lint.knowledge import versions as VT
from jaxinterop_lint.rules.base import catches
from markers import expected

CASES = ROOT / "fixtures" / "versions" / "cases"
REPLACEMENTS = ROOT / "fixtures" / "versions" / "replacements.py"


def lint(code: str, target: str = "", **config):
    """Findings of a dedented snippet linted under the JAX range ``target`` ("" = default)."""
    spec = jaxrange.parse_target(target, "test") if target else ()
    result = lint_source(textwrap.dedent(code), "snippet.py", Config(jax_range=spec, **config))
    assert result.error is None, result.error.message
    return result.findings


def lines(code: str, target: str = "", code_name: str = "JXI005"):
    return [f.line for f in lint(code, target) if f.code == code_name]


# -- the tables ----------------------------------------------------------------------------
def test_release_list_is_ordered_and_complete_around_the_removals():
    assert list(VT.RELEASES) == sorted(set(VT.RELEASES))
    for v in ((0, 4, 26), (0, 4, 27), (0, 4, 32), (0, 6, 0), (0, 7, 0), (0, 7, 1), (0, 7, 2), (0, 8, 0),
              (0, 8, 1), (0, 9, 0, 1), (0, 10, 0), (0, 10, 2)):
        assert v in VT.RELEASES
    assert VT.NEWEST == (0, 11, 0)


@pytest.mark.parametrize("key,works,warns,fails,raises", [
    ("jax.dlpack.to_dlpack", (0, 5, 3), (0, 6, 2), (0, 7, 0), "AttributeError"),
    ("capsule", (0, 4, 31), (0, 7, 1), (0, 7, 2), "TypeError"),
    (".device_buffer", (0, 4, 21), (0, 4, 26), (0, 4, 27), "AttributeError"),
    (".device_buffers", (0, 4, 21), (0, 4, 26), (0, 4, 27), "AttributeError"),
    ("jax.device_put_replicated", (0, 8, 0), (0, 9, 2), (0, 10, 0), "AttributeError"),
    ("jax.device_put_sharded", (0, 8, 0), (0, 9, 2), (0, 10, 0), "AttributeError"),
    ("jax.sharding.PositionalSharding", (0, 5, 3), (0, 6, 2), (0, 7, 0), "AttributeError"),
])
def test_each_removed_api_warns_then_fails_from_the_changelog_release(key, works, warns, fails, raises):
    api = VT.REMOVED[key]
    assert api.state(works) == VT.WORKS
    assert api.state(warns) == VT.WARNS
    assert api.state(fails) in VT.FAILING and api.state(VT.NEWEST) in VT.FAILING
    assert api.first_failing() == fails and api.raises == raises
    assert api.failing(VT.ALL) == VT.at_least(fails)
    assert api.available(VT.ALL) == VT.before(fails)
    assert api.source


def test_history_texts_follow_the_changelog():
    assert VT.REMOVED["jax.dlpack.to_dlpack"].history() == \
        "deprecated in JAX 0.6.0, raises since 0.7.0, deleted in 0.8.0"
    assert VT.REMOVED[".device_buffer"].history() == "deprecated in JAX 0.4.22, removed in 0.4.27 (AttributeError)"
    assert VT.REMOVED["jax.sharding.PositionalSharding"].history().endswith("deleted in 0.7.1")


def test_protocol_exception_classes_per_release_come_from_the_message_history():
    from jaxinterop_lint.knowledge import messages

    assert messages.lookup("unsafe_buffer_pointer", (0, 7, 2)).exception == "XlaRuntimeError"
    assert messages.lookup("unsafe_buffer_pointer", (0, 8, 0)).exception == "JaxRuntimeError"
    assert VT.resolves("jax.errors.JaxRuntimeError", (0, 4, 34))
    assert not VT.resolves("jax.errors.JaxRuntimeError", (0, 4, 33))
    assert not VT.resolves("jax.lib.xla_extension.XlaRuntimeError", (0, 6, 0))


def test_catches_judges_every_release_of_the_range():
    assert catches(("jax.errors.JaxRuntimeError",), "RuntimeError")
    assert catches(("jax.errors.JaxRuntimeError",), "RuntimeError", VT.at_least((0, 5, 0)))
    assert not catches(("jax.errors.JaxRuntimeError",), "RuntimeError", VT.at_least((0, 4, 30)))
    assert catches(("RuntimeError",), "RuntimeError", VT.ALL)
    assert catches(None, "BufferError", VT.ALL)
    assert not catches(("ValueError",), "BufferError", VT.ALL)


# -- the project's range -------------------------------------------------------------------
@pytest.mark.parametrize("value,admitted,refused", [
    ("0.4.31", [(0, 4, 31)], [(0, 4, 30), (0, 4, 32), VT.FUTURE]),
    (">=0.4.31,<0.8", [(0, 4, 31), (0, 7, 2)], [(0, 8, 0), VT.FUTURE]),
    ("jax>=0.7", [(0, 7, 0), (0, 11, 0), VT.FUTURE], [(0, 6, 2)]),
    ("0.4.*", [(0, 4, 0), (0, 4, 38)], [(0, 5, 0)]),
    ("~=0.6.0", [(0, 6, 0), (0, 6, 2)], [(0, 7, 0)]),
])
def test_target_jax_version_takes_a_version_or_a_range(value, admitted, refused):
    vs = jaxrange.versions_of(jaxrange.parse_target(value, "pyproject.toml"))
    assert all(v in vs for v in admitted) and not any(v in vs for v in refused)


@pytest.mark.parametrize("value,words", [
    ("abc", "is not a version or a range"), (">=0.4,<0.3", "admits none of the JAX releases"),
    (7, "expected a version or a range"), ("", "expected a version or a range"),
])
def test_bad_target_jax_version_names_the_file_and_key(value, words):
    with pytest.raises(ConfigError) as err:
        jaxrange.parse_target(value, "/p/pyproject.toml")
    assert str(err.value).startswith("/p/pyproject.toml: target-jax-version: ") and words in str(err.value)
    assert "\n" not in str(err.value)


def _project(tmp_path, files: dict) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


@pytest.mark.parametrize("files,spec,source", [
    ({"pyproject.toml": '[project]\nname = "p"\ndependencies = ["numpy", "jax[cuda12]>=0.4.31"]\n'},
     (">=0.4.31",), "pyproject.toml"),
    ({"pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.4.20"]\n'
                        '[project.optional-dependencies]\nnew = ["jax>=0.6"]\n'},
     (">=0.4.20", ">=0.4.20,>=0.6"), "pyproject.toml"),
    ({"pyproject.toml": '[project]\nname = "p"\n[project.optional-dependencies]\ntpu = ["jax[tpu]==0.6.2"]\n'
                        '[dependency-groups]\ndev = ["jax<0.5"]\n'},
     ("==0.6.2", "<0.5"), "pyproject.toml"),
    ({"setup.cfg": "[options]\ninstall_requires =\n    numpy\n    jax >=0.4.30, <0.7\n"},
     ("<0.7,>=0.4.30",), "setup.cfg"),
    ({"setup.py": "", "requirements.txt": "-e .\nnumpy  # any\njax==0.5.3 ; python_version >= '3.10'\n",
      "requirements-dev.txt": "jaxlib\njax>=0.7\n"},
     (">=0.7", "==0.5.3"), "requirements-dev.txt, requirements.txt"),
    ({"pyproject.toml": '[project]\nname = "p"\n', "uv.lock": 'version = 1\n[[package]]\nname = "jax"\nversion = "0.4.38"\n'},
     ("==0.4.38",), "uv.lock (pinned)"),
    ({"pyproject.toml": '[project]\nname = "p"\n', "poetry.lock": '[[package]]\nname = "jax"\nversion = "0.6.1"\n'},
     ("==0.6.1",), "poetry.lock (pinned)"),
    ({"pyproject.toml": '[project]\nname = "p"\n', "pdm.lock": '[[package]]\nname = "jax"\nversion = "0.7.0"\n'},
     ("==0.7.0",), "pdm.lock (pinned)"),
    ({"pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.8"]\n',
      "uv.lock": '[[package]]\nname = "jax"\nversion = "0.9.2"\n'},
     (">=0.8",), "pyproject.toml"),
])
def test_the_range_is_read_from_the_project_declaration(tmp_path, files, spec, source):
    root = _project(tmp_path, files)
    (root / "src").mkdir(exist_ok=True)
    found_spec, found_source = jaxrange.resolve([str(root / "src")])
    assert found_spec == spec
    assert found_source.startswith(source) and str(root) in found_source


def test_without_a_declaration_the_newest_jax_is_used(tmp_path):
    (tmp_path / "setup.py").write_text("")
    assert jaxrange.resolve([str(tmp_path)]) == ((), jaxrange.DEFAULT_SOURCE)
    assert Config().jax_versions() == VT.DEFAULT == {VT.NEWEST, VT.FUTURE}


def test_target_jax_version_wins_over_the_declaration_and_is_in_the_cache_key(tmp_path):
    from jaxinterop_lint import pyproject

    root = _project(tmp_path, {"pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.4.31"]\n'
                                                 '[tool.jaxinterop-lint]\ntarget-jax-version = "0.6.2"\n'})
    cfg = pyproject.load([str(root)])
    assert cfg.jax_range == ("==0.6.2",) and "target-jax-version" in cfg.jax_range_source
    declared = Config(jax_range=(">=0.4.31",))
    assert config_key(cfg) != config_key(declared) != config_key(Config())


@pytest.mark.parametrize("files,where", [
    ({"pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=>0.4"]\n'}, "project.dependencies"),
    ({"pyproject.toml": '[tool.jaxinterop-lint]\ntarget-jax-version = "latest"\n'}, "target-jax-version"),
    ({"setup.py": "", "requirements.txt": "jax<0.1\n"}, "jax requirement"),
])
def test_a_bad_declaration_is_one_line_and_exit_2(tmp_path, files, where):
    root = _project(tmp_path, files)
    (root / "a.py").write_text("import jax\n")
    r = run_cli("--no-cache", "a.py", cwd=root)
    assert r.returncode == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and where in err and str(root) in err and "Traceback" not in err


def test_show_settings_says_which_range_and_where_from(tmp_path):
    root = _project(tmp_path, {"pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.4.31"]\n'})
    r = run_cli("--show-settings", ".", cwd=root)
    assert r.returncode == 0, r.stderr
    assert "jax range: jax>=0.4.31\n" in r.stdout
    assert f"jax range from: pyproject.toml in {root}\n" in r.stdout
    assert "jax releases checked: 0.4.31 and newer" in r.stdout
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    r = run_cli("--show-settings", ".", cwd=root)
    assert "jax range from: the newest JAX the tables know (0.11.0)" in r.stdout


def test_the_cli_judges_against_the_declared_range(tmp_path):
    code = "import jax\nimport torch\nt = torch.utils.dlpack.from_dlpack(jax.dlpack.to_dlpack(x))\n"
    root = _project(tmp_path, {"a.py": code, "pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax<0.7"]\n'})
    assert run_cli("--no-cache", ".", cwd=root).returncode == 0
    (root / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["jax>=0.4.31"]\n')
    r = run_cli("--no-cache", ".", cwd=root)
    assert r.returncode == 1
    assert "raises since 0.7.0, deleted in 0.8.0; your project allows jax>=0.4.31)" in r.stdout


def test_flake8_uses_the_declared_range_too(tmp_path):
    code = "import jax\nimport torch\nt = torch.utils.dlpack.from_dlpack(jax.dlpack.to_dlpack(x))\n"
    root = _project(tmp_path, {"a.py": code, "pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax<0.7"]\n'})

    def flake8():
        return subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "a.py"], cwd=root,
                              capture_output=True, text=True, timeout=300)
    assert flake8().stdout == ""
    (root / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["jax>=0.6"]\n')
    out = flake8().stdout
    assert "JXI005" in out and "your project allows jax>=0.6" in out


# -- facts per version in the rule --------------------------------------------------------
@pytest.mark.parametrize("code,fails_from", [
    ("import jax\nimport torch\nt = torch.from_dlpack(jax.dlpack.to_dlpack(x))\n", "0.7.0"),
    ("import jax\nimport torch.utils.dlpack\ny = jax.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))\n", "0.7.2"),
    ("import jax\ndef f(a: jax.Array):\n    return a.device_buffer\n", "0.4.27"),
    ("import jax\ny = jax.device_put_replicated(x, jax.devices())\n", "0.10.0"),
    ("import jax\ny = jax.device_put_sharded(xs, jax.devices())\n", "0.10.0"),
    ("import jax\ns = jax.sharding.PositionalSharding(jax.devices())\n", "0.7.0"),
])
def test_a_removed_api_is_a_finding_only_where_the_range_reaches_its_failure(code, fails_from):
    major, minor, micro = map(int, fails_from.split("."))
    before = f"<{fails_from}"
    assert lines(code, before) == []
    assert lines(code, f"=={major}.{minor}.{micro - 1}" if micro else before) == []
    found = lint(code, ">=0.4.20")
    assert [f.code for f in found] == ["JXI005"]
    assert "your project allows jax>=0.4.20" in found[0].message
    assert len(lines(code)) == 1  # the default: the newest JAX


def test_importing_a_removed_name_raises_import_error_and_an_import_error_fallback_is_fine():
    code = """\
        import jax
        try:
            from jax.dlpack import to_dlpack
        except ImportError:
            to_dlpack = None
        try:
            from jax import device_put_replicated
        except AttributeError:
            device_put_replicated = None
        """
    assert lines(code) == [7]


def test_a_fallback_handler_must_catch_what_each_release_raises():
    body = "import jax\ntry:\n    y = jax.device_put_replicated(x, jax.devices())\nexcept {}:\n    y = None\n"
    for handler in ("AttributeError", "(AttributeError, ImportError)", "Exception"):
        assert lines(body.format(handler)) == [], handler
    for handler in ("TypeError", "ImportError", "ValueError"):
        assert lines(body.format(handler)) == [3], handler


def test_jxi007_judges_a_handler_name_in_every_release_of_the_range():
    code = """\
        import jax
        from jax.sharding import NamedSharding, PartitionSpec as P
        y = jax.device_put(x, NamedSharding(mesh, P("x")))
        try:
            p = y.unsafe_buffer_pointer()
        except jax.errors.JaxRuntimeError:
            p = None
        """
    assert [f.code for f in lint(code, ">=0.5")] == []
    found = lint(code, ">=0.4.30")
    assert [(f.line, f.code) for f in found] == [(6, "JXI007")]
    assert found[0].message.endswith("(jax.errors.JaxRuntimeError does not exist in JAX 0.4.30 to 0.4.33)")


# -- version guards ------------------------------------------------------------------------
OLD_CALL = "torch.utils.dlpack.from_dlpack(jax.dlpack.to_dlpack(x))"


@pytest.mark.parametrize("guard,old_is_true_branch", [
    ("version.parse(jax.__version__) < version.parse('0.7.0')", True),
    ("version.Version(jax.__version__) >= version.Version('0.7')", False),
    ("packaging.version.parse(jax.__version__).release < (0, 7)", True),
    ("version.parse(jax.__version__).major == 0 and version.parse(jax.__version__).minor < 7", True),
    ("jax.__version_info__ < (0, 7)", True),
    ("jax.__version_info__[:2] >= (0, 7)", False),
    ("jax.__version_info__[1] < 7 and jax.__version_info__[0] == 0", True),
    ("tuple(map(int, jax.__version__.split('.')[:2])) < (0, 7)", True),
    ("tuple(int(p) for p in importlib.metadata.version('jax').split('.')[:3]) >= (0, 7, 0)", False),
    ("version.parse(importlib.metadata.version('jax')) < version.parse('0.7')", True),
    ("hasattr(jax.dlpack, 'to_dlpack')", True),
    ("not hasattr(jax.dlpack, 'to_dlpack')", False),
    ("getattr(jax.dlpack, 'to_dlpack', None) is not None", True),
    ("getattr(jax.dlpack, 'to_dlpack', None) is None", False),
    ("hasattr(jax, 'P')", False),
    ("not hasattr(jax.dlpack, 'is_supported_dtype')", True),
    ("OLD", True),
    ("NEW_JAX", False),
])
def test_a_version_guard_lets_the_old_call_run_only_where_it_works(guard, old_is_true_branch):
    head = ("import importlib.metadata\nimport jax\nimport jax.dlpack\nimport packaging.version\nimport torch\n"
            "from packaging import version\nOLD = jax.__version_info__ < (0, 7)\n"
            "NEW_JAX = version.parse(jax.__version__) >= version.parse('0.7')\n")
    old, new = (OLD_CALL, "torch.from_dlpack(x)") if old_is_true_branch else ("torch.from_dlpack(x)", OLD_CALL)
    branches = f"if {guard}:\n    t = {old}\nelse:\n    t = {new}\n"
    early = f"def f(x):\n    if {guard}:\n        return {old}\n    return {new}\n"
    ternary = f"t = ({old}) if {guard} else ({new})\n"
    for form in (branches, early, ternary):
        assert lines(head + form, ">=0.4.31") == [], (guard, form)
    flipped = f"if {guard}:\n    t = {new}\nelse:\n    t = {old}\n"
    assert lines(head + flipped, ">=0.4.31") == [12 if old_is_true_branch else 10], guard


def test_a_string_comparison_of_versions_is_evaluated_as_python_does():
    code = f"import jax\nimport torch\nif jax.__version__ >= '0.7':\n    t = torch.from_dlpack(x)\nelse:\n    t = {OLD_CALL}\n"
    # "0.10.2" >= "0.7" is False: current releases take the old branch
    assert lines(code, ">=0.7") == [6]
    assert lines(code, ">=0.7,<0.10") == []


def test_asserts_skips_and_decorators_narrow_what_follows():
    code = f"""\
        import sys
        import unittest
        import jax
        import pytest
        import torch

        def a(x):
            assert jax.__version_info__ < (0, 7)
            return {OLD_CALL}

        def b(x):
            if jax.__version_info__ >= (0, 7):
                pytest.skip("gone")
            return {OLD_CALL}

        def c(x):
            if jax.__version_info__ >= (0, 7):
                pytest.xfail("gone")
            return {OLD_CALL}

        @pytest.mark.skipif(jax.__version_info__ >= (0, 7), reason="gone")
        def test_d(x):
            return {OLD_CALL}

        class T(unittest.TestCase):
            @unittest.skipUnless(jax.__version_info__ < (0, 7), "gone")
            def test_e(self):
                return {OLD_CALL}

            def test_f(self):
                if jax.__version_info__ >= (0, 7):
                    self.skipTest("gone")
                return {OLD_CALL}

        if jax.__version_info__ < (0, 7):
            def g(x):
                return {OLD_CALL}

        def h(x):
            return {OLD_CALL}
        """
    assert lines(code, ">=0.4.31") == [40]


def test_a_branch_no_release_of_the_range_reaches_is_not_walked():
    code = f"import jax\nimport torch\nif jax.__version_info__ < (0, 4, 30):\n    t = torch.from_dlpack(y)\n    u = {OLD_CALL}\n"
    assert lines(code, ">=0.4.31") == []
    assert lines(code, ">=0.4.20") == []   # before 0.4.30 to_dlpack works


def test_an_unknown_condition_does_not_narrow():
    code = f"import jax\nimport torch\nif use_old:\n    t = {OLD_CALL}\n"
    assert lines(code, ">=0.4.31") == [4]


# -- dead probes and called forms ---------------------------------------------------------
def test_a_probe_of_a_removed_array_attribute_is_a_dead_branch():
    code = """\
        import jax
        def f(x: jax.Array):
            if hasattr(x, "device_buffers"):
                return [b for b in x.device_buffers]
            return [s.data for s in x.addressable_shards]
        def g(x: jax.Array):
            return x.device_buffers() if hasattr(x, "device_buffer") else None
        """
    found = lint(code, ">=0.5")
    assert [(f.line, f.code) for f in found] == [(3, "JXI005"), (7, "JXI005")]
    assert "hasattr(x, 'device_buffers') is always False since JAX 0.4.27" in found[0].message
    assert "the code it guards never runs; use [s.data for s in x.addressable_shards]" in found[0].message
    # a range that still has the attribute: the probe is a real version test, the code behind it
    # runs on old releases, where x.device_buffers() calls a list
    assert lines(code, ">=0.4.20") == [7]


def test_probes_on_non_jax_objects_are_not_findings():
    code = "import numpy as np\nimport torch\na = np.ones(3)\nb = torch.ones(3)\nif hasattr(a, 'device_buffer') or hasattr(b, 'device_buffers'):\n    pass\n"
    assert lines(code) == []


def test_the_called_form_is_a_finding():
    found = lint("import jax\ndef f(x: jax.Array):\n    return x.device_buffers()[0]\n")
    assert [(f.line, f.code) for f in found] == [(3, "JXI005")]
    assert "`x.device_buffers()`" in found[0].message and "was a property" in found[0].message
    assert found[0].fix is None


# -- the acceptance fixtures (neutral rewrites of real compatibility code) -----------------
@pytest.mark.parametrize("path", sorted(CASES.glob("*.py")), ids=lambda p: p.name)
def test_version_fixtures(path):
    text = path.read_text()
    target = re.match(r"# target-jax-version: (.+)\n", text).group(1)
    found = {(f.line, f.code) for f in lint(text, target)}
    assert found == expected(text)


def test_version_fixtures_through_the_cli_with_a_declared_range(tmp_path):
    for path in CASES.glob("*.py"):
        target = re.match(r"# target-jax-version: (.+)\n", path.read_text()).group(1)
        folder = tmp_path / path.stem
        folder.mkdir()
        (folder / path.name).write_text(path.read_text())
        (folder / "pyproject.toml").write_text(f'[project]\nname = "p"\ndependencies = ["jax{target}"]\n')
        r = run_cli("--no-cache", "--output-format", "json", path.name, cwd=folder)
        assert r.returncode == 1, r.stderr
        got = {(f["line"], f["code"]) for f in json.loads(r.stdout)}
        assert got == expected(path.read_text()), path.name


# -- the replacements, run -----------------------------------------------------------------
def old_interpreters() -> list:
    """Interpreters of environments with older JAX releases (scripts/old_jax.py makes them)."""
    listed = os.environ.get("JAXINTEROP_OLD_JAX")
    if listed:
        return [p for p in listed.split(os.pathsep) if p]
    base = Path(os.path.expanduser("~/.cache/jaxinterop-lint/old-jax"))
    return sorted(str(p) for p in base.glob("*/bin/python"))


def run_case(python: str, mode: str, case: str):
    env = dict(os.environ, **EIGHT_DEVICES)
    env.pop("PYTHONPATH", None)
    r = subprocess.run([python, str(REPLACEMENTS), mode, case], capture_output=True, text=True, env=env, timeout=300)
    return r


def _result(r) -> str:
    m = re.search(r"^result: (.*)$", r.stdout, re.M)
    assert m, r.stdout + r.stderr[-3000:]
    return m.group(1)


REPLACEMENT_CASES = ("device_put_replicated", "device_put_sharded", "to_dlpack", "device_buffers",
                     "positional_sharding")


@pytest.mark.slow   # real jax on 8 CPU devices
@pytest.mark.parametrize("case", REPLACEMENT_CASES)
def test_each_replacement_gives_the_old_values_shapes_and_placement(case):
    new = run_case(sys.executable, "new", case)
    assert new.returncode == 0, new.stderr[-3000:]
    # the documented equivalent (or JAX's own implementation) on the current JAX
    old_here = run_case(sys.executable, "old", case)
    assert old_here.returncode == 0, old_here.stderr[-3000:]
    assert "old call gone on jax" in old_here.stderr
    assert _result(old_here) == _result(new)
    ran_old = []
    for python in old_interpreters():
        old = run_case(python, "old", case)
        if old.returncode != 0 and "No module named 'torch'" in old.stderr:
            continue  # that environment has no torch for the DLPack case
        assert old.returncode == 0, old.stderr[-3000:]
        assert _result(old) == _result(new), python
        if "old call gone" not in old.stderr:
            ran_old.append(re.search(r"^jax: (.*)$", old.stdout, re.M).group(1))
    print(f"{case}: the removed call itself ran on jax {ran_old or 'none (no old environment)'}")


def test_the_messages_give_exactly_the_proved_replacements():
    source = REPLACEMENTS.read_text()
    namespace: dict = {}
    exec(source.split("HINTS = ")[1].split("\n}\n")[0].join(("HINTS = ", "\n}\n")), namespace)
    for api, key in (("jax.device_put_replicated", "device_put_replicated"), ("jax.device_put_sharded", "device_put_sharded")):
        assert f"use {namespace['HINTS'][key]}" in VT.REMOVED[api].replacement
        found = lint(f"import jax\ny = {api}(x, jax.devices())\n")
        assert f"use {namespace['HINTS'][key]}" in found[0].message
    assert VT.REMOVED[".device_buffer"].replacement == "use x.addressable_data(0)"
    assert "one.addressable_data(0)" in source and "[describe(s.data) for s in many.addressable_shards]" in source
