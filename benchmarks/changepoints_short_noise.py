"""False positives and power of the defaults on short series of persistent noise.

Gaussian AR(1) noise with unit marginal variance, φ ∈ {0, .5, .8, .9, .95} and a random walk,
n ∈ {12, 20, 30, 60, 100, 200} (the short series of issue 17 are 15–800 readings): the share of
series with no change in which any change point is found, and the share with one step (2, 3 or 4
marginal standard deviations, at 40% of the series) in which a point lies within 5 readings of
it (within 1 on series under 30 readings, whose segments are 3–5 long). The cells of n 30–200,
φ ≥ .5 and steps of 2 and 3 σ are the ones this script had before n 12 and 20, φ = 0 and 4 σ
were added (the same seeds).
Seeded per (n, replicate), so two versions of ``src`` see the same series
(``PYTHONPATH=<src> .venv/bin/python benchmarks/changepoints_short_noise.py``).

``--test-size``: instead, the size of the FPA test alone on the whole series (its optimal
split, the series' lag-1 autocorrelation as the estimated φ, α = .05, min_size as the defaults
choose), for n 12–30: what the search's other gates leave of it.

``--at F`` puts the step at F·n instead of .4 n, ``--steps`` sets its sizes (marginal σ), and
``--back G`` undoes it at G·n (a drop and a recovery, an incident's shape): a series counts
only when a point lies near each edge.

Run: ``.venv/bin/python benchmarks/changepoints_short_noise.py [--reps 200] [--test-size]
[--sizes 36,45,54] [--peer] [--at .4] [--steps 2,3,4] [--back G]`` (``--sizes``: other
lengths, the same seeding; ``--peer``: the same tables for binary segmentation with its
default penalty, the issue's bar)
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

import numpy as np
from scipy.signal import lfilter

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels.search import (
    FPATest,
    _auto_min_size,
    lag1_autocorrelation,
    two_partition,
)

SIZES = (12, 20, 30, 60, 100, 200)
NULL_PHIS = (0.0, 0.5, 0.8, 0.9, 0.95, 1.0)  # 1: a random walk
STEP_PHIS = (0.0, 0.5, 0.8, 0.9, 0.95)
STEPS = (2.0, 3.0, 4.0)


def noise(seed: int, n: int, phi: float) -> np.ndarray:
    """AR(1) noise of unit marginal variance (a random walk of unit steps for φ = 1)."""
    e = np.random.default_rng(seed).standard_normal(n)
    x: np.ndarray = lfilter([1.0], [1.0, -phi], e)
    return x if phi >= 1.0 else x * math.sqrt(1.0 - phi * phi)


def _defaults(x: np.ndarray) -> Sequence[int]:
    return find_change_points(x).indices


def _binseg_default(x: np.ndarray) -> Sequence[int]:
    """``benchmarks/changepoints_accuracy.py``'s ``binseg-default`` (R changepoint's BinSeg,
    MBIC, on the standardised series): the bar of issue 17's held-out check."""
    from changepoints_accuracy import binseg_default

    return binseg_default(x)


def test_size(reps: int) -> None:
    """The FPA test's own size on whole series of AR(1) noise (seeds apart from main's)."""
    test = FPATest()
    print(f"share of {reps} series the FPA test alone rejects at α = .05 (whole series)")
    print("| n | " + " | ".join(f"φ = {p:g}" for p in NULL_PHIS[:-1]) + " |")
    print("|---" * len(NULL_PHIS) + "|")
    for n in (12, 20, 30):
        m = _auto_min_size(n)
        cells = []
        for phi in NULL_PHIS[:-1]:
            rejected = 0
            for s in range(reps):
                x = noise(5_000_000 + 1000 * n + s, n, phi)
                verdict = test.assess(
                    two_partition(x, min_size=m).statistic,
                    n=n,
                    phi=lag1_autocorrelation(x),
                    alpha=0.05,
                    dims=1.0,
                    min_size=m,
                )
                rejected += verdict.p_value <= 0.05
            cells.append(f"{rejected / reps:.3f}")
        print(f"| {n} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--test-size", action="store_true", help="the FPA test alone")
    parser.add_argument("--sizes", help="N,N,...: other lengths (default 12,20,30,60,100,200)")
    parser.add_argument(
        "--peer", action="store_true", help="binary segmentation's default instead, for scale"
    )
    parser.add_argument("--at", type=float, default=0.4, help="the step at this share of n")
    parser.add_argument("--steps", help="S,S,...: step sizes in marginal σ (default 2,3,4)")
    parser.add_argument("--back", type=float, help="the step undone at this share of n")
    args = parser.parse_args()
    steps = tuple(float(v) for v in args.steps.split(",")) if args.steps else STEPS
    reps = args.reps
    sizes = tuple(int(v) for v in args.sizes.split(",")) if args.sizes else SIZES
    detect = _binseg_default if args.peer else _defaults
    if args.test_size:
        test_size(reps)
        return
    print(f"share of {reps} series with any change point, no change (φ = 1: a random walk)")
    print("| n | " + " | ".join(f"φ = {p:g}" for p in NULL_PHIS) + " |")
    print("|---" * (len(NULL_PHIS) + 1) + "|")
    for n in sizes:
        cells = []
        for phi in NULL_PHIS:
            hits = sum(bool(detect(noise(1000 * n + s, n, phi))) for s in range(reps))
            cells.append(f"{hits / reps:.3f}")
        print(f"| {n} | " + " | ".join(cells) + " |")
    shape = f"at {args.at:g} n" + ("" if args.back is None else f", undone at {args.back:g} n")
    print(
        f"\nshare of {reps} series with a point near each edge of the step ({shape}; within 5,"
        " 1 under n = 30)"
    )
    header = [f"φ = {p:g}, {s:g} σ" for p in STEP_PHIS for s in steps]
    print("| n | " + " | ".join(header) + " |")
    print("|---" * (len(header) + 1) + "|")
    for n in sizes:
        at = int(args.at * n)
        back = n if args.back is None else int(args.back * n)
        edges = [at] if back >= n else [at, back]
        near = 5 if n >= 30 else 1
        cells = []
        for phi in STEP_PHIS:
            for step in steps:
                hits = 0
                for s in range(reps):
                    x = noise(7000 * n + s, n, phi)
                    x[at:back] += step
                    found = detect(x)
                    hits += all(any(abs(i - e) <= near for i in found) for e in edges)
                cells.append(f"{hits / reps:.2f}")
        print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
