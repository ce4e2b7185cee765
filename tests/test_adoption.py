"""Gradual adoption: --add-noqa, baselines keyed without line numbers, file-level noqa and
what --statistics says was silenced."""
from __future__ import annotations

import json

from conftest import run_cli
from jaxinterop_lint.adoption import add_noqa_to_text

HEAD = "import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
MODULE = HEAD + '''

def export(x, m):
    y = jax.device_put(x, NamedSharding(m, P('x')))
    try:
        return torch.from_dlpack(y)
    except ValueError:
        return None


def other(x, m):
    y = jax.device_put(x, NamedSharding(m, P('x')))
    return torch.from_dlpack(y)
'''
BAD = HEAD + "y = jax.device_put(x, NamedSharding(m, P('x')))\nt = torch.from_dlpack(y)\n"
REMOVED_LINE = "u = jax.dlpack.to_dlpack(x)\n"


def findings(r) -> list:
    """``(path, line, code)`` of concise output."""
    return [(ln.split(":")[0], int(ln.split(":")[1]), ln.split()[1]) for ln in r.stdout.splitlines()]


def test_add_noqa_silences_every_current_finding(tmp_path):
    (tmp_path / "m.py").write_text(MODULE)
    (tmp_path / "other.py").write_text(BAD.replace("from_dlpack(y)\n", "from_dlpack(y)  # noqa: E501\n"))
    before = run_cli(".", cwd=tmp_path)
    assert findings(before) == [("m.py", 10, "JXI007"), ("m.py", 16, "JXI002"), ("other.py", 5, "JXI002")]
    r = run_cli("--add-noqa", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "added 3 noqa comments to 2 files" in r.stderr
    lines = (tmp_path / "m.py").read_text().splitlines()
    assert lines[9] == "    except ValueError:  # noqa: JXI007"
    assert lines[15] == "    return torch.from_dlpack(y)  # noqa: JXI002"
    # an existing noqa with other tools' codes is extended, not duplicated
    assert (tmp_path / "other.py").read_text().splitlines()[4] == "t = torch.from_dlpack(y)  # noqa: E501, JXI002"
    after = run_cli(".", cwd=tmp_path)
    assert after.returncode == 0 and after.stdout == ""
    # running it again changes nothing
    text = (tmp_path / "m.py").read_text()
    assert run_cli("--add-noqa", ".", cwd=tmp_path).returncode == 0
    assert (tmp_path / "m.py").read_text() == text


def test_add_noqa_keeps_encoding_and_line_endings(tmp_path):
    crlf = BAD.replace("\n", "\r\n")
    (tmp_path / "crlf.py").write_bytes(crlf.encode())
    latin = "# -*- coding: latin-1 -*-\n" + BAD.replace("t = ", "s = 'caf\u00e9'\nt = ")
    (tmp_path / "latin.py").write_bytes(latin.encode("latin-1"))
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + BAD.encode())
    assert run_cli("--add-noqa", ".", cwd=tmp_path).returncode == 0
    assert (tmp_path / "crlf.py").read_bytes() == \
        crlf.replace("from_dlpack(y)\r\n", "from_dlpack(y)  # noqa: JXI002\r\n").encode()
    assert (tmp_path / "latin.py").read_bytes() == \
        latin.replace("from_dlpack(y)\n", "from_dlpack(y)  # noqa: JXI002\n").encode("latin-1")
    assert (tmp_path / "bom.py").read_bytes().startswith(b"\xef\xbb\xbfimport jax\n")
    assert run_cli(".", cwd=tmp_path).returncode == 0


def test_add_noqa_skips_lines_that_cannot_take_a_comment(tmp_path):
    src = BAD.replace("t = torch.from_dlpack(y)\n",
                      't = (torch.from_dlpack(y), """doc\nstring""")\nv = torch.from_dlpack(y) + \\\n    1\n')
    (tmp_path / "a.py").write_text(src)
    r = run_cli("--add-noqa", "a.py", cwd=tmp_path)
    assert r.returncode == 1 and "2 lines could not take a comment" in r.stderr
    assert (tmp_path / "a.py").read_text() == src
    assert run_cli("a.py", cwd=tmp_path).returncode == 1


def test_add_noqa_to_text_unit():
    text = "a = 1\nb = f(x)  # noqa:E501\nc = 2"
    new, changed, skipped = add_noqa_to_text(text, {1: {"JXI002"}, 2: {"JXI005", "JXI002"}, 3: {"JXI001"}, 9: {"X1"}})
    assert new == "a = 1  # noqa: JXI002\nb = f(x)  # noqa: E501, JXI002, JXI005\nc = 2  # noqa: JXI001"
    assert (changed, skipped) == (3, 1)


