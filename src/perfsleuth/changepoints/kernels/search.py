"""Offline change-point detection after Berry & Hellerstein (1991): Fisher's optimal 2-partition,
applied hierarchically, each split tested against the distribution of T for optimally
partitioned AR(1) series (FPA, :mod:`perfsleuth.changepoints.kernels.fpa`).

Search and statistic are separate axes: :func:`find_change_points` is the paper's
FindChangePoints (figure 3); whether a split is significant is decided by a
:class:`SignificanceTest` (:class:`FPATest` by default, :class:`PaperTest` for the paper's fitted
α = .05 curve, :class:`FTest` for the F distribution the paper shows to be wrong;
:mod:`.significance`). This module runs the default search's steps (docs/changepoints.md, "The
default search") and is the kernel's public face: the statistic is :mod:`.statistic`'s, the level
search :mod:`.level`'s and the checks after it :mod:`.edges`', the trend :mod:`.trend`'s and
:mod:`.bends`', the spikes :mod:`.spikes`' and the results :mod:`.results`'.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perfsleuth.blas import one_blas_thread
from perfsleuth.changepoints.kernels import grid, kinks
from perfsleuth.changepoints.kernels.bends import (
    _curve_instead,
    _lines_of_a_flat,
    _negligible,
    _ramp_instead_of_a_trend,
    _with_kinks,
    _with_slope_points,
)
from perfsleuth.changepoints.kernels.edges import (
    _at_still_edges,
    _breaks,
    _hidden_steps,
    _lone_jumps,
    _steps_under_the_floor,
)
from perfsleuth.changepoints.kernels.level import AlphaSpending, _cost, _Measured, _Practical
from perfsleuth.changepoints.kernels.results import (
    Assessment,
    ChangePoint,
    ChangePoints,
    Later,
    Scale,
    Segment,
    SpikeRun,
    Split,
    _starts,
)
from perfsleuth.changepoints.kernels.significance import (
    _TESTS,
    FPATest,
    FTest,
    PaperTest,
    SignificanceTest,
)
from perfsleuth.changepoints.kernels.spikes import _effect, _residual_scale, _spikes
from perfsleuth.changepoints.kernels.statistic import (
    _as_columns,
    _centre,
    _check_min_size,
    _difference_phi_bound,
    _effective_columns,
    _in_units,
    _lag1_columns,
    _mean,
    _noise_scale,
    _partition,
    _residual_lag1_columns,
    _segment_means,
    _spread,
    _symmetrised,
    lag1_autocorrelation,
    residual_lag1_autocorrelation,
    two_partition,
)
from perfsleuth.changepoints.kernels.trend import (
    _TREND_MIN_LENGTH,
    _alternate,
    _bic,
    _bic_scores,
    _detrend,
    _fit_independent,
    _monotone,
    _prune_with_trend,
    _ramp,
    _rounding_floor,
    _significant_slopes,
    _sloped,
    _trend_fit,
)
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
Method = Literal["fpa", "paper", "f"]
Missing = Literal["error", "drop"]


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
# of its contrast at the period, the least a cycle keeps beside its levels (_cycle_kept_share)
_CYCLE_KEPT_SHARE = 0.5
_LOOK: Literal["look"] = "look"  # no first cycle given: :func:`_without_cycle` looks for it
# a description's first cycle, measured by the caller (None: there is none), or _LOOK
_FirstCycle = robust_mod.Cycle | None | Literal["look"]
# a description: (common slope, level points kept, dropped)
_Fit = tuple[FloatArray, list[ChangePoint], Sequence[ChangePoint]]


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
    test = _checked_options(
        alpha, min_size, method, alpha_spending, max_depth, min_effect, min_relative_change,
        penalty, missing,
    )  # fmt: skip
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
    slope, accepted, rejected = model.slope, model.accepted, model.rejected
    level = model.level()  # the piecewise-constant part (plus noise), on the model's scale

    dropped: list[ChangePoint] = []
    if not robust_search:
        accepted, dropped = _apply_effect_floor(accepted, level, min_effect)
    points, segments, bounds, fitted = _reported_points(model, accepted, level, x, unit)
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
        rejected=Later(
            len(rejected) + len(dropped),
            functools.partial(
                _with_raw_means, Later.joined(rejected, dropped), x, unit, model.scale
            ),
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


def _reported_points(
    model: _Description,
    accepted: list[ChangePoint],
    level: FloatArray,
    x: FloatArray,
    unit: FloatArray,
) -> tuple[tuple[ChangePoint, ...], tuple[Segment, ...], list[int], FloatArray]:
    """(points, segments, their bounds, the fitted values on the model's scale): the points
    ``accepted`` of ``model`` with the levels either side as the final segmentation has them,
    not as the tested parts, their shifts in the series' units (``x`` searched, ``unit`` its
    scale) and, where a kink is, their segments' own broken line (``level``: the model's
    piecewise-constant part, plus noise)."""
    n, dims = x.shape
    on_logs, bends = model.scale == "log", model.bends
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
    return points, segments, bounds, fitted


def _checked_options(
    alpha: float,
    min_size: int | None,
    method: Method | SignificanceTest,
    alpha_spending: AlphaSpending,
    max_depth: int | None,
    min_effect: float,
    min_relative_change: float | None,
    penalty: float,
    missing: Missing,
) -> SignificanceTest:
    """The significance test :func:`find_change_points`' options name, once every option is
    checked (a ``ValueError`` naming the first that is not valid)."""
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
    return test


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
        rejected=Later(len(found.rejected), lambda: [placed(p) for p in found.rejected]),
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
    # the first cycle of the values, measured once: the scale's judge and their description
    period = robust_mod.detect_period(x[:, 0], min_period=2 * practical.min_size)
    level = None if period is None else robust_mod.cycle_level(x[:, 0], period)
    first = None if period is None else robust_mod.cycle_share(x[:, 0], period, level)
    follows = _cycle_follows_level(x[:, 0], first, practical.min_size, level)
    # the log description's first cycle
    log_first: _FirstCycle = _LOOK if follows is None else follows
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


def _describe(x: FloatArray, search: _Practical, first: _FirstCycle = _LOOK) -> _Description:
    """The default search's description of ``x`` (on the scale given): its cycle, its level
    points, a common slope when it is kept (step 6) and, on one column, the kinks. ``first``:
    its first cycle (None: no cycle), when already measured. A cycle that its levels take
    (:func:`_cycle_kept_share` under :data:`_CYCLE_KEPT_SHARE`) was a staircase: the series is
    described again without."""
    model = _described(x, search, first)
    if model.periods and _cycle_kept_share(x, model) < _CYCLE_KEPT_SHARE:
        return _described(x, search, None)
    return model


def _cycle_kept_share(x: FloatArray, model: _Description) -> float:
    """How much of its oscillation the description's first cycle keeps beside its level
    points: the series less each segment's mean (and, where a segment holds two periods or
    more, its own line: a shorter one's would take a share of the cycle), its contrast at the
    period (:func:`robust_mod.cycle_contrast`) as a share of the series' own; the largest over
    the columns that oscillate at the period (0 if none does).

    Levels that step up at nearly regular intervals are, less a line, a sawtooth that the
    cycle search takes for a cycle of their spacing. Removed as one, it left the steps ragged
    (ten steps of 3–6 σ up a slight trend, each within ±10% of a regular grid: found 8–10
    beside 4–5 false points, 11 of 13 of them slope points). The levels found with the cycle
    removed still take the steps, and nothing periodic is left beside them (contrasts of −.17
    to .20, from .42–.86: at most .27 of it); a real cycle is left whole, as no level, and no
    line over two of its periods, can take it (the corpora's 27 cycles keep .87–1.22 of their
    contrast, 450 seeded cycles among shifts .84 or more:
    ``benchmarks/changepoints_cycle_levels.py``). Twenty steps and more at such intervals are
    a routine the cycle's profile takes whole, and keep it. The levels' common slope and
    kinks are left out: a staircase described with its cycle often keeps the staircase's rise
    as a slope, and less that, its flat steps are the sawtooth again. (Two tries that judged
    the cycle by BIC, with and without it, also mended the staircases but lost real cycles of
    few periods; a second cycle search on what the levels leave lost cycles that only just
    passed its bar the first time.)"""
    period = model.periods[0]
    cuts = sorted(p.index for p in model.accepted)
    about = x - _segment_means(x, cuts)
    for a, b in itertools.pairwise([0, *cuts, x.shape[0]]):
        if b - a >= 2 * period:
            t = np.arange(b - a) - 0.5 * (b - a - 1)
            about[a:b] -= np.outer(t, t @ about[a:b]) / float(t @ t)
    shares = [0.0]
    for j in range(x.shape[1]):
        before = robust_mod.cycle_contrast(x[:, j], period)
        if before > 0:
            shares.append(robust_mod.cycle_contrast(about[:, j], period) / before)
    return max(shares)


def _described(x: FloatArray, search: _Practical, first: _FirstCycle) -> _Description:
    """:func:`_describe`, its cycle judged by the autocorrelation alone."""
    n, dims = x.shape
    scale: Scale = "log" if search.log_levels else "linear"
    adjusted, periods, cycle = _without_cycle(x, search.min_size, first)
    measured: _Measured | None = search.measure(adjusted)
    accepted, rejected = search.run(adjusted, measured=measured)
    if dims > 1 or search.log_levels or search.min_relative_change <= 0.0:
        measured = None  # (kept for the relative floor's check alone, which searches it again)
    flat: _Fit = (np.zeros(dims), accepted, rejected)
    slope = np.zeros(dims)
    bends: list[kinks.Kink] = []
    if n >= _TREND_MIN_LENGTH:
        slope, accepted, rejected = _with_trend(adjusted, search, flat)
        if dims == 1:
            slope, accepted, rejected, bends = _with_bends(
                adjusted, search, (slope, accepted, rejected), flat, measured
            )
    return _Description(
        scale, adjusted, periods, cycle, slope, accepted, rejected, bends, search.grain()
    )


def _with_trend(adjusted: FloatArray, search: _Practical, flat: _Fit) -> _Fit:
    """The description with a common slope, when one is kept (step 6): (slope, level points
    kept, dropped), from ``flat``, the level search with no slope (``adjusted``: the series
    less its cycle)."""
    dims = adjusted.shape[1]
    accepted, rejected = flat[1], flat[2]
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

    zero = _alternate(searched, adjusted, np.zeros(dims), accepted, rejected, search.min_effect)
    slope, accepted, rejected = zero
    jumps = _lone_jumps(adjusted, search.alpha, float(search.grain()[0]))
    line = _significant_slopes(adjusted, jumps)
    rest = _detrend(adjusted, slope)
    trending = bool(line.any()) and (
        not accepted or (not slope.any() and _monotone(rest, accepted)) or _sloped(rest, accepted)
    )
    fits = [zero]
    if trending:
        start = searched(line, [p.index for p in accepted])
        fits.append(_alternate(searched, adjusted, line, *start, search.min_effect))
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
            fits.append(
                _alternate(searched, adjusted, inside, *searched(inside, cuts), search.min_effect)
            )
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
        rejected = Later.joined(rejected, pruned)
    return slope, accepted, rejected


def _with_bends(
    adjusted: FloatArray,
    search: _Practical,
    described: _Fit,
    flat: _Fit,
    measured: _Measured | None = None,
) -> tuple[FloatArray, list[ChangePoint], Sequence[ChangePoint], list[kinks.Kink]]:
    """The description of a one-column series with its kinks (step 6): (slope, level points
    kept, dropped, kinks), from ``described``, the description with or without a common
    slope, and ``flat``, the level search with no slope, which the kinks may prefer
    (``measured``: the seeded splits that search found)."""
    slope, accepted, rejected = described
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
        if _steps_under_the_floor(adjusted, fit, flat[1], flat[2], search, measured):
            slope, accepted, rejected = flat
            accepted, bends, replaced = _lines_of_a_flat(adjusted[:, 0], accepted, judged, search)
        elif ramp := _ramp_instead_of_a_trend(adjusted[:, 0], fit, flat[1], search):
            slope, accepted, rejected = flat
            accepted, bends, replaced = ramp
    else:
        accepted, bends, replaced = _lines_of_a_flat(adjusted[:, 0], accepted, judged, search)
    rejected = Later.joined(rejected, replaced)
    if bends or slope.any():
        accepted, bends, broken = _breaks(adjusted[:, 0], accepted, bends, search)
        accepted, bends, small = _at_still_edges(adjusted[:, 0], accepted, bends, search)
        rejected = Later.joined(rejected, broken, small)
    if bends:  # kinks (and steps) that only draw a curve bending one way are no changes
        accepted, bends, drew = _curve_instead(adjusted[:, 0], accepted, bends, search)
        rejected = Later.joined(rejected, drew)
    return slope, accepted, rejected, bends


def _cycle_follows_level(
    x: FloatArray,
    first: robust_mod.Cycle | None,
    min_size: int,
    level: FloatArray | None = None,
) -> robust_mod.Cycle | None:
    """A positive series' cycle, measured on its logarithm, when the series varies by a factor
    of its level rather than by an amount (else None): a latency's daily cycle of ±15% at
    every level is a common profile of its logarithm only, and removed from the values it
    stays in their high stretches as noise (the speed benchmark's series at 10⁴ readings, 10
    shifts: recall .655, and .965 on the log scale). Both of two classic diagnostics must say so:

    * Box–Cox: the cycle and noise (less the running median one period wide and the
      profile, :func:`robust_mod.cycle_share`) are fitted better on the log scale (robust σ
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

    ``first``: the values' first cycle (:func:`_without_cycle`), or None, and ``level`` the
    running median it was measured about. The cycle returned is the log description's first:
    judged to follow the level, it is a cycle of the logarithm, and neither looked for (12 ms
    at 10⁵ readings) nor measured again there. Its running median is the logarithm of the
    values' (:func:`robust_mod.cycle_level`), not filtered again (10⁵ readings: 5.6 → .1 ms)."""
    logs = np.log(x)
    period = first.period if first is not None else None
    if period is None:
        period = robust_mod.detect_period(logs, min_period=2 * min_size)  # as _without_cycle
    if period is None:
        return None
    if first is None or level is None:
        level = robust_mod.cycle_level(x, period)
    own = first.noise if first is not None else robust_mod.cycle_share(x, period, level).noise
    logged = robust_mod.cycle_share(logs, period, np.log(level))
    if not logged.noise * math.exp(float(logs.mean())) < own:
        return None
    slope, se = robust_mod.spread_level_slope(x, period)
    return logged if slope - 2.0 * se >= 0.5 else None


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
    the slope common to its segments, b. Each segment has its own level, and each piece of a
    broken line between its kinks its own line, so the two kinds of growth differ only inside
    them: over the longest, L readings, e^(b t) leaves its chord by about (b L)² / 8 (of the
    level), compared with the robust σ about that refit. O(n), no search: a long series that
    drifts a little, its noise skewed (NAB's CPU series, the 10⁵-reading speed series: (b L)²
    / 8 under a fifth of σ), is not described twice, nor is a curve its kinks already draw
    (an S-curve rising 5 σ over 10⁵ readings, two kinks: 13 level searches → 7, 2.1 → 1.1 s)."""
    n = x.shape[0]
    y = np.log(x[:, 0])
    flat = y
    for period in model.periods:  # shortest first, as the description removed them
        flat = robust_mod.remove_cycle(flat, period)[0]
    bounds = [0, *sorted(p.index for p in model.accepted), n]
    growth = robust_mod.within_slope(flat, bounds[1:-1])[0]
    sigma = float(_residual_scale(_detrend(flat[:, None], np.array([growth])), bounds)[0])
    pieces = sorted({*bounds, *(k.index for k in model.bends)})
    longest = max(b - a for a, b in itertools.pairwise(pieces))
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


_MOST_CYCLES = 3  # cycles removed in turn (a day in a week in a year)
# of the variation left beyond a noise profile's share, a sine at detect_period's contrast bar
_LATER_CYCLE_SHARE = 0.15


def _without_cycle(
    x: FloatArray, min_size: int, first: _FirstCycle = _LOOK
) -> tuple[FloatArray, tuple[int, ...], FloatArray]:
    """Remove the cycles found in any column, shortest first: (series, periods, the cycles
    removed per column). ``first``: the first one (None: no cycle), when already measured (of
    one column).

    Operations data often has several nested cycles (a day within a week). Each is removed in
    turn and the next, at least twice as long, looked for in what is left (of every column, the
    shortest period found is removed from all of them): a shorter cycle is measured first
    because a longer one is part of the slow part it is measured against, and once it is
    removed, the longer one's profile no longer carries it (a weekly profile has a seventh of
    the cycles a daily one has to take its median over). Looking only for the first period
    removed the daily cycle of half-hourly taxi rides and left the weekly one in.

    A later cycle must take a share of what is left, as a profile: what a median profile of
    noise takes by chance ((π/2) P / n), and .15 of the rest, what a sine at the detection's bar
    takes (a contrast of .3 is twice its share). (Twice the chance share, as before, asked .785
    of four weeks' weekly profile, whose weekends 2 σ lower beside a daily cycle take .50–.69:
    the week was removed in 1 of 20 such series, now 18.) A cycle whose amplitude follows the
    level is removed only in part, and what is left oscillates at its period in every stretch
    but with no common profile, which the autocorrelation sees at three times the period (the
    speed benchmark's 288 showed at 864, a share of .0002 and .009 at 10⁶ readings). And it must
    not be what a removed one left (:func:`_leftover`). The first cycle is judged by its
    autocorrelation alone: the share, by robust scales, undercounts a cycle that grows with the
    level (R's UKgas: −.41; the speed benchmark's 288 at 10⁶ × 50: −.03) and would drop it.

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
            if period is None:
                break
            removed = [robust_mod.cycle_share(flat[:, j], period) for j in range(dims)]
        elif first is None:
            break
        else:
            period, removed = first.period, [first]
        share = max(cycle.share for cycle in removed)
        chance = min(1.0, 0.5 * math.pi * period / n)  # a median profile of noise's share
        if periods and share < chance + (1.0 - chance) * _LATER_CYCLE_SHARE:
            break
        if any(_leftover([cycle.profile for cycle in removed], p) for p in periods):
            break
        flat = np.column_stack([cycle.series for cycle in removed])
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


def _with_raw_means(
    dropped: Sequence[ChangePoint], x: FloatArray, unit: FloatArray, scale: Scale
) -> list[ChangePoint]:
    """The candidates a search dropped, in index order, their means in the series' units."""
    return sorted(
        (
            dataclasses.replace(
                p,
                mean_before=_mean(x[p.start : p.index], unit),
                mean_after=_mean(x[p.index : p.stop], unit),
                scale=scale,
            )
            for p in dropped
        ),
        key=lambda p: p.index,
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
