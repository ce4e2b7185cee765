"""Issue 13: the cache is repository content.  Only entries this user wrote on this machine
are believed (a MAC, keyed BLAKE2b, under a per-user key outside the repository); the store file is never
read through a symlink, from a FIFO or a device, past a size cap, nor parsed before its MAC
checks; nothing is written through a symlink or outside the cache folder; results depend on
the absence of a module and on the content of every file, not on its stat."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time

import pytest

from conftest import run_cli
from jaxinterop_lint.pipeline import store as st
from jaxinterop_lint.pipeline import storeformat as fmt
from jaxinterop_lint.pipeline import storekey as sk
from jaxinterop_lint.pipeline.store import CACHE_DIR, MAGIC, Store

FINDING = ("import jax, torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
           "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n")
ENTRY = {"hash": "h", "result": {"data": {"findings": [], "handled": [], "error": None, "analysed": True},
                                 "deps": {}, "absent": []}}


def repo_with(tmp_path, files: dict):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("")
    for name, text in files.items():
        (repo / name).write_text(text)
    return repo


def store_files(repo):
    return sorted((repo / CACHE_DIR).glob("*.json"))


def forge(path, doc, key: bytes) -> None:
    """Write ``doc`` as the store file ``path`` with MACs under ``key`` (the attacker's):
    ``{"format": FORMAT, "files": {path: entry}}`` in the store's own layout (each entry's
    head and fields as written by the store, whatever their shapes), anything else as JSON."""
    files = doc.get("files") if isinstance(doc, dict) and doc.get("format") == st.FORMAT else None
    if isinstance(files, dict):
        lines = [fmt.HEADER]
        for p, e in files.items():
            if isinstance(e, dict):
                head = {k: v for k, v in e.items() if k in fmt.HEAD}
                fields = [x for k, v in e.items() if k not in fmt.HEAD for x in (k.encode(), fmt.dumps(v))]
            else:
                head, fields = e, []
            lines.append(b"\t".join([fmt.UNSIGNED, fmt.dumps(p), fmt.dumps(head), *fields]))
        payload = b"\n".join(lines)
    else:
        payload = json.dumps(doc).encode()
    path.write_bytes(st.seal(key, str(path), payload))     # each line's MAC and the whole file's


def payload_of(path) -> dict:
    data = path.read_bytes()
    return {"format": st.FORMAT, "files": fmt.decode(data[data.index(b"\n") + 1:])}


def blank(doc: dict) -> dict:
    for e in doc["files"].values():
        if "result" in e:
            e["result"]["data"].update(findings=[], handled=[], error=None, analysed=True)
    return doc


# -- the key -----------------------------------------------------------------------------------
def test_the_key_is_made_once_mode_0600_outside_the_repository(key_dir, tmp_path):
    key = sk.secret_key()
    assert key is not None and len(key) == sk.KEY_BYTES
    path = key_dir / "key"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in key_dir.iterdir()] == ["key"]      # no temporary file left
    sk._KEYS.clear()
    assert sk.secret_key() == key                               # read again, not replaced


def test_no_key_means_no_cache_and_no_error(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(sk.KEY_ENV, str(tmp_path / "file" / "keys"))   # cannot be a folder
    monkeypatch.setattr(sk, "_KEYS", {})
    s = Store(str(tmp_path), "k")
    assert s.file is None
    s.put("/a.py", "h", result=ENTRY["result"])
    s.save()
    assert not (tmp_path / CACHE_DIR).exists()
    repo = repo_with(tmp_path, {"a.py": FINDING})
    r = run_cli("a.py", cwd=repo)
    assert r.returncode == 1 and "JXI002" in r.stdout and "error" not in r.stderr.lower(), r.stderr
    assert not (repo / CACHE_DIR).exists()


@pytest.mark.parametrize("how", ["world-readable", "symlink"])
def test_a_key_others_can_read_or_a_link_is_not_used(key_dir, tmp_path, how):
    key_dir.mkdir()
    if how == "world-readable":
        (key_dir / "key").write_bytes(b"k" * sk.KEY_BYTES)
        os.chmod(key_dir / "key", 0o644)
    else:
        (tmp_path / "elsewhere").write_bytes(b"k" * sk.KEY_BYTES)
        os.chmod(tmp_path / "elsewhere", 0o600)
        os.symlink(tmp_path / "elsewhere", key_dir / "key")
    assert sk.secret_key() is None


# -- reading: only what this user wrote, safely --------------------------------------------------
def saved_store(root) -> Store:
    s = Store(str(root), "k")
    s.put("/p/a.py", "h1", result=ENTRY["result"])
    s.save()
    return s


def test_own_entries_round_trip(key_dir, tmp_path):
    saved_store(tmp_path)
    assert Store(str(tmp_path), "k").get("/p/a.py")["hash"] == "h1"
    assert (tmp_path / CACHE_DIR / "k.json").read_bytes().startswith(MAGIC)
    assert oct((tmp_path / CACHE_DIR / "k.json").stat().st_mode & 0o777) == "0o600"


def test_another_users_key_an_edit_or_the_old_format_is_not_believed(key_dir, tmp_path):
    saved_store(tmp_path)
    f = tmp_path / CACHE_DIR / "k.json"
    good = f.read_bytes()
    forge(f, payload_of(f), b"x" * 32)                          # the attacker's machine
    assert Store(str(tmp_path), "k").entries == {}
    f.write_bytes(good.replace(b'"h1"', b'"h2"'))               # edited, MAC kept
    assert Store(str(tmp_path), "k").entries == {}
    f.write_text(json.dumps({"format": st.FORMAT, "files": {"/p/a.py": ENTRY}}))   # no MAC at all
    assert Store(str(tmp_path), "k").entries == {}
    f.write_bytes(good)
    assert Store(str(tmp_path), "k").get("/p/a.py") is not None


def test_one_entry_read_without_the_index_is_as_trusted_as_the_index(key_dir, tmp_path):
    """A flake8 process finds its entry by its line (no index of every line): the whole
    file's MAC is still checked first, so an edit under a kept MAC is a miss there too."""
    saved_store(tmp_path)
    f = tmp_path / CACHE_DIR / "k.json"
    good = f.read_bytes()
    s = Store(str(tmp_path), "k")
    assert s.get("/p/a.py")["hash"] == "h1" and s._entries is None      # no index was made
    assert s.get("/p/none.py") is None
    assert list(s.entries) == ["/p/a.py"]
    f.write_bytes(good.replace(b'"h1"', b'"h2"'))
    assert Store(str(tmp_path), "k").get("/p/a.py") is None
    f.write_bytes(good.replace(b'{"format":%d}' % st.FORMAT, b'{"format":4}'))   # another format
    assert Store(str(tmp_path), "k").get("/p/a.py") is None


