"""Optimal regression segmentation (Cherkasova et al. 2008): exactness, λ from ε_allow, scale."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.segments.kernels import segmentation as seg_kernel
from perfsleuth.segments.kernels.segmentation import penalty_for, segment_cost, segment_regression


def _brute_force(x: np.ndarray, y: np.ndarray, lam: float, nonneg: bool) -> float:
    m = len(y)
    return min(
        segment_cost(x, y, cuts, penalty=lam, nonnegative=nonneg)
        for k in range(m)
        for cuts in itertools.combinations(range(1, m), k)
    )


def _regimes(
    seed: int, sizes: tuple[int, ...], coefs: list[list[float]], noise: float
) -> tuple[np.ndarray, np.ndarray]:
    """Windows × (width, 3 counts); CPU = design @ the regime's coefficients + noise."""
    rng = np.random.default_rng(seed)
    m = sum(sizes)
    x = np.column_stack([np.full(m, 10.0), rng.poisson([300, 100, 40], size=(m, 3))])
    x = x.astype(np.float64)
    beta = np.repeat(np.array(coefs, dtype=np.float64), sizes, axis=0)
    clean = (x * beta).sum(axis=1)
    return x, clean * (1 + rng.normal(0.0, noise, m))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("nonneg", [True, False])
def test_dynamic_programme_finds_the_brute_force_optimum(seed: int, nonneg: bool) -> None:
    rng = np.random.default_rng(seed)
    m, p = int(rng.integers(4, 9)), int(rng.integers(1, 4))
    x = rng.poisson(5, size=(m, p)).astype(np.float64)
    y = np.abs(x @ rng.normal(0, 1, p) + rng.normal(0, 1, m) + 10)
    seg = segment_regression(x, y, allowed_error=0.1, nonnegative=nonneg)
    best = _brute_force(x, y, seg.penalty, nonneg)
    found = segment_cost(x, y, seg.indices, penalty=seg.penalty, nonnegative=nonneg)
    assert found == pytest.approx(best, rel=1e-9, abs=1e-9)
    assert seg.cost == pytest.approx(found, rel=1e-6, abs=1e-6)  # prefix sums vs direct fits


def test_planted_regimes_are_found_exactly() -> None:
    coefs = [[0.01, 0.002, 0.010, 0.040], [0.01, 0.002, 0.020, 0.040], [0.01, 0.004, 0.010, 0.040]]
    x, y = _regimes(1, (80, 60, 70), coefs, noise=0.01)
    seg = segment_regression(x, y, allowed_error=0.03)
    assert seg.indices == (80, 140)
    assert seg.starts == (0, 80, 140) and seg.stops == (80, 140, 210)
    assert np.all(seg.relative_rmse() < 0.02)


def test_noise_alone_does_not_pay_for_a_split() -> None:
    x, y = _regimes(2, (300,), [[0.01, 0.002, 0.01, 0.04]], noise=0.05)
    assert segment_regression(x, y, allowed_error=0.03).indices == ()


def test_min_size_above_the_columns_stops_exact_fit_chopping() -> None:
    # With noise far above ε_allow, pieces too short to have any residual (≤ p windows) are
    # free of error and the paper's cost chops the series into them; one residual degree of
    # freedom per segment is enough to stop that.
    x, y = _regimes(2, (300,), [[0.01, 0.002, 0.01, 0.04]], noise=0.20)
    assert len(segment_regression(x, y, allowed_error=0.01).indices) > 100
    assert segment_regression(x, y, allowed_error=0.01, min_size=5).indices == ()


def test_allowed_error_is_the_break_even_error_of_the_first_split() -> None:
    # Two halves, each fitted exactly by its own model (no noise): one model over both has a
    # relative RMS error e. The series is split exactly when e exceeds ε_allow.
    x, y = _regimes(3, (50, 50), [[0.01, 0.002, 0.01, 0.04], [0.01, 0.0022, 0.01, 0.04]], 0.0)
    one = segment_regression(x, y, allowed_error=10.0)
    assert one.indices == ()
    e = math.sqrt(one.sse[0] / 100) / one.scale
    assert segment_regression(x, y, allowed_error=0.98 * e).indices == (50,)
    assert segment_regression(x, y, allowed_error=1.02 * e).indices == ()


def test_penalty_formula() -> None:
    assert penalty_for(0.03, 100, 2.0) == pytest.approx(0.03 * 2.0 / (10 * math.log(2)))
    with pytest.raises(ValueError, match="allowed_error"):
        penalty_for(0.0, 100, 1.0)


def test_nnls_is_solved_where_it_matters() -> None:
    rng = np.random.default_rng(4)
    m = 120
    x = np.column_stack([np.ones(m), rng.poisson(20, size=(m, 6))]).astype(np.float64)
    beta = np.array([1.0, 0.0, 0.0, 0.5, 0.0, 1.0, 0.0])  # zero costs: OLS goes negative
    y = x @ beta + rng.normal(0, 2.0, m)
    free = segment_regression(x, y, allowed_error=0.02, nonnegative=False)
    nonneg = segment_regression(x, y, allowed_error=0.02)
    assert nonneg.nnls_solves > 0
    assert free.nnls_solves == 0
    recomputed = segment_cost(x, y, nonneg.indices, penalty=nonneg.penalty)
    assert nonneg.cost == pytest.approx(recomputed, rel=1e-8)
    assert nonneg.cost >= free.cost - 1e-9


def test_min_size_is_respected() -> None:
    a, b = [0.01, 0.002, 0.01, 0.04], [0.03, 0.002, 0.01, 0.04]
    x, y = _regimes(5, (30, 30, 30), [a, b, a], 0.0)
    seg = segment_regression(x, y, allowed_error=0.001, min_size=10)
    assert min(b - a for a, b in seg.segments()) >= 10


