"""Change points in counts of rare events (errors a minute, OOM kills an hour): the defaults'
false points on a steady rate, and their power when the rate changes.

Series (seeded, reproducible):

* ``null``: Poisson counts at a steady rate λ (events per reading), n readings — any change
  point is false;
* ``rate``: the rate steps from λ to ``--factor`` λ (default 10) at mid-series — found when a
  point lies within max(5, n/20) of it;
* ``gauge``: a gauge that holds a value and moves by ±1 in a share p of readings (a toggle,
  back at the next reading), null and with a step of +3 at mid-series.

Run: ``.venv/bin/python benchmarks/changepoints_sparse_counts.py [--reps 200]``; with
``PYTHONPATH=<other tree>/src`` for another version of the code.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from perfsleuth import find_change_points

Generator = Callable[[np.random.Generator], np.ndarray]


def poisson(rate: float, n: int, factor: float = 1.0) -> Generator:
    def make(rng: np.random.Generator) -> np.ndarray:
        half = n // 2
        return np.r_[rng.poisson(rate, half), rng.poisson(rate * factor, n - half)].astype(float)

    return make


def gauge(share: float, n: int, step: float = 0.0) -> Generator:
    def make(rng: np.random.Generator) -> np.ndarray:
        x = np.full(n, 5.0)
        toggles = rng.random(n) < share
        x[toggles] += rng.choice([-1.0, 1.0], toggles.sum())
        x[n // 2 :] += step
        return x

    return make


def share_with_points(make: Generator, reps: int, at: int | None = None, tol: int = 5) -> float:
    """Share of ``reps`` seeded series with any point (``at`` None), or with one near ``at``."""
    hits = 0
    for seed in range(reps):
        found = find_change_points(make(np.random.default_rng(seed))).indices
        hits += bool(found) if at is None else any(abs(i - at) <= tol for i in found)
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--factor", type=float, default=10.0)
    args = parser.parse_args()
    sizes = (200, 1000)
    rates = (0.01, 0.02, 0.05, 0.1, 0.3)
    print(f"share of {args.reps} series with any change point: Poisson counts, steady rate λ")
    print("| n | " + " | ".join(f"λ = {r}" for r in rates) + " |")
    print("|---" * (len(rates) + 1) + "|")
    for n in sizes:
        cells = [share_with_points(poisson(r, n), args.reps) for r in rates]
        print(f"| {n} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    print()
    print(f"share with a point within max(5, n/20) of a rate step λ → {args.factor:g} λ at n/2")
    print("| n | " + " | ".join(f"λ = {r}" for r in rates) + " |")
    print("|---" * (len(rates) + 1) + "|")
    for n in sizes:
        tol = max(5, n // 20)
        cells = [
            share_with_points(poisson(r, n, args.factor), args.reps, n // 2, tol) for r in rates
        ]
        print(f"| {n} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    print()
    shares = (0.01, 0.03, 0.1)
    print("a gauge holding 5 that toggles ±1 in a share p of readings: any point (null) | a +3")
    print("step at n/2 found within 5")
    print("| n | " + " | ".join(f"p = {p}: null / step" for p in shares) + " |")
    print("|---" * (len(shares) + 1) + "|")
    for n in sizes:
        cells = [
            (
                share_with_points(gauge(p, n), args.reps),
                share_with_points(gauge(p, n, 3.0), args.reps, n // 2),
            )
            for p in shares
        ]
        print(f"| {n} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in cells) + " |")


if __name__ == "__main__":
    main()
