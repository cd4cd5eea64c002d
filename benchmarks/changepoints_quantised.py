"""Change points of quantised series: slow quantities recorded on a coarse grid.

Monitoring data is often rounded (disk usage in whole GB, memory in MB, counts, percentages to
one decimal). A quantity that grows slowly, recorded at a resolution q coarser than its noise,
is an exact staircase; this counts the defaults' points on such series (seeded, reproducible):

* shapes over n readings: ``line`` (rising ``--rise`` grid steps), ``sqrt`` (a concave rise of
  as many), ``exp`` (a saturating one), ``flat``;
* noise σ = s q before rounding, s in ``--noise`` (0: the rounded curve itself);
* each with no shift (every level point is false: the mean moves smoothly) and with a real
  shift of 5 max(q, σ) at 60% of the series (found when a point lies within max(5, n/40)).

Printed per cell: level points per series with no shift (slope points, kinks where a curve
bends, apart), and with a shift the share of series where it is found and the level points
per series beside it. Seeds 0..reps−1; ``--half`` 0 or 1 takes the even or odd seeds (two
halves to report).

Run: ``.venv/bin/python benchmarks/changepoints_quantised.py [--reps 40] [--n 200,1000]
[--real]`` (``--real``: the same series not rounded);
with ``PYTHONPATH=<other tree>/src`` for another version of the code.
"""

from __future__ import annotations

import argparse

import numpy as np

from perfsleuth import find_change_points

SHAPES = {
    "line": lambda u: u,
    "sqrt": np.sqrt,
    "exp": lambda u: (1.0 - np.exp(-4.0 * u)) / (1.0 - np.exp(-4.0)),
    "flat": lambda u: 0.0 * u,
}


def series(
    shape: str, n: int, rise: float, noise: float, shift: bool, seed: int, rounded: bool = True
) -> np.ndarray:
    """A ``shape`` rising ``rise`` grid steps (q = 1) from 10 over ``n`` readings (a shift is then
    above the 5% relative floor of series of 1,000 readings or more), Gaussian noise of
    σ = ``noise`` q, a shift of 5 max(q, σ) at 60% when ``shift``, rounded to the grid (when
    ``rounded``; else the same real-valued series, for comparison)."""
    rng = np.random.default_rng(seed)
    u = np.arange(n) / n
    mean = 10.0 + rise * SHAPES[shape](u)
    if shift:
        mean[int(0.6 * n) :] += 5.0 * max(1.0, noise)
    values = mean + rng.normal(0.0, noise, n) if noise > 0 else mean
    return np.round(values) if rounded else values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--n", default="200,1000")
    parser.add_argument("--rise", type=float, default=20.0)
    parser.add_argument("--noise", default="0,0.1,0.3,1")
    parser.add_argument("--half", type=int, choices=(0, 1), default=None)
    parser.add_argument(
        "--real", action="store_true", help="the same series not rounded (real-valued)"
    )
    args = parser.parse_args()
    seeds = [s for s in range(args.reps) if args.half is None or s % 2 == args.half]
    rounded = not args.real
    print(f"{len(seeds)} series per cell; rise {args.rise:g} grid steps")
    print("  n shape noise/q | no shift: level pts  slope pts | shift: found  level pts")
    for n in (int(v) for v in args.n.split(",")):
        tol = max(5, n // 40)
        for shape in SHAPES:
            for noise in (float(v) for v in args.noise.split(",")):
                null_level = null_slope = found = shift_level = 0
                for seed in seeds:
                    plain = series(shape, n, args.rise, noise, False, seed, rounded)
                    cp = find_change_points(plain)
                    null_level += sum(p.kind == "level" for p in cp.points)
                    null_slope += sum(p.kind == "slope" for p in cp.points)
                    cp = find_change_points(series(shape, n, args.rise, noise, True, seed, rounded))
                    levels = [p.index for p in cp.points if p.kind == "level"]
                    found += any(abs(i - int(0.6 * n)) <= tol for i in levels)
                    shift_level += len(levels)
                k = len(seeds)
                print(
                    f"{n:5d} {shape:5s} {noise:5.2g} | {null_level / k:9.2f} {null_slope / k:10.2f}"
                    f" | {found / k:11.2f} {shift_level / k:10.2f}"
                )


if __name__ == "__main__":
    main()
