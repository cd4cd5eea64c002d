#!/usr/bin/env python3
"""Time perfsleuth's optimal CPU-model segmentation against ruptures on the same data.

Data: M windows × 15 columns (the window width, whose coefficient is the idle CPU, and 14
transaction types, as TPC-W has), CPU = a non-negative linear model + 2% noise, with the model
changing at M/3 and 2M/3 (see :func:`make_data`). DESIGN §4 targets: M = 1,800 in ≤ 5 s
and M = 10,000 in ≤ 60 s.

ruptures has no entropy penalty, so it runs the closest search it offers on the same
(design, response): ``Pelt(model="linear")`` (least-squares regression cost, penalised per
segment; exact with pruning) and, at M = 1,800, ``Dynp(model="linear")`` with the number of
breakpoints perfsleuth found. Each peer is stopped once it has used ``--peer-limit`` seconds of
one core: the ratio printed is then a lower bound ("≥").

Usage::

    .venv/bin/python benchmarks/segmentation.py                 # M = 1,800 and 10,000
    .venv/bin/python benchmarks/segmentation.py --sizes 1800 --peer-limit 120
    .venv/bin/python benchmarks/segmentation.py --cost gaussian --peer-limit 30
    .venv/bin/python benchmarks/segmentation.py --sizes 10000 --detector   # the whole detector
    .venv/bin/python benchmarks/segmentation.py --detector --compare /work/main/src


``--detector`` times the whole segments detector (``SegmentDetector().analyse``: segmentation,
anomalies, the own-latency search for application changes, naming) on the same data as a
workload frame, each type's latency its service time stretched by a common factor per
window, instead of running the peers. With ``--compare SRC`` each size runs in two fresh
processes, another tree's ``src`` first on PYTHONPATH and then this tree's (the same
environment otherwise), and the CPU seconds are printed side by side with their ratio and the
load average (1 min) before each.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from perfsleuth.segments.kernels.segmentation import segment_regression

COLUMNS = 15


def make_data(m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[int], tuple[int, int]]:
    """Windows × (width, 14 counts) and CPU-seconds; the two biggest CPU consumers get 80%
    dearer at M/3 and 2M/3 in turn (about +15% of the CPU each): application changes."""
    rng = np.random.default_rng(seed)
    width = np.full(m, 60.0)
    load = rng.uniform(0.3, 1.0, (m, 1))
    mix = np.exp(rng.normal(0.0, 0.3, (m, COLUMNS - 1)))  # the mix wanders, as real mixes do
    counts = rng.poisson(load * mix * rng.uniform(20, 600, COLUMNS - 1)).astype(np.float64)
    design = np.column_stack([width, counts])
    truth = [m // 3, 2 * m // 3]
    base = rng.uniform(0.0, 0.02, COLUMNS)
    base[0] = 0.01
    share = base * design.mean(axis=0)
    first, second = np.argsort(-share[1:])[:2] + 1
    beta = np.tile(base, (m, 1))
    beta[truth[0] :, first] *= 1.8
    beta[truth[1] :, second] *= 1.8
    clean = (design * beta).sum(axis=1)
    noisy = clean * (1.0 + rng.normal(0.0, 0.02, m))
    return design, noisy, truth, (int(first), int(second))


def detector_frame(
    design: np.ndarray, y: np.ndarray, truth: list[int], changed: tuple[int, int], seed: int = 0
) -> pd.DataFrame:
    """The benchmark's data as a workload frame: 14 types' counts and CPU, each type's
    latency its service time (1–50 ms) times a common stretch per window (lognormal); the
    types whose cost changes take 80% longer from then on."""
    rng = np.random.default_rng(seed)
    m, k = design.shape[0], COLUMNS - 1
    service = np.tile(rng.uniform(0.001, 0.05, k), (m, 1))
    for at, column in zip(truth, changed, strict=True):
        service[at:, column - 1] *= 1.8
    stretch = rng.lognormal(0.0, 0.3, (m, 1)) * rng.lognormal(0.0, 0.05, (m, k))
    frame = pd.DataFrame(
        {"time": pd.date_range("2026-01-01", periods=m, freq="60s", tz="UTC"), "window_s": 60.0}
    )
    for j in range(k):
        frame[f"n[t{j}]"] = design[:, j + 1]
        frame[f"rt_sum[t{j}]"] = design[:, j + 1] * service[:, j] * stretch[:, j]
    frame["cpu_util"] = np.clip(y / 60.0, 0.0, 1.0)
    return frame


def time_detector(sizes: list[int]) -> None:
    from perfsleuth.segments.detector import SegmentDetector

    for m in sizes:
        design, y, truth, changed = make_data(m)
        frame = detector_frame(design, y, truth, changed)
        start = time.process_time()
        analysis = SegmentDetector().analyse(frame)
        took = time.process_time() - start
        kinds = [b.kind for b in analysis.boundaries]
        print(
            f"M = {m} × {COLUMNS}: the whole detector {took:.2f} s CPU ({len(analysis.pieces)} "
            f"segments, {kinds.count('application_change')} application changes; truth {truth})"
        )
        sys.stdout.flush()


def compare_detector(sizes: list[int], other: Path) -> None:
    """The whole detector's CPU seconds with another tree's ``src`` and with this one's."""
    own = Path(__file__).resolve().parent.parent / "src"
    print(f"other: {other}\nthis:  {own}")
    for m in sizes:
        seconds, loads = [], []
        for src in (other, own):
            loads.append(os.getloadavg()[0])
            env = {**os.environ, "PYTHONPATH": str(src)}
            cmd = [sys.executable, __file__, "--detector", "--sizes", str(m)]
            done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            found = re.search(r"the whole detector ([0-9.]+) s CPU", done.stdout)
            if found is None:
                raise RuntimeError(f"no timing in the output: {done.stdout!r}")
            seconds.append(float(found.group(1)))
        print(
            f"M = {m} × {COLUMNS}: other {seconds[0]:.2f} s CPU (load {loads[0]:.2f}), this "
            f"{seconds[1]:.2f} s CPU (load {loads[1]:.2f}): {seconds[0] / seconds[1]:.2f}× less"
        )
        sys.stdout.flush()


