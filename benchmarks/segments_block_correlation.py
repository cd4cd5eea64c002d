#!/usr/bin/env python3
"""How long a shock to a type's own latency lasts: the autocorrelation of the block residuals
of the own-latency step test, pooled over the recorded corpus (docs/segments-history.md, fifth
round).

For every configuration of ``benchmarks/data/segments/`` (as :mod:`segments_accuracy` reads
it) the detector runs as usual; each own-latency step test
(:func:`perfsleuth.segments.kernels.ownstep._step_test`) records its weighted block residuals
(20 s blocks, the step and the lasting check fitted). Their autocorrelation at lags 1–3, pooled
over the tests of a group and half, says how many neighbouring blocks share a shock: the
step's error (:func:`~perfsleuth.segments.kernels.ownstep._wls`) assumes a Bartlett kernel of
``_SHARED_LAGS`` lags.

Usage::

    .venv/bin/python benchmarks/segments_block_correlation.py [--half tune]
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
from segments_accuracy import CORPUS, CPUS, WINDOWS, analyse_run, halves

from perfsleuth.segments.kernels import ownstep

LAGS = (1, 2, 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=("tune", "held"))
    args = parser.parse_args(argv)
    sums: dict[tuple[str, str], np.ndarray] = defaultdict(lambda: np.zeros(len(LAGS) + 1))
    counts: dict[tuple[str, str], int] = defaultdict(int)
    key: tuple[str, str] = ("", "")
    original = ownstep._wls

    def recorded(xs: np.ndarray, ys: np.ndarray, *rest: object) -> object:
        coef, *_ = np.linalg.lstsq(xs, ys, rcond=None)
        e = ys - xs @ coef
        if xs.shape[1] == 3 and len(e) > max(LAGS) + 4 and float(e @ e) > 0:
            # each test's residuals standardised, so that every test counts alike
            e = e / np.sqrt(float(e @ e) / len(e))
            # residuals of a fit are correlated negatively even when the errors are not: the
            # lag products expected of independent errors, tr(M S_lag) / tr(M), are subtracted
            maker = np.eye(len(e)) - xs @ np.linalg.pinv(xs)
            trace = float(np.trace(maker))
            row = [1.0] + [
                float(e[lag:] @ e[:-lag]) / len(e) - float(np.trace(maker[lag:, :-lag])) / trace
                for lag in LAGS
            ]
            sums[key] += np.array(row)
            counts[key] += 1
        return original(xs, ys, *rest)

    ownstep._wls = recorded  # type: ignore[assignment]
    try:
        for run, (group, half) in sorted(halves(CORPUS).items()):
            if args.half and half != args.half:
                continue
            key = (group, half)
            for window_s in WINDOWS:
                for cpu in CPUS:
                    analyse_run(CORPUS / run, window_s, cpu)
    finally:
        ownstep._wls = original  # type: ignore[assignment]
    print("the block residuals' autocorrelation, less what a fit to independent errors gives")
    print("group   half  tests  " + "  ".join(f"lag {lag}" for lag in LAGS))
    for (group, half), total in sorted(sums.items()):
        n = counts[(group, half)]
        acf = total[1:] / total[0]
        print(f"{group:7} {half:5} {n:6}  " + "  ".join(f"{a:+.2f} " for a in acf))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
