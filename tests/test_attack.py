"""``scripts/attack.py`` in CI: every hostile repository and input of issue 13 is built in a
temporary folder and defended (the script exits 0, and its table lists every attack)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.slow   # the shim's attacks run real jax and torch
def test_every_attack_is_defended(tmp_path):
    script = ROOT / "scripts" / "attack.py"
    listed = subprocess.run([sys.executable, str(script), "--list"], capture_output=True, text=True, timeout=60)
    names = listed.stdout.splitlines()
    assert listed.returncode == 0 and len(names) >= 20, listed.stderr
    r = subprocess.run([sys.executable, str(script), "--json", str(tmp_path / "rows.json")], capture_output=True,
                       text=True, timeout=1200)
    assert r.returncode == 0, r.stdout + r.stderr
    import json

    rows = json.loads((tmp_path / "rows.json").read_text())
    assert [f"{row['section']}: {row['attack']}" for row in rows] == names
    assert all(row["verdict"] in ("defended", "skipped") for row in rows), rows
    # only the one that needs root (as non-root) and deep nesting on Python 3.12 may be skipped
    assert sum(row["verdict"] == "skipped" for row in rows) <= 2


def test_attack_table_usage():
    script = ROOT / "scripts" / "attack.py"
    r = subprocess.run([sys.executable, str(script), "--only", "no such attack"], capture_output=True, text=True)
    assert r.returncode == 2 and "no attack matches" in r.stderr
