"""Steps up at nearly regular intervals: found as steps, or read as a cycle?

A gauge that steps up now and then (a disk filled by batches, a pool grown by deploys): ten
steps of 3–6 noise σ, all up, a slight trend (2 σ over the series) and AR(1) noise (φ .5).
Less its line the staircase is a sawtooth, and where the steps come at nearly regular
intervals — each one's position jittered by at most ``jitter`` of the spacing about a regular
grid — the cycle search may take the sawtooth for a cycle of that spacing. The steps' jitter
says they are not one: a cycle's phase holds. ``random``: positions drawn uniformly (at least
n/44 apart), as the speed benchmark draws them. Per cell, over R series: the share of steps
with a point within ``MARGIN`` (n/1,000) readings, the points farther from every step
("false"), how many of those are slope points, and the series with a cycle found.

Seeded per (n, jitter, replicate), so two source trees see the same series
(``PYTHONPATH=<src> .venv/bin/python benchmarks/changepoints_regular_staircase.py``).

``--steps K``: K steps instead of ten (many steps at nearly regular intervals are a routine,
read as a cycle: ``docs/changepoints.md``, "Not done"); ``--min-change R``: the relative floor
(``min_relative_change``) instead of the default.

Run: ``.venv/bin/python benchmarks/changepoints_regular_staircase.py [--reps 10] [--sizes
10000,100000] [--steps 10]``
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.signal import lfilter

from perfsleuth import find_change_points

STEPS = 10
JITTERS = {"random": None, "0.25": 0.25, "0.10": 0.10}


def staircase(
    n: int, jitter: float | None, seed: int, steps: int = STEPS
) -> tuple[np.ndarray, np.ndarray]:
    """(values, step positions)."""
    rng = np.random.default_rng(seed)
    if jitter is None:  # uniform, at least `gap` apart (as `changepoints.real_shaped`)
        gap = n // (4 * (steps + 1))
        slack = n - 2 * gap - (steps - 1) * (gap - 1)
        cuts = np.sort(rng.choice(slack, steps, replace=False)) + gap + np.arange(steps) * (gap - 1)
    else:
        gap = n // (steps + 1)
        most = int(jitter * gap)
        cuts = np.arange(1, steps + 1) * gap + rng.integers(-most, most + 1, steps)
    steps = np.zeros(n)
    for cut in cuts:
        steps[cut:] += rng.uniform(3.0, 6.0)
    noise = lfilter([1.0], [1.0, -0.5], rng.standard_normal(n))
    return steps + 2.0 * np.arange(n) / n + noise, cuts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--min-change", type=float, help="min_relative_change (default: its)")
    args = parser.parse_args()
    if args.steps < 1:
        parser.error(f"--steps must be 1 or more, got {args.steps}")
    print(f"{args.reps} series a cell, {args.steps} steps each")
    print("n       jitter  found  false  of them slope  with a cycle")
    for n in (int(s) for s in args.sizes.split(",")):
        margin = max(5, n // 1_000)
        for j, (name, jitter) in enumerate(JITTERS.items()):
            found = false = slope = cyclic = 0
            for rep in range(args.reps):
                x, cuts = staircase(n, jitter, 1_000 * n + 100 * j + rep, args.steps)
                options = (
                    {} if args.min_change is None else {"min_relative_change": args.min_change}
                )
                result = find_change_points(x, **options)
                found += sum(any(abs(c - i) <= margin for i in result.indices) for c in cuts)
                for p in result.points:
                    if all(abs(c - p.index) > margin for c in cuts):
                        false += 1
                        slope += p.kind == "slope"
                cyclic += bool(result.periods)
            print(
                f"{n:<7} {name:<7} {found / (args.steps * args.reps):<6.2f} {false:<6} "
                f"{slope:<14} "
                f"{cyclic}/{args.reps}",
                flush=True,
            )


if __name__ == "__main__":
    main()
