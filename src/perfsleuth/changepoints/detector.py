"""Change points in metric series (DESIGN §2.1): one :class:`Finding` per change point, and
one per large spike run.

Each (entity, metric) series of a metric frame is searched with
:func:`perfsleuth.changepoints.kernels.search.find_change_points`. A finding starts and ends at
the first observation of the new segment, and says in the metric's own units how the mean moved
— or, for a change of growth rate on a trending series (a point of kind ``"slope"``), how the
growth per reading moved ("growth rose from +0.8 GB/reading to +2.1 GB/reading"); its relative
change, for the severity, is that of the growth rate.

Which points are reported is the search's job (:func:`~perfsleuth.changepoints.kernels.search.
find_change_points`): significant, large enough to matter (``min_effect`` noise standard
deviations and ``min_relative_change`` of the level) and worth their cost (``penalty``). Each
series' findings come largest effect first; ``top`` keeps the largest few.

Severity follows the effect, then the strength of evidence:

* ``INFO`` — the mean moved by less than ``warn_relative_change`` (default 10%) or by less than
  one noise standard deviation: real, operationally minor;
* ``ERROR`` — it moved by at least ``error_relative_change`` (default 50%) and two noise
  standard deviations, *and* the evidence is strong (p ≤ 0.001; with ``method="paper"``, which
  has no p-value, T − 1 at least twice the critical T − 1);
* ``WARNING`` — everything else.

The relative change is ``(after − before) / |before|``; from a zero mean it is infinite (a large
change).

Spikes are data, not change points: the search keeps them in every mean and lists them
(``ChangePoints.spikes``, grouped into ``spike_runs``). The ``top_spikes`` largest runs of each
series (default 3, by how far their most extreme observation lies from the model, in noise σ)
apart from its change points (``ChangePoints.notable_spikes``) are findings of kind ``spike``
at ``INFO``: an operator sees the most extreme moments of a series without every 5σ reading of
a heavy-tailed one becoming a line.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass as dataclass_std
from datetime import datetime
from typing import ClassVar, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import Field, model_validator
from pydantic.dataclasses import dataclass

from perfsleuth.analysis import PARAMS, DetectorMixin, Summary
from perfsleuth.changepoints.kernels.results import (
    DEFAULT_TOP_SPIKES,
    ChangePoint,
    ChangePoints,
    SpikeRun,
)
from perfsleuth.changepoints.kernels.search import (
    DEFAULT_MIN_EFFECT,
    DEFAULT_PENALTY,
    find_change_points,
)
from perfsleuth.findings import Evidence, Finding, Kind, Severity
from perfsleuth.frames import coverage_of, normalise
from perfsleuth.units import format_growth, format_quantity

__all__ = ["CHECK", "ChangePointAnalysis", "ChangePointDetector", "SeriesChanges"]

CHECK = "changepoint"
"""What findings of this family record as their ``detector``."""

_STRONG_P = 0.001
_WARN_EFFECT = 1.0  # noise standard deviations below which a change is INFO
_ERROR_EFFECT = 2.0  # ... and at least which an ERROR needs


@dataclass_std(frozen=True, slots=True, eq=False)
class SeriesChanges:
    """One searched series: its values, times and unit, and the search's result."""

    entity: str
    metric: str
    unit: str
    times: pd.Series
    values: NDArray[np.float64]
    result: ChangePoints


@dataclass_std(frozen=True, slots=True, eq=False)
class ChangePointAnalysis:
    """Every series of a metric frame searched: the findings and what the report draws."""

    detector: ChangePointDetector
    series: tuple[SeriesChanges, ...]
    findings: tuple[Finding, ...]

    @property
    def changed(self) -> tuple[SeriesChanges, ...]:
        """The series with at least one change point, the largest effect first."""
        found = [s for s in self.series if s.result.indices]
        return tuple(sorted(found, key=lambda s: -s.result.ranked()[0].effect))

    def summary(self) -> Summary:
        """How many series changed, and each change point in a line."""
        head = (
            f"{len(self.series)} series searched ({self.detector.method}, "
            f"α = {self.detector.alpha:g}); {len(self.changed)} with change points, "
            f"{len(self.findings)} finding(s)."
        )
        lines = [head, *(f"  {f.explanation}" for f in self.findings)]
        items = "".join(f"<li>{html.escape(f.explanation)}</li>" for f in self.findings)
        return Summary(
            text="\n".join(lines),
            html=f"<p>{html.escape(head)}</p>" + (f"<ul>{items}</ul>" if items else ""),
        )


