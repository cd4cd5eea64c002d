"""Seeded series shared by tests of more than one module."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.signal import lfilter


def daily_with_shifts(
    seed: int, n: int, shifts: int, *, day: float, steps: tuple[float, float]
) -> tuple[NDArray[np.float64], list[int]]:
    """``n`` five-minute readings in noise units: ``shifts`` level shifts of ``steps`` σ (up
    or down at random) about evenly spaced, a daily sine of ``day`` σ (period 288) and AR(1)
    noise (φ .5). The shifts come with it."""
    rng = np.random.default_rng(seed)
    gap = n // (shifts + 1)
    cuts = gap * np.arange(1, shifts + 1) + rng.integers(-gap // 4, gap // 4, shifts)
    sizes = rng.choice([-1.0, 1.0], shifts) * rng.uniform(*steps, shifts)
    t = np.arange(n)
    level = np.concatenate([[0.0], np.cumsum(sizes)])[np.searchsorted(cuts, t, side="right")]
    e = lfilter([1.0], [1.0, -0.5], rng.standard_normal(n))
    return level + day * np.sin(2 * np.pi * t / 288) + e, [int(c) for c in cuts]


def ar1_step(seed: int, n: int, phi: float, at: int, step: float) -> NDArray[np.float64]:
    """``n`` readings of Gaussian AR(1) noise of unit marginal variance about 50, ``step``
    higher from ``at`` on (negative: lower), seeded by (``seed``, ``n``)."""
    e = np.random.default_rng([seed, n]).standard_normal(n)
    x: NDArray[np.float64] = 50.0 + lfilter([1.0], [1.0, -phi], e) * np.sqrt(1.0 - phi * phi)
    x[at:] += step
    return x
