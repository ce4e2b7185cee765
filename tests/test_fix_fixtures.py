"""The before/after pairs of ``fixtures/fix`` through the real command line (issue 4):
``--diff`` prints exactly the pair's diff and writes nothing, ``--fix`` writes the after file,
a second run changes nothing; the runtime pairs fail before and run after with equal values."""
from __future__ import annotations

import difflib
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, run_cli, run_python

FIX = ROOT / "fixtures" / "fix"
KINDS = {"safe": (), "unsafe": ("--unsafe-fixes",), "runtime": ("--unsafe-fixes",)}


def pairs(kind: str) -> list:
    """``[(before, after)]`` of one folder of ``fixtures/fix``."""
    folder = FIX / kind
    out = []
    for before in sorted(folder.glob("*.py")):
        if before.name.endswith(".fixed.py"):
            continue
        out.append((before, before.with_name(before.stem + ".fixed.py")))
    return out


ALL_PAIRS = [(kind, b, a) for kind in KINDS for b, a in pairs(kind)]


def test_every_folder_has_pairs():
    for kind in KINDS:
        assert pairs(kind), kind
    for kind, before, after in ALL_PAIRS:
        assert after.is_file(), f"{before} has no {after.name}"
        assert before.read_bytes() != after.read_bytes(), f"{before.name}: the fix changes nothing"


def test_every_fixable_pattern_has_a_pair():
    """The fixes column of rules.md: one pair per rule with a fix, both applicabilities."""
    names = {b.name for _, b, _ in ALL_PAIRS if _ != "runtime"}
    for prefix in ("jxi001_", "jxi002_", "jxi004_", "jxi005_", "jxi006_", "jxi007_"):
        assert any(n.startswith(prefix) for n in names), prefix
    text = "".join(a.read_text() for _, _, a in ALL_PAIRS)
    for replacement in ("np.from_dlpack(x).copy()", "torch.from_dlpack(x).clone()", ".astype(numpy.float64)",
                        "arr.addressable_data(0)", "[s.data for s in arr.addressable_shards]",
                        "len(r.devices()) == 1", "len(r.devices()) != 1", "(ValueError, BufferError)",
                        "jax.device_put(y, jax.local_devices()[0])", "return torch.from_dlpack(x)",
                        "jax.dlpack.from_dlpack(t)"):
        assert replacement in text, replacement


def _copy(kind: str, tmp_path: Path) -> Path:
    folder = tmp_path / kind
    folder.mkdir()
    for before, _ in pairs(kind):
        shutil.copyfile(before, folder / before.name)
    return folder


def _split_diff(text: str) -> dict:
    """``{file name: its part of a unified diff}``."""
    parts, name = {}, None
    for line in text.splitlines(keepends=True):
        m = re.match(r"--- a/(.*)\n", line)
        if m:
            name = os.path.basename(m.group(1))
            parts[name] = ""
        parts[name] += line
    return parts


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_diff_mode_prints_each_pair_and_writes_nothing(kind, tmp_path):
    folder = _copy(kind, tmp_path)
    before_bytes = {p.name: p.read_bytes() for p in folder.iterdir()}
    r = run_cli("--diff", *KINDS[kind], kind, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before_bytes
    parts = _split_diff(r.stdout)
    assert set(parts) == {b.name for b, _ in pairs(kind)}
    for before, after in pairs(kind):
        expected = "".join(difflib.unified_diff(
            before.read_text().splitlines(keepends=True), after.read_text().splitlines(keepends=True),
            f"a/{kind}/{before.name}", f"b/{kind}/{before.name}"))
        assert parts[before.name] == expected, before.name
    assert re.search(r"Would fix \d+ findings? \(\d+ remaining\)", r.stderr)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_fix_mode_writes_each_after_file_and_is_idempotent(kind, tmp_path):
    folder = _copy(kind, tmp_path)
    r = run_cli("--fix", *KINDS[kind], kind, cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    assert "Fixed " in r.stderr
    for before, after in pairs(kind):
        assert (folder / before.name).read_text() == after.read_text(), before.name
    fixed = {p.name: p.read_bytes() for p in folder.iterdir()}
    again = run_cli("--fix", *KINDS[kind], kind, cwd=tmp_path)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == fixed
    assert "Fixed 0 findings" in again.stderr
    diff = run_cli("--diff", "--unsafe-fixes", kind, cwd=tmp_path)
    assert diff.returncode == 0 and diff.stdout == "", diff.stdout


def test_after_files_are_fixed_points():
    """Linting the committed after files offers no fix any more (idempotence on all)."""
    afters = [str(a) for _, _, a in ALL_PAIRS]
    r = run_cli("--diff", "--unsafe-fixes", *afters)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ""


def test_unsafe_pairs_need_unsafe_fixes(tmp_path):
    folder = _copy("unsafe", tmp_path)
    original = {p.name: p.read_bytes() for p in folder.iterdir()}
    r = run_cli("--fix", "unsafe", cwd=tmp_path)
    assert r.returncode == 1
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == original
    n = len(re.findall(r"^unsafe/", r.stdout, re.M))
    assert f"Fixed 0 findings ({n} remaining); {n} more fixable with --unsafe-fixes." in r.stderr


# -- runtime pairs ----------------------------------------------------------------------
def _values(stdout: str, label: str) -> str:
    m = re.search(rf"^{label}: (.*)$", stdout, re.M)
    assert m, f"no {label!r} line in {stdout!r}"
    return m.group(1)


@pytest.mark.slow   # real jax and torch on 8 CPU devices
@pytest.mark.parametrize("before,after", pairs("runtime"), ids=lambda p: p.name)
def test_runtime_before_raises_after_runs_with_the_same_values(before, after, tmp_path):
    raises = re.search(r"^# raises: (.+)$", before.read_text(), re.M).group(1).strip()
    # the after file is what the fixer makes of the before file
    copy = tmp_path / before.name
    shutil.copyfile(before, copy)
    run_cli("--fix", "--unsafe-fixes", copy)
    assert copy.read_text() == after.read_text()
    bad = run_python(before)
    assert bad.returncode != 0, bad.stdout
    assert raises in bad.stderr, bad.stderr[-2000:]
    assert "result:" not in bad.stdout
    good = run_python(after)
    assert good.returncode == 0, good.stderr[-3000:]
    assert _values(good.stdout, "result") == _values(good.stdout, "expected")
    assert _values(good.stdout, "expected") == _values(bad.stdout, "expected")
