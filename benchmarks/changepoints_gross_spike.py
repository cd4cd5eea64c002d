"""One gross reading beside a shift: is the shift still found?

200 readings of N(0, 1) with a step of 4 at 100 and one reading at 30 raised by S (10 to 10⁶
noise σ: a glitch, a sentinel value, a reading in the wrong unit), 40 seeds a size. Prints
how often the step is found (a point within 3 readings of 100), how often the reading is a
spike finding, and the Yeo–Johnson λ the level search's transform fits (median over seeds,
before its clamp to [−1, 3]): a lone reading pulls λ, and a concave transform then shrinks
the step against its noise.

Run: .venv/bin/python benchmarks/changepoints_gross_spike.py [--seeds 40]
"""

from __future__ import annotations

import argparse

import numpy as np

from perfsleuth.changepoints.kernels import search

SIZES = (0.0, 10.0, 100.0, 1e3, 3e3, 1e4, 1e6)


def series(spike: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.r_[np.zeros(100), np.full(100, 4.0)] + rng.standard_normal(200)
    y[30] += spike
    return y


def fitted_lambda(y: np.ndarray) -> float:
    """The transform's λ as ``search._symmetrised`` fits it (before the clamp)."""
    column = search._centre(y[:, None])[:, 0]
    z = (column - np.median(column)) / search._typical_spread(column, 1)
    return search._yeojohnson_lambda(z)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    args = parser.parse_args()
    print(f"| spike (noise σ) | step found (of {args.seeds}) | spike finding | λ fitted |")
    print("|---|---|---|---|")
    for spike in SIZES:
        found = flagged = 0
        lambdas = []
        for seed in range(args.seeds):
            y = series(spike, seed)
            result = search.find_change_points(y)
            found += any(abs(i - 100) <= 3 for i in result.indices)
            flagged += 30 in result.spikes
            lambdas.append(fitted_lambda(y))
        print(f"| {spike:g} | {found} | {flagged} | {np.median(lambdas):.2f} |", flush=True)


if __name__ == "__main__":
    main()
