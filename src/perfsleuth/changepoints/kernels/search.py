"""Offline change-point detection after Berry & Hellerstein (1991): Fisher's optimal 2-partition,
applied hierarchically, each split tested against the distribution of T for optimally
partitioned AR(1) series (FPA, :mod:`perfsleuth.changepoints.kernels.fpa`).

Search and statistic are separate axes: :func:`find_change_points` is the paper's
FindChangePoints (figure 3); whether a split is significant is decided by a
:class:`SignificanceTest` (:class:`FPATest` by default, :class:`PaperTest` for the paper's fitted
α = .05 curve, :class:`FTest` for the F distribution the paper shows to be wrong).

Design choices (DESIGN §2.1, "beyond the paper")
------------------------------------------------
**Candidate.** ``two_partition`` minimises SSQ(left) + SSQ(right) over every split leaving at least
``min_size`` observations on each side, in O(n): the data are centred (after subtracting the
first value, so constant input stays exactly constant), and the between-part sum of squares
``B(k) = n S_k² / (k (n − k))`` comes from prefix sums S of the centred data. The SSQs reported
and used for T are then recomputed directly from each part (two-pass), so a huge shift over
little noise does not lose the within-part SSQ to cancellation. Ties (B within a relative 1e-9 of
the best) go to the earliest split, which keeps results stable under rescaling.

**Autocorrelation.** Two estimates are computed for every candidate:

* ``phi`` — the lag-1 autocorrelation of the whole tested segment about its one mean: the
  estimate under the null hypothesis (no change), which the test uses. :class:`FPATest` looks the
  critical value up with ``phi_estimated=True``, i.e. calibrated for this estimator's small-sample
  bias and its correlation with T (:mod:`perfsleuth.changepoints.kernels.fpa`, "Estimated φ").
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
φ ≳ .8, remains. Other changes inside a tested segment still inflate ``phi``: a staircase of
four 3σ shifts in 150 white-noise points has ``phi`` ≈ .9 and is never split. So with
``robust=True`` the test uses ``min(phi, bound)``, where ``bound`` is an upper confidence bound
(+2 SE) for φ from the lag-1 autocorrelation of the winsorised first differences, which a shift
barely touches (see ``_difference_phi_bound``). That staircase is then found 74% of the time
(0% before; 99% against 92% at n = 400), at a cost in size of at most +.02 (AR(1), n ∈ {30, 100,
300, 1000}, φ ∈ {0, .5, .8, .9}, 500 series each: .018–.108, the highest at φ = .9, n = 300,
against .018–.088 without the bound).
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
difference, which a level shift hardly moves), once for the whole series. The null distribution
of the joint T is simulated for k ∈ {1, 2, 3, 4, 8} independent AR(1) columns
(:mod:`perfsleuth.changepoints.kernels.fpa`, "Several columns"), looked up with the largest
per-column φ. Real metrics are neither independent nor equally persistent, and the k-column table is
then too liberal (.19 for φ = (.9, 0), .21 for four columns with noise correlated .5, at α = .05).
So each tested segment is given an *effective* number of columns, ``(tr Ω)² / tr(Ω²)`` with Ω the
covariance of the scaled columns weighted by their long-run variance factors, and the critical log(T
− 1) is interpolated in 1/k between the neighbouring tables. Measured by the table's author at n ∈
{200, 1000}: .027–.058 for equal φ and .002–.077 across unequal φ and correlated noise (the 1-D
table alone: .001–.03, i.e. very conservative).

**Operational series (``robust=True``, the default).** The search is the seeded one of
:mod:`perfsleuth.changepoints.kernels.seeded` (every point judged between its neighbours:
significant, large enough, worth its cost); nothing is clipped, spikes stay in the data and are
listed (``ChangePoints.spikes``). The paragraph below describes the previous default search
(outliers clipped, the paper's recursion), whose measurements it gives. A detected cycle is
removed; a trend is removed when the slope *inside* the segments is
significant, choosing between "no trend" and "trend" by BIC; finally change points whose shift is
below ``min_effect`` noise standard deviations are dropped (:mod:`perfsleuth.stats.robust` says
why each step keeps level shifts). Measured at n = 500, α = .05, 200 series each, no change:
false-positive rate .025 (white noise), .045 (AR(1) φ = .5), .025 (trend), .055 (square cycle),
.04 (sine cycle), .07 (2% spikes of 20σ), against 1.0 for the trend and .125 for the spikes with
the paper's search on the raw values. ``robust=False, min_effect=0`` is the paper's search.

**Skewed noise (``robust=True``).** Response times and queue lengths are right-skewed (M/M/1
response times are exponential, skewness 2). The optimal split then often cuts off a short burst of
tail values near an end of the series, where T is driven by a few observations and the Gaussian
table's tail is too light: on M/M/1 response times (λ = 1, ρ ∈ {.2, .5, .8}, no change) the default
search at α = .05 found a change in .09–.17 of the series at N = 100 and .11–.33 at N = 1000. So the
robust search computes the split and T on each tested segment after a Yeo–Johnson power transform
fitted by maximum likelihood (``_symmetrised``), while φ still comes from the untransformed segment.
For Gaussian noise the fitted transform is nearly the identity, so the table applies unchanged;
being smooth and monotone it keeps the size of a shift. (Ranks, tried first, bound T by ≈ 2.75
whatever the step, below the critical value in persistent noise: a 10σ step at n = 100, φ = .9 was
found in 2 of 20 series.) φ is taken from the untransformed values because a transform of
non-Gaussian, nonlinear dependence lowers the lag-1 autocorrelation more than the persistence
(normal scores with φ taken from them: .48 at N = 1000, ρ = .8). Measured with the defaults on the
series of ``scripts/reproduce_berry_hellerstein.py`` (400 per cell; before → after): N = 100: .090 →
.040, .138 → .048, .172 → .072 for ρ = .2, .5, .8; N = 1000: .107 → .015, .217 → .080, .325 → .223.
At equal empirical size (.05; N = 1000, ρ = .2, first split) the transformed test is also the more
powerful: .22 against .12 for Δρ = .1, .89 against .68 for Δρ = .3. AR(1) size: .020–.082 against
.020–.094 (n ∈ {50, 200, 1000}, φ ∈ {0, .5, .8, .9}, 500–1,000 series each) and .033–.046 against
.040–.090 at n = 20; exponential and log-normal white noise (n = 500) .035 → .010 and .14 → .045, 2%
spikes of 20σ .06 → .025. Unchanged within simulation noise: power on Gaussian shifts, the
staircase, several columns. What remains at N = 1000, ρ ≥ .5 is persistence that AR(1) does not
describe: the M/M/1 response-time autocorrelation decays more slowly than φᵏ (ρ = .8: lag 1 .96, lag
50 .27 against .14), and the shift-robust bound on φ above, derived for AR(1), is then biased low
(it falls below the null estimate in a third of these series). Without the bound the rates are .052
and .105, but power on shifts drops (.76 → .64 for Δρ = .3); long-run-variance estimates of φ
(AR(p), variance–time) control the size, but a shift inflates them as much as it inflates φ.

**Degenerate input.** A constant segment has T = 1 (never significant); a split that leaves both
parts exactly constant while the whole is not has T = ∞ (always significant, p = 0). Series too
short to split (``n < max(2 · min_size, 3)``) give no change points; NaN or ±inf are a
:class:`~perfsleuth.errors.DataError`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar, overload, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perfsleuth.blas import one_blas_thread
from perfsleuth.changepoints.kernels import fpa, grid, kinks, seeded, trend_steps
from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.stats import robust as robust_mod

__all__ = [
    "Assessment",
    "ChangePoint",
    "ChangePoints",
    "FPATest",
    "FTest",
    "PaperTest",
    "Segment",
    "SignificanceTest",
    "SpikeRun",
    "Split",
    "find_change_points",
    "lag1_autocorrelation",
    "residual_lag1_autocorrelation",
    "two_partition",
]

FloatArray = NDArray[np.float64]
_SplitIndex = int | NDArray[np.intp]  # one split's, or many splits' at once
Fit = tuple[FloatArray, int]  # a description's residuals (n × columns) and parameter count
_Indexed = Mapping[int, float] | FloatArray  # prefix sums: an array, or its values at some indices
Method = Literal["fpa", "paper", "f"]
AlphaSpending = Literal["length", "none"]
Missing = Literal["error", "drop"]

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
    ``alpha`` is the level it was tested at (after spending). ``shift`` is the jump of the level
    in the adjusted series (cycle and trend removed; per column) and ``effect``
    the largest ``|shift|`` in noise standard deviations (robust σ of the residuals about the
    segment means). ``spread_before``/``spread_after`` are the standard deviations of the raw
    values in the final segments either side. With ``robust``, ``statistic`` is T of the tested
    segment after its skewness-removing transform.

    ``kind`` is ``"level"`` (the mean jumps) or ``"slope"`` (the growth rate changes, the line
    stays continuous: :mod:`perfsleuth.changepoints.kernels.kinks`). A slope point has
    ``slope_before``/``slope_after`` (per reading, in the series' units), ``shift`` 0,
    ``statistic``/``critical_value`` its z² and the kink table's bar, and ``effect`` how far
    the slope change moves the line over its shorter side, in noise σ. A level and a slope
    point at the same index are a crash where the growth changes (Perron's model C: the level
    jumps and the segments either side each have their own line): there too ``level_at`` and
    ``shift`` are the model's value at the point and its jump, and :attr:`before_after` the
    level just before and after it (a crash of 40 in growth of 2 a reading: the means rose).

    ``scale`` is where the point was found: ``"linear"`` (the series' own values) or
    ``"log"`` (their logarithm, for a positive series growing by a rate: the detector keeps
    the description that explains the values better). On ``"log"`` a level point is a
    relative shift of the growing level: ``level_at`` is the model's value at the point and
    ``shift`` its jump there, both in the series' units, and :attr:`before_after` gives the
    level just before and after the point (not the segment means, which the growth moves);
    a slope point's ``slope_before``/``slope_after`` are growth *rates* per reading (0.02: +2%
    a reading).
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
    shift: tuple[float, ...] = ()
    effect: float = math.nan
    spread_before: tuple[float, ...] = ()
    spread_after: tuple[float, ...] = ()
    strength: float = math.nan
    kind: Literal["level", "slope"] = "level"
    slope_before: tuple[float, ...] = ()
    slope_after: tuple[float, ...] = ()
    scale: Literal["linear", "log"] = "linear"
    level_at: tuple[float, ...] = ()

    @property
    def significant(self) -> bool:
        return self.statistic > self.critical_value

    @property
    def before_after(self) -> tuple[float, float]:
        """What changed, in the first column: the means (a level point) or the growth per
        reading (a slope point); on the log scale and at a break, the level just before and
        after a level point."""
        if self.kind == "slope":
            return self.slope_before[0], self.slope_after[0]
        if self.level_at:
            after, jump = self.level_at[0], self.shift[0]
            before = after - jump
            # a line from 0 (idle readings, then growth): its value there is 0, not rounding
            if abs(before) <= grid.float_sigma(max(abs(after), abs(jump))):
                before = 0.0
            return before, after
        return self.mean_before[0], self.mean_after[0]


@dataclass(frozen=True, slots=True)
class Segment:
    """Observations ``start`` to ``stop - 1`` with their mean (one value per column)."""

    start: int
    stop: int
    mean: tuple[float, ...]

    @property
    def length(self) -> int:
        return self.stop - self.start


DEFAULT_TOP_SPIKES = 3  # spike runs per series reported as findings, the largest


@dataclass(frozen=True, slots=True)
class SpikeRun:
    """Spikes close together: observations ``start`` to ``stop - 1`` hold ``count`` spikes, no
    two consecutive ones more than ``min_size`` apart. ``index`` is the most extreme, ``size``
    its distance from the model in robust noise σ of its segment (on the symmetrised scale, as
    spikes are judged); where residuals are tied (``_scaled_distance``: at least half at one
    value, or a quarter at a lattice's mode), it may be the normal quantile of its tail
    probability, σ of a normal reading as rare."""

    start: int
    stop: int
    index: int
    size: float
    count: int


@dataclass(frozen=True, slots=True)
class ChangePoints:
    """Result of :func:`find_change_points`.

    ``indices`` are sorted 0-based indices, each the first observation of a new segment;
    ``points`` carry the evidence for each, in index order: one point an index, but two at a
    crash where the growth changes, a level and a slope point; ``segments`` cover ``0..n``;
    ``rejected`` holds, for the paper's search (``robust=False``), the last, non-significant
    candidate of every segment that was long enough to test and the significant ones dropped by
    the effect-size floor; for the default search, every candidate it dropped, judged on its
    last segment (for plots and for asking "why not here?"). With ``robust``: ``periods`` are
    the removed cycles (observations), shortest first, and ``period`` the longest of them or
    None, ``spikes`` the observations far from the model (kept in the data; ``outliers`` counts
    them) and ``spike_runs`` the same spikes grouped into runs, largest first, ``trend`` the
    removed slope per observation (per column; 0 when none).
    ``fitted`` (n × dims) is the model in the series' units: segment levels plus trend plus
    cycle (NaN at the rows ``missing="drop"`` left out). ``scale`` is the scale of that model:
    ``"linear"``, or ``"log"`` when a positive one-column series with a trend is better
    described on the logarithm of its values (a growth by a rate: levels are relative,
    ``trend`` is then the growth rate per reading, e^slope − 1, and the cycle multiplies).
    """

    indices: tuple[int, ...]
    points: tuple[ChangePoint, ...]
    segments: tuple[Segment, ...]
    rejected: tuple[ChangePoint, ...]
    n: int
    dims: int
    method: str
    alpha: float
    min_size: int
    robust: bool = False
    min_effect: float = 0.0
    spikes: tuple[int, ...] = ()
    periods: tuple[int, ...] = ()
    trend: tuple[float, ...] = ()
    fitted: FloatArray | None = dataclasses.field(default=None, compare=False, repr=False)
    min_relative_change: float = 0.0
    penalty: float = 0.0
    spike_runs: tuple[SpikeRun, ...] = ()
    scale: Literal["linear", "log"] = "linear"

    @property
    def period(self) -> int | None:
        """The longest cycle removed (observations), or None."""
        return self.periods[-1] if self.periods else None

    @property
    def outliers(self) -> int:
        """How many spikes the series has (none is clipped: they stay in every mean)."""
        return len(self.spikes)

    def ranked(self) -> tuple[ChangePoint, ...]:
        """The change points, largest effect first."""
        return tuple(sorted(self.points, key=lambda p: (-p.effect, p.index)))

    def notable_spikes(self, top: int = DEFAULT_TOP_SPIKES) -> tuple[SpikeRun, ...]:
        """The ``top`` largest spike runs apart from every change point (none within
        ``min_size`` readings): a step leaves its worst-fitted readings at its edge, and its
        change point already shows them (on NAB 16 of the 42 largest two runs per series)."""
        apart = [
            run
            for run in self.spike_runs
            if not any(run.start - self.min_size <= i <= run.stop - 1 + self.min_size
                       for i in self.indices)
        ]  # fmt: skip
        return tuple(apart[:top])


def _starts(points: Sequence[ChangePoint]) -> tuple[int, ...]:
    """The segment starts of ``points`` (sorted by index): a level and a slope point at one
    reading (a break, :func:`_breaks`) start one segment."""
    return tuple(dict.fromkeys(p.index for p in points))


# --------------------------------------------------------------------------------------------
# Significance tests
# --------------------------------------------------------------------------------------------


@runtime_checkable
class SignificanceTest(Protocol):
    """Decides whether a candidate split is a change point.

    ``n`` is the tested segment's length, ``phi`` its lag-1 autocorrelation under H0, ``dims`` the
    number of columns, ``min_size`` the search's smallest part (the null distribution of an
    optimal split depends on the split range).
    """

    @property
    def name(self) -> str: ...

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: float, min_size: int
    ) -> Assessment: ...


@dataclass(frozen=True, slots=True)
class FPATest:
    """Simulated FPA critical values and p-values (the default); ``table=None`` uses the
    shipped table."""

    table: fpa.FPATable | None = None
    phi_estimated: bool = True  # φ is the tested segment's own estimate (False: φ is known)

    @property
    def name(self) -> str:
        return "fpa"

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: float, min_size: int
    ) -> Assessment:
        est = self.phi_estimated
        if self.table is not None or dims <= 1:
            table = fpa.load_table() if self.table is None else self.table
            return Assessment(
                *table.critical_and_p_value(statistic, n, phi, alpha, min_size, phi_estimated=est)
            )
        # Between tabulated column counts, log(T − 1) and log p are interpolated in 1/k.
        lo = fpa.table_dims(math.floor(dims))
        hi = min((k for k in fpa.DIMS_GRID if k >= dims), default=lo)
        w = 0.0 if hi == lo else (1 / lo - 1 / dims) / (1 / lo - 1 / hi)
        ends = [
            fpa.load_table(k).critical_and_p_value(
                statistic, n, phi, alpha, min_size, phi_estimated=est
            )
            for k in (lo, hi)
        ]
        crit, pval = [c for c, _ in ends], [p for _, p in ends]
        return Assessment(
            1.0 + math.exp((1 - w) * math.log(crit[0] - 1) + w * math.log(crit[1] - 1)),
            _log_mix(pval[0], pval[1], w),
        )

    def assess_many(
        self, requests: Sequence[tuple[float, int, float, float]], *, dims: float, min_size: int
    ) -> list[Assessment]:
        """:meth:`assess` of many (T, n, φ, α), the same verdicts: one table's curves
        interpolated at once (:meth:`fpa.FPATable.critical_and_p_values`)."""
        if self.table is None and dims > 1:
            return [
                self.assess(t, n=n, phi=phi, alpha=alpha, dims=dims, min_size=min_size)
                for t, n, phi, alpha in requests
            ]
        table = fpa.load_table() if self.table is None else self.table
        looked_up = table.critical_and_p_values(
            requests, min_size, phi_estimated=self.phi_estimated
        )
        return [Assessment(*verdict) for verdict in looked_up]


def _assessed(
    test: SignificanceTest,
    requests: Sequence[tuple[float, int, float, float]],
    dims: float,
    min_size: int,
) -> list[Assessment]:
    """``test``'s verdicts on many (T, n, φ, α): at once where the test can look them up so
    (the FPA table's), else one by one."""
    if isinstance(test, FPATest):
        return test.assess_many(requests, dims=dims, min_size=min_size)
    return [
        test.assess(t, n=n, phi=phi, alpha=alpha, dims=dims, min_size=min_size)
        for t, n, phi, alpha in requests
    ]


def _log_mix(a: float, b: float, w: float) -> float:
    if a <= 0.0 or b <= 0.0:
        return (1 - w) * a + w * b
    return math.exp((1 - w) * math.log(a) + w * math.log(b))


@dataclass(frozen=True, slots=True)
class PaperTest:
    """The paper's fitted curve, eq. (8): α = .05 only, no p-value, unrestricted split range."""

    @property
    def name(self) -> str:
        return "paper"

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: float, min_size: int
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
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: float, min_size: int
    ) -> Assessment:
        return Assessment(
            fpa.f_critical_value(n, alpha, dims=round(dims)),
            fpa.f_p_value(statistic, n, dims=round(dims)),
        )


_TESTS: dict[str, SignificanceTest] = {"fpa": FPATest(), "paper": PaperTest(), "f": FTest()}


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


def _as_columns(values: ArrayLike, what: str = "values", allow_nan: bool = False) -> FloatArray:
    """Validated float64 array of shape (n, k): 1-D input becomes one column. ``allow_nan``:
    NaN (a missing reading) passes; ±inf never does."""
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
    if allow_nan:
        bad &= ~np.isnan(x)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        kind = "NaN" if math.isnan(x[row, col]) else "an infinite value"
        where = f"index {row}" if x.shape[1] == 1 else f"row {row}, column {col}"
        hint = " (or pass missing='drop')" if kind == "NaN" and what == "values" else ""
        raise DataError(
            f"{what} contain {kind} at {where}; drop or fill missing values first{hint}"
        )
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


def _paper_terms(
    sums: tuple[FloatArray, FloatArray, FloatArray], a: _SplitIndex, i: _SplitIndex, b: _SplitIndex
) -> tuple[Any, Any, Any]:
    """The paper's sums of squares about [a, b)'s mean (whole) and about each part's at ``i``
    (within), and the numerator of the segment's lag-1 autocorrelation under "no change", from
    the prefix sums of one column: scalars for int indices, arrays for index arrays (the same
    operations, so the same bits)."""
    ps, ps2, lag = sums
    length = b - a
    total = ps[b, 0] - ps[a, 0]
    mean = total / length
    whole = ps2[b, 0] - ps2[a, 0] - total * mean
    left = ps[i, 0] - ps[a, 0]
    right = total - left
    within = whole - (left * left / (i - a) + right * right / (b - i) - total * mean)
    num = (
        lag[b - 1, 0] - lag[a, 0]
        - mean * ((ps[b - 1, 0] - ps[a, 0]) + (ps[b, 0] - ps[a + 1, 0]))
        + (length - 1) * mean * mean
    )  # fmt: skip
    return whole, within, num


