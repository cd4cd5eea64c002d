"""The level search of the default search (steps 3–5 of docs/changepoints.md): seeded candidates
pruned between their neighbours — significant (the FPA test, or a lone jump), large enough,
worth their cost and not resting on one observation — with the noise measured again about the
points until they settle (:class:`_Practical`, each round a :class:`_Round`); the points it
drops are read only when asked for (:class:`_Dropped`)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from perfsleuth.changepoints.kernels import grid, seeded
from perfsleuth.changepoints.kernels.results import Assessment, ChangePoint, Later
from perfsleuth.changepoints.kernels.significance import FPATest, SignificanceTest, _assessed
from perfsleuth.changepoints.kernels.spikes import _SPIKE_K, _residual_scale
from perfsleuth.changepoints.kernels.statistic import (
    _centre,
    _effective_columns,
    _lone_jump,
    _moves,
    _paper_statistics_1d,
    _paper_terms,
    _prefixes,
    _ratio,
    _residual_lag1_columns,
    _segment_means,
    _still_until,
    _symmetrised,
)
from perfsleuth.changepoints.kernels.trend import _ramp
from perfsleuth.stats import robust as robust_mod

FloatArray = NDArray[np.float64]
_Indexed = Mapping[int, float] | FloatArray  # prefix sums: an array, or its values at some indices
AlphaSpending = Literal["length", "none"]
_NOISE_ROUNDS = 4  # re-measurements of the noise on the residuals; points settle in 2-3
_CANDIDATE_ALPHA = 0.05  # level at which one seeded interval proposes its split
_PRUNE_ROUNDS = 3  # prune, re-place, prune again: settles in one or two
_PHI_CAP_SE = 2.0  # standard errors (≈ 3/√(n/s), s: pair_stride) added to the φ from differences
_MAX_EXPONENT = 700.0  # e^700 ≈ 1e304: a bar no z² reaches, without overflow
_SAME_PHI = 1e-6  # an implied φ this close to the AR(1) one: the AR(1) scale was the larger
_LOUDER_SE = 4.0  # standard errors (√(2/k), k differences) by which a segment is louder
_MOVE_CAP = 0.99  # quantile at which squared first differences are capped (a spike: two of them)


class _Dropped(Later[ChangePoint]):
    """A search's dropped candidates, made into change points (the test's verdicts looked up)
    when first read, from statistics and means taken when the search ended: only the
    description finally kept is read, and on a gradual ramp, where every split is a
    candidate, each of the trend's several searches drops thousands (lookups and points were
    14 of 23 s at 10⁶ readings, ``benchmarks/changepoints_ramp_speed.py``)."""

    __slots__ = ("same_without_floor",)

    def __init__(
        self, count: int, build: Callable[[], list[ChangePoint]], same_without_floor: bool = False
    ):
        super().__init__(count, build)
        # whether the search without the relative floor, started from the points kept, would
        # make every judgement of this one's last round again (``_Round.points``)
        self.same_without_floor = same_without_floor


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

    def measure(self, level: FloatArray, slope: FloatArray | None = None) -> _Measured:
        """A store for the seeded splits that :meth:`run` finds in ``level`` (less ``slope``),
        whatever its floors, for another search of the same series to look up."""
        trend = np.zeros(self.dims) if slope is None else slope
        return _Measured(level, trend, self.min_size, seeded.SplitMemo())

    def run(
        self,
        level: FloatArray,
        slope: FloatArray | None = None,
        previous: list[int] | None = None,
        measured: _Measured | None = None,
    ) -> tuple[list[ChangePoint], Sequence[ChangePoint]]:
        """(kept, dropped) change points of ``level`` (n × dims, the series' units, cycle and
        ``slope`` per observation removed); ``previous``: points of an earlier, similar search,
        about which the noise is measured first (they only save rounds); ``measured``: the seeded
        splits earlier searches of this series found (:meth:`measure`)."""
        trend = np.zeros(self.dims) if slope is None else slope
        if measured is None or not measured.of(level, trend, self.min_size):
            measured = self.measure(level, slope)
        series = _Series.of(level, trend)
        # The noise is first measured at short range (first differences, which a shift touches
        # once), the points judged, then its long-run scale measured on the residuals about
        # them, until the points settle: every point is judged against noise without the
        # shifts. (Blocks measured over the whole series count the shifts as noise: four 25σ
        # steps in 150 CPU readings gave a scale 25 times the noise and no point.)
        points: list[int] = sorted(previous or [])
        short_range = not points
        # the effect floor's σ about some points (on ``centred``, the same every round)
        residual_scales: dict[tuple[int, ...], FloatArray] = {}
        # A round only rescales ``sym`` (z = sym / σ): its prefix sums (of sym, sym² and
        # sym_t sym_t+1) are taken once and rescaled, and, for one column, every seeded
        # interval's best split is found once and its z² rescaled (``seeded.SplitMemo``), by
        # the rounds of every search of the series given the same ``measured``.
        memo = measured.splits
        for _ in range(_NOISE_ROUNDS):
            current = _Round(self, series, points, short_range)
            short_range = False
            candidates = current.candidates(memo)
            chosen = seeded.greedy(candidates)
            found = chosen.index.tolist()
            layer = dict(zip(found, chosen.layer.tolist(), strict=True))
            kept, dropped, found = current.settled(found, residual_scales)
            self.log(
                "change points: %d candidate(s), %d kept by the greedy pass, %d judged real",
                len(candidates),
                len(chosen),
                len(kept),
            )
            if found == points:
                break
            points = found
        return current.points(kept, dropped, layer, found)

    def _critical_z2(self, dims: float) -> Callable[[int, float | None], float]:
        """Critical z² of a segment of a given length, at a given level or (None) at the level
        spent on that length: the test's tabled curves, without φ estimated."""
        m, n = self.min_size, self.n
        test = (
            dataclasses.replace(self.test, phi_estimated=False)
            if isinstance(self.test, FPATest)
            else self.test
        )
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


