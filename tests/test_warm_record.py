"""Issue 16, the warm record (pipeline/warm.py): a run where nothing changed answers from one
small signed file without reading the store, and answers what a cold run answers; any edit of a
file the checks consulted, a module created where one was missing, other files or other rules,
or a record that is not this user's, falls back to the full path."""
from __future__ import annotations

import os

import pytest

from jaxinterop_lint import Config
from jaxinterop_lint.engine import lint_paths
from jaxinterop_lint.pipeline import run as run_mod
from jaxinterop_lint.pipeline import store as st
from jaxinterop_lint.pipeline import storeformat as fmt
from jaxinterop_lint.pipeline import storekey as sk
from jaxinterop_lint.pipeline import warm
from jaxinterop_lint.pipeline.store import CACHE_DIR, MAGIC, Store

OLD = 1_600_000_000
CALLER = ("import torch\nfrom {module} import make\n\n\ndef main(x, m):\n"
          "    y = make(x, m)\n    return torch.from_dlpack(y)\n")
PLAIN = "def make(x, m):\n    return x\n"
SHARDED = ("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
           "def make(x, m):\n    return jax.device_put(x, NamedSharding(m, P('x')))\n")
FINDING = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
           "def f(x, m):\n    y = jax.device_put(x, NamedSharding(m, P('x')))\n    return torch.from_dlpack(y)\n")


def write(root, files: dict) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        os.utime(p, (OLD, OLD))     # old enough for its stat stamp to be trusted


def project(tmp_path, files: dict):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    write(root, files)
    return root


@pytest.fixture
def answers(monkeypatch):
    """The outcomes of :func:`warm.answer` (None: a miss), in order."""
    seen = []
    real = warm.answer

    def spy(*a, **k):
        out = real(*a, **k)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(warm, "answer", spy)
    return seen


def lint(root, monkeypatch, paths=(".",), **config):
    monkeypatch.chdir(root)
    r = lint_paths(list(paths), Config(**config), use_cache=True)
    return sorted((f.path, f.line, f.column, f.code, f.message) for f in r.findings), r


def test_a_run_where_nothing_changed_answers_from_the_record_without_reading_the_store(
        key_dir, tmp_path, monkeypatch, answers):
    root = project(tmp_path, {"a.py": CALLER.format(module="helpers"), "helpers.py": SHARDED, "b.py": FINDING})
    cold, _ = lint(root, monkeypatch)
    assert any((f[0], f[1], f[3]) == ("a.py", 7, "JXI002") for f in cold) and any(f[0] == "b.py" for f in cold), cold
    assert lint(root, monkeypatch)[0] == cold       # every result from the store: the record is written
    assert answers == [False, False]
    assert list((root / CACHE_DIR).glob(f"*{warm.SUFFIX}"))
    loads = []
    real = Store._read
    monkeypatch.setattr(Store, "_read", lambda self, *a: loads.append(self.name) or real(self, *a))
    again, r = lint(root, monkeypatch)
    assert answers[-1] is True and again == cold and r.analysed == 0
    assert not [n for n in loads if n.endswith(".json")], loads     # the store file was never read
    nocache = lint_paths(["."], Config(), use_cache=False)
    assert sorted((f.path, f.line, f.column, f.code, f.message) for f in nocache.findings) == cold


def test_an_edited_dependency_is_seen_after_a_warm_record(key_dir, tmp_path, monkeypatch, answers):
    root = project(tmp_path, {"a.py": CALLER.format(module="helpers"), "helpers.py": PLAIN})
    for _ in range(3):
        assert lint(root, monkeypatch)[0] == []
    assert answers[-1] is True
    write(root, {"helpers.py": SHARDED})        # the same old mtime: the ctime and size tell
    found, _ = lint(root, monkeypatch)
    assert answers[-1] is False and any((f[0], f[1], f[3]) == ("a.py", 7, "JXI002") for f in found)
    write(root, {"helpers.py": PLAIN})
    assert lint(root, monkeypatch)[0] == []


@pytest.mark.parametrize("module", ["helpers", "pkg.sub.helpers"])
def test_creating_a_module_the_run_found_missing_is_seen_after_a_warm_record(
        key_dir, tmp_path, monkeypatch, answers, module):
    root = project(tmp_path, {"a.py": CALLER.format(module=module)})
    for _ in range(3):      # a.py alone is reported: the module created is no new reported file
        assert lint(root, monkeypatch, ["a.py"])[0] == []
    assert answers[-1] is True
    where = module.replace(".", "/")
    files = {f"{where}.py": SHARDED}
    parts = module.split(".")[:-1]
    for i in range(len(parts)):
        files["/".join(parts[:i + 1]) + "/__init__.py"] = ""
    write(root, files)
    found, _ = lint(root, monkeypatch, ["a.py"])
    assert answers[-1] is False
    assert any((f[0], f[1], f[3]) == ("a.py", 7, "JXI002") for f in found), found


