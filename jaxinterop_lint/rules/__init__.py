"""The rule catalogue (``../shared/docs/rules.md``): one small class per rule."""
from __future__ import annotations

from .base import Rule, RuleContext
from .donation import ExportAfterDonation, UncheckedArrayParameterExport
from .export import MultiDeviceCudaArrayInterface, MultiDeviceDlpackExport, MultiDeviceRawBuffer
from .ffi import FfiBufferCopyExport
from .guards import HandlerMissesInteropError, IneffectiveSingleDeviceGuard
from .noqa import UnusedNoqa
from .removed import RemovedJaxInteropApi

ALL_RULES: tuple[type[Rule], ...] = (
    MultiDeviceCudaArrayInterface,
    MultiDeviceDlpackExport,
    MultiDeviceRawBuffer,
    FfiBufferCopyExport,
    RemovedJaxInteropApi,
    IneffectiveSingleDeviceGuard,
    HandlerMissesInteropError,
    ExportAfterDonation,
    UncheckedArrayParameterExport,
    UnusedNoqa,
)
RULES_BY_CODE: dict[str, type[Rule]] = {r.code: r for r in ALL_RULES}
DEFAULT_CODES: frozenset[str] = frozenset(r.code for r in ALL_RULES if r.default)

__all__ = ["ALL_RULES", "RULES_BY_CODE", "DEFAULT_CODES", "Rule", "RuleContext"]
