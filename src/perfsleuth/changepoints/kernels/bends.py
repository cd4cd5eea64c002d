"""Bends against level points (step 6 of docs/changepoints.md): a broken line — a slope that
changes at kinks — is the rival of a staircase of level points, and each level point is kept
beside it only as a real step (its line and hinges fitted alongside); the hinges' and steps'
least-squares fits."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from perfsleuth.changepoints.kernels import grid, kinks, trend_steps
from perfsleuth.changepoints.kernels.level import _cost, _Practical
from perfsleuth.changepoints.kernels.results import ChangePoint, Scale, Segment
from perfsleuth.changepoints.kernels.spikes import _residual_scale
from perfsleuth.changepoints.kernels.statistic import _mean, _segment_means, _spread
from perfsleuth.changepoints.kernels.trend import (
    _HIDDEN_STEP_SHARE,
    _MOST_TURNS,
    Fit,
    _bic_scores,
    _ramp,
)
from perfsleuth.stats import robust as robust_mod

FloatArray = NDArray[np.float64]
# a description's (level points, kinks, level points dropped), as its lines replace points
Lines = tuple[list[ChangePoint], list[kinks.Kink], list[ChangePoint]]


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
    ramp = slope * _ramp(n)
    levels = _segment_means(y[:, None] - ramp[:, None], cuts)[:, 0]  # per reading, less the slope

    def own() -> Fit:
        """The level search's description: its segments and slope, the kinks inside them."""
        stepped = kinks.broken_line(y, bounds, inside, levels + ramp)
        # parameters: a position and a level per point, an intercept and the slope; a position
        # and a slope per kink, and its segment's own slope
        held = {a for a, b in itertools.pairwise(bounds) if any(a < k.index < b for k in inside)}
        return (y - stepped)[:, None], 2 * len(accepted) + 2 + 2 * len(inside) + len(held)

    if not accepted:
        return accepted, inside, [], own
    # A broken line alone rivals the level points with at most two kinks a step and one
    # more (a bending curve drawn as a staircase: two steps, four bends), and one more for
    # each kink the level search's description bends by inside its segments: a curve it
    # draws by a step and three kinks takes four or five alone (a √ rising 100 noise σ over
    # 2,000 readings kept a level point beside its kinks in 18 of 20 series, now 9;
    # `benchmarks/changepoints_curves.py`). Beyond, it draws
    # more than their staircase, and it is not the line the steps are measured beside either
    # (10⁵ additive readings, a trend and 10 steps: 36 kinks, and the steps' fits on their
    # 38 hinges took 1 of 1.3 s; at 10⁶, 67 kinks and 24 of 32 s). And, as for a flat
    # series (:func:`_broken_line_instead`), only while the steps turn (up, then down) at most
    # a few times: a line bends at every turn of the staircase it draws, and one that turns
    # more often is a staircase (the speed benchmark's 10⁶ readings with 10 steps: 22 kinks
    # found, more than allowed, in .29 of 2.6 s).
    most = 2 * len(accepted) + 1 + len(inside)
    turns = _turns([bool(levels[c] > levels[c - 1]) for c in cuts])
    alone = judged(y, [0, n], most=most, windows=len(accepted) >= 2) if turns <= _MOST_TURNS else []
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


def _turns(rises: list[bool]) -> int:
    """How often a staircase turns (up, then down, or down, then up): ``rises`` says of each
    step in order whether it rises."""
    return sum(a != b for a, b in itertools.pairwise(rises))


def _lines_of_a_flat(
    y: FloatArray,
    accepted: list[ChangePoint],
    judged: Callable[..., list[kinks.Kink]],
    search: _Practical,
) -> Lines:
    """The lines a flat one-column description may hold: a broken line alone
    (:func:`_broken_line_instead`), else a ramp between two jumps
    (:func:`_lines_between_jumps`) — (level points, kinks, level points dropped)."""
    kept, bends, replaced = _broken_line_instead(y, accepted, judged, search)
    if bends:
        return kept, bends, replaced
    return _lines_between_jumps(y, kept, search)


def _ramp_instead_of_a_trend(
    y: FloatArray, trend: Callable[[], Fit], flat: list[ChangePoint], search: _Practical
) -> Lines | None:
    """The flat description's ramp between two jumps (its level points ``flat``:
    :func:`_lines_between_jumps`) in place of a trend kept (its description with its kinks:
    ``trend()``), when the ramp describes ``y`` better by BIC at the noise's effective count;
    else None. A common slope is one slope for every segment: where a series is idle, then
    grows, then holds (a service that starts and saturates), the slope refitted inside the
    level search's segments made the held level a falling line, cut into steps beside the
    kinks (`benchmarks/changepoints_idle_ramp.py`)."""
    kept, bends, replaced = _lines_between_jumps(y, flat, search)
    if not bends:
        return None
    lines, _ = _hinged_fit(y, sorted(k.index for k in bends), sorted(p.index for p in kept))
    own, ramp = _bic_scores(y[:, None], [trend(), lines], search.grain())
    return (kept, bends, replaced) if ramp < own else None


