"""Priors of workload parameters and the unbounded space the inference searches in.

Blake & Breese take the workload parameters as independent, each lognormal with an offset,
uniform or beta (their eq. 4). Every parameter w lives in [lower, upper]; the search runs in an
unbounded z:

* lower bound only: ``w = lower + exp(z)``;
* both bounds: ``w = lower + (upper - lower) · logistic(z)``.

The prior is carried over to z with its Jacobian, ``q(z) = -log p(w(z)) - log |dw/dz|``, so the
posterior mode is taken in z (for a lognormal with offset at the lower bound, z = ln(w - a) is
exactly normal; for a beta prior, q is convex in z for every α, β > 0 and the mode never sits on
a bound). :meth:`Priors.terms` returns q and its first two derivatives, analytic, for all
parameters of a batch at once.

A parameter may be held at its lower bound (:meth:`Priors.pinned`): w is then that bound
whatever z, and z keeps a standard normal prior that no counter sees, so the search and the
draws run in the same space with or without pinned parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["ParameterPrior", "Priors", "beta_cdf", "beta_quantile"]

Array = npt.NDArray[np.float64]
_ZMAX_EXP = 700.0  # exp(700) is finite in float64
_ZMAX_LOGISTIC = 40.0  # logistic(40) rounds to 1 in float64 beyond this


@dataclass(frozen=True, slots=True)
class ParameterPrior:
    """One parameter's prior, already validated by the model loader.

    ``lognormal``: ``ln(w - offset) ~ N(ln(median), sigma²)``; ``uniform``: flat on the bounds;
    ``beta``: ``(w - lower) / (upper - lower) ~ Beta(alpha, beta)``; ``pinned``: w = lower.
    """

    kind: Literal["lognormal", "uniform", "beta", "pinned"]
    lower: float
    upper: float = math.inf
    median: float = 1.0
    sigma: float = 1.0
    offset: float = 0.0
    alpha: float = 1.0
    beta: float = 1.0


class Priors:
    """The priors of all m parameters, vectorised over batches of shape (k, m)."""

    def __init__(self, priors: Sequence[ParameterPrior]) -> None:
        self.priors = tuple(priors)
        col = np.array
        self.lower = col([p.lower for p in priors], dtype=np.float64)
        self.upper = col([p.upper for p in priors], dtype=np.float64)
        self.bounded = np.isfinite(self.upper)
        self.span = np.where(self.bounded, self.upper - self.lower, 1.0)
        self.lognormal = col([p.kind == "lognormal" for p in priors], dtype=bool)
        self.pinned_mask = col([p.kind == "pinned" for p in priors], dtype=bool)
        self.mu = col([math.log(p.median) if p.kind == "lognormal" else 0.0 for p in priors])
        self.sigma = col([p.sigma for p in priors], dtype=np.float64)
        self.offset = col([p.offset for p in priors], dtype=np.float64)
        self.alpha = col([p.alpha if p.kind == "beta" else 1.0 for p in priors])
        self.beta = col([p.beta if p.kind == "beta" else 1.0 for p in priors])
        # lognormal on [offset, inf): z = ln(w - offset) is N(mu, sigma), in closed form
        self.exact_normal = self.lognormal & ~self.bounded & (self.offset == self.lower)
        self._normal = np.flatnonzero(self.exact_normal)
        self._beta = np.flatnonzero(~self.lognormal & ~self.pinned_mask)
        self._pinned = np.flatnonzero(self.pinned_mask)
        self._general = np.flatnonzero(self.lognormal & ~self.exact_normal)

    @property
    def size(self) -> int:
        return len(self.priors)

    def pinned(self, mask: npt.NDArray[np.bool_]) -> Priors:
        """These priors with the parameters of ``mask`` held at their lower bound."""
        return Priors(
            [replace(p, kind="pinned") if m else p for p, m in zip(self.priors, mask, strict=True)]
        )

    # -- transforms ------------------------------------------------------------------------

    def to_w(self, z: Array) -> Array:
        """Workload values for unbounded ``z`` (any leading shape, last axis = parameters)."""
        zc = self._clip(z)
        with np.errstate(over="ignore"):
            grow = self.lower + np.exp(zc)
        squash = self.lower + self.span * _logistic(zc)
        w: Array = np.where(self.pinned_mask, self.lower, np.where(self.bounded, squash, grow))
        return w

    def to_z(self, w: Array) -> Array:
        """Inverse of :meth:`to_w`; values on or beyond a bound map to a large finite z."""
        w = np.asarray(w, dtype=np.float64)
        tiny = 1e-300
        with np.errstate(divide="ignore", invalid="ignore"):
            grow = np.log(np.maximum(w - self.lower, tiny))
            # both distances to the bounds, so that a value on a bound (a clipped z) maps
            # back onto the clip and not somewhere short of it
            below = np.maximum((w - self.lower) / self.span, tiny)
            above = np.maximum((self.upper - w) / self.span, tiny)
            squash = np.log(below) - np.log(above)
        z: Array = np.where(self.pinned_mask, 0.0, np.where(self.bounded, squash, grow))
        return self._clip(z)

    def _clip(self, z: Array) -> Array:
        limit = np.where(self.bounded, _ZMAX_LOGISTIC, _ZMAX_EXP)
        clipped: Array = np.clip(z, -limit, limit)
        return clipped

    # -- prior terms in z --------------------------------------------------------------------

    def terms(self, z: Array) -> tuple[Array, Array, Array]:
        """``q(z)``, ``q'(z)`` and ``q''(z)`` elementwise (``q`` up to a constant)."""
        return self._terms(z, derivatives=True)

    def energy(self, z: Array) -> Array:
        """``q(z)`` alone (what a search compares points by: a third of the work)."""
        return self._terms(z, derivatives=False)[0]

    def _terms(self, z: Array, *, derivatives: bool) -> tuple[Array, Array, Array]:
        z = self._clip(np.asarray(z, dtype=np.float64))
        q = np.empty_like(z)
        d = np.empty_like(z) if derivatives else q
        h = np.empty_like(z) if derivatives else q
        # lognormal with offset at the lower bound, no upper bound: z is N(mu, sigma)
        cols = self._normal
        if len(cols):
            var = self.sigma[cols] ** 2
            dev = z[..., cols] - self.mu[cols]
            q[..., cols] = dev**2 / (2 * var)
            if derivatives:
                d[..., cols] = dev / var
                h[..., cols] = 1.0 / var
        # beta / uniform on both bounds: q = α softplus(-z) + β softplus(z)
        cols = self._beta
        if len(cols):
            zc = z[..., cols]
            a, b = self.alpha[cols], self.beta[cols]
            q[..., cols] = a * np.logaddexp(0.0, -zc) + b * np.logaddexp(0.0, zc)
            if derivatives:
                s = _logistic(zc)
                d[..., cols] = -a * (1.0 - s) + b * s
                h[..., cols] = (a + b) * s * (1.0 - s)
        cols = self._pinned  # a standard normal in z: w does not depend on it
        if len(cols):
            q[..., cols] = 0.5 * z[..., cols] ** 2
            if derivatives:
                d[..., cols] = z[..., cols]
                h[..., cols] = 1.0
        cols = self._general
        if len(cols):
            qg, dg, hg = self._general_lognormal(z, _logistic(z))
            q[..., cols] = qg[..., cols]
            if derivatives:
                d[..., cols] = dg[..., cols]
                h[..., cols] = hg[..., cols]
        return q, d, h

    def _general_lognormal(self, z: Array, s: Array) -> tuple[Array, Array, Array]:
        """A lognormal with an upper bound, or an offset below the lower bound (chain rule)."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            e = np.exp(z)
            w = self.to_w(z)
            t1 = np.where(self.bounded, self.span * s * (1 - s), e)  # dw/dz
            t2 = np.where(self.bounded, self.span * s * (1 - s) * (1 - 2 * s), e)  # d²w/dz²
            jac_d = np.where(self.bounded, 2 * s - 1, -1.0)  # d/dz of -log dw/dz
            jac_h = np.where(self.bounded, 2 * s * (1 - s), 0.0)
            jac_q = -np.log(np.maximum(t1, 1e-300))
            u = np.maximum(w - self.offset, 1e-300)
            dev = np.log(u) - self.mu
            var = self.sigma**2
            nl = np.log(u) + dev**2 / (2 * var)
            nl1 = 1 / u + dev / (var * u)
            nl2 = (-1 + (1 - dev) / var) / u**2
            q = nl + jac_q
            d = nl1 * t1 + jac_d
            h = nl2 * t1**2 + nl1 * t2 + jac_h
        return q, d, h

    # -- draws ------------------------------------------------------------------------------

    def sample_w(self, rng: np.random.Generator, n: int) -> Array:
        """``n`` draws from the priors, shape (n, m) (bounded lognormals are truncated)."""
        m = self.size
        normal = rng.standard_normal((n, m))
        beta = rng.beta(self.alpha, self.beta, size=(n, m))
        with np.errstate(over="ignore"):
            logn = self.offset + np.exp(self.mu + self.sigma * normal)
        logn = np.clip(logn, self.lower, np.where(self.bounded, self.upper, np.inf))
        flat = self.lower + self.span * np.where(self.lognormal | self.pinned_mask, 0.0, beta)
        w: Array = np.where(self.lognormal, logn, flat)
        return w

    def quantile_w(self, p: Array) -> Array:
        """Quantiles ``p`` (shape (g,)) of each prior, shape (g, m) (truncated to the bounds)."""
        p = np.asarray(p, dtype=np.float64)[:, None]
        normal = np.array([[NormalDist().inv_cdf(float(q))] for q in p[:, 0]])
        with np.errstate(over="ignore"):
            logn = self.offset + np.exp(self.mu + self.sigma * normal)
        logn = np.clip(logn, self.lower, np.where(self.bounded, self.upper, np.inf))
        flat = self.lower + self.span * beta_quantile(self.alpha, self.beta, p)
        w: Array = np.where(self.lognormal, logn, np.where(self.pinned_mask, self.lower, flat))
        return w

    def median_w(self) -> Array:
        """A central value per parameter: the lognormal median, the beta/uniform mean."""
        with np.errstate(over="ignore"):  # a median near the float range: clipped
            logn = np.clip(self.offset + np.exp(self.mu), self.lower, self.upper)
        mean = self.lower + self.span * self.alpha / (self.alpha + self.beta)
        w: Array = np.where(self.lognormal, logn, np.where(self.pinned_mask, self.lower, mean))
        return w


def beta_cdf(a: Array, b: Array, x: Array) -> Array:
    """The regularised incomplete beta function I_x(a, b) (broadcast): the Beta(a, b)
    distribution function, by its continued fraction (modified Lentz), on the side of the
    mean where it converges fast (Numerical Recipes §6.4). In numpy, so that the inference
    does not import scipy (a fifth of a second of every command's start-up)."""
    a, b, x = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (a, b, x)))
    swap = x > (a + 1.0) / (a + b + 2.0)
    p, q, y = np.where(swap, b, a), np.where(swap, a, b), np.where(swap, 1.0 - x, x)
    y = np.clip(y, 1e-300, 1.0)
    log_beta = _log_beta(p, q)
    front = np.exp(p * np.log(y) + q * np.log1p(-np.minimum(y, 1.0 - 1e-16)) - log_beta) / p
    tiny = 1e-300
    c = np.ones_like(y)
    d = 1.0 - (p + q) * y / (p + 1.0)
    d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
    fraction = d.copy()
    for k in range(1, 10_000):
        for numerator in (
            k * (q - k) * y / ((p + 2 * k - 1) * (p + 2 * k)),
            -(p + k) * (p + q + k) * y / ((p + 2 * k) * (p + 2 * k + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
            c = 1.0 + numerator / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            fraction = fraction * d * c
        if np.all(np.abs(d * c - 1.0) < 1e-15):
            break
    out: Array = np.clip(front * fraction, 0.0, 1.0)
    out = np.where(swap, 1.0 - out, out)
    return np.where(x <= 0.0, 0.0, np.where(x >= 1.0, 1.0, out))


def beta_quantile(a: Array, b: Array, p: Array) -> Array:
    """Quantiles ``p`` of Beta(a, b) (broadcast), found on the logit scale (small quantiles of
    a U-shaped beta are far below any linear step)."""
    a, b, p = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (a, b, p)))
    # a + b above a thousand: the beta is all but normal (and its continued fraction slow)
    large = a + b > 1e3
    mean = a / (a + b)
    sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    normal = np.vectorize(lambda q: NormalDist().inv_cdf(float(q)))(np.clip(p, 1e-300, 1 - 1e-16))
    approx = np.clip(mean + sd * normal, 0.0, 1.0)
    a, b = np.where(large, 1.0, a), np.where(large, 1.0, b)
    # a start interpolated in a table of the distribution function on the logit scale, then
    # Newton's steps there (dI/du = x^a (1 - x)^b / B(a, b) for x = logistic(u))
    table = np.linspace(-_ZMAX_LOGISTIC, _ZMAX_LOGISTIC, 401)
    flat_a, flat_b, flat_p = a.reshape(-1), b.reshape(-1), p.reshape(-1)
    pairs, which = np.unique(np.stack([flat_a, flat_b], axis=1), axis=0, return_inverse=True)
    cdf = beta_cdf(pairs[:, 0], pairs[:, 1], _logistic(table)[:, None])  # (401, pairs)
    u = np.array(
        [np.interp(q, cdf[:, k], table) for q, k in zip(flat_p, which.reshape(-1), strict=True)]
    )
    u = u.reshape(p.shape)
    log_beta = _log_beta(a, b)
    for _ in range(4):
        x = _logistic(u)
        slope = np.exp(
            a * np.log(np.maximum(x, 1e-300)) + b * np.log1p(-np.minimum(x, 1 - 1e-16)) - log_beta
        )
        step = (beta_cdf(a, b, x) - p) / np.maximum(slope, 1e-300)
        u = np.clip(u - np.clip(step, -1.0, 1.0), -_ZMAX_LOGISTIC, _ZMAX_LOGISTIC)
    out: Array = np.where(large, approx, _logistic(u))
    return out


def _log_beta(a: Array, b: Array) -> Array:
    """ln B(a, b) elementwise."""
    lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
    out: Array = lgamma(a) + lgamma(b) - lgamma(a + b)
    return out


def _logistic(z: Array) -> Array:
    out: Array = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out