def test_one_entry_is_read_with_its_own_line_mac_only(key_dir, tmp_path, monkeypatch):
    """A flake8 process reading one entry checks that line's MAC, never the whole file's
    (a 4.6 MB store cost each process about 3 ms to check whole, issue 16); the index (a
    command-line run) still checks the whole file's."""
    s = Store(str(tmp_path), "k")
    for name in "abc":
        s.put(f"/p/{name}.py", f"h{name}", result=ENTRY["result"])
    s.save()
    whole, lines = [], []
    monkeypatch.setattr(st, "mac_of", lambda *a: whole.append(1) or sk.mac_of(*a))
    monkeypatch.setattr(st, "line_mac", lambda *a: lines.append(1) or sk.line_mac(*a))
    reader = Store(str(tmp_path), "k")
    assert reader.get("/p/b.py")["hash"] == "hb" and (len(whole), len(lines)) == (0, 1)
    assert sorted(reader.entries) == ["/p/a.py", "/p/b.py", "/p/c.py"] and len(whole) == 1


def test_many_entries_read_make_the_index_once(key_dir, tmp_path, monkeypatch):
    """A result that holds for the plan's epoch reads the entry of every file of the
    project: past :data:`~jaxinterop_lint.pipeline.store.EARLY_LINES` entries the index is
    made (one pass) instead of one search of the file per entry (2,914 searches of
    transformers' 4.6 MB store were 1.0 s of flake8 on one file), and a hash is read from
    an entry's head alone."""
    s = Store(str(tmp_path), "k")
    for i in range(50):
        s.put(f"/p/m{i}.py", f"h{i}", stamp=[i, 1, 2, 3], result=ENTRY["result"])
    s.save()
    reader = Store(str(tmp_path), "k")
    searches = []
    real_line = Store._line
    monkeypatch.setattr(Store, "_line", lambda self, p: searches.append(p) or real_line(self, p))
    parsed = []
    real_entry_of = fmt.entry_of
    monkeypatch.setattr(fmt, "entry_of", lambda rest: parsed.append(1) or real_entry_of(rest))
    assert [reader.known_hash(f"/p/m{i}.py", [i, 1, 2, 3]) for i in range(50)] == [f"h{i}" for i in range(50)]
    assert len(searches) == st.EARLY_LINES and len(parsed) == st.EARLY_LINES
    assert reader.known_hash("/p/m3.py", [9, 9, 9, 9]) is None and reader.get("/p/m40.py")["hash"] == "h40"


