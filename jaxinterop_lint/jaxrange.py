"""The JAX versions a project runs on: ``target-jax-version`` or the project's own declaration.

The range is, in order of preference:

1. ``target-jax-version`` in ``[tool.jaxinterop-lint]`` (a version such as ``"0.4.31"`` or a
   PEP 440 range such as ``">=0.4.31,<0.8"``);
2. the ``jax`` requirements the project declares in its root folder: ``[project]
   dependencies``, ``[project.optional-dependencies]`` and ``[dependency-groups]`` of
   ``pyproject.toml``, ``install_requires`` / ``extras_require`` of ``setup.cfg``, and every
   ``requirements*.txt``.  Each install configuration is one alternative (an extra adds its
   specifiers to the main dependencies; each requirements file is its own environment); the
   range is the union of the alternatives that name jax;
3. the jax version pinned in a lock file (``uv.lock``, ``poetry.lock``, ``pdm.lock``);
4. the newest JAX the tables know (:data:`~jaxinterop_lint.knowledge.versions.DEFAULT`).

Specifiers are parsed by ``packaging`` (``packaging.requirements.Requirement``,
``packaging.specifiers.SpecifierSet``).  A range is kept as a tuple of specifier texts (the
alternatives; ``""`` admits every version) so that it can live in the
:class:`~jaxinterop_lint.config.Config` and in the cache key.  Bad values raise
:class:`~jaxinterop_lint.config.ConfigError` naming the file and the key.
"""
from __future__ import annotations

import functools
import os
import re
from typing import Iterable, Optional

from .errors import ConfigError
from .knowledge import releases as VT

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
LOCK_FILES = ("uv.lock", "poetry.lock", "pdm.lock")
DEFAULT_SOURCE = f"the newest JAX the tables know ({VT.text(VT.NEWEST)})"
_JAX_LINE = re.compile(r"^\s*jax\s*(?:$|[\[<>=!~;@ (])", re.IGNORECASE)
# Stand-ins for "a release newer than the newest known" when a specifier is evaluated.
_FUTURE_STANDINS = ("0.12.0", "0.99.0", "1.0.0", "2.0.0")


def _release_text(v) -> str:
    return ".".join(map(str, v))


@functools.lru_cache(maxsize=256)
def versions_of(spec: tuple) -> frozenset:
    """The known releases (and :data:`~jaxinterop_lint.knowledge.versions.FUTURE`) that the
    alternatives ``spec`` admit; the default set for ``()``.  Raises ``ValueError`` for a
    malformed specifier."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    if not spec:
        return VT.DEFAULT
    out = set()
    for alternative in spec:
        sset = SpecifierSet(alternative)
        out |= {v for v in VT.RELEASES if sset.contains(Version(_release_text(v)), prereleases=True)}
        if any(sset.contains(Version(t), prereleases=True) for t in _FUTURE_STANDINS):
            out.add(VT.FUTURE)
    return frozenset(out)


def describe(spec: tuple) -> str:
    """``jax>=0.4.31`` (alternatives joined with ``or``; the default says so)."""
    if not spec:
        return f"jax {VT.text(VT.NEWEST)} (the newest the tables know)"
    return " or ".join(f"jax{s}" if s else "jax (any version)" for s in spec)


def parse_target(value, path: str, key: str = "target-jax-version") -> tuple:
    """Check a ``target-jax-version`` value: a version (``"0.4.31"``, ``"0.4.*"``), a PEP 440
    range (``">=0.4.31,<0.8"``) or ``"jax>=0.4.31"``.  Returns the range's alternatives;
    raises :class:`ConfigError` naming ``path`` and ``key``."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: {key}: expected a version or a range such as \">=0.4.31,<0.8\", got {value!r}")
    text = value.strip()
    if text.lower().startswith("jax") and not text[3:4].isalnum() and text[3:4] not in ("-", "_"):
        text = text[3:].strip()
    if text and (text[0].isdigit()):
        text = "==" + text
    try:
        SpecifierSet(text)
    except InvalidSpecifier as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{path}: {key}: {value!r} is not a version or a range ({reason})") from None
    spec = (str(SpecifierSet(text)),)
    _check_admits(spec, path, key, value)
    return spec


def _check_admits(spec: tuple, path: str, key: str, shown) -> None:
    if not versions_of(spec):
        raise ConfigError(f"{path}: {key}: {shown!r} admits none of the JAX releases the tables know "
                          f"({VT.text(VT.RELEASES[0])} to {VT.text(VT.NEWEST)}); give a range that "
                          f"includes one of them (a later release behaves as {VT.text(VT.NEWEST)} there)")


def _jax_specifier(line: str, path: str, key: str) -> Optional[str]:
    """The specifier text of a requirement line naming jax (``""``: any version), or None
    for a line about another package.  Raises :class:`ConfigError` for a malformed jax line."""
    from packaging.requirements import InvalidRequirement, Requirement

    if not _JAX_LINE.match(line):
        return None
    try:
        req = Requirement(line.strip())
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{path}: {key}: invalid requirement {line.strip()!r} ({reason})") from None
    if req.name.lower() != "jax":  # pragma: no cover - the pattern only lets jax through
        return None
    return str(req.specifier)


def _environment(lines: Iterable[str], path: str, key: str) -> Optional[str]:
    """The combined specifier of the jax lines of one install configuration, or None when
    none names jax."""
    parts = [s for s in (_jax_specifier(line, path, key) for line in lines) if s is not None]
    if not parts:
        return None
    return ",".join(p for p in parts if p)


