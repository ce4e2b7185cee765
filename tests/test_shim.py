"""The runtime shim against real JAX (8 forced CPU devices), torch and numpy.

Every JAX-using check runs in a fresh subprocess with
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` so that patching and the device count
never leak into the pytest process.  Raise mode is compared with live unpatched calls made in
the same subprocess before the shim is installed.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow   # real jax and torch on 8 CPU devices (the quick tier leaves it out)

REPO = Path(__file__).resolve().parents[1]


def xla_env(extra: dict | None = None) -> dict:
    """Environment for a JAX subprocess: 8 CPU devices, the repo importable, no shim variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXINTEROP_")}
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


def run_script(tmp_path: Path, source: str, name: str = "prog.py", env: dict | None = None,
               expect_rc: int | None = 0, args: tuple = ()) -> tuple[subprocess.CompletedProcess, Path]:
    """Write ``source`` to ``tmp_path/name`` and run it with ``xla_env``; return (process, path)."""
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    proc = subprocess.run([sys.executable, str(script), *args], cwd=tmp_path, env=env or xla_env(),
                          capture_output=True, text=True, timeout=600)
    if expect_rc is not None:
        assert proc.returncode == expect_rc, proc.stdout + proc.stderr
    return proc, script


def last_json(proc: subprocess.CompletedProcess):
    """The JSON document printed on the last line of stdout."""
    return json.loads(proc.stdout.strip().splitlines()[-1])


def read_lines(path: Path) -> list[dict]:
    """The hit records of a report file (a process's exit record, ``"event": "process"``, left out)."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [line for line in lines if line.get("event") != "process"]


PRELUDE = """
import inspect, json, sys
import jax, jax.numpy as jnp, numpy as np, torch, torch.utils.dlpack, jax.dlpack
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((8,), ("d",))
ARRAYS = {
    "sharded": jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("d"))),
    "replicated": jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P())),
    "scalar": jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("d"))).sum(),
}

def outcome(fn, x):
    try:
        fn(x)
    except Exception as e:
        return {"type": type(e).__module__ + "." + type(e).__qualname__, "msg": str(e),
                "code": getattr(e, "jaxinterop_code", None), "site": getattr(e, "jaxinterop_site", None)}
    return None
"""

# call name -> (source of a one-line lambda, expected rule code, knowledge path)
CALLS = {
    "torch.from_dlpack": ("lambda x: torch.from_dlpack(x)", "JXI002", "dlpack_device"),
    "torch.utils.dlpack.from_dlpack": ("lambda x: torch.utils.dlpack.from_dlpack(x)", "JXI002", "dlpack_device"),
    "torch.as_tensor": ("lambda x: torch.as_tensor(x)", "JXI002", "dlpack_device"),
    "torch.tensor": ("lambda x: torch.tensor(x)", "JXI002", "dlpack_device"),
    "torch.asarray": ("lambda x: torch.asarray(x)", "JXI003", "torch_buffer"),
    "torch.frombuffer": ("lambda x: torch.frombuffer(x, dtype=torch.float32)", "JXI003", "torch_buffer"),
    "numpy.from_dlpack": ("lambda x: np.from_dlpack(x)", "JXI002", "dlpack"),
    "jax.dlpack.from_dlpack": ("lambda x: jax.dlpack.from_dlpack(x)", "JXI002", "dlpack_device"),
    "jax.numpy.from_dlpack": ("lambda x: jnp.from_dlpack(x)", "JXI002", "dlpack_device"),
    "x.__dlpack__()": ("lambda x: x.__dlpack__()", "JXI002", "dlpack"),
    "x.__dlpack__(copy=True)": ("lambda x: x.__dlpack__(copy=True)", "JXI002", "dlpack"),
    "x.__dlpack_device__()": ("lambda x: x.__dlpack_device__()", "JXI002", "dlpack_device"),
    "x.unsafe_buffer_pointer()": ("lambda x: x.unsafe_buffer_pointer()", "JXI003", "unsafe_buffer_pointer"),
    "x.__cuda_array_interface__": ("lambda x: x.__cuda_array_interface__", "JXI001", "cuda_array_interface"),
}
KINDS = ("sharded", "replicated", "scalar")

RAISE_SCRIPT = PRELUDE + """
from jaxinterop_lint.knowledge import messages
CALLS = {
%s
}
before = {c: {k: outcome(f, x) for k, x in ARRAYS.items()} for c, f in CALLS.items()}
from jaxinterop_lint import shim
shim.install("raise")
after = {c: {k: outcome(f, x) for k, x in ARRAYS.items()} for c, f in CALLS.items()}
lines = {c: f.__code__.co_firstlineno for c, f in CALLS.items()}
shim.uninstall()
table = {p: messages.format_message(p, 8, jax.__version__) for p in messages.HISTORY}
print(json.dumps({"before": before, "after": after, "lines": lines, "table": table, "file": __file__}))
"""


@pytest.fixture(scope="module")
def raise_results(tmp_path_factory):
    """One subprocess: every call on every multi-device array, unpatched then in raise mode."""
    body = "\n".join(f"    {name!r}: {src}," for name, (src, _, _) in CALLS.items())
    proc, _ = run_script(tmp_path_factory.mktemp("raise"), RAISE_SCRIPT % body)
    return last_json(proc)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_raise_mode_reproduces_unpatched_error(raise_results, call, kind):
    before = raise_results["before"][call][kind]
    after = raise_results["after"][call][kind]
    assert before is not None, "unpatched JAX must raise here"
    assert (after["type"], after["msg"]) == (before["type"], before["msg"])
    assert after["code"] == CALLS[call][1]
    site = after["site"]
    assert site[0] == raise_results["file"] and site[1] == raise_results["lines"][call]


@pytest.mark.parametrize("call", sorted(CALLS))
def test_knowledge_table_matches_live_jax(raise_results, call):
    path = CALLS[call][2]
    short_name, message = raise_results["table"][path]
    live = raise_results["before"][call]["sharded"]
    assert live["type"].rsplit(".", 1)[1] == short_name
    assert live["msg"] == message


def test_memoryview_message_is_in_the_table(tmp_path):
    proc, _ = run_script(tmp_path, PRELUDE + """
