"""Helpers shared by the HTML and console renderers: counting and formatting."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime

from perfsleuth.families import FAMILIES as _DESCRIPTORS
from perfsleuth.families import family_of as _family_of
from perfsleuth.findings import EvidenceValue, Finding, Severity

__all__ = [
    "FAMILIES",
    "SEVERITY_ORDER",
    "family_of",
    "format_time",
    "format_value",
    "next_step",
    "summary_counts",
]

FAMILIES: dict[str, str] = {f.name: f.title for f in _DESCRIPTORS}
"""Detector families, in the order reports show them, with their headings."""


def family_of(finding: Finding) -> str:
    """The name of the family a finding came from (a key of :data:`FAMILIES`), or "other"."""
    found_by = _family_of(finding)
    return found_by.name if found_by is not None else "other"


def next_step(finding: Finding) -> str:
    """What to look at first about ``finding``: one sentence for the report's summary."""
    found_by = _family_of(finding)
    return found_by.kinds.get(finding.kind.value, "") if found_by is not None else ""


SEVERITY_ORDER: tuple[Severity, ...] = tuple(sorted(Severity, reverse=True))
"""Severities from most to least severe."""


def summary_counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Number of findings per severity name (lower case), most severe first, zeros included."""
    counts = {s.name.lower(): 0 for s in SEVERITY_ORDER}
    for finding in findings:
        counts[finding.severity.name.lower()] += 1
    return counts


def format_time(value: datetime) -> str:
    """UTC ISO 8601 to the second, e.g. ``2024-05-01T12:00:00Z``."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"expected a timezone-aware time, got naive {value.isoformat()}")
    return value.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def format_value(value: EvidenceValue) -> str:
    """Evidence values for people: floats to six significant digits, booleans as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.6g}"
    return str(value)