def _peer(
    kind: str,
    design: np.ndarray,
    y: np.ndarray,
    arg: float,
    queue: mp.Queue[tuple[float, list[int]]],
) -> None:
    import ruptures as rpt

    signal = np.column_stack([y, design])
    start = time.process_time()
    if kind == "pelt":
        found = rpt.Pelt(model="linear", min_size=COLUMNS + 1, jump=1).fit(signal).predict(pen=arg)
    else:
        found = (
            rpt.Dynp(model="linear", min_size=COLUMNS + 1, jump=1)
            .fit(signal)
            .predict(n_bkps=int(arg))
        )
    queue.put((time.process_time() - start, found[:-1]))


def run_peer(
    kind: str, design: np.ndarray, y: np.ndarray, arg: float, limit: float
) -> tuple[float | None, list[int] | None]:
    """(CPU seconds, breakpoints), or (None, None) when it did not finish within ``limit``."""
    queue: mp.Queue[tuple[float, list[int]]] = mp.Queue()
    process = mp.Process(target=_peer, args=(kind, design, y, arg, queue))
    process.start()
    process.join(limit)
    if process.is_alive():
        process.terminate()
        process.join()
        return None, None
    seconds, found = queue.get()
    return seconds, list(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1800, 10_000])
    parser.add_argument("--peer-limit", type=float, default=300.0, help="seconds per peer run")
    parser.add_argument("--allowed-error", type=float, default=0.03)
    parser.add_argument(
        "--cost",
        choices=("paper", "gaussian"),
        default="paper",
        help="segmentation cost (the detector's default is gaussian)",
    )
    parser.add_argument("--detector", action="store_true", help="time the whole detector")
    parser.add_argument("--compare", type=Path, help="with --detector: another tree's src")
    args = parser.parse_args(argv)
    if args.detector and args.compare:
        compare_detector(args.sizes, args.compare)
        return 0
    if args.detector:
        time_detector(args.sizes)
        return 0
    targets = {1800: 5.0, 10_000: 60.0}
    row = "{:>6}  {:>10}  {:>5}  {:<18}  {:<14}  {:>9}  {}"
    print(row.format("M", "perfsleuth", "NNLS", "breakpoints", "peer", "peer", "ratio"))
    for m in args.sizes:
        design, y, truth, _ = make_data(m)
        start = time.process_time()
        seg = segment_regression(design, y, cost=args.cost, allowed_error=args.allowed_error)
        ours = time.process_time() - start
        target = targets.get(m)
        note = f"truth {truth}"
        if target is not None:
            note += f"; target ≤ {target:g} s " + ("met" if ours <= target else "MISSED")
        found_text = str(list(seg.indices))
        print(row.format(m, f"{ours:.2f} s", seg.nnls_solves, found_text, "", "", note))
        # a per-segment penalty that puts an SSE cost on the same footing: 2 σ² p ln M
        sigma2 = float(np.median(np.asarray(seg.sse) / np.diff([0, *seg.stops])))
        peers = [("Pelt(linear)", "pelt", 2 * sigma2 * COLUMNS * np.log(m))]
        if m <= 2000:
            peers.append(("Dynp(linear)", "dynp", float(len(seg.indices))))
        for label, kind, arg in peers:
            seconds, found = run_peer(kind, design, y, arg, args.peer_limit)
            if seconds is None:
                took, ratio, peer_found = f"> {args.peer_limit:g} s", "≥ ", "(stopped)"
                ratio += f"{args.peer_limit / ours:.1f}×"
            else:
                took, ratio, peer_found = f"{seconds:.2f} s", f"{seconds / ours:.1f}×", str(found)
            print(row.format("", "", "", peer_found, label, took, ratio))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