def _curve_instead(
    y: FloatArray, accepted: list[ChangePoint], bends: list[kinks.Kink], search: _Practical
) -> Lines:
    """A one-column description's (level points, kinks, level points dropped), less the kinks
    that only draw a curve bending one way: the kinks away from the level points, all turning
    the slope the same way (it only rises, or only falls), when a cubic beside the same level
    points and breaks describes ``y`` as well by BIC at the noise's effective count — two
    kinks or more, or one with no level point whose sides both bend its way
    (:func:`_sides_bend`) — or, two kinks or more with no level point, when every side
    between them bends their way. The sides tell a curve the cubic cannot draw, steep at one
    end: a √ rising 100 noise σ over 400 readings kept 2.85 kinks a series, now .65
    (`benchmarks/changepoints_curves.py`). A lone kink needs the cubic as well, which cannot
    draw a sharp corner: placed a few readings off one, the kink leaves the side that holds
    the corner bent, and the sides alone lost 13 rather than 9 of 2,400 kinks at 60% of a
    line (`changepoints_kinks.py --power --reps 100`).

    Such kinks are the corners of a polygon laid along a convex or concave curve, placed
    wherever the noise lets the polygon fit best; no reading is where the growth changed. The
    CO₂ record of Mauna Loa (astsa ``cardox``, 781 monthly readings, accelerating smoothly)
    had three, its slope .071 → .124 → .165 → .205 ppm a month. A kink at a level point (a
    break: a crash and a slowdown at one reading) is located by its jump and kept; a hockey
    stick (straight sides) and kinks that turn both ways (a Λ, a ramp between plateaus) are
    changes, left to the kink test: a cubic mimics them in noise, and in the two-bend trends
    of ``benchmarks/changepoints_same.py`` it took 8 of their 105 kinks found.

    Level points go with such kinks when none of them is a real step beside the kinks' broken
    line (:func:`_steps_beside`, the test a level point beside a broken line passes) and every
    stretch between the kinks bends their way: the level search draws a curve by steps as
    well as by kinks (a √ rising 100 noise σ over 2,000 readings: a step near reading 450,
    where nothing jumps, among three kinks, in 9 of 20 series; now in none,
    `benchmarks/changepoints_curves.py`)."""
    cuts = sorted(p.index for p in accepted)
    free = [k for k in bends if k.index not in cuts]
    if not free or len({k.slope_after > k.slope_before for k in free}) > 1:
        return accepted, bends, []
    drawn_by_steps = bool(cuts) and len(free) == len(bends) and _sides_bend(y, free)
    if drawn_by_steps and not _steps_beside(y, free, accepted, search):
        return [], [], accepted  # the steps only drew the curve, as the kinks did
    sides = not cuts and _sides_bend(y, free)
    if sides and len(free) > 1:
        return accepted, [], []  # no level point: nothing of the description stays but the curve
    if not sides and len(free) == 1:
        return accepted, bends, []
    n = y.size
    polygon, _ = _hinged_fit(y, sorted(k.index for k in bends), cuts)
    breaks = sorted(k.index for k in bends if k.index in cuts)
    t = _centred(n)
    resid, _ = _beside_levels(
        y, np.column_stack([t, t * t, t * t * t, *_hinges(n, breaks)[2:]]), cuts
    )
    # parameters: a position and a level per point, a slope per break, the intercept and the
    # cubic's three
    curve = (resid[:, None], 2 * len(cuts) + len(breaks) + 4)
    drawn, smooth = _bic_scores(y[:, None], [polygon, curve], search.grain())
    return accepted, [k for k in bends if k.index in cuts] if smooth <= drawn else bends, []


def _centred(n: int) -> FloatArray:
    """Reading times centred and scaled to [−½, ½]: their powers stay well conditioned."""
    return (_ramp(n) - (n - 1) / 2) / n


_SIDE_BEND_Z = 1.96  # the sides' pooled curvature the kinks' way, in standard errors


