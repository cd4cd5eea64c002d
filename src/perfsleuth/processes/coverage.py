"""What each check could see: periods available against periods needed, per node.

A scan that finds nothing must say whether it *could* have found something. For every node
and check, :func:`coverage` counts the periods the data offers that check (in the best review
window, or over the node's whole span for ramps) and the periods the rules need, so "No
findings." on 274 s of data scanned with one-hour periods says that one period is not enough.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray

from perfsleuth.durations import format_duration
from perfsleuth.processes.periods import Periods
from perfsleuth.processes.rules import ProcessRules

__all__ = ["CheckCoverage", "coverage", "describe"]


@dataclass(frozen=True, slots=True)
class CheckCoverage:
    """One check on one node: ``available`` periods of the kind it needs, ``needed`` by the
    rules, and what they are (``unit``, for people)."""

    check: str
    available: int
    needed: int
    unit: str
    why: str = ""
    """Why fewer periods were available, when the data says (saturation without wait)."""

    @property
    def possible(self) -> bool:
        return self.available >= self.needed

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "possible": self.possible}


def _per_window(mask: NDArray[np.bool_], window: NDArray[np.int64]) -> NDArray[np.int64]:
    """Most True periods of ``mask`` (nodes × periods) in one window, per node."""
    n = mask.shape[0]
    if not mask.size:
        return np.zeros(n, dtype=np.int64)
    w = int(window.max()) + 1
    flat = np.arange(n)[:, None] * w + window
    counts = np.bincount(flat[mask], minlength=n * w).reshape(n, w)
    best: NDArray[np.int64] = counts.max(axis=1)
    return best


def coverage(
    data: Periods, rules: ProcessRules, checks: tuple[str, ...]
) -> list[tuple[CheckCoverage, ...]]:
    """For each node of ``data``, one :class:`CheckCoverage` per check of ``checks``."""
    window = data.window()
    covered = data.covered
    has_wait = data.measured_wait
    judged = covered & (has_wait[:, None] | ~data.saturated)
    judged_best = _per_window(judged, window)
    covered_best = _per_window(covered, window)
    covered_all = covered.sum(axis=1)
    busy = (covered & (data.busy >= rules.capture.min_busy)).sum(axis=1)
    hours = np.array([rules.os_rule(o).hours for o in data.os])
    caps = [g.min_periods for g in rules.groups if g.max_cpu_fraction > 0 or g.max_rss_bytes > 0]
    policy = rules.ramp
    blind = "the machine was saturated and the data has no run-queue wait (cpu_wait)"
    out = []
    for n in range(len(data.nodes)):
        row: list[CheckCoverage] = []
        why = blind if judged_best[n] < covered_best[n] else ""
        for check in checks:
            if check == "cpu_loop":
                unit = "periods judged in a window"
                item = CheckCoverage(check, int(judged_best[n]), int(hours[n]), unit, why)
            elif check == "constrained_loop":
                unit = "periods with data in a window"
                item = CheckCoverage(check, int(covered_best[n]), int(hours[n]), unit)
            elif check == "hum":
                unit = "periods judged in a window"
                item = CheckCoverage(check, int(judged_best[n]), rules.hum.hours, unit, why)
            elif check == "memory_ramp":
                needed = max(rules.ramp_periods, 6)
                item = CheckCoverage(check, int(covered_all[n]), needed, "periods with data")
            elif check == "saw_tooth":
                needed = policy.min_teeth * policy.min_tooth_periods + 1
                item = CheckCoverage(check, int(covered_all[n]), needed, "periods with data")
            elif check == "cap_exceeded":
                needed = min(caps) if caps else 0
                item = CheckCoverage(
                    check, int(covered_best[n]), needed, "periods with data in a window"
                )
            else:  # capture_ratio
                available = int(busy[n]) if data.has_machine else 0
                unit = "busy periods" if data.has_machine else "periods with machine CPU"
                item = CheckCoverage(check, available, 3, unit)
            row.append(item)
        out.append(tuple(row))
    return out


def describe(items: tuple[CheckCoverage, ...], *, seconds: float, rules: ProcessRules) -> str:
    """One line for people: what could not be checked and why (or that everything could)."""
    period = rules.settings.period
    blind = [c for c in items if not c.possible]
    if not blind:
        return "every check had the periods it needs"
    if seconds < period.total_seconds():
        return (
            f"the data spans {format_duration_seconds(seconds)}, less than one period "
            f"({format_duration(period)}): no check can find anything; set [settings] "
            "period to a fraction of the time covered (e.g. '10s' for minutes of 1 s samples)"
        )
    parts = [
        f"{c.check} needs {c.needed} {c.unit}, the data has {c.available}"
        + (f" ({c.why})" if c.why else "")
        for c in blind
    ]
    return "blind spots: " + "; ".join(parts)


def format_duration_seconds(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 60:.3g} min" if seconds >= 60 else f"{seconds:.3g} s"
