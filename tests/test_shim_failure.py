"""The runtime shim under failure (issue 9): a job killed mid-run leaves a readable report,
two processes appending to one report never interleave lines, and a report that cannot be
written is an error at ``install()`` (or, when the disk fills up later, a warning, never an
exception in the user's call).

Forked children writing their own files, and a missing folder or a folder as the report
path, are in ``tests/test_shim.py``; this module does not repeat them.  Every JAX-using check
runs in a subprocess with 8 forced CPU devices.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from test_shim import HAMMER, xla_env

pytestmark = pytest.mark.slow   # real jax and torch on 8 CPU devices (the quick tier leaves it out)

PRELUDE = """
import json, os, sys, threading
import jax, jax.numpy as jnp, torch
from jax.sharding import NamedSharding, PartitionSpec as P
from jaxinterop_lint import shim
mesh = jax.make_mesh((8,), ("d",))
y = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("d")))

""" + HAMMER


def _script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(body))
    return path


def whole_json_lines(path) -> list:
    """Every line of the report, each asserted to be a whole JSON object; the file ends with
    a newline (no half-written last line)."""
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), data[-200:]
    hits = []
    for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
        hit = json.loads(line)
        assert isinstance(hit, dict) and hit["consumer"] == "torch.from_dlpack", (number, line)
        hits.append(hit)
    return hits


def test_a_job_killed_mid_run_leaves_a_readable_report(tmp_path):
    """SIGKILL while 8 threads record: every line written is a whole JSON object."""
    script = _script(tmp_path, "forever.py", """
        shim.install("record", "hits.jsonl")
        print("ready", flush=True)
        while True:
            threaded(8, 50)
    """)
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=xla_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    report = tmp_path / "hits.jsonl"
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            # wait for lines, not bytes: a line's size depends on the stack and the
            # folder's path it records (about 700 B in CI's clone, 280 lines in 200 KB)
            if report.exists() and report.read_bytes().count(b"\n") > 600:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    hits = whole_json_lines(report)
    assert len(hits) > 300 and {h["pid"] for h in hits} == {proc.pid}


def test_two_processes_given_one_report_never_interleave(tmp_path):
    """Two independent processes (not forked from one another) installed with the same
    report path: while both record, each writes a file of its own (the second ``PATH.<pid>``,
    see tests/test_shim_trust.py); every line whole, every hit there."""
    script = _script(tmp_path, "writer.py", """
        shim.install("record", sys.argv[1])
        threaded(4, 150)
        print(json.dumps({"pid": os.getpid(), "hits": shim.hit_count()}))
    """)
    report = tmp_path / "shared.jsonl"
    procs = [subprocess.Popen([sys.executable, str(script), str(report)], cwd=tmp_path, env=xla_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    files = sorted(tmp_path.glob("shared.jsonl*"))
    hits = [h for f in files for h in whole_json_lines(f)]
    assert len(hits) == sum(o["hits"] for o in outs) == 1200
    assert {h["pid"] for h in hits} == {o["pid"] for o in outs}


@pytest.mark.parametrize("where", ["under-a-file", "a-folder", "missing-folder"])
def test_an_unwritable_report_path_is_an_error_at_install(tmp_path, where):
    """The error comes from install(), names the path, and nothing is patched."""
    (tmp_path / "plain.txt").write_text("x")
    bad = {"under-a-file": tmp_path / "plain.txt" / "hits.jsonl", "a-folder": tmp_path,
           "missing-folder": tmp_path / "no" / "hits.jsonl"}[where]
    code = f"""
        import json, sys
        import numpy as np
        from jaxinterop_lint import shim
        before = np.from_dlpack
        try:
            shim.install("record", {str(bad)!r})
        except shim.ShimReportError as exc:
            print(json.dumps({{"error": str(exc), "installed": shim.is_installed(),
                              "patched": np.from_dlpack is not before}}))
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, env=xla_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert str(bad) in out["error"] and "cannot write the report file" in out["error"]
    assert out["error"].count("\n") == 0
    assert out["installed"] is False and out["patched"] is False


def test_a_report_that_fails_at_a_hit_never_breaks_the_users_call(tmp_path):
    """/dev/full opens fine and fails at the first write: the user's call raises what it
    raises without the shim (BufferError), one warning says the report stopped, and the
    program goes on."""
    script = _script(tmp_path, "full.py", """
        shim.install("record", "/dev/full")
        caught = []
        for _ in range(3):
            try:
                torch.from_dlpack(y)
            except Exception as exc:
                caught.append(type(exc).__name__)
        print(json.dumps({"caught": caught, "hits": shim.hit_count()}))
    """)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=xla_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"caught": ["BufferError"] * 3, "hits": 3}
    warnings = [ln for ln in proc.stderr.splitlines() if "jaxinterop shim" in ln]
    assert len(warnings) == 1 and "/dev/full" in warnings[0] and "records nothing more" in warnings[0]
    assert "Traceback" not in proc.stderr
