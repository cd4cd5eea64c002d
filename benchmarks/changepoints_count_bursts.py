"""Spike findings in counts of rare events and in flat-then-noisy gauges: a burst an operator
would call the event of the series, and ordinary readings that are not one.

Series (seeded, reproducible), ``--reps`` of each:

* ``burst``: Poisson counts at a steady rate λ (events per reading; λ = 0 is a counter that
  never moves), n readings, and one reading at mid-series raised by ``B`` events — found when
  a spike finding (``ChangePoints.notable_spikes()``) lies at it; any other spike finding or
  change point is counted apart;
* ``flat then noisy``: a gauge that holds 3.0 exactly for the first half, then reads
  3 + N(0, 1) — there is no spike, so the share with any spike finding is printed, and the
  mean number of readings in spike runs.

Run: ``.venv/bin/python benchmarks/changepoints_count_bursts.py [--reps 100]``; with
``PYTHONPATH=<other tree>/src`` for another version of the code.
"""

from __future__ import annotations

import argparse

import numpy as np

from perfsleuth import find_change_points

SEED = 20261130
RATES = (0.0, 0.02, 0.1, 0.5, 2.0)
SIZES = (60, 600)
BURSTS = (10, 100)


def bursts(reps: int) -> None:
    print(
        f"a burst of B events at mid-series in Poisson counts, {reps} series a cell: found as a "
        "spike finding (other spike findings or change points, share of series)"
    )
    print("| n | B | " + " | ".join(f"λ = {r:g}" for r in RATES) + " |")
    print("|---|---|" + "---|" * len(RATES))
    for n in SIZES:
        for burst in BURSTS:
            cells = []
            for rate in RATES:
                rng = np.random.default_rng([SEED, n, burst, round(rate * 100)])
                found = other = 0
                for _ in range(reps):
                    x = rng.poisson(rate, n).astype(float)
                    x[n // 2] += burst
                    result = find_change_points(x)
                    shown = [s.index for s in result.notable_spikes()]
                    found += n // 2 in shown
                    other += bool(result.indices) or any(i != n // 2 for i in shown)
                cells.append(f"{found / reps:.2f} ({other / reps:.2f})")
            print(f"| {n} | {burst} | " + " | ".join(cells) + " |", flush=True)


def flat_then_noisy(reps: int) -> None:
    print(
        f"\nflat (3.0 exactly) for n/2 readings, then 3 + N(0, 1), {reps} series a size: share "
        "with a spike finding, mean readings in spike runs, share with a change point"
    )
    print("| n | spike finding | readings in runs | change point |")
    print("|---|---|---|---|")
    for n in SIZES:
        rng = np.random.default_rng([SEED, n, 1])
        shown = inside = points = 0
        for _ in range(reps):
            x = np.r_[np.full(n // 2, 3.0), 3.0 + rng.standard_normal(n - n // 2)]
            result = find_change_points(x)
            shown += bool(result.notable_spikes())
            inside += sum(r.stop - r.start for r in result.spike_runs)
            points += bool(result.indices)
        print(f"| {n} | {shown / reps:.2f} | {inside / reps:.1f} | {points / reps:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    args = parser.parse_args()
    bursts(args.reps)
    flat_then_noisy(args.reps)


if __name__ == "__main__":
    main()
