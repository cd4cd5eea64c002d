"""Null distribution of the change-point statistic T: "F for optimally Partitioned AR(1)" (FPA).

Berry & Hellerstein (1991) test a candidate change point with
``T = SSQ(whole) / (SSQ(left) + SSQ(right))`` at Fisher's *optimal* 2-partition. Because the split
is chosen to maximise T and performance series are autocorrelated, the F distribution is badly
wrong here (the paper: ~95% false positives at N = 1000, ρ = .1). Under H0 ("one AR(1) series") the
distribution of T depends on the segment length n, the lag-1 autocorrelation φ, and — which the
paper does not say but matters at the ends of the series — the smallest part the search may cut
off (``min_size``, m). This module simulates that distribution and ships it as a table.

The table (``data/fpa_table.npz``, built by ``scripts/make_fpa_table.py``)
--------------------------------------------------------------------------
* **Axes.** n: every integer 3…20, then 5 points per decade from 25 to 10⁶ (log-spaced; each
  ``2m`` is a grid point so interpolation never straddles an impossible length); φ: −0.4 … 0.99,
  denser near 1; m ∈ {1, 2, 3, 5, 10, 20}; upper-tail probabilities p from 0.99 down to 0.001
  (including α = .10, .05, .01, .001 exactly). Each cell holds ``log(T − 1)`` at the upper
  p-quantile.
* **Simulation.** Gaussian AR(1) with a stationary start (x₀ ~ N(0, 1/(1−φ²))), the optimal split
  found exactly as :func:`perfsleuth.changepoints.kernels.search.two_partition` does, T − 1 for
  every m from the same draws. Replicates per n are ``min(r_max, budget / n)``: many for small n,
  where the distribution is irregular, and a constant number of simulated observations per grid
  point for large n. Each (n, φ) cell has its own seed, derived from the table seed, n and φ, so
  cells are reproducible independently; reps, seed and the grids are stored in the file.
* **Extrapolation in n.** Under H0, ``y = n (T − 1)`` converges to ``(1+φ)/(1−φ)`` times the
  maximum of a standardised squared Brownian bridge over the allowed split range; that range
  widens with n, and the maximum grows like log log n (Darling–Erdős). So for lengths above the
  largest simulated one, each (φ, m, p) cell continues ``y = c + d · log log n``, fitted by least
  squares on the largest ``extrapolation_points`` simulated lengths, with ``d >= 0``; the
  extrapolated quantiles are then sorted along p (quantile rearrangement) so that every tail
  curve stays monotone. Fitted on 1,000–6,310 this predicted the simulated 39,811 within 5% for
  φ ≤ .95 and p ≥ .005 (9% at p = .001; 12% at φ = .99, where the series are still far from
  their asymptote), better than a straight line in (log n, log(T − 1)), which was up to 37% off
  (worst near the median and at φ = .99). The d are stored. Lookups beyond the grid continue its
  last segment linearly in (log n, log(T − 1)).

Estimated φ
-----------
The table is indexed by the *true* φ, but a test only has the sample lag-1 autocorrelation r of
the segment it tests. Plugging r in is biased — r is biased low by about (1 + 3φ)/n, and it is
correlated with T — which mattered for short segments (false-positive rate 10% at n = 20,
φ = .8, α = .05). So the table also holds, per (n, φ, m, p), an offset δ such that looking the
critical value up at ``r + δ`` gives a test of size exactly p at that φ. It is computed from the
same simulations: the test rejects a replicate exactly when ``r + δ < φ*``, with φ* the φ at
which the replicate's T would be critical, so δ is the upper p-quantile of ``φ* − r``. Lookups
with ``phi_estimated=True`` interpolate δ at φ = r (one step; iterating to a fixed point did not
help). δ is a small-sample correction of order 1/n while its simulation noise shrinks only like
1/√(n · reps), so from n = 1000 on it is stored as c/n, c pooled over the simulated lengths
(this also extends it beyond them). At φ ≥ .8 and n ≤ 20, r says little about φ and the rate
is still 7–11%.

Several columns
---------------
The search splits n × k input jointly: columns on a common noise scale, then
``T = Σ_cols SSQ(whole) / Σ_cols (SSQ(left) + SSQ(right))`` at the split maximising the summed
between-part SSQ. For k independent AR(1) columns with one φ and equal variance, n (T − 1) tends
to (1+φ)/(1−φ) times the maximum of the *average* of k squared Brownian bridges, whose upper tail
shrinks as k grows; the 1-D table at the largest column φ is therefore very conservative (size
.002 at α = .05, k = 2, n = 200). ``data/fpa_table_d{k}.npz``, k ∈ :data:`DIMS_GRID`, hold the
same quantities simulated with k such columns per replicate (unit innovations; r is the largest
of the columns' lag-1 autocorrelations, as the search takes it). :func:`load_table` ``(dims)``
uses the largest tabulated k not above ``dims``. The upper quantiles (p ≤ .15, all a test uses)
fall with k in every cell, so this is conservative; the body does not (lower quantiles rise as T
concentrates), so p-values above ~.3 for an untabulated k are not bounds.

* **Plan.** The 1-D grids; ``min(4,000, max(2,000, 2·10⁷ / n))`` replicates of k columns per
  (n, φ), simulated up to n = 10⁴ and extrapolated as above from 1,000–10,000 (1-D: 40,000,
  2·10⁸, 4·10⁴). Build: 70, 101, 140 and 267 s of CPU for k = 2, 3, 4, 8 (1-D: 740 s).
* **Accuracy.** Against fresh simulations (40,000 replicates, another seed; n = 20–6,310, k = 2,
  4, 8) T − 1 is within 4% at p ≥ .01 and 7% at p = .001. At n = 39,811 (extrapolated) it is
  within 4% of a simulation (2,000 replicates; k = 2, 8; φ = 0, .5, .9; p ≥ .01), the
  simulation's own noise. Fitted on 251–2,512 instead, the extrapolation predicted the simulated
  10⁴ within 13% for φ ≤ .95 and p ≥ .005 (1-D: 8%). The far tail is noisy (~4 replicates beyond
  the .001 quantile): there neighbouring φ or k can cross by a few percent in T − 1, up to 7%
  once extrapolated to 10⁶.
* **Offsets.** r is a maximum of k estimates, biased up by about E[max of k standard normals] ·
  √((1 − φ²)/n): δ is of order 1/√n, not 1/n, and is pooled as c/√n from n = 1000 on (pooled as
  c/n it over-corrected: size .06–.07 at n = 1000, k = 8).
* **Measured size** (α = .05, ``min_size`` 5, columns scaled as the search does, 4,000 series
  per cell, no change): .041–.059 for n ∈ {200, 1000, 5000}, φ ∈ {0, .5, .8, .9}, k ∈ {2, 3, 4},
  and .037–.059 for k = 8; at n = 50, .045–.081; at n = 20, .066–.21 (worst at φ = .9 and large
  k: the estimated φ, as in 1-D, and the estimated column scales, which leave the columns unequal
  weights). The 1-D table at the largest φ gave .002.
* **Assumptions.** Independent columns with the same φ. Otherwise this is not conservative:
  the common noise scale gives a column of larger φ more weight (its variance grows like
  1/(1 − φ)), and correlated columns carry less independent evidence, so fewer columns
  effectively count. Measured (n = 200 and 1000): φ = (.9, 0) .19; (.5, 0) .075;
  (.8, 0, 0, 0) .19–.24; innovations correlated .5 between two columns .11–.12, four columns .21.
  The 1-D table stays conservative in all these cases. Looking up an *effective* number of
  columns, ``(tr Ω)² / tr(Ω²)`` with Ω the long-run covariance of the scaled columns,
  interpolated in 1/k between tables, kept every one of these cases at .002–.077 and the
  equal-φ ones at .027–.058 (later work: the search would have to pass it).

Lookups
-------
:func:`critical_value` and :func:`p_value` interpolate bilinearly in ``(log n, u)`` with
``u = log((1+φ)/(1−φ))`` — the long-run-variance factor, in which ``log(T − 1)`` is nearly linear —
and, along the tail axis, linearly in ``(log p, log(T − 1))``. Beyond the smallest tabulated p the
tail is extended exponentially (``log p`` linear in ``T − 1``, fitted on the last three tail
points), which is the asymptotic shape of the tail of a maximum of χ²₁-like variables.

* φ is clipped to the grid. Below −0.4 this is conservative (T grows with φ). Above 0.99 it is
  not: such series are near random walks and their T is dominated by drift, not by shifts.
* ``min_size`` between grid values uses the largest tabulated m not above it; restricting the
  split range only lowers T, so this is conservative. Above 20, m = 20 is used.

The paper's fitted curve (:func:`paper_critical_value`, α = .05) and the F distribution
(:func:`f_critical_value`, :func:`f_p_value`, the paper's straw man) are kept for comparison.
"""

