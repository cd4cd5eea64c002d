"""Level shifts of a trending segment, tested with the segment's slope fitted alongside.

On a series that grows, the level search judges a point on the series less a common slope
(``search``, step 6 of ``docs/changepoints.md``). A crash in the growth biases that slope
(the line through the crash is flatter than the growth), the series less it is a saw tooth,
and the crash between its teeth is no shift of the segment means: a −10% crash in 60
readings of 2% growth at 1% noise was found in .40–.55 of series. Judged with the slope
fitted *alongside* the step, as Perron (1989) models a crash ("model A": y = a + b t +
d 1(t ≥ k) + noise), it is 10 noise σ.

This module tests the best such step of one segment honestly: z², the step's squared t in
long-run noise units (AR(1) plug-in about the line and step, as ``kinks``), above the
critical value of the best step of a straight line in AR(1) noise, the largest simulated
quantile over φ ∈ {0, .3, .5, .7, .8, .9} (``scripts/make_kink_table.py --steps``): its size
is at most α for every φ up to .9 whatever the step's position, with the slope's estimation
counted (a mid-segment step and the slope share three quarters of their variance, so the
step's z² at a slope fitted with it is four times what it should be). A step must also be
large, worth its cost and not a spike, as a kink must (``kinks.judge``): a long segment's
last few readings, spikes, were significant steps. ``search`` uses a step that passes only to
*start* the trend's alternation from the slope inside its segments; the level search then
judges the point as it judges every other.

A crash that also changes the growth (Perron's "model C": a jump and a change of slope at the
same reading) fits no single line, and a kink draws it as an early bend. :func:`best_break`
tests the best break of a segment into two lines (each its own level and slope) against the
best broken line of one kink, with its own simulated bar (``BREAK_TABLE_Z2``) and the same
gates; ``search._breaks`` looks for one around each change point of a trending description.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perfsleuth.changepoints.kernels import grid, kinks
from perfsleuth.stats import robust as robust_mod
from perfsleuth.stats.sums import paired

FloatArray = npt.NDArray[np.float64]

# The critical z² of the best step of a straight line (its own line fitted) in stationary
# Gaussian AR(1) noise, the largest over φ ∈ {0, .3, .5, .7, .8, .9}: rows the segment length
# (``kinks.TABLE_N``), columns the tail probability (``kinks.TABLE_P``). Made by
# ``scripts/make_kink_table.py --steps`` (as the kinks' table: 20,000 series per (n, φ), 5,000
# from 2,000 readings on; seed 20261128; at least 5 readings either side), each row raised to
# the largest of the rows for longer segments.
TABLE_Z2: tuple[tuple[float, ...], ...] = (
    (100.85, 85.16, 67.90, 55.48, 45.80, 34.06, 26.18),  # n = 20
    (100.85, 85.16, 67.90, 55.48, 45.80, 34.06, 26.18),  # n = 25
    (100.85, 85.16, 67.90, 55.48, 45.80, 34.06, 26.18),  # n = 30
    (100.85, 85.16, 67.90, 55.48, 45.18, 33.27, 25.71),  # n = 40
    (89.75, 77.82, 62.31, 52.77, 43.14, 32.49, 25.05),  # n = 50
    (89.75, 77.82, 61.68, 52.77, 43.14, 31.56, 23.85),  # n = 60
    (76.16, 66.62, 55.64, 47.30, 38.66, 28.83, 22.19),  # n = 80
    (76.16, 63.41, 51.04, 43.17, 36.14, 27.05, 20.73),  # n = 100
    (68.91, 60.72, 48.73, 40.28, 33.26, 24.83, 19.21),  # n = 120
    (59.08, 51.06, 42.60, 35.44, 29.75, 22.27, 17.34),  # n = 160
    (50.55, 44.92, 37.71, 31.78, 26.52, 20.13, 15.46),  # n = 200
    (42.39, 37.17, 31.05, 26.47, 21.86, 16.88, 13.39),  # n = 300
    (34.31, 31.98, 27.33, 23.49, 19.58, 15.18, 12.12),  # n = 400
    (30.64, 27.54, 23.12, 20.08, 17.41, 13.80, 11.07),  # n = 600
    (27.57, 25.28, 21.35, 18.56, 15.97, 12.81, 10.54),  # n = 800
    (26.00, 23.27, 20.06, 17.71, 15.40, 12.39, 10.34),  # n = 1000
    (22.24, 20.46, 18.60, 16.22, 14.18, 12.10, 10.34),  # n = 2000
    (20.27, 18.87, 17.04, 15.53, 13.86, 12.10, 10.34),  # n = 5000
)


# The critical z² of the best break of a straight line into two lines (each its own level and
# slope: Perron's model C) against the best broken line (one kink), in stationary Gaussian
# AR(1) noise, the largest over φ ∈ {0, .3, .5, .7, .8, .9}: rows and columns as
# :data:`TABLE_Z2`'s. Made by ``scripts/make_kink_table.py --breaks`` (the same simulation and
# seed), which calls :func:`break_z2`. A bend in the line lowers the quantiles (the best kink
# then takes it up, and the break must sit beside it): a straight line is the hardest null.
BREAK_TABLE_Z2: tuple[tuple[float, ...], ...] = (
    (58.25, 50.36, 37.71, 30.75, 24.53, 17.71, 12.86),  # n = 20
    (58.25, 50.36, 37.71, 30.75, 24.53, 17.71, 12.86),  # n = 25
    (58.25, 50.36, 37.71, 30.75, 24.21, 17.71, 12.82),  # n = 30
    (58.25, 50.36, 37.71, 30.62, 24.20, 16.82, 12.10),  # n = 40
    (53.81, 45.36, 37.33, 30.03, 23.02, 16.12, 11.85),  # n = 50
    (53.81, 45.36, 37.33, 30.03, 23.02, 16.12, 11.81),  # n = 60
    (47.50, 41.63, 32.69, 27.39, 22.46, 16.02, 11.62),  # n = 80
    (46.73, 40.08, 32.48, 26.57, 21.67, 15.46, 11.36),  # n = 100
    (46.73, 39.24, 29.48, 24.16, 19.90, 14.45, 10.82),  # n = 120
    (41.11, 35.50, 28.90, 23.22, 18.70, 13.89, 10.48),  # n = 160
    (38.44, 30.46, 25.53, 21.39, 17.61, 12.89, 9.78),  # n = 200
    (29.84, 25.11, 21.62, 18.56, 15.42, 11.72, 9.07),  # n = 300
    (27.29, 22.52, 19.66, 16.84, 14.14, 10.76, 8.88),  # n = 400
    (23.81, 21.66, 17.56, 14.89, 12.84, 10.34, 8.88),  # n = 600
    (21.50, 18.78, 15.82, 14.16, 12.15, 10.34, 8.88),  # n = 800
    (19.34, 17.37, 15.22, 13.36, 12.15, 10.34, 8.88),  # n = 1000
    (18.81, 16.90, 14.57, 13.25, 12.15, 10.34, 8.88),  # n = 2000
    (17.99, 16.23, 14.57, 13.09, 12.10, 10.34, 8.88),  # n = 5000
)


@dataclass(frozen=True, slots=True)
class Step:
    """The best step of a segment: its first index (of the new level), z², its bar and its
    tail probability."""

    index: int
    statistic: float
    critical_value: float
    p_value: float


@dataclass(frozen=True, slots=True)
class _Scan:
    k: int
    numerator: float  # step · residuals about the line
    denominator: float  # |step less its projection on the line|²
    step: FloatArray  # the chosen step less its projection on the line
    residual: FloatArray  # residuals about the line
    variance: float  # AR(1) long-run variance of the residuals about the line and step
    phi: float

    @property
    def gain(self) -> float:
        """How much the step lowers the residual sum of squares about the line."""
        return self.numerator**2 / self.denominator

    @property
    def z2(self) -> float:
        return self.gain / self.variance


def _scan(y: FloatArray, side: int) -> _Scan | None:
    """The step that most reduces the residual sum of squares about ``y``'s straight line, at
    least ``side`` readings either side; O(n) by suffix sums."""
    n = y.size
    if n < 2 * side + 3:
        return None
    t = np.arange(n, dtype=np.float64)
    tc = t - t.mean()
    stt = float(tc @ tc)
    residual = y - y.mean() - float(tc @ y) / stt * tc
    # s_k = 1(t ≥ k): its sums over t ≥ k of the residual and of tc, and its length
    both = np.cumsum(paired(residual[::-1], tc[::-1]))[::-1]  # two running sums in one
    numerator, above_tc = both.real, both.imag
    count = n - t
    denominator = count - count**2 / n - above_tc**2 / stt
    positions = np.arange(side, n - side + 1)
    gain = numerator[positions] ** 2 / np.maximum(denominator[positions], np.finfo(float).tiny)
    k = int(positions[np.argmax(gain)])
    if denominator[k] <= 0.0:
        return None
    s = (t >= k).astype(np.float64)
    s -= s.mean() + float(tc @ s) / stt * tc
    resid = residual - numerator[k] / denominator[k] * s
    variance, phi = kinks.long_run(resid)
    if variance <= 0.0:
        return None
    return _Scan(k, float(numerator[k]), float(denominator[k]), s, residual, variance, phi)


def step_z2(y: FloatArray, side: int) -> tuple[int, float] | None:
    """(index, z²) of the best step of ``y`` with its own line (:func:`_scan`)."""
    scan = _scan(y, side)
    return None if scan is None else (scan.k, scan.z2)


def critical_z2(length: int, alpha: float) -> float:
    """The bar of :data:`TABLE_Z2` at ``length`` and tail probability ``alpha``."""
    return kinks.critical_z2(length, alpha, TABLE_Z2)


def tail_probability(length: int, z2: float) -> float:
    """The inverse of :func:`critical_z2` (at most the table's largest p, .1)."""
    return kinks.tail_probability(length, z2, TABLE_Z2)


def critical_break_z2(length: int, alpha: float) -> float:
    """The bar of :data:`BREAK_TABLE_Z2` at ``length`` and tail probability ``alpha``."""
    return kinks.critical_z2(length, alpha, BREAK_TABLE_Z2)


def _large(
    move: float,
    y: FloatArray,
    resid: FloatArray,
    min_effect: float,
    min_relative_change: float,
    log_levels: bool,
) -> bool:
    """Whether a jump of ``move`` is large: ``min_effect`` robust σ of the residuals, and
    ``min_relative_change`` of the largest fitted level (on a log scale 1 − e^−move)."""
    sigma = robust_mod.robust_scale(resid)
    if sigma > 0.0 and move < min_effect * sigma:
        return False
    if log_levels:
        return -math.expm1(-move) >= min_relative_change
    return move >= min_relative_change * float(np.max(np.abs(y - resid)))


def best_step(
    y: FloatArray,
    *,
    alpha: float,
    side: int,
    min_effect: float = 0.0,
    min_relative_change: float = 0.0,
    cost: kinks.Cost | None = None,
    log_levels: bool = False,
) -> Step | None:
    """The best step of the segment ``y`` with its own line when it passes the gates a kink
    passes (``kinks.judge``), else None: **significant** at ``alpha``; **not a bend** (it
    lowers the residual sum of squares about the line more than the best kink, which costs
    as many parameters, does: in a gradual ramp between flat stretches, the best step of a
    segment holding one of its bends was significant and started the trend's alternation a
    third time, for the kinks to replace in the end); **large** (``min_effect`` robust σ of
    the residuals about the line and step, and ``min_relative_change`` of the largest fitted
    level, or 1 − e^−|d| on a log scale); with ``cost``, **worth its cost** (the level
    points' cost of a split with that shorter side, ν = n (1 − φ)/(1 + φ)) and **not a
    spike** (it still pays without the reading of its shorter side that supports it most)."""
    n = y.size
    if n < kinks.MIN_LENGTH:
        return None
    scan = _scan(y, max(side, kinks.MIN_SIDE))
    if scan is None:
        return None
    z2, bar = scan.z2, critical_z2(n, alpha)
    if z2 <= bar:
        return None
    bend = kinks.best_kink(y, max(side, kinks.MIN_SIDE))
    if bend is not None and bend.numerator**2 / bend.denominator >= scan.gain:
        return None  # a bend draws the segment at least as well: its growth changed, no step
    beta = scan.numerator / scan.denominator
    resid = scan.residual - beta * scan.step
    if not _large(abs(beta), y, resid, min_effect, min_relative_change, log_levels):
        return None
    if cost is not None:
        shorter = min(scan.k, n - scan.k)
        price = cost(n, shorter, n * (1 - scan.phi) / (1 + scan.phi))
        part = slice(0, scan.k) if scan.k <= n - scan.k else slice(scan.k, n)
        if z2 < price or not kinks.pays_without_a_spike(
            scan.numerator, scan.denominator, scan.step, scan.residual, part, scan.variance, price
        ):
            return None
    return Step(scan.k, z2, bar, tail_probability(n, z2))


@dataclass(frozen=True, slots=True)
class Break:
    """The best break of a segment into two lines: ``index`` the second line's first reading,
    ``jump`` the second line there less the first's extension, the slopes per reading either
    side, and z² (how much better the two lines fit than the best broken line, in long-run
    noise variances), its bar and tail probability."""

    index: int
    jump: float
    slope_before: float
    slope_after: float
    statistic: float
    critical_value: float
    p_value: float
    phi: float


def _prefix_sums(a: FloatArray) -> FloatArray:
    """s[..., k] = sum of a[..., t] for t < k (k = 0 … n)."""
    out = np.zeros((*a.shape[:-1], a.shape[-1] + 1))
    np.cumsum(a, axis=-1, out=out[..., 1:])
    return out


def _suffix_sums(a: FloatArray) -> FloatArray:
    """s[..., k] = sum of a[..., t] for t ≥ k (k = 0 … n), summed from the end: a short last
    part keeps its precision."""
    out = np.zeros((*a.shape[:-1], a.shape[-1] + 1))
    np.cumsum(a[..., ::-1], axis=-1, out=out[..., 1:])
    return out[..., ::-1]


def _line_rss(
    count: FloatArray,
    st: FloatArray,
    stt: FloatArray,
    sr: FloatArray,
    str_: FloatArray,
    srr: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(residual sum of squares, slope, mean) of the least-squares line of each part, from its
    sums of 1, t, t², r, t r and r²; t's mean is ``st / count``."""  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = stt - st * st / count
        cross = str_ - st * sr / count
        slope = cross / spread
        rss = srr - sr * sr / count - cross * slope
        return rss, slope, sr / count


def break_scan(y: FloatArray, side: int) -> tuple[FloatArray, ...]:
    """The best break of each row of ``y`` (2-D) into two lines, at least ``side`` readings
    either side (the one that lowers the residual sum of squares most): (index, the jump's
    gain, the two lines' residuals, jump, slope before, slope after), one per row, O(n) by
    prefix and suffix sums. The gain is the residual sum of squares of the best broken line
    (one kink, as many readings either side) less that of the two lines."""
    reps, n = y.shape
    t = np.arange(n, dtype=np.float64)
    tc = t - t.mean()
    slope = y @ tc / float(tc @ tc)
    r = y - y.mean(axis=1, keepdims=True) - np.outer(slope, tc)
    sums = [np.broadcast_to(tc, y.shape), np.broadcast_to(tc * tc, y.shape), r, tc * r, r * r]
    count = np.arange(n + 1, dtype=np.float64)
    left = _line_rss(count, *(_prefix_sums(a) for a in sums))
    right = _line_rss(n - count, *(_suffix_sums(a) for a in sums))
    positions = np.arange(side, n - side + 1)
    k = positions[np.argmin((left[0] + right[0])[:, positions], axis=1)]
    rows = np.arange(reps)
    before = (rows, k)
    # each part's line at the readings: its mean plus its slope about its mean time
    t_left = _prefix_sums(tc[None, :])[0][k] / k
    t_right = _suffix_sums(tc[None, :])[0][k] / (n - k)
    on_left = t[None, :] < k[:, None]
    fitted = np.where(
        on_left,
        left[2][before][:, None] + left[1][before][:, None] * (tc - t_left[:, None]),
        right[2][before][:, None] + right[1][before][:, None] * (tc - t_right[:, None]),
    )
    resid = r - fitted
    at = tc[k]
    jump = (right[2][before] + right[1][before] * (at - t_right)) - (
        left[2][before] + left[1][before] * (at - t_left)
    )
    # against the best kink anywhere, not the one at the break: beside a bend the two lines
    # can always move the break off it and let the jump take up the misfit (a strong bend in
    # white noise: the jump's z² beside the kink at the break passed the 5% bar in .31 of 400
    # readings, against the best kink .05)
    kinked = np.einsum("ij,ij->i", r, r) - np.max(kinks.hinge_gains(r)[:, side : n - side], axis=1)
    gain = np.maximum(kinked - np.einsum("ij,ij->i", resid, resid), 0.0)
    return k, gain, resid, jump, slope + left[1][before], slope + right[1][before]


def long_run_rows(residual: FloatArray, params: int) -> tuple[FloatArray, FloatArray]:
    """(long-run variance, φ) of each row's AR(1) noise with these residuals, as
    ``kinks.long_run`` (no rounding) with ``params`` parameters fitted."""
    n = residual.shape[1]
    rr = np.einsum("ij,ij->i", residual, residual)
    lag = np.einsum("ij,ij->i", residual[:, 1:], residual[:, :-1])
    phi = np.clip(lag / np.where(rr > 0, rr, 1.0), 0.0, 0.99)
    return rr / max(n - params, 1) * (1 + phi) / (1 - phi), phi


def break_z2(y: FloatArray, side: int) -> FloatArray:
    """z² of the best break of each row of ``y`` (2-D) against its best broken line, in AR(1)
    long-run units of the two lines' residuals (:func:`break_scan`): the statistic
    :data:`BREAK_TABLE_Z2` bounds."""
    _, gain, resid, *_ = break_scan(y, side)
    variance, _ = long_run_rows(resid, 4)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(variance > 0, gain / variance, 0.0)


def break_tail_probability(length: int, z2: float) -> float:
    """The inverse of :func:`critical_break_z2` (at most the table's largest p, .1)."""
    return kinks.tail_probability(length, z2, BREAK_TABLE_Z2)


def best_break(
    y: FloatArray,
    *,
    alpha: float,
    side: int,
    min_effect: float = 0.0,
    min_relative_change: float = 0.0,
    cost: kinks.Cost | None = None,
    log_levels: bool = False,
) -> Break | None:
    """The best break of the segment ``y`` into two lines when it passes the gates a step
    passes (:func:`best_step`): **significant** against the best broken line
    (:data:`BREAK_TABLE_Z2` at ``alpha``), its jump **large** (``min_effect`` robust σ of the
    two lines' residuals, and the relative floor), with ``cost`` **worth its cost** and **not
    a spike**; else None."""
    n = y.size
    side = max(side, kinks.MIN_SIDE)
    if n < max(kinks.MIN_LENGTH, 2 * side + 3):
        return None
    k_, gain_, resid_, jump_, before_, after_ = break_scan(y[None, :], side)
    k, gain, resid, jump = int(k_[0]), float(gain_[0]), resid_[0], float(jump_[0])
    variance_, phi_ = long_run_rows(resid[None, :], 4)
    # residuals of float rounding are not noise (as for a kink)
    variance = max(float(variance_[0]), grid.float_sigma(float(np.max(np.abs(y)))) ** 2)
    phi = float(phi_[0])
    if variance <= 0.0:
        return None
    z2, bar = gain / variance, critical_break_z2(n, alpha)
    if z2 <= bar:
        return None
    if not _large(abs(jump), y, resid, min_effect, min_relative_change, log_levels):
        return None
    if cost is not None:
        shorter = min(k, n - k)
        price = cost(n, shorter, n * (1 - phi) / (1 + phi))
        if z2 < price:
            return None
        # not a spike: it still pays with the reading of its shorter side that favours it
        # most over the best broken line set on that line
        bend = kinks.best_kink(y, side)
        if bend is None:
            return None
        kinked = bend.residual - bend.numerator / bend.denominator * bend.hinge
        part = slice(0, k) if k <= n - k else slice(k, n)
        favour = kinked[part] ** 2 - resid[part] ** 2
        i = int(np.argmax(favour)) + (part.start or 0)
        without = y.copy()
        without[i] -= kinked[i]
        if float(break_scan(without[None, :], side)[1][0]) / variance < price:
            return None
    return Break(
        k, jump, float(before_[0]), float(after_[0]), z2, bar, break_tail_probability(n, z2), phi
    )
