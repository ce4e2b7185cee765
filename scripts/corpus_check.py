#!/usr/bin/env python3
"""Lint a pinned corpus of real packages with jaxinterop-lint and report crashes.

The corpus is a pinned list of PyPI distributions (the JAX ecosystem: 55 of them) and of
repositories pinned by commit (read from local git mirrors, ``--mirror``).  Each distribution is fetched with
``pip download --no-deps`` (a wheel where PyPI has one, the sdist otherwise)
into a cache directory and only its ``.py`` members are unpacked; nothing of
the corpus is ever imported or executed.  Every file is then linted with
``jaxinterop-lint --output-format json`` and the script reports, per package
and in total: files, lines, megabytes, seconds, findings and crashes.

A crash is
  * the linter exiting with a status other than 0, 1 or 2, being killed, or
    running past ``--timeout``;
  * the linter printing a Python traceback;
  * an ``error:`` line for a file that the parser of Python 3.11 (``compile``),
    or of a newer Python found on this machine, or libcst accepts: a valid
    file that the linter could not lint.
An ``error:`` line for a file that no parser accepts is an expected error
(a deliberately broken test file, a Python 2 file) and is listed apart.

When a package run crashes, the crashing files are isolated by bisection and,
with ``--reduce``, each one is shrunk to a small repro that still crashes.

``--fix-copy`` copies the corpus to a temporary directory, runs
``jaxinterop-lint --fix --unsafe-fixes`` on the copy and checks that every
changed file still parses (``libcst.parse_module``) and that a second run
changes nothing.

Usage::

    python scripts/corpus_check.py                       # whole corpus
    python scripts/corpus_check.py --packages jax,brax   # a subset
    python scripts/corpus_check.py --fix-copy --json report.json

Exit status: 0 when there is no crash (and, with ``--fix-copy``, every fixed
file parses and the fix is idempotent), 1 otherwise, 2 when the corpus could
not be fetched or the linter could not be started.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import glob
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
import zipfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = Path("/work/corpus")

# The pinned corpus: distribution name -> version.  These are the versions pip
# resolved on 2026-11-30 for CPython 3.11 on manylinux x86_64.  Platform
# wheels (jaxlib, torchrl, numpy, scipy) are fetched for the running
# interpreter; only their .py files are used.
PINNED: dict[str, str] = {
    "jax": "0.10.2",
    "jaxlib": "0.10.2",
    "flax": "0.12.8",
    "optax": "0.2.8",
    "equinox": "0.13.8",
    "brax": "0.14.2",
    "torchrl": "0.14.1",
    "gymnasium": "1.4.0",
    "transformers": "5.24.0",
    "numpy": "2.4.6",
    "scipy": "1.17.1",
    "torch2jax": "0.1.0",
    "jax2torch": "0.0.7",
    # The JAX ecosystem (issue 14), as pip resolved it for CPython 3.11 on manylinux x86_64.
    "dm-acme": "0.4.0",
    "jraph": "0.0.6.dev0",
    "jumanji": "1.1.2",
    "kfac-jax": "0.0.8",
    "trax": "1.4.1",
    "skrl": "2.1.1",
    "torchax": "0.0.13",
    "torch-xla": "2.9.0",
    "warp-lang": "1.19.0",
    "easydel": "0.3.0",
    "eformer": "0.0.101",
    "tpu-inference": "0.32.0",
    "keras": "3.15.1",
    "orbax-checkpoint": "0.12.8",
    "orbax-export": "0.0.8",
    "chex": "0.1.92",
    "distrax": "0.1.9",
    "dm-haiku": "0.0.17",
    "rlax": "0.1.9",
    "mctx": "0.0.71",
    "optimistix": "0.1.0",
    "diffrax": "0.7.2",
    "lineax": "0.1.1",
    "jaxopt": "0.8.5",
    "numpyro": "0.22.0",
    "blackjax": "1.7.1",
    "jaxtyping": "0.3.11",
    "penzai": "0.2.5",
    "gymnax": "1.0.1",
    "evosax": "0.3.2",
    "pgx": "2.6.0",
    "mujoco-mjx": "3.17.0",
    "dm-pix": "0.4.5",
    "clu": "0.0.12",
    "levanter": "1.1",
    "haliax": "1.3",
    "jmp": "0.0.4",
    "flashbax": "0.1.3",
    "jax-md": "0.2.29",
    "netket": "3.23.0",
    "tensorflow-probability": "0.25.0",
    "oryx": "0.2.9",
}

# Repositories, pinned by commit: their ``.py`` files are read from a local git mirror
# (``--mirror DIR``: ``DIR/<owner>+<name>/repo``, as the session's fetch tool lays them out;
# nothing of them is ever committed).  ``jax-ml/jax`` brings JAX's own tests, which the wheel
# lacks; ``AI-Hypercomputer/maxtext`` declares its jax range in pyproject.toml.
REPOS: dict[str, str] = {
    "jax-ml/jax": "cec06d116c05f0d52adfceee3d3b730fdbcb0ce5",
    "AI-Hypercomputer/maxtext": "e591f30cbbf217ed67ef71263ec0538239f9c3b8",
}
DEFAULT_MIRROR = Path("/work/.mirror")

ERROR_LINE = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+))?(?::(?P<col>\d+))?: error: (?P<msg>.*)$")
TRACEBACK_MARK = "Traceback (most recent call last)"


# --------------------------------------------------------------------------
# Download and unpack
# --------------------------------------------------------------------------


def _normalize(name: str) -> str:
    """Return ``name`` as it appears in wheel and sdist file names (PEP 427/625)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def find_archive(name: str, version: str, download_dir: Path) -> Path | None:
    """Find a downloaded archive of ``name==version`` in ``download_dir``.

    Returns the path of a wheel if there is one, else of an sdist
    (``.tar.gz`` or ``.zip``), else None.
    """
    if not download_dir.is_dir():
        return None
    prefix = f"{_normalize(name)}-{version}"
    wheels, sdists = [], []
    for entry in sorted(download_dir.iterdir()):
        dist, sep, rest = entry.name.partition("-")
        stem = _normalize(dist) + sep + rest
        if stem.endswith(".whl") and stem.startswith(prefix + "-"):
            wheels.append(entry)
        elif stem in (prefix + ".tar.gz", prefix + ".zip") or entry.name in (
            f"{name}-{version}.tar.gz", f"{name}-{version}.zip"
        ):  # an old sdist keeps the hyphens of the name (dm-acme-0.4.0.tar.gz)
            sdists.append(entry)
    return (wheels or sdists or [None])[0]


