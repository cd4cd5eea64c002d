"""Long level series whose small steps the relative floor does not report: are they described
as a trend?

A series like a well log or a gauge read for hours: a level of 120,000, twelve jumps of ±2–12%
at seeded positions (at least 30 readings apart), Gaussian noise of 2% of the level (so a
jump is 1–6 noise σ), and optionally 1% of readings pulled down by 10,000–40,000 (spikes). Of
length n ≥ 1,000, so the default relative floor (5% of the level) applies: the jumps under
it are not to be reported, but they are in the data. Per cell, over R series: the share of
all jumps and of those of at least 5% with a point within 5 readings, the points more than 5
readings from every jump ("false"), and how many of those are slope points (a trend's kinks)
— for the defaults and for the search with no floor (``min_relative_change=0``).

Seeded per (n, spikes, replicate), so two source trees see the same series
(``PYTHONPATH=<src> .venv/bin/python benchmarks/changepoints_level_staircase.py``).

Run: ``.venv/bin/python benchmarks/changepoints_level_staircase.py [--reps 20]``
"""

from __future__ import annotations

import argparse

import numpy as np

from perfsleuth import find_change_points

LEVEL = 120_000.0
NOISE = 0.02  # of the level
JUMPS = 12
MARGIN = 5  # readings: a point this close to a jump finds it
FLOOR = 0.05  # the default relative floor on series of 1,000 readings or more


def series(seed: int, n: int, spikes: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, jump positions, relative size of each jump)."""
    rng = np.random.default_rng(seed)
    while True:
        cuts = np.sort(rng.choice(np.arange(100, n - 100), JUMPS, replace=False))
        if np.min(np.diff(cuts)) >= 30:
            break
    moves = rng.choice([-1.0, 1.0], JUMPS) * rng.uniform(0.02, 0.12, JUMPS)
    levels = LEVEL * (1.0 + np.cumsum(np.r_[0.0, moves]))
    x = levels[np.searchsorted(cuts, np.arange(n), side="right")]
    x = x + rng.normal(0.0, NOISE * LEVEL, n)
    pulled = rng.random(n) < spikes
    x[pulled] -= rng.uniform(10_000, 40_000, int(pulled.sum()))
    relative = np.abs(np.diff(levels)) / np.maximum(np.abs(levels[:-1]), np.abs(levels[1:]))
    return x, cuts, relative


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    variants = {"defaults": {}, "no floor": {"min_relative_change": 0.0}}
    print(f"{args.reps} series a cell; found: share of jumps with a point within {MARGIN}")
    print("n      spikes  search     found (all)  found (≥ 5%)  false  of them slope")
    for n in (2_000, 4_000, 10_000):
        for spikes in (0.0, 0.01):
            for name, options in variants.items():
                found = found_large = large = false = slope = 0
                for rep in range(args.reps):
                    x, cuts, relative = series(10_000 * n + 100 * int(spikes * 100) + rep, n,
                                               spikes)  # fmt: skip
                    result = find_change_points(x, **options)  # type: ignore[arg-type]
                    near = [any(abs(c - i) <= MARGIN for i in result.indices) for c in cuts]
                    found += sum(near)
                    found_large += sum(h for h, r in zip(near, relative, strict=True) if r >= FLOOR)
                    large += int(np.count_nonzero(relative >= FLOOR))
                    for p in result.points:
                        if all(abs(c - p.index) > MARGIN for c in cuts):
                            false += 1
                            slope += p.kind == "slope"
                print(
                    f"{n:<6} {spikes:<7.2f} {name:<10} {found / (JUMPS * args.reps):<12.2f} "
                    f"{found_large / max(large, 1):<13.2f} {false:<6} {slope}"
                )


if __name__ == "__main__":
    main()
