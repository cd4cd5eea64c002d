"""The per-node checks: pure functions of one node's :class:`NodePeriods` and the rules.

Each returns findings for one pathology (Kaminski 2003, §3 and the appendix; DESIGN §2.4):

* :func:`cpu_loops` — the simple loop: CPU within ``mean ± deviation`` (per OS) in at least
  ``hours + extra_hours`` periods of a window, counting only periods in which the machine is not
  saturated and the process uses at least the cull (10% of a CPU).
* :func:`constrained_loops` — on saturated periods, every process above the cull is on the
  review list for that period. Pairs are judged over the periods **both** are on the list, with
  means and σ recomputed per pair: correlation ≥ ``correlation`` over at least ``hours``
  shared periods ("real variable work present"); when no pair on the node passes that in the
  window, the means test: each one's CPU within ``means_sigmas`` σ of the other's mean in at
  least ``hours`` shared periods ("dormant machine"). Ours, as guards: the means test only for
  steady suspects (σ/μ ≤ ``means_max_cv``), and when a business volume is given, a suspect that
  follows it (correlation ≥ ``max_volume_correlation``) is work, not a loop.
* :func:`hums` — at least ``hum.min_cpu`` (below the loop band) in ``hum.hours`` unsaturated
  periods of a window, steadily (σ/μ ≤ ``hum.max_cv``), and, with a volume, unrelated to it.
* :func:`ramps`, :func:`saw_tooths` — per process *name* (pids summed, so a restarted process
  stays one series) over the whole frame, with :mod:`perfsleuth.processes.kernels`.
* :func:`caps` — a named group's CPU above ``max_cpu_fraction`` of the box (or its memory
  above ``max_rss_bytes``) in at least ``min_periods`` periods of a window.
* :func:`capture` — Σ process CPU / machine CPU outside ``[low, high]`` in at least
  ``min_fraction`` of the busy periods.

Findings of consecutive windows for the same process are merged into one. The entity is
``node/name[pid]`` for a process, ``node/name`` for a name, ``node/group`` for a group and
``node`` for the machine; the evidence always holds ``node`` (notifications key on it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from perfsleuth.errors import DataError
from perfsleuth.findings import Evidence, Finding, Kind, Severity
from perfsleuth.processes.kernels import _MAX_POINTS, find_ramp, find_saw_tooth
from perfsleuth.processes.periods import NodePeriods
from perfsleuth.processes.rules import ProcessRules, members

__all__ = [
    "CHECKS",
    "CheckName",
    "caps",
    "capture",
    "constrained_loops",
    "cpu_loops",
    "hums",
    "ramps",
    "saw_tooths",
]

Check = Callable[[NodePeriods, ProcessRules], list[Finding]]

CheckName = Literal[
    "cpu_loop",
    "constrained_loop",
    "hum",
    "memory_ramp",
    "saw_tooth",
    "cap_exceeded",
    "capture_ratio",
]
"""The name of a check: what its findings carry as ``kind`` and ``detector``."""

_EPS = 1e-9


# -- shared helpers ---------------------------------------------------------------------------


def _windows(data: NodePeriods) -> Iterator[tuple[int, slice]]:
    """(window id, slice of periods) for each review window, in time order."""
    bounds = np.flatnonzero(np.diff(data.window)) + 1
    edges = [0, *bounds.tolist(), data.n_periods]
    for lo, hi in itertools.pairwise(edges):
        yield int(data.window[lo]), slice(lo, hi)


def _need_ncpu(data: NodePeriods, check: str) -> None:
    if not data.ncpu == data.ncpu:  # NaN
        raise DataError(
            f"node {data.node!r}: the {check} check needs the machine's CPU count: add an "
            "'ncpu' column to the process frame (or join a node table with attach_nodes)"
        )


def _periods_word(data: NodePeriods) -> str:
    seconds = data.period.total_seconds()
    return "hours" if seconds == 3600 else f"periods of {seconds:g} s"


def _corr(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    if len(a) < 3 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def _base_evidence(data: NodePeriods, p: int) -> list[Evidence]:
    return [
        Evidence("node", data.node),
        Evidence("process", data.name[p]),
        Evidence("pid", int(data.pid[p])),
        Evidence("user", data.user[p]),
        Evidence("os", data.os),
    ]


@dataclass
class _Hit:
    """One window's verdict for one subject, to be merged with its neighbours."""

    window: int
    first: int
    last: int
    count: int
    values: list[float] = field(default_factory=list)
    extra: dict[str, float | int | str] = field(default_factory=dict)


