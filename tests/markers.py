"""Compare findings with ``# expect: CODE[, CODE]`` markers in a snippet (the format of
``../shared/cases``)."""
from __future__ import annotations

import re
import textwrap

MARK = re.compile(r"#\s*expect:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def expected(code: str) -> set:
    """``{(line, code)}`` named by the markers of ``code``."""
    out = set()
    for number, text in enumerate(textwrap.dedent(code).splitlines(), 1):
        m = MARK.search(text)
        if m:
            out |= {(number, c.strip()) for c in m.group(1).split(",")}
    return out
