"""The defaults' time on a long gradual ramp: flat → ramp → flat (a load moved gradually from
one level to another), rising 1.6 noise σ over the middle 40%, white noise, seed 0.

Every split of a ramp is a candidate of the level search, and the trend's starts and
alternations run that search several times: a defect recorded in ``docs/changepoints.md``
("Not done"), timed here against the targets of ``benchmarks/changepoints.py`` (10⁵ ≤ 0.5 s,
10⁶ ≤ 3 s), with the points found.

Run: ``machine heavy .venv/bin/python benchmarks/changepoints_ramp_speed.py [--sizes
10000,100000,1000000]``; with ``PYTHONPATH=<other tree>/src`` for another version of the code.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from perfsleuth import find_change_points


def ramp(n: int) -> np.ndarray:
    t = np.arange(float(n))
    return np.clip(t - 0.3 * n, 0.0, 0.4 * n) * (4.0 / n) + np.random.default_rng(
        0
    ).standard_normal(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    args = parser.parse_args()
    find_change_points(ramp(1000))  # imports and tables outside the timing
    print("n        seconds  points (bends at 30% and 70%)")
    for n in (int(s) for s in args.sizes.split(",")):
        x = ramp(n)
        start = time.perf_counter()
        found = find_change_points(x)
        seconds = time.perf_counter() - start
        points = [(p.index, p.kind) for p in found.points]
        print(f"{n:<8} {seconds:7.2f}  {points}", flush=True)


if __name__ == "__main__":
    main()
