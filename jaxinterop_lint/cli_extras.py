"""The check command's options for fitting into a project: configuration file, standard input,
baselines, ``--add-noqa``, ``--statistics`` and ``--color``.

:mod:`jaxinterop_lint.cli` only wires these in: :func:`add_options` on its parser,
:func:`load_config`, :func:`lint_inputs`, :func:`adopt` and :func:`render` in its check.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import fields, replace
import re
import sys
from collections import Counter
from typing import Optional

from . import pyproject
from .config import Config, ConfigError
from .engine import LintResult, SourceError, lint_paths, lint_source
from .catalog import NAMES

STDIN = "-"


def add_options(p: argparse.ArgumentParser) -> None:
    """Register the options of this module on the check command's parser."""
    g = p.add_argument_group("configuration")
    g.add_argument("--config", metavar="FILE",
                   help="read [tool.jaxinterop-lint] from FILE instead of the nearest pyproject.toml")
    g.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    g.add_argument("--force-exclude", action="store_true",
                   help="apply the excludes to files named on the command line too (for pre-commit)")
    g = p.add_argument_group("input and output")
    g.add_argument("--stdin-filename", metavar="PATH",
                   help="lint standard input (path `-`, the default with this option) as if it were PATH")
    g.add_argument("--statistics", action="store_true",
                   help="print how many findings each code has, and how many were silenced, instead of the findings")
    g.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the concise and full formats (auto: on a terminal unless NO_COLOR is set)")
    g = p.add_argument_group("gradual adoption")
    g.add_argument("--add-noqa", action="store_true",
                   help="append `# noqa: CODE` to the line of every current finding, then exit")
    g.add_argument("--write-baseline", metavar="FILE",
                   help="record the current findings in FILE (JSON), then exit 0")
    g.add_argument("--baseline", metavar="FILE",
                   help="report only findings not recorded in FILE (keyed on rule, path, function, source text)")


def input_paths(args, cfg: Optional[Config] = None) -> list:
    """The paths to lint: ``-`` alone when ``--stdin-filename`` is given without paths, else
    the given paths, else the current folder.  With ``--force-exclude`` and ``cfg``, the given
    paths (and the stdin name) that the excludes match are left out, possibly all of them."""
    if not args.paths:
        return [STDIN] if args.stdin_filename else ["."]
    paths = list(args.paths)
    if getattr(args, "force_exclude", False) and cfg is not None:
        patterns = tuple(cfg.exclude) + tuple(cfg.extend_exclude)
        named = {STDIN: args.stdin_filename or STDIN}
        paths = [p for p in paths if not pyproject.excluded(named.get(p, p), patterns)]
    return paths


def load_config(args) -> Config:
    """The run's configuration: ``[tool.jaxinterop-lint]`` (``--config``, else the nearest
    ``pyproject.toml`` above the linted paths; none with ``--isolated``) with the command
    line's options on top.  Raises :class:`ConfigError` naming the file and key, or the option."""
    if args.isolated:
        base = Config()
    else:
        where = [args.stdin_filename if p == STDIN and args.stdin_filename else p for p in input_paths(args)]
        base = pyproject.load([p for p in where if p != STDIN] or ["."], args.config)
    cfg = pyproject.overlay(base, select=args.select, ignore=args.ignore or (),
                            extend_select=args.extend_select or (), exclude=args.exclude,
                            extend_exclude=args.extend_exclude or ())
    if args.add_noqa and STDIN in input_paths(args):
        raise ConfigError("--add-noqa cannot rewrite standard input")
    if not getattr(args, "respect_gitignore", True) and "respect_gitignore" in {f.name for f in fields(cfg)}:
        cfg = replace(cfg, respect_gitignore=False)   # --no-respect-gitignore (discovery reads .gitignore)
    return cfg


def lint_inputs(args, cfg: Config, jobs: int) -> LintResult:
    """Lint the paths of ``args``; ``-`` is standard input, named by ``--stdin-filename``.
    With ``--force-exclude`` a path (or the stdin name) that the excludes match is skipped."""
    paths = input_paths(args, cfg)
    files = [p for p in paths if p != STDIN]
    result = lint_paths(files, cfg, jobs=jobs, project_root=getattr(args, "project_root", None),
                        use_cache=not getattr(args, "no_cache", False)) if files else LintResult()
    if STDIN in paths:
        from .engine import shared_project

        data = sys.stdin.buffer.read()
        project = shared_project(args.stdin_filename, cfg) if args.stdin_filename else None
        r = lint_source(data, args.stdin_filename or STDIN, cfg, project=project)
        result.files += 1
        result.analysed += r.analysed
        if r.error is not None:
            result.errors.append((r.path, r.error))
        result.findings = r.findings + result.findings
        result.suppressed.extend(r.suppressed)
        result.handled.extend(r.handled)
    return result


