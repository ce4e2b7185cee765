"""``verify`` on findings reported away from the sink, the shim's ``memoryview(x)`` and the
no-hit advice (newuser report, sections A and B).

Real subprocesses of the CLI (``python -m jaxinterop_lint``), real jax on 8 forced CPU
devices, real torch.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_shim import read_lines, xla_env

pytestmark = pytest.mark.slow   # real jax and torch on 8 CPU devices

SHARDED = """\
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
"""

RELAY_PROJECT = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/tb.py": "import torch\n\n\ndef to_torch(a):\n    return torch.from_dlpack(a)\n",
    "pkg/relay.py": "from pkg.tb import to_torch\n\n\ndef bridge(v):\n    return to_torch(v)\n",
    "main_b.py": SHARDED + "from pkg.relay import bridge\n\n"
                 "S = NamedSharding(Mesh(np.array(jax.devices()), ('data',)), P('data'))\n"
                 "x = jax.device_put(jnp.ones((8, 4)), S)\nbridge(x)\n",
    "main_t.py": SHARDED + "from pkg.relay import bridge\n\n"
                 "S = NamedSharding(Mesh(np.array(jax.devices()), ('data',)), P('data'))\n"
                 "x = jax.device_put(jnp.ones((8, 4)), S)\ntry:\n    bridge(x)\nexcept BufferError:\n    pass\n",
}


def build(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def env(devices: bool = True) -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith("JAXINTEROP_SHIM")}
    if devices:
        out.update(xla_env())
    else:
        out.pop("XLA_FLAGS", None)
        out["JAX_PLATFORMS"] = "cpu"
    return out


def cli(cwd: Path, *args: str, devices: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxinterop_lint", *args], cwd=cwd, env=env(devices),
                          capture_output=True, text=True, timeout=600)


def record(cwd: Path, program: str, report: str = "h.jsonl", devices: bool = True) -> list:
    proc = cli(cwd, "run", "--mode", "record", "--report", report, "--", sys.executable, program, devices=devices)
    assert "hit(s) recorded" in proc.stderr, proc.stderr
    return read_lines(cwd / report)


def verify(cwd: Path, report: str, *paths: str) -> tuple[int, dict, str]:
    proc = cli(cwd, "verify", "--report", report, "--output-format", "json", *paths)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_a_hit_at_the_consumers_sink_confirms_the_finding_at_the_relays_call(tmp_path):
    root = build(tmp_path, RELAY_PROJECT)
    files = ["main_b.py", "pkg/relay.py", "pkg/tb.py"]
    check = cli(root, "--output-format", "json", "--no-cache", *files)
    assert [(f["path"], f["line"]) for f in json.loads(check.stdout)] == [("pkg/relay.py", 5)]
    hits = record(root, "main_b.py")
    assert [(Path(h["path"]).name, h["line"]) for h in hits] == [("tb.py", 5)]
    # the shim keeps the project frames of the hit: the sink, the relay's call, the caller's
    assert [(Path(p).name, line) for p, line in hits[0]["stack"]] == [("tb.py", 5), ("relay.py", 5), ("main_b.py", 9)]
    for paths in (files, []):   # given the files, or the files on the hits' stacks by default
        status, result, _ = verify(root, "h.jsonl", *paths)
        assert status == 0, result
        assert result["summary"] == {"confirmed": 1, "missed": 0, "handled": 0, "not_exercised": 0, "outside": 0,
                                     "silenced": 0}
        assert result["confirmed"][0]["path"] == "pkg/tb.py"   # relative to the cwd, as check prints


def test_a_handled_relay_call_is_handled_not_missed(tmp_path):
    root = build(tmp_path, RELAY_PROJECT)
    files = ["main_t.py", "pkg/relay.py", "pkg/tb.py"]
    assert json.loads(cli(root, "--output-format", "json", *files).stdout) == []
    assert len(record(root, "main_t.py")) == 1
    status, result, _ = verify(root, "h.jsonl", *files)
    assert status == 0
    assert [(h["path"], h["line"]) for h in result["handled"]] == [("pkg/tb.py", 5)]
    assert result["missed"] == []


def test_verify_lists_every_path_relative_to_the_cwd(tmp_path):
    files = dict(RELAY_PROJECT)
    # a second, unexercised finding: exported only when run with an argument
    files["main_b.py"] += "import sys\nif len(sys.argv) > 1:\n    import torch\n    torch.from_dlpack(x)\n"
    root = build(tmp_path, files)
    record(root, "main_b.py")
    proc = cli(root, "verify", "--report", "h.jsonl", "main_b.py", "pkg/relay.py", "pkg/tb.py")
    listed = [line.strip() for line in proc.stdout.splitlines() if line.startswith("  ")]
    assert listed and all(not item.startswith(("/", str(root))) for item in listed), proc.stdout
    assert any(item.startswith("main_b.py:13:") for item in listed), proc.stdout


def test_verify_static_run_is_checks(tmp_path):
    """verify's findings are check's: same configuration (pyproject.toml), same engine call."""
    files = dict(RELAY_PROJECT)
    files["pyproject.toml"] = "[tool.jaxinterop-lint]\nignore = ['JXI002']\n"
    root = build(tmp_path, files)
    record(root, "main_b.py")
    check = json.loads(cli(root, "--output-format", "json", "main_b.py", "pkg/relay.py", "pkg/tb.py").stdout)
    status, result, _ = verify(root, "h.jsonl", "main_b.py", "pkg/relay.py", "pkg/tb.py")
    assert check == [] and result["confirmed"] == [] and result["not_exercised"] == []
    assert status == 1 and [m["path"] for m in result["missed"]] == ["pkg/tb.py"]


def test_a_hit_whose_finding_a_noqa_silences_is_silenced_not_missed(tmp_path):
    """The analysis found the export and its author silenced it (``# noqa: JXI002``): verify
    lists the hit as silenced, with the finding's code, and exits 0 (a new user's report)."""
    files = dict(RELAY_PROJECT)
    files["pkg/relay.py"] = files["pkg/relay.py"].replace("to_torch(v)\n", "to_torch(v)  # noqa: JXI002\n")
    root = build(tmp_path, files)
    paths = ["main_b.py", "pkg/relay.py", "pkg/tb.py"]
    assert json.loads(cli(root, "--output-format", "json", "--no-cache", *paths).stdout) == []
    record(root, "main_b.py")
    status, result, _ = verify(root, "h.jsonl", *paths)
    assert status == 0, result
    assert result["missed"] == [] and result["confirmed"] == []
    assert [(s["path"], s["line"], s["findings"]) for s in result["silenced"]] == [("pkg/tb.py", 5, ["JXI002"])]
    text = cli(root, "verify", "--report", "h.jsonl", *paths)
    assert text.returncode == 0 and "silenced by noqa (1):" in text.stdout and "1 silenced" in text.stdout, text.stdout


MEMORYVIEW = SHARDED + """
S = NamedSharding(Mesh(np.array(jax.devices()), ("data",)), P("data"))
x = jax.device_put(jnp.ones((8, 4)), S)
assert isinstance(memoryview(b"ab"), memoryview) and memoryview(b"ab").tobytes() == b"ab"
assert len(memoryview(np.ones(3))) == 3
memoryview(x)
"""
BUFFER_MESSAGE = "INVALID_ARGUMENT: Python buffer protocol is only defined for buffers with a single shard."


def test_the_shim_sees_memoryview_and_verify_confirms_it(tmp_path):
    root = build(tmp_path, {"pyproject.toml": "", "main_m.py": MEMORYVIEW})
    check = json.loads(cli(root, "--output-format", "json", "main_m.py").stdout)
    assert [(f["code"], f["line"]) for f in check] == [("JXI003", 10)]
    hits = record(root, "main_m.py")
    assert [(h["code"], h["consumer"], h["line"], h["num_devices"]) for h in hits] == [("JXI003", "memoryview", 10, 8)]
    assert (hits[0]["exception"], hits[0]["message"]) == ("BufferError", BUFFER_MESSAGE)
    status, result, stderr = verify(root, "h.jsonl", "main_m.py")
    assert status == 0 and result["summary"]["confirmed"] == 1 and "no hit at all" not in stderr
    raised = cli(root, "run", "--mode", "raise", "--", sys.executable, "main_m.py")
    assert raised.returncode == 1 and f"BufferError: {BUFFER_MESSAGE}" in raised.stderr
    assert "jaxinterop shim: JXI003 memoryview" in raised.stderr


NOT_RUN = SHARDED + """import sys, torch
S = NamedSharding(Mesh(np.array(jax.devices()), ("data",)), P("data"))
x = jax.device_put(jnp.ones((8, 4)), S)
if len(sys.argv) > 1:
    torch.from_dlpack(x)
