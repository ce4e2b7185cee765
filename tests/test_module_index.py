"""ModuleIndex.find_module: the file Python would import, found from folder listings made once
a run (no stat per name asked)."""
import os

import pytest

from jaxinterop_lint.pipeline import modules
from jaxinterop_lint.pipeline.modules import ModuleIndex


def _write(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "proj"
    _write(str(root / "pyproject.toml"))
    _write(str(root / "pkg" / "__init__.py"))
    _write(str(root / "pkg" / "mod.py"))
    _write(str(root / "pkg" / "sub" / "__init__.py"))
    _write(str(root / "pkg" / "nsdir" / "inner.py"))          # a folder without __init__.py
    os.makedirs(root / "pkg" / "folder.py")                    # a folder named like a module
    _write(str(root / "src" / "other" / "__init__.py"))
    _write(str(root / "src" / "other" / "deep.py"))
    return str(root)


def test_modules_packages_and_what_is_no_module(tree):
    index = ModuleIndex(tree)
    assert index.find_module("pkg") == os.path.join(tree, "pkg", "__init__.py")
    assert index.find_module("pkg.mod") == os.path.join(tree, "pkg", "mod.py")
    assert index.find_module("pkg.sub") == os.path.join(tree, "pkg", "sub", "__init__.py")
    assert index.find_module("other.deep") == os.path.join(tree, "src", "other", "deep.py")
    assert index.find_module("pkg.nsdir") is None          # as os.path.isfile found it
    assert index.find_module("pkg.nsdir.inner") == os.path.join(tree, "pkg", "nsdir", "inner.py")
    assert index.find_module("pkg.folder") is None         # pkg/folder.py is a folder
    assert index.find_module("pkg.missing") is None
    assert index.find_module("pkg.missing.deeper") is None
    assert index.find_module("numpy") is None               # not a project name


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_symbolic_links_are_followed_and_a_broken_one_is_no_module(tree):
    target = os.path.join(os.path.dirname(tree), "elsewhere.py")
    _write(target)
    os.symlink(target, os.path.join(tree, "pkg", "linked.py"))
    os.symlink(os.path.join(tree, "nowhere.py"), os.path.join(tree, "pkg", "broken.py"))
    index = ModuleIndex(tree)
    assert index.find_module("pkg.linked") == os.path.join(tree, "pkg", "linked.py")
    assert index.find_module("pkg.broken") is None


def test_many_names_from_one_package_list_each_folder_once(tree, monkeypatch):
    listed, stats = [], []
    real, real_isfile = os.scandir, os.path.isfile

    def counting(folder):
        listed.append(folder)
        return real(folder)

    def isfile(path):
        stats.append(path)
        return real_isfile(path)

    index = ModuleIndex(tree)
    assert index.is_project("pkg")      # the top names, listed before counting
    monkeypatch.setattr(modules.os, "scandir", counting)
    monkeypatch.setattr(modules.os.path, "isfile", isfile)
    names = [f"pkg.Name{i}" for i in range(200)] + ["pkg.mod", "pkg.sub"]
    found = [index.find_module(n) for n in names]
    assert found[-2:] == [os.path.join(tree, "pkg", "mod.py"), os.path.join(tree, "pkg", "sub", "__init__.py")]
    assert found[:-2] == [None] * 200
    assert stats == []
    assert 1 <= len(listed) == len(set(listed)) <= 4     # pkg (in two roots), pkg/sub, at most
