"""The README and docs/integration.md, run: every command they show, their sample output
lines, their configuration blocks.  (What they say each call raises: tests/test_claims.py.)

``test_every_shell_line_is_run`` keeps the list honest: a new command line in a ``sh`` block
of the README fails it until a test here runs it.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run_cli
from jaxinterop_lint.rules import ALL_RULES
from test_precommit import hook_repo, pre_commit_home  # noqa: F401,F811  (fixtures of the slow pre-commit test)

README = (ROOT / "README.md").read_text(encoding="utf-8")
INTEGRATION = (ROOT / "docs" / "integration.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
BAD = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
       "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
FIXABLE = "import jax\n\n\ndef first(arr: jax.Array):\n    return arr.device_buffer\n"
FIXED = "import jax\n\n\ndef first(arr: jax.Array):\n    return arr.addressable_data(0)\n"


def blocks(text: str, lang: str, section: str = "") -> list:
    """The fenced blocks of ``lang`` ('' for a bare fence) in ``text``, or in its section
    whose heading starts with ``section``."""
    if section:
        text = text.split("\n" + section, 1)[1]
        text = re.split(r"\n#{1,3} ", text, maxsplit=1)[0]
    out, current, kind = [], None, None
    for line in text.splitlines(keepends=True):
        if current is None and line.startswith("```"):
            current, kind = [], line[3:].strip()
        elif current is not None and line.rstrip() == "```":
            if kind == lang:
                out.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return out


def sh_lines(text: str) -> list:
    """Every command line of the ``sh`` blocks (comments stripped)."""
    out = []
    for block in blocks(text, "sh"):
        for line in block.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line:
                out.append(line)
    return out


def shell(line: str, cwd, stdin=None, env=None):
    """Run a documented command line with bash, this interpreter's scripts first on PATH."""
    full = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", NO_COLOR="1")
    full.update(env or {})
    return subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, input=stdin,
                          env=full, timeout=600)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "bad.py").write_text(BAD)
    (tmp_path / "src" / "old.py").write_text(FIXABLE)
    return tmp_path


# ---- what the README shows ------------------------------------------------------------

def test_the_test_command_is_the_one_ci_runs():
    (command,) = [ln for ln in sh_lines(README) if ln.endswith(".venv/bin/python -m pytest")]
    ci = (ROOT / ".ci" / "run").read_text()
    assert command in ci.splitlines(), "the README's test command is what .ci/run runs"
    quick = [ln for ln in sh_lines(README) if 'pytest -m "not slow"' in ln]
    assert quick == ["python3 -m venv .venv && .venv/bin/pip install -e '.[quick]' && "
                     ".venv/bin/python -m pytest -m \"not slow\""]


