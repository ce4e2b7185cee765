"""Issue 12 across modules: module summaries carry parts, yields, record classes, stored
fields, placements by a parameter and returned device-count tests, both live and frozen
into the cache and thawed (``summaries.freeze`` / ``thaw``)."""
from __future__ import annotations


import pytest

from jaxinterop_lint import Config, lint_paths
from jaxinterop_lint.analysis.project import Project
from jaxinterop_lint.pipeline.run import Session
from jaxinterop_lint.summaries import FrozenModule, freeze, thaw
from markers import expected

DATA = '''\
import dataclasses
from typing import NamedTuple

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((8,), ("x",))
rows = NamedSharding(mesh, P("x"))
TABLE = {"rows": rows, "host": np.ones(3)}


def shard_stream(n):
    for i in range(n):
        yield jax.device_put(np.ones(8), rows)


def host_stream(n):
    yield from (np.ones(i) for i in range(n))


def place(a, where):
    return jax.device_put(a, where)


def single(a):
    return len(a.devices()) == 1


@dataclasses.dataclass
class State:
    params: dict
    step: int


class Pair(NamedTuple):
    left: object
    right: object


class Holder:
    def __init__(self, w):
        self.w = w


def init_state():
    return State(params={"w": jax.device_put(np.ones(8), rows)}, step=0)
'''

MAIN = '''\
import jax
import numpy as np
import torch

from data import TABLE, Holder, Pair, State, host_stream, init_state, place, shard_stream, single


def run(x):
    for y in shard_stream(2):
        torch.from_dlpack(y)  # expect: JXI002
    torch.from_dlpack(next(host_stream(2)))
    torch.from_dlpack(place(x, TABLE["rows"]))  # expect: JXI002
    torch.from_dlpack(place(x, jax.devices()[0]))
    torch.from_dlpack(TABLE["host"])
    st = init_state()
    torch.tensor(st.step)
    torch.from_dlpack(st.params["w"])  # expect: JXI002
    p = Pair(np.ones(2), next(shard_stream(1)))
    torch.from_dlpack(p.left)
    torch.from_dlpack(p[1])  # expect: JXI002
    torch.from_dlpack(Holder(next(shard_stream(1))).w)  # expect: JXI002
    torch.from_dlpack(State(params=np.ones(2), step=0).params)
    y = next(shard_stream(1))
    if single(y):
        torch.from_dlpack(y)
'''


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "data.py").write_text(DATA)
    (tmp_path / "main.py").write_text(MAIN)
    return tmp_path


def _found(result):
    return {(f.line, f.code) for f in result.findings}


def test_live_summaries(project):
    result = lint_paths([str(project / "main.py")], Config(), project_root=str(project))
    assert _found(result) == expected(MAIN)


def test_frozen_summaries_give_the_same_findings(project):
    first = lint_paths([str(project / "main.py")], Config(), project_root=str(project), use_cache=True)
    assert _found(first) == expected(MAIN)
    # Edit main.py only: data.py's summary now comes from the cache (frozen, then thawed).
    (project / "main.py").write_text(MAIN + "\n# edited\n")
    second = lint_paths([str(project / "main.py")], Config(), project_root=str(project), use_cache=True)
    assert second.analysed == 1
    assert _found(second) == expected(MAIN)


def test_freeze_thaw_round_trip(project):
    proj = Session(str(project), Config(), use_cache=False).project
    ma = proj.analysis_of_path(str(project / "data.py"), full=True)
    import json

    frozen = thaw(json.loads(json.dumps(freeze(ma))), "data.py")
    assert isinstance(frozen, FrozenModule)
    table = frozen.globals["TABLE"]
    assert [k for k, _ in table.parts] == ["['rows'", "['host'"]
    stream = frozen.globals["shard_stream"].func.local.summary
    assert stream.yields is not None and stream.yields.is_multi
    holder = frozen.globals["Holder"].cls
    init = holder.methods["__init__"].func.local.summary
    assert [n for n, _ in init.fields] == ["w"] and init.fields[0][1].ref == (1, ())
    assert frozen.globals["State"].cls.fields == ("params", "step")
    assert frozen.globals["Pair"].cls.record.tuple_like
    assert frozen.globals["single"].func.local.summary.ret.guard is not None
    assert frozen.globals["place"].func.local.summary.ret.placed_by[0] == (1, ())
    assert isinstance(proj, Project)
