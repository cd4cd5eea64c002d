"""The most probable workload given observed counters, and its uncertainty (Blake & Breese §4).

``w* = argmax Pr(c | f(w)) · Pr(w)``: the error model (:mod:`.errormodel`) on the observed
counters times the independent priors (:mod:`.priors`). The search runs in the unbounded
space z of :class:`~perfsleuth.bottleneck.kernels.priors.Priors`, where the negative log
posterior is

    E(z) = ½ Σ_i ψ(e_i(z))² + Σ_j q_j(z_j),   e = W (g(c) − g(f(w(z))) − μ),

a sum of squares plus smooth prior terms. The paper's error model is Gaussian (ψ(e) = e); a
model meets counters it cannot explain (a co-tenant's refaults, a kernel that counts what the
formulas do not), and a Gaussian lets one such counter, 15 standard deviations off, decide
everything with certainty. So the errors have Student-t tails (ν = 4):
ψ(e)² = (ν + 1) log(1 + e² / (ν + 1)), Gaussian near 0, logarithmic far out. A machine-wide
counter whose workload share is observed too (``workload_part``) is one-sided: other tenants
may add to it, so only a prediction above what was observed counts against the workload.
With none of the workload's own counters observed, there is no share to separate: the workload
is all the machine runs, and other tenants' terms are held at 0 (:meth:`Model.priors_for`).

E is minimised by Levenberg–Marquardt (damped Gauss–Newton: the paper used Newton's method
in Excel's Solver) from several starts **at once**: the starts are the best of ``candidates``
prior draws, and each iteration evaluates the model at every start and its forward-difference
neighbours in one vectorised call (the model is not smooth everywhere — min, max, clip — so no
analytic Jacobian is attempted).

Uncertainty: when the residuals at the mode are larger than the error model expects, the
error model was too confident for these counters, and the likelihood is widened by the
dispersion φ = Σ ψ(e)² / (n − p_eff) (at least 1; p_eff is the number of parameters the
counters determine, the trace of the hat matrix), as a quasi-likelihood does, and by a
likelihood temperature T ≥ 1 when asked for. The posterior is then the Laplace
approximation at the mode, ``z ≈ N(ẑ, (JᵀJ / (φT) + diag q'')⁻¹)``. Its draws
are reweighted toward the exact (widened) posterior (importance weights, tempered so that a
quarter of the draws stay effective), since the model's kinks — a hit ratio capped at 1 — and
one-sided walls make the posterior far from Gaussian in places. The weighted draws give the
probability of each state — no bottleneck (no resource at ``threshold`` or more), or a
resource, the most utilised — and 90% intervals for parameters and utilisations.
Everything is seeded: the same input gives the same answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from perfsleuth.bottleneck.kernels.errormodel import ErrorModel
from perfsleuth.bottleneck.kernels.model import Model
from perfsleuth.errors import DataError, NotEnoughDataError

__all__ = ["NONE", "Inference", "infer", "infer_many"]

Array = npt.NDArray[np.float64]
_BAD = 1e3  # whitened residual given to a prediction that is not finite
_STEP = 1e-6  # forward-difference step in z
_TOL_STEP = 1e-4  # in z (log scale for most parameters: a 0.01% change)
_TOL_GAIN = 1e-5  # nats: far below anything that changes a probability
_WARM_ITERATIONS = 25  # of the Gaussian search, a start for the heavy-tailed one
_PRUNE, _PRUNE_AFTER = 10.0, 15
_MIN_ESS = 0.25  # share of the Laplace draws that must stay effective after reweighting
_SCAN_POINTS, _SCAN_STEPS, _SCAN_PATHS = 16, 3, 3  # coordinate scan: grid, steps, paths
_NU = 4.0  # degrees of freedom of the errors' Student-t tails
NONE = "none"
"""The state in which no resource is busy enough to be a bottleneck."""


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
    p_state: Array
    """Probability of each of :attr:`states`: no bottleneck, then each resource."""
    threshold: float
    """Utilisation below which a resource is not a bottleneck."""
    dispersion: float
    """φ ≥ 1: how much wider than the error model the residuals say the errors are."""
    one_sided: tuple[str, ...] = ()
    """Machine-wide columns treated as bounds (their workload share was observed)."""

    @property
    def states(self) -> tuple[str, ...]:
        """``"none"`` and the resources, in the order of :attr:`p_state`."""
        return (NONE, *self.resources)

    @property
    def state(self) -> str:
        """The most probable state: ``"none"`` or the bottleneck resource."""
        return self.states[int(np.argmax(self.p_state))]

    @property
    def bottleneck(self) -> str:
        """The most probable bottleneck resource (whether or not "none" is more probable);
        by utilisation when no draw has any resource at the threshold."""
        p = self.p_state[1:]
        if p.max() <= 0:
            return self.resources[int(np.argmax(self.utilisation))]
        return self.resources[int(np.argmax(p))]

    def p(self, state: str) -> float:
        """Probability of one state (``"none"`` or a resource)."""
        return float(self.p_state[self.states.index(state)])

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
    max_iterations: int = 100,
    min_counters: int = 3,
    threshold: float = 0.5,
    temperature: float = 1.0,
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
    max_iterations
        Of each local search.
    min_counters
        Fewer observed counters than this is :class:`NotEnoughDataError`.
    threshold
        A draw whose most utilised resource is below this has no bottleneck.
    temperature
        Likelihood temperature T ≥ 1 of the posterior's draws: the likelihood is raised to
        1/T (errors √T times as wide) for the probabilities and intervals, not for the
        most probable workload; 1: the error model as it is (the detector's default, fitted
        on labelled real recordings).
    """
    (result,) = infer_many(
        model,
        [observed],
        error_model=error_model,
        inputs=inputs,
        seed=seed,
        starts=starts,
        candidates=candidates,
        samples=samples,
        max_iterations=max_iterations,
        min_counters=min_counters,
        threshold=threshold,
        temperature=temperature,
    )
    return result


