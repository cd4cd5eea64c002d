"""Noise-free staircases at other scales: the same change points whatever the unit?

Random staircases (12–119 readings on a 0.001 grid, 1–3 steps at random places, in three of
ten a reading or two off by up to ±10), each searched with the defaults as they are and
multiplied by .001, .5, 3 and 1,000. Prints how many of those rescaled searches gave other
points, and, on the series as they are, how many steps at least 5 readings from the ends and
from each other were found (a point within 2 readings) and how many points lie more than 2
readings from every step. Residuals of exactly 0 and of float rounding must read alike
(``stats.robust.robust_scale``).

Run: .venv/bin/python benchmarks/changepoints_flat_scale.py [--seeds 4]
(``PYTHONPATH=<other tree>/src`` runs another tree's detector)
"""

from __future__ import annotations

import argparse

import numpy as np

from perfsleuth.changepoints.kernels.search import find_change_points

SCALES = (1e-3, 0.5, 3.0, 1e3)
PER_SEED = 400
MIN_SIZE = 5  # the default segment length: steps closer than this are not separable


def staircase(rng: np.random.Generator) -> tuple[np.ndarray, list[int]]:
    n = int(rng.integers(12, 120))
    cuts = sorted(int(c) for c in rng.choice(np.arange(1, n), size=int(rng.integers(1, 4)),
                                             replace=False))  # fmt: skip
    x = np.full(n, float(rng.integers(-1000, 1000)) / 1000)
    for c in cuts:
        x[c:] += float(rng.integers(-1000, 1000)) / 1000
    if rng.random() < 0.3:
        at = rng.integers(0, n, size=int(rng.integers(1, 3)))
        x[at] += rng.integers(-1000, 1000, size=at.size) / 100
    return x, cuts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    moved = searches = found = separable = stray = 0
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        for _ in range(PER_SEED):
            x, cuts = staircase(rng)
            points = find_change_points(x).indices
            apart = [
                c for c in cuts
                if MIN_SIZE <= c <= x.size - MIN_SIZE
                and all(abs(c - d) >= MIN_SIZE for d in cuts if d != c)
            ]  # fmt: skip
            separable += len(apart)
            found += sum(any(abs(p - c) <= 2 for p in points) for c in apart)
            stray += sum(all(abs(p - c) > 2 for c in cuts) for p in points)
            for scale in SCALES:
                searches += 1
                moved += find_change_points(x * scale).indices != points
    print(f"rescaled searches with other points: {moved} of {searches}")
    print(f"separable steps found: {found} of {separable}; points away from every step: {stray}")


if __name__ == "__main__":
    main()