def test_a_line_edited_or_moved_is_a_miss_and_costs_only_itself(key_dir, tmp_path):
    s = Store(str(tmp_path), "k")
    s.put("/p/a.py", "ha", result=ENTRY["result"])
    s.put("/p/b.py", "hb", result=ENTRY["result"])
    s.save()
    f = tmp_path / CACHE_DIR / "k.json"
    good = f.read_bytes()
    f.write_bytes(good.replace(b'"hb"', b'"hx"'))            # an edit under the line's own MAC
    one = Store(str(tmp_path), "k")
    assert one.get("/p/b.py") is None and one.get("/p/a.py")["hash"] == "ha"
    assert Store(str(tmp_path), "k").entries == {}           # the whole file's MAC fails too
    other = Store(str(tmp_path), "other")                   # the same user's line, another store file
    other.put("/p/a.py", "hz", result=ENTRY["result"])
    other.save()
    moved = (tmp_path / CACHE_DIR / "other.json").read_bytes().split(b"\n")[-1]
    lines = good.split(b"\n")
    f.write_bytes(b"\n".join(lines[:-1] + [moved]))
    assert Store(str(tmp_path), "k").get("/p/a.py") is None


def test_a_path_spelled_inside_another_entry_is_not_its_line(key_dir, tmp_path):
    """The one-line read finds a path at a line's start (after its MAC), not where an
    entry's field holds the same JSON text."""
    s = Store(str(tmp_path), "k")
    s.put("/p/b.py", "hb", result=ENTRY["result"])
    s.put("/p/a.py", "ha", facts="/p/b.py", result=ENTRY["result"])
    s.put("/p/c.py", "hc", facts="/p/d.py", result=ENTRY["result"])
    s.save()
    data = (tmp_path / CACHE_DIR / "k.json").read_bytes()
    assert data.count(b'\t"/p/b.py"\t') == 2 and data.count(b'\t"/p/d.py"\t') == 1
    reader = Store(str(tmp_path), "k")
    assert reader.get("/p/b.py")["hash"] == "hb" and reader.get("/p/d.py") is None


def test_a_store_file_signed_with_the_former_hmac_is_not_believed(key_dir, tmp_path):
    """The MACs are keyed BLAKE2b: a file signed the old way (HMAC-SHA256 of the whole, this
    user's key, this format's header, no line MACs) is a miss, with or without the index,
    as is one signed under another key."""
    import hashlib
    import hmac

    saved_store(tmp_path)
    f = tmp_path / CACHE_DIR / "k.json"
    payload = fmt.payload(payload_of(f)["files"])      # the lines without their MACs
    old = hmac.new(sk.secret_key(), b"jaxinterop-lint store\0" + os.fsencode(str(f)) + b"\0", hashlib.sha256)
    old.update(payload)
    f.write_bytes(MAGIC + old.hexdigest().encode() + b"\n" + payload)
    assert Store(str(tmp_path), "k").get("/p/a.py") is None
    assert Store(str(tmp_path), "k").entries == {}
    forge(f, {"format": st.FORMAT, "files": {"/p/a.py": ENTRY}}, b"y" * 32)
    assert Store(str(tmp_path), "k").get("/p/a.py") is None
    forge(f, {"format": st.FORMAT, "files": {"/p/a.py": ENTRY}}, sk.secret_key())
    assert Store(str(tmp_path), "k").get("/p/a.py")["hash"] == "h"


