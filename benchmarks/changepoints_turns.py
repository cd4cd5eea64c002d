"""Bends of series with no overall trend — a V, a Λ, a hockey stick — with the defaults.

A series whose growth changes but whose line through everything is flat (latency falling then
rising again, a queue that fills then drains, a metric flat until a leak starts) keeps no
common slope, and the kinks (``perfsleuth.changepoints.kernels.kinks``) were searched only
where one was kept: a V got no point, a hockey stick a level point in mid-ramp.

* ``--shapes``: each shape, its bend at 50% (V, Λ) or 40% (flat → ramp, ramp → flat), the
  line moving ``R`` noise σ (the noise's own, marginal) over the shorter side of the bend, in
  stationary Gaussian AR(1) noise φ ∈ {0, .5, .8}, n ∈ {60, 200, 1000}: the share of series
  with a slope point near the bend (within 2.5% of n, at least 5 readings: a gentle bend's
  place is uncertain by more than 5 readings of 1,000), and the level and slope points per
  series;
* ``--two-bends``: the same for two bends at 30% and 70% — flat → ramp → flat (a load moved
  gradually from one level to another, a rollout) and ramp → flat → ramp — the line moving
  ``R`` σ over the middle part: the share with a slope point near each bend;
* ``--null``: flat series of the same AR(1) noise (no change at all): the share with a slope
  point (with any point) — every point is false.

Run: ``machine heavy .venv/bin/python benchmarks/changepoints_turns.py --shapes --two-bends
--null [--reps 100]``; with ``PYTHONPATH=<other tree>/src`` for another version of the code.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.signal import lfilter

from perfsleuth import find_change_points

SEED = 2911
SHAPES = ("V", "Λ", "flat→ramp", "ramp→flat")
TWO_BENDS = ("flat→ramp→flat", "ramp→flat→ramp")
PHIS = (0.0, 0.5, 0.8)
SIZES = (60, 200, 1000)
RISES = (3.0, 8.0)


def noise(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    """Stationary Gaussian AR(1) noise of unit marginal σ."""
    e = rng.standard_normal(n) * math.sqrt(1 - phi * phi)
    e[0] /= math.sqrt(1 - phi * phi)
    return lfilter([1.0], [1.0, -phi], e)


def shape(name: str, n: int, rise: float) -> tuple[np.ndarray, tuple[int, ...]]:
    """(values, the bends' indices): the line moves ``rise`` over the bend's shorter side (two
    bends: over the middle part)."""
    t = np.arange(n, dtype=float)
    if name in TWO_BENDS:
        first, second = round(0.3 * n), round(0.7 * n)
        middle = np.clip(t - first, 0.0, second - first)
        y = middle if name == "flat→ramp→flat" else t - middle
        return 100.0 + rise / (second - first) * y, (first, second)
    at = n // 2 if name in ("V", "Λ") else round(0.4 * n)
    shorter = min(at, n - at)
    if name == "V":
        y = np.abs(t - at)
    elif name == "Λ":
        y = -np.abs(t - at)
    elif name == "flat→ramp":
        y = np.maximum(t - at, 0.0)
    else:
        y = np.minimum(t, at)
    return 100.0 + rise / shorter * y, (at,)


def shapes(reps: int, names: tuple[str, ...]) -> None:
    print(f"bends, {reps} series a cell: share with a slope point near each bend (level / slope "
          "points per series)")  # fmt: skip
    for rise in RISES:
        for name in names:
            for n in SIZES:
                cells = []
                for phi in PHIS:
                    rng = np.random.default_rng([SEED, n, round(phi * 100), round(rise), len(name)])
                    hits = levels = slopes = 0
                    near = max(5, n // 40)
                    for _ in range(reps):
                        values, bends = shape(name, n, rise)
                        cp = find_change_points(values + noise(rng, n, phi))
                        kinds = [p.kind for p in cp.points]
                        levels += kinds.count("level")
                        slopes += kinds.count("slope")
                        hits += all(
                            any(p.kind == "slope" and abs(p.index - at) <= near for p in cp.points)
                            for at in bends
                        )
                    cells.append(f"φ={phi:g}: {hits / reps:.2f} ({levels / reps:.1f}/"
                                 f"{slopes / reps:.1f})")  # fmt: skip
                print(f"R={rise:g} {name:<10} n={n:<5} " + "  ".join(cells), flush=True)


def null(reps: int) -> None:
    print(f"flat AR(1) noise, {reps} series a cell: share with a slope point (any point)")
    for n in SIZES:
        cells = []
        for phi in (*PHIS, 0.9):
            rng = np.random.default_rng([SEED + 1, n, round(phi * 100)])
            slope = points = 0
            for _ in range(reps):
                cp = find_change_points(100.0 + noise(rng, n, phi))
                slope += any(p.kind == "slope" for p in cp.points)
                points += bool(cp.points)
            cells.append(f"φ={phi:g}: {slope / reps:.3f} ({points / reps:.3f})")
        print(f"n={n:<5} " + "  ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", action="store_true")
    parser.add_argument("--two-bends", action="store_true")
    parser.add_argument("--null", action="store_true")
    parser.add_argument("--reps", type=int, default=100)
    args = parser.parse_args()
    if args.shapes:
        shapes(args.reps, SHAPES)
    if args.two_bends:
        shapes(args.reps, TWO_BENDS)
    if args.null:
        null(args.reps)


if __name__ == "__main__":
    main()
