"""Helpers shared by the HTML and console renderers: counting and formatting."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime

from perfsleuth.findings import EvidenceValue, Finding, Severity

__all__ = ["SEVERITY_ORDER", "format_time", "format_value", "summary_counts"]

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
