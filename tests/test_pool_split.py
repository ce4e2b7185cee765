"""Issue 16: which planned files run in worker processes and which in the main process.

Workers get only files whose analyses are independent (no module they would parse is left
unanalysed in the main process), and only when those files are worth a pool; the findings
are the same either way.  Behaviour only: where each file runs, never how long it takes.
"""
from __future__ import annotations

import os

import pytest
from test_pipeline import SHARD, USE, project, rows, write

from jaxinterop_lint import Config, lint_paths
from jaxinterop_lint.pipeline import pool

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")


def _files(tmp_path, sizes: dict) -> dict:
    """Files of the given sizes (bytes) under ``tmp_path``: ``{name: absolute path}``."""
    out = {}
    for name, n in sizes.items():
        p = tmp_path / name
        p.write_text("#" * n)
        out[name] = str(p)
    return out


@pytest.fixture(autouse=True)
def idle_cores(monkeypatch):
    """The machine's cores are free (the load of other processes is its own test)."""
    monkeypatch.setattr(pool, "cores_busy", lambda: False)


def _split(paths, jobs, shared=(), becomes_free=None):
    """``pool.split`` with ``shared`` names sharing a module; ``becomes_free``: a name after
    whose analysis here the files of ``shared`` stop sharing (their module is analysed)."""
    here, state = [], {"done": set()}

    def shares(p):
        name = os.path.basename(p)
        if becomes_free is not None and becomes_free in state["done"]:
            return False
        return name in shared

    def analyse_here(p):
        here.append(os.path.basename(p))
        state["done"].add(os.path.basename(p))

    there = pool.split(paths, jobs, shares, analyse_here)
    return here, [os.path.basename(p) for p in there]


def test_independent_files_go_to_workers_and_sharing_ones_stay_here(tmp_path, monkeypatch):
    monkeypatch.setattr(pool, "MIN_POOL_BYTES", 8_000)
    monkeypatch.delenv("JAXINTEROP_LINT_POOL_BYTES", raising=False)
    f = _files(tmp_path, {f"f{i}.py": 1_000 for i in range(10)})
    paths = [f[f"f{i}.py"] for i in range(10)]
    here, there = _split(paths, 2, shared={"f0.py", "f5.py"})
    assert here == ["f0.py", "f5.py"] and there == [f"f{i}.py" for i in range(10) if i not in (0, 5)]


def test_a_file_stops_sharing_once_its_module_is_analysed_here(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXINTEROP_LINT_POOL_BYTES", "0")
    f = _files(tmp_path, {f"f{i}.py": 100 for i in range(9)})
    paths = [f[f"f{i}.py"] for i in range(9)]
    # every file takes the same module: the first analyses it here, the others are free then
    here, there = _split(paths, 2, shared={os.path.basename(p) for p in paths}, becomes_free="f0.py")
    assert here == ["f0.py"] and there == [f"f{i}.py" for i in range(1, 9)]


def test_no_workers_when_what_stays_independent_is_not_worth_a_pool(tmp_path, monkeypatch):
    monkeypatch.setattr(pool, "MIN_POOL_BYTES", 8_000)
    monkeypatch.delenv("JAXINTEROP_LINT_POOL_BYTES", raising=False)
    f = _files(tmp_path, {f"f{i}.py": 1_000 for i in range(10)})
    paths = [f[f"f{i}.py"] for i in range(10)]
    # 5 of 10 files share modules: the 5 left are too few for 2 workers (4 each at least)
    shared = {f"f{i}.py" for i in range(5)}
    here, there = _split(paths, 2, shared=shared)
    assert there == [] and sorted(here) == sorted(os.path.basename(p) for p in paths)
    assert here[:5] == [f"f{i}.py" for i in range(5)]    # sharing ones in plan order, then the rest


def test_no_workers_below_the_floor_with_one_job_or_when_one_file_is_most_of_the_work(tmp_path, monkeypatch):
    monkeypatch.delenv("JAXINTEROP_LINT_POOL_BYTES", raising=False)
    f = _files(tmp_path, {f"f{i}.py": 1_000 for i in range(10)})
    paths = [f[f"f{i}.py"] for i in range(10)]
    names = [os.path.basename(p) for p in paths]
    assert _split(paths, 2) == (names, [])                          # 10 KB: under MIN_POOL_BYTES
    monkeypatch.setattr(pool, "MIN_POOL_BYTES", 8_000)
    assert _split(paths, 1) == (names, [])                          # --jobs 1
    assert _split(paths[:7], 2) == (names[:7], [])                  # fewer than 4 files a worker
    big = _files(tmp_path, {"big.py": 20_000})["big.py"]
    assert _split(paths + [big], 2) == (names + ["big.py"], [])     # one file over half the bytes
    assert _split(paths, 2) == ([], names)


def _where(tmp_path, monkeypatch, proj, jobs=2):
    """Lint ``proj`` with ``jobs``; returns the result and ``{file: 'here' | 'worker'}``."""
    log = tmp_path / "where.log"
    log.write_text("")
    main, real = os.getpid(), pool.lint_one

    def recording(session, path):
        with open(log, "a") as fh:
            fh.write(f"{'here' if os.getpid() == main else 'worker'} {os.path.relpath(path, proj)}\n")
        return real(session, path)

    monkeypatch.setattr(pool, "lint_one", recording)
    result = lint_paths([str(proj)], Config(), jobs=jobs)
    monkeypatch.undo()
    where = dict(reversed(line.split(" ", 1)) for line in log.read_text().splitlines())
    return result, where


@needs_fork
def test_files_taking_the_same_modules_one_analyses_them_here_the_rest_in_workers(tmp_path, monkeypatch):
    # 12 callers of pkg.bridge and pkg.shard: the first analyses those modules in the main
    # process, the other 11 (independent then) go to workers, with the same finding
    monkeypatch.setenv("JAXINTEROP_LINT_POOL_BYTES", "0")
    extra = {f"pkg/m{i:02}.py": USE.replace("def main", f"def main{i}") for i in range(12)}
    proj = project(tmp_path, extra)
    one = lint_paths([str(proj)], Config(), jobs=1)
    two, where = _where(tmp_path, monkeypatch, proj)
    assert rows(one, proj) == rows(two, proj) == [("pkg/bridge.py", 5, "JXI002")]
    assert [f.message for f in one.findings] == [f.message for f in two.findings]
    callers = sorted(p for p in where if p.startswith("pkg/m") or p == "pkg/use.py")
    assert len(callers) == 13
    here = [p for p in callers if where[p] == "here"]
    assert len(here) == 1 and all(where[p] == "worker" for p in callers if p not in here)


@needs_fork
def test_files_each_taking_a_module_of_their_own_are_all_analysed_here(tmp_path, monkeypatch):
    # every caller needs its own helper module analysed: workers would each parse theirs
    # and send it back; the main process does it once, as --jobs 1
    monkeypatch.setenv("JAXINTEROP_LINT_POOL_BYTES", "0")
    extra = {}
    for i in range(10):
        extra[f"pkg/h{i}.py"] = SHARD.replace("def sharded", f"def sharded{i}")
        extra[f"pkg/u{i}.py"] = USE.replace("from pkg.shard import sharded", f"from pkg.h{i} import sharded{i}") \
                                   .replace("sharded(x, mesh)", f"sharded{i}(x, mesh)")
    proj = project(tmp_path, extra)
    one = lint_paths([str(proj)], Config(), jobs=1)
    two, where = _where(tmp_path, monkeypatch, proj)
    assert rows(one, proj) == rows(two, proj) and ("pkg/bridge.py", 5, "JXI002") in rows(two, proj)
    assert where and set(where.values()) == {"here"}


@needs_fork
def test_independent_jax_files_go_to_workers(tmp_path, monkeypatch):
    # files that import no project module: nothing shared, every one to a worker
    monkeypatch.setenv("JAXINTEROP_LINT_POOL_BYTES", "0")
    body = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
            "def f{i}(x, mesh):\n    return torch.from_dlpack(jax.device_put(x, NamedSharding(mesh, P('x'))))\n")
    proj = write(tmp_path, {"pyproject.toml": "[project]\nname = 'p'\n",
                            **{f"lone{i}.py": body.format(i=i) for i in range(9)}})
    one = lint_paths([str(proj)], Config(), jobs=1)
    two, where = _where(tmp_path, monkeypatch, proj)
    assert rows(one, proj) == rows(two, proj) and len(rows(two, proj)) == 9
    assert sorted(where) == [f"lone{i}.py" for i in range(9)] and set(where.values()) == {"worker"}


