"""What the command line prints about fixes: summary lines, diffs, fix errors."""
from __future__ import annotations

import sys

from ..catalog import applicable, fixable_hint  # noqa: F401  (re-exported)
from .files import FixRun, unified_diff


def _findings(n: int) -> str:
    return f"{n} finding{'s' if n != 1 else ''}"


def summary(run: FixRun, unsafe: bool, dry: bool = False) -> str:
    """``Fixed N findings (M remaining); K more fixable with --unsafe-fixes`` (``Would fix``
    for ``--diff``), as ruff says it."""
    line = f"{'Would fix' if dry else 'Fixed'} {_findings(run.fixed)} ({len(run.lint.findings)} remaining)"
    more = 0 if unsafe else run.fixable(True)
    if more:
        line += f"; {more} more fixable with --unsafe-fixes"
    return line + "."


def finish_diff(run: FixRun, unsafe: bool, quiet: bool) -> int:
    """``--diff``: print the diffs (stdout), the files that could not be linted or fixed and
    the summary (stderr).  Exit status: 2 when a file could not be linted or fixed, 1 when
    there is a diff, else 0."""
    text = "".join(unified_diff(f) for f in run.changed)
    sys.stdout.write(text)
    _lint_errors(run)
    if not quiet:
        print(summary(run, unsafe, dry=True), file=sys.stderr)
    if run.lint.errors:
        return 2
    return 1 if text else 0


def finish_fix_only(run: FixRun, unsafe: bool, quiet: bool) -> int:
    """``--fix-only``: the summary without the remaining findings.  Exit status: 2 when a file
    could not be linted or fixed, else 0."""
    _lint_errors(run)
    if not quiet:
        print(summary(run, unsafe), file=sys.stderr)
    return 2 if run.lint.errors else 0


def _lint_errors(run: FixRun) -> None:
    from ..escape import error_line

    for path, err in run.lint.errors:
        print(error_line(path, err), file=sys.stderr)


def run(args, cfg, paths: list) -> tuple:
    """The fix modes of the command line (``--fix``, ``--fix-only``, ``--diff``).

    Returns ``(FixRun, exit status)``: the status is set when the run is over (``--diff``,
    ``--fix-only``, a usage error), None when the remaining findings are to be reported
    as in a plain run (``--fix``)."""
    from .files import fix_paths

    if "-" in paths:
        print("jaxinterop-lint: error: fixes need files, not standard input", file=sys.stderr)
        return None, 2
    fixes = fix_paths(paths, cfg, unsafe=args.unsafe_fixes, write=not args.diff)
    if args.diff:
        return fixes, finish_diff(fixes, args.unsafe_fixes, args.quiet)
    if args.fix_only:
        return fixes, finish_fix_only(fixes, args.unsafe_fixes, args.quiet)
    return fixes, None
