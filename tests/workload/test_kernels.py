"""Transaction-mix model (Kelly 2005): golden numbers, LAR optimality, recovery, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import linprog

from perfsleuth.datasets.transactions import simulate_transactions
from perfsleuth.errors import CollinearityWarning, ConvergenceWarning, DataError, NotEnoughDataError
from perfsleuth.frames import workload_types
from perfsleuth.units import format_seconds
from perfsleuth.workload import kernels as mixmodel
from perfsleuth.workload.kernels import MixFit, fit_mix_model


def primal_lar(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """The primal LP, min Σ(e⁺ + e⁻) s.t. Xa + e⁺ − e⁻ = y: an independent reference."""
    n, p = x.shape
    cost = np.r_[np.zeros(p), np.ones(2 * n)]
    a_eq = np.hstack([x, np.eye(n), -np.eye(n)])
    bounds = [(None, None)] * p + [(0, None)] * (2 * n)
    res = linprog(cost, A_eq=a_eq, b_eq=y, bounds=bounds, method="highs")
    assert res.status == 0
    return res.x[:p], float(res.fun)


def mix_data(n: int, p: int, seed: int, *, outliers: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    rates = np.exp(rng.normal(1.5, 1.0, p))
    drift = np.exp(rng.normal(0.0, 0.5, (n, p)))
    x = rng.poisson(rates * drift).astype(float)
    service = np.exp(rng.uniform(np.log(0.002), np.log(0.5), p))
    y = (x @ service) * np.exp(rng.normal(0.0, 0.15, n))
    y[rng.random(n) < outliers] *= 4.0
    return x, y


# -- golden numbers ----------------------------------------------------------------------------


def test_one_type_lar_is_the_weighted_median_of_ratios() -> None:
    # min Σ x_i |y_i/x_i − a|: the weighted median of the ratios (1, 2.5, 1), weights (1, 2, 4)
    fit = fit_mix_model([1.0, 2.0, 4.0], [1.0, 5.0, 4.0])
    assert fit.coef.tolist() == pytest.approx([1.0], abs=1e-12)
    assert fit.residuals.tolist() == pytest.approx([0.0, 3.0, 0.0], abs=1e-12)
    assert fit.nae == pytest.approx(0.3)


def test_two_types_golden_lar_and_ols() -> None:
    # Checked against the primal LP (unique optimum: the optimal face is a point) and against
    # the normal equations, solved by hand: XᵀX = [[16, 9], [9, 13]], Xᵀy = [32, 37].
    x = np.array([[1, 0], [0, 1], [1, 1], [2, 1], [1, 3], [3, 1]], dtype=float)
    y = np.array([1.0, 2.0, 4.0, 3.0, 7.0, 5.0])
    lar = fit_mix_model(x, y, names=["a", "b"])
    assert lar.coef.tolist() == pytest.approx([1.0, 2.0], abs=1e-9)
    assert lar.nae == pytest.approx(2.0 / 22.0)
    assert lar.method == "lar" and lar.names == ("a", "b") and lar.rank == 2
    ols = fit_mix_model(x, y, method="ols")
    assert ols.coef.tolist() == pytest.approx([114 / 127, 263 / 127], rel=1e-12)
    assert lar.nae < ols.nae


def optimal_face(x: np.ndarray, y: np.ndarray, objective: float) -> np.ndarray:
    """Range (min, max) of each coefficient over every LAR optimum (the LP's optimal face)."""
    n, p = x.shape
    a_eq = np.hstack([x, np.eye(n), -np.eye(n)])
    a_ub = np.r_[np.zeros(p), np.ones(2 * n)][None, :]
    bounds = [(None, None)] * p + [(0, None)] * (2 * n)
    out = np.empty((p, 2))
    for j in range(p):
        for k, sign in enumerate((1.0, -1.0)):
            cost = np.zeros(p + 2 * n)
            cost[j] = sign
            res = linprog(
                cost,
                A_eq=a_eq,
                b_eq=y,
                A_ub=a_ub,
                b_ub=[objective * (1 + 1e-9)],
                bounds=bounds,
                method="highs",
            )
            out[j, k] = res.x[j]
    return out


@pytest.mark.parametrize("seed", range(8))
def test_lar_matches_the_primal_lp(seed: int) -> None:
    x, y = mix_data(60, 4, seed)
    fit = fit_mix_model(x, y)
    coef, objective = primal_lar(x, y)
    assert np.abs(fit.residuals).sum() == pytest.approx(objective, rel=1e-9)
    # LAR optima need not be unique (integer counts make ties possible): the coefficients must
    # lie on the optimal face, and equal the primal's wherever that face is a point.
    face = optimal_face(x, y, objective)
    tol = 1e-6 * np.abs(face).max()
    assert (fit.coef >= face[:, 0] - tol).all() and (fit.coef <= face[:, 1] + tol).all()
    unique = face[:, 1] - face[:, 0] <= tol
    np.testing.assert_allclose(fit.coef[unique], coef[unique], rtol=1e-6)


# -- LAR against OLS, invariances ----------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    counts=arrays(
        np.int64, st.tuples(st.integers(6, 30), st.integers(1, 4)), elements=st.integers(0, 40)
    ),
    data=st.data(),
)
def test_lar_never_has_a_higher_nae_than_ols(counts: np.ndarray, data: st.DataObject) -> None:
    n = counts.shape[0]
    response = np.asarray(
        data.draw(arrays(np.float64, n, elements=st.floats(0.0, 100.0, allow_subnormal=False)))
    )
    assume(response.sum() > 0)
    assume(n >= int((counts != 0).any(axis=0).sum()) + 1 and (counts != 0).any())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollinearityWarning)
        lar = fit_mix_model(counts, response)
        ols = fit_mix_model(counts, response, method="ols")
    assert lar.nae <= ols.nae + 1e-9