"""


@pytest.mark.parametrize("devices", [True, False], ids=["8-devices", "1-device"])
def test_no_hit_advice_only_when_the_run_had_one_device(tmp_path, devices):
    root = build(tmp_path, {"pyproject.toml": "", "main.py": NOT_RUN})
    assert record(root, "main.py", devices=devices) == []
    events = [json.loads(line) for line in (root / "h.jsonl").read_text().splitlines()]
    assert [e["device_count"] for e in events] == [8 if devices else 1]
    status, result, stderr = verify(root, "h.jsonl", "main.py")
    assert status == 0 and result["summary"]["not_exercised"] == 1
    assert ("no hit at all" in stderr) is (not devices), stderr


CHAIN = {
    "pyproject.toml": "",
    "interop/__init__.py": "",
    "interop/torch_bridge.py": "import torch\n\n\ndef to_torch(a):\n    return torch.from_dlpack(a)\n",
    "relay.py": "from interop.torch_bridge import to_torch\n\n\ndef bridge(v):\n    return to_torch(v)\n",
    "relay2.py": "from relay import bridge\n\n\ndef bridge2(w):\n    return bridge(w)\n",
    "cases_h.py": SHARDED + "from relay2 import bridge2\n\n"
                  "S = NamedSharding(Mesh(np.array(jax.devices()), ('data',)), P('data'))\n\n\n"
                  "def case_chain():\n    return bridge2(jax.device_put(jnp.ones((8, 4)), S))\n",
}


def test_a_chain_of_two_relay_modules_is_not_followed(tmp_path):
    """README "Whole projects and the cache": cases_h -> relay2.bridge2 -> relay.bridge ->
    interop/torch_bridge.to_torch fails at run time (tests/runtime_probe.py) but gives no
    finding, with every file reported or only the caller: relay2 takes no name from a module
    naming a consumer (Demand.relays, one import step), and a parameter handed to a gated
    helper opens it on demand only one call deep from a known multi-device value."""
    root = build(tmp_path, CHAIN)
    probe = subprocess.run([sys.executable, str(Path(__file__).with_name("runtime_probe.py")), "cases_h.py", str(root)],
                           cwd=root, env=env(), capture_output=True, text=True, timeout=600)
    assert "BufferError" in json.loads(probe.stdout)["case_chain"]["classes"]
    for paths in (["cases_h.py", "relay2.py", "relay.py", "interop/torch_bridge.py"], ["cases_h.py"], ["."]):
        assert json.loads(cli(root, "--output-format", "json", "--no-cache", *paths).stdout) == [], paths
    # one relay module before the consumer's is followed: reported at the relay's call
    (root / "cases_1.py").write_text(CHAIN["cases_h.py"].replace("from relay2 import bridge2",
                                                                 "from relay import bridge as bridge2"))
    one = json.loads(cli(root, "--output-format", "json", "--no-cache", "cases_1.py", "relay.py",
                         "interop/torch_bridge.py").stdout)
    assert [(f["path"], f["line"]) for f in one] == [("relay.py", 5)]