from __future__ import annotations

import bisect
import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DIMS_GRID",
    "MIN_SIZE_GRID",
    "PHI_GRID",
    "TABLE_PATH",
    "TAIL_PROB_GRID",
    "FPATable",
    "build_table",
    "critical_value",
    "default_n_grid",
    "extrapolate",
    "f_critical_value",
    "f_p_value",
    "load_table",
    "p_value",
    "paper_critical_value",
    "simulate_excess",
    "simulate_t",
    "table_dims",
    "table_path",
]

FloatArray = NDArray[np.float64]

TABLE_PATH = Path(__file__).with_name("data") / "fpa_table.npz"
"""Where the shipped one-column table lives (inside the package); see :func:`table_path`."""

DIMS_GRID: tuple[int, ...] = (1, 2, 3, 4, 8)
"""Numbers of jointly searched columns with a shipped table."""

PHI_GRID: tuple[float, ...] = (
    -0.4,
    -0.2,
    -0.1,
    0.0,
    0.1,
    0.2,
    0.3,
    0.4,
    0.5,
    0.6,
    0.7,
    0.75,
    0.8,
    0.85,
    0.9,
    0.93,
    0.95,
    0.97,
    0.98,
    0.99,
)
MIN_SIZE_GRID: tuple[int, ...] = (1, 2, 3, 5, 10, 20)
TAIL_PROB_GRID: tuple[float, ...] = (
    0.99,
    0.95,
    0.9,
    0.8,
    0.7,
    0.6,
    0.5,
    0.4,
    0.3,
    0.2,
    0.15,
    0.1,
    0.07,
    0.05,
    0.03,
    0.02,
    0.01,
    0.005,
    0.002,
    0.001,
)
_TAIL_FIT = 3  # tail points used for the exponential extension beyond the smallest p
_CHUNK = 1 << 21  # simulated values per block (16 MB of float64), to bound memory
_SHORT = 1000  # up to this length AR(1) series are generated time-major


def default_n_grid() -> tuple[int, ...]:
    """Segment lengths of the shipped table: 3…20, then 5 per decade from 25 to 10⁶."""
    logs = np.round(10.0 ** np.arange(1.4, 6.0001, 0.2)).astype(int)
    return tuple(sorted({*range(3, 21), *(int(v) for v in logs)}))


