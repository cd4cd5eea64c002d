"""Offline change-point detection after Berry & Hellerstein (1991): Fisher's optimal 2-partition,
applied hierarchically, each split tested against the distribution of T for optimally
partitioned AR(1) series (FPA, :mod:`perfsleuth.changepoints.kernels.fpa`).

Search and statistic are separate axes: :func:`find_change_points` is the paper's
FindChangePoints (figure 3); whether a split is significant is decided by a
:class:`SignificanceTest` (:class:`FPATest` by default, :class:`PaperTest` for the paper's fitted
α = .05 curve, :class:`FTest` for the F distribution the paper shows to be wrong;
:mod:`.significance`). This module runs the default search's steps (docs/changepoints.md, "The
default search") and is the kernel's public face: the statistic is :mod:`.statistic`'s, the level
search :mod:`.level`'s, the trend :mod:`.trend`'s, the spikes :mod:`.spikes`' and the results
:mod:`.results`'.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perfsleuth.blas import one_blas_thread
from perfsleuth.changepoints.kernels import grid, kinks, trend_steps
from perfsleuth.changepoints.kernels.level import (
    _JUMP_TAIL_INDEX,
    AlphaSpending,
    _cost,
    _Dropped,
    _Practical,
)
from perfsleuth.changepoints.kernels.results import (
    Assessment,
    ChangePoint,
    ChangePoints,
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
    _moves,
    _moving_between,
    _noise_scale,
    _partition,
    _residual_lag1_columns,
    _segment_means,
    _spread,
    _still_until,
    _symmetrised,
    lag1_autocorrelation,
    residual_lag1_autocorrelation,
    two_partition,
)
from perfsleuth.changepoints.kernels.trend import (
    _HIDDEN_STEP_SHARE,
    _MOST_TURNS,
    _TREND_MIN_LENGTH,
    Fit,
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
_LOOK = -1  # no first period given: :func:`_without_cycle` looks for it itself


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


# How many jumps ``_lone_jumps`` looks at: one a 20 readings, within these bounds. More than
# the most are a cycle or a long series' spikes, not resets (looking at one a 20 readings,
# 10⁶ readings with 0.2% spikes had their spikes' moves taken for jumps)
_JUMPS_LOOKED_AT = (3, 30)
