"""A level shift of a trending segment, tested with the segment's own line fitted alongside
(Perron's crash model): the statistic the table was simulated for, the bar, its size on
straight lines in AR(1) noise, and the crash in growth that the line through it hid."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import lfilter

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels import kinks, trend_steps

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    e = rng.standard_normal(n)
    e[0] /= math.sqrt(1 - phi * phi)
    return lfilter([1.0], [1.0, -phi], e)


def test_the_statistic_is_the_steps_squared_t_with_the_line_fitted_alongside() -> None:
    """z² is the step's t² in y = a + b t + d 1(t ≥ k), its variance the AR(1) long-run one
    of the residuals (the slope's estimation counted, unlike a step of y less a given line)."""
    rng = np.random.default_rng(5)
    t = np.arange(60, dtype=float)
    y = 0.1 * t + (t >= 27) * 3.0 + ar1(rng, 60, 0.3)
    found = trend_steps.step_z2(y, 5)
    assert found is not None
    k, z2 = found
    assert k == 27
    design = np.column_stack([np.ones(60), t, (t >= k).astype(float)])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    rr = float(resid @ resid)
    phi = min(max(float(resid[1:] @ resid[:-1]) / rr, 0.0), 0.99)
    variance = rr / 57 * (1 + phi) / (1 - phi)
    assert z2 == pytest.approx(coef[2] ** 2 / (np.linalg.inv(design.T @ design)[2, 2] * variance))


def test_the_table_script_computes_the_kernels_statistic() -> None:
    sys.path.insert(0, str(SCRIPTS))
    from make_kink_table import step_z2

    rng = np.random.default_rng(11)
    y = np.vstack([ar1(rng, 60, 0.6) + 0.05 * np.arange(60) for _ in range(5)])
    for row, z2 in zip(y, step_z2(y, kinks.MIN_SIDE), strict=True):
        found = trend_steps.step_z2(row, kinks.MIN_SIDE)
        assert found is not None
        assert found[1] == pytest.approx(z2, rel=1e-9)


def test_the_bar_and_its_tail_probability_invert_each_other() -> None:
    for n in (25, 80, 300, 4000):
        for p in (0.0005, 0.003, 0.05):
            bar = trend_steps.critical_z2(n, p)
            assert trend_steps.tail_probability(n, bar) == pytest.approx(p, rel=1e-6)
    assert trend_steps.critical_z2(40, 0.05) > trend_steps.critical_z2(400, 0.05)


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.9])
def test_a_straight_line_in_ar1_noise_has_a_step_at_most_alpha_of_the_time(phi: float) -> None:
    """The bar is the largest simulated quantile over φ ≤ .9: size at most α = .05 at each
    (400 seeded series of 60 readings; the binomial's 3 σ above .05 is .083)."""
    rng = np.random.default_rng([60, round(phi * 10)])
    t = np.arange(60, dtype=float)
    hits = sum(
        trend_steps.best_step(0.2 * t + ar1(rng, 60, phi), alpha=0.05, side=5) is not None
        for _ in range(400)
    )
    assert hits / 400 <= 0.083


def test_a_step_in_a_line_is_found_where_it_is() -> None:
    rng = np.random.default_rng(3)
    t = np.arange(80, dtype=float)
    step = trend_steps.best_step(
        2.0 + 0.3 * t - 4.0 * (t >= 50) + ar1(rng, 80, 0.5), alpha=0.05, side=5
    )
    assert step is not None and step.index == 50
    assert step.statistic > step.critical_value and step.p_value < 0.05
    assert trend_steps.best_step(2.0 + 0.3 * t + ar1(rng, 80, 0.5), alpha=0.05, side=5) is None


def test_a_few_spikes_at_a_segments_end_are_not_a_step() -> None:
    """A spike among a segment's last readings is significant as a step of them: with a
    kink's other gates (here: not a spike) it is no step (the 10⁶ × 2 speed series' segments
    had such steps, and the trend's alternation ran once more for them: 2.0 → 2.9 s)."""
    from functools import partial

    from perfsleuth.changepoints.kernels.level import _cost

    rng = np.random.default_rng(8)
    t = np.arange(2_000, dtype=float)
    y = 0.01 * t + ar1(rng, 2_000, 0.3)
    y[-3] += 60.0
    spiky = trend_steps.best_step(y, alpha=0.05, side=5)
    assert spiky is not None and spiky.index == 1_995
    gates = {"min_effect": 0.25, "cost": partial(_cost, 5.0)}
    assert trend_steps.best_step(y, alpha=0.05, side=5, **gates) is None
    y[1_000:] -= 3.0  # a real step is still one
    step = trend_steps.best_step(y[:1_990], alpha=0.05, side=5, **gates)
    assert step is not None and step.index == 1_000


@pytest.mark.parametrize("n", [200, 2_000, 20_000])
def test_a_bend_is_no_step(n: int) -> None:
    """A segment holding one bend of a gradual ramp (flat, then rising) is drawn better by a
    kink than by a step beside its line: no hidden step, where the significant step made
    the trend's alternation run a third start on a long ramp (8 level searches, not 5)."""
    rng = np.random.default_rng(n)
    t = np.arange(n, dtype=float)
    bend = np.maximum(t - 0.4 * n, 0.0) * (8.0 / n)  # rising 4.8 σ over the last 60%
    y = bend + ar1(rng, n, 0.3)
    step = trend_steps.step_z2(y, 5)
    assert step is not None and step[1] > trend_steps.critical_z2(n, 0.05)  # significant...
    assert trend_steps.best_step(y, alpha=0.05, side=5) is None  # ...but a bend
    drop = 0.01 * t - 3.0 * (t >= n // 2)  # beside it, a drop is still a step
    found = trend_steps.best_step(drop + ar1(rng, n, 0.3), alpha=0.05, side=5)
    assert found is not None and abs(found.index - n // 2) <= 2


def _rise_and_drop(n: int, seed: int, phi: float, drop: float) -> np.ndarray:
    """A line rising 5 σ over the series, dropping by ``drop`` σ at n // 2, in AR(1) noise of
    unit σ."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    noise = ar1(rng, n, phi) * math.sqrt(1 - phi * phi)
    return 50.0 + 5.0 * t / n - drop * (t >= n // 2) + noise


@pytest.mark.parametrize(("n", "phi"), [(120, 0.0), (400, 0.5)])
def test_a_drop_that_cancels_the_rise_is_found(n: int, phi: float) -> None:
    """A drop that undoes the rise: the line through both is nearly flat, so no trend is
    removed, and the search with no slope sees no shift of the means. The drop tested with
    its segment's own line starts the trend's alternation anyway. Before: 4 of these 10 seeds
    found it at n = 120, 6 at n = 400."""
    for seed in range(10):
        cp = find_change_points(_rise_and_drop(n, seed, phi, drop=3.0))
        assert any(abs(i - n // 2) <= 2 for i in cp.indices), seed
        without = find_change_points(_rise_and_drop(n, seed, phi, drop=0.0))
        assert without.indices == (), seed
