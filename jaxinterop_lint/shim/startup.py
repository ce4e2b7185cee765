"""The start-up hook that makes ``JAXINTEROP_SHIM`` act in every Python process of an
environment, not only under ``jaxinterop-lint run``.

Opt-in, per environment: ``python -m jaxinterop_lint.shim.startup enable`` writes
:data:`PTH_NAME` into that interpreter's site-packages (``disable`` removes it, ``status``
says whether it is there).  Python's ``site`` module runs the one line of a ``.pth`` file at
every start-up: this one reads ``JAXINTEROP_SHIM`` and does nothing more unless it is set
(``raise`` or ``record``; empty, ``0``, ``off`` or ``none`` mean off), so the cost for every
other process is one environment lookup.  When it is set the shim is installed as
:func:`jaxinterop_lint.shim.maybe_install_from_env` does (each process writes its own
``REPORT.<pid>``), before any of the program's code runs.  A report that cannot be written
stops the process at once with exit status 2 and a one-line message, as under
``jaxinterop-lint run``.  The line survives ``jaxinterop_lint`` being uninstalled (it then
does nothing): run ``disable`` first to remove it.
"""
from __future__ import annotations

import os
import sys
import sysconfig
from typing import Optional

PTH_NAME = "jaxinterop_shim.pth"
OFF = ("", "0", "off", "none")
PTH_LINE = ('import os; exec("try:\\n import jaxinterop_lint.shim.startup as s\\nexcept ImportError:\\n s = None\\n'
            'if s is not None:\\n s.run()") if (os.environ.get("JAXINTEROP_SHIM") or "").strip().lower() '
            f'not in {OFF!r} else None\n')


def site_packages() -> str:
    """This interpreter's site-packages (``purelib``), where :func:`enable` writes."""
    return sysconfig.get_paths()["purelib"]


def enable(folder: Optional[str] = None) -> str:
    """Write the hook into ``folder`` (default :func:`site_packages`); returns its path.
    Raises OSError when the folder is not writable."""
    path = os.path.join(folder or site_packages(), PTH_NAME)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("# jaxinterop-lint: installs the runtime shim when JAXINTEROP_SHIM is set "
                 "(python -m jaxinterop_lint.shim.startup disable removes this file)\n")
        fh.write(PTH_LINE)
    os.replace(tmp, path)
    return path


def disable(folder: Optional[str] = None) -> bool:
    """Remove the hook from ``folder`` (default :func:`site_packages`); True if it was there."""
    try:
        os.unlink(os.path.join(folder or site_packages(), PTH_NAME))
        return True
    except FileNotFoundError:
        return False


def run() -> None:
    """What the hook does at start-up: install the shim from the environment; a report that
    cannot be written ends the process (exit status 2, one line on stderr)."""
    from jaxinterop_lint.shim import is_installed, maybe_install_from_env

    if is_installed():
        return
    try:
        maybe_install_from_env()
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"{exc}\n")
        sys.stderr.flush()
        os._exit(2)


def main(argv: Optional[list] = None) -> int:
    """``python -m jaxinterop_lint.shim.startup enable|disable|status [--site-packages DIR]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m jaxinterop_lint.shim.startup",
                                     description="Make JAXINTEROP_SHIM=raise|record act in every Python process of "
                                                 "this environment (a .pth start-up hook), or stop it.")
    parser.add_argument("action", choices=("enable", "disable", "status"))
    parser.add_argument("--site-packages", metavar="DIR", help=f"where the hook goes (default: {site_packages()})")
    args = parser.parse_args(argv)
    folder = args.site_packages
    try:
        if args.action == "enable":
            print(f"enabled: {enable(folder)}")
        elif args.action == "disable":
            print("disabled" if disable(folder) else "was not enabled")
        else:
            path = os.path.join(folder or site_packages(), PTH_NAME)
            print(f"enabled: {path}" if os.path.exists(path) else "not enabled")
    except OSError as exc:
        print(f"jaxinterop shim: cannot change {folder or site_packages()}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
