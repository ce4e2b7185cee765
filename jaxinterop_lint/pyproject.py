"""``[tool.jaxinterop-lint]`` in ``pyproject.toml``: find it, check it, turn it into a :class:`Config`.

The table is looked up in the nearest ``pyproject.toml`` above the linted paths that has one
(as ruff does); a malformed ``pyproject.toml`` met on the way is an error.  Every problem is a
:class:`~jaxinterop_lint.config.ConfigError` whose message names the file and the key.
"""
from __future__ import annotations

import dataclasses
import os
import re
from typing import Iterable, Optional

from .config import Config, ConfigError, expand_codes
from .pipeline.storeformat import FORMAT
from .tomlfile import read_toml  # noqa: F401  (re-exported: the table's reader)

TABLE = "jaxinterop-lint"
QUALNAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"   # compiled when a table names one


def protocols() -> tuple:
    """The protocol names ``extend-sinks`` takes (knowledge/apis.py; loaded on first use:
    flake8 reads this module's table in every process)."""
    from .knowledge import apis

    return (apis.DLPACK, apis.CAI, apis.RAW)


def __getattr__(name: str):
    if name == "PROTOCOLS":       # the old name of protocols()
        return protocols()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
CODE_KEYS = ("select", "ignore", "extend-select")
PATTERN_KEYS = ("exclude", "extend-exclude")
NAME_KEYS = ("extend-sources", "extend-sanitizers")
TABLE_KEYS = ("per-file-ignores", "extend-sinks")
VERSION_KEYS = ("target-jax-version",)
KNOWN_KEYS = CODE_KEYS + PATTERN_KEYS + NAME_KEYS + TABLE_KEYS + VERSION_KEYS


def table_of(path: str) -> Optional[dict]:
    """The ``[tool.jaxinterop-lint]`` table of the TOML file ``path``, or None when it has none.
    Raises :class:`ConfigError` for a malformed file or a table that is not a table."""
    tool = read_toml(path).get("tool", {})
    if not isinstance(tool, dict) or TABLE not in tool:
        return None
    if not isinstance(tool[TABLE], dict):
        raise ConfigError(f"{path}: tool.{TABLE}: expected a table")
    return tool[TABLE]


def find_pyproject(paths: Iterable[str]) -> Optional[str]:
    """The nearest ``pyproject.toml`` with a ``[tool.jaxinterop-lint]`` table in the folders
    above the common folder of ``paths`` (the current folder when there are none).

    Returns its path or None.  Raises :class:`ConfigError` for a malformed ``pyproject.toml``
    met on the way."""
    folders = [os.path.abspath(p) if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))
               for p in paths] or [os.getcwd()]
    folder = os.path.commonpath(folders)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate) and table_of(candidate) is not None:
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _strings(value, path: str, key: str) -> tuple:
    if not isinstance(value, list):
        raise ConfigError(f"{path}: {key}: expected a list of strings, got {_type(value)}")
    bad = [v for v in value if not isinstance(v, str)]
    if bad:
        bad = bad[0]
        raise ConfigError(f"{path}: {key}: expected a list of strings, got a list containing "
                          f"{_shown(bad)} ({type(bad).__name__})")
    return tuple(value)


def _shown(value) -> str:
    """``value`` as TOML writes it, cut to 40 characters (one line)."""
    text = {True: "true", False: "false"}.get(value, None) if isinstance(value, bool) else None
    text = text or (repr(value) if not isinstance(value, (list, dict)) else
                    ("[...]" if isinstance(value, list) else "{...}"))
    return text if len(text) <= 40 else text[:37] + "..."


def _type(value) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number",
             list: "a list", dict: "a table"}
    return names.get(type(value), type(value).__name__)


def _anchor(pattern: str, root: str) -> str:
    """A pattern with a folder part is relative to the config file's folder (made absolute);
    a bare name (``build``, ``*_pb2.py``) matches at any depth and stays as it is."""
    if "/" not in pattern.rstrip("/") or os.path.isabs(pattern):
        return pattern
    return os.path.join(root, pattern)