def infer_many(
    model: Model,
    observations: Sequence[Mapping[str, float]],
    *,
    error_model: ErrorModel | None = None,
    inputs: Mapping[str, float] | None = None,
    seed: int = 0,
    starts: int = 4,
    candidates: int = 96,
    samples: int = 400,
    max_iterations: int = 100,
    min_counters: int = 3,
    threshold: float = 0.5,
    temperature: float = 1.0,
) -> list[Inference]:
    """:func:`infer` of many windows at once: the same answer for each as alone (the same
    seeded starts and draws), for a fraction of the time — every step evaluates the model for
    all windows in one vectorised call. Windows that observe the same counters are searched
    together."""
    errors = ErrorModel.default(model) if error_model is None else error_model
    prepared = [_observe(model, obs, inputs, min_counters) for obs in observations]
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, (used, _, _) in enumerate(prepared):
        groups.setdefault(used, []).append(i)
    out: list[Inference | None] = [None] * len(prepared)
    if not (math.isfinite(temperature) and temperature >= 1.0):
        raise DataError(f"temperature: expected a finite number ≥ 1, got {temperature!r}")
    settings = _Settings(starts, candidates, samples, max_iterations, threshold, temperature)
    for used, members in groups.items():
        group = _Group(model, errors, observations, used, [prepared[i] for i in members], members)
        for i, result in zip(members, group.infer(seed, settings), strict=True):
            out[i] = result
    return [r for r in out if r is not None]


@dataclass(frozen=True)
class _Settings:
    starts: int
    candidates: int
    samples: int
    max_iterations: int
    threshold: float
    temperature: float


def _observe(
    model: Model,
    observed: Mapping[str, float],
    override: Mapping[str, float] | None,
    min_counters: int,
) -> tuple[tuple[str, ...], Array, dict[str, float]]:
    """The model's columns ``observed`` holds, their values, and the inputs bound."""
    used = tuple(c for c in model.counter_columns if c in observed)
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
    values = np.array([float(observed[c]) for c in used], dtype=np.float64)
    return used, values, _inputs(model, observed, override)


