"""A bump (an excursion and its return) tested as one finding: its calibrated null, and what it
would change.

The default search judges every point alone, on the segment between its neighbours; a bump's
two edges each fail when the excursion is short against the segment (the return edge is judged
on a segment the excursion itself makes persistent). The "epidemic" alternative (Levin & Kline
1985; Yao 1993) tests the pair at once: on a segment x of length n, the best bump is the inside
[i, j) maximising the between-part sum of squares ``B = n (S_j − S_i)² / (L (n − L))`` (S the
prefix sums of the centred segment, L = j − i), both outer parts at least ``min_size`` long, and
its statistic is ``E = B / (SSQ − B)`` (the paper's T − 1 with the two outer parts pooled).

Its null distribution is simulated here as the FPA table's is (``perfsleuth.changepoints.kernels
.fpa``): stationary Gaussian AR(1) over the table's φ grid, ``--reps`` replicates per (n, φ), and
calibrated for an *estimated* φ with the same offsets (δ: the upper p-quantile of φ* − r, φ* the
φ at which a replicate's E would be critical), so the test looks its critical value up at the
segment's lag-1 autocorrelation as the single-edge test does.

Then, on the defaults' result, every final segment (between two kept points, at most
``MAX_SEGMENT`` long: the statistic is O(n²)) long enough to hold a bump is given its best bump,
judged as the search judges a point: the level spent on the segment's length; effect ≥
``min_effect`` noise σ; the relative floor on series of ≥ 1,000 readings; z² in long-run units ≥
the cost of both edges, each at its own shorter side (``--cost one``: one cost, at the shorter
of inside and outside), also without the inside reading that pulls its mean furthest (not a
spike), and not a burst whose every reading is a spike of the defaults' model (a spike run);
the φ tested (``--phi null``) the larger of the segment's lag-1 autocorrelations on the
symmetrised scale and the series' own, capped by the persistence the noise shows, as the
single-edge test, or (``--phi residual``) the same of the residuals about the bump's two means
(the products across its edges left out), with offsets simulated for *that* estimate. Both
edges are added when it passes. Prints per series (``--per-series``) and the mean F1 / cover of
one half of each group (short, machine, events), before → after; ``--mm1 N,RHO[;N,RHO]`` the
share of M/M/1 series with no change that have a point before → after (``--metrics``: response
times, queue lengths; ``scripts/reproduce_berry_hellerstein.py``'s series and seeds; with
``--per-series``, every series that gains a point and the bump that passed).

``--size N``: the calibrated test's rejection rate at α = .05 on fresh AR(1) series of length N.

Run: ``.venv/bin/python benchmarks/changepoints_bumps.py --half tune [--per-series]``
     ``.venv/bin/python benchmarks/changepoints_bumps.py --mm1 1000,0.8 --reps-mm1 400``
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from changepoints_accuracy import (
    MIRROR_DEFAULT,
    NAB_DEFAULT,
    STRUCCHANGE_DEFAULT,
    corpus,
    covering,
    f1_margin,
)

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels import fpa, search, spikes, statistic
from perfsleuth.changepoints.kernels.level import _cost, _independent, _long_run_scale
from perfsleuth.stats import robust

SEED = 19850101  # Levin & Kline 1985
LONG_SERIES = 1000
COST = "both"  # --cost
PHI = "null"  # --phi
MAX_SEGMENT = 1000
CACHE = Path("/tmp/perfsleuth-bump-null")  # simulated nulls, keyed by everything they depend on


def bump_statistics(x: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``x`` (rows × n): the best bump's E, its start i and end j (every inside
    length L ≥ m with both outer parts ≥ m)."""
    rows, n = x.shape
    xc = x - x.mean(axis=1, keepdims=True)
    s = np.zeros((rows, n + 1))
    np.cumsum(xc, axis=1, out=s[:, 1:])
    best = np.zeros(rows)
    start = np.zeros(rows, dtype=int)
    stop = np.zeros(rows, dtype=int)
    for length in range(m, n - 2 * m + 1):
        d = s[:, m + length : n - m + 1] - s[:, m : n - m - length + 1]
        b = d * d
        k = np.argmax(b, axis=1)
        top = b[np.arange(rows), k] * (n / (length * (n - length)))
        better = top > best
        best = np.where(better, top, best)
        start = np.where(better, m + k, start)
        stop = np.where(better, m + k + length, stop)
    ssq = np.einsum("ij,ij->i", xc, xc)
    within = ssq - best
    excess = np.where(within > 0, best / np.where(within > 0, within, 1.0), np.inf)
    return excess, start, stop


