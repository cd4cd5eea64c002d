"""Outbreaks in counts: are a burst's start and end found alike (issue 17's outbreak series)?

Weekly case counts are Poisson about a baseline of ``base`` cases, with one outbreak at 120 of
200 readings (``default_rng(seed)``, seeds 0..reps−1), searched with the defaults:

* ``flat``: ``peak`` cases a reading for ``length`` readings;
* ``epidemic``: a half sine from the baseline to ``peak`` and back over ``length`` readings;
* ``shoulder``: ``peak`` for ``length`` readings, then a fifth of it for ``length`` more (the
  shape of `ehec_nrw`'s and `outbreak_measles_leer`'s outbreaks: a peak, then an elevated tail).

An edge is found when a point lies within 2 readings of it; other points are counted per
series. The symmetrising transform's λ on such series sits at its floor (−1), and the real
outbreak ends the short corpus misses (`benchmarks/changepoints_short_misses.py`) are the end of
a peak followed by a shoulder.

Run: ``.venv/bin/python benchmarks/changepoints_outbreaks.py [--reps 40]`` (about 5 s)
"""

from __future__ import annotations

import argparse

import numpy as np

from perfsleuth import find_change_points

START, N = 120, 200


def outbreak(base: float, peak: float, length: int, shape: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mu = np.full(N, base)
    if shape == "flat":
        mu[START : START + length] = peak
    elif shape == "epidemic":
        t = np.arange(length)
        mu[START : START + length] = base + (peak - base) * np.sin(np.pi * (t + 0.5) / length)
    else:
        mu[START : START + length] = peak
        mu[START + length : START + 2 * length] = base + (peak - base) / 5
    return rng.poisson(mu).astype(float)


def edges(length: int, shape: str) -> list[int]:
    ends = [START, START + length]
    return [*ends, START + 2 * length] if shape == "shoulder" else ends


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    args = parser.parse_args()
    print("| base | peak | length | shape | found: start / end (/ shoulder's end) | other points |")
    print("|---|---|---|---|---|---|")
    for base in (0.5, 3.0):
        for peak in (20.0, 80.0):
            for length in (8, 16):
                for shape in ("flat", "epidemic", "shoulder"):
                    marks = edges(length, shape)
                    found = np.zeros(len(marks))
                    other = 0
                    for seed in range(args.reps):
                        points = find_change_points(
                            outbreak(base, peak, length, shape, seed)
                        ).indices
                        found += [any(abs(i - e) <= 2 for i in points) for e in marks]
                        other += sum(all(abs(i - e) > 2 for e in marks) for i in points)
                    rates = " / ".join(f"{v / args.reps:.2f}" for v in found)
                    print(
                        f"| {base:g} | {peak:g} | {length} | {shape} | {rates} | "
                        f"{other / args.reps:.2f} |"
                    )


if __name__ == "__main__":
    main()