def _pip_download(specs: Sequence[str], download_dir: Path, binary: bool) -> bool:
    """Run ``pip download --no-deps`` for ``specs``; return True when pip succeeded."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(download_dir),
    ]
    cmd.append("--only-binary=:all:" if binary else "--no-binary=:all:")
    cmd.extend(specs)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(f"pip download {' '.join(specs)} failed:\n{proc.stderr[-2000:]}\n")
    return proc.returncode == 0


def download(
    names: Iterable[str], cache_dir: Path = DEFAULT_CACHE, pins: dict[str, str] = PINNED
) -> dict[str, Path]:
    """Download the pinned archives of ``names`` into ``cache_dir/downloads``.

    Archives already there are reused.  A wheel is preferred; the sdist is
    fetched when PyPI has no wheel for this interpreter.  Returns a mapping
    name -> archive path; raises RuntimeError naming what could not be fetched.
    """
    download_dir = cache_dir / "downloads"
    download_dir.mkdir(parents=True, exist_ok=True)
    names = list(names)
    missing = [n for n in names if find_archive(n, pins[n], download_dir) is None]
    if missing:
        specs = [f"{n}=={pins[n]}" for n in missing]
        if not _pip_download(specs, download_dir, binary=True):
            # One spec without a wheel fails the whole batch: retry one by one.
            for name in missing:
                if find_archive(name, pins[name], download_dir) is None:
                    spec = [f"{name}=={pins[name]}"]
                    _pip_download(spec, download_dir, binary=True) or _pip_download(
                        spec, download_dir, binary=False
                    )
    result, failed = {}, []
    for name in names:
        archive = find_archive(name, pins[name], download_dir)
        if archive is None:
            failed.append(f"{name}=={pins[name]}")
        else:
            result[name] = archive
    if failed:
        raise RuntimeError("could not download: " + ", ".join(failed))
    return result


def _safe_member(member: str) -> PurePosixPath | None:
    """Return ``member`` as a relative path, or None if it would escape the target."""
    path = PurePosixPath(member)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return None
    return path


def unpack(archive: Path, dest: Path) -> Path:
    """Extract the ``.py`` members of a wheel or sdist ``archive`` into ``dest``.

    Only regular files ending in ``.py`` are written; members with absolute
    paths or ``..`` are skipped; nothing is executed.  A marker file makes a
    second call a no-op.  Returns ``dest``.
    """
    marker = dest / ".unpacked"
    if marker.exists():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    tmp = dest.with_name(dest.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)

    def write(member: str, data: bytes) -> None:
        rel = _safe_member(member)
        if rel is None or not rel.name.endswith(".py"):
            return
        target = tmp.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    name = archive.name
    if name.endswith(".whl") or name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir() and info.filename.endswith(".py"):
                    write(info.filename, zf.read(info))
    elif name.endswith(".tar.gz"):
        with tarfile.open(archive, "r:gz") as tf:
            for info in tf:
                if info.isfile() and info.name.endswith(".py"):
                    fobj = tf.extractfile(info)
                    if fobj is not None:
                        write(info.name, fobj.read())
    else:
        raise ValueError(f"unknown archive type: {archive}")
    tmp.rename(dest)
    marker.write_text(archive.name + "\n")
    return dest


def ensure_corpus(
    names: Iterable[str], cache_dir: Path = DEFAULT_CACHE, pins: dict[str, str] = PINNED
) -> dict[str, Path]:
    """Download and unpack the pinned packages ``names`` under ``cache_dir``.

    Returns name -> directory holding that package's unpacked ``.py`` files
    (``cache_dir/src/<name>-<version>``), in the order of ``names``.
    """
    archives = download(names, cache_dir, pins)
    return {
        name: unpack(archive, cache_dir / "src" / f"{name}-{pins[name]}")
        for name, archive in archives.items()
    }


def export_repo(repo: str, commit: str, mirror: Path, dest: Path) -> Path:
    """Write the ``.py`` files (and the ``pyproject.toml``, ``setup.cfg``, ``requirements*.txt``
    that declare its jax range) of ``repo`` at ``commit`` from the git mirror under ``mirror``
    into ``dest``; blobs the mirror lacks are skipped.  A marker makes a second call a no-op.
    Raises RuntimeError when the mirror or the commit is missing."""
    marker = dest / ".unpacked"
    if marker.exists():
        return dest
    git_dir = mirror / repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        raise RuntimeError(f"no mirror of {repo} in {git_dir} (fetch it first)")
    listing = subprocess.run(["git", "-C", str(git_dir), "ls-tree", "-r", "-z", commit],
                             capture_output=True, text=True)
    if listing.returncode != 0:
        raise RuntimeError(f"{repo}@{commit}: {listing.stderr.strip()[:200]}")
    wanted = []
    for entry in listing.stdout.split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        kind, sha = meta.split()[1:3]
        name = PurePosixPath(path).name
        if kind == "blob" and (name.endswith(".py") or name in ("pyproject.toml", "setup.cfg")
                               or (name.startswith("requirements") and name.endswith(".txt"))):
            if _safe_member(path) is not None:
                wanted.append((sha, path))
    tmp = dest.with_name(dest.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    for sha, path in wanted:
        blob = subprocess.run(["git", "-C", str(git_dir), "cat-file", "blob", sha], capture_output=True)
        if blob.returncode != 0:
            continue
        target = tmp.joinpath(*PurePosixPath(path).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.stdout)
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    marker.write_text(f"{repo}@{commit}\n")
    return dest


def python_files(root: Path) -> list[Path]:
    """Return every ``*.py`` regular file below ``root``, sorted, as absolute paths."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fname in filenames:
            if fname.endswith(".py"):
                path = Path(dirpath, fname)
                if path.is_file() and not path.is_symlink():
                    out.append(path.resolve())
    return sorted(out)


