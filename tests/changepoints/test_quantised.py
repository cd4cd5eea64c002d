"""Quantised series: values recorded on a grid (whole GB, counts, a percentage to one decimal)
carry rounding error, and a rounded slow line is a trend, not a staircase of level points."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfsleuth.changepoints.kernels import grid, kinks
from perfsleuth.changepoints.kernels.search import find_change_points

T = np.arange(200.0)


@pytest.mark.parametrize(
    ("values", "step"),
    [
        (np.round(T / 10), 1.0),
        (np.round(T / 7, 1), 0.1),  # a percentage to one decimal
        (np.array([1.0, 1, 1, 5, 5, 5]), 1.0),
        (np.array([10.0, 10, 10, 12, 12, 12]), 2.0),
        (np.array([0.5, 1.5, 2.5]), 0.5),
        (np.round(T / 10) * 1024.0, 1024.0),  # MB in whole GB
        (np.random.default_rng(0).normal(0, 1, 200), 0.0),  # real-valued: no grid
        (np.zeros(5), 0.0),
    ],
)
def test_the_grid_is_the_largest_step_every_value_is_a_multiple_of(
    values: np.ndarray, step: float
) -> None:
    assert grid.grid_step(values) == pytest.approx(step)


def test_the_rounding_sigma_is_per_column() -> None:
    x = np.c_[np.round(T / 10), np.round(T / 10, 1), T + 0.123456789]
    assert grid.rounding_sigma(x) == pytest.approx([1 / math.sqrt(12), 0.1 / math.sqrt(12), 0])


@pytest.mark.parametrize(
    "values",
    [
        np.round(T / 10),  # a line rising 1 unit per 10 readings: was 20 level points
        np.floor(T / 20),  # was 9
        np.round(100 + T / 40),  # was 5
        np.round(T / 150, 1),  # one decimal: was 13
        np.c_[np.round(T / 10), np.round(T / 20)],  # jointly: was 10
    ],
)
def test_a_rounded_line_is_a_trend_not_a_staircase(values: np.ndarray) -> None:
    cp = find_change_points(values)
    assert cp.indices == ()
    assert all(slope > 0 for slope in cp.trend)


def test_a_rounded_line_with_a_little_noise_is_a_trend() -> None:
    # noise a tenth of the grid step: 20 level points in 3 of these 5 series before
    for seed in range(5):
        rng = np.random.default_rng(seed)
        cp = find_change_points(np.round(100 + T / 10 + rng.normal(0, 0.1, T.size)))
        assert cp.indices == ()
        assert cp.trend[0] > 0


def test_a_rounded_line_keeps_its_real_shift() -> None:
    # 8 grid steps at mid-series: main found it among 20 level points
    cp = find_change_points(np.round(T / 10) + np.r_[np.zeros(100), np.full(100, 8.0)])
    assert cp.indices == (100,)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (np.repeat([3.0, 4.0], 100), (100,)),  # a replica count 3 → 4
        (np.repeat([3.0, 5.0, 8.0], 100), (100, 200)),  # steps of several grid steps
        (np.repeat([3.0, 4.0, 5.0, 4.0], 50), (50, 100, 150)),  # no line: up and down again
        (np.repeat([3.0, 4.0, 5.0], [50, 200, 50]), (50, 250)),  # no line: runs not even
    ],
)
def test_noise_free_steps_that_no_rounded_line_makes_stay_steps(
    values: np.ndarray, expected: tuple[int, ...]
) -> None:
    assert find_change_points(values).indices == expected


def test_rare_event_counts_keep_their_rate_step() -> None:
    # counts stay within a grid step: their noise (σ ≈ .3 at a rate of .1) is real, not
    # rounding, and is not floored — a rate step is still a step
    rng = np.random.default_rng(3)
    x = np.r_[rng.poisson(0.05, 500), rng.poisson(0.5, 500)].astype(float)
    assert any(abs(i - 500) <= 25 for i in find_change_points(x).indices)


@pytest.mark.parametrize(
    "values",
    [
        # √ rising 20 grid steps in 200 readings: was 6 level points
        np.round(10 + 20 * np.sqrt(np.arange(200) / 200)),
        # a saturating rise of 20 grid steps in 1,000 readings: was 12 level points
        np.round(10 + 20 * -np.expm1(-4 * np.arange(1000) / 1000) / -math.expm1(-4)),
    ],
)
def test_a_rounded_curve_bends_rather_than_steps(values: np.ndarray) -> None:
    # the rounding error about a kinked line is a saw tooth: counted as white noise once, not
    # as persistence, the kinks follow the curve and the broken line beats the staircase. (The
    # saturating rise's kinks then only draw a curve bending one way, which a cubic describes
    # as well: it has no point at all; the √, steep at its start, keeps two bends.)
    cp = find_change_points(values)
    assert all(p.kind == "slope" for p in cp.points)
    assert all(p.slope_after[0] < p.slope_before[0] for p in cp.points)  # it only bends down
    assert cp.points or cp.trend[0] > 0  # no staircase, and no flat line either


def test_the_rounding_share_is_white_and_the_rest_persistent() -> None:
    saw = np.tile(np.linspace(-0.5, 0.5, 10, endpoint=False), 20)  # rounding about a line
    lag = float(saw[1:] @ saw[:-1]) / float(saw @ saw)
    white = float(saw @ saw) / (saw.size - 3)
    # as real-valued noise: the saw tooth's lag-1 correlation read as AR(1) persistence
    assert kinks.long_run(saw) == pytest.approx((white * (1 + lag) / (1 - lag), lag))
    # all of it rounding (a rounding σ at least the residuals'): white, φ 0
    assert kinks.long_run(saw, math.sqrt(white)) == pytest.approx((white, 0.0))
    assert kinks.long_run(saw, 1.0) == pytest.approx((white, 0.0))
    # half of it rounding: the other half keeps its persistence
    variance, phi = kinks.long_run(saw, math.sqrt(white / 2))
    assert variance == pytest.approx(white / 2 + white / 2 * (1 + lag) / (1 - lag))
    assert phi == pytest.approx((variance / white - 1) / (variance / white + 1))


@pytest.mark.parametrize("seed", range(3))
def test_a_rounded_curve_keeps_its_real_shift_beside_its_bends(seed: int) -> None:
    # a saturating rise of 20 grid steps, noise 1 q, a shift of 5 grid steps at 60%, rounded
    # (``benchmarks/changepoints_quantised.py``): main found the shift in .10–.15 of series
    u = np.arange(1000) / 1000
    mean = 10 + 20 * -np.expm1(-4 * u) / -math.expm1(-4) + 5.0 * (u >= 0.6)
    values = np.round(mean + np.random.default_rng(seed).normal(0, 1.0, u.size))
    levels = [p.index for p in find_change_points(values).points if p.kind == "level"]
    assert any(abs(i - 600) <= 25 for i in levels)


@pytest.mark.parametrize("seed", range(3))
def test_a_counter_that_speeds_up_then_resets_has_its_bend_and_its_reset(seed: int) -> None:
    # a request counter read raw: 5 a reading, 8 from 1,200 on, reset to 0 at 1,500. The reset
    # is a step the broken line alone cannot draw; measured beside a straight line it took up
    # the rise and hid the bend (points: the reset only), and before the third description
    # the level search's staircase kept a false step near 500 beside the bend and the reset
    rng = np.random.default_rng(seed)
    counter = np.cumsum(np.r_[rng.poisson(5, 1200), rng.poisson(8, 800)]).astype(float)
    counter[1500:] -= counter[1500]
    points = find_change_points(counter).points
    assert [p.kind for p in points] == ["slope", "level"]
    assert abs(points[0].index - 1200) <= 40 and points[1].index == 1500


_T = np.arange(600.0)


@pytest.mark.parametrize(
    "values",
    [
        _T * 0.1,  # a steady counter, 0.1 a reading
        _T * 1.5e-3,
        _T / 3,
        _T * math.pi,
        np.cumsum(np.full(600, 0.3)),  # off its line by ~11 ε a reading
        1.01**_T,  # exact growth by a rate
        np.linspace(-1.0, 1.0, 300) * (1.0 - 2.0**-53),  # one ulp from a line that passed
    ],
    ids=["tenth", "bytes", "third", "pi", "cumsum", "growth", "ulp"],
)
def test_an_exact_line_in_floats_has_no_point(values: np.ndarray) -> None:
    """About an exact line the residuals are float rounding, ~1e-16 of the values: measured
    as noise, each of their wiggles was tens of σ (a kink every 5 readings)."""
    found = find_change_points(values)
    assert found.points == ()
    assert found.trend[0] != 0.0


def test_a_tiny_step_on_an_exact_line_is_still_found() -> None:
    """The float floor is a trillionth of the values' magnitude: a step a billionth of it is
    far above, and found where it is."""
    found = find_change_points(_T * 0.1 + 1e-9 * (_T >= 300))
    assert [(p.index, p.kind) for p in found.points] == [(300, "level")]


def test_the_float_floor_is_a_trillionth_of_the_magnitude() -> None:
    assert grid.float_sigma(60.0) == pytest.approx(6e-11)
    assert grid.float_sigma(0.0) == 0.0
