"""Helpers shared by the HTML and console renderers: counting and formatting."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime

from perfsleuth.findings import EvidenceValue, Finding, Kind, Severity

__all__ = [
    "FAMILIES",
    "NEXT_STEPS",
    "SEVERITY_ORDER",
    "family_of",
    "format_time",
    "format_value",
    "summary_counts",
]

FAMILIES: dict[str, str] = {
    "changepoint": "Change points (Berry & Hellerstein)",
    "workload_mix": "Transaction mix (Kelly)",
    "workload_segments": "Workload segments (Cherkasova et al.)",
    "process": "Process pathologies (Kaminski)",
    "bottleneck": "Bottlenecks and upgrades (Blake & Breese)",
}
"""Detector families, in the order reports show them, with their headings."""

_BY_DETECTOR: dict[str, str] = {
    "changepoint": "changepoint",
    "workload_mix": "workload_mix",
    "workload_segments": "workload_segments",
    "bottleneck": "bottleneck",
}

_BY_KIND: dict[Kind, str] = {
    Kind.CHANGE_POINT: "changepoint",
    Kind.WORKLOAD_ANOMALY: "workload_mix",
    Kind.WORKLOAD_CHANGE: "workload_segments",
    Kind.APPLICATION_CHANGE: "workload_segments",
    Kind.CPU_LOOP: "process",
    Kind.CONSTRAINED_LOOP: "process",
    Kind.HUM: "process",
    Kind.MEMORY_RAMP: "process",
    Kind.SAW_TOOTH: "process",
    Kind.CAP_EXCEEDED: "process",
    Kind.CAPTURE_RATIO: "process",
    Kind.BOTTLENECK: "bottleneck",
    Kind.UPGRADE: "bottleneck",
}

NEXT_STEPS: dict[Kind, str] = {
    Kind.CHANGE_POINT: "Find what changed at that time (release, configuration, traffic) and "
    "compare the periods before and after.",
    Kind.WORKLOAD_ANOMALY: "The workload does not explain it: look in that window for a "
    "saturated resource, a stuck dependency or failing requests.",
    Kind.WORKLOAD_CHANGE: "Nothing to fix in the application: the workload moved. Check "
    "capacity for the new mix.",
    Kind.APPLICATION_CHANGE: "Review the release or configuration change at that time; the "
    "signature comparison names the transaction types that got slower.",
    Kind.CPU_LOOP: "Ask the owner to stop or restart the looping process.",
    Kind.CONSTRAINED_LOOP: "Several processes spin on a full machine: stop the loops to give "
    "the CPU back to the real work.",
    Kind.HUM: "Check that the steady consumer is needed and how often it polls.",
    Kind.MEMORY_RAMP: "Plan a restart before memory runs out and report the leak.",
    Kind.SAW_TOOTH: "Growth hidden by restarts or truncation: fix the growth or confirm the "
    "resets are intended.",
    Kind.CAP_EXCEEDED: "Throttle or reschedule the group that exceeds its share of the box.",
    Kind.CAPTURE_RATIO: "CPU is used outside the processes sampled: check the collector "
    "(short-lived processes, kernel work, another container).",
    Kind.BOTTLENECK: "Relieve the saturated resource; the upgrade table gives the cheapest "
    "option.",
    Kind.UPGRADE: "Compare the options by cost per unit of added throughput before buying.",
}
"""What to look at first, per kind of finding: one sentence for the report's summary."""


def family_of(finding: Finding) -> str:
    """The detector family (a key of :data:`FAMILIES`) a finding belongs to.

    The detector's name decides when it names a family (the transaction-mix and segment
    detectors both report ``workload_anomaly``); otherwise the kind does; a kind no family
    claims is ``"other"``.
    """
    return _BY_DETECTOR.get(finding.detector) or _BY_KIND.get(finding.kind, "other")

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
