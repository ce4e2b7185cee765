"""The CuPy, numba CUDA, Warp and TensorFlow patches, on stand-in modules built in the test.

Those libraries need a GPU (scripts/gpu-check.py runs the real ones).  The stand-ins behave
as jax-interop.md section 2 says the real ones do with a jax.Array: CuPy's array constructors
and numba's ``to_device`` take ``__cuda_array_interface__`` when ``hasattr`` finds it and
otherwise gather through the host; ``cupy.from_dlpack`` and Warp call ``__dlpack_device__``
first; ``numba.cuda.as_cuda_array`` raises numba's TypeError when the interface is missing.
Their code is executed in the stand-in module's own namespace, so its frames belong to
"cupy", "numba.cuda", ... exactly like the real libraries' frames.  The arrays are real
jax.Arrays on 8 forced CPU devices, in a subprocess.
"""
from __future__ import annotations

import pytest
from test_shim import last_json, read_lines, run_script

pytestmark = pytest.mark.slow   # real jax and numpy (the quick tier leaves it out)

STUBS = '''
import sys, types
import numpy as np
SOURCES = {
    "cupy": """
import numpy as _np
class ndarray:
    def __init__(self, host, how):
        self.host, self.how = _np.array(host), how
def _build(obj, how):
    if hasattr(obj, "__cuda_array_interface__"):
        return ndarray(_np.asarray(obj), "cuda_array_interface")
    return ndarray(_np.asarray(obj), how)      # gathers through the host
def asarray(a, dtype=None): return _build(a, "host-gather")
def array(obj, dtype=None, copy=True): return _build(obj, "host-gather")
def asanyarray(a, dtype=None): return _build(a, "host-gather")
def ascontiguousarray(a, dtype=None): return _build(a, "host-gather")
def from_dlpack(array):
    array.__dlpack_device__()
    return ndarray(_np.from_dlpack(array), "dlpack")
""",
    "numba": "",
    "numba.cuda": """
import numpy as _np
def as_cuda_array(obj, sync=True):
    if not hasattr(obj, "__cuda_array_interface__"):
        raise TypeError("*obj* doesn't implement the cuda array interface.")
    return obj.__cuda_array_interface__
def to_device(obj, stream=0, copy=True, to=None):
    return ("device-array", _np.asarray(obj).tolist())   # copies through the host
""",
    "warp": """
import numpy as _np
def from_dlpack(source, dtype=None):
    source.__dlpack_device__()
    return ("warp-array", _np.from_dlpack(source).tolist())
def from_jax(jax_array, dtype=None):
    return from_dlpack(jax_array, dtype)
""",
    "tensorflow": "",
    "tensorflow.experimental": "",
    "tensorflow.experimental.dlpack": """
import numpy as _np
def from_dlpack(dlcapsule):
    if hasattr(dlcapsule, "__dlpack__"):
        dlcapsule = dlcapsule.__dlpack__()
    return ("tf-tensor", str(type(dlcapsule).__name__))
""",
}

def build_in_sys_modules():
    for name, src in SOURCES.items():
        mod = types.ModuleType(name)
        mod.__path__ = []
        exec(compile(src, "<stand-in " + name + ">", "exec"), mod.__dict__)
        sys.modules[name] = mod
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, mod)

def write_importable(root):
    import os
    for name, src in SOURCES.items():
        d = os.path.join(root, *name.split("."))
        os.makedirs(d, exist_ok=True)
        children = [c.rpartition(".")[2] for c in SOURCES if c.rpartition(".")[0] == name]
        with open(os.path.join(d, "__init__.py"), "w") as fh:
            fh.write(src + "".join("\\nfrom . import " + c for c in children) + "\\n")
    sys.path.insert(0, root)
'''

PRELUDE = STUBS + '''
import json, os
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((8,), ("d",))
y = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("d")))
r = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P()))
single = jax.device_put(jnp.arange(16.0), jax.devices()[2])

def outcome(fn, x):
    try:
        value = fn(x)
    except Exception as e:
        return ["raised", type(e).__name__, str(e), getattr(e, "jaxinterop_code", None),
                (getattr(e, "jaxinterop_site", None) or [None, None])[1]]
    if hasattr(value, "how"):
        return ["value", value.how, value.host.tolist()]
    return ["value", repr(value)]

def calls():
    import cupy, warp
    from numba import cuda
    import tensorflow as tf
    return {
        "cupy.asarray": lambda x: cupy.asarray(x),
        "cupy.array": lambda x: cupy.array(x),
        "cupy.asanyarray": lambda x: cupy.asanyarray(x),
        "cupy.ascontiguousarray": lambda x: cupy.ascontiguousarray(x),
        "cupy.from_dlpack": lambda x: cupy.from_dlpack(x),
        "numba.cuda.as_cuda_array": lambda x: cuda.as_cuda_array(x),
        "numba.cuda.to_device": lambda x: cuda.to_device(x),
        "warp.from_jax": lambda x: warp.from_jax(x),
        "warp.from_dlpack": lambda x: warp.from_dlpack(x),
        "tensorflow.experimental.dlpack.from_dlpack": lambda x: tf.experimental.dlpack.from_dlpack(x),
    }

def run_all(values):
    cs = calls()
    lines = {c: f.__code__.co_firstlineno for c, f in cs.items()}
    return {c: {k: outcome(f, v) for k, v in values.items()} for c, f in cs.items()}, lines
'''

