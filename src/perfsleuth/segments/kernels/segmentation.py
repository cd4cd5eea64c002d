"""Optimal segmentation of a regression by dynamic programming (Cherkasova et al. 2008, §4.3).

The time axis ``0 .. M−1`` (windows) is cut into segments ``T_m`` so that within each one a
single linear model ``y_t ≈ x_tᵀβ_m`` holds. The segmentation minimises the paper's Lagrangian

    W(T) = Σ_m [ w1_m + λ·w2_m ],   w1_m = sqrt(SSE_m),   w2_m = −|T_m|·ln(|T_m| / M),

where ``SSE_m`` is the least-squares error of the best model on ``T_m`` (with ``β ≥ 0`` when
``nonnegative``: the paper's non-negative LSQ) and ``w2`` is the length-entropy penalty. Splitting
a segment of n windows in two halves raises ``Σ w2`` by exactly ``n·ln 2`` whatever M is.

Choosing λ from an allowed error
--------------------------------
The user gives ε_allow, an allowed *average relative* regression error: the root mean square
error of the model divided by the mean of ``y`` (0.05 = the model may be off by 5% of the mean
CPU). perfsleuth sets

    λ = ε_allow · ȳ / (√M · ln 2).

With it, a series that one model fits with relative RMS error ε costs ``√M·ε·ȳ`` as one
segment and ``√M·ε_allow·ȳ`` more than that (the penalty) as two perfectly fitted halves: ε_allow
is exactly the error at which the first split pays. This is **scale-free**: multiplying y (a
change of unit, or of window width, which multiplies both y and its noise) multiplies ȳ, every
``sqrt(SSE)`` and λ alike; widening the windows k-fold divides M by k and multiplies ȳ by k, and
both sides of the comparison change by √k. Nothing needs retuning.

Two properties of the paper's cost are worth knowing (they are the cost's, not this code's):

* ``sqrt`` is subadditive, so noise alone never pays for a split: two halves with the same noise
  level σ cost √2 times one segment. The flip side is a floor on what can be found: a change of
  model is split off only when the misfit it causes exceeds about the noise level.
* The penalty grows like n·ln(M/n) while ``sqrt(SSE)`` grows like √n, so a stretch of n windows
  inside a longer series splits at a misfit of about ``ε_allow·√(n/M)``: short, strong deviations
  (a background process) are cut out readily, long stretches need the full ε_allow.
* A segment of at most p windows (p = columns) is fitted exactly, at no error. With noise well
  above ε_allow (roughly σ > ε_allow·log2(M/p)) chopping the whole series into such scraps costs
  less than fitting it: ``min_size = p + 1`` rules that out (one residual degree of freedom per
  segment is enough), at the price of not cutting out deviations shorter than that on their own.

Computing it
------------
Every segment's least-squares error comes in O(p³) from prefix sums of the Gram matrix of
``[X y]``: ``G(s, e) = S_e − S_s`` and the last pivot of its Cholesky factorisation is ``SSE``.
The factorisations run vectorised over blocks of start points (the batch is the last axis, so
each step of the factorisation is one numpy operation over thousands of segments). Columns that
are linearly dependent within a segment (a type with no transactions there, or a segment shorter
than the number of columns) are dropped from that segment's fit, so short segments are exact
(often zero-error) fits, as in the paper.

**NNLS where it matters.** The unconstrained SSE is a lower bound of the NNLS one. For each end
``e`` the dynamic programme takes the start that minimises ``F(s) + cost(s, e)`` with the lower
bounds; if that segment's unconstrained coefficients have a negative entry, its cost is replaced
by the NNLS cost (scipy's ``nnls`` on the factored Gram matrix) and the minimum is taken again,
until the winner's cost is exact. Every other candidate's true cost is at least its bound, so
the result is the exact optimum of the NNLS objective, with NNLS solved only for the few
segments that can win.

**Which segments are computed.** The paper's entropy penalty rewards long segments
super-linearly, which rules out PELT-style pruning (a start that loses now may win later). For
one end, though, the starts are taken from the latest back, in batches: a segment that reaches
further back contains the shorter one, so its least-squares error is at least the shorter's,
and once no earlier start's ``F(s) + λ·w2`` plus that error can beat the best exact cost found,
the earlier starts are not computed. Where the model changes, segments across the change fit
badly and the search stops soon after it: the work falls from ``M²/2`` segments towards
``Σ (length of the current regime) · M``. In a series with no change at all it stays O(M²).

**The Gaussian cost's search is lazy** (:func:`_search_gaussian`). PELT keeps every start of
the current regime in the running, and computing each one's SSE at every end is
``(regime length)`` factorisations per window (16.6 M at M = 10,000 with three regimes). A
start's SSE at an earlier end is a lower bound of its SSE now (less the prefix sums' rounding,
``_SLACK``), and the cost is increasing in the SSE: a start is computed only while its bound is
not above the best exact cost, and the pruning rule is applied exactly to the starts computed;
a start that wins after ends at which it was not computed is checked at those ends
(:func:`_first_drop`) and dropped where the full search would have dropped it. Within a regime
the other starts trail the best by about the penalty, and a bound loosens by about one per
window, so a start is computed every few tens of windows (0.18 M factorisations at M = 10,000).
The result is bit for bit that of computing every start (a test checks it against the full
search): the same cuts, costs, SSEs and NNLS solves; only ``evaluated`` counts less.

Coordinates: y is divided by its mean and each column of X by its root mean square before
anything else, so results do not depend on units (and solver tolerances mean the same thing
for every input).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import nnls
from scipy.stats import chi2

from perfsleuth.errors import DataError, NotEnoughDataError

__all__ = [
    "CostName",
    "Segmentation",
    "noise_level",
    "penalty_for",
    "segment_cost",
    "segment_regression",
]

FloatArray = NDArray[np.float64]
CostName = Literal["paper", "gaussian"]

_BATCH = 2048  # segments factorised per numpy batch: big enough to amortise, small for cache
_FIRST = 128  # the latest starts, computed first for each end: they set the first bound
_DROP = 1e-9  # a column whose residual norm² is below this share of its own is dependent
_NEGATIVE = -1e-10  # an unconstrained coefficient below this (scaled units) calls for NNLS
_SLACK = 1e-8  # share of Σ y² (scaled) by which rounding might lower a longer segment's SSE
_REACH = 8.0  # the lazy search's first batch: bounds this close to the lowest (cost units)
_EAGER = 250_000  # starts × columns³ up to which the lazy search computes every start


@dataclass(frozen=True, slots=True)
class Segmentation:
    """The optimal segmentation of one regression over time.

    Attributes
    ----------
    indices
        0-based index of the **first window of each new segment** (the first segment's 0 is
        not listed), sorted.
    starts, stops
        Per segment: first window and one past the last, ``[start, stop)``
        (``stops[-1] == n_windows``).
    sse
        Per segment: the least-squares error of its best model (NNLS when ``nonnegative``), in
        the units of ``y`` squared.
    cost
        The minimised objective: ``Σ sqrt(SSE_m) + λ Σ |T_m| ln(M / |T_m|)`` (units of y) with
        the paper's cost, ``Σ SSE_m / σ² + β·(segments − 1)`` with the Gaussian one.
    penalty
        λ (units of y per window), or β (units of σ²).
    allowed_error
        The ε_allow λ was derived from (NaN when λ was given directly, or with the Gaussian
        cost).
    scale
        Mean of y: what relative errors are relative to.
    nonnegative
        Whether the segment models were constrained to ``β ≥ 0``.
    nnls_solves
        NNLS problems solved (segments whose unconstrained fit could win with a negative
        coefficient).
    evaluated
        Segments whose least-squares error was computed (at most ``M (M + 1) / 2``; fewer where
        the bounds of the module docstring ruled starts out).
    kind
        The cost: ``"paper"`` or ``"gaussian"``.
    noise
        σ of the Gaussian cost (units of y; NaN with the paper's).
    """

    indices: tuple[int, ...]
    starts: tuple[int, ...]
    stops: tuple[int, ...]
    sse: tuple[float, ...]
    cost: float
    penalty: float
    allowed_error: float
    scale: float
    n_windows: int
    nonnegative: bool
    nnls_solves: int
    evaluated: int = 0
    kind: CostName = "paper"
    noise: float = math.nan

    @property
    def n_segments(self) -> int:
        return len(self.starts)

    def segments(self) -> list[tuple[int, int]]:
        """``[(start, stop), ...]`` half-open window ranges, in time order."""
        return list(zip(self.starts, self.stops, strict=True))

    def relative_rmse(self) -> FloatArray:
        """Per segment: ``sqrt(SSE / n) / scale``, the model's relative RMS error there."""
        n = np.asarray(self.stops, dtype=np.float64) - np.asarray(self.starts, dtype=np.float64)
        return np.asarray(np.sqrt(np.asarray(self.sse) / n) / self.scale, dtype=np.float64)


def penalty_for(allowed_error: float, n_windows: int, scale: float) -> float:
    """λ for an allowed average relative error (see the module docstring).

    ``λ = ε_allow · scale / (√M · ln 2)``: at this λ one segment fitted with relative RMS error
    ε_allow costs as much as two perfectly fitted halves.
    """
    if not (allowed_error > 0 and math.isfinite(allowed_error)):
        raise ValueError(f"allowed_error must be a positive number, got {allowed_error}")
    if n_windows < 1:
        raise ValueError(f"n_windows must be at least 1, got {n_windows}")
    return allowed_error * scale / (math.sqrt(n_windows) * math.log(2.0))


def segment_regression(
    design: ArrayLike,
    response: ArrayLike,
    *,
    cost: CostName = "paper",
    allowed_error: float = 0.05,
    penalty: float | None = None,
    noise: float | None = None,
    min_size: int = 1,
    nonnegative: bool = True,
) -> Segmentation:
    """Cut the time axis where the regression ``response ≈ design @ β`` changes.

    Parameters
    ----------
    design
        (M windows × p columns) regressors, one row per window in time order. For the CPU model
        of Cherkasova et al. the columns are the window width (its coefficient is the idle
        overhead C0) and the per-type transaction counts.
    response
        (M,) the regressand, e.g. CPU-seconds used per window; its mean must be positive.
    cost
        ``"paper"``: ``Σ sqrt(SSE_m) + λ·w2_m`` (the paper's, λ from ``allowed_error``);
        ``"gaussian"``: ``Σ SSE_m / σ² + β`` per segment (see the module docstring).
    allowed_error
        Paper's cost: ε_allow, the allowed average error as a share of the mean response; sets
        λ.
    penalty
        Paper's cost: λ directly (units of the response per window), overriding
        ``allowed_error``. Gaussian cost: β, the price of a segment in units of σ² (default
        ``(p + 1)·ln M``).
    noise
        Gaussian cost: σ, the noise of one window (units of the response); default
        :func:`noise_level`.
    min_size
        Fewest windows per segment (default 1, as in the paper).
    nonnegative
        Constrain every coefficient to be ≥ 0 (non-negative least squares, as in the paper).

    Returns
    -------
    Segmentation

    Raises
    ------
    DataError
        Non-finite values, mismatched shapes, or a response whose mean is not positive.
    NotEnoughDataError
        Fewer windows than ``min_size``.
    """
    x, y = _validated(design, response)
    m, p = x.shape
    if cost not in ("paper", "gaussian"):
        raise ValueError(f"cost must be 'paper' or 'gaussian', got {cost!r}")
    if min_size < 1:
        raise ValueError(f"min_size must be at least 1, got {min_size}")
    if m < min_size:
        raise NotEnoughDataError(f"{m} window(s), fewer than min_size = {min_size}")
    scale = float(np.mean(y))
    if not scale > 0:
        raise DataError(f"the response must have a positive mean to segment, got {scale}")
    if penalty is not None and not (penalty >= 0 and math.isfinite(penalty)):
        raise ValueError(f"penalty must be a finite number >= 0, got {penalty}")
    cols = np.sqrt(np.mean(x * x, axis=0))
    cols[cols == 0] = 1.0
    z = np.column_stack([x / cols, y / scale])
    prefix = _prefix_gram(z)
    packed = _packed(prefix)
    sigma, eps = math.nan, math.nan
    if cost == "paper":
        if penalty is None:
            lam = penalty_for(allowed_error, m, scale)
            eps = float(allowed_error)
        else:
            lam = float(penalty)
        search = _search_paper(prefix, packed, m, min_size, lam / scale, nonnegative)
    else:
        if noise is None:
            sigma = _noise(packed, m, p)
        elif noise > 0 and math.isfinite(noise):
            sigma = float(noise) / scale
        else:
            raise ValueError(f"noise must be a positive number, got {noise}")
        lam = (p + 1) * math.log(max(m, 2)) if penalty is None else float(penalty)
        search = _search_gaussian(prefix, packed, m, min_size, lam, sigma, nonnegative)
    f_m, back, best_sse, solves, evaluated = search

    starts, stops, sses = [], [], []
    end = m
    while end > 0:
        start = int(back[end])
        starts.append(start)
        stops.append(end)
        sses.append(float(best_sse[end]) * scale * scale)
        end = start
    starts.reverse()
    stops.reverse()
    sses.reverse()
    return Segmentation(
        indices=tuple(starts[1:]),
        starts=tuple(starts),
        stops=tuple(stops),
        sse=tuple(sses),
        cost=f_m * scale if cost == "paper" else f_m,
        penalty=lam,
        allowed_error=eps,
        scale=scale,
        n_windows=m,
        nonnegative=nonnegative,
        nnls_solves=solves,
        evaluated=evaluated,
        kind=cost,
        noise=sigma * scale,
    )


def noise_level(design: ArrayLike, response: ArrayLike) -> float:
    """σ, the noise of one window around a locally fitted regression, robustly.

    The windows are cut into blocks of ``max(3p, 12)`` (p columns); each block gets its own
    least-squares fit, and σ² is the median of the blocks' ``SSE / (n − p)``, scaled by the
    median of the χ² distribution with ``n − p`` degrees of freedom so that it estimates the
    variance. Blocks that hold a change of model, or an anomaly, fit badly and fall in the
    upper half: the median does not see them while they are fewer than half.
    """
    x, y = _validated(design, response)
    m, p = x.shape
    scale = float(np.mean(y))
    if not scale > 0:
        raise DataError(f"the response must have a positive mean, got {scale}")
    cols = np.sqrt(np.mean(x * x, axis=0))
    cols[cols == 0] = 1.0
    packed = _packed(_prefix_gram(np.column_stack([x / cols, y / scale])))
    return _noise(packed, m, p) * scale


def segment_cost(
    design: ArrayLike,
    response: ArrayLike,
    indices: ArrayLike,
    *,
    penalty: float,
    nonnegative: bool = True,
    cost: CostName = "paper",
    noise: float = 1.0,
) -> float:
    """The objective of a given segmentation (for checks and comparisons): the paper's
    ``W(T)`` with λ = ``penalty``, or ``Σ SSE_m / σ² + β·(segments − 1)`` with β = ``penalty``
    and σ = ``noise``.

    ``indices`` are first windows of new segments, as in :class:`Segmentation`. Each
    segment is fitted directly (NNLS or least squares on its rows), not from prefix sums.
    """
    x, y = _validated(design, response)
    m = len(y)
    cuts = [0, *sorted(int(b) for b in np.asarray(indices).reshape(-1)), m]
    if any(b <= a for a, b in itertools.pairwise(cuts)) or cuts[-1] != m:
        raise ValueError(f"indices must be increasing and inside 1..{m - 1}")
    total = -penalty if cost == "gaussian" else 0.0
    for a, b in itertools.pairwise(cuts):
        xs, ys = x[a:b], y[a:b]
        if nonnegative:
            _, rnorm = nnls(xs, ys)
            err = float(rnorm)
        else:
            beta = np.linalg.lstsq(xs, ys, rcond=None)[0]
            err = float(np.linalg.norm(ys - xs @ beta))
        n = b - a
        if cost == "gaussian":
            total += (err / noise) ** 2 + penalty
        else:
            total += err + penalty * n * math.log(m / n)
    return total


# --------------------------------------------------------------------------------------------
# Internals
# --------------------------------------------------------------------------------------------


SearchResult = tuple[float, NDArray[np.int64], FloatArray, int, int]
"""The minimised objective (scaled), back-pointers, each end's chosen SSE, NNLS solves and
segments evaluated."""


def _search_paper(
    prefix: FloatArray,
    packed: tuple[FloatArray, list[int]],
    m: int,
    min_size: int,
    lam: float,
    nonnegative: bool,
) -> SearchResult:
    """The dynamic programme of the paper's cost, with the bounds of "Which segments"."""
    f = np.full(m + 1, np.inf)
    f[0] = 0.0
    back = np.zeros(m + 1, dtype=np.int64)
    best_sse = np.zeros(m + 1)
    solves = evaluated = 0
    # Per start, a lower bound of the (scaled) SSE of any segment from it that ends later: the
    # SSE of the longest segment from it computed so far (adding windows never lowers it).
    known = np.zeros(m + 1)
    for end in range(min_size, m + 1):
        last = end - min_size  # latest start allowed
        n = end - np.arange(last + 1, dtype=np.float64)
        base = f[: last + 1] + lam * n * np.log(m / n)
        sse = np.full(last + 1, np.inf)
        total = np.full(last + 1, np.inf)
        exact = np.zeros(last + 1, dtype=bool)
        done = np.zeros(last + 1, dtype=bool)
        todo = np.arange(max(0, last + 1 - _FIRST), last + 1)  # the latest starts first
        start = last
        while len(todo):
            values = _sse_at(packed, end, todo)
            sse[todo] = values
            known[todo] = values
            total[todo] = base[todo] + np.sqrt(values)
            done[todo] = True
            evaluated += len(todo)
            start, solved = _exact_minimum(
                prefix, end, total, sse, exact, nonnegative, lambda v, _: np.sqrt(v)
            )
            solves += solved
            # What any start not yet computed costs at least: its base plus the error of the
            # longest segment computed from it earlier, or of a computed segment it contains.
            inner = np.maximum.accumulate(np.where(done, sse, 0.0)[::-1])[::-1]
            contained = np.append(inner[1:], 0.0)
            bound = base + np.sqrt(np.maximum(known[: last + 1], contained))
            todo = np.flatnonzero(~done & (bound < total[start]))
            if len(todo) > _BATCH:
                todo = todo[np.argsort(bound[todo], kind="stable")[:_BATCH]]
        f[end] = total[start]
        back[end] = start
        best_sse[end] = sse[start]
    return float(f[m]), back, best_sse, solves, evaluated


def _search_gaussian(
    prefix: FloatArray,
    packed: tuple[FloatArray, list[int]],
    m: int,
    min_size: int,
    beta: float,
    sigma: float,
    nonnegative: bool,
) -> SearchResult:
    """Optimal partitioning of ``Σ n_m·ln(max(SSE_m / n_m, σ²/4)) + β`` with PELT's pruning
    (Killick et al. 2012).

    ``n·ln(SSE/n)`` is a segment's Gaussian −2 log-likelihood with its own variance (constants
    dropped): a stretch noisier than the rest (a hog that draws a random share of the CPU)
    stays one segment instead of being chopped into pieces, each fitted to its own noise. The
    variance may not go below a quarter of the typical one (``σ``), so that a short segment
    fitted almost exactly is no bargain. The cost is additive and superadditive (the best model
    of two stretches together fits no better than each its own), so a start whose best cost to
    ``end`` already exceeds ``F(end)`` can never begin the last segment of a later optimum: it
    is dropped — from ``end + min_size`` on, as a segment from ``end`` shorter than
    ``min_size`` is no alternative before that. The lower bounds (least squares for NNLS) keep
    the pruning safe. (The variance floor makes the cost slightly less than superadditive — a
    piece fitted within the floor is priced above its SSE — so on data a model fits almost
    exactly a start can be dropped that would have won later; the rule is kept as it is.)
    """
    floor = max(sigma * sigma / 4.0, 1e-300)

    def price(sse: FloatArray, n: FloatArray) -> FloatArray:
        out: FloatArray = n * np.log(np.maximum(sse / n, floor))
        return out

    f = np.full(m + 1, np.inf)
    f[0] = -beta
    back = np.zeros(m + 1, dtype=np.int64)
    best_sse = np.zeros(m + 1)
    alive = np.zeros(m + 1, dtype=bool)  # a start still in the running
    alive[0] = True
    dead_at = np.full(m + 1, m + 1, dtype=np.int64)  # the end from which a start is dropped
    # The work is lazy, the result that of computing every start's SSE at every end (below).
    # known: each start's least-squares SSE at the last end it was computed for, a lower bound
    # of its SSE at any later end once the prefix sums' rounding is allowed for (_SLACK);
    # checked: the last end up to which the pruning rule has been applied to it exactly.
    known = np.zeros(m + 1)
    checked = np.arange(m + 1) + min_size - 1
    solves = evaluated = 0
    for end in range(min_size, m + 1):

        def priced(sse: FloatArray, starts: NDArray[np.intp], end: int = end) -> FloatArray:
            return price(sse, (end - starts).astype(np.float64))

        last = end - min_size
        starts = np.flatnonzero(alive[: last + 1] & (dead_at[: last + 1] > end))
        # Each start's cost from its bound first; its SSE is computed only while the bound is
        # not above the best exact cost (in a regime the other starts trail the best by about
        # β and a bound loosens by about one per window, so most are not computed at most ends)
        lower = np.maximum(known[starts] - _SLACK * packed[0][-1, end], 0.0)
        sse = np.full(last + 1, np.inf)
        total = np.full(last + 1, np.inf)
        sse[starts] = lower
        total[starts] = f[starts] + priced(lower, starts) + beta
        exact = np.zeros(last + 1, dtype=bool)  # NNLS checked
        fresh = np.zeros(last + 1, dtype=bool)  # SSE computed for this end, not a bound
        ready = np.zeros(last + 1, dtype=bool)  # fresh and still in the running here
        while True:
            start, solved = _exact_minimum(
                prefix, end, total, sse, exact, nonnegative, priced, ready
            )
            solves += solved
            if ready[start]:
                break
            if fresh[start]:  # it wins: was it dropped at an end not checked?
                dropped = _first_drop(packed, f, price, start, checked[start] + 1, last)
                if dropped is None:
                    checked[start] = last
                    ready[start] = True
                else:
                    dead_at[start] = min(dead_at[start], dropped + min_size)
                    checked[start] = dropped
                    total[start] = np.inf
                continue
            best = float(np.min(total, where=fresh, initial=np.inf))
            if math.isinf(best) and len(starts) * len(packed[1]) ** 3 <= _EAGER:
                todo = starts  # few and small: all at once costs less than the bookkeeping
            elif math.isinf(best):  # none computed yet: the lowest bounds, within a few units
                todo = starts[total[starts] <= total[start] + _REACH]
            else:
                todo = starts[~fresh[starts] & (total[starts] <= best)]
            values = _sse_batch(packed, end, todo, len(starts) > 1)
            evaluated += len(todo)
            sse[todo] = values
            known[todo] = values
            total[todo] = f[todo] + priced(values, todo) + beta
            fresh[todo] = True
            ready[todo] = checked[todo] >= last
        f[end] = total[start]
        back[end] = start
        best_sse[end] = sse[start]
        # The pruning rule on the starts computed here (exactly: its least-squares SSE); where
        # every earlier end was checked this is the end the full search drops it at, else an
        # upper bound, made exact by _first_drop if it ever wins before.
        computed = np.flatnonzero(fresh)
        drop = f[computed] + priced(known[computed], computed) >= f[end]
        dead_at[computed[drop]] = np.minimum(dead_at[computed[drop]], end + min_size)
        follows = computed[~drop & (checked[computed] == end - 1)]
        checked[follows] = end
        alive[end] = True
    return float(f[m]), back, best_sse, solves, evaluated


def _first_drop(
    packed: tuple[FloatArray, list[int]],
    f: FloatArray,
    price: Callable[[FloatArray, FloatArray], FloatArray],
    start: int,
    first: int,
    last: int,
) -> int | None:
    """The first end in ``first .. last`` at which the pruning rule drops ``start`` (its cost
    to that end, from its least-squares SSE, at least ``F(end)``), or None."""
    if first > last:
        return None
    ends = np.arange(first, last + 1)
    sse = _sse_ends(packed, start, ends)
    hit = np.flatnonzero(f[start] + price(sse, (ends - start).astype(np.float64)) >= f[ends])
    return int(ends[hit[0]]) if len(hit) else None


def _sse_batch(
    packed: tuple[FloatArray, list[int]], end: int, todo: NDArray[np.intp], pair: bool
) -> FloatArray:
    """:func:`_sse_at` of ``todo``, never of one segment alone when ``pair``: numpy's einsum
    sums a batch of one in another order, and a segment's SSE must not depend on which others
    were computed with it (the lazy search is then bit for bit the full one)."""
    if len(todo) == 1 and pair:
        return _sse_at(packed, end, np.repeat(todo, 2))[:1]
    return _sse_at(packed, end, todo)


def _sse_ends(
    packed: tuple[FloatArray, list[int]], start: int, ends: NDArray[np.intp]
) -> FloatArray:
    """Unconstrained SSE of the segments ``[start, e)`` for each ``e`` in ``ends`` (scaled), in
    batches of at least two (see :func:`_sse_batch`)."""
    table, offsets = packed
    out = np.empty(len(ends))
    for a in range(0, len(ends), _BATCH):
        chunk = ends[a : a + _BATCH]
        if len(chunk) == 1:
            chunk = np.repeat(chunk, 2)
        gram = table[:, chunk] - table[:, start, None]
        out[a : a + _BATCH] = _last_pivot(gram, offsets)[: len(out[a : a + _BATCH])]
    return out


def _noise(packed: tuple[FloatArray, list[int]], m: int, p: int) -> float:
    """:func:`noise_level` in scaled units, from the prefix table."""
    block = max(3 * p, 12)
    edges = np.arange(0, m - block + 1, block)
    if len(edges) == 0:
        edges = np.array([0])
        block = m
    dof = block - p
    if dof < 1:
        raise NotEnoughDataError(f"{m} window(s): too few to estimate the noise of {p} columns")
    sse = np.array([_sse_at(packed, int(a) + block, np.array([a]))[0] for a in edges])
    var = float(np.median(sse)) / float(chi2.median(dof))
    return math.sqrt(max(var, 0.0))


def _validated(design: ArrayLike, response: ArrayLike) -> tuple[FloatArray, FloatArray]:
    try:
        x = np.array(design, dtype=np.float64, ndmin=2)
        y = np.array(response, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise DataError(f"design and response must be numeric arrays: {exc}") from exc
    if np.ndim(design) == 1:
        x = x.T
    if x.ndim != 2 or x.shape[1] == 0:
        raise DataError(f"design must be 2-D (windows × columns), got shape {np.shape(design)}")
    if len(y) != x.shape[0]:
        raise DataError(f"design has {x.shape[0]} window(s) but response has {len(y)}")
    if len(y) == 0:
        raise NotEnoughDataError("no windows to segment")
    for label, a in (("design", x), ("response", y)):
        bad = ~np.isfinite(a)
        if bad.any():
            raise DataError(
                f"{label} has NaN or infinite values (first at index {tuple(np.argwhere(bad)[0])})"
            )
    return x, y


def _prefix_gram(z: FloatArray) -> FloatArray:
    """``S[:, :, k] = Σ_{t<k} z_t z_tᵀ``, shape (q, q, M + 1), batch (time) last."""
    m, q = z.shape
    out = np.zeros((q, q, m + 1))
    outer = z.T[:, None, :] * z.T[None, :, :]  # (q, q, M)
    np.cumsum(outer, axis=2, out=out[:, :, 1:])
    return out


def _packed(prefix: FloatArray) -> tuple[FloatArray, list[int]]:
    """The lower triangle of the prefix Gram matrices, column by column: column j's entries
    ``(j..q−1, j)`` are rows ``offsets[j] .. offsets[j] + q − j`` (half the work to subtract)."""
    q = prefix.shape[0]
    rows = [prefix[j:, j] for j in range(q)]
    offsets = np.concatenate([[0], np.cumsum([q - j for j in range(q)])]).tolist()
    return np.ascontiguousarray(np.concatenate(rows, axis=0)), offsets


def _sse_at(packed: tuple[FloatArray, list[int]], end: int, starts: NDArray[np.intp]) -> FloatArray:
    """Unconstrained SSE of the segments ``[s, end)`` for each ``s`` in ``starts`` (scaled)."""
    table, offsets = packed
    if starts[-1] - starts[0] + 1 == len(starts):  # a run of starts: a view, no gather
        block = table[:, starts[0] : starts[-1] + 1]
    else:
        block = table[:, starts]
    return _last_pivot(table[:, end, None] - block, offsets)


def _last_pivot(gram: FloatArray, offsets: list[int]) -> FloatArray:
    """Last pivot of the Cholesky factorisation of each packed Gram matrix (= SSE), ≥ 0.

    ``gram`` holds the lower triangles column by column (see :func:`_packed`), batch last.
    Columns that are (numerically) dependent on earlier ones in a segment get a zero pivot and
    drop out of that segment's fit, so rank-deficient segments are handled, not regularised.
    """
    q = len(offsets) - 1
    width = gram.shape[1]
    lower = np.empty((q, q, width))  # lower[i, k], i > k: only entries written are read
    # the few calls per column below, each over the whole batch: a batch is often small (the
    # lazy search), and then numpy's per-call cost is most of the time
    drop = _DROP * gram[offsets[:-1]]
    for j in range(q - 1):
        column = gram[offsets[j] : offsets[j + 1]]  # G[j:, j]
        row = lower[j, :j]
        d = column[0] - np.einsum("kb,kb->b", row, row) if j else column[0]
        keep = d > drop[j]
        inv = np.where(keep, 1.0 / np.sqrt(np.where(keep, d, 1.0)), 0.0)
        if j:
            below = np.einsum("ikb,kb->ib", lower[j + 1 :, :j], row)
            np.subtract(column[1:], below, out=below)
            np.multiply(below, inv, out=lower[j + 1 :, j])
        else:
            np.multiply(column[1:], inv, out=lower[j + 1 :, j])
    row = lower[q - 1, : q - 1]
    last = gram[offsets[q - 1]] - np.einsum("kb,kb->b", row, row)
    return np.asarray(np.maximum(last, 0.0), dtype=np.float64)


def _exact_minimum(
    prefix: FloatArray,
    end: int,
    total: FloatArray,
    sse: FloatArray,
    exact: NDArray[np.bool_],
    nonnegative: bool,
    price: Callable[[FloatArray, NDArray[np.intp]], FloatArray],
    ready: NDArray[np.bool_] | None = None,
) -> tuple[int, int]:
    """The start minimising ``total`` once its cost is exact; updates ``total``, ``sse`` and
    ``exact`` (the starts whose cost is known to be exact). ``price`` turns an SSE into the
    part of ``total`` it makes. With ``ready``, a start not ready (its ``total`` only a bound,
    say) is returned as soon as it is the minimum, for the caller to make ready.

    With ``nonnegative``, a winner whose unconstrained fit has a negative coefficient gets its
    NNLS cost instead and the minimum is taken again (lazy evaluation, see module docstring).
    """
    if not nonnegative:
        return int(np.argmin(total)), 0
    solves = 0
    while True:
        start = int(np.argmin(total))
        if exact[start] or (ready is not None and not ready[start]):
            return start, solves
        exact[start] = True
        gram = prefix[:, :, end] - prefix[:, :, start]
        constrained = _nnls_sse(gram)
        if constrained is None:
            return start, solves
        solves += 1
        if constrained > sse[start]:
            at = np.array([start])
            old, new = price(sse[start : start + 1], at), price(np.array([constrained]), at)
            total[start] += float(new[0] - old[0])
            sse[start] = constrained


def _nnls_sse(gram: FloatArray) -> float | None:
    """NNLS error of one segment from its augmented Gram matrix, or None when the least-squares
    fit is already non-negative (then the two agree)."""
    a, b, c = gram[:-1, :-1], gram[:-1, -1], float(gram[-1, -1])
    w, v = np.linalg.eigh(a)
    keep = w > _DROP * max(float(w[-1]), 0.0)
    if not keep.any():
        return None
    proj = v[:, keep].T @ b
    beta = v[:, keep] @ (proj / w[keep])
    if beta.min() >= _NEGATIVE:
        return None
    # ‖Rβ − d‖² = βᵀAβ − 2bᵀβ + ‖d‖² with R = diag(√w) Vᵀ, d = diag(1/√w) Vᵀ b (b ∈ range A)
    root = np.sqrt(w[keep])
    r = root[:, None] * v[:, keep].T
    d = proj / root
    _, rnorm = nnls(r, d)
    return max(c - float(d @ d) + float(rnorm) ** 2, 0.0)