class _Group:
    """Windows observing the same counters, searched together: rows of every batch evaluated
    belong to a window (``owner``), whose observed values and inputs they are compared with."""

    def __init__(
        self,
        model: Model,
        errors: ErrorModel,
        observations: Sequence[Mapping[str, float]],
        used: tuple[str, ...],
        prepared: Sequence[tuple[tuple[str, ...], Array, dict[str, float]]],
        members: Sequence[int],
    ) -> None:
        index = {c: i for i, c in enumerate(model.counter_columns)}
        self.model = model
        self.errors = errors
        self.used = used
        self.pos = np.array([index[c] for c in used], dtype=np.intp)
        self.values = np.stack([values for _, values, _ in prepared])  # (B, n)
        self.bound = [bound for _, _, bound in prepared]
        self.mean, self.whiten = errors.whitening(self.pos)
        self.scale = errors.scale[self.pos]
        self.target = np.arcsinh(self.values / self.scale) - self.mean
        info = {c.column: c for c in model.counters}
        first = observations[members[0]]
        self.one_sided = np.array(
            [bool(info[c].workload_part) and info[c].workload_part in first for c in used]
        )
        # the model's own error model is diagonal: scale by it rather than multiply matrices
        self.diagonal = not np.any(self.whiten - np.diag(np.diag(self.whiten)))
        self.inverse_sd = np.diag(self.whiten).copy()
        names = sorted({name for bound in self.bound for name in bound})
        self.inputs = {
            name: np.array([b.get(name, model.input_defaults[name]) for b in self.bound])
            for name in names
        }
        self.priors = model.priors_for(used)
        self.size = len(self.bound)

    # -- the posterior, for rows of windows ---------------------------------------------

    def predict(self, z: Array, owner: npt.NDArray[np.intp]) -> tuple[Array, Array]:
        inputs = {name: values[owner] for name, values in self.inputs.items()}
        return self.model.predict(self.priors.to_w(z), inputs)

    def standardised(self, counters: Array, owner: npt.NDArray[np.intp]) -> Array:
        with np.errstate(all="ignore"):
            d = self.target[owner] - np.arcsinh(counters[:, self.pos] / self.scale)
            d = np.where(self.one_sided, np.minimum(d, 0.0), d)  # others may add, not take
            e: Array = d * self.inverse_sd if self.diagonal else d @ self.whiten.T
        e[~np.isfinite(e)] = _BAD
        return e

    def residuals(self, z: Array, owner: npt.NDArray[np.intp], *, robust: bool = True) -> Array:
        """ψ(e) of rows ``z`` (Gaussian residuals e when not ``robust``)."""
        counters, _ = self.predict(z, owner)
        e = self.standardised(counters, owner)
        return _student(e) if robust else e

    def energy(self, z: Array, r: Array) -> Array:
        q = self.priors.energy(z)
        out: Array = 0.5 * np.sum(r**2, axis=-1) + np.sum(q, axis=-1)
        return out

    def rows(self, per_window: int) -> npt.NDArray[np.intp]:
        """``owner`` of ``per_window`` rows for each window, window by window."""
        return np.repeat(np.arange(self.size), per_window)

    # -- the search and the posterior's draws --------------------------------------------

    def infer(self, seed: int, settings: _Settings) -> list[Inference]:
        priors = self.priors
        m, b = priors.size, self.size
        rng = np.random.default_rng(seed)
        centre = priors.to_z(priors.median_w())
        scanned, _ = _coordinate_scan(centre, self)  # (B, P, m)
        draws = priors.to_z(priors.sample_w(rng, settings.candidates))
        owner = self.rows(len(draws))
        flat = np.tile(draws, (b, 1))
        first = self.energy(flat, self.residuals(flat, owner, robust=False))
        first = first.reshape(b, len(draws))
        keep = max(1, settings.starts - scanned.shape[1])
        best = np.argsort(first, axis=1, kind="stable")[:, :keep]
        z0 = np.concatenate([scanned, draws[best]], axis=1)  # (B, S, m)
        per = z0.shape[1]
        # graduated robustness: Gaussian errors first (every counter explained as far as it
        # can be: the landscape of the heavy tails has more local modes), then the heavy tails
        # from there; the first search only finds the basin (a few dozen steps: run to the
        # end, it crawled along flat directions for most of the cost and moved no answer)
        z, _, first_iterations, _, _ = _levenberg_marquardt(
            z0.reshape(-1, m),
            self,
            per,
            min(settings.max_iterations, _WARM_ITERATIONS),
            robust=False,
        )
        z, e, iterations, converged, jac = _levenberg_marquardt(
            z, self, per, settings.max_iterations, robust=True
        )
        iterations = iterations + first_iterations
        winners = np.argmin(e.reshape(b, per), axis=1) + np.arange(b) * per
        normal = rng.standard_normal((2, settings.samples, m))
        return self._posterior(
            z[winners],
            jac[winners],
            e[winners],
            converged[winners],
            iterations[winners],
            normal,
            settings,
        )

    def _sample(
        self,
        centre: Array,
        lower: Array,
        normal: Array,
        dispersion: Array,
    ) -> tuple[Array, Array, Array, Array]:
        """Draws ``centre + L n`` for every window (centre (B, m), L (B, m, m), n (S, m)):
        their z (B, S, m), utilisations (B, S, r), log importance ratio against that Gaussian
        (B, S) under the widened posterior, and each window's counters at its centre."""
        b, samples = len(centre), len(normal)
        draws = centre[:, None, :] + np.einsum("bij,sj->bsi", lower, normal)
        flat = draws.reshape(-1, centre.shape[1])
        owner = self.rows(samples)
        counters, utils = self.predict(flat, owner)
        r = _student(self.standardised(counters, owner)).reshape(b, samples, -1)
        q = self.priors.energy(flat)
        widened = 0.5 * np.sum(r**2, axis=2) / dispersion[:, None]
        widened = widened + np.sum(q, axis=1).reshape(b, samples)
        log_ratio = -widened + 0.5 * np.sum(normal**2, axis=1)[None, :]
        return draws, utils.reshape(b, samples, -1), log_ratio, counters

    def _posterior(
        self,
        z_hat: Array,
        j_hat: Array,
        energy: Array,
        converged: npt.NDArray[np.bool_],
        iterations: npt.NDArray[np.intp],
        normal: Array,
        settings: _Settings,
    ) -> list[Inference]:
        """Each window's posterior around its mode ``z_hat`` (B, m) with the Jacobian of its
        residuals there ``j_hat`` (B, n, m)."""
        model, priors = self.model, self.priors
        b, m = z_hat.shape
        samples = normal.shape[1]
        every = np.arange(b)
        counters, utils = self.predict(z_hat, every)
        r_hat = _student(self.standardised(counters, every))
        _, _, curvature = priors.terms(z_hat)
        dispersion = np.empty(b)
        widen = np.empty(b)
        lower = np.empty((b, m, m))
        for i in range(b):
            information = j_hat[i].T @ j_hat[i]
            prior_curvature = np.diag(np.maximum(curvature[i], 1e-9))
            # The residuals' own verdict on the error model: the dispersion of a
            # quasi-likelihood, Σψ² over the degrees of freedom the parameters leave (p_eff:
            # the hat matrix's trace).
            p_eff = float(np.trace(information @ _inverse_psd(information + prior_curvature)))
            n = len(self.used)
            dispersion[i] = max(1.0, float(np.sum(r_hat[i] ** 2)) / max(n - p_eff, 1.0))
            # and the calibrated temperature: how much wider still the errors proved to be on
            # real recordings (their labels, not their residuals, say so)
            widen[i] = dispersion[i] * settings.temperature
            cov = _inverse_psd(information / widen[i] + prior_curvature)
            lower[i] = np.linalg.cholesky(cov)

        # Draws from the Laplace approximation, reweighted toward the exact (widened)
        # posterior: the model has kinks (a hit ratio capped at 1) and one-sided walls (a
        # device cannot be busier than all the time) that a Gaussian at the mode cannot see.
        # The weighted draws' mean and covariance then make a second, better proposal (one
        # round of adaptive importance sampling). Full importance weights would leave a
        # handful of draws carrying everything, so they are tempered: weight^τ with the largest
        # τ ≤ 1 that keeps a quarter of the draws effective.
        draws, _, log_ratio, _ = self._sample(z_hat, lower, normal[0], widen)
        centres = np.empty_like(z_hat)
        for i in range(b):
            weight, _, _ = _tempered(log_ratio[i], samples * _MIN_ESS)
            centres[i] = weight @ draws[i]
            deviation = draws[i] - centres[i]
            # a quarter of the Laplace spread as a floor: no narrower than the mode says
            spread = deviation.T @ (deviation * weight[:, None]) + 0.25 * lower[i] @ lower[i].T
            lower[i] = np.linalg.cholesky(0.5 * (spread + spread.T) + 1e-12 * np.eye(m))
        draws, draw_utils, log_ratio, _ = self._sample(centres, lower, normal[1], widen)
        out = []
        r_count = len(model.resources)
        for i in range(b):
            weight, tempering, ess = _tempered(log_ratio[i], samples * _MIN_ESS)
            util_i = np.where(np.isfinite(draw_utils[i]), draw_utils[i], 0.0)
            top = np.argmax(util_i, axis=1)
            p = np.bincount(top, weights=weight, minlength=r_count).astype(np.float64)
            state = np.where(util_i.max(axis=1) >= settings.threshold, top + 1, 0)
            p_state = np.bincount(state, weights=weight, minlength=r_count + 1)
            draws_w = priors.to_w(draws[i])
            w_low, w_high = _weighted_quantiles(draws_w, weight, (0.05, 0.95))
            u_low, u_high = _weighted_quantiles(util_i, weight, (0.05, 0.95))
            predicted = counters[i, self.pos]
            values = self.values[i]
            raw = np.arcsinh(values / self.scale) - np.arcsinh(predicted / self.scale)
            raw = np.where(self.one_sided, np.minimum(raw - self.mean, 0.0), raw - self.mean)
            out.append(
                Inference(
                    model=model.name,
                    parameters=model.parameters,
                    w=priors.to_w(z_hat[i]),
                    w_low=w_low,
                    w_high=w_high,
                    columns=self.used,
                    observed=values,
                    predicted=predicted,
                    residual_sd=raw / np.sqrt(np.diag(self.errors.cov)[self.pos]),
                    resources=model.resource_names,
                    utilisation=utils[i],
                    util_low=u_low,
                    util_high=u_high,
                    p_bottleneck=p,
                    inputs=self.bound[i],
                    neg_log_posterior=float(energy[i]),
                    converged=bool(converged[i]),
                    iterations=int(iterations[i]),
                    effective_samples=ess,
                    tempering=tempering,
                    p_state=p_state.astype(np.float64),
                    threshold=settings.threshold,
                    dispersion=float(dispersion[i]),
                    one_sided=tuple(
                        c for c, flag in zip(self.used, self.one_sided, strict=True) if flag
                    ),
                )
            )
        return out