@dataclass(frozen=True, config=PARAMS)
class ChangePointDetector(DetectorMixin):
    """Abrupt changes in the mean of each metric series (Berry & Hellerstein, with FPA tests).

    Parameters
    ----------
    alpha
        False-positive rate per series (spent over the recursion by segment length).
    min_size
        Fewest observations on either side of a change point (default: 5, a quarter of a
        series shorter than 20).
    method
        Significance test: ``"fpa"`` (default), ``"paper"`` (the paper's α = .05 curve, every
        recursion level tested at α, as in the paper), ``"f"`` (F distribution; far too
        liberal, for comparison).
    robust
        The default search: seeded candidates judged between their neighbours, cycle, trend
        and skewness handled, spikes kept as data; ``False`` searches the raw values, as the
        paper.
    min_effect
        Effect-size floor in noise standard deviations: smaller shifts are dropped, however
        significant (long series make tiny shifts significant).
    min_relative_change
        Effect-size floor: a shift must also be at least this fraction of the larger level
        (0 turns it off, e.g. for temperatures, whose zero is arbitrary). ``None`` (default):
        5% on series of at least 1,000 readings, none on shorter ones
        (:data:`~perfsleuth.changepoints.kernels.search.LONG_SERIES`).
    penalty
        Parsimony: a change point must explain ``penalty`` × 2 ln(e n / m) long-run noise
        variances, m its shorter side (a short segment is one of many possible, and pays
        more); 0 turns it off.
    top
        Report at most this many change points per series, the largest effects (None: all).
    top_spikes
        Report this many spike runs per series as findings, the largest (0: none).
    warn_relative_change, error_relative_change
        Severity thresholds on the relative change (see the module docstring).
    """

    name: ClassVar[str] = "changepoints"
    contract: ClassVar[str] = "metric"

    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    min_size: int | None = Field(default=None, ge=1)
    method: Literal["fpa", "paper", "f"] = "fpa"
    robust: bool = True
    min_effect: float = Field(default=DEFAULT_MIN_EFFECT, ge=0.0)
    min_relative_change: float | None = Field(default=None, ge=0.0)
    penalty: float = Field(default=DEFAULT_PENALTY, ge=0.0)
    top: int | None = Field(default=None, ge=1)
    top_spikes: int = Field(default=DEFAULT_TOP_SPIKES, ge=0)
    warn_relative_change: float = Field(default=0.10, ge=0.0)
    error_relative_change: float = Field(default=0.50, ge=0.0)

    @model_validator(mode="after")
    def _paper_is_alpha_05(self) -> ChangePointDetector:
        if self.method == "paper" and not math.isclose(self.alpha, 0.05):
            raise ValueError("method 'paper' is the paper's alpha = 0.05 curve; set alpha = 0.05")
        return self

    def analyse(self, frame: pd.DataFrame) -> ChangePointAnalysis:
        """Every (entity, metric) series searched; one finding per significant change point."""
        if len(frame) == 0:
            return ChangePointAnalysis(self, (), ())
        coverage = coverage_of(frame)
        if coverage is None or coverage.contract != "metric":
            frame = normalise(frame, "metric")
        searched: list[SeriesChanges] = []
        findings: list[Finding] = []
        for (entity, metric), rows in frame.groupby(["entity", "metric"], sort=True):
            values = rows["value"].to_numpy(dtype=np.float64)
            series = SeriesChanges(
                str(entity),
                str(metric),
                _unit_of(rows),
                rows["time"].reset_index(drop=True),
                values,
                self.search(values),
            )
            searched.append(series)
            findings.extend(self._findings(series))
        return ChangePointAnalysis(self, tuple(searched), tuple(findings))

    def search(self, values: NDArray[np.float64]) -> ChangePoints:
        """The change points of one series with this detector's settings."""
        return find_change_points(
            values,
            alpha=self.alpha,
            min_size=self.min_size,
            method=self.method,
            # the paper's curve is for one test at α; FPA spends α down the recursion by length
            alpha_spending="none" if self.method == "paper" else "length",
            robust=self.robust,
            min_effect=self.min_effect,
            min_relative_change=self.min_relative_change,
            penalty=self.penalty,
        )

    def _findings(self, series: SeriesChanges) -> list[Finding]:
        entity, metric, unit, times = series.entity, series.metric, series.unit, series.times
        out = []
        ranked = series.result.ranked()[: self.top]  # largest effect first
        for point in ranked:
            before, after = point.before_after
            change = _relative_change(before, after)
            when: datetime = times.iat[point.index].to_pydatetime()
            out.append(
                Finding(
                    kind=Kind.CHANGE_POINT,
                    entity=entity,
                    metric=metric,
                    start=when,
                    end=when,
                    severity=self._severity(change, point),
                    explanation=_explain(entity, metric, before, after, change, unit, when, point),
                    evidence=_evidence(point, change, unit, _spikes_near(series.result, point)),
                    detector=CHECK,
                )
            )
        for run in series.result.notable_spikes(self.top_spikes):
            out.append(_spike_finding(series, run))
        return out

    def _severity(self, change: float, point: ChangePoint) -> Severity:
        size = abs(change)
        effect = point.effect if math.isfinite(point.effect) else math.inf
        if size < self.warn_relative_change or effect < _WARN_EFFECT:
            return Severity.INFO
        if math.isnan(point.p_value):
            strong = point.statistic - 1.0 >= 2.0 * (point.critical_value - 1.0)
        else:
            strong = point.p_value <= _STRONG_P
        if size >= self.error_relative_change and effect >= _ERROR_EFFECT and strong:
            return Severity.ERROR
        return Severity.WARNING


