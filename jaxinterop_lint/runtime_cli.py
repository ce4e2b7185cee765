"""``jaxinterop-lint run`` and ``jaxinterop-lint verify``: the runtime side of the linter.

``run`` starts any command with the shim active in every Python process it starts;
``verify`` compares the hits recorded by the shim with the static findings on the same files.
Neither imports JAX.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from jaxinterop_lint import shim
from jaxinterop_lint.shim.report import (
    CorruptReport, ShimReportError, merge_parts, open_report, read_hits, report_parts,
)

__all__ = ["run_main", "verify_main", "child_environment", "classify", "Verification"]

# Codes whose finding sits at the sink itself (JXI007 sits at the `except`, see sink_line).
SINK_CODES = frozenset({"JXI001", "JXI002", "JXI003", "JXI004", "JXI008", "JXI009"})
HANDLER_CODE = "JXI007"


def child_environment(mode: str, report: Optional[str], base: Optional[dict] = None) -> dict:
    """The environment that makes every Python child install the shim.

    Sets ``JAXINTEROP_SHIM``, ``JAXINTEROP_SHIM_REPORT`` (absolute) and prepends the shim's
    sitecustomize directory to ``PYTHONPATH``.  ``base`` defaults to ``os.environ``.
    """
    env = dict(os.environ if base is None else base)
    env[shim.ENV_MODE] = mode
    if report:
        env[shim.ENV_REPORT] = os.path.abspath(report)
    else:
        env.pop(shim.ENV_REPORT, None)
    old = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = shim.site_dir() + (os.pathsep + old if old else "")
    return env


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxinterop-lint run",
        description="Run COMMAND with the jaxinterop shim active in every Python process it starts.")
    parser.add_argument("--mode", choices=shim.MODES, default="record",
                        help="record: append hits to the report and go on (default); raise: raise JAX's error")
    parser.add_argument("--report", metavar="PATH",
                        help=f"JSON-lines report (record mode default: {shim.DEFAULT_REPORT})")
    parser.add_argument("--append", action="store_true", help="keep the hits already in the report")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    return parser


def run_main(argv: list[str]) -> int:
    """``jaxinterop-lint run [--mode raise|record] [--report PATH] [--append] -- COMMAND...``.

    Every Python process the command starts (not under ``python -S``/``-I``) imports the
    shim's ``sitecustomize`` and writes its own ``PATH.<pid>``; when the command ends they are
    merged into ``PATH``.  The report starts empty unless ``--append``.  Returns the command's
    exit status (128+N when killed by signal N), 2 for a usage error or an unwritable report.
    """
    parser = _run_parser()
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.print_usage(sys.stderr)
        print("jaxinterop-lint run: no COMMAND given (write it after --)", file=sys.stderr)
        return 2
    report = args.report or (shim.DEFAULT_REPORT if args.mode == "record" else None)
    if report:
        report = os.path.abspath(report)
        try:
            os.close(open_report(report, truncate=not args.append))
        except ShimReportError as exc:
            print(exc, file=sys.stderr)
            return 2
        if not args.append:
            for part in report_parts(report):
                os.unlink(part)
    env = child_environment(args.mode, report)
    try:
        proc = subprocess.Popen(command, env=env)
    except OSError as exc:
        print(f"jaxinterop-lint run: cannot start {command[0]!r}: {exc.strerror}", file=sys.stderr)
        return 127
    try:
        status = proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        status = proc.wait()
    if report:
        try:
            merge_parts(report)
            problems: list = []
            count = len(read_hits(report, problems)) if os.path.exists(report) else 0
        except OSError as exc:
            print(f"jaxinterop-lint run: cannot gather the report {report!r}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        for problem in problems:
            print(f"jaxinterop-lint run: {problem}", file=sys.stderr)
        print(f"jaxinterop-lint run: {count} hit(s) recorded in {report}", file=sys.stderr)
    return 128 - status if status < 0 else status


@dataclass
class SiteHits:
    """All hits of one call site: file (real path), line, the codes and consumers seen, count,
    and ``stack``: the (real path, line) of every project frame of those hits (the call site
    and its callers, from the hit records' ``stack``)."""

    path: str
    line: int
    codes: set = field(default_factory=set)
    consumers: set = field(default_factory=set)
    count: int = 0
    function: str = ""
    stack: set = field(default_factory=set)

    def to_dict(self) -> dict:
        """JSON-ready form (``path`` as printed: relative to the current folder when under it)."""
        return {"path": shown_path(self.path), "line": self.line, "codes": sorted(self.codes),
                "consumers": sorted(self.consumers), "hits": self.count, "function": self.function}


@dataclass
class Verification:
    """The four categories of ``verify`` (plus hits outside the linted files)."""

    confirmed: list = field(default_factory=list)  # (SiteHits, [finding codes])
    missed: list = field(default_factory=list)  # SiteHits
    handled: list = field(default_factory=list)  # SiteHits
    not_exercised: list = field(default_factory=list)  # findings
    outside: list = field(default_factory=list)  # SiteHits in files not linted
    silenced: list = field(default_factory=list)  # (SiteHits, [codes]) of findings a noqa silences

    def to_dict(self) -> dict:
        """JSON-ready form (the ``--output-format json`` document)."""
        def finding(f):
            return {"path": shown_path(f.path), "line": f.line, "code": f.code, "message": f.message,
                    **({"sink_line": f.extra["sink_line"]} if "sink_line" in (f.extra or {}) else {})}
        return {
            "confirmed": [dict(s.to_dict(), findings=codes) for s, codes in self.confirmed],
            "missed": [s.to_dict() for s in self.missed],
            "handled": [s.to_dict() for s in self.handled],
            "not_exercised": [finding(f) for f in self.not_exercised],
            "outside": [s.to_dict() for s in self.outside],
            "silenced": [dict(s.to_dict(), findings=codes) for s, codes in self.silenced],
            "summary": {k: len(getattr(self, k)) for k in
                        ("confirmed", "missed", "handled", "not_exercised", "outside", "silenced")},
        }


def _real(path: str) -> str:
    return os.path.realpath(path)


def shown_path(path: str) -> str:
    """``path`` as every ``verify`` list prints it: relative to the current folder (as
    ``check`` prints the paths it is given) when it lies under it, else absolute."""
    here = os.path.realpath(os.getcwd())
    real = _real(path)
    return os.path.relpath(real, here) if real.startswith(here.rstrip(os.sep) + os.sep) else real


def _hit_stack(hit: dict) -> list[tuple[str, int]]:
    """(real path, line) of the project frames of ``hit`` (its ``stack``, else its site)."""
    out = [(_real(hit["path"]), hit["line"])]
    for frame in hit.get("stack") or ():
        if isinstance(frame, list) and len(frame) == 2 and isinstance(frame[0], str) \
                and isinstance(frame[1], int) and not frame[0].startswith("<"):
            out.append((_real(frame[0]), frame[1]))
    return out


def group_hits(hits: Iterable[dict]) -> dict[tuple[str, int], SiteHits]:
    """Group hit records by call site (real path, line), gathering their stacks."""
    sites: dict[tuple[str, int], SiteHits] = {}
    for hit in hits:
        path, line = hit.get("path"), hit.get("line")
        if not isinstance(path, str) or not isinstance(line, int) or path.startswith("<"):
            continue
        key = (_real(path), line)
        site = sites.setdefault(key, SiteHits(key[0], line, function=hit.get("function") or ""))
        site.codes.add(hit.get("code"))
        site.consumers.add(hit.get("consumer"))
        site.count += 1
        site.stack.update(_hit_stack(hit))
    return sites


def _sink_sites(finding) -> list[tuple[str, int]]:
    path = _real(finding.path)
    if finding.code == HANDLER_CODE:
        sink = (finding.extra or {}).get("sink_line")
        return [(path, sink)] if isinstance(sink, int) else []
    return [(path, finding.line)] if finding.code in SINK_CODES else []


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def classify(hits: Iterable[dict], findings: Iterable[Any], handled: Iterable[tuple[str, int]],
             roots: list[str], silenced: Iterable[Any] = ()) -> Verification:
    """Sort hits and findings into confirmed / missed / handled / not exercised.

    ``findings`` are ``Finding`` records (``path``, ``line``, ``code``, ``extra``); a JXI007
    finding stands for the sink at ``extra["sink_line"]``.  ``handled`` lists (path, line) of
    sinks the engine judged handled by their ``try``.  ``roots`` are the linted paths (real
    paths): hits elsewhere go to ``outside``.  A hit confirms a finding (or is handled by a
    handled sink) whose (file, line) is on its stack: the call site or a project caller of it,
    so a finding reported at a call that hands the value on to a sink in another module
    (README "Whole projects and the cache") is confirmed by the hit at that sink.
    ``silenced`` are the findings a ``noqa`` directive silenced: a hit they stand for is
    ``silenced`` (the static analysis found it, the code's author chose to keep it), never
    missed.
    """
    sites = group_hits(hits)
    by_site: dict[tuple[str, int], list] = {}
    for f in findings:
        for key in _sink_sites(f):
            by_site.setdefault(key, []).append(f)
    handled_keys = {(_real(p), int(line)) for p, line in handled}
    quiet: dict[tuple[str, int], list] = {}
    for f in silenced:
        for key in _sink_sites(f):
            quiet.setdefault(key, []).append(f)
    result = Verification()
    exercised: set = set()
    for key in sorted(sites):
        site = sites[key]
        on_stack = [k for k in sorted(site.stack) if k in by_site]
        if key in by_site:
            on_stack = [key]  # the call site's own finding when there is one
        if on_stack:
            exercised.update(on_stack)
            result.confirmed.append((site, sorted({f.code for k in on_stack for f in by_site[k]})))
        elif key in handled_keys or site.stack & handled_keys:
            result.handled.append(site)
        elif key in quiet or any(k in quiet for k in site.stack):
            keys = [key] if key in quiet else [k for k in sorted(site.stack) if k in quiet]
            result.silenced.append((site, sorted({f.code for k in keys for f in quiet[k]})))
        elif not _under(key[0], roots):
            result.outside.append(site)
        else:
            result.missed.append(site)
    for key in sorted(by_site):
        if key not in exercised and not any(key in s.stack for s in sites.values()):
            result.not_exercised.extend(sorted(by_site[key], key=lambda f: (f.line, f.code)))
    return result


def _verify_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxinterop-lint verify",
        description="Compare the hits recorded by the shim with the static findings on the same files.")
    parser.add_argument("--report", action="append", required=True, metavar="FILE",
                        help="a report written by the shim (repeatable; FILE.<pid> files are read too)")
    parser.add_argument("--output-format", choices=("text", "json"), default="text")
    # the options of `check` that decide its findings: verify's static run is check's own
    parser.add_argument("--config", metavar="FILE", help="as for check: the pyproject.toml to read")
    parser.add_argument("--isolated", action="store_true", help="as for check: read no configuration file")
    parser.add_argument("--project-root", metavar="DIR", help="as for check: the root of the project's modules")
    parser.add_argument("--no-cache", action="store_true", help="as for check: neither read nor write the cache")
    parser.add_argument("paths", nargs="*", metavar="PATHS",
                        help="files or directories to lint (default: the files the hits and, under "
                             "the current folder, their callers are in)")
    return parser


