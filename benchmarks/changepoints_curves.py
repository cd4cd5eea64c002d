"""Smooth curves are no change points: the defaults' points on series whose mean bends
smoothly, where no reading is where the growth changed.

* simulated: a quadratic (accelerating), an exponential (accelerating, ``(e^{3u} − 1)/(e³ −
  1)``) and a square root (decelerating, steep at its start) over u ∈ [0, 1], rising 5, 20 or
  100 noise σ over n ∈ {100, 400, 2,000} readings, in Gaussian AR(1) noise of φ .5 (unit
  stationary σ) about 50; ``--reps`` seeded series a cell. Every point is false, but a curve
  steep at one end (the √) has a real change of growth there at large rises;
* real: smooth monthly CO₂ records — astsa ``cardox`` (Mauna Loa, 781 readings) and R's
  ``co2`` (468 readings, the same station to 1997), read from the snapshots under
  ``--mirror`` (``<owner>+<name>/repo``, as ``fetch`` leaves them; skipped when absent).

* ``--polygons``: the other side of the rule, real kinks that all turn one way — convex
  polygons, straight lines meeting at two or three sharp kinks (each adding 1–4 σ a
  hundred readings to the slope, at least n/8 apart), n ∈ {120, 300, 1,000}, AR(1) noise of
  φ 0 and .5, ``--reps`` a cell: kinks found within 5 readings, and slope points not.

Printed: points per series, and their kinds, per cell; each real series' points.

Run: ``.venv/bin/python benchmarks/changepoints_curves.py [--reps 20] [--polygons]`` (with
``PYTHONPATH=<other tree>/src`` for another version of the code).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy.signal import lfilter

from perfsleuth import find_change_points

sys.path.insert(0, str(Path(__file__).resolve().parent))
from changepoints_short import Mirror, _r_object, _r_source_ts

FloatArray = npt.NDArray[np.float64]
SHAPES = {
    "quadratic": lambda u: u * u,
    "exponential": lambda u: np.expm1(3.0 * u) / math.expm1(3.0),
    "sqrt": np.sqrt,
}
SIZES = (100, 400, 2000)
RISES = (5.0, 20.0, 100.0)
PHI = 0.5


def ar1(rng: np.random.Generator, n: int, phi: float) -> FloatArray:
    """Gaussian AR(1) noise of unit innovations × √(1 − φ²), started at 0."""
    return lfilter([1.0], [1.0, -phi], rng.standard_normal(n)) * math.sqrt(1.0 - phi * phi)


def curve(shape: str, n: int, rise: float, seed: int) -> FloatArray:
    rng = np.random.default_rng([list(SHAPES).index(shape), n, int(rise), seed])
    return 50.0 + rise * SHAPES[shape](np.linspace(0.0, 1.0, n)) + ar1(rng, n, PHI)


def simulated(reps: int) -> None:
    print(f"points per series (kinds), {reps} series a cell; AR(1) noise φ {PHI}")
    print(f"{'shape':12s} {'n':>5s}  " + "  ".join(f"rise {r:>3g} σ{'':16s}" for r in RISES))
    for shape in SHAPES:
        for n in SIZES:
            cells = []
            for rise in RISES:
                kinds: Counter[str] = Counter()
                for seed in range(reps):
                    found = find_change_points(curve(shape, n, rise, seed))
                    kinds.update(p.kind for p in found.points)
                detail = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) or "-"
                cells.append(f"{sum(kinds.values()) / reps:5.2f} ({detail:15s})")
            print(f"{shape:12s} {n:5d}  " + "  ".join(cells))


def polygon(n: int, kinks: int, phi: float, seed: int) -> tuple[FloatArray, list[int]]:
    """A convex polygon in AR(1) noise (unit stationary σ) and its kinks."""
    rng = np.random.default_rng([n, kinks, round(10 * phi), seed])
    while True:
        at = np.sort(rng.choice(np.arange(n // 6, n - n // 6), kinks, replace=False))
        if np.min(np.diff(at)) >= n // 8:
            break
    t = np.arange(float(n))
    mean = rng.uniform(0.0, 3.0) / (n / 10) * t
    for a in at:
        mean += rng.uniform(1.0, 4.0) * (10.0 / n) * np.maximum(t - a, 0.0)
    return mean + ar1(rng, n, phi), at.tolist()


def polygons(reps: int) -> None:
    print(f"convex polygons, {reps} series a cell: kinks found within 5 readings; slope "
          "points not within 5 of a kink")  # fmt: skip
    found = false = total = 0
    for n in (120, 300, 1000):
        for kinks in (2, 3):
            for phi in (0.0, 0.5):
                hits = misses = 0
                for seed in range(reps):
                    x, at = polygon(n, kinks, phi, seed)
                    slopes = [p.index for p in find_change_points(x).points if p.kind == "slope"]
                    hits += sum(any(abs(p - a) <= 5 for p in slopes) for a in at)
                    misses += sum(all(abs(p - a) > 5 for a in at) for p in slopes)
                print(f"n {n:5d}, {kinks} kinks, φ {phi:g}: found {hits} of {reps * kinks}, "
                      f"other slope points {misses}")  # fmt: skip
                found, false, total = found + hits, false + misses, total + reps * kinks
    print(f"in all: found {found} of {total}, other slope points {false}")


def real(mirror: Mirror) -> None:
    readers = {
        "astsa cardox": lambda: _r_object(mirror, "cran/astsa", "data/cardox.rda"),
        "R co2": lambda: _r_source_ts(mirror, "co2")[0],
    }
    for name, read in readers.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                values = np.asarray(read(), dtype=np.float64).ravel()
        except (FileNotFoundError, OSError) as exc:
            print(f"{name}: skipped ({exc})")
            continue
        cp = find_change_points(values)
        points = [(p.index, p.kind) for p in cp.points]
        print(f"{name} ({values.size} readings): points {points}, scale {cp.scale}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--polygons", action="store_true", help="convex polygons instead")
    args = parser.parse_args()
    if args.polygons:
        polygons(args.reps)
        return
    simulated(args.reps)
    real(Mirror(args.mirror))


if __name__ == "__main__":
    main()
