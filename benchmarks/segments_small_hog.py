#!/usr/bin/env python3
"""Why a small hog is missed: its excess against the CPU model's misses, per configuration.

For each configuration of the named runs (default: the heavy tuned half, whose hogs got
0.07–0.16 of a core), one CPU model (``cpu ~ width + counts``) is fitted on every window
outside the hog, and its misses per second (``excess``) are read:

* ``level``: the hog's mean excess (cores), and ``in fit`` the same with the model fitted on
  every window, the hog's too (as a search that has not set it apart fits it); ``hog cpu``:
  what the hog itself got (``all`` − ``db`` under it, less outside) and ``db``: how the
  database's own CPU moved under it;
* ``sd``, ``rho``: a window's miss outside the hog and the lag-1 autocorrelation of the
  misses; ``iid``: the level in standard errors if the misses were independent (sd / √n);
* ``z``: the level in robust spreads of the mean over every stretch as long outside the hog
  (how far the model misses a stretch of that length: noise, neighbours alike, mixes);
* ``null``: the largest such z of any stretch outside the hog, at 30 s and 60 s — what the
  model's misses alone reach in this run.

Usage::

    .venv/bin/python benchmarks/segments_small_hog.py
    .venv/bin/python benchmarks/segments_small_hog.py --runs c07 r05
"""

from __future__ import annotations

import argparse
import json
import logging
import math

import numpy as np
from segments_accuracy import CORPUS, configurations

from perfsleuth.cli.inputs import WorkloadFormat, workload_source
from perfsleuth.segments.detector import _read
from perfsleuth.segments.kernels.excess import stretch_spread
from perfsleuth.segments.model import Windows
from perfsleuth.sources.load import read_source


def load(run: str, window_s: int, cpu: str) -> Windows:
    folder = CORPUS / run
    spec = workload_source(
        [folder / f"agg_{window_s}s.csv"], WorkloadFormat.aggregated, cpu=folder / f"cpu_{cpu}.csv"
    )
    frame, _ = read_source(spec)
    return _read(frame)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="*", default=None)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    runs = args.runs or json.loads((CORPUS / "halves.json").read_text())["heavy"]["tune"]
    for run, window_s, cpu, truth in configurations(CORPUS, None, runs):
        if truth.hog is None:
            continue
        data = load(run, window_s, cpu)
        t = data.start.astype("datetime64[ns]").astype(np.int64) / 1e9
        h0, h1 = truth.hog[0].timestamp(), truth.hog[1].timestamp()
        touches = (t + data.width > h0) & (t < h1)
        core = (t >= h0) & (t + data.width <= h1)
        design = np.column_stack([data.width, data.counts])
        beta, *_ = np.linalg.lstsq(design[~touches], data.cpu[~touches], rcond=None)
        excess = data.cpu - design @ beta
        rate = excess / data.width
        level = float(excess[core].sum() / data.width[core].sum())
        every, *_ = np.linalg.lstsq(design, data.cpu, rcond=None)
        fitted = data.cpu - design @ every
        in_fit = float(fitted[core].sum() / data.width[core].sum())
        out = rate[~touches] - rate[~touches].mean()
        sd = float(out.std())
        rho = float((out[1:] * out[:-1]).sum() / (out * out).sum())
        n = int(core.sum())
        spread = stretch_spread(excess[~touches], data.width[~touches], n)
        nulls = []
        for seconds in (30, 60):
            length = max(1, round(seconds / window_s))
            s = stretch_spread(excess[~touches], data.width[~touches], length)
            x = np.concatenate([[0.0], np.cumsum(excess)])
            w = np.concatenate([[0.0], np.cumsum(data.width)])
            means = (x[length:] - x[:-length]) / (w[length:] - w[:-length])
            hit = np.concatenate([[0], np.cumsum(touches)])
            clear = (hit[length:] - hit[:-length]) == 0
            nulls.append(float(means[clear].max()) / s)
        moved = ""
        if cpu == "all":
            db = load(run, window_s, "db")
            k = min(len(db.cpu), len(data.cpu))
            own = db.cpu[:k] / data.width[:k]
            other = data.cpu[:k] / data.width[:k] - own
            inside, outside = core[:k], ~touches[:k]
            hog = float(other[inside].mean() - other[outside].mean())
            dbm = float(own[inside].mean() - own[outside].mean())
            moved = f" hog cpu {hog:+.3f} db {dbm:+.3f}"
        print(
            f"{run} {window_s}s {cpu:<3} level {level:+.3f} in fit {in_fit:+.3f} sd {sd:.3f} "
            f"rho {rho:+.2f} "
            f"iid {level / (sd / math.sqrt(n)):5.1f} z {level / spread:5.1f} "
            f"null30 {nulls[0]:4.1f} null60 {nulls[1]:4.1f}{moved}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
