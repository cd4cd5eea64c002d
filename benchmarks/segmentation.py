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
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time

import numpy as np

from perfsleuth.segments.kernels.segmentation import segment_regression

COLUMNS = 15


def make_data(m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[int]]:
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
    return design, clean * (1.0 + rng.normal(0.0, 0.02, m)), truth


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
    args = parser.parse_args(argv)
    targets = {1800: 5.0, 10_000: 60.0}
    row = "{:>6}  {:>10}  {:>5}  {:<18}  {:<14}  {:>9}  {}"
    print(row.format("M", "perfsleuth", "NNLS", "breakpoints", "peer", "peer", "ratio"))
    for m in args.sizes:
        design, y, truth = make_data(m)
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
