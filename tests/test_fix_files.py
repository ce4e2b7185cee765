"""Fixing files on disk (issue 4): bytes outside the edits are preserved (CRLF, BOM, encoding
cookie, tabs, comments), writes are atomic and careful, and every Python file of
``examples/`` and ``fixtures/`` survives ``--fix --unsafe-fixes``."""
from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import libcst as cst

from conftest import copy_tree, ROOT, run_cli
from jaxinterop_lint import cli
from jaxinterop_lint.config import Config
from jaxinterop_lint.finding import Edit, Fix
from jaxinterop_lint.fix import files as fix_files
from jaxinterop_lint.rules import remedies

REMOVED = (
    "import jax\n"
    "\n"
    "\n"
    "def first(arr: jax.Array):\n"
    "\t# tabs, comments and 'quotes' stay\n"
    "\treturn arr.device_buffer  # the old API\n"
)
REMOVED_FIXED = REMOVED.replace("arr.device_buffer ", "arr.addressable_data(0) ")

FFI = (
    '"""Needs numpy."""\n'
    "import torch\n"
    "from jax.experimental.buffer_callback import buffer_callback\n"
    "\n"
    "\n"
    "def cb(ctx, out, x):\n"
    "    return x.__array__(copy=True)\n"
    "\n"
    "\n"
    "f = buffer_callback(cb, spec)\n"
)


def _fix(tmp_path: Path, name: str, data: bytes, *args) -> tuple:
    path = tmp_path / name
    path.write_bytes(data)
    r = run_cli("--fix", *args, name, cwd=tmp_path)
    return r, path.read_bytes()


# -- preservation ---------------------------------------------------------------------------
def test_lf_and_tabs_and_comments(tmp_path):
    r, out = _fix(tmp_path, "m.py", REMOVED.encode())
    assert out == REMOVED_FIXED.encode(), r.stderr
    assert "Fixed 1 finding (0 remaining)." in r.stderr


def test_crlf_is_kept(tmp_path):
    r, out = _fix(tmp_path, "m.py", REMOVED.replace("\n", "\r\n").encode())
    assert out == REMOVED_FIXED.replace("\n", "\r\n").encode(), r.stderr


def test_crlf_in_an_added_import(tmp_path):
    r, out = _fix(tmp_path, "m.py", FFI.replace("\n", "\r\n").encode())
    text = out.decode()
    assert "import numpy as np\r\n" in text and "np.from_dlpack(x).copy()\r\n" in text, r.stderr
    assert "\n" not in text.replace("\r\n", "")


def test_bom_is_kept(tmp_path):
    r, out = _fix(tmp_path, "m.py", b"\xef\xbb\xbf" + REMOVED.encode())
    assert out == b"\xef\xbb\xbf" + REMOVED_FIXED.encode(), r.stderr


def test_latin1_cookie_is_kept(tmp_path):
    head = "# -*- coding: latin-1 -*-\n# caf\u00e9 cr\u00e8me\n"
    r, out = _fix(tmp_path, "m.py", (head + REMOVED).encode("latin-1"))
    assert out == (head + REMOVED_FIXED).encode("latin-1"), r.stderr
    assert b"caf\xe9" in out


def test_no_newline_at_end_and_mixed_endings(tmp_path):
    data = REMOVED.replace("\n", "\r\n", 2).rstrip("\n").encode()
    r, out = _fix(tmp_path, "m.py", data)
    assert out == REMOVED_FIXED.replace("\n", "\r\n", 2).rstrip("\n").encode(), r.stderr


def test_multiline_handler_keeps_layout_and_comments(tmp_path):
    src = (
        "import jax\n"
        "import torch\n"
        "from jax.sharding import NamedSharding, PartitionSpec as P\n"
        "\n"
        "def f(x, mesh):\n"
        "    y = jax.device_put(x, NamedSharding(mesh, P('x')))\n"
        "    try:\n"
        "        return torch.from_dlpack(y)\n"
        "    except (\n"
        "        ValueError,  # one\n"
        "        TypeError,\n"
        "    ) as exc:  # after\n"
        "        return None\n"
    )
    r, out = _fix(tmp_path, "m.py", src.encode())
    assert out.decode() == src.replace("        TypeError,\n", "        TypeError,\n        BufferError,\n"), r.stderr


