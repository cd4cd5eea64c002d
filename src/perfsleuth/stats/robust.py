"""Making operational series fit the change-point model: outliers, cycles and trends.

Berry & Hellerstein's test assumes a piecewise-constant mean plus AR(1) noise. Real series also
have isolated spikes (checkpoints, GC pauses), cycles (cron jobs, daily load) and trends (growing
tables, leaks) — the paper's own list of limits (§5). Each breaks the model in a way that binary
segmentation turns into false change points: a spike becomes a short segment, every phase of a
cycle becomes a step, and a trend becomes a staircase. The helpers here remove each structure
*around* the change points, so a level shift survives them:

* :func:`clip_outliers` — winsorises points far from a short running median (a Hampel filter).
  The window is ``2 · min_size + 1``, so a shift lasting at least ``min_size`` observations
  moves the median with it and is kept; a burst shorter than that is clipped.
* :func:`detect_period` / :func:`remove_cycle` — finds a dominant period from the autocorrelation
  of the series less its slow part (an oscillation, repeated at twice the lag) and subtracts the
  median profile per phase, measured against a running median one period wide, so a level shift
  moves the baseline, not the profile. Both measure the cycle about the trend and the levels,
  not about the grand mean.
* :func:`within_slope` — the slope common to all segments (the regression of the series on time
  with one intercept per segment). Given the steps, a staircase of real shifts has no slope
  within its segments, while a staircase cut into a trend has the trend's slope in every one: so
  this tells a trend from shifts, and its t statistic (with an AR(1) variance factor) decides
  whether the trend is real.

All are invariant to shifting and (positively) scaling the series.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "MAX_PERIOD",
    "Cycle",
    "clip_outliers",
    "cycle_level",
    "cycle_share",
    "detect_period",
    "difference_phi",
    "implied_phi",
    "long_run_noise",
    "long_run_scale",
    "median",
    "noise_and_persistence",
    "order_statistics",
    "persistence",
    "quantile",
    "remove_cycle",
    "robust_scale",
    "robust_scale_and_median",
    "robust_scale_bound",
    "spread_level_slope",
    "within_slope",
]

FloatArray = NDArray[np.float64]

_MAD = 1.4826  # MAD → σ for a normal distribution
_WINSOR = 3.0  # moves beyond this many typical moves are capped there
_FEWEST_DIFFERENCES = 10  # fewer: no φ is estimated (0)
_LONGEST_MEMORY = 16  # correlation length (observations) allowed to the AR(1) scale before blocks
_SHORTEST_MEMORY = 2  # ... and always, however short the series (φ ≤ .5)
_PHI_SE = 2.4  # √n × difference_phi's standard error on independent noise (2.36-2.61, n 12-1000)
_PHI_SHOWN_SE = 2.0  # standard errors by which that φ must exceed 0 to count in the AR(1) scale

MAX_PERIOD = 20_000
"""Longest cycle looked for, in observations: two weeks of one-minute samples."""


_ROUNDING = 1e-12  # of the largest deviation: finer ones are rounding, not movement
_MOVING_SHARE = 0.1  # readings that must move for their moves to be noise, not outliers


def robust_scale(r: FloatArray) -> float:
    """σ from the median absolute deviation about the median.

    Gauges that often repeat a value exactly (a saturated CPU, an idle queue) have a MAD of 0
    while they still move elsewhere; then the MAD of the deviations that are not 0 is used —
    where at least a tenth of the readings move. Fewer are outliers beside noise-free
    readings, and σ is 0, as for a constant series: one reading of 8 on a noise-free
    staircase of 98 readings moved the 5 readings of its segment, whose MAD then made every
    step a fraction of "σ", and the effect floor dropped them all. Deviations a trillion
    times smaller than the largest are rounding left by subtracting means, so a MAD of them
    is a MAD of 0: multiplied by 3 instead of 1 (whose segment means came out exact), that
    staircase had its rounding for σ and kept its steps. Of 1,600 random noise-free
    staircases, each also multiplied by .001, .5, 3 and 1,000, 52 of the 6,400 rescaled
    searches gave other points before, none now (a share of a twentieth left 11;
    ``benchmarks/changepoints_flat_scale.py``).
    """
    return robust_scale_tied(r)[0]


def robust_scale_bound(sum_of_squares: float, n: int) -> float:
    """An upper bound on :func:`robust_scale` of ``n`` values whose squares sum to
    ``sum_of_squares``, in O(1): a gate that passes below it need not select two medians.

    The median is within one standard deviation of the mean, so the squared deviations from
    it sum to at most twice the squares. At least half the deviations are at least their
    median, the MAD (MAD² ≤ 4 Σ r² / n); where most values are tied, the MAD is the median of
    the moving deviations, at least a tenth of them (:data:`_MOVING_SHARE`: MAD² ≤ 40 Σ r² / n).
    A millionth more covers the rounding of the sums."""
    if n <= 0:
        return 0.0
    return _MAD * math.sqrt(4.0 / _MOVING_SHARE * max(sum_of_squares, 0.0) / n) * (1.0 + 1e-6)


def robust_scale_tied(r: FloatArray) -> tuple[float, bool]:
    """:func:`robust_scale`, and whether half the values or more are one value (up to
    rounding), so that σ came from the others."""
    scale, tied, _ = _scale_tied_median(r)
    return scale, tied


def robust_scale_and_median(r: FloatArray) -> tuple[float, float]:
    """(:func:`robust_scale`, :func:`median`) of ``r``: the scale's deviations are about the
    median, so one selection serves both."""
    scale, _, centre = _scale_tied_median(r)
    return scale, centre


def _scale_tied_median(r: FloatArray) -> tuple[float, bool, float]:
    """(:func:`robust_scale_tied`, the median of ``r``)."""
    # one scratch copy: the median reorders it, and the deviations, a multiset, do not care
    work = np.array(r, dtype=np.float64)
    centre, top = _median_split(work)
    dev = _deviations_in_place(work, centre, top)
    mad, largest = _median_split(dev)  # (reorders dev: the values below do not depend on order)
    if largest is None:
        largest = float(dev.max()) if dev.size else 0.0
        lower = None
    else:  # dev is split at its lower middle rank: its largest and that rank's value are known
        lower = float(dev[(dev.size - 1) // 2])
    rounding = _ROUNDING * largest
    # half or more tied: counted, for with exactly half the median of an even count is half
    # the smallest other deviation (idle for half a series: its noise σ 1/2000 of the real);
    # half or more are at most the rounding exactly when the lower middle order statistic is
    # (a count and a max of 10⁶ deviations were .65 of the 5.2 ms)
    if lower is None:
        tied = bool(mad <= rounding or 2 * np.count_nonzero(dev <= rounding) >= dev.size)
    else:
        tied = mad <= rounding or lower <= rounding
    if tied:
        moving = dev[dev > rounding]
        mad = float(np.median(moving)) if moving.size >= _MOVING_SHARE * dev.size else 0.0
    return mad * _MAD, tied, centre


def running_median(x: FloatArray, window: int) -> FloatArray:
    """The median of each reading's ``window`` neighbours (the ends' own values repeated)."""
    from scipy.ndimage import median_filter  # heavy import; only robust searches need it

    out: FloatArray = median_filter(x, size=window, mode="nearest")
    return out


def clip_outliers(x: FloatArray, *, window: int, k: float = 5.0) -> tuple[FloatArray, int]:
    """Winsorise points more than ``k`` σ from a running median of ``window`` points.

    σ is the robust scale of the residuals about the running median. Returns the clipped copy
    and how many points were clipped.
    """
    if x.size < 3:
        return x.copy(), 0
    level = running_median(x, window)
    r = x - level
    sigma = robust_scale(r)
    if sigma == 0:
        return x.copy(), 0
    bound = k * sigma
    clipped = np.clip(r, -bound, bound)
    count = int(np.count_nonzero(clipped != r))
    return level + clipped, count


def _autocorrelation(x: FloatArray, max_lag: int) -> FloatArray:
    from scipy import fft  # heavy import; only robust searches need it

    xc = x - x.mean()
    size = fft.next_fast_len(x.size + max_lag, real=True)  # enough padding for no wrap-around
    f = fft.rfft(xc, n=size)
    acov = fft.irfft(f * np.conj(f), n=size)[: max_lag + 1]
    acf: FloatArray = acov / acov[0] if acov[0] > 0 else np.zeros(max_lag + 1)
    return acf


def detect_period(
    x: FloatArray, *, min_period: int = 4, cycles: int = 3, strength: float = 0.3
) -> int | None:
    """The dominant period of ``x`` in observations, or ``None``.

    A period P qualifies when the series oscillates at it: the autocorrelation at P exceeds the
    mean of those half a period either side (P/2 and 3P/2) by ``strength`` and by four standard
    errors of an autocorrelation, the same holds around 2P (by half as much), and the series
    holds at least ``cycles`` periods (P ≤ :data:`MAX_PERIOD`). Comparing with both sides
    cancels the slow, nearly linear decline that a level shift or a trend adds to every lag, so
    neither qualifies, and the peak is not pulled towards shorter lags.

    The autocorrelations are those of the series less its slow part, a straight line fitted
    over several periods (:func:`_cycle_residual`): the share of the variance a cycle can
    explain is that about the trend and the levels, not about the grand mean. (About the grand
    mean, Mauna Loa's CO2, whose yearly cycle is ±3 ppm on a rise of 50, had no period, nor had
    the speed benchmark's cycle of ±1.5 σ on its shifts: a contrast of .024–.325.) Periods are
    looked for an octave at a time, shortest first, each on means of bins an eighth of its
    shortest period or less, about a slow part four of its longest periods wide; the standard
    error is Bartlett's, counting the residual's own autocorrelations up to half the period
    (persistent noise oscillates by chance). The lag is then refined at full resolution to the
    neighbour whose harmonics oscillate most, where the period must qualify as well. Each octave
    costs O(m log m) for m bins: O(n log n) in all.

    Where no octave has a period, they are looked at again about a slow part that follows level
    shifts, a running median two of the octave's longest periods wide: about a line over four,
    shifts every few periods are most of the variation (a daily cycle of ±2 σ among 12 shifts
    in three weeks of five-minute readings: found in 6 of 20 series, and in 20 about the
    median). That residual is high-passed, and persistent noise oscillates in it near the
    window (exponential growth in AR(1) noise, 100 readings: a period in 4 of 200 series), so
    there the period must repeat at 2P by the whole bar, not half of it (none of 200).
    """
    n = x.size
    max_period = min(n // cycles, MAX_PERIOD)
    if max_period < min_period:
        return None
    centre = median(x)
    sums = _centred_sums(x, centre=centre)
    for steps in (False, True):
        lo = max(min_period, 2)
        while lo <= max_period:
            hi = min(2 * lo - 1, max_period)
            found = _period_in_octave(x, (centre, sums), lo, hi, strength, steps)
            if found is not None:
                return found
            lo *= 2
    return None


_CONTRAST_BINS_PER_PERIOD = 64  # bins of 1/8, the period search's, measured a 17 at 16


def cycle_contrast(x: FloatArray, period: int) -> float:
    """How strongly ``x`` oscillates at ``period`` readings: :func:`detect_period`'s contrast
    (the autocorrelation at the period less the mean of those half a period either side),
    about a slow part fitted over four periods, on means of bins of at most 1/64 of the
    period (the lag then known to 1/128 of it; O(n) for the bins, then O(m log m) for m ≈
    64n/P of them: a period of 288 in 10⁶ readings, 22 ms where full resolution took 92)."""
    b = max(1, period // _CONTRAST_BINS_PER_PERIOD)
    m = x.size // b
    means = x[: m * b].reshape(m, b).mean(axis=1)
    lag = max(2, round(period / b))
    r = _cycle_residual(means, _SLOW_PERIODS * lag + 1)
    half = lag // 2
    if r.size <= lag + half:
        return 0.0
    acf = _autocorrelation(r, lag + half)
    return float(_contrast(acf, np.array([lag]), half)[0])


_BINS_PER_PERIOD = 8  # an octave's cycles are looked for on means of at most 1/8 of its shortest
_SLOW_PERIODS = 4  # the slow part is fitted over this many of the octave's longest periods


def _period_in_octave(
    x: FloatArray,
    centred: tuple[float, FloatArray],
    lo: int,
    hi: int,
    strength: float,
    steps: bool,
) -> int | None:
    """:func:`detect_period` among the periods ``lo`` … ``hi`` (readings), ``centred`` the
    median of ``x`` and the prefix sums of ``x`` less it (:func:`_centred_sums`), the slow
    part following steps or not (:func:`_cycle_residual`)."""
    sums = centred[1]
    b = max(1, lo // _BINS_PER_PERIOD)
    m = (sums.size - 1) // b
    means = (sums[b : m * b + 1 : b] - sums[: m * b : b]) / b
    width = _SLOW_PERIODS * hi // b + 1  # several of the octave's longest periods (in bins)
    r = _cycle_residual(means, width, steps)
    first, last = -(-lo // b), hi // b
    if r.size < 2:
        return None
    acf = _autocorrelation(r, min(r.size - 1, 3 * last))
    # one lag either side of the octave too: a period is a peak of the contrast, and one at the
    # octave's edge that still rises beyond it belongs to the next octave (a weekly cycle of
    # 168 readings showed at 159, the top of the octave below, and was removed there)
    lags = np.arange(max(first - 1, 1), last + 2)
    lags = lags[lags + lags // 2 < acf.size]
    if lags.size < 2:
        return None
    around = _contrast(acf, lags)
    peak = np.ones(lags.size, dtype=bool)
    peak[1:] &= around[1:] >= around[:-1]
    peak[:-1] &= around[:-1] >= around[1:]
    inside = (lags >= first) & (lags <= last)
    periods, score, peak = lags[inside], around[inside], peak[inside]
    if not periods.size:
        return None
    for i in np.argsort(-score, kind="stable")[:5]:
        if not peak[i] or score[i] < strength:
            continue
        p = int(periods[i])
        # a true period repeats: also oscillate at 2P (when the series is long enough to see
        # it), known to a lag either way as P is to half a lag (a short burst a day is a
        # narrow peak: in bins of 20 readings, 2 × 14 missed a period of 14.4)
        doubled = np.arange(2 * p - 1, 2 * p + 2)
        again = (
            _contrast(acf, doubled, p // 2).max() / (1.0 if steps else 0.5)
            if doubled[-1] + p // 2 < acf.size
            else math.inf
        )
        if not any(min(score[i], again) >= bar for bar in _bars(r, acf, p, strength)):
            continue
        if b == 1:
            return _refine(acf, p, 2)
        # at full resolution (over up to 64 cycles), where the cycle is removed, it must
        # qualify as well: a burst every 280 readings among values on a lattice of .002
        # (NAB ec2_cpu_utilization_c6585a) shows in means of 80 readings, not in the readings
        full = _cycle_residual(x, width * b, steps, None if steps else centred)
        fine = _autocorrelation(full, min(full.size - 1, 64 * (hi + b)))
        period = _refine(fine, p * b, b)
        contrast = _contrast(fine, np.array([period]))[0]
        if any(contrast >= bar for bar in _bars(full, fine, period, strength)):
            return _best_fold(full, period, _FOLD_REACH)  # whether: above; which: here
    return None


def _bars(r: FloatArray, acf: FloatArray, p: int, strength: float) -> Iterator[float]:
    """The contrasts a period of ``p`` readings of ``r`` (its autocorrelations ``acf``) may
    need, the second made only when the first is not met: ``strength``, and four of
    Bartlett's standard errors of an autocorrelation of m readings whose dependence is
    shorter than half the period, (1 + 2 Σ_{k<P/2} ρ_k²)/m — ρ_k the noise's, measured on
    ``r`` and on ``r`` less its mean at each phase of ``p``.

    On ``r`` alone a cycle's own shape counts as the noise's correlation (a weekend's two
    low days, a sine's slope) and raises the bar over the contrast: four weeks of hourly
    readings, weekends 2 σ lower, had their week in 5 of 10 series, and three years of
    monthly readings their yearly sine of 2 σ in 2 of 20 (`benchmarks/changepoints_cycles.py`:
    sines of 12 readings, 2 σ, in 40 readings .08–.26 of series, now .64–.92). Less its phase
    means, what a strong cycle leaves — a level shift's remnant — no longer shares ``r``'s
    variance with it, and its correlation counts in full (a daily and a weekly cycle in
    eight weeks with a shift lost the week): so either bar will do. Of noise alone both
    measure about the same; persistent noise with few cycles has its wander in the phase
    means, and a false period in up to .02 of series of φ .8–.95 where up to .01 had one."""

    def bar(rho: FloatArray) -> float:
        squares = float(np.sum(rho[1 : max(p // 2, 1)] ** 2))  # Σ_{0<k<P/2} ρ_k²
        return max(strength, 4.0 * math.sqrt((1.0 + 2.0 * squares) / r.size))

    yield bar(acf)
    phase = np.arange(r.size) % p
    profile = np.bincount(phase, weights=r, minlength=p) / np.bincount(phase, minlength=p)
    yield bar(_autocorrelation(r - profile[phase], max(p // 2 - 1, 0)))


def _contrast(acf: FloatArray, lags: NDArray[np.int64], half: int | None = None) -> FloatArray:
    """The autocorrelation at each lag less the mean of those half a period (``half``, or half
    the lag) either side."""
    h = lags // 2 if half is None else half
    out: FloatArray = acf[lags] - 0.5 * (acf[lags - h] + acf[lags + h])
    return out


def _cycle_residual(
    x: FloatArray,
    width: int,
    steps: bool = False,
    centred: tuple[float, FloatArray] | None = None,
) -> FloatArray:
    """``x`` less its slow part, in units of its local spread, with spikes winsorised at 5
    robust σ: the variation a cycle shorter than ``width`` readings can explain, which a trend,
    level shifts and a few outsized readings do not dominate.

    The slow part is the straight line fitted to the ``width`` readings around each one (fewer
    at the ends): the running mean inside, where the window is centred, and no bias on a trend
    at the ends. A window several periods wide leaves the cycle nearly whole (a running mean
    of W keeps 1 − sinc(W/P) of a sine of period P: .95–1.05 for W ≥ 4P) and does not shape
    the noise into one: a window of about one period turns persistent noise into an
    oscillation near it (AR(1) at φ = .8, 1,000 readings: a period in .32 of series). The
    spread is the root mean square over the same window: the noise of a series growing
    exponentially grows with it, and its last stretch would count for the whole (a period in
    .065 of such series of 1,000 readings, against none).

    With ``steps``, the line is fitted to ``x`` less its running median over half the window
    (:func:`_level`), which follows level shifts a period or two apart. ``centred``: without
    ``steps``, the median of ``x`` and the prefix sums of ``x`` less it, where the caller has
    them (:func:`detect_period`'s, at full resolution: a median and a cumulative sum of n
    readings fewer; the speed benchmark's period found in 10⁶ readings, 153 → 140 ms)."""
    n = x.size
    h = width // 2
    # the arithmetic of the plain expressions into few arrays (fresh ones cost their page
    # faults), and the division unmasked where every spread is positive (10⁶ readings: 30 →
    # 23–28 ms)
    if steps:
        y = x - _level(x, width // _SLOW_PERIODS)
    else:
        y = x - (median(x) if centred is None else centred[0])
    r = np.empty(n)
    if n <= 2 * h + 1:  # no whole window
        r[:] = y - _window_lines(y, h, np.arange(n))
    else:
        if centred is None or steps:
            sums = np.empty(n + 1)
            sums[0] = 0.0
            np.cumsum(y, out=sums[1:])
        else:
            sums = centred[1]  # y's, the same sums
        middle = np.subtract(sums[2 * h + 1 :], sums[: n - 2 * h], out=r[h : n - h])
        middle /= 2 * h + 1
        np.subtract(y[h : n - h], middle, out=middle)
        ends = np.arange(h)
        r[:h] = y[:h] - _window_lines(y[: 2 * h + 1], h, ends)
        r[n - h :] = y[n - h :] - _window_lines(y[::-1][: 2 * h + 1], h, ends)[::-1]
    squares = np.empty(n + 1)
    squares[0] = 0.0
    np.cumsum(np.multiply(r, r, out=y), out=squares[1:])
    local = np.empty(n)
    inner = max(n - 2 * h, 0)  # readings with a whole window
    whole = np.subtract(squares[2 * h + 1 :], squares[:inner], out=local[h : h + inner])
    whole /= 2 * h + 1
    ends = np.concatenate([np.arange(min(h, n)), np.arange(max(n - h, h), n)])
    lo, hi = np.maximum(ends - h, 0), np.minimum(ends + h + 1, n)
    local[ends] = (squares[hi] - squares[lo]) / (hi - lo)
    np.sqrt(local, out=local)
    positive = local > 0
    if positive.all():
        np.divide(r, local, out=r)
    else:
        np.divide(r, local, out=r, where=positive)
        r[local <= 0] = 0.0
    bound = 5.0 * robust_scale(r)
    if bound > 0:
        np.clip(r, -bound, bound, out=r)
    return r


def _level(x: FloatArray, h: int) -> FloatArray:
    """The running median of the ``2h + 1`` readings around each one, the series extended at
    each end by its point reflection (so a straight line is its own running median)."""
    h = min(h, x.size - 1)
    if h < 1:
        return x.copy()
    head = 2.0 * x[0] - x[h:0:-1]
    tail = 2.0 * x[-1] - x[-2 : -h - 2 : -1]
    out: FloatArray = running_median(np.concatenate([head, x, tail]), 2 * h + 1)[h:-h]
    return out


def _window_lines(y: FloatArray, h: int, at: NDArray[np.int64]) -> FloatArray:
    """At each index of ``at``, the straight line fitted to ``y`` over the window of ``h``
    readings either side (cut at the ends), evaluated there."""
    n = y.size
    lo, hi = np.maximum(at - h, 0), np.minimum(at + h + 1, n)
    v = np.arange(n) / n  # time in units of the part: its prefix sums keep their precision
    sy = np.concatenate([[0.0], np.cumsum(y)])
    svy = np.concatenate([[0.0], np.cumsum(v * y)])
    k = (hi - lo).astype(np.float64)
    mid = (lo + hi - 1) / (2.0 * n)  # each window's mean time
    spread = k * (k * k - 1.0) / (12.0 * n * n)  # Σ (v − v̄)² over the window
    total = sy[hi] - sy[lo]
    cross = svy[hi] - svy[lo] - mid * total
    slope = np.divide(cross, spread, out=np.zeros(k.size), where=spread > 0)
    out: FloatArray = total / k + slope * (v[at] - mid)
    return out


def _refine(acf: FloatArray, p: int, reach: int) -> int:
    """The lag within ``reach`` of ``p`` whose harmonics oscillate most in ``acf``: a peak at
    one lag is only accurate to about a lag (or a bin), while a period error accumulates over
    the cycles."""
    best, best_score = p, -math.inf
    for q in range(max(2, p - reach), p + reach + 1):
        lags = np.arange(q, acf.size - q // 2, q)
        score = float(_contrast(acf, lags, q // 2).mean()) if lags.size else -math.inf
        if score > best_score:
            best, best_score = q, score
    return best


_FOLD_REACH = 3  # lags either side of the autocorrelation's period that the fold compares
_FOLD_CYCLES = 64  # the fold's readings: the series' last this many periods at most


def _best_fold(r: FloatArray, p: int, reach: int) -> int:
    """The period within ``reach`` of ``p`` whose profile (the mean of ``r`` at each phase)
    explains most of ``r``'s variation, on its last :data:`_FOLD_CYCLES` periods at most (of the
    longest candidate: the same readings for every one).

    The autocorrelations :func:`_refine` compares are each lag's sum over the whole series,
    lag k shrunk by 1 − k/n, and the shrinking favours the shorter of two periods by about
    P² / (4π² (n − P)) readings: a cycle of 288 readings in 1,152–1,500 read as 282–287
    (2 of 20 series exact, random phases, AR(1) noise), and its profile drifts off the cycle
    by a reading a period. The fold has no such bias. (Its means per phase are what
    :func:`remove_cycle`'s median profile estimates robustly; means add up, so each candidate
    costs two ``bincount`` passes.) Each phase mean also explains its share of the noise, σ²
    a phase, which is taken off (a longer candidate has more phases)."""
    tail = r[-min(r.size, _FOLD_CYCLES * (p + reach)) :]  # the same readings for every one
    noise = float(np.var(tail))
    best, best_score = p, -math.inf
    for q in range(max(2, p - reach), p + reach + 1):
        phase = np.arange(tail.size) % q
        sums = np.bincount(phase, weights=tail, minlength=q)
        counts = np.bincount(phase, minlength=q)
        score = float(np.sum(sums * sums / np.maximum(counts, 1)) - q * noise)
        if score > best_score:
            best, best_score = q, score
    return best


def remove_cycle(x: FloatArray, period: int) -> tuple[FloatArray, FloatArray]:
    """Subtract the median profile per phase (``t mod period``); returns (series, profile).

    The profile is measured against a running median one period wide (odd), which follows level
    shifts but not the cycle; it is centred so the series keeps its mean level.
    """
    _, profile = _profile(x, period)
    return x - np.resize(profile, x.size), profile


class Cycle(NamedTuple):
    """A cycle measured and removed (:func:`cycle_share`)."""

    series: FloatArray  # the series less the cycle
    profile: FloatArray  # the cycle, one value a phase (``t mod period``), centred
    share: float  # of the variation about the running median, that the profile takes
    noise: float  # the robust σ of what the profile leaves about the running median

    @property
    def period(self) -> int:
        return self.profile.size


def cycle_share(x: FloatArray, period: int, level: FloatArray | None = None) -> Cycle:
    """:func:`remove_cycle`, the share of the variation about the running median that the
    profile takes (by robust scales: 1 − (σ after / σ before)²) and the σ after: what the
    cycle and the noise leave about the running median. One median profile then serves both
    the choice of a series' scale (by the σ after) and its description (by the share): each
    took its own running median and profile, 4% of a change-point search of 10⁵ readings.
    ``level``: that running median (:func:`cycle_level`), where the caller has it."""
    detail, profile = _profile(x, period, level)
    cycle = np.resize(profile, x.size)
    before = robust_scale(detail)
    after = robust_scale(detail - cycle)
    share = 1.0 - (after / before) ** 2 if before > 0 else 0.0
    return Cycle(x - cycle, profile, share, after)


def spread_level_slope(x: FloatArray, stretch: int) -> tuple[float, float]:
    """Tukey's spread-versus-level slope of a positive series and its standard error: the
    least-squares slope of log spread on log level over consecutive stretches of ``stretch``
    readings (the median and the robust σ about it); about 1 where the series varies by a
    factor of its level (a log scale), about 0 where by an amount. (nan, inf) with fewer than
    three stretches, or no spread of levels."""
    m = x.size // stretch
    if m < 3:
        return math.nan, math.inf
    blocks = x[: m * stretch].reshape(m, stretch)
    level = _row_medians(blocks)
    dev = np.abs(blocks - level[:, None])
    spread = _row_medians(dev) * _MAD
    # :func:`robust_scale` where a block's MAD is rounding (most of its readings tied)
    for j in np.flatnonzero(spread <= _MAD * _ROUNDING * dev.max(axis=1)):
        spread[j] = robust_scale(blocks[j] - level[j])
    ok = (level > 0) & (spread > 0)
    u, v = np.log(level[ok]), np.log(spread[ok])
    su = float(((u - u.mean()) ** 2).sum()) if u.size else 0.0
    if u.size < 3 or su <= 0:
        return math.nan, math.inf
    slope = float(((u - u.mean()) * (v - v.mean())).sum() / su)
    resid = v - v.mean() - slope * (u - u.mean())
    return slope, math.sqrt(float(resid @ resid) / (u.size - 2) / su)


def cycle_level(x: FloatArray, period: int) -> FloatArray:
    """The running median one period wide (odd) that :func:`cycle_share` measures ``x``'s
    cycle about. Of a positive series' logarithm it is the logarithm of the series' own: a
    median of an odd count is one of the readings, and the logarithm keeps their order."""
    window = period if period % 2 else period + 1
    return running_median(x, window)


def _profile(
    x: FloatArray, period: int, level: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """(``x`` less its running median one period wide, odd (``level``, where given); the
    median profile of that)."""
    detail = x - (cycle_level(x, period) if level is None else level)
    return detail, _phase_medians(detail, period)


def _phase_medians(detail: FloatArray, period: int) -> FloatArray:
    """The median of ``detail`` per phase (``t mod period``), centred.

    One row per whole cycle; the phases the last, partial cycle reaches take its values as
    one row more. (Padding that cycle with NaN for ``np.nanmedian``, as before, gave the same
    profile 3.4 times slower: under 600 rows it takes masked arrays' median.)"""
    whole, extra = divmod(detail.size, period)
    rows = detail[: whole * period].reshape(whole, period)
    profile: FloatArray = np.full(period, np.nan)  # a phase with no reading has no median
    if whole:
        profile[extra:] = _column_medians(rows[:, extra:])
    if extra:
        last = detail[whole * period :][None, :]
        profile[:extra] = _column_medians(np.concatenate([rows[:, :extra], last]))
    profile -= profile.mean()
    return profile


def _row_medians(rows: FloatArray) -> FloatArray:
    """``np.median(rows, axis=1)``, the same values: :func:`_column_medians` of a copy's
    columns (``rows`` is not reordered; 10⁵ readings in rows of 288: 2.2 → .32 ms)."""
    return _column_medians(np.array(rows, dtype=np.float64).T)


def _column_medians(block: FloatArray) -> FloatArray:
    """``np.median(block, axis=0)``, the same values: each column, copied into a row, by one
    quickselect around its lower middle rank (:func:`_quickselected`; a million readings in
    rows of 288: 30 → 6 ms). Where a column has NaN, or a middle value is 0 (which of −0 and
    +0 is selected depends on the algorithm), ``np.median`` itself."""
    work = np.ascontiguousarray(block.T)
    m = work.shape[1]
    k = (m - 1) // 2
    if m == 0 or np.isnan(work).any():
        return np.asarray(np.median(block, axis=0))
    work.partition(k, axis=1)
    lower = work[:, k]
    if m % 2:
        middle = lower.copy()
    else:
        upper = work[:, k + 1 :].min(axis=1)
        middle = np.mean(np.stack([lower, upper]), axis=0)  # np.median's mean of the two
        if not upper.all():
            return np.asarray(np.median(block, axis=0))
    if not lower.all():
        return np.asarray(np.median(block, axis=0))
    return middle


def within_slope(y: FloatArray, cuts: Sequence[int]) -> tuple[float, float]:
    """Slope of ``y`` on its index, common to the segments bounded by ``cuts``, and its t statistic.

    The regression has one intercept per segment, so the slope comes only from the variation
    inside segments. The t statistic's variance is inflated by ``(1 + φ) / (1 − φ)``, φ the
    lag-1 autocorrelation of the residuals (clipped to [0, .99]), as for AR(1) noise.
    """
    n = y.size
    bounds = [0, *cuts, n]
    t = np.arange(n, dtype=float)
    tt = np.empty(n)
    yy = np.empty(n)
    # each step written into its place, not into a fresh array first (10⁶ readings: 12.9 →
    # 7.6 ms), and the residuals' sum of squares taken once
    for a, b in itertools.pairwise(bounds):
        np.subtract(t[a:b], t[a:b].mean(), out=tt[a:b])
        np.subtract(y[a:b], y[a:b].mean(), out=yy[a:b])
    sxx = float(tt @ tt)
    if sxx == 0:
        return 0.0, 0.0
    slope = float(tt @ yy) / sxx
    resid = np.subtract(yy, np.multiply(tt, slope, out=t), out=t)
    dof = n - len(bounds)  # segment means and the slope
    if dof <= 0:
        return slope, 0.0
    squares = float(resid @ resid)
    var = squares / dof
    if var == 0:
        return slope, math.inf if slope != 0 else 0.0
    phi = float(resid[1:] @ resid[:-1]) / squares
    p = min(max(phi, 0.0), 0.99)
    se = math.sqrt(var / sxx * (1 + p) / (1 - p))
    return slope, slope / se


def difference_phi(x: FloatArray) -> float:
    """φ of AR(1) noise from the lag-1 autocorrelation ρ of the first differences, ``1 + 2ρ``.

    ρ is estimated robustly, as Gnanadesikan & Kettenring's correlation with MAD scales of
    the sums and differences of adjacent first differences, ``(s₊² − s₋²) / (s₊² + s₋²)``: a
    level shift or a spike is one or two large differences, which the MADs ignore. (Pearson's
    ρ, even winsorised, counts them in its denominator and not its numerator: a few shifts
    pull ρ towards 0, i.e. φ towards 1, and a 3× step in 100 TPS readings gave φ = .99.)
    Clipped to [0, .99]; 0 for fewer than ten differences (ρ's standard error would exceed
    .3) or when most differences are 0. Of a long series every s-th pair is measured
    (:func:`pair_stride`).
    """
    return _difference_phi(np.diff(x))


_PAIRS = 1 << 17  # adjacent pairs of first differences difference_phi measures at least


def pair_stride(n: int) -> int:
    """The spacing of the adjacent pairs of first differences :func:`difference_phi` measures
    on ``n`` readings: the largest power of two that leaves :data:`_PAIRS` of them (1 under
    262,146 readings). Its standard error is then that of ``n / s`` readings (on 10⁶
    readings of AR(1) noise, φ .6 and .9, 20 series each: .0038 and .0047 between series,
    against .0025 and .0023 from every pair), and its MADs cost a quarter (the φ of a
    10⁶-reading search took 421 of its 3,230 ms, 152 since). The cap on the test's φ and the
    bar φ must pass count that error."""
    s = 1
    while (n - 2) // (2 * s) >= _PAIRS:
        s *= 2
    return s


def _difference_phi(
    d: FloatArray, mad_scale: float | None = None, scratch: FloatArray | None = None
) -> float:
    """:func:`difference_phi` from the first differences ``d`` (and their
    :func:`_plain_mad_scale`, when the caller has it; ``scratch``: a 2 × ``d.size`` work
    array, when the caller has one)."""
    if d.size < _FEWEST_DIFFERENCES:
        return 0.0
    if (_plain_mad_scale(d) if mad_scale is None else mad_scale) == 0:
        return 0.0  # mostly flat (a gauge, a noise-free step): its moves are not AR(1) noise
    s = pair_stride(d.size + 1)
    first, second = d[: d.size - 1 : s], d[1::s]
    work = np.empty((2, first.size)) if scratch is None else scratch[:, : first.size]
    rho = _pair_correlation(first, second, work)
    return min(max(1.0 + 2.0 * (0.0 if math.isnan(rho) else rho), 0.0), 0.99)


def _pair_correlation(first: FloatArray, second: FloatArray, work: FloatArray) -> float:
    """Gnanadesikan & Kettenring's correlation of paired values, ``(s₊² − s₋²) / (s₊² +
    s₋²)`` with :func:`_pair_scales` of their sums and differences (``work``: a 2 × pairs
    scratch array); NaN when both scales are 0."""
    sums = np.add(second, first, out=work[0])
    differences = np.subtract(second, first, out=work[1])
    plus, minus = (v * v for v in _pair_scales(sums, differences))
    return (plus - minus) / (plus + minus) if plus + minus > 0 else math.nan


_LATTICE_TIES = 0.05  # share of deviations exactly at the MAD from which it is a lattice value


def _pair_scales(*parts: FloatArray) -> list[float]:
    """The spreads of the sums and the differences of adjacent first differences, for
    :func:`difference_phi`: their MADs, unless data on a lattice (counts, queue lengths, a
    gauge's steps) tie many deviations at either MAD; then, for both, the mean of the
    smallest three quarters of the absolute deviations (one estimator for both: only their
    ratio counts).

    A tied MAD is a lattice value, not a quantile: on weekly counts of 0–3 the MADs of the
    sums and of the differences came out equal (or one lattice step apart), which reads as
    ρ = 0, i.e. φ = 1, a random walk: a long-run scale 22 times the noise's, and an outbreak
    of 14–47 cases among them no change. The trimmed mean moves with every value."""
    devs, mads = [], []
    for r in parts:  # fresh arrays: reordered and overwritten, as in _mad_scale_in_place
        dev = _deviations_in_place(r, *_median_split(r))
        mads.append(_median_in_place(dev))
        devs.append(dev)
    tol = [1e-9 * mad for mad in mads]
    if all(
        mad == 0 or np.count_nonzero((dev >= mad - t) & (dev <= mad + t)) < _LATTICE_TIES * dev.size
        for dev, mad, t in zip(devs, mads, tol, strict=True)
    ):
        return [mad * _MAD for mad in mads]
    keep = [max(1, (3 * dev.size) // 4) for dev in devs]
    return [float(np.partition(dev, k - 1)[:k].mean()) for dev, k in zip(devs, keep, strict=True)]


def long_run_scale(x: FloatArray, *, max_block: int | None = None) -> tuple[float, float]:
    """(φ, σ_LR) of :func:`long_run_noise`."""
    phi, scale, _ = long_run_noise(x, max_block=max_block)
    return phi, scale


def long_run_noise(x: FloatArray, *, max_block: int | None = None) -> tuple[float, float, float]:
    """(φ, σ_LR, φ implied): the AR(1) coefficient and the long-run standard deviation of the
    noise of ``x``, robust to a few level shifts, to spikes and to trends.

    The long-run variance σ²_LR (the spectrum at frequency 0) is what decides how far a segment
    mean wanders, so it is the yardstick of a shift. Two estimates, the larger kept:

    * AR(1) from first differences: their variance is ``v = 2 σ² (1 − φ)`` and σ²_LR = σ² (1 +
      φ)/(1 − φ), so ``σ²_LR = v (1 + φ) / (2 (1 − φ)²)``, φ from :func:`difference_phi`; each
      shift or spike touches one or two differences, a trend none (as DeCAFS, Romano et al.
      2022). It sees only short-range dependence. Where it is the only measure of the
      noise's persistence (no block is measured: ``max_block`` 1, or fewer than 32
      readings), φ counts only where the differences show it: above two of its standard
      errors on independent noise (``2.4/√n`` each: 1.24 at n = 15, .88 at 30, .48 at 100;
      about its 95th percentile there, exceeded by .04–.05 of series), else 0. An estimate
      that cannot tell φ = 0 from φ = .75 multiplied the variance by up to (1 + φ)/(1 − φ)²
      = 28 at random (φ̂ > .6 in .26 of 12 independent readings, .15 of 30; a 6 σ step at
      mid-series in 30 of them was not worth its cost in .14). Nor does it count where that
      bar lies at or above the memory cap (:func:`_memory_cap`; under 55 readings): passing
      it then says only "at least the bar", and it switched the scale to the cap's — 3.7
      times the white-noise one at the cap of .75 series under 64 readings then had — by
      chance in .05–.07 of independent series of 24–31 readings (a 3 σ step in 30 of them
      then had no candidate), while series of 12–23 readings, whose bar exceeds .99, never
      had it; the level test, at the segment's own lag-1 autocorrelation, keeps its size
      (`benchmarks/changepoints_short_noise.py`, n = 30). Where blocks are measured
      beside it, φ is kept as estimated: the shortest blocks understate short-range
      persistence (blocks of 4 put σ_LR 14% low at φ = .3), which this estimate covers
      (dropping it there too, straight lines in AR(1) noise of φ = .3 got a level point in
      .27 of 120 readings, against .195). φ is then capped at a correlation length
      ``1/(1 − φ)`` of :func:`_memory_cap`: a longer memory cannot be told from level
      shifts within the series, and at :func:`_residual_phi_bound`, an upper bound from the
      noise's own lag-1 correlation, where that is the sharper estimate.
    * :func:`block_scale` over blocks of 2, 4, … up to ``max_block`` observations (default
      ``min(n/16, 2√n)``): the dependence at longer range that real series have (M/M/1
      response times at ρ = .8: lag-1 autocorrelation .96, lag 50 still .27), which the AR(1)
      estimate misses by a factor of 3–5.

    The differences' σ is their MAD, or :func:`_difference_scale` when most of them are 0
    (counts of rare events); 0 only for a constant series. The third value is
    :func:`implied_phi` at σ_LR, which needs the same scale of the differences.
    """
    phi, scale, implied, _ = noise_and_persistence(x, max_block=max_block)
    return phi, scale, implied


def noise_and_persistence(
    x: FloatArray, *, max_block: int | None = None
) -> tuple[float, float, float, float]:
    """(φ, σ_LR, φ implied) of :func:`long_run_noise` and :func:`persistence`, from one
    measure of the first differences' φ: a level search's noise round asks for the second
    where the first φ is 0, as it often is for white noise (the 18 rounds of an S-curve of
    10⁶ readings in white noise took 14% less, 15 of 10⁵ readings 18%)."""
    n = x.size
    if n < 2:
        return 0.0, 0.0, 0.0, persistence(x, max_block=max_block)
    top = _longest_block(n, max_block)
    # φ near 1 would multiply the scale by up to 100 (see _memory_cap).
    # Every MAD below works in ``scratch`` (a million values: 15 of them, and fresh arrays
    # cost their page faults: 22,000 a call, half its time).
    scratch = np.empty((2, n))
    d = np.diff(x)
    mad_scale = _mad_scale_in_place(_copied(d, scratch[0]))
    phi = _difference_phi(d, mad_scale, scratch)
    shown = min(phi, memory_cap(n, max_block))  # :func:`persistence`, the same φ
    cap = 1.0 - 1.0 / _memory_cap(n, top)
    phi_se = _PHI_SE / math.sqrt(n // pair_stride(n))  # the differences' φ's standard error
    bar = _PHI_SHOWN_SE * phi_se
    if top < 2 and (phi < bar or bar >= cap):
        phi = 0.0  # no blocks: see docstring
    phi = min(phi, cap)
    if phi > 0.0:  # (a bound cannot lower 0)
        bound, error = _residual_phi_bound(x)
        if error < phi_se:  # sharper than the differences'
            phi = min(phi, bound)
    v = (mad_scale or _difference_scale(d)) ** 2
    scale = math.sqrt(v * (1.0 + phi) / 2.0) / (1.0 - phi)
    block = 2
    if block <= top:
        c = _centred_sums(x, scratch[0])  # shared by every block size
        while block <= top:
            scale = max(scale, _block_scale(c, block, scratch))
            block *= 2
    return phi, scale, _phi_for_scale(v, scale), shown


_RHO_SE = 1.65  # the robust lag-1 correlation's standard error, in units of √((1 − ρ²)/n)
_RHO_BOUND_SE = 2.0  # standard errors added to the robust ρ for its upper bound on φ


def _residual_phi_bound(x: FloatArray) -> tuple[float, float]:
    """(An upper confidence bound on the AR(1) φ of ``x``, noise about a fitted level, from
    its own lag-1 correlation ρ; the standard error of ρ). ρ is robust (:func:`_pair_correlation`
    of x_t and x_t+1, as :func:`difference_phi` takes it of the differences), on m pairs (all,
    or every s-th of a long series); its small-sample bias (1 + 3ρ)/m is added back, and two
    standard errors of 1.65 √((1 − ρ²)/m) each (1.3–1.7 on AR(1) noise of 120–1,000
    readings, φ 0–.9). (1, ∞) under 20 readings: no bound.

    The differences' φ is unbiased but its error hardly shrinks as φ nears 1 (≈ 2.6/√n:
    .17 at 300 readings), and the long-run scale multiplies it by (1 + φ)/(1 − φ): AR(1)
    noise of φ .8 read φ at the memory cap (.944) in .30 of 300-reading series, its σ_LR up
    to 3.8 times too large (90th percentile), and a 6 σ step was not worth its cost. About
    the right levels the series' own correlation is the efficient estimate (error
    √((1 − φ²)/n): .05 there); a level shift missed, a trend or a cycle left in only raise
    it, so the bound then leaves the differences' φ as it is. The caller bounds φ only where
    that error is below the differences' (on long series both are small, and noise that is
    not AR(1) — heavy tails, long memory — can tell them apart: the speed benchmark's 10⁶
    readings took 13% longer with more candidates to prune, for the same points)."""
    n = x.size
    if n < _FEWEST_BOUND_READINGS:
        return 1.0, math.inf
    s = max(1, (n - 1) // _BOUND_PAIRS)  # its error is then under .015 whatever n is
    first, second = x[: n - 1 : s], x[1::s]
    rho = _pair_correlation(first, second, np.empty((2, first.size)))
    if math.isnan(rho):
        return 1.0, math.inf
    m = first.size
    se = _RHO_SE * math.sqrt(max(1.0 - rho * rho, 0.0) / m)
    return max(rho + (1.0 + 3.0 * max(rho, 0.0)) / m + _RHO_BOUND_SE * se, 0.0), se


_FEWEST_BOUND_READINGS = 20
_BOUND_PAIRS = 1 << 14  # adjacent pairs the bound measures at most (every s-th of a long series)


def persistence(x: FloatArray, *, max_block: int | None = None) -> float:
    """The AR(1) φ of :func:`long_run_scale` alone (from first differences, capped as it
    caps it), without the cost of its blocks."""
    return min(difference_phi(x), memory_cap(x.size, max_block))


def _memory_cap(n: int, top: int) -> int:
    """The longest correlation length ``1/(1 − φ)`` the AR(1) scale of ``n`` observations may
    extrapolate to, blocks up to ``top`` measured: ``top``, or 16 when that is longer — but
    never longer than the longest block the series allows (``min(n/16, 2√n)``; at least 2).

    A memory longer than the blocks measured cannot be told from level shifts within the
    series. The first noise round measures no blocks (``top`` = 1) and allows 16; a series of
    100 readings, whose blocks reach 6, is allowed 6, not 16: φ = .94 there (a random walk's
    differences give 1) made the long-run scale 3.1 times the series' whole spread, and beaver
    2's 1 °C step (Reynolds 1994) was no candidate. Series of 32–63 readings, whose blocks
    reach 2 or 3, are allowed 2 (φ ≤ .5), not 4: at φ̂ = .75, often read by chance from 35–60
    differences, their scale was 3.7 times the white-noise one, and a 4 σ step in 36 readings
    of AR(1) noise with φ = .5 was found in .45 of series (.71 with 2; random walks with no
    change .085 → .095; `benchmarks/changepoints_short_noise.py --sizes 36`). (The floor of
    4 was for random walks of 30 steps, whose φ no longer counts at all:
    :func:`long_run_noise`.)"""
    return max(top, min(_LONGEST_MEMORY, max(_longest_block(n, None), _SHORTEST_MEMORY)))


def memory_cap(n: int, max_block: int | None = None) -> float:
    """The largest AR(1) φ :func:`long_run_noise` lets the first differences show: a
    correlation length of :func:`_memory_cap`."""
    return 1.0 - 1.0 / _memory_cap(n, _longest_block(n, max_block))


def longest_block(n: int, max_block: int | None = None) -> int:
    """The longest block :func:`long_run_noise` measures for ``n`` observations (blocks of 2,
    4, … up to ``max_block``, default ``min(n/16, 2√n)``); 1 when it measures none."""
    top = _longest_block(n, max_block)
    return 1 << (top.bit_length() - 1) if top >= 2 else 1


def _longest_block(n: int, max_block: int | None) -> int:
    """The longest block :func:`long_run_scale` measures (default ``min(n/16, 2√n)``)."""
    return min(n // 16, math.ceil(2 * math.sqrt(n))) if max_block is None else max_block


def implied_phi(x: FloatArray, scale: float) -> float:
    """The AR(1) φ whose long-run σ, given the variance of ``x``'s first differences, is
    ``scale``: :func:`long_run_scale`'s own φ when the AR(1) estimate is the larger, and more
    when blocks saw dependence at longer range. Solves ``(1 + φ)/(1 − φ)² = 2 σ²_LR / v``."""
    d = np.diff(x)
    v = (_plain_mad_scale(d) or _difference_scale(d)) ** 2 if d.size else 0.0
    return _phi_for_scale(v, scale)


def _phi_for_scale(v: float, scale: float) -> float:
    """:func:`implied_phi` from ``v``, the squared scale of the first differences."""
    if v <= 0 or scale <= 0:
        return 0.0
    r = 2.0 * scale * scale / v
    phi = ((2.0 * r + 1.0) - math.sqrt(8.0 * r + 1.0)) / (2.0 * r)
    return min(max(phi, 0.0), 0.99)


def block_scale(x: FloatArray, block: int) -> float:
    """Long-run σ from differences of adjacent block means of ``block`` observations.

    ``D_t = mean(x[t:t+b]) − mean(x[t−b:t])`` has variance ``2 σ²_LR / b`` once b exceeds the
    correlation length, whatever the dependence (not only AR(1)): slow wandering that the
    first differences do not see is counted. A level shift moves only the ``2b − 1``
    differences whose blocks straddle it and a linear trend adds a constant, so the median
    absolute deviation of D about its median ignores both while shifts are few.
    """
    return _block_scale(_centred_sums(x), block)


def _centred_sums(
    x: FloatArray, scratch: FloatArray | None = None, centre: float | None = None
) -> FloatArray:
    """Prefix sums of ``x`` about its median (n + 1 values, from 0); ``scratch``: a work
    array of at least n values; ``centre``: the median, when the caller has it."""
    if centre is None:
        work = np.empty(x.size) if scratch is None else scratch[: x.size]
        centre = _median_in_place(_copied(x, work))
    c = np.empty(x.size + 1)
    c[0] = 0.0
    np.subtract(x, centre, out=c[1:])
    np.cumsum(c[1:], out=c[1:])
    return c


_BLOCK_DIFFERENCES = 1 << 14  # differences of block means measured at least, per block size


def _block_scale(c: FloatArray, block: int, scratch: FloatArray | None = None) -> float:
    """:func:`block_scale` from the prefix sums ``c`` of :func:`_centred_sums`; ``scratch``:
    a 2 × n work array. Of a long series' differences every s-th is measured (:func:`_stride`):
    overlapping ones a fraction of a block apart say nearly the same."""
    b = max(1, min(block, (c.size - 1) // 4))
    s = _stride(c.size - 1, b)
    work = np.empty((2, c.size)) if scratch is None else scratch
    starts = c[:-b:s]
    means = np.subtract(c[b::s], starts, out=work[0, : starts.size])
    means /= b
    lag = b // s
    d = np.subtract(means[lag:], means[:-lag], out=work[1, : means.size - lag])
    if d.size < 3:
        return 0.0
    return _mad_scale_in_place(d) * math.sqrt(b / 2.0)


def _stride(n: int, block: int) -> int:
    """The spacing of the block-mean differences measured for blocks of ``block`` of ``n``
    observations: the largest power of two up to an eighth of a block that still leaves
    :data:`_BLOCK_DIFFERENCES` of them (1 for a block that is no power of two, and for any
    block of a series under 32,768 readings). Differences an eighth of a block apart share
    seven eighths of their readings, and the blocks, not the differences, limit the precision:
    a million readings hold under a thousand independent blocks of 1,024. On AR(1) noise (φ 0,
    .7, .95; 40,000 to 10⁶ readings) the long-run σ moved by .25% or less (standard deviation
    between series), where its own spread between series is .9% or more; a 10⁶-reading search
    spent .27 s a long-run scale, .16 s now."""
    s = 1
    while block % (16 * s) == 0 and (n - 2 * block) // (2 * s) >= _BLOCK_DIFFERENCES:
        s *= 2
    return s


def _copied(x: FloatArray, out: FloatArray) -> FloatArray:
    """``x`` (1-D) copied into the start of ``out``."""
    part = out[: x.size]
    np.copyto(part, x)
    return part


def _difference_scale(d: FloatArray) -> float:
    """σ of first differences when most of them are 0 (counts of rare events, a gauge that
    often repeats a value), where their MAD is 0: their root mean square, every move (a
    deviation from their median) capped at three times the typical move (the median of the
    nonzero ones). A few shifts or outsized spikes are capped; events of the usual size are
    the noise. 0 only when every difference is. (Capped at 3 σ instead, from a start the zeros
    pulled down, σ halved each round where fewer than 1 in 9 differences moved: 7 single
    events in 500 readings gave σ = .003 of an event, and two events a few readings apart
    became two change points in .13–.47 of steady Poisson series;
    ``benchmarks/changepoints_sparse_counts.py``.)"""
    dev = np.abs(d - np.median(d)) if d.size else d
    moves = dev[dev > 0]
    if moves.size == 0:
        return 0.0
    capped = np.minimum(dev, _WINSOR * float(np.median(moves)))
    return math.sqrt(float(np.mean(capped * capped)))


def _plain_mad_scale(r: FloatArray) -> float:
    """σ from the MAD, 0 when most values are equal: in a mostly flat series (a noise-free
    step, a saturated gauge) the few moves are not noise (:func:`robust_scale` would measure
    the noise by them)."""
    return _mad_scale_in_place(np.array(r, dtype=np.float64))


def _mad_scale_in_place(r: FloatArray) -> float:
    """:func:`_plain_mad_scale` of a scratch array, which it reorders and overwrites: a MAD
    does not depend on the order, and the medians then need no copies (the long-run scale
    takes two per block size of a long series)."""
    return _median_in_place(_deviations_in_place(r, *_median_split(r))) * _MAD


_SELECT_FROM = 20_000  # from this many values, medians are selected inside a sampled bracket
# From this many, by numpy's one-rank quickselect too, where it wins and the sampled middle
# is not tied (else np.median still): np.median's introselect took 100–135 µs for 10⁴ values,
# the quickselect 21 and the ties' sample 9 (the 78 medians of 8,192–32,767 values in a
# 10⁵-reading search: 10.3 → 4.6 ms; under 6,000 values nothing is gained)
_QUICK_FROM = 6_000
_SAMPLE = 2_000  # values sampled for the bracket at least (n^⅔ from 89,443 values)
_TIED = 0.02  # share of equal neighbours in the sampled middle above which values count as tied


def median(x: FloatArray) -> float:
    """``np.median(x)`` of a 1-D array, the same value, three to five times as fast on long
    arrays (``x`` is not modified)."""
    return _median_in_place(np.array(x, dtype=np.float64))


def order_statistics(x: FloatArray, ranks: Sequence[int]) -> FloatArray:
    """``np.partition(x, ranks)[ranks]`` of a 1-D array (``ranks`` ascending, distinct), the
    same values: one single-rank selection a rank, each in the part of a copy that the ones
    before left it (numpy's introselect of five ranks at once took 33 ms for 10⁶ values,
    these 4). With NaN, or where a value selected is 0 (which of −0 and +0 is selected
    depends on the algorithm), ``np.partition``'s."""
    chosen = _selected(x, ranks)
    return np.partition(x, ranks)[list(ranks)] if chosen is None else chosen


def quantile(x: FloatArray, q: Sequence[float]) -> FloatArray:
    """``np.quantile(x, q)`` of a 1-D array by numpy's default (linear) method, the same
    values: its two order statistics either side of each (n − 1) q by :func:`order_statistics`
    and numpy's interpolation (``_lerp``) between them (np.quantile partitions around all of
    them at once: 43 ms for two quantiles of 10⁶ values). With NaN, a q outside [0, 1), or
    a zero among the values selected, ``np.quantile`` itself."""
    at = np.asarray(q, dtype=np.float64)
    n = x.size
    if n < 2 or not bool(np.all((at >= 0.0) & (at < 1.0))):
        return np.asarray(np.quantile(x, q))
    virtual = (n - 1) * at
    previous = np.floor(virtual)
    gamma = virtual - previous
    below = previous.astype(np.intp).tolist()
    ranks = sorted({*below, *(i + 1 for i in below)})
    chosen = _selected(x, ranks)
    if chosen is None:
        return np.asarray(np.quantile(x, q))
    value = dict(zip(ranks, chosen.tolist(), strict=True))
    a = np.array([value[i] for i in below])
    b = np.array([value[i + 1] for i in below])
    difference = b - a
    out: FloatArray = a + difference * gamma
    np.subtract(b, difference * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


def _selected(x: FloatArray, ranks: Sequence[int]) -> FloatArray | None:
    """:func:`order_statistics` by single-rank selections; None with NaN or a zero selected."""
    work = np.array(x, dtype=np.float64)
    if np.isnan(work).any():
        return None
    out = np.empty(len(ranks))
    parts = [(0, work.size, 0, len(ranks))]  # a part of work holding the ranks lo … hi − 1
    while parts:
        lo, hi, first, last = parts.pop()
        if first >= last:
            continue
        middle = (first + last) // 2
        rank = ranks[middle]
        part = work[lo:hi]
        if last - first == 1 and rank in (lo, hi - 1):  # the part's least or largest
            out[middle] = part.min() if rank == lo else part.max()
            continue
        part.partition(rank - lo)
        out[middle] = part[rank - lo]
        parts += [(lo, rank, first, middle), (rank + 1, hi, middle + 1, last)]
    return out if out.all() else None


def _median_in_place(a: FloatArray) -> float:
    """``np.median(a)`` of a scratch array (reordered): the same value, two to five times as
    fast on long arrays. ``np.median`` partitions around both middle ranks (and the last, for
    NaN) with numpy's generic introselect. Two faster ways, both exact:

    * around one rank numpy uses a quickselect that is vectorised on some CPUs (x86-simd-sort:
      0.8 ms for a million values, against 5 ms): the lower middle order statistic is
      selected alone, the upper one is the smallest value above it, and NaN is looked for in
      the upper half;
    * the middle order statistics are bracketed by quantiles of an evenly spaced sample
      (±4.5 of their standard errors) and selected among the values inside; counts check
      that the bracket holds them and that no value is NaN, else the whole array is
      partitioned. Where the quickselect is scalar (8 ms for a million values, 1.2 ms for
      10⁵) this takes 2.2 and .44 ms, and it also serves a middle of many equal values,
      which slows any quickselect down tenfold (30% zeros: 11 ms).

    Which is faster here is measured once (:func:`_quickselect_wins`). (A median of a million
    values is a few milliseconds, and a long search takes hundreds.)"""
    return _median_split(a)[0]


def _median_split(a: FloatArray) -> tuple[float, float | None]:
    """(:func:`_median_in_place` of ``a``; ``a``'s largest value where the median left ``a``
    partitioned around its lower middle rank, with no NaN, else None)."""
    n = a.size
    if n < _QUICK_FROM or (n < _SELECT_FROM and (not _quickselect_wins() or _has_negative_zero(a))):
        return float(np.median(a, overwrite_input=True)), None
    ranks = [(n - 1) // 2, n // 2]  # np.median averages these order statistics
    middle = _sampled_middle(a, ranks[0])
    tied = np.count_nonzero(middle[1:] == middle[:-1]) >= _TIED * middle.size
    if tied and n < _SELECT_FROM:
        return float(np.median(a, overwrite_input=True)), None
    if tied or not _quickselect_wins():
        return _selected_inside(a, ranks, middle[0], middle[-1]), None
    return _quickselected(a, ranks)


def _has_negative_zero(a: FloatArray) -> bool:
    """Whether ``a`` holds −0 (or NaN with its sign bit set), which equals +0: which of the
    two a selection returns depends on the algorithm (and the order), so under
    :data:`_SELECT_FROM` values such an array takes ``np.median``'s."""
    return int(np.count_nonzero(np.signbit(a))) != int(np.count_nonzero(a < 0))


def _deviations_in_place(a: FloatArray, centre: float, largest: float | None) -> FloatArray:
    """``|a − centre|``, written over ``a``, ``centre`` and ``largest`` from
    :func:`_median_split`. Where ``a`` is partitioned around the median, the values up to its
    lower middle rank are at most ``centre`` and the others at least: their deviations are
    ``centre − a`` and ``a − centre``, the same values (rounding is symmetric), in one pass
    instead of two (.8 → .5 ms for 10⁶ values). A centre of 0 (signed zeros: −0 − +0 is −0,
    where ``abs`` gives +0) or not finite takes ``abs``."""
    if largest is not None and centre != 0.0 and math.isfinite(centre):
        k = (a.size + 1) // 2
        np.subtract(centre, a[:k], out=a[:k])
        np.subtract(a[k:], centre, out=a[k:])
        return a
    return np.abs(np.subtract(a, centre, out=a), out=a)


def _sampled_middle(a: FloatArray, rank: int) -> FloatArray:
    """The values of an evenly spaced sample of ``a`` (sorted) within ±4.5 standard errors of
    the order statistic ``rank``."""
    # n^⅔ balances the sort of the sample against the values left inside its bracket
    # (∝ n / √sample): a median of 10⁶ values 3.3 → 2.2 ms with 10⁴ sampled, not 2,000
    sample = np.sort(a[:: a.size // max(_SAMPLE, round(a.size ** (2 / 3)))])
    spread = int(4.5 * math.sqrt(sample.size / 4.0)) + 1
    centre = rank * sample.size // a.size
    return sample[max(centre - spread, 0) : centre + spread + 1]


def _quickselected(a: FloatArray, ranks: list[int]) -> tuple[float, float | None]:
    """(The mean of ``a``'s order statistics at ``ranks`` (two adjacent ranks, or one twice)
    by one quickselect around the lower (``a`` is reordered); ``a``'s largest value, None
    with NaN)."""
    a.partition(ranks[0])
    upper = a[ranks[0] :]
    largest = float(upper.max())
    if math.isnan(largest):
        return float(np.median(a, overwrite_input=True)), None  # NaN, as np.median says
    if ranks[1] == ranks[0]:
        return float(a[ranks[0]]), largest
    return float(np.mean(np.array([a[ranks[0]], upper[1:].min()]))), largest


def _selected_inside(a: FloatArray, ranks: list[int], lo: float, hi: float) -> float:
    """The mean of ``a``'s order statistics at ``ranks``, selected among the values in
    ``[lo, hi]`` where that bracket holds them and ``a`` has no NaN, else by ``np.median``.

    NaN fails both comparisons, so the two counts find it as well. The values inside are
    gathered by their positions: a boolean mask selecting a tenth of 10⁶ values took 2.3 ms,
    its positions .6 ms."""
    n = a.size
    inside = a >= lo
    not_below = int(np.count_nonzero(inside))
    not_above = a <= hi
    above = n - int(np.count_nonzero(not_above))  # with NaN, as ``n - not_below`` is
    inside &= not_above
    where = np.flatnonzero(inside)
    missing = (n - not_below) + above + where.size - n  # NaN, counted in both
    below = n - not_below - missing
    if missing or not (below <= ranks[0] and ranks[1] < below + where.size):
        return float(np.median(a, overwrite_input=True))
    values = a[where]
    k = [r - below for r in ranks]
    values.partition(k)
    return float(np.mean(values[k[0] : k[1] + 1]))


@functools.cache
def _quickselect_wins() -> bool:
    """Whether numpy's one-rank quickselect is faster on this machine than selecting inside a
    sampled bracket (:func:`_median_in_place`): best of five on 2¹⁷ normal values each, once
    a process. Both are exact, so only the time depends on the answer. (On 2¹⁶ values the
    two tied within 10% on a vectorised quickselect, while from 10⁵ values on, the long
    medians of a search, it took half the bracket's time (115 against 225 µs): the answer
    was a coin toss, and a process that drew the bracket spent some 25 ms more of a
    10⁵-reading search's 150 on its medians, 2 of 8 processes here.)"""
    values = np.random.default_rng(0).standard_normal(1 << 17)
    ranks = [(values.size - 1) // 2, values.size // 2]
    middle = _sampled_middle(values, ranks[0])

    def best(select: Callable[[FloatArray], float]) -> float:
        times = []
        for _ in range(5):
            work = values.copy()
            start = time.perf_counter()
            select(work)
            times.append(time.perf_counter() - start)
        return min(times)

    return best(lambda w: _quickselected(w, ranks)[0]) < best(
        lambda w: _selected_inside(w, ranks, float(middle[0]), float(middle[-1]))
    )