def test_entries_read_before_the_index_are_kept_when_it_is_made(key_dir, tmp_path):
    (tmp_path / CACHE_DIR).mkdir()
    forge(tmp_path / CACHE_DIR / "k.json", {"format": st.FORMAT, "files": {
        "/p/a.py": ENTRY, "/p/b.py": ["x"], "/p/c.py": dict(ENTRY, hash="hc")}}, sk.secret_key())
    s = Store(str(tmp_path), "k")
    assert s.get("/p/b.py") is None and s.get("/p/a.py")["hash"] == "h"
    s.put("/p/d.py", "hd", result=ENTRY["result"])     # the index is made here
    assert sorted(s.entries) == ["/p/a.py", "/p/c.py", "/p/d.py"]
    assert s.get("/p/c.py")["hash"] == "hc"
    s.save()
    again = Store(str(tmp_path), "k")
    assert [again.get(p)["hash"] for p in ("/p/a.py", "/p/c.py", "/p/d.py")] == ["h", "hc", "hd"]
    assert again.get("/p/b.py") is None


def test_a_store_file_is_bound_to_its_place(key_dir, tmp_path):
    saved_store(tmp_path)
    (tmp_path / CACHE_DIR / "k.json").rename(tmp_path / CACHE_DIR / "other.json")
    assert Store(str(tmp_path), "other").entries == {}


@pytest.mark.parametrize("doc", [[], "text", {"format": st.FORMAT, "files": []},
                                 {"format": st.FORMAT, "files": {"/p/a.py": "a string entry"}},
                                 {"format": st.FORMAT, "files": {"/p/a.py": {"hash": 1}}},
                                 {"format": st.FORMAT, "files": {"/p/a.py": {"hash": "h", "result": []}}},
                                 {"format": st.FORMAT, "files": {"/p/a.py": {"hash": "h", "stamp": "x"}}},
                                 {"format": st.FORMAT, "files": {"/p/a.py": {"hash": "h", "result": {
                                     "data": {"findings": "none"}}}}},
                                 {"format": st.FORMAT, "files": {"/p/a.py": {"hash": "h", "result": {
                                     "data": ENTRY["result"]["data"], "deps": [1]}}}}])
def test_wrong_shapes_even_under_a_valid_mac_are_a_miss(key_dir, tmp_path, doc):
    (tmp_path / CACHE_DIR).mkdir()
    forge(tmp_path / CACHE_DIR / "k.json", doc, sk.secret_key())
    assert Store(str(tmp_path), "k").get("/p/a.py") is None


def test_100k_nesting_under_a_valid_mac_is_a_miss_not_a_traceback(key_dir, tmp_path):
    (tmp_path / CACHE_DIR).mkdir()
    f = tmp_path / CACHE_DIR / "k.json"
    payload = b"[" * 100_000 + b"]" * 100_000
    f.write_bytes(MAGIC + sk.mac_of(sk.secret_key(), str(f), payload).encode() + b"\n" + payload)
    assert Store(str(tmp_path), "k").entries == {}


def test_an_oversized_store_file_is_not_read(key_dir, tmp_path, monkeypatch):
    saved_store(tmp_path)
    monkeypatch.setattr(st, "MAX_BYTES", 64)
    assert Store(str(tmp_path), "k").entries == {}