from jaxinterop_lint.knowledge import messages
print(json.dumps([outcome(memoryview, ARRAYS["sharded"]), messages.format_message("buffer_protocol", 8)]))
""")
    live, (short_name, message) = last_json(proc)
    assert live["type"] == "builtins." + short_name and live["msg"] == message


def test_consumers_imported_after_install_are_patched(tmp_path):
    proc, _ = run_script(tmp_path, """
import json, sys
from jaxinterop_lint import shim
shim.install("raise")
import jax, jax.numpy as jnp, numpy as np, torch
from torch import from_dlpack
from jax.sharding import NamedSharding, PartitionSpec as P
y = jax.device_put(jnp.arange(16.0), NamedSharding(jax.make_mesh((8,), ("d",)), P("d")))
out = []
for fn in (torch.from_dlpack, from_dlpack, torch.as_tensor, np.from_dlpack, jnp.from_dlpack,
           lambda a: a.unsafe_buffer_pointer()):
    try:
        fn(y)
    except Exception as e:
        out.append([type(e).__name__, e.jaxinterop_code, e.jaxinterop_consumer])
print(json.dumps(out))
""")
    assert last_json(proc) == [
        ["BufferError", "JXI002", "torch.from_dlpack"], ["BufferError", "JXI002", "torch.from_dlpack"],
        ["BufferError", "JXI002", "torch.as_tensor"], ["BufferError", "JXI002", "numpy.from_dlpack"],
        ["BufferError", "JXI002", "jax.numpy.from_dlpack"],
        ["JaxRuntimeError", "JXI003", "jax.Array.unsafe_buffer_pointer"]]


PASSTHROUGH_SCRIPT = PRELUDE + """
d3 = jax.devices()[3]
one = jax.make_mesh((1,), ("d",), devices=[jax.devices()[5]])
VALUES = {
    "jax default": jnp.arange(6.0),
    "jax on device 3": jax.device_put(jnp.arange(6.0), d3),
    "jax NamedSharding 1-device mesh": jax.device_put(jnp.arange(6.0), NamedSharding(one, P("d"))),
    "numpy": np.arange(6.0),
    "torch": torch.arange(6.0),
}
CALLS = {
    "torch.from_dlpack": torch.from_dlpack, "torch.as_tensor": torch.as_tensor, "torch.tensor": torch.tensor,
    "torch.asarray": torch.asarray, "np.from_dlpack": np.from_dlpack, "jax.dlpack.from_dlpack": jax.dlpack.from_dlpack,
    "jnp.from_dlpack": jnp.from_dlpack, "dlpack_device": lambda v: v.__dlpack_device__(),
    "pointer": lambda v: v.unsafe_buffer_pointer(), "cai": lambda v: v.__cuda_array_interface__,
    "frombuffer": lambda v: torch.frombuffer(v, dtype=torch.float32),
}

