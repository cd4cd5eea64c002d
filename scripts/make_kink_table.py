"""The critical values of the kink test (``perfsleuth.changepoints.kernels.kinks``).

For each segment length n and φ ∈ {0, .3, .5, .7, .8, .9}: simulate stationary Gaussian AR(1)
series (no change of slope), take the best kink of each (its own line fitted, at least
``kinks.MIN_SIDE`` readings either side) and its z² in AR(1) long-run units (plug-in φ from
the residuals about the kinked line, as the detector computes it), and the upper quantiles at
the tail probabilities ``kinks.TABLE_P``. The table is the largest quantile over φ, each row
then raised to the largest of the rows for longer segments (simulation noise must not make a
shorter segment's bar lower). Prints the rows to paste into ``kinks._SIMULATED`` and, with
``--size``, the size of the shipped test at α = .05 on fresh series.

With ``--steps`` the same for the best *step* of a straight line (its own line fitted, the
step's first index at least ``kinks.MIN_SIDE`` readings from either end):
``perfsleuth.changepoints.kernels.trend_steps``' table and test. With ``--breaks``, for the
best break of a straight line into two lines, each its own level and slope (Perron's model C),
against the best broken line of one kink (``trend_steps.break_z2``, which this script calls):
``trend_steps``' ``BREAK_TABLE_Z2``.

Run: ``machine heavy .venv/bin/python scripts/make_kink_table.py [--reps 20000] [--size]
[--steps | --breaks]`` (about 40 s of CPU; ``--size`` 20 s more; ``--breaks`` about 2 min).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np
from scipy.signal import lfilter

from perfsleuth.changepoints.kernels import kinks, trend_steps

PHIS = (0.0, 0.3, 0.5, 0.7, 0.8, 0.9)
SEED = 20261128


Statistic = Callable[[np.ndarray, int], np.ndarray]


def _suffix(a: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a)
    out[:, :-1] = np.cumsum(a[:, ::-1], axis=1)[:, ::-1][:, 1:]
    return out


def kink_z2(y: np.ndarray, side: int) -> np.ndarray:
    """``kinks.judge``'s z² for each row of ``y`` (vectorised; the same formulas)."""
    reps, n = y.shape
    t = np.arange(n, dtype=np.float64)
    tm = t.mean()
    tc = t - tm
    stt = float(tc @ tc)
    resid = y - y.mean(axis=1, keepdims=True) - np.outer(y @ tc / stt, tc)
    num = _suffix(resid * t) - t * _suffix(resid)
    after = n - 1 - t
    sum_h = after * (after + 1) / 2
    sum_hh = after * (after + 1) * (2 * after + 1) / 6
    sum_htc = _suffix((t * t)[None, :])[0] - t * _suffix(t[None, :])[0] - tm * sum_h
    den = sum_hh - sum_h**2 / n - sum_htc**2 / stt
    positions = np.arange(side, n - side)
    j = positions[np.argmax(num[:, positions] ** 2 / den[positions], axis=1)]
    rows = np.arange(reps)
    beta = num[rows, j] / den[j]
    h = np.maximum(t[None, :] - j[:, None], 0.0)
    hc = h - h.mean(axis=1, keepdims=True) - np.outer(h @ tc / stt, tc)
    return _long_run_z2(resid - beta[:, None] * hc, num[rows, j] ** 2 / den[j])


def _long_run_z2(r: np.ndarray, explained: np.ndarray) -> np.ndarray:
    """Each row's explained sum of squares over the AR(1) long-run variance of its residuals
    ``r`` (``kinks.long_run``, vectorised)."""
    n = r.shape[1]
    rr = np.einsum("ij,ij->i", r, r)
    phi = np.clip(np.einsum("ij,ij->i", r[:, 1:], r[:, :-1]) / np.where(rr > 0, rr, 1), 0, 0.99)
    variance: np.ndarray = rr / (n - 3) * (1 + phi) / (1 - phi)
    return explained / variance


def step_z2(y: np.ndarray, side: int) -> np.ndarray:
    """``trend_steps.step_z2``'s z² for each row of ``y`` (vectorised; the same formulas)."""
    reps, n = y.shape
    t = np.arange(n, dtype=np.float64)
    tc = t - t.mean()
    stt = float(tc @ tc)
    resid = y - y.mean(axis=1, keepdims=True) - np.outer(y @ tc / stt, tc)
    num = np.cumsum(resid[:, ::-1], axis=1)[:, ::-1]
    above_tc = np.cumsum(tc[::-1])[::-1]
    count = n - t
    den = count - count**2 / n - above_tc**2 / stt
    positions = np.arange(side, n - side + 1)
    k = positions[np.argmax(num[:, positions] ** 2 / den[positions], axis=1)]
    rows = np.arange(reps)
    beta = num[rows, k] / den[k]
    s = (t[None, :] >= k[:, None]).astype(np.float64)
    sc = s - s.mean(axis=1, keepdims=True) - np.outer(s @ tc / stt, tc)
    return _long_run_z2(resid - beta[:, None] * sc, num[rows, k] ** 2 / den[k])


def ar1(rng: np.random.Generator, reps: int, n: int, phi: float) -> np.ndarray:
    e = rng.standard_normal((reps, n))
    e[:, 0] /= math.sqrt(1 - phi * phi)
    return lfilter([1.0], [1.0, -phi], e, axis=1)


def simulate(
    rng: np.random.Generator, n: int, phi: float, reps: int, statistic: Statistic = kink_z2
) -> np.ndarray:
    chunks = [statistic(ar1(rng, min(2000, reps - i), n, phi), kinks.MIN_SIDE)
              for i in range(0, reps, 2000)]  # fmt: skip
    return np.concatenate(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20_000)
    parser.add_argument("--size", action="store_true", help="the shipped test's size at α = .05")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--steps", action="store_true", help="the best step's table")
    which.add_argument("--breaks", action="store_true", help="the best break's table")
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    statistic, bars, what = (
        (step_z2, trend_steps.critical_z2, "step")
        if args.steps
        else (trend_steps.break_z2, trend_steps.critical_break_z2, "break")
        if args.breaks
        else (kink_z2, kinks.critical_z2, "kink")
    )
    if args.size:
        print(f"size at α = .05 (share of fresh AR(1) series whose best {what} passes the test)")
        print("n     " + "  ".join(f"φ={p:<4}" for p in (*PHIS, 0.95, 1.0)))
        for n in (40, 120, 400):
            bar = bars(n, 0.05)
            cells = []
            for phi in (*PHIS, 0.95, 1.0):
                if phi < 1:
                    z2 = simulate(rng, n, phi, 4000, statistic)
                else:  # a random walk
                    z2 = statistic(
                        np.cumsum(rng.standard_normal((4000, n)), axis=1), kinks.MIN_SIDE
                    )
                cells.append(f"{np.mean(z2 > bar):.4f}")
            print(f"{n:<5} " + "  ".join(cells))
        return
    top = []
    for n in kinks.TABLE_N:
        reps = args.reps if n <= 1000 else args.reps // 4
        quantiles = [np.quantile(simulate(rng, n, phi, reps, statistic),
                                 [1 - p for p in kinks.TABLE_P])
                     for phi in PHIS]  # fmt: skip
        top.append(np.max(quantiles, axis=0))
    table = np.maximum.accumulate(np.array(top)[::-1], axis=0)[::-1]
    for n, row in zip(kinks.TABLE_N, table, strict=True):
        print(f"    ({', '.join(f'{v:.2f}' for v in row)}),  # n = {n}")


if __name__ == "__main__":
    main()