def residual_lag1(x: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """Per row, the lag-1 autocorrelation of the residuals about the bump's two means (inside
    [start, stop), outside), the products across its two edges left out."""
    n = x.shape[1]
    t = np.arange(n)
    inside = (t >= start[:, None]) & (t < stop[:, None])
    k_in = inside.sum(axis=1)
    mean_in = np.where(inside, x, 0.0).sum(axis=1) / k_in
    mean_out = np.where(inside, 0.0, x).sum(axis=1) / (n - k_in)
    e = x - np.where(inside, mean_in[:, None], mean_out[:, None])
    products = e[:, 1:] * e[:, :-1]
    across = inside[:, 1:] != inside[:, :-1]
    num = np.where(across, 0.0, products).sum(axis=1)
    den = np.einsum("ij,ij->i", e, e)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


@functools.cache
def null_samples(n: int, m: int, reps: int, residual: bool) -> tuple[np.ndarray, np.ndarray]:
    """(log E, lag-1 autocorrelation r), each (φ grid × reps), of AR(1) series of length n; r
    of the series under "no change", or (``residual``) of the residuals about its best bump."""
    cached = CACHE / f"bump_null_{n}_{m}_{reps}_{int(residual)}_{SEED}.npz"
    if cached.exists():
        with np.load(cached) as kept:
            return kept["log_e"], kept["lag1"]
    phis = fpa.PHI_GRID
    log_e = np.empty((len(phis), reps))
    lag1 = np.empty((len(phis), reps))
    chunk = max(1, (1 << 20) // n)
    for g, phi in enumerate(phis):
        rng = np.random.default_rng(np.random.SeedSequence([SEED, n, m, round((phi + 1) * 1e6)]))
        done = 0
        while done < reps:
            rows = min(chunk, reps - done)
            x = fpa._ar1(rng, rows, n, phi)
            e, i, j = bump_statistics(x, m)
            xc = x - x.mean(axis=1, keepdims=True)
            log_e[g, done : done + rows] = np.log(e)
            lag1[g, done : done + rows] = (
                residual_lag1(x, i, j)
                if residual
                else np.einsum("ij,ij->i", xc[:, 1:], xc[:, :-1]) / np.einsum("ij,ij->i", xc, xc)
            )
            done += rows
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(cached, log_e=log_e, lag1=lag1)
    return log_e, lag1


def critical_log_excess(n: int, m: int, phi: float, p: float, reps: int, residual: bool) -> float:
    """log E critical at level p for a segment of length n whose lag-1 autocorrelation is
    ``phi`` (an estimate: calibrated as ``fpa._calibrate`` calibrates the single split).

    Simulated at the nearest of 20 lengths per decade and scaled by their ratio (n E is
    nearly constant in n under no change, as n (T − 1) is), so a corpus needs few tables."""
    simulated = max(3 * m, round(10 ** (round(20 * math.log10(n)) / 20)))
    log_e, lag1 = null_samples(simulated, m, reps, residual)
    phis = np.asarray(fpa.PHI_GRID)
    u = np.log((1 + phis) / (1 - phis))
    critical = np.maximum.accumulate(np.quantile(log_e, 1.0 - p, axis=1))
    offsets = np.empty(len(phis))
    for g in range(len(phis)):
        u_star = np.interp(log_e[g], critical, u, -np.inf, np.inf)
        offsets[g] = np.quantile(np.tanh(u_star / 2.0) - lag1[g], 1.0 - p)
    offsets[0], offsets[-1] = offsets[1], offsets[-2]  # the lookup clips φ there
    looked = float(np.clip(phi + np.interp(phi, phis, offsets), phis[0], phis[-1]))
    return float(np.interp(math.log((1 + looked) / (1 - looked)), u, critical)) + math.log(
        simulated / n
    )


def _lag1(x: np.ndarray) -> float:
    xc = x - x.mean()
    den = float(xc @ xc)
    return float(xc[1:] @ xc[:-1]) / den if den > 0 else 0.0


def with_bumps(
    x: np.ndarray, reps: int, log: list[str] | None = None
) -> tuple[list[int], list[int]]:
    """(the defaults' points, the same with every bump that passes added)."""
    n = len(x)
    found = find_change_points(x)
    points = list(found.indices)
    m = found.min_size
    t = np.arange(n, dtype=float)
    level = x - (float(found.trend[0]) * t if found.trend else 0.0)
    if found.period is not None and found.fitted is not None:
        model = found.fitted[:, 0] - (float(found.trend[0]) * t if found.trend else 0.0)
        cycle = model - statistic._segment_means(model.reshape(-1, 1), points)[:, 0]
        level = level - cycle
    centred = (level - level.mean()).reshape(-1, 1)
    sym = statistic._symmetrised(centred)
    resid = sym - statistic._segment_means(sym, points)
    floor = 1e-9 * float(np.ptp(sym)) or 1.0
    noise = _long_run_scale(resid[:, 0], floor, None, m)
    own = centred - statistic._segment_means(centred, points)
    phi_cap = max(noise[0], robust.persistence(own[:, 0])) + 2.0 * 3.0 / math.sqrt(n)
    phi_cap = max(phi_cap, noise[2])
    independent = _independent(n, [noise[:3]], robust.memory_cap(n), robust.longest_block(n))
    unit = noise[1]
    sigma = float(spikes._residual_scale(centred, [0, *points, n])[0])
    added: list[int] = []
    for a, b in itertools.pairwise([0, *points, n]):
        length = b - a
        if length < 3 * m or length > MAX_SEGMENT:
            continue  # (the statistic is O(length²): only short segments are looked at)
        seg = sym[a:b, 0]
        e, i0, j0 = bump_statistics(seg.reshape(1, -1), m)
        i, j, excess = a + int(i0[0]), a + int(j0[0]), float(e[0])
        if excess <= 0 or j0[0] == 0:
            continue  # a constant segment: no bump
        inside = j - i
        ssq = float(((seg - seg.mean()) ** 2).sum())
        z2 = ssq * excess / (1.0 + excess) / unit**2
        cost = _cost(search.DEFAULT_PENALTY, n, min(i - a, inside), independent)
        if COST == "both":  # each edge pays for itself, at its own shorter side
            cost += _cost(search.DEFAULT_PENALTY, n, min(inside, b - j), independent)
        else:  # one finding at the bump's scale: the shorter of inside and outside
            cost = _cost(search.DEFAULT_PENALTY, n, min(inside, length - inside), independent)
        mean_in = float(centred[i:j, 0].mean())
        outside = np.concatenate([centred[a:i, 0], centred[j:b, 0]])
        shift = abs(mean_in - float(outside.mean()))
        effect = shift / sigma if sigma > 0 else math.inf
        fails = [] if effect >= search.DEFAULT_MIN_EFFECT else ["effect"]
        if n >= LONG_SERIES:
            lev_in, lev_out = (
                float(level[i:j].mean()),
                float(np.concatenate([level[a:i], level[j:b]]).mean()),
            )
            top = max(abs(lev_in), abs(lev_out))
            if not (top > 0 and shift / top >= 0.05):
                fails.append("relative")
        if PHI == "residual":
            local = np.array([i - a]), np.array([j - a])
            phi = max(
                float(residual_lag1(seg.reshape(1, -1), *local)[0]),
                float(residual_lag1(centred[a:b, 0].reshape(1, -1), *local)[0]),
            )
        else:
            phi = max(_lag1(seg), _lag1(centred[a:b, 0]))
        phi = min(phi, phi_cap)
        # not a spike: the bump still pays its cost without the inside observation that pulls
        # the inside mean furthest from the outside's (as the search's _beyond_one_observation)
        zin = sym[i:j, 0] / unit
        zout = np.concatenate([sym[a:i, 0], sym[j:b, 0]]) / unit
        up = zin.mean() > zout.mean()
        rest = np.delete(zin, int(np.argmax(zin) if up else np.argmin(zin)))
        k = rest.size
        z2_rest = k * zout.size / (k + zout.size) * float(rest.mean() - zout.mean()) ** 2
        if z2 < cost:
            fails.append(f"cost (z² {z2:.1f} < {cost:.1f})")
        elif z2_rest < cost:
            fails.append("one reading")
        # a burst whose every reading is a spike of the defaults' model is already reported as
        # a spike run (``ChangePoints.spike_runs``), not a change of level
        if set(range(i, j)) <= set(found.spikes):
            fails.append("spike run")
        alpha = found.alpha * length / n
        verdict = "fails " + ", ".join(fails)
        passes = False
        if not fails:
            crit = critical_log_excess(length, m, phi, alpha, reps, PHI == "residual")
            passes = math.log(excess) > crit
            verdict = f"E {excess:.3f} vs {math.exp(crit):.3f} at φ {phi:.2f}, α {alpha:.3g}"
        if passes:
            added += [i, j]
        if log is not None:
            log.append(f"    [{a}, {b}) bump [{i}, {j}): {verdict}{' PASSES' if passes else ''}")
    return points, sorted({*points, *added})


def one_half(group: str, half: str, reps: int, per_series: bool) -> None:
    cases, _ = corpus(Path(NAB_DEFAULT), Path(STRUCCHANGE_DEFAULT), [group], Path(MIRROR_DEFAULT))
    totals = np.zeros(4)
    count = 0
    for case in cases:
        if case.half != half or case.group != group:
            continue
        x = np.asarray(case.values, dtype=float).reshape(len(case.values), -1)[:, 0]
        n, truth = len(x), list(case.points or [])
        log: list[str] = []
        before, after = with_bumps(x, reps, log)
        row = [
            f1_margin(truth, before),
            covering(truth, before, n),
            f1_margin(truth, after),
            covering(truth, after, n),
        ]
        totals += row
        count += 1
        if per_series:
            print(
                f"{case.name:34} n={n:4} truth={truth} before={before} after={after} "
                f"F1 {row[0]:.3f} -> {row[2]:.3f}, cover {row[1]:.3f} -> {row[3]:.3f}"
            )
            print("\n".join(log))
    mean = totals / max(count, 1)
    print(
        f"# {group} {half} ({count}): F1 / cover {mean[0]:.3f} / {mean[1]:.3f} -> "
        f"{mean[2]:.3f} / {mean[3]:.3f}"
    )


def mm1(cell: str, reps_series: int, reps: int, metric: str, verbose: bool = False) -> None:
    from reproduce_berry_hellerstein import _seed, run

    n_text, rho_text = cell.split(",")
    n, rho = int(n_text), float(rho_text)
    before = after = 0
    for r in range(reps_series):
        x = np.asarray(getattr(run(n, rho, 0.0, _seed(1, n, rho, r)), metric), dtype=float)
        log: list[str] = []
        b, a = with_bumps(x, reps, log)
        before += bool(b)
        after += bool(a)
        if verbose and a != b:
            mean, sd = float(x.mean()), float(x.std())
            print(f"series {r}: {b} -> {a} (mean {mean:.3g}, sd {sd:.3g})")
            print("\n".join(line for line in log if "PASSES" in line))
    print(
        f"# M/M/1 N = {n}, ρ = {rho}, {metric}, {reps_series} series: with a point "
        f"{before / reps_series:.4f} -> {after / reps_series:.4f}"
    )


def size(n: int, m: int, reps: int, residual: bool, series: int = 2000) -> None:
    """The calibrated test's rejection rate at α = .05 on fresh AR(1) series (another seed)."""
    cells = []
    for phi in (0.0, 0.5, 0.8, 0.9):
        rng = np.random.default_rng(np.random.SeedSequence([SEED + 1, n, round(phi * 100)]))
        x = fpa._ar1(rng, series, n, phi)
        e, i, j = bump_statistics(x, m)
        xc = x - x.mean(axis=1, keepdims=True)
        r = (
            residual_lag1(x, i, j)
            if residual
            else np.einsum("ij,ij->i", xc[:, 1:], xc[:, :-1]) / np.einsum("ij,ij->i", xc, xc)
        )
        hits = sum(
            math.log(ek) > critical_log_excess(n, m, float(rk), 0.05, reps, residual)
            for ek, rk in zip(e, r, strict=True)
        )
        cells.append(f"φ {phi}: {hits / series:.3f}")
    print(f"# size at α = .05, n = {n}, {series} fresh AR(1) series per φ: " + ", ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("tune", "held-out"))
    parser.add_argument("--groups", default="short", help="short, machine, events")
    parser.add_argument("--per-series", action="store_true")
    parser.add_argument("--reps", type=int, default=2000, help="null replicates per (n, φ)")
    parser.add_argument("--mm1", help="N,RHO[;N,RHO...]: M/M/1 false positives with bumps")
    parser.add_argument("--reps-mm1", type=int, default=200)
    parser.add_argument("--metrics", default="response", help="response,queue_length")
    parser.add_argument("--cost", choices=("both", "one"), default="both")
    parser.add_argument("--phi", choices=("null", "residual"), default="null")
    parser.add_argument("--size", type=int, help="N: the test's size on fresh AR(1) series")
    args = parser.parse_args()
    global COST, PHI
    COST, PHI = args.cost, args.phi
    if args.size:
        size(args.size, 5, args.reps, args.phi == "residual")
    if args.half:
        for group in args.groups.split(","):
            one_half(group, args.half, args.reps, args.per_series)
    if args.mm1:
        for cell in args.mm1.split(";"):
            for metric in args.metrics.split(","):
                mm1(cell, args.reps_mm1, args.reps, metric, args.per_series)


if __name__ == "__main__":
    main()
