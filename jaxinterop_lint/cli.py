"""The ``jaxinterop-lint`` command.

``jaxinterop-lint [check] [OPTIONS] [PATHS...]`` lints (the default command);
``jaxinterop-lint rule CODE|--all`` prints rule pages; ``run`` and ``verify`` drive the runtime
shim; ``clean`` removes the cache; ``server`` is the language server for editors.  Exit status: 0 no findings, 1 findings, 2 a usage error
or a file that could not be read or parsed.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

from . import __version__, cli_extras, cli_show
from .config import Config, ConfigError
from .engine import LINE_SPLIT
from .report import FORMAT_NAMES, error_line, formatter

def _codes(value: str) -> tuple:
    return tuple(c.strip() for c in value.split(",") if c.strip())


def _jobs(value: str) -> int:
    """``--jobs``: a whole number of processes, 1 or more (argparse prints the error)."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more (processes), not {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    """The parser of the check command."""
    p = argparse.ArgumentParser(
        prog="jaxinterop-lint", usage="jaxinterop-lint [check] [OPTIONS] [PATHS ...]",
        description="Find multi-device JAX arrays handed to zero-copy interop (DLPack, CUDA Array "
                    "Interface, raw buffers), and other JAX interop bugs.  This is the check command "
                    "(`jaxinterop-lint check PATHS`; `check` may be left out).  Other commands: "
                    "`jaxinterop-lint rule CODE`, `run`, `verify`, `clean`, `server`; "
                    "`jaxinterop-lint COMMAND --help` for each.",
        epilog=cli_extras.EPILOG, formatter_class=cli_extras.HelpFormatter,
    )
    p.add_argument("paths", nargs="*", default=None, help="files or folders to lint (default: .)")
    p.add_argument("--select", type=_codes, metavar="CODES", help="comma-separated codes or prefixes to report (default: all but the opt-in JXI009 and JXI100)")
    p.add_argument("--ignore", type=_codes, metavar="CODES", help="codes or prefixes not to report")
    p.add_argument("--extend-select", type=_codes, metavar="CODES", help="codes to report in addition (e.g. JXI009)")
    p.add_argument("--exclude", type=_codes, metavar="PATTERNS", help="fnmatch patterns of paths to skip (replaces the defaults)")
    p.add_argument("--extend-exclude", type=_codes, metavar="PATTERNS", help="patterns to skip in addition to the defaults")
    p.add_argument("--output-format", choices=FORMAT_NAMES, default="concise", help="how findings are printed")
    p.add_argument("--jobs", "-j", type=_jobs, default=None, help="parallel processes (default: CPU count)")
    p.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write .jaxinterop_lint_cache/ under the project root")
    p.add_argument("--project-root", metavar="DIR",
                   help="the project whose modules are followed across imports (default: the nearest "
                        "folder with pyproject.toml, setup.cfg, setup.py or .git above each file)")
    p.add_argument("--version", action="version", version=f"jaxinterop-lint {__version__}")
    p.add_argument("--show-settings", action="store_true",
                   help="print the resolved settings (configuration file, rules, the project's JAX range "
                        "and where it was read) and exit")
    cli_extras.add_options(p)
    cli_show.add_options(p)
    p.add_argument("--fix", action="store_true", help="apply the safe fixes and write the files")
    p.add_argument("--unsafe-fixes", action="store_true", help="also apply the unsafe fixes (with --fix, --diff, --fix-only)")
    p.add_argument("--diff", action="store_true",
                   help="print a unified diff of what --fix would change and write nothing (exit 1 if there is a diff)")
    p.add_argument("--fix-only", action="store_true", help="apply the fixes without reporting the remaining findings")
    return p


def config_from_args(args) -> Config:
    """Build the run's :class:`Config`: ``[tool.jaxinterop-lint]`` of the nearest
    pyproject.toml with the parsed options on top (command line wins).  Raises ConfigError."""
    return cli_extras.load_config(args)


def show_settings(cfg: Config) -> str:
    """The settings ``--show-settings`` prints: one ``name: value`` line each."""
    from .jaxrange import DEFAULT_SOURCE
    from .knowledge import versions as VT

    releases = cfg.jax_versions()
    rows = [
        ("configuration", cfg.source),
        ("rules", ", ".join(sorted(cfg.enabled()))),
        ("exclude", ", ".join(tuple(cfg.exclude) + tuple(cfg.extend_exclude))),
        ("per-file-ignores", "; ".join(f"{pattern} = {', '.join(sorted(codes))}"
                                       for pattern, codes in sorted(cfg.per_file_ignores.items()))),
        ("extend-sources", ", ".join(cfg.extend_sources)),
        ("extend-sinks", "; ".join(f"{name} = {value}" for name, value in sorted(cfg.extend_sinks.items()))),
        ("extend-sanitizers", ", ".join(cfg.extend_sanitizers)),
        ("respect-gitignore", str(cfg.respect_gitignore).lower()),
        ("jax range", cfg.jax_range_text()),
        ("jax range from", cfg.jax_range_source or DEFAULT_SOURCE),
        ("jax releases checked", f"{VT.describe(releases)} ({len(releases - {VT.FUTURE})} known releases"
                                 + (", and newer ones)" if VT.FUTURE in releases else ")")),
    ]
    return "".join(f"{name}: {value}\n" for name, value in rows)


def tune_gc() -> None:
    """Set CPython's cyclic garbage collector for one lint run: the run builds large syntax
    trees that hold no cycles, which the default thresholds (700, 10, 10) make the collector
    walk again and again -- 20-30% of the CPU time of a cold run on the jax, torchrl and
    keras sources (bench/; issue 16).  Young objects are still collected; what was made
    before the run (imports) is frozen out of the collections."""
    import gc

    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


def check(argv: list) -> int:
    """The lint command (``jaxinterop-lint check ...`` or ``jaxinterop-lint ...``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.watch:
        from .watch import watch_main

        return watch_main(argv, args, check)
    tune_gc()
    try:
        cfg = config_from_args(args)
    except ConfigError as exc:
        print(f"jaxinterop-lint: error: {exc}", file=sys.stderr)
        return 2
    if args.show_settings:
        sys.stdout.write(show_settings(cfg))
        return 0
    paths = cli_extras.input_paths(args, cfg)
    if args.show_files:
        return cli_show.show_files(paths, cfg)
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    fixes = None
    if args.fix or args.fix_only or args.diff:
        if cli_show.STDIN in paths:
            if len(paths) > 1:
                print("jaxinterop-lint: error: fix standard input alone, not with files", file=sys.stderr)
                return 2
            return cli_show.fix_stdin(args, cfg)
        from .fix import report as fix_report

        fixes, status = fix_report.run(args, cfg, paths)
        if status is not None:
            return _exit(args, status)
        result = fixes.lint
    else:
        result = cli_extras.lint_inputs(args, cfg, jobs)
    try:
        done, known = cli_extras.adopt(args, result)  # --baseline, --write-baseline, --add-noqa
    except (ConfigError, OSError) as exc:
        print(f"jaxinterop-lint: error: {exc}", file=sys.stderr)
        return 2
    if done is None:
        problem = cli_show.emit(args, _report(args, result, fixes, known))
        if problem:
            print(f"jaxinterop-lint: error: {problem}", file=sys.stderr)
            return 2
    for path, err in result.errors:
        print(error_line(path, err), file=sys.stderr)
    if done is not None:
        return done
    if not result.files and not result.errors:  # as ruff: a warning, and the exit status of no findings
        print("jaxinterop-lint: warning: no Python files found under the given paths", file=sys.stderr)
    if not args.quiet and args.output_format in ("concise", "full"):
        print(cli_show.summary(result), file=sys.stderr)
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
    return _exit(args, 1 if result.findings else 0)


def _exit(args, status: int) -> int:
    """``--exit-zero`` turns the findings' status 1 into 0 (2 stays)."""
    return 0 if status == 1 and args.exit_zero else status


def _report(args, result, fixes, known: list) -> str:
    """The text of the report: the findings in the chosen format (or ``--statistics``), with
    ``--show-fixes`` previews or the list of what ``--fix`` fixed; coloured for a terminal."""
    if args.statistics:
        return cli_extras.statistics(result, known, as_json=args.output_format == "json")
    fmt = args.output_format
    sources = None
    if fmt == "full" or (args.show_fixes and fixes is None):
        sources = {p: _read_text(p) for p in {f.path for f in result.findings}}
    lines = {p: (LINE_SPLIT.split(t) if t is not None else None) for p, t in (sources or {}).items()}
    if args.show_fixes and fixes is None and fmt in ("concise", "full"):
        previews = cli_show.fix_previews(result.findings, sources, args.unsafe_fixes)
        out = cli_show.render_with_previews(fmt, result.findings, previews, sources=lines)
    else:
        out = formatter(fmt)(result.findings, sources=lines if fmt == "full" else None, errors=result.errors)
    if args.show_fixes and fixes is not None and fmt in ("concise", "full"):
        out += cli_show.fixed_listing(fixes)
    return out if args.output_file else cli_extras.render(args, out)


def _read_text(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            return fh.read()
    except OSError:
        return None


COMMANDS = ("check", "rule", "run", "verify", "clean", "server")
SUBCOMMANDS = COMMANDS  # the old name


def main(argv: Optional[list] = None) -> int:
    """Entry point of the console script and ``python -m jaxinterop_lint``.

    The first argument names the command (``check``, ``rule``, ``run``, ``verify``,
    ``clean``, ``server``); anything else is the check command's (``jaxinterop-lint src/`` is
    ``jaxinterop-lint check src/``, and ``jaxinterop-lint check run`` lints a folder named
    ``run``).  Every command parses its arguments, and ``--help`` only prints help."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else "check"
    rest = argv[1:] if argv and argv[0] in COMMANDS else argv
    if command != "check" and not rest and os.path.exists(command):   # the bare word: say how to lint the path
        print(f"jaxinterop-lint: note: `{command}` is the {command} command; "
              f"`jaxinterop-lint check {command}` lints the path `{command}`", file=sys.stderr)
    try:
        return _dispatch(command, rest)
    except KeyboardInterrupt:
        print("jaxinterop-lint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away: the output is incomplete, an error
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        except (OSError, ValueError):
            pass
        return 2
    except Exception as exc:  # a bug of ours: one line and exit 2, never 1 ("findings")
        if os.environ.get("JAXINTEROP_LINT_DEBUG"):
            raise
        from .errors import describe

        print(f"jaxinterop-lint: internal error ({describe(exc)}); please report it "
              f"(JAXINTEROP_LINT_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)


def _dispatch(command: str, rest: list) -> int:
    if command == "check":
        return check(rest)
    if command == "rule":
        from .docs import rule_main

        return rule_main(rest)
    if command in ("run", "verify"):
        from . import runtime_cli

        return runtime_cli.run_main(rest) if command == "run" else runtime_cli.verify_main(rest)
    if command == "clean":
        from .cli_commands import clean_main

        return clean_main(rest)
    from .server import server_main

    return server_main(rest)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