def _unit_of(series: pd.DataFrame) -> str:
    if "unit" not in series.columns:
        return ""
    units = series["unit"].astype(str)
    return str(units.mode().iat[0]) if len(units) else ""


def _relative_change(before: float, after: float) -> float:
    if before == 0.0:
        return 0.0 if after == 0.0 else math.copysign(math.inf, after)
    return (after - before) / abs(before)


def _change_text(change: float, before: float, after: float, unit: str) -> str:
    if unit == "fraction":
        return f"{100.0 * (after - before):+.1f} percentage points"
    if math.isinf(change):
        return "from zero"
    percent = 100.0 * change
    return f"{percent:+.0f}%" if abs(percent) >= 10 else f"{percent:+.1f}%"


def _explain(
    entity: str,
    metric: str,
    before: float,
    after: float,
    change: float,
    unit: str,
    when: datetime,
    point: ChangePoint,
) -> str:
    scale = max(abs(before), abs(after))
    verb = "rose" if after > before else "fell"
    stamp = _stamp(when)
    if math.isnan(point.p_value):
        evidence = f"T = {point.statistic:.3f} > {point.critical_value:.3f}"
    elif point.p_value < _STRONG_P:
        evidence = "p < 0.001"
    else:
        evidence = f"p = {point.p_value:.2g}"
    if point.kind == "slope":  # growth per reading, signed: "+0.8 ms/reading", "+2.0%/reading"
        relative = point.scale == "log"
        return (
            f"{entity}/{metric}: growth {verb} from "
            f"{format_growth(before, unit, like=scale, relative=relative)} "
            f"to {format_growth(after, unit, like=scale, relative=relative)} "
            f"({_change_text(change, before, after, '')}) at {stamp} ({evidence})"
        )
    # on the log scale a level point is a relative jump of a growing level, and at a break a
    # jump between two lines: told where it is, not by the means of segments that lean
    what = "level" if point.level_at else "mean"
    return (
        f"{entity}/{metric}: {what} {verb} from {format_quantity(before, unit, like=scale)} to "
        f"{format_quantity(after, unit, like=scale)} "
        f"({_change_text(change, before, after, unit)}) at {stamp} ({evidence})"
    )


