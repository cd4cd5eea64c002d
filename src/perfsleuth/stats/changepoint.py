"""Offline change-point detection after Berry & Hellerstein (1991): Fisher's optimal 2-partition,
applied hierarchically, each split tested against the distribution of T for optimally
partitioned AR(1) series (FPA, :mod:`perfsleuth.stats.fpa`).

Search and statistic are separate axes: :func:`find_change_points` is the paper's
FindChangePoints (figure 3); whether a split is significant is decided by a
:class:`SignificanceTest` (:class:`FPATest` by default, :class:`PaperTest` for the paper's fitted
α = .05 curve, :class:`FTest` for the F distribution the paper shows to be wrong).

Design choices (DESIGN §2.1, "beyond the paper")
------------------------------------------------
**Candidate.** ``two_partition`` minimises SSQ(left) + SSQ(right) over every split leaving at least
``min_segment`` observations on each side, in O(n): the data are centred (after subtracting the
first value, so constant input stays exactly constant), and the between-part sum of squares
``B(k) = n S_k² / (k (n − k))`` comes from prefix sums S of the centred data. The SSQs reported
and used for T are then recomputed directly from each part (two-pass), so a huge shift over
little noise does not lose the within-part SSQ to cancellation. Ties (B within a relative 1e-9 of
the best) go to the earliest split, which keeps results stable under rescaling.

**Autocorrelation.** Two estimates are computed for every candidate:

* ``phi`` — the lag-1 autocorrelation of the whole tested segment about its one mean: the
  estimate under the null hypothesis (no change), which the test uses. :class:`FPATest` looks the
  critical value up with ``phi_estimated=True``, i.e. calibrated for this estimator's small-sample
  bias and its correlation with T (:mod:`perfsleuth.stats.fpa`, "Estimated φ").
* ``phi_residual`` — the pooled lag-1 autocorrelation of the residuals about the two part means
  of the candidate split (the product straddling the split is left out). A level shift does not
  inflate it, so it is the better description of the noise, and it is reported alongside.

Why the test does not use the shift-free estimate: the optimal split is the one that removes the
most low-frequency variance, so under H0 the residual estimate is biased low exactly when T is
large. Plugged into the FPA table it gave false-positive rates of 8% (φ = .5), 12% (φ = .8) and
20% (φ = .9) at α = .05, n = 200, against 4.9%, 5.0% and 6.4% for the null estimate (6,000
simulated series each). The two are tied by an identity, ``phi ≈ phi_residual + (1 −
phi_residual)(1 − 1/T)``, so any test built from (T, phi_residual) is one built from (T, phi); a
residual test calibrated to size α had the same power as the null one in our simulations (one
shift, a short bump, a staircase; φ from 0 to .9). Estimating the nuisance parameter under H0 is
what keeps the size at α whatever φ is; the power lost to not knowing φ, which is large for
φ ≳ .8, remains. Other changes inside a tested segment still inflate ``phi`` (later work).
Measured false-positive rates at α = .05 with no change (2,000 AR(1) series per cell): .040–.059
for n ∈ {50, 200, 1000, 5000} and φ ∈ {0, .5, .8, .9}; .047–.072 at n = 20.

**False positives down the recursion.** ``alpha_spending="length"`` (default) tests a segment of
length n_s out of N at ``alpha · n_s / N``. Under "no change at all" only the first test can
reject, at α. With true changes, the segments on which a false split can happen are the null
segments, which are disjoint, so their α's add up to at most α: the chance of any false change
point stays near α however deep the recursion goes (a Bonferroni argument over data-dependent
segments, so approximate). ``alpha_spending="none"`` is the paper's rule (every test at α): with
k true changes it expects about (k + 1)·α false ones. Length spending makes short segments of very
long series harder to split; the FPA tail is extended exponentially for the small α this needs.
Measured (1,000 series, 3σ shifts): one change, P(any extra point) = .037 with length spending
against .081 with none; four changes, .147 against .317. What remains above α is mostly a
binary-segmentation artefact, not null segments: a first split a few observations off a true
change (possible when a segment holds several changes) leaves a short piece that is split again
next to it. Re-testing each point on the segment between its neighbours and pruning is the
natural next step (later work).

**Several metrics.** 2-D input (n × k) is partitioned jointly (sum of SSQs over columns). Columns
are first put on a common scale by a robust noise scale from first differences (median absolute
difference, which a level shift hardly moves), once for the whole series. The test uses the
one-dimensional FPA table with the largest per-column φ; the maximum over splits of a sum of
independent columns is less extreme than for one column, so this is conservative — very much so
(false-positive rate .002 at α = .05 for two columns), which costs power; a table with a
"columns" axis is the fix (later work).

**Degenerate input.** A constant segment has T = 1 (never significant); a split that leaves both
parts exactly constant while the whole is not has T = ∞ (always significant, p = 0). Series too
short to split (``n < max(2 · min_segment, 3)``) give no change points; NaN or ±inf are a
:class:`~perfsleuth.errors.DataError`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.stats import fpa

__all__ = [
    "Assessment",
    "ChangePoint",
    "ChangePoints",
    "FPATest",
    "FTest",
    "PaperTest",
    "Segment",
    "SignificanceTest",
    "Split",
    "find_change_points",
    "lag1_autocorrelation",
    "residual_lag1_autocorrelation",
    "two_partition",
]

FloatArray = NDArray[np.float64]
Method = Literal["fpa", "paper", "f"]
AlphaSpending = Literal["length", "none"]

_TIE = 1e-9  # relative tolerance under which two splits count as equally good


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Split:
    """Fisher's optimal 2-partition of one segment.

    ``index`` is the 0-based index (within the segment) of the first observation of the right
    part. ``statistic`` is T = SSQ(whole) / (SSQ(left) + SSQ(right)); the paper's D is
    ``ssq_within``.
    """

    index: int
    n: int
    ssq_whole: float
    ssq_left: float
    ssq_right: float
    statistic: float

    @property
    def ssq_within(self) -> float:
        return self.ssq_left + self.ssq_right


@dataclass(frozen=True, slots=True)
class Assessment:
    """A significance test's verdict ingredients: reject when statistic > critical_value."""

    critical_value: float
    p_value: float  # NaN when the test has no p-value (the paper's fitted curve)


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """One tested candidate.

    ``index`` is the first observation of the new segment. ``mean_before``/``mean_after`` (one
    value per column) are the means of the final segments either side; for a rejected candidate,
    of the two parts of its segment. ``start``/``stop`` bound the segment that was tested and
    ``alpha`` is the level it was tested at (after spending).
    """

    index: int
    statistic: float
    critical_value: float
    p_value: float
    alpha: float
    phi: float
    phi_residual: float
    level: int
    start: int
    stop: int
    mean_before: tuple[float, ...]
    mean_after: tuple[float, ...]

    @property
    def significant(self) -> bool:
        return self.statistic > self.critical_value


