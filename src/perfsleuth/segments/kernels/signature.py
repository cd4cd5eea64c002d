"""Application performance signatures (Cherkasova et al. 2008, §5.2; Mi et al. 2008).

For a transaction type i observed in window k with mean latency ``R_ik`` while the server's CPU
utilisation was ``U_k`` (a fraction), the utilisation law for a single queue gives the service
time ``S_i = R_ik · (1 − U_k)``. Every window gives one such estimate; the signature takes their
**median** (the paper: the middle of the CDF is flat, the tails are outliers), so
``S_i = median_k R_ik · (1 − U_k)``. A signature maps each type to its ``S_i``; comparing the
signatures of two periods names the types whose service time changed.

Uncertainty: the confidence interval of each median is the distribution-free order-statistic
interval (``x_(j) ≤ median ≤ x_(n−j+1)`` with ``j`` from the Binomial(n, ½) distribution; with
fewer than six windows the 95% interval is the sample range). Comparing two periods, the ratio
of service times gets the distribution-free interval of the Hodges–Lehmann shift of
``log S`` (from the Mann–Whitney statistic): the middle of the pairwise differences
``log S_after − log S_before``, cut at the rank the U distribution gives. It is far tighter than
dividing one median's interval by the other's, which matters with the dozen windows a short
period has. Both treat windows as independent; consecutive windows are somewhat correlated, so
the intervals are a little optimistic, which the ``min_change`` floor offsets.

**On a shared machine** ``1 − U`` does not remove queueing: other processes take the CPU and
every type is stretched by the same contention. :func:`service_index` and :func:`compare_service`
therefore take the common conditions of each window out with the types themselves: the mean
latency of type i in window t is ``R_it = b_t·S_i`` — the type's
service time stretched by a factor ``b_t`` every type shares that window (its share of the CPU,
the queue). Fitted over a period (weighted least squares, weights: transactions; normalised to
a mean stretch of 1), ``S_i`` is the type's service time under the period's typical
conditions, whatever U is.

Comparing periods, each window of either period is fitted by the *other* types (with the
earlier period's ``S``), and a type's implied service time there, ``R_it / b_t``, is read
off. A type's service time also depends on the mix it runs with (updates wait for each other's
locks when many run together): within the earlier period the implied values of each type are
regressed on the windows' mix (the share of each type) and only what the mix does not explain
is compared. A change of code moves one type away from the others in every mix; load,
contention and a hog move them together and cancel; a change of mix is explained. The
uncertainty comes from block means (``block`` consecutive windows pooled, so slow drifts count
as noise, not as signal): a Welch interval of the difference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import binom, norm
from scipy.stats import t as t_dist

from perfsleuth.errors import DataError

__all__ = [
    "Signature",
    "SignatureChange",
    "application_signature",
    "compare_service",
    "compare_signatures",
    "service_index",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class Signature:
    """Per-type service time (seconds) with a confidence interval; NaN where unobserved.

    ``windows[i]`` is how many windows gave an estimate for type i.
    """

    names: tuple[str, ...]
    median: FloatArray
    low: FloatArray
    high: FloatArray
    windows: NDArray[np.int64]
    confidence: float
    samples: tuple[FloatArray, ...] = ()
    """Per type, the per-window estimates ``R·(1 − U)`` the median was taken over (sorted)."""

    def of(self, name: str) -> tuple[float, float, float]:
        """``(median, low, high)`` of one type."""
        j = self.names.index(name)
        return float(self.median[j]), float(self.low[j]), float(self.high[j])


@dataclass(frozen=True, slots=True)
class SignatureChange:
    """One type's service time in two periods: their ratio (after / before) with bounds, and
    ``common``, the slow-down the other types share (see :func:`compare_signatures`)."""

    name: str
    before: float
    after: float
    ratio: float
    ratio_low: float
    ratio_high: float
    common: float
    changed: bool
    score: float = math.nan
    """How far the change stands out of its uncertainty (a t statistic; NaN for the paper's
    signature, whose intervals are order statistics)."""

    @property
    def change(self) -> float:
        """Relative change, ``after / before − 1`` (0.25 = 25% slower)."""
        return self.ratio - 1.0

    @property
    def own_change(self) -> float:
        """Relative change beyond the shared one, ``ratio / common − 1``."""
        return self.ratio / self.common - 1.0


def application_signature(
    latency: ArrayLike,
    utilisation: ArrayLike,
    *,
    names: Sequence[str],
    confidence: float = 0.95,
) -> Signature:
    """The signature of one period.

    Parameters
    ----------
    latency
        (windows × types) mean latency of each type in each window, seconds; NaN where the type
        had no transactions in the window.
    utilisation
        (windows,) CPU utilisation of the server in each window, a fraction in [0, 1).
    names
        Type names, in column order.
    confidence
        Level of the intervals.
    """
    r = np.array(latency, dtype=np.float64, ndmin=2)
    u = np.array(utilisation, dtype=np.float64).reshape(-1)
    if r.shape[0] != len(u):
        raise DataError(f"latency has {r.shape[0]} window(s) but utilisation has {len(u)}")
    if r.shape[1] != len(names):
        raise DataError(f"{len(names)} name(s) for {r.shape[1]} column(s) of latency")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if (np.isfinite(u) & ((u < 0) | (u >= 1))).any():
        raise DataError("utilisation must be a fraction in [0, 1)")
    service = r * (1.0 - u)[:, None]
    k = r.shape[1]
    median, low, high = np.full(k, np.nan), np.full(k, np.nan), np.full(k, np.nan)
    counts = np.zeros(k, dtype=np.int64)
    samples = []
    for j in range(k):
        values = np.sort(service[np.isfinite(service[:, j]), j])
        samples.append(values)
        n = len(values)
        counts[j] = n
        if n == 0:
            continue
        median[j] = float(np.median(values))
        lo = _rank(n, confidence)
        low[j], high[j] = values[lo], values[n - 1 - lo]
    return Signature(tuple(names), median, low, high, counts, confidence, tuple(samples))


def compare_signatures(
    before: Signature, after: Signature, *, min_change: float = 0.1, shared: bool = True
) -> tuple[SignatureChange, ...]:
    """Each type seen in both periods: its service time before and after, and whether it
    changed by at least ``min_change`` (relative) beyond the uncertainty of both medians.

    With ``shared`` (and at least three types), the change is judged against the **common
    factor**, the median of the other types' ratios (of all three with three types): when every
    type is slower by about the same share, the cause is the environment (more load or
    contention than ``1 − U`` corrects for, a slower machine), not one transaction's code — an
    application change touches some types and leaves the others alone. ``R·(1 − U)`` removes
    queueing only when U is the utilisation of everything the transactions compete with; on a
    shared machine it is not.
    """
    if before.names != after.names:
        raise DataError("signatures of different transaction types cannot be compared")
    if min_change < 0:
        raise ValueError(f"min_change must be >= 0, got {min_change}")
    rows = []
    for j, name in enumerate(before.names):
        b, a = float(before.median[j]), float(after.median[j])
        if not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
            continue
        ratio_low, ratio_high = _ratio_interval(before, after, j)
        rows.append((name, b, a, a / b, ratio_low, ratio_high))
    ratios = np.array([r[3] for r in rows])
    changes = []
    for j, (name, b, a, ratio, ratio_low, ratio_high) in enumerate(rows):
        # The others' median, so a type's own change does not move the yardstick it is judged
        # by; but a median over at least three types, so that one changed type among them
        # cannot move it far either (with three types in all: the median of the three).
        others = np.delete(ratios, j) if len(ratios) >= 4 else ratios
        common = float(np.median(others)) if shared and len(ratios) >= 3 else 1.0
        slower = ratio_low / common >= 1.0 + min_change
        faster = ratio_high / common <= 1.0 / (1.0 + min_change)
        changes.append(
            SignatureChange(
                name, b, a, ratio, ratio_low, ratio_high, common, bool(slower or faster)
            )
        )
    return tuple(changes)


def _ratio_interval(before: Signature, after: Signature, j: int) -> tuple[float, float]:
    """Interval of ``S_after / S_before`` for type j: the Hodges–Lehmann interval of the shift
    of ``log S`` (Mann–Whitney inversion, normal approximation of U's quantile), at the
    signatures' confidence; the ratio of the medians' interval ends when samples are missing."""
    x, y = _positive(before, j), _positive(after, j)
    if len(x) == 0 or len(y) == 0:
        lo_b, hi_b = float(before.low[j]), float(before.high[j])
        lo_a, hi_a = float(after.low[j]), float(after.high[j])
        return (lo_a / hi_b if hi_b > 0 else math.nan, hi_a / lo_b if lo_b > 0 else math.inf)
    n, m = len(x), len(y)
    d = np.sort(np.subtract.outer(np.log(y), np.log(x)).ravel())
    z = float(norm.ppf(0.5 + before.confidence / 2))
    cut = math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12))
    cut = min(max(cut, 0), (len(d) - 1) // 2)
    return math.exp(float(d[cut])), math.exp(float(d[len(d) - 1 - cut]))


def _positive(signature: Signature, j: int) -> FloatArray:
    if not signature.samples:
        return np.empty(0)
    values = signature.samples[j]
    return np.asarray(values[values > 0], dtype=np.float64)


def _rank(n: int, confidence: float) -> int:
    """0-based index j of the lower end of the order-statistic interval of the median."""
    tail = (1.0 - confidence) / 2.0
    k = int(binom.ppf(tail, n, 0.5))
    if binom.cdf(k, n, 0.5) > tail:
        k -= 1
    # k: the largest count with P(B ≤ k) ≤ tail, B ~ Binomial(n, 1/2); then the interval
    # [x_(k+1), x_(n−k)] (1-based) covers the median with probability ≥ confidence. k = −1
    # (too few windows) falls back to the sample range.
    return max(min(k, (n - 1) // 2), 0)


def service_index(
    latency: ArrayLike,
    counts: ArrayLike,
    *,
    names: Sequence[str],
    confidence: float = 0.95,
    block: int = 10,
) -> Signature:
    """The signature of one period with the windows' common stretch taken out.

    Fits ``R_it = b_t·S_i`` (see the module docstring) by alternating weighted least squares,
    normalised to a mean stretch of 1: ``S_i`` is the type's latency under the period's typical
    conditions. The interval of each ``S_i`` is a t interval of its per-window values
    ``R_it / b_t`` pooled in blocks of ``block`` windows.

    Parameters
    ----------
    latency
        (windows × types) mean latency (s); NaN where the type had no transactions.
    counts
        (windows × types) transactions, the weights.
    names
        Type names, in column order.
    confidence
        Level of the intervals.
    block
        Consecutive windows per block.
    """
    r, w = _latency_counts(latency, counts, names)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    service = _fit_index(r, w)
    implied = _implied(r, w, service)
    k = r.shape[1]
    median, low, high = np.full(k, np.nan), np.full(k, np.nan), np.full(k, np.nan)
    seen = (w > 0).sum(axis=0).astype(np.int64)
    for j in range(k):
        mean, se, dof = _block_mean(implied[:, j], w[:, j], block)
        if not math.isfinite(mean):
            continue
        median[j] = mean
        half = float(t_dist.ppf(0.5 + confidence / 2, dof)) * se if dof > 0 else math.inf
        low[j], high[j] = mean - half, mean + half
    return Signature(tuple(names), median, low, high, seen, confidence)


def compare_service(
    latency: ArrayLike,
    counts: ArrayLike,
    before: ArrayLike,
    after: ArrayLike,
    *,
    names: Sequence[str],
    min_change: float = 0.1,
    confidence: float = 0.95,
    block: int = 10,
) -> tuple[SignatureChange, ...]:
    """Each type seen in both periods: its service time before and after with the common
    stretch of every window and the effect of the mix taken out (see the module docstring),
    and whether it changed.

    ``before`` and ``after`` are the row indices of the two periods (each in time order).
    ``changed`` when the Welch interval of the difference (block means of ``block`` windows)
    excludes 0 and the ratio after/before differs from 1 by at least ``min_change``; ``score``
    is the difference's t statistic and ``common`` is 1 (the common slow-down is out already).
    """
    r, w = _latency_counts(latency, counts, names)
    rows_b = np.asarray(before, dtype=np.intp).reshape(-1)
    rows_a = np.asarray(after, dtype=np.intp).reshape(-1)
    if min_change < 0:
        raise ValueError(f"min_change must be >= 0, got {min_change}")
    service = _fit_index(r[rows_b], w[rows_b])
    both = np.concatenate([rows_b, rows_a])
    implied = _implied(r[both], w[both], service, leave_out=True)
    early = np.arange(len(both)) < len(rows_b)
    out = []
    for j, name in enumerate(names):
        level = _weighted_mean(implied[early, j], w[rows_b, j])
        if not (math.isfinite(level) and level > 0):
            continue
        residual = implied[:, j] - _mix_effect(implied[:, j], w[both], early, j)
        mean_b, se_b, dof_b = _block_mean(residual[early], w[rows_b, j], block)
        mean_a, se_a, dof_a = _block_mean(residual[~early], w[rows_a, j], block)
        if not (math.isfinite(mean_b) and math.isfinite(mean_a)):
            continue
        diff = mean_a - mean_b
        se = math.hypot(se_b, se_a)
        dof = _welch_dof(se_b, dof_b, se_a, dof_a)
        quantile = float(t_dist.ppf(0.5 + confidence / 2, dof)) if dof > 0 else math.inf
        half = quantile * se
        score = diff / se if se > 0 else (math.copysign(math.inf, diff) if diff else 0.0)
        ratio = (level + diff) / level
        low, high = (level + diff - half) / level, (level + diff + half) / level
        changed = bool(abs(score) >= quantile and abs(ratio - 1.0) >= min_change)
        out.append(
            SignatureChange(name, level, level + diff, ratio, low, high, 1.0, changed, score)
        )
    return tuple(out)


def _latency_counts(
    latency: ArrayLike, counts: ArrayLike, names: Sequence[str]
) -> tuple[FloatArray, FloatArray]:
    r = np.array(latency, dtype=np.float64, ndmin=2)
    w = np.array(counts, dtype=np.float64, ndmin=2)
    if r.shape != w.shape:
        raise DataError(f"latency has shape {r.shape} but counts {w.shape}")
    if r.shape[1] != len(names):
        raise DataError(f"{len(names)} name(s) for {r.shape[1]} column(s) of latency")
    w = np.where(np.isfinite(r) & np.isfinite(w) & (w > 0), w, 0.0)
    return np.where(w > 0, r, 0.0), w


def _window_fit(r: FloatArray, w: FloatArray, service: FloatArray) -> FloatArray:
    """Per window, the weighted least-squares stretch ``b_t`` of ``R_it ≈ b_t S_i`` over the
    types it has (NaN where it has none)."""
    s = np.where(np.isfinite(service), service, 0.0)[None, :]
    w = np.where(np.isfinite(service)[None, :], w, 0.0)
    sxx, sxy = (w * s * s).sum(axis=1), (w * s * r).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        b: FloatArray = np.where(sxx > 0, sxy / sxx, np.nan)
    return b


def _fit_index(r: FloatArray, w: FloatArray, iterations: int = 50) -> FloatArray:
    """``S`` of ``R_it = b_t S_i`` by alternating least squares, normalised to a mean stretch
    of 1; NaN for a type never seen."""
    seen = w.sum(axis=0) > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        service = np.where(seen, (w * r).sum(axis=0) / w.sum(axis=0), np.nan)
    for _ in range(iterations):
        b = _window_fit(r, w, service)
        good = np.isfinite(b) & (b > 0)
        if not good.any():
            return service
        ww = w[good]
        num = (ww * b[good, None] * r[good]).sum(axis=0)
        den = (ww * b[good, None] ** 2).sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            new = np.where(seen & (den > 0), num / den, np.nan)
        done = np.allclose(new, service, rtol=1e-9, atol=0.0, equal_nan=True)
        service = new
        if done:
            break
    b = _window_fit(r, w, service)
    good = np.isfinite(b) & (b > 0)
    total = w[good].sum(axis=1)
    if not good.any() or total.sum() <= 0:
        return service
    # S' = c·S leaves the fit unchanged with b' = b/c: choose a mean stretch b' of 1
    out: FloatArray = float(np.average(b[good], weights=total)) * service
    return out


def _implied(
    r: FloatArray, w: FloatArray, service: FloatArray, *, leave_out: bool = False
) -> FloatArray:
    """Per window and type, ``R_it / b_t``: the type's service time the window implies; with
    ``leave_out`` the window's stretch comes from the other types only."""
    m, k = r.shape
    out = np.full((m, k), np.nan)
    if not leave_out:
        b = _window_fit(r, w, service)
    for j in range(k):
        if leave_out:
            others = w.copy()
            others[:, j] = 0.0
            b = _window_fit(r, others, service)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = r[:, j] / b
        out[:, j] = np.where((w[:, j] > 0) & np.isfinite(value) & (b > 0), value, np.nan)
    return out


def _mix_effect(
    values: FloatArray, counts: FloatArray, fitted_on: NDArray[np.bool_], j: int
) -> FloatArray:
    """What the mix explains of type ``j``'s implied service time: a weighted least-squares
    fit on the windows ``fitted_on`` of its values against the share of each type (all but
    one, and a constant), lightly ridged so that a period of few mixes does not extrapolate
    wildly, evaluated in every window (0 where it cannot be)."""
    total = counts.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total[:, None] > 0, counts / total[:, None], 0.0)
    design = np.column_stack([np.ones(len(values)), share[:, :-1]])
    ok = fitted_on & np.isfinite(values) & (counts[:, j] > 0)
    if ok.sum() <= design.shape[1]:
        out: FloatArray = np.zeros(len(values))
        return out
    weight = counts[ok, j]
    x, y = design[ok], values[ok]
    centre = np.average(x, axis=0, weights=weight)
    xc = x - centre
    gram = (xc * weight[:, None]).T @ xc
    ridge = 1e-2 * np.trace(gram) / gram.shape[0] * np.eye(gram.shape[0])
    ridge[0, 0] = 0.0  # the constant column is all zeros once centred
    beta = np.linalg.lstsq(
        gram + ridge, (xc * weight[:, None]).T @ (y - np.average(y, weights=weight)), rcond=None
    )[0]
    effect: FloatArray = (design - centre) @ beta
    return effect


