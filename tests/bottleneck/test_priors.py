"""Priors in the unbounded space: transforms invert, derivatives are right, draws follow."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfsleuth.bottleneck.kernels.priors import ParameterPrior, Priors, beta_cdf, beta_quantile

PRIORS = Priors(
    [
        ParameterPrior("lognormal", lower=0.0, median=100.0, sigma=2.0),
        ParameterPrior("lognormal", lower=512.0, median=16384.0, sigma=1.5, offset=512.0),
        ParameterPrior("lognormal", lower=1.0, upper=1e6, median=1000.0, sigma=3.0),  # bounded
        ParameterPrior(
            "lognormal", lower=10.0, median=30.0, sigma=1.0, offset=0.0
        ),  # offset < lower
        ParameterPrior("uniform", lower=-1.0, upper=3.0),
        ParameterPrior("beta", lower=0.0, upper=1.0, alpha=0.5, beta=0.5),
        ParameterPrior("beta", lower=0.0, upper=1.0, alpha=2.0, beta=5.0),
    ]
)


def test_transforms_invert_inside_the_bounds() -> None:
    rng = np.random.default_rng(1)
    w = PRIORS.sample_w(rng, 200)
    assert (w >= PRIORS.lower).all()
    assert (w <= np.where(PRIORS.bounded, PRIORS.upper, np.inf)).all()
    np.testing.assert_allclose(PRIORS.to_w(PRIORS.to_z(w)), w, rtol=1e-7, atol=1e-9)


def test_derivatives_match_finite_differences() -> None:
    z = np.linspace(-3, 3, 13)[:, None] * np.ones(PRIORS.size) + PRIORS.to_z(PRIORS.median_w())
    _, d, h = PRIORS.terms(z)
    step = 1e-5
    qp, dp, _ = PRIORS.terms(z + step)
    qm, dm, _ = PRIORS.terms(z - step)
    np.testing.assert_allclose(d, (qp - qm) / (2 * step), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, (dp - dm) / (2 * step), rtol=1e-4, atol=1e-5)


def test_lognormal_at_its_offset_is_normal_in_z() -> None:
    # q(z) = (z - mu)^2 / (2 sigma^2) for z = ln(w - offset)
    z = np.array([[math.log(100.0) + 1.0] + [0.0] * (PRIORS.size - 1)])
    q, d, h = PRIORS.terms(z)
    assert q[0, 0] == pytest.approx(1.0 / (2 * 4.0))
    assert d[0, 0] == pytest.approx(1.0 / 4.0)
    assert h[0, 0] == pytest.approx(1.0 / 4.0)


def test_beta_mode_in_z_is_interior_even_for_u_shaped_priors() -> None:
    z = np.linspace(-30, 30, 20001)[:, None] * np.ones(PRIORS.size)
    q, _, h = PRIORS.terms(z)
    for column in (5, 6):
        best = z[np.argmin(q[:, column]), column]
        assert -30 < best < 30
        assert (h[:, column] >= 0).all()
    # Beta(2, 5) in z: mode where -α(1-s) + βs = 0, s = α/(α+β) = 2/7
    s = 1 / (1 + math.exp(-z[np.argmin(q[:, 6]), 6]))
    assert s == pytest.approx(2 / 7, abs=1e-3)


def test_draws_follow_the_priors() -> None:
    w = PRIORS.sample_w(np.random.default_rng(0), 20000)
    assert np.median(w[:, 0]) == pytest.approx(100.0, rel=0.05)
    assert np.std(np.log(w[:, 0])) == pytest.approx(2.0, rel=0.05)
    assert np.median(w[:, 1] - 512) == pytest.approx(16384.0, rel=0.05)
    assert w[:, 4].mean() == pytest.approx(1.0, abs=0.05)
    assert w[:, 6].mean() == pytest.approx(2 / 7, abs=0.01)
    assert PRIORS.median_w()[0] == pytest.approx(100.0)


def test_quantiles_match_scipy_without_importing_it() -> None:
    # the inference's scan grid: prior quantiles computed in numpy (scipy.special costs every
    # command a fifth of a second of start-up), checked against scipy here
    from scipy.special import betainc, betaincinv, ndtri

    p = np.linspace(0.001, 0.999, 16)
    grid = PRIORS.quantile_w(p)
    a, b = np.array([0.2, 0.5, 1.0, 2.0, 30.0, 0.5]), np.array([0.2, 1.5, 0.3, 5.0, 3.0, 0.5])
    np.testing.assert_allclose(
        beta_quantile(a, b, p[:, None]), betaincinv(a, b, p[:, None]), atol=1e-9
    )
    x = np.random.default_rng(3).uniform(size=(40, 6))
    np.testing.assert_allclose(beta_cdf(a, b, x), betainc(a, b, x), atol=1e-12)
    np.testing.assert_allclose(grid[:, 0], 100.0 * np.exp(2.0 * ndtri(p)), rtol=1e-9)
    np.testing.assert_allclose(grid[:, 6], betaincinv(2.0, 5.0, p), atol=1e-9)
    np.testing.assert_allclose(grid[:, 4], -1.0 + 4.0 * p, atol=1e-9)  # uniform
    # a + b beyond a thousand: the normal approximation, within a hundredth of a spread
    big = beta_quantile(np.array(2e3), np.array(3e3), p)
    sd = math.sqrt(2e3 * 3e3 / (5e3**2 * (5e3 + 1)))
    assert np.max(np.abs(big - betaincinv(2e3, 3e3, p))) < 0.05 * sd


def test_pinned_parameters_sit_on_their_lower_bound() -> None:
    priors = Priors(
        [
            ParameterPrior("lognormal", lower=0.0, median=0.05, sigma=3.0),
            ParameterPrior("beta", lower=0.0, upper=1.0, alpha=1.0, beta=2.0),
            ParameterPrior("lognormal", lower=1.0, median=2.0, sigma=0.5, offset=1.0),
        ]
    )
    pinned = priors.pinned(np.array([True, True, False]))
    z = np.random.default_rng(0).normal(size=(50, 3)) * 5
    w = pinned.to_w(z)
    assert (w[:, :2] == 0.0).all()
    np.testing.assert_array_equal(w[:, 2], priors.to_w(z)[:, 2])
    draws = pinned.sample_w(np.random.default_rng(1), 200)
    assert (draws[:, :2] == 0.0).all()
    # the other parameters' draws are those of the unpinned priors (the same seeded stream)
    np.testing.assert_array_equal(draws[:, 2], priors.sample_w(np.random.default_rng(1), 200)[:, 2])
    assert (pinned.quantile_w(np.array([0.05, 0.5, 0.95]))[:, :2] == 0.0).all()
    assert (pinned.median_w()[:2] == 0.0).all()
    assert (pinned.to_z(w)[:, :2] == 0.0).all()
    # z of a pinned parameter is a standard normal no counter sees
    q, d, h = pinned.terms(z)
    np.testing.assert_allclose(q[:, :2], 0.5 * z[:, :2] ** 2)
    np.testing.assert_allclose(d[:, :2], z[:, :2])
    np.testing.assert_array_equal(h[:, :2], 1.0)