@dataclasses.dataclass
class FileStats:
    """Size of a set of files: count, lines and bytes."""

    files: int = 0
    lines: int = 0
    size: int = 0

    @property
    def mb(self) -> float:
        """Size in megabytes (10**6 bytes)."""
        return self.size / 1e6


def file_stats(files: Iterable[Path]) -> FileStats:
    """Count files, lines and bytes of ``files``."""
    stats = FileStats()
    for path in files:
        data = path.read_bytes()
        stats.files += 1
        stats.size += len(data)
        stats.lines += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return stats


# --------------------------------------------------------------------------
# Running the linter
# --------------------------------------------------------------------------


def linter_command(spec: str | None = None) -> list[str]:
    """Return the argv prefix that runs jaxinterop-lint.

    ``spec`` is a shell-quoted command (``--linter``); by default the
    linter of this checkout is run as ``python -m jaxinterop_lint`` with the
    repository on PYTHONPATH (see ``linter_env``).
    """
    if spec:
        return shlex.split(spec)
    return [sys.executable, "-m", "jaxinterop_lint"]


def linter_flags(help_text: str) -> set[str]:
    """Return the long options (``--name``) that the linter's ``--help`` text mentions."""
    return set(re.findall(r"--[a-z][a-z0-9-]*", help_text))


def linter_env() -> dict[str, str]:
    """Return an environment in which ``python -m jaxinterop_lint`` finds this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


@dataclasses.dataclass
class LintRun:
    """Outcome of one linter process: status, output and wall time."""

    returncode: int | None  # None: killed by the timeout
    stdout: str
    stderr: str
    seconds: float

    @property
    def has_traceback(self) -> bool:
        """True when the linter printed a Python traceback."""
        return TRACEBACK_MARK in self.stderr or TRACEBACK_MARK in self.stdout

    @property
    def abnormal(self) -> bool:
        """True for a crash of the whole process: traceback, timeout, signal or odd status."""
        return self.has_traceback or self.returncode not in (0, 1, 2)


def _chunks(files: Sequence[str], limit: int = 200_000) -> list[list[str]]:
    """Split ``files`` into argument lists of at most ``limit`` characters."""
    out: list[list[str]] = [[]]
    size = 0
    for f in files:
        if out[-1] and size + len(f) + 1 > limit:
            out.append([])
            size = 0
        out[-1].append(f)
        size += len(f) + 1
    return out


def run_linter(
    cmd: Sequence[str],
    args: Sequence[str],
    files: Sequence[str],
    cwd: Path,
    timeout: float,
    env_extra: dict[str, str] | None = None,
) -> LintRun:
    """Run ``cmd + args + files`` in ``cwd`` (in argument chunks if the list is long).

    ``env_extra`` adds environment variables.  Returns one LintRun: the worst
    exit status, the outputs concatenated (JSON lists merged into one) and the
    total wall time.
    """
    env = linter_env() | (env_extra or {})
    rcs, outs, errs, total = [], [], [], 0.0
    merged: list | None = []
    for chunk in _chunks(list(files)):
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                [*cmd, *args, *chunk],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
            )
            rc, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc = None
            out = (
                exc.stdout.decode(errors="replace")
                if isinstance(exc.stdout, bytes)
                else (exc.stdout or "")
            )
            err = (
                exc.stderr.decode(errors="replace")
                if isinstance(exc.stderr, bytes)
                else (exc.stderr or "")
            )
            err += f"\n[corpus_check] killed after {timeout:.0f} s\n"
        total += time.perf_counter() - start
        rcs.append(rc)
        errs.append(err)
        outs.append(out)
        if merged is not None:
            try:
                data = json.loads(out) if out.strip() else []
                merged.extend(data if isinstance(data, list) else [data])
            except ValueError:
                merged = None
    worst = None if None in rcs else max(rcs, key=lambda r: (r not in (0, 1, 2), r))
    stdout = json.dumps(merged) if merged is not None and len(outs) > 1 else "".join(outs)
    return LintRun(worst, stdout, "".join(errs), total)


# --------------------------------------------------------------------------
# Parsers: is a file valid Python?
# --------------------------------------------------------------------------


def _newer_pythons() -> list[str]:
    """Return interpreters newer than 3.11 found on PATH or under ~/.pyenv."""
    candidates = []
    for minor in range(20, 11, -1):
        exe = shutil.which(f"python3.{minor}")
        if exe:
            candidates.append(exe)
    candidates += sorted(
        glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")), reverse=True
    )
    found = []
    for exe in candidates:
        try:
            out = subprocess.run(
                [exe, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                capture_output=True,
                text=True,
                timeout=20,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip() == "True":
            found.append(exe)
    return found[:1]


_NEWER: list[str] | None = None


def python_parses(source: bytes, filename: str = "<corpus>") -> bool:
    """Return True when the running Python's compiler accepts ``source``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, filename, "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False


