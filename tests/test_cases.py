"""The shared acceptance cases, scored by ../shared/bin/check-cases (CLI and flake8)."""
from __future__ import annotations

import subprocess
import sys


def test_acceptance_cases_all_rules(shared_dir):
    r = subprocess.run([sys.executable, str(shared_dir / "bin" / "check-cases"),
                        "--linter", f"{sys.executable} -m jaxinterop_lint --output-format concise",
                        str(shared_dir / "cases")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "false_positives=0 false_negatives=0" in r.stdout


def test_acceptance_cases_core_rules(shared_dir):
    r = subprocess.run([sys.executable, str(shared_dir / "bin" / "check-cases"), "--codes",
                        "JXI001,JXI002,JXI003", "--linter",
                        f"{sys.executable} -m jaxinterop_lint --output-format concise",
                        str(shared_dir / "cases")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_acceptance_cases_through_flake8(shared_dir):
    r = subprocess.run([sys.executable, str(shared_dir / "bin" / "check-cases"), "--linter",
                        f"{sys.executable} -m flake8 --select=JXI", str(shared_dir / "cases")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