def adopt(args, result: LintResult) -> tuple[Optional[int], list]:
    """Apply ``--write-baseline``, ``--baseline`` and ``--add-noqa`` to ``result``.

    Returns ``(exit status or None, findings silenced by the baseline)``; an exit status means
    the run is over (the baseline was written, or the noqa comments added).  Findings known to
    the baseline are removed from ``result.findings``.  Raises :class:`ConfigError` for a bad
    baseline file and :class:`OSError` when a file cannot be written."""
    if not (args.write_baseline or args.baseline or args.add_noqa):
        return None, []
    from . import adoption  # loaded only when a baseline or noqa option asks for it

    if args.write_baseline:
        n = adoption.write_baseline(result.findings, args.write_baseline)
        print(f"jaxinterop-lint: wrote {n} finding{'s' if n != 1 else ''} to {args.write_baseline}",
              file=sys.stderr)
        return (2 if result.errors else 0), []
    known: list = []
    if args.baseline:
        recorded = adoption.load_baseline(args.baseline)
        result.findings, known = adoption.apply_baseline(result.findings, recorded, args.baseline)
    if args.add_noqa:
        refused: list = []
        added, files, skipped = adoption.add_noqa(result.findings, roots=input_paths(args), refused=refused)
        for path, reason in refused:  # a symlink out of the tree, changed meanwhile, not writable
            result.errors.append((path, SourceError(reason)))
        print(f"jaxinterop-lint: added {added} noqa comment{'s' if added != 1 else ''} "
              f"to {files} file{'s' if files != 1 else ''}", file=sys.stderr)
        if skipped:
            print(f"jaxinterop-lint: {skipped} line{'s' if skipped != 1 else ''} could not take a comment "
                  f"(inside a multi-line string or continued with a backslash)", file=sys.stderr)
        return (2 if result.errors else 1 if skipped else 0), known
    return None, known


def statistics(result: LintResult, known: list, as_json: bool = False) -> str:
    """A table of counts per code: reported, silenced by noqa (line or file level), silenced
    by the baseline.  ``as_json`` (``--output-format json``): a JSON list of
    ``{"code", "name", "reported", "noqa", "baseline"}`` objects, one per code, instead."""
    reported = Counter(f.code for f in result.findings)
    noqa = Counter(f.code for f in result.suppressed)
    base = Counter(f.code for f in known)
    if as_json:
        import json

        return json.dumps([{"code": c, "name": NAMES.get(c, ""), "reported": reported[c], "noqa": noqa[c],
                            "baseline": base[c]} for c in sorted(set(reported) | set(noqa) | set(base))],
                          indent=2) + "\n"
    rows = [f"{'code':<8}{'reported':>9}{'noqa':>6}{'baseline':>10}  name"]
    for code in sorted(set(reported) | set(noqa) | set(base)):
        name = NAMES.get(code, "")
        rows.append(f"{code:<8}{reported[code]:>9}{noqa[code]:>6}{base[code]:>10}  {name}")
    total = (sum(reported.values()), sum(noqa.values()), sum(base.values()))
    rows.append(f"{'total':<8}{total[0]:>9}{total[1]:>6}{total[2]:>10}")
    return "\n".join(rows) + "\n"


FINDING_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+[0-9]+)(?P<rest> .*)?$",
                          re.MULTILINE)
BOLD, RED, RESET = "\033[1m", "\033[1;31m", "\033[0m"


def use_color(choice: str, stream=None) -> bool:
    """Whether to colour: ``always``/``never`` as said; ``auto`` on a terminal (not ``TERM=dumb``)
    unless ``NO_COLOR`` is set to a non-empty value."""
    if choice != "auto":
        return choice == "always"
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def colorize(text: str) -> str:
    """ANSI colours on the ``path:line:col: CODE`` head of each finding line."""
    return FINDING_LINE.sub(lambda m: f"{BOLD}{m['path']}{RESET}:{m['line']}:{m['col']}: "
                                      f"{RED}{m['code']}{RESET}{m['rest'] or ''}", text)


def render(args, text: str) -> str:
    """The formatted output, coloured when ``--color`` says so (concise and full only)."""
    if args.output_format in ("concise", "full") and use_color(args.color):
        return colorize(text)
    return text


class HelpFormatter(argparse.HelpFormatter):
    """Wraps the description as usual but prints the epilog (:data:`EPILOG`) as written.
    The width is found as argparse finds it (``shutil.get_terminal_size``: ``$COLUMNS``, else
    the terminal of standard output, else 80) without importing ``shutil``: argparse makes a
    formatter for every option added, so every run would load it (and bz2, lzma) for nothing."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)

    def _fill_text(self, text, width, indent):
        if text == EPILOG:
            return text
        return super()._fill_text(text, width, indent)


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` (Python 3.11 ``shutil.py``): ``$COLUMNS`` when a
    positive number, else the size of the terminal of ``sys.__stdout__``, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


EPILOG = """\
examples:
  jaxinterop-lint src/                                  lint a tree (config: nearest pyproject.toml)
  jaxinterop-lint --output-format sarif . > jxi.sarif   SARIF 2.1.0 for GitHub code scanning
  jaxinterop-lint --output-format github .              annotations in a GitHub Actions log
  jaxinterop-lint --stdin-filename src/x.py - < x.py    lint an editor buffer
  jaxinterop-lint --write-baseline jxi-baseline.json .  then: --baseline jxi-baseline.json
  jaxinterop-lint rule JXI002                           what a rule flags and how to fix it

exit status: 0 no findings, 1 findings, 2 a usage or configuration error, or a file that
could not be read or parsed.  Configuration: [tool.jaxinterop-lint] in pyproject.toml
(select, ignore, extend-select, exclude, extend-exclude, per-file-ignores, extend-sources,
extend-sinks, extend-sanitizers, target-jax-version); command-line options win.  Without
target-jax-version the JAX range is the project's jax requirement (--show-settings says which).
"""
