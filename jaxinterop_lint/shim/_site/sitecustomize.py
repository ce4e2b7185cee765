"""Installs the jaxinterop shim in every Python process that has this directory on PYTHONPATH.

``jaxinterop-lint run`` prepends this directory to PYTHONPATH and sets ``JAXINTEROP_SHIM`` and
``JAXINTEROP_SHIM_REPORT``; Python's ``site`` module imports ``sitecustomize`` at start-up
(not under ``python -S`` or ``-I``).  Any other ``sitecustomize`` further down ``sys.path``
still runs afterwards.  When the report cannot be written the process stops at once with exit
status 2 and a one-line message rather than running unobserved.
"""
import importlib.machinery
import importlib.util
import os
import sys


def _here():
    return os.path.dirname(os.path.abspath(__file__))


def _install():
    if importlib.util.find_spec("jaxinterop_lint") is None:  # a foreign interpreter: use our copy
        sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(_here()))))
    from jaxinterop_lint.shim import maybe_install_from_env
    try:
        maybe_install_from_env()
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"{exc}\n")
        sys.stderr.flush()
        os._exit(2)


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
