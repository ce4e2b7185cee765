"""Writing the user's files (issue 13, "Writing files"): ``--fix`` and ``--add-noqa`` share
one writer (``jaxinterop_lint/fix/writer.py``) that keeps owner and group, refuses what the
user cannot write and symlinks out of the tree, never loses an edit saved at the worst moment,
and leaves no temporary file behind a signal or a full disk.  Also: the JXI004 and device_put
fixes never use a name that is local where they are written, and file names with control
characters are printed escaped in every format.
"""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.fix import writer

REMOVED = "import jax\n\n\ndef first(arr: jax.Array):\n    return arr.device_buffer  # the old API\n"
REMOVED_FIXED = REMOVED.replace("arr.device_buffer ", "arr.addressable_data(0) ")
FINDING = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
           "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")


def leftovers(folder: Path) -> list:
    """Names in ``folder`` that look like a writer's temporary file (this version's or 0.1.0's)."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".jxitmp", ".jxifix")))


def drop_dac_override():
    """preexec_fn: as root, drop the capabilities that let root write and read any file
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) from the bounding set: file modes then apply."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def run_script(script: str, cwd: Path, preexec_fn=None):
    """Run a Python snippet (it patches the writer, then calls the CLI) in a subprocess."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, preexec_fn=preexec_fn)


# -- owner, group, permission ----------------------------------------------------------------
@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_fix_keeps_owner_and_group(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    os.chown(path, 65534, 65534)  # nobody / nogroup
    os.chmod(path, 0o664)
    r = run_cli("--fix", "m.py", cwd=tmp_path)
    assert path.read_text() == REMOVED_FIXED, r.stderr
    st = os.stat(path)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o664)
    assert leftovers(tmp_path) == []


def test_fix_and_add_noqa_refuse_a_file_the_user_cannot_write(tmp_path):
    """A read-only file in a writable folder: a rename would replace it, but the user may not
    write it.  (As root, run without the capability that overrides file modes.)"""
    for name, text in (("ro.py", REMOVED), ("ro_noqa.py", FINDING)):
        (tmp_path / name).write_text(text)
        os.chmod(tmp_path / name, 0o444)
    preexec = drop_dac_override if os.geteuid() == 0 else None
    for args, name in ((("--fix",), "ro.py"), (("--add-noqa",), "ro_noqa.py")):
        before = (tmp_path / name).read_bytes()
        r = subprocess.run([sys.executable, "-m", "jaxinterop_lint", "--no-cache", *args, name], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300, preexec_fn=preexec)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "not writable by you" in r.stderr, r.stderr
        assert (tmp_path / name).read_bytes() == before
    assert leftovers(tmp_path) == []


# -- --add-noqa writes as --fix does ---------------------------------------------------------
def test_add_noqa_never_writes_through_a_symlink_out_of_the_tree(tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (tree / "pyproject.toml").write_text("")
    (outside / "real.py").write_text(FINDING)
    (tree / "link.py").symlink_to(outside / "real.py")
    (tree / "own.py").write_text(FINDING)
    os.chmod(tree / "own.py", 0o640)
    inode = os.stat(tree / "own.py").st_ino
    r = run_cli("--no-cache", "--add-noqa", ".", cwd=tree)
    assert (outside / "real.py").read_text() == FINDING
    assert r.returncode == 2 and "link.py" in r.stderr and "symlink out of the linted folders" in r.stderr, r.stderr
    own = (tree / "own.py").read_text()
    assert own == FINDING.replace("torch.from_dlpack(y)\n", "torch.from_dlpack(y)  # noqa: JXI002\n")
    st = os.stat(tree / "own.py")
    assert st.st_ino != inode and stat.S_IMODE(st.st_mode) == 0o640  # replaced, not rewritten in place
    assert leftovers(tree) == []


# -- an edit saved at the worst moment is not lost ---------------------------------------------
EDITED = REMOVED + "# saved by the editor\n"


def edit_in_place(path: Path) -> None:
    with open(path, "r+") as fh:  # same inode, as vim with backupcopy=yes or nano save
        fh.write(EDITED)


def edit_by_rename(path: Path) -> None:
    other = path.with_name(".editor-swap")  # a new file renamed over the old, as most editors
    other.write_text(EDITED)
    os.replace(other, path)


@pytest.mark.parametrize("save", [edit_in_place, edit_by_rename])
def test_an_edit_saved_after_the_temporary_file_is_written_is_kept(tmp_path, monkeypatch, save):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    real_fsync = os.fsync
    done = []

    def fsync(fd):
        real_fsync(fd)
        if not done:
            done.append(1)
            save(path)

    monkeypatch.setattr(os, "fsync", fsync)
    from jaxinterop_lint import cli

    assert cli.main(["--no-cache", "--fix", str(path)]) == 2
    assert done and path.read_text() == EDITED
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("save", [edit_in_place, edit_by_rename])
def test_an_edit_saved_between_the_last_check_and_the_rename_is_kept(tmp_path, monkeypatch, save, capsys):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    monkeypatch.setattr(writer, "_before_swap", lambda: save(path))
    from jaxinterop_lint import cli

    assert cli.main(["--no-cache", "--fix", str(path)]) == 2
    assert path.read_text() == EDITED
    assert "changed on disk" in capsys.readouterr().err
    assert leftovers(tmp_path) == []


def test_without_exchange_an_in_place_edit_is_still_kept(tmp_path, monkeypatch):
    """Where names cannot be exchanged (not Linux, a file system without RENAME_EXCHANGE)."""
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    monkeypatch.setattr(writer, "_exchange", lambda a, b: False)
    real_replace = os.replace

    def replace(src, dst):
        if str(dst) == str(path):
            edit_in_place(path)  # lands in the old inode right before the rename
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    from jaxinterop_lint import cli

    assert cli.main(["--no-cache", "--fix", str(path)]) == 2
    assert path.read_text() == EDITED
    assert leftovers(tmp_path) == []


def test_without_exchange_a_plain_fix_is_written(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    monkeypatch.setattr(writer, "_exchange", lambda a, b: False)
    from jaxinterop_lint import cli

    assert cli.main(["--no-cache", "--fix", str(path)]) == 0
    assert path.read_text() == REMOVED_FIXED and leftovers(tmp_path) == []


# -- signals and a full disk -------------------------------------------------------------------
KILL_AT_FSYNC = """
import os, signal, sys
# the signal sent acts as by default, even where the test runner inherited it ignored (nohup, `&`)
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
real_fsync = os.fsync
def fsync(fd):
    real_fsync(fd)
    os.kill(os.getpid(), signal.{sig})
