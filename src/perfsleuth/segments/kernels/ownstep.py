"""Which transaction type got heavier, and when: a lasting step in one type's own latency.

On a busy shared host a transaction's latency is mostly what the host does to every
transaction that second — its share of the CPU, the run queue, the co-tenants — and only
partly its own work. Those common conditions are taken out window by window, with the other
types as the yardstick: in logs, the mean latency of type i in window t is

    log R_it = a_i + g_t + h_t · (a_i − ā)

``a_i`` the type's own level, ``g_t`` the window's common stretch and ``h_t`` its **tilt**:
a common wait (a run queue, a load generator behind its schedule) lengthens short transactions
relatively more than long ones (``h_t < 0``), a smaller share of the CPU stretches them all
alike (``h_t = 0``). ``g_t`` is fitted per window, ``h_t`` per half block (contention changes
over tens of seconds, and one window's few types pin a tilt down poorly), held towards 0 by a
prior worth ``_RIDGE`` transactions (weights: transactions). Each type's **own latency** in a
window is what the other types' ``g_t`` and ``h_t`` leave of it (leave-one-out, so that a type
cannot explain itself away), weighed by the inverse of its variance: its own transactions'
and the yardstick's fit at its level both count.

A change of code that makes type i do more work steps its own latency up from that moment on
and for good, whatever the mix and the co-tenants do: :func:`own_steps` finds, per type, the
split of the windows where its own latency steps the most (exactly, all splits at once; then
placed again on the windows near it), and tests it on block means (``block`` consecutive
windows, so that slow drifts count as noise): its t statistic, how far it moved, and whether
it lasts (the later half of the windows after it still moved at least half as far).

A type need not follow the common stretch one for one: a transaction that is mostly round
trips between client and server waits more per unit of the host's contention than one that
is mostly its own CPU, so in a phase of heavy contention its own latency rises with the
stretch and looks like a step. So the type's **sensitivity** to the stretch its yardstick
predicts for it (``g_t + h_t·(a_i − ā)``, read in the windows beside each window: the same
window's fitting error is in the own latency with the opposite sign) is taken out first,
learnt on the windows before the split tested (where a hog starts, the stretch steps with it
and the windows after cannot tell the two apart) and held towards one for one by a prior
(``_SENSITIVITY_SD``). The block means are weighed by their transactions and by the shocks a
whole block shares (:func:`_block_weights`); the step's error allows for shocks neighbouring
blocks share, since a mix or a spell of contention outlasts a block (:func:`_wls`).

:func:`step_at` tests every type at a given split. :func:`step_bar` is the t a step must
reach when the split is searched for (the supremum of a Brownian bridge, Bonferroni over the
types).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq
from scipy.stats import norm
from scipy.stats import t as t_dist

from perfsleuth.errors import DataError
from perfsleuth.segments.kernels.signature import _latency_counts

__all__ = [
    "OwnStep",
    "history_bar",
    "joint_steps",
    "own_latency",
    "own_steps",
    "regime_steps",
    "step_at",
    "step_bar",
    "window_gain",
]

FloatArray = NDArray[np.float64]

_RIDGE = 10.0  # transactions' worth of evidence that a window's tilt is 0
_ITERATIONS = 50
_SENSITIVITY_SD = 0.25  # prior: a type feels the common stretch 1 ± 0.25 times
# a mix or a spell of contention lasts about a minute, so a shock the yardstick misses is shared
# by a block and up to the two after it: the step's error allows for that (_wls)
_SHARED_LAGS = 2
# the search's step error: neighbouring 20 s blocks share a shock (one that lasts about as long
# as a mix, ~50 s) with this correlation (_shared_error); measured on the tuned runs, the
# residuals' own lag-1 correlation is 0.16-0.32 on average, but the shocks that make false steps
# are the mixes', and 0.25-0.35 left 6-9 false application changes (docs/segments.md)
_NEIGHBOUR_CORRELATION = 0.5
# series drawn from a run's own history to calibrate the end-of-data bar (history_bar), and
# how many mix-long runs the history must hold to be drawn from: with fewer, every draw is
# much the same minute or two (on the tuned runs, 1-2 runs after a change found early gave
# bars of 0.9-3.2 and four false changes; the real changes had 4.3-6.8 runs before them)
_HISTORY_DRAWS = 200
_HISTORY_RUNS = 3


@dataclass(frozen=True, slots=True)
class OwnStep:
    """The largest lasting step of one type's own latency in the windows searched.

    ``index`` is the offset (into the rows searched) of the first window after the step;
    ``shift`` the step in log latency (after − before), ``score`` its t statistic over block
    means with ``dof`` degrees of freedom; ``lasting`` whether the later half of the windows
    after it keeps at least half of it.
    """

    name: str
    index: int
    shift: float
    score: float
    dof: int
    lasting: bool

    @property
    def ratio(self) -> float:
        """The type's own latency after over before."""
        return math.exp(self.shift)