def test_a_new_file_or_other_rules_are_not_answered_by_the_record(key_dir, tmp_path, monkeypatch, answers):
    root = project(tmp_path, {"a.py": CALLER.format(module="helpers"), "helpers.py": PLAIN})
    for _ in range(3):
        lint(root, monkeypatch)
    assert answers[-1] is True
    lint(root, monkeypatch, extend_select=("JXI009",))     # other rules enabled: another record key
    assert answers[-1] is False
    write(root, {"c.py": FINDING})
    found, _ = lint(root, monkeypatch)
    assert answers[-1] is False and any(f[0] == "c.py" for f in found)


def test_a_cp_p_of_other_bytes_over_a_recorded_file_is_linted_again(key_dir, tmp_path, monkeypatch, answers):
    clean = FINDING.replace("torch.from_dlpack(y)", "torch.from_numpy(y) ")
    assert len(clean) == len(FINDING)
    root = project(tmp_path, {"a.py": clean})
    for _ in range(3):
        assert lint(root, monkeypatch)[0] == []
    assert answers[-1] is True
    (tmp_path / "other.py").write_text(FINDING)
    os.utime(tmp_path / "other.py", (OLD, OLD))
    os.system(f"cp -p {tmp_path / 'other.py'} {root / 'a.py'}")
    assert os.stat(root / "a.py").st_mtime_ns == OLD * 10**9
    found, _ = lint(root, monkeypatch)
    assert answers[-1] is False and [f[3] for f in found] == ["JXI002"]


def test_files_modified_just_now_get_no_record(key_dir, tmp_path, monkeypatch):
    root = project(tmp_path, {"b.py": FINDING})
    (root / "b.py").write_text(FINDING)      # mtime now: not trusted by its stamp
    for _ in range(3):
        lint(root, monkeypatch)
    assert not list((root / CACHE_DIR).glob(f"*{warm.SUFFIX}"))


def _record_file(root):
    [f] = (root / CACHE_DIR).glob(f"*{warm.SUFFIX}")
    return f


def _resign(f, payload: bytes, keys) -> None:
    key = (keys / "key").read_bytes()
    f.write_bytes(st.seal(key, str(f), payload))


def test_a_record_forged_or_misshapen_is_not_believed(key_dir, tmp_path, monkeypatch, answers):
    root = project(tmp_path, {"b.py": FINDING})
    for _ in range(2):
        cold, _ = lint(root, monkeypatch)
    assert cold
    f = _record_file(root)
    data = f.read_bytes()
    entries = fmt.decode(data[data.index(b"\n") + 1:])
    for r in entries[warm.ENTRY]["plan"]["data"]["raws"]:
        r.update(findings=[], handled=[], error=None)
    forged = fmt.payload(entries)
    f.write_bytes(MAGIC + b"0" * 64 + b"\n" + forged)          # not this user's MAC
    assert lint(root, monkeypatch)[0] == cold and answers[-1] is False
    _resign(f, forged, key_dir)                                  # the user's own key: believed
    assert lint(root, monkeypatch)[0] == [] and answers[-1] is True
    for bad in ({"stamps": "x"}, {"of": [99]}, {"absent": ["/"]}, {"raws": [{"findings": "x"}]}):
        e = fmt.decode(forged)
        e[warm.ENTRY]["plan"]["data"].update(bad)
        _resign(f, fmt.payload(e), key_dir)
        assert lint(root, monkeypatch)[0] == cold and answers[-1] is False, bad
        _resign(f, forged, key_dir)


def test_the_record_is_kept_only_for_the_same_files_and_rules(key_dir, tmp_path, monkeypatch):
    root = project(tmp_path, {"b.py": FINDING, "c.py": PLAIN})
    for _ in range(2):
        lint(root, monkeypatch)
    cfg = Config()
    store = warm.store_for(str(root), run_mod.store_key(cfg))
    files = [str(root / "b.py"), str(root / "c.py")]
    enabled = cfg.enabled()
    got = warm.answer(store, files[::-1], enabled)
    assert got is not None and set(got) == set(files) and got[files[0]]["findings"]
    assert warm.answer(store, files[:1], enabled) is None
    assert warm.answer(store, files, enabled | {"JXI009"}) is None


