"""Shared by the issue-12 depth tests: check an INVALID/VALID pair of snippets against their
``# expect:`` markers.  The INVALID snippet must carry at least one marker, the VALID one
none, and the findings of each must be exactly its markers."""
from __future__ import annotations

import textwrap

from conftest import codes
from markers import expected

HEADER = """\
import dataclasses
from typing import NamedTuple
import jax
import jax.numpy as jnp
import numpy as np
import torch
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((8,), ("x",))
s = NamedSharding(mesh, P("x"))
"""


def with_header(snippet: str) -> str:
    """The snippet, dedented, after the common imports and the sharding ``s``."""
    return HEADER + textwrap.dedent(snippet)


def check_pair(invalid: str, valid: str) -> None:
    """Assert the findings of both snippets are their markers (see the module docstring)."""
    bad, good = with_header(invalid), with_header(valid)
    assert expected(bad), "the INVALID snippet names no finding"
    assert not expected(good), "the VALID snippet must have no marker"
    assert set(codes(bad)) == expected(bad), bad
    assert set(codes(good)) == set(), good
