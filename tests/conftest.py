"""Shared test helpers: lint a snippet, run the CLI and flake8 as real subprocesses."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


from jaxinterop_lint import Config, lint_source

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"   # beside the checkout in CI; tests read the copies in fixtures/
FIXTURES = ROOT / "fixtures"
CASES = FIXTURES / "cases"              # copy of ../shared/cases (test_fixtures_sync.py)
CASES_DEPTH = FIXTURES / "cases-depth"  # copy of ../shared/cases-depth
SARIF_SCHEMA = FIXTURES / "data" / "sarif-schema-2.1.0.json"   # copy of ../shared/data/...
CHECK_CASES = FIXTURES / "bin" / "check-cases"                  # copy of ../shared/bin/check-cases
EIGHT_DEVICES = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}


def lint(code: str, path: str = "snippet.py", **config):
    """Lint a dedented snippet; returns the findings."""
    result = lint_source(textwrap.dedent(code), path, Config(**config))
    assert result.error is None, result.error.message
    return result.findings


def codes(code: str, **config):
    """``[(line, code), ...]`` of a snippet's findings."""
    return [(f.line, f.code) for f in lint(code, **config)]


def run_cli(*args, cwd=None, input=None, env=None):
    """Run ``python -m jaxinterop_lint`` in a subprocess; returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "jaxinterop_lint", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, input=input, env=full_env, timeout=300)


def run_python(script: str, cwd=None, env=None, timeout=300):
    """Run a Python file with 8 forced CPU devices."""
    full_env = dict(os.environ)
    full_env.update(EIGHT_DEVICES)
    full_env.update(env or {})
    return subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True,
                          env=full_env, timeout=timeout)



def write_files(root, files: dict):
    """Write ``files`` (``{relative path: text}``) under the folder ``root`` (a ``Path``),
    making the folders on the way; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def copy_tree(src, dst, **kwargs):
    """``shutil.copytree`` of a folder of this repository, leaving out what a run of the
    linter or of Python leaves there (the cache folder a README command makes, bytecode), so a
    test starts from the files as committed."""
    import shutil as _shutil

    return _shutil.copytree(src, dst, ignore=_shutil.ignore_patterns(".jaxinterop_lint_cache", "__pycache__"),
                            **kwargs)


@pytest.fixture
def key_dir(tmp_path, monkeypatch):
    """A fresh per-user key folder of the cache's MACs (in-process and for subprocesses)."""
    from jaxinterop_lint.pipeline import storekey as sk

    folder = tmp_path / "keys-victim"
    monkeypatch.setenv(sk.KEY_ENV, str(folder))
    monkeypatch.setattr(sk, "_KEYS", {})
    return folder
