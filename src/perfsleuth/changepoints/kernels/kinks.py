"""Changes of growth rate (a kink: the slope changes, the line stays continuous).

The level search answers "when did the mean change?" and removes at most one common slope
inside its segments (``search``, step 6 of ``docs/changepoints.md``). A growth rate that
changes (disk usage filling faster, a population or an index whose growth bends) is then no
change point at all. On a series whose trend the level search kept, each of its final
segments is searched for the best single kink (on one with no slope kept, the whole series,
for a broken line that may replace its level points: ``search._broken_line_instead``) — its
own line plus a hinge ``max(0, t − k)`` — and the kink is kept when it passes the same kind
of gates a level point passes:

* **significant**: z², the hinge's squared t in long-run noise units (AR(1) plug-in: the
  residuals' white variance times (1 + φ) / (1 − φ), φ their lag-1 autocorrelation about the
  kinked line), above the critical value of the best kink of a straight line in AR(1) noise
  at the level spent on the segment's length (α · length / n). The null distribution depends
  on the true φ, which 20–100 readings cannot pin down (the plug-in φ is biased low), so the
  critical value is the *largest* over φ ∈ {0, .3, .5, .7, .8, .9} of the simulated quantile
  (``scripts/make_kink_table.py``): the test has size at most α for every φ up to .9 (the
  largest is always at .9 below 1,000 readings; at n = 40, p = .05 it is 44.9 against 6.9 for
  white noise). A random walk (φ = 1) is beyond it: its drift bends as often as it likes;
* **large**: the slope change moves the line at least ``min_effect`` noise σ (robust σ of
  the residuals about the kinked line) over its shorter side, and, with a relative floor,
  that fraction of the largest fitted level on that side (on a log scale, ``log_levels``, a
  move m is itself relative: 1 − e^−m);
* **worth its cost**: z² at least the level points' cost of a split with the same shorter
  side (``search._cost``, with ν = n (1 − φ) / (1 + φ) independent readings);
* **not a spike**: it still pays that cost without the one reading of its shorter side that
  supports it most.

A kept kink splits its segment, and both parts are searched again (binary segmentation on
slopes), each with its own line. Binary segmentation is blind to two bends that undo each other
(flat → ramp → flat: no one-kink line fits it, and the misfit reads as persistent noise), so
where the caller asks (``windows``), a series whose best kink fails is also searched in its two
two-thirds windows, each holding one such bend alone: at half a window's spent level, only
with noise about the window's kinked line whose memory the table covers, and still the best
kink between its final neighbours once the search ends. Then every kink is judged again
between its final neighbours until they settle, as the level points are (:func:`_settled`).
Kinks are searched on one-column series only.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from perfsleuth.changepoints.kernels import grid
from perfsleuth.stats import robust as robust_mod
from perfsleuth.stats.sums import paired

FloatArray = npt.NDArray[np.float64]

# The critical z² of the best kink of a straight line (its own line fitted) in stationary
# Gaussian AR(1) noise, the largest over φ ∈ {0, .3, .5, .7, .8, .9}: rows the segment length,
# columns the tail probability. Made by ``scripts/make_kink_table.py`` (20,000 series per
# (n, φ), 5,000 from 2,000 readings on; seed 20261128; shorter side at least 5 readings), each
# row then raised to the largest of the rows for longer segments, so that simulation noise
# cannot make a shorter segment's bar the lower one.
TABLE_N = (20, 25, 30, 40, 50, 60, 80, 100, 120, 160, 200, 300, 400, 600, 800, 1000, 2000, 5000)
TABLE_P = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
TABLE_Z2: tuple[tuple[float, ...], ...] = (
    (238.41, 196.70, 144.60, 113.91, 86.89, 56.96, 37.31),  # n = 20
    (238.41, 196.70, 144.60, 113.91, 85.33, 54.87, 35.88),  # n = 25
    (238.41, 196.70, 144.60, 112.56, 85.33, 52.27, 34.42),  # n = 30
    (187.84, 146.50, 117.11, 90.07, 68.83, 44.89, 29.44),  # n = 40
    (187.84, 146.50, 103.88, 78.59, 60.22, 38.81, 25.34),  # n = 50
    (159.00, 127.06, 91.16, 69.34, 52.68, 33.62, 22.48),  # n = 60
    (119.17, 93.98, 70.81, 56.11, 42.34, 26.81, 18.28),  # n = 80
    (84.23, 75.67, 59.49, 43.47, 33.54, 22.35, 15.44),  # n = 100
    (81.11, 64.53, 50.53, 39.85, 30.82, 20.42, 13.97),  # n = 120
    (52.29, 45.26, 37.58, 30.22, 23.74, 16.66, 11.59),  # n = 160
    (46.36, 38.45, 30.56, 25.40, 20.40, 14.11, 10.19),  # n = 200
    (37.13, 31.21, 24.45, 20.16, 15.96, 11.32, 8.45),  # n = 300
    (30.69, 26.39, 21.34, 17.36, 13.95, 10.24, 7.61),  # n = 400
    (24.69, 21.23, 17.77, 14.86, 12.23, 9.10, 7.07),  # n = 600
    (21.38, 18.59, 16.10, 13.56, 11.21, 8.54, 7.04),  # n = 800
    (19.68, 17.70, 15.01, 12.98, 10.69, 8.54, 7.04),  # n = 1000
    (18.37, 15.89, 13.78, 11.65, 10.27, 8.54, 7.04),  # n = 2000
    (18.37, 15.89, 13.10, 11.42, 10.27, 8.54, 7.04),  # n = 5000
)

TABLE_PHI_MAX = 0.9  # the largest φ the table's bars were simulated at: its size holds up to it
_CANCELLATION = 1e-9  # of the largest, a hinge's spread below rounding error (float64 ~ 1e-16 n³)
MIN_SIDE = 5  # fewest readings on either side of a kink: a slope needs more than a level
_NOISE_FREE = 1e-9  # residuals spanning less of the series' range: rounding, not noise
_PHI_TOLERANCE = 1e-9  # a φ this close to a cap is at it
_WINDOW = 2 / 3  # of the series, each of the two windows searched when its best kink fails
_WINDOW_SHARE = 0.5  # of a window's level: the two spend 2/3 of the series' level more
MIN_LENGTH = 20  # shortest segment searched (the trend's own shortest series)
_SETTLE_ROUNDS = 10  # of judging the kinks again between their neighbours (2–3 settle them)


@dataclass(frozen=True, slots=True)
class Kink:
    """A kept change of slope at ``index`` (the line's vertex) of the segment
    ``start``–``stop``: slopes per reading either side, z² against its critical value."""

    index: int
    start: int
    stop: int
    slope_before: float
    slope_after: float
    statistic: float
    critical_value: float
    p_value: float
    alpha: float
    phi: float
    effect: float


def _suffix(a: FloatArray) -> FloatArray:
    """s[k] = sum of a[t] for t > k (along the last axis)."""
    out = np.zeros_like(a)
    out[..., :-1] = np.cumsum(a[..., ::-1], axis=-1)[..., ::-1][..., 1:]
    return out


@dataclass(frozen=True, slots=True)
class _Scan:
    k: int
    numerator: float  # hinge · residuals about the line
    denominator: float  # |hinge less its projection on the line|²
    hinge: FloatArray  # the chosen hinge less its projection on the line
    residual: FloatArray  # residuals about the line
    slope: float  # the line's, per reading
    lean: float  # the slope of the hinge's projection on the line (before the vertex: −lean)


def best_kink(y: FloatArray, side: int) -> _Scan | None:
    """The hinge that most reduces the residual sum of squares about ``y``'s straight line,
    with at least ``side`` readings either side of the vertex; O(n) by suffix sums."""
    n = y.size
    if n - 2 * side <= 0:
        return None
    t = np.arange(n, dtype=np.float64)
    tc = t - t.mean()
    stt = float(tc @ tc)
    slope = float(tc @ y) / stt
    # y − ȳ − slope · tc, max(t − j, 0) and h − h̄ − lean · tc in four arrays, not ten
    work = np.multiply(tc, slope)
    residual = np.subtract(y, y.mean())
    residual -= work
    numerator, denominator, gains = _hinge_terms(residual)
    j = side + int(np.argmax(gains[side : n - side]))
    h = np.subtract(t, j, out=work)
    np.maximum(h, 0.0, out=h)
    lean = float(tc @ h) / stt
    hinge = np.subtract(h, h.mean(), out=h)
    hinge -= np.multiply(tc, lean, out=gains)
    return _Scan(j, float(numerator[j]), float(denominator[j]), hinge, residual, slope, lean)


def hinge_gains(residual: FloatArray) -> FloatArray:
    """For each vertex k, how much the hinge ``max(0, t − k)`` lowers the residual sum of
    squares about the line (``residual``: about it; each row of a 2-D array its own series):
    (hinge · residual)² / |hinge less its projection on the line|², 0 where that is not
    measured."""
    return _hinge_terms(residual)[2]


def _hinge_terms(residual: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(hinge · residual, |hinge less its projection on the line|², gain) at each vertex
    (:func:`hinge_gains`)."""
    # the arithmetic of the plain expressions, step by step into few arrays: fresh ones, each
    # with its page faults, made it 37 ms for a million readings, 22 now
    n = residual.shape[-1]
    t = np.arange(n, dtype=np.float64)
    tc = t - t.mean()
    stt = float(tc @ tc)
    # the suffix sums of t · residual and of residual, both in one running sum
    # (``sums.paired``: 10⁵ readings, two of .33 ms → one)
    pair = paired(np.multiply(t, residual), residual)
    both = _suffix_into(pair, np.empty_like(pair))
    later = np.multiply(both.imag, t)
    numerator = np.subtract(both.real, later)
    # |hinge less its projection on the line|² at each vertex k, in closed form: its `after`
    # values 1 … a (a = n − 1 − k) sum to a(a + 1)/2, their squares to that times (2a + 1)/3,
    # and their products with t − t̄ = k + j − t̄ to (k − t̄) Σh + Σh²
    after = np.subtract(n - 1, t, out=t)
    sum_h = np.add(after, 1, out=later.reshape(-1)[:n])
    sum_h *= after
    sum_h /= 2
    sum_hh = np.multiply(after, 2, out=after)
    sum_hh += 1
    sum_hh *= sum_h
    sum_hh /= 3
    sum_htc = np.multiply(tc, sum_h, out=tc)
    sum_htc += sum_hh
    denominator = sum_hh  # Σh² − (Σh)²/n − (Σ h (t − t̄))²/Σ(t − t̄)²
    sum_h *= sum_h
    sum_h /= n
    denominator -= sum_h
    sum_htc *= sum_htc
    sum_htc /= stt
    denominator -= sum_htc
    # under a billionth of the largest, a kink is not measured: near the start the hinge is
    # almost the line itself (the terms, each ~ n³, cancel to their rounding error), near the
    # end of a long series it spans a few readings
    measured = denominator > _CANCELLATION * float(denominator.max())
    first = int(np.argmax(measured))
    stop = n - int(np.argmax(measured[::-1]))
    # one run, as it is but for rounding: divided on a slice (a ``where`` mask, 1.3 ms a
    # million, against .9)
    if measured[first] and np.count_nonzero(measured) == stop - first:
        gain = tc if numerator.ndim == 1 else np.empty_like(numerator)
        gain[..., :first] = 0.0
        gain[..., stop:] = 0.0
        part = gain[..., first:stop]
        np.multiply(numerator[..., first:stop], numerator[..., first:stop], out=part)
        np.divide(part, denominator[first:stop], out=part)
    else:
        gain = np.zeros_like(numerator)
        np.divide(np.multiply(numerator, numerator, out=later), denominator, out=gain,
                  where=measured)  # fmt: skip
    return numerator, denominator, gain


_Summed = TypeVar("_Summed", npt.NDArray[np.float64], npt.NDArray[np.complex128])


def _suffix_into(a: _Summed, out: _Summed) -> _Summed:
    """:func:`_suffix` of ``a`` written into ``out`` (the same sums, in the same order; real
    or complex: ``sums.paired``)."""
    out[..., -1] = 0.0
    np.cumsum(a[..., :0:-1], axis=-1, out=out[..., -2::-1])
    return out


Table = tuple[tuple[float, ...], ...]  # critical z², rows TABLE_N, columns TABLE_P


@functools.lru_cache(maxsize=1024)  # a search asks again at every segment length it judges
def _row(length: int, table: Table) -> FloatArray:
    """log z² at each of :data:`TABLE_P` for ``length``: linear in log n between the grid's
    lengths, the end rows beyond them (read-only: it is shared)."""
    logs = np.log(np.asarray(table))
    ln = min(max(math.log(length), math.log(TABLE_N[0])), math.log(TABLE_N[-1]))
    row = np.array([np.interp(ln, np.log(TABLE_N), logs[:, j]) for j in range(len(TABLE_P))])
    row.flags.writeable = False
    return row


def critical_z2(length: int, alpha: float, table: Table = TABLE_Z2) -> float:
    """The bar of ``table`` (the kinks' :data:`TABLE_Z2`) at ``length`` and tail probability
    ``alpha``: log z² linear in log p, extended along its first two columns below the
    smallest p."""
    row, lp, x = _row(length, table), np.log(TABLE_P), math.log(alpha)
    if x < lp[0]:
        slope = (row[1] - row[0]) / (lp[1] - lp[0])
        return float(math.exp(row[0] + slope * (x - lp[0])))
    return float(math.exp(np.interp(x, lp, row)))


def tail_probability(length: int, z2: float, table: Table = TABLE_Z2) -> float:
    """The inverse of :func:`critical_z2` (at most the table's largest p, .1)."""
    row, lp = _row(length, table), np.log(TABLE_P)
    y = math.log(max(z2, np.finfo(float).tiny))
    if y > row[0]:
        slope = (row[1] - row[0]) / (lp[1] - lp[0])
        return float(math.exp(lp[0] + (y - row[0]) / slope))
    return float(math.exp(np.interp(y, row[::-1], lp[::-1])))


def long_run(residual: FloatArray, rounding: float = 0.0) -> tuple[float, float]:
    """(long-run variance, φ) of AR(1) noise with these residuals (3 parameters fitted).

    ``rounding``: the σ of the values' rounding error (``grid``; 0 for real-valued data).
    That share of the residuals' variance is rounding, not persistence: about a smooth curve
    it is a saw tooth whose lag-1 correlation the plug-in reads as φ near 1, yet a hinge (a
    ramp over many teeth) barely projects on it — so it counts once, as white noise, and only
    the variance beyond it is scaled by (1 + φ) / (1 − φ). The φ returned is the one that
    scaling implies for all of it. Without this, a rounded curve with no noise got one kink
    where it needs several (√t rounded, 200 readings: 5 level points)."""
    rr = float(residual @ residual)
    if rr <= 0.0:
        return 0.0, 0.0
    phi = min(max(float(residual[1:] @ residual[:-1]) / rr, 0.0), 0.99)
    white = rr / max(residual.size - 3, 1)
    if rounding <= 0.0:
        return white * (1 + phi) / (1 - phi), phi
    grain = min(rounding**2, white)
    variance = grain + (white - grain) * (1 + phi) / (1 - phi)
    ratio = variance / white
    return variance, (ratio - 1) / (ratio + 1)


def rounding_share(fitted: FloatArray, rounding: float) -> float:
    """The rounding σ (q/√12) times the share of a grid step q the fitted values travel (at
    most 1): a quantity that stays within one cell is rounded by a constant, part of its level
    (``search._rounding_floor`` floors its fits' σ at it)."""
    if rounding <= 0.0:
        return 0.0
    step = math.sqrt(12.0) * rounding
    return rounding * min(1.0, float(np.ptp(fitted)) / step)


Cost = Callable[[int, int, float], float]  # (segment length, shorter side, ν) → bar on z²


def pays_without_a_spike(
    numerator: float,
    denominator: float,
    regressor: FloatArray,
    residual: FloatArray,
    part: slice,
    variance: float,
    bar: float,
) -> bool:
    """Whether a change (``regressor`` less its projection on the line; z² = numerator² /
    denominator / variance) still reaches ``bar`` without the reading of its shorter side
    ``part`` that supports it most: a change resting on one reading is a spike."""
    terms = regressor[part] * residual[part] * math.copysign(1.0, numerator)
    i = int(np.argmax(terms)) + (part.start or 0)
    without = numerator - regressor[i] * residual[i]
    rest = denominator - regressor[i] ** 2
    return bool(rest > 0.0 and without**2 / rest / variance >= bar)


def noise_free(y: FloatArray, resid: FloatArray) -> bool:
    """Whether residuals ``resid`` span a negligible share of ``y``'s range: rounding, not
    noise."""
    return float(np.ptp(resid)) <= _NOISE_FREE * float(np.ptp(y))


def memory_covered(y: FloatArray, resid: FloatArray) -> bool:
    """Whether the noise ``resid`` about a broken line through ``y`` has a memory the table's
    bars hold for: the φ its long-run scale implies (blocks, which see the long range) below
    :data:`TABLE_PHI_MAX` and below the memory ``y``'s length can measure. Beyond either, a
    bend is the noise's own wander (an M/M/1 busy period rises and falls). Noise-free
    residuals are covered. The memory is of the readings the line does not fit exactly:
    idle zeros fitted exactly are no noise, and half a series idle made the blocks' scale
    of the rest look like a φ of .94 (idle, a ramp, idle again)."""
    if noise_free(y, resid):
        return True
    moving = resid[np.abs(resid) > _NOISE_FREE * float(np.ptp(y))]
    implied = robust_mod.long_run_noise(moving)[2]
    return implied < min(TABLE_PHI_MAX, robust_mod.memory_cap(moving.size)) - _PHI_TOLERANCE


def judge(
    y: FloatArray,
    *,
    alpha: float,
    side: int,
    min_effect: float,
    min_relative_change: float,
    cost: Cost,
    log_levels: bool = False,
    rounding: float = 0.0,
    memory: bool = False,
) -> Kink | None:
    """The best kink of ``y`` (one segment) when it passes every gate, else None. ``memory``:
    also when the noise about the kinked line has a memory the table covers
    (:func:`memory_covered`)."""
    n = y.size
    scan = best_kink(y, side)
    if scan is None or scan.denominator <= 0.0:
        return None
    beta = scan.numerator / scan.denominator
    resid = np.multiply(scan.hinge, beta)
    np.subtract(scan.residual, resid, out=resid)
    # the fitted values, y − resid, only where they are read (most kinks fail before; a
    # judgement of 10⁶ readings 62–66 → 57 ms with the residuals in one array)
    share = rounding_share(y - resid, rounding) if rounding > 0.0 else 0.0
    variance, phi = long_run(resid, share)
    if variance <= 0.0:
        return None
    # residuals of float rounding are not noise (an exact line's made a kink every 5 readings)
    variance = max(variance, grid.float_sigma(float(np.max(np.abs(y)))) ** 2)
    z2 = scan.numerator**2 / scan.denominator / variance
    critical = critical_z2(n, alpha)
    # the memory's blocks after the cheap gate: most windows' best kinks fail it
    if z2 <= critical or (memory and not memory_covered(y, resid)):
        return None
    shorter = min(scan.k, n - 1 - scan.k)
    sigma = robust_mod.robust_scale(resid)
    move = abs(beta) * shorter
    if sigma > 0.0 and move < min_effect * sigma:
        return None
    part = slice(0, scan.k + 1) if scan.k <= n - 1 - scan.k else slice(scan.k, n)
    near = y[part] - resid[part]
    if log_levels:
        if -math.expm1(-move) < min_relative_change:
            return None
    elif move < min_relative_change * float(np.max(np.abs(near))):
        return None
    independent = n * (1 - phi) / (1 + phi)
    bar = cost(n, shorter, independent)
    if z2 < bar:
        return None
    if not pays_without_a_spike(scan.numerator, scan.denominator, scan.hinge, scan.residual,
                                part, variance, bar):  # fmt: skip
        return None
    # the kinked line before its vertex: the line's slope, less β times the hinge's lean
    slope_before = scan.slope - beta * scan.lean
    return Kink(
        index=scan.k,
        start=0,
        stop=n,
        slope_before=slope_before,
        slope_after=slope_before + beta,
        statistic=z2,
        critical_value=critical,
        p_value=tail_probability(n, z2),
        alpha=alpha,
        phi=phi,
        effect=move / sigma if sigma > 0 else math.inf,
    )


def find_kinks(
    y: FloatArray,
    bounds: list[int],
    *,
    alpha: float,
    spend: bool,
    min_size: int,
    min_effect: float,
    min_relative_change: float,
    cost: Cost,
    log_levels: bool = False,
    rounding: float = 0.0,
    most: int | None = None,
    windows: bool = False,
) -> list[Kink]:
    """Kinks inside each segment of ``bounds`` (0 … n) of the one-column series ``y``: the
    best kink of a segment, when kept, splits it and both parts are searched again. Each
    segment is tested at α · its length / n (``spend``), else at α. ``most``: stop once more
    than that many are found (the caller then wants none of them). ``windows``: when the whole
    series' best kink fails, search its two-thirds windows (see the module's docstring)."""
    n = y.size
    side = max(min_size, MIN_SIDE)
    found: list[Kink] = []
    todo = [(a, b) for a, b in itertools.pairwise(bounds)]

    def judged(a: int, b: int, share: float = 1.0, memory: bool = False) -> Kink | None:
        if b - a < max(MIN_LENGTH, 2 * side + 1):
            return None
        kink = judge(
            y[a:b],
            alpha=share * (alpha * (b - a) / n if spend else alpha),
            side=side,
            min_effect=min_effect,
            min_relative_change=min_relative_change,
            cost=cost,
            log_levels=log_levels,
            rounding=rounding,
            memory=memory,
        )
        return (
            None
            if kink is None
            else dataclasses.replace(kink, index=a + kink.index, start=a, stop=b)
        )

    opened: Kink | None = None  # the kink a window found, on which every other then rests
    while todo and (most is None or len(found) <= most):
        a, b = todo.pop()
        kink = judged(a, b)
        if kink is None and windows and (a, b) == (0, n):
            # two bends that undo each other: each two-thirds window holds one alone. Once a
            # series, at half a window's level (the two spend 2/3 of the series' level more),
            # with noise the table covers (M/M/1 busy periods are bumps too: without it, 2 of
            # 400 response series at N = 1,000, ρ = .8 got a false kink, and 1 at N = 100)
            part = round(_WINDOW * n)
            tries = [judged(w, w + part, _WINDOW_SHARE, memory=True) for w in (0, n - part)]
            kink = max((k for k in tries if k is not None), default=None,
                       key=lambda k: k.statistic / k.critical_value)  # fmt: skip
            opened = None if kink is None else dataclasses.replace(kink, start=a, stop=b)
            kink = opened
        if kink is None:
            continue
        found.append(kink)
        todo += [(a, kink.index), (kink.index, b)]
    found.sort(key=lambda k: k.index)
    if opened is not None:
        # every other kink rests on the window's (the whole series' best kink failed), so it
        # must still be the best kink between its final neighbours, passing every gate there:
        # its size is how far the line moves before the next bend (a −10% crash in growth,
        # two bends 15 readings apart, moved each window's line by more than its 11% floor;
        # re-placed anywhere between them, it passed at the crash's last few readings)
        at = [0, *(k.index for k in found), n]
        i = at.index(opened.index)
        again = judged(at[i - 1], at[i + 1])
        if again is None or abs(again.index - opened.index) > side:
            return []
    if most is not None and len(found) > most:
        return found
    return _settled(found, bounds, judged, max(MIN_LENGTH, 2 * side + 1))


def _settled(
    found: list[Kink],
    bounds: list[int],
    judged: Callable[[int, int], Kink | None],
    shortest: int,
) -> list[Kink]:
    """``found`` (sorted), each kink judged again between its final neighbours — the kinks
    beside it or its segment's bounds — until they settle: the weakest that fails there goes,
    and one that passes moves to the best kink there (left to right, so none crosses another).
    Binary segmentation places a segment's first kink where one bend best fits the segment's
    every bend, and never looks at it again: flat → ramp → flat in 10,000 readings got its
    first kink at 79%, between the ramp's end (70%) and the series' end, where it stayed
    beside the two found later. A kink between neighbours closer than ``shortest`` cannot be
    judged again and stays."""
    for _ in range(_SETTLE_ROUNDS):
        edges = sorted({*bounds, *(k.index for k in found)})
        before = [k.index for k in found]
        weakest: tuple[float, int] | None = None
        for j, kink in enumerate(found):
            i = edges.index(kink.index)
            a, b = edges[i - 1], edges[i + 1]
            if b - a < shortest:
                continue
            again = judged(a, b)
            if again is None:
                ratio = kink.statistic / kink.critical_value
                if weakest is None or ratio < weakest[0]:
                    weakest = (ratio, j)
            else:
                found[j] = again
                edges[i] = again.index
        if weakest is not None:
            del found[weakest[1]]
        elif [k.index for k in found] == before:
            break
    return found


def broken_line(
    y: FloatArray, bounds: list[int], found: list[Kink], model: FloatArray
) -> FloatArray:
    """``model`` with each segment of ``bounds`` that holds a kink of ``found`` replaced by its
    least-squares line plus one hinge per kink inside it. A kink at a bound is a crash where
    the growth changes (``search._breaks``): the segments either side each have their
    own line."""
    out = np.array(model, dtype=np.float64)
    for a, b in itertools.pairwise(bounds):
        inside = [k.index - a for k in found if a < k.index < b]
        if not inside and not any(k.index in (a, b) for k in found):
            continue
        t = np.arange(b - a, dtype=np.float64)
        design = np.column_stack([np.ones(b - a), t, *(np.maximum(t - k, 0.0) for k in inside)])
        coef, *_ = np.linalg.lstsq(design, y[a:b], rcond=None)
        out[a:b] = design @ coef
    return out
