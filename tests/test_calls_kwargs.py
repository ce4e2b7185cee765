"""Newuser report section E, the cases whose sink sits in a method or in another module (the
rest are in fixtures/runtime/calls_and_kwargs.py): an instance of a class of another module
called through ``__call__`` (made directly, by a classmethod factory, stored on ``self`` in
``__init__``), a ``**kw`` export of another module, an attribute a base class's ``setup()``
stores (same module and across modules).  Each project is linted against its ``# expect:``
markers, then every ``case_*`` runs with real jax on 8 CPU devices: a case fails exactly when
its traceback passes through a flagged line, and fails at one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import EIGHT_DEVICES, ROOT
from jaxinterop_lint import Config, lint_paths
from markers import expected

pytestmark = pytest.mark.slow   # real jax and torch on 8 CPU devices

TOOLS = '''
import jax
import numpy as np
import torch
from jax.sharding import NamedSharding, PartitionSpec as P


class Sharder:
    def __init__(self, mesh):
        self.s = NamedSharding(mesh, P("data"))

    def __call__(self, x):
        return jax.device_put(x, self.s)

    @classmethod
    def make(cls, mesh):
        return cls(mesh)


class DevicePut:
    def __init__(self, device):
        self.device = device

    def __call__(self, x):
        return jax.device_put(x, self.device)

    @classmethod
    def first(cls):
        return cls(jax.devices()[0])


def export_kw(**kw):
    return torch.from_dlpack(kw["x"])  # expect: JXI002


class Base:
    def setup(self, mesh):
        self.w = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("data")))


class HostBase:
    def setup(self):
        self.w = np.ones((8, 4), np.float32)
'''

MAIN = '''
import jax
import jax.numpy as jnp
import numpy as np
import torch
from jax.sharding import NamedSharding, PartitionSpec as P

from tools import Base, DevicePut, HostBase, Sharder, export_kw

mesh = jax.make_mesh((len(jax.devices()),), ("data",))


class Model:
    def __init__(self, mesh):
        self.sharder = Sharder(mesh)

    def forward(self, x):
        return self.sharder(x)


class HostModel:
    def __init__(self):
        self.put = DevicePut(jax.devices()[0])

    def forward(self, x):
        return self.put(x)


class Child(Base):
    def export(self):
        return torch.from_dlpack(self.w)  # expect: JXI002


class HostChild(HostBase):
    def export(self):
        return torch.from_dlpack(self.w)


class LocalBase:
    def setup(self):
        self.w = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("data")))


class LocalChild(LocalBase):
    def export(self):
        return torch.from_dlpack(self.w)  # expect: JXI002


def case_instance_call():
    sh = Sharder(mesh)
    return torch.from_dlpack(sh(jnp.ones((8, 4))))  # expect: JXI002


def case_instance_call_one_device():
    put = DevicePut(jax.devices()[0])
    return torch.from_dlpack(put(jnp.ones((8, 4))))


def case_factory():
    return torch.from_dlpack(Sharder.make(mesh)(jnp.ones((8, 4))))  # expect: JXI002


def case_factory_one_device():
    return torch.from_dlpack(DevicePut.first()(jnp.ones((8, 4))))


def case_self_attribute():
    return torch.from_dlpack(Model(mesh).forward(jnp.ones((8, 4))))  # expect: JXI002


def case_self_attribute_one_device():
    return torch.from_dlpack(HostModel().forward(jnp.ones((8, 4))))


def case_kwargs():
    return export_kw(x=jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("data"))))


def case_kwargs_host():
    return export_kw(x=np.ones((8, 4), np.float32))


def case_base_setup():
    c = Child()
    c.setup(mesh)
    return c.export()


def case_base_setup_host():
    c = HostChild()
    c.setup()
    return c.export()


def case_local_base_setup():
    c = LocalChild()
    c.setup()
    return c.export()
'''


def _probe(path, root):
    env = dict(os.environ, **EIGHT_DEVICES)
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "runtime_probe.py"), str(path), str(root)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_calls_kwargs_and_base_attributes_across_modules(tmp_path):
    files = {"tools.py": TOOLS, "main.py": MAIN}
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = lint_paths([str(tmp_path)], Config(), use_cache=False)
    assert not result.errors
    found = {(os.path.basename(f.path), f.line, f.code) for f in result.findings}
    assert found == {(name, line, code) for name, text in files.items()
                     for line, code in expected(textwrap.dedent(text))}
    (kw,) = [f for f in result.findings if f.path.endswith("tools.py")]
    assert kw.extra["callers"] == ("case_kwargs",) and "`kw[\"x\"]`" in kw.message
    flagged = {(name, line) for name, line, _ in found}
    outcome = _probe(tmp_path / "main.py", tmp_path)
    assert len(outcome) == 11
    for case, r in outcome.items():
        through = flagged & {tuple(f) for f in r.get("frames", ())}
        assert r["ok"] == (not through), f"{case}: {r}"
        if not r["ok"]:
            assert "BufferError" in r["classes"], r
            innermost = [tuple(f) for f in r["frames"] if f[0] in files][-1]
            assert innermost in flagged, f"{case} fails at {innermost}, not at a flagged line"
