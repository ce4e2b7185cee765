"""Fuzzing the engine with hypothesis (issue 9): programs from the Python grammar
(hypothesmith) and programs built from the project's own fragments (``fuzzgen``).

Profiles: ``ci`` (the default; bounded so that this module stays well under a minute) and
``long``; choose with ``HYPOTHESIS_PROFILE=long``.  ``scripts/fuzz.py`` runs for minutes.
"""
from __future__ import annotations

import os

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzgen

_RELAXED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=_RELAXED)
settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=_RELAXED)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
CI = settings.get_profile(PROFILE)

# hypothesmith compiles what it generates: CPython's SyntaxWarnings about it are noise.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

FOOTER = "\nimport torch\nt = torch.from_dlpack(x)\n"


@settings(CI, max_examples=min(CI.max_examples, 40))
@given(hypothesmith.from_grammar())
def test_grammar_programs_never_crash_the_engine(source):
    """Any program of the grammar, analysed (forced past the prefilter, and with an interop
    footer so the prefilter lets it through): no exception, no internal error."""
    fuzzgen.check_engine(source, force=True)
    fuzzgen.check_engine(source + FOOTER, force=False)


@settings(CI, max_examples=min(CI.max_examples, 40))
@given(hypothesmith.from_grammar())
def test_grammar_programs_fix_cleanly(source):
    """--fix --unsafe-fixes on a grammar program with an interop footer: parses, idempotent."""
    fuzzgen.check_fix(source + FOOTER)


@settings(CI)
@given(fuzzgen.programs())
def test_fragment_programs_findings_only_at_sinks(program):
    """Programs of sources, sinks, sanitizers, guards and control flow: no error, and
    findings only where a finding may be (sinks, calls of exporting functions, handlers)."""
    fuzzgen.check_program(program)


@settings(CI)
@given(fuzzgen.programs())
def test_fragment_programs_fix_cleanly(program):
    """--fix --unsafe-fixes on fragment programs: parses, and a second run is a no-op."""
    fuzzgen.check_fix(program.text())


@settings(CI, max_examples=min(CI.max_examples, 30))
@given(st.text(alphabet=st.sampled_from(list("()[]{}:;.,=+-*/\\'\"#@ \t\n\r\f\x00\ufeffxé torch.from_dlpack")),
               max_size=200))
def test_random_text_never_crashes(text):
    """Arbitrary text containing an interop word: a result, never an exception."""
    fuzzgen.check_engine("import torch\ntorch.from_dlpack(x)\n" + text, force=False)
    fuzzgen.check_engine(text.encode("utf-8", "surrogatepass"), force=True)


def test_fragments_cover_every_sink_of_the_tables():
    """The fragment strategy draws from every sink the knowledge tables list."""
    from jaxinterop_lint.knowledge import apis

    expected = len(apis.CALL_SINKS) + len(apis.METHOD_SINKS) + len(apis.ATTRIBUTE_SINKS)
    assert len(fuzzgen.SINKS) == expected
