"""flake8 on a folder plans the project once, in flake8's main process (issue 16): its workers
inherit the plan (or read the facts from the cache saved there) and never read and plan the
whole project again; each file is then analysed only when it can make a finding, and the
findings are the command line's."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import run_cli, write_files

BAD = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
       "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")


def _project(tmp_path, n_plain=12):
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "bad.py").write_text(BAD)
    for i in range(n_plain):
        (root / "pkg" / f"plain{i}.py").write_text(f"import os\n\n\ndef f{i}(p):\n    return os.path.join(p, 'x')\n")
    return root


@pytest.fixture
def plugin(monkeypatch):
    """The plugin class and the pipeline's run module, with this test's sessions only."""
    from jaxinterop_lint.flake8_plugin import JaxInteropChecker
    from jaxinterop_lint.pipeline import run

    monkeypatch.setattr(run, "_SHARED", {})
    monkeypatch.setattr(run, "_ROOTS", {})
    monkeypatch.setattr(run, "_save_at_exit", lambda session: None)
    for attr in ("config", "exclude", "paths"):      # parse_options sets them on the class
        monkeypatch.setattr(JaxInteropChecker, attr, getattr(JaxInteropChecker, attr))
    return JaxInteropChecker, run


def _options(*paths):
    class Options:
        filenames, select, extend_select, extended_default_ignore = list(paths), ["JXI"], [], []
    return Options


def test_a_folder_is_planned_once_before_the_workers_and_then_read_no_more(plugin, tmp_path, monkeypatch):
    checker, run = plugin
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    checker.parse_options(_options("pkg"))
    [session] = run._SHARED.values()
    files = sorted(str(p) for p in (root / "pkg").glob("*.py"))
    # the plan of every file under the paths, made in the main process (what workers inherit)
    assert session._graph_known and set(files) <= set(session.plan._facts)
    reads = session.reader.reads
    assert reads == len(files)
    out = {}
    for f in files:
        rel = os.path.relpath(f)
        out[rel] = [m.split()[0] for _, _, m, _ in checker(None, rel, open(f).read().splitlines(True)).run()]
    assert out.pop("pkg/bad.py") == ["JXI002"] and not any(out.values())
    assert session.reader.reads == reads                 # no file read again, none planned again
    assert session.analysed == [str(root / "pkg" / "bad.py")]   # only the file that can make a finding


def test_a_plan_that_fails_in_part_is_dropped_and_each_file_lints_alone(plugin, tmp_path, monkeypatch):
    checker, run = plugin
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    real = run.Session.know_importers

    def broken(self, under=None):
        real(self, under)
        raise RuntimeError("a bug of the plan")

    monkeypatch.setattr(run.Session, "know_importers", broken)
    checker.parse_options(_options("pkg"))         # never a traceback from flake8's options
    assert run._SHARED == {}                        # no half-made plan is kept
    monkeypatch.setattr(run.Session, "know_importers", real)
    found = list(checker(None, "pkg/bad.py", (root / "pkg" / "bad.py").read_text().splitlines(True)).run())
    assert [m.split()[0] for _, _, m, _ in found] == ["JXI002"]


def test_one_file_is_not_planned_ahead(plugin, tmp_path, monkeypatch):
    checker, run = plugin
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    checker.parse_options(_options("pkg/plain0.py"))
    assert run._SHARED == {}          # the editor's case: nothing before flake8 asks for the file


def test_flake8_on_a_folder_with_workers_reports_what_the_cli_reports(tmp_path):
    root = _project(tmp_path)
    (root / "pkg" / "quiet.py").write_text(BAD.replace("from_dlpack(y)", "from_dlpack(y)  # noqa: JXI002"))
    ours = run_cli("--output-format", "concise", "--quiet", "--no-cache", "pkg", cwd=root)
    for jobs in ("1", "2"):
        r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", f"--jobs={jobs}", "pkg"], cwd=root,
                           capture_output=True, text=True, timeout=300)
        assert sorted(r.stdout.replace("[*] ", "").splitlines()) == sorted(ours.stdout.splitlines()), r.stderr
        assert r.returncode == 1 and "pkg/bad.py:5:" in r.stdout


# -- a file flake8 walks into that the command line skips -------------------------------------------
CONTEXT_FILES = {
    "pkg/__init__.py": "",
    "pkg/helper.py": "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
                     "def make(x):\n    mesh = jax.make_mesh((len(jax.devices()),), ('x',))\n"
                     "    return jax.device_put(x, NamedSharding(mesh, P('x')))\n",
    "pkg/lib.py": "import torch\n\n\ndef to_torch(y):\n    return torch.from_dlpack(y)\n",
    "pkg/a.py": "from pkg.helper import make\nfrom pkg.lib import to_torch\n\n\n"
                "def run(x):\n    return to_torch(make(x))\n",
}


def _flake8(root, *args):
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", *args], cwd=root,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return sorted(line.split(" ")[0] for line in r.stdout.replace("./", "").splitlines())


@pytest.mark.parametrize("ignored_by", [".gitignore", ".git/info/exclude"])
def test_a_caller_git_ignored_after_a_cli_run_gives_flake8_no_context(tmp_path, ignored_by):
    """``pkg/a.py`` hands a sharded value to ``lib.to_torch``: the command line reports it at
    ``lib.py`` (a calling context).  Once git ignores ``a.py``, the command line lints it no
    more and reports nothing; flake8 still walks into it.  ``flake8 --select=JXI .`` must
    report what ``jaxinterop-lint .`` reports, with the command line's cache from before the
    ``.gitignore`` (it kept ``lib.py``'s finding: the attack of stop 49) and without (``a.py``
    handed its export on to ``lib.py``, which counted no context from the ignored ``a.py``:
    reported nowhere, depending on the order).  Named on its own, ``a.py`` is linted by both."""
    root = write_files(tmp_path / "proj", CONTEXT_FILES)
    (root / ".git" / "info").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    before = run_cli("--output-format", "concise", "--quiet", ".", cwd=root)
    assert before.stdout.startswith("pkg/lib.py:5:12: JXI002"), before.stdout + before.stderr
    (root / ignored_by).write_text("pkg/a.py\n")
    ours = run_cli("--output-format", "concise", "--quiet", "--no-cache", ".", cwd=root)
    assert ours.stdout == "" and ours.returncode == 0, ours.stdout + ours.stderr
    for jobs in ("1", "2"):
        assert _flake8(root, f"--jobs={jobs}", ".") == [], jobs          # the command line's cache
    shutil.rmtree(root / ".jaxinterop_lint_cache")
    assert _flake8(root, "--jobs=1", ".") == []
    alone = run_cli("--output-format", "concise", "--quiet", "--no-cache", "pkg/a.py", cwd=root)
    assert alone.stdout.startswith("pkg/a.py:6:12: JXI002"), alone.stdout + alone.stderr
    assert _flake8(root, "pkg/a.py") == ["pkg/a.py:6:12:"]


def test_flake8_on_a_folder_skips_what_the_cli_skips_there_and_lints_it_when_named(tmp_path):
    """A copy of the package under ``build/`` (a default exclude of the command line, not of
    flake8): ``flake8 --select=JXI .`` reports only ``pkg/bad.py``, as ``jaxinterop-lint .``
    does; named on its own, the copy is linted by both."""
    root = _project(tmp_path, n_plain=1)
    (root / "build" / "lib" / "pkg").mkdir(parents=True)
    (root / "build" / "lib" / "pkg" / "bad.py").write_text(BAD)
    ours = run_cli("--output-format", "concise", "--quiet", "--no-cache", ".", cwd=root)
    assert [line.split(" ")[0] for line in ours.stdout.splitlines()] == ["pkg/bad.py:5:5:"], ours.stdout
    assert _flake8(root, "--jobs=1", ".") == ["pkg/bad.py:5:5:"]
    named = run_cli("--output-format", "concise", "--quiet", "--no-cache", "build/lib/pkg/bad.py", cwd=root)
    assert named.stdout.startswith("build/lib/pkg/bad.py:5:5:"), named.stdout
    assert _flake8(root, "build/lib/pkg/bad.py") == ["build/lib/pkg/bad.py:5:5:"]
    # a table's own ``exclude`` replaces the defaults, for both
    with open(root / "pyproject.toml", "a") as fh:
        fh.write('\n[tool.jaxinterop-lint]\nexclude = ["gen"]\n')
    both = ["build/lib/pkg/bad.py:5:5:", "pkg/bad.py:5:5:"]
    ours = run_cli("--output-format", "concise", "--quiet", "--no-cache", ".", cwd=root)
    assert sorted(line.split(" ")[0] for line in ours.stdout.splitlines()) == both, ours.stdout
    assert _flake8(root, "--jobs=1", ".") == both


# -- one file after a command-line run: the cached result, with no plan -----------------------------
FILES = {
    "pkg/__init__.py": "",
    "pkg/bridge.py": "import torch\n\n\ndef to_torch(a):\n    return torch.from_dlpack(a)\n",
    "pkg/use.py": "import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\nfrom pkg.bridge import to_torch\n\n\n"
                  "def main(x, mesh):\n    return to_torch(jax.device_put(x, NamedSharding(mesh, P('x'))))\n",
    "pkg/direct.py": BAD,
    "pkg/other.py": "import torch\n\n\ndef f(t):\n    return torch.as_tensor(t)\n",
}
# What a flake8 process imported of the plan, the analysis and the tables, and OpenSSL (the
# store's MAC is keyed BLAKE2b, a small file's hash CPython's own SHA-1: issue 16).
PLANNING = ("jaxinterop_lint.pipeline.plan", "jaxinterop_lint.pipeline.words", "jaxinterop_lint.pipeline.facts",
            "jaxinterop_lint.pipeline.demand", "jaxinterop_lint.pipeline.analyse", "jaxinterop_lint.knowledge.apis",
            "libcst", "_hashlib", "hmac")
FLAKE8_IN_PROCESS = """\
import sys
from flake8.main.cli import main
try:
    main(["--select=JXI", "-j", "1", {file!r}])