def _merged(hits: list[_Hit]) -> Iterator[list[_Hit]]:
    """Runs of hits in consecutive windows."""
    run: list[_Hit] = []
    for hit in sorted(hits, key=lambda h: h.window):
        if run and hit.window != run[-1].window + 1:
            yield run
            run = []
        run.append(hit)
    if run:
        yield run


def _finding(
    kind: Kind,
    data: NodePeriods,
    entity: str,
    metric: str,
    first: int,
    last: int,
    severity: Severity,
    explanation: str,
    evidence: list[Evidence],
) -> Finding:
    return Finding(
        kind=kind,
        entity=entity,
        metric=metric,
        start=data.start(first),
        end=data.end(last),
        severity=severity,
        explanation=explanation,
        evidence=tuple(evidence),
        detector=kind.value,
    )


def _alertable(data: NodePeriods, rules: ProcessRules) -> NDArray[np.bool_]:
    return np.array(
        [not rules.never(data.node, n, u) for n, u in zip(data.name, data.user, strict=True)],
        dtype=bool,
    )


def _day(data: NodePeriods, first: int) -> str:
    return f"{data.starts[first]:%Y-%m-%d %H:%M} UTC"


# -- simple loops -----------------------------------------------------------------------------


def cpu_loops(data: NodePeriods, rules: ProcessRules) -> list[Finding]:
    """The simple loop (see the module docstring)."""
    _need_ncpu(data, "cpu_loop")
    rule = rules.os_rule(data.os)
    cull = rules.settings.cull_cpu
    ok = data.covered & ~data.saturated
    # bounds are inclusive, with a hair of tolerance: .92 - .08 is 0.8400000000000001 in floats
    looping = (
        (data.cpu >= rule.low - _EPS)
        & (data.cpu <= rule.high + _EPS)
        & (data.cpu >= cull - _EPS)
        & ok[np.newaxis, :]
    )
    alertable = _alertable(data, rules)
    hits: dict[int, list[_Hit]] = {}
    for window, span in _windows(data):
        counts = looping[:, span].sum(axis=1)
        for p in np.flatnonzero((counts >= rule.hours) & alertable).tolist():
            extra = rules.extra_hours(data.name[p], data.os, "cpu_loop")
            if counts[p] < rule.hours + extra:
                continue
            where = np.flatnonzero(looping[p, span]) + span.start
            hit = _Hit(window, int(where[0]), int(where[-1]), int(counts[p]))
            hit.values = data.cpu[p, where].tolist()
            hit.extra = {"needed": rule.hours + extra, "extra": extra, "of": span.stop - span.start}
            hits.setdefault(int(p), []).append(hit)
    findings = []
    word = _periods_word(data)
    for p, plist in sorted(hits.items()):
        for run in _merged(plist):
            values = [v for h in run for v in h.values]
            best = max(run, key=lambda h: h.count)
            mean = float(np.mean(values))
            explanation = (
                f"{data.label(p)} on {data.node} used {mean:.2f} of a CPU for {best.count} of "
                f"{best.extra['of']} {word} (from {_day(data, run[0].first)}) while the machine "
                f"had CPU to spare: a CPU loop. Stop it and ask the owner to fix the code."
            )
            evidence = [
                *_base_evidence(data, p),
                Evidence("looping_periods", best.count),
                Evidence("needed_periods", int(best.extra["needed"])),
                Evidence("exception_hours", int(best.extra["extra"])),
                Evidence("windows", len(run)),
                Evidence("mean_cpu", round(mean, 4), "cores"),
                Evidence("band_low", round(rule.low, 4), "cores"),
                Evidence("band_high", round(rule.high, 4), "cores"),
                Evidence("ncpu", data.ncpu),
            ]
            findings.append(
                _finding(
                    Kind.CPU_LOOP,
                    data,
                    f"{data.node}/{data.label(p)}",
                    "cpu",
                    run[0].first,
                    run[-1].last,
                    Severity.WARNING,
                    explanation,
                    evidence,
                )
            )
    return findings


