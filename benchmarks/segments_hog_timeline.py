#!/usr/bin/env python3
"""Where a hog is in the CPU given, 5 s at a time: the `all` series against the model's misses.

For each `all` configuration of the named runs (default: the heavy tuned half), one CPU model
(``cpu ~ width + counts``) is fitted on the normal windows the detector's segmentation left
(as ``SegmentDetector._anomalies`` fits it), and per 5 s, from 90 s before the hog to 150 s
after its start, it prints: the time from the hog's start, ``|`` where a phase (a new mix and
rate) starts, ``H`` under the hog, ``E`` in a stretch the segmentation set apart, ``K`` in
a reported anomaly; the CPU of `all` and of the database alone (`db`), their difference
(``oth``: pgbench and the hog), and the model's miss per second (``ex``, cores). It shows
whether the `all` CPU rose when the hog started or the database gave the hog its CPU, and
how far the model misses each mix beside it.

Usage::

    .venv/bin/python benchmarks/segments_hog_timeline.py
    .venv/bin/python benchmarks/segments_hog_timeline.py --runs r08 r09 --windows 1
"""

from __future__ import annotations

import argparse
import json
import logging
from typing import Any

import numpy as np
from segments_accuracy import CORPUS, analyse_run, configurations
from segments_small_hog import load

from perfsleuth.segments import detector


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="*", default=None)
    parser.add_argument("--windows", nargs="*", type=int, default=[1, 5])
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    runs = args.runs or json.loads((CORPUS / "halves.json").read_text())["heavy"]["tune"]
    seen: dict[str, Any] = {}
    judge = detector.SegmentDetector._anomalies

    def spy(self: detector.SegmentDetector, data: Any, spans: list[tuple[int, int]]) -> Any:
        seen["spans"] = list(spans)
        seen["out"] = judge(self, data, spans)
        return seen["out"]

    detector.SegmentDetector._anomalies = spy  # type: ignore[method-assign]
    for run, window_s, cpu, truth in configurations(CORPUS, None, runs):
        if cpu != "all" or window_s not in args.windows or truth.hog is None:
            continue
        data, db = load(run, window_s, "all"), load(run, window_s, "db")
        analyse_run(CORPUS / run, window_s, cpu)
        spans, (kept, _) = seen["spans"], seen["out"]
        t = data.start.astype("datetime64[ns]").astype(np.int64) / 1e9
        h0, h1 = truth.hog[0].timestamp(), truth.hog[1].timestamp()
        normal = np.concatenate([np.arange(a, b) for a, b in spans])
        design = np.column_stack([data.width, data.counts])
        beta, *_ = np.linalg.lstsq(design[normal], data.cpu[normal], rcond=None)
        excess = data.cpu - design @ beta
        apart = detector._gaps(spans, len(t))
        starts = [p.timestamp() for p in truth.phase_starts]
        print(f"== {run} {window_s}s all: hog {h0 - t[0]:.0f}-{h1 - t[0]:.0f} s into the run")
        step = max(1, 5 // window_s)
        for i in range(0, min(len(db.cpu), len(t)) - step + 1, step):
            rows = slice(i, i + step)
            rel = t[i] - h0
            if not -90 <= rel < 150:
                continue
            seconds = data.width[rows].sum()
            whole, own = data.cpu[rows].sum() / seconds, db.cpu[rows].sum() / seconds
            miss = excess[rows].sum() / seconds
            marks = (
                "|" if any(t[i] <= p < t[i] + step * window_s for p in starts) else " ",
                "H" if t[i] + step * window_s > h0 and t[i] < h1 else " ",
                "E" if any(a <= i < b for a, b in apart) else " ",
                "K" if any(a <= i < b for a, b in kept) else " ",
            )
            bar = "#" * int(miss * 40) if miss > 0 else "-" * int(min(8, -miss * 40))
            print(
                f"{rel:+6.0f} {''.join(marks)} all {whole:.2f} db {own:.2f} "
                f"oth {whole - own:+.2f} ex {miss:+.3f} {bar}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
