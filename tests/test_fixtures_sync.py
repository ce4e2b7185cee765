"""``fixtures/cases``, ``fixtures/cases-depth``, ``fixtures/data`` and ``fixtures/bin`` are
copies of ``../shared`` (the acceptance cases, the SARIF schema and the case checker), so the
test suite needs nothing beside the checkout.  Where ``../shared`` exists (CI), the copies
must be byte for byte identical to it; on a plain clone this test is reported as skipped
(not run), unless ``JAXINTEROP_REQUIRE_SHARED=1`` (set by ``.ci/run``) makes the absence of
``../shared`` a failure."""
from __future__ import annotations

import os

import pytest

from conftest import FIXTURES, SHARED

COPIES = ("cases", "cases-depth", "data", "bin")
IGNORED = {".jaxinterop_lint_cache", "__pycache__"}   # written by runs over ../shared itself


def tree(folder) -> dict:
    """Relative path -> bytes of every file under ``folder`` (caches left out)."""
    out = {}
    for base, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in IGNORED]
        for name in files:
            path = os.path.join(base, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, folder)] = fh.read()
    return out


@pytest.fixture(scope="module")
def shared():
    if not SHARED.is_dir():
        if os.environ.get("JAXINTEROP_REQUIRE_SHARED") == "1":
            pytest.fail(f"{SHARED} is missing, and JAXINTEROP_REQUIRE_SHARED=1 says it must be there")
        pytest.skip(f"{SHARED} is not beside the checkout: the copies in fixtures/ were not compared")
    return SHARED


@pytest.mark.parametrize("name", COPIES)
def test_fixture_copy_is_identical_to_shared(shared, name):
    ours, theirs = tree(FIXTURES / name), tree(shared / name)
    assert sorted(ours) == sorted(theirs), f"fixtures/{name} and ../shared/{name} hold different files"
    differ = [rel for rel in ours if ours[rel] != theirs[rel]]
    assert not differ, f"fixtures/{name} differs from ../shared/{name}: {differ}; copy them again"
