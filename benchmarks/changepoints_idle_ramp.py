"""A service that starts, grows and saturates: idle readings (exactly 0), a jump to a ramp, a
jump to a flat level. The right answer is two change points, each a jump where the growth also
changes (the start, at 50, and the cap, at 150). This script counts what the defaults report.

Each series has 50 readings of 0, then 20 + .3 a reading for 100 readings with noise σ 1, then
60 for 50 readings, also with noise σ 1. The script prints the points per series and how many
series have a point within 5 readings of the start and of the cap.

Run: .venv/bin/python benchmarks/changepoints_idle_ramp.py [--reps R]
(another source tree: put ``PYTHONPATH=<its src>`` in front).
"""

from __future__ import annotations

import argparse

import numpy as np

from perfsleuth import find_change_points

START, CAP = 50, 150


def idle_ramp_flat(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ramp = 20.0 + 0.3 * np.arange(CAP - START) + rng.normal(0.0, 1.0, CAP - START)
    return np.concatenate([np.zeros(START), ramp, 60.0 + rng.normal(0.0, 1.0, 50)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    counts, starts, caps = [], 0, 0
    for seed in range(args.reps):
        indices = find_change_points(idle_ramp_flat(seed)).indices
        counts.append(len(indices))
        starts += any(abs(i - START) <= 5 for i in indices)
        caps += any(abs(i - CAP) <= 5 for i in indices)
    print(f"points a series: {counts} (mean {np.mean(counts):.2f}, none in {counts.count(0)})")
    print(f"start found within 5 in {starts}/{args.reps}, cap in {caps}/{args.reps}")


if __name__ == "__main__":
    main()