def _format_text(v: Verification) -> str:
    from jaxinterop_lint.report import display_path, escape_text

    lines = []

    def site_line(s: SiteHits, extra: str = "") -> str:
        codes = escape_text(",".join(sorted(str(c) for c in s.codes if c)))
        consumers = escape_text(", ".join(sorted(str(c) for c in s.consumers if c)))
        return f"{display_path(shown_path(s.path))}:{s.line}: {codes} {consumers} ({s.count} hit{'s' * (s.count != 1)}){extra}"

    for title, items in (("confirmed", [site_line(s, f" [finding {', '.join(c)}]") for s, c in v.confirmed]),
                         ("missed by the static analysis", [site_line(s) for s in v.missed]),
                         ("handled by their try", [site_line(s) for s in v.handled]),
                         ("not exercised", [f"{display_path(shown_path(f.path))}:{f.line}: {f.code} {escape_text(f.message)}"
                                            for f in v.not_exercised]),
                         ("outside the linted files", [site_line(s) for s in v.outside]),
                         ("silenced by noqa", [site_line(s, f" [finding {', '.join(c)}]") for s, c in v.silenced])):
        if items:
            lines.append(f"{title} ({len(items)}):")
            lines.extend("  " + item for item in items)
    s = v.to_dict()["summary"]
    lines.append(f"{s['confirmed']} confirmed, {s['missed']} missed, {s['handled']} handled, "
                 f"{s['not_exercised']} not exercised, {s['outside']} outside"
                 + (f", {s['silenced']} silenced" if s["silenced"] else ""))
    return "\n".join(lines)


