"""Why the speed benchmark's 10⁶ × 10-shift series fragments into ~1,100 change points (issue 17).

For ``benchmarks/changepoints.py``'s ``real_shaped(n, k, seed=n + k)`` series this prints, per
size × shifts: the points the defaults find and their recall; how many of the segments they cut
are at most 10 observations long and hold a single spike (> 5 robust σ on the log scale, about a
running median one period wide); the spread the skewness-removing transform standardises by (the
standard deviation, against the MAD) and the Yeo–Johnson λ fitted in those units (before the clamp
to [−1, 3]); the largest value against the median; the points found with the two largest values
replaced by their neighbourhood's median; and the cycle's autocorrelation contrast at its period
(what ``detect_period`` needs to be ≥ .3) on the log scale, with and without the true levels.

``--unit`` runs the search with another unit for the transform's λ fit: ``library`` (the
library's own: the median of the standard deviations of the interleaved subsamples λ is fitted
on), ``std`` (the plain standard deviation of the column: the library's before issue 17's
fragmentation fix), and three tried and dropped: ``mad`` (robust scale of the column),
``sample`` (the standard deviation of the one subsample λ is fitted on), ``winsorised`` (the
standard deviation with 0.1% of each tail winsorised).

``--spiky R`` instead runs R seeded series of 40,000 points without a cycle, trend or
Student-t tails (AR(1) Gaussian noise, φ = .6, one 4 σ step at mid-series, 0.2% spikes of
15–40 σ, exponentiated as above), each as drawn and with two values set to 10⁶ times the median,
and prints the points found in all and whether the step is found (within 5 observations).

Run: .venv/bin/python benchmarks/changepoints_fragments.py [--sizes N,..] [--shifts K,..]
[--unit library|std|mad|sample|winsorised] [--spiky R]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import itertools  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from kernel_patch import bindings  # noqa: E402
from scipy.ndimage import median_filter  # noqa: E402
from scipy.signal import lfilter  # noqa: E402
from scipy.stats import yeojohnson_normmax  # noqa: E402

from changepoints import PERIOD, real_shaped, recall  # noqa: E402
from perfsleuth.changepoints.kernels import search, statistic  # noqa: E402
from perfsleuth.stats import robust  # noqa: E402

FloatArray = npt.NDArray[np.float64]


def _winsorised_std(column: FloatArray) -> float:
    tail = column.size // 1000
    if not tail:
        return float(np.std(column))
    order = np.partition(column, (tail, column.size - 1 - tail))
    return float(np.std(np.clip(column, order[tail], order[column.size - 1 - tail])))


UNITS: dict[str, Callable[[FloatArray, int], float]] = {
    "std": lambda column, step: float(np.std(column)),
    "mad": lambda column, step: robust.robust_scale(column),
    "sample": lambda column, step: float(np.std(column[::step])),
    "winsorised": lambda column, step: _winsorised_std(column),
}


def single_spike_segments(x: FloatArray, indices: tuple[int, ...]) -> tuple[int, int]:
    """(segments ≤ 10 long, those holding exactly one observation > 5 robust σ on the log
    scale above a running median one period wide)."""
    lx = np.log(x)
    resid = lx - median_filter(lx, PERIOD + 1)
    spike = resid > 5.0 * robust.robust_scale(resid)
    bounds = [0, *indices, x.size]
    short = [(a, b) for a, b in itertools.pairwise(bounds) if b - a <= 10]
    return len(short), sum(int(spike[a:b].sum()) == 1 for a, b in short)


def cycle_contrast(lx: FloatArray) -> float:
    acf = robust._autocorrelation(lx - lx.mean(), 2 * PERIOD)
    half = PERIOD // 2
    return float(acf[PERIOD] - 0.5 * (acf[PERIOD - half] + acf[PERIOD + half]))


def spiky(seed: int, n: int = 40_000) -> tuple[FloatArray, FloatArray]:
    """(series, the same with two values set to 10⁶ times its median); the step is at n/2."""
    rng = np.random.default_rng(seed)
    noise = np.asarray(lfilter([1.0], [1.0, -0.6], rng.standard_normal(n)), dtype=np.float64)
    x = noise / float(np.std(noise))
    x[n // 2 :] += 4.0
    spikes = rng.random(n) < 0.002
    x[spikes] += rng.uniform(15.0, 40.0, int(spikes.sum()))
    plain = 20.0 * np.exp(0.15 * x)
    absurd = plain.copy()
    absurd[[n // 3, 2 * n // 3]] = 1e6 * np.median(plain)
    return plain, absurd


def spiky_summary(reps: int) -> None:
    for label, which in (("as drawn", 0), ("two absurd values", 1)):
        counts, hits = [], 0
        for seed in range(reps):
            found = search.find_change_points(spiky(seed)[which]).indices
            counts.append(len(found))
            hits += any(abs(i - 20_000) <= 5 for i in found)
        print(
            f"spiky series, {label}: {sum(counts)} points in {reps} series (median "
            f"{float(np.median(counts)):.0f}), the step found in {hits}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--shifts", default="2,10,50")
    parser.add_argument("--unit", default="library", choices=["library", *sorted(UNITS)])
    parser.add_argument("--spiky", type=int, default=0, help="R spiky series instead")
    args = parser.parse_args()
    if args.unit != "library":
        # the library's transform with the λ fit's unit replaced
        replaced = functools.partial(statistic._symmetrised, unit=UNITS[args.unit])
        for module in bindings("_symmetrised"):  # every kernel module that calls it
            module._symmetrised = replaced  # type: ignore[attr-defined]
    if args.spiky:
        spiky_summary(args.spiky)
        return
    for n in (int(v) for v in args.sizes.split(",")):
        for k in (int(v) for v in args.shifts.split(",")):
            x, truth = real_shaped(n, k, seed=n + k)
            found = search.find_change_points(x).indices
            short, single = single_spike_segments(x, found)
            c = x - x.mean()
            step = max(1, n // statistic._SYMMETRISE_FIT_POINTS)
            std, mad = float(np.std(c)), robust.robust_scale(c)
            lam = {
                name: float(yeojohnson_normmax(((c - np.median(c)) / s)[::step]))
                for name, s in (("std", std), ("mad", mad))
            }
            top = np.argsort(x)[-2:]
            cleaned = x.copy()
            for i in top:
                cleaned[i] = np.median(x[max(0, i - 50) : i + 51])
            cleaned_found = search.find_change_points(cleaned).indices
            lx = np.log(x)
            cuts = [0, *truth, n]
            levels = np.concatenate(
                [np.full(b - a, np.median(lx[a:b])) for a, b in itertools.pairwise(cuts)]
            )
            print(
                f"n={n:.0e} shifts={k} unit={args.unit}: found {len(found)} "
                f"(recall {recall(truth, list(found), n):.2f}); segments ≤10: {short}, "
                f"one spike each: {single}; std/MAD {std / mad:.1f}, λ fitted in std units "
                f"{lam['std']:.2f}, in MAD units {lam['mad']:.2f}; max/median "
                f"{x.max() / np.median(x):.3g}; two largest replaced: {len(cleaned_found)} "
                f"(recall {recall(truth, list(cleaned_found), n):.2f}); cycle contrast "
                f"{cycle_contrast(lx):.3f}, without the levels {cycle_contrast(lx - levels):.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