# -- constrained loops ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Pair:
    i: int
    j: int
    method: str
    statistic: float
    periods: NDArray[np.intp]


def _pairs(data: NodePeriods, rules: ProcessRules, span: slice) -> list[_Pair]:
    rule = rules.os_rule(data.os)
    policy = rules.constrained
    review = (data.cpu[:, span] > rules.settings.cull_cpu) & (
        data.saturated[span] & data.covered[span]
    )[np.newaxis, :]
    candidates = np.flatnonzero(review.sum(axis=1) >= rule.hours)
    volume = None if data.volume is None else data.volume[span]
    shared_sets = []
    for a, i in enumerate(candidates.tolist()):
        for j in candidates[a + 1 :].tolist():
            shared = np.flatnonzero(review[i] & review[j])
            if len(shared) < rule.hours:
                continue
            x, y = data.cpu[i, span][shared], data.cpu[j, span][shared]
            if volume is not None:
                v = volume[shared]
                if any(
                    _corr(s, v) >= policy.max_volume_correlation  # follows business: work
                    for s in (x, y)
                ):
                    continue
            shared_sets.append((int(i), int(j), shared, x, y))
    pairs = []
    for i, j, shared, x, y in shared_sets:
        r = _corr(x, y)
        if math.isfinite(r) and r >= policy.correlation:
            pairs.append(_Pair(i, j, "correlation", r, shared + span.start))
    if pairs:
        return pairs
    k = policy.means_sigmas
    for i, j, shared, x, y in shared_sets:
        mx, my, sx, sy = x.mean(), y.mean(), x.std(ddof=1), y.std(ddof=1)
        if (
            not (mx > 0 and my > 0)
            or sx / mx > policy.means_max_cv
            or sy / my > policy.means_max_cv
        ):
            continue
        within = (np.abs(x - my) <= k * sy) & (np.abs(y - mx) <= k * sx)
        if within.sum() >= rule.hours:
            pairs.append(_Pair(i, j, "means", float(abs(mx - my)), shared[within] + span.start))
    return pairs


