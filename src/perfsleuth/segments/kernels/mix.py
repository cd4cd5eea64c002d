"""Workload regimes: the stretches of windows over which each type's arrival rate holds.

A workload is a mix and a rate: in a regime, type ``i`` arrives at its own rate ``λ_i`` and a
window of ``w`` seconds holds about ``Poisson(λ_i w)`` of it. :func:`mix_regimes` cuts the
windows where those rates change, by binary segmentation of the Poisson likelihood (each cut
must gain more deviance than a BIC penalty of ``k + 1`` parameters, in units of the counts'
own dispersion, read off neighbouring windows), every regime at least ``least`` windows long.
It is what the detector calls "a later workload" when it asks whether a type's step holds in
each (``detector._in_each_regime``): a change of code moves a type whatever the mix, a
contention effect moves with it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["mix_regimes"]

FloatArray = NDArray[np.float64]

# the median of a chi-square with one degree of freedom: the dispersion is read off the
# median of squared standardised differences, which a few regime changes do not move
_CHI2_1_MEDIAN = 0.454936


def mix_regimes(counts: ArrayLike, width: ArrayLike, least: int) -> NDArray[np.intp]:
    """Per window (rows of ``counts``, windows × types, time order; ``width`` in seconds) the
    number of its workload regime, 0, 1, … (see the module docstring)."""
    n = np.nan_to_num(np.asarray(counts, dtype=np.float64))
    w = np.asarray(width, dtype=np.float64).reshape(-1)
    m, k = n.shape
    if len(w) != m:
        raise ValueError(f"counts has {m} windows, width {len(w)}")
    cum_n = np.vstack([np.zeros(k), np.cumsum(n, axis=0)])
    cum_w = np.concatenate([[0.0], np.cumsum(w)])
    bar = (k + 1) * math.log(max(m, 2)) * _dispersion(n.sum(axis=1), w)
    cuts: list[int] = []
    pending = [(0, m)]
    while pending:
        a, b = pending.pop()
        if b - a < 2 * max(least, 1):
            continue
        s = np.arange(a + max(least, 1), b - max(least, 1) + 1)
        gain = _cost(cum_n[b] - cum_n[a], cum_w[b] - cum_w[a]) - (
            _cost(cum_n[s] - cum_n[a], cum_w[s] - cum_w[a])
            + _cost(cum_n[b] - cum_n[s], cum_w[b] - cum_w[s])
        )
        best = int(np.argmax(gain))
        if 2.0 * float(gain[best]) <= bar:
            continue
        cuts.append(int(s[best]))
        pending += [(a, int(s[best])), (int(s[best]), b)]
    labels = np.zeros(m, dtype=np.intp)
    for c in cuts:
        labels[c:] += 1
    return labels


def _cost(total: FloatArray, seconds: FloatArray | float) -> FloatArray:
    """Minus the Poisson log likelihood of counts ``total`` (per type, last axis) over
    ``seconds`` at their own rates, up to terms every segmentation shares: ``−Σ N log(N/W)``."""
    t = np.asarray(total, dtype=np.float64)
    sec = np.asarray(seconds, dtype=np.float64)[..., None] if np.ndim(seconds) else seconds
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(t > 0, t * np.log(t / sec), 0.0)
    out: FloatArray = -terms.sum(axis=-1)
    return out


def _dispersion(total: FloatArray, width: FloatArray) -> float:
    """How much more the windows' transaction counts scatter than Poisson counts would (at
    least 1): the median over neighbouring windows of their rates' squared difference over
    its Poisson variance, over the median of a chi-square with one degree of freedom."""
    a, b = total[:-1], total[1:]
    wa, wb = width[:-1], width[1:]
    ok = (a + b > 0) & (wa > 0) & (wb > 0)
    if not ok.any():
        return 1.0
    rate = (a + b)[ok] / (wa + wb)[ok]
    z2 = (a[ok] / wa[ok] - b[ok] / wb[ok]) ** 2 / (rate * (1.0 / wa[ok] + 1.0 / wb[ok]))
    return max(1.0, float(np.median(z2)) / _CHI2_1_MEDIAN)