def _load_in_time(root, seconds=20):
    out = []
    t = threading.Thread(target=lambda: out.append(Store(str(root), "k").entries), daemon=True)
    t.start()
    t.join(seconds)
    return out


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom", "fifo"])
def test_a_device_or_a_fifo_as_store_file_is_not_read(key_dir, tmp_path, target):
    (tmp_path / CACHE_DIR).mkdir()
    f = tmp_path / CACHE_DIR / "k.json"
    if target == "fifo":
        os.mkfifo(f)
    else:
        os.symlink(target, f)
    assert _load_in_time(tmp_path) == [{}]
    s = saved_store(tmp_path)          # and saving does not write through the link
    assert s.entries == {"/p/a.py": s.entries["/p/a.py"]}
    if target != "fifo":
        assert f.is_file() and not f.is_symlink()


# -- writing: nothing through a symlink, nothing outside the folder --------------------------------
def test_a_dangling_gitignore_link_creates_nothing_where_it_points(key_dir, tmp_path):
    root = tmp_path / "root"
    (root / CACHE_DIR).mkdir(parents=True)
    os.symlink("../../victim/ignore", root / CACHE_DIR / ".gitignore")   # relative, under tmp
    (tmp_path / "victim").mkdir()
    saved_store(root)
    assert not (tmp_path / "victim" / "ignore").exists()
    assert Store(str(root), "k").get("/p/a.py") is not None


def test_a_made_folder_gets_its_gitignore(key_dir, tmp_path):
    saved_store(tmp_path)
    assert (tmp_path / CACHE_DIR / ".gitignore").read_text().splitlines()[-1] == "*"


@pytest.mark.parametrize("what", ["folder-link", "folder-file", "lock-link", "lock-fifo"])
def test_no_write_through_links_or_into_a_non_folder(key_dir, tmp_path, what):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = root / CACHE_DIR
    if what == "folder-link":
        os.symlink(outside, folder)
    elif what == "folder-file":
        folder.write_text("not a folder")
    else:
        folder.mkdir()
        if what == "lock-link":
            os.symlink(outside / "lock", folder / ".lock")
        else:
            os.mkfifo(folder / ".lock")
    saved_store(root)
    assert list(outside.iterdir()) == []
    if what.startswith("lock"):
        assert not (folder / "k.json").exists()
    if what == "folder-file":
        assert folder.read_text() == "not a folder"


def test_stale_temporary_files_are_removed_on_save(key_dir, tmp_path):
    (tmp_path / CACHE_DIR).mkdir()
    old = tmp_path / CACHE_DIR / ".tmp-1-dead.json"
    old.write_text("half")
    os.utime(old, (time.time() - 2 * st.STALE_TMP_S,) * 2)
    saved_store(tmp_path)
    assert not old.exists()
    assert [p.name for p in (tmp_path / CACHE_DIR).iterdir() if p.name.startswith(".tmp-")] == []


# -- through the command line and flake8 -----------------------------------------------------------
def test_a_committed_cache_with_blanked_results_hides_nothing(key_dir, tmp_path, monkeypatch):
    repo = repo_with(tmp_path, {"a.py": FINDING})
    attacker = tmp_path / "keys-attacker"
    r = run_cli("a.py", cwd=repo, env={sk.KEY_ENV: str(attacker)})       # the attacker's own run
    assert r.returncode == 1
    [f] = store_files(repo)
    sk._KEYS.clear()
    monkeypatch.setenv(sk.KEY_ENV, str(attacker))
    forge(f, blank(payload_of(f)), sk.secret_key())
    # believed by the machine that wrote it (so the forgery would hide the finding) ...
    assert run_cli("a.py", cwd=repo, env={sk.KEY_ENV: str(attacker)}).returncode == 0
    forged = f.read_bytes()
    # ... never by the victim: a fresh clone in CI, another user, flake8
    r = run_cli("a.py", cwd=repo, env={sk.KEY_ENV: str(key_dir)})
    assert r.returncode == 1 and "a.py:4:5: JXI002" in r.stdout, r.stdout + r.stderr
    f.write_bytes(forged)
    fl = subprocess.run([sys.executable, "-m", "flake8", "--select=JXI", "-j", "1", "a.py"], cwd=repo,
                        capture_output=True, text=True, env={**os.environ, sk.KEY_ENV: str(key_dir)}, timeout=300)
    assert fl.returncode == 1 and "a.py:4:5: JXI002" in fl.stdout, fl.stdout + fl.stderr


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_the_cli_ignores_a_device_or_fifo_store_file(key_dir, tmp_path, target):
    repo = repo_with(tmp_path, {"a.py": FINDING})
    assert run_cli("a.py", cwd=repo).returncode == 1
    [f] = store_files(repo)
    f.unlink()
    os.mkfifo(f) if target == "fifo" else os.symlink(target, f)
    r = subprocess.run([sys.executable, "-m", "jaxinterop_lint", "a.py"], cwd=repo, capture_output=True,
                       text=True, timeout=120, preexec_fn=_limited)
    assert r.returncode == 1 and "JXI002" in r.stdout and "Traceback" not in r.stderr


