"""Issue 16, start-up of a warm run: the TOML files the configuration reads are kept, by their stat
stamp, in a signed cache under the per-user key, so a run whose pyproject.toml did not change
neither parses it nor imports the TOML parser; any edit is read again, a malformed file is
always an error, and a cache that is not this user's is not believed."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jaxinterop_lint import tomlfile
from jaxinterop_lint.config import ConfigError
from jaxinterop_lint.pipeline import storekey as sk
from jaxinterop_lint.pipeline.store import CACHE_DIR
from jaxinterop_lint.pyproject import ParsedToml, load

OLD = 1_600_000_000
TABLE = '[project]\nname = "p"\ndependencies = ["jax>=0.4.30"]\n\n[tool.jaxinterop-lint]\nselect = ["JXI002"]\n'
# (the TOML parser: tomllib, or tomli before Python 3.11)
PROBE = """
import sys
from jaxinterop_lint.pyproject import load
cfg = load(["."])
print("CFG", sorted(cfg.enabled()), cfg.jax_range, "tomllib" in sys.modules or "tomli" in sys.modules)
"""


def write(path, text, old=True):
    path.write_text(text)
    if old:
        os.utime(path, (OLD, OLD))


def probe(root, key_dir):
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=root, capture_output=True, text=True, timeout=120,
                       env={**os.environ, sk.KEY_ENV: str(key_dir)})
    assert r.returncode == 0, r.stderr
    return [x for x in r.stdout.splitlines() if x.startswith("CFG")][-1]


def test_an_unchanged_pyproject_is_not_parsed_again_and_an_edit_is(key_dir, tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    write(root / "pyproject.toml", TABLE)
    first = probe(root, key_dir)
    assert first.endswith("True") and "['JXI002']" in first and "0.4.30" in first
    second = probe(root, key_dir)
    assert second == first[:-len("True")] + "False"        # the same configuration, no TOML parser
    write(root / "pyproject.toml", TABLE.replace('"JXI002"', '"JXI005"'))   # same size and mtime
    third = probe(root, key_dir)
    assert "['JXI005']" in third and third.endswith("True")


def test_a_file_modified_just_now_is_not_kept_across_runs(key_dir, tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    write(root / "pyproject.toml", TABLE, old=False)
    assert probe(root, key_dir).endswith("True")
    assert probe(root, key_dir).endswith("True")


def test_a_malformed_file_is_an_error_every_time(key_dir, tmp_path, monkeypatch):
    root = tmp_path / "proj"
    root.mkdir()
    write(root / "pyproject.toml", "[tool.jaxinterop-lint\nselect = 1\n")
    monkeypatch.chdir(root)
    for _ in range(2):
        with pytest.raises(ConfigError, match="malformed TOML"):
            load(["."])


def test_dates_are_read_each_time_and_what_is_read_is_a_fresh_dict(key_dir, tmp_path):
    path = tmp_path / "t.toml"
    write(path, "when = 1979-05-27\n[a]\nb = [1, 2.5]\n")
    tomlfile.use_cache(ParsedToml())
    one = tomlfile.read_toml(str(path))
    one["a"]["b"].append(3)
    two = tomlfile.read_toml(str(path))
    assert two["a"]["b"] == [1, 2.5] and str(two["when"]) == "1979-05-27"
    assert ParsedToml().get(str(path), tomlfile._stamp(str(path))) is None      # a date: not kept
    write(path, "[a]\nb = [1, 2.5]\n")
    tomlfile.read_toml(str(path))
    tomlfile.use_cache(None)
    cache = ParsedToml()
    assert cache.get(str(path), tomlfile._stamp(str(path))) is None             # not saved yet
    kept = ParsedToml()
    tomlfile._MEMO.clear()
    tomlfile.use_cache(kept)
    tomlfile.read_toml(str(path))
    kept.save()
    tomlfile.use_cache(None)
    assert ParsedToml().get(str(path), tomlfile._stamp(str(path))) == {"a": {"b": [1, 2.5]}}


def test_a_cache_that_is_not_this_users_is_not_believed(key_dir, tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    write(root / "pyproject.toml", TABLE)
    probe(root, key_dir)
    [f] = (key_dir / CACHE_DIR).glob(ParsedToml.NAME)
    data = f.read_bytes().replace(b"JXI002", b"JXI001")
    f.write_bytes(data)                                   # changed under the user's MAC
    got = probe(root, key_dir)
    assert "['JXI002']" in got and got.endswith("True")