def constrained_loops(data: NodePeriods, rules: ProcessRules) -> list[Finding]:
    """Constrained loops, both of the paper's ways (see the module docstring)."""
    _need_ncpu(data, "constrained_loop")
    if not data.saturated.any():
        return []
    alertable = _alertable(data, rules)
    hits: dict[int, list[_Hit]] = {}
    for window, span in _windows(data):
        by_process: dict[int, list[tuple[int, _Pair]]] = {}
        for pair in _pairs(data, rules, span):
            by_process.setdefault(pair.i, []).append((pair.j, pair))
            by_process.setdefault(pair.j, []).append((pair.i, pair))
        rule = rules.os_rule(data.os)
        for p, partners in by_process.items():
            if not alertable[p]:
                continue
            extra = rules.extra_hours(data.name[p], data.os, "constrained_loop")
            kept = [(q, pair) for q, pair in partners if len(pair.periods) >= rule.hours + extra]
            if not kept:
                continue
            periods = np.unique(np.concatenate([pair.periods for _, pair in kept]))
            longest = max(kept, key=lambda qp: len(qp[1].periods))[1]
            hit = _Hit(window, int(periods[0]), int(periods[-1]), len(longest.periods))
            hit.values = data.cpu[p, periods].tolist()
            hit.extra = {
                "partners": ", ".join(sorted({data.label(q) for q, _ in kept})),
                "method": longest.method,
                "statistic": longest.statistic,
                "needed": rule.hours + extra,
                "of": span.stop - span.start,
            }
            hits.setdefault(p, []).append(hit)
    findings = []
    word = _periods_word(data)
    for p, plist in sorted(hits.items()):
        for run in _merged(plist):
            best = max(run, key=lambda h: h.count)
            mean = float(np.mean([v for h in run for v in h.values]))
            how = (
                f"its CPU moved with theirs (correlation {best.extra['statistic']:.2f})"
                if best.extra["method"] == "correlation"
                else "its CPU stayed within 2σ of theirs on an otherwise static machine"
            )
            explanation = (
                f"{data.label(p)} on {data.node} took {mean:.2f} of a CPU for {best.count} of "
                f"{best.extra['of']} {word} on a saturated machine, competing with "
                f"{best.extra['partners']}; {how}: a constrained loop."
            )
            evidence = [
                *_base_evidence(data, p),
                Evidence("partners", str(best.extra["partners"])),
                Evidence("method", str(best.extra["method"])),
                Evidence(
                    "correlation" if best.extra["method"] == "correlation" else "mean_gap",
                    round(float(best.extra["statistic"]), 4),
                ),
                Evidence("shared_periods", best.count),
                Evidence("needed_periods", int(best.extra["needed"])),
                Evidence("windows", len(run)),
                Evidence("mean_cpu", round(mean, 4), "cores"),
                Evidence("ncpu", data.ncpu),
            ]
            findings.append(
                _finding(
                    Kind.CONSTRAINED_LOOP,
                    data,
                    f"{data.node}/{data.label(p)}",
                    "cpu",
                    run[0].first,
                    run[-1].last,
                    Severity.WARNING,
                    explanation,
                    evidence,
                )
            )
    return findings


# -- hums -------------------------------------------------------------------------------------


def hums(data: NodePeriods, rules: ProcessRules) -> list[Finding]:
    """Steady consumption all day, unrelated to business volume."""
    _need_ncpu(data, "hum")
    rule = rules.os_rule(data.os)
    policy = rules.hum
    ok = data.covered & ~data.saturated
    humming = (
        (data.cpu >= max(policy.min_cpu, rules.settings.cull_cpu) - _EPS)
        & (data.cpu < rule.low - _EPS)
        & ok[np.newaxis, :]
    )
    alertable = _alertable(data, rules)
    hits: dict[int, list[_Hit]] = {}
    for window, span in _windows(data):
        counts = humming[:, span].sum(axis=1)
        for p in np.flatnonzero((counts >= policy.hours) & alertable).tolist():
            extra = rules.extra_hours(data.name[p], data.os, "hum")
            if counts[p] < policy.hours + extra:
                continue
            where = np.flatnonzero(humming[p, span]) + span.start
            values = data.cpu[p, where]
            cv = float(values.std() / values.mean())
            if cv > policy.max_cv:
                continue
            r = float("nan")
            if data.volume is not None:
                r = _corr(values, data.volume[where])
                if math.isfinite(r) and abs(r) >= policy.max_volume_correlation:
                    continue
            hit = _Hit(window, int(where[0]), int(where[-1]), int(counts[p]))
            hit.values = values.tolist()
            hit.extra = {"cv": cv, "r": r, "of": span.stop - span.start}
            hits.setdefault(int(p), []).append(hit)
    findings = []
    word = _periods_word(data)
    for p, plist in sorted(hits.items()):
        for run in _merged(plist):
            best = max(run, key=lambda h: h.count)
            values = [v for h in run for v in h.values]
            mean = float(np.mean(values))
            volume_note = (
                f", unrelated to business volume (correlation {best.extra['r']:.2f})"
                if best.extra["r"] == best.extra["r"]
                else ""
            )
            kind_word = "shriek" if mean >= 0.5 * rules.os_rule(data.os).mean else "hum"
            explanation = (
                f"{data.label(p)} on {data.node} used a steady {mean:.2f} of a CPU in "
                f"{best.count} of {best.extra['of']} {word}{volume_note}: a {kind_word} "
                "(polling with nothing to do?)."
            )
            evidence = [
                *_base_evidence(data, p),
                Evidence("humming_periods", best.count),
                Evidence("windows", len(run)),
                Evidence("mean_cpu", round(mean, 4), "cores"),
                Evidence("cv", round(float(best.extra["cv"]), 4)),
                Evidence("ncpu", data.ncpu),
            ]
            if best.extra["r"] == best.extra["r"]:
                evidence.append(Evidence("volume_correlation", round(float(best.extra["r"]), 4)))
            findings.append(
                _finding(
                    Kind.HUM,
                    data,
                    f"{data.node}/{data.label(p)}",
                    "cpu",
                    run[0].first,
                    run[-1].last,
                    Severity.INFO,
                    explanation,
                    evidence,
                )
            )
    return findings


