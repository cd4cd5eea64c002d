"""The defaults on exponential growth: false points with no change, and power on a real one.

A positive series growing at a constant rate is a straight line on a log scale:
y = 100 · exp(g t + e_t), e AR(1) with innovations of standard deviation ``sd`` and
coefficient φ (from e_0 = innovation 0). GDP, population, passengers, prices, CO2, users and
disk usage grow this way; described as a line in raw units, the growing slope is cut into
kinks (and level steps on long series).

* ``--null``: no change; each cell (n, g, sd, φ) prints how many of ``--reps`` seeded series
  get a point of any kind, and the level and slope points in all (every one is false).
* ``--power``: a change at mid-series, either a crash (a level shift of the log, ``--crash``
  = −10%: every later reading 10% lower) or a change of growth rate (g → 2g, the log's line
  bending); each cell prints the share of series with a point within 5 readings of the change
  (and of the kind the change is: ``level`` for the crash, ``slope`` for the bend, either
  accepted for "found"), the median distance of the nearest point, and the other points per
  series. With ``--scales`` also which scale the result used (``ChangePoints.scale``).

Another source tree is measured with ``PYTHONPATH=<tree>/src`` (as ``changepoints_same.py``).

Run: ``machine heavy .venv/bin/python benchmarks/changepoints_growth.py --null --power
--reps 100``
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections import Counter

import numpy as np
from scipy.signal import lfilter

from perfsleuth import find_change_points

SIZES = (40, 60, 120, 250)
GROWTHS = (0.02, 0.05)
SDS = (0.01, 0.03)
PHIS = (0.0, 0.6)
POWER_SIZES = (60, 120, 250)
MARGIN = 5  # readings from the true change that count as finding it


def series(
    rng: np.random.Generator, n: int, growth: float, sd: float, phi: float,
    crash: float = 0.0, bend: float = 0.0,
) -> np.ndarray:  # fmt: skip
    """100 · exp(g t + e), AR(1) e; from n // 2 on the log drops by ln(1 + crash) and grows
    ``bend`` faster per reading."""
    t = np.arange(n, dtype=np.float64)
    e = lfilter([1.0], [1.0, -phi], rng.normal(0.0, sd, n))
    mid = n // 2
    log = growth * t + e
    log[mid:] += math.log1p(crash) + bend * (t[mid:] - mid)
    return 100.0 * np.exp(log)


def scale_of(result: object) -> str:
    return str(getattr(result, "scale", "linear"))


def null(reps: int, scales: bool, sizes: list[int], growths: list[float]) -> None:
    print(f"no change, {reps} series a cell: series with a point; level / slope points in all")
    for n in sizes:
        for g in growths:
            for sd in SDS:
                for phi in PHIS:
                    rng = np.random.default_rng([n, round(g * 100), round(sd * 100),
                                                 round(phi * 10)])  # fmt: skip
                    hit = level = slope = 0
                    used: Counter[str] = Counter()
                    for _ in range(reps):
                        result = find_change_points(series(rng, n, g, sd, phi))
                        kinds = [p.kind for p in result.points]
                        hit += bool(kinds)
                        level += kinds.count("level")
                        slope += kinds.count("slope")
                        used[scale_of(result)] += 1
                    extra = f"  {dict(used)}" if scales else ""
                    print(f"n={n:<4} g={g:<5} sd={sd:<5} φ={phi:<4} {hit:4d}/{reps}  "
                          f"level {level:4d}  slope {slope:4d}{extra}", flush=True)  # fmt: skip


def power(reps: int, crash: float, scales: bool, sizes: list[int], g: float = 0.02) -> None:
    print(
        f"a change at n // 2, {reps} series a cell: found within {MARGIN} (of its kind), "
        "median distance of the nearest point, other points per series"
    )
    changes = (("crash", {"crash": crash}, "level"), ("bend", {"bend": None}, "slope"))
    for name, change, kind in changes:
        for n in sizes:
            for sd in SDS:
                for phi in PHIS:
                    args = {k: (g if v is None else v) for k, v in change.items()}
                    rng = np.random.default_rng([7, n, round(sd * 100), round(phi * 10),
                                                 len(name)])  # fmt: skip
                    found = same_kind = others = 0
                    distances = []
                    used: Counter[str] = Counter()
                    for _ in range(reps):
                        result = find_change_points(series(rng, n, g, sd, phi, **args))
                        mid = n // 2
                        near = [p for p in result.points if abs(p.index - mid) <= MARGIN]
                        found += bool(near)
                        same_kind += any(p.kind == kind for p in near)
                        others += len(result.points) - min(len(near), 1)
                        if result.points:
                            distances.append(min(abs(p.index - mid) for p in result.points))
                        used[scale_of(result)] += 1
                    median = f"{np.median(distances):5.1f}" if distances else "    -"
                    extra = f"  {dict(used)}" if scales else ""
                    label = f"{name} {crash:+.0%}" if name == "crash" else f"{name} g→{2 * g}"
                    print(f"{label:<12} n={n:<4} sd={sd:<5} φ={phi:<4} found {found / reps:.2f} "
                          f"({kind} {same_kind / reps:.2f})  distance {median}  "
                          f"others {others / reps:.2f}{extra}", flush=True)  # fmt: skip


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--null", action="store_true")
    parser.add_argument("--power", action="store_true")
    parser.add_argument("--crash", type=float, default=-0.10)
    parser.add_argument("--scales", action="store_true", help="count the scale each result used")
    parser.add_argument("--sizes", type=ints, default=list(SIZES), help="--null lengths: 40,60")
    parser.add_argument("--growths", type=floats, default=list(GROWTHS), help="--null rates")
    parser.add_argument("--power-sizes", type=ints, default=list(POWER_SIZES))
    parser.add_argument("--power-growth", type=float, default=0.02, help="g before the change")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if not (args.null or args.power):
        parser.error("choose --null and/or --power")
    if args.null:
        null(args.reps, args.scales, args.sizes, args.growths)
    if args.power:
        power(args.reps, args.crash, args.scales, args.power_sizes, args.power_growth)


if __name__ == "__main__":
    main()
