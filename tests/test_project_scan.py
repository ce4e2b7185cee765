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


def _project(tmp_path, files: dict):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return root


CALLS = "import torch\nfrom pkg.helper import make\n\n\ndef run(x):\n    return torch.from_dlpack(make(x))\n"


@pytest.mark.parametrize("where", ["tools-x/", "src/"])
def test_a_package_whose_top_folder_is_no_identifier_is_scanned(tmp_path, monkeypatch, where):
    """``tools-x/pkg`` is importable as ``pkg`` (its top folder is a source root, not a
    module folder): its JAX module is found (the attack of stop 47, s01)."""
    root = _project(tmp_path, {f"{where}pkg/__init__.py": "", f"{where}pkg/use.py": CALLS,
                               f"{where}pkg/helper.py": SHARD.format(name="make")})
    s, found = _lint(root / where / "pkg" / "use.py", monkeypatch)
    assert found == [("JXI002", 6)] and not s.plan.scanned_used


def test_a_conftest_beside_a_test_module_outside_any_package_is_scanned(tmp_path, monkeypatch):
    fixture = SHARD.format(name="sharded").replace("def sharded", "@pytest.fixture\ndef sharded")
    root = _project(tmp_path, {"integration-tests/conftest.py": "import pytest\n" + fixture,
                               "integration-tests/test_x.py": "import torch\n\n\ndef test_export(sharded):\n"
                                                              "    assert torch.from_dlpack(sharded).shape\n"})
    found = _lint(root / "integration-tests" / "test_x.py", monkeypatch)[1]
    assert found == [("JXI002", 5)]


def test_a_module_in_another_encoding_is_read_as_python_reads_it(tmp_path, monkeypatch):
    """Its bytes do not spell ``jax`` (UTF-7: ``+AGo-ax``); its text does.  It is two
    imports away, so nothing decodes it before the scan (the attack of stop 47, s06)."""
    text = "# -*- coding: utf-7 -*-\n" + SHARD.format(name="make")
    data = text.replace("jax", "+AGo-ax").encode("ascii")
    assert data.decode("utf-7") == text and b"jax" not in data
    mid = "from pkg.far import far\n\n\ndef make(x):\n    return far(x)\n"
    far = "from pkg.helper import make\n\n\ndef far(x):\n    return make(x)\n"
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/use.py": CALLS.replace("pkg.helper", "pkg.mid"),
                               "pkg/mid.py": mid, "pkg/far.py": far, "pkg/helper.py": data})
    assert _lint(root / "pkg" / "use.py", monkeypatch)[1] == [("JXI002", 6)]


def test_a_configured_source_defined_in_the_project_turns_the_scan_off(tmp_path, monkeypatch):
    """A module takes the configured source ``pkg.factory.build`` by a relative import, so
    no text spells its root."""
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/use.py": CALLS,
                               "pkg/factory.py": "def build(x):\n    return x\n",
                               "pkg/helper.py": "from .factory import build\n\n\ndef make(x):\n    return build(x)\n"})
    with open(root / "pyproject.toml", "a") as f:
        f.write('\n[tool.jaxinterop-lint]\nextend-sources = ["pkg.factory.build"]\n')
    from jaxinterop_lint import pyproject

    cfg = pyproject.load([str(root)])
    from jaxinterop_lint.pipeline import run

    monkeypatch.setattr(run, "_SHARED", {})
    use = root / "pkg" / "use.py"
    s = run.shared_project(str(use), cfg, reported=[str(use)])
    assert [f.code for f in s.lint_text(use.read_text(), str(use)).findings] == ["JXI002"]
    assert s.plan.scanned is None


def test_no_warm_record_is_kept_from_an_epoch_whose_folder_listings_were_compared(proj):
    """The warm record keeps stamps and absences, not listings: a command-line run that
    took results from an epoch made from every module's text answers the next run the
    full way (a module created in a listed folder is seen: the attack of stop 47, s09)."""
    from jaxinterop_lint.pipeline import warm
    from jaxinterop_lint.pipeline.read import Reader

    r = Reader()
    r.listed["/p"] = "k"
    assert not warm.record(warm.store_for(str(proj), "k"), r, [], frozenset(), {}, 0)


def test_a_placement_word_stops_the_scan_without_reading_every_module(tmp_path, monkeypatch):
    """A project whose JAX module only places values (``jax.device_put(x, device)``, no
    sharding: whether that counts is decided from every module's facts): the scan stops
    at that module, read first because its path says ``jax``, and decides nothing
    (torchrl's ``envs/libs/jax_utils.py``: 1.8 s of facts of 600 modules for one file)."""
    files = {"pkg/__init__.py": "", "pkg/use.py": USE,
             "pkg/libs/__init__.py": "",
             "pkg/libs/jax_utils.py": "import jax\n\n\ndef to_jax(x):\n    return jax.device_put(x, jax.devices()[0])\n"}
    files.update({f"pkg/m{i}.py": f"from pkg.m{i + 1} import f{i + 1}\n\n\ndef f{i}(x):\n    return f{i + 1}(x)\n"
                  for i in range(LINKS)})
    files[f"pkg/m{LINKS}.py"] = f"def f{LINKS}(x):\n    return x\n"
    root = _project(tmp_path, files)
    s, found = _lint(root / "pkg" / "use.py", monkeypatch)
    assert found == [] and s.plan.scanned.origin and not s.plan.scanned_used
    assert s.plan.scanned.named == [str(root / "pkg" / "libs" / "jax_utils.py")]
    assert s.plan._weak is None           # never asked whether placement words count