@dataclass(frozen=True, slots=True)
class Segment:
    """Observations ``start`` to ``stop - 1`` with their mean (one value per column)."""

    start: int
    stop: int
    mean: tuple[float, ...]

    @property
    def length(self) -> int:
        return self.stop - self.start


@dataclass(frozen=True, slots=True)
class ChangePoints:
    """Result of :func:`find_change_points`.

    ``indices`` are sorted 0-based indices, each the first observation of a new segment;
    ``points`` carry the evidence for each, in the same order; ``segments`` cover ``0..n``;
    ``rejected`` holds the last, non-significant candidate of every segment that was long enough
    to test (for plots and for asking "why not here?").
    """

    indices: tuple[int, ...]
    points: tuple[ChangePoint, ...]
    segments: tuple[Segment, ...]
    rejected: tuple[ChangePoint, ...]
    n: int
    dims: int
    method: str
    alpha: float
    min_segment: int


# --------------------------------------------------------------------------------------------
# Significance tests
# --------------------------------------------------------------------------------------------


@runtime_checkable
class SignificanceTest(Protocol):
    """Decides whether a candidate split is a change point.

    ``n`` is the tested segment's length, ``phi`` its lag-1 autocorrelation under H0, ``dims`` the
    number of columns, ``min_segment`` the search's smallest part (the null distribution of an
    optimal split depends on the split range).
    """

    @property
    def name(self) -> str: ...

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: int, min_segment: int
    ) -> Assessment: ...


