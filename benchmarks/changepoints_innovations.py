"""Changes as unusually large innovations (Tsay 1988; Chen & Liu 1993): an idea for
random-walk-like short series, measured and not adopted (``docs/changepoints-history.md``,
"What did not work", second round).

The series is put through the default search's skewness-removing transform, filtered by the
noise's AR(1) φ (from first differences, as the search measures it), ``e_t = y_t − φ y_{t−1}``,
and every t tested, with σ of e from its MAD:

* ``io`` — an innovation outlier, ``e_τ / σ``;
* ``ls`` — a level shift in the filtered series, the regression of e on 1 at τ and 1 − φ
  after it.

Either is kept only when it beats an additive outlier (a spike: 1 at τ, −φ at τ + 1) at τ, and
judged against the Gaussian Bonferroni bound ``Φ⁻¹(1 − α / 2n)``. Printed: the largest statistic
of every tuning-half series of the ``short``, ``machine`` and ``nab`` groups, and the share of
series with no change in which it is significant (M/M/1 with the reproduction script's seeds,
Gaussian AR(1)).

Run: ``.venv/bin/python benchmarks/changepoints_innovations.py [--reps 100]``
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import changepoints_accuracy as accuracy
import reproduce_berry_hellerstein as paper

from perfsleuth.changepoints.kernels.search import _centre, _symmetrised
from perfsleuth.stats import robust

ALPHA = 0.05
MIN_SIZE = 5

Statistic = Callable[[np.ndarray], tuple[float, int]]


def _innovations(x: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(e, its σ, φ) of the symmetrised series."""
    y = _symmetrised(_centre(np.asarray(x, dtype=float)[:, None]))[:, 0]
    phi, _ = robust.long_run_scale(y, max_block=1)
    e = y[1:] - phi * y[:-1]  # e[k] is the innovation at t = k + 1
    e = e - np.median(e)
    return e, 1.4826 * float(np.median(np.abs(e))), phi


def _best(stat: np.ndarray, spike: np.ndarray, n: int) -> tuple[float, int]:
    t = np.arange(stat.size) + 1
    allowed = (t >= MIN_SIZE) & (t <= n - MIN_SIZE) & (np.abs(stat) > np.abs(spike))
    score = np.where(allowed, np.abs(stat), 0.0)
    k = int(np.argmax(score))
    return float(score[k]), int(t[k])


def innovation_outlier(x: np.ndarray) -> tuple[float, int]:
    e, sigma, phi = _innovations(x)
    if sigma <= 0:
        return 0.0, 0
    spike = (e - phi * np.r_[e[1:], 0.0]) / math.sqrt(1 + phi * phi)
    return _best(e / sigma, spike / sigma, len(x))


def level_shift(x: np.ndarray) -> tuple[float, int]:
    e, sigma, phi = _innovations(x)
    if sigma <= 0:
        return 0.0, 0
    after = np.r_[np.cumsum(e[::-1])[::-1], 0.0][1:]  # sum of e after each t
    weight = 1 + (1 - phi) ** 2 * (e.size - np.arange(e.size) - 1)
    shift = (e + (1 - phi) * after) / np.sqrt(weight)
    spike = (e - phi * np.r_[e[1:], 0.0]) / math.sqrt(1 + phi * phi)
    return _best(shift / sigma, spike / sigma, len(x))


def significant(stat: Statistic, x: np.ndarray) -> bool:
    return stat(x)[0] > norm.isf(ALPHA / (2 * len(x)))


def ar1(n: int, phi: float, rng: np.random.Generator) -> np.ndarray:
    e = rng.standard_normal(n + 200)
    x = np.zeros_like(e)
    for t in range(1, e.size):
        x[t] = phi * x[t - 1] + e[t]
    return x[200:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100, help="series per null cell")
    args = parser.parse_args()
    tests: dict[str, Statistic] = {"io": innovation_outlier, "ls": level_shift}

    cases, _ = accuracy.corpus(
        accuracy.NAB_DEFAULT, accuracy.STRUCCHANGE_DEFAULT, ["short", "machine", "nab"]
    )
    for case in cases:
        if case.half != "tune":
            continue
        bound = norm.isf(ALPHA / (2 * case.n))
        cells = []
        for name, stat in tests.items():
            value, at = stat(case.values)
            cells.append(f"{name} {value:6.2f} at {at:5d}{' *' if value > bound else '  '}")
        truth = case.points if case.points is not None else case.windows
        print(f"{case.group:7} {case.name[:34]:34} n={case.n:5} bound {bound:.2f}  ", end="")
        print("  ".join(cells), f" annotated {str(truth)[:50]}")

    print(f"\nno change, share significant at α = {ALPHA} ({args.reps} series per cell)")
    for n in (100, 1000):
        for rho in (0.2, 0.5, 0.8):
            hits = {(t, k): 0 for t in tests for k in paper.METRICS}
            for r in range(args.reps):
                sim = paper.run(n, rho, 0.0, paper._seed(1, n, rho, r))
                for k in paper.METRICS:
                    x = np.asarray(getattr(sim, k), dtype=float)
                    for t, stat in tests.items():
                        hits[t, k] += significant(stat, x)
            rates = "  ".join(f"{t} {k} {h / args.reps:.3f}" for (t, k), h in hits.items())
            print(f"M/M/1 N = {n:4} ρ = {rho}: {rates}", flush=True)
    rng = np.random.default_rng(1)
    for n in (30, 100, 1000):
        for phi in (0.0, 0.5, 0.9, 0.98):
            counts = dict.fromkeys(tests, 0)
            for _ in range(args.reps):
                x = ar1(n, phi, rng)
                for t, stat in tests.items():
                    counts[t] += significant(stat, x)
            rates = "  ".join(f"{t} {c / args.reps:.3f}" for t, c in counts.items())
            print(f"AR(1) n = {n:4} φ = {phi}: {rates}", flush=True)


if __name__ == "__main__":
    main()
