"""The ``jaxinterop-lint`` command.

``jaxinterop-lint [check] [OPTIONS] [PATHS...]`` lints (the default command);
``jaxinterop-lint rule CODE|--all`` prints rule pages; ``run`` and ``verify`` drive the runtime
shim; ``clean`` removes the cache.  Exit status: 0 no findings, 1 findings, 2 a usage error
or a file that could not be read or parsed.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

from . import __version__, cli_extras
from .config import Config, ConfigError
from .engine import LINE_SPLIT
from .report import FORMAT_NAMES, formatter

SUBCOMMANDS = ("check", "rule", "run", "verify", "clean")


def _codes(value: str) -> tuple:
    return tuple(c.strip() for c in value.split(",") if c.strip())


def build_parser() -> argparse.ArgumentParser:
    """The parser of the check command."""
    p = argparse.ArgumentParser(
        prog="jaxinterop-lint",
        description="Find multi-device JAX arrays handed to zero-copy interop (DLPack, CUDA Array "
                    "Interface, raw buffers), and other JAX interop bugs.  Other commands: "
                    "`jaxinterop-lint rule CODE`, `run`, `verify`, `clean`.",
        epilog=cli_extras.EPILOG, formatter_class=cli_extras.HelpFormatter,
    )
    p.add_argument("paths", nargs="*", default=None, help="files or folders to lint (default: .)")
    p.add_argument("--select", type=_codes, metavar="CODES", help="comma-separated codes or prefixes to report (default: all but JXI009)")
    p.add_argument("--ignore", type=_codes, metavar="CODES", help="codes or prefixes not to report")
    p.add_argument("--extend-select", type=_codes, metavar="CODES", help="codes to report in addition (e.g. JXI009)")
    p.add_argument("--exclude", type=_codes, metavar="PATTERNS", help="fnmatch patterns of paths to skip (replaces the defaults)")
    p.add_argument("--extend-exclude", type=_codes, metavar="PATTERNS", help="patterns to skip in addition to the defaults")
    p.add_argument("--output-format", choices=FORMAT_NAMES, default="concise", help="how findings are printed")
    p.add_argument("--jobs", "-j", type=int, default=None, help="parallel processes (default: CPU count)")
    p.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write .jaxinterop_lint_cache/ under the project root")
    p.add_argument("--project-root", metavar="DIR",
                   help="the project whose modules are followed across imports (default: the nearest "
                        "folder with pyproject.toml, setup.cfg, setup.py or .git above each file)")
    p.add_argument("--no-respect-gitignore", dest="respect_gitignore", action="store_false",
                   help="also lint the files that .gitignore files ignore")
    p.add_argument("--version", action="version", version=f"jaxinterop-lint {__version__}")
    cli_extras.add_options(p)
    p.add_argument("--fix", action="store_true", help="apply the safe fixes and write the files")
    p.add_argument("--unsafe-fixes", action="store_true", help="also apply the unsafe fixes (with --fix, --diff, --fix-only)")
    p.add_argument("--diff", action="store_true",
                   help="print a unified diff of what --fix would change and write nothing (exit 1 if there is a diff)")
    p.add_argument("--fix-only", action="store_true", help="apply the fixes without reporting the remaining findings")
    return p


def config_from_args(args) -> Config:
    """Build the run's :class:`Config`: ``[tool.jaxinterop-lint]`` of the nearest
    pyproject.toml with the parsed options on top (command line wins).  Raises ConfigError."""
    cfg = cli_extras.load_config(args)
    if not getattr(args, "respect_gitignore", True):
        cfg.respect_gitignore = False
    return cfg


def _read_lines(path: str) -> Optional[list]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return LINE_SPLIT.split(fh.read())
    except OSError:
        return None


def check(argv: list) -> int:
    """The lint command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        cfg = config_from_args(args)
    except ConfigError as exc:
        print(f"jaxinterop-lint: error: {exc}", file=sys.stderr)
        return 2
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    fixes = None
    if args.fix or args.fix_only or args.diff:
        from .fix import report as fix_report

        fixes, status = fix_report.run(args, cfg, cli_extras.input_paths(args, cfg))
        if status is not None:
            return status
        result = fixes.lint
    else:
        result = cli_extras.lint_inputs(args, cfg, jobs)
    try:
        done, known = cli_extras.adopt(args, result)  # --baseline, --write-baseline, --add-noqa
    except (ConfigError, OSError) as exc:
        print(f"jaxinterop-lint: error: {exc}", file=sys.stderr)
        return 2
    if done is None and args.statistics:
        sys.stdout.write(cli_extras.statistics(result, known))
    elif done is None:
        sources = None
        if args.output_format == "full":
            sources = {p: _read_lines(p) for p in {f.path for f in result.findings}}
        out = formatter(args.output_format)(result.findings, sources=sources)
        sys.stdout.write(cli_extras.render(args, out))
    for path, err in result.errors:
        print(f"{path}:{err.line}:{err.column}: error: {err.message}", file=sys.stderr)
    if done is not None:
        return done
    if not args.quiet and args.output_format in ("concise", "full"):
        n = len(result.findings)
        summary = f"Found {n} finding{'s' if n != 1 else ''} in {result.files} file{'s' if result.files != 1 else ''}"
        if result.errors:
            summary += f"; {len(result.errors)} file{'s' if len(result.errors) != 1 else ''} could not be linted"
        print(summary + ".", file=sys.stderr)
        if fixes is not None:
            from .fix import report as fix_report

            hint = fix_report.summary(fixes, args.unsafe_fixes)
        else:
            from .catalog import fixable_hint

            hint = fixable_hint(result.findings, args.unsafe_fixes)
        if hint:
            print(hint, file=sys.stderr)
    if result.errors:
        return 2
    return 1 if result.findings else 0


def main(argv: Optional[list] = None) -> int:
    """Entry point of the console script and ``python -m jaxinterop_lint``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in SUBCOMMANDS else "check"
    rest = argv[1:] if argv and argv[0] in SUBCOMMANDS else argv
    try:
        if command == "check":
            return check(rest)
        if command == "rule":
            from .docs import rule_main

            return rule_main(rest)
        if command in ("run", "verify"):
            from . import runtime_cli

            return runtime_cli.run_main(rest) if command == "run" else runtime_cli.verify_main(rest)
        if command == "clean":
            from .engine import clean_main

            return clean_main(rest)
    except KeyboardInterrupt:
        print("jaxinterop-lint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