@dataclass(frozen=True, slots=True)
class _Series:
    """What a level search measures of its series once, whatever the noise round."""

    trend: FloatArray  # the slope removed from the series, per observation
    centred: FloatArray
    offset: FloatArray  # centred + offset = level
    sym: FloatArray  # skewness out: T is judged on a near-Gaussian scale
    # prefix sums on the series' own scale, for its lag-1 autocorrelation (see ``statistic``)
    own_sums: tuple[FloatArray, FloatArray, FloatArray]
    # prefix sums of sym, sym² and sym_t sym_t+1, rescaled by each round's σ
    own_scale: tuple[FloatArray, FloatArray, FloatArray]
    moves: NDArray[np.intp]  # the rows at which the readings move (``_moves``)
    floors: list[float]  # per column, the finest noise the readings can show
    moved: FloatArray  # prefix sums of the capped squared moves (``_louder``)
    # (a, i, b) → whether i is the lone jump of [a, b) (``_Round.lone_jump``), for every round
    jumps: dict[tuple[int, int, int], bool] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, level: FloatArray, trend: FloatArray) -> _Series:
        """``level``: n × dims, the series' units, its cycle and ``trend`` removed."""
        n, dims = level.shape
        centred = _centre(level)
        sym = _symmetrised(centred)
        # each sum of the series' own scale beside the same of ``sym``'s, two in one pass
        pl, ps = _prefixes(centred, sym)
        squares = _prefixes(centred * centred, sym * sym)
        lagged = _prefixes(centred[1:] * centred[:-1], sym[1:] * sym[:-1])
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
            for j in range(dims)
        ]
        return cls(
            trend=trend,
            centred=centred,
            offset=level.mean(axis=0),
            sym=sym,
            own_sums=(pl, squares[0], lagged[0]),
            own_scale=(ps, squares[1], lagged[1]),
            moves=moves,
            floors=floors,
            moved=_squared_moves(sym[:, 0]) if dims == 1 else np.zeros(n + 1),
        )


@dataclass(frozen=True, slots=True)
class _Measured:
    """A series' seeded intervals' best splits found so far, which do not depend on a
    search's floors: the relative floor's check searches the series again, without the floor
    (``edges._steps_under_the_floor``), and its first round split them all again. (Its sums,
    :class:`_Series`, are taken again: held meanwhile, 80 MB at 10⁶ readings, the trend's
    searches took longer than they saved.)"""

    level: FloatArray
    trend: FloatArray
    min_size: int  # the seeded intervals' shortest parts
    splits: seeded.SplitMemo

    def of(self, level: FloatArray, trend: FloatArray, min_size: int) -> bool:
        """Whether these are the splits of ``level`` less ``trend``, as ``min_size`` says."""
        same_trend = np.array_equal(self.trend, trend)
        return level is self.level and min_size == self.min_size and same_trend