@pytest.mark.parametrize(
    ("design", "response", "error", "match"),
    [
        ([[1.0], [np.nan]], [1.0, 2.0], DataError, "NaN"),
        ([[1.0], [1.0]], [1.0, np.inf], DataError, "NaN or infinite"),
        ([[1.0], [1.0]], [1.0], DataError, "2 window"),
        ([[1.0], [1.0]], [0.0, 0.0], DataError, "positive mean"),
        (np.zeros((0, 2)), [], NotEnoughDataError, "no windows"),
    ],
)
def test_bad_input_is_rejected_clearly(
    design: object, response: object, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        segment_regression(design, response)  # type: ignore[arg-type]


def test_too_short_for_min_size() -> None:
    with pytest.raises(NotEnoughDataError, match="min_size"):
        segment_regression([[1.0], [2.0]], [1.0, 2.0], min_size=3)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    y_scale=st.sampled_from([1e-3, 0.37, 1.0, 8.0, 1e4]),
    x_scale=st.lists(st.sampled_from([1e-2, 0.5, 3.0, 1e3]), min_size=4, max_size=4),
)
def test_segmentation_is_invariant_to_scaling_the_data(
    seed: int, y_scale: float, x_scale: list[float]
) -> None:
    coefs = [[0.01, 0.002, 0.010, 0.04], [0.01, 0.003, 0.010, 0.04], [0.05, 0.002, 0.01, 0.04]]
    x, y = _regimes(seed, (25, 20, 15), coefs, noise=0.02)
    base = segment_regression(x, y, allowed_error=0.03)
    scaled = segment_regression(x * np.array(x_scale), y * y_scale, allowed_error=0.03)
    assert scaled.indices == base.indices
    assert scaled.penalty == pytest.approx(base.penalty * y_scale)
    assert scaled.cost == pytest.approx(base.cost * y_scale, rel=1e-6)
    assert list(base.indices) == sorted(base.indices)
    assert all(0 < b < len(y) for b in base.indices)
    assert base.starts[0] == 0 and base.stops[-1] == len(y)


def _full_gaussian_search(x: np.ndarray, y: np.ndarray, min_size: int, nonneg: bool) -> tuple:
    """The Gaussian cost's PELT search computing every start's SSE at every end (as before
    the lazy search): what ``_search_gaussian`` must reproduce bit for bit."""
    m, p = x.shape
    cols = np.sqrt(np.mean(x * x, axis=0))
    cols[cols == 0] = 1.0
    prefix = seg_kernel._prefix_gram(np.column_stack([x / cols, y / np.mean(y)]))
    packed = seg_kernel._packed(prefix)
    sigma = seg_kernel._noise(packed, m, p)
    beta = (p + 1) * math.log(max(m, 2))
    floor = max(sigma * sigma / 4.0, 1e-300)
    f, back, best = np.full(m + 1, np.inf), np.zeros(m + 1, dtype=np.int64), np.zeros(m + 1)
    f[0] = -beta
    alive, dead_at = np.zeros(m + 1, dtype=bool), np.full(m + 1, m + 1)
    alive[0] = True
    solves = 0
    for end in range(min_size, m + 1):

        def priced(sse: np.ndarray, starts: np.ndarray, end: int = end) -> np.ndarray:
            n = (end - starts).astype(np.float64)
            return n * np.log(np.maximum(sse / n, floor))

        starts = np.flatnonzero(alive[: end - min_size + 1] & (dead_at[: end - min_size + 1] > end))
        values = seg_kernel._sse_at(packed, end, starts)
        sse, total = np.full(end - min_size + 1, np.inf), np.full(end - min_size + 1, np.inf)
        sse[starts] = values
        total[starts] = f[starts] + priced(values, starts) + beta
        exact = np.zeros(len(total), dtype=bool)
        start, solved = seg_kernel._exact_minimum(prefix, end, total, sse, exact, nonneg, priced)
        solves += solved
        f[end], back[end], best[end] = total[start], start, sse[start]
        prune = starts[f[starts] + priced(values, starts) >= f[end]]
        dead_at[prune] = np.minimum(dead_at[prune], end + min_size)
        alive[end] = True
    return float(f[m]), back.tolist(), best.tolist(), solves


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("noise", [0.0, 0.002, 0.05])
@pytest.mark.parametrize("eager", [0, 250_000])
def test_lazy_gaussian_search_is_the_full_search_bit_for_bit(
    seed: int, noise: float, eager: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Gaussian search computes a segment's SSE only where its bound could still win or be
    # pruned differently (every start while they are few: ``_EAGER``, 0 = never); the result
    # must be exactly that of computing them all.
    monkeypatch.setattr(seg_kernel, "_EAGER", eager)
    coefs = [[0.01, 0.002, 0.010, 0.04], [0.01, 0.003, 0.010, 0.04], [0.05, 0.002, 0.01, 0.04]]
    x, y = _regimes(seed, (120, 40, 140), coefs, noise=noise)
    y[150 + seed : 162 + seed] *= 1.5  # a burst
    min_size, nonneg = (1, 3, 5, 6)[seed % 4], seed % 3 != 0
    got = segment_regression(x, y, cost="gaussian", min_size=min_size, nonnegative=nonneg)
    cost, back, best, solves = _full_gaussian_search(x, y, min_size, nonneg)
    assert got.cost == cost
    assert got.nnls_solves == solves
    stops, end = [], len(y)
    while end > 0:
        stops.append(end)
        end = back[end]
    assert got.stops == tuple(reversed(stops))
    scale = float(np.mean(y))
    assert got.sse == tuple(best[e] * scale * scale for e in reversed(stops))
