"""Ramp and saw-tooth kernels: numpy arrays in, frozen dataclasses out (no pandas, no I/O).

Kaminski found "no good ramp detector" (every formula he tried was "mired in complexity") and
fell back to thresholds. This is the statistical one DESIGN §2.4 asks for:

* **Trend**: the Theil–Sen slope (median of pairwise slopes; robust to the bumps of a bumpy
  ramp and to outliers) with a one-sided Mann–Kendall test after trend-free pre-whitening
  (see :func:`trend`): business cycles make neighbouring periods alike, and the plain test
  reads that as a trend.
* **Ramp**: a significant rising trend lasting at least ``min_duration`` periods whose total
  rise (slope × span) is at least ``min_growth`` × the starting level and ``min_growth_bytes``:
  significance without an effect-size floor flags every slowly warming cache.
  Bumps (periods of negative slope) are tolerated: only the trend over the span counts.
* **Saw-tooth**: ramps that reset. A *reset* is a fall of at least ``reset_drop`` of the level
  within one period; a *tooth* is the stretch before a reset when it lasts at least
  ``min_tooth_periods``, rises by ``min_growth_bytes`` or more, and rises gradually (no single
  period adds more than ``max_step`` of the tooth's rise — a step up at 8 a.m. and a step down
  at 6 p.m. is business, not a tooth). ``min_teeth`` teeth make a saw-tooth; its period is the
  median spacing of their resets.

Index conventions: ``y[i]`` is the value in period ``i`` (0-based); NaN is a period with no data.
Slopes are in units per period.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import norm

__all__ = ["Ramp", "SawTooth", "Trend", "find_ramp", "find_saw_tooth", "trend"]

_MAX_POINTS = 1500  # pairwise slopes are O(n²); longer series are thinned evenly


@dataclass(frozen=True, slots=True)
class Trend:
    """Theil–Sen slope and one-sided Mann–Kendall test of a series."""

    slope: float
    intercept: float
    z: float
    p_value: float
    n: int
    rho: float


@dataclass(frozen=True, slots=True)
class Ramp:
    """A significant, sustained rise from period ``start`` to period ``stop - 1``."""

    start: int
    stop: int
    trend: Trend
    level_start: float
    level_end: float
    rise: float


@dataclass(frozen=True, slots=True)
class SawTooth:
    """Ramps that reset: ``resets`` are the periods where the level fell back."""

    resets: tuple[int, ...]
    period: float
    """Median length of a tooth, in periods (from the reset before it to its own)."""
    regularity: float
    """Coefficient of variation of the tooth lengths (0 = perfectly periodic; NaN with one)."""
    peak: float
    """Median of the teeth's highest levels."""
    rise: float
    """Median rise of a tooth."""


def _mann_kendall(y: NDArray[np.float64]) -> tuple[float, float]:
    """Mann–Kendall S and its variance (with the tie correction) for ``y`` in time order."""
    n = len(y)
    i, j = np.triu_indices(n, k=1)
    s = float(np.sign(y[j] - y[i]).sum())
    _, counts = np.unique(y, return_counts=True)
    ties = float((counts * (counts - 1) * (2 * counts + 5)).sum())
    return s, (n * (n - 1) * (2 * n + 5) - ties) / 18.0


