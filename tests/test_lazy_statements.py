"""Issue 16 (cheap facts from the text or CPython's ``ast``): the masking and the partial parse
cut a module into top-level statements from its lines and parse a ``def`` or ``class`` with
``ast`` only when a question needs it (pipeline/statements.py ``lazy_statements``).  The
oracle is the whole-text reading (``statements``): same ranges, names bound and names used,
on the package's own sources, the fixtures and texts made to trip a line-based cut."""
from __future__ import annotations

import pytest

from conftest import ROOT
from jaxinterop_lint import Config, lint_source
from jaxinterop_lint.pipeline import masking, statements
from jaxinterop_lint.pipeline.masking import Masker, _LINE, read_statements
from jaxinterop_lint.pipeline.plan import Words

MASKING = Words().masking


def _lines(text):
    lines = _LINE.findall(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _facts(units):
    return [(u.first, u.last, set(u.defines), u.uses, u.is_import, u.is_def, u.name) for u in units]


TRICKY = [
    '"""Module docstring\nwith lines at column 0:\ndef not_code(x):\n    pass\n"""\nimport os\n\ndef f(a):\n    return a\n',
    "X = '''\nclass Fake:\n'''\n\n@decorator\n@other(1)\ndef g():\n    pass\n\nelsewhere = 1\n",
    "if A:\n    def h(): pass\nelif B:\n    h = 1\nelse:\n    h = 2\ntry:\n    import cupy as cp\nexcept ImportError:\n    cp = None\nfinally:\n    pass\n",
    "a = 1; b = 2\nc = [\n    1,\n]\n# a comment\n\nclass K(Base, metaclass=M):\n    x: int = 0\n\n    # trailing comment\n\n",
    "s = 'it''s'  # don't\nt = \"\"\"one\n\"\"\" + '''two\n'''\nasync def co():\n    await z\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_lazy_statements_read_what_the_whole_text_reading_reads(text):
    units, _ = statements.lazy_statements(_lines(text))
    exact, _ = statements.statements(text, len(_lines(text)))
    assert _facts(units) == _facts(exact)


def test_lazy_statements_agree_with_ast_on_the_package_and_the_fixtures():
    files = sorted(list((ROOT / "jaxinterop_lint").rglob("*.py")) + list((ROOT / "fixtures").rglob("*.py"))
                   + list((ROOT / "tests").rglob("*.py")))
    compared = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        exact = statements.statements(text, len(_lines(text)))
        if exact is None:
            continue
        try:
            lazy = statements.lazy_statements(_lines(text))
        except statements.Unsplit:
            continue
        assert lazy is not None and _facts(lazy[0]) == _facts(exact[0]), path
        compared += 1
    assert compared > 200


BIG = "import jax\nimport torch\n\n" + "".join(
    f"def filler_{i}(a):\n    b = a * {i}\n    return b + {i}\n\n" for i in range(150)) + \
    "def export(x, s):\n    return torch.from_dlpack(jax.device_put(x, jax.NamedSharding(m, s)))\n"


def test_only_the_defs_a_question_needs_are_parsed():
    units, _ = statements.lazy_statements(_lines(BIG))
    m = Masker(BIG, MASKING)
    assert m.exact and m.render() is not None
    parsed = [u.name for u in m.idents.units if u.is_def and u._nodes is not None]
    assert parsed == ["export"]           # the regex found the words only there
    assert len(units) == 153


def test_a_def_cut_wrongly_from_the_text_falls_back_to_the_whole_reading(monkeypatch):
    # a line at column 0 inside brackets: the cut makes a def that does not parse
    text = BIG.replace("def filler_3(a):\n    b = a * 3\n", "def filler_3(a):\n    b = [a,\n3]\n") + \
        "def uses(x, s):\n    return export(x, s), filler_3(x)\n"
    with pytest.raises(statements.Unsplit):
        for u in statements.lazy_statements(_lines(text))[0]:
            u.uses
    m = Masker(text, MASKING)
    out = m.render(frozenset({"export"}))
    monkeypatch.setattr(masking, "read_statements", lambda t, n, lazy=True: read_statements(t, n, False))
    exact = Masker(text, MASKING).render(frozenset({"export"}))
    assert out == exact and "def uses" in out and "b = [a,\n3]" in out


def test_a_syntax_error_in_code_the_analysis_reads_is_reported():
    text = BIG.replace("    return torch.from_dlpack(jax.device_put(x, jax.NamedSharding(m, s)))\n",
                       "    return torch.from_dlpack(jax.device_put(x, jax.NamedSharding(m, s))\n")
    result = lint_source(text, "big.py", Config())
    assert result.error is not None and "syntax error" in str(result.error)


def test_the_masking_renders_the_same_text_from_the_lazy_and_the_whole_reading(monkeypatch):
    files = sorted(list((ROOT / "jaxinterop_lint").rglob("*.py")) + list((ROOT / "fixtures").rglob("*.py"))
                   + list((ROOT / "examples").rglob("*.py")))
    texts = [p.read_text(encoding="utf-8") for p in files] + [BIG]

    def rendered():
        out = []
        for text in texts:
            m = Masker(text, MASKING, 0)
            out.append((m.render(frozenset({"export", "to_torch"})), m.holds_nothing(frozenset({"export"}))))
        return out

    lazy = rendered()
    monkeypatch.setattr(masking, "read_statements", lambda t, n, lazy=True: read_statements(t, n, False))
    assert lazy == rendered() and sum(r is not None for r, _ in lazy) > 20