@dataclass(frozen=True, slots=True)
class FPATest:
    """Simulated FPA critical values and p-values (the default); ``table=None`` uses the
    shipped table."""

    table: fpa.FPATable | None = None

    @property
    def name(self) -> str:
        return "fpa"

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: int, min_segment: int
    ) -> Assessment:
        table = fpa.load_table() if self.table is None else self.table
        return Assessment(
            table.critical_value(n, phi, alpha, min_segment, phi_estimated=True),
            table.p_value(statistic, n, phi, min_segment, phi_estimated=True),
        )


@dataclass(frozen=True, slots=True)
class PaperTest:
    """The paper's fitted curve, eq. (8): α = .05 only, no p-value, unrestricted split range."""

    @property
    def name(self) -> str:
        return "paper"

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: int, min_segment: int
    ) -> Assessment:
        if not math.isclose(alpha, 0.05):
            raise ValueError(
                f"the paper's critical values are for alpha = 0.05 only (asked {alpha:g}); "
                "use alpha=0.05 and alpha_spending='none' with method='paper'"
            )
        return Assessment(fpa.paper_critical_value(n, phi), math.nan)


@dataclass(frozen=True, slots=True)
class FTest:
    """(n − 2)(T − 1) ~ F(d, d(n − 2)): the paper's straw man, far too liberal here."""

    @property
    def name(self) -> str:
        return "f"

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: int, min_segment: int
    ) -> Assessment:
        return Assessment(
            fpa.f_critical_value(n, alpha, dims=dims), fpa.f_p_value(statistic, n, dims=dims)
        )


_TESTS: dict[str, SignificanceTest] = {"fpa": FPATest(), "paper": PaperTest(), "f": FTest()}


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


def _as_columns(values: ArrayLike, what: str = "values") -> FloatArray:
    """Validated float64 array of shape (n, k): 1-D input becomes one column."""
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{what} must be numeric: {exc}") from exc
    if x.ndim == 1:
        x = x[:, None]
    elif x.ndim != 2:
        raise DataError(f"{what} must be 1-D (one series) or 2-D (n × k), got {x.ndim}-D")
    if x.shape[1] == 0:
        raise DataError(f"{what} has no columns")
    bad = ~np.isfinite(x)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        kind = "NaN" if math.isnan(x[row, col]) else "an infinite value"
        where = f"index {row}" if x.shape[1] == 1 else f"row {row}, column {col}"
        raise DataError(f"{what} contain {kind} at {where}; drop or fill missing values first")
    return x


def _centre(x: FloatArray) -> FloatArray:
    # Subtracting the first row first keeps constant columns exactly zero (a mean of n copies
    # of 0.1 is not exactly 0.1), then centring makes the prefix sums small.
    xc: FloatArray = x - x[0]
    xc -= xc.mean(axis=0)
    return xc


def _ssq(part: FloatArray) -> float:
    d = part - part.mean(axis=0)
    return float(np.einsum("ij,ij->", d, d))


def _ratio(whole: float, within: float) -> float:
    if whole <= 0.0:
        return 1.0  # constant segment: no evidence of anything
    if within <= 0.0:
        return math.inf  # both parts constant, the whole is not: a perfect step
    return whole / within


def _partition(xc: FloatArray, min_segment: int) -> Split:
    """Optimal split of centred (n, k) data; the caller guarantees n >= 2 * min_segment."""
    n = xc.shape[0]
    lo, hi = min_segment, n - min_segment  # allowed values of k = size of the left part
    s = np.cumsum(xc[:hi], axis=0)[lo - 1 :]  # s[i] = sum of the first lo + i rows
    k = np.arange(lo, hi + 1, dtype=np.float64)
    between = np.einsum("ij,ij->i", s, s) * (n / (k * (n - k)))
    best = float(between.max())
    offset = int(np.argmax(between >= best * (1.0 - _TIE))) if best > 0.0 else 0
    index = lo + offset
    whole = float(np.einsum("ij,ij->", xc, xc))
    left, right = _ssq(xc[:index]), _ssq(xc[index:])
    return Split(index, n, whole, left, right, _ratio(whole, left + right))


