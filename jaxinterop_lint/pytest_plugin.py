"""pytest plugin: ``pytest --jaxinterop-shim=raise|record [--jaxinterop-report PATH]``.

Registered under the ``pytest11`` entry point ``jaxinterop``.  Without ``--jaxinterop-shim``
it does nothing at all; loading it imports neither JAX nor the shim.  With it, the shim is
installed in the pytest process at configure time (before test modules are imported) and
removed at unconfigure.  Under pytest-xdist each worker writes its own ``PATH.<pid>`` file;
``jaxinterop-lint verify --report PATH`` reads them all.  Subprocesses started by tests are
not covered: run ``jaxinterop-lint run -- pytest ...`` for that.
"""
from __future__ import annotations

import os

_DEFAULT_REPORT = "jaxinterop-report.jsonl"


def pytest_addoption(parser) -> None:
    """Add ``--jaxinterop-shim`` and ``--jaxinterop-report``."""
    group = parser.getgroup("jaxinterop", "jaxinterop-lint runtime shim")
    group.addoption("--jaxinterop-shim", choices=("raise", "record"), default=None,
                    help="install the jaxinterop shim: raise JAX's error at multi-device exports, "
                         "or record them to the report")
    group.addoption("--jaxinterop-report", metavar="PATH", default=None,
                    help=f"JSON-lines report of the hits (record mode default: {_DEFAULT_REPORT})")


def pytest_configure(config) -> None:
    """Install the shim when ``--jaxinterop-shim`` is given."""
    mode = config.getoption("jaxinterop_shim", None)
    if not mode:
        return
    from jaxinterop_lint import shim

    report = config.getoption("jaxinterop_report", None)
    per_process = bool(os.environ.get("PYTEST_XDIST_WORKER"))
    shim.install(mode, report, per_process=per_process)
    config._jaxinterop_shim = (mode, shim._core.STATE.report)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Say how many interop hits the shim saw and where they were written."""
    info = getattr(config, "_jaxinterop_shim", None)
    if info is None:
        return
    from jaxinterop_lint import shim

    mode, report = info
    where = f" (report: {report})" if report else ""
    terminalreporter.write_line(f"jaxinterop shim ({mode}): {shim.hit_count()} hit(s){where}")


def pytest_unconfigure(config) -> None:
    """Remove the shim installed by pytest_configure."""
    if getattr(config, "_jaxinterop_shim", None) is None:
        return
    from jaxinterop_lint import shim

    shim.uninstall()
    config._jaxinterop_shim = None
