"""Spikes kept as data (step 7 of docs/changepoints.md): the runs of outsized readings about the
levels found, sized against the bulk of the residuals or, where most readings are tied, against
the tail of the untied ones; and the effect of a shift in units of the residuals' spread."""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.typing import NDArray

from perfsleuth.changepoints.kernels.results import SpikeRun
from perfsleuth.changepoints.kernels.statistic import (
    _LAMBDA_MAX,
    _LAMBDA_MIN,
    _SYMMETRISE_FIT_POINTS,
    _means,
    _segment_medians,
    _yeojohnson,
    _yeojohnson_lambda,
)
from perfsleuth.stats import robust as robust_mod

FloatArray = NDArray[np.float64]
_SPIKE_K = 5.0  # a spike: this many robust σ from the model, on the symmetrised scale


def _spikes(
    resid: FloatArray, bounds: list[int], min_size: int
) -> tuple[tuple[int, ...], tuple[SpikeRun, ...]]:
    """Observations more than ``_SPIKE_K`` robust σ from the model in some column, each judged
    against the noise of its own segment (:func:`_spike_sizes`), and the same grouped into runs
    (none more than ``min_size`` from the next), largest first."""
    size = np.zeros(resid.shape[0])
    for j in range(resid.shape[1]):
        size = np.maximum(size, _spike_sizes(resid[:, j], bounds))
    spikes = np.flatnonzero(size > _SPIKE_K)
    runs = []
    for run in np.split(spikes, np.flatnonzero(np.diff(spikes) > min_size) + 1):
        if run.size:
            peak = int(run[np.argmax(size[run])])
            runs.append(SpikeRun(int(run[0]), int(run[-1]) + 1, peak, float(size[peak]), run.size))
    runs.sort(key=lambda r: (-r.size, r.index))
    return tuple(int(i) for i in spikes), tuple(runs)


_SPIKE_OWN_SCALE = 25  # readings a segment needs to be judged on a spread of its own


def _spike_sizes(column: FloatArray, bounds: list[int]) -> FloatArray:
    """Each residual's distance from the model in robust σ of its own segment's noise: a busier
    service is noisier, and judged on one scale for the whole series the ordinary tail of its
    noisier segments became "spikes" (the demo's M/M/1 services after their load rose showed 7).
    Each segment's residuals are first put in units of its own spread (median absolute
    deviation about its median, which spikes up to half the segment do not move), then all
    are judged on one bulk-symmetrised scale: the shape of the noise is fitted on the whole
    series, not per segment, whose spikes may outnumber the 5% tails left out of a fit (5 in 51
    readings); spikes making some 10% of the whole series still do (docs/changepoints.md, Not
    done). A segment shorter than ``_SPIKE_OWN_SCALE`` keeps the whole series' spread: its MAD
    would err by 23% or more (≈ 1.17/√n)."""
    whole, centre = robust_mod.robust_scale_and_median(column)
    z = column - centre
    for a, b in itertools.pairwise(bounds):
        if b - a >= _SPIKE_OWN_SCALE:
            part = column[a:b]
            spread, middle = robust_mod.robust_scale_and_median(part)
            z[a:b] = (part - middle) * (whole / spread if spread > 0 else 1.0)
    return _scaled_distance(z)


def _scaled_distance(column: FloatArray) -> FloatArray:
    """Each residual's size in noise σ (:func:`_bulk_distance`); where most residuals are one
    value, how rare each is under its own tail (:func:`_tied_tail_distance`).

    A value held by a quarter to a half of the readings is either a point mass beside the
    noise (:func:`_point_mass`: a gauge that holds 3.0, an idle floor), left out of σ — counted
    in, it shrank the MAD by a third or more, and a gauge at 3.0 in 30% / 45% of readings,
    N(3, 1) otherwise, showed a false spike in .72 / .99 of series — or the mode of a lattice
    (counts of a few events), which stays in σ: leaving it out inflated σ (a burst of +19 in
    100 Poisson counts at λ = 3 found in .72 of series, not .90). On such a lattice the bulk's
    λ is fitted on a handful of values and swings between samples (.08–.74 for one Poisson;
    a log-like λ made 101 events 2.9 σ), while its tail fit calls a busy state's readings in
    the upper tail ordinary: a reading is a spike where either calls it one."""
    held = _most_held(column)
    if held is None or 4 * held[1] < column.size:
        return _bulk_distance(column)
    value, count = held
    if 2 * count >= column.size:
        return _tied_tail_distance(column - value)
    if _point_mass(column, value, count):
        return _bulk_distance(column, noise=column != value)
    return np.maximum(_bulk_distance(column), _tied_tail_distance(column - value))


