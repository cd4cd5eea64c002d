"""How much of its oscillation a cycle keeps beside its level points: the share that
``search._cycle_kept_share`` compares with ``search._CYCLE_KEPT_SHARE`` (½) to tell steps at
nearly regular intervals, read as a cycle, from a real cycle among shifts.

Every description the defaults make with a cycle records its share (``find_change_points``
describes a series once, or again on the log scale or without the cycle). Families, seeded:

* **staircases** (must fall under ½): ``K`` steps of 3–6 noise σ, all up or of random sign,
  each within ±``jitter`` of a regular grid's spacing (0: exactly regular), a rise of 2 σ over
  the series, AR(1) noise (φ .5);
* **cycles among shifts** (must keep ½ or more): a sine or a daily-shaped peak (a Gaussian
  bump a sixth of the period wide) of period ``P``, amplitude ``A`` noise σ (the profile's
  standard deviation), with 0, 3 or 10 level shifts of ±2–6 σ at random places (at least a
  period apart, or n / (2 (shifts + 1)) where that is less), a rise of 5 σ over the series
  and AR(1) noise (φ .5);
* **R's seasonal datasets** (``changepoints_cycles.SEASONAL``, from a wch/r-source snapshot
  under /work/.mirror) as they are, with one shift of 4 σ at 60% and with three at 30, 55
  and 80% (σ: the MAD of the differences over a year, ÷ √2, as ``changepoints_cycles``).

Prints per family and cell the descriptions with a cycle, their shares (least, quartiles,
largest) and how many fall under ½. Exactly regular steps (jitter 0) are a sawtooth whatever
its cause (counter resets at a fixed interval): their cycle is kept, and their row is for
information.

Run: ``.venv/bin/python benchmarks/changepoints_cycle_levels.py [--reps 5] [--sizes
2000,20000] [--only stairs|cycles|r]`` (about 4 minutes with the defaults).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from scipy.signal import lfilter

sys.path.insert(0, str(Path(__file__).resolve().parent))

from changepoints_cycles import SEASONAL, r_series

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels import search

FloatArray = np.ndarray
BAR = search._CYCLE_KEPT_SHARE

shares: list[float] = []
_share = search._cycle_kept_share


def _recorded(x: FloatArray, model: search._Description) -> float:
    share = _share(x, model)
    shares.append(share)
    return share


search._cycle_kept_share = _recorded  # called by ``search._describe`` by its module name


def ar1(rng: np.random.Generator, n: int, phi: float = 0.5) -> FloatArray:
    return lfilter([1.0], [1.0, -phi], rng.standard_normal(n)) * math.sqrt(1.0 - phi * phi)


def staircase(n: int, steps: int, jitter: float, signs: str, seed: int) -> FloatArray:
    rng = np.random.default_rng(seed)
    gap = n // (steps + 1)
    most = int(jitter * gap)
    cuts = np.arange(1, steps + 1) * gap + rng.integers(-most, most + 1, steps)
    sizes = rng.uniform(3.0, 6.0, steps)
    if signs == "mixed":
        sizes *= rng.choice([-1.0, 1.0], steps)
    level = np.zeros(n)
    for cut, size in zip(cuts, sizes, strict=True):
        level[cut:] += size
    return level + 2.0 * np.arange(n) / n + ar1(rng, n)


def cycle_among_shifts(
    n: int, period: int, amplitude: float, shifts: int, shape: str, seed: int
) -> FloatArray:
    rng = np.random.default_rng(seed)
    phase = (np.arange(n) % period) / period
    profile = (
        np.sin(2 * np.pi * phase) if shape == "sine" else np.exp(-(((phase - 0.5) / 0.17) ** 2))
    )
    profile = (profile - profile.mean()) / profile.std()
    level = np.zeros(n)
    if shifts:
        apart = min(period, n // (2 * (shifts + 1)))
        room = n - 2 * apart - (shifts - 1) * apart
        cuts = np.sort(rng.choice(room, shifts, replace=False)) + apart + np.arange(shifts) * apart
        for cut in cuts:
            level[cut:] += rng.choice([-1.0, 1.0]) * rng.uniform(2.0, 6.0)
    return amplitude * profile + level + 5.0 * np.arange(n) / n + ar1(rng, n)


def shares_of(series: Iterator[FloatArray]) -> tuple[int, list[float]]:
    """(series described, the shares of the descriptions that had a cycle)."""
    count = 0
    start = len(shares)
    for x in series:
        find_change_points(x)
        count += 1
    return count, shares[start:]


def row(label: str, count: int, found: list[float]) -> None:
    if not found:
        print(f"| {label} | {count} | 0 | – | – |", flush=True)
        return
    q = np.quantile(found, [0.0, 0.25, 0.5, 0.75, 1.0])
    spread = " / ".join(f"{v:.2f}" for v in q)
    under = sum(s < BAR for s in found)
    print(f"| {label} | {count} | {len(found)} | {spread} | {under} |", flush=True)


def header(title: str) -> None:
    print(f"\n{title}")
    print("| cell | series | descriptions with a cycle | share: least / q1 / median / q3 / "
          f"largest | under {BAR:g} |")  # fmt: skip
    print("|---|---|---|---|---|")


def stairs(sizes: list[int], reps: int) -> None:
    header("staircases (a cycle read in them should fall under the bar; jitter 0 is a sawtooth)")
    every: list[float] = []
    for n in sizes:
        for steps in (5, 10, 20):
            for jitter in (0.0, 0.1, 0.25):
                for signs in ("up", "mixed"):
                    seeds = (hash_seed("stairs", n, steps, jitter, signs, r) for r in range(reps))
                    count, found = shares_of(staircase(n, steps, jitter, signs, s) for s in seeds)
                    row(f"n {n}, {steps} steps, ±{jitter:g}, {signs}", count, found)
                    if jitter:
                        every += found
    row("all jittered", 0, every)


def cycles(sizes: list[int], reps: int) -> None:
    header("cycles among shifts (every share should stay at the bar or above)")
    every: list[float] = []
    for n in sizes:
        for period in (12, 48, 288):
            for amplitude in (0.5, 1.0, 2.0):
                for shifts in (0, 3, 10):
                    for shape in ("sine", "peak"):
                        seeds = (
                            hash_seed("cycles", n, period, amplitude, shifts, shape, r)
                            for r in range(reps)
                        )
                        count, found = shares_of(
                            cycle_among_shifts(n, period, amplitude, shifts, shape, s)
                            for s in seeds
                        )
                        row(f"n {n}, P {period}, A {amplitude:g}, {shifts} shifts, {shape}",
                            count, found)  # fmt: skip
                        every += found
    row("all", 0, every)


def r_datasets() -> None:
    header("R's seasonal datasets, with 0, 1 and 3 shifts of 4 σ")
    every: list[float] = []
    for name in SEASONAL:
        x = r_series(name)
        lag = 4 if name in ("JohnsonJohnson", "UKgas") else 12
        d = x[lag:] - x[:-lag]
        sigma = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
        t = np.arange(x.size)
        for where in ((), (0.6,), (0.3, 0.55, 0.8)):
            y = x + sum((np.where(t < int(w * x.size), 0.0, 4.0 * sigma) for w in where),
                        np.zeros(x.size))  # fmt: skip
            count, found = shares_of(iter([y]))
            row(f"{name}, {len(where)} shift(s)", count, found)
            every += found
    row("all", 0, every)


def hash_seed(*key: object) -> int:
    """A seed from the cell and replicate (stable across runs and source trees)."""
    text = "/".join(str(k) for k in key)
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", default="2000,20000")
    parser.add_argument("--only", choices=("stairs", "cycles", "r"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.only in (None, "stairs"):
        stairs(sizes, args.reps)
    if args.only in (None, "cycles"):
        cycles(sizes, args.reps)
    if args.only in (None, "r"):
        r_datasets()


if __name__ == "__main__":
    main()