def verify_main(argv: list[str]) -> int:
    """``jaxinterop-lint verify --report FILE [--report FILE ...] [--output-format text|json] [PATHS]``.

    Returns 1 when a hit inside the linted files has no finding (missed; a finding a
    ``noqa`` silences counts as found: ``silenced``), 2 when a report cannot be read, else 0.  Findings come from ``jaxinterop_lint.engine.lint_paths``.
    """
    args = _verify_parser().parse_args(argv)
    hits: list[dict] = []
    processes: list[dict] = []
    for report in args.report:
        try:
            hits.extend(read_hits(report, processes=processes))
        except (OSError, CorruptReport) as exc:  # missing, unreadable, corrupt, not UTF-8
            reason = exc if isinstance(exc, CorruptReport) or not getattr(exc, "strerror", None) \
                else f"{report}: {exc.strerror}"
            print(f"jaxinterop-lint verify: {reason}", file=sys.stderr)
            return 2
    paths = args.paths or default_paths(hits)
    lint, status = static_run(args, paths)
    if status is not None:
        return status
    findings = list(getattr(lint, "findings", ()) or ())
    handled = list(getattr(lint, "handled", ()) or ())
    silenced = list(getattr(lint, "suppressed", ()) or ())
    result = classify(hits, findings, handled, [_real(p) for p in paths], silenced)
    if args.output_format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(_format_text(result))
    devices = [p.get("device_count") for p in processes if isinstance(p.get("device_count"), int)]
    if not hits and result.not_exercised and not any(n > 1 for n in devices):
        print(NO_HITS_HINT, file=sys.stderr)
    return 1 if result.missed else 0