def _bulk_distance(column: FloatArray, noise: NDArray[np.bool_] | None = None) -> FloatArray:
    """|r| / robust σ of r, r the residuals on their bulk-symmetrised scale about its median,
    σ from the readings ``noise`` marks (all by default)."""
    r = _bulk_symmetrised(column)
    r -= robust_mod.median(r)
    sigma = robust_mod.robust_scale(r if noise is None else r[noise])
    return np.abs(r) / sigma if sigma > 0 else np.zeros_like(r)


def _most_held(column: FloatArray) -> tuple[float, int] | None:
    """The value ``column`` holds most often among those at its quartiles (the smallest of
    equals), and how often, unless it holds nothing else. Any value held by a quarter of the
    readings or more is at a quartile."""
    n = column.size
    if n == 0:
        return None
    at = sorted({round(i * (n - 1) / 4) for i in range(5)})
    values = sorted({float(v) for v in robust_mod.order_statistics(column, at)})
    counts = [int(np.count_nonzero(column == v)) for v in values]
    k = int(np.argmax(counts))
    return (values[k], counts[k]) if counts[k] < n else None


def _point_mass(column: FloatArray, value: float, count: int) -> bool:
    """Whether ``value``, held ``count`` times, holds more than twice as many readings as any
    other value: a point mass beside the noise, not the mode of a lattice (Poisson and
    geometric counts reach that ratio only where their mode holds half the readings)."""
    _, others = np.unique(column[column != value], return_counts=True)
    return 2 * int(others.max()) < count


def _pickands_shape(low: float, middle: float, high: float) -> float:
    """A tail's shape ξ from three of its quantiles, each at half the survival of the one
    before (Pickands 1975), between 0 (exponential) and 1: heavier than exponential where
    the second gap is the wider."""
    if high <= middle or middle <= low:
        return 0.0
    return min(max(math.log2((high - middle) / (middle - low)), 0.0), 1.0)


_LOG_P_FLOOR = -1e300  # a tail probability's log is never below this: sizes stay finite


def _tied_tail_distance(centred: FloatArray) -> FloatArray:
    """Each residual's rarity, as the standard normal quantile of its tail probability, where
    at least half the residuals are 0 (counts of rare events, an idle queue, a gauge that holds
    a value), or a quarter are and 0 is a lattice's mode (:func:`_scaled_distance`). There
    the symmetrising fit has no shape to fit, or a fragile one: λ fitted on a lattice of 0s, 1s
    and 2s reached −1, whose bounded scale set a burst of 100 events next to 2; and the
    typical move alone calls an idle queue's ordinary tail "spikes" (lengths of 8–10 against a
    move of 1).

    Each side is judged against a tail fitted to its own distances d from that value: P(|r| ≥
    d) = p·S(d), p the share of readings on that side. Where the distances spread (d₀ < median
    < upper quartile, d₀ the smallest), S is a generalised Pareto survival above their median
    whose shape is the heavier of Pickands' from d₀, the median and the upper quartile and from
    the median, the upper quartile and the 7/8 quantile: a mostly idle disk's bursts of writes
    spanning decades, or of lognormal size, are their own ordinary tail (the first alone
    showed "spikes" in .26 of series of lognormal bursts). On a lattice, S is geometric, with
    the share beyond the first step one step (d₀, a count's unit) along, but never rarer at the
    distances' 90th percentile than they are there (a gauge at 0.066 that often reads 0.068
    and 0.134 has steps of 0.002 and 0.068). Past that percentile it falls at the hazard the
    readings show there where at least 10 show it and it is the steeper: a Poisson's hazard
    grows along its tail (a burst of +10 in 600 counts at λ = .5 found in .44 → .62 of
    series), an overdispersed count's does not. Quantiles fit S, not the mean, so the readings
    judged do not choose it."""
    from scipy.special import ndtri_exp  # heavy import; only tied residuals need it

    size = np.zeros_like(centred)
    # distances spanning 600 decades overflow to an infinite rarity, which the floor bounds
    with np.errstate(over="ignore", invalid="ignore"):
        for side in (centred, -centred):
            beyond = side > 0
            if not beyond.any():
                continue
            dist = side[beyond]
            log_p = math.log(dist.size / centred.size) + _log_survival(dist)
            size[beyond] = -ndtri_exp(np.maximum(log_p, _LOG_P_FLOOR))
    return np.maximum(size, 0.0)


_HAZARD_READINGS = 10  # readings past a lattice's 90th percentile that show its hazard there


