"""Issue 16: the necessary condition for shrinking a constant display (``size._RUN``) starts
with a look-ahead naming the characters a constant starts with, so the regular expression
engine leaves every other position at once.  It must find exactly what the pattern without
it finds (the same spans), on edge cases and on random texts of constants, separators and
the characters around them."""
from __future__ import annotations

import random
import re

from conftest import ROOT
from jaxinterop_lint import size

# the pattern as it was before the look-ahead (the reference)
REFERENCE = re.compile(r"""(?:[-+]?(?:(?:\d|\.\d)(?:[\w.]|(?<=[eE])[-+])*|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|"""
                       r"""(?:True|False|None)\b)[\s,:()\[\]{}]+){%d}""" % size.MIN_ITEMS)
CONSTANTS = ["1", "-2", "+3", ".5", "1e+5", "2E-3", "0x1f", "1_000", "'a'", '"b"', "'it\\'s'", "True", "False", "None"]
SEPARATORS = [", ", ",", ": ", "(", ")", "[", "]", "{", "}", " ", "\n", "\t"]
PIECES = ["1", "-2", "+3", ".5", "1e+5", "2E-3", "0x1f", "1_000", "'a'", '"b"', "'it\\'s'", "True", "False", "None",
          "Truex", "x1", "a", ".", "...", "'open", ", ", ",", ": ", "(", ")", "[", "]", "{", "}", " ", "\n", "\t",
          "+", "-", "#", "=", "'\n'", "N", "T", "F"]


def _same(text: str) -> bool:
    a, b = REFERENCE.search(text), size._RUN.search(text)
    return (a and a.span()) == (b and b.span())


def test_the_look_ahead_changes_no_match_on_edge_cases():
    n = size.MIN_ITEMS
    texts = [
        "x = [" + ", ".join(map(str, range(n))) + "]\n",
        "x = [" + ", ".join(map(str, range(n - 2))) + "]\n",
        "y" + ", ".join(map(str, range(n))) + "\n",                   # a run that starts inside a name
        "'" + ", ".join(map(str, range(n))) + "'\n",                  # ... inside a string
        "[" + ", ".join(["-1e+5"] * n) + "]",
        "{" + ", ".join(f"'k{i}': None" for i in range(n)) + "}",
        "(" + " ".join(['"s"'] * n) + ")",
        "[" + ", ".join(["Truex"] * n) + "]",
        "[" + ", ".join(["..."] * n) + "]",
    ]
    for text in texts:
        assert _same(text), text[:60]
    assert size._RUN.search(texts[0]) and size._RUN.search(texts[2]) and not size._RUN.search(texts[1])


def test_the_look_ahead_changes_no_match_on_random_texts_and_the_package():
    rng = random.Random(16)
    found = 0
    for _ in range(3000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(100, 400)))
        assert _same(text), text
    for _ in range(1500):      # mostly constants and separators: runs, and runs broken
        parts = []
        for _ in range(rng.randint(100, 400)):
            r = rng.random()
            parts.append(rng.choice(CONSTANTS) + rng.choice(SEPARATORS) if r < 0.97 else rng.choice(PIECES))
        text = "".join(parts)
        assert _same(text), text
        found += size._RUN.search(text) is not None
    assert 100 < found < 1400       # both kinds were tried
    for path in sorted((ROOT / "jaxinterop_lint").rglob("*.py")) + sorted((ROOT / "fixtures").rglob("*.py")):
        assert _same(path.read_text()), path