def _spike_finding(series: SeriesChanges, run: SpikeRun) -> Finding:
    """A spike run as a finding: when, how far out, and how many spikes it holds."""
    value = float(series.values[run.index])
    fitted = series.result.fitted
    level = float(fitted[run.index, 0]) if fitted is not None else math.nan
    scale = max(abs(value), abs(level))
    when: datetime = series.times.iat[run.index].to_pydatetime()
    stamp = _stamp(when)
    more = f"; {run.count} spikes within {run.stop - run.start} readings" if run.count > 1 else ""
    text = (
        f"{series.entity}/{series.metric}: spike to "
        f"{format_quantity(value, series.unit, like=scale)} at {stamp}, the level being "
        f"{format_quantity(level, series.unit, like=scale)}{more}"
    )
    return Finding(
        kind=Kind.SPIKE,
        entity=series.entity,
        metric=series.metric,
        start=series.times.iat[run.start].to_pydatetime(),
        end=series.times.iat[run.stop - 1].to_pydatetime(),
        severity=Severity.INFO,
        explanation=text,
        evidence=(
            Evidence("index", run.index),
            Evidence("value", value, series.unit),
            Evidence("level", level, series.unit),
            # robust σ on the symmetrised scale, where spikes are judged (and ranked); for
            # tied residuals, σ of a normal reading as rare (SpikeRun.size)
            Evidence("size_sd", run.size),
            Evidence("spikes", run.count, "count"),
            Evidence("readings", run.stop - run.start, "count"),
        ),
        detector=CHECK,
    )


def _stamp(when: datetime) -> str:
    """``2024-05-01 09:02 UTC``, with the seconds only when there are some."""
    return when.strftime("%Y-%m-%d %H:%M:%S" if when.second else "%Y-%m-%d %H:%M") + " UTC"


def _spikes_near(result: ChangePoints, point: ChangePoint) -> int:
    """Spikes in the two segments either side of ``point`` (kept in the data, not clipped).
    A level and a slope point may share a reading (a crash where the growth changes)."""
    bounds = sorted({0, *result.indices, result.n})
    i = bounds.index(point.index)
    lo, hi = bounds[i - 1], bounds[i + 1]
    return sum(lo <= s < hi for s in result.spikes)


def _evidence(point: ChangePoint, change: float, unit: str, spikes: int) -> tuple[Evidence, ...]:
    rate = "fraction" if point.scale == "log" else unit  # on the log scale, a growth rate
    slopes = (
        (
            Evidence("slope_before", point.slope_before[0], rate),
            Evidence("slope_after", point.slope_after[0], rate),
        )
        if point.kind == "slope"
        else ()
    )
    return (
        Evidence("index", point.index),
        Evidence("kind", point.kind),
        Evidence("scale", point.scale),
        *slopes,
        Evidence("mean_before", point.mean_before[0], unit),
        Evidence("mean_after", point.mean_after[0], unit),
        Evidence("spread_before", point.spread_before[0], unit),
        Evidence("spread_after", point.spread_after[0], unit),
        Evidence("relative_change", change),
        Evidence("shift", point.shift[0], unit),
        Evidence("effect_sd", point.effect),
        Evidence("statistic", point.statistic),
        Evidence("critical_value", point.critical_value),
        Evidence("p_value", point.p_value),
        Evidence("alpha", point.alpha),
        Evidence("phi", point.phi),
        Evidence("phi_residual", point.phi_residual),
        Evidence("level", point.level),
        Evidence("segment_length", point.stop - point.start, "count"),
        Evidence("strength", point.strength),
        Evidence("spikes_nearby", spikes, "count"),
    )
