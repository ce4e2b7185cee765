"""The pre-commit hooks, run by the real ``pre-commit`` against a copy of this checkout.

The hook repository is a temporary git repository holding the working tree as it is (tracked
and untracked, not ignored files), committed; pre-commit builds its own virtualenv from it with
pip, as it does for users.  One PRE_COMMIT_HOME serves the whole module, so the environment is
built once.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow   # pre-commit builds a virtualenv (the quick tier leaves it out)

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
BAD = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
       "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
GOOD = "import numpy as np\nimport torch\nt = torch.from_numpy(np.ones(3))\n"
FIXABLE = "import jax\n\n\ndef first(arr: jax.Array):\n    return arr.device_buffer\n"
FIXED = "import jax\n\n\ndef first(arr: jax.Array):\n    return arr.addressable_data(0)\n"


def git(*args, cwd):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """A git repository with this working tree committed; returns (path, commit)."""
    repo = tmp_path_factory.mktemp("hook-repo")
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / rel)
    assert (repo / ".pre-commit-hooks.yaml").is_file()
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "snapshot", cwd=repo)
    return repo, git("rev-parse", "HEAD", cwd=repo).strip()


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory):
    return tmp_path_factory.mktemp("pre-commit-home")


def project(tmp_path, hook_repo, hook_ids, files):
    """A git repository using ``hook_ids`` of the hook repository, with ``files`` staged."""
    repo, rev = hook_repo
    if hook_ids:
        hooks = "".join(f"      - id: {h}\n" for h in hook_ids)
        (tmp_path / ".pre-commit-config.yaml").write_text(
            f"repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n{hooks}")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    git("init", "-q", cwd=tmp_path)
    git("add", "-A", cwd=tmp_path)
    return tmp_path


def pre_commit(home, *args, cwd):
    assert PRE_COMMIT.exists(), "pre-commit must be installed beside the interpreter"
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([str(PRE_COMMIT), *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=900)


def test_check_hook_fails_on_a_bad_file_and_passes_a_clean_one(tmp_path, hook_repo, pre_commit_home):
    proj = project(tmp_path, hook_repo, ["jaxinterop-lint"], {"bad.py": BAD, "good.py": GOOD})
    r = pre_commit(pre_commit_home, "run", "--all-files", cwd=proj)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "jaxinterop-lint" in out and "Failed" in out
    assert "bad.py:5:5: JXI002 torch.from_dlpack() cannot export `y`" in out
    assert "good.py:" not in out
    r = pre_commit(pre_commit_home, "run", "--files", "good.py", cwd=proj)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Passed" in r.stdout
    # the project's pyproject.toml configures the hook, excludes included
    (proj / "pyproject.toml").write_text('[tool.jaxinterop-lint]\nextend-exclude = ["bad.py"]\n')
    git("add", "-A", cwd=proj)
    r = pre_commit(pre_commit_home, "run", "--all-files", cwd=proj)
    assert r.returncode == 0, r.stdout + r.stderr


def test_fix_hook_rewrites_the_file(tmp_path, hook_repo, pre_commit_home):
    proj = project(tmp_path, hook_repo, ["jaxinterop-lint-fix"], {"old.py": FIXABLE, "good.py": GOOD})
    r = pre_commit(pre_commit_home, "run", "--all-files", cwd=proj)
    assert r.returncode == 1, r.stdout + r.stderr     # pre-commit fails a hook that changed files
    assert "files were modified by this hook" in r.stdout
    assert (proj / "old.py").read_text() == FIXED
    assert (proj / "good.py").read_text() == GOOD
    git("add", "-A", cwd=proj)
    r = pre_commit(pre_commit_home, "run", "--all-files", cwd=proj)
    assert r.returncode == 0, r.stdout + r.stderr


def test_try_repo_runs_the_hooks_of_the_checkout(tmp_path, hook_repo, pre_commit_home):
    """``pre-commit try-repo`` straight on the hook repository, as the README suggests for a trial."""
    repo, rev = hook_repo
    proj = project(tmp_path, hook_repo, [], {"bad.py": BAD})
    r = pre_commit(pre_commit_home, "try-repo", str(repo), "jaxinterop-lint", "--ref", rev, "--all-files",
                   cwd=proj)
    assert r.returncode == 1 and "bad.py:5:5: JXI002" in r.stdout + r.stderr
