"""A file linted alone in a project without JAX code (issue 16, flake8 on one file with no
cache): whether any module can hold JAX code is read from the text of every module
(``pipeline/universe.py``), not from the facts of each module of the file's import graph,
and the decision is stored with the plan's epoch, which keeps every module's hash and every
folder's module names."""
from __future__ import annotations

import pytest

from jaxinterop_lint import Config

LINKS = 24
SHARD = ("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
         "def {name}(x):\n    mesh = jax.make_mesh((len(jax.devices()),), ('x',))\n"
         "    return jax.device_put(x, NamedSharding(mesh, P('x')))\n")
USE = "import torch\nfrom pkg.m0 import f0\n\n\ndef run(x):\n    return torch.from_dlpack(f0(x))\n"


@pytest.fixture
def proj(tmp_path):
    """A PyTorch project: ``use.py`` exports what ``f0`` returns through a chain of
    ``LINKS`` modules (more than a result keeps as its own dependencies).  ``tools/env.py`` says ``jax`` only inside
    a function that checks whether it is installed."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "tools").mkdir()
    (root / ".git").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (root / "pkg" / "__init__.py").write_text("")
    (root / "tools" / "__init__.py").write_text("")
    (root / "tools" / "env.py").write_text("def has_jax():\n    try:\n        import jax  # noqa: F401\n"
                                           "    except ImportError:\n        return False\n    return True\n")
    for i in range(LINKS):
        (root / "pkg" / f"m{i}.py").write_text(f"from pkg.m{i + 1} import f{i + 1}\n\n\ndef f{i}(x):\n"
                                               f"    return f{i + 1}(x)\n")
    (root / "pkg" / f"m{LINKS}.py").write_text(f"def f{LINKS}(x):\n    return x\n")
    (root / "pkg" / "use.py").write_text(USE)
    return root


def _session(path, monkeypatch):
    from jaxinterop_lint.pipeline import run

    monkeypatch.setattr(run, "_SHARED", {})     # a new process (a new flake8 run)
    return run.shared_project(str(path), Config(), reported=[str(path)])


def _lint(path, monkeypatch, text=None):
    s = _session(path, monkeypatch)
    found = s.lint_text(path.read_text() if text is None else text, str(path)).findings
    s.save()
    return s, sorted((f.code, f.line) for f in found)


def test_a_project_without_jax_code_is_decided_from_the_text_of_its_modules(proj, monkeypatch):
    use = proj / "pkg" / "use.py"
    s, found = _lint(use, monkeypatch)
    assert found == []
    assert s.plan.scanned_used
    assert str(proj / "tools" / "env.py") in s.plan.scanned.named       # says jax: asked, no unit
    # the facts of the file and of the one module naming a JAX root, not of the chain
    assert not any(f"{p}" .endswith(f"m{LINKS}.py") for p in s.plan._facts)
    again, found = _lint(use, monkeypatch)
    assert found == [] and again._plan is None          # the stored result and its epoch hold


def test_a_module_created_where_an_import_was_missing_is_followed(proj, monkeypatch):
    """The end of the chain takes ``g`` from ``pkg/extra.py``, which does not exist: the
    scan read no facts of that module, so only the listing of ``pkg/`` the epoch keeps
    sees the new module."""
    use = proj / "pkg" / "use.py"
    (proj / "pkg" / f"m{LINKS}.py").write_text(f"from pkg.extra import g\n\n\ndef f{LINKS}(x):\n    return g(x)\n")
    s, found = _lint(use, monkeypatch)
    assert found == [] and s.plan.scanned_used
    assert _lint(use, monkeypatch)[0]._plan is None
    (proj / "pkg" / "extra.py").write_text(SHARD.format(name="g"))
    s, found = _lint(use, monkeypatch)
    assert found == [("JXI002", 6)] and s._plan is not None


def test_jax_code_added_at_the_end_of_the_chain_is_followed(proj, monkeypatch):
    use = proj / "pkg" / "use.py"
    assert _lint(use, monkeypatch)[1] == []
    (proj / "pkg" / f"m{LINKS}.py").write_text(SHARD.format(name=f"f{LINKS}"))
    s, found = _lint(use, monkeypatch)
    assert found == [("JXI002", 6)] and not s.plan.scanned_used       # a module has JAX code now


def test_files_that_are_no_modules_leave_the_epoch_holding(proj, monkeypatch):
    """An editor's backup, a dotfile or data written beside the modules changes no listing
    of module names; a new package folder does."""
    use = proj / "pkg" / "use.py"
    assert _lint(use, monkeypatch)[1] == []
    for name in (".use.py.swp", "use.py~", "notes.txt", "not-a-module.py"):
        (proj / "pkg" / name).write_text("import jax\n")
    assert _lint(use, monkeypatch)[0]._plan is None
    (proj / "pkg" / "sub").mkdir()
    assert _lint(use, monkeypatch)[0]._plan is not None


def test_a_text_given_for_the_file_is_decided_from_that_text(proj, monkeypatch):
    """A language server lints the buffer, then the saved file, in one session: the buffer
    that defines a JAX source is reported, and the file as saved is not."""
    from jaxinterop_lint.pipeline import run

    use = proj / "pkg" / "use.py"
    monkeypatch.setattr(run, "_SHARED", {})
    s = run.shared_project(str(use), Config(), reported=[str(use)])
    assert s.lint_text(USE, str(use)).findings == [] and s.plan.scanned_used
    buffer = USE.replace("from pkg.m0 import f0\n", "from pkg.m0 import f0\n" + SHARD.format(name="h") + "\n\n")
    buffer += "\n\ndef third(x):\n    return torch.from_dlpack(h(x))\n"
    found = s.lint_text(buffer, str(use)).findings
    assert [f.code for f in found] == ["JXI002"]
    assert s.lint_text(USE, str(use)).findings == []


def test_a_source_root_outside_the_project_turns_the_scan_off(tmp_path):
    from jaxinterop_lint.pipeline.universe import scan

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "m.py").write_text("import jax\n")
    (tmp_path / "a" / "n.py").write_text("import jaxlib\n")
    got = scan(str(tmp_path / "a"), [str(tmp_path / "a")], {"jax", "jaxlib"}, lambda p: open(p, 'rb').read(), lambda p: False)
    assert got is not None and got.named == [str(tmp_path / "a" / "m.py"), str(tmp_path / "a" / "n.py")]
    assert not got.origin
    got = scan(str(tmp_path / "a"), [str(tmp_path / "a")], {"jax"}, lambda p: open(p, 'rb').read(), lambda p: True)
    assert got.origin and got.named == [str(tmp_path / "a" / "m.py")]       # stops at the first
    assert scan(str(tmp_path / "a"), [str(tmp_path)], {"jax"}, lambda p: open(p, 'rb').read(), lambda p: False) is None


def test_a_scanned_file_is_hashed_as_it_is_read_and_not_decoded(tmp_path):
    from jaxinterop_lint.pipeline.read import Reader

    p = tmp_path / "m.py"
    p.write_bytes(b"# caf\xc3\xa9\nimport jax\n")
    r = Reader()
    assert r.scanned(str(p)) == p.read_bytes() and not r.has_text(str(p))
    assert r.digest(str(p)) == Reader().digest(str(p)) and str(p) in r._stamp
    assert r.scanned(str(tmp_path / "missing.py")) is None