def _min_length(m: int) -> int:
    # Two parts of at least m each; and with m = 1, n = 2 both parts are single points (T = ∞).
    return max(2 * m, 3)


def _u(phi: float | FloatArray) -> Any:
    return np.log1p(phi) - np.log1p(-np.asarray(phi, dtype=float))


# --------------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------------


def _ar1(rng: np.random.Generator, rows: int, n: int, phi: float) -> FloatArray:
    """``rows`` independent stationary Gaussian AR(1) series of length n (unit innovations)."""
    if phi == 0.0:
        return rng.standard_normal((rows, n))
    if n <= _SHORT:
        # Time-major recursion: n vector operations over all rows (lfilter's per-row overhead
        # dominates for short rows).
        e = rng.standard_normal((n, rows))
        e[0] /= math.sqrt(1.0 - phi * phi)  # stationary start: Var(x0) = 1 / (1 - φ²)
        for t in range(1, n):
            e[t] += phi * e[t - 1]
        return np.ascontiguousarray(e.T)
    from scipy.signal import lfilter  # heavy import; only simulations need it

    e = rng.standard_normal((rows, n))
    e[:, 0] /= math.sqrt(1.0 - phi * phi)
    x: FloatArray = lfilter([1.0], [1.0, -phi], e, axis=1)
    return x


def _excess_rows(x: FloatArray, min_sizes: Sequence[int]) -> tuple[FloatArray, FloatArray]:
    """T − 1 at the optimal split of each replicate in ``x``, for each minimum segment length,
    and each replicate's lag-1 autocorrelation (the estimate the search's test uses).

    ``x`` is (reps, n) for one series per replicate or (reps, dims, n) for several columns
    searched jointly. Same arithmetic as the search: centre each column, prefix sums, between-part
    SSQ ``B(k) = n Σ_cols S_k² / (k (n − k))``, ``T − 1 = max B / (SSQ − max B)`` with SSQ summed
    over the columns; the autocorrelation is the largest of the columns' (as the search takes it).
    Lengths that cannot be split with a given m give NaN.
    """
    if x.ndim == 2:
        x = x[:, None, :]
    rows, _, n = x.shape
    out = np.full((len(min_sizes), rows), np.nan)
    xc = x - x.mean(axis=2, keepdims=True)
    ssq = np.einsum("ijk,ijk->ij", xc, xc)
    whole = ssq.sum(axis=1)
    lag1 = (np.einsum("ijk,ijk->ij", xc[..., 1:], xc[..., :-1]) / ssq).max(axis=1)
    valid = [m for m in min_sizes if n >= _min_length(m)]
    if not valid:
        return out, lag1
    s = np.cumsum(xc[..., :-1], axis=2)  # s[..., k-1] = sum of the first k values
    k = np.arange(1, n, dtype=float)
    b = (s * s).sum(axis=1) * (n / (k * (n - k)))
    big = max(valid)
    # The max over k in [m, n-m] = max(core over [big, n-big], the two edge strips): the core is
    # shared by every m, so several m cost little more than one.
    core = b[:, big - 1 : n - big].max(axis=1)
    for j, m in enumerate(min_sizes):
        if n < _min_length(m):
            continue
        best = core
        if m < big:
            edges = np.maximum(b[:, m - 1 : big - 1].max(axis=1), b[:, n - big : n - m].max(axis=1))
            best = np.maximum(core, edges)
        within = whole - best
        with np.errstate(divide="ignore"):
            out[j] = np.where(within > 0, best / np.where(within > 0, within, 1.0), np.inf)
    return out, lag1


def _cell_rng(seed: int, n: int, phi: float, dims: int = 1) -> np.random.Generator:
    # Keyed by the values, not grid positions, so adding grid points leaves other cells unchanged.
    # One column keeps the key it had before several columns were tabulated (same 1-D table).
    phi_key = round((phi + 1.0) * 1_000_000)
    key = [seed, n, phi_key] if dims == 1 else [seed, n, phi_key, dims]
    return np.random.default_rng(np.random.SeedSequence(key))


def simulate_excess(
    n: int,
    phi: float,
    reps: int,
    seed: int,
    *,
    min_sizes: Sequence[int] = (1,),
    dims: int = 1,
) -> FloatArray:
    """Simulated ``T − 1`` under H0 for several minimum segment lengths (same draws for each).

    With ``dims > 1`` each replicate is ``dims`` independent AR(1) columns searched jointly.
    Returns an array of shape ``(len(min_sizes), reps)``; NaN rows for m that cannot split n.
    """
    return _simulate(n, phi, reps, seed, min_sizes, dims)[0]


