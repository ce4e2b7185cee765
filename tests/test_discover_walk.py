"""Issue 16, discovery with one ``scandir`` per folder: the same files, in the same order, as the
``os.walk`` reading of the rules (flake8-style excludes, virtualenvs, ``.gitignore`` files with
git's semantics, symlinked folders never entered), and project roots read from its listings."""
from __future__ import annotations

import fnmatch
import os
import subprocess

import pytest

from jaxinterop_lint.config import DEFAULT_EXCLUDE
from jaxinterop_lint.pipeline.discover import GitIgnore, discover
from jaxinterop_lint.pipeline.modules import find_root


def walked(paths, exclude, respect_gitignore):
    """The rules of discover() read with os.walk, one check at a time (the reference)."""
    def excluded(path):
        name = os.path.basename(path.rstrip(os.sep)) or path
        full = os.path.abspath(path)
        for pat in exclude:
            pat = pat.rstrip("/")
            for form in (pat, os.path.normpath(pat) + "/*"):
                if any(fnmatch.fnmatchcase(s, form) for s in (name, os.path.normpath(path), full)):
                    return True
        return False

    for top in paths:
        if not os.path.isdir(top):
            yield top
            continue
        start = "." if os.path.normpath(top) == "." else top
        rules = {}
        if respect_gitignore:
            ign = GitIgnore.above(start)
            if ign is not None:
                rules[os.path.abspath(start)] = ign
        for folder, dirs, files in os.walk(start):
            ign = rules.get(os.path.abspath(folder))
            kept = []
            for d in sorted(dirs):
                full = os.path.join(folder, d)
                if excluded(full) or os.path.exists(os.path.join(full, "pyvenv.cfg")):
                    continue
                if ign is not None:
                    if ign.ignored(full, True):
                        continue
                    rules[os.path.abspath(full)] = ign.entering(full)
                kept.append(d)
            dirs[:] = kept
            for f in sorted(files):
                full = os.path.join(folder, f)
                if f.endswith(".py") and not excluded(full) and not (ign is not None and ign.ignored(full, False)):
                    yield full[2:] if start == "." and full.startswith("./") else full


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("build_*\n!keep.py\n*.gen.py\nsub/ign/\n")
    for name in ("sub/ign/x.py", "sub/ok/y.py", "sub/ok/z.gen.py", "keep.py", "a.py", "B.py", "build_x/k.py",
                 "deep/a/b/c.py", "deep/a/d.py", "deep/a/e.py", "sub/ok/venv/v.py", "egg.egg-info/e.py",
                 "x.py/inner.py", "notes.txt", "__pycache__/c.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / "sub/ok/venv/pyvenv.cfg").write_text("")
    (root / "deep/a/.gitignore").write_text("*.py\n!c.py\n!e.py\n")
    (root / "deep/link").symlink_to(root / "sub")
    (root / "linked.py").symlink_to(root / "a.py")
    (root / "broken.py").symlink_to(root / "nowhere.py")
    return root


@pytest.mark.parametrize("paths", [["."], ["sub", "deep/", "./deep", "a.py", "missing.py", "deep//a", "./sub/"]])
@pytest.mark.parametrize("extra", [(), ("*/ok/*", "a.py", "deep/a/e.py"), (".",), ("..",), ("*.py",),
                                   ("sub/ok", "./deep/a", "x.py/inner.py", "build_x/", "?.py", "[a-c].py"),
                                   ("deep/a/b/c.py", "ok/y.py", "ABSOLUTE/sub")])
@pytest.mark.parametrize("gitignore", [True, False])
def test_discovery_walks_as_os_walk_reads_the_rules(tree, monkeypatch, paths, extra, gitignore):
    monkeypatch.chdir(tree)
    extra = tuple(p.replace("ABSOLUTE", str(tree)) for p in extra)
    exclude = DEFAULT_EXCLUDE + extra
    got = list(discover(paths, exclude, (), gitignore))
    assert got == list(walked(paths, exclude, gitignore))
    if paths == ["."] and not extra:
        assert "deep/link/ok/y.py" not in got and "broken.py" in got and "linked.py" in got
        assert "x.py/inner.py" in got and not any("venv" in p or "egg-info" in p for p in got)
        assert ("sub/ign/x.py" in got) == (not gitignore) and ("deep/a/e.py" in got)
        assert got.index("B.py") < got.index("a.py") < got.index("deep/a/b/c.py")


def test_a_root_marker_created_after_a_discovery_is_seen_by_the_next(tmp_path, monkeypatch):
    top = tmp_path / "top"
    (top / "pkg" / "inner").mkdir(parents=True)
    (top / "pyproject.toml").write_text("")
    (top / "pkg" / "inner" / "m.py").write_text("")
    monkeypatch.chdir(top)
    assert list(discover(["."])) == ["pkg/inner/m.py"]
    assert find_root([str(top / "pkg" / "inner")]) == str(top)
    (top / "pkg" / "setup.cfg").write_text("")        # a nested project appears
    assert list(discover(["."])) == ["pkg/inner/m.py"]
    assert find_root([str(top / "pkg" / "inner")]) == str(top / "pkg")
