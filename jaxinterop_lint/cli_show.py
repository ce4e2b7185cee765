"""The check command's output habits, as ruff has them: ``--exit-zero``, ``--output-file``,
``--show-fixes``, ``--show-files``, ``--watch`` (:mod:`.watch`), ``--no-respect-gitignore``,
``--fix`` on standard input, and the summary line.

:mod:`jaxinterop_lint.cli` wires these in: :func:`add_options` on its parser, then
:func:`show_files`, :func:`fix_stdin`, :func:`emit`, :func:`summary` and
:func:`fixed_listing` in its check.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from typing import Optional

from .catalog import NAMES, applicable

STDIN = "-"


def add_options(p: argparse.ArgumentParser) -> None:
    """Register this module's options on the check command's parser."""
    g = p.add_argument_group("output (as in ruff)")
    g.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even when there are findings (2 still means a file or the configuration is bad)")
    g.add_argument("-o", "--output-file", metavar="FILE",
                   help="write the findings (or --statistics) to FILE instead of standard output")
    g.add_argument("--show-fixes", action="store_true",
                   help="with --fix: list what was fixed, per file and code; without: show each "
                        "fixable finding's fix as a diff")
    g.add_argument("--show-files", action="store_true",
                   help="print the files that would be linted with the current settings, then exit")
    g.add_argument("-w", "--watch", action="store_true",
                   help="lint again whenever a Python file or pyproject.toml under the paths changes "
                        "(needs watchfiles: pip install 'jaxinterop-lint[watch]')")
    g.add_argument("--no-respect-gitignore", dest="respect_gitignore", action="store_false", default=True,
                   help="also lint files that .gitignore (and .git/info/exclude) leave out")


def discovered(paths: list, cfg) -> list:
    """The files a run over ``paths`` lints with ``cfg`` (the engine's discovery)."""
    from .pipeline.discover import discover

    return list(discover([p for p in paths if p != STDIN], cfg.exclude, cfg.extend_exclude,
                         getattr(cfg, "respect_gitignore", True)))


def show_files(paths: list, cfg, out=None) -> int:
    """``--show-files``: one path a line, as the run would lint them (``-`` for standard
    input); exit status 0."""
    out = out or sys.stdout
    files = discovered(paths, cfg)
    if STDIN in paths:
        files.insert(0, STDIN)
    out.write("".join(f"{f}\n" for f in files))
    return 0


def summary(result, files_with_errors: int = 0) -> str:
    """``Found 3 findings in 2 files (12 files linted).``: the files counted are those with
    findings; the linted count is said apart, and so are the files that could not be linted."""
    n = len(result.findings)
    with_findings = len({f.path for f in result.findings})
    errors = len(result.errors)
    linted = max(0, result.files - errors)      # a file that could not be linted is said apart
    line = f"Found {n} finding{'s' if n != 1 else ''}"
    if n:
        line += f" in {with_findings} file{'s' if with_findings != 1 else ''}"
    line += f" ({linted} file{'s' if linted != 1 else ''} linted)"
    if errors:
        line += f"; {errors} file{'s' if errors != 1 else ''} could not be linted"
    return line + "."


def emit(args, text: str) -> Optional[str]:
    """Write the report ``text`` to ``--output-file`` (created or replaced) or standard
    output.  Returns an error message when the file cannot be written, else None."""
    if not args.output_file:
        sys.stdout.write(text)
        return None
    try:
        with open(args.output_file, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
    except OSError as exc:
        return f"{args.output_file}: cannot write: {exc.strerror or exc}"
    return None


def fixed_listing(fix_run) -> str:
    """``--fix --show-fixes``: ``Fixed 3 findings:`` then per file ``- path:`` and
    ``    2 × JXI005 (removed-jax-interop-api)``; '' when nothing was fixed."""
    rows = []
    total = 0
    for f in fix_run.files:
        codes = Counter(getattr(f, "codes", ()) or ())
        if not f.fixed or f.error is not None or not codes:
            continue
        total += f.fixed
        rows.append(f"- {f.path}:")
        for code, count in sorted(codes.items()):
            rows.append(f"    {count} × {code} ({NAMES.get(code, '')})")
    if not rows:
        return ""
    return f"\nFixed {total} finding{'s' if total != 1 else ''}:\n" + "\n".join(rows) + "\n"


def fix_previews(findings: list, sources: dict, unsafe: bool) -> dict:
    """``--show-fixes`` without ``--fix``: for each fixable finding (safe ones; unsafe ones
    too with ``unsafe``) the unified diff of its fix alone, keyed by the finding.
    ``sources`` maps a path to its text (None when unreadable)."""
    from .fix.apply import add_imports, apply_edits

    out = {}
    for f in findings:
        text = sources.get(f.path)
        if text is None or not applicable(f, unsafe):
            continue
        try:
            new = add_imports(apply_edits(text, f.fix.edits), f.fix.imports)
        except Exception:  # a fix that cannot be shown is simply not shown
            continue
        import difflib     # (here: only fix previews need it)

        diff = difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                    f"a/{os.path.normpath(f.path)}", f"b/{os.path.normpath(f.path)}", n=1)
        body = "".join(line if line.endswith("\n") else line + "\n" for line in diff)
        if body:
            out[f] = f"    fix ({f.fix.applicability}): {f.fix.title}\n" + \
                     "".join(f"    {line}" for line in body.splitlines(keepends=True))
    return out


def render_with_previews(fmt: str, findings: list, previews: dict, **kwargs) -> str:
    """The ``concise`` or ``full`` report of ``findings`` with each finding's fix preview
    (:func:`fix_previews`) after it."""
    from .report import formatter

    render = formatter(fmt)
    return "".join(render([f], **kwargs) + previews.get(f, "") for f in findings)


def fix_stdin(args, cfg) -> int:
    """``--fix``, ``--fix-only`` or ``--diff`` on standard input (``-``, named by
    ``--stdin-filename``), as ``ruff check --fix -``: the fixed text goes to standard output
    (a diff with ``--diff``), in the input's encoding; the findings left go to standard
    error.  Exit status: 2 when the input cannot be linted, 1 when findings remain (a diff
    with ``--diff``), else 0; ``--fix-only`` and ``--exit-zero`` exit 0 but for errors."""
    from .engine import SourceError, decode
    from .fix.apply import fix_text
    from .fix.files import encode, source_encoding
    from .report import error_line, formatter
    from .engine import shared_project

    name = args.stdin_filename or STDIN
    data = sys.stdin.buffer.read()
    try:
        text = decode(data, name)
        encoding, bom = source_encoding(data)
    except SourceError as exc:
        sys.stdout.buffer.write(data)
        print(f"{name}:{exc.line}:{exc.column}: error: {exc.message}", file=sys.stderr)
        return 2
    project = shared_project(args.stdin_filename, cfg) if args.stdin_filename else None
    outcome = fix_text(text, name, cfg, unsafe=args.unsafe_fixes, project=project)
    if args.diff:
        import difflib

        old, new = text.splitlines(keepends=True), outcome.text.splitlines(keepends=True)
        diff = "".join(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"))
        sys.stdout.write(diff)
    else:
        try:
            sys.stdout.buffer.write(encode(outcome.text, encoding, bom))
        except (UnicodeEncodeError, LookupError):
            sys.stdout.buffer.write(data)
            outcome.error = outcome.error or f"cannot encode the fixed code as {encoding}"
    sys.stdout.flush()
    result = outcome.result
    if not args.fix_only and not args.diff and result.findings:
        sys.stderr.write(formatter("concise")(result.findings))
    status = 0
    if result.error is not None:
        print(error_line(name, result.error), file=sys.stderr)
        status = 2
    if outcome.error is not None:
        print(f"{name}: error: not fixed: {outcome.error}", file=sys.stderr)
        status = 2
    if not args.quiet:
        verb = "Would fix" if args.diff else "Fixed"
        print(f"{verb} {outcome.fixed} finding{'s' if outcome.fixed != 1 else ''} "
              f"({len(result.findings)} remaining).", file=sys.stderr)
    if status:
        return status
    if args.diff:
        return 1 if outcome.text != text and not args.exit_zero else 0
    if args.fix_only or args.exit_zero:
        return 0
    return 1 if result.findings else 0
