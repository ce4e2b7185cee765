"""Issue 16, the warm path: the store (format 5) parses only the entries, and of each entry only
the fields, a run reads; what was never read is written back byte for byte; a warm run and a
flake8 run on a cached file import neither libcst nor the analysis walk, and report what a cold
run reports."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import run_cli
from jaxinterop_lint.pipeline import storekey as sk
from jaxinterop_lint.pipeline import store as st
from jaxinterop_lint.pipeline import storeformat as fmt
from jaxinterop_lint.pipeline.store import CACHE_DIR, MAGIC, Store

RESULT = {"data": {"findings": [], "handled": [], "error": None, "analysed": True}, "deps": {}, "absent": []}
SUMMARY = {"data": {"globals": {}, "records": {}}, "deps": {"/p/b.py": "hb"}, "absent": []}
FACTS = {"v": 1, "imports": [["torch", None]], "sink": True}


def signed(path, payload: bytes) -> None:
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(st.seal(sk.secret_key(), str(path), payload))


def test_fields_are_parsed_when_first_read_and_round_trip(key_dir, tmp_path):
    s = Store(str(tmp_path), "k")
    s.put("/p/a.py", "ha", [1, 2, 3, 4], facts=FACTS, result=RESULT, summary=SUMMARY)
    s.save()
    t = Store(str(tmp_path), "k")
    assert isinstance(t.entries["/p/a.py"], bytes)          # nothing parsed before it is asked for
    e = t.get("/p/a.py")
    assert dict.__contains__(e, "result") and not dict.__contains__(e, "summary")   # result eager, summary lazy
    assert e["hash"] == "ha" and e["stamp"] == [1, 2, 3, 4] and e.get("result") == RESULT
    assert "summary" in e and e["summary"] == SUMMARY and e.get("facts") == FACTS
    assert Store.field(e, "summary", "ha", {"/p/b.py": "hb"}.get) == SUMMARY["data"]


def test_what_was_never_read_is_written_back_as_it_was(key_dir, tmp_path):
    s = Store(str(tmp_path), "k")
    s.put("/p/a.py", "ha", facts=FACTS, summary=SUMMARY)
    s.put("/p/b.py", "hb", facts=FACTS)
    s.save()
    [f] = (tmp_path / CACHE_DIR).glob("*.json")
    line_b = [x for x in f.read_bytes().split(b"\n") if x.startswith(b'"/p/b.py"')]
    t = Store(str(tmp_path), "k")
    t.put("/p/a.py", "ha", result=RESULT)                   # a result beside the stored summary
    t.save()
    assert [x for x in f.read_bytes().split(b"\n") if x.startswith(b'"/p/b.py"')] == line_b
    e = Store(str(tmp_path), "k").get("/p/a.py")
    assert e["summary"] == SUMMARY and e["facts"] == FACTS and e["result"] == RESULT
    t.put("/p/a.py", "other", result=RESULT)                # other content: the old fields go
    t.save()
    e = Store(str(tmp_path), "k").get("/p/a.py")
    assert e["hash"] == "other" and e.get("summary") is None and "facts" not in e


@pytest.mark.parametrize("path", ["/p/tab\there.py", "/p/new\nline.py", '/p/quo"te.py', "/p/ü.py",
                                  "/p/back\\slash.py"])
def test_any_path_round_trips(key_dir, tmp_path, path):
    s = Store(str(tmp_path), "k")
    s.put(path, "h", result=RESULT)
    s.put("/p/plain.py", "h2", result=RESULT)
    s.save()
    t = Store(str(tmp_path), "k")
    assert t.get(path)["result"] == RESULT and t.get("/p/plain.py")["hash"] == "h2"


def line(path, head, *fields) -> bytes:
    return b"\t".join([fmt.UNSIGNED, fmt.dumps(path), fmt.dumps(head), *fields])   # (signed by signed())


def test_a_truncated_or_misshapen_line_is_no_entry_and_costs_only_itself(key_dir, tmp_path):
    good = line("/p/ok.py", {"hash": "h"}, b"result", fmt.dumps(RESULT))
    bad = [line("/p/cut.py", {"hash": "h"}, b"result", fmt.dumps(RESULT)[:-3]),     # truncated result
           line("/p/odd.py", {"hash": "h"}, b"result"),                              # a name without a field
           line("/p/head.py", {"hash": "h", "result": RESULT}),                      # a field in the head
           line("/p/twice.py", {"hash": "h"}, b"result", fmt.dumps(RESULT), b"result", fmt.dumps(RESULT)),
           line("/p/name.py", {"hash": "h"}, b"not a name", b"{}"),
           line("/p/plan.py", {"hash": "h"}, b"plan", b'{"data":true,"deps":{"a":1}}'),   # a bad eager field
           b'"/p/nohead.py"', b"garbage\tline"]
    payload = b"\n".join([fmt.HEADER, *bad, good, b'"/p/cut-head.py"\t{"hash":"h'])
    signed(tmp_path / CACHE_DIR / "k.json", payload)
    s = Store(str(tmp_path), "k")
    for p in ["/p/cut.py", "/p/odd.py", "/p/head.py", "/p/twice.py", "/p/name.py", "/p/plan.py",
              "/p/nohead.py", "/p/cut-head.py"]:
        assert s.get(p) is None, p
    assert s.get("/p/ok.py")["result"] == RESULT


def test_a_lazy_field_that_is_cut_or_misshapen_reads_as_absent(key_dir, tmp_path):
    payload = b"\n".join([fmt.HEADER,
                          line("/p/a.py", {"hash": "h"}, b"summary", fmt.dumps(SUMMARY)[:-1], b"facts", b"[1]"),
                          line("/p/b.py", {"hash": "h"}, b"summary", b'{"data":1,"deps":{"x":2}}', b"facts",
                               b"[" * 100_000)])
    signed(tmp_path / CACHE_DIR / "k.json", payload)
    s = Store(str(tmp_path), "k")
    for p in ("/p/a.py", "/p/b.py"):
        e = s.get(p)
        assert e.get("summary") is None and "facts" not in e and Store.field(e, "summary", "h", str) is None


def test_another_format_is_not_read(key_dir, tmp_path):
    entry = {"hash": "h", "result": RESULT}
    signed(tmp_path / CACHE_DIR / "k.json", json.dumps({"format": 3, "files": {"/p/a.py": entry}}).encode())
    assert Store(str(tmp_path), "k").entries == {}
    signed(tmp_path / CACHE_DIR / "k.json", b'{"format":3}\n' + line("/p/a.py", {"hash": "h"}))
    assert Store(str(tmp_path), "k").entries == {}


# -- through the command line and flake8 -------------------------------------------------------------
FILES = {
    "pkg/__init__.py": "",
    "pkg/shard.py": "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
                    "def sharded(x, mesh):\n    return jax.device_put(x, NamedSharding(mesh, P('x')))\n",
    "pkg/bridge.py": "import torch\n\n\ndef to_torch(a):\n    return torch.from_dlpack(a)\n",
    "pkg/use.py": "from pkg.shard import sharded\nfrom pkg.bridge import to_torch\n\n\n"
                  "def main(x, mesh):\n    return to_torch(sharded(x, mesh))\n",
    "pkg/direct.py": "import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
                     "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n",
    "pkg/other.py": "import torch\n\n\ndef f(t):\n    return torch.as_tensor(t)\n",
}

IN_PROCESS = """\
import sys
{body}
heavy = sorted(m for m in sys.modules if m == "libcst" or m.startswith("libcst.")
               or m.startswith("jaxinterop_lint.analysis.") and m.rsplit(".", 1)[1] in ("module", "flow", "expr"))
