"""Where CPU the transactions do not explain came and went: an anomaly's edges in time.

One CPU model fitted on all the normal windows predicts each window's CPU from its
transactions; a process outside the workload (a hog) adds CPU the model does not predict for
as long as it runs. Its **edges** are where a level of excess explains the windows better
than none: :func:`excess_stretch` finds, within a region, the stretch ``[s, e)`` that
maximises the likelihood gain of "a level of excess there, none elsewhere" over "none"
(Gaussian): a window joins it when its excess is above about half the stretch's, and a hog
whose CPU varies keeps its milder edge windows (likelier under its own spread than under
none). So the edges fall where the hog starts and stops, not where a segment of the CPU
model happened to be cut.

Whether the excess stands out is judged against how far the model misses every other stretch
of windows as long as it (:func:`stretch_spread`: the robust spread of their mean excess per
second). On a busy shared host a linear CPU model misses one mix by more than another — by
10–60% between mixes on this machine — and that error, not a window's noise, is what an
excess must beat.

A hog of a tenth of a core that the segmentation did not set apart is found by a scan for
**lasting** excess (:func:`lasting_stretch`, lengths from ``min_duration`` up): within a
window's miss, it is not within a minute's. Each window's excess is tamed first
(:func:`clipped`), so that a burst of a few seconds is no lasting excess, and the best
stretch must also beat the same scan on this run's own misses redrawn in blocks
(:func:`scan_bar`): the search over places and lengths finds something by chance.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.stats import norm

FloatArray = NDArray[np.float64]

# how many stretches' worth of windows the spread of a stretch's mean is read from
_PIECES = 5


def excess_stretch(rate: FloatArray, noise: float, lo: int, hi: int) -> tuple[int, int]:
    """The stretch ``[s, e)`` of ``[lo, hi)`` where a level of excess explains the windows best.

    ``rate`` is each window's excess CPU per second (cores), ``noise`` its spread where there
    is none. First the stretch that maximises the likelihood gain of "one level of excess
    there, none elsewhere" over "none" (Gaussian, one spread): ``(Σ y)² / n``, its first and
    last windows in excess — a window joins it when its excess is above about half the
    stretch's. Then a hog whose CPU varies keeps its milder edge windows: the window next to
    either edge joins while it is in excess and likelier under the stretch's own mean and
    spread (at least ``noise``) than under none. ``(lo, lo)`` when no window is in excess.
    """
    y = rate[lo:hi]
    cum = np.concatenate([[0.0], np.cumsum(y)])
    best, s, e = 0.0, 0, 0
    for start in range(hi - lo):
        if y[start] <= 0:
            continue  # a window below the model starts no anomaly
        total = cum[start + 1 :] - cum[start]
        n = np.arange(1, hi - lo - start + 1, dtype=np.float64)
        gain = np.where((total > 0) & (y[start:] > 0), total * total / n, 0.0)
        j = int(np.argmax(gain))
        if gain[j] > best:
            best, s, e = float(gain[j]), start, start + j + 1
    if e <= s:
        return lo, lo
    level = float(np.mean(y[s:e]))
    spread = max(float(np.std(y[s:e])), noise)

    def inside(i: int) -> bool:
        return bool(y[i] > 0 and norm.logpdf(y[i], level, spread) >= norm.logpdf(y[i], 0.0, noise))

    while s > 0 and inside(s - 1):
        s -= 1
    while e < len(y) and inside(e):
        e += 1
    return lo + s, lo + e


def stretch_spread(excess: FloatArray, width: FloatArray, length: int) -> float:
    """How far the model misses stretches of ``length`` windows: the robust spread (scaled MAD)
    of the mean excess per second over every run of ``length`` consecutive windows. NaN with
    fewer than ``2 × length`` windows."""
    if length < 1 or len(excess) < 2 * length:
        return math.nan
    x = np.concatenate([[0.0], np.cumsum(excess)])
    w = np.concatenate([[0.0], np.cumsum(width)])
    means = (x[length:] - x[:-length]) / (w[length:] - w[:-length])
    return float(1.4826 * np.median(np.abs(means - np.median(means))))


def clipped(
    excess: FloatArray, width: FloatArray, reference: FloatArray, reach: float
) -> FloatArray:
    """Each window's excess with its rate (per second) held within ``reach`` robust standard
    deviations (scaled MAD of ``reference``, rates of windows with no excess) of zero: a
    lasting excess keeps nearly all of its level, a burst of a few windows counts no more
    than a few windows at that bound."""
    spread = 1.4826 * float(np.median(np.abs(reference - np.median(reference))))
    if not spread > 0:
        return excess.copy()
    bound = reach * spread
    return np.clip(excess / width, -bound, bound) * width


def _running(
    excess: FloatArray, width: FloatArray, length: int, away: NDArray[np.bool_]
) -> tuple[FloatArray, NDArray[np.bool_], float]:
    """The mean excess per second of every run of ``length`` windows, which runs touch no
    window ``away``, and the robust spread (scaled MAD) of those means: NaN when the windows
    not ``away`` hold fewer than five runs (:data:`_PIECES`) or fewer than two such runs."""
    x = np.concatenate([[0.0], np.cumsum(excess)])
    w = np.concatenate([[0.0], np.cumsum(width)])
    blocked = np.concatenate([[0], np.cumsum(away)])
    means = (x[length:] - x[:-length]) / (w[length:] - w[:-length])
    clear = (blocked[length:] - blocked[:-length]) == 0
    if len(excess) - int(away.sum()) < _PIECES * length or clear.sum() < 2:
        return means, clear, math.nan
    ok = means[clear]
    return means, clear, float(1.4826 * np.median(np.abs(ok - np.median(ok))))


def lasting_stretch(
    excess: FloatArray,
    width: FloatArray,
    least: int,
    away: NDArray[np.bool_],
    margin: int = 0,
) -> tuple[int, int, float]:
    """The stretch of at least ``least`` windows, none ``away`` and ``margin`` windows of the
    data on either side (it came and went), whose mean excess per second stands out most
    against how far the model misses every stretch as long that touches none ``away`` (the
    robust spread of their means; independent-ish noise, neighbours alike and a miss per
    mix all in it): ``(start, stop, ratio)``, ``(0, 0, nan)`` when there is none. Lengths
    from ``least`` up, each 1.25 times the last, while the windows not ``away`` hold five
    (a robust spread of fewer is too noisy to judge by)."""
    free = int(len(excess) - away.sum())
    best: tuple[int, int, float] = (0, 0, math.nan)
    length = max(1, least)
    while _PIECES * length <= free:
        means, clear, spread = _running(excess, width, length, away)
        # a stretch that came and went: ``margin`` windows of the data on either side
        inside = clear.copy()
        inside[: max(0, margin)] = False
        inside[max(0, len(inside) - margin) :] = False
        if spread > 0 and inside.any():
            s = int(np.flatnonzero(inside)[np.argmax(means[inside])])
            ratio = float(means[s]) / spread
            if not ratio <= best[2]:
                best = (s, s + length, ratio)
        length = max(length + 1, round(length * 1.25))
    return best


def scan_bar(
    excess: FloatArray,
    width: FloatArray,
    least: int,
    away: NDArray[np.bool_],
    alpha: float,
    draws: int = 99,
) -> float:
    """The ``1 − alpha`` quantile of :func:`lasting_stretch`'s ratio (``least`` windows and
    more, as many on either side) on series of this run's misses with no lasting excess: the
    windows not ``away`` redrawn in blocks of ``least`` (a moving-block bootstrap, seeded),
    so that each stretch keeps a window's noise, its neighbours' likeness and a mix's miss
    up to a block, but no stretch longer than a block holds an excess. The same search over
    lengths and places finds a ratio this high by chance in ``alpha`` of them. NaN when the
    windows hold fewer than five blocks."""
    y = excess[~away] / width[~away]
    n = len(y)
    block = max(1, least)
    if n < _PIECES * block:
        return math.nan
    rng = np.random.default_rng(0)
    starts = np.arange(n - block + 1)
    count = math.ceil(n / block)
    ones = np.ones(n)
    free = np.zeros(n, dtype=bool)
    ratios = []
    for _ in range(draws):
        picks = rng.choice(starts, size=count)
        series = np.concatenate([y[p : p + block] for p in picks])[:n]
        ratios.append(lasting_stretch(series, ones, block, free, block)[2])
    finite = np.asarray([r for r in ratios if math.isfinite(r)])
    return float(np.quantile(finite, 1 - alpha)) if len(finite) else math.nan
