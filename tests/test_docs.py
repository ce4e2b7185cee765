"""Rule pages: ``jaxinterop-lint rule``, and docs/rules/*.md generated from the same source."""
from __future__ import annotations

import shutil

import pytest

from conftest import ROOT, run_cli
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.docs import expected_files, render, stale_docs
from jaxinterop_lint.rules import ALL_RULES, RULES_BY_CODE
from jaxinterop_lint.rules.base import DOCS_URL

DOCS = ROOT / "docs" / "rules"


def test_rule_page_has_every_section():
    r = run_cli("rule", "JXI002")
    assert r.returncode == 0 and r.stderr == ""
    rule = RULES_BY_CODE["JXI002"]
    page = r.stdout
    assert page.startswith("# JXI002: multi-device-dlpack-export\n")
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead",
                    "## Fix applicability", "## JAX versions"):
        assert heading in page
    assert rule.summary in page and rule.why in page and rule.versions in page
    assert rule.INVALID[0].rstrip() in page and rule.VALID[0].rstrip() in page
    assert page.index(rule.INVALID[0].rstrip()) < page.index("## Use instead") < page.index(rule.VALID[0].rstrip())
    assert "unsafe" in page and "--unsafe-fixes" in page
    assert page.endswith(f"Online: {DOCS_URL.format(code='JXI002')}\n")


def test_rule_by_name_or_lower_case_and_opt_in_and_no_fix():
    assert run_cli("rule", "multi-device-dlpack-export").stdout == run_cli("rule", "jxi002").stdout
    page = run_cli("rule", "JXI009").stdout
    assert "Opt-in" in page and "--extend-select JXI009" in page and "No automatic fix" in page
    assert "fix is safe" in run_cli("rule", "JXI005").stdout.lower()


def test_rule_all_lists_every_rule():
    r = run_cli("rule", "--all")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == [rule.code for rule in ALL_RULES]
    for ln, rule in zip(lines, ALL_RULES):
        assert rule.name in ln and rule.summary in ln
    assert "opt-in" in lines[-1]


def test_the_code_of_a_file_that_could_not_be_linted_has_a_page():
    """JXI000 is in the json, sarif, github and flake8 outputs (a new user's report: ``rule
    JXI000`` said "unknown rule")."""
    page = run_cli("rule", "JXI000")
    assert page.returncode == 0 and page.stdout.startswith("JXI000 cannot-lint: a file that could not be linted\n")
    assert "exit status is 2" in page.stdout and "extend-exclude" in page.stdout
    assert run_cli("rule", "cannot-lint").stdout == page.stdout == run_cli("rule", "jxi000").stdout


def test_rule_errors():
    r = run_cli("rule", "JXI099")
    assert r.returncode == 2 and "unknown rule 'JXI099'" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("rule")
    assert r.returncode == 2 and "name a rule" in r.stderr
    assert run_cli("rule", "--help").returncode == 0


def test_docs_folder_is_current():
    """Fails when a rule changed and `jaxinterop-lint rule --write-docs docs/rules` was not run."""
    stale = stale_docs(str(DOCS))
    assert stale == [], f"stale rule docs {stale}: run `jaxinterop-lint rule --write-docs docs/rules`"
    assert sorted(p.name for p in DOCS.glob("*.md")) == sorted(expected_files())
    for rule in ALL_RULES:
        assert (DOCS / f"{rule.code}.md").read_text(encoding="utf-8") == render(rule)
        # the URL printed by `full` and SARIF names this file
        assert DOCS_URL.format(code=rule.code).endswith(f"docs/rules/{rule.code}.md")
    assert run_cli("rule", "--check-docs", DOCS).returncode == 0


def test_check_docs_catches_stale_missing_and_extra(tmp_path):
    copy = tmp_path / "rules"
    shutil.copytree(DOCS, copy)
    assert run_cli("rule", "--check-docs", copy).returncode == 0
    (copy / "JXI003.md").write_text("old text\n")
    (copy / "JXI004.md").unlink()
    (copy / "JXI010.md").write_text("a rule that is gone\n")
    r = run_cli("rule", "--check-docs", copy)
    assert r.returncode == 1
    assert [ln.split(":")[0] for ln in r.stderr.splitlines()] == \
        [str(copy / "JXI003.md"), str(copy / "JXI004.md"), str(copy / "JXI010.md")]
    assert run_cli("rule", "--write-docs", copy).returncode == 0
    (copy / "JXI010.md").unlink()
    assert run_cli("rule", "--check-docs", copy).returncode == 0


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_page_examples_behave_as_the_page_says(rule):
    everything = Config(select=("ALL",))
    bad = lint_source(rule.INVALID[0], "example.py", everything)
    good = lint_source(rule.VALID[0], "example.py", everything)
    assert bad.error is None and good.error is None
    assert rule.code in {f.code for f in bad.findings}
    assert rule.code not in {f.code for f in good.findings}


def test_integration_page_matches_what_the_tests_run():
    """docs/integration.md: its TOML is a valid configuration, its hook ids exist, and its
    command lines are the ones the tests run."""
    import re

    import yaml

    import sys

    from jaxinterop_lint.pyproject import config_from_table

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - 3.10
        import tomli as tomllib

    page = (ROOT / "docs" / "integration.md").read_text(encoding="utf-8")
    (toml_block,) = [b for b in re.findall(r"```toml\n(.*?)```", page, re.S) if "[tool.jaxinterop-lint]" in b]
    table = tomllib.loads(toml_block)["tool"]["jaxinterop-lint"]
    cfg = config_from_table(table, str(ROOT / "pyproject.toml"))
    assert cfg.extend_sinks and cfg.extend_sources and cfg.extend_sanitizers and cfg.per_file_ignores
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["jaxinterop-lint", "jaxinterop-lint-fix"]
    for hook in hooks:
        assert hook["language"] == "python" and hook["types"] == ["python"]
        assert hook["entry"] in page
    assert hooks[1]["entry"].split()[1] == "--fix"
    for line in ("jaxinterop-lint --output-format sarif .", "jaxinterop-lint --output-format github .",
                 "pre-commit run --all-files", "--write-baseline jxi-baseline.json .",
                 "--baseline jxi-baseline.json .", "--stdin-filename"):
        assert line in page, line


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.fix_applicability == "safe"], ids=lambda r: r.code)
def test_use_instead_is_what_the_safe_fix_makes_of_the_example(rule):
    """A rule page whose fix is safe shows, under "Use instead", exactly what `--fix` makes of
    its "Example" (so the two convert in the same direction)."""
    from jaxinterop_lint.fix.apply import fix_text

    out = fix_text(rule.INVALID[0], "example.py", Config(extend_select=(rule.code,)))
    assert out.error is None and out.fixed >= 1
    assert out.text == rule.VALID[0]
    page = render(rule)
    use_instead = page.index("## Use instead")
    assert page.index("## Example") < page.index(rule.INVALID[0].rstrip()) < use_instead
    assert page.find(rule.VALID[0].rstrip(), use_instead) > use_instead