def test_still_absent_reads_listings_and_asks_what_it_finds(tmp_path):
    (tmp_path / "there").mkdir()
    (tmp_path / "there" / "Mod.py").write_text("")
    os.symlink(tmp_path / "nowhere", tmp_path / "there" / "broken.py")
    assert warm.still_absent(warm.grouped([str(tmp_path / "there" / "broken.py"),     # listed, not existing
                                           str(tmp_path / "there" / "mod.py"),        # another case
                                           str(tmp_path / "gone" / "deep" / "x.py"),
                                           str(tmp_path / "there" / "pkg" / "__init__.py")]))
    assert warm.grouped([str(tmp_path / "gone" / "deep" / "x.py")]) == {str(tmp_path): ["gone"]}
    assert not warm.still_absent({str(tmp_path / "there"): ["x.py", "Mod.py"]})
    (tmp_path / "gone" / "deep").mkdir(parents=True)
    assert not warm.still_absent(warm.grouped([str(tmp_path / "none.py"), str(tmp_path / "gone")]))
    (tmp_path / "a-file.py").write_text("")
    assert warm.still_absent({str(tmp_path / "a-file.py" / "sub"): ["x.py"], str(tmp_path / "a-file.py"): ["y"]})


def test_a_record_only_ever_replaces_the_one_before(key_dir, tmp_path, monkeypatch):
    root = project(tmp_path, {"b.py": FINDING, "c.py": PLAIN})
    for _ in range(2):
        lint(root, monkeypatch)
    monkeypatch.chdir(root)
    for _ in range(2):
        lint_paths(["c.py"], Config(), use_cache=True)
    data = _record_file(root).read_bytes()
    entries = fmt.decode(data[data.index(b"\n") + 1:])
    assert list(entries) == [warm.ENTRY]
    assert entries[warm.ENTRY]["hash"] == warm.record_key([str(root / "c.py")], Config().enabled())


@pytest.mark.parametrize("target", ["/dev/zero", "FIFO"])
def test_a_record_file_that_is_a_device_or_a_fifo_is_not_read(key_dir, tmp_path, monkeypatch, answers, target):
    root = project(tmp_path, {"b.py": FINDING})
    for _ in range(2):
        cold, _ = lint(root, monkeypatch)
    f = _record_file(root)
    f.unlink()
    os.mkfifo(f) if target == "FIFO" else f.symlink_to(target)
    assert lint(root, monkeypatch)[0] == cold and answers[-1] is False


# (modules the standard library loads by itself are not counted: pathlib imports glob on 3.13)
LOADED = """
import sys
import pathlib
pre = set(sys.modules)
from jaxinterop_lint import cli
code = cli.main(["--quiet", "."])
heavy = ("jaxinterop_lint.pipeline.plan", "jaxinterop_lint.pipeline.demand", "jaxinterop_lint.pipeline.analyse",
         "jaxinterop_lint.pipeline.judge", "jaxinterop_lint.adoption", "libcst", "shutil", "difflib", "configparser",
         "glob", "jaxinterop_lint.finding", "jaxinterop_lint.noqa")
print("LOADED", sorted(m for m in heavy if m in sys.modules and m not in pre), code)
"""


@pytest.mark.parametrize("with_finding", [True, False])
def test_a_run_the_record_answers_loads_none_of_the_stages_below_it(key_dir, tmp_path, with_finding):
    import subprocess
    import sys

    helpers = SHARDED if with_finding else PLAIN
    root = project(tmp_path, {"a.py": CALLER.format(module="helpers"), "helpers.py": helpers, "c.py": PLAIN})
    env = {**os.environ, sk.KEY_ENV: str(key_dir)}
    outs = [subprocess.run([sys.executable, "-c", LOADED], cwd=root, capture_output=True, text=True, env=env,
                           timeout=300) for _ in range(3)]
    lines = [[x for x in o.stdout.splitlines() if x.startswith("LOADED")][-1] for o in outs]
    code = " 1" if with_finding else " 0"
    assert "jaxinterop_lint.pipeline.plan" in lines[0] and lines[0].endswith(code)    # cold: planned
    # the findings' records and the noqa directives are read only when there is a finding
    expected = ["jaxinterop_lint.finding", "jaxinterop_lint.noqa"] if with_finding else []
    assert lines[2] == f"LOADED {expected}{code}", lines[2]
    found = [sorted(x for x in o.stdout.splitlines() if ": JXI" in x) for o in outs]
    assert bool(found[0]) == with_finding and found[2] == found[1] == found[0]


@pytest.mark.parametrize("columns", [None, "120", "0", "x"])
def test_the_help_width_is_shutils_without_importing_it(monkeypatch, columns):
    import shutil

    from jaxinterop_lint.cli_extras import terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


def test_requirements_files_are_globs(tmp_path):
    import glob

    from jaxinterop_lint.jaxrange import _requirements_files

    for name in ("requirements.txt", "requirements-dev.txt", "requirementstxt", "Requirements.txt", "reqs.txt",
                 "requirements.txt.bak", "requirements_x.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "requirements-d.txt").mkdir()
    assert _requirements_files(str(tmp_path)) == sorted(glob.glob(os.path.join(str(tmp_path), "requirements*.txt")))
    assert _requirements_files(str(tmp_path / "missing")) == []