class _Round:
    """One noise round of a level search: the noise measured about ``points`` (at short range
    in the first round of a search with no start), the yardstick and the test's φ cap it
    gives, and every judgement made with them."""

    def __init__(
        self, search: _Practical, series: _Series, points: list[int], short_range: bool
    ) -> None:
        self.search, self.series = search, series
        self.about = points  # the points the noise was measured about
        n, m = search.n, search.min_size
        self.top = 1 if short_range else None
        sym, centred = series.sym, series.centred
        resid = sym - _segment_means(sym, points)
        measured = [
            _long_run_scale(resid[:, j], series.floors[j], self.top, m) for j in range(search.dims)
        ]
        self.noise = [(phi, scale, implied) for phi, scale, implied, _ in measured]
        # the most persistence the noise shows the test (see ``statistic``): its φ at short
        # range with two standard errors, on the symmetrised scale or the series' own (as
        # the null estimate), or the φ its long-run scale implies. (The φ estimated: the
        # yardstick's is 0 where it is not told from independence, so measured again.)
        own = centred - _segment_means(centred, points)
        phi_cap = max(
            *(phi or shown for phi, _, _, shown in measured),
            *(robust_mod.persistence(own[:, j], max_block=self.top) for j in range(search.dims)),
        ) + _PHI_CAP_SE * 3.0 / math.sqrt(n // robust_mod.pair_stride(n))
        self.phi_cap = max(phi_cap, *(implied for _, _, implied in self.noise))
        # how many independent observations the long-run yardstick rests on (``_cost``)
        self.independent = _independent(
            n, self.noise, robust_mod.memory_cap(n, self.top), robust_mod.longest_block(n, self.top)
        )
        self.unit = np.array([s for _, s, _ in self.noise])
        self.z = sym / self.unit  # unit long-run variance
        self.dims = _effective_columns(self.z) if search.dims > 1 else 1.0
        # prefix sums of z, z² and z_t z_{t+1}: every judgement is O(1)
        scale = series.own_scale
        unit = self.unit
        self.sums = (scale[0] / unit, scale[1] / unit**2, scale[2] / unit**2)
        self.tests: dict[tuple[int, int, int], tuple[float, float, Assessment]] = {}
        # each segment's best split on this round's sums (``seeded.refine``), for its prunings
        self.placed: dict[tuple[int, int], int] = {}
        # whether a judgement failed only for the relative floor (``_Dropped``; the joint
        # judge does not say)
        self.floor_decided = search.dims > 1

    def candidates(self, memo: seeded.SplitMemo) -> seeded.Candidates:
        """The seeded intervals' best splits that reach the candidates' level (``memo``: the
        splits of the search's earlier rounds)."""
        search = self.search
        critical_at = search._critical_z2(self.dims)
        if search.dims == 1:  # on sym's own scale, the thresholds in its units
            var = float(self.unit[0]) ** 2
            found = seeded.seeded_candidates(
                self.series.sym, search.min_size, _at_level(critical_at, _CANDIDATE_ALPHA, var),
                search.max_depth, sums=self.series.own_scale[:2], memo=memo,
            )  # fmt: skip
            return dataclasses.replace(found, strength=found.strength / var)
        return seeded.seeded_candidates(
            self.z, search.min_size, _at_level(critical_at, _CANDIDATE_ALPHA), search.max_depth,
            sums=self.sums[:2],
        )  # fmt: skip

    def settled(
        self, found: list[int], residual_scales: dict[tuple[int, ...], FloatArray]
    ) -> tuple[list[seeded.Judged], list[seeded.Judged], list[int]]:
        """(kept, dropped, placed): ``found`` pruned, each survivor moved to the best split
        between its final neighbours, and pruned again until they stay put.

        The effect floor's noise σ comes from the finer, then the pruned fit; a survivor is
        moved because a seeded interval's split can be a few observations off. Not in the
        short-range round: its points only say where the long-run noise is first measured, and
        the next round judges them again (a long series' first round prunes thousands of
        candidates to hundreds, and each pruning re-tests them all)."""
        search, centred = self.search, self.series.centred
        n, m = search.n, search.min_size
        kept: list[seeded.Judged] = []
        dropped: list[seeded.Judged] = []
        for _ in range(1 if self.top == 1 else _PRUNE_ROUNDS):
            key = tuple(found)
            if key not in residual_scales:  # the rounds often prune the same points
                residual_scales[key] = _residual_scale(centred, [0, *found, n])
            sigma = residual_scales[key]
            kept, gone = self.pruned(found, sigma)
            dropped += gone
            burst = (
                _transients(
                    kept,
                    centred,
                    float(sigma[0]),
                    self.sums[0],
                    functools.partial(_cost, search.penalty, n, independent=self.independent),
                    2 * m,
                    self.noise[0][0],
                )
                if search.dims == 1
                else set()
            )
            if burst:
                # judged again without them: their neighbours' segments now span the burst
                dropped += [k for k in kept if k.index in burst]
                found = [k.index for k in kept if k.index not in burst]
                kept, gone = self.pruned(found, sigma)
                dropped += gone
            # A point that is its segment's one outsized move is where its change is, to the
            # observation: the re-placing is for seeded splits a few observations off, and the
            # largest z² of a segment that also leans can be far from its jump (a counter
            # reset at 120 of 200 readings moved to 34, where it failed, and was lost).
            jumps = [k.index for k in kept if self.lone_jump(k.start, k.index, k.stop)]
            placed = seeded.refine(self.sums[0], [k.index for k in kept], m, jumps, self.placed)
            if placed == found:
                break
            found = placed
        return kept, dropped, found

    def pruned(
        self, found: list[int], sigma: FloatArray
    ) -> tuple[list[seeded.Judged], list[seeded.Judged]]:
        """``found`` pruned with this round's noise, sums and tests (``sigma``: the effect
        floor's σ about them)."""
        return seeded.prune(found, self.search.n, self.judge(sigma, found), self.significant)

    def paper_statistic(
        self, sums: tuple[FloatArray, FloatArray, FloatArray], a: int, i: int, b: int
    ) -> tuple[float, float]:
        """The paper's T at ``i`` on [a, b), and the segment's lag-1 autocorrelation under
        "no change" (both from prefix sums, O(1))."""
        if self.search.dims == 1:
            # the same arithmetic on scalars, without numpy's per-call overhead (the pruning
            # judges up to ~3 times per candidate)
            whole, within, num = _paper_terms(sums, a, i, b)
            return _ratio(float(whole), float(within)), float(num / whole) if whole > 0 else 0.0
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

    def statistic(self, a: int, i: int, b: int) -> tuple[float, float]:
        """(T, the φ tested) of the split at ``i`` of [a, b).

        The φ tested is the segment's lag-1 autocorrelation under "no change" (the paper's,
        which keeps the size at α) unless that exceeds all the persistence the noise shows:
        its φ from first differences with two standard errors (≈ 3/√n each), or the φ its
        long-run scale implies (dependence at longer range, seen by the blocks). Other
        shifts inside the segment inflate the null estimate, and with it the critical value,
        until no edge is significant: a run queue that steps up and down every 30 of 150
        readings has lag-1 autocorrelation .94 while its noise has φ = .28 (+ .49); tested
        at .65 its four steps are found, none before.

        The null estimate is the larger of the lag-1 autocorrelations on the scale T is
        judged on (skewness out) and on the series' own: the transform of skewed,
        nonlinearly dependent noise lowers the lag-1 autocorrelation more than the
        persistence (M/M/1 response times at ρ = .8: .88 transformed, .96 untransformed,
        and a false change in .18 of 1,000-point series tested at the lower), while spikes
        lower it on the series' own scale."""
        t, phi_null = self.paper_statistic(self.sums, a, i, b)
        phi_null = max(phi_null, self.paper_statistic(self.series.own_sums, a, i, b)[1])
        return t, min(phi_null, self.phi_cap)

    def tested(self, a: int, i: int, b: int) -> tuple[float, float, Assessment]:
        """(T, the φ tested, the test's verdict) of the split at ``i`` of [a, b), kept:
        pruning and re-placing judge most points again on the same segment. The verdict is
        the costly part of a judgement (the table's curve at that length and φ)."""
        key = (a, i, b)
        if key not in self.tests:
            search = self.search
            t, phi = self.statistic(a, i, b)
            verdict = search.test.assess(
                t, n=b - a, phi=phi, alpha=search._level_alpha(b - a), dims=self.dims,
                min_size=search.min_size,
            )  # fmt: skip
            self.tests[key] = (t, phi, verdict)
        return self.tests[key]

    def significant(self, judged: seeded.Judged) -> bool:
        """The significance test of a judgement left pending (``seeded.prune``): the FPA test,
        or a lone jump."""
        a, i, b = judged.start, judged.index, judged.stop
        t, _, outcome = self.tested(a, i, b)
        return _rejects(outcome, t, self.search._level_alpha(b - a)) or self.lone_jump(a, i, b)

    def lone_jump(self, a: int, i: int, b: int) -> bool:
        """Whether the step at ``i`` is the one outsized move of [a, b) in a column
        (:func:`_lone_jump_in_a_column`, at the level spent on that segment). It reads the
        series' own moves, not the round's noise, so the search's rounds share the answers
        (``_Series.jumps``): each re-placing asks it of every point kept, mostly on the same
        segments again (10⁵ readings, 50 shifts: 354 asked, 116 distinct; 6 of 10 ms)."""
        jumps = self.series.jumps
        key = (a, i, b)
        if key not in jumps:
            level = self.search._level_alpha(b - a)
            jumps[key] = _lone_jump_in_a_column(self.series.centred[a:b], i - a, level)
        return jumps[key]

    def judge(
        self, sigma: FloatArray, points: list[int]
    ) -> Callable[[int, int, int], seeded.Judged]:
        """The verdict on a split at ``i`` of [a, b), each of them 0, n or one of ``points``
        (the pruning's), all but the significance test (left pending where the rest pass);
        ``sigma``: the effect floor's σ."""
        search, series = self.search, self.series
        n, m = search.n, search.min_size
        z, sums, independent = self.z, self.sums, self.independent
        centred, own_sums, moved = series.centred, series.own_sums, series.moved
        offset, trend, pz, pl = series.offset, series.trend, sums[0], own_sums[0]

        paid: dict[int, float] = {}  # the cost of each shorter side judged

        def costs(nl: int, nr: int) -> float:
            shorter = min(nl, nr)
            if shorter not in paid:
                paid[shorter] = _cost(search.penalty, n, shorter, independent)
            return paid[shorter]

        measured = sigma > 0
        effect_unit = np.where(measured, sigma, 1.0)

        ends = [0, *points, n]
        # where each run of unmoving readings that starts at an end stops
        still_until = _still_until(series.moves, ends, n)
        testable = _testable(m)

        if search.dims > 1:
            still = dict(zip(ends, still_until, strict=True))
            columns: list[tuple[_Indexed, _Indexed]] = [
                (sums[0][:, j], sums[1][:, j]) for j in range(search.dims)
            ]

            def verdict(a: int, i: int, b: int) -> seeded.Judged:
                if still[a] >= b:
                    return seeded.Judged(i, a, b, 0.0, False, 0.0)
                nl, nr = i - a, b - i
                ml, mr = (pz[i] - pz[a]) / nl, (pz[b] - pz[i]) / nr
                delta = float((nl * nr / (nl + nr)) * ((ml - mr) ** 2).sum())
                lev_l, lev_r = (pl[i] - pl[a]) / nl + offset, (pl[b] - pl[i]) / nr + offset
                shift = np.abs(lev_r - lev_l)
                effect = np.where(measured, shift / effect_unit, np.inf)
                top = np.maximum(np.abs(lev_l + trend * i), np.abs(lev_r + trend * i))
                relative = np.where(top > 0, shift / np.where(top > 0, top, 1.0), 0.0)
                if search.log_levels:
                    relative = -np.expm1(-shift)
                large = bool(np.any(
                    (effect >= search.min_effect) & (relative >= search.min_relative_change)
                    & (shift > 0)
                ))  # fmt: skip
                cost = costs(nl, nr)
                # the test last, and only when the pruning needs it (``significant``): it is
                # the costly part, and most candidates fail before it; a segment of two single
                # points cannot be tested (T is infinite there)
                passes = large and delta > 0 and delta >= cost and b - a >= testable
                passes = passes and _beyond_one_observation(z, columns, a, i, b, cost, 2 * m)
                return seeded.Judged(i, a, b, delta, None if passes else False, float(effect.max()))

            return verdict

        # One column (most series): the same arithmetic on Python floats, the prefix sums read
        # once at the only indices a judgement asks for (numpy scalars cost several times as
        # much an operation), but where a split is worth its cost (few: from the arrays)
        columns1: list[tuple[_Indexed, _Indexed]] = [(pz[:, 0], sums[1][:, 0])]
        offset1, trend1, unit1 = float(offset[0]), float(trend[0]), float(effect_unit[0])
        moved_unit = 2.0 * float(self.unit[0]) ** 2  # the round's: a difference's long-run variance
        measured1 = bool(measured[0])
        min_effect, min_relative = search.min_effect, search.min_relative_change
        log_levels = search.log_levels
        column = centred[:, 0]

        # (the cost's lookup inline, an end's sums and run in one lookup, and the arithmetic
        # on plain floats without float(), max or min calls: a 10⁶-reading S-curve makes
        # 360,000 judgements)
        judged, penalty = seeded.Judged, search.penalty
        inf, expm1 = math.inf, math.expm1
        # (one mapping built from lists at once: four mappings, one of them by lookups, took
        # 6.3 ms a pruning of 7,000 candidates, this 2.8)
        rows = np.array(ends)
        at = zip(pz[rows, 0].tolist(), pl[rows, 0].tolist(), still_until, strict=True)
        at_end = dict(zip(ends, at, strict=True))

        def verdict_1d(a: int, i: int, b: int) -> seeded.Judged:
            za, la, stop = at_end[a]
            if stop >= b:
                return judged(i, a, b, 0.0, False, 0.0)
            zi, li, _ = at_end[i]
            zb, lb, _ = at_end[b]
            nl, nr = i - a, b - i
            gap = (zi - za) / nl - (zb - zi) / nr
            delta = (nl * nr / (nl + nr)) * (gap * gap)
            lev_l, lev_r = (li - la) / nl + offset1, (lb - li) / nr + offset1
            shift = abs(lev_r - lev_l)
            effect = shift / unit1 if measured1 else inf
            shorter = nr if nr < nl else nl
            cost = paid.get(shorter)
            if cost is None:
                cost = paid[shorter] = _cost(penalty, n, shorter, independent)
            if not delta >= cost:
                # not worth its cost, as most candidates (a louder segment only raises it):
                # nothing else is asked (an S-curve's 10⁶ readings: 360,000 judgements)
                return judged(i, a, b, delta, False, effect)
            cost *= _louder(moved, moved_unit, a, i, b)
            if log_levels:
                relative = -expm1(-shift)
            else:
                left, right = abs(lev_l + trend1 * i), abs(lev_r + trend1 * i)
                top = right if right > left else left  # max(left, right)
                relative = shift / top if top > 0 else 0.0
            large = effect >= min_effect and relative >= min_relative and shift > 0
            cheap = delta > 0 and delta >= cost and b - a >= testable
            # the levels without their extremes only where the split is worth its cost: a pass
            # over the segment, and most candidates fail the cost (10⁵ readings of an S-curve:
            # 5,000 such passes)
            if cheap and not large and effect >= min_effect and shift > 0 and not log_levels:
                large = _relative_without_extremes(
                    column, own_sums, offset1, trend1 * i, a, i, b, min_relative
                ) >= min_relative  # fmt: skip
            if cheap and not large and effect >= min_effect and shift > 0:
                self.floor_decided = True  # only the relative floor failed it
            passes = large and cheap
            passes = passes and _beyond_one_observation(z, columns1, a, i, b, cost, 2 * m)
            return judged(i, a, b, delta, None if passes else False, effect)

        return verdict_1d

    def evidence(
        self, judged: seeded.Judged, final: bool
    ) -> tuple[float, float, Assessment | None]:
        """(T, the φ tested, the test's verdict: None while still to be looked up)."""
        a, i, b = judged.start, judged.index, judged.stop
        if b - a < _testable(self.search.min_size):
            # a dropped candidate between close neighbours can sit in a segment too short for
            # the test (two single points): it was never tested, so it has no verdict
            return *self.paper_statistic(self.sums, a, i, b), Assessment(math.inf, math.nan)
        if final:
            return self.tested(a, i, b)
        return self.tests.get((a, i, b)) or (*self.statistic(a, i, b), None)

    def evidences(self, found: list[seeded.Judged]) -> list[tuple[float, float, Assessment | None]]:
        """:meth:`evidence` (not final) of many points; on one column, their statistics taken
        at once (10⁶ readings drop ~4,000 candidates a search: 70 ms one by one)."""
        if self.search.dims != 1 or not found:
            return [self.evidence(j, False) for j in found]
        a, i, b = (
            np.array([getattr(j, k) for j in found], dtype=np.intp)
            for k in ("start", "index", "stop")
        )
        t, phi = _paper_statistics_1d(self.sums, a, i, b)
        own = _paper_statistics_1d(self.series.own_sums, a, i, b)[1]
        judged_at = np.minimum(np.maximum(phi, own), self.phi_cap)  # as ``statistic``
        testable = _testable(self.search.min_size)
        out: list[tuple[float, float, Assessment | None]] = []
        for j, tj, pj, qj in zip(found, t.tolist(), phi.tolist(), judged_at.tolist(), strict=True):
            if j.stop - j.start < testable:
                out.append((tj, pj, Assessment(math.inf, math.nan)))  # as ``evidence``
            else:
                out.append(self.tests.get((j.start, j.index, j.stop)) or (tj, qj, None))
        return out

    def means(self, found: list[seeded.Judged]) -> tuple[FloatArray, FloatArray]:
        """Each point's means before and after it, the series' units (rows: the points)."""
        a, i, b = (
            np.array([getattr(j, k) for j in found], dtype=np.intp)
            for k in ("start", "index", "stop")
        )
        pl, offset = self.series.own_sums[0], self.series.offset
        before = (pl[i] - pl[a]) / (i - a)[:, None] + offset
        return before, (pl[b] - pl[i]) / (b - i)[:, None] + offset

    def points(
        self,
        kept: list[seeded.Judged],
        dropped: list[seeded.Judged],
        layer: dict[int, int],
        found: list[int],
    ) -> tuple[list[ChangePoint], _Dropped]:
        """The search's result from its last round: the kept points in full, the dropped
        made into points when read.

        A point dropped in one round may be kept (or dropped again) in a later one: its last
        verdict counts. The dropped are made from their statistics and means taken now: the
        arrays are not kept."""
        final = {j.index for j in kept}
        # the kept points' segments are disjoint, so O(n) in all
        phi_residual = [
            float(
                _residual_lag1_columns(_centre(self.z[j.start : j.stop]), j.index - j.start).max()
            )
            for j in kept
        ]
        last = list({j.index: j for j in dropped if j.index not in final}.values())
        last_evidence = self.evidences(last)
        last_means = self.means(last)
        search, dims = self.search, self.dims
        made = _as_points(
            search, dims, layer, kept, [self.evidence(j, True) for j in kept], *self.means(kept),
            phi_residual,
        )  # fmt: skip
        # Started from the points kept, a search without the relative floor measures the noise
        # about them, as this one's last round did, and judges as it did where the floor never
        # decided: where that round settled on them, it would end here too (with no point, it
        # would start at short range instead)
        repeats = bool(kept) and sorted(j.index for j in kept) == self.about == found
        # (the dropped made from what is taken now and the search's options: not ``self``,
        # whose arrays a kept description would hold, several of them, to the end)
        return made, _Dropped(
            len(last),
            lambda: _as_points(
                search, dims, layer, last, last_evidence, *last_means, [math.nan] * len(last)
            ),
            same_without_floor=repeats and not self.floor_decided,
        )


def _as_points(
    search: _Practical,
    dims: float,
    layer: dict[int, int],
    found: list[seeded.Judged],
    evidences: list[tuple[float, float, Assessment | None]],
    before: FloatArray,
    after: FloatArray,
    phi_residuals: list[float],
) -> list[ChangePoint]:
    """Judged points as change points (``dims``: the last round's effective column count,
    ``layer``: each point's seeded layer), the verdicts still to look up taken at once (a long
    search drops thousands). Of the search only its options: a search's dropped points are
    made from this when first read, and must not keep its arrays alive."""
    pending = [
        (t, j.stop - j.start, phi, search._level_alpha(j.stop - j.start))
        for j, (t, phi, known) in zip(found, evidences, strict=True)
        if known is None
    ]
    looked_up = iter(_assessed(search.test, pending, dims, search.min_size))
    made = []
    for k, (judged, (t, phi_tested, known)) in enumerate(zip(found, evidences, strict=True)):
        a, i, b = judged.start, judged.index, judged.stop
        verdict = next(looked_up) if known is None else known
        made.append(
            ChangePoint(
                index=i,
                statistic=t,
                critical_value=verdict.critical_value,
                p_value=verdict.p_value,
                alpha=search._level_alpha(b - a),
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


def _squared_moves(x: FloatArray) -> FloatArray:
    """Prefix sums of ``x``'s squared first differences, each capped at their
    :data:`_MOVE_CAP` quantile (a spike is two outsized ones): entry k sums the first k, the
    last entry repeats the one before (for :func:`_louder`'s lookups at any segment end)."""
    squares = np.diff(x) ** 2
    if squares.size:
        # np.quantile's linear interpolation between the order statistics either side, by one
        # partition around the lower and the least value above it (its two: 14 → 3 ms at 10⁶)
        rank = _MOVE_CAP * (squares.size - 1)
        lower = int(rank)
        ordered = np.array(squares)
        ordered.partition(lower)
        low = float(ordered[lower])
        high = float(ordered[lower + 1 :].min()) if lower + 1 < ordered.size else low
        np.minimum(squares, low + (high - low) * (rank - lower), out=squares)
    sums = np.zeros(x.size + 1)
    if squares.size:
        np.cumsum(squares, out=sums[1:-1])
        sums[-1] = sums[-2]
    return sums


def _louder(moved: _Indexed, unit: float, a: int, i: int, b: int) -> float:
    """How many times the cost of the split at ``i`` of [a, b) is paid: the segment's own
    short-range noise variance (its first differences' on either side of ``i``,
    :func:`_squared_moves`) over the yardstick's (``unit``: twice the long-run variance, a
    difference's) where that ratio is clearly above 1 — by :data:`_LOUDER_SE` standard errors
    of a variance from its b − a − 2 differences — else 1.

    The yardstick is the whole series' noise, and where a quiet part (an idle service's
    zeros, a gauge pegged at its limit) pulls it below a busy part's own noise, the busy
    part's z² (in yardstick units) overstates every dip by the ratio: white noise about 3
    after an idle half of 6,000–21,000 readings lost 2–10 dips of 5–9 readings as level
    points. Measured in its own units, the busy part pays for them as noise. Never less than
    1: a segment quieter than the yardstick is judged as before (the M/M/1 and NAB
    calibrations rest on the pooled yardstick)."""
    k = b - a - 2  # the differences inside the two sides: the step between them is no noise
    if k < 2 or unit <= 0.0:
        return 1.0
    ratio = float(moved[b - 1] - moved[a] - (moved[i] - moved[i - 1])) / (unit * k)
    return ratio if ratio > 1.0 + _LOUDER_SE * math.sqrt(2.0 / k) else 1.0


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
) -> tuple[float, float, float, float]:
    """(φ, long-run σ, the φ that σ implies, the first differences' φ of
    :func:`robust_mod.persistence`) of one column's noise (blocks up to
    ``max_block``; 1: the AR(1) scale alone), at least ``floor`` (finer is rounding, not
    noise): the standard deviation for a mostly flat series, ``floor`` (tiny) for noise-free
    data, whose shifts are infinitely significant: residuals that are exactly 0, or flat runs
    of at least ``min_size`` readings between moves (a staircase; a constant column stays 0
    anyway). Measured on the moves, such steps were their own noise: ``[1, 1, 1, 5, 5, 5]``
    had no change point. (A σ of 0 means flat differences, which imply no φ whatever σ
    replaces it.)"""
    if _staircase(x, min_size):
        return 0.0, floor, 0.0, robust_mod.persistence(x, max_block=max_block)
    phi, scale, implied, shown = robust_mod.noise_and_persistence(x, max_block=max_block)
    if scale > 0:
        return phi, max(scale, floor), implied, shown
    spread = float(np.std(x))
    return phi, spread if spread > floor else floor, implied, shown


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
