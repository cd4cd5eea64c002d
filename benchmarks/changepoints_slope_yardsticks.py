"""Yardsticks for a trend's slope: does any tell a spurious M/M/1 slope from a real one?

The trend start built from the points the no-slope search proposed (seventh round of
``docs/changepoints-history.md``; ``/work/notes/candslope.patch``) finds the approval ratings' falls
but gives M/M/1 response times at ρ = .8, N = 1,000 false trends: with it, 400 series of
``scripts/reproduce_berry_hellerstein.py --defaults-fp`` gave ten more series with a point
(39 → 49), each ending with a slope and 1–2 points (``MM1_SPURIOUS``: series number and the
points the patched search kept). This script measures the slope common to the segments of such
a fit — and of the tuning half's fits that keep a slope, and of the approval ratings with the
point the patched search found (29) — by five yardsticks, each a |t| against a bar that white
noise passes with probability .0027 (|z| > 3, the shipped ``_TREND_T``), simulated here:

* ``ar1``: the shipped :func:`perfsleuth.stats.robust.within_slope` (variance inflated by
  (1 + φ)/(1 − φ), φ the residuals' lag-1 autocorrelation); bar 3.
* ``blocks``: the slope's score (centred time × residual) with its long-run variance from
  blocks of 2, 4, … up to the level search's longest block (the largest, as
  ``robust.long_run_noise`` takes), then on the χ²₁ scale at ν = n / (that variance over the
  independent one), floored at n / longest block (Wallace, as ``search._cost``); bar 3.
* ``self-norm``: the score normalised by its own partial sums over the whole series (Kiefer,
  Vogelsang & Bunzel 2000; Shao 2010): honest whatever the memory, short of the series' length.
* ``batch 8`` / ``batch 16``: the score's long-run variance from 8 or 16 batches (a fixed
  fraction of the series, between the two above).

Run: ``.venv/bin/python benchmarks/changepoints_slope_yardsticks.py`` (seeded; about 10 s).
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from changepoints_accuracy import MIRROR_DEFAULT, NAB_DEFAULT, STRUCCHANGE_DEFAULT, corpus

from perfsleuth import find_change_points
from perfsleuth.stats import robust

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import reproduce_berry_hellerstein as mm1

FloatArray = np.ndarray
MM1_SPURIOUS = {  # series number at N = 1000, ρ = .8 → the points kept with the spurious slope
    7: [721], 116: [274], 134: [269, 650], 156: [176, 686], 182: [324, 771], 186: [396],
    202: [744], 250: [651], 261: [260, 651], 360: [422], 380: [412],
}  # fmt: skip
APPROVAL_POINTS = [29]  # the patched search's point in the approval ratings
WHITE_REPS = 20_000
WHITE_TAIL = 0.0027  # two-sided P(|z| > 3)


def _within(y: FloatArray, cuts: Sequence[int]) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(slope, Σ centred time², score) of the slope common to the segments, along the last
    axis (one intercept per segment)."""
    n = y.shape[-1]
    t = np.arange(n, dtype=float)
    tt, yy = np.empty(n), np.empty_like(y)
    bounds = [0, *cuts, n]
    for a, b in itertools.pairwise(bounds):
        tt[a:b] = t[a:b] - t[a:b].mean()
        yy[..., a:b] = y[..., a:b] - y[..., a:b].mean(axis=-1, keepdims=True)
    sxx = tt @ tt
    slope = yy @ tt / sxx
    return slope, sxx, tt * (yy - slope[..., None] * tt)


def blocks_t(y: FloatArray, cuts: Sequence[int]) -> float:
    slope, sxx, u = _within(y, cuts)
    n, top = y.size, robust.longest_block(y.size)
    independent = float(u @ u)
    best, b = independent, 2
    while b <= top:
        sums = u[: (n // b) * b].reshape(-1, b).sum(axis=1)
        best = max(best, float(sums @ sums) * n / ((n // b) * b))
        b *= 2
    nu = max(n * independent / best, n / top)
    t = float(slope) * sxx / math.sqrt(best)
    return math.copysign(math.sqrt(nu * math.log1p(t * t / nu)), t)


def self_normalised_t(y: FloatArray, cuts: Sequence[int]) -> FloatArray:
    slope, sxx, u = _within(y, cuts)
    partial = np.cumsum(u, axis=-1)
    return slope * sxx / np.sqrt((partial * partial).sum(axis=-1) / y.shape[-1])


def batch_t(batches: int) -> Callable[[FloatArray, Sequence[int]], FloatArray]:
    def t(y: FloatArray, cuts: Sequence[int]) -> FloatArray:
        slope, sxx, u = _within(y, cuts)
        edges = np.linspace(0, y.shape[-1], batches + 1).round().astype(int)
        sums = np.stack([u[..., a:b].sum(axis=-1) for a, b in itertools.pairwise(edges)], -1)
        return slope * sxx / np.sqrt((sums * sums).sum(axis=-1) * batches / (batches - 1))

    return t


VECTORISED = {"self-norm": self_normalised_t, "batch 8": batch_t(8), "batch 16": batch_t(16)}


def yardsticks(y: FloatArray, cuts: Sequence[int]) -> dict[str, float]:
    out = {"ar1": robust.within_slope(y, cuts)[1], "blocks": blocks_t(y, cuts)}
    return out | {name: float(t(y, cuts)) for name, t in VECTORISED.items()}


def main() -> None:
    rng = np.random.default_rng(17)
    bars = {"ar1": 3.0, "blocks": 3.0}
    for name, t in VECTORISED.items():  # the bar at 1,000 points with two cuts; n = 114 is close
        white = rng.standard_normal((WHITE_REPS, 1000))
        bars[name] = float(np.quantile(np.abs(t(white, [300, 650])), 1 - WHITE_TAIL))
    print("| series | points | " + " | ".join(bars) + " |")
    print("|---|---|" + "---|" * len(bars))
    print(
        "| bar (white noise, P = .0027) | | " + " | ".join(f"{b:.1f}" for b in bars.values()) + " |"
    )

    def row(name: str, y: FloatArray, cuts: Sequence[int]) -> None:
        cells = [
            f"{v:+.1f}" + ("*" if abs(v) > bars[k] else "") for k, v in yardsticks(y, cuts).items()
        ]
        print(f"| {name} | {list(cuts)} | " + " | ".join(cells) + " |")

    for r, cuts in MM1_SPURIOUS.items():
        sim = mm1.run(1000, 0.8, 0.0, mm1._seed(1, 1000, 0.8, r))
        row(f"M/M/1 ρ .8 #{r}", np.asarray(sim.response, dtype=float), cuts)
    cases, _ = corpus(NAB_DEFAULT, STRUCCHANGE_DEFAULT, ["short", "machine"], MIRROR_DEFAULT)
    for case in cases:
        if case.half != "tune":
            continue
        found = find_change_points(case.values)
        if case.name == "presidential_approval":
            row(case.name, case.values, APPROVAL_POINTS)
        elif any(found.trend):
            row(case.name, case.values, found.indices)
    print("(* above the bar; tuning halves of `short` and `machine`: the fits of the defaults)")


if __name__ == "__main__":
    main()
