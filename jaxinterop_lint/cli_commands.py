"""The small subcommands of ``jaxinterop-lint``: ``clean``.

Each parses its arguments with argparse (``--help`` prints help and does nothing else).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys


def clean_parser() -> argparse.ArgumentParser:
    """The parser of ``jaxinterop-lint clean``."""
    p = argparse.ArgumentParser(
        prog="jaxinterop-lint clean",
        description="Remove the cache folder (.jaxinterop_lint_cache/) of the project of each path "
                    "(the nearest folder with pyproject.toml, setup.cfg, setup.py or .git above it).")
    p.add_argument("paths", nargs="*", metavar="PATHS", help="files or folders (default: .)")
    return p


def clean_main(argv: list) -> int:
    """``jaxinterop-lint clean [PATHS]``.  Prints each folder removed (stdout) or that there
    was none (stderr).  Exit status: 0; 2 when a path does not exist or a folder cannot be
    removed (the other paths are still cleaned)."""
    from .pipeline.modules import find_root
    from .pipeline.store import CACHE_DIR

    args = clean_parser().parse_args(argv)
    status, removed, seen = 0, 0, set()
    for p in args.paths or ["."]:
        if not os.path.exists(p):
            print(f"jaxinterop-lint clean: error: {p}: no such file or folder", file=sys.stderr)
            status = 2
            continue
        folder = os.path.join(find_root([p]), CACHE_DIR)
        if folder in seen or not os.path.isdir(folder):
            continue
        seen.add(folder)
        try:
            shutil.rmtree(folder)
        except OSError as exc:
            print(f"jaxinterop-lint clean: error: {folder}: {exc.strerror or exc}", file=sys.stderr)
            status = 2
            continue
        print(f"removed {folder}")
        removed += 1
    if not removed and not status:
        print("no cache to remove", file=sys.stderr)
    return status