def result(fn, v):
    try:
        r = fn(v)
    except Exception as e:
        return ["raised", type(e).__name__, str(e)]
    if isinstance(r, (int, tuple)):
        return ["value", str(r)]
    return ["array", type(r).__name__, np.asarray(r).tolist()]

def all_results():
    return {f"{c} / {k}": result(f, v) for c, f in CALLS.items() for k, v in VALUES.items()}

before = all_results()
from jaxinterop_lint import shim
with shim.active("raise"):
    CALLS.update({"torch.from_dlpack": torch.from_dlpack, "torch.as_tensor": torch.as_tensor,
                  "torch.tensor": torch.tensor, "torch.asarray": torch.asarray, "np.from_dlpack": np.from_dlpack,
                  "jax.dlpack.from_dlpack": jax.dlpack.from_dlpack, "jnp.from_dlpack": jnp.from_dlpack})
    assert all(getattr(f, "__jaxinterop_shim__", False) for n, f in CALLS.items() if "." in n)
    after = all_results()
    hits = shim.hit_count()
print(json.dumps({"before": before, "after": after, "hits": hits}))
"""


def test_single_device_numpy_and_torch_pass_through(tmp_path):
    proc, _ = run_script(tmp_path, PASSTHROUGH_SCRIPT)
    data = last_json(proc)
    assert data["hits"] == 0
    assert data["after"] == data["before"]
    assert data["before"]["torch.from_dlpack / jax on device 3"][0] == "array"


IDENTITY_SCRIPT = """
import json, sys
ORDER = sys.argv[1]
from jaxinterop_lint import shim
meta = list(sys.meta_path)
if ORDER == "after":
    shim.install("record", "hits.jsonl")
import jax, jax.numpy as jnp, numpy as np, torch, torch.utils.dlpack, jax.dlpack
from jax.experimental import buffer_callback
A = type(jnp.zeros(())); B = buffer_callback.Buffer
OWNERS = [(torch, "from_dlpack"), (torch, "as_tensor"), (torch, "tensor"), (torch, "asarray"),
          (torch, "frombuffer"), (torch.utils.dlpack, "from_dlpack"), (np, "from_dlpack"), (jax.dlpack, "from_dlpack"),
          (jnp, "from_dlpack")] + [(A, n) for n in ("__dlpack__", "__dlpack_device__",
          "unsafe_buffer_pointer", "__cuda_array_interface__")] + [(B, "__dlpack__"), (B, "__array__")]
def snapshot():
    return [vars(o).get(n) for o, n in OWNERS]
if ORDER == "after":
    patched = snapshot()
    shim.uninstall()
    originals = snapshot()
    changed = [p is not o for p, o in zip(patched, originals)]
else:
    originals = snapshot()
    shim.install("raise"); shim.install("record", "hits.jsonl")   # re-install replaces
    changed = [p is not o for p, o in zip(snapshot(), originals)]
    shim.uninstall(); shim.uninstall()
same = [a is b for a, b in zip(snapshot(), originals)]
marked = [getattr(v, "__jaxinterop_shim__", False) or type(v).__name__ == "_ShimProperty" for v in snapshot()]
print(json.dumps({"same": same, "changed": changed, "marked": marked, "meta": sys.meta_path == meta,
                  "installed": shim.is_installed()}))
"""


@pytest.mark.parametrize("order", ["before", "after"])
def test_uninstall_restores_the_very_same_objects(tmp_path, order):
    proc, _ = run_script(tmp_path, IDENTITY_SCRIPT, args=(order,))
    data = last_json(proc)
    assert all(data["changed"]), "every target must have been patched while installed"
    assert all(data["same"]) and not any(data["marked"])
    assert data["meta"] and not data["installed"]


RECORD_SCRIPT = PRELUDE + """
from jaxinterop_lint import shim
shim.install("record", "hits.jsonl")
y = ARRAYS["sharded"]
single = jnp.arange(4.0)
raised = []
def attempt(fn):
    try:
        fn()
    except Exception as e:
        raised.append(type(e).__name__)
