"""``jaxinterop-lint --watch``: lint, then lint again whenever a watched file changes.

Watches the given paths (default ``.``) with ``watchfiles`` for changes to Python files and
``pyproject.toml`` files (the cache's own writes and other files are ignored).  Each run is
the check command without ``--watch``, so every other option (``--fix``, formats,
``--output-file``) applies to each run; the cache makes the runs after the first cheap.
Stops on Ctrl-C (exit status 130).
"""
from __future__ import annotations

import os
import sys
import time

WATCH_FLAGS = ("-w", "--watch")


def _stamp() -> str:
    return time.strftime("%H:%M:%S")


def relevant(change, path: str) -> bool:
    """The ``watchfiles`` filter: Python files and ``pyproject.toml``, outside the cache
    and ``__pycache__`` folders."""
    parts = path.replace("\\", "/").split("/")
    if ".jaxinterop_lint_cache" in parts or "__pycache__" in parts:
        return False
    name = parts[-1]
    return name.endswith((".py", ".pyi")) or name == "pyproject.toml"


def watch_main(argv: list, args, check) -> int:
    """Run the check command ``argv`` (its ``--watch`` removed) now and after each change;
    ``check(argv)`` is the check command itself (:func:`jaxinterop_lint.cli.check`: passed
    in, so that this module sits below the command line).  Exit status 2 when
    ``watchfiles`` is missing or standard input is to be linted."""
    try:
        import watchfiles
    except ImportError:
        print("jaxinterop-lint: error: --watch needs the watchfiles package: "
              "pip install 'jaxinterop-lint[watch]'", file=sys.stderr)
        return 2
    paths = list(args.paths or ["."])
    if "-" in paths or args.stdin_filename:
        print("jaxinterop-lint: error: --watch lints files, not standard input", file=sys.stderr)
        return 2
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        print(f"jaxinterop-lint: error: {missing[0]}: no such file or folder", file=sys.stderr)
        return 2
    once = [a for a in argv if a not in WATCH_FLAGS]
    print(f"[{_stamp()}] Starting linter in watch mode...", file=sys.stderr, flush=True)
    # The watcher starts on the generator's first step (an empty set after rust_timeout), so
    # it is watching before the first run and no change made during a run is lost.
    changes = watchfiles.watch(*paths, watch_filter=relevant, debounce=400, step=50,
                               yield_on_timeout=True, rust_timeout=200)
    pending = next(changes)
    _run(check, once)
    for batch in changes:
        pending = pending or batch
        if not pending:
            continue
        pending = set()
        print(f"[{_stamp()}] File change detected...", file=sys.stderr, flush=True)
        _run(check, once)
    return 0  # pragma: no cover - the generator ends only when interrupted


def _run(check, argv: list) -> None:
    try:
        check(list(argv))
    except SystemExit:  # pragma: no cover - argparse already accepted these arguments
        pass
    sys.stdout.flush()
    print(f"[{_stamp()}] Watching for file changes.", file=sys.stderr, flush=True)
