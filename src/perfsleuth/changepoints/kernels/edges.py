"""What the level search's points are checked for afterwards (steps 5–6 of docs/changepoints.md):
a crash that also slows the growth (a break), points moved to the edge of a still run, steps the
relative floor held back, lone jumps of counters and resets, and steps hidden under a trend."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from perfsleuth.changepoints.kernels import kinks, trend_steps
from perfsleuth.changepoints.kernels.bends import (
    Lines,
    _hinged_fit,
    _steps_and_hinges,
    _turn_beside_the_jump,
)
from perfsleuth.changepoints.kernels.level import _cost, _Dropped, _Measured, _Practical
from perfsleuth.changepoints.kernels.results import ChangePoint
from perfsleuth.changepoints.kernels.statistic import (
    _JUMP_TAIL_INDEX,
    _moves,
    _moving_between,
    _still_until,
)
from perfsleuth.changepoints.kernels.trend import (
    _HIDDEN_STEP_SHARE,
    _TREND_MIN_LENGTH,
    Fit,
    _bic_scores,
    _significant_slopes,
    _trend_fit,
)
from perfsleuth.stats import robust as robust_mod

FloatArray = NDArray[np.float64]


def _breaks(
    y: FloatArray, accepted: list[ChangePoint], bends: list[kinks.Kink], search: _Practical
) -> Lines:
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
) -> Lines:
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
) -> Lines | None:
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


def _steps_under_the_floor(
    y: FloatArray,
    trend: Callable[[], Fit],
    kept: list[ChangePoint],
    dropped: Sequence[ChangePoint],
    search: _Practical,
    measured: _Measured | None = None,
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
    would end at the same points (``_Dropped.same_without_floor``). ``measured``: the seeded
    splits that search found, which this one need not find again."""
    if search.min_relative_change <= 0.0 or search.log_levels:
        return False
    if isinstance(dropped, _Dropped) and dropped.same_without_floor:
        return False
    flat = sorted(p.index for p in kept)
    fine, _ = dataclasses.replace(search, min_relative_change=0.0).run(y, None, flat, measured)
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
    dev = np.abs(d - robust_mod.median(d))  # (np.median's value, faster)
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


# How many jumps ``_lone_jumps`` looks at: one a 20 readings, within these bounds. More than
# the most are a cycle or a long series' spikes, not resets (looking at one a 20 readings,
# 10⁶ readings with 0.2% spikes had their spikes' moves taken for jumps)
_JUMPS_LOOKED_AT = (3, 30)
