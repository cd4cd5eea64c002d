#!/usr/bin/env python3
"""Every stretch the anomaly stage judges, on the recorded corpus: why an anomaly stands or not.

``SegmentDetector._anomalies`` places each stretch the CPU model's segmentation set apart by
its excess over one CPU model of all the normal windows and keeps it when its mean excess
per second (``level``) is ``threshold`` times the spread of that model's misses over every
other stretch as long (``spread``, in sample). This prints, per stretch: where it is, how
long, its level, the spread, their ratio, whether it was kept (or kept but shorter than
``min_anomaly``: a burst, counted in a warning) and whether it overlaps the hog (else a kept
one is a false anomaly) — and, as a diagnostic the detector does not use,
``unseen``: the ratio against the spread of the model's misses on tiles of normal windows
as long, each left out of the fit in turn (how far the model misses windows it has not
seen; tried and removed in issue 18's eighth round, see docs/segments-history.md). Runs whose
normal windows are one span or none print ``-`` there.

Usage::

    .venv/bin/python benchmarks/segments_anomaly_trace.py --half tune
    .venv/bin/python benchmarks/segments_anomaly_trace.py --runs c10 r08
"""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray
from segments_accuracy import CORPUS, analyse_run, configurations

from perfsleuth.segments import detector
from perfsleuth.segments.kernels.excess import excess_stretch, stretch_spread


def unseen_spread(
    design: NDArray[np.float64],
    cpu: NDArray[np.float64],
    spans: list[tuple[int, int]],
    length: int,
    away: tuple[int, int],
) -> float:
    """Scaled MAD of the mean miss per second of tiles of ``length`` normal windows (none in
    ``away``), each under the model fitted on every other normal window; NaN under 2 tiles."""
    rows = np.concatenate([np.arange(a, b) for a, b in spans])
    gram, moment = design[rows].T @ design[rows], design[rows].T @ cpu[rows]
    means = []
    for a, b in spans:
        for t in range(a, b - length + 1, length):
            if t < away[1] and t + length > away[0]:
                continue
            x, y = design[t : t + length], cpu[t : t + length]
            coef, *_ = np.linalg.lstsq(gram - x.T @ x, moment - x.T @ y, rcond=None)
            means.append(float((y - x @ coef).sum() / x[:, 0].sum()))
    if len(means) < 2:
        return math.nan
    tiles = np.asarray(means)
    return float(1.4826 * np.median(np.abs(tiles - np.median(tiles))))


@contextlib.contextmanager
def judged(lines: list[dict[str, Any]]) -> Iterator[None]:
    """Record each stretch ``_anomalies`` judges (the same steps, recomputed beside it)."""
    original = detector.SegmentDetector._anomalies

    def wrapper(
        self: detector.SegmentDetector, data: Any, spans: list[tuple[int, int]]
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        kept, bursts = original(self, data, spans)
        m = len(data.cpu)
        episodes = detector._gaps(spans, m)
        normal = detector._rows(spans) if spans else np.empty(0, dtype=np.intp)
        if len(normal) < 2 * (len(data.types) + 2):
            return kept, bursts
        design = np.column_stack([data.width, data.counts])
        beta, *_ = np.linalg.lstsq(design[normal], data.cpu[normal], rcond=None)
        excess = data.cpu - design @ beta
        rate = excess / data.width
        noise = float(np.std(rate[normal]))
        reach = max(1, math.ceil(self.min_duration / float(np.median(data.width))))
        for i, (a, b) in enumerate(episodes):
            lo = max(a - reach, episodes[i - 1][1] if i else 0)
            hi = min(b + reach, episodes[i + 1][0] if i + 1 < len(episodes) else m)
            s, e = excess_stretch(rate, noise, lo, hi)
            if e <= s:
                continue
            level = float(excess[s:e].sum() / data.width[s:e].sum())
            rest = np.r_[0:s, e:m]
            spread = stretch_spread(excess[rest], data.width[rest], e - s)
            unseen = unseen_spread(design, data.cpu, spans, e - s, (s, e)) if spans else math.nan
            lines.append(
                dict(
                    start=data.when(s),
                    end=data.end(e - 1),
                    seconds=data.seconds(s, e),
                    level=level,
                    ratio=level / spread if spread > 0 else math.nan,
                    unseen=level / unseen if unseen > 0 else math.nan,
                    kept=any(x <= s and e <= y for x, y in kept),
                    burst=any(x <= s and e <= y for x, y in bursts),
                )
            )
        return kept, bursts

    detector.SegmentDetector._anomalies = wrapper  # type: ignore[method-assign]
    try:
        yield
    finally:
        detector.SegmentDetector._anomalies = original  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=("tune", "held"))
    parser.add_argument("--runs", nargs="*", default=[])
    args = parser.parse_args(argv)
    for run, window_s, cpu, truth in configurations(CORPUS, args.half, args.runs):
        lines: list[dict[str, Any]] = []
        with judged(lines):
            analyse_run(CORPUS / run, window_s, cpu)
        for x in lines:
            hog = truth.hog is not None and x["start"] < truth.hog[1] and x["end"] > truth.hog[0]
            print(
                f"{run:<4} {window_s}s {cpu:<3} {x['start']:%H:%M:%S} "
                f"{x['seconds']:>5.0f} s "
                f"level {x['level']:+.3f} ratio {x['ratio']:6.1f} unseen "
                f"{x['unseen']:6.1f} "
                f"{'kept' if x['kept'] else 'a burst' if x['burst'] else 'not kept'} "
                f"{'hog' if hog else 'away from the hog'}".replace(" nan", "   -")
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
