"""Test sessions for the supported Pythons (3.10 to 3.13), with nox.

    nox -s quick-3.10 quick-3.13    # the quick tier (pytest -m "not slow"): no jax, no torch
    nox -s full                     # the whole suite on 3.11 (torch 2.13.0 CPU)
    nox -s quick -- -k cli          # arguments after -- go to pytest

The quick tier installs ``.[quick]`` (no jax, no torch: a CUDA build of torch would be a
multi-GB download on the Pythons for which no CPU wheel is at hand); the full suite installs
``.[test]``.  Interpreters are found on PATH, and under pyenv (``~/.pyenv/versions/3.1x.*``)
without activating them; nox never downloads one.
"""
from __future__ import annotations

import glob
import os

import nox

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
FULL_PYTHON = "3.11"

nox.options.download_python = "never"
nox.options.sessions = ["quick", "full"]
nox.options.reuse_existing_virtualenvs = True


def _pyenv_on_path() -> None:
    """Put each pyenv interpreter of the supported versions on PATH (pyenv's shims only run
    the activated ones)."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = []
    for version in PYTHONS:
        found += sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin")))[-1:]
    if found:
        os.environ["PATH"] = os.pathsep.join(found + [os.environ.get("PATH", "")])


_pyenv_on_path()


@nox.session(python=PYTHONS)
def quick(session: nox.Session) -> None:
    """The quick tier: every test not marked slow."""
    session.install("-e", ".[quick]")
    session.run("python", "-m", "pytest", "-m", "not slow", *session.posargs)


@nox.session(python=FULL_PYTHON)
def full(session: nox.Session) -> None:
    """The whole suite, as the README runs it."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", *session.posargs)