def trend(x: NDArray[np.float64], y: NDArray[np.float64]) -> Trend:
    """Theil–Sen slope of ``y`` on ``x`` and a trend-free pre-whitened Mann–Kendall test.

    Trend-free pre-whitening (Yue, Pilon, Phinney & Cavadias 2002): remove the Theil–Sen trend,
    estimate the lag-1 autocorrelation ρ of what is left, whiten it (``r_t − ρ r_{t−1}``), put
    the trend back and test that. Daily cycles in memory make neighbouring periods alike, which
    makes the plain test call nearly any wiggle a trend; whitening removes that without eating
    the trend itself (as inflating the variance by (1 + ρ)/(1 − ρ) would for smooth ramps).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    if n < 4:
        return Trend(0.0, float(y.mean()) if n else 0.0, 0.0, 1.0, n, 0.0)
    if n > _MAX_POINTS:
        keep = np.linspace(0, n - 1, _MAX_POINTS).round().astype(np.intp)
        x, y, n = x[keep], y[keep], _MAX_POINTS
    i, j = np.triu_indices(n, k=1)
    dx = x[j] - x[i]
    dy = y[j] - y[i]
    slope = float(np.median(dy[dx > 0] / dx[dx > 0]))
    intercept = float(np.median(y - slope * x))
    resid = y - (intercept + slope * x)
    rho = 0.0
    if resid.std() > 0:
        rho = float(np.corrcoef(resid[:-1], resid[1:])[0, 1])
        rho = 0.0 if not math.isfinite(rho) else min(max(rho, 0.0), 0.99)
    whitened = resid[1:] - rho * resid[:-1] + slope * x[1:]
    s, var = _mann_kendall(whitened)
    if var <= 0 or s == 0:
        return Trend(slope, intercept, 0.0, 1.0 if s <= 0 else 0.5, n, rho)
    z = (s - math.copysign(1.0, s)) / math.sqrt(var)
    return Trend(slope, intercept, z, float(norm.sf(z)), n, rho)


def _resets(y: NDArray[np.float64], drop: float, floor: float) -> NDArray[np.intp]:
    """Periods where the level fell by ``drop`` from the higher of the two before.

    Two periods back, because a reset inside a period leaves that period at an average of the
    old and new levels; a fall spread over two periods gives one reset (the later one).
    """
    before = np.maximum(y[:-1], np.concatenate([y[:1], y[:-2]]))
    hits = np.flatnonzero((before >= floor) & (y[1:] <= (1.0 - drop) * before)) + 1
    if len(hits) > 1:
        hits = hits[np.append(np.diff(hits) > 1, True)]
    return hits


def _is_tooth(seg: NDArray[np.float64], *, min_len: int, min_rise: float, max_step: float) -> float:
    """The tooth's rise, or 0.0 when ``seg`` (the periods before a reset) is not a gradual ramp.

    The tooth ends at its peak; at most two periods after it (the averaged reset) are allowed.
    """
    if len(seg) == 0:
        return 0.0
    top = int(np.argmax(seg))
    if len(seg) - 1 - top > 2:
        return 0.0
    # ... and starts at its lowest point in the first half (after an averaged reset period)
    bottom = int(np.argmin(seg[: max(1, (top + 1) // 2)]))
    seg = seg[bottom : top + 1]
    if len(seg) < min_len:
        return 0.0
    rise = float(seg[-1] - seg[0])
    if rise < min_rise or rise <= 0:
        return 0.0
    if float(np.diff(seg).max()) > max_step * rise:
        return 0.0
    # rising through the tooth, not a step: the medians of its quarters go up
    quarters = np.array_split(seg, min(4, len(seg)))
    medians = np.array([np.median(q) for q in quarters])
    if not (np.diff(medians) > 0).all():
        return 0.0
    return rise


def find_saw_tooth(
    y: NDArray[np.float64],
    *,
    reset_drop: float,
    min_teeth: int,
    min_tooth_periods: int,
    min_rise: float,
    max_step: float,
) -> SawTooth | None:
    """The saw-tooth in ``y`` (NaN counts as 0: the process was not running), or None."""
    values = np.nan_to_num(np.asarray(y, dtype=np.float64), nan=0.0)
    if len(values) < min_tooth_periods + 1:
        return None
    cuts = _resets(values, reset_drop, min_rise)
    if len(cuts) < min_teeth:
        return None
    teeth: list[int] = []
    lengths: list[int] = []
    rises: list[float] = []
    peaks: list[float] = []
    start = 0
    for cut in cuts:
        rise = _is_tooth(
            values[start:cut], min_len=min_tooth_periods, min_rise=min_rise, max_step=max_step
        )
        if rise > 0:
            teeth.append(int(cut))
            lengths.append(int(cut) - start)
            rises.append(rise)
            peaks.append(float(values[start:cut].max()))
        start = int(cut)
    if len(teeth) < min_teeth:
        return None
    # the teeth's own lengths, not the spacing of the teeth kept: a reset that falls inside a
    # period blurs the tooth around it, and skipping that one must not double the period
    spans = np.asarray(lengths, dtype=np.float64)
    period = float(np.median(spans))
    regularity = float(spans.std() / spans.mean()) if len(spans) > 1 else float("nan")
    return SawTooth(
        resets=tuple(teeth),
        period=period,
        regularity=regularity,
        peak=float(np.median(peaks)),
        rise=float(np.median(rises)),
    )


def find_ramp(
    y: NDArray[np.float64],
    *,
    alpha: float,
    min_periods: int,
    min_growth: float,
    min_growth_bytes: float,
    after: int = 0,
) -> Ramp | None:
    """A significant sustained rise in ``y[after:]`` (NaN = no data), or None."""
    values = np.asarray(y, dtype=np.float64)
    index = np.flatnonzero(np.isfinite(values))
    index = index[index >= after]
    if len(index) < max(6, 3) or index[-1] - index[0] + 1 < min_periods:
        return None
    x = index.astype(np.float64)
    v = values[index]
    fit = trend(x, v)
    if fit.slope <= 0 or fit.p_value >= alpha:
        return None
    span = float(x[-1] - x[0])
    rise = fit.slope * span
    quarter = max(1, len(v) // 4)
    level_start = float(np.median(v[:quarter]))
    if rise < min_growth_bytes or rise < min_growth * max(level_start, 0.0):
        return None
    level_end = float(np.median(v[-quarter:]))
    if level_end <= level_start:  # the slope is a bump, not a rise that held
        return None
    return Ramp(
        start=int(index[0]),
        stop=int(index[-1]) + 1,
        trend=fit,
        level_start=level_start,
        level_end=level_end,
        rise=rise,
    )
