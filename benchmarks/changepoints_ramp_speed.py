"""The defaults' time on a long gradual ramp: flat → ramp → flat (a load moved gradually from
one level to another), rising 1.6 noise σ over the middle 40%, white noise, seed 0.

Every split of a ramp is a candidate of the level search, and the trend's starts and
alternations run that search several times: a defect recorded in ``docs/changepoints.md``
("Not done"), timed here against the targets of ``benchmarks/changepoints.py`` (10⁵ ≤ 0.5 s,
10⁶ ≤ 3 s), with the points found.

``--bends SEEDS``: instead, the points found on the same shape rising ``--rise`` σ (4) at
each size, for seeds 0 … SEEDS − 1 — how many series get exactly the two bends as slope
points, the points per series, and the first series' points as shares of n.

Run: ``machine heavy .venv/bin/python benchmarks/changepoints_ramp_speed.py [--sizes
10000,100000,1000000] [--bends 10 --rise 4]``; with ``PYTHONPATH=<other tree>/src`` for
another version of the code.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from perfsleuth import find_change_points


def ramp(n: int, rise: float = 1.6, seed: int = 0) -> np.ndarray:
    t = np.arange(float(n))
    middle = np.clip(t - 0.3 * n, 0.0, 0.4 * n) * (rise / (0.4 * n))
    return middle + np.random.default_rng(seed).standard_normal(n)


def bends(sizes: list[int], seeds: int, rise: float) -> None:
    print(f"rising {rise:g} σ, {seeds} series a size: exactly the two bends as slope points, "
          "points per series, the first series' points (share of n, kind)")  # fmt: skip
    for n in sizes:
        found = [find_change_points(ramp(n, rise, seed)).points for seed in range(seeds)]
        two = sum([p.kind for p in points] == ["slope", "slope"] for points in found)
        each = sum(len(points) for points in found) / seeds
        first = " ".join(f"{p.index / n:.3f}{p.kind[0]}" for p in found[0])
        print(f"{n:<8} {two}/{seeds}  {each:.1f}  {first}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--bends", type=int, default=0, metavar="SEEDS")
    parser.add_argument("--rise", type=float, default=4.0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.bends:
        bends(sizes, args.bends, args.rise)
        return
    find_change_points(ramp(1000))  # imports and tables outside the timing
    print("n        seconds  points (bends at 30% and 70%)")
    for n in sizes:
        x = ramp(n)
        start = time.perf_counter()
        found = find_change_points(x)
        seconds = time.perf_counter() - start
        points = [(p.index, p.kind) for p in found.points]
        print(f"{n:<8} {seconds:7.2f}  {points}", flush=True)


if __name__ == "__main__":
    main()
