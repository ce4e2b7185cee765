"""Installs the jaxinterop shim in every Python process that has this directory on PYTHONPATH.

``jaxinterop-lint run`` prepends this directory to PYTHONPATH and sets ``JAXINTEROP_SHIM`` and
``JAXINTEROP_SHIM_REPORT``; Python's ``site`` module imports ``sitecustomize`` at start-up
(not under ``python -S`` or ``-I``).  Any other ``sitecustomize`` further down ``sys.path``
still runs afterwards.  An interpreter of another environment, which has no
``jaxinterop_lint``, imports the package this file belongs to, and nothing else from the
folder it is in.  When the report cannot be written the process stops at once with exit
status 2 and a one-line message rather than running unobserved.
"""
import importlib.machinery
import importlib.util
import os
import sys


def _here():
    return os.path.dirname(os.path.abspath(__file__))


def _import_own_copy():
    """Import the ``jaxinterop_lint`` package that holds this file, for an interpreter that
    has none (another virtual environment): only that package, never the folder it is in on
    ``sys.path``, which is the linter's own site-packages (its other packages would shadow or
    add to the program's)."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(_here())))
    spec = importlib.machinery.PathFinder.find_spec("jaxinterop_lint", [top])
    if spec is None or spec.loader is None:
        raise ImportError(f"jaxinterop shim: no jaxinterop_lint package in {top}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["jaxinterop_lint"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["jaxinterop_lint"]
        raise


def _install():
    if importlib.util.find_spec("jaxinterop_lint") is None:  # a foreign interpreter: use our copy
        _import_own_copy()
    from jaxinterop_lint.shim.startup import run

    run()  # installs from the environment unless the environment's own hook did; exit 2 on error


def _chain():
    here = os.path.realpath(_here())
    others = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_install()
_chain()
