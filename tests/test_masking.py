"""Blanking irrelevant top-level statements before parsing changes no finding."""
from __future__ import annotations

import textwrap

import pytest

import jaxinterop_lint.pipeline.masking as masking
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.pipeline.words import DEFAULT

# The differential test (masked findings = whole-text findings on every fixture, example
# and acceptance case) is in test_masking_ast.py.


@pytest.fixture
def always_mask(monkeypatch):
    """Mask every file, however short and however little it saves."""
    init, render = masking.Masker.__init__, masking.Masker.render
    monkeypatch.setattr(masking.Masker, "__init__", lambda self, text, pf, min_lines=0: init(self, text, pf, 0))
    monkeypatch.setattr(masking.Masker, "render",
                        lambda self, callers_of=frozenset(), min_gain=0.0: render(self, callers_of, 0.0))


def test_masked_text_keeps_lines_and_blanks_the_rest():
    code = textwrap.dedent('''\
        import torch
        import jax

        BIG = """
        def not_a_def():
        """

        def unrelated(a):
            return a + 1

        @jax.jit
        def helper(a):
            return a * 2

        x = (1 +
        2)
        if x:
            pass
        else:
            pass

        def export(y):
            return torch.from_dlpack(helper(y))
        ''')
    m = masking.Masker(code, DEFAULT, min_lines=0)
    out = m.render(min_gain=0.0)
    assert out is not None and len(out.splitlines()) == len(code.splitlines())
    kept = [ln for ln in out.splitlines() if ln.strip()]
    assert "def unrelated(a):" not in out and "BIG" not in out and "if x:" not in out
    assert "@jax.jit" in kept and "def helper(a):" in kept and "import torch" in kept
    assert "    return torch.from_dlpack(helper(y))" in kept


def test_scanner_gives_up_on_unbalanced_text():
    word = "y = torch.from_dlpack(z)\n"
    assert masking.Masker(word + 'x = """\nnever closed\n' * 301, DEFAULT).usable is False
    assert masking.Masker(word + 'x = """\nclosed\n' * 300, DEFAULT).usable is True
    # a text that spells no interop word is not read at all: nothing in it to keep
    assert masking.Masker('x = """\nclosed\n' * 300, DEFAULT).usable is False


def test_callers_of_a_helper_naming_a_consumer_are_kept_so_the_text_is_parsed_once():
    """Issue 16 (parse once): the callers of this file's functions that name a consumer are
    kept by the masking itself, instead of a second, whole parse after the analysis."""
    from jaxinterop_lint.pipeline.analyse import PARSES

    filler = "".join(f"def unrelated_{i}(a):\n    return a + {i}\n" for i in range(150))
    code = ("import torch\nimport jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n"
            "def to_torch(a):\n    return torch.from_dlpack(a)\n" + filler +
            "def caller(x):\n    y = jax.device_put(x, NamedSharding(m, P()))\n    return to_torch(y)\n")
    masker = masking.Masker(code, DEFAULT)
    out = masker.render()
    assert out is not None and not masker.blanked_use({"to_torch"}) and "def unrelated_3" not in out
    PARSES.clear()
    # The export is reported at the sink inside to_torch() (line 5), naming the caller on
    # line 308 that passes the multi-device value: PLAN decision 1, as execution labels it.
    (f,) = lint_source(code, "/nowhere/a.py", Config()).findings
    assert f.code == "JXI002" and f.line == 5 and "called from caller() at line 308" in f.message
    assert dict(PARSES) == {"/nowhere/a.py": 1}


def test_methods_nothing_uses_are_blanked_inside_a_kept_class(always_mask):
    filler = "".join(f"    def unrelated_{i}(self, a):\n        return a + {i}\n\n" for i in range(40))
    code = ("import jax\nimport torch\nfrom jax.sharding import NamedSharding, PartitionSpec as P\n\n"
            "class Bridge:\n"
            "    def __init__(self, mesh):\n        self.mesh = mesh\n\n"
            "    def _shard(self, x):\n        return jax.device_put(x, NamedSharding(self.mesh, P('x')))\n\n"
            + filler +
            "    def export(self, x):\n        return torch.from_dlpack(self._shard(x))\n")
    masker = masking.Masker(code, DEFAULT, min_lines=0)
    out = masker.render(min_gain=0.0)
    assert out is not None and len(out.splitlines()) == len(code.splitlines())
    assert "def unrelated_3" not in out and "def _shard" in out and "def __init__" in out
    (f,) = lint_source(code, "b.py", Config()).findings
    assert (f.code, f.line) == ("JXI002", code.splitlines().index("        return torch.from_dlpack(self._shard(x))") + 1)
