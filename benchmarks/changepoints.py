"""Change-point detection speed (DESIGN §4): ``find_change_points`` with its defaults against
ruptures ``Binseg(model="l2")``, on real-shaped series, printed as ratios from one run.

Targets: 10⁵ ≤ 0.5 s and 10⁶ ≤ 3 s whatever the number of change points, and ≥ 100× ruptures
Binseg at 10⁵.

The series are what real monitoring data looks like, not white-noise steps: AR(1) noise (φ = .6)
with Student-t (3 d.o.f.) innovations, a daily-like cycle (period 288, i.e. 5-minute samples), a
slow trend, 0.2% spikes of 15–40 σ, right skew (everything is exponentiated, as a latency is:
the noise is about ±15%, but exponentiated Student-t noise has no mean, and at 10⁶ points it
reaches 83 σ, a value 7·10⁵ times the median: ``changepoints_fragments.py``; with ``--additive``
it is not, as a gauge's readings are not, and the trend is then kept as a slope, whose kinks are
searched too), and 2, 10 or 50 level shifts of 2–6 σ at seeded positions at least
``n / (4(k + 1))`` apart. The defaults must handle all of it (cycle and trend removed, skew
transformed, spikes kept as data), so the work real series trigger is timed too.

ruptures gets its defaults (``min_size=2, jump=5``) and the usual BIC penalty ``σ̂² ln n`` (σ̂
robust, from first differences); it is run at 10⁴ and 10⁵ only (at 10⁶ one call takes longer than
the whole table). Recall within ±1% of n is printed for both, for orientation only (accuracy is
``benchmarks/changepoints_accuracy.py``'s job).

Run: .venv/bin/python benchmarks/changepoints.py [--repeat R] [--skip-ruptures] [--sizes N,..]
[--shifts K,..] [--additive] [--compare SRC]. ``--compare`` times another source tree's search
(e.g. a commit exported with ``git archive``, or /work/main/src) side by side with this one: R
runs in a fresh process with one tree's ``src`` first on PYTHONPATH, then R with the other,
twice over, so both see the same load.
Times are CPU seconds of the timing process, best of R for ours and for ruptures alike
(single-threaded BLAS: the wall time on an idle machine; until 2026-12-02 ruptures ran once,
which favoured us by its run-to-run spread). No test asserts them; report the load average
(``uptime``) with them.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.signal import lfilter  # noqa: E402

from perfsleuth.changepoints.kernels.search import find_change_points  # noqa: E402

PERIOD = 288


def real_shaped(
    n: int, k: int, seed: int, additive: bool = False
) -> tuple[np.ndarray, tuple[int, ...]]:
    """``n`` observations with ``k`` level shifts and everything real series have; with
    ``additive``, not exponentiated (a gauge such as a temperature or a queue length)."""
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
    if additive:
        return x, tuple(int(c) for c in cuts)
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


def timed_elsewhere(
    src: Path, n: int, k: int, repeat: int, additive: bool
) -> tuple[float, list[int]]:
    """The best of ``repeat`` timed runs of the defaults on ``real_shaped(n, k)`` in a fresh
    process that imports ``perfsleuth`` from ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, __file__, "--worker", f"{n},{k},{repeat},{int(additive)}"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.splitlines()[-1])
    return float(result["cpu"]), [int(i) for i in result["indices"]]


def side_by_side(
    trees: list[Path], n: int, k: int, repeat: int, additive: bool
) -> list[tuple[float, list[int]]]:
    """Best CPU time and points of each tree, the trees alternating (twice)."""
    best: list[tuple[float, list[int]]] = [(math.inf, []) for _ in trees]
    for _ in range(2):
        for i, src in enumerate(trees):
            t, found = timed_elsewhere(src, n, k, repeat, additive)
            best[i] = min(best[i], (t, found), key=lambda r: r[0])
    return best


def worker(spec: str) -> None:
    n, k, repeat, additive = (int(v) for v in spec.split(","))
    x, _ = real_shaped(n, k, seed=n + k, additive=bool(additive))
    find_change_points(real_shaped(2000, 2, 0)[0])  # load tables and imports outside timing
    t, found = best_of(functools.partial(ours, x), repeat)
    print(json.dumps({"cpu": t, "indices": found}))


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
    parser.add_argument(
        "--additive", action="store_true", help="the series not exponentiated (a gauge)"
    )
    parser.add_argument(
        "--compare", type=Path, help="another tree's src, timed side by side with this one"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if args.compare:
        compare(args)
        return
    sizes = [int(v) for v in args.sizes.split(",")]
    shifts = [int(v) for v in args.shifts.split(",")]

    find_change_points(real_shaped(2000, 2, 0)[0])  # load tables and imports outside timing
    rows: list[tuple[str, ...]] = [
        ("n", "shifts", "ours", "found (recall)", "ruptures Binseg", "found (recall)", "ratio")
    ]
    for n in sizes:
        for k in shifts:
            x, truth = real_shaped(n, k, seed=n + k, additive=args.additive)
            t_ours, mine = best_of(functools.partial(ours, x), args.repeat)
            found = f"{len(mine)} ({recall(truth, mine, n):.2f})"
            cells = [f"{n:.0e}", str(k), f"{t_ours:.3f} s", found]
            if args.skip_ruptures or n > 100_000:
                cells += ["–", "–", "–"]
            else:
                t_r, theirs = best_of(functools.partial(ruptures_binseg, x), args.repeat)
                cells += [
                    f"{t_r:.2f} s",
                    f"{len(theirs)} ({recall(truth, theirs, n):.2f})",
                    f"ours {t_r / t_ours:.0f}× faster",
                ]
            rows.append(tuple(cells))
            print("  ".join(cells), flush=True)
    print_table(rows)
    print("targets: 1e5 ≤ 0.5 s, 1e6 ≤ 3 s, ≥ 100× ruptures Binseg at 1e5")


def print_table(rows: list[tuple[str, ...]]) -> None:
    """The rows again, in aligned columns, after a blank line."""
    print()
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def compare(args: argparse.Namespace) -> None:
    """The table for another tree (``--compare``) and this one, timed side by side."""
    own = Path(__file__).resolve().parent.parent / "src"
    sizes = [int(v) for v in args.sizes.split(",")]
    shifts = [int(v) for v in args.shifts.split(",")]
    rows: list[tuple[str, ...]] = [
        ("n", "shifts", "other", "this", "found other → this (recall)", "ruptures", "ratios")
    ]
    for n in sizes:
        for k in shifts:
            x, truth = real_shaped(n, k, seed=n + k, additive=args.additive)
            (t_old, old), (t_new, new) = side_by_side(
                [args.compare, own], n, k, args.repeat, args.additive
            )
            cells = [
                f"{n:.0e}",
                str(k),
                f"{t_old:.3f} s",
                f"{t_new:.3f} s",
                f"{len(old)} → {len(new)} ({recall(truth, new, n):.2f})"
                + ("" if old == new else " MOVED"),
            ]
            if args.skip_ruptures or n > 100_000:
                cells += ["–", "–"]
            else:
                t_r, _ = best_of(functools.partial(ruptures_binseg, x), args.repeat)
                cells += [f"{t_r:.2f} s", f"{t_r / t_old:.0f}× → {t_r / t_new:.0f}×"]
            rows.append(tuple(cells))
            print("  ".join(cells), flush=True)
    print_table(rows)
    print(f"other: {args.compare}; this: {own}")


if __name__ == "__main__":
    main()