EXPECTED = {  # consumer -> (code, what raise mode raises)
    "cupy.asarray": ("JXI001", "silent"),
    "cupy.array": ("JXI001", "silent"),
    "cupy.asanyarray": ("JXI001", "silent"),
    "cupy.ascontiguousarray": ("JXI001", "silent"),
    "cupy.from_dlpack": ("JXI002", "native"),
    "numba.cuda.as_cuda_array": ("JXI001", "native"),
    "numba.cuda.to_device": ("JXI001", "silent"),
    "warp.from_jax": ("JXI002", "native"),
    "warp.from_dlpack": ("JXI002", "native"),
    "tensorflow.experimental.dlpack.from_dlpack": ("JXI002", "native"),
}
SILENT = ["raised", "ValueError", "__cuda_array_interface__() is supported only for unsharded arrays."]

RAISE_SCRIPT = PRELUDE + '''
import sys
from jaxinterop_lint import shim
if sys.argv[1] == "before":
    build_in_sys_modules()
    unpatched, _ = run_all({"sharded": y, "replicated": r, "single": single})
    shim.install("raise")
else:
    shim.install("raise")
    write_importable(os.path.abspath("stand-ins"))
    shim.uninstall()
    unpatched, _ = run_all({"sharded": y, "replicated": r, "single": single})
    for name in SOURCES:
        sys.modules.pop(name, None)
    shim.install("raise")
patched, lines = run_all({"sharded": y, "replicated": r, "single": single})
shim.uninstall()
print(json.dumps({"unpatched": unpatched, "patched": patched, "lines": lines}))
'''


@pytest.fixture(scope="module", params=["before", "after"])
def raise_results(request, tmp_path_factory):
    """Stand-ins imported before install() (patched in place) or after it (import hook)."""
    proc, _ = run_script(tmp_path_factory.mktemp("stubs"), RAISE_SCRIPT, args=(request.param,))
    return last_json(proc)


@pytest.mark.parametrize("consumer", sorted(EXPECTED))
def test_raise_mode_on_stand_ins(raise_results, consumer):
    code, kind = EXPECTED[consumer]
    line = raise_results["lines"][consumer]
    for array in ("sharded", "replicated"):
        before = raise_results["unpatched"][consumer][array]
        after = raise_results["patched"][consumer][array]
        if kind == "silent":
            assert before[0] == "value" and ("host-gather" in before[1] or "device-array" in before[1]), \
                "the stand-in gathers silently"
            assert after == SILENT + [code, line]
        else:
            assert before[0] == "raised"
            assert after == before[:3] + [code, line]
    assert raise_results["patched"][consumer]["single"] == raise_results["unpatched"][consumer]["single"]


RECORD_SCRIPT = PRELUDE + '''
from jaxinterop_lint import shim
build_in_sys_modules()
import cupy, warp
from numba import cuda
originals = {c: getattr(m, a) for c, (m, a) in {
    "asarray": (cupy, "asarray"), "from_dlpack": (cupy, "from_dlpack"), "to_device": (cuda, "to_device"),
    "from_jax": (warp, "from_jax")}.items()}
shim.install("record", "hits.jsonl")
gathered = cupy.asarray(y)  # M:asarray
device = cuda.to_device(r)  # M:to_device
try:
    warp.from_jax(y)  # M:from_jax
except BufferError as e:
    warp_error = str(e)
host = cupy.asarray(__import__("numpy").arange(3.0))
shim.uninstall()
same = {c: getattr(m, a) is originals[c] for c, (m, a) in {
    "asarray": (cupy, "asarray"), "from_dlpack": (cupy, "from_dlpack"), "to_device": (cuda, "to_device"),
    "from_jax": (warp, "from_jax")}.items()}
print(json.dumps({"gathered": [gathered.how, gathered.host.tolist()], "device": device, "warp": warp_error,
                  "host": host.how, "same": same}))
'''


def test_record_mode_on_stand_ins_lets_the_real_call_run(tmp_path):
    proc, script = run_script(tmp_path, RECORD_SCRIPT)
    data = last_json(proc)
    assert data["gathered"] == ["host-gather", [float(i) for i in range(16)]]
    assert data["device"] == ["device-array", [float(i) for i in range(16)]]
    assert data["warp"] == "__dlpack__ only supported for unsharded arrays."
    assert data["host"] == "host-gather" and all(data["same"].values())
    marks = {}
    for number, text in enumerate(script.read_text().splitlines(), 1):
        if "# M:" in text:
            marks[text.split("# M:")[1].strip()] = number
    hits = read_lines(tmp_path / "hits.jsonl")
    assert [(h["line"], h["code"], h["consumer"]) for h in hits] == [
        (marks["asarray"], "JXI001", "cupy.asarray"),
        (marks["to_device"], "JXI001", "numba.cuda.to_device"),
        (marks["from_jax"], "JXI002", "warp.from_jax"),
    ]
    assert [h["num_devices"] for h in hits] == [8, 8, 8]
