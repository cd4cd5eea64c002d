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
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.stats import norm

FloatArray = NDArray[np.float64]


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
