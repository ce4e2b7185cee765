"""Reading a TOML file (``tomllib``, ``tomli`` before Python 3.11) with one-line errors."""
from __future__ import annotations

import sys

from .errors import ConfigError


def read_toml(path: str) -> dict:
    """Parse the TOML file ``path``; raises :class:`ConfigError` naming the file for an
    unreadable or malformed one."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: malformed TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
