"""Fixtures of ``conftest.py`` files (stop 36): pytest gives a test module the fixtures of
the ``conftest.py`` above it by name, so the plan follows them as a star import would and the
analysis calls the module's tests with them (``analysis/fixtures.py``).  The suite below is
also run by pytest on 8 CPU devices: the flagged test fails with BufferError, the others pass."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import EIGHT_DEVICES

CONFTEST = """\
import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P


@pytest.fixture
def sharded():
    mesh = jax.make_mesh((jax.device_count(),), ("d",))
    return jax.device_put(jnp.ones(8), NamedSharding(mesh, P("d")))


@pytest.fixture
def host():
    return jnp.ones(8)
"""

TESTS = """\
import jax.numpy as jnp
import pytest
import torch


def test_export(sharded):
    assert torch.from_dlpack(sharded).shape == (8,)


def test_host(host):
    assert torch.from_dlpack(host).shape == (8,)
"""

OVERRIDE = """\
import jax.numpy as jnp
import pytest
import torch


@pytest.fixture
def sharded():
    return jnp.ones(8)


def test_export(sharded):
    assert torch.from_dlpack(sharded).shape == (8,)
"""


def _project(tmp_path, sub="tests"):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    top = tmp_path / "tests"
    top.mkdir()
    (top / "conftest.py").write_text(CONFTEST)
    where = tmp_path / sub
    where.mkdir(parents=True, exist_ok=True)
    (where / "test_export.py").write_text(TESTS)
    return where / "test_export.py"


def _lint(cwd, *args):
    return subprocess.run([sys.executable, "-m", "jaxinterop_lint", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize("sub", ["tests", "tests/unit/deeper"])
def test_a_conftest_fixture_above_the_test_module_is_given_to_its_tests(tmp_path, sub):
    test = _project(tmp_path, sub)
    r = _lint(tmp_path, "--no-cache", ".")
    assert r.returncode == 1, r.stdout + r.stderr
    rel = os.path.relpath(test, tmp_path)
    assert f"{rel}:7:" in r.stdout and r.stdout.count("JXI002") == 1, r.stdout
    assert "when pytest runs test_export() with the fixture `sharded`" in r.stdout
    assert "tests/conftest.py:10" in r.stdout


def test_the_module_s_own_fixture_comes_first(tmp_path):
    test = _project(tmp_path)
    test.write_text(OVERRIDE)
    r = _lint(tmp_path, "--no-cache", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_file_not_named_as_a_test_module_gets_no_conftest_fixture(tmp_path):
    test = _project(tmp_path)
    test.rename(test.with_name("helpers.py"))
    r = _lint(tmp_path, "--no-cache", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_edit_of_the_conftest_judges_the_tests_again(tmp_path):
    _project(tmp_path)
    assert _lint(tmp_path, ".").returncode == 1
    conftest = tmp_path / "tests" / "conftest.py"
    conftest.write_text(CONFTEST.replace('jax.device_put(jnp.ones(8), NamedSharding(mesh, P("d")))', "jnp.ones(8)"))
    r = _lint(tmp_path, ".")
    assert r.returncode == 0, r.stdout + r.stderr
    conftest.write_text(CONFTEST)
    assert _lint(tmp_path, ".").returncode == 1


def test_flake8_on_the_test_module_alone(tmp_path):
    test = _project(tmp_path)
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", str(test)], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 1 and ":7:12: JXI002" in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
def test_pytest_on_8_devices_fails_where_the_finding_is(tmp_path):
    _project(tmp_path)
    env = dict(os.environ, **EIGHT_DEVICES)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                        "tests"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert "FAILED tests/test_export.py::test_export - BufferError" in r.stdout, r.stdout[-2000:]
    assert "1 failed, 1 passed" in r.stdout, r.stdout[-2000:]


def test_a_star_import_of_a_package_whose_init_star_imports_a_module(tmp_path):
    """``from pk import *`` with ``from .core import *`` in ``pk/__init__.py`` takes ``core``'s
    names (a fresh helper's hunt, stop 36: the plan followed only the ``__init__``'s own)."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "pk").mkdir()
    (tmp_path / "pk" / "__init__.py").write_text("from .core import *\n")
    (tmp_path / "pk" / "core.py").write_text(
        "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
        "def make_sharded():\n    mesh = jax.make_mesh((jax.device_count(),), ('d',))\n"
        "    return jax.device_put(jax.numpy.ones(8), NamedSharding(mesh, P('d')))\n")
    (tmp_path / "main.py").write_text("import torch\nfrom pk import *\n\ntorch.from_dlpack(make_sharded())\n")
    r = _lint(tmp_path, "--no-cache", ".")
    assert r.returncode == 1 and "main.py:4:1: JXI002" in r.stdout, r.stdout + r.stderr