def two_partition(x: ArrayLike, *, min_segment: int = 1) -> Split:
    """Fisher's optimal 2-partition of ``x`` (minimum total within-part SSQ), in O(n).

    ``x`` is 1-D, or 2-D (n × k) with the SSQs summed over columns — columns are used as given,
    so put them on a common scale first (:func:`find_change_points` does). Both parts have at
    least ``min_segment`` observations.

    >>> s = two_partition([95, 105, 510, 490])
    >>> s.index, s.ssq_within, s.statistic
    (2, 250.0, 641.0)
    """
    _check_min_segment(min_segment)
    data = _as_columns(x)
    n = data.shape[0]
    if n < max(2 * min_segment, 2):
        raise NotEnoughDataError(
            f"cannot split {n} observations into two parts of at least {min_segment}"
        )
    return _partition(_centre(data), min_segment)


def _lag1_columns(xc: FloatArray) -> FloatArray:
    num = np.einsum("ij,ij->j", xc[1:], xc[:-1])
    den = np.einsum("ij,ij->j", xc, xc)
    out: FloatArray = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return out


def _residual_lag1_columns(xc: FloatArray, index: int) -> FloatArray:
    e = np.empty_like(xc)
    e[:index] = xc[:index] - xc[:index].mean(axis=0)
    e[index:] = xc[index:] - xc[index:].mean(axis=0)
    num = np.einsum("ij,ij->j", e[1:], e[:-1]) - e[index] * e[index - 1]  # not across the split
    den = np.einsum("ij,ij->j", e, e)
    out: FloatArray = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return out


def lag1_autocorrelation(x: ArrayLike) -> float:
    """Sample lag-1 autocorrelation ``Σ (x_t − x̄)(x_{t+1} − x̄) / Σ (x_t − x̄)²`` of a 1-D series.

    A constant series gives 0. This is the estimate under "no change"; a level shift inflates it.
    """
    data = _as_columns(x)
    if data.shape[1] != 1:
        raise ValueError("lag1_autocorrelation takes a 1-D series")
    if data.shape[0] < 2:
        return 0.0
    return float(_lag1_columns(_centre(data))[0])


def residual_lag1_autocorrelation(x: ArrayLike, split: int) -> float:
    """Lag-1 autocorrelation of the residuals about the means of ``x[:split]`` and ``x[split:]``.

    The product straddling the split is left out, so a level shift at ``split`` does not inflate
    it. Under no change it is biased low at the optimal split (see the module docstring).
    """
    data = _as_columns(x)
    if data.shape[1] != 1:
        raise ValueError("residual_lag1_autocorrelation takes a 1-D series")
    if not 0 < split < data.shape[0]:
        raise ValueError(f"split must be in 1..{data.shape[0] - 1}, got {split}")
    return float(_residual_lag1_columns(_centre(data), split)[0])


def _noise_scale(x: FloatArray) -> FloatArray:
    """Per-column noise scale from first differences, robust to level shifts."""
    d = np.diff(x, axis=0)
    mad = np.median(np.abs(d - np.median(d, axis=0)), axis=0) * (1.4826 / math.sqrt(2.0))
    rms = np.sqrt(np.mean(d * d, axis=0) / 2.0)
    scale = np.where(mad > 0, mad, rms)  # mostly-flat columns (e.g. a clean step) have MAD 0
    return np.where(scale > 0, scale, 1.0)  # constant columns contribute nothing anyway


def _check_min_segment(min_segment: int) -> None:
    if isinstance(min_segment, bool) or not isinstance(min_segment, int | np.integer):
        raise ValueError(f"min_segment must be an integer, got {min_segment!r}")
    if min_segment < 1:
        raise ValueError(f"min_segment must be >= 1, got {min_segment}")


# --------------------------------------------------------------------------------------------
# Hierarchical search
# --------------------------------------------------------------------------------------------


