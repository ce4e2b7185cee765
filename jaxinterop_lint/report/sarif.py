"""``--output-format sarif``: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

One run whose ``tool.driver`` lists every rule (id, name, short and full description, help
URI of its page under ``docs/rules``); one result per finding with its location, a
``codeFlow`` made of the provenance steps (source first, sink last) and a partial
fingerprint that does not depend on the line number (the baseline key).
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import urllib.parse

from .. import __version__
from ..adoption import finding_key
from ..docs import render
from ..finding import Finding, Step
from ..rules import ALL_RULES
from ..rules.base import DOCS_URL

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = DOCS_URL.split("/blob/")[0]
SRCROOT = "%SRCROOT%"


def rule_descriptor(rule) -> dict:
    """The SARIF ``reportingDescriptor`` of a rule class."""
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why or rule.summary},
        "helpUri": DOCS_URL.format(code=rule.code),
        "help": {"text": f"{rule.summary} See {DOCS_URL.format(code=rule.code)}", "markdown": render(rule)},
        "defaultConfiguration": {"level": "error", "enabled": bool(rule.default)},
        "properties": {"tags": ["jax", "interop"], "fixApplicability": rule.fix_applicability or "none"},
    }


def artifact_location(path: str) -> dict:
    """A relative path is kept relative to ``%SRCROOT%`` (the current folder), as code
    scanning wants; an absolute one becomes a ``file:`` URI.  Either is a valid URI: the
    bytes of the name are percent-encoded where RFC 3986 requires it (spaces, ``%``, ``#``,
    ``?``, ``:``, control characters ...)."""
    if os.path.isabs(path):
        return {"uri": pathlib.Path(path).as_uri()}
    norm = pathlib.PurePath(os.path.normpath(path)).as_posix()
    return {"uri": urllib.parse.quote(os.fsencode(norm), safe="/"), "uriBaseId": SRCROOT}


def _location(path: str, line: int, column: int, end_line: int = 0, end_column: int = 0,
              message: str = "") -> dict:
    physical: dict = {"artifactLocation": artifact_location(path)}
    if line >= 1:
        region = {"startLine": line, "startColumn": column + 1}
        if end_line >= line:
            region["endLine"] = end_line
            region["endColumn"] = max(end_column + 1, column + 1 if end_line == line else 1)
        physical["region"] = region
    out: dict = {"physicalLocation": physical}
    if message:
        out["message"] = {"text": message}
    return out


def _code_flow(steps: tuple[Step, ...]) -> dict:
    return {"threadFlows": [{"locations": [
        {"location": _location(s.path, s.line, s.column, message=s.description), "executionOrder": i}
        for i, s in enumerate(steps)]}]}


def fingerprint(f: Finding) -> str:
    """A line-independent hash of the finding: its baseline key (rule, path, enclosing
    function, sink text)."""
    return hashlib.sha256("\0".join(finding_key(f)).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def result(f: Finding, rule_index: dict) -> dict:
    """The SARIF ``result`` of one finding."""
    out = {
        "ruleId": f.code,
        "ruleIndex": rule_index[f.code],
        "level": "error",
        "message": {"text": f.message},
        "locations": [_location(f.path, f.line, f.column, f.end_line, f.end_column)],
        "partialFingerprints": {"jaxinteropLint/v1": fingerprint(f)},
    }
    if f.provenance:
        out["codeFlows"] = [_code_flow(f.provenance)]
    if f.fix is not None:
        out["properties"] = {"fix": {"title": f.fix.title, "applicability": f.fix.applicability}}
    return out


def notification(path: str, err) -> dict:
    """The SARIF ``notification`` (``invocations[0].toolExecutionNotifications``) of a file
    that could not be linted: level ``error``, descriptor ``JXI000``, its location."""
    location = _location(path, err.line, max(err.column - 1, 0))
    return {"level": "error", "message": {"text": f"cannot lint this file: {err.message}"},
            "descriptor": {"id": "JXI000"}, "locations": [location]}


def sarif(findings: list[Finding], errors=(), **_) -> str:
    """The SARIF 2.1.0 log of ``findings`` as JSON text; the files that could not be linted
    (``errors``: ``(path, SourceError)``) are ``toolExecutionNotifications`` of the one
    invocation, whose ``executionSuccessful`` is then false."""
    rule_index = {r.code: i for i, r in enumerate(ALL_RULES)}
    run = {
        "tool": {"driver": {
            "name": "jaxinterop-lint",
            "version": __version__,
            "semanticVersion": __version__,
            "informationUri": INFORMATION_URI,
            "rules": [rule_descriptor(r) for r in ALL_RULES],
        }},
        "originalUriBaseIds": {SRCROOT: {"uri": pathlib.Path(os.getcwd()).as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [result(f, rule_index) for f in findings],
        "invocations": [{"executionSuccessful": not errors,
                         "toolExecutionNotifications": [notification(p, e) for p, e in errors]}],
    }
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2) + "\n"
