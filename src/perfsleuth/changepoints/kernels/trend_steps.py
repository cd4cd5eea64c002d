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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perfsleuth.changepoints.kernels import kinks
from perfsleuth.stats import robust as robust_mod

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
    numerator = np.cumsum(residual[::-1])[::-1]
    above_tc = np.cumsum(tc[::-1])[::-1]
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
    sigma = robust_mod.robust_scale(resid)
    move = abs(beta)
    if sigma > 0.0 and move < min_effect * sigma:
        return None
    if log_levels:
        if -math.expm1(-move) < min_relative_change:
            return None
    elif move < min_relative_change * float(np.max(np.abs(y - resid))):
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
