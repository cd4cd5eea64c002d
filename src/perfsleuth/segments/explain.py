"""The findings of :class:`~perfsleuth.segments.detector.SegmentDetector`: what it concluded,
in a sentence a person paged at 3 a.m. can act on, with the numbers behind it as evidence."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Protocol

import numpy as np

from perfsleuth.findings import Evidence, Finding, Kind, Severity
from perfsleuth.segments.kernels.cpumodel import CostChange
from perfsleuth.segments.kernels.ownstep import OwnStep
from perfsleuth.segments.kernels.signature import SignatureChange
from perfsleuth.segments.model import Boundary, Piece, Windows
from perfsleuth.units import format_seconds

__all__ = ["CHECK", "Params", "anomaly_finding", "change_findings"]

CHECK = "workload_segments"
"""What findings of this family record as their ``detector`` (part of the finding id)."""


class Params(Protocol):
    """The detector parameters the findings quote (a ``SegmentDetector``)."""

    @property
    def entity(self) -> str: ...

    @property
    def alpha(self) -> float: ...

    @property
    def allowed_error(self) -> float: ...

    @property
    def idle_util(self) -> float: ...

    @property
    def min_change(self) -> float: ...

    @property
    def min_duration(self) -> float: ...


def change_findings(
    det: Params,
    data: Windows,
    boundaries: list[Boundary],
    groups: list[tuple[tuple[int, int], ...]],
) -> list[Finding]:
    """One ``workload_change`` or ``application_change`` finding per boundary; each covers the
    period after the boundary (to the end of its group for application changes)."""
    group_end = {g[0][0]: g[-1][1] for g in groups}
    findings = []
    for b in boundaries:
        if b.kind == "workload_change":
            findings.append(_workload_change(det, data, b))
        else:
            findings.append(_application_change(det, data, b, group_end[b.index]))
    return findings


def anomaly_finding(
    det: Params,
    data: Windows,
    episode: tuple[int, int],
    spans: list[tuple[int, int]],
    pieces: list[Piece],
) -> Finding:
    """The ``workload_anomaly`` finding of one anomalous stretch of windows: its CPU against
    what the normal periods on either side predict for its transactions."""
    first, last = episode
    rows = np.arange(first, last)
    observed = float(data.cpu[rows].sum())
    machine = float((data.width[rows] * data.cores[rows]).sum())
    before = [s for s in spans if s[1] == first]
    after = [s for s in spans if s[0] == last]
    predictions = []
    for span in before + after:
        model = data.model(np.arange(*span), det.alpha)
        predicted = model.predict(data.counts[rows], data.width[rows])
        if np.isfinite(predicted).all():
            predictions.append(predicted)
    explained = float(np.mean(predictions, axis=0).sum()) if predictions else math.nan
    excess = observed - explained
    inside = [p for p in pieces if p.start < last and p.stop > first]
    rules = sorted({r for p in inside for r in p.rules})
    if not rules or any(p.start < first or p.stop > last for p in inside if p.label == "normal"):
        rules = sorted({*rules, "edge"})
    idle = [p.idle_util for p in inside if p.label == "anomaly" and math.isfinite(p.idle_util)]
    ratio = observed / explained if math.isfinite(explained) and explained > 0 else math.nan
    severe = math.isfinite(ratio) and ratio >= 1.5
    evidence = [
        Evidence("cpu_util", observed / machine, "fraction"),
        Evidence("windows", last - first, "count"),
        Evidence("segments", sum(1 for p in inside if p.label == "anomaly"), "count"),
        Evidence("rules", ",".join(rules)),
    ]
    if math.isfinite(explained):
        evidence += [
            Evidence("unexplained_util", excess / machine, "fraction"),
            Evidence("explained_util", explained / machine, "fraction"),
        ]
    if math.isfinite(ratio):
        evidence.append(Evidence("ratio", ratio))
    if idle:
        evidence.append(Evidence("max_idle_util", max(idle), "fraction"))
    start, end = data.when(first), data.end(last - 1)
    if math.isfinite(explained):
        more = "more" if excess >= 0 else "less"
        what = (
            f"CPU {100 * observed / machine:.0f}% of the machine, "
            f"{100 * abs(excess) / machine:.0f} points {more} than its transactions explain"
        )
    else:
        what = (
            f"CPU {100 * observed / machine:.0f}% of the machine with an idle overhead of "
            f"{100 * max(idle, default=math.nan):.0f}% (expected at most "
            f"{100 * det.idle_util:.0f}%)"
        )
    return Finding(
        kind=Kind.WORKLOAD_ANOMALY,
        entity=det.entity,
        metric="cpu_util",
        start=start,
        end=end,
        severity=Severity.ERROR if severe else Severity.WARNING,
        explanation=(
            f"{det.entity}: {what} for {_windows(last - first)} {_span(start, end)}"
            + ("; no transaction type got slower" if "signature" in rules else "")
            + "; a process outside the workload, or unexpected application behaviour?"
        ),
        evidence=tuple(evidence),
        detector=CHECK,
    )


def _mix_text(data: Windows, before: tuple[int, int], after: tuple[int, int]) -> str:
    rate = []
    for a, b in (before, after):
        rows = np.arange(a, b)
        rate.append(float(data.counts[rows].sum() / data.width[rows].sum()))
    share_b = data.counts[before[0] : before[1]].sum(axis=0)
    share_a = data.counts[after[0] : after[1]].sum(axis=0)
    share_b = share_b / max(share_b.sum(), 1.0)
    share_a = share_a / max(share_a.sum(), 1.0)
    j = int(np.argmax(np.abs(share_a - share_b)))
    return (
        f"{rate[0]:.3g} → {rate[1]:.3g} transactions/s, {data.types[j]} "
        f"{100 * share_b[j]:.0f}% → {100 * share_a[j]:.0f}% of the mix"
    )


def _workload_change(det: Params, data: Windows, b: Boundary) -> Finding:
    start, end = data.when(b.index), data.end(b.after[1] - 1)
    if b.unconfirmed and b.p_value >= det.alpha:
        verdict = (
            f"the CPU model differs more than allowed (extra error {100 * b.excess:.1f}%, "
            f"allowed {100 * det.allowed_error:.0f}%) but not significantly (Chow test p = "
            f"{b.p_value:.2g}): no more than the noise of the two fits"
        )
    elif b.unconfirmed:
        verdict = (
            f"the CPU model differs more than allowed (extra error {100 * b.excess:.1f}%, "
            f"allowed {100 * det.allowed_error:.0f}%) but no transaction type's latency rose "
            "against the other types' for good: the same application, whose CPU cost "
            "depends on the workload and the co-tenants more than a linear model says"
        )
    else:
        verdict = (
            f"one CPU model explains the periods before and after (extra error "
            f"{100 * b.excess:.1f}%, allowed {100 * det.allowed_error:.0f}%): the same "
            "application under another workload"
        )
    return Finding(
        kind=Kind.WORKLOAD_CHANGE,
        entity=det.entity,
        metric="cpu_util",
        start=start,
        end=end,
        severity=Severity.INFO,
        explanation=(
            f"{det.entity}: workload changed at {_clock(start)} "
            f"({_mix_text(data, b.before, b.after)}); {verdict}"
        ),
        evidence=(
            Evidence("boundary", start.isoformat()),
            Evidence("extra_error", b.excess, "fraction"),
            Evidence("p_value", b.p_value),
            Evidence("windows_before", b.before[1] - b.before[0], "count"),
            Evidence("windows_after", b.after[1] - b.after[0], "count"),
            Evidence("model_reconciled", not b.unconfirmed),
        ),
        detector=CHECK,
    )


def _application_change(det: Params, data: Windows, b: Boundary, end_window: int) -> Finding:
    start, end = data.when(b.index), data.end(end_window - 1)
    by_name = {c.name: c for c in b.changes}
    costs = {c.name: c for c in b.costs}
    own = {o.name: o for o in b.own}
    after_s = data.seconds(b.index, end_window)
    evidence = [
        Evidence("boundary", start.isoformat()),
        Evidence("extra_error", b.excess, "fraction"),
        Evidence("p_value", b.p_value),
        Evidence("changed_types", ",".join(b.named)),
        Evidence("tentative", b.tentative),
        Evidence("end_of_data_test", b.end_of_data),
        Evidence("common_ratio", _common(b)),
        Evidence("seconds_after", after_s, "s"),
    ]
    parts = []
    for name in b.named:
        cost, c, step = costs.get(name), by_name.get(name), own.get(name)
        if step is not None:
            evidence += [
                Evidence(f"own_latency_ratio[{name}]", step.ratio),
                Evidence(f"own_latency_score[{name}]", step.score),
            ]
        if cost is not None:
            evidence += [
                Evidence(f"cpu_cost_shift[{name}]", cost.shift, "s"),
                Evidence(f"cpu_cost_shift_low[{name}]", cost.low, "s"),
                Evidence(f"cpu_cost_shift_high[{name}]", cost.high, "s"),
            ]
            if math.isfinite(cost.before):
                evidence.append(Evidence(f"cpu_per_tx_before[{name}]", cost.before, "s"))
        if c is not None:
            evidence += [
                Evidence(f"service_time_before[{name}]", c.before, "s"),
                Evidence(f"service_time_after[{name}]", c.after, "s"),
                Evidence(f"service_time_ratio[{name}]", c.ratio),
                Evidence(f"service_time_changed[{name}]", c.changed),
                Evidence(f"service_time_score[{name}]", c.score),
            ]
        parts.append(_named_text(name, cost, c, step))
    # other types that moved clearly, either way: by their own latency when it decided
    if b.own:
        others = [(o.name, o.ratio) for o in b.own if o.name not in b.named]
    else:
        others = [(c.name, c.ratio) for c in b.changes if c.name not in b.named and c.changed]
    if not b.named:
        which = "no single transaction type changed clearly"
    else:
        which = "; ".join(parts)
        if b.tentative:
            which = f"most likely {which} (no type stands out clearly)"
        which += (
            "; others unchanged"
            if not others
            else f"; {'latency' if b.own else 'service time'} also changed for "
            + ", ".join(f"{name} ({100 * (ratio - 1):+.0f}%)" for name, ratio in others)
        )
    short = after_s < det.min_duration
    if short:
        which += f"; only {after_s:.0f} s of data after the change: confirm with more data"
    elif b.end_of_data:
        which += (
            f"; tentative: only {after_s:.0f} s of data after it, too little for the full bar, "
            "so it was judged against the bars of the end of the data only: a search over those "
            "splits, and the steps this run's own earlier windows make there (lower confidence): "
            "confirm with more data"
        )
    severe = bool(b.named) and not b.tentative and not short and not b.end_of_data
    return Finding(
        kind=Kind.APPLICATION_CHANGE,
        entity=det.entity,
        metric="cpu_util",
        start=start,
        end=end,
        severity=Severity.ERROR if severe else Severity.WARNING,
        explanation=(
            f"{det.entity}: the application changed at {_clock(start)}: {which} ({_why(det, b)})"
        ),
        evidence=tuple(evidence),
        detector=CHECK,
    )


def _why(det: Params, b: Boundary) -> str:
    """Why the boundary is an application change: a type's own latency stepped up for good
    (against the other types', so not load, mix or co-tenants), or the CPU models differ."""
    if b.own:
        return (
            "a type's latency rose against the other types' and stayed: a change of code, "
            "not of load, mix or co-tenants, which move every type together"
        )
    return (
        f"no single CPU model explains before and after: extra error {100 * b.excess:.1f}% > "
        f"allowed {100 * det.allowed_error:.0f}%"
    )


def _named_text(
    name: str,
    cost: CostChange | None,
    change: SignatureChange | None,
    step: OwnStep | None = None,
) -> str:
    """``"t0: latency +77% against the other types' (t = 9.1); +1.9 ms CPU per transaction
    (+95%, 95% CI +1.2 ms to +2.6 ms), service time 4.4 ms → 7.9 ms (+77%)"``: the step of the
    type's own latency, its CPU cost shift and its service time, signed; a CPU cost shift
    whose interval spans zero is said to be not measurable, without a sign."""
    bits = []
    if step is not None:
        bits.append(
            f"latency {100 * (step.ratio - 1):+.0f}% against the other types' "
            f"(t = {step.score:.1f})"
        )
    if cost is not None:
        interval = f"{100 * cost.confidence:.0f}% CI {_signed(cost.low)} to {_signed(cost.high)}"
        if cost.low <= 0.0 <= cost.high:
            # an interval across zero does not tell the sign: no "−69%" beside a latency +80%
            bits.append(f"CPU per transaction not measurably changed ({interval})")
        else:
            share = f"{100 * cost.relative:+.0f}%, " if math.isfinite(cost.relative) else ""
            bits.append(f"{_signed(cost.shift)} CPU per transaction ({share}{interval})")
    if change is not None:
        bits.append(
            f"service time {format_seconds(change.before)} → {format_seconds(change.after)} "
            f"({100 * (change.ratio - 1):+.0f}%, {100 * (change.ratio_low - 1):+.0f}% to "
            f"{100 * (change.ratio_high - 1):+.0f}%)"
        )
    return f"{name}: " + ", ".join(bits) if bits else name


def _signed(seconds: float) -> str:
    return ("+" if seconds >= 0 else "−") + format_seconds(abs(seconds))


def _common(b: Boundary) -> float:
    """The slow-down the types share (1 when the signature has taken it out already)."""
    return float(np.median([c.common for c in b.changes])) if b.changes else 1.0


def _windows(n: int) -> str:
    return f"{n} window" + ("" if n == 1 else "s")


def _clock(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def _span(start: datetime, end: datetime) -> str:
    left = start.strftime("%Y-%m-%d %H:%M:%S")
    right = (
        end.strftime("%H:%M:%S")
        if end.date() == start.date()
        else end.strftime("%Y-%m-%d %H:%M:%S")
    )
    return f"from {left} to {right} UTC"