def test_the_quick_tier_needs_neither_jax_nor_torch():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = meta["project"]["optional-dependencies"]

    def closure(name, seen=()):
        out = []
        for req in extras[name]:
            m = re.match(r"jaxinterop-lint\[([\w,]+)\]", req)
            out += [r for n in m.group(1).split(",") for r in closure(n)] if m else [req]
        return out

    quick = {re.split(r"[<>=\[; ]", r)[0].lower() for r in closure("quick")}
    assert not quick & {"jax", "jaxlib", "torch", "numpy"}
    assert {"pytest", "pygls", "watchfiles"} <= quick
    assert {"jax", "torch"} <= {re.split(r"[<>=\[; ]", r)[0] for r in closure("test")}
    markers = meta["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("slow:") for m in markers)


def test_nox_has_the_documented_sessions():
    r = subprocess.run([str(BIN / "nox"), "-l", "-f", str(ROOT / "noxfile.py")], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for session in ("quick-3.10", "quick-3.11", "quick-3.12", "quick-3.13", "full"):
        assert session in r.stdout, session
    for line in [ln for ln in sh_lines(README) if "bin/nox" in ln]:
        for name in line.split("-s", 1)[1].split():
            assert name in r.stdout, line
    assert ".venv/bin/nox -s quick-3.10 quick-3.13" in (ROOT / ".ci" / "run").read_text()


def test_quick_start_lints_the_examples_as_shown():
    (command,) = [ln for ln in sh_lines(README) if ln.endswith("jaxinterop-lint examples/")]
    assert command == "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/jaxinterop-lint examples/"
    (sample,) = [b for b in blocks(README, "") if b.startswith("$ jaxinterop-lint examples/")]
    r = run_cli("examples/", cwd=ROOT)
    assert r.returncode == 1                       # "so the command exits 1 and lists them"
    shown = sample.splitlines()[1:]
    got = (r.stdout + r.stderr).splitlines()
    for line in shown:
        if line != "...":
            assert line in got, line
    assert shown[-2] == r.stderr.splitlines()[-2] and shown[-1] == r.stderr.splitlines()[-1]


def test_cross_module_sample_line():
    (sample,) = [b for b in blocks(README, "") if b.startswith("$ cd fixtures/project")]
    r = run_cli("--no-cache", "src/", cwd=ROOT / "fixtures" / "project")
    for line in sample.splitlines()[1:]:
        if line == "...":
            continue
        head = line[:-3] if line.endswith("...") else line
        assert any(got.startswith(head) for got in r.stdout.splitlines()), line


def test_rule_table_is_the_rules():
    rows = re.findall(r"^\| (JXI\d+) \| ([a-z-]+) \|", README, re.M)
    assert rows == [(r.code, r.name) for r in ALL_RULES]
    for r in ALL_RULES:
        opt_in = "opt-in" in README.split(f"| {r.code} |", 1)[1].split("\n", 1)[0]
        assert opt_in == (not r.default), r.code


def test_command_line_block_names_real_options():
    (block,) = blocks(README, "", "## Command line")
    helps = {}
    for line in block.splitlines():
        words = line.split("#")[0].split()
        command = words[1] if len(words) > 1 and words[0] == "jaxinterop-lint" and not words[1].startswith(
            ("-", "[")) else "check"
        if command == "run":
            commands = ["run", "verify"]
        else:
            commands = [command]
        for c in commands:
            if c not in helps:
                r = run_cli(c, "--help")
                assert r.returncode == 0, c
                helps[c] = r.stdout
        for opt in re.findall(r"--[a-z][a-z-]+", line.split("#")[0]):
            assert any(opt in helps[c] for c in commands), (line, opt)
    for command in ("rule", "run", "verify", "clean", "server"):
        assert re.search(rf"^jaxinterop-lint .*\b{command}\b", block, re.M), command


def test_output_formats_as_described(project):
    r = run_cli("--output-format", "json", "src/bad.py", cwd=project)
    (f,) = json.loads(r.stdout)
    assert set(f) == {"path", "line", "column", "end_line", "end_column", "code", "name", "message",
                      "function", "provenance", "fix"}
    assert f["column"] == 5 and [(s["line"], s["column"]) for s in f["provenance"]] == [(4, 5), (4, 1), (5, 5)]
    r = run_cli("--output-format", "full", "src/bad.py", cwd=project)
    assert "provenance:" in r.stdout and "^" in r.stdout and "docs: " in r.stdout
    r = run_cli("src/", cwd=project)
    assert "Found 2 findings in 2 files (2 files linted)." in r.stderr


def test_files_without_interop_words_are_never_parsed(tmp_path):
    """"a syntax error in such a file is left to your other tools"; the README never says such
    files are syntax-checked."""
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "broken_torch.py").write_text("import torch\nt = torch.from_dlpack(\n")   # no JAX reaches it
    (tmp_path / "broken_export.py").write_text("import jax\nimport torch\ny = jax.device_put(x, jax.NamedSharding(m, s))\n"
                                               "t = torch.from_dlpack(y\n")
    for name in ("broken.py", "broken_torch.py"):
        r = run_cli(name, cwd=tmp_path)
        assert r.returncode == 0 and r.stderr.startswith("Found 0 findings"), (name, r.stderr)
    r = run_cli("broken_export.py", cwd=tmp_path)
    assert r.returncode == 2 and "broken_export.py:" in r.stderr and "error:" in r.stderr
    assert "syntax-checked" not in README and "never parsed" in README and "no JAX code reaches" in README


def test_fix_commands(project):
    lines = [ln for ln in sh_lines(README) if ln.startswith("jaxinterop-lint --") and ln.endswith(" src/")
             and ("--fix" in ln or "--diff" in ln)]
    assert len(lines) == 4, lines
    by = {ln.split(" src/")[0]: ln for ln in lines}
    r = shell(by["jaxinterop-lint --diff"], project)
    assert r.returncode == 1 and "+    return arr.addressable_data(0)" in r.stdout
    assert (project / "src" / "old.py").read_text() == FIXABLE
    r = shell(by["jaxinterop-lint --fix"], project)
    assert r.returncode == 1 and (project / "src" / "old.py").read_text() == FIXED   # bad.py is left
    r = shell(by["jaxinterop-lint --fix --unsafe-fixes"], project)
    assert r.returncode == 0 and "jax.local_devices()[0]" in (project / "src" / "bad.py").read_text()
    (project / "src" / "old.py").write_text(FIXABLE)
    r = shell(by["jaxinterop-lint --fix-only"], project)
    assert r.returncode == 0 and r.stdout == "" and (project / "src" / "old.py").read_text() == FIXED


def test_adoption_commands(project):
    lines = [ln for ln in sh_lines(README) if ln.startswith("jaxinterop-lint --") and ln.endswith(" .")
             and any(k in ln for k in ("baseline", "--add-noqa", "--statistics"))]
    assert [ln.split()[1] for ln in lines] == ["--write-baseline", "--baseline", "--add-noqa", "--statistics"]
    assert shell(lines[0], project).returncode == 0 and (project / "jxi-baseline.json").is_file()
    assert shell(lines[1], project).returncode == 0
    (project / "src" / "new.py").write_text(BAD)
    r = shell(lines[1], project)
    assert r.returncode == 1 and "src/new.py:5:5: JXI002" in r.stdout and "src/bad.py" not in r.stdout
    assert shell(lines[2], project).returncode == 0
    r = shell(lines[3], project)
    assert r.returncode == 0 and re.search(r"^JXI002\s+0\s+2\s+0", r.stdout, re.M), r.stdout


def test_editor_commands(project):
    lines = [ln for ln in sh_lines(README) if "--stdin-filename src/pkg/module.py" in ln]
    assert len(lines) == 2
    (project / "buffer.py").write_text(FIXABLE)
    r = shell(lines[0], project)
    assert r.returncode == 1 and "src/pkg/module.py:5:12: JXI005" in r.stdout
    r = shell(lines[1], project)
    assert r.returncode == 0 and r.stdout == FIXED


@pytest.mark.parametrize("page", ["README", "integration"])
def test_github_actions_steps(project, page):
    text = README if page == "README" else INTEGRATION
    steps = []
    for block in blocks(text, "yaml"):
        doc = yaml.safe_load(block)
        for job in (doc.get("jobs") or {}).values() if isinstance(doc, dict) else ():
            steps += [st["run"] for st in job.get("steps", []) if "jaxinterop-lint --" in str(st.get("run", ""))]
        steps += re.findall(r"^\s*- run: (jaxinterop-lint .*)$", block, re.M) if not isinstance(doc, dict) else []
    assert len(steps) == 2
    sarif = shell(steps[0], project)
    assert sarif.returncode == 0, sarif.stderr            # exit 1 ("findings") is no failure
    log = json.loads((project / "jaxinterop-lint.sarif").read_text())
    assert log["version"] == "2.1.0" and len(log["runs"][0]["results"]) == 2
    annotations = shell(steps[1], project)
    assert annotations.returncode == 1 and "::error file=src/bad.py,line=5,col=5,title=JXI002::" in \
        annotations.stdout.replace("file=./src", "file=src")
    (install,) = [ln for b in blocks(text, "yaml") for ln in re.findall(r"- run: (pip install .*)$", b, re.M)
                  if "jaxinterop-lint @" in ln]
    assert install == 'pip install "jaxinterop-lint @ git+https://github.com/YOU/jaxinterop-lint@COMMIT"'


@pytest.mark.parametrize("page", ["README", "integration"])
def test_configuration_block_is_a_valid_table(page):
    from jaxinterop_lint.pyproject import config_from_table

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    text = README if page == "README" else INTEGRATION
    (block,) = [b for b in blocks(text, "toml") if "[tool.jaxinterop-lint]" in b]
    cfg = config_from_table(tomllib.loads(block)["tool"]["jaxinterop-lint"], str(ROOT / "pyproject.toml"))
    assert "JXI009" in cfg.enabled() and "JXI006" not in cfg.enabled()


def test_editor_configurations_start_the_server():
    """docs/integration.md: VS Code, Neovim and Helix all run `jaxinterop-lint server`
    (which tests/test_server.py drives with an LSP client)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    (js,) = blocks(INTEGRATION, "js")
    assert '{ command: "jaxinterop-lint", args: ["server"] }' in js
    (package,) = blocks(INTEGRATION, "json")
    assert json.loads(package)["main"] == "./extension.js"
    (lua,) = blocks(INTEGRATION, "lua")
    assert 'cmd = { "jaxinterop-lint", "server" }' in lua
    (helix,) = [b for b in blocks(INTEGRATION, "toml") if "language-server" in b]
    conf = tomllib.loads(helix)
    assert conf["language-server"]["jaxinterop-lint"] == {"command": "jaxinterop-lint", "args": ["server"]}
    assert "jaxinterop-lint" in conf["language"][0]["language-servers"]
    r = subprocess.run([str(BIN / "jaxinterop-lint"), "server", "--help"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "language server" in r.stdout


def test_flake8_in_the_editor(project):
    """docs/integration.md: editors run `flake8 --stdin-display-name src/pkg/module.py -` on the
    buffer, and the plugin lints it as that file of its project."""
    assert "`flake8 --stdin-display-name src/pkg/module.py -`" in INTEGRATION
    (project / "src" / "pkg").mkdir()
    r = subprocess.run([sys.executable, "-m", "flake8", "--stdin-display-name", "src/pkg/module.py", "-"],
                       cwd=project, input=BAD, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "\nsrc/pkg/module.py:5:5: JXI002 torch.from_dlpack()" in "\n" + r.stdout, r.stdout
    r = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "--stdin-display-name", "src/pkg/m.py", "-"],
                       cwd=project, input=FIXABLE, capture_output=True, text=True, timeout=300)
    assert r.stdout.startswith("src/pkg/m.py:5:12: JXI005 [*] `arr.device_buffer` is a removed JAX API"), r.stdout


def test_precommit_configs_are_well_formed():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    for text in (README, INTEGRATION):
        remote, local = [yaml.safe_load(b) for b in blocks(text, "yaml") if b.startswith("repos:")]
        assert remote["repos"][0]["rev"] == "COMMIT" and "v0.1.0" not in text
        assert [h["id"] for h in remote["repos"][0]["hooks"]] == ["jaxinterop-lint"]
        (hook,) = local["repos"][0]["hooks"]
        assert hook["entry"] == hooks["jaxinterop-lint"]["entry"] and hook["types"] == ["python"]


# ---- the commands that build environments (slow) ----------------------------------------

@pytest.mark.slow
def test_precommit_configs_run(tmp_path, hook_repo, pre_commit_home):
    """The README's two pre-commit configurations, filled in (the clone's path and a commit;
    jaxinterop-lint on PATH for the local hook), run by the real pre-commit."""
    from test_precommit import git, pre_commit

    repo, rev = hook_repo
    remote, local = [b for b in blocks(README, "yaml") if b.startswith("repos:")]
    remote = remote.replace("/path/to/jaxinterop-lint", str(repo)).replace("COMMIT", rev)
    # the README's whole-project hook: its fragment in place of the remote config's hook line
    (whole_hook,) = [b for b in blocks(README, "yaml") if "pass_filenames: false" in b]
    hook_line = next(ln for ln in remote.splitlines(keepends=True) if "- id: jaxinterop-lint " in ln)
    whole = remote.replace(hook_line, whole_hook if whole_hook.endswith("\n") else whole_hook + "\n")
    assert "pass_filenames: false" in whole
    for name, config in (("remote", remote), ("local", local), ("whole", whole)):
        proj = tmp_path / name
        proj.mkdir()
        (proj / ".pre-commit-config.yaml").write_text(config)
        (proj / "bad.py").write_text(BAD)
        git("init", "-q", cwd=proj)
        git("add", "-A", cwd=proj)
        os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ['PATH']}"
        (command,) = [ln for ln in sh_lines(README) if ln.startswith("pre-commit run")]
        r = pre_commit(pre_commit_home, *command.split()[1:], cwd=proj)
        assert r.returncode == 1 and "bad.py:5:5: JXI002" in r.stdout + r.stderr, (name, r.stdout + r.stderr)


@pytest.mark.slow
def test_runtime_shim_commands(tmp_path):
    """The three shim command lines of the README, on a program that hands a sharded array to
    torch on 8 CPU devices."""
    from conftest import EIGHT_DEVICES

    lines = [ln for ln in sh_lines(README) if ln.startswith(("jaxinterop-lint run", "jaxinterop-lint verify",
                                                            "pytest --jaxinterop-shim"))]
    assert len(lines) == 3
    (tmp_path / "src").mkdir()
    program = ("import jax, jax.numpy as jnp, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
               "mesh = jax.make_mesh((8,), ('x',))\n"
               "y = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P('x')))\n"
               "try:\n    torch.from_dlpack(y)\nexcept BufferError:\n    pass\n")
    (tmp_path / "src" / "prog.py").write_text(program)
    (tmp_path / "train.py").write_text("import runpy\nrunpy.run_path('src/prog.py')\n")
    (tmp_path / "test_prog.py").write_text("import runpy\n\ndef test_prog():\n    runpy.run_path('src/prog.py')\n")
    env = dict(EIGHT_DEVICES)
    r = shell(lines[0], tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    hits = [json.loads(ln) for ln in (tmp_path / "hits.jsonl").read_text().splitlines()]
    assert hits and hits[0]["line"] == 6
    r = shell(lines[1], tmp_path, env=env)
    assert r.returncode == 0 and "confirmed" in r.stdout, r.stdout + r.stderr
    r = shell(lines[2] + " -q -p no:cacheprovider test_prog.py", tmp_path, env=env)
    # raise mode raises JAX's own BufferError, which the program's handler catches; the hit is counted
    assert r.returncode == 0 and "jaxinterop shim (raise): 1 hit(s)" in r.stdout, r.stdout


# Every command line of the README's sh blocks, and the test that runs it.
RUN_BY = {
    "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/jaxinterop-lint examples/":
        "test_quick_start_lints_the_examples_as_shown",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest":
        "test_the_test_command_is_the_one_ci_runs",            # .ci/run runs it
    "python3 -m venv .venv && .venv/bin/pip install -e '.[quick]' && .venv/bin/python -m pytest -m \"not slow\"":
        "test_the_quick_tier_needs_neither_jax_nor_torch",     # nox's quick sessions run it
    ".venv/bin/nox -s quick-3.10 quick-3.13": "test_nox_has_the_documented_sessions",   # .ci/run runs it
    ".venv/bin/nox -s quick": "test_nox_has_the_documented_sessions",
    ".venv/bin/nox -s full": "test_nox_has_the_documented_sessions",
    "jaxinterop-lint --fix src/": "test_fix_commands",
    "jaxinterop-lint --fix --unsafe-fixes src/": "test_fix_commands",
    "jaxinterop-lint --diff src/": "test_fix_commands",
    "jaxinterop-lint --fix-only src/": "test_fix_commands",
    "jaxinterop-lint run --mode record --report hits.jsonl -- python train.py": "test_runtime_shim_commands",
    "jaxinterop-lint verify --report hits.jsonl src/": "test_runtime_shim_commands",
    "pytest --jaxinterop-shim=raise": "test_runtime_shim_commands",
    "pre-commit run --all-files": "test_precommit_configs_run",
    "jaxinterop-lint --write-baseline jxi-baseline.json .": "test_adoption_commands",
    "jaxinterop-lint --baseline jxi-baseline.json .": "test_adoption_commands",
    "jaxinterop-lint --add-noqa .": "test_adoption_commands",
    "jaxinterop-lint --statistics .": "test_adoption_commands",
    "jaxinterop-lint --stdin-filename src/pkg/module.py - < buffer.py": "test_editor_commands",
    "jaxinterop-lint --fix --stdin-filename src/pkg/module.py - < buffer.py": "test_editor_commands",
    ".venv/bin/python bench/bench.py": None,            # the Speed section: a benchmark, not a test
    ".venv/bin/python bench/bench.py --readme": None,
}


def test_every_shell_line_is_run():
    """Each command line of the README's sh blocks is listed in RUN_BY with the test that runs
    it: a new one fails here until it has a test."""
    assert sorted(sh_lines(README)) == sorted(RUN_BY)
    for test in set(RUN_BY.values()) - {None}:
        assert callable(globals().get(test)), test