def _student(e: Array) -> Array:
    """ψ(e): residuals whose squares are a Student-t's negative log density (ν = 4), scaled
    to match the Gaussian near 0: ψ(e)² = (ν + 1) log(1 + e² / (ν + 1))."""
    out: Array = np.sign(e) * np.sqrt((_NU + 1.0) * np.log1p(e * e / (_NU + 1.0)))
    return out


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


def _coordinate_scan(start: Array, group: _Group) -> tuple[Array, Array]:
    """Greedy forward selection from the prior's centre along a few paths at once, for every
    window of ``group``.

    Each step tries every parameter at every point of a grid spanning its prior (one
    vectorised evaluation) and keeps, per path, the single change that lowers the energy most.
    The scan (like the choice of random starts) weighs residuals as a Gaussian does: a start
    should explain every counter it can; the search from it then lets the heavy tails
    discount the counters nothing explains (a graduated, not a blind, robustness).
    The first step seeds the paths with the best changes of *different* parameters — the
    competing explanations ("sequential reads" or "large random reads") — which random prior
    draws in many dimensions rarely land near. Returns the paths' end points (B, P, m) and
    energies (B, P).
    """
    priors, b = group.priors, group.size
    m = priors.size
    grid = _grid(priors)  # (G, m)
    index = np.arange(m)
    width = _SCAN_POINTS * m

    def variations(points: Array) -> Array:
        """(..., m) points → (..., G·m, m): each with one parameter moved to each grid point."""
        trials = np.repeat(points[..., None, None, :], _SCAN_POINTS, axis=-3)
        trials = np.repeat(trials, m, axis=-2)
        trials[..., index, index] = grid  # trials[..., g, j] = the point with parameter j at g
        return trials.reshape(*points.shape[:-1], width, m)

    first = variations(start[None, :])[0]  # (G·m, m), the same for every window
    flat = np.tile(first, (b, 1))
    values = group.energy(flat, group.residuals(flat, group.rows(width), robust=False))
    values = values.reshape(b, _SCAN_POINTS, m)
    per_parameter = values.min(axis=1)  # (B, m)
    chosen = np.argsort(per_parameter, axis=1, kind="stable")[:, :_SCAN_PATHS]  # (B, P)
    at = np.argmin(values, axis=1)  # (B, m): best grid point of each parameter
    grid_of = np.take_along_axis(at, chosen, axis=1)  # (B, P)
    paths = first.reshape(_SCAN_POINTS, m, m)[grid_of, chosen]  # (B, P, m)
    current = np.take_along_axis(per_parameter, chosen, axis=1)
    paths_per = paths.shape[1]
    for _ in range(_SCAN_STEPS - 1):
        trials = variations(paths)  # (B, P, G·m, m)
        flat = trials.reshape(-1, m)
        owner = group.rows(paths_per * width)
        values = group.energy(flat, group.residuals(flat, owner, robust=False))
        values = values.reshape(b, paths_per, width)
        k = np.argmin(values, axis=2)
        best = np.take_along_axis(values, k[..., None], axis=2)[..., 0]
        better = best < current - 1e-9
        if not better.any():
            break
        moved = np.take_along_axis(trials, k[..., None, None], axis=2)[:, :, 0, :]
        paths = np.where(better[..., None], moved, paths)
        current = np.where(better, best, current)
    return paths, current


