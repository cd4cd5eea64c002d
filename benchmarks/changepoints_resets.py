"""The defaults on raw counters that reset: a request counter (Poisson(5) a reading) set back
to 0 at R places, each drawn at random with at least 20 readings between resets and from the
ends (a log rotated, or a process restarted, at irregular times: evenly spaced resets are a
cycle, which the cycle stage removes).

For each (n, R), over seeded series: the share whose every reset has a level point within 2
readings, the level points per series, and the other points (slope points: a counter's
Poisson noise adds up to a random walk inside each tooth, whose drift may bend). ``--null``:
the same counters with no reset, and random walks with heavy-tailed moves (Student t, 3
degrees of freedom), whose largest moves stand out by chance: the share of series with any
point.

Run: ``.venv/bin/python benchmarks/changepoints_resets.py [--seeds 20] [--null]``; with
``PYTHONPATH=<other tree>/src`` for another version of the code.
"""

from __future__ import annotations

import argparse

import numpy as np

from perfsleuth import find_change_points

GAP = 20  # fewest readings between resets, and from either end


def resets_at(n: int, count: int, rng: np.random.Generator) -> list[int]:
    """``count`` sorted reset places in [GAP, n − GAP], at least GAP apart."""
    slack = n - 2 * GAP - (count - 1) * GAP
    cuts = np.sort(rng.integers(0, slack + 1, count))
    return [int(GAP + c + k * GAP) for k, c in enumerate(cuts)]


def counter(n: int, at: list[int], rng: np.random.Generator) -> np.ndarray:
    values: np.ndarray = np.cumsum(rng.poisson(5, n)).astype(float)
    for reset in reversed(at):
        values[reset:] -= values[reset - 1]
    return values


def found(n: int, count: int, seeds: int) -> tuple[float, float, float]:
    every = level = other = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        at = resets_at(n, count, rng)
        points = find_change_points(counter(n, at, rng)).points
        levels = [p.index for p in points if p.kind == "level"]
        every += all(any(abs(i - r) <= 2 for i in levels) for r in at)
        level += len(levels)
        other += len(points) - len(levels)
    return every / seeds, level / seeds, other / seeds


def null(n: int, seeds: int) -> tuple[float, float]:
    flat = walks = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        flat += bool(find_change_points(counter(n, [], rng)).points)
        walks += bool(find_change_points(np.cumsum(rng.standard_t(3, n))).points)
    return flat / seeds, walks / seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--null", action="store_true")
    args = parser.parse_args()
    if args.null:
        print("n      counter, no reset: any point   t(3) random walk: any point")
        for n in (100, 400, 1000):
            flat, walks = null(n, args.seeds)
            print(f"{n:<6} {flat:.2f}                           {walks:.2f}", flush=True)
        return
    print(f"{args.seeds} series a cell: every reset found (±2) / level points / other points")
    print("n      " + "  ".join(f"R = {r:<14}" for r in (1, 2, 3, 4, 8)))
    for n in (200, 400, 1000):
        cells = []
        for r in (1, 2, 3, 4, 8):
            if (r + 1) * GAP > n:
                cells.append(f"{'–':<18}")
                continue
            every, level, other = found(n, r, args.seeds)
            cells.append(f"{every:.2f} / {level:4.1f} / {other:3.1f}  ")
        print(f"{n:<6} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