@pytest.mark.parametrize("seed", range(20))
def test_lar_never_has_a_higher_nae_than_ols_on_realistic_data(seed: int) -> None:
    x, y = mix_data(300, 8, seed, outliers=0.05 * (seed % 3))
    assert fit_mix_model(x, y).nae <= fit_mix_model(x, y, method="ols").nae + 1e-12


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), order=st.permutations(range(5)))
def test_fit_is_invariant_to_column_order(seed: int, order: list[int]) -> None:
    x, y = mix_data(80, 5, seed)
    names = ["a", "b", "c", "d", "e"]
    base = fit_mix_model(x, y, names=names)
    moved = fit_mix_model(x[:, order], y, names=[names[j] for j in order])
    assert moved.nae == pytest.approx(base.nae, rel=1e-9)
    np.testing.assert_allclose(moved.coef, base.coef[order], rtol=1e-6)
    np.testing.assert_allclose(moved.fitted, base.fitted, rtol=1e-6, atol=1e-9)


def test_units_do_not_matter() -> None:
    x, y = mix_data(200, 6, 3)
    seconds = fit_mix_model(x, y)
    millis = fit_mix_model(x * 1000.0, y * 1e3)  # counts ×1000, response in ms
    np.testing.assert_allclose(millis.coef, seconds.coef, rtol=1e-6)
    assert millis.nae == pytest.approx(seconds.nae, rel=1e-9)


def test_results_are_deterministic_and_read_only() -> None:
    x, y = mix_data(500, 10, 1)
    first, again = fit_mix_model(x, y), fit_mix_model(x, y)
    assert np.array_equal(first.coef, again.coef) and first.nae == again.nae
    with pytest.raises(ValueError, match="read-only"):
        first.coef[0] = 1.0


# -- the large-n path and the fallback -----------------------------------------------------------


