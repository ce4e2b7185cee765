"""The acceptance cases (``fixtures/cases``, ``fixtures/cases-depth``: copies of
``../shared``), scored by ``fixtures/bin/check-cases`` (a copy of ``../shared/bin``) through
the CLI and through flake8."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import CASES, CASES_DEPTH, CHECK_CASES

CLI = f"{sys.executable} -m jaxinterop_lint --output-format concise"


def check_cases(folder, *args):
    return subprocess.run([sys.executable, str(CHECK_CASES), *args, str(folder)],
                          capture_output=True, text=True, timeout=300)


def test_acceptance_cases_all_rules():
    r = check_cases(CASES, "--linter", CLI)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "false_positives=0 false_negatives=0" in r.stdout


def test_acceptance_cases_core_rules():
    r = check_cases(CASES, "--codes", "JXI001,JXI002,JXI003", "--linter", CLI)
    assert r.returncode == 0, r.stdout + r.stderr


def test_acceptance_cases_through_flake8():
    r = check_cases(CASES, "--linter", f"{sys.executable} -m flake8 --select=JXI")
    assert r.returncode == 0, r.stdout + r.stderr


# The depth cases (issue 12): values with parts, generators, calling contexts, exact placements.
@pytest.mark.parametrize("case", sorted(p.name for p in CASES_DEPTH.glob("*.py")))
def test_depth_cases(tmp_path, case):
    shutil.copy(CASES_DEPTH / case, tmp_path / case)
    r = check_cases(tmp_path, "--linter", CLI + " --no-cache")
    assert r.returncode == 0, r.stdout + r.stderr