attempt(lambda: torch.from_dlpack(y))  # M:torch
attempt(lambda: np.from_dlpack(ARRAYS["replicated"]))  # M:numpy
probe = hasattr(y, "__cuda_array_interface__")
attempt(lambda: y.__cuda_array_interface__)  # M:cai
attempt(lambda: jax.tree.map(torch.from_dlpack, [y]))  # M:tree
def helper(a):
    return a.unsafe_buffer_pointer()  # M:helper
attempt(lambda: helper(y))
torch.from_dlpack(single)
np.from_dlpack(np.arange(3.0))
print(json.dumps({"raised": raised, "probe": probe, "hits": shim.hit_count(), "pid": __import__("os").getpid()}))
"""


def _markers(script: Path) -> dict[str, int]:
    out = {}
    for number, line in enumerate(script.read_text().splitlines(), 1):
        if "# M:" in line:
            out[line.split("# M:")[1].strip()] = number
    return out


def test_record_mode_writes_one_line_per_user_call(tmp_path):
    proc, script = run_script(tmp_path, RECORD_SCRIPT)
    data = last_json(proc)
    assert data["raised"] == ["BufferError", "BufferError", "AttributeError", "BufferError", "JaxRuntimeError"]
    assert data["probe"] is False and data["hits"] == 5
    hits = read_lines(tmp_path / "hits.jsonl")
    m = _markers(script)
    got = [(h["line"], h["code"], h["consumer"], h["function"]) for h in hits]
    assert got == [
        (m["torch"], "JXI002", "torch.from_dlpack", "<lambda>"),
        (m["numpy"], "JXI002", "numpy.from_dlpack", "<lambda>"),
        (m["cai"], "JXI001", "jax.Array.__cuda_array_interface__", "<lambda>"),
        (m["tree"], "JXI002", "torch.from_dlpack", "<lambda>"),
        (m["helper"], "JXI003", "jax.Array.unsafe_buffer_pointer", "helper"),
    ]
    required = {"code", "consumer", "path", "line", "function", "shape", "dtype", "num_devices", "sharding",
                "process_index", "pid"}
    for h in hits:
        assert required <= set(h)
        assert h["path"] == str(script) and h["pid"] == data["pid"] and h["process_index"] == 0
        assert h["shape"] == [16] and h["dtype"] == "float32" and h["num_devices"] == 8
        assert "NamedSharding" in h["sharding"]


def test_report_path_errors_are_raised_by_install(tmp_path):
    import numpy as np

    from jaxinterop_lint import shim

    before, meta = np.from_dlpack, list(sys.meta_path)
    for bad in (tmp_path / "missing-dir" / "hits.jsonl", tmp_path):
        with pytest.raises(shim.ShimReportError) as info:
            shim.install("record", str(bad))
        assert isinstance(info.value, OSError) and str(bad) in str(info.value)
        assert not shim.is_installed() and np.from_dlpack is before and sys.meta_path == meta
    with pytest.raises(ValueError):
        shim.install("warn")
    with pytest.raises(shim.ShimReportError):
        shim.maybe_install_from_env({"JAXINTEROP_SHIM": "record",
                                     "JAXINTEROP_SHIM_REPORT": str(tmp_path / "no" / "x")})
    assert shim.maybe_install_from_env({"JAXINTEROP_SHIM": "off"}) is False
    assert not shim.is_installed()


def test_importing_the_package_patches_nothing(tmp_path):
    proc, _ = run_script(tmp_path, """
import json, sys
meta = list(sys.meta_path)
import jaxinterop_lint, jaxinterop_lint.shim, jaxinterop_lint.runtime_cli, jaxinterop_lint.pytest_plugin
import jaxinterop_lint.knowledge.messages
heavy = sorted(m for m in ("jax", "jaxlib", "torch", "numpy") if m in sys.modules)
print(json.dumps({"heavy": heavy, "meta": sys.meta_path == meta, "installed": jaxinterop_lint.shim.is_installed()}))
""")
    assert last_json(proc) == {"heavy": [], "meta": True, "installed": False}


FFI_SCRIPT = """
import json, sys
import jax, jax.numpy as jnp, numpy as np, torch
from jax.experimental.buffer_callback import buffer_callback
MODE = sys.argv[1]
CALLS = [
    lambda b: np.array(b),
    lambda b: np.asarray(b, copy=True),
    lambda b: np.asarray(b, dtype=np.float64),
    lambda b: np.array(b, dtype=np.float32),
    lambda b: b.__dlpack__(copy=True),
    lambda b: np.from_dlpack(b, copy=True),
    lambda b: torch.from_dlpack(b, copy=True),
    lambda b: np.from_dlpack(b).copy(),
    lambda b: torch.from_dlpack(b).clone(),
    lambda b: np.asarray(b),
]
out = []
def callback(ctx, result, x):
    for fn in CALLS:
        try:
            fn(x)
            out.append(None)
        except Exception as e:
            out.append([type(e).__name__, str(e), getattr(e, "jaxinterop_code", None),
                        (getattr(e, "jaxinterop_site", None) or [None, None])[1]])
    np.from_dlpack(result)[...] = np.from_dlpack(x) * 2