def _sides_bend(y: FloatArray, corners: list[kinks.Kink]) -> bool:
    """Whether every side of kinks that turn one way bends their way: a quadratic fitted to
    each of the m stretches the ``corners`` (sorted) cut the series into curves up where they
    turn the slope up (down where down), z₁ … z_m its curvatures in standard errors of AR(1)
    noise about it (``kinks.long_run``), all positive and together beyond
    :data:`_SIDE_BEND_Z` ((z₁ + … + z_m)/√m, one-sided). A polygon's sides are straight (a
    hockey stick's two), so its kinks are taken for a curve's in at most 2.5% of series; a
    curve drawn by a few corners leaves every side bent.

    The two sides' evidence is pooled: each side alone beyond the bar (a hockey stick's lost
    in .06% of series) missed most curves, for a side holds half the curve and a quarter of
    its bend (a quadratic rising 20 noise σ, AR(1) noise of φ .5: a kink in .95 of 100-reading
    series and .50 of 400, now .60 and .05; the exponential's .90 and .55, now .40 and .20;
    `benchmarks/changepoints_curves.py`). Kinks at 60% of a line, slope × 2 to 9 (40 and 120
    readings, φ 0, .5 and .9): 9 of 2,400 series lost theirs (`changepoints_kinks.py --power
    --reps 100`)."""
    up = corners[0].slope_after > corners[0].slope_before
    bent = []  # each side's curvature the kinks' way, in its standard errors
    for a, b in itertools.pairwise([0, *(k.index for k in corners), y.size]):
        side = y[a:b]
        m = side.size
        if m < 2 * kinks.MIN_SIDE:
            return False
        t = _centred(m)
        design = np.column_stack([np.ones(m), t, t * t])
        coef, *_ = np.linalg.lstsq(design, side, rcond=None)
        variance, _ = kinks.long_run(side - design @ coef)
        if variance <= 0.0:
            return False
        z = coef[2] / math.sqrt(variance * np.linalg.inv(design.T @ design)[2, 2])
        bent.append(z if up else -z)
    return bool(min(bent) > 0.0 and sum(bent) / math.sqrt(len(bent)) > _SIDE_BEND_Z)


def _broken_line_instead(
    y: FloatArray,
    accepted: list[ChangePoint],
    judged: Callable[..., list[kinks.Kink]],
    search: _Practical,
) -> Lines:
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
    if _turns([p.mean_after[0] > p.mean_before[0] for p in ordered]) > _MOST_TURNS:
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


def _lines_between_jumps(y: FloatArray, accepted: list[ChangePoint], search: _Practical) -> Lines:
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
    if len(ordered) < 3:
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
        if i >= 0 and j < len(at) and j - i >= 2  # at least one inner step
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
    # one scratch array for every step's residuals and one for its fitted values (fresh ones
    # of 10⁶ readings cost 2,000 page faults each)
    resid, fitted = np.empty(n), np.empty(n)
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
        # the regressor, the step 1(t ≥ i) less its part on the line, then base − β regressor
        np.negative(np.matmul(after[p.index], columns, out=resid), out=resid)
        resid[p.index :] += 1.0
        resid *= -beta
        resid += base
        # the fitted values, y − resid, only where they are asked for
        if rounding > 0.0 or not search.log_levels:
            np.subtract(y, resid, out=fitted)
        share = kinks.rounding_share(fitted, rounding) if rounding > 0.0 else 0.0
        variance, phi = kinks.long_run(resid, share)
        if variance <= 0.0:
            continue
        z2 = beta**2 * spread / variance
        shorter = min(p.index, n - p.index)
        if z2 <= bar or z2 < _cost(search.penalty, n, shorter, n * (1 - phi) / (1 + phi)):
            continue
        if search.log_levels:
            floor = -math.expm1(-step)
        else:  # the step against the largest |fitted value|
            floor = step / max(float(fitted.max()), -float(fitted.min()))
        if floor < search.min_relative_change:
            continue
        # the robust σ last, and only where its bound does not already decide (two medians
        # of n readings, 5 ms at 10⁶, against one sum of squares)
        effect = search.min_effect
        if step >= effect * robust_mod.robust_scale_bound(float(resid @ resid), n) or (
            step >= effect * robust_mod.robust_scale(resid)
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
    resid, coef = _beside_levels(y, design, cuts)
    levels = y - design @ coef - resid
    return resid, levels - levels[0]


def _beside_levels(
    y: FloatArray, design: FloatArray, cuts: list[int]
) -> tuple[FloatArray, FloatArray]:
    """(residuals, coefficients) of the least-squares fit of ``y`` by the columns of
    ``design`` and a level per segment of ``cuts``, the levels partialled out
    (Frisch–Waugh–Lovell, as :func:`_steps_and_hinges` explains)."""
    within = design - _segment_means(design, cuts)
    target = y - _segment_means(y[:, None], cuts)[:, 0]
    coef = np.asarray(np.linalg.lstsq(within, target, rcond=None)[0], dtype=np.float64)
    return target - within @ coef, coef


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
