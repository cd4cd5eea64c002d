"""Spikes judged against their own segment's noise: how short a segment may be, and what it shows.

Two parts:

* ``short`` — clean noise (Gaussian, lognormal σ = 1, exponential) of n readings judged on a
  scale fitted to those n readings alone (``spikes._scaled_distance``): the share of segments
  with a false spike (> 5 robust σ), and the share of two +10 σ spikes found in n Gaussian
  readings, for n from 10 to 100 (seeded, ``--reps`` segments each);
* ``length`` — with ``_SPIKE_OWN_SCALE`` (the readings a segment needs for a spread of its
  own) set to each of ``--lengths``: the spike findings of the demo's metric series
  (``perfsleuth demo``'s M/M/1 services and the shop), and the NAB windows hit with the
  spike findings counted (``changepoints_accuracy.py``'s corpus and scoring).

Run: ``.venv/bin/python benchmarks/changepoints_spike_segments.py [--reps 2000]
[--lengths 10,25,50]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import changepoints_accuracy as accuracy

from perfsleuth.changepoints.kernels import search, spikes

LENGTHS = (10, 15, 20, 25, 30, 40, 50, 100)


def short(reps: int) -> None:
    rng = np.random.default_rng(1)
    noises = {
        "gaussian": lambda n: rng.normal(size=n),
        "lognormal": lambda n: rng.lognormal(sigma=1.0, size=n),
        "exponential": lambda n: rng.exponential(size=n),
    }
    print("## clean segments with a false spike, on their own scale")
    for name, draw in noises.items():
        shares = []
        for n in LENGTHS:
            hits = sum(bool((spikes._scaled_distance(draw(n)) > 5.0).any()) for _ in range(reps))
            shares.append(f"{n}: {hits / reps:.3f}")
        print(f"  {name:12s}", ", ".join(shares))
    print("## two +10 σ spikes in Gaussian noise, share found on the segment's own scale")
    found = []
    for n in LENGTHS:
        hit = 0
        for _ in range(reps // 4):
            x = rng.normal(size=n)
            at = rng.choice(n, 2, replace=False)
            x[at] += 10.0 * np.std(x)
            hit += int((spikes._scaled_distance(x)[at] > 5.0).sum())
        found.append(f"{n}: {hit / (2 * (reps // 4)):.3f}")
    print("  ", ", ".join(found))


def length(lengths: list[int]) -> None:
    from perfsleuth.demo import demo_data

    metric = demo_data().metric
    cases, _ = accuracy.corpus(accuracy.NAB_DEFAULT, accuracy.STRUCCHANGE_DEFAULT, ["nab"])
    saved = spikes._SPIKE_OWN_SCALE
    try:
        for own in lengths:
            spikes._SPIKE_OWN_SCALE = own
            demo = sum(
                len(search.find_change_points(g["value"].to_numpy()).notable_spikes())
                for _, g in metric.groupby(["entity", "metric"])
            )
            halves: dict[str, list[int]] = {}
            for case in cases:
                r = search.find_change_points(case.values)
                shown = [*r.indices, *(s.index for s in r.notable_spikes())]
                windows = case.windows or []
                hit = sum(any(a <= i <= b for i in shown) for a, b in windows)
                tally = halves.setdefault(case.half, [0, 0, 0])
                tally[0] += hit
                tally[1] += len(windows)
                tally[2] += len(shown)
            nab = ", ".join(f"{h} {t[0]}/{t[1]} with {t[2]}" for h, t in halves.items())
            print(f"  own spread from {own:3d} readings: demo spike findings {demo}; NAB {nab}")
    finally:
        spikes._SPIKE_OWN_SCALE = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--lengths", default="10,25,50")
    args = parser.parse_args()
    short(args.reps)
    print("## the length a segment needs for a spread of its own")
    length([int(v) for v in args.lengths.split(",")])


if __name__ == "__main__":
    main()
