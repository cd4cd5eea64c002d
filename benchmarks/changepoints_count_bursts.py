"""Spike findings in counts of rare events and in flat-then-noisy gauges: a burst an operator
would call the event of the series, and ordinary readings that are not one.

Series (seeded, reproducible), ``--reps`` of each:

* ``burst``: Poisson counts at a steady rate λ (events per reading; λ = 0 is a counter that
  never moves), n readings, and one reading at mid-series raised by ``B`` events — found when
  a spike finding (``ChangePoints.notable_spikes()``) lies at it; any other spike finding or
  change point is counted apart;
* ``flat then noisy``: a gauge that holds 3.0 exactly for the first half, then reads
  3 + N(0, 1) — there is no spike, so the share with any spike finding is printed, and the
  mean number of readings in spike runs;
* ``mostly one value``: series where a share of the readings hold one value exactly and the
  rest are bursts or jitter (lognormal, Pareto and gamma bursts in an idle series, a CPU floor
  with exponential jitter, a gauge at its centre value 30–45% of the time: a point mass left
  out of the spike scale), with no spike
  (share of series with a spike finding) and with one outsized reading at three quarters of
  the series (share of series where a spike finding lies at it).

Run: ``.venv/bin/python benchmarks/changepoints_count_bursts.py [--reps 100]``; with
``PYTHONPATH=<other tree>/src`` for another version of the code.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from perfsleuth import find_change_points

SEED = 20261130
RATES = (0.0, 0.02, 0.1, 0.5, 1.0, 2.0, 3.0)
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


def _idle(rng: np.random.Generator, n: int, idle: float, bursts: np.ndarray) -> np.ndarray:
    return np.where(rng.random(n) < idle, 0.0, bursts)


MOSTLY_ONE_VALUE: dict[str, Callable[[np.random.Generator], np.ndarray]] = {
    "lognormal bursts (σ .5), 80% idle, n 2000": lambda g: _idle(
        g, 2000, 0.8, g.lognormal(3, 0.5, 2000)
    ),
    "lognormal bursts (σ 1), 80% idle, n 2000": lambda g: _idle(
        g, 2000, 0.8, g.lognormal(3, 1, 2000)
    ),
    "lognormal bursts (σ 1.5), 80% idle, n 2000": lambda g: _idle(
        g, 2000, 0.8, g.lognormal(3, 1.5, 2000)
    ),
    "lognormal bursts (σ 1), 60% idle, n 300": lambda g: _idle(g, 300, 0.6, g.lognormal(3, 1, 300)),
    "Pareto bursts (α 2), 70% idle, n 1000": lambda g: _idle(g, 1000, 0.7, g.pareto(2, 1000) + 1),
    "gamma bursts (k 2), 70% idle, n 1000": lambda g: _idle(g, 1000, 0.7, g.gamma(2, 1, 1000)),
    "CPU floor .066 in 55%, else + Exp(.03), n 2000": lambda g: np.where(
        g.random(2000) < 0.55, 0.066, 0.066 + g.exponential(0.03, 2000)
    ),
    "3.0 exactly for half, then 3 + N(0, 1), n 600": lambda g: np.r_[
        np.full(300, 3.0), 3.0 + g.standard_normal(300)
    ],
    "3.0 exactly in 30%, else 3 + N(0, 1), n 300": lambda g: np.where(
        g.random(300) < 0.3, 3.0, 3.0 + g.standard_normal(300)
    ),
    "3.0 exactly in 45%, else 3 + N(0, 1), n 300": lambda g: np.where(
        g.random(300) < 0.45, 3.0, 3.0 + g.standard_normal(300)
    ),
}
OUTSIZED = {  # (series, reading put at its middle)
    "lognormal bursts (σ 1), 80% idle, n 2000": 5000.0,  # 250 × the typical burst
    "lognormal bursts (σ .5), 80% idle, n 2000": 500.0,
    "gamma bursts (k 2), 70% idle, n 1000": 30.0,
    "CPU floor .066 in 55%, else + Exp(.03), n 2000": 1.0,  # 31 jitter scales
    "3.0 exactly for half, then 3 + N(0, 1), n 600": 11.0,  # 8 σ, in the noisy half
}


def mostly_one_value(reps: int) -> None:
    print(f"\nseries mostly at one value, {reps} series a row: share with a spike finding; with")
    print("one outsized reading at three quarters, share where a spike finding lies at it")
    print("| series | spike finding, no spike | outsized reading | found |")
    print("|---|---|---|---|")
    for k, (name, make) in enumerate(MOSTLY_ONE_VALUE.items()):
        shown = found = 0
        for rep in range(reps):
            x = make(np.random.default_rng([SEED, k, rep]))
            shown += bool(find_change_points(x).notable_spikes())
            if name in OUTSIZED:
                x[x.size * 3 // 4] = OUTSIZED[name]
                found += x.size * 3 // 4 in [
                    r.index for r in find_change_points(x).notable_spikes()
                ]
        outsized = f"{OUTSIZED[name]:g} | {found / reps:.2f}" if name in OUTSIZED else "– | –"
        print(f"| {name} | {shown / reps:.2f} | {outsized} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    args = parser.parse_args()
    bursts(args.reps)
    flat_then_noisy(args.reps)
    mostly_one_value(args.reps)


if __name__ == "__main__":
    main()