def _names(value, path: str, key: str) -> tuple:
    names = _strings(value, path, key)
    for name in names:
        if not re.match(QUALNAME_PATTERN, name):
            raise ConfigError(f"{path}: {key}: {name!r} is not a qualified name such as 'mylib.shard_batch'")
    return names


def config_from_table(table: dict, path: str) -> Config:
    """Check ``table`` (the parsed ``[tool.jaxinterop-lint]`` of ``path``) and build a
    :class:`Config` from it.  Raises :class:`ConfigError` naming ``path`` and the key for an
    unknown key, an unknown rule code, a wrong type or an unknown protocol."""
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}: unknown key in [tool.{TABLE}] "
                          f"(known: {', '.join(KNOWN_KEYS)})")
    root = os.path.dirname(os.path.abspath(path))
    cfg = Config(source=path)
    for key in CODE_KEYS:
        if key in table:
            codes = _strings(table[key], path, key)
            expand_codes(codes, path, key)
            setattr(cfg, key.replace("-", "_"), codes)
    if "exclude" in table:
        cfg.exclude = tuple(_anchor(p, root) for p in _strings(table["exclude"], path, "exclude"))
    if "extend-exclude" in table:
        cfg.extend_exclude = tuple(_anchor(p, root)
                                   for p in _strings(table["extend-exclude"], path, "extend-exclude"))
    cfg.extend_sources = _names(table.get("extend-sources", []), path, "extend-sources")
    cfg.extend_sanitizers = _names(table.get("extend-sanitizers", []), path, "extend-sanitizers")
    cfg.per_file_ignores = _per_file_ignores(table.get("per-file-ignores", {}), path, root)
    cfg.extend_sinks = _sinks(table.get("extend-sinks", {}), path)
    if "target-jax-version" in table:
        from . import jaxrange

        cfg.jax_range, cfg.jax_range_source = jaxrange.resolve((), table["target-jax-version"], path)
    return cfg