def _simulate(
    n: int, phi: float, reps: int, seed: int, min_sizes: Sequence[int], dims: int = 1
) -> tuple[FloatArray, FloatArray]:
    """(T − 1 per min segment, sample lag-1 autocorrelation) of ``reps`` replicates of ``dims``
    independent AR(1) columns (the largest column autocorrelation, as the search uses)."""
    if not -1.0 < phi < 1.0:
        raise ValueError(f"phi must be in (-1, 1) for a stationary AR(1), got {phi}")
    if n < 3 or reps < 1:
        raise ValueError(f"need n >= 3 and reps >= 1, got n={n}, reps={reps}")
    if dims < 1:
        raise ValueError(f"dims must be >= 1, got {dims}")
    rng = _cell_rng(seed, n, phi, dims)
    rows_per_block = max(1, _CHUNK // (n * dims))
    excess, lag1 = [], []
    done = 0
    while done < reps:
        rows = min(rows_per_block, reps - done)
        x = _ar1(rng, rows * dims, n, phi).reshape(rows, dims, n)
        e, r = _excess_rows(x, min_sizes)
        excess.append(e)
        lag1.append(r)
        done += rows
    return np.concatenate(excess, axis=1), np.concatenate(lag1)


def simulate_t(
    n: int, phi: float, reps: int, seed: int, *, min_size: int = 1, dims: int = 1
) -> FloatArray:
    """``reps`` values of T for optimally partitioned AR(1) series of length n (seeded).

    Parameters
    ----------
    n
        Series length (≥ 3).
    phi
        Lag-1 autocorrelation of the AR(1) (|φ| < 1); the series start in the stationary state.
    reps
        Number of independent series.
    seed
        Seed; the same (n, φ, reps, seed) always gives the same values.
    min_size
        Smallest allowed part; the split is optimal over ``min_size <= k <= n - min_size``.
    dims
        Number of independent AR(1) columns (same φ, unit innovations) split jointly.
    """
    if min_size < 1 or n < _min_length(min_size):
        raise ValueError(f"cannot split n={n} with min_size={min_size}")
    excess = simulate_excess(n, phi, reps, seed, min_sizes=(min_size,), dims=dims)
    t: FloatArray = 1.0 + excess[0]
    return t


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------


_CURVES_KEPT = 4096  # interpolated curves an FPATable keeps for lookups asked again


@dataclass(frozen=True, eq=False)
class FPATable:
    """Quantiles of ``log(T − 1)`` under H0 over (n, φ, m, upper-tail probability p), and the
    offsets that calibrate a test using the sample lag-1 autocorrelation instead of the true φ,
    for ``dims`` columns searched jointly.
    """

    n: NDArray[np.int64]
    phi: FloatArray
    min_size: NDArray[np.int64]
    tail_prob: FloatArray
    log_excess: FloatArray  # shape (len(n), len(phi), len(min_size), len(tail_prob))
    offset: FloatArray  # φ offsets for an estimated φ, same shape as log_excess
    reps: NDArray[np.int64]  # per n; 0 where extrapolated
    seed: int
    n_simulated_max: int
    slope: FloatArray  # extrapolation: d n(T-1) / d log log n, shape (phi, m, p)
    seconds: float = float("nan")  # generation time
    dims: int = 1  # number of columns searched jointly

    @functools.cached_property
    def _log_n(self) -> FloatArray:
        out: FloatArray = np.log(self.n.astype(float))
        return out

    @functools.cached_property
    def _u_grid(self) -> FloatArray:
        u: FloatArray = _u(self.phi)
        return u

    @functools.cached_property
    def _log_p(self) -> FloatArray:
        return np.log(self.tail_prob)

    @functools.cached_property
    def _tail_p(self) -> tuple[FloatArray, FloatArray]:
        """The last log p of the tail fit and their deviations from their mean."""
        y = self._log_p[-_TAIL_FIT:]
        return y, y - y.mean()

    @functools.cached_property
    def _columns(self) -> NDArray[np.int64]:
        return np.arange(len(self.tail_prob))

    @functools.cached_property
    def _grids(self) -> tuple[list[int], list[float], list[float]]:
        """m, log n and u(φ) grids as Python lists: bisecting them is the same lookup as
        ``np.searchsorted`` without its per-call overhead (the search looks up thousands)."""
        return self.min_size.tolist(), self._log_n.tolist(), self._u_grid.tolist()

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            path,
            n=self.n,
            phi=self.phi,
            min_segment=self.min_size,  # the tables' key (written before the rename)
            tail_prob=self.tail_prob,
            log_excess=self.log_excess.astype(np.float32),
            offset=self.offset.astype(np.float32),
            reps=self.reps,
            seed=np.int64(self.seed),
            n_simulated_max=np.int64(self.n_simulated_max),
            slope=self.slope.astype(np.float32),
            seconds=np.float64(self.seconds),
            dims=np.int64(self.dims),
        )

    @classmethod
    def load(cls, path: Path) -> FPATable:
        with np.load(path) as data:
            return cls(
                n=data["n"].astype(np.int64),
                phi=data["phi"].astype(float),
                min_size=data["min_segment"].astype(np.int64),
                tail_prob=data["tail_prob"].astype(float),
                log_excess=data["log_excess"].astype(float),
                offset=data["offset"].astype(float),
                reps=data["reps"].astype(np.int64),
                seed=int(data["seed"]),
                n_simulated_max=int(data["n_simulated_max"]),
                slope=data["slope"].astype(float),
                seconds=float(data["seconds"]),
                dims=int(data["dims"]) if "dims" in data else 1,  # the 1-D file predates dims
            )

    # -- lookups -------------------------------------------------------------------------------
    def _locate_phi(self, phi: float | FloatArray) -> tuple[Any, Any]:
        # np.minimum/np.maximum rather than np.clip: the same values, without np.clip's
        # per-call overhead (this runs thousands of times per search)
        u = _u(np.minimum(np.maximum(phi, self.phi[0]), self.phi[-1]))
        j = np.minimum(
            np.maximum(np.searchsorted(self._u_grid, u, side="right") - 1, 0), len(self.phi) - 2
        )
        return j, (u - self._u_grid[j]) / self._u_steps[j]

    @functools.cached_property
    def _u_steps(self) -> FloatArray:
        """``_u_grid[j + 1] − _u_grid[j]``: the same differences, taken once."""
        return np.diff(self._u_grid)

    def _locate_one_phi(self, phi: float) -> tuple[int, float]:
        """:meth:`_locate_phi` of one φ: the same arithmetic on scalars."""
        u_grid = self._grids[2]
        u = float(_u(min(max(phi, float(self.phi[0])), float(self.phi[-1]))))
        j = min(max(bisect.bisect_right(u_grid, u) - 1, 0), len(u_grid) - 2)
        return j, (u - u_grid[j]) / (u_grid[j + 1] - u_grid[j])

    def curve(
        self, n: float, phi: float, min_size: int, *, phi_estimated: bool = False
    ) -> FloatArray:
        """``log(T − 1)`` at every tabulated tail probability, interpolated at (n, φ, m)
        (read-only: the last few thousand are kept, and a search asks for a quarter of its
        curves again).

        With ``phi_estimated``, ``phi`` is the sample lag-1 autocorrelation of the tested
        segment and each tail probability p is looked up at ``phi + offset_p`` (see the module
        docstring).
        """
        key = (n, phi, min_size, phi_estimated)
        kept = self._curves
        curve = kept.get(key)
        if curve is None:
            curve = self._curves_of([n], [phi], min_size, phi_estimated)[0]
            curve.flags.writeable = False
            if len(kept) >= _CURVES_KEPT:
                kept.clear()
            kept[key] = curve
        return curve

    @functools.cached_property
    def _curves(self) -> dict[tuple[float, float, int, bool], FloatArray]:
        return {}

    def _curves_of(
        self, n: Sequence[float], phi: Sequence[float], min_size: int, phi_estimated: bool
    ) -> FloatArray:
        """:meth:`curve` of each (n, φ), uncached, as rows, interpolated at once: a long
        search reports thousands of dropped candidates, each at its own length and φ, and one
        curve at a time was most of their cost. A row is linear in log n between the two
        tabulated lengths about it (beyond the grid, extrapolated) and in u(φ) between the two
        φ about it; with ``phi_estimated``, each tail probability's φ is first shifted by its
        offset, interpolated alike. (The grids are bisected as Python lists: the same indices
        as ``np.searchsorted``, a fraction of the time.)"""
        if min_size < 1:
            raise ValueError(f"min_size must be >= 1, got {min_size}")
        m_grid, log_n, _ = self._grids
        k = bisect.bisect_right(m_grid, min_size) - 1
        rows_at, wns, phis_at, wus = [], [], [], []
        for length, p in zip(n, phi, strict=True):
            if not length >= _min_length(min_size):
                raise ValueError(
                    f"a segment of length {length} cannot be split with min_size={min_size}"
                )
            if not math.isfinite(p):
                raise ValueError(f"phi must be finite, got {p}")
            ln = math.log(length)
            i = min(max(bisect.bisect_right(log_n, ln) - 1, 0), len(log_n) - 2)
            rows_at.append(i)
            wns.append((ln - log_n[i]) / (log_n[i + 1] - log_n[i]))
            j, w = self._locate_one_phi(p)
            phis_at.append(j)
            wus.append(w)
        i_at = np.array(rows_at, dtype=np.intp)[:, None] + np.arange(2)  # rows i and i + 1
        j_at = np.array(phis_at, dtype=np.intp)
        wn = np.array(wns)[:, None]
        wu = np.array(wus)[:, None]
        rows = self.log_excess[i_at, :, k, :]  # (points, 2, φ, p)
        if phi_estimated:
            off = self.offset[i_at[:, :, None], (j_at[:, None] + np.arange(2))[:, None, :], k, :]
            near = (1 - wu[:, :, None]) * off[:, :, 0] + wu[:, :, None] * off[:, :, 1]
            shift = (1 - wn) * near[:, 0] + wn * near[:, 1]
            js, ws = self._locate_phi(np.array(phi, dtype=float)[:, None] + shift)
            point = np.arange(len(rows_at))[:, None]
            cols = self._columns
            lo = (1 - ws) * rows[point, 0, js, cols] + ws * rows[point, 0, js + 1, cols]
            hi = (1 - ws) * rows[point, 1, js, cols] + ws * rows[point, 1, js + 1, cols]
        else:
            at = np.arange(len(rows_at))
            lo = (1 - wu) * rows[at, 0, j_at] + wu * rows[at, 0, j_at + 1]
            hi = (1 - wu) * rows[at, 1, j_at] + wu * rows[at, 1, j_at + 1]
        # Per-p lookups at different φ could cross; rearrange so the tail curve is monotone.
        out: FloatArray = np.maximum.accumulate((1 - wn) * lo + wn * hi, axis=1)
        return out

    def critical_value(
        self,
        n: float,
        phi: float,
        alpha: float,
        min_size: int = 1,
        *,
        phi_estimated: bool = False,
    ) -> float:
        """T exceeded with probability ``alpha`` under H0."""
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        curve = self.curve(n, phi, min_size, phi_estimated=phi_estimated)
        return 1.0 + _excess_at(alpha, curve, self._log_p)

    def p_value(
        self,
        t: float,
        n: float,
        phi: float,
        min_size: int = 1,
        *,
        phi_estimated: bool = False,
    ) -> float:
        """P(T' > t) under H0."""
        if math.isnan(t):
            raise ValueError("t is NaN")
        if t <= 1.0:
            return 1.0
        if math.isinf(t):
            return 0.0
        curve = self.curve(n, phi, min_size, phi_estimated=phi_estimated)
        return _tail_prob_at(t - 1.0, curve, self._log_p)

    def critical_and_p_value(
        self,
        t: float,
        n: float,
        phi: float,
        alpha: float,
        min_size: int = 1,
        *,
        phi_estimated: bool = False,
    ) -> tuple[float, float]:
        """(:meth:`critical_value`, :meth:`p_value`) from one interpolated curve: the search
        asks for both thousands of times, and the curve is the costly part."""
        _check_request(t, alpha)
        curve = self.curve(n, phi, min_size, phi_estimated=phi_estimated)
        return self._critical_and_p_of(curve, t, alpha)

    def critical_and_p_values(
        self,
        requests: Sequence[tuple[float, float, float, float]],
        min_size: int = 1,
        *,
        phi_estimated: bool = False,
    ) -> list[tuple[float, float]]:
        """:meth:`critical_and_p_value` of many (t, n, φ, α), the same values: their curves
        interpolated at once (a long search reports thousands of dropped candidates, each
        with its own length and φ, and one curve at a time was most of their cost)."""
        for t, _, _, alpha in requests:
            _check_request(t, alpha)
        curves = self._curves_of(
            [n for _, n, _, _ in requests], [phi for _, _, phi, _ in requests], min_size,
            phi_estimated,
        )  # fmt: skip
        return [
            self._critical_and_p_of(curve, t, alpha)
            for curve, (t, _, _, alpha) in zip(curves, requests, strict=True)
        ]

    def _critical_and_p_of(self, curve: FloatArray, t: float, alpha: float) -> tuple[float, float]:
        log_p = self._log_p
        fitted: list[tuple[float, float, float]] = []

        def tail() -> tuple[float, float, float]:  # fitted once, if at all
            if not fitted:
                fitted.append(_tail_fit(curve, *self._tail_p))
            return fitted[0]

        critical = 1.0 + _excess_at(alpha, curve, log_p, tail)
        if t <= 1.0:
            return critical, 1.0
        if math.isinf(t):
            return critical, 0.0
        return critical, _tail_prob_at(t - 1.0, curve, log_p, tail)