print("HEAVY", heavy, file=sys.stderr)
"""
CLI = """\
from jaxinterop_lint.cli import main
try:
    main(["--output-format", "concise", "."])
except SystemExit:
    pass
"""
FLAKE8 = """\
from flake8.main.cli import main
try:
    main(["--select=JXI", "-j", "1", {file!r}])
except SystemExit:
    pass
"""


def project(tmp_path):
    root = tmp_path / "proj"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    old = 1_600_000_000
    for name in FILES:
        os.utime(root / name, (old, old))    # old enough for their stat stamps to be stored
    return root


def in_process(script: str, cwd, key_dir):
    r = subprocess.run([sys.executable, "-c", IN_PROCESS.format(body=script)], cwd=cwd, capture_output=True,
                       text=True, timeout=300, env={**os.environ, sk.KEY_ENV: str(key_dir)})
    heavy = [x for x in r.stderr.splitlines() if x.startswith("HEAVY ")]
    assert heavy, r.stderr
    return r.stdout, heavy[-1]


def findings(out: str) -> list:
    return sorted(x for x in out.splitlines() if ": JXI" in x)


def test_a_warm_run_imports_no_libcst_and_reports_the_same(key_dir, tmp_path):
    root = project(tmp_path)
    cold, heavy_cold = in_process(CLI, root, key_dir)
    assert findings(cold) and "libcst" in heavy_cold       # the cold run parsed
    warm, heavy = in_process(CLI, root, key_dir)
    assert findings(warm) == findings(cold)
    assert heavy == "HEAVY []", heavy
    nocache = run_cli("--no-cache", ".", cwd=root, env={sk.KEY_ENV: str(key_dir)})
    assert findings(nocache.stdout) == findings(cold)


@pytest.mark.parametrize("name", ["pkg/direct.py", "pkg/bridge.py", "pkg/other.py"])
def test_flake8_on_a_file_the_cli_cached_imports_no_libcst_and_reports_the_same(key_dir, tmp_path, name):
    root = project(tmp_path)
    assert run_cli(".", cwd=root, env={sk.KEY_ENV: str(key_dir)}).returncode == 1
    out, heavy = in_process(FLAKE8.format(file=name), root, key_dir)
    assert heavy == "HEAVY []", heavy
    cold = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "-j", "1", name], cwd=root,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, sk.KEY_ENV: str(tmp_path / "other-keys")})   # no cache of its own
    assert sorted(out.splitlines()) == sorted(cold.stdout.splitlines())
    assert bool(out.strip()) == (name == "pkg/direct.py"), out   # bridge.py's finding needs use.py reported


def test_the_module_index_climbs_once_per_folder_and_names_every_package(tmp_path):
    from jaxinterop_lint.pipeline.modules import ModuleIndex

    for name in ["a/pkg/__init__.py", "a/pkg/m.py", "a/pkg/sub/__init__.py", "a/pkg/sub/n.py",
                 "b/tools/other/__init__.py", "b/tools/other/o.py", "loose/x.py"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    index = ModuleIndex(str(tmp_path))
    for name in ["a/pkg/m.py", "a/pkg/__init__.py", "a/pkg/sub/n.py", "b/tools/other/o.py", "loose/x.py",
                 "a/pkg/m.py"]:
        index.add_file(str(tmp_path / name))
    assert index.roots == [str(tmp_path), str(tmp_path / "a"), str(tmp_path / "b" / "tools")]
    assert index.module_name(str(tmp_path / "a/pkg/sub/n.py")) == "pkg.sub.n"
    assert index.module_name(str(tmp_path / "b/tools/other/o.py")) == "other.o"
    assert index.find_module("other") == str(tmp_path / "b/tools/other/__init__.py")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG rule is the Linux one")
@pytest.mark.parametrize("xdg", [None, "", "   ", "/elsewhere/cache"])
def test_the_key_folder_is_platformdirs_user_cache_folder_without_importing_it(monkeypatch, xdg):
    import platformdirs

    monkeypatch.delenv(sk.KEY_ENV, raising=False)
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert sk.key_folder() == platformdirs.user_cache_dir("jaxinterop-lint", appauthor=False)
    r = subprocess.run([sys.executable, "-c", "import sys; from jaxinterop_lint.pipeline import storekey as k; "
                        "k.key_folder(); print(sorted(m for m in ('platformdirs', 'secrets', 'tempfile') "
                        "if m in sys.modules))"], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "[]", r.stdout + r.stderr


def test_the_package_digest_follows_every_source_file_and_nothing_else(tmp_path):
    import shutil

    from conftest import ROOT

    shutil.copytree(ROOT / "jaxinterop_lint", tmp_path / "jaxinterop_lint",
                    ignore=shutil.ignore_patterns("__pycache__"))

    def digest():
        r = subprocess.run([sys.executable, "-c", "from jaxinterop_lint.pipeline.run import package_digest; "
                            "print(package_digest())"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(tmp_path)})
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    first = digest()
    assert digest() == first
    (tmp_path / "jaxinterop_lint" / "pipeline" / "__pycache__").mkdir(exist_ok=True)
    (tmp_path / "jaxinterop_lint" / "pipeline" / "__pycache__" / "x.py").write_text("")
    (tmp_path / "jaxinterop_lint" / "notes.txt").write_text("not a source")
    assert digest() == first
    with open(tmp_path / "jaxinterop_lint" / "knowledge" / "apis.py", "a") as f:
        f.write("# an edit\n")
    second = digest()
    assert second != first
    (tmp_path / "jaxinterop_lint" / "fix" / "new_module.py").write_text("")
    assert digest() not in (first, second)


def test_a_lint_of_one_small_file_starts_no_pool_machinery(tmp_path):
    (tmp_path / "small.py").write_text("import torch\n\ndef f(x):\n    return torch.from_dlpack(x)\n")
    script = ("import sys\nfrom jaxinterop_lint.cli import main\ntry:\n    main(['--no-cache', 'small.py'])\n"
              "except SystemExit:\n    pass\nprint('POOL', sorted(m for m in ('multiprocessing', 'concurrent.futures', "
              "'libcst') if m in sys.modules), file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "POOL []" in r.stderr, r.stderr


def test_discovery_excludes_by_name_relative_path_and_absolute_path(tmp_path, monkeypatch):
    from jaxinterop_lint.pipeline.discover import discover

    for name in ["pkg/a.py", "pkg/gen/b.py", "pkg/skip_me.py", "other/c.py", "other/deep/d.py"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    monkeypatch.chdir(tmp_path)
    found = list(discover(["."], extend_exclude=[str(tmp_path / "pkg" / "gen"), "skip_*.py", "other/deep"]))
    assert found == [os.path.join("other", "c.py"), os.path.join("pkg", "a.py")]
    monkeypatch.chdir(tmp_path / "pkg")
    assert list(discover(["."], extend_exclude=[str(tmp_path / "pkg" / "gen")])) == ["a.py", "skip_me.py"]


def test_a_frozen_modules_globals_thaw_when_read_the_same_in_any_order(tmp_path):
    from jaxinterop_lint import Config
    from jaxinterop_lint.pipeline.run import Session
    from jaxinterop_lint.summaries import freeze, thaw

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg" / "shard.py").write_text(
        "import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
        "def sharded(x, mesh):\n    return jax.device_put(x, NamedSharding(mesh, P('x')))\n\n\n"
        "def to_torch(a):\n    return torch.from_dlpack(a)\n\n\n"
        "class Bridge:\n    def __init__(self, mesh):\n        self.mesh = mesh\n\n"
        "    def put(self, x):\n        return sharded(x, self.mesh)\n\n"
        "    def out(self, a):\n        return to_torch(a)\n\n\nalias = to_torch\nDEFAULT = Bridge(None)\n")
    session = Session(str(tmp_path), Config(), use_cache=False)
    path = str(tmp_path / "pkg" / "shard.py")
    session.index.add_file(path)
    data = json.loads(json.dumps(freeze(session.project.analysis_of_path(path, full=True))))
    names = list(data["globals"])
    assert {"sharded", "to_torch", "Bridge", "alias", "DEFAULT"} <= set(names)
    forward, backward = thaw(data, "pkg/shard.py"), thaw(data, "pkg/shard.py")
    assert dict.__len__(forward.globals) == 0 and forward.exporting_names() == {"to_torch", "out"}
    assert "sharded" in forward.globals and "nothing" not in forward.globals and forward.globals.get("nothing") is None
    ahead = [repr(forward.globals[n]) for n in names]
    behind = [repr(backward.globals.get(n)) for n in reversed(names)][::-1]
    assert ahead == behind
    # one record, whichever name reaches it first
    assert forward.globals["alias"].func.local is forward.globals["to_torch"].func.local
    assert backward.globals["to_torch"].func.local is backward.globals["alias"].func.local
    assert sorted(forward.globals) == sorted(names) and len(backward.globals) == len(names)
    broken = json.loads(json.dumps(data))
    broken["globals"]["sharded"] = {"no kind": True}
    assert thaw(broken, "pkg/shard.py").globals.get("sharded") is None


def test_linting_one_cached_file_parses_only_the_entries_it_needs(key_dir, tmp_path, monkeypatch):
    """What a flake8 process does for one file after a CLI run: the store's entries of files
    that file neither imports nor is imported by stay unparsed bytes."""
    from jaxinterop_lint.flake8_plugin import JaxInteropChecker
    from jaxinterop_lint.pipeline import run

    root = project(tmp_path)
    for i in range(20):
        (root / "pkg" / f"unrelated{i}.py").write_text(f"import torch\n\n\ndef g{i}(t):\n    return torch.as_tensor(t)\n")
    assert run_cli(".", cwd=root, env={sk.KEY_ENV: str(key_dir)}).returncode == 1
    monkeypatch.setattr(run, "_SHARED", {})
    monkeypatch.setattr(run, "_save_at_exit", lambda session: None)
    monkeypatch.chdir(root)

    class Options:
        filenames, select, extend_select, extended_default_ignore = ["pkg/direct.py"], ["JXI"], [], []

    for attr in ("config", "exclude", "paths"):      # parse_options sets them on the class
        monkeypatch.setattr(JaxInteropChecker, attr, getattr(JaxInteropChecker, attr))
    JaxInteropChecker.parse_options(Options)
    found = list(JaxInteropChecker(None, "pkg/direct.py", (root / "pkg" / "direct.py").read_text().splitlines(True)).run())
    assert [m.split()[0] for _, _, m, _ in found] == ["JXI002"]
    [session] = run._SHARED.values()
    assert session.analysed == []                                  # the cached result, not an analysis
    unparsed = {p for p, e in session.store.entries.items() if isinstance(e, bytes)}
    assert {str(root / "pkg" / f"unrelated{i}.py") for i in range(20)} <= unparsed