def test_creating_a_module_a_cached_file_imports_shows_its_finding(key_dir, tmp_path):
    repo = repo_with(tmp_path, {"a.py": "import torch\nfrom helpers import make\n\n\ndef main(x, m):\n"
                                        "    y = make(x, m)\n    return torch.from_dlpack(y)\n"})
    assert run_cli("a.py", cwd=repo).returncode == 0
    assert any("result" in e for e in payload_of(store_files(repo)[0])["files"].values())   # it was cached
    (repo / "helpers.py").write_text("import jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n\n"
                                     "def make(x, m):\n    return jax.device_put(x, NamedSharding(m, P('x')))\n")
    r = run_cli("a.py", cwd=repo)
    assert r.returncode == 1 and "a.py:7:12: JXI002" in r.stdout, r.stdout


def test_cp_p_of_other_content_with_the_same_size_and_mtime_is_linted_again(key_dir, tmp_path):
    clean = FINDING.replace("torch.from_dlpack(y)", "torch.from_numpy(y) ")
    assert len(clean) == len(FINDING)
    repo = repo_with(tmp_path, {"a.py": clean})
    os.utime(repo / "a.py", (time.time() - 3600,) * 2)     # old enough for its stat to be recorded
    assert run_cli("a.py", cwd=repo).returncode == 0
    assert run_cli("a.py", cwd=repo).returncode == 0       # warm
    (tmp_path / "other.py").write_text(FINDING)
    os.utime(tmp_path / "other.py", ns=(os.stat(repo / "a.py").st_atime_ns, os.stat(repo / "a.py").st_mtime_ns))
    before = os.stat(repo / "a.py")
    subprocess.run(["cp", "-p", str(tmp_path / "other.py"), str(repo / "a.py")], check=True)
    after = os.stat(repo / "a.py")
    assert (before.st_size, before.st_mtime_ns) == (after.st_size, after.st_mtime_ns)
    r = run_cli("a.py", cwd=repo)
    assert r.returncode == 1 and "JXI002" in r.stdout, r.stdout


def test_the_store_key_covers_the_python_and_the_libcst_that_made_the_results(monkeypatch):
    import sys

    from jaxinterop_lint import Config
    from jaxinterop_lint.pipeline import runkey as run     # the store key's module

    stamp = run.parser_stamp()
    assert stamp[0] == list(sys.version_info[:2]) and stamp[1] is not None
    before = run.store_key(Config())
    monkeypatch.setattr(run, "parser_stamp", lambda: [[3, 99], stamp[1]])
    other_python = run.store_key(Config())
    monkeypatch.setattr(run, "parser_stamp", lambda: [stamp[0], [stamp[1][0], 1, 2]])
    other_libcst = run.store_key(Config())
    assert len({before, other_python, other_libcst}) == 3


def test_a_bad_entry_costs_only_itself(key_dir, tmp_path):
    (tmp_path / CACHE_DIR).mkdir()
    forge(tmp_path / CACHE_DIR / "k.json", {"format": st.FORMAT, "files": {"/p/a.py": ENTRY, "/p/b.py": ["x"]}},
          sk.secret_key())
    s = Store(str(tmp_path), "k")
    assert s.get("/p/b.py") is None and s.get("/p/a.py")["hash"] == "h"
    assert s.known_hash("/p/b.py", [1, 2, 3, 4]) is None