def _check_request(t: float, alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if math.isnan(t):
        raise ValueError("t is NaN")


def _tail_line(log_q: FloatArray, log_p: FloatArray) -> tuple[float, float, float]:
    """Exponential tail beyond the smallest p: ``log p = lp_last + slope (x − x_last)``."""
    y = log_p[-_TAIL_FIT:]
    return _tail_fit(log_q, y, y - y.mean())


def _tail_fit(
    log_q: FloatArray, y: FloatArray, y_centred: FloatArray
) -> tuple[float, float, float]:
    """:func:`_tail_line` with the table's last log p and their deviations from their mean
    given (the same for every curve of a table)."""
    x = np.exp(log_q[-_TAIL_FIT:])
    dx = x - np.add.reduce(x) / x.size  # x.mean(), without its wrapper (hot path)
    den = float(dx @ dx)  # the least-squares slope, without polyfit's overhead (hot path)
    slope = float(dx @ y_centred) / den if den > 0 else 0.0
    if not slope < 0.0:  # cannot happen for a sane table; never let the tail turn upward
        slope = float((y[-1] - y[0]) / max(x[-1] - x[0], 1e-300)) if x[-1] > x[0] else -1e300
    return float(x[-1]), float(y[-1]), slope


_Tail = Callable[[], tuple[float, float, float]]  # the curve's _tail_line, fitted on demand


def _tail_prob_at(
    excess: float, log_q: FloatArray, log_p: FloatArray, tail: _Tail | None = None
) -> float:
    lx = math.log(excess)
    if lx <= log_q[0]:
        # Below the largest tabulated p: straight line to (T − 1 = 0, p = 1).
        p0 = math.exp(log_p[0])
        return 1.0 - (1.0 - p0) * excess / math.exp(log_q[0])
    if lx >= log_q[-1]:
        x_last, lp_last, slope = tail() if tail else _tail_line(log_q, log_p)
        return math.exp(lp_last + slope * (excess - x_last))
    return math.exp(float(np.interp(lx, log_q, log_p)))


def _excess_at(
    alpha: float, log_q: FloatArray, log_p: FloatArray, tail: _Tail | None = None
) -> float:
    la = math.log(alpha)
    if la >= log_p[0]:
        p0 = math.exp(log_p[0])
        return math.exp(log_q[0]) * (1.0 - alpha) / (1.0 - p0)
    if la <= log_p[-1]:
        x_last, lp_last, slope = tail() if tail else _tail_line(log_q, log_p)
        return x_last + (la - lp_last) / slope
    # log_p decreases along the grid; np.interp needs increasing abscissae.
    return math.exp(float(np.interp(la, log_p[::-1], log_q[::-1])))


def build_table(
    *,
    n_grid: Sequence[int],
    phi_grid: Sequence[float] = PHI_GRID,
    min_sizes: Sequence[int] = MIN_SIZE_GRID,
    tail_probs: Sequence[float] = TAIL_PROB_GRID,
    reps: Callable[[int], int],
    seed: int,
    n_simulated_max: int,
    extrapolation_points: int = 6,
    dims: int = 1,
    progress: Callable[[str], None] | None = None,
) -> FPATable:
    """Simulate the FPA table (see the module docstring) for ``dims`` columns searched jointly;
    lengths above ``n_simulated_max`` are extrapolated from the largest ``extrapolation_points``
    simulated lengths. ``reps(n)`` is the number of replicates (of all ``dims`` columns) at n."""
    ns = np.array(sorted(set(n_grid)), dtype=np.int64)
    phis = np.array(phi_grid, dtype=float)
    ms = np.array(min_sizes, dtype=np.int64)
    ps = np.array(tail_probs, dtype=float)
    if ns[0] < 3 or np.any(np.diff(phis) <= 0) or np.any(np.diff(ps) >= 0):
        raise ValueError("n >= 3, phi increasing and tail probabilities decreasing are required")
    simulated = ns[ns <= n_simulated_max]
    if len(simulated) < extrapolation_points and len(simulated) < len(ns):
        raise ValueError("not enough simulated lengths to extrapolate from")
    table = np.full((len(ns), len(phis), len(ms), len(ps)), np.nan)
    offset = np.full_like(table, np.nan)
    reps_used = np.zeros(len(ns), dtype=np.int64)
    started = time.perf_counter()
    for i, n in enumerate(simulated):
        r = int(reps(int(n)))
        reps_used[i] = r
        samples = []
        for j, phi in enumerate(phis):
            excess, lag1 = _simulate(int(n), float(phi), r, seed, tuple(map(int, ms)), dims)
            samples.append((excess, lag1))
            for k in range(len(ms)):
                if np.isnan(excess[k, 0]):
                    continue
                table[i, j, k] = np.log(np.quantile(excess[k], 1.0 - ps))
        _calibrate(table[i], offset[i], samples, phis, ps)
        if progress is not None:
            progress(f"n={n:>8} reps={r:>6} elapsed={time.perf_counter() - started:7.1f}s")
    slope = extrapolate(table, ns, len(simulated), extrapolation_points)
    _smooth_offsets(offset, ns, reps_used, len(simulated), rate=1.0 if dims == 1 else 0.5)
    return FPATable(
        n=ns,
        phi=phis,
        min_size=ms,
        tail_prob=ps,
        log_excess=table,
        offset=offset,
        reps=reps_used,
        seed=seed,
        n_simulated_max=int(simulated[-1]),
        slope=slope,
        seconds=time.perf_counter() - started,
        dims=dims,
    )


def _calibrate(
    row: FloatArray,
    offset: FloatArray,
    samples: Sequence[tuple[FloatArray, FloatArray]],
    phis: FloatArray,
    ps: FloatArray,
) -> None:
    """Fill ``offset`` (φ, m, p) for one length from that length's simulated samples.

    A test that looks up the critical value at ``clip(r + δ)``, with r the sample lag-1
    autocorrelation, rejects exactly when ``r + δ < φ*``, where φ* is the φ at which the
    replicate's T would be critical (the critical curve inverted in u). So its size is
    ``P(φ* − r > δ)`` and the δ giving size p is the upper p-quantile of ``φ* − r``.
    """
    u_grid = _u(phis)
    for k in range(row.shape[1]):
        if np.isnan(row[0, k, 0]):
            continue
        for q, p in enumerate(ps):
            critical = np.maximum.accumulate(row[:, k, q])  # monotone in φ, to invert
            for j, (excess, lag1) in enumerate(samples):
                with np.errstate(divide="ignore"):
                    u_star = np.interp(np.log(excess[k]), critical, u_grid, -np.inf, np.inf)
                phi_star = np.tanh(u_star / 2.0)  # u = 2 artanh φ
                offset[j, k, q] = np.quantile(phi_star - lag1, 1.0 - p)


def extrapolate(table: FloatArray, n: NDArray[np.int64], simulated: int, points: int) -> FloatArray:
    """Fill ``table[simulated:]`` (lengths beyond the simulated ones) in place.

    Per (φ, m, p) cell, ``y = n (T − 1)`` is fitted as ``c + d · log log n`` on the last
    ``points`` simulated lengths — the Darling–Erdős growth of a maximum of standardised squared
    sums over a widening range — with ``d >= 0`` (that maximum cannot shrink as the range grows;
    at φ near 1 and moderate n the tail still falls and clipping is conservative). The
    extrapolated quantiles are then sorted along p (quantile rearrangement), so a lookup's tail
    curve is monotone. Returns the fitted d, shape (φ, m, p). Offsets: see :func:`_smooth_offsets`.
    """
    d_all = np.full(table.shape[1:], np.nan)
    if simulated >= len(n):
        return d_all
    if simulated < max(points, 2):
        raise ValueError("not enough simulated lengths to extrapolate from")
    fit = np.arange(simulated - points, simulated)
    x = np.log(np.log(n[fit].astype(float)))
    x_new = np.log(np.log(n[simulated:].astype(float)))
    y = n[fit, None, None, None] * np.exp(table[fit])  # (points, φ, m, p)
    finite = np.all(np.isfinite(y), axis=0)
    xc = x - x.mean()
    d = np.einsum("i,i...->...", xc, y - y.mean(axis=0)) / float(xc @ xc)
    d = np.where(finite, np.maximum(d, 0.0), np.nan)
    c = y.mean(axis=0) - d * x.mean()
    y_new = np.sort(c[None] + d[None] * x_new[:, None, None, None], axis=-1)  # rearrangement
    table[simulated:] = np.log(y_new) - np.log(n[simulated:].astype(float))[:, None, None, None]
    d_all[:] = d
    return d_all


def _smooth_offsets(
    offset: FloatArray,
    n: NDArray[np.int64],
    reps: NDArray[np.int64],
    simulated: int,
    n_pool: int = 1000,
    *,
    rate: float = 1.0,
) -> None:
    """Tidy the raw offsets in place (grid edges, noise at large n, lengths beyond simulation).

    * At the first and last φ the lookup clips φ, so the size is flat in δ on one side and the
      raw δ is arbitrary there: the neighbour's δ is used.
    * δ is a small-sample correction of order ``n^-rate`` while its simulation noise is of order
      1/√(n · reps): from ``n_pool`` on, δ = c / n^rate with c the inverse-variance weighted mean
      of n^rate · δ over the simulated lengths ≥ ``n_pool`` (weights reps / n^(2 rate − 1)),
      also for longer lengths. One column: rate 1 (the bias of r); several: rate ½ (the largest
      of several r is biased up by a multiple of their standard error).
    """
    offset[:, 0] = offset[:, 1]
    offset[:, -1] = offset[:, -2]
    pool = np.flatnonzero((n >= n_pool) & (np.arange(len(n)) < simulated))
    if len(pool) == 0:
        return
    weights = reps[pool] / n[pool] ** (2.0 * rate - 1.0)
    scaled = n[pool, None, None, None] ** rate * offset[pool]
    c = np.einsum("i,i...->...", weights, scaled) / weights.sum()
    later = np.flatnonzero(n >= n[pool[0]])
    offset[later] = c[None] / n[later, None, None, None] ** rate


@functools.lru_cache(maxsize=64, typed=True)  # asked at every lookup; typed: True is no 1
def table_dims(dims: int) -> int:
    """The tabulated number of columns used for ``dims`` columns: the largest in
    :data:`DIMS_GRID` not above it (conservative: more columns concentrate T)."""
    if isinstance(dims, bool) or not isinstance(dims, int | np.integer) or dims < 1:
        raise ValueError(f"dims must be a positive integer, got {dims!r}")
    return max(k for k in DIMS_GRID if k <= dims)


def table_path(dims: int = 1) -> Path:
    """Where the shipped table for ``dims`` tabulated columns lives (one of :data:`DIMS_GRID`)."""
    if dims not in DIMS_GRID:
        raise ValueError(f"no table for dims={dims}; tabulated: {DIMS_GRID}")
    return TABLE_PATH if dims == 1 else TABLE_PATH.with_name(f"fpa_table_d{dims}.npz")


def load_table(dims: int = 1) -> FPATable:
    """The shipped table for ``dims`` columns searched jointly (loaded once): the one for the
    largest tabulated number of columns not above ``dims`` (see :func:`table_dims`)."""
    return _load_table(table_dims(dims))


@functools.lru_cache(maxsize=len(DIMS_GRID))
def _load_table(dims: int) -> FPATable:
    path = table_path(dims)
    if not path.exists():
        raise FileNotFoundError(
            f"FPA table missing at {path}; build it with scripts/make_fpa_table.py --dims {dims}"
        )
    return FPATable.load(path)


def critical_value(
    n: float,
    phi: float,
    alpha: float = 0.05,
    *,
    min_size: int = 1,
    phi_estimated: bool = False,
    dims: int = 1,
) -> float:
    """FPA critical value: T exceeded with probability ``alpha`` by an optimally partitioned
    AR(1) series of length ``n`` and lag-1 autocorrelation ``phi`` (no change point).

    ``min_size = 1`` is the paper's unrestricted search; pass the search's own value. With
    ``phi_estimated=True``, ``phi`` is the sample lag-1 autocorrelation of the same segment and
    the value is calibrated so that the test has size ``alpha`` whatever the true φ. With
    ``dims`` columns searched jointly (on a common noise scale), ``phi`` is the largest of the
    columns' lag-1 autocorrelations and the table is :func:`load_table` ``(dims)``.
    """
    return load_table(dims).critical_value(n, phi, alpha, min_size, phi_estimated=phi_estimated)


def p_value(
    t: float,
    n: float,
    phi: float,
    *,
    min_size: int = 1,
    phi_estimated: bool = False,
    dims: int = 1,
) -> float:
    """FPA p-value: the probability that an optimally partitioned AR(1) series with no change
    point gives a statistic above ``t`` (``phi_estimated`` and ``dims`` as in
    :func:`critical_value`)."""
    return load_table(dims).p_value(t, n, phi, min_size, phi_estimated=phi_estimated)


def paper_critical_value(n: float, phi: float) -> float:
    """The paper's fitted α = .05 critical value, eq. (8) (our reading of the scan).

    ``ln(Tc − 1) = −5.2942 + 573/N − 30745/N² + 5.8427φ − 12.372φ² + 11.102φ³``, fitted for
    100 ≤ N ≤ 1000 and .05 ≤ φ ≤ .99; as in the paper, φ is clipped to [.05, .99]. It is for the
    unrestricted search (min_size = 1) and is used outside its fitted N range at your risk.
    """
    phi = min(max(phi, 0.05), 0.99)
    y = -5.2942 + 573.0 / n - 30745.0 / (n * n) + 5.8427 * phi - 12.372 * phi**2 + 11.102 * phi**3
    return 1.0 + math.exp(y)


def f_critical_value(n: int, alpha: float = 0.05, *, dims: int = 1) -> float:
    """Critical T from the F distribution, the paper's straw man: (n−2)(T−1) ~ F(d, d(n−2)).

    Valid only for a split chosen in advance, with iid normal data — neither holds here.
    """
    from scipy.stats import f

    return 1.0 + float(f.isf(alpha, dims, dims * (n - 2))) / (n - 2)


def f_p_value(t: float, n: int, *, dims: int = 1) -> float:
    """P-value of T under the F approximation (see :func:`f_critical_value`)."""
    from scipy.stats import f

    if t <= 1.0:
        return 1.0
    if math.isinf(t):
        return 0.0
    return float(f.sf((n - 2) * (t - 1.0), dims, dims * (n - 2)))