def _per_file_ignores(value, path: str, root: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: per-file-ignores: expected a table of pattern = [codes], got {_type(value)}")
    out = {}
    for pattern, codes in value.items():
        key = f"per-file-ignores.{pattern!r}"
        codes = _strings(codes, path, key)
        expand_codes(codes, path, key)
        out[_anchor(pattern, root)] = codes
    return out


def _sinks(value, path: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: extend-sinks: expected a table of \"qualified.name\" = \"protocol\", "
                          f"got {_type(value)}")
    _names(list(value), path, "extend-sinks")
    for name, protocol in value.items():
        if protocol not in protocols():
            raise ConfigError(f"{path}: extend-sinks.{name!r}: unknown protocol {protocol!r} "
                              f"(known: {', '.join(protocols())})")
    return dict(value)


class ParsedToml:
    """The TOML files parsed by earlier runs (:func:`.tomlfile.use_cache`): a store
    (:class:`~.pipeline.store.Store`: signed with the per-user key, opened safely) in the
    per-user key folder (``<key folder>/.jaxinterop_lint_cache/parsed-toml-<format>.json``), one entry
    per file, its hash the file's stat stamp and the Python (its TOML parser) that read it."""

    NAME = f"parsed-toml-{FORMAT}.json"   # the store's format: builds of another keep their own

    def __init__(self):
        from .pipeline.store import Store
        from .pipeline.storekey import key_folder

        folder = key_folder()
        self.store = Store(folder, "parsed-toml", name=self.NAME) if folder else None

    @staticmethod
    def _key(stamp: list) -> str:
        import sys

        from .pipeline.store import key_of

        return key_of([stamp, list(sys.version_info[:2])])

    def get(self, path: str, stamp: list):
        """The data parsed from ``path`` when it had ``stamp``, or None."""
        if self.store is None or self.store.folder is None:
            return None
        e = self.store.get(path)
        if e is None or e.get("hash") != self._key(stamp):
            return None
        f = e.get("plan")
        return f.get("data") if isinstance(f, dict) else None

    def put(self, path: str, stamp: list, data: dict) -> None:
        """Keep ``data`` parsed from ``path`` with ``stamp`` (written by :meth:`save`)."""
        if self.store is not None and self.store.folder is not None:
            self.store.put(path, self._key(stamp), None, plan={"data": data})

    def save(self) -> None:
        """Write what :meth:`put` kept (nothing when nothing was)."""
        if self.store is not None:
            self.store.save()


_PARSED: dict = {}


def parsed_toml() -> ParsedToml:
    """The :class:`ParsedToml` of the current key folder, installed as the cache of
    :func:`.tomlfile.read_toml`."""
    from . import tomlfile
    from .pipeline.storekey import key_folder

    folder = key_folder()
    if folder not in _PARSED:
        _PARSED[folder] = ParsedToml()
    tomlfile.use_cache(_PARSED[folder])
    return _PARSED[folder]


def load(paths: Iterable[str], config_file: Optional[str] = None) -> Config:
    """The configuration for linting ``paths``: from ``config_file`` when given (any TOML
    file with a ``[tool.jaxinterop-lint]`` table), else from the nearest ``pyproject.toml``
    that has the table; the defaults when there is none.  Raises :class:`ConfigError`.
    The TOML files read are kept for the next run (:func:`parsed_toml`)."""
    parsed = parsed_toml()
    try:
        return _load(paths, config_file)
    finally:
        parsed.save()


def _load(paths: Iterable[str], config_file: Optional[str] = None) -> Config:
    from . import jaxrange

    paths = list(paths)
    path = config_file or find_pyproject(paths)
    if path is None:
        cfg = Config()
    else:
        if config_file is not None and not os.path.isfile(config_file):
            raise ConfigError(f"{config_file}: --config: no such file")
        table = table_of(path)
        if table is None and config_file is not None:
            raise ConfigError(f"{config_file}: --config: the file has no [tool.{TABLE}] table")
        cfg = Config() if table is None else config_from_table(table, path)
    if not cfg.jax_range_source:
        # no target-jax-version: the project's own declaration (or the default)
        cfg.jax_range, cfg.jax_range_source = jaxrange.resolve(paths, None, None if config_file else path)
    return cfg


def overlay(base: Config, select=None, ignore=(), extend_select=(), exclude=None, extend_exclude=(),
            source: str = "command line") -> Config:
    """``base`` (from a file) with command-line options on top: the command line wins.

    ``select`` replaces the file's selection; ``ignore`` and ``extend-select`` apply after
    it (so ``--extend-select JXI006`` re-enables a code the file ignores); ``exclude``
    replaces the file's excludes and ``extend-exclude`` adds to them.  Raises
    :class:`ConfigError` for an unknown code on the command line."""
    cfg = dataclasses.replace(base)
    if select is not None or ignore or extend_select:
        chosen = expand_codes(select, source, opt_in=False) if select is not None else base.enabled()
        cfg = dataclasses.replace(cfg, select=tuple(sorted(chosen)), extend_select=tuple(extend_select),
                                  ignore=tuple(ignore), source=source)
    if exclude is not None:
        cfg.exclude = tuple(exclude)
    cfg.extend_exclude = tuple(base.extend_exclude) + tuple(extend_exclude)
    cfg.enabled()
    return cfg


def excluded(path: str, patterns: tuple) -> bool:
    """Whether ``path`` or a folder above it matches ``patterns`` (fnmatch, as the walk of
    :func:`~jaxinterop_lint.pipeline.discover.discover` matches them).  Folders above the current one
    are not looked at."""
    from .pipeline.discover import _excluded

    current = os.path.normpath(path)
    if os.path.isabs(current) and not os.path.relpath(current).startswith(".."):
        current = os.path.relpath(current)
    while current and current not in (".", os.sep):
        if _excluded(current, patterns):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return False


__all__ = ["load", "overlay", "find_pyproject", "config_from_table", "table_of", "excluded"]