def own_latency(
    latency: ArrayLike,
    counts: ArrayLike,
    *,
    names: Sequence[str],
    block: int = 10,
    exclude: Sequence[str] = (),
) -> tuple[FloatArray, FloatArray]:
    """Each type's own log latency per window (the common stretch and tilt of the window,
    fitted on the other types, taken out; NaN where the type has no transactions or no other
    type ran) and its weight (the inverse of its variance in one transaction's units: the
    type's own transactions and the yardstick's fit both count; 0 where NaN). See the module
    docstring. The types
    ``exclude`` (known to have changed) are no yardstick for the others."""
    own, weight, _ = _own_parts(latency, counts, names, block, exclude)
    return own, weight


def _own_parts(
    latency: ArrayLike,
    counts: ArrayLike,
    names: Sequence[str],
    block: int,
    exclude: Sequence[str] = (),
    only: Sequence[str] | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """:func:`own_latency`, and per type the common stretch its yardstick predicts for it,
    ``g_t + h_t·(a_i − ā)``, as the windows beside each window saw it (:func:`_beside`).
    ``only``: those types' columns only (the others' NaN, weight 0)."""
    log_r, w = _log_latency(latency, counts, names)
    unknown = sorted(set(exclude) - set(names))
    if unknown:
        raise DataError(f"exclude: no type named {', '.join(unknown)}")
    yardstick = w.copy()
    yardstick[:, [list(names).index(e) for e in exclude]] = 0.0
    level = _levels(log_r, w, block)
    m, k = log_r.shape
    own = np.full((m, k), np.nan)
    weight = np.zeros((m, k))
    stretch = np.zeros((m, k))
    x = level - _mean_level(level, w)
    for j in range(k):
        if only is not None and names[j] not in only:
            continue
        others = yardstick.copy()
        others[:, j] = 0.0
        g, h, variance = _window_fit(log_r - level, others, x, block, at=float(x[j]))
        ok = (w[:, j] > 0) & (others.sum(axis=1) > 0)
        own[ok, j] = log_r[ok, j] - level[j] - (g[ok] + h[ok] * x[j])
        stretch[:, j] = _beside(g + h * x[j], others.sum(axis=1) > 0)
        # the type's own mean and the yardstick's fit are both noisy: weigh by the inverse
        # of their variances added (in transactions' worth), times what the window can show
        # of a change of the type's level at all (its gain, squared)
        gain = _gain(log_r - level, others, x)
        weight[ok, j] = gain[ok] ** 2 / (1.0 / w[ok, j] + variance[ok])
    return own, weight, stretch


def window_gain(
    latency: ArrayLike, counts: ArrayLike, *, names: Sequence[str], block: int = 10
) -> FloatArray:
    """Per window, the gain ``1 + h`` of a type's level in its log latency (clipped to
    [0, 1]), its tilt ``h`` fitted on that window's types alone, all types the yardstick
    (:func:`_gain`): near 0 where every type waits alike, as when the load generator is
    seconds behind its schedule. ``block``: the blocks the types' levels are fitted with."""
    log_r, w = _log_latency(latency, counts, names)
    level = _levels(log_r, w, block)
    return _gain(log_r - level, w, level - _mean_level(level, w))


def own_steps(
    latency: ArrayLike,
    counts: ArrayLike,
    rows: ArrayLike,
    *,
    names: Sequence[str],
    block: int = 10,
    least: int = 5,
) -> tuple[OwnStep, ...]:
    """Per type seen in the windows ``rows`` (time order), the split where its own latency
    steps the most and that step tested (see the module docstring); the most certain upward
    step first, then by ``score``. At least ``least`` windows on either side."""
    r = np.asarray(latency, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    part = np.asarray(rows, dtype=np.intp).reshape(-1)
    own, weight, stretch = _own_parts(r[part], n[part], names, max(1, block // 2))
    out = []
    for j, name in enumerate(names):
        value, mass = np.nan_to_num(own[:, j]), weight[:, j]
        if (mass > 0).sum() < 2 * least:
            continue
        common = stretch[:, j]
        searched = _partialled(value, mass, common)
        x = _placed(searched, mass, _best_step(searched, mass, least), least, block)
        tested = _step_test(value, mass, x, block, common, searched=True)
        if tested is not None:
            out.append(OwnStep(str(name), x, *tested))
    return tuple(sorted(out, key=lambda s: -s.score))


def joint_steps(
    latency: ArrayLike,
    counts: ArrayLike,
    rows: ArrayLike,
    pairs: Sequence[tuple[str, str]],
    *,
    names: Sequence[str],
    block: int = 10,
    least: int = 5,
    each_score: float = 2.0,
) -> tuple[OwnStep, ...]:
    """Per pair of types, the split where their own latencies step the most **together** and
    that step tested, as :func:`own_steps` tests one type's (named ``"a+b"``); only the pairs
    whose types each step up there at least ``each_score`` standard errors.

    Two types changed at once step at the same moment, and each is in the other's yardstick:
    measured alone, each step is diluted by the other's (the common stretch rises with it)
    and may fall below the bar while the two together stand far above it. Here each type of
    the pair is measured with the other no yardstick, its sensitivity to the common stretch
    taken out, and the two own latencies are pooled window by window (by their weights): one
    series, whose step is searched and tested."""
    r = np.asarray(latency, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    part = np.asarray(rows, dtype=np.intp).reshape(-1)
    out = []
    for pair in pairs:
        own, weight, stretch = _own_parts(
            r[part], n[part], names, max(1, block // 2), exclude=pair, only=pair
        )
        cols = [list(names).index(name) for name in pair]
        values = [np.nan_to_num(own[:, j]) for j in cols]
        masses = [weight[:, j] for j in cols]
        mass = masses[0] + masses[1]
        if (mass > 0).sum() < 2 * least:
            continue
        searched = _pooled(
            [
                _partialled(v, m, stretch[:, c])
                for v, m, c in zip(values, masses, cols, strict=True)
            ],
            masses,
        )
        value = _pooled(values, masses)
        common = _pooled([stretch[:, c] for c in cols], masses)
        x = _placed(searched, mass, _best_step(searched, mass, least), least, block)
        # together, and each: both types step up there (not one type's step carrying the
        # other's noise)
        each = [
            _step_test(v, m, x, block, stretch[:, c], searched=True)
            for v, m, c in zip(values, masses, cols, strict=True)
        ]
        if any(e is None or e[0] <= 0 or e[1] < each_score for e in each):
            continue
        tested = _step_test(value, mass, x, block, common, searched=True)
        if tested is not None:
            out.append(OwnStep("+".join(pair), x, *tested))
    return tuple(sorted(out, key=lambda s: -s.score))


def step_at(
    latency: ArrayLike,
    counts: ArrayLike,
    rows: ArrayLike,
    split: int,
    *,
    names: Sequence[str],
    block: int = 10,
    exclude: Sequence[str] = (),
    only: Sequence[str] | None = None,
) -> tuple[OwnStep, ...]:
    """Every type's step of its own latency at the given ``split`` of the windows ``rows``
    (offset into them; not searched for), the types ``exclude`` no yardstick; largest
    ``score`` first. ``only``: those types' steps only."""
    r = np.asarray(latency, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    part = np.asarray(rows, dtype=np.intp).reshape(-1)
    own, weight, stretch = _own_parts(r[part], n[part], names, max(1, block // 2), exclude, only)
    out = []
    for j, name in enumerate(names):
        mass = weight[:, j]
        if not (mass[:split] > 0).any() or not (mass[split:] > 0).any():
            continue
        common = stretch[:, j]
        tested = _step_test(np.nan_to_num(own[:, j]), mass, split, block, common)
        if tested is not None:
            out.append(OwnStep(str(name), split, *tested))
    return tuple(sorted(out, key=lambda s: -s.score))


def regime_steps(
    latency: ArrayLike,
    counts: ArrayLike,
    rows: ArrayLike,
    split: int,
    regimes: ArrayLike,
    *,
    name: str,
    names: Sequence[str],
    block: int = 10,
    exclude: Sequence[str] = (),
    least: int = 5,
) -> tuple[float, ...]:
    """The step of type ``name``'s own latency at ``split`` (offset into the windows ``rows``)
    as each later workload regime sees it: per regime (``regimes``, one label per row of
    ``rows``) with at least ``least`` windows after the split that hold as much weight as
    ``least`` of the type's median windows, the weighted mean of its own latency there less
    the mean before the split, in time order. The types ``exclude`` are no yardstick; the
    type's sensitivity to the common stretch is learnt before the split and taken out, as
    :func:`step_at` tests a step."""
    r = np.asarray(latency, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    part = np.asarray(rows, dtype=np.intp).reshape(-1)
    label = np.asarray(regimes).reshape(-1)
    if len(label) != len(part):
        raise ValueError(f"regimes has {len(label)} labels for {len(part)} windows")
    if name not in names:
        raise DataError(f"regime_steps: no type named {name}")
    j = list(names).index(name)
    own, weight, stretch = _own_parts(
        r[part], n[part], names, max(1, block // 2), exclude, only=[name]
    )
    mass = weight[:, j]
    before = np.arange(len(part)) < split
    if mass[before].sum() <= 0:
        return ()
    value = _partialled(np.nan_to_num(own[:, j]), mass, stretch[:, j], before)
    base = float(mass[before] @ value[before]) / float(mass[before].sum())
    # enough to judge: ``least`` windows, holding ``least`` typical windows' worth of what
    # they show of the type (a stretch where the load generator is seconds behind its
    # schedule has a gain near 0 and shows nothing: r09, the phase after its change)
    typical = float(np.median(mass[mass > 0]))
    out = []
    for regime in dict.fromkeys(label[~before].tolist()):
        held = ~before & (label == regime) & (mass > 0)
        if held.sum() >= least and float(mass[held].sum()) >= least * typical:
            out.append(float(mass[held] @ value[held]) / float(mass[held].sum()) - base)
    return tuple(out)


def step_bar(
    alpha: float,
    types: int,
    least_share: float,
    dof: float = math.inf,
    *,
    one_sided: bool = False,
    last_share: float | None = None,
) -> float:
    """The t a step found by searching the splits must reach: level ``alpha`` shared over
    ``types`` (Bonferroni), the supremum over splits of a standardised Brownian bridge with a
    share ``least_share`` of the windows kept on either side (Hansen 1997's approximation),
    then read as a t quantile with ``dof`` degrees of freedom. ``one_sided``: only steps one
    way count (an application change is more work), and the supremum of the bridge one way
    exceeds a high bar about half as often as its absolute value does.

    ``last_share``: only the splits that leave between ``least_share`` and ``last_share`` of
    the windows after them are searched (the end of the data); fewer splits, a lower bar."""
    if not 0.0 < alpha < 1.0 or types < 1:
        raise ValueError(f"need 0 < alpha < 1 and types >= 1, got {alpha}, {types}")
    low = min(max(least_share, 1e-3), 0.49)
    # the share of the windows before the split ranges over [first, last]
    first, last = low, 1.0 - low
    if last_share is not None:
        if not low < last_share < 1.0:
            raise ValueError(f"need least_share < last_share < 1, got {low}, {last_share}")
        first = 1.0 - last_share
    spread = math.log(last * (1.0 - first) / (first * (1.0 - last)))
    level = (2.0 if one_sided else 1.0) * alpha / types

    def tail(c: float) -> float:
        density = float(norm.pdf(c))
        return density * (c - 1.0 / c) * spread + 4.0 * density / c - level

    c = brentq(tail, 1.0, 40.0)
    if math.isfinite(dof) and dof > 0:
        return float(t_dist.ppf(norm.cdf(c), dof))
    return float(c)


def history_bar(
    latency: ArrayLike,
    counts: ArrayLike,
    rows: ArrayLike,
    split: int,
    *,
    names: Sequence[str],
    block: int = 10,
    least: int = 5,
    level: float = 0.025,
    min_change: float = 0.1,
    seed: int = 0,
) -> float:
    """The t a step at the end of the windows ``rows`` must reach by the run's own history:
    the ``1 − level`` quantile of the largest step **up** of any type — lasting, at least
    ``min_change``, over the splits that leave ``least`` to ``2·least − 1`` windows after
    them, tested as :func:`own_steps` tests it — in ``_HISTORY_DRAWS`` series as long as
    ``rows`` drawn from the windows before ``split`` (offset into ``rows``; seeded).

    Each series ends in ``least`` to ``2·least − 1`` windows from one random place in the
    history (a new mix in the last phase, where the step is sought) after runs of ``block ×
    (_SHARED_LAGS + 1)`` windows from others (a mix or a spell of contention lasts about that
    long); the same places for every type, each type's own sensitivity to the common stretch
    learnt on the history taken out. So the bar is the step the run's own mixes and spells of
    contention make at the end of the data, at their own size and with the error as
    estimated from so few blocks after it, the Bonferroni over the types replaced by their
    maximum. −inf when no more than ``level`` of the draws has such a step; inf (no bar to
    pass) when the history holds fewer than ``_HISTORY_RUNS`` runs."""
    r = np.asarray(latency, dtype=np.float64)
    n_all = np.asarray(counts, dtype=np.float64)
    part = np.asarray(rows, dtype=np.intp).reshape(-1)
    n = len(part)
    if not 0 < split <= n:
        raise ValueError(f"need 0 < split <= {n}, got {split}")
    run = max(1, int(block)) * (_SHARED_LAGS + 1)
    if split < _HISTORY_RUNS * run:
        return math.inf
    own, weight, stretch = _own_parts(r[part], n_all[part], names, max(1, block // 2))
    values, masses = [], []
    for j in range(len(names)):
        value, mass = np.nan_to_num(own[:split, j]), weight[:split, j]
        values.append(_partialled(value, mass, stretch[:split, j]))
        masses.append(mass)
    history, history_mass = np.array(values), np.array(masses)
    steady = np.zeros(n)
    rng = np.random.default_rng(seed)
    best = np.full(_HISTORY_DRAWS, -np.inf)
    for d in range(_HISTORY_DRAWS):
        # the last 'tail' windows (a new mix in the last phase) and the runs before them,
        # each from its own random place in the history (circular)
        tail = int(rng.integers(least, 2 * least))
        starts = rng.integers(0, split, size=-(-(n - tail) // run) + 1)
        head = ((starts[1:, None] + np.arange(run)[None, :]) % split).reshape(-1)[: n - tail]
        drawn = np.concatenate([head, (starts[0] + np.arange(tail)) % split])
        for value, mass in zip(history[:, drawn], history_mass[:, drawn], strict=True):
            if (mass[: n - 2 * least] > 0).sum() < least or not (mass[n - 2 * least :] > 0).any():
                continue
            x = _best_step(value, mass, least, last=2 * least - 1)
            tested = _step_test(value, mass, x, block, steady, searched=True)
            if tested is None:
                continue
            shift, score, _, lasting = tested
            if shift > 0 and lasting and math.expm1(shift) >= min_change:
                best[d] = max(best[d], score)
    return float(np.quantile(best, 1.0 - level, method="higher"))


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _log_latency(
    latency: ArrayLike, counts: ArrayLike, names: Sequence[str]
) -> tuple[FloatArray, FloatArray]:
    """Log latency and weights (0 where the latency is missing or not positive)."""
    r, w = _latency_counts(latency, counts, names)
    w = np.where(r > 0, w, 0.0)
    return np.where(w > 0, np.log(np.where(w > 0, r, 1.0)), 0.0), w


def _mean_level(level: FloatArray, w: FloatArray) -> float:
    mass = w.sum(axis=0)
    return float(np.average(level, weights=mass)) if mass.sum() > 0 else 0.0


def _window_fit(
    resid: FloatArray, w: FloatArray, x: FloatArray, block: int, at: float = 0.0
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The weighted least-squares ``g_t + h_t x_i`` of ``resid``: ``g_t`` per window, ``h_t``
    one per block of ``block`` consecutive windows (contention changes over tens of seconds,
    and one window's few types pin a tilt down poorly), ridged towards 0. Windows without
    types get ``g_t = 0``. Also the variance of the fit at ``x = at`` per window, in units
    of one transaction's (``1/Σw + (at − x̄_t)²/S_xx``; inf without types)."""
    s0, s1, s2 = w.sum(axis=1), (w * x).sum(axis=1), (w * x * x).sum(axis=1)
    r0, r1 = (w * resid).sum(axis=1), (w * resid * x).sum(axis=1)
    some = s0 > 0
    safe = np.where(some, s0, 1.0)
    # within each window, x and resid centred on the window's mean: what the tilt explains
    sxx = np.where(some, s2 - s1 * s1 / safe, 0.0)
    sxy = np.where(some, r1 - s1 * r0 / safe, 0.0)
    starts = np.arange(0, len(s0), max(int(block), 1))
    tilt = np.add.reduceat(sxy, starts) / (np.add.reduceat(sxx, starts) + _RIDGE)
    lengths = np.diff(np.append(starts, len(s0)))
    h = np.repeat(tilt, lengths)
    g = np.where(some, (r0 - h * s1) / safe, 0.0)
    spread = np.repeat(np.add.reduceat(sxx, starts) + _RIDGE, lengths)
    variance = np.where(some, 1.0 / safe + (at - s1 / safe) ** 2 / spread, np.inf)
    return g, h, variance


def _gain(resid: FloatArray, w: FloatArray, x: FloatArray) -> FloatArray:
    """Per window, how much of a change of a type's level shows in its log latency there:
    ``1 + h`` with the tilt ``h`` fitted on the window's own types (``resid`` the log
    latencies less the levels ``x`` is centred from; ridged as :func:`_window_fit`), clipped
    to [0, 1]. In ``log R = a(1 + h) + …`` a level moved by δ moves the log latency by
    δ(1 + h): where the load generator is seconds behind its schedule every type's logged
    latency is mostly the same lag (``h`` near −1) and the window says nothing of any type's
    own work, however many transactions it holds (r02, r07, r09: the types within 2–11% of
    each other, gain 0.01–0.03). Per window, not per half block as the tilt itself: the lag
    sets in within a second or two (r09 5 s: from 15 ms to 760 ms in one window). Above 1
    it is clipped: a window that stretches the types apart says no more of one than its
    transactions do."""
    _, tilt, _ = _window_fit(resid, w, x, 1)
    return np.clip(1.0 + tilt, 0.0, 1.0)


def _levels(log_r: FloatArray, w: FloatArray, block: int) -> FloatArray:
    """Each type's level ``a_i`` by alternating least squares with the windows' ``g_t, h_t``
    (``log R = a(1 + h) + g − h·ā``); a type never seen gets 0."""
    mass = w.sum(axis=0)
    seen = mass > 0
    level = np.where(seen, (w * log_r).sum(axis=0) / np.where(seen, mass, 1.0), 0.0)
    for _ in range(_ITERATIONS):
        mean = _mean_level(level, w)
        g, h, _ = _window_fit(log_r - level, w, level - mean, block)
        offset = g - h * mean
        stretch = 1.0 + h
        num = (w * stretch[:, None] * (log_r - offset[:, None])).sum(axis=0)
        den = (w * (stretch**2)[:, None]).sum(axis=0)
        new = np.where(seen & (den > 0), num / np.where(den > 0, den, 1.0), level)
        done = bool(np.allclose(new, level, rtol=0.0, atol=1e-9))
        level = new
        if done:
            break
    return level


def _best_step(value: FloatArray, weight: FloatArray, least: int, last: int | None = None) -> int:
    """The split ``x`` (``least ≤ x ≤ n − least``) where a step of the weighted mean of
    ``value`` gains the most: ``(Σ_{t≥x} w e)² / (W_x − W_x²/W)`` with ``e`` the deviation from
    the overall mean and ``W_x`` the weight from ``x`` on (all splits at once). ``last``: only
    the splits with at most ``last`` windows after them, and only steps up."""
    n = len(value)
    total = float(weight.sum())
    mean = float(weight @ value) / total
    top = np.cumsum((weight * (value - mean))[::-1])[::-1]
    mass = np.cumsum(weight[::-1])[::-1]
    x = np.arange(least if last is None else max(least, n - last), n - least + 1)
    if len(x) == 0:
        return n // 2
    spread = mass[x] - mass[x] ** 2 / total
    lift = top[x] if last is None else np.maximum(top[x], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(spread > 1e-12 * total, lift**2 / spread, 0.0)
    return int(x[int(np.argmax(gain))])


def _placed(value: FloatArray, weight: FloatArray, x: int, least: int, block: int) -> int:
    """The split ``x`` placed again on the windows near it alone: within two blocks of it, the
    best step between ``least`` windows on either side. Over a long stretch, slow drifts of
    the level move the best split of one step by a block or more; near it, only the step
    counts."""
    n = len(value)
    lo, hi = max(0, x - 2 * block - least), min(n, x + 2 * block + least)
    local = slice(lo, hi)
    if (weight[local] > 0).sum() < 2 * least or hi - lo < 2 * least:
        return x
    return lo + _best_step(value[local], weight[local], least)


def _pooled(values: Sequence[FloatArray], weights: Sequence[FloatArray]) -> FloatArray:
    """The weighted mean of ``values`` window by window (0 where every weight is)."""
    mass = np.sum(weights, axis=0)
    total = np.sum([w * v for w, v in zip(weights, values, strict=True)], axis=0)
    out: FloatArray = np.where(mass > 0, total / np.where(mass > 0, mass, 1.0), 0.0)
    return out


def _beside(stretch: FloatArray, seen: NDArray[np.bool_]) -> FloatArray:
    """Per window, the mean of ``stretch`` in the windows just before and after it (those
    ``seen``; 0 where neither is). The type's own latency is its latency less the stretch
    fitted in the same window, so that fit's error is in both with opposite signs: regressed
    on it, a type would seem to feel the stretch less than it does. The stretch changes over
    tens of seconds, its fitting error from window to window."""
    value = np.where(seen, stretch, 0.0)
    count = seen.astype(np.float64)
    total = np.zeros_like(value)
    number = np.zeros_like(value)
    total[1:] += value[:-1]
    number[1:] += count[:-1]
    total[:-1] += value[1:]
    number[:-1] += count[1:]
    out: FloatArray = np.where(number > 0, total / np.where(number > 0, number, 1.0), 0.0)
    return out


def _partialled(
    value: FloatArray, weight: FloatArray, common: FloatArray, on: NDArray[np.bool_] | None = None
) -> FloatArray:
    """``value`` less its sensitivity to ``common``: the weighted least-squares slope (with a
    constant) fitted on the windows ``on`` (all by default), held towards 0 by a normal prior
    of standard deviation ``_SENSITIVITY_SD``, times ``common`` less its mean there."""
    mass = weight if on is None else np.where(on, weight, 0.0)
    total = float(mass.sum())
    if total <= 0:
        return value
    cm, vm = float(mass @ common) / total, float(mass @ value) / total
    spread = float(mass @ (common - cm) ** 2)
    if spread <= 0:
        return value
    beta = float(mass @ ((common - cm) * (value - vm))) / spread
    residual = value - vm - beta * (common - cm)
    noise = float(mass @ residual**2) / max(int((mass > 0).sum()) - 2, 1)  # at weight 1
    beta *= spread / (spread + noise / _SENSITIVITY_SD**2)
    out: FloatArray = value - beta * (common - cm)
    return out


def _step_test(
    value: FloatArray,
    weight: FloatArray,
    x: int,
    block: int,
    common: FloatArray,
    *,
    searched: bool = False,
) -> tuple[float, float, int, bool] | None:
    """The step at ``x`` refitted on block means with a second step halfway through the windows
    after it, the type's own sensitivity to the ``common`` stretch (learnt before the step:
    where the stretch itself steps there, as under a hog, the windows after it cannot tell
    the two apart) taken out first: (the step, its t, degrees of freedom, whether the later
    half keeps at least half of it). None with too few blocks to tell.

    ``searched`` (a split found by searching, :func:`own_steps`): the step and its t come
    from one step over all the windows after it — the second step only says whether it lasts
    — so that a change in the last minute of the data is measured on all of that minute, not
    its first half; its error is :func:`_shared_error`'s. Without it (the types named at a
    known split, :func:`step_at`) the step is the first half's, its error :func:`_wls`'s."""
    n = len(value)
    value = _partialled(value, weight, common, np.arange(n) < x)
    size = max(int(block), 1)
    starts = np.arange(0, n, size)
    mass = np.add.reduceat(weight, starts)
    used = mass > 0
    if used.sum() <= 4:
        return None
    index = np.arange(n, dtype=np.float64)
    half = x + (n - x) // 2

    def mean_of(a: FloatArray) -> FloatArray:
        out: FloatArray = np.add.reduceat(weight * a, starts)[used] / mass[used]
        return out

    after, later = (index >= x).astype(np.float64), (index >= half).astype(np.float64)
    design = np.column_stack([np.ones(int(used.sum())), mean_of(after), mean_of(later)])
    y = mean_of(value)
    root = _block_weights(value, weight, starts, design, y)
    fit = _wls(design * root[:, None], y * root)
    if fit is None:
        return None
    (first, se, dof), second = fit
    lasting = (first + second) * first > 0 and abs(first + second) >= 0.5 * abs(first)
    if searched:
        one = _shared_error(design[:, :2] * root[:, None], y * root)
        if one is None:
            return None
        first, se, dof = one
    score = first / se if se > 0 else math.copysign(math.inf, first) if first else 0.0
    return first, score, dof, lasting


def _block_weights(
    value: FloatArray,
    weight: FloatArray,
    starts: NDArray[np.intp],
    design: FloatArray,
    y: FloatArray,
) -> FloatArray:
    """The square roots of the block means' weights: a block's mean is as good as its
    transactions only up to the shocks the whole block shares (a burst of contention the
    yardstick misses), whose variance is estimated by moments — the scatter of the block
    means about ``design`` beyond what the scatter of their windows (within blocks) implies.
    Without it, one window of many transactions and one shock outweighs its neighbours."""
    n = len(value)
    mass = np.add.reduceat(weight, starts)
    used = mass > 0
    means = np.add.reduceat(weight * value, starts) / np.where(used, mass, 1.0)
    inner = value - np.repeat(means, np.diff(np.append(starts, n)))
    within = float(weight @ inner**2) / max(int((weight > 0).sum()) - int(used.sum()), 1)
    m = mass[used]
    coef, *_ = np.linalg.lstsq(design * np.sqrt(m)[:, None], y * np.sqrt(m), rcond=None)
    scatter = float(m @ (y - design @ coef) ** 2)
    dof = len(y) - int(np.linalg.matrix_rank(design))
    total = float(m.sum())
    shared = max(0.0, (scatter - dof * within) / (total - float(m @ m) / total))
    if within <= 0 and shared <= 0:
        out: FloatArray = np.sqrt(m / m.mean())
        return out
    root: FloatArray = 1.0 / np.sqrt(within / m + shared)
    return root / float(np.sqrt(np.mean(root**2)))


def _wls(xs: FloatArray, ys: FloatArray) -> tuple[tuple[float, float, int], float] | None:
    """Least squares of ``ys`` (block means, in time order) on ``xs``: (the second column's
    coefficient, its standard error, degrees of freedom) and the last column's coefficient;
    None without dof.

    The standard error is the larger of the one for independent blocks and Newey–West's with
    ``_SHARED_LAGS`` lags (Bartlett weights): a mix or a spell of contention outlasts a block,
    so neighbouring blocks share its shock and a step between two of them is less certain
    than independent blocks say. The larger, because with a few dozen blocks Newey–West's
    estimate is itself noisy and can come out below the independent one."""
    coef, *_ = np.linalg.lstsq(xs, ys, rcond=None)
    residual = ys - xs @ coef
    dof = len(ys) - int(np.linalg.matrix_rank(xs))
    if dof <= 0:
        return None
    bread = np.linalg.pinv(xs.T @ xs)
    variance = float(residual @ residual) / dof * float(bread[1, 1])
    score = xs * residual[:, None]
    meat = score.T @ score
    for lag in range(1, min(_SHARED_LAGS, len(ys) - 1) + 1):
        shared = score[lag:].T @ score[:-lag]
        meat += (1.0 - lag / (_SHARED_LAGS + 1)) * (shared + shared.T)
    hac = float((bread @ meat @ bread)[1, 1]) * len(ys) / dof
    se = math.sqrt(max(variance, hac, 0.0))
    return (float(coef[1]), se, dof), float(coef[-1])


def _shared_error(xs: FloatArray, ys: FloatArray) -> tuple[float, float, int] | None:
    """Least squares of ``ys`` (block means, in time order) on ``xs``: the second column's
    coefficient, its standard error and degrees of freedom, with neighbouring blocks' errors
    correlated ``_NEIGHBOUR_CORRELATION`` (covariance ``σ²K``, ``K`` tridiagonal); None without
    dof.

    A shock the yardstick misses — a mix, a spell of contention — lasts about as long as two
    blocks. Newey–West's estimate of that (:func:`_wls`) reads it off the residuals, and a
    step near the end of the data fits its two or three blocks after it almost exactly, so
    their residuals, and with them the step's error, come out too small. Here the correlation
    is a model: ``σ² = RSS / tr(MK)`` (``M`` the residual maker), the step's variance
    ``σ²·(B X'KX B)₁₁`` (``B = (X'X)⁻¹``), never below the one for independent blocks, and
    Satterthwaite's degrees of freedom ``tr(MK)² / tr((MK)²)``. All in O(n): ``K`` is
    banded."""
    n = len(xs)
    rank = int(np.linalg.matrix_rank(xs))
    if n - rank <= 0:
        return None
    coef, *_ = np.linalg.lstsq(xs, ys, rcond=None)
    residual = ys - xs @ coef
    bread = np.linalg.pinv(xs.T @ xs)
    rho = _NEIGHBOUR_CORRELATION

    def banded(a: FloatArray) -> FloatArray:  # K @ a
        out = a.copy()
        out[1:] += rho * a[:-1]
        out[:-1] += rho * a[1:]
        return out

    kx = banded(xs)
    xkx = xs.T @ kx
    # tr(MK) = tr(K) − tr(HK); tr((MK)²) = tr(K²) − 2 tr(HK²) + tr((HK)²), H = X B X'
    trace = n - float(np.trace(bread @ xkx))
    square = (
        n
        + 2.0 * rho**2 * (n - 1)
        - 2.0 * float(np.trace(bread @ (kx.T @ kx)))
        + float(np.trace(bread @ xkx @ bread @ xkx))
    )
    if trace <= 0 or square <= 0:
        return None
    sigma2 = float(residual @ residual) / trace
    shared = sigma2 * float((bread @ xkx @ bread)[1, 1])
    independent = float(residual @ residual) / (n - rank) * float(bread[1, 1])
    dof = max(1, int(trace**2 / square))
    return float(coef[1]), math.sqrt(max(shared, independent, 0.0)), dof
