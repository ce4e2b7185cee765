"""Rule pages: ``jaxinterop-lint rule CODE``, ``rule --all`` and ``docs/rules/JXI00N.md``.

One source, the rule classes (summary, why, versions, fix applicability and title, the first
INVALID and VALID snippet), renders the page printed in the terminal and the Markdown file
in ``docs/rules``; ``rule --write-docs DIR`` regenerates the files and ``rule --check-docs DIR``
fails when they are stale.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

from .rules import ALL_RULES, RULES_BY_CODE
from .rules.base import DOCS_URL, Rule

FIX_TEXT = {
    "safe": "Fix is safe (the program keeps its meaning): `jaxinterop-lint --fix` applies it.",
    "unsafe": ("Fix is unsafe (it may change what the program does, e.g. gather "
               "the whole array onto one device): applied only with `--fix --unsafe-fixes`."),
    None: "No automatic fix: the right rewrite depends on what the code means.",
}


def find_rule(name: str) -> Optional[type[Rule]]:
    """The rule class for a code (any case) or a kebab-case name; None when there is none."""
    rule = RULES_BY_CODE.get(name.strip().upper())
    if rule is None:
        rule = next((r for r in ALL_RULES if r.name == name.strip().lower()), None)
    return rule


def render(rule: type[Rule]) -> str:
    """The Markdown page of ``rule``."""
    default = ("Enabled by default." if rule.default else
               f"Opt-in: not in the default selection; enable it with `--extend-select {rule.code}` or "
               f"`extend-select = [\"{rule.code}\"]` under `[tool.jaxinterop-lint]`.")
    fix = FIX_TEXT[rule.fix_applicability]
    if rule.fix_title:
        fix += f"\n\nThe fix: {rule.fix_title}."
    parts = [
        f"# {rule.code}: {rule.name}",
        default,
        "## What it does",
        rule.summary,
        "## Why is this bad?",
        rule.why,
        "## Example",
        _python(rule.INVALID[0]) if rule.INVALID else "",
        "## Use instead",
        _python(rule.VALID[0]) if rule.VALID else "",
        "## Fix applicability",
        fix,
        "## JAX versions",
        rule.versions,
        "## Silencing it",
        f"`# noqa: {rule.code}` on the reported line, `# jaxinterop-lint: noqa: {rule.code}` anywhere "
        f"in a file for the whole file, or `per-file-ignores` in `pyproject.toml`.",
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def _python(snippet: str) -> str:
    return "```python\n" + snippet.rstrip("\n") + "\n```"


def listing() -> str:
    """One line a rule: code, name, default or opt-in, fix applicability, summary."""
    rows = []
    for r in ALL_RULES:
        rows.append(f"{r.code}  {r.name:<34} {'default' if r.default else 'opt-in ':<7}  "
                    f"fix: {r.fix_applicability or 'none':<6}  {r.summary}")
    return "\n".join(rows) + "\n"


def index_page() -> str:
    """The Markdown index of ``docs/rules``."""
    rows = ["# Rules", "", "| code | name | summary | fix |", "| --- | --- | --- | --- |"]
    for r in ALL_RULES:
        summary = r.summary.replace("|", "\\|")
        rows.append(f"| [{r.code}]({r.code}.md) | {r.name} | {summary} | {r.fix_applicability or 'none'} |")
    return "\n".join(rows) + "\n"


def expected_files() -> dict:
    """File name -> content of everything ``--write-docs`` writes."""
    out = {f"{r.code}.md": render(r) for r in ALL_RULES}
    out["README.md"] = index_page()
    return out


def write_docs(folder: str) -> list:
    """Write the rule pages into ``folder`` (created if needed); returns the files written.
    Raises :class:`OSError`."""
    os.makedirs(folder, exist_ok=True)
    written = []
    for name, text in expected_files().items():
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        written.append(path)
    return written


def stale_docs(folder: str) -> list:
    """Files of ``folder`` that differ from what :func:`write_docs` would write, are missing,
    or are rule pages of no rule.  Empty when the docs are current."""
    out = []
    for name, text in expected_files().items():
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8", newline="") as fh:
                current = fh.read()
        except OSError:
            current = None
        if current != text:
            out.append(path)
    expected = set(expected_files())
    if os.path.isdir(folder):
        out += [os.path.join(folder, n) for n in sorted(os.listdir(folder))
                if n.endswith(".md") and n not in expected]
    return out


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``jaxinterop-lint rule``."""
    p = argparse.ArgumentParser(
        prog="jaxinterop-lint rule",
        description="Print a rule's page (what it does, why, example, fix, JAX versions), list the "
                    "rules, or write the pages as Markdown.")
    p.add_argument("rule", nargs="?", help="a code (JXI002) or name (multi-device-dlpack-export)")
    p.add_argument("--all", action="store_true", help="list every rule")
    p.add_argument("--write-docs", metavar="DIR", help="write DIR/JXI00N.md and DIR/README.md")
    p.add_argument("--check-docs", metavar="DIR", help="exit 1 when the pages in DIR are stale")
    return p


# ``JXI000`` is no rule: the code the machine-readable outputs give a file that could not be
# linted (report/__init__.py ERROR_CODE, flake8_plugin.py ERROR_CODE).
CANNOT_LINT = """\
JXI000 cannot-lint: a file that could not be linted

What it is
  Not a rule: the code under which the json, sarif, github and flake8 outputs report a file
  the linter could not read or parse (no such file, not UTF-8 or its coding cookie, a syntax
  error it had to parse, nesting too deep).  The text output prints it as
  `path:line:col: error: ...` (`path: error: ...` where no position applies).

What happens
  The other files are linted as usual; the exit status is 2 (flake8: 1, its JXI000 line).
  SARIF reports it as a tool execution notification, and the run as not successful.

What to do
  Fix the file, or leave it out of the run (`extend-exclude` in [tool.jaxinterop-lint]).  It
  cannot be selected, ignored or silenced with `# noqa`.
"""


def rule_main(argv: list) -> int:
    """``jaxinterop-lint rule ...``.  Returns the exit status: 0, 1 for stale docs under
    ``--check-docs``, 2 for an unknown rule or a usage error."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.write_docs:
        try:
            written = write_docs(args.write_docs)
        except OSError as exc:
            print(f"jaxinterop-lint rule: error: {args.write_docs}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"wrote {len(written)} files to {args.write_docs}", file=sys.stderr)
        return 0
    if args.check_docs:
        stale = stale_docs(args.check_docs)
        for path in stale:
            print(f"{path}: stale; run `jaxinterop-lint rule --write-docs {args.check_docs}`", file=sys.stderr)
        return 1 if stale else 0
    if args.all:
        sys.stdout.write(listing())
        return 0
    if not args.rule:
        parser.print_usage(sys.stderr)
        print("jaxinterop-lint rule: error: name a rule (e.g. JXI002) or pass --all", file=sys.stderr)
        return 2
    if args.rule.upper() == "JXI000" or args.rule == "cannot-lint":
        sys.stdout.write(CANNOT_LINT)
        return 0
    rule = find_rule(args.rule)
    if rule is None:
        print(f"jaxinterop-lint rule: error: unknown rule {args.rule!r} (known: "
              f"{', '.join(RULES_BY_CODE)})", file=sys.stderr)
        return 2
    sys.stdout.write(render(rule))
    sys.stdout.write(f"\nOnline: {DOCS_URL.format(code=rule.code)}\n")
    return 0
