#!/usr/bin/env python3
"""Does the CPU corroborate a step at the end of the data? The changed type's CPU cost shift.

For every own-latency search the detector makes over windows that reach the end of the data,
each lasting upward step with under twice ``min_duration`` after it (the steps the
end-of-data bars judge) is printed with the CPU cost shift of **its type alone** at its split:
one least-squares model of the searched windows, ``cpu = C0·L + Σ C_i·N_i + [after]·D·N_j``
(and, in the second column, with the idle overhead free to shift too, ``+ [after]·D0·L``),
the shift's t from a Newey–West error (Bartlett, one signature block of lags). A type made
twice as heavy should cost more CPU per transaction after its change.

Usage::

    .venv/bin/python benchmarks/segments_end_cpu.py --runs c09 c11
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from segments_accuracy import CORPUS, analyse_run, configurations
from segments_own_phases import application_steps

from perfsleuth.datasets.segments import RunTruth
from perfsleuth.segments import detector
from perfsleuth.segments.kernels.ownstep import OwnStep


def type_shift(
    data: Any, part: NDArray[np.intp], split: int, name: str, *, level: bool
) -> tuple[float, float, float]:
    """(cost before, shift after, t) of type ``name``'s CPU per transaction at ``split``."""
    x, y, width = data.counts[part], data.cpu[part], data.width[part]
    late = (np.arange(len(part)) >= split).astype(np.float64)
    j = list(data.types).index(name)
    columns = [width, *x.T] + ([width * late] if level else []) + [x[:, j] * late]
    z = np.column_stack(columns)
    scale = np.sqrt(np.mean(z * z, axis=0))
    scale[scale == 0] = 1.0
    z = z / scale
    n, q = z.shape
    beta, *_ = np.linalg.lstsq(z, y, rcond=None)
    score = z * (y - z @ beta)[:, None]
    meat = score.T @ score
    lag = detector._block(data)
    for k in range(1, min(lag, n - 1) + 1):
        cross = score[k:].T @ score[:-k]
        meat += (1 - k / (lag + 1)) * (cross + cross.T)
    bread = np.linalg.pinv(z.T @ z)
    cov = bread @ meat @ bread * n / (n - q)
    shift = beta[-1] / scale[-1]
    return beta[1 + j] / scale[1 + j], shift, shift / (math.sqrt(cov[-1, -1]) / scale[-1])


def traced(run: str, window_s: int, cpu: str, truth: RunTruth) -> list[str]:
    lines: list[str] = []
    change = np.datetime64(truth.change_at.replace(tzinfo=None), "ns")

    def observe(
        self: detector.SegmentDetector,
        data: Any,
        part: NDArray[np.intp],
        least: int,
        at_end: bool,
        steps: list[OwnStep],
        found: Any,
    ) -> None:
        if not at_end:
            return
        n = len(part)
        for s in steps:
            if n - s.index >= 2 * least or s.shift <= 0 or not s.lasting:
                continue
            off = float((data.start[part[s.index]] - change) / np.timedelta64(1, "s"))
            real = s.name in truth.changed and abs(off) <= 10
            cost, shift, t = type_shift(data, part, s.index, s.name, level=False)
            _, shift_l, t_l = type_shift(data, part, s.index, s.name, level=True)
            lines.append(
                f"{run:<4} {window_s}s {cpu:<3} {s.name} ({off:+5.0f} s) latency ratio "
                f"{s.ratio:.2f} t {s.score:+5.2f} {'REAL ' if real else 'other'} | CPU cost "
                f"{cost * 1e3:+6.2f} ms, shift {shift * 1e3:+6.2f} ms (t {t:+5.2f}); with the "
                f"idle overhead free {shift_l * 1e3:+6.2f} ms (t {t_l:+5.2f})"
            )

    with application_steps(observe):
        analyse_run(CORPUS / run, window_s, cpu)
    return list(dict.fromkeys(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=("tune", "held"))
    parser.add_argument("--runs", nargs="*", default=[])
    args = parser.parse_args(argv)
    for run, window_s, cpu, truth in configurations(CORPUS, args.half, args.runs):
        for line in traced(run, window_s, cpu, truth):
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
