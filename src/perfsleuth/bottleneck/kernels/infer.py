"""The most probable workload given observed counters, and its uncertainty (Blake & Breese §4).

``w* = argmax Pr(c | f(w)) · Pr(w)``: the Gaussian error model (:mod:`.errormodel`) on the
observed counters times the independent priors (:mod:`.priors`). The search runs in the
unbounded space z of :class:`~perfsleuth.bottleneck.kernels.priors.Priors`, where the negative log
posterior is

    E(z) = ½ ‖W (g(c) − g(f(w(z))) − μ)‖² + Σ_j q_j(z_j),

a sum of squares plus smooth prior terms. It is minimised by Levenberg–Marquardt (damped
Gauss–Newton: the paper used Newton's method in Excel's Solver) from several starts **at once**:
the starts are the best of ``candidates`` prior draws, and each iteration evaluates the model at
every start and its forward-difference neighbours in one vectorised call (the model is not
smooth everywhere — min, max, clip — so no analytic Jacobian is attempted).

Uncertainty: the Laplace approximation at the mode, ``z ≈ N(ẑ, (JᵀJ + diag q'')⁻¹)``. Its draws
are reweighted toward the exact posterior (importance weights, tempered so that a quarter of
the draws stay effective), since the model's kinks — a hit ratio capped at 1 — and one-sided
walls make the posterior far from Gaussian in places. The weighted draws give each resource's
probability of being the most utilised (the bottleneck) and 90% intervals for parameters and
utilisations.
Everything is seeded: the same input gives the same answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from perfsleuth.bottleneck.kernels.errormodel import ErrorModel
from perfsleuth.bottleneck.kernels.model import Model
from perfsleuth.errors import DataError, NotEnoughDataError

__all__ = ["Inference", "infer"]

Array = npt.NDArray[np.float64]
_BAD = 1e3  # whitened residual given to a prediction that is not finite
_STEP = 1e-6  # forward-difference step in z
_TOL_STEP = 1e-5  # in z (log scale for most parameters: a 0.001% change)
_TOL_GAIN = 1e-6  # nats: far below anything that changes a probability
_PRUNE, _PRUNE_AFTER = 10.0, 10
_MIN_ESS = 0.25  # share of the Laplace draws that must stay effective after reweighting
_SCAN_POINTS, _SCAN_STEPS, _SCAN_PATHS = 24, 4, 3  # coordinate scan: grid, steps, paths


@dataclass(frozen=True, eq=False)
class Inference:
    """The inferred workload, the counters it explains and the resources it loads."""

    model: str
    parameters: tuple[str, ...]
    w: Array
    """MAP workload, one value per parameter (the model's units)."""
    w_low: Array
    w_high: Array
    """5% and 95% points of each parameter under the Laplace approximation."""
    columns: tuple[str, ...]
    """Counter columns the inference used (the observed ones the model predicts)."""
    observed: Array
    predicted: Array
    residual_sd: Array
    """(g(observed) − g(predicted) − μ) in error-model standard deviations, per counter."""
    resources: tuple[str, ...]
    utilisation: Array
    util_low: Array
    util_high: Array
    p_bottleneck: Array
    """Probability that each resource is the most utilised one."""
    inputs: dict[str, float]
    neg_log_posterior: float
    converged: bool
    iterations: int
    effective_samples: float
    """Effective size of the weighted sample behind ``p_bottleneck`` and the intervals."""
    tempering: float
    """Exponent of the importance weights (1: exact posterior weights; 0: plain Laplace)."""

    @property
    def bottleneck(self) -> str:
        """The resource the most probable workload loads most."""
        return self.resources[int(np.argmax(self.utilisation))]

    def value(self, name: str) -> float:
        return float(self.w[self.parameters.index(name)])

    def util(self, resource: str) -> float:
        return float(self.utilisation[self.resources.index(resource)])

    def probability(self, resource: str) -> float:
        return float(self.p_bottleneck[self.resources.index(resource)])

    @property
    def misfit(self) -> float:
        """Root mean square of the standardised residuals (≈ 1 when the model explains the
        counters as well as the error model expects)."""
        return float(np.sqrt(np.mean(self.residual_sd**2))) if len(self.residual_sd) else 0.0


def infer(
    model: Model,
    observed: Mapping[str, float],
    *,
    error_model: ErrorModel | None = None,
    inputs: Mapping[str, float] | None = None,
    seed: int = 0,
    starts: int = 4,
    candidates: int = 96,
    samples: int = 400,
    max_iterations: int = 150,
    min_counters: int = 3,
) -> Inference:
    """The most probable workload for ``observed`` counters (column → value).

    Parameters
    ----------
    model
        A compiled model (calibrated or not).
    observed
        Counter values by column; columns the model does not predict are ignored, and inputs
        (a cgroup's memory limit) are read from here too.
    error_model
        Learned by verification; default: the model's diagonal.
    inputs
        Input values that override those in ``observed``.
    seed
        Seeds the candidate starts and the Laplace draws.
    starts, candidates
        Local searches run from the ``starts`` best of ``candidates`` prior draws (plus the
        prior's centre).
    samples
        Draws from the Laplace approximation for the bottleneck probabilities.
    min_counters
        Fewer observed counters than this is :class:`NotEnoughDataError`.
    """
    errors = ErrorModel.default(model) if error_model is None else error_model
    index = {c: i for i, c in enumerate(model.counter_columns)}
    used = [c for c in model.counter_columns if c in observed]
    for column in used:
        value = observed[column]
        if not isinstance(value, int | float | np.floating | np.integer) or not math.isfinite(
            float(value)
        ):
            raise DataError(f"counter {column!r}: not a finite number: {value!r}")
    if len(used) < min_counters:
        raise NotEnoughDataError(
            f"only {len(used)} of the model's counters observed ({', '.join(used) or 'none'}); "
            f"need {min_counters}"
        )
    pos = np.array([index[c] for c in used], dtype=np.intp)
    values = np.array([float(observed[c]) for c in used], dtype=np.float64)
    bound = _inputs(model, observed, inputs)

    mean, whiten = errors.whitening(pos)
    scale = errors.scale[pos]
    target = np.arcsinh(values / scale) - mean
    priors = model.priors
    m = priors.size

    def residuals(z: Array) -> Array:
        counters, _ = model.predict(priors.to_w(z), bound)
        with np.errstate(all="ignore"):
            r = (target - np.arcsinh(counters[:, pos] / scale)) @ whiten.T
        r[~np.isfinite(r)] = _BAD
        return r

    def energy(z: Array, r: Array) -> Array:
        q, _, _ = priors.terms(z)
        out: Array = 0.5 * np.sum(r**2, axis=-1) + np.sum(q, axis=-1)
        return out

    rng = np.random.default_rng(seed)
    centre = priors.to_z(priors.median_w())
    scanned, scanned_e = _coordinate_scan(centre, priors, residuals, energy)
    draws = priors.to_z(priors.sample_w(rng, candidates))
    first = energy(draws, residuals(draws))
    best = np.argsort(first, kind="stable")[: max(1, starts - len(scanned))]
    z, e, iterations, converged, jac = _levenberg_marquardt(
        np.vstack([scanned, draws[best]]),
        np.concatenate([scanned_e, first[best]]),
        residuals,
        energy,
        priors.terms,
        max_iterations,
    )
    winner = int(np.argmin(e))
    z_hat = z[winner]
    j_hat = jac[winner]
    _, _, curvature = priors.terms(z_hat)
    hessian = j_hat.T @ j_hat + np.diag(np.maximum(curvature, 1e-9))
    cov = _inverse_psd(hessian)

    w_hat = priors.to_w(z_hat)
    counters, utils = model.predict(w_hat[None, :], bound)

    # Draws from the Laplace approximation, reweighted toward the exact posterior: the model
    # has kinks (a hit ratio capped at 1) and one-sided walls (a background rate can be any
    # small value but not a large one) that a Gaussian at the mode cannot see. Full importance
    # weights would leave a handful of draws carrying everything, so they are tempered:
    # weight^τ with the largest τ ≤ 1 that keeps a quarter of the draws effective.
    lower = np.linalg.cholesky(cov)
    normal = rng.standard_normal((samples, m))
    draws_z = z_hat + normal @ lower.T
    draws_w = priors.to_w(draws_z)
    draw_counters, draw_utils = model.predict(draws_w, bound)
    with np.errstate(all="ignore"):
        r_draws = (target - np.arcsinh(draw_counters[:, pos] / scale)) @ whiten.T
    r_draws[~np.isfinite(r_draws)] = _BAD
    log_ratio = -energy(draws_z, r_draws) + 0.5 * np.sum(normal**2, axis=1)
    weight, tempering, ess = _tempered(log_ratio, samples * _MIN_ESS)
    draw_utils = np.where(np.isfinite(draw_utils), draw_utils, 0.0)
    top = np.argmax(draw_utils, axis=1)
    p = np.bincount(top, weights=weight, minlength=len(model.resources)).astype(np.float64)
    w_low, w_high = _weighted_quantiles(draws_w, weight, (0.05, 0.95))
    u_low, u_high = _weighted_quantiles(draw_utils, weight, (0.05, 0.95))
    predicted = counters[0, pos]
    resid_sd = (np.arcsinh(values / scale) - np.arcsinh(predicted / scale) - mean) / np.sqrt(
        np.diag(errors.cov)[pos]
    )
    return Inference(
        model=model.name,
        parameters=model.parameters,
        w=w_hat,
        w_low=w_low,
        w_high=w_high,
        columns=tuple(used),
        observed=values,
        predicted=predicted,
        residual_sd=resid_sd,
        resources=model.resource_names,
        utilisation=utils[0],
        util_low=u_low,
        util_high=u_high,
        p_bottleneck=p,
        inputs=bound,
        neg_log_posterior=float(e[winner]),
        converged=bool(converged[winner]),
        iterations=iterations,
        effective_samples=ess,
        tempering=tempering,
    )


def _inputs(
    model: Model, observed: Mapping[str, float], override: Mapping[str, float] | None
) -> dict[str, float]:
    bound: dict[str, float] = {}
    for info in model.inputs:
        value = observed.get(info.counter)
        if override and info.name in override:
            value = override[info.name]
        if value is None:
            continue
        number = float(value)
        if not math.isfinite(number) or number <= 0:
            raise DataError(
                f"input {info.name!r} (counter {info.counter!r}): expected a positive "
                f"finite number, got {value!r}"
            )
        bound[info.name] = number
    return bound


_GRIDS: dict[int, Array] = {}


def _grid(priors: Any) -> Array:
    """The scan grid of a set of priors in z: equally spaced prior quantiles (cached)."""
    key = id(priors)
    if key not in _GRIDS:
        if len(_GRIDS) > 64:
            _GRIDS.clear()
        probabilities = np.linspace(0.001, 0.999, _SCAN_POINTS)
        _GRIDS[key] = priors.to_z(priors.quantile_w(probabilities))
    return _GRIDS[key]


def _coordinate_scan(start: Array, priors: Any, residuals: Any, energy: Any) -> tuple[Array, Array]:
    """Greedy forward selection from the prior's centre along a few paths at once.

    Each step tries every parameter at every point of a grid spanning its prior (one
    vectorised evaluation) and keeps, per path, the single change that lowers the energy most.
    The first step seeds the paths with the best changes of *different* parameters — the
    competing explanations ("sequential reads" or "large random reads") — which random prior
    draws in many dimensions rarely land near. Returns the paths' end points and energies.
    """
    m = priors.size
    grid = _grid(priors)  # (G, m)
    index = np.arange(m)

    def variations(points: Array) -> Array:
        trials = np.repeat(points[:, None, None, :], _SCAN_POINTS, axis=1).repeat(m, axis=2)
        trials[:, :, index, index] = grid  # trials[p, g, j] = point p with parameter j at g
        return trials.reshape(len(points), -1, m)

    first = variations(start[None, :])[0]
    values = energy(first, residuals(first)).reshape(_SCAN_POINTS, m)
    per_parameter = values.min(axis=0)
    chosen = np.argsort(per_parameter, kind="stable")[:_SCAN_PATHS]
    paths = np.stack(
        [first.reshape(_SCAN_POINTS, m, m)[int(np.argmin(values[:, j])), j] for j in chosen]
    )
    current = per_parameter[chosen].astype(np.float64)
    for _ in range(_SCAN_STEPS - 1):
        trials = variations(paths)  # (P, G*m, m)
        flat = trials.reshape(-1, m)
        values = energy(flat, residuals(flat)).reshape(len(paths), -1)
        k = np.argmin(values, axis=1)
        best = values[np.arange(len(paths)), k]
        better = best < current - 1e-9
        if not better.any():
            break
        paths = np.where(better[:, None], trials[np.arange(len(paths)), k], paths)
        current = np.where(better, best, current)
    return paths, current


def _levenberg_marquardt(
    z0: Array,
    e0: Array,
    residuals: Any,
    energy: Any,
    terms: Any,
    max_iterations: int,
) -> tuple[Array, Array, int, npt.NDArray[np.bool_], Array]:
    """Batched LM over starts (rows of ``z0``): returns z, E, iterations, converged flags, and
    the Jacobian of the residuals at each final z."""
    k, m = z0.shape
    eye = np.eye(m)
    steps = np.repeat(eye[None, :, :], k, axis=0) * _STEP

    def evaluate(z: Array) -> tuple[Array, Array, Array]:
        points = np.concatenate([z[:, None, :], z[:, None, :] + steps], axis=1)  # (k, m+1, m)
        r_all = residuals(points.reshape(k * (m + 1), m)).reshape(k, m + 1, -1)
        r = r_all[:, 0, :]
        jac = (r_all[:, 1:, :] - r[:, None, :]).transpose(0, 2, 1) / _STEP  # (k, n, m)
        return r, jac, energy(z, r)

    z = z0.copy()
    r, jac, e = evaluate(z)
    lam = np.full(k, 1e-3)
    done = np.zeros(k, dtype=bool)
    converged = np.zeros(k, dtype=bool)
    iterations = 0
    for iterations in range(1, max_iterations + 1):
        _, grad_q, curv_q = terms(z)
        grad = np.einsum("knm,kn->km", jac, r) + grad_q
        hess = np.einsum("kni,knj->kij", jac, jac) + np.maximum(curv_q, 0.0)[:, :, None] * eye
        diag = np.einsum("kii->ki", hess)
        damped = hess + (lam[:, None] * diag + 1e-12)[:, :, None] * eye
        step = -np.linalg.solve(damped, grad[:, :, None])[:, :, 0]
        step[done] = 0.0
        trial = z + step
        r_t, jac_t, e_t = evaluate(trial)
        better = (e_t < e) & ~done & np.isfinite(e_t)
        gain = e - e_t
        z = np.where(better[:, None], trial, z)
        r = np.where(better[:, None], r_t, r)
        jac = np.where(better[:, None, None], jac_t, jac)
        lam = np.where(better, np.maximum(lam / 3.0, 1e-9), np.minimum(lam * 4.0, 1e9))
        small_step = np.max(np.abs(step), axis=1) < _TOL_STEP
        small_gain = better & (gain < _TOL_GAIN)
        e = np.where(better, e_t, e)
        converged |= ~done & (small_step | small_gain)
        done |= small_step | small_gain | (lam >= 1e9)
        # a start trailing the best by _PRUNE nats (a likelihood ratio of e^-10) is abandoned
        if iterations >= _PRUNE_AFTER:
            done |= e > e.min() + _PRUNE
        if done.all():
            break
    return z, e, iterations, converged, jac


def _tempered(log_ratio: Array, min_ess: float) -> tuple[Array, float, float]:
    """Normalised weights exp(τ · log_ratio) with the largest τ in [0, 1] whose effective
    sample size is at least ``min_ess`` (bisection); returns weights, τ and the ESS."""
    finite = np.where(np.isfinite(log_ratio), log_ratio, -np.inf)

    def weights(tau: float) -> tuple[Array, float]:
        scaled = tau * finite
        scaled = scaled - scaled.max()
        w = np.exp(scaled)
        w /= w.sum()
        return w, float(1.0 / np.sum(w**2))

    full, ess = weights(1.0)
    if ess >= min_ess:
        return full, 1.0, ess
    low, high = 0.0, 1.0
    for _ in range(30):
        middle = 0.5 * (low + high)
        if weights(middle)[1] >= min_ess:
            low = middle
        else:
            high = middle
    w, ess = weights(low)
    return w, low, ess


def _weighted_quantiles(
    values: Array, weight: Array, quantiles: tuple[float, ...]
) -> tuple[Array, ...]:
    """Quantiles of each column of ``values`` under sample weights."""
    order = np.argsort(values, axis=0, kind="stable")
    ranked = np.take_along_axis(values, order, axis=0)
    cumulative = np.cumsum(weight[order], axis=0)
    out = []
    for q in quantiles:
        at = np.argmax(cumulative >= q - 1e-12, axis=0)
        out.append(ranked[at, np.arange(values.shape[1])])
    return tuple(out)


def _inverse_psd(matrix: Array) -> Array:
    values, vectors = np.linalg.eigh(0.5 * (matrix + matrix.T))
    values = np.maximum(values, 1e-9)
    out: Array = (vectors / values) @ vectors.T
    return 0.5 * (out + out.T)
