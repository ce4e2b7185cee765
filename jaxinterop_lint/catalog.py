"""The rule catalogue as plain data (``../shared/docs/rules.md``): code -> name, and which
rules are on by default.  Light on purpose: configuration, reporters and the cached warm
path use it without importing the rules (and libcst).  ``tests/test_rules.py`` checks that
it matches the rule classes."""
from __future__ import annotations

NAMES: dict[str, str] = {
    "JXI001": "multi-device-cuda-array-interface",
    "JXI002": "multi-device-dlpack-export",
    "JXI003": "multi-device-raw-buffer",
    "JXI004": "ffi-buffer-copy-export",
    "JXI005": "removed-jax-interop-api",
    "JXI006": "ineffective-single-device-guard",
    "JXI007": "handler-misses-interop-error",
    "JXI008": "export-after-donation",
    "JXI009": "unchecked-array-parameter-export",
    "JXI100": "unused-noqa",
}
UNUSED_NOQA = "JXI100"    # the code of the unused-noqa rule (rules/noqa.py documents it)
OPT_IN: frozenset[str] = frozenset({"JXI009", UNUSED_NOQA})
DEFAULT_CODES: frozenset[str] = frozenset(NAMES) - OPT_IN
DOCS_URL = "https://github.com/jaxinterop-lint/jaxinterop-lint/blob/main/docs/rules/{code}.md"


def applicable(finding, unsafe: bool) -> bool:
    """Whether ``finding`` has a fix that a run applies (safe ones; unsafe ones too with
    ``unsafe``)."""
    fix = finding.fix
    if fix is None or not fix.edits:
        return False
    return fix.applicability == "safe" or (unsafe and fix.applicability == "unsafe")


def fixable_hint(findings: list, unsafe: bool) -> str:
    """For a run without ``--fix``: ``[*] N fixable with --fix (K more with --unsafe-fixes).``,
    ``[*] K fixable with --fix --unsafe-fixes.`` when only unsafe fixes apply, or '' when
    nothing is fixable."""
    safe = sum(1 for f in findings if applicable(f, unsafe))
    more = 0 if unsafe else sum(1 for f in findings if applicable(f, True)) - safe
    if not safe and not more:
        return ""
    if not safe:
        return f"[*] {more} fixable with --fix --unsafe-fixes."
    hint = f"[*] {safe} fixable with --fix" + (" --unsafe-fixes" if unsafe else "")
    if more:
        hint += f" ({more} more with --unsafe-fixes)"
    return hint + "."