def test_preprocessed_lar_is_exactly_optimal(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = mix_data(4000, 12, 11, outliers=0.05)
    direct = fit_mix_model(x, y)
    added: list[int] = []
    add = mixmodel._DualLP.add

    def spy(self: mixmodel._DualLP, *args: np.ndarray) -> None:
        added.append(len(args[1]))
        add(self, *args)

    monkeypatch.setattr(mixmodel, "_DIRECT_MAX", 500)
    monkeypatch.setattr(mixmodel._DualLP, "add", spy)
    glob = fit_mix_model(x, y)
    assert glob.nae == pytest.approx(direct.nae, rel=1e-9)
    np.testing.assert_allclose(glob.coef, direct.coef, rtol=1e-6)
    assert added, "the sign-check round that moves windows back into the LP never ran"


def test_preprocessing_falls_back_to_the_full_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    # A reduced LP can be infeasible when too much is globbed: the band doubles, and past n/2
    # the full LP is solved.
    x, y = mix_data(3000, 6, 12)
    direct = fit_mix_model(x, y)
    sizes: list[int] = []

    def infeasible(xs: np.ndarray, ys: np.ndarray, inside: np.ndarray, signs: np.ndarray) -> None:
        sizes.append(int(inside.sum()))

    monkeypatch.setattr(mixmodel, "_DIRECT_MAX", 100)
    monkeypatch.setattr(mixmodel, "_solve_globbed", infeasible)
    fit = fit_mix_model(x, y)
    # subsample m = max(20p, √p·n^⅔/4) = 127 windows; bands of 4m, 8m; 16m > n/2: full LP
    assert sizes == [508, 1016]
    assert fit.nae == pytest.approx(direct.nae, rel=1e-12)


def test_linprog_fallback_gives_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = mix_data(300, 5, 2)
    core = fit_mix_model(x, y)
    monkeypatch.setattr(mixmodel, "_core", None)
    fallback = fit_mix_model(x, y)
    assert fallback.nae == pytest.approx(core.nae, rel=1e-9)
    np.testing.assert_allclose(fallback.coef, core.coef, rtol=1e-6)


def test_a_duality_gap_is_reported() -> None:
    x, y = mix_data(50, 3, 0)
    with pytest.warns(ConvergenceWarning, match="duality gap"):
        mixmodel._check_gap(x / 10, y, np.zeros(3), np.zeros(50))


# -- recovery of known service times -------------------------------------------------------------


def _xy(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, list[str]]:
    types = workload_types(frame)
    x = frame[[f"n[{t}]" for t in types]].to_numpy()
    y = frame[[f"rt_sum[{t}]" for t in types]].to_numpy().sum(axis=1)
    return x, y, types


@pytest.mark.parametrize("seed", range(3))
def test_recovers_service_times_at_light_load(seed: int) -> None:
    # Light load (peak 10% CPU: queueing adds < 0.5%), one week of 5-minute windows, moderate
    # noise. Tolerance: every type within 10% of its true service time (observed worst over
    # seeds 0-9: 6.3%); the heavier types, which dominate response time, within 3%.
    run = simulate_transactions(
        2016, peak_util=0.1, cv=0.5, window_noise=0.02, mix_noise=0.5, seed=seed
    )
    x, y, types = _xy(run.frame)
    fit = fit_mix_model(x, y, names=types)
    true = np.array([run.service_time(t) for t in types])
    np.testing.assert_allclose(fit.coef, true, rtol=0.10)
    heavy = true >= 0.1
    np.testing.assert_allclose(fit.coef[heavy], true[heavy], rtol=0.03)
    assert fit.nae < 0.05


def test_recovers_the_mean_service_time_with_default_noise() -> None:
    # With the simulator's default (realistic) noise single light types are only known to
    # ~30%, but the mix's mean service time, which is what explains response time, to 2%.
    run = simulate_transactions(864, peak_util=0.05, seed=5)
    x, y, types = _xy(run.frame)
    fit = fit_mix_model(x, y, names=types)
    true = np.array([run.service_time(t) for t in types])
    assert (x @ fit.coef).sum() == pytest.approx((x @ true).sum(), rel=0.02)
    np.testing.assert_allclose(fit.coef, true, rtol=0.35)


# -- degenerate and bad input --------------------------------------------------------------------


def test_a_type_never_seen_gets_nan_and_a_note() -> None:
    x, y = mix_data(100, 3, 4)
    x = np.c_[x[:, :1], np.zeros(100), x[:, 1:]]
    fit = fit_mix_model(x, y, names=["a", "ghost", "b", "c"])
    assert np.isnan(fit.coef[1]) and np.isfinite(np.delete(fit.coef, 1)).all()
    assert any("ghost" in note and "NaN" in note for note in fit.notes)
    assert np.isfinite(fit.fitted).all()
    reference = fit_mix_model(np.delete(x, 1, axis=1), y)
    np.testing.assert_allclose(np.delete(fit.coef, 1), reference.coef)
    new = np.array([[1.0, 0.0, 1.0, 1.0], [1.0, 2.0, 1.0, 1.0]])
    predicted = fit.predict(new)
    assert np.isfinite(predicted[0]) and np.isnan(predicted[1])


def test_collinear_types_are_named_in_a_warning() -> None:
    x, y = mix_data(100, 3, 5)
    x = np.c_[x, 2.0 * x[:, 0]]
    with pytest.warns(CollinearityWarning, match=r"a, twice_a"):
        fit = fit_mix_model(x, y, names=["a", "b", "c", "twice_a"])
    assert fit.rank == 3
    # the split between the two is arbitrary, their combined effect is not
    alone = fit_mix_model(x[:, :3], y)
    assert fit.coef[0] + 2 * fit.coef[3] == pytest.approx(alone.coef[0], rel=1e-6)
    assert fit.nae == pytest.approx(alone.nae, rel=1e-9)


@pytest.mark.parametrize(
    ("counts", "response", "error", "match"),
    [
        ([[1.0, np.nan], [2.0, 1.0], [1.0, 1.0]], [1.0, 2.0, 3.0], DataError, "NaN or infinite"),
        ([[1.0, 2.0], [2.0, 1.0], [1.0, 1.0]], [1.0, np.inf, 3.0], DataError, "NaN or infinite"),
        ([[1.0, -2.0], [2.0, 1.0], [1.0, 1.0]], [1.0, 2.0, 3.0], DataError, "negative"),
        ([[1.0, 2.0], [2.0, 1.0], [1.0, 1.0]], [1.0, -2.0, 3.0], DataError, "negative"),
        ([[1.0, 2.0], [2.0, 1.0]], [1.0, 2.0, 3.0], DataError, "2 window"),
        ([[1.0, 2.0], [2.0, 1.0]], [1.0, 2.0], NotEnoughDataError, "need at least 3"),
        ([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]], [1.0, 2.0, 3.0], NotEnoughDataError, "no transac"),
        (np.zeros((0, 2)), [], NotEnoughDataError, "no windows"),
        (np.zeros((3, 0)), [1.0, 2.0, 3.0], DataError, "no transaction types"),
        ([["a", "b"]], [1.0], DataError, "numeric"),
    ],
)
def test_bad_input_is_rejected_clearly(
    counts: object, response: object, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        fit_mix_model(counts, response)  # type: ignore[arg-type]


def test_bad_names_and_method() -> None:
    with pytest.raises(DataError, match="1 name"):
        fit_mix_model([[1.0, 2.0], [2.0, 1.0], [3.0, 1.0]], [1.0, 2.0, 3.0], names=["a"])
    with pytest.raises(ValueError, match="method"):
        fit_mix_model([[1.0], [2.0]], [1.0, 2.0], method="l1")  # type: ignore[arg-type]


def test_all_zero_response_gives_nan_nae() -> None:
    fit = fit_mix_model([[1.0], [2.0], [3.0]], [0.0, 0.0, 0.0])
    assert fit.coef.tolist() == [0.0]
    assert np.isnan(fit.nae) and np.isnan(fit.abs_rel_error).all()


# -- summary -------------------------------------------------------------------------------------


def test_summary_reports_service_times_nae_and_error_quantiles() -> None:
    x, y = mix_data(400, 3, 6)
    x[:, 1] = 0.0
    fit = fit_mix_model(x, y, names=["checkout", "<script>alert(1)</script>", "browse"])
    summary = fit.summary()
    text = summary.text
    assert "LAR" in text and f"{100 * fit.nae:.1f}%" in text
    assert "|e|/y 50th percentile" in text and "99th" in text
    assert format_seconds(float(fit.coef[0])) in text
    assert "n/a" in text  # the type never seen
    assert str(summary) == text
    html = summary.html
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert summary._repr_html_() == html
    q = fit.error_quantiles()
    assert q[0.5] <= q[0.9] <= q[0.99]
    assert q[0.5] == pytest.approx(float(np.nanmedian(fit.abs_rel_error)))


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0123, "12.3 ms"),
        (4.5e-5, "45 µs"),
        (2.5, "2.5 s"),
        (0.0, "0 s"),
        (-0.164, "-164 ms"),
        (float("nan"), "n/a"),
    ],
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


def test_mixfit_is_exported() -> None:
    import perfsleuth.workload.kernels as module

    assert set(module.__all__) >= {"MixFit", "fit_mix_model"}
    assert isinstance(fit_mix_model([[1.0], [2.0]], [1.0, 2.0]), MixFit)