except SystemExit:
    pass
print("LOADED", sorted(m for m in sys.modules if m in {planning!r}), file=sys.stderr)
"""


def _flake8_loading(root, name, key_dir):
    from jaxinterop_lint.pipeline import storekey as sk

    r = subprocess.run([sys.executable, "-c", FLAKE8_IN_PROCESS.format(file=name, planning=PLANNING)], cwd=root,
                       capture_output=True, text=True, timeout=300, env={**os.environ, sk.KEY_ENV: str(key_dir)})
    [loaded] = [x for x in r.stderr.splitlines() if x.startswith("LOADED ")]
    return sorted(r.stdout.splitlines()), loaded


@pytest.mark.parametrize("name", ["pkg/direct.py", "pkg/other.py", "pkg/bridge.py"])
def test_flake8_on_one_file_the_cli_cached_needs_no_plan_and_reports_the_same(key_dir, tmp_path, name):
    from jaxinterop_lint.pipeline import storekey as sk

    root = tmp_path / "proj"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
        os.utime(root / rel, (1_600_000_000, 1_600_000_000))   # old enough for stat stamps to be stored
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (root / ".git").mkdir()
    assert run_cli(".", cwd=root, env={sk.KEY_ENV: str(key_dir)}).returncode == 1
    out, loaded = _flake8_loading(root, name, key_dir)
    cold, _ = _flake8_loading(root, name, tmp_path / "other-keys")     # no cache of its own
    assert out == cold and bool(out) == (name == "pkg/direct.py"), out
    if name == "pkg/bridge.py":
        # judged by the CLI with use.py's calling context: with only bridge.py reported the
        # plan decides again (no finding: its caller is not reported)
        assert "jaxinterop_lint.pipeline.plan" in loaded
    else:
        assert loaded == "LOADED []", loaded