def _levenberg_marquardt(
    z0: Array,
    group: _Group,
    per: int,
    max_iterations: int,
    *,
    robust: bool,
) -> tuple[Array, Array, npt.NDArray[np.intp], npt.NDArray[np.bool_], Array]:
    """Batched LM over starts (rows of ``z0``: ``per`` starts of each window of ``group``,
    window by window), on the heavy-tailed residuals or (not ``robust``) Gaussian ones:
    returns z, E, iterations and converged flags per start, and the Jacobian of the residuals
    at each final z.

    Each iteration evaluates the trial points of the starts still running, and the
    forward-difference Jacobian only where a trial point was accepted (rejected steps, which
    LM takes often, cost one model evaluation instead of m + 1)."""
    k, m = z0.shape
    eye = np.eye(m)
    owner_of = np.repeat(np.arange(k // per), per)

    def jacobian(z: Array, r: Array, rows: npt.NDArray[np.intp]) -> Array:
        points = (z[:, None, :] + eye * _STEP).reshape(-1, m)
        owner = np.repeat(owner_of[rows], m)
        r_plus = group.residuals(points, owner, robust=robust).reshape(len(z), m, -1)
        out: Array = (r_plus - r[:, None, :]).transpose(0, 2, 1) / _STEP  # (a, n, m)
        return out

    every = np.arange(k)
    z = z0.copy()
    r = group.residuals(z, owner_of, robust=robust)
    e = group.energy(z, r)
    jac = jacobian(z, r, every)
    lam = np.full(k, 1e-3)
    done = np.zeros(k, dtype=bool)
    converged = np.zeros(k, dtype=bool)
    iterations = np.zeros(k, dtype=np.intp)
    for iteration in range(1, max_iterations + 1):
        run = np.flatnonzero(~done)
        iterations[run] = iteration
        _, grad_q, curv_q = group.priors.terms(z[run])
        j = jac[run]
        grad = np.einsum("knm,kn->km", j, r[run]) + grad_q
        hess = np.einsum("kni,knj->kij", j, j) + np.maximum(curv_q, 0.0)[:, :, None] * eye
        # Marquardt's damping scales with the curvature, floored: a parameter the counters
        # hardly see (a share on its bound) must not take an unbounded step
        diag = np.maximum(np.einsum("kii->ki", hess), 1e-2)
        damped = hess + (lam[run, None] * diag)[:, :, None] * eye
        step = -np.linalg.solve(damped, grad[:, :, None])[:, :, 0]
        trial = z[run] + step
        r_t = group.residuals(trial, owner_of[run], robust=robust)
        e_t = group.energy(trial, r_t)
        better = (e_t < e[run]) & np.isfinite(e_t)
        gain = e[run] - e_t
        accepted = run[better]
        if len(accepted):
            z[accepted] = trial[better]
            r[accepted] = r_t[better]
            e[accepted] = e_t[better]
            jac[accepted] = jacobian(trial[better], r_t[better], accepted)
        lam[run] = np.where(
            better, np.maximum(lam[run] / 3.0, 1e-9), np.minimum(lam[run] * 4.0, 1e9)
        )
        # converged: an accepted step that moved or gained next to nothing (a tiny step that
        # was refused only says the damping is high)
        small = better & ((np.max(np.abs(step), axis=1) < _TOL_STEP) | (gain < _TOL_GAIN))
        converged[run] |= small
        done[run] |= small | (lam[run] >= 1e9)
        # a start trailing its window's best by _PRUNE nats (a likelihood ratio of e^-10) is
        # abandoned
        if iteration >= _PRUNE_AFTER:
            lead = np.repeat(e.reshape(-1, per).min(axis=1), per)
            done |= e > lead + _PRUNE
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