def _paper_statistics_1d(
    sums: tuple[FloatArray, FloatArray, FloatArray],
    a: NDArray[np.intp],
    i: NDArray[np.intp],
    b: NDArray[np.intp],
) -> tuple[FloatArray, FloatArray]:
    """``_Practical.run``'s ``paper_statistic_1d`` at many splits at once: the paper's T at
    each ``i`` of [a, b) and the segment's lag-1 autocorrelation under "no change"."""
    whole, within, num = _paper_terms(sums, a, i, b)
    positive = whole > 0
    phi = np.where(positive, num / np.where(positive, whole, 1.0), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(positive, np.where(within > 0, whole / within, math.inf), 1.0)  # _ratio
    return t, phi


def _partition(xc: FloatArray, min_size: int) -> Split:
    """Optimal split of centred (n, k) data; the caller guarantees n >= 2 * min_size."""
    n = xc.shape[0]
    lo, hi = min_size, n - min_size  # allowed values of k = size of the left part
    s = np.cumsum(xc[:hi], axis=0)[lo - 1 :]  # s[i] = sum of the first lo + i rows
    k = np.arange(lo, hi + 1, dtype=np.float64)
    between = np.einsum("ij,ij->i", s, s) * (n / (k * (n - k)))
    best = float(between.max())
    offset = int(np.argmax(between >= best * (1.0 - _TIE))) if best > 0.0 else 0
    index = lo + offset
    whole = float(np.einsum("ij,ij->", xc, xc))
    left, right = _ssq(xc[:index]), _ssq(xc[index:])
    return Split(index, n, whole, left, right, _ratio(whole, left + right))


def two_partition(x: ArrayLike, *, min_size: int = 1) -> Split:
    """Fisher's optimal 2-partition of ``x`` (minimum total within-part SSQ), in O(n).

    ``x`` is 1-D, or 2-D (n × k) with the SSQs summed over columns — columns are used as given,
    so put them on a common scale first (:func:`find_change_points` does). Both parts have at
    least ``min_size`` observations.

    >>> s = two_partition([95, 105, 510, 490])
    >>> s.index, s.ssq_within, s.statistic
    (2, 250.0, 641.0)
    """
    _check_min_size(min_size)
    data = _as_columns(x)
    n = data.shape[0]
    if n < max(2 * min_size, 2):
        raise NotEnoughDataError(
            f"cannot split {n} observations into two parts of at least {min_size}"
        )
    return _partition(_centre(data), min_size)


_SYMMETRISE_FIT_POINTS = 4096  # λ is fitted on at most about this many evenly spaced points
_LAMBDA_MIN, _LAMBDA_MAX = -1.0, 3.0  # Yeo–Johnson λ: no stronger than a reciprocal on either tail


def _symmetrised(
    xc: FloatArray, unit: Callable[[FloatArray, int], float] | None = None
) -> FloatArray:
    """Per column, the Yeo–Johnson power transform with λ fitted by maximum likelihood, centred
    and scaled back to the column's standard deviation.

    The column is first standardised by its median and its typical spread (``unit(column,
    step)``, default :func:`_typical_spread`; so the result does not depend on the series'
    units or offset; `benchmarks/changepoints_fragments.py` tries other units).
    For Gaussian noise the fitted λ is ≈ 1 and the transform nearly the identity, so the
    Gaussian FPA table still applies; for right-skewed
    noise (response times, queue lengths) it shortens the long tail that the optimal split
    otherwise cuts off as a "change" (module docstring, "Skewed noise"). Being smooth and
    monotone it keeps the size of a shift, unlike ranks, whose T cannot exceed ≈ 2.75 however
    large the step (below the critical value in persistent noise). Keeping each column's
    standard deviation keeps the weights the joint search gives the columns.
    """
    unit = unit or _typical_spread
    out = np.zeros_like(xc)
    step = max(1, xc.shape[0] // _SYMMETRISE_FIT_POINTS)
    for j in range(xc.shape[1]):
        column = xc[:, j]
        spread = float(np.std(column))
        if spread <= 0.0 or not np.any(column != column[0]):
            continue  # constant: stays exactly zero
        z = (column - robust_mod.median(column)) / (unit(column, step) or spread)
        # For λ < 0 the transform squeezes everything above the median under a ceiling of
        # 1/|λ| and stretches what lies below: fitted λ = −10 on a latency series with bursts
        # of slow queries, small moves among its fast values became two false change points;
        # fitted λ = −3 on weekly case counts of 0–3, an outbreak of 14–47 fitted under the
        # ceiling. So λ stops at the reciprocal (−1), the end of Tukey's ladder of powers,
        # and at its mirror image on the other tail (3).
        lam = min(max(_yeojohnson_lambda(z[::step]), _LAMBDA_MIN), _LAMBDA_MAX)
        y = _yeojohnson(z, lam)
        y -= y.mean()
        size = float(np.std(y))
        if size > 0.0 and math.isfinite(size):
            out[:, j] = y * (spread / size)
        else:
            out[:, j] = column
    return out


def _yeojohnson_lambda(x: FloatArray) -> float:
    """``scipy.stats.yeojohnson_normmax(x)`` (scipy 1.17), the same bits in an eighth of the
    time: the same bounds and bounded minimisation of the same negative log-likelihood,
    whose parts that do not depend on λ are computed once (scipy's goes through its array-API
    and NaN-policy wrappers every evaluation: 4.4 ms of a search's fit on 4,096 points, six
    times a 10⁵ search). A test pins it to scipy's."""
    from scipy import optimize

    with np.errstate(invalid="ignore"):
        if not np.all(np.isfinite(x)):
            raise ValueError("Yeo-Johnson input must be finite.")
        if np.all(x == 0):
            return 1.0
        info = np.finfo(np.float64)
        # scipy's bounds: the transform of 20 times the largest value stays within half the
        # float exponent range
        log1p_max_x = np.log1p(20 * np.max(np.abs(x)))
        log_eps = np.log(info.eps)
        lb = (np.log(info.tiny) - log_eps) / 2 / log1p_max_x
        ub = (np.log(info.max) + log_eps) / 2 / log1p_max_x
        if np.all(x < 0):
            lb, ub = 2 - ub, 2 - lb
        elif np.any(x < 0):
            lb, ub = max(2 - ub, lb), min(2 - lb, ub)
        pos = x >= 0
        up, down = np.log1p(x[pos]), np.log1p(-x[~pos])
        jacobian = np.sum(np.sign(x) * np.log1p(np.abs(x)), axis=0)
        n = x.shape[0]

        def negative_llf(lmb: float) -> FloatArray:
            y = np.zeros_like(x, dtype=np.float64)
            y[pos] = up if abs(lmb) < info.eps else np.expm1(lmb * up) / lmb
            y[~pos] = -np.expm1((2 - lmb) * down) / (2 - lmb) if abs(lmb - 2) > info.eps else -down
            sigma = np.var(y, axis=0)
            log_sigma = np.log(sigma) if sigma >= info.smallest_normal else -np.inf
            llf = np.asarray(-n / 2 * log_sigma + (lmb - 1) * jacobian)
            llf[np.isinf(llf)] = -np.inf
            return -llf

        return float(optimize.fminbound(negative_llf, lb, ub, xtol=1.48e-08))


def _yeojohnson(x: FloatArray, lam: float) -> FloatArray:
    """``scipy.stats.yeojohnson(x, lmbda=lam)`` (scipy 1.17) of a float column: the same
    operations, without the array-API indexing wrappers that cost half its time (a search
    transforms every column once; a test pins it to scipy's)."""
    eps = np.finfo(np.float64).eps
    out = np.zeros_like(x, dtype=np.float64)
    pos = x >= 0
    if abs(lam) < eps:
        out[pos] = np.log1p(x[pos])
    else:  # ((x + 1) ** λ − 1) / λ, stably
        out[pos] = np.expm1(lam * np.log1p(x[pos])) / lam
    neg = ~pos
    if abs(lam - 2) > eps:
        out[neg] = -np.expm1((2 - lam) * np.log1p(-x[neg])) / (2 - lam)
    else:
        out[neg] = -np.log1p(-x[neg])
    return out


_GUARD_SUBSAMPLES = 5  # interleaved subsamples whose median spread no single reading sets
_GUARD_MIN_READINGS = 8  # readings each of them needs


def _typical_spread(column: FloatArray, step: int) -> float:
    """The median of the standard deviations of the ``step`` interleaved subsamples
    ``column[j::step]`` (λ is fitted on one of them): the spread of ``column`` when it has no
    gross outliers, but not set by a few values, which sit in a few subsamples (median of
    means, applied to the variance). The plain standard deviation of a 10⁶-point latency
    series was 799 MADs, set by two values 7·10⁵ times the median; in that unit the bulk spans
    ±0.001, where every admissible λ is linear, and 530 ordinary spikes became segments.

    Under five subsamples the median is no guard (of one, it is the plain standard deviation):
    one reading 3,000 σ up among 200 set it, the bulk spanned a sliver, and the reading, some
    200 bulk σ after the transform, hid a step of 4 σ beside it in 40 of 40 series
    (`benchmarks/changepoints_gross_spike.py`). So the unit is at most twice the median over
    five subsamples: it bound 2 of the 213 such transforms the public corpora's searches fit,
    and from five subsamples on the median is never above it. Capped, not switched, the unit
    stays continuous in the readings."""
    spread = _median_subsample_std(column, step)
    count = min(max(step, _GUARD_SUBSAMPLES), column.size // _GUARD_MIN_READINGS)
    if count <= step or count < 3:
        return spread
    guard = _median_subsample_std(column, count)
    return min(spread, 2.0 * guard)


def _median_subsample_std(column: FloatArray, count: int) -> float:
    """The median of the standard deviations of ``column[j::count]``, j < ``count`` (the
    readings past the last whole round left out)."""
    if count == 1:
        return float(np.std(column))
    blocks = column[: column.size // count * count].reshape(-1, count)
    return float(np.median(np.std(blocks, axis=0)))


def _lag1_columns(xc: FloatArray) -> FloatArray:
    num = np.einsum("ij,ij->j", xc[1:], xc[:-1])
    den = np.einsum("ij,ij->j", xc, xc)
    out: FloatArray = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return out


_PHI_BOUND_SE = 2.0  # standard errors added to the difference-based φ (a one-sided 97.7% bound)


def _difference_phi_bound(xc: FloatArray) -> FloatArray:
    """Per column, an upper confidence bound for φ that level shifts do not inflate.

    For AR(1) noise the first differences have lag-1 autocorrelation ``−(1 − φ)/2``, so
    ``φ = 1 + 2 ρ_d``; a shift is a single large difference, winsorised away (5 robust σ)
    before ρ_d is estimated. Its standard error is about ``1.41/√n`` (Bartlett), twice that of
    the usual estimate, so the bound adds two of them: the test uses ``min(r, bound)``, which
    under no change is the usual estimate r except in the ~2% of series where the bound falls
    below it, and which a large shift, which drives r towards 1, cannot inflate.
    """
    d = np.diff(xc, axis=0)
    if d.shape[0] < 3:
        return np.ones(xc.shape[1])
    centre = np.median(d, axis=0)
    spread = np.array([robust_mod.robust_scale(d[:, j]) for j in range(d.shape[1])])
    d = np.clip(d, centre - 5 * spread, centre + 5 * spread)
    d = d - d.mean(axis=0)
    num = np.einsum("ij,ij->j", d[1:], d[:-1])
    den = np.einsum("ij,ij->j", d, d)
    rho = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    bound: FloatArray = 1.0 + 2.0 * rho + _PHI_BOUND_SE * 1.41 / math.sqrt(xc.shape[0])
    return bound


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


def _effective_columns(xc: FloatArray) -> float:
    """How many independent columns the centred segment is worth: ``(tr Ω)² / tr(Ω²)``.

    Ω is the columns' covariance with each column's long-run variance factor
    ``√((1 + r) / (1 − r))`` applied (r its lag-1 autocorrelation), so correlated columns, or
    one column much more persistent than the others, count as fewer. Between 1 and the number
    of columns.
    """
    n, k = xc.shape
    cov = xc.T @ xc / n
    var = np.diag(cov)
    if not np.all(var > 0):
        return float(max(1, int(np.count_nonzero(var > 0))))
    r = np.clip(np.einsum("ij,ij->j", xc[1:], xc[:-1]) / (n * var), -0.9, 0.99)
    f = np.sqrt((1 + r) / (1 - r))
    omega = cov * np.outer(f, f)
    ratio = float(np.trace(omega) ** 2 / np.sum(omega * omega))
    return min(float(k), max(1.0, ratio))


def _noise_scale(x: FloatArray) -> FloatArray:
    """Per-column noise scale from first differences, robust to level shifts."""
    d = np.diff(x, axis=0)
    mad = np.median(np.abs(d - np.median(d, axis=0)), axis=0) * (1.4826 / math.sqrt(2.0))
    rms = np.sqrt(np.mean(d * d, axis=0) / 2.0)
    scale = np.where(mad > 0, mad, rms)  # mostly-flat columns (e.g. a clean step) have MAD 0
    return np.where(scale > 0, scale, 1.0)  # constant columns contribute nothing anyway


def _moves(x: FloatArray, magnitude: FloatArray) -> NDArray[np.intp]:
    """The rows of ``x`` (n × dims) at which some column moves from the row before by more than
    float rounding at ``magnitude`` (per column), in order."""
    tolerance = np.array([grid.float_sigma(float(v)) for v in magnitude])
    return np.flatnonzero(np.any(np.abs(np.diff(x, axis=0)) > tolerance, axis=1)) + 1


def _still_until(moves: NDArray[np.intp], at: list[int], n: int) -> list[int]:
    """For each row in ``at``, the end (exclusive) of the run of unmoving rows it starts: the
    first of ``moves`` after it, or ``n``."""
    if moves.size == 0:
        return [n] * len(at)
    after = np.searchsorted(moves, np.array(at), side="right")
    # (no copy of ``moves`` with n appended: the pruning asks every round, 10⁶ rows each)
    found: list[int] = np.where(
        after < moves.size, moves[np.minimum(after, moves.size - 1)], n
    ).tolist()
    return found


def _moving_between(moves: NDArray[np.intp], lo: int, hi: int) -> NDArray[np.intp]:
    """The rows of ``moves`` (sorted) strictly between ``lo`` and ``hi``."""
    return moves[np.searchsorted(moves, lo, side="right") : np.searchsorted(moves, hi)]


def _check_min_size(min_size: int) -> None:
    if isinstance(min_size, bool) or not isinstance(min_size, int | np.integer):
        raise ValueError(f"min_size must be an integer, got {min_size!r}")
    if min_size < 1:
        raise ValueError(f"min_size must be >= 1, got {min_size}")


# --------------------------------------------------------------------------------------------
# Hierarchical search
# --------------------------------------------------------------------------------------------


DEFAULT_MIN_EFFECT = 0.25
"""Default effect-size floor, in noise standard deviations."""
DEFAULT_MIN_RELATIVE_CHANGE = 0.05
"""Default floor on the relative change (fraction of the larger level), on long series."""
LONG_SERIES = 1_000
"""Observations from which a series gets the default relative floor. The floor is practical
significance for long series, whose length makes ±1–5% shifts significant; it is relative to
the level, so it depends on where the series' zero is, which the values do not show (1 °C is
2.2% of a body temperature of 37 °C). A shorter series' points are few and large by the test
and the cost alone, and its level's zero is not trusted."""


DEFAULT_PENALTY = 5.0
"""Default parsimony penalty: a point must explain ``penalty`` times 2 ln(e n / m) long-run
variances, m its shorter side (:func:`_cost`)."""

_LOG = logging.getLogger(__name__)
_LOG_PROGRESS_LENGTH = 100_000  # longer series log their progress at INFO
_SMALL_MIN_SIZE = 5  # the default min_size, or a quarter of a shorter series
_SPIKE_K = 5.0  # a spike: this many robust σ from the model, on the symmetrised scale
_LOOK = -1  # no first period given: :func:`_without_cycle` looks for it itself
_NOISE_ROUNDS = 4  # re-measurements of the noise on the residuals; points settle in 2-3
_CANDIDATE_ALPHA = 0.05  # level at which one seeded interval proposes its split
_PRUNE_ROUNDS = 3  # prune, re-place, prune again: settles in one or two
_PHI_CAP_SE = 2.0  # standard errors (≈ 3/√(n/s), s: pair_stride) added to the φ from differences
_MAX_EXPONENT = 700.0  # e^700 ≈ 1e304: a bar no z² reaches, without overflow
_SAME_PHI = 1e-6  # an implied φ this close to the AR(1) one: the AR(1) scale was the larger


def _default_relative_change(n: int) -> float:
    """The relative floor a series of ``n`` observations gets by default."""
    return DEFAULT_MIN_RELATIVE_CHANGE if n >= LONG_SERIES else 0.0


@one_blas_thread  # small problems: more BLAS threads only spin on a busy host (perfsleuth.blas)
def find_change_points(
    values: ArrayLike,
    *,
    alpha: float = 0.05,
    min_size: int | None = None,
    method: Method | SignificanceTest = "fpa",
    alpha_spending: AlphaSpending = "length",
    max_depth: int | None = None,
    robust: bool = True,
    min_effect: float = DEFAULT_MIN_EFFECT,
    min_relative_change: float | None = None,
    penalty: float = DEFAULT_PENALTY,
    missing: Missing = "error",
) -> ChangePoints:
    """Change points in the mean of a series (or of several series jointly).

    With ``robust=True`` (the default): candidates from seeded binary segmentation, each point
    then judged between its neighbours — significant, large enough to matter and worth its
    cost — with cycles, trends and skewness handled and spikes kept as data
    (:mod:`perfsleuth.changepoints.kernels.seeded`; ``docs/changepoints.md``). With
    ``robust=False``: the paper's FindChangePoints on the raw values (split a segment at its
    optimal 2-partition when the split is significant, then do the same to both parts).

    Parameters
    ----------
    values
        1-D series, or 2-D (n × k) for k metrics sharing their change points. NaN (unless
        ``missing="drop"``) or inf raise :class:`~perfsleuth.errors.DataError`.
    alpha
        False-positive rate of the whole search (with ``alpha_spending="length"``) or of each
        test (``"none"``).
    min_size
        Smallest number of observations on either side of a change point; ``None`` (default):
        5, or a quarter of the series when it is shorter than 20.
    method
        ``"fpa"`` (simulated critical values, the default), ``"paper"`` (the paper's fitted
        α = .05 curve; needs ``alpha=0.05, alpha_spending="none"``), ``"f"`` (F distribution,
        for comparison only), or any :class:`SignificanceTest`.
    alpha_spending
        ``"length"``: test a segment of length n_s at ``alpha · n_s / n``; ``"none"``: at
        ``alpha`` (the paper).
    max_depth
        Deepest recursion level (robust: seeded scale) searched, 0 = the whole series only;
        ``None`` for no limit.
    robust
        The default search described above; ``False`` searches the raw values, as the paper.
    min_effect
        A change point's shift must be at least this many noise standard deviations (robust σ
        of the residuals about the segment means); 0 keeps every significant one.
    min_relative_change
        With ``robust``: a shift must also be at least this fraction of the larger of the two
        levels (0 turns it off; for data whose zero is arbitrary, such as temperatures).
        ``None`` (default): :data:`DEFAULT_MIN_RELATIVE_CHANGE` on series of at least
        :data:`LONG_SERIES` observations, none on shorter ones.
    penalty
        With ``robust``: a point must explain at least ``penalty`` times 2 ln(e n / m) long-run
        noise variances (its between-part sum of squares; m its shorter side: about the most
        that noise alone reaches among the n/m places of a change that long), more when the
        noise is so persistent that few of the n observations are independent; 0 turns the
        parsimony penalty off.
    missing
        ``"error"`` (default): a NaN raises :class:`~perfsleuth.errors.DataError`, naming its
        index. ``"drop"``: rows with a NaN in any column are missing readings, left out of the
        search; every index of the result (points, segments, spikes, spike runs) is still a
        position in ``values``, a point at the first observed reading of its new segment, a
        missing reading belonging to the segment after it; ``fitted`` is NaN at missing rows;
        ``trend`` and ``periods`` count observed readings. The CLI's ``--missing drop``.

    Returns
    -------
    ChangePoints
        ``indices`` are 0-based, each the first observation of a new segment.

    Examples
    --------
    >>> find_change_points([95, 105, 510, 490]).indices
    (2,)
    """
    if not (isinstance(alpha, float | int) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if min_size is not None:
        _check_min_size(min_size)
    if alpha_spending not in ("length", "none"):
        raise ValueError(f"alpha_spending must be 'length' or 'none', got {alpha_spending!r}")
    if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 0):
        raise ValueError(f"max_depth must be a non-negative integer or None, got {max_depth!r}")
    for name, value in (
        ("min_effect", min_effect),
        ("min_relative_change", 0.0 if min_relative_change is None else min_relative_change),
        ("penalty", penalty),
    ):
        if not (isinstance(value, float | int) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
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

    if missing not in ("error", "drop"):
        raise ValueError(f"missing must be 'error' or 'drop', got {missing!r}")
    table = _as_columns(values, allow_nan=missing == "drop")
    seen: NDArray[np.intp] | None = None  # the rows with every column read, where some are not
    if missing == "drop":
        rows = np.flatnonzero(~np.isnan(table).any(axis=1))
        seen = rows if rows.size < table.shape[0] else None
    raw = table if seen is None else table[seen]
    n, dims = raw.shape
    size = _auto_min_size(n) if min_size is None else int(min_size)
    if min_relative_change is None:
        min_relative_change = _default_relative_change(n)
    # Values near the float range overflow when squared: search a copy scaled by a power of two
    # (exact), report levels in the series' own units.
    x, unit = _rescaled(raw)
    # the σ of each column's rounding to the grid it was recorded on (0: real-valued)
    rounding = grid.rounding_sigma(x)
    started = time.perf_counter()
    log = _LOG.info if n >= _LOG_PROGRESS_LENGTH else _LOG.debug
    log("change points: searching %d observations × %d column(s)", n, dims)
    robust_search = robust and n >= max(2 * size, 3)  # else nothing to split anyway
    if robust_search:
        practical = _Practical(
            test, float(alpha), size, alpha_spending, max_depth, n, dims,
            float(min_effect), float(min_relative_change), float(penalty), log,
            resolution=rounding,
        )  # fmt: skip
        model = _on_its_scale(x, practical, rounding)
    else:
        model = _paper_description(
            x, _Search(test, float(alpha), size, alpha_spending, max_depth, n, dims)
        )
    on_logs = model.scale == "log"
    slope, accepted, rejected, bends = model.slope, model.accepted, model.rejected, model.bends
    level = model.level()  # the piecewise-constant part (plus noise), on the model's scale

    dropped: list[ChangePoint] = []
    if not robust_search:
        accepted, dropped = _apply_effect_floor(accepted, level, min_effect)
    accepted.sort(key=lambda p: p.index)
    bounds = [0, *(p.index for p in accepted), n]
    segments = tuple(
        Segment(a, b, _mean(x[a:b], unit)) for a, b in itertools.pairwise(bounds) if b > a
    )
    shifts = [_mean(level[b:c]) for b, c in itertools.pairwise(bounds) if c > b]
    fitted = model.fitted(accepted)  # on the model's scale (the series' own, or its logarithm)
    sigma = _residual_scale(level, bounds)

    # a kink at a level point: a crash where the growth changes (``_breaks``), whose
    # segments each have their own line, so their means' difference is not its jump. (A kink
    # the kinks' stage put at a level point has no jump recorded: the means' gap, as before.)
    bent_at = {k.index for k in bends}

    def at_break(p: ChangePoint) -> bool:
        return p.index in bent_at and len(p.shift) == dims

    def level_gap(i: int, p: ChangePoint) -> list[float]:
        """The level's jump at ``p`` on the model's scale: of the segment means, or at a break
        the jump between its two lines (kept as its ``shift`` by the search)."""
        if at_break(p):
            return list(p.shift)
        return [a - b for a, b in zip(shifts[i + 1], shifts[i], strict=True)]

    def noise(i: int, p: ChangePoint) -> FloatArray:
        """The noise σ the effect is measured in: about the segment means, or at a break about
        its two lines (the means of segments that lean are no yardstick)."""
        if not at_break(p):
            return sigma
        part = slice(bounds[i], bounds[i + 2])
        about = model.adjusted[part] + model.cycle[part] - fitted[part]
        return np.array([robust_mod.robust_scale(about[:, j]) for j in range(dims)])

    def jump(i: int, p: ChangePoint) -> tuple[float, ...]:
        """The shift at ``p`` in the series' units: of the levels, or on the log scale of the
        model at ``p`` (its value less the same with the earlier level)."""
        gap = level_gap(i, p)
        if on_logs:
            return tuple(
                float(unit[0]) * math.exp(fitted[p.index, 0]) * -math.expm1(-d) for d in gap
            )
        return _in_units(np.asarray(gap), unit)

    def level_at(p: ChangePoint) -> tuple[float, ...]:
        """The model's value at ``p`` in the series' units where the segment means do not
        tell the jump: on the log scale (a growing level), and at a break (lines that lean)."""
        if on_logs:
            return (float(unit[0]) * math.exp(fitted[p.index, 0]),)
        if at_break(p):
            return (float(unit[0]) * float(fitted[p.index, 0]),)
        return ()

    # Report the levels either side as the final segmentation has them, not as the tested parts.
    points = tuple(
        dataclasses.replace(
            p,
            mean_before=segments[i].mean,
            mean_after=segments[i + 1].mean,
            spread_before=_spread(x[bounds[i] : bounds[i + 1]], unit),
            spread_after=_spread(x[bounds[i + 1] : bounds[i + 2]], unit),
            shift=jump(i, p),
            effect=_effect((0.0,) * dims, tuple(level_gap(i, p)), noise(i, p)),
            scale=model.scale,
            level_at=level_at(p),
        )
        for i, p in enumerate(accepted)
    )
    if bends:  # the segments holding a kink: their own broken line instead of level + trend
        points, segments, bounds = _with_slope_points(points, bends, x, unit, model.scale)
    observed = np.log(x) if on_logs else x
    spikes, spike_runs = _spikes(observed - fitted, bounds, size) if robust_search else ((), ())
    with np.errstate(over="ignore"):  # a fitted line past the float range's end is ±inf
        fitted = (np.exp(fitted) if on_logs else fitted) * unit
    log(
        "change points: %d found, %d candidate(s) dropped, %.2f s",
        len(points),
        len(rejected) + len(dropped),
        time.perf_counter() - started,
    )
    found = ChangePoints(
        indices=_starts(points),
        points=points,
        segments=segments,
        rejected=tuple(
            sorted(
                (_with_raw_means(p, x, unit, model.scale) for p in [*rejected, *dropped]),
                key=lambda p: p.index,
            )
        ),
        n=n,
        dims=dims,
        method=test.name,
        alpha=float(alpha),
        min_size=size,
        robust=robust,
        min_effect=float(min_effect),
        periods=model.periods,
        spikes=spikes,
        # on the log scale the trend is a growth rate: e^slope − 1 per reading
        trend=tuple(math.expm1(v) for v in slope) if on_logs else _in_units(slope, unit),
        fitted=fitted,
        min_relative_change=float(min_relative_change) if robust else 0.0,
        penalty=float(penalty) if robust else 0.0,
        spike_runs=spike_runs,
        scale=model.scale,
    )
    return found if seen is None else _on_all_rows(found, seen, table.shape[0])


Scale = Literal["linear", "log"]


def _on_all_rows(found: ChangePoints, rows: NDArray[np.intp], n: int) -> ChangePoints:
    """``found``, a search of the observed ``rows`` of ``n`` (``missing="drop"``), with its
    positions among all ``n``: a boundary at the first observed row after it (the ends at 0 and
    ``n``, so the segments still tile every row), a reading at its own row."""
    m = rows.size

    def at(s: int) -> int:
        return 0 if s <= 0 else n if s >= m else int(rows[s])

    def placed(p: ChangePoint) -> ChangePoint:
        return dataclasses.replace(p, index=at(p.index), start=at(p.start), stop=at(p.stop))

    points = tuple(placed(p) for p in found.points)
    fitted = None
    if found.fitted is not None:
        fitted = np.full((n, found.dims), np.nan)
        fitted[rows] = found.fitted
    return dataclasses.replace(
        found,
        indices=_starts(points),
        points=points,
        segments=tuple(
            dataclasses.replace(s, start=at(s.start), stop=at(s.stop)) for s in found.segments
        ),
        rejected=tuple(placed(p) for p in found.rejected),
        n=n,
        spikes=tuple(int(rows[i]) for i in found.spikes),
        spike_runs=tuple(
            dataclasses.replace(
                r, start=int(rows[r.start]), stop=at(r.stop), index=int(rows[r.index])
            )
            for r in found.spike_runs
        ),
        fitted=fitted,
    )


@dataclass(frozen=True, slots=True)
class _Description:
    """One description of a series on one scale (its own, or its logarithm): the cycle, the
    common slope, the level points and the kinks, with what the search dropped."""

    scale: Scale
    adjusted: FloatArray  # the series on this scale less its cycles
    periods: tuple[int, ...]
    cycle: FloatArray
    slope: FloatArray
    accepted: list[ChangePoint]
    rejected: Sequence[ChangePoint]
    bends: list[kinks.Kink]
    resolution: FloatArray  # per column, the rounding σ of the values on this scale (``grid``)

    def level(self) -> FloatArray:
        return self.adjusted - np.outer(_ramp(self.adjusted.shape[0]), self.slope)

    def fitted(self, accepted: list[ChangePoint] | None = None) -> FloatArray:
        """Segment levels + trend + cycle (each segment holding a kink its own broken line),
        on this scale; ``accepted``: other level points (the effect floor's survivors)."""
        kept = self.accepted if accepted is None else accepted
        n = self.adjusted.shape[0]
        bounds = [0, *sorted(p.index for p in kept), n]
        level = self.level()
        out = np.outer(_ramp(n), self.slope) + self.cycle
        for a, b in itertools.pairwise(bounds):
            if b > a:
                out[a:b] += level[a:b].mean(axis=0)
        if self.bends:
            out[:, 0] = self.cycle[:, 0] + kinks.broken_line(
                self.adjusted[:, 0], bounds, self.bends, out[:, 0] - self.cycle[:, 0]
            )
        return out

    def parameters(self) -> int:
        """A position and a level per point (per column), an intercept per column and one per
        nonzero slope, a position and a slope per kink and one per segment holding kinks (or
        bounded by one: :func:`_breaks`), one per phase of each cycle."""
        dims = self.adjusted.shape[1]
        bounds = [0, *sorted(p.index for p in self.accepted), self.adjusted.shape[0]]
        held = sum(
            any(a <= k.index <= b for k in self.bends) for a, b in itertools.pairwise(bounds)
        )
        return int(
            len(self.accepted) * (dims + 1) + dims + int(np.count_nonzero(self.slope))
            + 2 * len(self.bends) + held + sum(self.periods)
        )  # fmt: skip


def _paper_description(x: FloatArray, search: _Search) -> _Description:
    """The paper's search (no cycle, trend or kinks), multi-column series standardised."""
    n, dims = x.shape
    scale = _noise_scale(x) if dims > 1 and n > 1 else np.ones(dims)
    accepted, rejected = search.run(x / scale)
    zero = np.zeros_like(x)
    return _Description(
        "linear", x, (), zero, np.zeros(dims), accepted, rejected, [], np.zeros(dims)
    )


def _on_its_scale(x: FloatArray, practical: _Practical, rounding: FloatArray) -> _Description:
    """The default search's description of ``x`` on its own scale or, for a positive series
    that may grow by a rate, not an amount (step 6), on its logarithm when that explains the
    values better.

    The scale is chosen at the default effect floors, then described at the caller's: the
    floors say which changes are worth reporting, not what the series is. A floor above a
    crash in exponential growth leaves the log description that crash unexplained, and a
    broken line on the series' own scale, bending where the growth does, then won (a −10%
    crash under an 11% floor, 120 readings: three slope points, once the kinks settled)."""
    n, dims = x.shape
    if dims != 1 or not bool(np.all(x > 0)):
        return _describe(x, practical)  # no logarithm, so no scale to choose

    def logs(search: _Practical) -> _Practical:
        return dataclasses.replace(search, log_levels=True, resolution=_log_rounding(x, rounding))

    floors = dataclasses.replace(
        practical,
        min_effect=DEFAULT_MIN_EFFECT,
        min_relative_change=_default_relative_change(n),
    )
    # the first cycle of the values, looked for once: the scale's judge and their description
    first = robust_mod.detect_period(x[:, 0], min_period=2 * practical.min_size)
    follows = _cycle_follows_level(x[:, 0], first, practical.min_size)
    log_first = _LOOK if follows is None else follows  # the log description's first cycle
    if follows is not None:
        model = _describe(np.log(x), logs(floors), log_first)
    else:
        model = _describe(x, floors, first)
    if model.scale == "linear" and _may_grow(x, model, floors.min_effect):
        logged = _describe(np.log(x), logs(floors))
        # a rate of growth needs a growth: a log description with no trend only changes the
        # noise's scale (M/M/1 response times, N = 100, ρ = .8: 23 → 33 of 400 false)
        if logged.slope.any() and _better_on_log_scale(x, model, logged):
            model = logged
    if (practical.min_effect, practical.min_relative_change) == (
        floors.min_effect,
        floors.min_relative_change,
    ):
        return model
    return (
        _describe(np.log(x), logs(practical), log_first)
        if model.scale == "log"
        else _describe(x, practical, first)
    )


def _describe(x: FloatArray, search: _Practical, first: int | None = _LOOK) -> _Description:
    """The default search's description of ``x`` (on the scale given): its cycle, its level
    points, a common slope when it is kept (step 6) and, on one column, the kinks. ``first``:
    its first cycle's period (None: no cycle), when already looked for."""
    n, dims = x.shape
    scale: Scale = "log" if search.log_levels else "linear"
    adjusted, periods, cycle = _without_cycle(x, search.min_size, first)
    accepted, rejected = search.run(adjusted)
    slope = np.zeros(dims)
    if n >= _TREND_MIN_LENGTH:
        # Alternate: search the detrended series, refit the slope *inside* the segments found.
        # A trend cut into a staircase keeps its slope inside the steps; a real shift leaves
        # none. Started from no slope, a strong trend can stay a staircase; started from the
        # line through everything, a big shift can stay a ramp: so start from both and keep the
        # better description (BIC). The second start only matters when the first ends with no
        # change point, a monotone staircase and no slope, or segments that lean (a
        # within-segment slope of |t| > _LEAN_T, significant or not) once its own slope is
        # removed: a first start that found the trend inside its segments has not left it as
        # a staircase — steps of one sign left on its slope are steps (and its segments, less
        # their common slope, cannot lean). That saves its searches otherwise. (Started from
        # the line anyway, such steps were counted as trend: of 2,400 seeded trend series six
        # changed when it no longer was, five for the better — three staircases drawn as a
        # bare ramp now keep two of their steps — and one growth kept two false level points;
        # 10⁶ readings with two steps up spared two searches, 1 s.)
        # A search's start only saves rounds (it ends where the noise about its points settles),
        # so a slope met before is not searched again, from whatever points: the two starts
        # often meet, and the trend's start often returns to no slope (10⁵ × 50 shifts: 60 ms
        # of 280). Every repeat in the corpora and the speed series, 8, ended at the same
        # points; of 2,400 seeded trend series (ramps, steps, growth, bends) one settled
        # elsewhere from the other start, and only its kept slope changed.
        runs: dict[bytes, tuple[list[ChangePoint], Sequence[ChangePoint]]] = {
            np.zeros(dims).tobytes(): (accepted, rejected)
        }

        def searched(
            slope: FloatArray, previous: list[int]
        ) -> tuple[list[ChangePoint], Sequence[ChangePoint]]:
            """The search of the series less ``slope``, started from ``previous`` unless that
            slope was searched before."""
            key = slope.tobytes()
            if key not in runs:
                runs[key] = search.run(_detrend(adjusted, slope), slope, previous)
            kept, dropped = runs[key]
            return list(kept), dropped

        flat = (np.zeros(dims), accepted, rejected)
        zero = _alternate(searched, adjusted, np.zeros(dims), accepted, rejected)
        slope, accepted, rejected = zero
        jumps = _lone_jumps(adjusted, search.alpha, float(search.grain()[0]))
        line = _significant_slopes(adjusted, jumps)
        rest = _detrend(adjusted, slope)
        trending = bool(line.any()) and (
            not accepted
            or (not slope.any() and _monotone(rest, accepted))
            or _sloped(rest, accepted)
        )
        fits = [zero]
        if trending:
            start = searched(line, [p.index for p in accepted])
            fits.append(_alternate(searched, adjusted, line, *start))
        # A step the slope hides (a crash in growth: the line through it is flatter than the
        # growth, and the series less it a saw tooth whose teeth hide the step), when the step
        # is significant with its segment's own line fitted alongside: a further start, from
        # the slope inside the segments that step makes, looked for in the last start's
        # segments. The crash may hide the growth as well (they cancel, and the line through
        # both is no trend), so this start does not wait for a trend.
        steps = _hidden_steps(adjusted, fits[-1][1], search)
        if steps:
            cuts = sorted({*(p.index for p in fits[-1][1]), *steps})
            inside = _significant_slopes(adjusted, cuts)
            if inside.any():
                fits.append(_alternate(searched, adjusted, inside, *searched(inside, cuts)))
        if len(fits) > 1:
            # judged at the noise's effective count, as the level test judges a point: with
            # n, persistent noise cut a line into a step (`benchmarks/changepoints_trend_size.py`)
            described = [_trend_fit(adjusted, fit[0], fit[1]) for fit in fits]
            scores = _bic_scores(adjusted, described, search.grain())
            best = int(np.argmin(scores))
            # Where no line showed a trend (the zero start kept no slope, the line through
            # everything none), the step's test is the only evidence for the slope its start
            # brings: its bars (AR(1) noise, φ up to .9) must hold for the noise that start
            # leaves, as for a broken line alone (`_broken_line_instead`). Else a wander of φ
            # .95 that falls, jumps and falls again is a step in a falling line (200
            # readings: a point in .020 → .040 of such series; `changepoints_short_noise.py`).
            shown = trending or bool(zero[0].any())
            resid = described[best][0][:, 0]
            if best and not shown and not kinks.memory_covered(adjusted[:, 0], resid):
                best = 0
            slope, accepted, rejected = fits[best]
        if slope.any() and _negligible(adjusted, slope, accepted, search.min_effect):
            # a rise over the whole series below the effect floor does not matter, and it
            # would swallow a small shift (one dropped for its size would look like a ramp)
            slope, accepted, rejected = flat
        if slope.any() or trending:
            slope, accepted, pruned = _prune_with_trend(adjusted, slope, accepted, search.grain())
            rejected = [*rejected, *pruned]
    bends: list[kinks.Kink] = []
    if dims == 1 and n >= _TREND_MIN_LENGTH:
        judged = functools.partial(
            kinks.find_kinks,
            alpha=search.alpha,
            spend=search.alpha_spending == "length",
            min_size=search.min_size,
            min_effect=search.min_effect,
            min_relative_change=search.min_relative_change,
            cost=functools.partial(_cost, search.penalty),
            log_levels=search.log_levels,
            rounding=float(search.grain()[0]),
        )
        if slope.any():
            accepted, bends, replaced, fit = _with_kinks(
                adjusted[:, 0], slope[0], accepted, judged, search
            )
            if _steps_under_the_floor(adjusted, fit, flat[1], flat[2], search):
                slope, accepted, rejected = flat
                accepted, bends, replaced = _lines_of_a_flat(
                    adjusted[:, 0], accepted, judged, search
                )
        else:
            accepted, bends, replaced = _lines_of_a_flat(adjusted[:, 0], accepted, judged, search)
        rejected = [*rejected, *replaced]
        if bends or slope.any():
            accepted, bends, broken = _breaks(adjusted[:, 0], accepted, bends, search)
            accepted, bends, small = _at_still_edges(adjusted[:, 0], accepted, bends, search)
            rejected = [*rejected, *broken, *small]
    return _Description(
        scale, adjusted, periods, cycle, slope, accepted, rejected, bends, search.grain()
    )


def _breaks(
    y: FloatArray, accepted: list[ChangePoint], bends: list[kinks.Kink], search: _Practical
) -> tuple[list[ChangePoint], list[kinks.Kink], list[ChangePoint]]:
    """(level points, kinks, level points replaced) of a trending one-column description,
    with each crash where the growth changes too — the level jumps and the slope changes at
    the same reading (Perron's model C) — drawn as a level point and a kink at that reading,
    whose two segments then each have their own line.

    Neither kind alone draws it. A kink keeps the line continuous, so it bends some readings
    early (a −20% crash halving 3% growth, 150 readings at 1% noise: 11 readings early, found
    in none of 30 series) or twice, either side of the crash; the level search's segments
    share one slope, so its point at the crash leaves the slowdown to another point, or the
    description loses to a worse one on the log scale (an additive crash of 40 σ halving the
    growth: one slope point 24 readings early). So each change point, alone or with its
    neighbour, is looked at again between its neighbours: the best break of that span into two
    lines (:func:`trend_steps.best_break`, against the best one-kink line, with a hidden step's
    gates) replaces it when the slope also changes beside the jump (a kink's gates,
    :func:`_turn_beside_the_jump`) and the break describes the series better by BIC at ν
    than the points it replaces (steps and hinges fitted jointly)."""
    replaced: list[ChangePoint] = []
    # A level point is a crash that bends only where the slope changes across it (the lines
    # leave out min_size readings either side, where the crash may really be); the break's
    # scan (some 40 passes over its span) is spared the others: on a trend with 50 plain steps
    # in 10⁶ readings it took 4.4 of 6.8 s. A kink the break would replace is no neighbour
    # there: a growth that stops (a line, then idle readings) had the kink 77 readings before
    # the stop for a neighbour, whose move over those 77 failed the relative floor, and kept
    # its slope point early. (Without the other level point of a pair either, the spans grew
    # and the scans ran: the 10⁶ gauges with 50 steps took 7.6 s, not 3.1.)
    turns: dict[tuple[int, int, int], bool] = {}

    def turning(point: ChangePoint, chosen: Sequence[ChangePoint | kinks.Kink]) -> bool:
        replaced = {c.index for c in chosen if isinstance(c, kinks.Kink)} - {point.index}
        edges = sorted(
            {0, y.size, *(p.index for p in accepted), *(k.index for k in bends)} - replaced
        )
        i = edges.index(point.index)
        a, b = edges[i - 1], edges[i + 1]
        if (a, point.index, b) not in turns:
            alpha = _HIDDEN_STEP_SHARE * search._level_alpha(b - a)
            turn = _turn_beside_the_jump(y[a:b], point.index - a, alpha, search, search.min_size)
            turns[a, point.index, b] = turn is not None
        return turns[a, point.index, b]

    i = 0
    while True:
        items: list[ChangePoint | kinks.Kink] = sorted([*accepted, *bends], key=lambda c: c.index)
        if i >= len(items):
            return accepted, bends, replaced
        for width in (1, 2):
            chosen = items[i : i + width]
            if len(chosen) < width:
                break
            levels = [c for c in chosen if isinstance(c, ChangePoint)]
            if levels and not any(turning(p, chosen) for p in levels):
                continue
            change = _break_for(y, accepted, bends, chosen, search)
            if change is not None:
                accepted, bends, gone = change
                replaced += gone
                break
        i += 1


def _at_still_edges(
    y: FloatArray, accepted: list[ChangePoint], bends: list[kinks.Kink], search: _Practical
) -> tuple[list[ChangePoint], list[kinks.Kink], list[ChangePoint]]:
    """(level points, kinks, level points dropped) of a one-column description with lines,
    each change (a level point, a kink or both at one reading) moved to the edge of a run of
    unmoving readings (idle zeros, a pegged gauge) that opens or closes its span, when it
    splits that run or leaves readings that move on its side, and those readings are not
    worth a point of their own: readings that move are no part of a run that does not. A
    moved level point whose jump is then under ``min_effect`` σ of the moving side's noise
    is dropped: growth from 0 does not jump where its readings start to move.

    Least squares cannot place a change where only the noise starts: idle zeros, then growth
    from 0 in noise of σ 1 fit about as well whether the first dozen busy readings (near 0)
    sit on the idle line or on the rising one, and the break came 4–18 readings late with
    those readings listed as spikes of the idle segment. Each side's own variance would
    decide it (the still side's is 0); the fit has one. So the still edge takes the change
    when the readings between move (no run of ``side`` of them is still: a rounded line's
    stairs are still runs, but no regime's edges) and the change's advantage over the edge,
    in variances of the moving side's noise (from its differences, which a description that
    misfits the side does not inflate), is under the cost of a point whose shorter side is
    the readings between (:func:`_cost`). The kink's slopes and the tests' statistics stay
    those judged where the change was."""
    n = y.size
    moves = _moves(y[:, None], np.array([float(np.max(np.abs(y)))]))
    if moves.size == 0:
        return accepted, bends, []
    side = max(search.min_size, kinks.MIN_SIDE)

    def fit(points: list[ChangePoint], hinges: list[kinks.Kink]) -> tuple[FloatArray, ...]:
        return _steps_and_hinges(
            y, sorted(k.index for k in hinges), sorted(p.index for p in points)
        )

    resid = None  # of the description, fitted once a change has an edge to move to
    dropped: list[ChangePoint] = []
    for k in sorted({p.index for p in accepted} | {b.index for b in bends}):
        edges = sorted({0, n, *(p.index for p in accepted), *(b.index for b in bends)})
        a, b = edges[edges.index(k) - 1], edges[edges.index(k) + 1]
        first = int(_still_until(moves, [a], n)[0])  # the end of a still run from a
        inside = _moving_between(moves, a, b)
        last = int(inside[-1]) if inside.size else a  # the start of a still run to b
        candidates = []
        if first - a >= side and b - first >= side and first != k:
            candidates.append((first, slice(first, b)))
        if b - last >= side and last - a >= side and last != k:
            candidates.append((last, slice(a, last)))
        candidates = [
            (edge, moving) for edge, moving in candidates if _moving(moves, k, edge, side)
        ]
        for edge, moving in candidates:
            resid = fit(accepted, bends)[0] if resid is None else resid
            points = [_moved_edge(p, k, edge) for p in accepted]
            hinges = [_moved_edge(x, k, edge) for x in bends]
            moved, levels = fit(points, hinges)
            variance = robust_mod.robust_scale(np.diff(y[moving])) ** 2 / 2.0
            if variance <= 0.0:
                continue
            gain = float(moved @ moved - resid @ resid) / variance
            if gain >= _cost(search.penalty, b - a, abs(k - edge), b - a):
                continue
            remeasured = [
                _remeasured(p, y, (a, b), levels) if p.index == edge else p for p in points
            ]
            # a level point whose jump the edge leaves under the effect floor is none (idle,
            # then growth from 0: the level does not jump where the readings start to move)
            small = [
                p
                for p in remeasured
                if p.index == edge and abs(p.shift[0]) < search.min_effect * math.sqrt(variance)
            ]
            accepted = sorted((p for p in remeasured if p not in small), key=lambda p: p.index)
            bends = sorted(hinges, key=lambda x: x.index)
            dropped += small
            resid = fit(accepted, bends)[0] if small else moved
            break
    return accepted, bends, dropped


def _remeasured(
    point: ChangePoint, y: FloatArray, span: tuple[int, int], levels: FloatArray
) -> ChangePoint:
    """A moved level point's sides' means within ``span`` (its neighbours) and its step in
    ``levels`` (the fit's steps)."""
    at = point.index
    return dataclasses.replace(
        point,
        mean_before=(float(np.mean(y[span[0] : at])),),
        mean_after=(float(np.mean(y[at : span[1]])),),
        shift=(float(levels[at] - levels[at - 1]),),
    )


def _moving(moves: NDArray[np.intp], one: int, other: int, side: int) -> bool:
    """Whether the readings between rows ``one`` and ``other`` move: no run of ``side`` of
    them unmoving (``moves``: the rows that move, :func:`_moves`)."""
    lo, hi = min(one, other), max(one, other)
    inside = _moving_between(moves, lo, hi)
    return not bool(np.any(np.diff(np.concatenate([[lo], inside, [hi]])) >= side))


_Edged = TypeVar("_Edged", ChangePoint, kinks.Kink)


def _moved_edge(item: _Edged, old: int, new: int) -> _Edged:
    """``item`` with the edge ``old`` (its index, start or stop) at ``new``."""
    if old not in (item.index, item.start, item.stop):
        return item
    return dataclasses.replace(
        item,
        index=new if item.index == old else item.index,
        start=new if item.start == old else item.start,
        stop=new if item.stop == old else item.stop,
    )


def _break_for(
    y: FloatArray,
    accepted: list[ChangePoint],
    bends: list[kinks.Kink],
    chosen: Sequence[ChangePoint | kinks.Kink],
    search: _Practical,
) -> tuple[list[ChangePoint], list[kinks.Kink], list[ChangePoint]] | None:
    """(level points, kinks, level points replaced) with the adjacent change points
    ``chosen`` replaced by a break into two lines between their neighbours when it passes
    :func:`_breaks`' tests, else None."""
    n = y.size
    levels = {p.index for p in accepted}
    hinged = {k.index for k in bends}
    at_chosen = [c.index for c in chosen]
    if any(k in levels and k in hinged for k in at_chosen):
        return None  # a break already
    edges = sorted({0, n, *levels, *hinged})
    a, b = edges[edges.index(at_chosen[0]) - 1], edges[edges.index(at_chosen[-1]) + 1]
    alpha = _HIDDEN_STEP_SHARE * search._level_alpha(b - a)
    found = trend_steps.best_break(
        y[a:b],
        alpha=alpha,
        side=search.min_size,
        min_effect=search.min_effect,
        min_relative_change=search.min_relative_change,
        cost=functools.partial(_cost, search.penalty),
        log_levels=search.log_levels,
    )
    if found is None:
        return None
    turn = _turn_beside_the_jump(y[a:b], found.index, alpha, search)
    if turn is None:
        return None
    at = a + found.index
    kept_levels = [p for p in accepted if all(p is not c for c in chosen)]
    kept_bends = [k for k in bends if all(k is not c for c in chosen)]
    cuts, hinges = sorted(levels), sorted(hinged)
    cuts_after = sorted({*(p.index for p in kept_levels), at})
    hinges_after = sorted({*(k.index for k in kept_bends), at})
    fits = [_hinged_fit(y, hinges, cuts)[0], _hinged_fit(y, hinges_after, cuts_after)[0]]
    kept, broken = _bic_scores(y[:, None], fits, search.grain())
    if broken >= kept:
        return None
    point = ChangePoint(
        index=at,
        statistic=found.statistic,
        critical_value=found.critical_value,
        p_value=found.p_value,
        alpha=alpha,
        phi=found.phi,
        phi_residual=found.phi,
        level=0,
        start=a,
        stop=b,
        mean_before=(float(np.mean(y[a:at])),),
        mean_after=(float(np.mean(y[at:b])),),
        shift=(found.jump,),
        strength=found.statistic,
    )
    return (
        sorted([*kept_levels, point], key=lambda p: p.index),
        sorted(
            [*kept_bends, dataclasses.replace(turn, index=at, start=a, stop=b)],
            key=lambda k: k.index,
        ),
        [p for p in accepted if any(p is c for c in chosen)],
    )


def _turn_beside_the_jump(
    y: FloatArray, at: int, alpha: float, search: _Practical, guard: int = 0
) -> kinks.Kink | None:
    """The change of slope at ``at`` beside a jump there — two lines, split at ``at``, against
    one slope with a step — as a kink of ``y`` at ``at`` when it passes a kink's gates
    (``kinks.judge``): significant (the kink's bar at ``alpha``, AR(1) long-run noise about the
    two lines), large (it moves the line ``min_effect`` σ over its shorter side, and the
    relative floor) and worth its cost; else None. In closed form from each side's sums.
    ``guard``: the lines leave out that many readings either side of ``at`` (a jump a few
    readings off ``at`` is then no misfit of theirs)."""
    n = y.size
    if min(at, n - at) - guard < 3:
        return None
    sides = []
    for part in (y[: at - guard], y[at + guard :]):
        m = part.size
        tc = np.arange(m, dtype=np.float64) - (m - 1) / 2
        yc = part - float(np.mean(part))
        sxx, sxy = m * (m * m - 1) / 12.0, float(tc @ yc)
        sides.append((sxx, sxy, sxy / sxx, yc - sxy / sxx * tc))
    (lxx, lxy, before, left), (rxx, rxy, after, right) = sides
    # the hinge's gain beside the step: one slope for both sides less a slope each
    gain = (lxy * lxy / lxx + rxy * rxy / rxx) - (lxy + rxy) ** 2 / (lxx + rxx)
    resid = np.concatenate([left, right])
    variance, phi = kinks.long_run(resid)
    # residuals of float rounding are not noise (as for a kink)
    variance = max(variance, grid.float_sigma(float(np.max(np.abs(y)))) ** 2)
    if variance <= 0.0:
        return None
    z2 = gain / variance
    bar = kinks.critical_z2(n, alpha)
    shorter = min(at, n - at)
    sigma = robust_mod.robust_scale(resid)
    move = abs(after - before) * shorter
    fitted = np.concatenate([y[: at - guard] - left, y[at + guard :] - right])
    near = fitted[: at - guard] if at <= n - at else fitted[at - guard :]
    # the relative floor as a kink's (``kinks.judge``): multiplied out, for the line near the
    # crash may be 0 there (readings of 0, then growth)
    small = (
        -math.expm1(-move) < search.min_relative_change
        if search.log_levels
        else move < search.min_relative_change * float(np.max(np.abs(near)))
    )
    if (
        z2 <= bar
        or (sigma > 0.0 and move < search.min_effect * sigma)
        or small
        or z2 < _cost(search.penalty, n, shorter, n * (1 - phi) / (1 + phi))
    ):
        return None
    return kinks.Kink(
        index=at,
        start=0,
        stop=n,
        slope_before=before,
        slope_after=after,
        statistic=z2,
        critical_value=bar,
        p_value=kinks.tail_probability(n, z2),
        alpha=alpha,
        phi=phi,
        effect=move / sigma if sigma > 0 else math.inf,
    )


def _steps_under_the_floor(
    y: FloatArray,
    trend: Callable[[], Fit],
    kept: list[ChangePoint],
    dropped: Sequence[ChangePoint],
    search: _Practical,
) -> bool:
    """Whether a trend kept (its description, with its kinks: ``trend()``) is a staircase of
    steps under the relative floor: the steps a search with no floor finds (with no slope, from
    the ``kept`` points of the search with it) describe ``y`` better by BIC at the noise's
    effective count, and lean no more than a level's segments do (no significant slope common
    to them: a ramp cut into steps keeps its slope inside them, as in the trend's
    alternation). The floor decides which changes are worth reporting, not what the series
    is made of: a long level series whose small steps it drops was described as a trend with
    kinks (4,000 readings, 12 jumps of ±2–12% in 2% noise: 18 false points in 20 series, most
    of them slope points; 4 with this, ``benchmarks/changepoints_level_staircase.py``). Then
    the points the floor keeps are reported, with no slope. (The log scale's levels are
    relative themselves: no floor there.) ``kept`` and ``dropped``: the search with the floor
    and no slope; where its floor decided nothing, the search without it is not run, for it
    would end at the same points (``_Dropped.same_without_floor``)."""
    if search.min_relative_change <= 0.0 or search.log_levels:
        return False
    if isinstance(dropped, _Dropped) and dropped.same_without_floor:
        return False
    flat = sorted(p.index for p in kept)
    fine, _ = dataclasses.replace(search, min_relative_change=0.0).run(y, None, flat)
    cuts = sorted(p.index for p in fine)
    if cuts == flat:
        return False  # the floor hid no step: the trend's starts have compared these already
    if _significant_slopes(y, cuts).any():
        return False  # its steps still lean: a ramp cut into steps, the trend's
    fits = [trend(), _trend_fit(y, np.zeros(y.shape[1]), fine)]
    with_trend, steps = _bic_scores(y, fits, search.grain())
    return steps < with_trend


def _lone_jumps(y: FloatArray, alpha: float, rounding: float = 0.0) -> list[int]:
    """The series' few outsized moves, where it has them (one column): the line through the
    series is measured between them. A jump is a level's move, not a trend's, and a line
    through it reads what either side does as persistent noise (a counter reset at 60% of
    200 readings: the sawtooth's line had |t| .33, inside its two teeth ≫ 3).

    The k largest moves (about the median) stand out when the k-th is far above the next:
    for independent moves with a power-law tail of index a (the lone-jump test's), k·log of
    that ratio r is exponential with rate a (Rényi's spacings of Pareto order statistics,
    independent for each k), so r^(−a k) is its tail probability — at k = 1,
    :func:`_lone_jump`'s bar. K of them are looked at, up to one jump a 20 readings (the
    trend's shortest series) within _JUMPS_LOOKED_AT (a log rotated four times, irregularly,
    had no jump when K was 3), and α is shared among them (a union
    bound: the size is at most α whatever K is): 1/(k H_K) of it to k, H_K = 1 + 1/2 + … +
    1/K, for a k's evidence grows with k, so few jumps get the larger share. The k that
    passes its share by most is taken. These points only start the trend's search (where its
    line is measured), which judges every point by the level test.

    The moves are those of the series less its spikes (a median of three): a spike is two
    opposite moves, not a level's (the 10⁴-reading speed series' 20 spikes were 20 "jumps",
    and the trend's start ran three more searches, to the same points).

    ``rounding``: the σ of the values' rounding (``grid``, the grid step q = √12 σ). A move
    of rounded values is within q of the move itself, so the ratio is taken at its least,
    (k-th − q) / (next + q): on a grid, moves only a step apart (5 and 4 requests a reading
    about the median) are not far apart, and a rounded line, flat but for a step of q every
    20 readings, has no outsized move at all."""
    if _JUMP_TAIL_INDEX is None or y.shape[1] != 1 or y.shape[0] < 5:
        return []
    # the moves between the series' second and second-last readings: the filter repeats an
    # end's reading, so a spike there stays, and its move would leave a one-reading level
    d = np.diff(robust_mod.running_median(y[:, 0], 3))[1:-1]  # less its spikes
    dev = np.abs(d - np.median(d))
    fewest, most_looked_at = _JUMPS_LOOKED_AT
    per_length = dev.size // _TREND_MIN_LENGTH
    looked_at = min(max(fewest, min(per_length, most_looked_at)), dev.size - 1)
    most = looked_at + 1
    order = np.argpartition(dev, -most)[-most:]
    order = order[np.argsort(dev[order])[::-1]]  # the largest moves, largest first
    top = dev[order]
    step = math.sqrt(12.0) * rounding  # the grid step q: a move's rounding error is under q
    # a move of 0 or a denormal one below a larger move: an infinite ratio, as by 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = (top[:-1] - step) / (top[1:] + step)
        evidence = _JUMP_TAIL_INDEX * np.arange(1, most) * np.log(ratio)
    evidence[~(ratio > 0.0)] = 0.0  # no move, or none beyond its rounding
    # k's share of α: 1 / (k H), H = 1 + 1/2 + … + 1/K (its evidence grows with k)
    ks = np.arange(1, most)
    margin = evidence - np.log(ks * float(np.sum(1.0 / ks)) / alpha)
    k = int(np.argmax(margin)) + 1
    if margin[k - 1] < 0.0:
        return []
    return sorted(int(i) + 2 for i in order[:k])


def _hidden_steps(y: FloatArray, accepted: list[ChangePoint], search: _Practical) -> list[int]:
    """Steps of a trending one-column series that a slope common to its segments may hide:
    in each segment between ``accepted``, the best step with the segment's own line fitted
    alongside (Perron's crash model, :mod:`perfsleuth.changepoints.kernels.trend_steps`),
    when it passes a kink's gates: significant at a share of the level spent on the
    segment's length, large, worth its cost and not a spike."""
    if y.shape[1] != 1:
        return []
    bounds = [0, *sorted(p.index for p in accepted), y.shape[0]]
    found = []
    for a, b in itertools.pairwise(bounds):
        step = trend_steps.best_step(
            y[a:b, 0],
            alpha=_HIDDEN_STEP_SHARE * search._level_alpha(b - a),
            side=search.min_size,
            min_effect=search.min_effect,
            min_relative_change=search.min_relative_change,
            cost=functools.partial(_cost, search.penalty),
            log_levels=search.log_levels,
        )
        if step is not None:
            found.append(a + step.index)
    return found


def _cycle_follows_level(x: FloatArray, first: int | None, min_size: int) -> int | None:
    """The period of a positive series' cycle when the series varies by a factor of its level
    rather than by an amount (else None): a latency's daily cycle of ±15% at every level is a
    common profile of its logarithm only, and removed from the values it stays in their high
    stretches as noise (the speed benchmark's series at 10⁴ readings, 10 shifts: recall .655,
    and .965 on the log scale). Both of two classic diagnostics must say so:

    * Box–Cox: the cycle and noise (less the running median one period wide and the
      profile, :func:`robust_mod.cycle_noise`) are fitted better on the log scale (robust σ
      of the log residuals × the geometric mean below σ of the series' own);
    * Tukey's spread against level, one period a stretch
      (:func:`robust_mod.spread_level_slope`): a slope of at least 1/2 (nearer a log scale's
      1 than an additive one's 0) by two standard errors. The Box–Cox comparison alone tips
      either way on a 1% difference where the level hardly varies (additive series with
      levels ±15%: log in 4 of 5).

    The cycle is the first one found on the values or, where they show none, on the
    logarithm: among level shifts a multiplicative cycle is often seen only there (5,000
    readings, 10 shifts: recall .31 → .715). A positive series with no cycle pays that second
    look (44 ms at 10⁵ readings, about .3 s at 10⁶).

    ``first``: the period of the values' first cycle (:func:`_without_cycle`), or None. The
    period returned is the log description's first cycle: judged to follow the level, it is
    a cycle of the logarithm, and not looked for again there (12 ms at 10⁵ readings)."""
    logs = np.log(x)
    period = first
    if period is None:
        period = robust_mod.detect_period(logs, min_period=2 * min_size)  # as _without_cycle
    if period is None:
        return None
    own, logged = robust_mod.cycle_noise(x, period), robust_mod.cycle_noise(logs, period)
    if not logged * math.exp(float(logs.mean())) < own:
        return None
    slope, se = robust_mod.spread_level_slope(x, period)
    return period if slope - 2.0 * se >= 0.5 else None


def _may_grow(x: FloatArray, model: _Description, min_effect: float) -> bool:
    """Whether a series may grow by a rate: one positive column whose trend is kept — or
    whose logarithm has a significant slope inside the segments found (step 6's criterion,
    on the log scale): a steep exponential's curvature reads as persistent noise about a
    line (its slope's |t| under 3) and is cut into a step, while a step of the level leaves
    no slope inside its segments on either scale (a whole-series line through it did: M/M/1
    power at N = 100, Δρ .3, .315 → .247) — and whose growth bends: see
    :func:`_bends_enough`."""
    dims = x.shape[1]
    if dims != 1 or not bool(np.all(x > 0)):
        return False
    cuts = sorted(p.index for p in model.accepted)
    if not (model.slope.any() or _significant_slopes(np.log(x), cuts).any()):
        return False
    return _bends_enough(x, model, min_effect)


def _bends_enough(x: FloatArray, model: _Description, min_effect: float) -> bool:
    """Whether growth by a rate would bend away from growth by an amount by at least
    ``min_effect`` noise σ (of log y): the log description can only explain the *values*
    better by its curved mean, or by its noise's scale alone (skewed noise, which the
    likelihood rewards whether or not the series grows by a rate).

    ``model``'s structure — its level points and cycle periods — is refitted on log ``x`` with
    the slope common to its segments, b. Each segment has its own level, so the two kinds of
    growth differ only inside segments: over the longest, L readings, e^(b t) leaves its chord
    by about (b L)² / 8 (of the level), compared with the robust σ about that refit. O(n), no
    search: a long series that drifts a little, its noise skewed (NAB's CPU series, the
    10⁵-reading speed series: (b L)² / 8 under a fifth of σ), is not described twice."""
    n = x.shape[0]
    y = np.log(x[:, 0])
    flat = y
    for period in model.periods:  # shortest first, as the description removed them
        flat = robust_mod.remove_cycle(flat, period)[0]
    bounds = [0, *sorted(p.index for p in model.accepted), n]
    growth = robust_mod.within_slope(flat, bounds[1:-1])[0]
    sigma = float(_residual_scale(_detrend(flat[:, None], np.array([growth])), bounds)[0])
    longest = max(b - a for a, b in itertools.pairwise(bounds))
    return bool((growth * longest) ** 2 / 8.0 >= min_effect * sigma)


def _better_on_log_scale(x: FloatArray, linear: _Description, logged: _Description) -> bool:
    """Whether the description of log ``x`` explains ``x`` better than ``linear`` does.

    Both are judged by their likelihood of the *same* data, the series' own values: the log
    description's Gaussian likelihood of log y is one of y once its Jacobian, Σ log y, is
    taken off (Box–Cox). Schwarz's criterion with each description's parameters, the
    evidence counted as ν = n (1 − φ)/(1 + φ) independent readings (the larger of the two
    fits'), as the trend's starts and the kinks compete (ν/n then scales the Jacobian too)."""
    n = x.shape[0]
    own, logs = x - linear.fitted(), np.log(x) - logged.fitted()
    nu = max(_fit_independent(own), _fit_independent(logs))
    jacobian = 2.0 * nu / n * float(np.log(x).sum())
    floors = [
        _rounding_floor(x, [own], linear.resolution),
        _rounding_floor(np.log(x), [logs], logged.resolution),
    ]
    # every residual at its full weight: which scale fits is a question about the tails
    return bool(
        _bic(logs, logged.parameters(), nu, floors[1], bounded=False) + jacobian
        < _bic(own, linear.parameters(), nu, floors[0], bounded=False)
    )


def _negligible(
    y: FloatArray, slope: FloatArray, accepted: list[ChangePoint], min_effect: float
) -> bool:
    """Whether the trend rises by less than ``min_effect`` noise σ over the whole series in
    every column. A column without noise about the fit (σ 0) has no rise below it: a
    noise-free line cut by a reset, ``t − 30·(t ≥ 60)``, kept its point and lost its slope."""
    n = y.shape[0]
    bounds = [0, *sorted(p.index for p in accepted), n]
    sigma = _residual_scale(y - np.outer(_ramp(n), slope), bounds)
    rise = np.abs(slope) * n
    return bool(np.all(rise < min_effect * sigma))


def _with_kinks(
    y: FloatArray,
    slope: float,
    accepted: list[ChangePoint],
    judged: Callable[..., list[kinks.Kink]],
    search: _Practical,
) -> tuple[list[ChangePoint], list[kinks.Kink], list[ChangePoint], Callable[[], Fit]]:
    """Changes of growth rate on a trending one-column series: (level points, kinks, level
    points dropped, the kept description's residuals and parameter count when asked).

    Three descriptions compete, as the trend's two starts do: the level search's (its segments
    and common slope, with the kinks found inside its segments); a broken line alone (the
    kinks of the whole series, no level point); and a broken line beside the level points
    whose step is significant with that broken line fitted alongside (:func:`_steps_beside`),
    its kinks found again on the series less those steps. A staircase of level points is how
    the level search draws a growth rate that bends (global temperature: steps at 42 and 147
    for bends at 62, 90 and 120); a real shift on a bending curve is one step beside the bends
    (a saturating rise rounded to a grid, a shift of 5 grid steps: the staircase, or bends
    that swallowed the shift). The best description by BIC is kept, the level search's on a
    tie. Two bends that undo each other (``find_kinks``' windows) are looked for where there is
    no level point, or where the broken line alone replaces at least two: a broken line with
    two kinks beside one level point is no simpler (California's accidents: a significant
    step at the 1986 seat-belt law became a ramp between two bends)."""
    n = y.size
    cuts = sorted(p.index for p in accepted)
    bounds = [0, *cuts, n]
    inside = judged(y, bounds, windows=not accepted)

    def own() -> Fit:
        """The level search's description: its segments and slope, the kinks inside them."""
        ramp = slope * _ramp(n)
        stepped = _segment_means(y[:, None] - ramp[:, None], cuts)[:, 0] + ramp
        stepped = kinks.broken_line(y, bounds, inside, stepped)
        # parameters: a position and a level per point, an intercept and the slope; a position
        # and a slope per kink, and its segment's own slope
        held = {a for a, b in itertools.pairwise(bounds) if any(a < k.index < b for k in inside)}
        return (y - stepped)[:, None], 2 * len(accepted) + 2 + 2 * len(inside) + len(held)

    if not accepted:
        return accepted, inside, [], own
    # A broken line alone rivals the level points with at most two kinks a step and one
    # more (a bending curve drawn as a staircase: two steps, four bends). Beyond, it draws
    # more than their staircase, and it is not the line the steps are measured beside either
    # (10⁵ additive readings, a trend and 10 steps: 36 kinks, and the steps' fits on their
    # 38 hinges took 1 of 1.3 s; at 10⁶, 67 kinks and 24 of 32 s)
    most = 2 * len(accepted) + 1
    alone = judged(y, [0, n], most=most, windows=len(accepted) >= 2)
    if len(alone) > most:
        alone = []
    resolution = search.grain()
    real = _steps_beside(y, alone, accepted, search)
    if not alone and not real:
        return accepted, inside, [], own
    described = [(*own(), accepted, inside)]
    if alone:
        broken = kinks.broken_line(y, [0, n], alone, np.zeros(n))
        described.append(((y - broken)[:, None], 2 * len(alone) + 2, [], alone))
    beside = _beside(y, [*alone, *inside], real, judged) if real else None
    if beside is not None:
        resid, found = beside
        described.append((resid[:, None], 2 * len(real) + 2 * len(found) + 2, real, found))
    # judged at the noise's effective count, as the trend's two starts are
    scores = _bic_scores(y[:, None], [(d[0], d[1]) for d in described], resolution)
    resid, params, kept, bends = described[int(np.argmin(scores))]
    return list(kept), bends, [p for p in accepted if p not in kept], lambda: (resid, params)


def _lines_of_a_flat(
    y: FloatArray,
    accepted: list[ChangePoint],
    judged: Callable[..., list[kinks.Kink]],
    search: _Practical,
) -> tuple[list[ChangePoint], list[kinks.Kink], list[ChangePoint]]:
    """The lines a flat one-column description may hold: a broken line alone
    (:func:`_broken_line_instead`), else a ramp between two jumps
    (:func:`_lines_between_jumps`) — (level points, kinks, level points dropped)."""
    kept, bends, replaced = _broken_line_instead(y, accepted, judged, search)
    if bends:
        return kept, bends, replaced
    return _lines_between_jumps(y, kept, search)


def _broken_line_instead(
    y: FloatArray,
    accepted: list[ChangePoint],
    judged: Callable[..., list[kinks.Kink]],
    search: _Practical,
) -> tuple[list[ChangePoint], list[kinks.Kink], list[ChangePoint]]:
    """A one-column series with no common slope kept: its level points, or the kinks of a
    broken line alone when that describes it better by BIC at the noise's effective count, as
    in :func:`_with_kinks` — (level points, kinks, level points dropped).

    A V, a Λ or a hockey stick changes its growth without an overall trend (latency falling
    then rising, a metric flat until a leak starts): searched only where a slope was kept, a
    V got no point and a hockey stick a level point in mid-ramp. Here the kink test's own size
    is at stake, not a kept slope's, so the broken line must also leave noise whose memory
    the test covers — φ implied by its long-run scale below the kink table's largest φ and
    below the memory the series can measure — and explain the series better than a random
    walk does (:func:`_beats_a_random_walk`). Beyond either, a bend is the noise's own wander
    (M/M/1 response times at ρ = .8, 100 readings: a busy period's rise and fall gave a false
    kink in .05 of series without them, 1 in 400 with them; AR(1) noise of φ = .95, 60
    readings, a kink in 1 of 20). And it must be the simpler description: at
    most one kink more than the level points, and at most :data:`_MOST_TURNS` (a V, a Λ with a
    plateau, a W) — a staircase drawn by kinks needs two a step, and searching them all cost a
    10⁵-reading series with 50 steps 0.18 s, doubling its time. So level points whose steps
    turn (up, then down) more often than that are kept as they are, unsearched. Two bends that
    undo each other (``find_kinks``' windows) are looked for only where they would replace at
    least two level points (a flat → ramp → flat drawn as a staircase)."""
    n = y.size
    ordered = sorted(accepted, key=lambda p: p.index)
    rises = [p.mean_after[0] > p.mean_before[0] for p in ordered]
    if sum(a != b for a, b in itertools.pairwise(rises)) > _MOST_TURNS:
        return accepted, [], []  # a staircase that turns more often than a few bends do
    most = min(len(accepted) + 1, _MOST_TURNS)
    alone = judged(y, [0, n], most=most, windows=len(accepted) >= 2)
    if not alone or len(alone) > most:
        return accepted, [], []
    broken = kinks.broken_line(y, [0, n], alone, np.zeros(n))
    resid = y - broken
    if not kinks.memory_covered(y, resid):
        return accepted, [], []
    if not kinks.noise_free(y, resid) and not _beats_a_random_walk(y, resid, 2 * len(alone) + 2):
        return accepted, [], []
    stepped = _segment_means(y[:, None], sorted(p.index for p in accepted))[:, 0]
    # parameters: a position and a level per point and the mean; a position and a slope per
    # kink, an intercept and the first slope
    described = [
        ((y - stepped)[:, None], 2 * len(accepted) + 1),
        (resid[:, None], 2 * len(alone) + 2),
    ]
    level, bent = _bic_scores(y[:, None], described, search.grain())
    if bent < level:
        return [], alone, list(accepted)
    return accepted, [], []


def _lines_between_jumps(
    y: FloatArray, accepted: list[ChangePoint], search: _Practical
) -> tuple[list[ChangePoint], list[kinks.Kink], list[ChangePoint]]:
    """A flat one-column description whose staircase is a ramp between two jumps (a service
    that starts, grows and saturates): (level points, kinks, level points dropped).

    The steps between two level points that all go one way are replaced by the segment's own
    line — two breaks, a level and a slope point at each end — when the ramp hides no step
    that is significant beside its own line (a hidden step's bar), the lines describe the
    series better by BIC at ν than the staircase and leave noise whose memory the kink test
    covers, and each end's slope changes beside its jump (a kink's gates,
    :func:`_turn_beside_the_jump`, between the end's neighbours). The pair of ends the BIC
    likes best that passes is taken; else the points are kept as they are."""
    n = y.size
    ordered = sorted(accepted, key=lambda p: p.index)
    if len(ordered) < 4:
        return accepted, [], []
    at = [p.index for p in ordered]
    rises = [p.mean_after[0] > p.mean_before[0] for p in ordered]
    side = max(search.min_size, kinks.MIN_SIDE)
    # the ends of each longest run of steps that go one way, or the points either side of it
    # (at most four pairs a run: the pairs inside a run were O(k²) fits of O(n) each)
    runs = [list(g) for _, g in itertools.groupby(range(len(at)), key=lambda m: rises[m])]
    pairs = {
        (i, j)
        for run in runs
        for i in (run[0] - 1, run[0])
        for j in (run[-1], run[-1] + 1)
        if i >= 0 and j < len(at) and j - i >= 3  # at least two inner steps
    }
    ramps = []
    for i, j in sorted(pairs):
        # the ramp is one line: its best step beside its own line is not significant, else
        # the staircase was real — small steps that all go one way, of which the level
        # search found some (a level series with 12 jumps of 2–12%: seven rising ones
        # between 650 and 1507 of 2,000, z² 51.8 at 1320 against a bar of 15; the idle
        # ramps' best steps 2–5 against 34). First, as it costs O(its length), not O(n).
        a, b = at[i], at[j]
        best = trend_steps.step_z2(y[a:b], side)
        bar = trend_steps.critical_z2(b - a, _HIDDEN_STEP_SHARE * search._level_alpha(b - a))
        if best is None or best[1] <= bar:
            ramps.append((i, j))
    if not ramps:
        return accepted, [], []
    stepped = _segment_means(y[:, None], at)[:, 0]
    staircase = ((y - stepped)[:, None], 2 * len(at) + 1)
    better = []
    for i, j in ramps:
        cuts = [k for m, k in enumerate(at) if m <= i or m >= j]
        lines, levels = _hinged_fit(y, [at[i], at[j]], cuts)
        level, bent = _bic_scores(y[:, None], [staircase, lines], search.grain())
        if bent < level:
            better.append((bent, i, j, lines[0][:, 0], levels))
    edges = [0, *at, n]  # edges[m + 1] is point m
    for _, i, j, resid, levels in sorted(better, key=lambda c: c[0]):
        if not kinks.memory_covered(y, resid):
            continue
        turns = []
        for m, a, b in ((i, edges[i], at[j]), (j, at[i], edges[j + 2])):
            alpha = _HIDDEN_STEP_SHARE * search._level_alpha(b - a)
            turn = _turn_beside_the_jump(y[a:b], at[m] - a, alpha, search)
            if turn is not None:
                turns.append(dataclasses.replace(turn, index=at[m], start=a, stop=b))
        if len(turns) < 2:
            continue
        # each end's jump is its step in the fit (the lines either side are its own)
        kept = [
            dataclasses.replace(p, shift=(float(levels[p.index] - levels[p.index - 1]),))
            if m in (i, j)
            else p
            for m, p in enumerate(ordered)
            if m <= i or m >= j
        ]
        return kept, turns, ordered[i + 1 : j]
    return accepted, [], []


def _beats_a_random_walk(y: FloatArray, resid: FloatArray, params: int) -> bool:
    """Whether a fit of ``y`` with these residuals and ``params`` parameters, its errors
    AR(1) (φ their lag-1 autocorrelation), explains ``y`` better by Schwarz's criterion than a
    random walk, whose first differences are the noise. The variances are robust (MAD) ones:
    a spike is two outsized differences of the walk and one residual of the fit, and would
    count for the fit. A bend a random walk explains as well is the walk's own drift."""
    n = y.size
    phi = kinks.long_run(resid)[1]
    walk = robust_mod.robust_scale(np.diff(y)) ** 2
    fit = robust_mod.robust_scale(resid[1:] - phi * resid[:-1]) ** 2
    if walk <= 0.0 or fit <= 0.0:
        return fit <= 0.0
    m = n - 1
    return bool(m * math.log(fit) + (params + 2) * math.log(m) < m * math.log(walk) + math.log(m))


def _hinges(n: int, at: Sequence[int]) -> list[FloatArray]:
    t = _ramp(n)
    return [np.ones(n), t, *(np.maximum(t - k, 0.0) for k in at)]


def _steps_beside(
    y: FloatArray, alone: list[kinks.Kink], accepted: list[ChangePoint], search: _Practical
) -> list[ChangePoint]:
    """The level points of ``accepted`` whose step is real beside the broken line ``alone``
    (its line and hinges fitted alongside, each step on its own): it passes the gates a
    hidden step passes (``trend_steps.best_step``) — **significant** against the bar of the
    best step of a line at half the level spent on the series (noise as in
    ``kinks.long_run``, the rounding's share white), **large** (``min_effect`` robust σ of
    the residuals and the relative floor) and **worth its cost** — and is at least one grid
    step: a smaller step beside a moving quantity is what the rounding makes (a saturating
    rise rounded, no noise: a step of .56 grid steps at z² 43 against a bar of 18)."""
    n = y.size
    rounding = float(search.grain()[0])
    # the broken line's design, orthonormal: each step is then fitted in O(n) (its part the
    # broken line explains, Qᵀs, from suffix sums of Q), not by a least-squares fit of its own
    q, _ = np.linalg.qr(np.column_stack(_hinges(n, [k.index for k in alone])))
    base = y - q @ (q.T @ y)  # residuals about the broken line
    after = np.cumsum(q[::-1], axis=0)[::-1]  # after[i] = Qᵀ 1(t ≥ i)
    tail = np.cumsum(base[::-1])[::-1]
    bar = trend_steps.critical_z2(n, _HIDDEN_STEP_SHARE * search._level_alpha(n))
    total = float(base @ base)
    columns = np.ascontiguousarray(q.T)  # Q's columns each contiguous: Q a three times as fast
    real = []
    for p in accepted:
        spread = (n - p.index) - float(after[p.index] @ after[p.index])  # |s less Q Qᵀ s|²
        if spread <= 0.0:
            continue
        beta = float(tail[p.index]) / spread
        step = abs(beta)
        white = (total - beta**2 * spread) / max(n - 3, 1)
        # cheap gates first: a grid step, and significant even as white noise (the long-run
        # variance is at least the white one)
        if step < math.sqrt(12.0) * rounding or white <= 0.0 or beta**2 * spread / white <= bar:
            continue
        regressor = -(after[p.index] @ columns)  # the step 1(t ≥ i) less its part on the line
        regressor[p.index :] += 1.0
        resid = np.multiply(regressor, -beta, out=regressor)  # base − β regressor, in place
        resid += base
        # the fitted values, y − resid, only where they are asked for (10⁶ readings: 1 ms)
        share = kinks.rounding_share(y - resid, rounding) if rounding > 0.0 else 0.0
        variance, phi = kinks.long_run(resid, share)
        if variance <= 0.0:
            continue
        z2 = beta**2 * spread / variance
        floor = -math.expm1(-step) if search.log_levels else step / float(np.max(np.abs(y - resid)))
        shorter = min(p.index, n - p.index)
        if (
            z2 > bar
            and step >= search.min_effect * robust_mod.robust_scale(resid)
            and floor >= search.min_relative_change
            and z2 >= _cost(search.penalty, n, shorter, n * (1 - phi) / (1 + phi))
        ):
            real.append(p)
    return real


def _beside(
    y: FloatArray,
    bends: list[kinks.Kink],
    real: list[ChangePoint],
    judged: Callable[..., list[kinks.Kink]],
) -> tuple[FloatArray, list[kinks.Kink]] | None:
    """(residuals, kinks) of the broken line beside the steps ``real``: the steps measured
    beside the hinges of ``bends`` (the broken line's alone and those inside the level
    search's segments: a step that also ends a line the broken line alone cannot draw, a
    counter's reset after its rate rose, leaves no kink of the whole series, and measured
    beside a straight line it took up the rise and hid it), the kinks found again on the
    series less them, all refitted jointly. None when it has more than one kink beyond those
    bends: like the broken line alone (:func:`_with_kinks`), such a line is no rival, and each
    kink is a column of the joint fit (10⁶ additive readings, a trend, 10 steps and bursts of
    heavy-tailed noise: 29 kinks beside 16 steps, 4.8 of 7.8 s)."""
    n = y.size
    cuts = sorted({p.index for p in real})
    at = sorted({k.index for k in bends})
    _, steps = _steps_and_hinges(y, at, cuts)
    most = len(at) + 1
    found = judged(y - steps, [0, n], most=most, windows=True)
    if len(found) > most:
        return None
    resid, _ = _steps_and_hinges(y, [k.index for k in found], cuts)
    return resid, found


def _hinged_fit(y: FloatArray, at: list[int], cuts: list[int]) -> tuple[Fit, FloatArray]:
    """:func:`_steps_and_hinges` as a description for :func:`_bic_scores`: ((residuals,
    parameters), the steps' part of the fit). Parameters: a level per step, a slope per
    hinge, a position per reading where either changes (a break, a step and a hinge at one
    reading, has one), the line's intercept and slope."""
    resid, steps = _steps_and_hinges(y, at, cuts)
    return (resid[:, None], len(cuts) + len(at) + len({*cuts, *at}) + 2), steps


def _steps_and_hinges(
    y: FloatArray, at: list[int], cuts: list[int]
) -> tuple[FloatArray, FloatArray]:
    """The least-squares fit of ``y`` (one column) by a line with hinges at ``at`` and steps
    at ``cuts`` (sorted): (residuals, the steps' part of the fit, 0 before the first step).

    The intercept and the steps are a level per segment of ``cuts``, so they are partialled
    out (Frisch–Waugh–Lovell): the line's slope and hinges are fitted to ``y`` less its
    segment means by themselves less theirs, and the levels are what is left. A column a
    step made the fit O(n (steps + hinges)²) and the columns n × steps floats (56 steps of
    10⁶ readings: 4.8 s and 450 MB)."""
    design = np.column_stack(_hinges(y.size, at)[1:])
    within = design - _segment_means(design, cuts)
    target = y - _segment_means(y[:, None], cuts)[:, 0]
    coef, *_ = np.linalg.lstsq(within, target, rcond=None)
    resid = target - within @ coef
    levels = y - design @ coef - resid
    return resid, levels - levels[0]


def _with_slope_points(
    points: tuple[ChangePoint, ...],
    bends: list[kinks.Kink],
    x: FloatArray,
    unit: FloatArray,
    scale: Scale,
) -> tuple[tuple[ChangePoint, ...], tuple[Segment, ...], list[int]]:
    """The level points and the kinks as one sorted result: (points, segments, bounds). On
    the log scale a kink's slopes are growth rates (e^slope − 1 per reading)."""

    def growth(slope: float) -> tuple[float]:
        return (math.expm1(slope),) if scale == "log" else (float(unit[0]) * slope,)

    n = x.shape[0]
    bounds = sorted({0, n, *(p.index for p in points), *(k.index for k in bends)})
    segments = tuple(Segment(a, b, _mean(x[a:b], unit)) for a, b in itertools.pairwise(bounds))
    where = {b: i for i, b in enumerate(bounds)}
    slopes = [
        ChangePoint(
            index=k.index,
            statistic=k.statistic,
            critical_value=k.critical_value,
            p_value=k.p_value,
            alpha=k.alpha,
            phi=k.phi,
            phi_residual=k.phi,
            level=0,
            start=k.start,
            stop=k.stop,
            mean_before=segments[where[k.index] - 1].mean,
            mean_after=segments[where[k.index]].mean,
            shift=(0.0,),
            effect=k.effect,
            spread_before=_spread(x[bounds[where[k.index] - 1] : k.index], unit),
            spread_after=_spread(x[k.index : bounds[where[k.index] + 1]], unit),
            strength=k.statistic,
            kind="slope",
            slope_before=growth(k.slope_before),
            slope_after=growth(k.slope_after),
            scale=scale,
        )
        for k in bends
    ]
    merged = tuple(sorted([*points, *slopes], key=lambda p: p.index))
    return merged, segments, bounds


def _log_rounding(x: FloatArray, rounding: FloatArray) -> FloatArray:
    """The rounding σ of log ``x`` (positive, n × k), per column: the rounding σ of ``x``
    divided by the values (the RMS of σ / x_t)."""
    return np.asarray(rounding * np.sqrt(np.mean(x**-2.0, axis=0)), dtype=np.float64)


def _auto_min_size(n: int) -> int:
    return max(1, min(_SMALL_MIN_SIZE, n // 4))


def _rescaled(x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``x`` with each column divided by a power of two that brings its largest magnitude
    into [1, 2) when that is above 1e100 or below 1e-100 (squares would overflow, or
    underflow to 0), and those factors (1 for the other columns; per column, for one scale
    for all put a normal column beside one of 1e308 at 1e-308). The power below the largest:
    the one above is 2¹⁰²⁴ for values near the largest double, itself beyond a double."""
    top = np.max(np.abs(x), axis=0) if x.size else np.zeros(x.shape[1])
    unit = np.ones(x.shape[1])
    for j, largest in enumerate(top.tolist()):
        if largest != 0.0 and not 1e-100 <= largest <= 1e100:
            unit[j] = math.ldexp(1.0, math.frexp(largest)[1] - 1)
    return (x / unit if np.any(unit != 1.0) else x), unit


_TREND_MIN_LENGTH = 20  # shorter series: too few points to tell a trend from noise
_MOST_TURNS = 3  # kinks of a broken line that may replace the level points of a flat series
_TREND_ROUNDS = 2  # refits of the common slope; the search settles after one or two
_PRUNE_MAX = 40  # most change points of a trend model checked by backward elimination
_LEAN_T = 1.5  # |t| of the within-segment slope that makes a trend worth trying
_TREND_T = 3.0  # |t| of the within-segment slope above which the trend is removed
# The hidden-step test is a second test of a segment's "no level shift", after the level
# search's: half the level spent on the segment (at the whole level, machine tune
# `pg_trend_latency`, a latency trend that dips and rises again, got a false step at p = .048).
_HIDDEN_STEP_SHARE = 0.5


def _ramp(n: int) -> FloatArray:
    return np.arange(n, dtype=np.float64)


def _detrend(y: FloatArray, slope: FloatArray) -> FloatArray:
    return y - np.outer(_ramp(y.shape[0]), slope)


def _alternate(
    searched: Callable[[FloatArray, list[int]], tuple[list[ChangePoint], Sequence[ChangePoint]]],
    y: FloatArray,
    slope: FloatArray,
    accepted: list[ChangePoint],
    rejected: Sequence[ChangePoint],
) -> tuple[FloatArray, list[ChangePoint], Sequence[ChangePoint]]:
    """Refit the within-segment slope and search again (``searched(slope, points)``: the
    series less the slope, from the points) until the slope settles."""
    for _ in range(_TREND_ROUNDS):
        refit = _significant_slopes(y, sorted(p.index for p in accepted))
        if np.array_equal(refit, slope):
            break
        slope = refit
        accepted, rejected = searched(slope, [p.index for p in accepted])
    return slope, accepted, rejected


def _prune_with_trend(
    y: FloatArray, slope: FloatArray, accepted: list[ChangePoint], resolution: FloatArray
) -> tuple[FloatArray, list[ChangePoint], list[ChangePoint]]:
    """Drop change points that BIC does not want once the slope is refitted without them.

    A slope a little off leaves ramps inside the segments, which the search then cuts, and
    the alternation can settle on such a staircase-on-a-trend; so can a search with no slope
    at all, when the slope inside its steps is too weak to be removed (a cycle left in the
    residuals inflates its standard error) and the cost of a long side is low. Backward
    elimination removes those cuts one at a time (the one whose removal lowers BIC most, with
    the slope refitted, which must then be significant: the trend takes the cut's place) while
    BIC falls. Only for trend models with few change points (the cost is quadratic in their
    number).
    """
    kept = sorted(accepted, key=lambda p: p.index)
    pruned: list[ChangePoint] = []
    if len(kept) > _PRUNE_MAX:
        return slope, kept, pruned
    start = _trend_fit(y, slope, kept)
    floor = _rounding_floor(y, [start[0]], resolution)
    current = _bic(*start, resolution=floor)
    while kept:
        options = []
        for i in range(len(kept)):
            rest = kept[:i] + kept[i + 1 :]
            refit = _significant_slopes(y, [p.index for p in rest])
            if refit.any():
                options.append((_bic(*_trend_fit(y, refit, rest), resolution=floor), i, refit))
        best, i, refit = min(options, key=lambda o: o[0], default=(math.inf, -1, slope))
        if best >= current:
            break
        current, slope = best, refit
        pruned.append(kept.pop(i))
    return slope, kept, pruned


def _sloped(y: FloatArray, accepted: list[ChangePoint]) -> bool:
    cuts = sorted(p.index for p in accepted)
    return any(abs(robust_mod.within_slope(y[:, j], cuts)[1]) > _LEAN_T for j in range(y.shape[1]))


def _monotone(y: FloatArray, accepted: list[ChangePoint]) -> bool:
    """Whether the segment means of some column only rise or only fall (a staircase: two
    steps at least; one step is a level shift, which a line through it would swallow)."""
    if len(accepted) < 2:
        return False
    bounds = [0, *sorted(p.index for p in accepted), y.shape[0]]
    steps = np.diff([y[a:b].mean(axis=0) for a, b in itertools.pairwise(bounds)], axis=0)
    return bool(np.any(np.all(steps > 0, axis=0) | np.all(steps < 0, axis=0)))


def _trend_fit(
    y: FloatArray, slope: FloatArray, accepted: list[ChangePoint]
) -> tuple[FloatArray, int]:
    """The residuals and parameter count of "segment means + common slopes": each change point
    costs its position and one mean per column, each nonzero slope one parameter."""
    level = _detrend(y, slope)
    resid = level - _segment_means(level, sorted(p.index for p in accepted))
    params = len(accepted) * (y.shape[1] + 1) + int(np.count_nonzero(slope))
    return resid, params


def _rounding_floor(
    y: FloatArray, fits: Sequence[FloatArray], resolution: FloatArray
) -> FloatArray:
    """Per column, the floor on the residual σ of fits of ``y`` compared with ``fits``
    (residuals, n × columns): the values' rounding σ (``resolution``, q/√12) times the share
    of a grid step q their fitted means travel, at most 1.

    A slow quantity recorded on a grid coarser than its noise is an exact staircase: its
    residuals about its steps are 0 (a BIC of −∞), while those of the line it is are the
    rounding error (a rounded line, 1 unit per 10 readings, was 20 level points). The data
    cannot show noise finer than its rounding — but the rounding error is q/√12 only for a
    quantity that moves through the grid: one that stays within a cell is rounded by a
    constant, part of its level, and one that moves a share D of a cell by at most D q/√12.
    Floored at the full q/√12, the real noise of rare-event counts (a rate of .01 a reading,
    σ ≈ .1) was no longer told from a line: a step to 10 times the rate became a trend
    (n = 1,000: found in .47 → .43 of series)."""
    return np.array(
        [
            max(kinks.rounding_share(y[:, j] - resid[:, j], float(resolution[j])) for resid in fits)
            for j in range(y.shape[1])
        ]
    )


def _bic(
    resid: FloatArray,
    params: int,
    independent: float | None = None,
    resolution: FloatArray | None = None,
    bounded: bool = True,
) -> float:
    """Schwarz's criterion of a fit with residuals ``resid`` (n × columns) and ``params``
    parameters. ``independent``: the readings' evidence counted as that many independent ones
    (ν ln(RSS/n) + k ln ν), for persistent noise, whose steps, slopes and bends a count of n
    would take for signal. ``resolution``: per column, a floor on the residual σ (the values'
    rounding, :func:`_rounding_floor`). ``bounded``: gross residuals count at most
    :data:`_GROSS` robust σ (:func:`_bounded`)."""
    n = resid.shape[0]
    finest = np.finfo(float).tiny if resolution is None else n * resolution**2
    if bounded:
        resid = _bounded(resid)
    rss = np.maximum((resid**2).sum(axis=0), np.maximum(finest, np.finfo(float).tiny))
    nu = n if independent is None else independent
    return float(nu * np.log(rss / n).sum() + params * math.log(nu))


_GROSS = 50.0  # robust σ of the residuals beyond which a reading is gross
_GROSS_SAMPLE = 2_000  # evenly spaced residuals the robust σ is measured on


def _bounded(resid: FloatArray) -> FloatArray:
    """``resid`` (n × columns) with each column's residuals held within :data:`_GROSS` robust
    σ of their median, both measured on an evenly spaced sample of ~2,000 (all of a shorter
    series): a reading that far out is a spike (a spike finding) whose square would otherwise
    decide between descriptions. A zero reading first in 100 readings of 1,000 ± 10 with a
    step of +100 at 50 tilted the line through them enough that the line won against the step
    (found in 19 of 40 series; `benchmarks/changepoints_gross_spike.py --zeros`). Residuals
    no further out are returned as they are (the same array).

    The σ is of the residuals that move: readings a description fits exactly (idle zeros, a
    pegged gauge; up to float rounding) show no noise. With them, half a series idle made σ
    a ten-thousandth of the noise's, every residual "gross", and a staircase beat the ramp it
    draws (idle, a ramp, idle again; ``test_breaks.py``)."""
    out = resid
    for j in range(resid.shape[1]):
        r = resid[:, j]
        sample = r[:: max(1, r.size // _GROSS_SAMPLE)]
        centre = robust_mod.median(sample)
        off = np.abs(sample - centre)
        moving = sample[off > grid.float_sigma(float(off.max()))] if off.size else off
        reach = _GROSS * robust_mod.robust_scale(moving) if moving.size else 0.0
        if reach <= 0.0 or (r.min() >= centre - reach and r.max() <= centre + reach):
            continue
        if out is resid:
            out = resid.copy()
        np.clip(r, centre - reach, centre + reach, out=out[:, j])
    return out


def _bic_scores(y: FloatArray, fits: Sequence[Fit], resolution: FloatArray) -> list[float]:
    """Each description's :func:`_bic` as descriptions of ``y`` are compared: at the effective
    count of the most independent one's residuals (:func:`_fit_independent`), every residual
    σ floored at the values' rounding (:func:`_rounding_floor`)."""
    nu = max(_fit_independent(resid) for resid, _ in fits)
    floor = _rounding_floor(y, [resid for resid, _ in fits], resolution)
    return [_bic(resid, params, nu, floor) for resid, params in fits]


def _fit_independent(resid: FloatArray) -> float:
    """How many independent readings a fit's residuals (n × columns) hold: n (1 − φ)/(1 + φ),
    φ their AR(1) φ from first differences (the most persistent column), capped at the memory
    the series can show (:func:`robust_mod.memory_cap`, as for the level test)."""
    n = resid.shape[0]
    phi = max(robust_mod.difference_phi(resid[:, j]) for j in range(resid.shape[1]))
    phi = min(phi, robust_mod.memory_cap(n))
    return float(n * (1.0 - phi) / (1.0 + phi))


def _significant_slopes(y: FloatArray, cuts: list[int]) -> FloatArray:
    """Per column: the slope common to the segments, or 0 where its |t| is at most _TREND_T."""
    fitted = [robust_mod.within_slope(y[:, j], cuts) for j in range(y.shape[1])]
    return np.array([s if abs(t) > _TREND_T else 0.0 for s, t in fitted])


_MOST_CYCLES = 3  # cycles removed in turn (a day in a week in a year)
_LATER_CYCLE_SHARE = 0.15  # of the variation left, a sine at detect_period's contrast bar (.3)


def _without_cycle(
    x: FloatArray, min_size: int, first: int | None = _LOOK
) -> tuple[FloatArray, tuple[int, ...], FloatArray]:
    """Remove the cycles found in any column, shortest first: (series, periods, the cycles
    removed per column). ``first``: the first one's period (None: no cycle), when already
    looked for.

    Operations data often has several nested cycles (a day within a week). Each is removed in
    turn and the next, at least twice as long, looked for in what is left (of every column, the
    shortest period found is removed from all of them): a shorter cycle is measured first
    because a longer one is part of the slow part it is measured against, and once it is
    removed, the longer one's profile no longer carries it (a weekly profile has a seventh of
    the cycles a daily one has to take its median over). Looking only for the first period
    removed the daily cycle of half-hourly taxi rides and left the weekly one in.

    A later cycle must take a share of what is left, as a profile: .15, what a sine at the
    detection's bar takes (a contrast of .3 is twice its share), and twice what a median profile
    of noise takes ((π/2) P / n). A cycle whose amplitude follows the level is removed only in
    part, and what is left oscillates at its period in every stretch but with no common
    profile, which the autocorrelation sees at three times the period (the speed benchmark's
    288 showed at 864, a share of .0002 and .009 at 10⁶ readings). And it must not be what a
    removed one left (:func:`_leftover`). The first cycle is judged by its autocorrelation
    alone: the share, by robust scales, undercounts a cycle that grows with the level (R's
    UKgas: −.41; the speed benchmark's 288 at 10⁶ × 50: −.03) and would drop it.

    Nothing is clipped: spikes stay in the series, where the search's symmetrising transform
    and robust scales keep them from becoming segments (``_spikes`` reports them).
    """
    n, dims = x.shape
    flat = x
    periods: list[int] = []
    shortest = 2 * min_size  # a shorter cycle cannot create a change point on its own
    while len(periods) < _MOST_CYCLES:
        if periods or first == _LOOK:
            found = [robust_mod.detect_period(flat[:, j], min_period=shortest) for j in range(dims)]
            period = min((p for p in found if p is not None), default=None)
        else:
            period = first
        if period is None:
            break
        removed = [robust_mod.cycle_share(flat[:, j], period) for j in range(dims)]
        share = max(share for _, _, share in removed)
        if periods and share < max(_LATER_CYCLE_SHARE, math.pi * period / n):
            break
        if any(_leftover([profile for _, profile, _ in removed], p) for p in periods):
            break
        flat = np.column_stack([part for part, _, _ in removed])
        periods.append(period)
        # a longer cycle that this one divides (a week of days) is at least twice as long, and
        # one within the octave above is this one's drift: in two columns whose cycle of 288
        # was found at 287 and 288, the second column's was found again at 295
        shortest = 2 * period
    return flat, tuple(periods), x - flat


def _leftover(profiles: list[FloatArray], removed: int) -> bool:
    """Whether cycles of these profiles are what a cycle of period ``removed`` left: their
    period is a multiple of it and most of their variance repeats every ``removed`` readings.

    On a trend, the running median a profile is measured against depends on the phase (the
    median of a window holding a whole cycle of ±3 on a rise of .07 a reading, as co2's, is
    off by up to ±.5), that bias stays in the series, and it oscillates at the period: seen at
    three times it (a co2-like series: 36 after 12, .75-.84 of its profile repeating every 12).
    A weekly cycle left after the daily one does not repeat daily."""
    if profiles[0].size % removed:
        return False
    total = repeating = 0.0
    for profile in profiles:
        folded = np.resize(profile.reshape(-1, removed).mean(axis=0), profile.size)
        total += float(profile @ profile)
        repeating += float(folded @ folded)
    return repeating >= 0.5 * total


def _spikes(
    resid: FloatArray, bounds: list[int], min_size: int
) -> tuple[tuple[int, ...], tuple[SpikeRun, ...]]:
    """Observations more than ``_SPIKE_K`` robust σ from the model in some column, each judged
    against the noise of its own segment (:func:`_spike_sizes`), and the same grouped into runs
    (none more than ``min_size`` from the next), largest first."""
    size = np.zeros(resid.shape[0])
    for j in range(resid.shape[1]):
        size = np.maximum(size, _spike_sizes(resid[:, j], bounds))
    spikes = np.flatnonzero(size > _SPIKE_K)
    runs = []
    for run in np.split(spikes, np.flatnonzero(np.diff(spikes) > min_size) + 1):
        if run.size:
            peak = int(run[np.argmax(size[run])])
            runs.append(SpikeRun(int(run[0]), int(run[-1]) + 1, peak, float(size[peak]), run.size))
    runs.sort(key=lambda r: (-r.size, r.index))
    return tuple(int(i) for i in spikes), tuple(runs)


_SPIKE_OWN_SCALE = 25  # readings a segment needs to be judged on a spread of its own


def _spike_sizes(column: FloatArray, bounds: list[int]) -> FloatArray:
    """Each residual's distance from the model in robust σ of its own segment's noise: a busier
    service is noisier, and judged on one scale for the whole series the ordinary tail of its
    noisier segments became "spikes" (the demo's M/M/1 services after their load rose showed 7).
    Each segment's residuals are first put in units of its own spread (median absolute
    deviation about its median, which spikes up to half the segment do not move), then all
    are judged on one bulk-symmetrised scale: the shape of the noise is fitted on the whole
    series, not per segment, whose spikes may outnumber the 5% tails left out of a fit (5 in 51
    readings); spikes making some 10% of the whole series still do (docs/changepoints.md, Not
    done). A segment shorter than ``_SPIKE_OWN_SCALE`` keeps the whole series' spread: its MAD
    would err by 23% or more (≈ 1.17/√n)."""
    whole = robust_mod.robust_scale(column)
    z = column - robust_mod.median(column)
    for a, b in itertools.pairwise(bounds):
        if b - a >= _SPIKE_OWN_SCALE:
            part = column[a:b]
            spread = robust_mod.robust_scale(part)
            z[a:b] = (part - robust_mod.median(part)) * (whole / spread if spread > 0 else 1.0)
    return _scaled_distance(z)


def _scaled_distance(column: FloatArray) -> FloatArray:
    """Each residual's size in noise σ (:func:`_bulk_distance`); where most residuals are one
    value, how rare each is under its own tail (:func:`_tied_tail_distance`).

    A value held by a quarter to a half of the readings is either a point mass beside the
    noise (:func:`_point_mass`: a gauge that holds 3.0, an idle floor), left out of σ — counted
    in, it shrank the MAD by a third or more, and a gauge at 3.0 in 30% / 45% of readings,
    N(3, 1) otherwise, showed a false spike in .72 / .99 of series — or the mode of a lattice
    (counts of a few events), which stays in σ: leaving it out inflated σ (a burst of +19 in
    100 Poisson counts at λ = 3 found in .72 of series, not .90). On such a lattice the bulk's
    λ is fitted on a handful of values and swings between samples (.08–.74 for one Poisson;
    a log-like λ made 101 events 2.9 σ), while its tail fit calls a busy state's readings in
    the upper tail ordinary: a reading is a spike where either calls it one."""
    held = _most_held(column)
    if held is None or 4 * held[1] < column.size:
        return _bulk_distance(column)
    value, count = held
    if 2 * count >= column.size:
        return _tied_tail_distance(column - value)
    if _point_mass(column, value, count):
        return _bulk_distance(column, noise=column != value)
    return np.maximum(_bulk_distance(column), _tied_tail_distance(column - value))


def _bulk_distance(column: FloatArray, noise: NDArray[np.bool_] | None = None) -> FloatArray:
    """|r| / robust σ of r, r the residuals on their bulk-symmetrised scale about its median,
    σ from the readings ``noise`` marks (all by default)."""
    r = _bulk_symmetrised(column)
    r -= robust_mod.median(r)
    sigma = robust_mod.robust_scale(r if noise is None else r[noise])
    return np.abs(r) / sigma if sigma > 0 else np.zeros_like(r)


def _most_held(column: FloatArray) -> tuple[float, int] | None:
    """The value ``column`` holds most often among those at its quartiles (the smallest of
    equals), and how often, unless it holds nothing else. Any value held by a quarter of the
    readings or more is at a quartile."""
    n = column.size
    if n == 0:
        return None
    at = sorted({round(i * (n - 1) / 4) for i in range(5)})
    values = sorted({float(v) for v in np.partition(column, at)[at]})
    counts = [int(np.count_nonzero(column == v)) for v in values]
    k = int(np.argmax(counts))
    return (values[k], counts[k]) if counts[k] < n else None


def _point_mass(column: FloatArray, value: float, count: int) -> bool:
    """Whether ``value``, held ``count`` times, holds more than twice as many readings as any
    other value: a point mass beside the noise, not the mode of a lattice (Poisson and
    geometric counts reach that ratio only where their mode holds half the readings)."""
    _, others = np.unique(column[column != value], return_counts=True)
    return 2 * int(others.max()) < count


def _pickands_shape(low: float, middle: float, high: float) -> float:
    """A tail's shape ξ from three of its quantiles, each at half the survival of the one
    before (Pickands 1975), between 0 (exponential) and 1: heavier than exponential where
    the second gap is the wider."""
    if high <= middle or middle <= low:
        return 0.0
    return min(max(math.log2((high - middle) / (middle - low)), 0.0), 1.0)


_LOG_P_FLOOR = -1e300  # a tail probability's log is never below this: sizes stay finite


def _tied_tail_distance(centred: FloatArray) -> FloatArray:
    """Each residual's rarity, as the standard normal quantile of its tail probability, where
    at least half the residuals are 0 (counts of rare events, an idle queue, a gauge that holds
    a value), or a quarter are and 0 is a lattice's mode (:func:`_scaled_distance`). There
    the symmetrising fit has no shape to fit, or a fragile one: λ fitted on a lattice of 0s, 1s
    and 2s reached −1, whose bounded scale set a burst of 100 events next to 2; and the
    typical move alone calls an idle queue's ordinary tail "spikes" (lengths of 8–10 against a
    move of 1).

    Each side is judged against a tail fitted to its own distances d from that value: P(|r| ≥
    d) = p·S(d), p the share of readings on that side. Where the distances spread (d₀ < median
    < upper quartile, d₀ the smallest), S is a generalised Pareto survival above their median
    whose shape is the heavier of Pickands' from d₀, the median and the upper quartile and from
    the median, the upper quartile and the 7/8 quantile: a mostly idle disk's bursts of writes
    spanning decades, or of lognormal size, are their own ordinary tail (the first alone
    showed "spikes" in .26 of series of lognormal bursts). On a lattice, S is geometric, with
    the share beyond the first step one step (d₀, a count's unit) along, but never rarer at the
    distances' 90th percentile than they are there (a gauge at 0.066 that often reads 0.068
    and 0.134 has steps of 0.002 and 0.068). Past that percentile it falls at the hazard the
    readings show there where at least 10 show it and it is the steeper: a Poisson's hazard
    grows along its tail (a burst of +10 in 600 counts at λ = .5 found in .44 → .62 of
    series), an overdispersed count's does not. Quantiles fit S, not the mean, so the readings
    judged do not choose it."""
    from scipy.special import ndtri_exp  # heavy import; only tied residuals need it

    size = np.zeros_like(centred)
    # distances spanning 600 decades overflow to an infinite rarity, which the floor bounds
    with np.errstate(over="ignore", invalid="ignore"):
        for side in (centred, -centred):
            beyond = side > 0
            if not beyond.any():
                continue
            dist = side[beyond]
            log_p = math.log(dist.size / centred.size) + _log_survival(dist)
            size[beyond] = -ndtri_exp(np.maximum(log_p, _LOG_P_FLOOR))
    return np.maximum(size, 0.0)


_HAZARD_READINGS = 10  # readings past a lattice's 90th percentile that show its hazard there


def _log_survival(dist: FloatArray) -> FloatArray:
    """log P(D ≥ d) of each of the positive distances ``dist`` under the tail fitted to them
    (:func:`_tied_tail_distance`): a burst of 100 events is e^-300 rare."""
    first = float(dist.min())
    quantiles = np.quantile(dist, [0.5, 0.75, 0.875, 0.9], method="lower")
    median, upper, top, ninetieth = (float(q) for q in quantiles)
    if first < median < upper:  # generalised Pareto above the median
        shape = max(_pickands_shape(first, median, upper), _pickands_shape(median, upper, top))
        above = np.maximum(dist - median, 0.0)
        if shape > 0:
            sigma = shape * (upper - median) / (2.0**shape - 1.0)
            log_tail: FloatArray = math.log(0.5) - np.log1p(shape * above / sigma) / shape
            return log_tail
        return math.log(0.5) - math.log(2.0) * above / (upper - median)
    along = dist - first  # a lattice: geometric, one step (= first) per unit
    rate = -math.log(max(int(np.count_nonzero(along > 0)), 1) / dist.size) / first
    if ninetieth <= first:
        return np.where(along > 0, -rate * along, 0.0)
    at = int(np.count_nonzero(dist >= ninetieth))
    rate = min(rate, -math.log(at / dist.size) / (ninetieth - first))
    log_tail = np.where(along > 0, -rate * along, 0.0)
    far = dist > ninetieth
    beyond = int(np.count_nonzero(far))
    if beyond >= _HAZARD_READINGS:  # past the 90th percentile, the hazard seen there
        hazard = -math.log(beyond / at) / (float(dist[far].min()) - ninetieth)
        if hazard > rate:
            log_tail[far] = -rate * (ninetieth - first) - hazard * (dist[far] - ninetieth)
    return log_tail


_SPIKE_FIT_TAIL = 0.05  # share of each tail of the residuals left out of the spike scale's fit


def _bulk_symmetrised(column: FloatArray) -> FloatArray:
    """The Yeo–Johnson transform of ``column`` with λ fitted (and the unit taken) on its central
    90% only: the values to be judged as spikes do not choose the scale that judges them. Fitted
    on everything, three readings of +20–40 σ among 300 Gaussian ones pulled λ to −1, whose
    ceiling squeezed them together: a −2.8 σ reading became the largest "spike" and the +20 σ
    one none; lognormal noise with two readings ×20 had no spike at all. With 1% of each tail
    left out, four spikes in 120 readings still chose λ; with 10%, the lognormal's own tail
    began to count as spikes."""
    centred = column - robust_mod.median(column)  # (np.median's value, faster)
    lo, hi = np.quantile(centred, [_SPIKE_FIT_TAIL, 1.0 - _SPIKE_FIT_TAIL])
    bulk = centred[(centred >= lo) & (centred <= hi)]
    unit = float(np.std(bulk)) or float(np.std(centred))
    if unit <= 0.0 or not math.isfinite(unit):
        return centred  # constant
    step = max(1, bulk.size // _SYMMETRISE_FIT_POINTS)
    lam = min(max(_yeojohnson_lambda(bulk[::step] / unit), _LAMBDA_MIN), _LAMBDA_MAX)
    return _yeojohnson(centred / unit, lam)


def _residual_scale(level: FloatArray, bounds: list[int]) -> FloatArray:
    """Per-column robust σ of the residuals about the segment means — or, where half of them
    or more are one value (a noise-free staircase, a saturated gauge), about the segment
    medians: a spike moves its segment's mean, and with it every residual there, which then
    were the "noise" of the readings that move (a reading of 8 on a noise-free staircase of
    98 readings made its steps .05–.3 σ, and the effect floor dropped them)."""
    if level.shape[0] == 0:
        return np.zeros(level.shape[1])
    resid = level - np.repeat(_means(level, bounds), np.diff(bounds), axis=0)  # bounds: 0 … n
    scales = []
    for j in range(level.shape[1]):
        scale, tied = robust_mod.robust_scale_tied(resid[:, j])
        if tied:
            medians = _segment_medians(level[:, j], bounds)
            scale = robust_mod.robust_scale(level[:, j] - np.repeat(medians, np.diff(bounds)))
        scales.append(scale)
    return np.array(scales)


def _effect(before: tuple[float, ...], after: tuple[float, ...], sigma: FloatArray) -> float:
    """Largest shift over the columns, in noise standard deviations."""
    shift = np.abs(np.subtract(after, before))
    with np.errstate(divide="ignore", invalid="ignore"):
        size = np.where(
            sigma > 0, shift / np.where(sigma > 0, sigma, 1.0), np.where(shift > 0, np.inf, 0.0)
        )
    return float(size.max())


def _with_raw_means(
    point: ChangePoint, x: FloatArray, unit: FloatArray, scale: Scale
) -> ChangePoint:
    return dataclasses.replace(
        point,
        mean_before=_mean(x[point.start : point.index], unit),
        mean_after=_mean(x[point.index : point.stop], unit),
        scale=scale,
    )


def _apply_effect_floor(
    accepted: list[ChangePoint], level: FloatArray, min_effect: float
) -> tuple[list[ChangePoint], list[ChangePoint]]:
    """Drop the smallest shift below the floor and merge its segments, until none is left."""
    kept = sorted(accepted, key=lambda p: p.index)
    dropped: list[ChangePoint] = []
    n = level.shape[0]
    while kept and min_effect > 0:
        bounds = [0, *(p.index for p in kept), n]
        means = [_mean(level[a:b]) for a, b in itertools.pairwise(bounds)]
        sigma = _residual_scale(level, bounds)
        effects = [_effect(means[i], means[i + 1], sigma) for i in range(len(kept))]
        weakest = int(np.argmin(effects))
        if effects[weakest] >= min_effect:
            break
        dropped.append(dataclasses.replace(kept.pop(weakest), effect=effects[weakest]))
    return kept, dropped


@dataclass(frozen=True, slots=True)
class _Search:
    """The paper's hierarchical search with one significance test (figure 3)."""

    test: SignificanceTest
    alpha: float
    min_size: int
    alpha_spending: AlphaSpending
    max_depth: int | None
    n: int
    dims: int
    shift_robust_phi: bool = False
    symmetrise: bool = False

    def run(
        self, z: FloatArray, slope: FloatArray | None = None, previous: list[int] | None = None
    ) -> tuple[list[ChangePoint], list[ChangePoint]]:
        """(accepted, rejected) candidates of ``z`` (n × dims), accepted in search order
        (``slope`` and ``previous`` are unused: the paper's search has no trend)."""
        n = self.n
        shortest = max(2 * self.min_size, 3)
        accepted: list[ChangePoint] = []
        rejected: list[ChangePoint] = []
        stack = [(0, n, 0)] if n >= shortest else []
        while stack:
            start, stop, level = stack.pop()
            length = stop - start
            xc = _centre(z[start:stop])
            split = _partition(_symmetrised(xc) if self.symmetrise else xc, self.min_size)
            phi_null = _lag1_columns(xc)
            phi = float(
                np.minimum(phi_null, _difference_phi_bound(xc)).max()
                if self.shift_robust_phi
                else phi_null.max()
            )
            level_alpha = self.alpha * length / n if self.alpha_spending == "length" else self.alpha
            verdict = self.test.assess(
                split.statistic,
                n=length,
                phi=phi,
                alpha=level_alpha,
                dims=_effective_columns(xc) if self.dims > 1 else 1.0,
                min_size=self.min_size,
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
                mean_before=_mean(z[start:cut]),
                mean_after=_mean(z[cut:stop]),
            )
            if not point.significant:
                rejected.append(point)
                continue
            accepted.append(point)
            if self.max_depth is None or level < self.max_depth:
                for a, b in ((cut, stop), (start, cut)):
                    if b - a >= shortest:
                        stack.append((a, b, level + 1))
        return accepted, rejected


def _in_units(values: FloatArray, unit: FloatArray | None) -> tuple[float, ...]:
    """Per-column ``values`` of the rescaled copy back in the series' units (``_rescaled``), as
    Python floats (a product past the float range is inf, not a numpy warning)."""
    own = values.tolist()
    return tuple(own if unit is None else (u * v for u, v in zip(unit.tolist(), own, strict=True)))


def _spread(part: FloatArray, unit: FloatArray) -> tuple[float, ...]:
    return _in_units(part.std(axis=0), unit)


def _mean(part: FloatArray, unit: FloatArray | None = None) -> tuple[float, ...]:
    """Column means of ``part`` (not empty), times ``unit`` per column (the means of values
    near the float range are taken on their rescaled copy: their sum would overflow). The sum
    over the count is ``mean``'s own arithmetic, without its overhead: a search reports
    hundreds of dropped candidates, two means each."""
    return _in_units(part.sum(axis=0) / part.shape[0], unit)


class _Dropped(Sequence[ChangePoint]):
    """A search's dropped candidates, made into change points (the test's verdicts looked up)
    when first read, from statistics and means taken when the search ended: only the
    description finally kept is read, and on a gradual ramp, where every split is a
    candidate, each of the trend's several searches drops thousands (lookups and points were
    14 of 23 s at 10⁶ readings, ``benchmarks/changepoints_ramp_speed.py``)."""

    def __init__(
        self, count: int, build: Callable[[], list[ChangePoint]], same_without_floor: bool = False
    ):
        self._count = count
        self._build: Callable[[], list[ChangePoint]] | None = build
        self._points: list[ChangePoint] = []
        # whether the search without the relative floor, started from the points kept, would
        # make every judgement of this one's last round again (``_Practical.run``)
        self.same_without_floor = same_without_floor

    def _read(self) -> list[ChangePoint]:
        if self._build is not None:
            self._points, self._build = self._build(), None  # the search's arrays are freed
        return self._points

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, k: int) -> ChangePoint: ...
    @overload
    def __getitem__(self, k: slice) -> list[ChangePoint]: ...
    def __getitem__(self, k: int | slice) -> ChangePoint | list[ChangePoint]:
        return self._read()[k]

    def __iter__(self) -> Iterator[ChangePoint]:
        return iter(self._read())


@dataclass(frozen=True, slots=True)
class _Practical:
    """The default search: seeded candidates, then every point judged between its neighbours
    (:mod:`perfsleuth.changepoints.kernels.seeded`)."""

    test: SignificanceTest
    alpha: float
    min_size: int
    alpha_spending: AlphaSpending
    max_depth: int | None
    n: int
    dims: int
    min_effect: float
    min_relative_change: float
    penalty: float
    log: Callable[..., None]
    # the levels are logarithms (a series described on its log scale): a shift Δ is itself
    # relative, 1 − e^−|Δ| of the larger level, whatever the levels are
    log_levels: bool = False
    # per column, the σ of the rounding error of the values on this scale (``grid``): the
    # finest noise the data can show, 0 for real-valued data
    resolution: FloatArray | None = None

    def grain(self) -> FloatArray:
        """The rounding σ per column (0: real-valued): the trend stage's floor on residual
        σ (``_bic``)."""
        return np.zeros(self.dims) if self.resolution is None else self.resolution

    def run(
        self, level: FloatArray, slope: FloatArray | None = None, previous: list[int] | None = None
    ) -> tuple[list[ChangePoint], Sequence[ChangePoint]]:
        """(kept, dropped) change points of ``level`` (n × dims, the series' units, cycle and
        ``slope`` per observation removed); ``previous``: points of an earlier, similar search,
        about which the noise is measured first (they only save rounds)."""
        n, m = self.n, self.min_size
        trend = np.zeros(self.dims) if slope is None else slope
        centred = _centre(level)
        sym = _symmetrised(centred)  # skewness out: T is judged on a near-Gaussian scale
        test = dataclasses.replace(self.test, phi_estimated=False) if isinstance(
            self.test, FPATest
        ) else self.test  # fmt: skip
        pl = _prefix(centred)
        # prefix sums on the series' own scale, for its lag-1 autocorrelation (see ``tested``)
        own_sums = (pl, _prefix(centred * centred), _prefix(centred[1:] * centred[:-1]))
        offset = level.mean(axis=0)  # centred + offset = level

        def paper_statistic(
            sums: tuple[FloatArray, FloatArray, FloatArray], a: int, i: int, b: int
        ) -> tuple[float, float]:
            """The paper's T at ``i`` on [a, b), and the segment's lag-1 autocorrelation
            under "no change" (both from prefix sums, O(1))."""
            if self.dims == 1:
                return paper_statistic_1d(sums, a, i, b)
            ps, ps2, lag = sums
            length = b - a
            total = ps[b] - ps[a]
            mean = total / length
            whole = ps2[b] - ps2[a] - total * mean
            left = ps[i] - ps[a]
            right = total - left
            within = whole - (left * left / (i - a) + right * right / (b - i) - total * mean)
            num = (
                lag[b - 1] - lag[a]
                - mean * ((ps[b - 1] - ps[a]) + (ps[b] - ps[a + 1]))
                + (length - 1) * mean * mean
            )  # fmt: skip
            den = np.where(whole > 0, whole, 1.0)
            phi_null = float(np.max(np.where(whole > 0, num / den, 0.0)))
            return _ratio(float(whole.sum()), float(within.sum())), phi_null

        def paper_statistic_1d(
            sums: tuple[FloatArray, FloatArray, FloatArray], a: int, i: int, b: int
        ) -> tuple[float, float]:
            """:func:`paper_statistic` of one column: the same arithmetic on scalars, without
            numpy's per-call overhead (the pruning judges up to ~3 times per candidate)."""
            whole, within, num = _paper_terms(sums, a, i, b)
            phi_null = float(num / whole) if whole > 0 else 0.0
            return _ratio(float(whole), float(within)), phi_null

        def statistic(
            sums: tuple[FloatArray, FloatArray, FloatArray], a: int, i: int, b: int
        ) -> tuple[float, float]:
            """(T, the φ tested) of the split at ``i`` of [a, b).

            The φ tested is the segment's lag-1 autocorrelation under "no change" (the
            paper's, which keeps the size at α) unless that exceeds all the persistence the
            noise shows: its φ from first differences with two standard errors (≈ 3/√n
            each), or the φ its long-run scale implies (dependence at longer range, seen by
            the blocks). Other shifts inside the segment inflate the null estimate, and
            with it the critical value, until no edge is significant: a run queue that
            steps up and down every 30 of 150 readings has lag-1 autocorrelation .94 while
            its noise has φ = .28 (+ .49); tested at .65 its four steps are found, none
            before.

            The null estimate is the larger of the lag-1 autocorrelations on the scale T is
            judged on (skewness out) and on the series' own: the transform of skewed,
            nonlinearly dependent noise lowers the lag-1 autocorrelation more than the
            persistence (M/M/1 response times at ρ = .8: .88 transformed, .96 untransformed,
            and a false change in .18 of 1,000-point series tested at the lower), while
            spikes lower it on the series' own scale."""
            t, phi_null = paper_statistic(sums, a, i, b)
            phi_null = max(phi_null, paper_statistic(own_sums, a, i, b)[1])
            return t, min(phi_null, phi_cap)

        def verdict_of(t: float, phi: float, a: int, b: int) -> Assessment:
            """The test's verdict on T of [a, b) at ``phi`` (the costly part of a judgement:
            the table's curve at that length and φ)."""
            return self.test.assess(
                t, n=b - a, phi=phi, alpha=self._level_alpha(b - a), dims=dims, min_size=m
            )

        def tested(
            sums: tuple[FloatArray, FloatArray, FloatArray],
            tests: dict[tuple[int, int, int], tuple[float, float, Assessment]],
            a: int,
            i: int,
            b: int,
        ) -> tuple[float, float, Assessment]:
            """(T, the φ tested, the test's verdict) of the split at ``i`` of [a, b), kept in
            ``tests``: pruning and re-placing judge most points again on the same segment."""
            key = (a, i, b)
            if key not in tests:
                t, phi = statistic(sums, a, i, b)
                tests[key] = (t, phi, verdict_of(t, phi, a, b))
            return tests[key]

        def judge(
            z: FloatArray,
            sums: tuple[FloatArray, FloatArray, FloatArray],
            tests: dict[tuple[int, int, int], tuple[float, float, Assessment]],
            sigma: FloatArray,
            points: list[int],
            independent: float,
        ) -> Callable[[int, int, int], seeded.Judged]:
            """The verdict on a split at ``i`` of [a, b), each of them 0, n or one of
            ``points`` (the pruning's)."""
            pz = sums[0]

            paid: dict[int, float] = {}  # the cost of each shorter side judged

            def costs(nl: int, nr: int) -> float:
                shorter = min(nl, nr)
                if shorter not in paid:
                    paid[shorter] = _cost(self.penalty, n, shorter, independent)
                return paid[shorter]

            measured = sigma > 0
            unit = np.where(measured, sigma, 1.0)

            ends = [0, *points, n]
            # where each run of unmoving readings that starts at an end stops
            still = dict(zip(ends, _still_until(moves, ends, n), strict=True))

            def verdict(a: int, i: int, b: int) -> seeded.Judged:
                if still[a] >= b:
                    return seeded.Judged(i, a, b, 0.0, False, 0.0)
                nl, nr = i - a, b - i
                ml, mr = (pz[i] - pz[a]) / nl, (pz[b] - pz[i]) / nr
                delta = float((nl * nr / (nl + nr)) * ((ml - mr) ** 2).sum())
                lev_l, lev_r = (pl[i] - pl[a]) / nl + offset, (pl[b] - pl[i]) / nr + offset
                shift = np.abs(lev_r - lev_l)
                effect = np.where(measured, shift / unit, np.inf)
                top = np.maximum(np.abs(lev_l + trend * i), np.abs(lev_r + trend * i))
                relative = np.where(top > 0, shift / np.where(top > 0, top, 1.0), 0.0)
                if log_levels:
                    relative = -np.expm1(-shift)
                large = bool(np.any(
                    (effect >= self.min_effect) & (relative >= self.min_relative_change)
                    & (shift > 0)
                ))  # fmt: skip
                cost = costs(nl, nr)
                # the test last, and only when the pruning needs it (``significant``): it is
                # the costly part, and most candidates fail before it; a segment of two single
                # points cannot be tested (T is infinite there)
                passes = large and delta > 0 and delta >= cost and b - a >= _testable(m)
                passes = passes and _beyond_one_observation(z, columns, a, i, b, cost, 2 * m)
                return seeded.Judged(i, a, b, delta, None if passes else False, float(effect.max()))

            # One column (most series): the same arithmetic on Python floats, the prefix sums
            # read once at the only indices a judgement asks for (numpy scalars cost several
            # times as much an operation).
            one_column = self.dims == 1
            columns: list[tuple[_Indexed, _Indexed]] = [
                (sums[0][:, j], sums[1][:, j]) for j in range(self.dims)
            ]
            if one_column:
                pz1, pl1, pz2 = (
                    dict(zip(ends, s[ends, 0].tolist(), strict=True)) for s in (pz, pl, sums[1])
                )
                columns = [(pz1, pz2)]
            offset1, trend1, unit1 = float(offset[0]), float(trend[0]), float(unit[0])
            measured1 = bool(measured[0])
            min_effect, min_relative = self.min_effect, self.min_relative_change
            log_levels = self.log_levels
            testable = _testable(m)

            def verdict_1d(a: int, i: int, b: int) -> seeded.Judged:
                if still[a] >= b:
                    return seeded.Judged(i, a, b, 0.0, False, 0.0)
                nl, nr = i - a, b - i
                ml, mr = (pz1[i] - pz1[a]) / nl, (pz1[b] - pz1[i]) / nr
                gap = ml - mr
                delta = float((nl * nr / (nl + nr)) * (gap * gap))
                lev_l, lev_r = (pl1[i] - pl1[a]) / nl + offset1, (pl1[b] - pl1[i]) / nr + offset1
                shift = abs(lev_r - lev_l)
                effect = float(shift / unit1) if measured1 else math.inf
                if log_levels:
                    relative = -math.expm1(-shift)
                else:
                    top = max(abs(lev_l + trend1 * i), abs(lev_r + trend1 * i))
                    relative = shift / top if top > 0 else 0.0
                large = bool(effect >= min_effect and relative >= min_relative and shift > 0)
                if not large and effect >= min_effect and shift > 0 and not log_levels:
                    large = _relative_without_extremes(
                        centred[:, 0], own_sums, offset1, trend1 * i, a, i, b, min_relative
                    ) >= min_relative  # fmt: skip
                cost = costs(nl, nr)
                cheap = delta > 0 and delta >= cost and b - a >= testable
                if cheap and not large and effect >= min_effect and shift > 0:
                    floor_decided[0] = True  # only the relative floor failed it
                passes = large and cheap
                passes = passes and _beyond_one_observation(z, columns, a, i, b, cost, 2 * m)
                return seeded.Judged(i, a, b, delta, None if passes else False, effect)

            return verdict_1d if one_column else verdict

        def significant(
            sums: tuple[FloatArray, FloatArray, FloatArray],
            tests: dict[tuple[int, int, int], tuple[float, float, Assessment]],
        ) -> Callable[[seeded.Judged], bool]:
            def test(judged: seeded.Judged) -> bool:
                a, i, b = judged.start, judged.index, judged.stop
                t, _, outcome = tested(sums, tests, a, i, b)
                level = self._level_alpha(b - a)
                return _rejects(outcome, t, level) or _lone_jump_in_a_column(
                    centred[a:b], i - a, level
                )

            return test

        def pruned(
            found: list[int], sigma: FloatArray
        ) -> tuple[list[seeded.Judged], list[seeded.Judged]]:
            """``found`` pruned with this round's noise, sums and tests (``sigma``: the effect
            floor's σ about them)."""
            verdict = judge(z, sums, tests, sigma, found, independent)
            return seeded.prune(found, n, verdict, significant(sums, tests))

        # The noise is first measured at short range (first differences, which a shift touches
        # once), the points judged, then its long-run scale measured on the residuals about
        # them, until the points settle: every point is judged against noise without the
        # shifts. (Blocks measured over the whole series count the shifts as noise: four 25σ
        # steps in 150 CPU readings gave a scale 25 times the noise and no point.)
        points: list[int] = sorted(previous or [])
        measured_about = points
        short_range = not points
        # whether a judgement of the round failed only for the relative floor (``_Dropped``)
        floor_decided = [False]
        # rounding, not noise, below a billionth of the series' range or the float precision
        # of its values (with the slope added back: a line removed leaves only rounding)
        magnitude = np.max(np.abs(level), axis=0) + np.abs(trend) * n
        # Readings that do not move cannot change level: a segment of one constant reading (an
        # idle service's zeros, a pegged gauge) is not split, whatever slope was removed from
        # it. (Idle zeros less a trend's line are a line, which the search drew as a
        # staircase of level points; at 10⁶ readings it took 16 s.)
        moves = _moves(level + np.outer(_ramp(n), trend) if trend.any() else level, magnitude)
        floors = [
            max(1e-9 * float(np.ptp(sym[:, j])), grid.float_sigma(float(magnitude[j]))) or 1.0
            for j in range(self.dims)
        ]
        layer: dict[int, int] = {}
        # the effect floor's σ about some points (on ``centred``, the same every round)
        residual_scales: dict[tuple[int, ...], FloatArray] = {}
        kept: list[seeded.Judged] = []
        dropped: list[seeded.Judged] = []
        # A round only rescales ``sym`` (z = sym / σ): its prefix sums (of sym, sym² and
        # sym_t sym_t+1) are taken once and rescaled, and, for one column, every seeded
        # interval's best split is found once and its z² rescaled (``seeded.SplitMemo``).
        own_scale = (_prefix(sym), _prefix(sym * sym), _prefix(sym[1:] * sym[:-1]))
        memo = seeded.SplitMemo()
        for _ in range(_NOISE_ROUNDS):
            measured_about = points
            floor_decided[0] = self.dims > 1  # the joint judge does not say
            resid = sym - _segment_means(sym, points)
            top = 1 if short_range else None
            noise = [_long_run_scale(resid[:, j], floors[j], top, m) for j in range(self.dims)]
            short_range = False
            # the most persistence the noise shows the test (see ``tested``): its φ at short
            # range with two standard errors, on the symmetrised scale or the series' own (as
            # the null estimate), or the φ its long-run scale implies. (The φ estimated: the
            # yardstick's is 0 where it is not told from independence, so measured again.)
            own = centred - _segment_means(centred, points)
            phi_cap = max(
                *(
                    phi or robust_mod.persistence(resid[:, j], max_block=top)
                    for j, (phi, _, _) in enumerate(noise)
                ),
                *(robust_mod.persistence(own[:, j], max_block=top) for j in range(self.dims)),
            ) + _PHI_CAP_SE * 3.0 / math.sqrt(n // robust_mod.pair_stride(n))
            phi_cap = max(phi_cap, *(implied for _, _, implied in noise))
            # how many independent observations the long-run yardstick rests on (``_cost``)
            independent = _independent(
                n, noise, robust_mod.memory_cap(n, top), robust_mod.longest_block(n, top)
            )
            unit = np.array([s for _, s, _ in noise])
            z = sym / unit  # unit long-run variance
            dims = _effective_columns(z) if self.dims > 1 else 1.0
            critical_at = self._critical_z2(test, dims)
            # prefix sums of z, z² and z_t z_{t+1}: every judgement is O(1)
            sums = (own_scale[0] / unit, own_scale[1] / unit**2, own_scale[2] / unit**2)
            if self.dims == 1:  # on sym's own scale, the thresholds in its units
                var = float(unit[0]) ** 2
                found_raw = seeded.seeded_candidates(
                    sym, m, _at_level(critical_at, _CANDIDATE_ALPHA, var), self.max_depth,
                    sums=own_scale[:2], memo=memo,
                )  # fmt: skip
                candidates = dataclasses.replace(found_raw, strength=found_raw.strength / var)
            else:
                candidates = seeded.seeded_candidates(
                    z, m, _at_level(critical_at, _CANDIDATE_ALPHA), self.max_depth, sums=sums[:2]
                )
            chosen = seeded.greedy(candidates)
            found = chosen.index.tolist()
            layer = dict(zip(found, chosen.layer.tolist(), strict=True))
            tests: dict[tuple[int, int, int], tuple[float, float, Assessment]] = {}

            dropped = []
            # The effect floor's noise σ comes from the finer, then the pruned fit; a survivor
            # is then moved to the best split between its final neighbours (a seeded interval's
            # split can be a few observations off) and the survivors judged again. Not in the
            # short-range round: its points only say where the long-run noise is first
            # measured, and the next round judges them again (a long series' first round
            # prunes thousands of candidates to hundreds, and each pruning re-tests them all).
            for _ in range(1 if top == 1 else _PRUNE_ROUNDS):
                key = tuple(found)
                if key not in residual_scales:  # the rounds often prune the same points
                    residual_scales[key] = _residual_scale(centred, [0, *found, n])
                sigma = residual_scales[key]
                kept, gone = pruned(found, sigma)
                dropped += gone
                burst = (
                    _transients(
                        kept,
                        centred,
                        float(sigma[0]),
                        sums[0],
                        functools.partial(_cost, self.penalty, n, independent=independent),
                        2 * m,
                        noise[0][0],
                    )
                    if self.dims == 1
                    else set()
                )
                if burst:
                    # judged again without them: their neighbours' segments now span the burst
                    dropped += [k for k in kept if k.index in burst]
                    found = [k.index for k in kept if k.index not in burst]
                    kept, gone = pruned(found, sigma)
                    dropped += gone
                # A point that is its segment's one outsized move is where its change is, to
                # the observation: the re-placing is for seeded splits a few observations off,
                # and the largest z² of a segment that also leans can be far from its jump (a
                # counter reset at 120 of 200 readings moved to 34, where it failed, and was lost).
                jumps = [
                    k.index
                    for k in kept
                    if _lone_jump_in_a_column(
                        centred[k.start : k.stop],
                        k.index - k.start,
                        self._level_alpha(k.stop - k.start),
                    )
                ]
                placed = seeded.refine(sums[0], [k.index for k in kept], m, jumps)
                if placed == found:
                    break
                found = placed
            self.log(
                "change points: %d candidate(s), %d kept by the greedy pass, %d judged real",
                len(candidates),
                len(chosen),
                len(kept),
            )
            if found == points:
                break
            points = found

        def evidence(judged: seeded.Judged, final: bool) -> tuple[float, float, Assessment | None]:
            """(T, the φ tested, the test's verdict: None while still to be looked up)."""
            a, i, b = judged.start, judged.index, judged.stop
            if b - a < _testable(m):
                # a dropped candidate between close neighbours can sit in a segment too short
                # for the test (two single points): it was never tested, so it has no verdict
                return *paper_statistic(sums, a, i, b), Assessment(math.inf, math.nan)
            if final:
                return tested(sums, tests, a, i, b)
            return tests.get((a, i, b)) or (*statistic(sums, a, i, b), None)

        def evidences(
            found: list[seeded.Judged],
        ) -> list[tuple[float, float, Assessment | None]]:
            """:func:`evidence` (not final) of many points; on one column, their statistics
            taken at once (10⁶ readings drop ~4,000 candidates a search: 70 ms one by one)."""
            if self.dims != 1 or not found:
                return [evidence(j, False) for j in found]
            a, i, b = (
                np.array([getattr(j, k) for j in found], dtype=np.intp)
                for k in ("start", "index", "stop")
            )
            t, phi = _paper_statistics_1d(sums, a, i, b)
            own = _paper_statistics_1d(own_sums, a, i, b)[1]
            judged_at = np.minimum(np.maximum(phi, own), phi_cap)  # as ``statistic``
            out: list[tuple[float, float, Assessment | None]] = []
            for j, tj, pj, qj in zip(
                found, t.tolist(), phi.tolist(), judged_at.tolist(), strict=True
            ):
                if j.stop - j.start < _testable(m):
                    out.append((tj, pj, Assessment(math.inf, math.nan)))  # as ``evidence``
                else:
                    out.append(tests.get((j.start, j.index, j.stop)) or (tj, qj, None))
            return out

        def means(found: list[seeded.Judged]) -> tuple[FloatArray, FloatArray]:
            """Each point's means before and after it, the series' units (rows: the points)."""
            a, i, b = (
                np.array([getattr(j, k) for j in found], dtype=np.intp)
                for k in ("start", "index", "stop")
            )
            before = (pl[i] - pl[a]) / (i - a)[:, None] + offset
            return before, (pl[b] - pl[i]) / (b - i)[:, None] + offset

        def as_points(
            found: list[seeded.Judged],
            evidences: list[tuple[float, float, Assessment | None]],
            before: FloatArray,
            after: FloatArray,
            phi_residuals: list[float],
        ) -> list[ChangePoint]:
            made = []
            # the verdicts still to look up, at once: a long search drops thousands
            pending = [
                (t, j.stop - j.start, phi, self._level_alpha(j.stop - j.start))
                for j, (t, phi, known) in zip(found, evidences, strict=True)
                if known is None
            ]
            looked_up = iter(_assessed(self.test, pending, dims, m))
            for k, (judged, (t, phi_tested, known)) in enumerate(
                zip(found, evidences, strict=True)
            ):
                a, i, b = judged.start, judged.index, judged.stop
                verdict = next(looked_up) if known is None else known
                made.append(
                    ChangePoint(
                        index=i,
                        statistic=t,
                        critical_value=verdict.critical_value,
                        p_value=verdict.p_value,
                        alpha=self._level_alpha(b - a),
                        phi=phi_tested,
                        phi_residual=phi_residuals[k],
                        level=layer.get(i, 0),
                        start=a,
                        stop=b,
                        mean_before=tuple(float(v) for v in before[k]),
                        mean_after=tuple(float(v) for v in after[k]),
                        strength=judged.strength,
                        effect=judged.effect,
                    )
                )
            return made

        # The kept points in full. A point dropped in one round may be kept (or dropped again)
        # in a later one: its last verdict counts. The dropped are made into points when read
        # (``_Dropped``), from their statistics and means taken now: the arrays are not kept.
        final = {j.index for j in kept}
        # the kept points' segments are disjoint, so O(n) in all
        phi_residual = [
            float(_residual_lag1_columns(_centre(z[j.start : j.stop]), j.index - j.start).max())
            for j in kept
        ]
        last = list({j.index: j for j in dropped if j.index not in final}.values())
        last_evidence = evidences(last)
        last_means = means(last)
        made = as_points(kept, [evidence(j, True) for j in kept], *means(kept), phi_residual)
        # Started from the points kept, a search without the relative floor measures the noise
        # about them, as this one's last round did, and judges as it did where the floor never
        # decided: where that round settled on them, it would end here too (with no point, it
        # would start at short range instead)
        kept_at = sorted(j.index for j in kept)
        repeats = bool(kept) and kept_at == measured_about == found
        return made, _Dropped(
            len(last),
            lambda: as_points(last, last_evidence, *last_means, [math.nan] * len(last)),
            same_without_floor=repeats and not floor_decided[0],
        )

    def _critical_z2(
        self, test: SignificanceTest, dims: float
    ) -> Callable[[int, float | None], float]:
        """Critical z² of a segment of a given length, at a given level or (None) at the level
        spent on that length."""
        m, n = self.min_size, self.n
        try:
            log_grid, log_crit = _spent_table(
                test,  # type: ignore[arg-type]  # the shipped tests are frozen dataclasses
                dims,
                m,
                n,
                self.alpha,
                self.alpha_spending,
            )
        except TypeError:  # a test that cannot be a cache key: tabulate it every time
            log_grid, log_crit = _spent_table.__wrapped__(
                test, dims, m, n, self.alpha, self.alpha_spending
            )

        def critical(length: int, alpha: float | None) -> float:
            if alpha is not None:
                return _exact_z2(test, dims, m, length, alpha)
            return math.exp(float(np.interp(math.log(length), log_grid, log_crit)))

        return critical

    def _level_alpha(self, length: int) -> float:
        return self.alpha * length / self.n if self.alpha_spending == "length" else self.alpha


def _relative_without_extremes(
    column: FloatArray,
    sums: tuple[FloatArray, FloatArray, FloatArray],
    offset: float,
    drift: float,
    a: int,
    i: int,
    b: int,
    floor: float,
) -> float:
    """The relative change at ``i`` of [a, b) (one column, the series' own scale) with each
    side's level taken without its observation furthest from it: a level is not set by one
    value (two values 10⁶ times the median made a 4σ step 1.6% of the mean). O(1) when no
    observation can move a level enough (bounded by the side's sum of squares); else one pass
    over the segment, and none when even the most one value per side could move the levels
    leaves the change below ``floor``."""
    ps, ps2, _ = sums
    levels, moves = [], []
    for s, e in ((a, i), (i, b)):
        k = e - s
        if k < 2:
            return 0.0
        total = float(ps[e, 0] - ps[s, 0])
        mean = total / k
        ssq = max(float(ps2[e, 0] - ps2[s, 0]) - k * mean * mean, 0.0)
        levels.append((s, e, k, total, mean))
        moves.append(math.sqrt(ssq * (k - 1) / k) / (k - 1))
    (_, _, _, _, ml), (_, _, _, _, mr) = levels
    top = max(abs(ml + offset + drift), abs(mr + offset + drift)) - max(moves)
    if top <= 0:
        return math.inf
    best = (abs(mr - ml) + sum(moves)) / top  # the most any one value per side can change
    if best < floor:
        return best
    without = []
    for s, e, k, total, mean in levels:
        part = column[s:e]
        far = float(part[int(np.argmax(np.abs(part - mean)))])
        without.append((total - far) / (k - 1) + offset)
    lev_l, lev_r = without
    top = max(abs(lev_l + drift), abs(lev_r + drift))
    return abs(lev_r - lev_l) / top if top > 0 else 0.0


_JUMP_TAIL_INDEX: float | None = 3.0  # tail index the lone-jump test is calibrated for
# How many jumps ``_lone_jumps`` looks at: one a 20 readings, within these bounds. More than
# the most are a cycle or a long series' spikes, not resets (looking at one a 20 readings,
# 10⁶ readings with 0.2% spikes had their spikes' moves taken for jumps)
_JUMPS_LOOKED_AT = (3, 30)
_JUMP_SAMPLE = 16  # other moves the lone-jump test looks at before all of them


def _transients(
    kept: list[seeded.Judged],
    centred: FloatArray,
    sigma: float,
    z_sums: FloatArray,
    cost: Callable[[int], float],
    longest: int,
    phi: float,
) -> set[int]:
    """The points of ``kept`` (sorted, each judged between its neighbours; one column) that
    bound the decay of one outsized innovation of the noise, a spike run (the spikes report
    it), not two changes of level: at most ``longest`` readings, shorter than the segments
    either side, lying :data:`_SPIKE_K` σ or more off their level (the median), decaying at
    least as fast as the noise forgets (their lag-1 ratio between 0 and its AR(1) ``phi``),
    after which the series is back where it was (a split between the segments either side
    would not pay its ``cost``: z², by its shorter side, from ``z_sums``, the prefix sums of
    the series in long-run noise units).

    On the log scale one heavy-tailed innovation of AR(1) noise decays over several readings
    (×.6 a reading: 108, 64, 39, 23, 14 σ), and each such burst in 10⁶ readings made two
    level points five readings apart. A plateau does not decay: a strike's seven weeks near
    0 among 25,000 passengers a week are two changes (a ratio of 1). ``centred`` and
    ``sigma``: the series on its own scale and its effect floor's σ."""
    out: set[int] = set()
    if sigma <= 0.0:
        return out
    for before, after in itertools.pairwise(kept):
        a, i, j, c = before.start, before.index, after.index, after.stop
        width, nl, nr = j - i, i - a, c - j
        if i in out or not 2 <= width <= longest or width >= nl or width >= nr:
            continue
        gap = float((z_sums[c, 0] - z_sums[j, 0]) / nr - (z_sums[i, 0] - z_sums[a, 0]) / nl)
        if nl * nr / (nl + nr) * gap * gap >= cost(min(nl, nr)):
            continue  # the level moved: a change, whatever the readings between
        off = centred[i:j, 0] - (centred[a:i, 0].sum() + centred[j:c, 0].sum()) / (nl + nr)
        if float(np.median(np.abs(off))) < _SPIKE_K * sigma:
            continue
        lagged = float(off[:-1] @ off[:-1])
        if lagged > 0.0 and 0.0 <= float(off[1:] @ off[:-1]) / lagged <= phi:
            out |= {i, j}
    return out


def _lone_jump(segment: FloatArray, at: int, alpha: float) -> bool:
    """Whether the step into ``segment[at]`` is the segment's one outsized move: its first
    difference, about their median, at least ``alpha ** (-1 / 3)`` times every other one.

    A random walk explains any shift of its segment means (the paper's T, tested at the
    segment's lag-1 autocorrelation near 1, is never significant), but not a single move
    many times its others: a level shift is one difference, a spike two of opposite signs.
    For independent moves with a tail no heavier than a power law of index 3 (the "cubic
    law" of price returns, heavier than Gaussian or exponential noise), the largest of them
    exceeds c times the next largest with probability at most c⁻³, whatever the scale and
    however many there are: so c = α^(−1/3) (2.7 at α = .05) keeps the level."""
    if _JUMP_TAIL_INDEX is None or at < 1 or segment.size < 4:
        return False
    c = alpha ** (-1.0 / _JUMP_TAIL_INDEX)
    # Quick necessary condition from a few other moves u (every |u − m| ≤ |jump − m| / c, m
    # the median): c · range(u) / 2 ≤ |jump − m| ≤ min |jump − u| / (1 − 1/c). Most
    # candidates of long series fail it, without the O(length) median.
    step = segment[at] - segment[at - 1]
    t = np.arange(0, segment.size - 1, max(1, segment.size // _JUMP_SAMPLE))
    sample = segment[t[t != at - 1] + 1] - segment[t[t != at - 1]]
    if sample.size >= 2:
        nearest = float(np.min(np.abs(step - sample)))
        if c * float(np.ptp(sample)) / 2 > nearest / (1.0 - 1.0 / c):
            return False
    d = np.diff(segment)
    dev = np.abs(d - np.median(d))
    jump = float(dev[at - 1])
    dev[at - 1] = 0.0
    return jump > 0 and jump >= c * float(dev.max())


def _lone_jump_in_a_column(segment: FloatArray, at: int, alpha: float) -> bool:
    """Whether the step into ``segment[at]`` is one column's one outsized move
    (:func:`_lone_jump`), each of the segment's columns judged at ``alpha`` / their number: a
    union bound, so the level holds however the columns depend on each other. A joint test
    spreads a jump that some columns share over all of them, and tests it at the φ of their
    segment, near 1 for random walks (two airlines' share prices, each of which jumps on the
    same day: each found alone at p .12–.18 by the test, by its jump; jointly, not at all).

    The search gives it the series' own moves (on its description's scale), not the
    symmetrised ones: the bound needs no transform, and the transform's λ, fitted on all the
    values, reads a step as skew and squeezes it (a 6 σ step at a third of AR(1) noise of
    φ .9: found in .56 of series, .98 on the own moves; `changepoints_jump_scale.py`)."""
    columns = segment.shape[1]
    return any(_lone_jump(segment[:, j], at, alpha / columns) for j in range(columns))


def _beyond_one_observation(
    z: FloatArray,
    columns: Sequence[tuple[_Indexed, _Indexed]],
    a: int,
    i: int,
    b: int,
    cost: float,
    short: int = 0,
) -> bool:
    """Whether the split at ``i`` of [a, b) still pays ``cost`` (z², in long-run noise units)
    without the most extreme observation of its shorter side, the one that pulls that side's
    mean furthest from the other's: a shift that rests on one observation is a spike (listed in
    ``ChangePoints.spikes``), not a change of level. O(1) from the prefix sums when no
    observation of the side can carry the shift (its largest possible deviation is bounded by
    the side's sum of squares); else one pass over the shorter side. ``columns``: per column,
    the prefix sums of ``z`` and of ``z²`` (arrays, or mappings holding the indices asked).

    A shorter side of at most ``short`` readings must also pay ``cost`` with its median for
    its level: a shift that two or three readings among a few carry is a spike run. Three
    readings of 0 among 1,000 ± 10, two of them 3 apart, made a 5-reading segment whose three
    ordinary readings became "spikes" (`benchmarks/changepoints_gross_spike.py --zeros`).
    Longer sides keep their means: there a level can be a rate of bursts, which the median
    of a mostly idle series does not show."""
    nl, nr = i - a, b - i
    s, e, k = (a, i, nl) if nl <= nr else (i, b, nr)
    if k < 2:
        return False  # the whole side is one observation
    weight = (k - 1) * (b - a - k) / (b - a - 1)
    sides = []
    bound = 0.0
    for ps, ps2 in columns:
        total = float(ps[b] - ps[a])
        mean = float(ps[e] - ps[s]) / k
        other = (total - mean * k) / (b - a - k)
        ssq = max(float(ps2[e] - ps2[s]) - k * mean * mean, 0.0)
        worst = math.sqrt(ssq * (k - 1) / k)  # the largest deviation the side can hold
        sides.append((mean, other))
        bound += weight * max(abs(mean - other) - worst / (k - 1), 0.0) ** 2
    if k <= short:
        middle = 0.0
        for j, (mean, other) in enumerate(sides):
            ranked = sorted(z[s:e, j].tolist())  # a few values: faster than np.median's overhead
            median = (ranked[(k - 1) // 2] + ranked[k // 2]) / 2.0
            middle += max(median - other if mean > other else other - median, 0.0) ** 2
        if k * (b - a - k) / (b - a) * middle < cost:
            return False
    if bound >= cost:
        return True
    exact = 0.0
    for j, (mean, other) in enumerate(sides):
        part = z[s:e, j]
        up = mean > other
        without = (mean * k - float(part.max() if up else part.min())) / (k - 1)
        exact += weight * max(without - other if up else other - without, 0.0) ** 2
    return exact >= cost


def _rejects(verdict: Assessment, statistic: float, alpha: float) -> bool:
    """p ≤ α, or T above the critical value for a test without p-values (the paper's)."""
    if math.isnan(verdict.p_value):
        return statistic > verdict.critical_value
    return verdict.p_value <= alpha


def _exact_z2(test: SignificanceTest, dims: float, m: int, length: int, alpha: float) -> float:
    """z² above which ``test`` rejects a segment of ``length`` of independent noise (kept: every
    noise round asks again for every seeded layer's length)."""
    try:
        return _kept_exact_z2(test, dims, m, length, alpha)  # type: ignore[arg-type]
    except TypeError:  # a test that cannot be a cache key: look it up every time
        return _kept_exact_z2.__wrapped__(test, dims, m, length, alpha)


@functools.lru_cache(maxsize=1024)
def _kept_exact_z2(test: SignificanceTest, dims: float, m: int, length: int, alpha: float) -> float:
    crit = test.assess(2.0, n=length, phi=0.0, alpha=alpha, dims=dims, min_size=m).critical_value
    return (crit - 1.0) * max(length - 2, 1)


@functools.lru_cache(maxsize=64)
def _spent_table(
    test: SignificanceTest, dims: float, m: int, n: int, alpha: float, spending: str
) -> tuple[FloatArray, FloatArray]:
    """(log length, log critical z²) at the level spent on each length: smooth in log length,
    so tabulated once (every length up to 32, 40 log-spaced beyond) and interpolated."""
    shortest = max(2 * m, 3)
    grid = np.unique(np.r_[np.arange(shortest, 33), np.geomspace(shortest, n, 40).round(), n])
    grid = grid[(grid >= shortest) & (grid <= n)].astype(np.int64)
    spent = [alpha * g / n if spending == "length" else alpha for g in grid]
    crit = [_exact_z2(test, dims, m, int(g), a) for g, a in zip(grid, spent, strict=True)]
    # (the paper's curve underflows to T_c = 1 for tiny lengths: floor it)
    return np.log(grid), np.log(np.maximum(crit, 1e-300))


def _at_level(
    critical: Callable[[int, float | None], float], alpha: float, unit: float = 1.0
) -> Callable[[int], float]:
    """The critical z² of a length at ``alpha``, in ``unit``s (a variance) of z²."""
    return lambda length: critical(length, alpha) * unit


def _segment_means(x: FloatArray, cuts: list[int]) -> FloatArray:
    """Each observation's segment mean (segments bounded by ``cuts``)."""
    bounds = [0, *cuts, x.shape[0]]
    out: FloatArray = np.repeat(_means(x, bounds), np.diff(bounds), axis=0)
    return out


def _segment_medians(column: FloatArray, bounds: list[int]) -> FloatArray:
    """The median of each segment ``column[a:b]`` (``bounds``: 0 … n, no segment empty), by
    one sort of the values within their segments (a long series' first pruning measures tens
    of thousands of segments: one ``median`` call each took 0.7 s at 10⁶ readings, this 0.09)."""
    edges = np.asarray(bounds)
    lengths = np.diff(edges)
    ordered = column[np.lexsort((column, np.repeat(np.arange(lengths.size), lengths)))]
    middle: FloatArray = (
        ordered[edges[:-1] + (lengths - 1) // 2] + ordered[edges[:-1] + lengths // 2]
    ) / 2
    return middle


def _means(x: FloatArray, bounds: list[int]) -> FloatArray:
    """The means (a row per segment) of ``x[a:b]`` for consecutive ``a, b`` of ``bounds``, in
    one pass (a long series' first pruning measures about ten thousand segments, three times;
    one ``mean`` call each cost 1.5 µs). The sums are sequential, not pairwise as ``mean``'s:
    they differ in the last bits."""
    pairs = list(itertools.pairwise(bounds))
    if any(b <= a for a, b in pairs):  # an empty segment: its mean is NaN, as numpy warns
        return np.array([x[a:b].mean(axis=0) for a, b in pairs])
    edges = np.asarray(bounds)
    sums: FloatArray = np.add.reduceat(x, edges[:-1], axis=0)
    return sums / np.diff(edges)[:, None]


def _prefix(x: FloatArray) -> FloatArray:
    out = np.empty((x.shape[0] + 1, x.shape[1]))  # (not zeros: calloc maps fresh pages)
    out[0] = 0.0
    np.cumsum(x, axis=0, out=out[1:])
    return out


def _cost(penalty: float, n: int, shorter: int, independent: float) -> float:
    """The z² (in long-run noise variances) a split must reach to be worth its cost.

    ``penalty`` times 2 ln(e n / m), m the split's shorter side: about the largest z² that
    noise alone reaches among the n/m places a change of that scale can sit (the maximum of K
    independent χ²₁ is ≈ 2 ln K; the scale calibration of Dümbgen & Spokoiny 2001 and SMUCE,
    Frick et al. 2014). A short bump (a busy period, a burst) is one of many possible and pays
    more; a change of half the series is one of few. (The previous cost, ``penalty · ln n``
    + ln(n (nl + nr)/(nl nr)), charged every split as if it were one of n single observations:
    an M/M/1 service-time change at mid-series, ρ .2 → .3, z² ≈ 28, paid 36.9 and was found in
    .34 of series.)

    z² is measured against an *estimated* long-run variance, so it is heavier-tailed than χ²₁,
    as Student's t² is, the more so the fewer independent observations ν the estimate rests on
    (:func:`_independent`): ν ln(1 + z²/ν) (Wallace 1959) puts it on the χ²₁ scale, so a bar c
    becomes ν (e^(c/ν) − 1). The bar is raised by the ratio of that for ν to that for n
    independent observations (for which the penalty is set): M/M/1 response times at ρ = .8
    (ν ≈ 60 of 1,000) pay about a third more, and showed false points in .13 of 1,000-point
    series without it, .10 with it."""
    scan = 2.0 * penalty * (1.0 + math.log(n / shorter))
    if scan <= 0.0 or independent >= n:
        return scan
    persistent = independent * math.expm1(min(scan / independent, _MAX_EXPONENT))
    return scan * persistent / (n * math.expm1(scan / n))


def _independent(
    n: int, noise: list[tuple[float, float, float]], memory_cap: float, longest_block: int
) -> float:
    """How many independent observations the long-run yardstick of :func:`_cost` rests on:
    n over the integrated autocorrelation time (1 + φ)/(1 − φ), φ the one its scale implies,
    when blocks set that scale (it exceeds the AR(1) scale, which n − 1 first differences
    measure) below ``memory_cap`` — a memory at the cap is one the series cannot measure, so
    its scale is a floor rather than an estimate (a random walk's: the lone-jump rule judges
    its points); the most persistent such column; n otherwise. Never fewer than the
    ``n / longest_block`` blocks the scale was measured on: a memory longer than the longest
    block is one the blocks do not see (its φ comes from the first differences' scale), so
    the estimate's own precision is that of its blocks (NAB's `rogue_agent_key_hold`, mostly
    zeros: φ .98 says 18 of 1,882 readings, its 64-reading blocks 29)."""
    blocks = [implied for phi, _, implied in noise if phi + _SAME_PHI < implied < memory_cap]
    if not blocks:
        return float(n)
    phi = max(blocks)
    return max(n * (1.0 - phi) / (1.0 + phi), n / longest_block)


def _testable(min_size: int) -> int:
    """The shortest segment the significance tests can judge: two parts of ``min_size``, and
    never two single points."""
    return max(2 * min_size, 3)


def _long_run_scale(
    x: FloatArray, floor: float, max_block: int | None, min_size: int
) -> tuple[float, float, float]:
    """(φ, long-run σ, the φ that σ implies) of one column's noise (blocks up to
    ``max_block``; 1: the AR(1) scale alone), at least ``floor`` (finer is rounding, not
    noise): the standard deviation for a mostly flat series, ``floor`` (tiny) for noise-free
    data, whose shifts are infinitely significant: residuals that are exactly 0, or flat runs
    of at least ``min_size`` readings between moves (a staircase; a constant column stays 0
    anyway). Measured on the moves, such steps were their own noise: ``[1, 1, 1, 5, 5, 5]``
    had no change point. (A σ of 0 means flat differences, which imply no φ whatever σ
    replaces it.)"""
    if _staircase(x, min_size):
        return 0.0, floor, 0.0
    phi, scale, implied = robust_mod.long_run_noise(x, max_block=max_block)
    if scale > 0:
        return phi, max(scale, floor), implied
    spread = float(np.std(x))
    return phi, spread if spread > floor else floor, implied


def _staircase(x: FloatArray, min_size: int) -> bool:
    """Whether ``x`` moves at least once and stays flat for at least ``min_size`` readings
    before, between and after its moves (flat runs shorter than a segment may be, such as
    rare-event counts 0, 0, 1, 0, are noise)."""
    d = np.diff(x)
    moves = np.count_nonzero(d)
    if moves == 0 or (moves + 1) * min_size > x.size:
        return False
    runs = np.diff(np.concatenate(([-1], np.flatnonzero(d), [x.size - 1])))
    return bool(runs.min() >= min_size)