if MODE != "off":
    from jaxinterop_lint import shim
    shim.install(MODE, "hits.jsonl")
f = jax.jit(buffer_callback(callback, jax.ShapeDtypeStruct((4,), jnp.float32)))
value = f(jnp.arange(4.0, dtype=jnp.float32)).tolist()
print(json.dumps({"out": out, "value": value, "lines": [fn.__code__.co_firstlineno for fn in CALLS]}))
"""


def test_ffi_buffer_copies_raise_jax_error_and_are_recorded(tmp_path):
    runs = {}
    for mode in ("off", "raise", "record"):
        (tmp_path / "hits.jsonl").unlink(missing_ok=True)
        proc, _ = run_script(tmp_path, FFI_SCRIPT, args=(mode,))
        runs[mode] = last_json(proc)
        runs[mode]["hits"] = read_lines(tmp_path / "hits.jsonl") if mode != "off" else []
    off = runs["off"]
    assert off["value"] == [0.0, 2.0, 4.0, 6.0]
    copying = 7
    assert all(o is not None for o in off["out"][:copying]) and off["out"][copying:] == [None] * 3
    for mode in ("raise", "record"):
        run = runs[mode]
        assert run["value"] == off["value"]
        for before, after, line in zip(off["out"], run["out"], run["lines"]):
            if before is None:
                assert after is None
            else:
                assert after[:2] == before[:2] and after[2:] == ["JXI004", line]
        assert [h["line"] for h in run["hits"]] == run["lines"][:copying]
        assert {h["code"] for h in run["hits"]} == {"JXI004"}
        kinds = ["ffi_array_copy", "ffi_array_copy", "ffi_array_dtype", "ffi_array_dtype", "ffi_dlpack_copy"]
        assert [h["interop"] for h in run["hits"][:5]] == kinds


# Exports of ``y`` from many threads (shared with test_shim_failure.py).
HAMMER = """
def hammer(n):
    for _ in range(n):
        try:
            torch.from_dlpack(y)
        except BufferError:
            pass
def threaded(threads, per_thread):
    ts = [threading.Thread(target=hammer, args=(per_thread,)) for _ in range(threads)]
    for t in ts: t.start()
    for t in ts: t.join()
"""

FORK_SCRIPT = PRELUDE + """
import os, threading
from jaxinterop_lint import shim
shim.install("record", "hits.jsonl")
y = ARRAYS["sharded"]
""" + HAMMER + """children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        threaded(4, 50)
        os._exit(0)
    children.append(pid)
threaded(8, 25)
codes = [os.waitpid(p, 0)[1] for p in children]
print(json.dumps({"parent": os.getpid(), "children": children, "codes": codes}))
"""


def test_forked_processes_and_threads_write_whole_lines_to_their_own_files(tmp_path):
    proc, _ = run_script(tmp_path, FORK_SCRIPT)
    data = last_json(proc)
    assert data["codes"] == [0, 0, 0]
    parent = read_lines(tmp_path / "hits.jsonl")
    assert len(parent) == 200 and {h["pid"] for h in parent} == {data["parent"]}
    for child in data["children"]:
        lines = read_lines(tmp_path / f"hits.jsonl.{child}")
        assert len(lines) == 200 and {h["pid"] for h in lines} == {child}
        assert {h["consumer"] for h in lines} == {"torch.from_dlpack"}


def test_patched_call_on_non_jax_argument_costs_microseconds(tmp_path):
    proc, _ = run_script(tmp_path, f"""
import sys
sys.path.insert(0, {str(REPO / "bench")!r})
import json, shim_overhead
rows = shim_overhead.measure(number=20000, repeat=5)
print(json.dumps(rows))
""")
    rows = {r["call"]: r for r in last_json(proc)}
    for call in ("numpy.from_dlpack(ndarray)", "torch.as_tensor(Tensor)", "torch.asarray(Tensor)"):
        assert rows[call]["overhead_us"] < 3.0, rows[call]
