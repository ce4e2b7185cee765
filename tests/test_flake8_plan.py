"""flake8 on a folder plans the project once, in flake8's main process (issue 16): its workers
inherit the plan (or read the facts from the cache saved there) and never read and plan the
whole project again; each file is then analysed only when it can make a finding, and the
findings are the command line's."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import run_cli

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
