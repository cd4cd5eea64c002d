"""The common slope of the default search (step 6 of docs/changepoints.md): the line that is
removed, the alternation between the level search and the slope refitted inside its segments, the
backward elimination of points under a trend, and the BIC that chooses between descriptions."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from perfsleuth.changepoints.kernels import grid, kinks
from perfsleuth.changepoints.kernels.results import ChangePoint
from perfsleuth.changepoints.kernels.statistic import _TREND_T, _segment_means
from perfsleuth.stats import robust as robust_mod

FloatArray = NDArray[np.float64]
Fit = tuple[FloatArray, int]  # a description's residuals (n × columns) and parameter count


_TREND_MIN_LENGTH = 20  # shorter series: too few points to tell a trend from noise
_MOST_TURNS = 3  # kinks of a broken line that may replace the level points of a flat series
_TREND_ROUNDS = 2  # refits of the common slope; the search settles after one or two
_SETTLED_SHARE = 0.1  # share of the effect floor a refit may tilt the line and be settled
_PRUNE_MAX = 40  # most change points of a trend model checked by backward elimination
_LEAN_T = 1.5  # |t| of the within-segment slope that makes a trend worth trying
# The hidden-step test is a second test of a segment's "no level shift", after the level
# search's: half the level spent on the segment (at the whole level, machine tune
# `pg_trend_latency`, a latency trend that dips and rises again, got a false step at p = .048).
_HIDDEN_STEP_SHARE = 0.5


def _ramp(n: int) -> FloatArray:
    return np.arange(n, dtype=np.float64)


def _detrend(y: FloatArray, slope: FloatArray) -> FloatArray:
    return y - np.outer(_ramp(y.shape[0]), slope)


def _alternate(
    searched: Callable[[FloatArray, list[int]], tuple[list[ChangePoint], Sequence[ChangePoint]]],
    y: FloatArray,
    slope: FloatArray,
    accepted: list[ChangePoint],
    rejected: Sequence[ChangePoint],
    min_effect: float,
) -> tuple[FloatArray, list[ChangePoint], Sequence[ChangePoint]]:
    """Refit the within-segment slope and search again (``searched(slope, points)``: the
    series less the slope, from the points) until the slope settles (:func:`_settled`;
    ``min_effect``: the search's effect floor, in noise σ)."""
    for _ in range(_TREND_ROUNDS):
        refit = _significant_slopes(y, sorted(p.index for p in accepted))
        if _settled(y, slope, refit, accepted, min_effect):
            break
        slope = refit
        accepted, rejected = searched(slope, [p.index for p in accepted])
    return slope, accepted, rejected


def _settled(
    y: FloatArray,
    slope: FloatArray,
    refit: FloatArray,
    accepted: list[ChangePoint],
    min_effect: float,
) -> bool:
    """Whether the refit slope is the slope searched, up to a tilt no reported point could
    feel: the line it removes moves, at the series' ends, by at most _SETTLED_SHARE of the
    effect floor (``min_effect`` noise σ, the σ of the residuals about the points and slope).

    The points found with a slope give a refit a little off it (their positions moved by a
    few readings), and searching that tilt again cost a whole search (10⁶ readings, 50 shifts:
    a tilt of .001 σ, and a third search of .5 s in 3). A slope that appears or vanishes is
    never settled (nor one of noise-free readings, σ 0, unless it is the same)."""
    if np.array_equal(refit, slope):
        return True
    if min_effect <= 0 or not np.all((slope != 0) == (refit != 0)):
        return False
    tilt = np.abs(refit - slope) * (y.shape[0] - 1) / 2
    resid, _ = _trend_fit(y, slope, accepted)
    sigma = np.array([robust_mod.robust_scale(resid[:, j]) for j in range(y.shape[1])])
    return bool(np.all(tilt <= _SETTLED_SHARE * min_effect * sigma))


def _prune_with_trend(
    y: FloatArray, slope: FloatArray, accepted: list[ChangePoint], resolution: FloatArray
) -> tuple[FloatArray, list[ChangePoint], list[ChangePoint]]:
    """Drop change points that BIC does not want once the slope is refitted without them.

    A slope a little off leaves ramps inside the segments, which the search then cuts, and
    the alternation can settle on such a staircase-on-a-trend; so can a search with no slope
    at all, when the slope inside its steps is too weak to be removed (a cycle left in the
    residuals inflates its standard error) and the cost of a long side is low. Backward
    elimination removes those cuts one at a time (the one whose removal lowers BIC most, with
    the slope refitted, which must then be significant: the trend takes the cut's place) while
    BIC falls. Only for trend models with few change points (the cost is quadratic in their
    number).
    """
    kept = sorted(accepted, key=lambda p: p.index)
    pruned: list[ChangePoint] = []
    if len(kept) > _PRUNE_MAX:
        return slope, kept, pruned
    start = _trend_fit(y, slope, kept)
    floor = _rounding_floor(y, [start[0]], resolution)
    current = _bic(*start, resolution=floor)
    while kept:
        options = []
        for i in range(len(kept)):
            rest = kept[:i] + kept[i + 1 :]
            refit = _significant_slopes(y, [p.index for p in rest])
            if refit.any():
                options.append((_bic(*_trend_fit(y, refit, rest), resolution=floor), i, refit))
        best, i, refit = min(options, key=lambda o: o[0], default=(math.inf, -1, slope))
        if best >= current:
            break
        current, slope = best, refit
        pruned.append(kept.pop(i))
    return slope, kept, pruned


def _sloped(y: FloatArray, accepted: list[ChangePoint]) -> bool:
    cuts = sorted(p.index for p in accepted)
    return any(abs(robust_mod.within_slope(y[:, j], cuts)[1]) > _LEAN_T for j in range(y.shape[1]))


def _monotone(y: FloatArray, accepted: list[ChangePoint]) -> bool:
    """Whether the segment means of some column only rise or only fall (a staircase: two
    steps at least; one step is a level shift, which a line through it would swallow)."""
    if len(accepted) < 2:
        return False
    bounds = [0, *sorted(p.index for p in accepted), y.shape[0]]
    steps = np.diff([y[a:b].mean(axis=0) for a, b in itertools.pairwise(bounds)], axis=0)
    return bool(np.any(np.all(steps > 0, axis=0) | np.all(steps < 0, axis=0)))


def _trend_fit(
    y: FloatArray, slope: FloatArray, accepted: list[ChangePoint]
) -> tuple[FloatArray, int]:
    """The residuals and parameter count of "segment means + common slopes": each change point
    costs its position and one mean per column, each nonzero slope one parameter."""
    level = _detrend(y, slope)
    resid = level - _segment_means(level, sorted(p.index for p in accepted))
    params = len(accepted) * (y.shape[1] + 1) + int(np.count_nonzero(slope))
    return resid, params


def _rounding_floor(
    y: FloatArray, fits: Sequence[FloatArray], resolution: FloatArray
) -> FloatArray:
    """Per column, the floor on the residual σ of fits of ``y`` compared with ``fits``
    (residuals, n × columns): the values' rounding σ (``resolution``, q/√12) times the share
    of a grid step q their fitted means travel, at most 1.

    A slow quantity recorded on a grid coarser than its noise is an exact staircase: its
    residuals about its steps are 0 (a BIC of −∞), while those of the line it is are the
    rounding error (a rounded line, 1 unit per 10 readings, was 20 level points). The data
    cannot show noise finer than its rounding — but the rounding error is q/√12 only for a
    quantity that moves through the grid: one that stays within a cell is rounded by a
    constant, part of its level, and one that moves a share D of a cell by at most D q/√12.
    Floored at the full q/√12, the real noise of rare-event counts (a rate of .01 a reading,
    σ ≈ .1) was no longer told from a line: a step to 10 times the rate became a trend
    (n = 1,000: found in .47 → .43 of series)."""
    return np.array(
        [
            max(kinks.rounding_share(y[:, j] - resid[:, j], float(resolution[j])) for resid in fits)
            for j in range(y.shape[1])
        ]
    )


def _bic(
    resid: FloatArray,
    params: int,
    independent: float | None = None,
    resolution: FloatArray | None = None,
    bounded: bool = True,
) -> float:
    """Schwarz's criterion of a fit with residuals ``resid`` (n × columns) and ``params``
    parameters. ``independent``: the readings' evidence counted as that many independent ones
    (ν ln(RSS/n) + k ln ν), for persistent noise, whose steps, slopes and bends a count of n
    would take for signal. ``resolution``: per column, a floor on the residual σ (the values'
    rounding, :func:`_rounding_floor`). ``bounded``: gross residuals count at most
    :data:`_GROSS` robust σ (:func:`_bounded`)."""
    n = resid.shape[0]
    finest = np.finfo(float).tiny if resolution is None else n * resolution**2
    if bounded:
        resid = _bounded(resid)
    rss = np.maximum((resid**2).sum(axis=0), np.maximum(finest, np.finfo(float).tiny))
    nu = n if independent is None else independent
    return float(nu * np.log(rss / n).sum() + params * math.log(nu))


_GROSS = 50.0  # robust σ of the residuals beyond which a reading is gross
_GROSS_SAMPLE = 2_000  # evenly spaced residuals the robust σ is measured on


def _bounded(resid: FloatArray) -> FloatArray:
    """``resid`` (n × columns) with each column's residuals held within :data:`_GROSS` robust
    σ of their median, both measured on an evenly spaced sample of ~2,000 (all of a shorter
    series): a reading that far out is a spike (a spike finding) whose square would otherwise
    decide between descriptions. A zero reading first in 100 readings of 1,000 ± 10 with a
    step of +100 at 50 tilted the line through them enough that the line won against the step
    (found in 19 of 40 series; `benchmarks/changepoints_gross_spike.py --zeros`). Residuals
    no further out are returned as they are (the same array).

    The σ is of the residuals that move: readings a description fits exactly (idle zeros, a
    pegged gauge; up to float rounding) show no noise. With them, half a series idle made σ
    a ten-thousandth of the noise's, every residual "gross", and a staircase beat the ramp it
    draws (idle, a ramp, idle again; ``test_breaks.py``)."""
    out = resid
    for j in range(resid.shape[1]):
        r = resid[:, j]
        sample = r[:: max(1, r.size // _GROSS_SAMPLE)]
        centre = robust_mod.median(sample)
        off = np.abs(sample - centre)
        moving = sample[off > grid.float_sigma(float(off.max()))] if off.size else off
        reach = _GROSS * robust_mod.robust_scale(moving) if moving.size else 0.0
        if reach <= 0.0 or (r.min() >= centre - reach and r.max() <= centre + reach):
            continue
        if out is resid:
            out = resid.copy()
        np.clip(r, centre - reach, centre + reach, out=out[:, j])
    return out


def _bic_scores(y: FloatArray, fits: Sequence[Fit], resolution: FloatArray) -> list[float]:
    """Each description's :func:`_bic` as descriptions of ``y`` are compared: at the effective
    count of the most independent one's residuals (:func:`_fit_independent`), every residual
    σ floored at the values' rounding (:func:`_rounding_floor`)."""
    nu = max(_fit_independent(resid) for resid, _ in fits)
    floor = _rounding_floor(y, [resid for resid, _ in fits], resolution)
    return [_bic(resid, params, nu, floor) for resid, params in fits]


def _fit_independent(resid: FloatArray) -> float:
    """How many independent readings a fit's residuals (n × columns) hold: n (1 − φ)/(1 + φ),
    φ their AR(1) φ from first differences (the most persistent column), capped at the memory
    the series can show (:func:`robust_mod.memory_cap`, as for the level test)."""
    n = resid.shape[0]
    phi = max(robust_mod.difference_phi(resid[:, j]) for j in range(resid.shape[1]))
    phi = min(phi, robust_mod.memory_cap(n))
    return float(n * (1.0 - phi) / (1.0 + phi))


def _significant_slopes(y: FloatArray, cuts: list[int]) -> FloatArray:
    """Per column: the slope common to the segments, or 0 where its |t| is at most _TREND_T."""
    fitted = [robust_mod.within_slope(y[:, j], cuts) for j in range(y.shape[1])]
    return np.array([s if abs(t) > _TREND_T else 0.0 for s, t in fitted])
