"""A service that starts, grows and saturates: idle readings (exactly 0), a jump to a ramp, a
jump to a flat level. The right answer is two breaks — a level and a slope point at the start
(50) and at the cap (150) — not a staircase. The rival it must not swallow: a real staircase,
the same jumps at 50 and 150 with flat steps between them in place of the ramp.

The ramp runs 20 → 50 over 100 readings (.3 a reading), and the flat level after the cap is
60; the noise is AR(1) (φ and σ given per cell). The staircase rival has four steps of +7.5 at
70, 90, 110 and 130 between the jumps. Each cell prints the points a series (an index counts
once), how many series have none, the start and the cap found within 5 readings, the series
with a slope point (a ramp's line) and those whose points are exactly the two breaks. For the
staircase it also prints its four inner steps found within 5.

``--busy``: instead, a busy stretch between two idle ones — zeros for the first quarter, 10
rising ``rise`` σ over the middle half (white noise, σ 1), zeros again — at 400, 1,000 and
4,000 readings, rising 2.5, 5 and 10 σ: the series whose points are exactly a level and a
slope point at each end of the busy stretch, and the level points more than 5 readings
inside it.

Run: .venv/bin/python benchmarks/changepoints_idle_ramp.py [--reps R] [--busy]
(another source tree: put ``PYTHONPATH=<its src>`` in front).
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.signal import lfilter

from perfsleuth import find_change_points

START, CAP, END = 50, 150, 200
INNER = (70, 90, 110, 130)  # the staircase rival's steps
# the ramp's right answer: a level and a slope point at the start and at the cap
TWO_BREAKS = {(START, "level"), (START, "slope"), (CAP, "level"), (CAP, "slope")}


def idle_ramp_flat(
    seed: int, sigma: float = 1.0, phi: float = 0.0, stairs: bool = False
) -> np.ndarray:
    """Idle (0) until ``START``, a ramp 20 → 50 (or four flat steps) until ``CAP``, then 60;
    AR(1) noise of marginal σ ``sigma`` on the active part."""
    rng = np.random.default_rng(seed)
    t = np.arange(CAP - START, dtype=float)
    if stairs:
        middle = 20.0 + 7.5 * np.searchsorted(np.array(INNER) - START, t, side="right")
    else:
        middle = 20.0 + 0.3 * t
    active = np.concatenate([middle, np.full(END - CAP, 60.0)])
    e = rng.normal(0.0, sigma * np.sqrt(1.0 - phi * phi), active.size)
    e[0] /= np.sqrt(1.0 - phi * phi)
    return np.concatenate([np.zeros(START), active + lfilter([1.0], [1.0, -phi], e)])


def idle_busy_idle(n: int, rise: float, seed: int) -> tuple[np.ndarray, int, int]:
    """Zeros, then 10 rising ``rise`` (σ 1 noise) over the middle half, then zeros: (the
    series, where the busy stretch starts, where it stops)."""
    rng = np.random.default_rng(seed)
    m = n // 2
    a, b = n // 4, n // 4 + m
    busy = 10.0 + rise * np.arange(m) / m + rng.normal(0.0, 1.0, m)
    return np.concatenate([np.zeros(a), busy, np.zeros(n - b)]), a, b


def busy(reps: int) -> None:
    print(f"{reps} series a cell: idle, busy rising over the middle half, idle")
    print("n      rise  two breaks  inner level points")
    for n in (400, 1_000, 4_000):
        for rise in (2.5, 5.0, 10.0):
            breaks = inner = 0
            for seed in range(reps):
                y, a, b = idle_busy_idle(n, rise, seed)
                points = {(p.index, p.kind) for p in find_change_points(y).points}
                breaks += points == {(a, "level"), (a, "slope"), (b, "level"), (b, "slope")}
                inner += sum(k == "level" and a + 5 < i < b - 5 for i, k in points)
            print(f"{n:<6} {rise:<5} {breaks:>2}/{reps:<7} {inner}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--busy", action="store_true")
    args = parser.parse_args()
    if args.busy:
        busy(args.reps)
        return
    print(f"{args.reps} series a cell; found: a point within 5 readings")
    print("shape      σ    φ    points  none  start  cap   sloped  two breaks  inner steps")
    for stairs in (False, True):
        for sigma, phi in ((1.0, 0.0), (2.0, 0.0), (1.0, 0.5)):
            counts, starts, caps, sloped, breaks, inner = [], 0, 0, 0, 0, 0
            for seed in range(args.reps):
                found = find_change_points(idle_ramp_flat(seed, sigma, phi, stairs))
                indices = found.indices
                counts.append(len(indices))
                starts += any(abs(i - START) <= 5 for i in indices)
                caps += any(abs(i - CAP) <= 5 for i in indices)
                sloped += any(p.kind == "slope" for p in found.points)
                breaks += {(p.index, p.kind) for p in found.points} == TWO_BREAKS
                inner += sum(any(abs(i - c) <= 5 for i in indices) for c in INNER)
            shape = "staircase" if stairs else "ramp"
            steps = f"{inner}/{len(INNER) * args.reps}" if stairs else "–"
            print(
                f"{shape:<10} {sigma:<4.1f} {phi:<4.1f} {np.mean(counts):<7.2f} "
                f"{counts.count(0):<5} {starts:<6} {caps:<5} {sloped:<7} {breaks:<11} {steps}"
            )


if __name__ == "__main__":
    main()