# -- ramps and saw-tooths ---------------------------------------------------------------------


def _name_matrix(
    data: NodePeriods, column: str
) -> tuple[list[str], list[str], NDArray[np.float64]]:
    """Names (sorted), the user of each name's first row, and the series summed over each
    name's pids (NaN where none ran), one row per name."""
    matrix = data.columns[column]
    if not len(data.name):
        return [], [], np.empty((0, matrix.shape[1]))
    names = np.array(data.name, dtype=object)
    unique, first, inverse = np.unique(names, return_index=True, return_inverse=True)
    finite = np.isfinite(matrix)
    sums = np.zeros((len(unique), matrix.shape[1]))
    np.add.at(sums, inverse, np.where(finite, matrix, 0.0))
    present = np.zeros(sums.shape, dtype=bool)
    np.logical_or.at(present, inverse, finite)
    series = np.where(present, sums, np.nan)
    return [str(n) for n in unique], [data.user[int(i)] for i in first], series


def _may_ramp(
    series: NDArray[np.float64], min_periods: int, rules: ProcessRules
) -> NDArray[np.bool_]:
    """Rows of ``series`` for which :func:`find_ramp` could find a ramp (a vectorised pre-check).

    Conservative: a row marked False is one where ``find_ramp`` returns None, so skipping it
    changes no result. Theil–Sen's slope is a median of pairwise slopes, so it reaches the
    slope the policy needs only if at least half of the pairwise slopes do; the needed rise
    uses the row's minimum in place of its starting level (a lower bound).
    """
    policy = rules.ramp
    _, t = series.shape
    finite = np.isfinite(series)
    count = finite.sum(axis=1)
    first = np.argmax(finite, axis=1)
    last = t - 1 - np.argmax(finite[:, ::-1], axis=1)
    possible: NDArray[np.bool_] = (count >= 6) & (last - first + 1 >= min_periods)
    if t > _MAX_POINTS or not possible.any():
        return possible  # long series are thinned by the test: no shortcut
    span = np.maximum(last - first, 1).astype(np.float64)
    floor = np.where(finite, series, np.inf).min(axis=1)
    floor = np.where(np.isfinite(floor), np.maximum(floor, 0.0), 0.0)
    needed = np.maximum(policy.min_growth_bytes, policy.min_growth * floor)
    slope_needed = needed / span * (1.0 - 1e-9)
    i, j = np.triu_indices(t, k=1)
    with np.errstate(invalid="ignore"):
        slopes = (series[:, j] - series[:, i]) / (j - i).astype(np.float64)
        valid = np.isfinite(slopes)
        steep = valid & (slopes > 0) & (slopes >= slope_needed[:, None])
    pairs = valid.sum(axis=1)
    enough: NDArray[np.bool_] = possible & (steep.sum(axis=1) >= pairs - pairs // 2)
    return enough


def _may_saw(series: NDArray[np.float64], rules: ProcessRules) -> NDArray[np.bool_]:
    """Rows for which :func:`find_saw_tooth` could find a saw-tooth: enough resets (exact
    vectorised copy of its first test; False rows give None)."""
    policy = rules.ramp
    values = np.nan_to_num(series, nan=0.0)
    if values.shape[1] < policy.min_tooth_periods + 1:
        return np.zeros(len(values), dtype=bool)
    shifted = np.concatenate([values[:, :1], values[:, :-2]], axis=1)
    before = np.maximum(values[:, :-1], shifted)
    hits = (before >= policy.min_growth_bytes) & (
        values[:, 1:] <= (1.0 - policy.reset_drop) * before
    )
    ends = hits & ~np.concatenate([hits[:, 1:], np.zeros((len(hits), 1), dtype=bool)], axis=1)
    return np.asarray(ends.sum(axis=1) >= policy.min_teeth)


def _ramp_policy(rules: ProcessRules) -> dict[str, float | int]:
    policy = rules.ramp
    return {
        "reset_drop": policy.reset_drop,
        "min_teeth": policy.min_teeth,
        "min_tooth_periods": policy.min_tooth_periods,
        "min_rise": policy.min_growth_bytes,
        "max_step": policy.max_step,
    }


def _human(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 60:.3g} min" if seconds >= 60 else f"{seconds:.3g} s"


def _mib(value: float) -> str:
    return f"{value / 2**20:,.0f} MiB" if abs(value) < 2**30 * 10 else f"{value / 2**30:,.1f} GiB"


_WHAT = {"rss_bytes": "memory (RSS)", "file_bytes": "open files"}


def _name_evidence(data: NodePeriods, name: str, user: str, column: str) -> list[Evidence]:
    pids = sorted({int(data.pid[p]) for p in range(len(data.name)) if data.name[p] == name})
    return [
        Evidence("node", data.node),
        Evidence("process", name),
        Evidence("pids", " ".join(map(str, pids[:10])) + (" ..." if len(pids) > 10 else "")),
        Evidence("user", user),
        Evidence("os", data.os),
        Evidence("metric", column),
    ]


def ramps(data: NodePeriods, rules: ProcessRules) -> list[Finding]:
    """Sustained, significant rises in memory (or open-file size) per process name."""
    policy = rules.ramp
    min_periods = max(2, math.ceil(policy.min_duration / data.period))
    period_h = data.period.total_seconds() / 3600
    findings = []
    for column in policy.columns:
        if column not in data.columns:
            continue
        names, users, matrix = _name_matrix(data, column)
        maybe = _may_ramp(matrix, min_periods, rules)
        for k in np.flatnonzero(maybe):
            name, user, series = names[k], users[k], matrix[k]
            if rules.never(data.node, name, user):
                continue
            if find_saw_tooth(series, **_ramp_policy(rules)) is not None:  # type: ignore[arg-type]
                continue  # a ramp that resets is reported as a saw-tooth
            ramp = find_ramp(
                series,
                alpha=policy.alpha,
                min_periods=min_periods,
                min_growth=policy.min_growth,
                min_growth_bytes=policy.min_growth_bytes,
            )
            if ramp is None:
                continue
            per_day = ramp.trend.slope * 24 / period_h
            now = float(series[np.isfinite(series)][-1])
            evidence = [
                *_name_evidence(data, name, user, column),
                Evidence("slope_per_day", round(per_day), "bytes"),
                Evidence("rise", round(ramp.rise), "bytes"),
                Evidence("start_level", round(ramp.level_start), "bytes"),
                Evidence("end_level", round(ramp.level_end), "bytes"),
                Evidence("p_value", float(f"{ramp.trend.p_value:.3g}")),
                Evidence("duration_periods", ramp.stop - ramp.start),
            ]
            limit_note = ""
            severity = Severity.WARNING
            if policy.limit_bytes > 0:
                days = max(policy.limit_bytes - now, 0.0) / per_day
                evidence.append(Evidence("days_to_limit", round(days, 2), "d"))
                evidence.append(Evidence("limit", round(policy.limit_bytes), "bytes"))
                limit_note = (
                    f"; at this rate it reaches {_mib(policy.limit_bytes)} in {days:.1f} days"
                )
                if days < 1:
                    severity = Severity.ERROR
            explanation = (
                f"{name} on {data.node}: {_WHAT.get(column, column)} grew from "
                f"{_mib(ramp.level_start)} to {_mib(ramp.level_end)} "
                f"(+{_mib(per_day)} a day, p = {ramp.trend.p_value:.1g}) and never came back "
                f"down{limit_note}: a leak or an ever-growing file."
            )
            findings.append(
                _finding(
                    Kind.MEMORY_RAMP,
                    data,
                    f"{data.node}/{name}",
                    column,
                    ramp.start,
                    ramp.stop - 1,
                    severity,
                    explanation,
                    evidence,
                )
            )
    return findings


def saw_tooths(data: NodePeriods, rules: ProcessRules) -> list[Finding]:
    """Ramps that reset (restarted leaks, log files truncated, rollback segments)."""
    findings = []
    for column in rules.ramp.columns:
        if column not in data.columns:
            continue
        names, users, matrix = _name_matrix(data, column)
        for k in np.flatnonzero(_may_saw(matrix, rules)):
            name, user, series = names[k], users[k], matrix[k]
            if rules.never(data.node, name, user):
                continue
            tooth = find_saw_tooth(series, **_ramp_policy(rules))  # type: ignore[arg-type]
            if tooth is None:
                continue
            seconds = tooth.period * data.period.total_seconds()
            evidence = [
                *_name_evidence(data, name, user, column),
                Evidence("teeth", len(tooth.resets)),
                Evidence("period", round(seconds, 3), "s"),
                Evidence("peak", round(tooth.peak), "bytes"),
                Evidence("rise", round(tooth.rise), "bytes"),
                Evidence("first_reset", f"{data.starts[tooth.resets[0]]:%Y-%m-%d %H:%M}"),
            ]
            if tooth.regularity == tooth.regularity:
                evidence.append(Evidence("regularity_cv", round(tooth.regularity, 3)))
            explanation = (
                f"{name} on {data.node}: {_WHAT.get(column, column)} climbs to about "
                f"{_mib(tooth.peak)} and is reset every {_human(seconds)} "
                f"({len(tooth.resets)} times): a saw-tooth. Something is cleaning up after a "
                "leak or a growing file; check what happens at the peaks."
            )
            first = max(0, tooth.resets[0] - round(tooth.period))
            findings.append(
                _finding(
                    Kind.SAW_TOOTH,
                    data,
                    f"{data.node}/{name}",
                    column,
                    first,
                    tooth.resets[-1],
                    Severity.WARNING,
                    explanation,
                    evidence,
                )
            )
    return findings


# -- caps and capture ratio -------------------------------------------------------------------


def caps(data: NodePeriods, rules: ProcessRules) -> list[Finding]:
    """Named groups above their cap (e.g. "Tools never above 10% of a box")."""
    if not rules.groups:
        return []
    findings = []
    word = _periods_word(data)
    for group in rules.groups:
        rows = np.flatnonzero(members(group, data.name, data.user))
        if not len(rows):
            continue
        tests: list[tuple[str, NDArray[np.float64], float]] = []
        if group.max_cpu_fraction > 0:
            _need_ncpu(data, "cap_exceeded")
            share = data.cpu[rows].sum(axis=0) / data.ncpu
            tests.append(("cpu", share, group.max_cpu_fraction))
        if group.max_rss_bytes > 0 and "rss_bytes" in data.columns:
            rss = np.nansum(data.columns["rss_bytes"][rows], axis=0)
            tests.append(("rss_bytes", rss, group.max_rss_bytes))
        for metric, values, cap in tests:
            over = (values > cap) & data.covered
            hits = []
            for window, span in _windows(data):
                where = np.flatnonzero(over[span]) + span.start
                if len(where) >= group.min_periods:
                    hit = _Hit(window, int(where[0]), int(where[-1]), len(where))
                    hit.values = values[where].tolist()
                    hits.append(hit)
            load: dict[str, float] = {}
            for r in rows:
                load[data.name[r]] = load.get(data.name[r], 0.0) + float(data.cpu[r].sum())
            top = sorted(load, key=lambda n: (-load[n], n))
            for run in _merged(hits):
                peak = max(v for h in run for v in h.values)
                count = sum(h.count for h in run)
                if metric == "cpu":
                    what, shown, limit = "of the machine's CPU", f"{peak:.0%}", f"{cap:.0%}"
                else:
                    what, shown, limit = "of memory", _mib(peak), _mib(cap)
                explanation = (
                    f"The {group.name} workload on {data.node} ({', '.join(top[:3])}) took up to "
                    f"{shown} {what} in {count} {word}, above its cap of {limit}."
                )
                evidence = [
                    Evidence("node", data.node),
                    Evidence("group", group.name),
                    Evidence("members", ", ".join(top[:8])),
                    Evidence("periods_over", count),
                    Evidence("peak", round(peak, 4), "fraction" if metric == "cpu" else "bytes"),
                    Evidence("cap", cap, "fraction" if metric == "cpu" else "bytes"),
                    Evidence("stealth", group.stealth),
                ]
                findings.append(
                    _finding(
                        Kind.CAP_EXCEEDED,
                        data,
                        f"{data.node}/{group.name}",
                        metric,
                        run[0].first,
                        run[-1].last,
                        Severity.WARNING,
                        explanation,
                        evidence,
                    )
                )
    return findings


def capture(data: NodePeriods, rules: ProcessRules) -> list[Finding]:
    """Σ process CPU / machine CPU: how much of the machine's work the process data explains."""
    if not data.has_machine:
        return []
    policy = rules.capture
    busy = data.covered & (data.busy >= policy.min_busy)
    if busy.sum() < 3:
        return []
    ratio = data.captured[busy] / data.busy[busy]
    out = (ratio < policy.low) | (ratio > policy.high)
    if out.mean() < policy.min_fraction:
        return []
    median = float(np.median(ratio))
    where = np.flatnonzero(busy)
    direction = "less" if median < 1 else "more"
    explanation = (
        f"On {data.node} the processes account for {median:.0%} of the machine's CPU "
        f"(median over {len(ratio)} periods; {out.mean():.0%} outside "
        f"{policy.low:.0%}–{policy.high:.0%}): the process data captures {direction} than the "
        "machine used, so per-process checks there are "
        + ("blind to part of the work." if median < 1 else "double-counting.")
    )
    evidence = [
        Evidence("node", data.node),
        Evidence("median_ratio", round(median, 4)),
        Evidence("p10_ratio", round(float(np.quantile(ratio, 0.1)), 4)),
        Evidence("p90_ratio", round(float(np.quantile(ratio, 0.9)), 4)),
        Evidence("periods", len(ratio)),
        Evidence("share_outside", round(float(out.mean()), 4)),
    ]
    return [
        _finding(
            Kind.CAPTURE_RATIO,
            data,
            data.node,
            "capture_ratio",
            int(where[0]),
            int(where[-1]),
            Severity.INFO,
            explanation,
            evidence,
        )
    ]


CHECKS: dict[CheckName, Check] = {
    "cpu_loop": cpu_loops,
    "constrained_loop": constrained_loops,
    "hum": hums,
    "memory_ramp": ramps,
    "saw_tooth": saw_tooths,
    "cap_exceeded": caps,
    "capture_ratio": capture,
}
"""Check name (= the findings' ``kind`` and ``detector``) → per-node function, in the order
the detector runs them."""
