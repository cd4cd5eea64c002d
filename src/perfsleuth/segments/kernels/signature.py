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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import binom, norm

from perfsleuth.errors import DataError

__all__ = ["Signature", "SignatureChange", "application_signature", "compare_signatures"]

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
