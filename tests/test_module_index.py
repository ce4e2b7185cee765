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


SHARDED_HELPER = ("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\ndef make(x):\n"
                  "    mesh = jax.make_mesh((len(jax.devices()),), ('x',))\n"
                  "    return jax.device_put(x, NamedSharding(mesh, P('x')))\n")
PLAIN_HELPER = "def make(x):\n    return x\n"
USE = "import torch\n{}\n\n\ndef run(x):\n    return torch.from_dlpack(make(x))\n"


def test_each_folder_of_a_monorepo_imports_its_own_package_of_a_shared_name(tmp_path):
    """``services/a/app`` and ``services/b/app`` are both package ``app``: each
    ``app/use.py`` imports its own ``app.helper`` (the folder above its package first, as
    ``python -m app.use`` run there does), from the command line, cached or not, and from
    flake8 on a folder or on the file alone (attack48's s08: the second folder's imports
    were resolved in the first folder's package)."""
    import subprocess
    import sys

    from conftest import run_cli, write_files

    files = {"pyproject.toml": "[project]\nname = 'mono'\n"}
    for svc, helper in (("a", PLAIN_HELPER), ("b", SHARDED_HELPER)):
        files.update({f"services/{svc}/app/__init__.py": "", f"services/{svc}/app/helper.py": helper,
                      f"services/{svc}/app/use.py": USE.format("from app.helper import make"),
                      f"services/{svc}/app/rel.py": USE.format("from .helper import make")})
    write_files(tmp_path, files)
    index = ModuleIndex(str(tmp_path))
    for p in sorted(tmp_path.rglob("*.py")):
        index.add_file(str(p))
    a, b = (str(tmp_path / f"services/{s}/app/helper.py") for s in "ab")
    assert index.find_module("app.helper") == a        # without an importer: the roots' order
    assert index.find_module("app.helper", str(tmp_path / "services/b/app/use.py")) == b
    assert index.find_module("app.helper", str(tmp_path / "services/a/app/use.py")) == a

    expected = ["services/b/app/rel.py:6:12: JXI002", "services/b/app/use.py:6:12: JXI002"]

    def codes(out: str) -> list:
        return sorted(" ".join(line.replace("./", "").split()[:2]) for line in out.splitlines() if ": JXI" in line)

    for args in (("--no-cache",), ("--jobs=1",), ("--jobs=1",)):
        r = run_cli(*args, "--output-format", "concise", ".", cwd=tmp_path)
        assert codes(r.stdout) == expected, r.stdout
    for target in (".", "services/a/app/use.py", "services/b/app/use.py"):
        f8 = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", target], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
        assert codes(f8.stdout) == [e for e in expected if target == "." or e.startswith(target)], (target, f8.stdout)