def _weighted_mean(values: FloatArray, weights: FloatArray) -> float:
    ok = np.isfinite(values) & (weights > 0)
    return float(np.average(values[ok], weights=weights[ok])) if ok.any() else math.nan


def _block_mean(values: FloatArray, weights: FloatArray, block: int) -> tuple[float, float, int]:
    """Weighted mean of ``values``, its standard error from the means of blocks of ``block``
    consecutive windows, and the blocks' degrees of freedom (NaN, inf, 0 without data)."""
    ok = np.isfinite(values) & (weights > 0)
    if not ok.any():
        return math.nan, math.inf, 0
    mean = float(np.average(values[ok], weights=weights[ok]))
    means, mass = _blockwise(values, weights, ok, max(int(block), 1))
    if len(means) < 2:
        return mean, math.inf, 0
    share = mass / mass.sum()
    # variance of a weighted mean of block means: Σ share² · (spread of the blocks)
    spread = float(np.sum(mass * (means - mean) ** 2) / mass.sum()) * len(means) / (len(means) - 1)
    return mean, math.sqrt(spread * float(np.sum(share**2))), len(means) - 1


def _blockwise(
    values: FloatArray, weights: FloatArray, ok: NDArray[np.bool_], size: int
) -> tuple[FloatArray, FloatArray]:
    """Per block of ``size`` consecutive windows holding any ``ok`` one: the weighted mean of
    its ``ok`` values and their weight. Blocks with as many ``ok`` windows are summed as rows of
    one array (a row's sum is the sum numpy takes of it alone: the same numbers as a loop of
    ``np.average`` over the blocks, without the loop)."""
    rows = np.flatnonzero(ok)
    block = rows // size
    present, first, held = np.unique(block, return_index=True, return_counts=True)
    means, mass = np.empty(len(present)), np.empty(len(present))
    for n in np.unique(held):
        which = np.flatnonzero(held == n)
        at = rows[first[which, None] + np.arange(n)]
        w = weights[at]
        mass[which] = w.sum(axis=1)
        means[which] = np.multiply(values[at], w).sum(axis=1) / mass[which]
    return means, mass


def _welch_dof(se_a: float, dof_a: int, se_b: float, dof_b: int) -> float:
    """Welch–Satterthwaite degrees of freedom of a difference of two means."""
    if dof_a <= 0 or dof_b <= 0 or not (math.isfinite(se_a) and math.isfinite(se_b)):
        return 0.0
    num = (se_a**2 + se_b**2) ** 2
    den = se_a**4 / dof_a + se_b**4 / dof_b
    return num / den if den > 0 else math.inf
