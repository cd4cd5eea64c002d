"""Hostile values through the default search, warnings as errors: constants at the ends of the
float range, heavy tails over 600 orders of magnitude, exact lines, rare events, a single huge
reading. Each must give a result whose points lie inside the series and whose levels are in
its own units (a seeded fuzz of these families found an overflow at 1e308, an underflow at
1e-300 and float rounding read as noise)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

from perfsleuth.changepoints.kernels.search import find_change_points

_BIG = np.finfo(float).max

Family = Callable[[np.random.Generator, int], np.ndarray]

FAMILIES: dict[str, Family] = {
    "constant 1e-300": lambda g, n: np.full(n, 1e-300),
    "constant max": lambda g, n: np.full(n, _BIG),
    "constant -5": lambda g, n: np.full(n, -5.0),
    "three values": lambda g, n: g.integers(0, 3, n).astype(float),
    "cauchy 1e300": lambda g, n: g.standard_cauchy(n) * 1e300,
    "cauchy 1e-300": lambda g, n: g.standard_cauchy(n) * 1e-300,
    "random walk": lambda g, n: np.cumsum(g.normal(size=n)),
    "rare events": lambda g, n: g.poisson(0.05, n).astype(float),
    "one reading at 1e308": lambda g, n: np.where(np.arange(n) == n // 3, 1e308, g.normal(size=n)),
    "lognormal σ 50": lambda g, n: np.exp(g.normal(size=n) * 50),
    "tiny grid": lambda g, n: np.round(g.normal(size=n) * 3) * 1e-12,
    "step of 1e12": lambda g, n: np.where(np.arange(n) < n // 2, 0.0, 1e12),
    "alternating": lambda g, n: np.tile([1.0, 2.0], n)[:n],
    "cubic": lambda g, n: np.arange(n, dtype=float) ** 3,
    "offset 1e15": lambda g, n: g.normal(size=n) + 1e15,
    "step at -max to max": lambda g, n: np.where(np.arange(n) < n // 2, -_BIG, _BIG),
    # idle, then a counter rising by .9 a reading (a break's line is 0 on its idle side)
    "idle, then a counter": lambda g, n: np.where(
        np.arange(n) < 5, 0.0, np.round(23.0 + 0.9 * (np.arange(n) - 5))
    ),
    "idle, then growth": lambda g, n: np.where(
        np.arange(n) < n // 6, 0.0, 10.0 + 0.5 * np.arange(n) + g.normal(size=n)
    ),
}


def _piece(g: np.random.Generator, kind: int, m: int) -> np.ndarray:
    """``m`` readings of one kind: zeros, a constant, a line with noise, a rounded line,
    exponential noise, growth by a rate, or Poisson counts."""
    t = np.arange(m, dtype=float)
    if kind == 0:
        return np.zeros(m)
    if kind == 1:
        return np.full(m, g.normal(0, 50))
    if kind == 2:
        return g.normal(0, 10) + g.normal(0, 2) * t + g.normal(0, 1, m)
    if kind == 3:
        return np.round(g.normal(0, 10) + g.normal(0, 1) * t)
    if kind == 4:
        return g.exponential(5, m)
    if kind == 5:
        return g.uniform(1, 100) * np.exp(g.normal(0.02, 0.01) * t + g.normal(0, 0.01, m))
    return g.poisson(g.uniform(0.1, 5), m).astype(float)


def _pieced(g: np.random.Generator) -> np.ndarray:
    """One to five pieces of 3–150 readings, each of a random kind (:func:`_piece`)."""
    pieces = int(g.integers(1, 6))
    return np.concatenate(
        [_piece(g, int(g.integers(0, 7)), int(g.integers(3, 150))) for _ in range(pieces)]
    )


def test_pieced_shapes_give_a_result() -> None:
    """Series pieced from idle stretches, constants, lines, counts and growth (a seeded fuzz of
    them found two errors of the breaks' first version in 21 of 1,500 series)."""
    for seed in range(200):
        x = _pieced(np.random.default_rng(seed))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            found = find_change_points(x)
        assert list(found.indices) == sorted(set(found.indices)), seed
        assert all(0 < i < x.size for i in found.indices), seed


@pytest.mark.parametrize("n", [3, 25, 400])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_hostile_values_give_a_result_in_the_series_units(family: str, n: int) -> None:
    x = FAMILIES[family](np.random.default_rng(n), n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = find_change_points(x)
    assert all(0 < i < n for i in found.indices)
    assert list(found.indices) == sorted(set(found.indices))
    assert sum(s.length for s in found.segments) == n
    top = float(np.max(np.abs(x)))
    for segment in found.segments:  # a mean lies within the values it is the mean of
        assert abs(segment.mean[0]) <= top * (1 + 1e-12)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_hostile_column_leaves_its_neighbour_in_its_own_units(family: str) -> None:
    """Each column is scaled on its own: one scale for all put a normal column beside one of
    1e308 at 1e-308, where its squares underflowed."""
    n = 200
    g = np.random.default_rng(1)
    step = g.normal(size=n) + 5.0 * (np.arange(n) >= n // 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = find_change_points(np.column_stack([FAMILIES[family](g, n), step]))
    assert all(abs(segment.mean[1]) < 10.0 for segment in found.segments)
