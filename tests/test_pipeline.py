"""The run pipeline (issue 16, with the pipeline bullets of issues 12, 13 and 15): what is
parsed, how often, the project root, module names, the cache's invalidation, the workers'
entries, ``.gitignore`` and the spelling of paths."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import ROOT, run_cli
from jaxinterop_lint import Config, lint_paths
from jaxinterop_lint.pipeline import pool
from jaxinterop_lint.pipeline.analyse import PARSES
from jaxinterop_lint.pipeline.discover import discover
from jaxinterop_lint.pipeline.modules import find_root
from jaxinterop_lint.pipeline.run import Session

SHARD = """\
import jax
from jax.sharding import NamedSharding, PartitionSpec as P


def sharded(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P("x")))
"""
BRIDGE = """\
import torch


def to_torch(a):
    return torch.from_dlpack(a)
"""
USE = """\
from pkg.shard import sharded
from pkg.bridge import to_torch


def main(x, mesh):
    return to_torch(sharded(x, mesh))
"""
TORCH_ONLY = """\
import numpy as np
import torch


def tensors(n):
    t = torch.tensor(np.ones(n))
    return torch.as_tensor(t), torch.from_dlpack(t)
"""


def write(root, files: dict):
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return root


def project(tmp_path, extra=None):
    files = {"pyproject.toml": "[project]\nname = 'p'\n", "pkg/__init__.py": "", "pkg/shard.py": SHARD,
             "pkg/bridge.py": BRIDGE, "pkg/use.py": USE, "pkg/torch_only.py": TORCH_ONLY}
    files.update(extra or {})
    return write(tmp_path, files)


def rows(result, base):
    return sorted((os.path.relpath(os.path.abspath(f.path), base), f.line, f.code) for f in result.findings)


def test_torch_code_no_jax_reaches_is_never_parsed_and_no_file_twice(tmp_path):
    proj = project(tmp_path)
    PARSES.clear()
    result = lint_paths([str(proj)], Config(), jobs=1)
    assert rows(result, proj) == [("pkg/bridge.py", 5, "JXI002")]
    parsed = {os.path.relpath(p, proj): n for p, n in PARSES.items()}
    assert "pkg/torch_only.py" not in parsed
    assert set(parsed.values()) == {1}, parsed            # parsed once at most
    assert {"pkg/use.py", "pkg/shard.py", "pkg/bridge.py"} <= set(parsed)


def test_a_consumer_file_that_jax_code_reaches_through_an_import_is_parsed(tmp_path):
    proj = project(tmp_path, {"pkg/late.py": "import torch\nfrom pkg.shard import sharded\n"
                                             "t = torch.from_dlpack(sharded(1, None))\n"})
    result = lint_paths([str(proj)], Config(), jobs=1)
    assert ("pkg/late.py", 3, "JXI002") in rows(result, proj)


def test_workers_give_the_same_findings_and_return_only_their_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXINTEROP_LINT_POOL_BYTES", "0")      # workers even for small files
    extra = {f"pkg/m{i}.py": USE.replace("def main", f"def main{i}") for i in range(12)}
    proj = project(tmp_path, extra)
    one = lint_paths([str(proj)], Config(), jobs=1)
    two = lint_paths([str(proj)], Config(), jobs=2)
    # 13 callers pass sharded values to to_torch(): one finding, at its sink (PLAN decision 1),
    # naming the first caller, with workers or without
    assert rows(one, proj) == rows(two, proj) == [("pkg/bridge.py", 5, "JXI002")]
    assert [f.message for f in one.findings] == [f.message for f in two.findings]
    assert "called from main0() at pkg/m0.py:6" in one.findings[0].message
    session = Session(str(proj), Config(), use_cache=True)
    a, b = str(proj / "pkg" / "m0.py"), str(proj / "pkg" / "m1.py")
    session.lint([a], 1)
    session.store.drain()
    pool._SESSION = session
    try:
        raws, entries, _, _, _ = pool._chunk([b])
    finally:
        pool._SESSION = None
    assert [p for p, _ in raws] == [b]
    assert b in entries and a not in entries            # never the whole store
    assert set(entries) <= {b, str(proj / "pkg" / "shard.py"), str(proj / "pkg" / "bridge.py"),
                            str(proj / "pkg" / "__init__.py")}


def test_nested_package_is_followed_with_python_module_names(tmp_path):
    """Issue 12: a package two folders below ``.git`` is named from the folder above it."""
    write(tmp_path, {"repo/.git/HEAD": "", "repo/tools/sub/pkg/__init__.py": "",
                     "repo/tools/sub/pkg/shard.py": SHARD, "repo/tools/sub/pkg/bridge.py": BRIDGE,
                     "repo/tools/sub/pkg/use.py": USE})
    repo = tmp_path / "repo"
    assert find_root([str(repo / "tools" / "sub" / "pkg" / "use.py")]) == str(repo)
    result = lint_paths([str(repo)], Config())
    assert rows(result, repo) == [("tools/sub/pkg/bridge.py", 5, "JXI002")]


def test_root_is_never_a_home_folder_nor_above_the_work_tree(tmp_path, monkeypatch):
    home = tmp_path / "home"
    write(home, {".git/HEAD": "", "code/pkg/__init__.py": "", "code/pkg/a.py": "x = 1\n",
                 "code/loose.py": "x = 1\n", "work/.git/HEAD": "", "work/lib/b.py": "x = 1\n"})
    monkeypatch.setenv("HOME", str(home))
    assert find_root([str(home / "code" / "pkg" / "a.py")]) == str(home / "code")
    assert find_root([str(home / "code" / "loose.py")]) == str(home / "code")
    assert find_root([str(home / "work" / "lib" / "b.py")]) == str(home / "work")
    write(tmp_path, {"outer/pyproject.toml": "", "outer/repo/.git/HEAD": "", "outer/repo/x.py": ""})
    assert find_root([str(tmp_path / "outer" / "repo" / "x.py")]) == str(tmp_path / "outer" / "repo")


def test_flake8_on_one_file_analyses_only_what_that_file_needs(tmp_path):
    from jaxinterop_lint.flake8_plugin import JaxInteropChecker

    proj = project(tmp_path, {"pkg/other.py": "import jax, torch\nfrom jax.sharding import NamedSharding\n"
                                              "t = torch.from_dlpack(jax.device_put(1, NamedSharding(m, p)))\n"})
    os.mkdir(proj / ".git")
    use = proj / "pkg" / "use.py"
    PARSES.clear()
    JaxInteropChecker.paths = (str(use),)
    out = list(JaxInteropChecker(None, str(use), use.read_text().splitlines(True)).run())
    assert [(ln, msg.split()[0]) for ln, _c, msg, _t in out] == [(6, "JXI002")]
    parsed = {os.path.relpath(p, proj) for p in PARSES}
    assert parsed <= {"pkg/use.py", "pkg/shard.py", "pkg/bridge.py", "pkg/__init__.py"}
    assert "pkg/other.py" not in parsed and "pkg/torch_only.py" not in parsed
    # a real flake8 process reads and fills the command line's cache
    run_cli(".", cwd=proj)
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "pkg/use.py"], cwd=proj,
                       capture_output=True, text=True, timeout=300)
    assert "pkg/use.py:6:12: JXI002" in r.stdout, r.stdout + r.stderr


def _old(path, seconds=3600):
    t = time.time_ns() - seconds * 1_000_000_000
    os.utime(path, ns=(t, t))


def test_creating_a_module_a_cached_file_imports_invalidates_it(tmp_path):
    """Issue 13: results depend on the absence of a module too."""
    proj = project(tmp_path, {"pkg/app.py": "from pkg.helpers import to_torch\nimport jax\n"
                                            "from jax.sharding import NamedSharding\n"
                                            "y = jax.device_put(1, NamedSharding(m, p))\nto_torch(y)\n"})
    assert rows(lint_paths([str(proj)], Config(), use_cache=True), proj) == [("pkg/bridge.py", 5, "JXI002")]
    assert lint_paths([str(proj)], Config(), use_cache=True).analysed_paths == []
    (proj / "pkg" / "helpers.py").write_text(BRIDGE)
    # reported at the sink in helpers.py, which app.py now reaches (PLAN decision 1)
    assert ("pkg/helpers.py", 5, "JXI002") in rows(lint_paths([str(proj)], Config(), use_cache=True), proj)


def test_same_size_and_mtime_with_other_content_is_read_again(tmp_path):
    """Issue 13: ``cp -p`` / ``rsync -a`` of other content (same size and mtime)."""
    proj = project(tmp_path)
    use = proj / "pkg" / "use.py"
    for p in proj.rglob("*.py"):
        _old(p)
    assert rows(lint_paths([str(proj)], Config(), use_cache=True), proj) == [("pkg/bridge.py", 5, "JXI002")]
    st = os.stat(use)
    other = USE.replace("to_torch(sharded(x, mesh))", "to_torch(x)               ")
    assert len(other) == len(USE)
    tmp = proj / "copy.tmp"
    tmp.write_text(other)
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, use)                                   # what rsync -a does
    assert (os.stat(use).st_size, os.stat(use).st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert rows(lint_paths([str(proj)], Config(), use_cache=True), proj) == []


def test_a_file_edited_during_the_run_is_stored_under_the_hash_of_what_was_read(tmp_path, monkeypatch):
    proj = project(tmp_path)
    use = proj / "pkg" / "use.py"
    real = pool.lint_one

    def edit_after_reading(session, path):
        raw = real(session, path)
        if path == str(use):
            # the user saves (a unit that still takes `sharded`: it can pass a multi-device
            # value, so the plan analyses the file again, and finds nothing)
            use.write_text(USE.replace("to_torch(sharded(x, mesh))", "to_torch(x) if sharded else None"))
        return raw

    monkeypatch.setattr(pool, "lint_one", edit_after_reading)
    first = lint_paths([str(proj)], Config(), use_cache=True, jobs=1)
    assert rows(first, proj) == [("pkg/bridge.py", 5, "JXI002")]     # the text that was read
    monkeypatch.undo()
    second = lint_paths([str(proj)], Config(), use_cache=True, jobs=1)
    assert rows(second, proj) == [] and str(use) in second.analysed_paths


def test_gitignore_is_respected_by_default(tmp_path):
    bad = SHARD + "import torch\nt = torch.from_dlpack(sharded(1, None))\n"
    write(tmp_path, {".git/HEAD": "", ".gitignore": "gen/\n*_pb2.py\n!keep_pb2.py\n", "gen/a.py": bad,
                     "x_pb2.py": bad, "keep_pb2.py": bad, "src/.gitignore": "local.py\n", "src/local.py": bad,
                     "src/ok.py": bad})
    found = sorted(discover(["."] if False else [str(tmp_path)]))
    rel = sorted(os.path.relpath(p, tmp_path) for p in found)
    assert rel == ["keep_pb2.py", "src/ok.py"]
    everything = sorted(os.path.relpath(p, tmp_path) for p in discover([str(tmp_path)], respect_gitignore=False))
    assert everything == ["gen/a.py", "keep_pb2.py", "src/local.py", "src/ok.py", "x_pb2.py"]
    r = run_cli("--no-cache", "-q", cwd=tmp_path)
    assert sorted({ln.split(":")[0] for ln in r.stdout.splitlines()}) == ["keep_pb2.py", "src/ok.py"]
    r = run_cli("--no-cache", "-q", "--no-respect-gitignore", cwd=tmp_path)
    assert len({ln.split(":")[0] for ln in r.stdout.splitlines()}) == 5
    r = run_cli("--no-cache", "-q", "gen/a.py", cwd=tmp_path)          # named explicitly: linted
    assert r.stdout.startswith("gen/a.py:")


def test_paths_are_spelled_for_the_current_run_whatever_run_filled_the_cache(tmp_path):
    """Issue 15: no ``./`` prefix; provenance paths relative to the current folder, also when
    the cache was filled from another folder or with absolute paths."""
    proj = project(tmp_path)
    r = run_cli("--output-format", "json", str(proj), cwd=ROOT)       # fills the cache, absolute paths
    first = json.loads(r.stdout)
    assert first and os.path.isabs(first[0]["path"])
    r = run_cli("--output-format", "json", "pkg", cwd=proj)
    (f,) = json.loads(r.stdout)
    assert f["path"] == "pkg/bridge.py"     # at the sink, which use.py reaches (PLAN decision 1)
    assert {s["path"] for s in f["provenance"]} == {"pkg/shard.py", "pkg/use.py", "pkg/bridge.py"}
    r = run_cli("--output-format", "json", ".", cwd=proj / "pkg")
    (f,) = json.loads(r.stdout)
    assert f["path"] == "bridge.py" and {s["path"] for s in f["provenance"]} == {"shard.py", "use.py", "bridge.py"}
    r = run_cli("--output-format", "sarif", ".", cwd=proj / "pkg")
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"]
            for run in json.loads(r.stdout)["runs"] for res in run["results"]
            for flow in res.get("codeFlows", ()) for tf in flow["threadFlows"] for loc in
            (x["location"] for x in tf["locations"])}
    assert uris and not any(u.startswith(("file:", "/", "..")) for u in uris), uris


def test_import_linter_contracts_are_kept():
    """The stages import only the stages below them; no import cycle (pyproject.toml)."""
    exe = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    r = subprocess.run([exe if os.path.exists(exe) else "lint-imports", "--no-cache"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout, r.stdout[-3000:]


BROKEN_HELPER = SHARD + "\n\ndef broken(:\n    pass\n"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_helper_parsed_for_its_importers_that_is_not_valid_python_is_an_error(tmp_path, monkeypatch, jobs):
    """The analysis of ``use.py`` parses ``shard.py`` for ``sharded``; when that fails, the
    finding it would have fed is missing, so ``shard.py`` gets its error line (exit 2), on
    a cold run, with workers, and from the cache."""
    monkeypatch.setenv("JAXINTEROP_LINT_POOL_BYTES", "0")      # workers even for small files
    extra = {f"pkg/m{i}.py": USE.replace("def main", f"def main{i}") for i in range(12)}
    proj = project(tmp_path, {"pkg/shard.py": BROKEN_HELPER, **extra})
    for use_cache in (False, True, True):
        result = lint_paths([str(proj)], Config(), jobs=jobs, use_cache=use_cache)
        errors = [(os.path.relpath(os.path.abspath(f), proj), e.message) for f, e in result.errors]
        assert errors == [("pkg/shard.py", "syntax error: invalid syntax")], (use_cache, errors)
    r = run_cli(str(proj / "pkg"), "--no-cache", "-j", str(jobs), cwd=proj)
    assert r.returncode == 2 and "shard.py:" in r.stderr and "syntax error" in r.stderr, (r.stdout, r.stderr)