def test_baseline_reports_only_new_findings(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(MODULE)
    r = run_cli("--write-baseline", "jxi-baseline.json", "src", cwd=tmp_path)
    assert r.returncode == 0 and "wrote 2 findings to jxi-baseline.json" in r.stderr and r.stdout == ""
    doc = json.loads((tmp_path / "jxi-baseline.json").read_text())
    assert {(e["code"], e["path"], e["function"], e["snippet"]) for e in doc["findings"]} == {
        ("JXI007", "src/m.py", "export", "except ValueError: return None"),
        ("JXI002", "src/m.py", "other", "torch.from_dlpack(y)")}
    assert not any("line" in e for e in doc["findings"])
    r = run_cli("--baseline", "jxi-baseline.json", "src", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == ""
    # unrelated edits above move the findings: still known
    (tmp_path / "src" / "m.py").write_text("# moved\n\n\n" + MODULE.replace("import jax\n", "import jax\nimport os\n"))
    assert run_cli("--baseline", "jxi-baseline.json", "src", cwd=tmp_path).stdout == ""
    # the same baseline from another folder: paths are relative to the baseline file
    assert run_cli("--baseline", "../jxi-baseline.json", ".", cwd=tmp_path / "src").stdout == ""
    # a second identical export in the same function is new; so is one in a new function
    tail = "    y = jax.device_put(x, NamedSharding(m, P('x')))\n    return torch.from_dlpack(y)\n"
    assert MODULE.count(tail) == 1
    grown = MODULE.replace(tail, tail.replace("    return", "    z = torch.from_dlpack(y)\n    return"))
    grown += "\n\ndef third(x, m):\n    w = jax.device_put(x, NamedSharding(m, P('x')))\n    return torch.from_dlpack(w)\n"
    (tmp_path / "src" / "m.py").write_text(grown)
    r = run_cli("--baseline", "jxi-baseline.json", "src", cwd=tmp_path)
    assert r.returncode == 1
    assert [(line, code) for _, line, code in findings(r)] == [(17, "JXI002"), (22, "JXI002")]
    # renaming the function makes its finding new (the key names the function)
    (tmp_path / "src" / "m.py").write_text(MODULE.replace("def other(", "def renamed("))
    assert [(line, code) for _, line, code in findings(run_cli("--baseline", "jxi-baseline.json", "src",
                                                                cwd=tmp_path))] == [(16, "JXI002")]


def test_bad_baseline_file_is_a_clear_error(tmp_path):
    (tmp_path / "a.py").write_text(BAD)
    for content, words in (("{not json", "invalid JSON"), ('{"x": 1}', "not a jaxinterop-lint baseline"),
                           ('{"format": "jaxinterop-lint-baseline", "version": 1, "findings": [{"code": 3}]}',
                            "malformed entry")):
        (tmp_path / "b.json").write_text(content)
        r = run_cli("--baseline", "b.json", "a.py", cwd=tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert "b.json: --baseline:" in r.stderr and words in r.stderr
    r = run_cli("--baseline", "missing.json", "a.py", cwd=tmp_path)
    assert r.returncode == 2 and "missing.json: --baseline: cannot read" in r.stderr


def test_file_level_noqa_and_statistics(tmp_path):
    two = BAD + REMOVED_LINE
    (tmp_path / "one_code.py").write_text("# jaxinterop-lint: noqa: JXI002\n" + two)
    (tmp_path / "all_codes.py").write_text(two + "# jaxinterop-lint: noqa\n")
    (tmp_path / "line.py").write_text(two.replace("from_dlpack(y)\n", "from_dlpack(y)  # noqa: JXI005\n"))
    r = run_cli(".", cwd=tmp_path)
    # the code-specific file comment silences only JXI002; a noqa naming another code silences nothing
    assert findings(r) == [("line.py", 5, "JXI002"), ("line.py", 6, "JXI005"), ("one_code.py", 7, "JXI005")]
    s = run_cli("--statistics", ".", cwd=tmp_path)
    assert s.returncode == 1
    assert s.stdout.splitlines() == [
        "code     reported  noqa  baseline  name",
        "JXI002          1     2         0  multi-device-dlpack-export",
        "JXI005          2     1         0  removed-jax-interop-api",
        "total           3     3         0",
    ]
    run_cli("--write-baseline", "base.json", "line.py", cwd=tmp_path)
    s = run_cli("--statistics", "--baseline", "base.json", ".", cwd=tmp_path)
    assert s.stdout.splitlines()[1:] == [
        "JXI002          0     2         1  multi-device-dlpack-export",
        "JXI005          1     1         1  removed-jax-interop-api",
        "total           1     3         2",
    ]