def test_the_pool_is_judged_on_the_bytes_of_the_files_it_would_get(tmp_path, monkeypatch):
    # the sizes of the files kept here never count for the files handed to workers
    monkeypatch.setattr(pool, "MIN_POOL_BYTES", 8_000)
    monkeypatch.delenv("JAXINTEROP_LINT_POOL_BYTES", raising=False)
    f = _files(tmp_path, {**{f"f{i}.py": 500 for i in range(9)}, "big.py": 3_500})
    paths = [f[f"f{i}.py"] for i in range(9)] + [f["big.py"]]
    here, there = _split(paths, 2, shared={"big.py"})
    assert there == [] and here == ["big.py"] + [f"f{i}.py" for i in range(9)]
    sizes = {p: os.path.getsize(p) for p in paths}
    assert pool.uses_workers(paths, 2, sizes) and not pool.uses_workers(paths[:9], 2, sizes)


def test_no_workers_while_other_processes_keep_the_cores_busy(tmp_path, monkeypatch):
    monkeypatch.setattr(pool, "MIN_POOL_BYTES", 8_000)
    monkeypatch.delenv("JAXINTEROP_LINT_POOL_BYTES", raising=False)
    f = _files(tmp_path, {f"f{i}.py": 1_000 for i in range(10)})
    paths = [f[f"f{i}.py"] for i in range(10)]
    names = [os.path.basename(p) for p in paths]
    assert _split(paths, 2) == ([], names)
    monkeypatch.setattr(pool, "cores_busy", lambda: True)
    assert _split(paths, 2) == (names, [])
    monkeypatch.undo()                     # the real test of the load, on a 2-core machine
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    proc = tmp_path / "loadavg"
    monkeypatch.setattr(pool, "PROC_LOADAVG", str(proc))
    # the average over the last minute, and the tasks running now (this one among them)
    for load, now, busy in ((3.5, "4/300", True), (2.2, "3/300", True), (1.2, "3/300", False),
                            (0.3, "1/300", False),
                            # a minute of tests on every core just ended: the cores are free now
                            (3.5, "1/300", False), (2.2, "2/300", False)):
        proc.write_text(f"{load:.2f} 1.00 1.00 {now} 4242\n")
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 1.0, 1.0))
        assert pool.cores_busy() is busy, (load, now)
    # where the count now cannot be read (no /proc), the average alone decides
    proc.write_text("garbled\n")
    assert pool.running_now() is None
    for load, busy in ((3.5, True), (2.2, True), (1.2, False)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 1.0, 1.0))
        assert pool.cores_busy() is busy, load
    monkeypatch.setattr(pool, "PROC_LOADAVG", str(tmp_path / "absent"))
    assert pool.running_now() is None