os.fsync = fsync
from jaxinterop_lint import cli
sys.exit(cli.main(["--no-cache", "--fix", "m.py"]))
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_no_temporary_file_is_left_after_a_signal(tmp_path, sig):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    r = run_script(KILL_AT_FSYNC.format(sig=sig), tmp_path)
    assert r.returncode in (-getattr(signal, sig), 130), (r.returncode, r.stderr)
    assert leftovers(tmp_path) == []
    assert path.read_text() in (REMOVED, REMOVED_FIXED)  # the file is whole either way


def test_a_temporary_file_left_by_sigkill_is_removed_by_the_next_run(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(REMOVED)
    r = run_script(KILL_AT_FSYNC.format(sig="SIGKILL"), tmp_path)
    assert r.returncode == -signal.SIGKILL
    assert len(leftovers(tmp_path)) == 1 and path.read_text() == REMOVED
    r = run_cli("--no-cache", "--fix", "m.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert leftovers(tmp_path) == [] and path.read_text() == REMOVED_FIXED


def test_a_temporary_file_of_a_live_writer_is_left_alone(tmp_path):
    mine = tmp_path / f".m.py.{os.getppid()}.0123456789abcdef.jxitmp"  # a live process: pytest's parent
    mine.write_text("being written")
    (tmp_path / "m.py").write_text(REMOVED)
    run_cli("--no-cache", "--fix", "m.py", cwd=tmp_path)
    assert mine.exists()


def test_a_full_disk_leaves_no_temporary_file(tmp_path):
    """A real write failure: the file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes the
    temporary file's write fail with EFBIG, as a full disk fails it with ENOSPC."""
    path = tmp_path / "m.py"
    path.write_text(REMOVED + "# " + "x" * 4000 + "\n")
    before = path.read_bytes()
    script = """
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
        from jaxinterop_lint import cli
        sys.exit(cli.main(["--no-cache", "--fix", "m.py"]))
        """
    r = run_script(script, tmp_path)
    assert r.returncode == 2 and "cannot write: File too large" in r.stderr, r.stderr
    assert path.read_bytes() == before and leftovers(tmp_path) == []


# -- the fixes never use a local name ----------------------------------------------------------
LOCAL_NAMES = {
    # the name the fix would use is local where it writes it: another free name, or no fix
    "numpy local in the callback": ("""
        import numpy as np
        from jax.experimental.buffer_callback import buffer_callback
        def cb(ctx, out, x):
            np = make_something()
            return x.__array__(copy=True)
        f = buffer_callback(cb, spec)
        """, "numpy.from_dlpack(x).copy()"),
    "np a parameter": ("""
        import numpy as np
        from jax.experimental.buffer_callback import buffer_callback
        def cb(ctx, out, x, np=None):
            return x.__array__(copy=True)
        f = buffer_callback(cb, spec)
        """, "numpy.from_dlpack(x).copy()"),
    "np and numpy both local": ("""
        from jax.experimental.buffer_callback import buffer_callback
        def cb(ctx, out, x):
            np, numpy = 1, 2
            return x.__array__(copy=True)
        f = buffer_callback(cb, spec)
        """, None),
    "np a comprehension variable": ("""
        import numpy as np
        from jax.experimental.buffer_callback import buffer_callback
        def cb(ctx, out, x):
            return [x.__array__(copy=True) for np in range(2)]
        f = buffer_callback(cb, spec)
        """, "numpy.from_dlpack(x).copy()"),
    "jax a parameter of an inner function": ("""
        import jax, torch
        from jax.sharding import NamedSharding, PartitionSpec as P
        def f(x, m):
            y = jax.device_put(x, NamedSharding(m, P('x')))
            def g(jax):
                return torch.from_dlpack(y)
            return g
        """, None),
    "np local elsewhere only": ("""
        import numpy as np
        from jax.experimental.buffer_callback import buffer_callback
        def other():
            np = 1
        def cb(ctx, out, x):
            return x.__array__(copy=True)
        f = buffer_callback(cb, spec)
        """, "np.from_dlpack(x).copy()"),
}


@pytest.mark.parametrize("name", sorted(LOCAL_NAMES))
def test_fixes_never_use_a_name_that_is_local_there(name):
    text, expected = LOCAL_NAMES[name]
    (f,) = lint_source(textwrap.dedent(text), "cb.py", Config()).findings
    got = f.fix.edits[0].text if f.fix is not None else None
    assert got == expected


# -- file names are printed escaped --------------------------------------------------------------
HOSTILE_NAMES = {
    "newline": ("a\nx.py:1:1: JXI002 forged.py", '"a\\nx.py:1:1: JXI002 forged.py"'),
    "escape sequence": ("b\x1b[2J\x1b[31m.py", '"b\\x1b[2J\\x1b[31m.py"'),
    "carriage return": ("c\rd.py", '"c\\rd.py"'),
    "bidi override": ("e\u202eyp.py", '"e\\u202eyp.py"'),
}


@pytest.fixture
def hostile_tree(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    for name, _ in HOSTILE_NAMES.values():
        (tmp_path / name).write_text(FINDING)
    os.mkdir(tmp_path / "bytes")
    (tmp_path / "bytes" / os.fsdecode(b"f\xff.py")).write_text(FINDING)
    return tmp_path


def test_every_format_prints_hostile_file_names_escaped(hostile_tree):
    expected = {shown for _, shown in HOSTILE_NAMES.values()} | {'"bytes/f\\xff.py"'}
    for fmt in ("concise", "full"):
        r = run_cli("--no-cache", "--output-format", fmt, "--color", "never", ".", cwd=hostile_tree)
        assert r.returncode == 1, r.stderr
        assert "\x1b" not in r.stdout and "\r" not in r.stdout and "\u202e" not in r.stdout
        heads = {line.split(":4:5: JXI002")[0].removeprefix("./") for line in r.stdout.splitlines()
                 if ":4:5: JXI002" in line}
        heads = {h if not h.startswith('"./') else '"' + h[3:] for h in heads}
        assert heads == expected, r.stdout
        if fmt == "concise":  # one line a finding: no name forged a line of its own
            assert len(r.stdout.splitlines()) == 5, r.stdout
    r = run_cli("--no-cache", "--output-format", "github", ".", cwd=hostile_tree)
    lines = r.stdout.splitlines()
    assert len(lines) == 5 and all(line.startswith("::error file=") for line in lines), r.stdout
    assert "\x1b" not in r.stdout and "\u202e" not in r.stdout
    r = run_cli("--no-cache", "--output-format", "json", ".", cwd=hostile_tree)
    paths = {os.path.normpath(f["path"]) for f in json.loads(r.stdout)}
    assert paths == {os.path.normpath(n) for n, _ in HOSTILE_NAMES.values()} | {os.fsdecode(b"bytes/f\xff.py")}
    r = run_cli("--no-cache", "--output-format", "sarif", ".", cwd=hostile_tree)
    uris = {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for res in json.loads(r.stdout)["runs"][0]["results"]}
    assert "a%0Ax.py%3A1%3A1%3A%20JXI002%20forged.py" in uris and "bytes/f%FF.py" in uris, uris
    assert all(ch not in uri for uri in uris for ch in " \n\r\x1b\u202e")


def test_error_lines_and_diffs_print_hostile_names_escaped(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "bad\nname.py").write_bytes(b"# coding: undefined\nimport torch\n")
    (tmp_path / "fix\x1bme.py").write_text(REMOVED)
    r = run_cli("--no-cache", "--diff", ".", cwd=tmp_path)
    assert "\x1b" not in r.stdout + r.stderr
    assert '"bad\\nname.py":1:1: error: cannot decode' in r.stderr.replace('"./', '"'), r.stderr
    assert '--- a/"fix\\x1bme.py"' in r.stdout and '+++ b/"fix\\x1bme.py"' in r.stdout, r.stdout
