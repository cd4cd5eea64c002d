"""The CPU model of Cherkasova et al.: NNLS fit, stepwise F-test selection, summary."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import nnls

from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.segments.kernels.cpumodel import cost_shifts, fit_cpu_model, shift_test

NAMES = ["browse", "search", "idle_type", "checkout", "unused_cost", "report"]
COST = np.array([0.002, 0.006, 0.0, 0.015, 0.0, 0.040])  # CPU-s per transaction


def _service(seed: int = 0, n: int = 200, noise: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    counts = rng.poisson(rng.uniform(20, 400, (n, 1)) * np.array([5, 2, 3, 1, 2, 0.3]) / 5)
    counts = counts.astype(np.float64)
    cpu = 0.02 * 10.0 + counts @ COST + rng.normal(0.0, noise, n)
    return counts, np.maximum(cpu, 0.0)


def test_stepwise_selects_the_costly_types_and_recovers_their_cost() -> None:
    counts, cpu = _service()
    model = fit_cpu_model(counts, cpu, 10.0, names=NAMES)
    assert set(model.selected) == {"browse", "search", "checkout", "report"}
    got = dict(zip(model.names, model.coef, strict=True))
    for name, cost in zip(NAMES, COST, strict=True):
        if cost > 0:
            assert got[name] == pytest.approx(cost, rel=0.15)
        else:
            assert got[name] == 0.0
    assert model.idle == pytest.approx(0.02, abs=0.01)
    assert model.steps[-1].entered is False  # the search stopped at a failed F-test
    assert model.steps[-1].p_value >= 0.05
    assert all(s.p_value < 0.05 for s in model.steps[:-1])


def test_all_types_fit_equals_scipy_nnls_on_the_same_design() -> None:
    counts, cpu = _service(1)
    model = fit_cpu_model(counts, cpu, 10.0, names=NAMES, selection="all")
    design = np.column_stack([np.full(len(cpu), 10.0), counts])
    beta, rnorm = nnls(design, cpu)
    assert model.idle == pytest.approx(beta[0], rel=1e-6, abs=1e-9)
    np.testing.assert_allclose(model.coef, beta[1:], rtol=1e-6, atol=1e-9)
    assert model.sse == pytest.approx(rnorm**2, rel=1e-8)
    np.testing.assert_allclose(model.fitted + model.residuals, cpu)


def test_first_f_test_matches_statsmodels_when_the_fit_is_interior() -> None:
    # With every coefficient positive NNLS is least squares, so the paper's partial F-test is
    # the classical one: compare with statsmodels' nested-model F-test.
    counts, cpu = _service(2)
    model = fit_cpu_model(counts, cpu, 10.0, names=NAMES)
    first = model.steps[0]
    j = NAMES.index(first.name)
    width = np.full(len(cpu), 10.0)
    small = sm.OLS(cpu, width[:, None]).fit()
    big = sm.OLS(cpu, np.column_stack([width, counts[:, j]])).fit()
    f_value, p_value, _ = big.compare_f_test(small)
    assert first.f == pytest.approx(f_value, rel=1e-6)
    assert first.p_value == pytest.approx(p_value, rel=1e-6, abs=1e-300)


def test_windows_of_different_width_share_one_idle_rate() -> None:
    rng = np.random.default_rng(3)
    width = rng.choice([5.0, 10.0, 60.0], 150)
    counts = rng.poisson(20 * width[:, None] * np.array([1.0, 0.5])).astype(np.float64)
    cpu = 0.05 * width + counts @ np.array([0.004, 0.01])
    model = fit_cpu_model(counts, cpu, width, names=["a", "b"], selection="all")
    assert model.idle == pytest.approx(0.05, rel=1e-6)
    np.testing.assert_allclose(model.coef, [0.004, 0.01], rtol=1e-6)


def test_types_never_seen_have_unknown_cost_and_poison_predictions() -> None:
    counts, cpu = _service(4)
    counts[:, NAMES.index("unused_cost")] = 0.0
    model = fit_cpu_model(counts, cpu, 10.0, names=NAMES)
    assert math.isnan(model.coef[NAMES.index("unused_cost")])
    new = np.zeros((2, len(NAMES)))
    new[1, NAMES.index("unused_cost")] = 3.0
    predicted = model.predict(new, 10.0)
    assert predicted[0] == pytest.approx(model.idle * 10.0)
    assert math.isnan(predicted[1])


def test_summary_names_every_type_and_escapes_html() -> None:
    counts, cpu = _service(5)
    names = [*NAMES[:-1], "<b>report</b>"]
    summary = fit_cpu_model(counts, cpu, 10.0, names=names).summary()
    for name in NAMES[:-1]:
        assert name in summary.text
    assert "<b>report</b>" in summary.text
    assert "&lt;b&gt;report&lt;/b&gt;" in summary.html
    assert "<b>report</b>" not in summary.html
    assert "idle overhead C0" in summary.text and "stopped:" in summary.text


def test_relative_error_and_noise() -> None:
    counts, cpu = _service(6, noise=0.0)
    model = fit_cpu_model(counts, cpu, 10.0, names=NAMES)
    assert model.relative_rmse < 1e-6
    assert model.dof == model.n_windows - model.n_params


@pytest.mark.parametrize(
    ("counts", "cpu", "width", "match"),
    [
        ([[1.0, -1.0]], [1.0], 1.0, "must not be negative"),
        ([[1.0, np.nan]], [1.0], 1.0, "NaN"),
        ([[1.0, 2.0]], [1.0, 2.0], 1.0, "cpu_seconds has 2"),
        ([[1.0, 2.0]], [-1.0], 1.0, "must not be negative"),
        ([[1.0, 2.0]], [1.0], 0.0, "window_s must be positive"),
        ([[1.0, 2.0]], [1.0], [1.0, 2.0], "window_s has 2"),
    ],
)
def test_bad_input_names_the_problem(
    counts: object, cpu: object, width: object, match: str
) -> None:
    with pytest.raises(DataError, match=match):
        fit_cpu_model(counts, cpu, width)  # type: ignore[arg-type]


def test_no_windows() -> None:
    with pytest.raises(NotEnoughDataError):
        fit_cpu_model(np.zeros((0, 2)), [], 1.0)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    n=st.integers(1, 40),
    k=st.integers(1, 6),
    selection=st.sampled_from(["stepwise", "all"]),
)
def test_nnls_coefficients_are_never_negative(seed: int, n: int, k: int, selection: str) -> None:
    rng = np.random.default_rng(seed)
    counts = rng.poisson(rng.uniform(0, 50, k), size=(n, k)).astype(np.float64)
    cpu = np.abs(counts @ rng.normal(0, 0.01, k) + rng.normal(0, 0.5, n))
    model = fit_cpu_model(counts, cpu, rng.uniform(1, 60), selection=selection)  # type: ignore[arg-type]
    known = model.coef[~np.isnan(model.coef)]
    assert (known >= 0).all()
    assert model.idle >= 0
    assert model.sse >= 0


def _two_periods(
    seed: int, shift: np.ndarray, idle_after: float = 0.02
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    counts, _ = _service(seed, n=240, noise=0.0)
    rng = np.random.default_rng(seed + 100)
    after = np.arange(240) >= 120
    cost = np.where(after[:, None], COST + shift, COST)
    idle = np.where(after, idle_after, 0.02) * 10.0
    cpu = idle + (counts * cost).sum(axis=1) + rng.normal(0.0, 0.05, 240)
    return counts, np.maximum(cpu, 0.0), after


def test_cost_shift_names_the_type_whose_cpu_cost_changed() -> None:
    shift = np.zeros(len(NAMES))
    shift[NAMES.index("checkout")] = 0.006  # 15 → 21 ms
    counts, cpu, after = _two_periods(0, shift)
    shifts = cost_shifts(counts, cpu, 10.0, after, names=NAMES)
    assert shifts[0].name == "checkout"
    assert shifts[0].shift == pytest.approx(0.006, rel=0.15)
    assert shifts[0].p_value < 1e-9
    # the counts rise and fall together with the load, so every type's shift, tried alone,
    # soaks up part of checkout's: the test is which explains most, not which are significant
    assert shifts[0].gain > 1.05 * shifts[1].gain
    assert [s.gain for s in shifts] == sorted((s.gain for s in shifts), reverse=True)


def test_cost_shift_can_be_negative_and_a_level_change_is_not_laid_on_a_type() -> None:
    shift = np.zeros(len(NAMES))
    shift[NAMES.index("report")] = -0.020  # 40 → 20 ms: faster code
    counts, cpu, after = _two_periods(1, shift)
    (first, *_) = cost_shifts(counts, cpu, 10.0, after, names=NAMES)
    assert first.name == "report"
    assert first.shift == pytest.approx(-0.020, rel=0.15)
    # only the idle overhead moves (a background job): no type's cost changed
    counts, cpu, after = _two_periods(2, np.zeros(len(NAMES)), idle_after=0.1)
    assert all(s.p_value > 0.01 for s in cost_shifts(counts, cpu, 10.0, after, names=NAMES))


def test_cost_shift_skips_types_seen_on_one_side_only() -> None:
    counts, cpu, after = _two_periods(3, np.zeros(len(NAMES)))
    counts[after, NAMES.index("search")] = 0.0
    names = [s.name for s in cost_shifts(counts, cpu, 10.0, after, names=NAMES)]
    assert "search" not in names and "browse" in names
    with pytest.raises(DataError, match="after"):
        cost_shifts(counts, cpu, 10.0, after[:-1], names=NAMES)


# -- shift_test: every type's shift in one regression, HAC errors ----------------------------


def test_shift_test_errors_equal_statsmodels_newey_west() -> None:
    shift = np.zeros(len(NAMES))
    shift[NAMES.index("checkout")] = 0.006
    counts, cpu, after = _two_periods(4, shift)
    test = shift_test(counts, cpu, 10.0, after, names=NAMES, lag=4)
    seen = [j for j in range(len(NAMES)) if counts[after, j].any() and counts[~after, j].any()]
    design = np.column_stack(
        [np.full(240, 10.0), counts, 10.0 * after, counts[:, seen] * after[:, None]]
    )
    fit = sm.OLS(cpu, design).fit(cov_type="HAC", cov_kwds={"maxlags": 4, "use_correction": True})
    first = len(NAMES) + 2
    for m, j in enumerate(seen):
        (mine,) = [s for s in test.shifts if s.name == NAMES[j]]
        assert mine.shift == pytest.approx(fit.params[first + m], rel=1e-6, abs=1e-9)
        assert mine.se == pytest.approx(fit.bse[first + m], rel=1e-6)


@pytest.mark.parametrize("changed", ["browse", "search", "checkout", "report"])
def test_shift_test_names_each_type_changed_in_turn_and_only_it(changed: str) -> None:
    shift = np.zeros(len(NAMES))
    j = NAMES.index(changed)
    shift[j] = COST[j]  # twice as heavy
    counts, cpu, after = _two_periods(5 + j, shift)
    test = shift_test(counts, cpu, 10.0, after, names=NAMES, lag=4)
    assert test.changed(0.05, 0.1, +1) == (changed,)
    assert test.changed(0.05, 0.1, -1) == ()  # the CPU moved up: nothing got cheaper
    (mine,) = [s for s in test.shifts if s.name == changed]
    assert mine.relative == pytest.approx(1.0, rel=0.25)


def test_shift_test_names_two_types_changed_at_once() -> None:
    shift = np.zeros(len(NAMES))
    for name in ("search", "report"):
        shift[NAMES.index(name)] = COST[NAMES.index(name)]
    counts, cpu, after = _two_periods(11, shift)
    test = shift_test(counts, cpu, 10.0, after, names=NAMES, lag=4)
    assert set(test.changed(0.05, 0.1, +1)) == {"search", "report"}


def test_shift_test_names_nothing_when_costs_trade_or_only_the_level_moves() -> None:
    # one type dearer and another cheaper by as much CPU: the linear model's misfit under a
    # new mix, not a change of code
    shift = np.zeros(len(NAMES))
    shift[NAMES.index("checkout")] = 0.010
    shift[NAMES.index("search")] = -0.005
    counts, cpu, after = _two_periods(12, shift)
    test = shift_test(counts, cpu, 10.0, after, names=NAMES, lag=4)
    assert test.changed(0.05, 0.1, +1) == () and test.changed(0.05, 0.1, -1) == ()
    counts, cpu, after = _two_periods(13, np.zeros(len(NAMES)), idle_after=0.1)
    test = shift_test(counts, cpu, 10.0, after, names=NAMES, lag=4)
    assert test.changed(0.05, 0.1, +1) == ()
    # nothing to compare: no type on both sides, or fewer windows than coefficients
    assert shift_test(counts[:, :0], cpu, 10.0, after, names=[], lag=4).shifts == ()
    with pytest.raises(DataError, match="after"):
        shift_test(counts, cpu, 10.0, after[:-1], names=NAMES, lag=4)