# -- safety ---------------------------------------------------------------------------------
def test_diff_writes_nothing_and_exits_1(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    r = run_cli("--diff", "m.py", cwd=tmp_path)
    assert r.returncode == 1
    assert path.read_text() == REMOVED
    assert "-\treturn arr.device_buffer  # the old API\n+\treturn arr.addressable_data(0)  # the old API\n" in r.stdout
    assert r.stdout.startswith("--- a/m.py\n+++ b/m.py\n")


def test_fix_only_reports_no_findings(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(REMOVED + "y = jax.device_put_replicated(x, jax.devices())\n")
    r = run_cli("--fix-only", "m.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert "Fixed 1 finding (1 remaining)." in r.stderr
    assert "addressable_data(0)" in path.read_text()


def test_permissions_kept_and_no_temporary_files_left(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    os.chmod(path, 0o640)
    run_cli("--fix", "m.py", cwd=tmp_path)
    assert path.read_text() == REMOVED_FIXED
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_only_the_files_asked_for_are_written(tmp_path):
    (tmp_path / "a.py").write_text(REMOVED)
    (tmp_path / "b.py").write_text(REMOVED)
    run_cli("--fix", "a.py", cwd=tmp_path)
    assert (tmp_path / "a.py").read_text() == REMOVED_FIXED
    assert (tmp_path / "b.py").read_text() == REMOVED


def test_symlink_out_of_the_tree_is_not_followed(tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (outside / "real.py").write_text(REMOVED)
    (tree / "link.py").symlink_to(outside / "real.py")
    (tree / "inner.py").write_text(REMOVED)
    (tree / "alias.py").symlink_to(tree / "inner.py")
    r = run_cli("--fix", "tree", cwd=tmp_path)
    assert (outside / "real.py").read_text() == REMOVED
    assert "link.py" in r.stderr and "symlink out of the linted folders" in r.stderr
    assert r.returncode == 2
    # a link inside the tree: the target is fixed once, the link stays a link
    assert (tree / "inner.py").read_text() == REMOVED_FIXED
    assert (tree / "alias.py").is_symlink()


def test_file_changed_on_disk_is_not_overwritten(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    real_fix_text = fix_files.fix_text

    def racing(text, *args, **kwargs):
        outcome = real_fix_text(text, *args, **kwargs)
        path.write_text(REMOVED + "# edited meanwhile\n")
        return outcome

    monkeypatch.setattr(fix_files, "fix_text", racing)
    status = cli.main(["--fix", str(path)])
    assert status == 2
    assert path.read_text() == REMOVED + "# edited meanwhile\n"
    assert "changed on disk" in capsys.readouterr().err


def test_fix_that_breaks_the_code_leaves_the_file_untouched(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    bad = Fix("broken", "safe", (Edit(6, 8, 6, 24, "arr.(("),))
    monkeypatch.setattr(remedies, "removed_api", lambda *a, **k: bad)
    status = cli.main(["--fix", str(path)])
    assert status == 2
    assert path.read_text() == REMOVED
    err = capsys.readouterr().err
    assert "m.py" in err and "does not parse" in err


def test_fixes_that_never_converge_are_not_written(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    # an edit that keeps the finding: the fixer must stop, not loop
    grow = Fix("grow", "safe", (Edit(6, 8, 6, 8, "0 or "),))
    monkeypatch.setattr(remedies, "removed_api", lambda *a, **k: grow)
    assert cli.main(["--fix", str(path)]) == 2
    assert path.read_text() == REMOVED
    assert "did not converge" in capsys.readouterr().err


def test_encoding_that_cannot_hold_the_fix_is_refused(tmp_path):
    """Imports and names are ASCII, but a source in a strange codec still round-trips."""
    head = "# -*- coding: cp1252 -*-\n# \u20ac\n"
    path = tmp_path / "m.py"
    path.write_bytes((head + REMOVED).encode("cp1252"))
    result = fix_files.fix_file(str(path), Config(), roots=fix_files.allowed_roots([str(tmp_path)]))
    assert result.error is None and result.written
    assert path.read_bytes() == (head + REMOVED_FIXED).encode("cp1252")


# -- every example and fixture ------------------------------------------------------------
def _tree_bytes(folder: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*.py"))}


def _parses(data: bytes) -> bool:
    try:
        cst.parse_module(data)
        ast.parse(data)
        return True
    except Exception:  # noqa: BLE001 - any parser failure counts
        return False


def test_fix_every_example_and_fixture(tmp_path):
    for name in ("examples", "fixtures"):
        copy_tree(ROOT / name, tmp_path / name, symlinks=True)
    before = _tree_bytes(tmp_path)
    assert len(before) > 20, "examples/ and fixtures/ look empty"
    listing = run_cli("--output-format", "json", "--unsafe-fixes", "examples", "fixtures", cwd=tmp_path)
    import json

    fixable = {(tmp_path / f["path"]).resolve() for f in json.loads(listing.stdout) if f["fix"] is not None}
    assert fixable, "no fixable finding in examples/ and fixtures/"
    run_cli("--fix", "--unsafe-fixes", "examples", "fixtures", cwd=tmp_path)
    after = _tree_bytes(tmp_path)
    assert set(after) == set(before)
    changed = {p.resolve() for p in after if after[p] != before[p]}
    assert changed, "nothing was fixed"
    assert changed <= fixable, f"files without fixable findings changed: {sorted(changed - fixable)}"
    for p in after:
        if p.resolve() in changed:
            assert _parses(after[p]), f"{p} does not parse after --fix"
    second = run_cli("--fix", "--unsafe-fixes", "examples", "fixtures", cwd=tmp_path)
    assert _tree_bytes(tmp_path) == after, "a second --fix run changed files"
    assert "Fixed 0 findings" in second.stderr


def test_whole_project_findings_are_fixed_like_they_are_reported(tmp_path):
    """A finding through another module (a project function exporting its parameter) is
    fixed in --fix mode as the plain run reports it, and the re-lint sees the fixed text."""
    copy_tree(ROOT / "fixtures" / "project", tmp_path / "project")
    plain = run_cli(".", cwd=tmp_path / "project")
    reported = plain.stdout.count(": JXI")
    assert "torch_bridge.py:8" in plain.stdout and "pipeline.py:19:12" not in plain.stdout and reported
    r = run_cli("--fix", "--unsafe-fixes", ".", cwd=tmp_path / "project")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Fixed {reported} finding{'s' if reported != 1 else ''} (0 remaining)." in r.stderr
    # reported at the sink inside to_torch() (PLAN decision 1), so fixed there
    bridge = (tmp_path / "project" / "src" / "shardproj" / "export" / "torch_bridge.py").read_text()
    assert "torch.from_dlpack(jax.device_put(a, jax.local_devices()[0]))" in bridge
    assert "return to_torch(out)\n" in (tmp_path / "project" / "src" / "shardproj" / "pipeline.py").read_text()
    assert "Fixed 0 findings (0 remaining)." in run_cli("--fix", "--unsafe-fixes", ".", cwd=tmp_path / "project").stderr