def _log_survival(dist: FloatArray) -> FloatArray:
    """log P(D ≥ d) of each of the positive distances ``dist`` under the tail fitted to them
    (:func:`_tied_tail_distance`): a burst of 100 events is e^-300 rare."""
    first = float(dist.min())
    quantiles = np.quantile(dist, [0.5, 0.75, 0.875, 0.9], method="lower")
    median, upper, top, ninetieth = (float(q) for q in quantiles)
    if first < median < upper:  # generalised Pareto above the median
        shape = max(_pickands_shape(first, median, upper), _pickands_shape(median, upper, top))
        above = np.maximum(dist - median, 0.0)
        if shape > 0:
            sigma = shape * (upper - median) / (2.0**shape - 1.0)
            log_tail: FloatArray = math.log(0.5) - np.log1p(shape * above / sigma) / shape
            return log_tail
        return math.log(0.5) - math.log(2.0) * above / (upper - median)
    along = dist - first  # a lattice: geometric, one step (= first) per unit
    rate = -math.log(max(int(np.count_nonzero(along > 0)), 1) / dist.size) / first
    if ninetieth <= first:
        return np.where(along > 0, -rate * along, 0.0)
    at = int(np.count_nonzero(dist >= ninetieth))
    rate = min(rate, -math.log(at / dist.size) / (ninetieth - first))
    log_tail = np.where(along > 0, -rate * along, 0.0)
    far = dist > ninetieth
    beyond = int(np.count_nonzero(far))
    if beyond >= _HAZARD_READINGS:  # past the 90th percentile, the hazard seen there
        hazard = -math.log(beyond / at) / (float(dist[far].min()) - ninetieth)
        if hazard > rate:
            log_tail[far] = -rate * (ninetieth - first) - hazard * (dist[far] - ninetieth)
    return log_tail


_SPIKE_FIT_TAIL = 0.05  # share of each tail of the residuals left out of the spike scale's fit


def _bulk_symmetrised(column: FloatArray) -> FloatArray:
    """The Yeo–Johnson transform of ``column`` with λ fitted (and the unit taken) on its central
    90% only: the values to be judged as spikes do not choose the scale that judges them. Fitted
    on everything, three readings of +20–40 σ among 300 Gaussian ones pulled λ to −1, whose
    ceiling squeezed them together: a −2.8 σ reading became the largest "spike" and the +20 σ
    one none; lognormal noise with two readings ×20 had no spike at all. With 1% of each tail
    left out, four spikes in 120 readings still chose λ; with 10%, the lognormal's own tail
    began to count as spikes."""
    centred = column - robust_mod.median(column)  # (np.median's value, faster)
    lo, hi = robust_mod.quantile(centred, [_SPIKE_FIT_TAIL, 1.0 - _SPIKE_FIT_TAIL])
    bulk = centred[(centred >= lo) & (centred <= hi)]
    unit = float(np.std(bulk)) or float(np.std(centred))
    if unit <= 0.0 or not math.isfinite(unit):
        return centred  # constant
    step = max(1, bulk.size // _SYMMETRISE_FIT_POINTS)
    lam = min(max(_yeojohnson_lambda(bulk[::step] / unit), _LAMBDA_MIN), _LAMBDA_MAX)
    return _yeojohnson(centred / unit, lam)


def _residual_scale(level: FloatArray, bounds: list[int]) -> FloatArray:
    """Per-column robust σ of the residuals about the segment means — or, where half of them
    or more are one value (a noise-free staircase, a saturated gauge), about the segment
    medians: a spike moves its segment's mean, and with it every residual there, which then
    were the "noise" of the readings that move (a reading of 8 on a noise-free staircase of
    98 readings made its steps .05–.3 σ, and the effect floor dropped them)."""
    if level.shape[0] == 0:
        return np.zeros(level.shape[1])
    resid = level - np.repeat(_means(level, bounds), np.diff(bounds), axis=0)  # bounds: 0 … n
    scales = []
    for j in range(level.shape[1]):
        scale, tied = robust_mod.robust_scale_tied(resid[:, j])
        if tied:
            medians = _segment_medians(level[:, j], bounds)
            scale = robust_mod.robust_scale(level[:, j] - np.repeat(medians, np.diff(bounds)))
        scales.append(scale)
    return np.array(scales)


def _effect(before: tuple[float, ...], after: tuple[float, ...], sigma: FloatArray) -> float:
    """Largest shift over the columns, in noise standard deviations."""
    shift = np.abs(np.subtract(after, before))
    with np.errstate(divide="ignore", invalid="ignore"):
        size = np.where(
            sigma > 0, shift / np.where(sigma > 0, sigma, 1.0), np.where(shift > 0, np.inf, 0.0)
        )
    return float(size.max())