def newer_python_parses(path: Path) -> str | None:
    """Return the newer interpreter that compiles ``path``, or None."""
    global _NEWER
    if _NEWER is None:
        _NEWER = _newer_pythons()
    code = (
        "import sys, warnings; warnings.simplefilter('ignore'); "
        "compile(open(sys.argv[1], 'rb').read(), sys.argv[1], 'exec')"
    )
    for exe in _NEWER:
        try:
            if (
                subprocess.run(
                    [exe, "-c", code, str(path)], capture_output=True, timeout=60
                ).returncode
                == 0
            ):
                return exe
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


def libcst_parses(source: bytes) -> bool:
    """Return True when ``libcst.parse_module`` accepts ``source``."""
    import libcst

    try:
        libcst.parse_module(source)
        return True
    except Exception:  # noqa: BLE001 - any failure means "does not parse"
        return False


def validity(path: Path) -> str | None:
    """Say which parser accepts the file at ``path``: a short reason, or None if none does."""
    data = path.read_bytes()
    if python_parses(data, str(path)):
        return f"python {sys.version_info.major}.{sys.version_info.minor} compiles it"
    exe = newer_python_parses(path)
    if exe:
        return f"{exe} compiles it (newer syntax)"
    if libcst_parses(data):
        return "libcst parses it (newer syntax)"
    return None


# --------------------------------------------------------------------------
# Checking one package
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Crash:
    """A file (or a whole run) on which the linter failed."""

    package: str
    path: str  # relative to the corpus src dir; "" when not localised
    kind: str  # "traceback", "exit N", "timeout", "error on valid file"
    detail: str
    repro: str | None = None


@dataclasses.dataclass
class PackageReport:
    """Everything corpus_check learnt about one package."""

    name: str
    version: str
    stats: FileStats
    seconds: float
    returncode: int | None
    findings: list[dict]
    crashes: list[Crash]
    expected_errors: list[str]  # error lines for files no parser accepts