def find_change_points(
    values: ArrayLike,
    *,
    alpha: float = 0.05,
    min_segment: int = 5,
    method: Method | SignificanceTest = "fpa",
    alpha_spending: AlphaSpending = "length",
    max_depth: int | None = None,
) -> ChangePoints:
    """Change points in the mean of a series (or of several series jointly).

    The paper's FindChangePoints: split a segment at its optimal 2-partition when the split is
    significant, then do the same to both parts (see the module docstring for the choices).

    Parameters
    ----------
    values
        1-D series, or 2-D (n × k) for k metrics sharing their change points. NaN or inf raise
        :class:`~perfsleuth.errors.DataError`.
    alpha
        False-positive rate of the whole search (with ``alpha_spending="length"``) or of each
        test (``"none"``).
    min_segment
        Smallest number of observations on either side of a change point.
    method
        ``"fpa"`` (simulated critical values, the default), ``"paper"`` (the paper's fitted
        α = .05 curve; needs ``alpha=0.05, alpha_spending="none"``), ``"f"`` (F distribution,
        for comparison only), or any :class:`SignificanceTest`.
    alpha_spending
        ``"length"``: test a segment of length n_s at ``alpha · n_s / n``; ``"none"``: at
        ``alpha`` (the paper).
    max_depth
        Deepest recursion level tested (0 = only the first split); ``None`` for no limit.

    Returns
    -------
    ChangePoints
        ``indices`` are 0-based, each the first observation of a new segment.

    Examples
    --------
    >>> find_change_points([95, 105, 510, 490], min_segment=1).indices
    (2,)
    """
    if not (isinstance(alpha, float | int) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    _check_min_segment(min_segment)
    if alpha_spending not in ("length", "none"):
        raise ValueError(f"alpha_spending must be 'length' or 'none', got {alpha_spending!r}")
    if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 0):
        raise ValueError(f"max_depth must be a non-negative integer or None, got {max_depth!r}")
    if isinstance(method, str):
        if method not in _TESTS:
            raise ValueError(f"method must be one of {', '.join(_TESTS)}, got {method!r}")
        test = _TESTS[method]
    elif isinstance(method, SignificanceTest):
        test = method
    else:
        raise ValueError(f"method must be a name or a SignificanceTest, got {method!r}")
    if test.name == "paper" and (not math.isclose(alpha, 0.05) or alpha_spending != "none"):
        raise ValueError(
            "method='paper' is the paper's alpha = 0.05 curve: "
            "pass alpha=0.05 and alpha_spending='none'"
        )

    x = _as_columns(values)
    n, dims = x.shape
    z = x / _noise_scale(x) if dims > 1 and n > 1 else x
    shortest = max(2 * min_segment, 3)

    accepted: list[ChangePoint] = []
    rejected: list[ChangePoint] = []
    stack = [(0, n, 0)] if n >= shortest else []
    while stack:
        start, stop, level = stack.pop()
        length = stop - start
        xc = _centre(z[start:stop])
        split = _partition(xc, min_segment)
        phi = float(_lag1_columns(xc).max())
        level_alpha = alpha * length / n if alpha_spending == "length" else float(alpha)
        verdict = test.assess(
            split.statistic,
            n=length,
            phi=phi,
            alpha=level_alpha,
            dims=dims,
            min_segment=min_segment,
        )
        cut = start + split.index
        point = ChangePoint(
            index=cut,
            statistic=split.statistic,
            critical_value=verdict.critical_value,
            p_value=verdict.p_value,
            alpha=level_alpha,
            phi=phi,
            phi_residual=float(_residual_lag1_columns(xc, split.index).max()),
            level=level,
            start=start,
            stop=stop,
            mean_before=_mean(x[start:cut]),
            mean_after=_mean(x[cut:stop]),
        )
        if not point.significant:
            rejected.append(point)
            continue
        accepted.append(point)
        if max_depth is None or level < max_depth:
            for a, b in ((cut, stop), (start, cut)):
                if b - a >= shortest:
                    stack.append((a, b, level + 1))

    accepted.sort(key=lambda p: p.index)
    bounds = [0, *(p.index for p in accepted), n]
    segments = tuple(Segment(a, b, _mean(x[a:b])) for a, b in itertools.pairwise(bounds) if b > a)
    # Report the levels either side as the final segmentation has them, not as the tested parts.
    points = tuple(
        dataclasses.replace(p, mean_before=segments[i].mean, mean_after=segments[i + 1].mean)
        for i, p in enumerate(accepted)
    )
    return ChangePoints(
        indices=tuple(p.index for p in points),
        points=points,
        segments=segments,
        rejected=tuple(sorted(rejected, key=lambda p: p.index)),
        n=n,
        dims=dims,
        method=test.name,
        alpha=float(alpha),
        min_segment=min_segment,
    )


def _mean(part: FloatArray) -> tuple[float, ...]:
    return tuple(float(v) for v in part.mean(axis=0))