def default_paths(hits: list) -> list:
    """The files ``verify`` lints when given no paths: those the hits are in, and those of
    their callers (the hits' stacks) under the current folder, as :func:`shown_path` prints them."""
    here = os.path.realpath(os.getcwd()).rstrip(os.sep) + os.sep
    files = set()
    for key, site in group_hits(hits).items():
        files.add(key[0])
        files.update(p for p, _ in site.stack if p.startswith(here) and p.endswith(".py"))
    return sorted(shown_path(p) for p in files)


def static_run(args, paths: list) -> tuple[Any, Optional[int]]:
    """The findings ``jaxinterop-lint check PATHS`` gives with the same ``--config``,
    ``--isolated``, ``--project-root`` and ``--no-cache``: check's options, configuration
    (the nearest pyproject.toml) and engine call (:func:`jaxinterop_lint.cli_extras.lint_inputs`),
    so both name the same files and lines.  Returns ``(LintResult or None, None)``, or
    ``(None, 2)`` after printing a bad configuration's one-line error."""
    if not paths:
        return None, None
    from jaxinterop_lint import cli_extras  # the static engine (heavy: libcst)
    from jaxinterop_lint.config import ConfigError

    # what check's parser gives for `check [options] -- PATHS` (cli.build_parser; cli is not
    # imported here: it imports this module)
    check_args = argparse.Namespace(
        paths=list(paths), stdin_filename=None, isolated=args.isolated, config=args.config,
        select=None, ignore=None, extend_select=None, exclude=None, extend_exclude=None,
        add_noqa=False, force_exclude=False, respect_gitignore=True,
        project_root=args.project_root, no_cache=args.no_cache)
    try:
        cfg = cli_extras.load_config(check_args)
    except ConfigError as exc:
        print(f"jaxinterop-lint verify: error: {exc}", file=sys.stderr)
        return None, 2
    return cli_extras.lint_inputs(check_args, cfg, os.cpu_count() or 1), None


NO_HITS_HINT = ("jaxinterop-lint verify: the report has no hit at all, so every finding is \"not exercised\". "
                "The shim records only arrays that span several devices: on a machine without several GPUs "
                "run the program with XLA_FLAGS=--xla_force_host_platform_device_count=8 (and JAX_PLATFORMS=cpu) "
                "so that JAX has 8 CPU devices, as the tests do.")
