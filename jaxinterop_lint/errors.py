"""The configuration error, below everything that reads a configuration."""
from __future__ import annotations


class ConfigError(Exception):
    """A bad configuration value; the message names the key and where it came from."""
