"""Functions handed to functions (stop 37): a parameter that is called is what the caller
gives.  ``fixtures/runtime/higher_order.py`` runs the forms in one module on 8 CPU devices
(tests/test_runtime_truth.py); here the summary that keeps the call, what is not a consumer,
and the form across the modules of a git project, through the CLI."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from jaxinterop_lint import Config, lint_source

from test_pipeline import write

HEAD = """\
import jax
import jax.numpy as jnp
import numpy as np
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((jax.device_count(),), ("d",))
S = NamedSharding(mesh, P("d"))


def apply(fn, *args):
    return fn(*args)
"""


def _lint_git_project(root, files: dict) -> subprocess.CompletedProcess:
    """``jaxinterop-lint --no-cache .`` in a git project of ``files`` (name -> text) at ``root``."""
    write(root, {"pyproject.toml": "[project]\nname = 'p'\n", **files})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return subprocess.run([sys.executable, "-m", "jaxinterop_lint", "--no-cache", "."], cwd=root,
                          capture_output=True, text=True)


def _findings(text: str) -> list:
    return [(f.line, f.code, f.message.split(" cannot ")[0]) for f in lint_source(text, "ho.py", Config()).findings]


def test_the_summary_keeps_a_called_parameter_with_what_it_is_called_with():
    from jaxinterop_lint.analysis.module import ModuleAnalysis
    import libcst as cst

    ma = ModuleAnalysis(cst.parse_module(HEAD), "ho.py", source=HEAD).run()
    (rec,) = [r for r in ma.functions if r.name == "apply"]
    assert [(param, attr) for param, _, attr, *_ in rec.summary.calls] == [(0, None)]


def test_what_is_called_decides():
    text = HEAD + textwrap.dedent("""\


        x = jax.device_put(jnp.ones(8), S)
        a = apply(torch.from_dlpack, x)
        b = apply(len, x)
        c = apply(np.asarray, x)
        d = apply(torch.from_dlpack, jnp.ones(8))
        e = apply(lambda v: torch.from_dlpack(v), x)
        """)
    lines = text.splitlines()
    assert _findings(text) == [
        (lines.index("a = apply(torch.from_dlpack, x)") + 1, "JXI002", "torch.from_dlpack() called by apply()"),
        (lines.index("e = apply(lambda v: torch.from_dlpack(v), x)") + 1, "JXI002", "torch.from_dlpack()")]


def test_a_helper_of_another_module_in_a_git_project(tmp_path):
    r = _lint_git_project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/hooks.py": "def apply(fn, x):\n    return fn(x)\n\n\ndef via(fn, x):\n    return apply(fn, x)\n",
        "train.py": HEAD + "from pkg.hooks import via\n\n\ndef main():\n"
                           "    return via(torch.from_dlpack, jax.device_put(jnp.ones(8), S))\n"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "train.py:17:12: JXI002 torch.from_dlpack() called by via() cannot export" in r.stdout, r.stdout


def test_a_consumer_stored_on_an_instance_of_another_module(tmp_path):
    """``Runner(sink)`` keeps the consumer in ``self.sink`` and ``run`` calls it: the class's
    module names neither JAX nor a consumer, so it is opened because a consumer is handed
    to it (a library one, or a callable object of a module that uses one)."""
    main = HEAD + "from hooks.runner import Runner, drive\nfrom hooks.sinks import TorchSink\n\n\n"
    r = _lint_git_project(tmp_path, {
        "hooks/__init__.py": "",
        "hooks/sinks.py": "import torch\n\n\nclass TorchSink:\n    def __call__(self, x):\n"
                          "        return torch.from_dlpack(x)\n",
        "hooks/runner.py": "class Runner:\n    def __init__(self, sink):\n        self.sink = sink\n\n"
                           "    def run(self, x):\n        return self.sink(x)\n\n\n"
                           "def drive(runner, x):\n    return runner.run(x)\n",
        "library.py": main + "a = drive(Runner(torch.from_dlpack), jax.device_put(jnp.ones(8), S))\n"
                             "b = drive(Runner(torch.from_dlpack), jnp.ones(8))\n",
        "callable.py": main + "c = drive(Runner(TorchSink()), jax.device_put(jnp.ones(8), S))\n"})
    assert r.returncode == 1, r.stdout + r.stderr
    rows = [line.split(" cannot ")[0] for line in r.stdout.splitlines() if ": JXI" in line]
    line = len(main.splitlines()) + 1
    assert rows == ["hooks/sinks.py:6:16: JXI002 torch.from_dlpack()",
                    f"library.py:{line}:5: JXI002 torch.from_dlpack() called by Runner.run()"], r.stdout
    assert f"when TorchSink.__call__() is called at callable.py:{line}" in r.stdout, r.stdout


def test_a_consumer_bound_to_a_name_of_another_module(tmp_path):
    """``dl = functools.partial(torch.from_dlpack)`` (or ``dl = torch.from_dlpack``, or a dict of
    consumers) in a module of the project is a consumer for the modules that take it: a file
    that calls it with a sharded array is analysed, and flagged (hunt38 proj7 and proj10,
    each raised BufferError)."""
    r = _lint_git_project(tmp_path, {
        "parts/__init__.py": "from .placement import *\n",
        "parts/placement.py": "import functools\n\nimport jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n"
                              "MESH = jax.make_mesh((jax.device_count(),), ('d',))\n"
                              "shard_all = functools.partial(jax.device_put, device=NamedSharding(MESH, P('d')))\n",
        "parts/exports.py": "import functools\n\nimport numpy as np\nimport torch\n\n"
                            "dl = functools.partial(torch.from_dlpack)\nalias = torch.from_dlpack\n"
                            "HANDLERS = {'torch': torch.from_dlpack, 'numpy': np.asarray}\n",
        "main.py": "import jax.numpy as jnp\nfrom parts import shard_all\nfrom parts.exports import HANDLERS, dl, alias\n\n"
                   "a = dl(shard_all(jnp.arange(16.0)))\nb = alias(shard_all(jnp.arange(16.0)))\nc = dl(jnp.arange(16.0))\n"
                   "d = HANDLERS['torch'](shard_all(jnp.arange(16.0)))\ne = HANDLERS['numpy'](shard_all(jnp.arange(16.0)))\n"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert [line.split(" cannot ")[0] for line in r.stdout.splitlines() if ": JXI" in line] == [
        "main.py:5:5: JXI002 torch.from_dlpack()", "main.py:6:5: JXI002 torch.from_dlpack()",
        "main.py:8:5: JXI002 torch.from_dlpack()"], r.stdout


def test_callbacks_added_by_a_method_of_a_class_of_another_module(tmp_path):
    """``loop.add_callback(log_batch_ptr)`` appends to ``self.callbacks``; ``run`` calls each on
    the batches its placer (a ``functools.partial`` of ``jax.device_put`` on a sharding) makes
    (hunt39 proj4: it raised at the callback's ``unsafe_buffer_pointer()``).  The loop's
    module names neither a JAX source nor a consumer: it is opened because a placement
    function is handed to it."""
    r = _lint_git_project(tmp_path, {
        "train/__init__.py": "",
        "train/callbacks.py": "def log_batch_ptr(batch):\n    return batch.unsafe_buffer_pointer()\n",
        "train/loop.py": "import jax.numpy as jnp\n\n\nclass Loop:\n    def __init__(self, placer):\n"
                         "        self.placer = placer\n        self.callbacks = []\n\n"
                         "    def add_callback(self, fn):\n        self.callbacks.append(fn)\n\n"
                         "    def run(self, host_batches):\n        for hb in host_batches:\n"
                         "            batch = self.placer(hb)\n            for cb in self.callbacks:\n"
                         "                cb(batch)\n",
        "main.py": "from functools import partial\n\nimport jax\nimport numpy as np\n"
                   "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n\n"
                   "from train.callbacks import log_batch_ptr\nfrom train.loop import Loop\n\n\n"
                   "def main():\n    mesh = Mesh(np.array(jax.devices()), ('data',))\n"
                   "    loop = Loop(partial(jax.device_put, device=NamedSharding(mesh, P('data'))))\n"
                   "    loop.add_callback(log_batch_ptr)\n    loop.run([np.ones((8, 2), np.float32)])\n"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "train/callbacks.py:2:12: JXI003" in r.stdout and "called from main() at main.py:15" in r.stdout, r.stdout


def test_a_default_list_of_stages_of_another_module(tmp_path):
    """``def run(x, stages=STAGES)`` calls each stage; the last of the module-level ``STAGES``
    is ``lambda a: np.from_dlpack(a)`` (hunt39 proj7: a pmap output raised there): a file
    calling ``run(x)`` with a multi-device value is analysed, and the export is flagged at the
    lambda, with its calling context."""
    r = _lint_git_project(tmp_path, {
        "pipeline/__init__.py": "",
        "pipeline/stages.py": "import numpy as np\n\nSTAGES = [\n    lambda a: a + 1.0,\n    lambda a: np.from_dlpack(a),\n]\n\n\n"
                              "def run(x, stages=STAGES):\n    for s in stages:\n        x = s(x)\n    return x\n",
        "main.py": "import jax\nimport jax.numpy as jnp\n\nfrom pipeline.stages import run\n\n\n"
                   "def main():\n    n = jax.local_device_count()\n    per_dev = jax.pmap(lambda v: v * 2.0)(jnp.ones((n, 4)))\n"
                   "    return run(per_dev)\n"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "pipeline/stages.py:5:15: JXI002 np.from_dlpack()" in r.stdout and "called from main() at main.py:10" in r.stdout, \
        r.stdout
