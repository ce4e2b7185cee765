"""Issue 16: the plan's facts of many files are computed in forked workers and handed back,
the same facts (and the same cache entries) as computed here; a worker that dies costs
nothing but the time to compute its files here.  Behaviour only, never timings."""
from __future__ import annotations

import os

import pytest
from test_pipeline import USE, project

from jaxinterop_lint import Config
from jaxinterop_lint.pipeline import pool
from jaxinterop_lint.pipeline.discover import discover
from jaxinterop_lint.pipeline.run import Session

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")


@pytest.fixture(autouse=True)
def idle_cores(monkeypatch, key_dir):
    """The machine's cores are free (the load of other processes is its own test); the
    cache's keys are the test's own (conftest ``key_dir``)."""
    monkeypatch.setattr(pool, "cores_busy", lambda: False)


def _read_session(proj, use_cache=True):
    """A session of ``proj`` whose reader has read every file (as ``Session.lint`` has when
    it plans), and those files."""
    session = Session(str(proj), Config(), use_cache=use_cache)
    files = sorted(os.path.abspath(p) for p in discover([str(proj)]) if p.endswith(".py"))
    for p in files:
        session.reader.text(p)
    return session, files


def _expected(proj, files):
    """The facts of ``files`` as one process computes them, one file at a time."""
    session = Session(str(proj), Config(), use_cache=False)
    return {p: session.plan.facts(p) for p in files}


def _project(tmp_path):
    extra = {f"pkg/m{i}.py": USE.replace("def main", f"def main{i}") + f"import torch\nt{i} = torch.tensor\n"
             for i in range(12)}
    extra["pkg/latin.py"] = b"# -*- coding: latin-1 -*-\nname = '\xe9'\n".decode("latin-1")
    return project(tmp_path, extra)


def test_facts_from_workers_are_the_facts_computed_here_and_are_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXINTEROP_LINT_POOL_BYTES", "0")
    proj = _project(tmp_path)
    session, files = _read_session(proj)
    assert pool.plan_facts(session.plan, files, 3) == 2            # two children, a share here
    assert session.plan._facts == _expected(proj, files)
    for p in files:
        entry = session.store.get(p)
        assert entry["hash"] == session.reader.digest(p) and entry["facts"] == session.plan._facts[p]
    # known now: nothing left to compute, no child forked again
    assert session.plan.facts_to_compute(files) == []
    assert pool.plan_facts(session.plan, files, 3) == 0


def test_a_worker_that_dies_leaves_its_files_to_be_computed_here(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXINTEROP_LINT_POOL_BYTES", "0")
    proj = _project(tmp_path)
    session, files = _read_session(proj, use_cache=False)
    parent = os.getpid()
    plan = session.plan
    computed = plan.computed_facts

    def dies_in_a_child(path):
        if os.getpid() != parent:
            os._exit(3)
        return computed(path)

    monkeypatch.setattr(plan, "computed_facts", dies_in_a_child)
    assert pool.plan_facts(plan, files, 2) == 1
    here = set(plan._facts)
    assert here and set(files) - here                              # the child's share is unknown
    monkeypatch.setattr(plan, "computed_facts", computed)
    assert {p: plan.facts(p) for p in files} == _expected(proj, files)


def test_no_worker_where_it_does_not_pay(tmp_path, monkeypatch):
    proj = _project(tmp_path)
    monkeypatch.delenv("JAXINTEROP_LINT_POOL_BYTES", raising=False)
    session, files = _read_session(proj)
    assert pool.plan_facts(session.plan, files, 2) == 0            # a few KB: under MIN_FACTS_BYTES
    monkeypatch.setattr(pool, "MIN_FACTS_BYTES", 1_000)
    assert pool.plan_facts(session.plan, files, 1) == 0            # one job
    assert pool.plan_facts(session.plan, files[:7], 2) == 0        # under 4 files a job
    monkeypatch.setattr(pool, "cores_busy", lambda: True)
    assert pool.plan_facts(session.plan, files, 2) == 0            # the cores are busy
    assert session.plan._facts == {}
    monkeypatch.setattr(pool, "cores_busy", lambda: False)
    assert pool.plan_facts(session.plan, files, 2) == 1
    assert session.plan._facts == _expected(proj, files)
