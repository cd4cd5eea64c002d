"""Change-point detection speed (DESIGN §4): ``find_change_points`` with its defaults against
ruptures ``Binseg(model="l2")``, on real-shaped series, printed as ratios from one run.

Targets: 10⁵ ≤ 0.5 s and 10⁶ ≤ 3 s whatever the number of change points, and ≥ 100× ruptures
Binseg at 10⁵.

The series are what real monitoring data looks like, not white-noise steps: AR(1) noise
(φ = .6) with Student-t (3 d.o.f.) innovations, a daily-like cycle (period 288, i.e. 5-minute
samples), a slow trend, 0.2% spikes of 15–40 σ, right skew (everything is exponentiated, as a
latency is: the noise is about ±15%, but exponentiated Student-t noise has no mean, and at 10⁶
points it reaches 83 σ, a value 7·10⁵ times the median: ``changepoints_fragments.py``), and 2, 10
or 50 level shifts of 2–6 σ at seeded positions at least ``n / (4(k + 1))`` apart. The defaults
must handle all of it (cycle and trend removed, skew transformed, spikes kept as data), so the
work real series trigger is timed too.

ruptures gets its defaults (``min_size=2, jump=5``) and the usual BIC penalty ``σ̂² ln n`` (σ̂
robust, from first differences); it is run at 10⁴ and 10⁵ only (at 10⁶ one call takes longer than
the whole table). Recall within ±1% of n is printed for both, for orientation only (accuracy is
``benchmarks/changepoints_accuracy.py``'s job).

Run: .venv/bin/python benchmarks/changepoints.py [--repeat R] [--skip-ruptures] [--sizes N,..]
[--shifts K,..] (to time the search of another source tree, e.g. a commit exported with
``git archive``, put its ``src`` first on PYTHONPATH).
Times are CPU seconds of this process, best of R (single-threaded BLAS: the wall time on an
idle machine). No test asserts them; report the load average (``uptime``) with them.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from scipy.signal import lfilter  # noqa: E402

from perfsleuth.changepoints.kernels.search import find_change_points  # noqa: E402

PERIOD = 288


def real_shaped(n: int, k: int, seed: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """``n`` observations with ``k`` level shifts and everything real series have."""
    rng = np.random.default_rng(seed)
    gap = n // (4 * (k + 1))
    # Cuts uniform among those at least ``gap`` apart (and from the ends), drawn directly:
    # k distinct offsets in the slack, spread by gap − 1 each. (Drawing cuts anywhere and
    # retrying until they were far enough apart accepted about one draw in a million at
    # k = 50: the 10⁶ × 50 series had never been generated, whatever the search's speed.)
    slack = n - 2 * gap - (k - 1) * (gap - 1)
    cuts = np.sort(rng.choice(slack, size=k, replace=False)) + gap + np.arange(k) * (gap - 1)
    noise = lfilter([1.0], [1.0, -0.6], rng.standard_t(3, n) * 0.5)
    sigma = float(np.std(noise))
    steps = rng.choice([-1.0, 1.0], k) * rng.uniform(2.0, 6.0, k) * sigma
    level = np.concatenate([[0.0], np.cumsum(steps)])
    mean = np.repeat(level, np.diff(np.concatenate([[0], cuts, [n]])))
    t = np.arange(n)
    cycle = 1.5 * sigma * np.sin(2 * np.pi * t / PERIOD)
    trend = 2.0 * sigma * t / n
    x = mean + cycle + trend + noise
    spikes = rng.random(n) < 0.002
    x[spikes] += rng.uniform(15.0, 40.0, int(spikes.sum())) * sigma
    # exponentiated like a latency: the noise is ±15%, a 4σ shift +80%
    return 20.0 * np.exp(0.15 * x / sigma), tuple(int(c) for c in cuts)


def recall(truth: tuple[int, ...], found: list[int], n: int) -> float:
    margin = max(3, n // 100)
    return sum(any(abs(f - t) <= margin for f in found) for t in truth) / len(truth)


def best_of(fn: Callable[[], list[int]], repeat: int) -> tuple[float, list[int]]:
    """Best CPU time of this process over ``repeat`` runs (BLAS is single-threaded, so on an
    idle machine it is the wall time; on a shared one it does not count the other jobs)."""
    best: float = math.inf
    out: list[int] = []
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def ours(x: np.ndarray) -> list[int]:
    return list(find_change_points(x).indices)


def ruptures_binseg(x: np.ndarray) -> list[int]:
    import ruptures

    d = np.diff(x)
    sigma = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
    pen = sigma**2 * math.log(len(x))
    return [int(b) for b in ruptures.Binseg(model="l2").fit(x).predict(pen=pen) if b < len(x)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="best of R runs (default 3)")
    parser.add_argument("--skip-ruptures", action="store_true")
    parser.add_argument(
        "--sizes", default="10000,100000,1000000", help="comma-separated series lengths"
    )
    parser.add_argument("--shifts", default="2,10,50", help="comma-separated shift counts")
    args = parser.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    shifts = [int(v) for v in args.shifts.split(",")]

    find_change_points(real_shaped(2000, 2, 0)[0])  # load tables and imports outside timing
    rows: list[tuple[str, ...]] = [
        ("n", "shifts", "ours", "found (recall)", "ruptures Binseg", "found (recall)", "ratio")
    ]
    for n in sizes:
        for k in shifts:
            x, truth = real_shaped(n, k, seed=n + k)
            t_ours, mine = best_of(functools.partial(ours, x), args.repeat)
            found = f"{len(mine)} ({recall(truth, mine, n):.2f})"
            cells = [f"{n:.0e}", str(k), f"{t_ours:.3f} s", found]
            if args.skip_ruptures or n > 100_000:
                cells += ["–", "–", "–"]
            else:
                t_r, theirs = best_of(functools.partial(ruptures_binseg, x), 1)
                cells += [
                    f"{t_r:.2f} s",
                    f"{len(theirs)} ({recall(truth, theirs, n):.2f})",
                    f"ours {t_r / t_ours:.0f}× faster",
                ]
            rows.append(tuple(cells))
            print("  ".join(cells), flush=True)
    print()
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    print("targets: 1e5 ≤ 0.5 s, 1e6 ≤ 3 s, ≥ 100× ruptures Binseg at 1e5")


if __name__ == "__main__":
    main()