def _list(value, path: str, key: str) -> list:
    if not isinstance(value, list):
        raise ConfigError(f"{path}: {key}: expected a list of requirement strings")
    return [v for v in value if isinstance(v, str)]


def from_pyproject(path: str) -> list:
    """The alternatives declared in ``path``'s ``[project]`` tables and dependency groups."""
    from .tomlfile import read_toml

    data = read_toml(path)
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    main = _environment(_list(project.get("dependencies", []), path, "project.dependencies"), path,
                        "project.dependencies")
    out = [main] if main is not None else []
    extras = project.get("optional-dependencies", {})
    if not isinstance(extras, dict):
        raise ConfigError(f"{path}: project.optional-dependencies: expected a table of lists")
    groups = data.get("dependency-groups", {}) if isinstance(data.get("dependency-groups"), dict) else {}
    for table, prefix, adds_main in ((extras, "project.optional-dependencies", True),
                                     (groups, "dependency-groups", False)):
        for name, reqs in table.items():
            key = f"{prefix}.{name}"
            extra = _environment(_list(reqs, path, key), path, key)
            if extra is None:
                continue
            if adds_main and main is not None:
                extra = ",".join(p for p in (main, extra) if p)
            out.append(extra)
    return out


def from_setup_cfg(path: str) -> list:
    """The alternatives of ``setup.cfg``'s ``install_requires`` and ``extras_require``."""
    import configparser     # only for a project with a setup.cfg

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    main = None
    if parser.has_option("options", "install_requires"):
        main = _environment(parser.get("options", "install_requires").splitlines(), path,
                            "options.install_requires")
    out = [main] if main is not None else []
    if parser.has_section("options.extras_require"):
        for name, value in parser.items("options.extras_require"):
            key = f"options.extras_require.{name}"
            extra = _environment(value.splitlines(), path, key)
            if extra is not None:
                out.append(",".join(p for p in (main, extra) if p))
    return out


def from_requirements(path: str) -> list:
    """The alternative of one ``requirements*.txt`` file (``-r``/``-c`` includes are not followed)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read().replace("\\\n", "")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    lines = []
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if line and not line.startswith("-"):
            lines.append(line)
    env = _environment(lines, path, "requirements")
    return [env] if env is not None else []


def from_lock(path: str) -> list:
    """The jax versions pinned in a TOML lock file (``[[package]]`` entries named jax)."""
    from .tomlfile import read_toml

    packages = read_toml(path).get("package", [])
    out = []
    for pkg in packages if isinstance(packages, list) else []:
        if isinstance(pkg, dict) and str(pkg.get("name", "")).lower() == "jax" and isinstance(pkg.get("version"), str):
            out.append(f"=={pkg['version']}")
    return out


def project_root(paths: Iterable[str]) -> Optional[str]:
    """The nearest folder above the common folder of ``paths`` holding ``pyproject.toml``,
    ``setup.cfg``, ``setup.py`` or ``.git``; None when there is none."""
    folders = [os.path.abspath(p) if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))
               for p in paths] or [os.getcwd()]
    folder = os.path.commonpath(folders)
    while True:
        if any(os.path.exists(os.path.join(folder, m)) for m in ROOT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _requirements_files(root: str) -> list:
    """``sorted(glob.glob(os.path.join(root, "requirements*.txt")))`` from one listing (no
    ``glob`` import in every run)."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return sorted(os.path.join(root, n) for n in names
                  if len(n) >= 16 and os.path.normcase(n[:12]) == "requirements" and os.path.normcase(n[-4:]) == ".txt")


def declared(root: str) -> Optional[tuple]:
    """``(alternatives, source text)`` declared in the folder ``root``, or None.  Raises
    :class:`ConfigError` for a malformed declaration."""
    found, sources = [], []
    readers = [(os.path.join(root, "pyproject.toml"), from_pyproject), (os.path.join(root, "setup.cfg"), from_setup_cfg)]
    readers += [(p, from_requirements) for p in _requirements_files(root)]
    for path, reader in readers:
        if os.path.isfile(path):
            alternatives = reader(path)
            if alternatives:
                for alt in alternatives:
                    _check_admits((alt,), path, "jax requirement", f"jax{alt}")
                found.extend(a for a in alternatives if a not in found)
                sources.append(os.path.basename(path))
    if not found:
        for name in LOCK_FILES:
            path = os.path.join(root, name)
            if os.path.isfile(path):
                pins = from_lock(path)
                if pins:
                    found, sources = pins, [f"{name} (pinned)"]
                    break
    if not found:
        return None
    spec = tuple(found)
    try:
        versions_of(spec)
    except ValueError as exc:  # pragma: no cover - packaging checked each part already
        raise ConfigError(f"{root}: jax requirement: {exc}") from None
    where = ", ".join(sources)
    return spec, f"{where} in {root}"


def resolve(paths: Iterable[str], target=None, config_path: Optional[str] = None) -> tuple:
    """``(alternatives, source text)`` of the run's JAX range: ``target`` (the
    ``target-jax-version`` value of ``config_path``) when given, else the declaration of the
    project folder (that of ``config_path``, or the root above ``paths``), else the default
    ``((), DEFAULT_SOURCE)``.  Raises :class:`ConfigError`."""
    if target is not None:
        where = config_path or "configuration"
        return parse_target(target, where), f"target-jax-version in {where}"
    root = os.path.dirname(os.path.abspath(config_path)) if config_path else project_root(list(paths))
    if root is not None:
        found = declared(root)
        if found is not None:
            return found
    return (), DEFAULT_SOURCE


__all__ = ["versions_of", "describe", "parse_target", "declared", "resolve", "project_root", "DEFAULT_SOURCE"]
