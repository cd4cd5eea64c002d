"""Whether the lazy Gaussian segmentation is bit for bit the full search, on random problems.

``kernels.segmentation._search_gaussian`` computes a start's SSE only where its bound could win
or be pruned differently (module docstring). This draws ``--problems`` random regressions (1–5
columns, 30–600 windows, a change of level, noise 0 to 30%, a burst in one in seven, NNLS on in
four of five, ``min_size`` 1 to p + 2), runs ``segment_regression(cost="gaussian")`` and the
full search (every start at every end, as before the lazy search: :func:`full_search`), and
prints the problems whose cost, cuts, SSEs or NNLS solves differ in any bit; ``--lazy-only``
forces the lazy path (``_EAGER = 0``: no start computed only because the starts are few).

``--sizes`` also times both on ``benchmarks/segmentation.py``'s detector frame (M windows × 15
columns, the detector's ``min_size``) and prints the segments each computed.

Run: .venv/bin/python benchmarks/segments_lazy_search.py --problems 1000 [--lazy-only]
[--sizes 1800 10000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from perfsleuth.segments.kernels import segmentation as kernel


def full_search(x: np.ndarray, y: np.ndarray, min_size: int, nonneg: bool) -> tuple:
    """(cost, back-pointers, each end's SSE, NNLS solves, segments computed) of the full PELT
    search."""
    m, p = x.shape
    cols = np.sqrt(np.mean(x * x, axis=0))
    cols[cols == 0] = 1.0
    prefix = kernel._prefix_gram(np.column_stack([x / cols, y / np.mean(y)]))
    packed = kernel._packed(prefix)
    sigma = kernel._noise(packed, m, p)
    beta = (p + 1) * math.log(max(m, 2))
    floor = max(sigma * sigma / 4.0, 1e-300)
    f, back, best = np.full(m + 1, np.inf), np.zeros(m + 1, dtype=np.int64), np.zeros(m + 1)
    f[0] = -beta
    alive, dead_at = np.zeros(m + 1, dtype=bool), np.full(m + 1, m + 1)
    alive[0] = True
    solves = computed = 0
    for end in range(min_size, m + 1):

        def priced(sse: np.ndarray, starts: np.ndarray, end: int = end) -> np.ndarray:
            n = (end - starts).astype(np.float64)
            return n * np.log(np.maximum(sse / n, floor))

        starts = np.flatnonzero(alive[: end - min_size + 1] & (dead_at[: end - min_size + 1] > end))
        values = kernel._sse_at(packed, end, starts)
        computed += len(starts)
        sse, total = np.full(end - min_size + 1, np.inf), np.full(end - min_size + 1, np.inf)
        sse[starts] = values
        total[starts] = f[starts] + priced(values, starts) + beta
        exact = np.zeros(len(total), dtype=bool)
        start, solved = kernel._exact_minimum(prefix, end, total, sse, exact, nonneg, priced)
        solves += solved
        f[end], back[end], best[end] = total[start], start, sse[start]
        prune = starts[f[starts] + priced(values, starts) >= f[end]]
        dead_at[prune] = np.minimum(dead_at[prune], end + min_size)
        alive[end] = True
    return float(f[m]), back, best, solves, computed


def time_frames(sizes: list[int]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import segmentation as speed

    from perfsleuth.segments.detector import _read

    for m in sizes:
        design, y, truth, changed = speed.make_data(m)
        data = _read(speed.detector_frame(design, y, truth, changed))
        x = np.column_stack([data.width, data.counts])
        min_size = data.counts.shape[1] + 2
        started = time.process_time()
        full = full_search(x, data.cpu, min_size, True)
        full_s = time.process_time() - started
        started = time.process_time()
        got = kernel.segment_regression(x, data.cpu, cost="gaussian", min_size=min_size)
        lazy_s = time.process_time() - started
        same = got.cost == full[0] and got.nnls_solves == full[3]
        print(
            f"M = {m} × {x.shape[1]}: full {full_s:.2f} s CPU ({full[4]:,} segments), lazy "
            f"{lazy_s:.2f} s ({got.evaluated:,}): {full_s / lazy_s:.1f}× less; cost and NNLS "
            f"solves {'the same' if same else 'DIFFERENT'}"
        )


def problem(seed: int) -> tuple[np.ndarray, np.ndarray, int, bool]:
    rng = np.random.default_rng(seed)
    m, p = int(rng.integers(30, 600)), int(rng.integers(1, 6))
    x = np.full((m, 1), 5.0)
    if p > 1:
        counts = rng.poisson(rng.uniform(1, 50, p - 1), size=(m, p - 1)).astype(np.float64)
        x = np.column_stack([x, counts])
    y = x @ rng.uniform(0, 1, p)
    y[int(rng.integers(1, m)) :] *= rng.uniform(0.8, 1.5)
    y = y * (1 + rng.normal(0, rng.choice([0.0, 0.001, 0.05, 0.3]), m))
    if seed % 7 == 0:
        y[m // 2 : m // 2 + 10] += 3 * y.mean()
    return x, np.abs(y) + 1e-3, int(rng.integers(1, p + 3)), bool(seed % 5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--lazy-only", action="store_true", help="_EAGER = 0")
    parser.add_argument("--sizes", type=int, nargs="*", default=[], help="detector frames")
    args = parser.parse_args()
    if args.lazy_only:
        kernel._EAGER = 0
    differ = 0
    for seed in range(args.problems):
        x, y, min_size, nonneg = problem(seed)
        got = kernel.segment_regression(
            x, y, cost="gaussian", min_size=min_size, nonnegative=nonneg
        )
        cost, back, best, solves, _ = full_search(x, y, min_size, nonneg)
        stops, end = [], len(y)
        while end > 0:
            stops.append(end)
            end = int(back[end])
        stops.reverse()
        scale = float(np.mean(y))
        same = (got.cost, got.stops, got.nnls_solves) == (cost, tuple(stops), solves)
        same = same and got.sse == tuple(float(best[e]) * scale * scale for e in stops)
        if not same:
            differ += 1
            print(f"DIFFERENT problem {seed}: cost {got.cost!r} vs {cost!r}")
    print(f"{args.problems - differ} of {args.problems} problems bit for bit the full search")
    time_frames(args.sizes)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
