#!/usr/bin/env python3
"""Windows where every type waits alike: the tilt's gain per window, on the recorded corpus.

In the own-latency model (:mod:`perfsleuth.segments.kernels.ownstep`) a change of type i's
level by δ moves its log latency by δ·(1 + h_t): the window's **gain**. Where the load
generator is seconds behind its schedule every transaction's logged latency is mostly the
same lag, the types' latencies are within a few percent of each other, and the gain is near
0: such a window says nothing of any type's own work. Per configuration (``db`` CPU; the
gain does not depend on the CPU series) this prints the 1st, 5th, 50th and 95th percentiles
of the gain fitted per window (all types the yardstick, ridged as the kernel does) and the
stretches where it is below ``--below``, beside the change's time.

Usage::

    .venv/bin/python benchmarks/segments_swamped.py --half tune
    .venv/bin/python benchmarks/segments_swamped.py --runs r02 r07 r09 --below 0.3
"""

from __future__ import annotations

import argparse
import logging

import numpy as np
from segments_accuracy import CORPUS, configurations

from perfsleuth.cli.inputs import WorkloadFormat, workload_source
from perfsleuth.segments.detector import _read
from perfsleuth.segments.kernels.ownstep import window_gain
from perfsleuth.sources.load import read_source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--half", choices=("tune", "held"))
    parser.add_argument("--runs", nargs="*", default=[])
    parser.add_argument("--below", type=float, default=0.3)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    for run, window_s, cpu, truth in configurations(CORPUS, args.half, args.runs):
        if cpu != "db":
            continue
        folder = CORPUS / run
        spec = workload_source(
            [folder / f"agg_{window_s}s.csv"], WorkloadFormat.aggregated, cpu=folder / "cpu_db.csv"
        )
        frame, _ = read_source(spec)
        data = _read(frame)
        gain = window_gain(data.latency, data.counts, names=data.types)
        q = np.quantile(gain, [0.01, 0.05, 0.5, 0.95])
        low = np.flatnonzero(gain < args.below)
        stretches = np.split(low, np.flatnonzero(np.diff(low) > 1) + 1) if len(low) else []
        text = " ".join(f"{str(data.start[s[0]])[11:19]}+{len(s) * window_s}s" for s in stretches)
        print(
            f"{run} {window_s}s gain q01/q05/q50/q95 {q[0]:.2f} {q[1]:.2f} {q[2]:.2f} {q[3]:.2f}"
            f"  change {truth.change_at:%H:%M:%S}  below {args.below}: {text or '-'}"
        )


if __name__ == "__main__":
    main()
