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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["ParameterPrior", "Priors"]

Array = npt.NDArray[np.float64]
_ZMAX_EXP = 700.0  # exp(700) is finite in float64
_ZMAX_LOGISTIC = 40.0  # logistic(40) rounds to 1 in float64 beyond this


@dataclass(frozen=True, slots=True)
class ParameterPrior:
    """One parameter's prior, already validated by the model loader.

    ``lognormal``: ``ln(w - offset) ~ N(ln(median), sigma²)``; ``uniform``: flat on the bounds;
    ``beta``: ``(w - lower) / (upper - lower) ~ Beta(alpha, beta)``.
    """

    kind: Literal["lognormal", "uniform", "beta"]
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
        self.mu = col([math.log(p.median) if p.kind == "lognormal" else 0.0 for p in priors])
        self.sigma = col([p.sigma for p in priors], dtype=np.float64)
        self.offset = col([p.offset for p in priors], dtype=np.float64)
        self.alpha = col([p.alpha if p.kind == "beta" else 1.0 for p in priors])
        self.beta = col([p.beta if p.kind == "beta" else 1.0 for p in priors])
        # lognormal on [offset, inf): z = ln(w - offset) is N(mu, sigma), in closed form
        self.exact_normal = self.lognormal & ~self.bounded & (self.offset == self.lower)
        self._normal = np.flatnonzero(self.exact_normal)
        self._beta = np.flatnonzero(~self.lognormal)
        self._general = np.flatnonzero(self.lognormal & ~self.exact_normal)

    @property
    def size(self) -> int:
        return len(self.priors)

    # -- transforms ------------------------------------------------------------------------

    def to_w(self, z: Array) -> Array:
        """Workload values for unbounded ``z`` (any leading shape, last axis = parameters)."""
        zc = self._clip(z)
        with np.errstate(over="ignore"):
            grow = self.lower + np.exp(zc)
        squash = self.lower + self.span * _logistic(zc)
        w: Array = np.where(self.bounded, squash, grow)
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
        z: Array = np.where(self.bounded, squash, grow)
        return self._clip(z)

    def _clip(self, z: Array) -> Array:
        limit = np.where(self.bounded, _ZMAX_LOGISTIC, _ZMAX_EXP)
        clipped: Array = np.clip(z, -limit, limit)
        return clipped

    # -- prior terms in z --------------------------------------------------------------------

    def terms(self, z: Array) -> tuple[Array, Array, Array]:
        """``q(z)``, ``q'(z)`` and ``q''(z)`` elementwise (``q`` up to a constant)."""
        z = self._clip(np.asarray(z, dtype=np.float64))
        q = np.empty_like(z)
        d = np.empty_like(z)
        h = np.empty_like(z)
        # lognormal with offset at the lower bound, no upper bound: z is N(mu, sigma)
        cols = self._normal
        if len(cols):
            var = self.sigma[cols] ** 2
            dev = z[..., cols] - self.mu[cols]
            q[..., cols] = dev**2 / (2 * var)
            d[..., cols] = dev / var
            h[..., cols] = 1.0 / var
        # beta / uniform on both bounds: q = α softplus(-z) + β softplus(z)
        cols = self._beta
        if len(cols):
            zc = z[..., cols]
            s = _logistic(zc)
            a, b = self.alpha[cols], self.beta[cols]
            q[..., cols] = a * np.logaddexp(0.0, -zc) + b * np.logaddexp(0.0, zc)
            d[..., cols] = -a * (1.0 - s) + b * s
            h[..., cols] = (a + b) * s * (1.0 - s)
        cols = self._general
        if len(cols):
            qg, dg, hg = self._general_lognormal(z, _logistic(z))
            q[..., cols] = qg[..., cols]
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
        flat = self.lower + self.span * np.where(self.lognormal, 0.0, beta)
        w: Array = np.where(self.lognormal, logn, flat)
        return w

    def quantile_w(self, p: Array) -> Array:
        """Quantiles ``p`` (shape (g,)) of each prior, shape (g, m) (truncated to the bounds)."""
        from scipy.special import betaincinv, ndtri

        p = np.asarray(p, dtype=np.float64)[:, None]
        with np.errstate(over="ignore"):
            logn = self.offset + np.exp(self.mu + self.sigma * ndtri(p))
        logn = np.clip(logn, self.lower, np.where(self.bounded, self.upper, np.inf))
        flat = self.lower + self.span * betaincinv(self.alpha, self.beta, p)
        w: Array = np.where(self.lognormal, logn, flat)
        return w

    def median_w(self) -> Array:
        """A central value per parameter: the lognormal median, the beta/uniform mean."""
        with np.errstate(over="ignore"):  # a median near the float range: clipped
            logn = np.clip(self.offset + np.exp(self.mu), self.lower, self.upper)
        mean = self.lower + self.span * self.alpha / (self.alpha + self.beta)
        w: Array = np.where(self.lognormal, logn, mean)
        return w


def _logistic(z: Array) -> Array:
    out: Array = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out
