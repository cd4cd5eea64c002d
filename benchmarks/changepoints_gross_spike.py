"""One gross reading beside a shift: is the shift still found?

200 readings of N(0, 1) with a step of 4 at 100 and one reading at 30 raised by S (10 to 10⁶
noise σ: a glitch, a sentinel value, a reading in the wrong unit), 40 seeds a size. Prints
how often the step is found (a point within 3 readings of 100), how often the reading is a
spike finding, and the Yeo–Johnson λ the level search's transform fits (median over seeds,
before its clamp to [−1, 3]): a lone reading pulls λ, and a concave transform then shrinks
the step against its noise.

``--zeros`` instead: n readings of 1,000 ± 10 with a step of +100 (10 σ, 10%) at n/2 and
one reading recorded as 0 (a dropped sample, a counter's first interval: −100 σ) first,
second, last or anywhere, or three anywhere, for n = 60, 100, 300, 500. Prints how often
the step is found (within 2 readings) and the points found elsewhere: a gross reading at an
end tilts a line through the series, which then competes with the step.

Run: .venv/bin/python benchmarks/changepoints_gross_spike.py [--seeds 40] [--zeros]
"""

from __future__ import annotations

import argparse

import numpy as np

from perfsleuth.changepoints.kernels import search, statistic

SIZES = (0.0, 10.0, 100.0, 1e3, 3e3, 1e4, 1e6)


def series(spike: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.r_[np.zeros(100), np.full(100, 4.0)] + rng.standard_normal(200)
    y[30] += spike
    return y


def fitted_lambda(y: np.ndarray) -> float:
    """The transform's λ as ``statistic._symmetrised`` fits it (before the clamp)."""
    column = statistic._centre(y[:, None])[:, 0]
    z = (column - np.median(column)) / statistic._typical_spread(column, 1)
    return statistic._yeojohnson_lambda(z)


def zero_reading(n: int, where: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = 1000.0 + np.where(np.arange(n) < n // 2, 0.0, 100.0) + 10.0 * rng.standard_normal(n)
    if where == "three anywhere":
        y[rng.choice(n, 3, replace=False)] = 0.0
    else:
        y[{"first": 0, "second": 1, "last": n - 1, "anywhere": int(rng.integers(n))}[where]] = 0.0
    return y


def zeros(seeds: int) -> None:
    print(f"| n | the 0 | step found (of {seeds}) | other points |")
    print("|---|---|---|---|")
    for n in (60, 100, 300, 500):
        for where in ("first", "second", "last", "anywhere", "three anywhere"):
            found = other = 0
            for seed in range(seeds):
                indices = search.find_change_points(zero_reading(n, where, seed)).indices
                found += any(abs(i - n // 2) <= 2 for i in indices)
                other += sum(abs(i - n // 2) > 2 for i in indices)
            print(f"| {n} | {where} | {found} | {other} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--zeros", action="store_true", help="a reading of 0 beside a step")
    args = parser.parse_args()
    if args.zeros:
        zeros(args.seeds)
        return
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
