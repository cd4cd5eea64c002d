"""LAR fit of the transaction-mix model against statsmodels QuantReg(q=0.5) (DESIGN §4).

Targets: 9,130 windows × 96 types ≤ 1 s (Kelly's FT data set: 31.7 days of 5-minute windows) and
100,000 × 100 ≤ 20 s; faster than QuantReg. Both solve the same problem (median regression with
no intercept is LAR), so their NAE must agree; ours is an exact LP optimum, QuantReg's an
iteratively reweighted least-squares approximation.

Run: .venv/bin/python benchmarks/mix_model.py [--quantreg-budget SECONDS]

BLAS is pinned to one thread unless OPENBLAS_NUM_THREADS / OMP_NUM_THREADS are set: HiGHS is
single-threaded, QuantReg is BLAS-bound, and on a small shared machine threaded BLAS can be
many times slower than one thread (oversubscription), which would flatter us.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from perfsleuth.workload.kernels import fit_mix_model  # noqa: E402

TARGETS = {(9_130, 96): 1.0, (100_000, 100): 20.0}


def workload(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts with a realistic spread of popularity (some types rare), a daily drift in mix and
    load, per-type service times from 1 ms to ~1 s, and multiplicative noise with a few
    anomalous windows (3× slower), like a month of 5-minute windows of a real service."""
    rng = np.random.default_rng(seed)
    popularity = np.exp(rng.normal(1.0, 1.5, p))
    phase = rng.uniform(0, 2 * np.pi, p)
    day = 2 * np.pi * np.arange(n)[:, None] / 288
    load = 0.55 + 0.45 * np.sin(day)
    mix = np.exp(0.8 * np.sin(day + phase) + rng.normal(0, 0.3, (n, p)))
    counts = rng.poisson(popularity * mix * load).astype(np.float64)
    service = np.exp(rng.uniform(np.log(1e-3), np.log(1.0), p))
    noise = np.exp(rng.normal(0.0, 0.15, n))
    noise[rng.random(n) < 0.01] *= 3.0
    return counts, (counts @ service) * noise


def time_lar(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    began = time.perf_counter()
    fit = fit_mix_model(x, y, method="lar")
    return time.perf_counter() - began, fit.nae


def time_quantreg(x: np.ndarray, y: np.ndarray) -> tuple[float, float, str]:
    from statsmodels.regression.quantile_regression import QuantReg

    began = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = QuantReg(y, x).fit(q=0.5)
    elapsed = time.perf_counter() - began
    nae = float(np.abs(y - x @ result.params).sum() / y.sum())
    notes = sorted({w.category.__name__ for w in caught})
    return elapsed, nae, ", ".join(notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quantreg-budget",
        type=float,
        default=120.0,
        help="skip QuantReg when its predicted time exceeds this many seconds (default 120)",
    )
    args = parser.parse_args()
    print(f"BLAS threads: OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    warm_x, warm_y = workload(500, 10, 0)
    fit_mix_model(warm_x, warm_y)  # imports and first HiGHS call out of the timing
    per_unit: float | None = None  # QuantReg seconds per n·p² (its IRLS cost), from the first size
    for (n, p), target in TARGETS.items():
        x, y = workload(n, p, seed=n + p)
        lar_s, lar_nae = time_lar(x, y)
        ols_nae = fit_mix_model(x, y, method="ols").nae
        verdict = "ok" if lar_s <= target else "OVER TARGET"
        print(
            f"LAR {n:,} × {p}: {lar_s:.3f} s (target ≤ {target:g} s: {verdict}); "
            f"NAE {lar_nae:.4f} (OLS {ols_nae:.4f})"
        )
        predicted = per_unit * n * p * p if per_unit is not None else None
        if predicted is not None and predicted > args.quantreg_budget:
            print(
                f"  QuantReg(q=0.5) {n:,} × {p}: skipped: predicted {predicted:.0f} s from the "
                f"smaller run (IRLS cost ∝ n·p²) exceeds the {args.quantreg_budget:g} s budget; "
                f"LAR is ≥ {predicted / lar_s:.0f}× faster by that estimate"
            )
            continue
        qr_s, qr_nae, notes = time_quantreg(x, y)
        per_unit = qr_s / (n * p * p)
        excess = (qr_nae - lar_nae) / lar_nae
        print(
            f"  QuantReg(q=0.5) {n:,} × {p}: {qr_s:.3f} s; NAE {qr_nae:.4f} "
            f"(relative to LAR's: {excess:+.1e}{'; ' + notes if notes else ''}); "
            f"LAR is {qr_s / lar_s:.1f}× faster"
        )


if __name__ == "__main__":
    main()
