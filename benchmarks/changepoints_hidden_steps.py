"""Steps that a trend's common slope hides: a drop in a straight line, a crash before a bend,
a crash with a slowdown.

The trend's line start removes the slope of the line *through* a step, and the series less it
is a saw tooth whose teeth hide the step (reference step 6, "A step the line hides"). Three
families of seeded series, every cell printing the share of series with a point within 5
readings of each change and the other points per series:

* ``--drops``: a straight line rising 20 noise σ (``--rise``) over n readings in stationary
  AR(1) noise (σ its own standard deviation), n ∈ {60, 120, 400}, φ ∈ {0, .5}, dropping by 0,
  3 or 6 σ at n // 2 (0: every point is false). With a rise near the drop, the line through
  both is flat: the crash hides the growth as well. ``--cycle P`` adds a cycle of P readings
  and ±3 σ (a month's, a day's);
* ``--crash-then-bend``: 100 · exp(.02 t + e), e AR(1) with innovations of 1% or 3% and φ 0 or
  .6, 120 readings; −10% from 60 on and the growth doubled from 90 on: a level point near 60
  (``crash``), a slope point near 90 (``bend``), both;
* ``--crash-and-slowdown``: 100 · exp(.03 t + e), n ∈ {60, 150, 400}, innovations 1% (φ 0)
  or 2% (φ .6); −20% at n // 2 and the growth halved from there (Perron's model C, a jump
  and a change of slope at once, which no description of the search has): a point of either
  kind within 5 readings of the crash, the median offset of the nearest point, others.

A level and a slope point at the same reading (a crash where the growth changes) count as one
point. Another source tree is measured with ``PYTHONPATH=<tree>/src``.

Run: ``machine heavy .venv/bin/python benchmarks/changepoints_hidden_steps.py --drops
--crash-then-bend --crash-and-slowdown --reps 50`` (``--rise R``, ``--cycle P``)
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
from scipy.signal import lfilter

from perfsleuth import find_change_points

MARGIN = 5


def ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    """Stationary AR(1) noise of unit standard deviation."""
    return lfilter([1.0], [1.0, -phi], rng.standard_normal(n)) * math.sqrt(1 - phi * phi)


def near(points: list[int], at: int) -> bool:
    return any(abs(p - at) <= MARGIN for p in points)


def drops(reps: int, rise: float = 20.0, cycle: int = 0) -> None:
    shape = f", a cycle of {cycle} readings ±3 σ" if cycle else ""
    print(f"a line rising {rise:g} σ{shape}, a drop at n // 2, {reps} series a cell")
    print("(found: a point within 5 readings of the drop; others: other points a series)")
    for n in (60, 120, 400):
        for phi in (0.0, 0.5):
            for drop in (0.0, 3.0, 6.0):
                rng = np.random.default_rng([n, round(phi * 10), round(drop)])
                found = others = 0
                t = np.arange(n, dtype=float)
                for _ in range(reps):
                    y = rise * t / n + ar1(rng, n, phi) - drop * (t >= n // 2)
                    if cycle:
                        y += 3.0 * np.sin(2 * np.pi * t / cycle)
                    points = sorted({p.index for p in find_change_points(y).points})
                    hit = near(points, n // 2)
                    found += hit
                    others += len(points) - int(hit)
                print(f"n={n:<4} φ={phi:<4} drop {drop:.0f} σ: found {found / reps:.2f}  "
                      f"others {others / reps:.2f}", flush=True)  # fmt: skip


def crash_then_bend(reps: int) -> None:
    print(f"−10% at 60, growth 2% → 4% at 90, 120 readings, {reps} series a cell")
    n = 120
    t = np.arange(n, dtype=float)
    for sd in (0.01, 0.03):
        for phi in (0.0, 0.6):
            crash = bend = both = others = 0
            for seed in range(reps):
                rng = np.random.default_rng(seed)
                log = 0.02 * t + lfilter([1.0], [1.0, -phi], rng.normal(0.0, sd, n))
                log[60:] += math.log1p(-0.10)
                log[90:] += 0.02 * (t[90:] - 90)
                result = find_change_points(100.0 * np.exp(log))
                level = [p.index for p in result.points if p.kind == "level"]
                slope = [p.index for p in result.points if p.kind == "slope"]
                c, b = near(level, 60), near(slope, 90)
                crash, bend, both = crash + c, bend + b, both + (c and b)
                others += sum(not (near([p.index], 60) or near([p.index], 90))
                              for p in result.points)  # fmt: skip
            print(f"sd={sd:<5} φ={phi:<4} crash {crash / reps:.2f}  bend {bend / reps:.2f}  "
                  f"both {both / reps:.2f}  others {others / reps:.2f}", flush=True)  # fmt: skip


def crash_and_slowdown(reps: int) -> None:
    """A crash and a change of growth rate at the same reading (Perron's model C)."""
    print(f"−20% at n // 2 and growth 3% → 1.5% from there, {reps} series a cell")
    print("(a point within 5 readings of the crash, of either kind; the nearest point's offset)")
    for n in (60, 150, 400):
        t = np.arange(n, dtype=float)
        for sd, phi in ((0.01, 0.0), (0.02, 0.6)):
            found = others = 0
            offsets = []
            for seed in range(reps):
                rng = np.random.default_rng(seed)
                log = 0.03 * t + lfilter([1.0], [1.0, -phi], rng.normal(0.0, sd, n))
                log[n // 2 :] += math.log1p(-0.20) - 0.015 * (t[n // 2 :] - n // 2)
                points = sorted({p.index for p in find_change_points(100.0 * np.exp(log)).points})
                hit = near(points, n // 2)
                found += hit
                others += len(points) - int(hit)
                if points:
                    offsets.append(min(points, key=lambda i: abs(i - n // 2)) - n // 2)
            offset = f"{float(np.median(offsets)):+.0f}" if offsets else "–"
            print(f"n={n:<4} sd={sd:<5} φ={phi:<4} found {found / reps:.2f}  "
                  f"nearest {offset}  others {others / reps:.2f}", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--drops", action="store_true")
    parser.add_argument("--crash-then-bend", action="store_true")
    parser.add_argument("--crash-and-slowdown", action="store_true")
    parser.add_argument("--rise", type=float, default=20.0, help="--drops: the line's rise, σ")
    parser.add_argument("--cycle", type=int, default=0, help="--drops: a cycle's period")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if not (args.drops or args.crash_then_bend or args.crash_and_slowdown):
        parser.error("choose --drops, --crash-then-bend and/or --crash-and-slowdown")
    if args.drops:
        drops(args.reps, args.rise, args.cycle)
    if args.crash_then_bend:
        crash_then_bend(args.reps)
    if args.crash_and_slowdown:
        crash_and_slowdown(args.reps)


if __name__ == "__main__":
    main()
