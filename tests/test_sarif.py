"""``--output-format sarif`` (validated against the official SARIF 2.1.0 schema) and
``--output-format github``."""
from __future__ import annotations

import json

import jsonschema
import pytest

from conftest import ROOT, SARIF_SCHEMA, run_cli
from jaxinterop_lint.finding import Finding, Step
from jaxinterop_lint.report import FORMATS
from jaxinterop_lint.report.github import escape_data, escape_property
from jaxinterop_lint.rules import ALL_RULES

BAD = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
       "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
REMOVED = "import jax, torch\nt = torch.from_dlpack(jax.dlpack.to_dlpack(x))\n"


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SARIF_SCHEMA.read_text())   # the copy of ../shared/data (test_fixtures_sync.py)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def sarif_of(tmp_path, *args):
    r = run_cli("--output-format", "sarif", *args, cwd=tmp_path)
    return r, json.loads(r.stdout)


def test_sarif_validates_and_describes_every_rule(tmp_path, validator):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BAD)
    (tmp_path / "removed.py").write_text(REMOVED)
    r, log = sarif_of(tmp_path, ".")
    assert r.returncode == 1
    validator.validate(log)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "jaxinterop-lint"
    assert [d["id"] for d in driver["rules"]] == [r.code for r in ALL_RULES]
    for d, rule in zip(driver["rules"], ALL_RULES):
        assert d["name"] == rule.name
        assert d["shortDescription"]["text"] == rule.summary
        assert d["fullDescription"]["text"] == rule.why
        assert d["helpUri"].endswith(f"/docs/rules/{rule.code}.md")
        # code scanning shows the rule's page, the same text as docs/rules/JXI00N.md
        assert d["help"]["markdown"] == (ROOT / "docs" / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")
    assert {r_["ruleId"] for r_ in run["results"]} == {"JXI002", "JXI005"}
    for res in run["results"]:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]


def test_sarif_locations_and_provenance_code_flow(tmp_path, validator):
    (tmp_path / "bad.py").write_text(BAD)
    _, log = sarif_of(tmp_path, "bad.py")
    validator.validate(log)
    (res,) = log["runs"][0]["results"]
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "bad.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 5, "startColumn": 5, "endLine": 5, "endColumn": 25}
    assert res["message"]["text"].startswith("torch.from_dlpack() cannot export `y`")
    (flow,) = res["codeFlows"]
    steps = flow["threadFlows"][0]["locations"]
    # the code flow is the provenance, step by step (as --output-format json gives it)
    (as_json,) = json.loads(run_cli("--output-format", "json", "bad.py", cwd=tmp_path).stdout)
    assert len(as_json["provenance"]) >= 2
    assert [(s["location"]["message"]["text"], s["location"]["physicalLocation"]["artifactLocation"]["uri"],
             s["location"]["physicalLocation"]["region"]["startLine"],
             s["location"]["physicalLocation"]["region"]["startColumn"]) for s in steps] == \
        [(p["description"], p["path"], p["line"], p["column"]) for p in as_json["provenance"]]
    # JSON columns are 1-based everywhere: the finding's, its provenance's and its fix's
    assert as_json["provenance"][-1]["column"] == as_json["column"]
    assert [s["executionOrder"] for s in steps] == list(range(len(steps)))
    assert "NamedSharding" in steps[0]["location"]["message"]["text"] and steps[0]["location"][
        "physicalLocation"]["region"]["startLine"] == 4
    assert steps[-1]["location"]["message"]["text"] == "exported by torch.from_dlpack()"
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    # the fingerprint ignores the line: code added above the finding leaves it unchanged
    (tmp_path / "bad.py").write_text("# a comment\n\n" + BAD)
    _, moved = sarif_of(tmp_path, "bad.py")
    (res2,) = moved["runs"][0]["results"]
    assert res2["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
    assert res2["partialFingerprints"] == res["partialFingerprints"]


def test_sarif_without_findings_and_with_absolute_paths(tmp_path, validator):
    (tmp_path / "good.py").write_text("import torch\nt = torch.zeros(3)\n")
    r, log = sarif_of(tmp_path, "good.py")
    assert r.returncode == 0 and log["runs"][0]["results"] == []
    validator.validate(log)
    (tmp_path / "bad.py").write_text(BAD)
    _, log = sarif_of(tmp_path, tmp_path / "bad.py")
    validator.validate(log)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri == {"uri": (tmp_path / "bad.py").as_uri()}


def test_sarif_unknown_provenance_line_has_no_region(validator):
    f = Finding(path="a.py", line=3, column=0, end_line=3, end_column=4, code="JXI002",
                name="multi-device-dlpack-export", message="m",
                provenance=(Step("made elsewhere", "other.py", 0, 0), Step("exported", "a.py", 3, 0)))
    log = json.loads(FORMATS["sarif"]([f]))
    validator.validate(log)
    first = log["runs"][0]["results"][0]["codeFlows"][0]["threadFlows"][0]["locations"][0]
    assert "region" not in first["location"]["physicalLocation"]


def test_github_format(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    r = run_cli("--output-format", "github", "bad.py", cwd=tmp_path)
    assert r.returncode == 1
    (line,) = r.stdout.splitlines()
    assert line.startswith("::error file=bad.py,line=5,col=5,title=JXI002::torch.from_dlpack() cannot export `y`")
    # the summary goes to stderr only for the human formats
    assert r.stderr == ""


def test_github_escaping():
    assert escape_data("50% done\nnext\r") == "50%25 done%0Anext%0D"
    assert escape_property("a,b:c%") == "a%2Cb%3Ac%25"
    f = Finding(path="dir,x/a:b.py", line=1, column=0, end_line=1, end_column=1, code="JXI005",
                name="removed-jax-interop-api", message="line one\nline two")
    assert FORMATS["github"]([f]) == \
        "::error file=dir%2Cx/a%3Ab.py,line=1,col=1,title=JXI005::line one%0Aline two\n"