def _display(root: Path, cwd: Path, path: str) -> str:
    """Return ``path`` (as printed by the linter run in ``cwd``) relative to ``root``."""
    p = Path(path)
    if not p.is_absolute():
        p = cwd / p
    try:
        return str(p.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(p)


def _tail(text: str, lines: int = 25) -> str:
    """Return the last ``lines`` lines of ``text`` (a traceback's useful end)."""
    if TRACEBACK_MARK in text:
        text = text[text.rindex(TRACEBACK_MARK) :]
    return "\n".join(text.strip().splitlines()[-lines:])


def minimal_crashing_set(
    files: Sequence[str], crashes: Callable[[Sequence[str]], bool], budget: int = 60
) -> list[str]:
    """Shrink ``files`` (which crash together) to a small subset that still crashes (ddmin).

    Returns the subset found within ``budget`` runs of ``crashes``.
    """
    items, n, runs = list(files), 2, 0
    while len(items) >= 2 and runs < budget:
        size = -(-len(items) // n)
        chunks = [items[i : i + size] for i in range(0, len(items), size)]
        candidates = chunks + (
            [] if n == 2 else [[x for c in chunks if c is not chunk for x in c] for chunk in chunks]
        )
        for cand in candidates:
            runs += 1
            if crashes(cand):
                items, n = cand, 2 if len(cand) <= size else max(n - 1, 2)
                break
            if runs >= budget:
                break
        else:
            if n >= len(items):
                break
            n = min(len(items), n * 2)
    return items


def bisect_crashes(
    files: Sequence[str], crashes: Callable[[Sequence[str]], bool], budget: int = 200
) -> list[list[str]]:
    """Return the groups of ``files`` that make ``crashes`` true: mostly single files.

    ``crashes(subset)`` runs the linter on a subset.  Halves are tested
    recursively; at most ``budget`` runs are spent.  When a group crashes but
    neither half does (a crash that needs two files together, e.g. through a
    cross-module summary), the group is shrunk with ``minimal_crashing_set``
    and returned as one group.
    """
    found: list[list[str]] = []
    runs = 0
    stack = [list(files)]
    while stack and runs < budget:
        group = stack.pop()
        if len(group) == 1:
            found.append(group)
            continue
        mid = len(group) // 2
        left, right = group[:mid], group[mid:]
        runs += 2
        lc, rc = crashes(left), crashes(right)
        if lc:
            stack.append(left)
        if rc:
            stack.append(right)
        if not lc and not rc:
            found.append(minimal_crashing_set(group, crashes))
    found += stack  # out of budget
    return found


def _statement_spans(lines: list[str]) -> list[tuple[int, int, int]]:
    """Return (first line, end line, indent) of every statement of ``lines`` (0-based, end
    exclusive, decorators included), or ``[]`` when Python cannot parse the text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    spans = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.end_lineno is not None:
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            spans.add((first - 1, node.end_lineno, node.col_offset))
    return sorted(spans, key=lambda s: (s[0] - s[1], s[0]))  # largest first


def reduce_source(
    source: str, still_fails: Callable[[str], bool], budget: int = 300, seconds: float = 180.0
) -> str:
    """Shrink ``source`` while ``still_fails(text)`` holds; return the smallest text found.

    First blank and comment lines go, then runs of top-level statements
    (halves, quarters, ...), then single statements with their bodies,
    largest first, each removed or replaced by ``pass`` where removing it
    leaves an empty body.  A statement whose removal did not keep the failure
    is not tried again.  Files Python cannot parse fall back to single lines.
    Candidates that neither Python nor libcst parse cost no linter run; at
    most ``budget`` linter runs and about ``seconds`` seconds are spent.
    """
    lines = source.splitlines(keepends=True)
    runs = 0
    deadline = time.monotonic() + seconds
    tried: set[str] = set()

    def attempt(cand: list[str]) -> bool:
        nonlocal runs, lines
        text = "".join(cand)
        if not cand or text in tried or runs >= budget or time.monotonic() > deadline:
            return False
        tried.add(text)
        if not (python_parses(text.encode()) or libcst_parses(text.encode())):
            return False
        runs += 1
        if still_fails(text):
            lines = cand
            return True
        return False

    attempt([x for x in lines if x.strip() and not x.lstrip().startswith("#")])
    # Runs of top-level statements, coarse to fine.
    n = 2
    while True:
        top = [sp for sp in _statement_spans(lines) if sp[2] == 0]
        top.sort()
        if n > len(top):
            break
        size = -(-len(top) // n)
        for k in range(0, len(top), size):
            group = top[k : k + size]
            drop = {i for first, end, _ in group for i in range(first, end)}
            if attempt([x for i, x in enumerate(lines) if i not in drop]):
                break
        else:
            n *= 2
    # Single statements, largest first.
    failed: set[str] = set()
    progress = True
    while progress and runs < budget and time.monotonic() < deadline:
        progress = False
        spans = _statement_spans(lines) or [(i, i + 1, 0) for i in range(len(lines))]
        for first, end, indent in spans:
            block = "".join(lines[first:end])
            if block in failed:
                continue
            pad = " " * indent
            if attempt(lines[:first] + lines[end:]) or attempt(
                lines[:first] + [pad + "pass\n"] + lines[end:]
            ):
                progress = True
                break
            failed.add(block)
    return "".join(lines)


def check_package(
    name: str,
    version: str,
    root: Path,
    src_root: Path,
    cmd: Sequence[str],
    extra_args: Sequence[str],
    timeout: float,
    reduce: bool,
) -> PackageReport:
    """Lint every .py file of one unpacked package and classify what happened.

    ``root`` is the package directory, ``src_root`` the corpus ``src`` dir
    (paths are reported relative to it).  Returns a PackageReport.
    """
    files = python_files(root)
    rel = [str(f.relative_to(root)) for f in files]
    stats = file_stats(files)
    args = ["--output-format", "json", *extra_args]
    run = run_linter(cmd, args, rel, root, timeout)
    seconds, returncode = run.seconds, run.returncode

    crashes: list[Crash] = []
    if run.abnormal:
        # The process died: find the files that kill it, then lint the rest
        # again so that their findings and errors are still reported.
        kind = (
            "timeout"
            if run.returncode is None
            else "traceback"
            if run.has_traceback
            else f"exit {run.returncode}"
        )

        def crashes_on(subset: Sequence[str]) -> bool:
            return run_linter(cmd, args, subset, root, timeout).abnormal

        retry = run_linter(cmd, args, rel, root, timeout)
        groups: list[list[str]] = []
        if not retry.abnormal:
            crashes.append(
                Crash(
                    name,
                    "",
                    kind + " (flaky: a second run of the same files passed)",
                    _tail(run.stderr),
                )
            )
            run = retry
        else:
            groups = bisect_crashes(rel, crashes_on) if len(rel) > 1 else [list(rel)]
            if not groups:
                crashes.append(
                    Crash(name, "", kind + " (not reproducible on a subset)", _tail(run.stderr))
                )
        culprits = [f for g in groups for f in g]
        for group in groups:
            one = run_linter(cmd, args, group, root, timeout)
            shown = [_display(src_root, root, f) for f in group]
            detail = _tail(one.stderr or run.stderr)
            if len(group) > 1:
                detail = "crashes only with these files together:\n  " + "\n  ".join(shown)
                detail += "\n" + _tail(one.stderr or run.stderr)
            crash = Crash(name, shown[0], kind, detail)
            if reduce and len(group) == 1:
                crash.repro = _reduce_file(root / group[0], cmd, args, timeout)
            crashes.append(crash)
        if groups:
            rest = [f for f in rel if f not in set(culprits)]
            run = run_linter(cmd, args, rest, root, timeout) if rest else LintRun(0, "[]", "", 0)
        if run.abnormal and groups:
            crashes.append(
                Crash(name, "", "traceback on the files left after bisection", _tail(run.stderr))
            )

    findings: list[dict] = []
    expected: list[str] = []
    try:
        data = json.loads(run.stdout) if run.stdout.strip() else []
        for item in data if isinstance(data, list) else []:
            item = dict(item)
            item["path"] = _display(src_root, root, str(item.get("path", "")))
            findings.append(item)
    except ValueError:
        if not run.abnormal:
            crashes.append(
                Crash(
                    name,
                    "",
                    "bad JSON output",
                    f"stdout does not parse as JSON: {run.stdout[:500]!r}",
                )
            )

    # error: lines -> crash when some parser accepts the file.
    for line in run.stderr.splitlines():
        m = ERROR_LINE.match(line)
        if not m:
            continue
        path = Path(m["path"])
        path = path if path.is_absolute() else root / path
        shown = _display(src_root, root, m["path"])
        why = validity(path) if path.is_file() else None
        if why:
            crash = Crash(name, shown, "error on valid file", f"{line}\n({why})")
            if "internal error" in line:  # the linter's own bug: get its traceback
                crash.kind = "internal error"
                dbg = run_linter(
                    cmd, args, [str(path)], root, timeout, {"JAXINTEROP_LINT_DEBUG": "1"}
                )
                if dbg.has_traceback:
                    crash.detail += "\n" + _tail(dbg.stderr)
            if reduce:
                crash.repro = _reduce_file(path, cmd, args, timeout, want_error=True)
            crashes.append(crash)
        else:
            expected.append(f"{shown}: {line.split(': error: ', 1)[-1]}")
    if (
        run.returncode == 2
        and not run.has_traceback
        and not any(ERROR_LINE.match(x) for x in run.stderr.splitlines())
    ):
        crashes.append(
            Crash(name, "", "exit 2", "exit status 2 without an error line:\n" + _tail(run.stderr))
        )
    return PackageReport(name, version, stats, seconds, returncode, findings, crashes, expected)


def _signature(text: str) -> str:
    """Return the last line of a traceback (the exception) as a crash signature."""
    lines = [x for x in _tail(text).splitlines() if x.strip()]
    return lines[-1] if lines else ""


def _reduce_file(
    path: Path, cmd: Sequence[str], args: Sequence[str], timeout: float, want_error: bool = False
) -> str | None:
    """Shrink the file at ``path`` to a small source that fails the linter the same way.

    With ``want_error`` the failure is an ``error:`` line on a compilable
    file; otherwise the same traceback signature.  Returns the reduced
    source, or None when the file is not UTF-8 text.
    """
    try:
        source = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    with tempfile.TemporaryDirectory(prefix="jxi-reduce-") as tmp:
        probe = Path(tmp, "repro.py")

        def fails(text: str) -> bool:
            probe.write_text(text, encoding="utf-8")
            run = run_linter(cmd, args, [probe.name], Path(tmp), timeout)
            if want_error:
                return any(ERROR_LINE.match(x) for x in run.stderr.splitlines())
            return run.abnormal and _signature(run.stderr) == sig

        probe.write_text(source, encoding="utf-8")
        first = run_linter(cmd, args, [probe.name], Path(tmp), timeout)
        sig = _signature(first.stderr)
        if not (fails(source)):
            return None
        return reduce_source(source, fails)


# --------------------------------------------------------------------------
# --fix-copy
# --------------------------------------------------------------------------


def _digests(files: Iterable[Path]) -> dict[Path, str]:
    """Return path -> sha256 of the file's bytes."""
    return {f: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def fix_copy_check(
    roots: dict[str, Path],
    cmd: Sequence[str],
    extra_args: Sequence[str],
    timeout: float,
    keep: bool = False,
    exclude: Iterable[str] = (),
) -> dict:
    """Apply ``--fix --unsafe-fixes`` to a copy of the corpus and check the result.

    ``roots`` maps package name -> unpacked directory; ``exclude`` holds
    corpus paths (``<pkg-dir>/...``, as in Crash.path) left out because they
    crash the linter.  Returns a dict with
    ``changed`` (relative paths), ``unparsable`` (path -> libcst error),
    ``not_idempotent`` (paths a second run changed again), ``crashes`` (run
    failures), ``seconds`` and ``copy_dir`` (kept only with ``keep``).
    """
    import libcst

    skip = set(exclude)
    tmp = Path(tempfile.mkdtemp(prefix="jxi-fixcopy-"))
    result: dict = {
        "changed": [],
        "unparsable": {},
        "not_idempotent": [],
        "crashes": [],
        "seconds": 0.0,
        "copy_dir": str(tmp) if keep else None,
    }
    try:
        pkg_dirs = {}
        for name, root in roots.items():
            dest = tmp / root.name
            shutil.copytree(root, dest, ignore=shutil.ignore_patterns(".unpacked"))
            pkg_dirs[name] = dest
        args = ["--fix", "--unsafe-fixes", "--output-format", "json", *extra_args]
        for name, dest in pkg_dirs.items():
            files = [f for f in python_files(dest) if str(f.relative_to(tmp)) not in skip]
            rel = [str(f.relative_to(dest)) for f in files]
            before = _digests(files)
            first = run_linter(cmd, args, rel, dest, timeout)
            result["seconds"] += first.seconds
            if first.abnormal:
                result["crashes"].append(f"{name}: first --fix run: {_tail(first.stderr)}")
            after = _digests(files)
            changed = [f for f in files if before[f] != after[f]]
            for f in changed:
                shown = str(f.relative_to(tmp))
                result["changed"].append(shown)
                try:
                    libcst.parse_module(f.read_bytes())
                except Exception as exc:  # noqa: BLE001
                    result["unparsable"][shown] = (
                        str(exc).splitlines()[0] if str(exc) else repr(exc)
                    )
            if changed:
                second = run_linter(cmd, args, rel, dest, timeout)
                result["seconds"] += second.seconds
                if second.abnormal:
                    result["crashes"].append(f"{name}: second --fix run: {_tail(second.stderr)}")
                again = _digests(files)
                result["not_idempotent"] += [
                    str(f.relative_to(tmp)) for f in files if again[f] != after[f]
                ]
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return result


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def _table(rows: list[list[str]], right: set[int]) -> str:
    """Format ``rows`` (first row = header) as an aligned plain-text table."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for k, row in enumerate(rows):
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def format_report(reports: list[PackageReport], fix: dict | None) -> str:
    """Render the package reports (and the --fix-copy result) as readable text."""
    rows = [
        [
            "package",
            "version",
            "files",
            "lines",
            "MB",
            "seconds",
            "exit",
            "findings",
            "crashes",
            "bad files",
        ]
    ]
    tot = FileStats()
    secs = 0.0
    for r in reports:
        rows.append(
            [
                r.name,
                r.version,
                str(r.stats.files),
                str(r.stats.lines),
                f"{r.stats.mb:.1f}",
                f"{r.seconds:.2f}",
                str(r.returncode),
                str(len(r.findings)),
                str(len(r.crashes)),
                str(len(r.expected_errors)),
            ]
        )
        tot.files += r.stats.files
        tot.lines += r.stats.lines
        tot.size += r.stats.size
        secs += r.seconds
    rows.append(
        [
            "TOTAL",
            "",
            str(tot.files),
            str(tot.lines),
            f"{tot.mb:.1f}",
            f"{secs:.2f}",
            "",
            str(sum(len(r.findings) for r in reports)),
            str(sum(len(r.crashes) for r in reports)),
            str(sum(len(r.expected_errors) for r in reports)),
        ]
    )
    out = [_table(rows, right={2, 3, 4, 5, 7, 8, 9}), ""]

    findings = [f for r in reports for f in r.findings]
    out.append(f"Findings ({len(findings)}):")
    for f in findings:
        out.append(
            f"  {f.get('path')}:{f.get('line')}:{f.get('column')}: {f.get('code')} "
            f"{f.get('message')}"
        )
    crashes = [c for r in reports for c in r.crashes]
    out += ["", f"Crashes ({len(crashes)}):"]
    for c in crashes:
        out.append(f"  [{c.package}] {c.path or '(whole run)'}: {c.kind}")
        out += ["      " + x for x in c.detail.splitlines()]
        if c.repro is not None:
            out.append("    minimal repro:")
            out += ["      | " + x for x in c.repro.splitlines()]
    expected = [(r.name, e) for r in reports for e in r.expected_errors]
    out += [
        "",
        f"Files no parser accepts, reported as errors (expected, not crashes): {len(expected)}",
    ]
    out += [f"  [{n}] {e}" for n, e in expected]
    if fix is not None and "skipped" in fix:
        out += ["", f"--fix --unsafe-fixes on a copy: skipped: {fix['skipped']}"]
    elif fix is not None:
        out += [
            "",
            f"--fix --unsafe-fixes on a copy: {len(fix['changed'])} files changed "
            f"in {fix['seconds']:.2f} s",
        ]
        out += [f"  changed: {p}" for p in fix["changed"]]
        out.append(f"  unparsable after fix: {len(fix['unparsable'])}")
        out += [f"    {p}: {e}" for p, e in fix["unparsable"].items()]
        out.append(f"  changed again by a second run: {len(fix['not_idempotent'])}")
        out += [f"    {p}" for p in fix["not_idempotent"]]
        out.append(f"  fix run failures: {len(fix['crashes'])}")
        out += ["    " + x for c in fix["crashes"] for x in c.splitlines()]
        if fix["copy_dir"]:
            out.append(f"  copy kept in {fix['copy_dir']}")
    return "\n".join(out)


def report_json(reports: list[PackageReport], fix: dict | None) -> dict:
    """Return the reports as a JSON-serialisable dict."""
    return {
        "packages": [
            {
                "name": r.name,
                "version": r.version,
                "files": r.stats.files,
                "lines": r.stats.lines,
                "bytes": r.stats.size,
                "seconds": round(r.seconds, 3),
                "returncode": r.returncode,
                "findings": r.findings,
                "crashes": [dataclasses.asdict(c) for c in r.crashes],
                "expected_errors": r.expected_errors,
            }
            for r in reports
        ],
        "totals": {
            "files": sum(r.stats.files for r in reports),
            "lines": sum(r.stats.lines for r in reports),
            "bytes": sum(r.stats.size for r in reports),
            "seconds": round(sum(r.seconds for r in reports), 3),
            "findings": sum(len(r.findings) for r in reports),
            "crashes": sum(len(r.crashes) for r in reports),
        },
        "fix_copy": fix,
    }


def all_pins() -> dict[str, str]:
    """Every corpus entry: PyPI name -> version, repository -> commit (first 10 digits)."""
    return {**PINNED, **{repo: commit[:10] for repo, commit in REPOS.items()}}


def parse_packages(text: str | None, pins: dict[str, str] = PINNED) -> list[str]:
    """Turn ``--packages a,b`` into a list of pinned names (all of them when empty).

    Raises SystemExit with a message for a name that is not pinned.
    """
    if not text:
        return list(pins)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in pins]
    if unknown:
        raise SystemExit(
            f"corpus_check: not in the pinned list: {', '.join(unknown)} (known: {', '.join(pins)})"
        )
    return names


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; ``argv`` as for argparse.  Returns the exit status."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"cache directory for downloads and unpacked sources (default {DEFAULT_CACHE})",
    )
    ap.add_argument("--packages", help="comma-separated subset of: " + ",".join(all_pins()))
    ap.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR,
                    help=f"folder of git mirrors for the pinned repositories (default {DEFAULT_MIRROR})")
    ap.add_argument(
        "--download-only",
        action="store_true",
        help="fetch and unpack, print the corpus size, lint nothing",
    )
    ap.add_argument(
        "--fix-copy",
        action="store_true",
        help="also run --fix --unsafe-fixes on a temporary copy and check the result",
    )
    ap.add_argument("--keep-copy", action="store_true", help="keep the --fix-copy directory")
    ap.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the report as JSON to FILE (or stdout with no FILE)",
    )
    ap.add_argument(
        "--linter",
        help="command that runs the linter (default: python -m jaxinterop_lint from this checkout)",
    )
    ap.add_argument("--jobs", type=int, help="pass --jobs N to the linter")
    ap.add_argument(
        "--cache", action="store_true", help="let the linter use its cache (default: --no-cache)"
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="seconds one linter run may take before it counts as a crash",
    )
    ap.add_argument(
        "--reduce",
        action="store_true",
        help="shrink each crashing file to a small repro (runs the linter many times)",
    )
    opts = ap.parse_args(argv)

    pins = all_pins()
    names = parse_packages(opts.packages, pins)
    cache = opts.dir.resolve()
    try:
        roots = ensure_corpus([n for n in names if n in PINNED], cache)
        for repo in (n for n in names if n in REPOS):
            short = f"{repo.replace('/', '+')}-{REPOS[repo][:10]}"
            roots[repo] = export_repo(repo, REPOS[repo], opts.mirror, cache / "src" / short)
        roots = {n: roots[n] for n in names}
    except (RuntimeError, OSError, zipfile.BadZipFile, tarfile.TarError) as exc:
        print(f"corpus_check: {exc}", file=sys.stderr)
        return 2

    if opts.download_only:
        rows = [["package", "version", "files", "lines", "MB"]]
        tot = FileStats()
        for name, root in roots.items():
            s = file_stats(python_files(root))
            tot.files, tot.lines, tot.size = (
                tot.files + s.files,
                tot.lines + s.lines,
                tot.size + s.size,
            )
            rows.append([name, pins[name], str(s.files), str(s.lines), f"{s.mb:.1f}"])
        rows.append(["TOTAL", "", str(tot.files), str(tot.lines), f"{tot.mb:.1f}"])
        print(_table(rows, right={2, 3, 4}))
        return 0

    cmd = linter_command(opts.linter)
    probe = subprocess.run(
        [*cmd, "--help"], capture_output=True, text=True, env=linter_env(), cwd=cache
    )
    if probe.returncode != 0:
        print(
            f"corpus_check: cannot run the linter ({shlex.join(cmd)} --help exited "
            f"{probe.returncode}):\n{probe.stderr[-2000:]}",
            file=sys.stderr,
        )
        return 2
    flags = linter_flags(probe.stdout)
    notes: list[str] = []
    extra: list[str] = []
    if not opts.cache:
        if "--no-cache" in flags:
            extra.append("--no-cache")
        else:
            notes.append("the linter has no --no-cache option: run without it")
    if opts.jobs:
        extra += ["--jobs", str(opts.jobs)]

    reports = []
    for name, root in roots.items():
        print(f"linting {name} ...", file=sys.stderr, flush=True)
        reports.append(
            check_package(
                name, pins[name], root, cache / "src", cmd, extra, opts.timeout, opts.reduce
            )
        )
    fix = None
    if opts.fix_copy and not {"--fix", "--unsafe-fixes"} <= flags:
        fix = {"skipped": "the linter has no --fix / --unsafe-fixes option yet"}
    elif opts.fix_copy:
        print("applying --fix --unsafe-fixes to a copy ...", file=sys.stderr, flush=True)
        fix = fix_copy_check(
            roots,
            cmd,
            extra,
            opts.timeout,
            keep=opts.keep_copy,
            exclude={c.path for r in reports for c in r.crashes if c.path},
        )

    if opts.json == "-":
        json.dump(report_json(reports, fix) | {"notes": notes}, sys.stdout, indent=1)
        print()
    else:
        print(format_report(reports, fix))
        for note in notes:
            print(f"note: {note}")
        if opts.json:
            Path(opts.json).write_text(json.dumps(report_json(reports, fix), indent=1) + "\n")
    bad = sum(len(r.crashes) for r in reports)
    if fix is not None and "skipped" not in fix:
        bad += len(fix["unparsable"]) + len(fix["not_idempotent"]) + len(fix["crashes"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
