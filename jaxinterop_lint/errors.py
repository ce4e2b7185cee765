"""The configuration error, below everything that reads a configuration, and the one-line
text of an unexpected exception (for the internal-error lines of every front end)."""
from __future__ import annotations


class ConfigError(Exception):
    """A bad configuration value; the message names the key and where it came from."""


def describe(exc: BaseException) -> str:
    """``TypeName: message`` of ``exc`` on one line (at most 300 characters of message);
    never fails, even on an exception whose text cannot be made (a recursive repr)."""
    try:
        message = " ".join(str(exc).split())[:300]
    except Exception:
        message = "no message"
    return f"{type(exc).__name__}: {message}"
