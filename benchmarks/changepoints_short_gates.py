"""Which gate loses a big clean step in a short series (issue 17's short-series power).

One step of d noise σ at mid-series in n iid Gaussian readings (``--phi``: AR(1) noise of unit
marginal variance) (``np.r_[N(10, 1, n//2),
N(10 + d, 1, n − n//2)]``, ``default_rng(seed)``, seeds 0..reps−1; a hit is a point within 1
of n//2), searched with the defaults. Each miss is put down to the first gate that lost the
step in the search with no slope (the first description's first start, step 5), else to what
came after it:

* ``no candidate``: no seeded interval proposed a split within 1 of the step;
* ``small``: proposed, but the shift is under ``min_effect`` noise σ;
* ``cost``: under its cost, z² < penalty · 2 ln(e n / m) in long-run noise units (or it
  rested on one observation);
* ``test``: it passed all of that and failed the significance test (FPA and lone jump);
* ``later``: kept by the search with no slope, lost afterwards (the trend's start from the
  line and its BIC, the log scale, a later noise round).

The yardstick's φ (the first noise round's, from first differences) is printed as the share
of misses and of hits at its memory cap: a φ̂ near the cap makes the long-run variance
(1 + φ)/(1 − φ)² times the differences' half-variance (28 at φ = .75), and the cost is paid
in those units.

Run: ``.venv/bin/python benchmarks/changepoints_short_gates.py [--reps 100]
[--sizes 10,12,20,30,60] [--steps 3,4,6]``
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.signal import lfilter

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels import level, search, seeded
from perfsleuth.stats import robust

GATES = ("no candidate", "small", "cost", "test", "later")


def step_series(n: int, d: float, seed: int, phi: float = 0.0) -> np.ndarray:
    """The issue's series; with ``phi`` > 0, AR(1) noise of unit marginal variance instead."""
    rng = np.random.default_rng(seed)
    if phi == 0:
        return np.r_[rng.normal(10, 1, n // 2), rng.normal(10 + d, 1, n - n // 2)]
    x: np.ndarray = 10 + lfilter([1.0], [1.0, -phi], rng.standard_normal(n)) * (1 - phi**2) ** 0.5
    x[n // 2 :] += d
    return x


class Recorder:
    """Wraps the seeded search's candidates and pruning to see, in the first start's last
    noise round, what became of the split nearest the step."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.first = True  # only the first search.run call (no slope)
        self.gate = "no candidate"

    def near(self, i: int) -> bool:
        return abs(i - self.at) <= 1

    def candidates(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            found = real(*args, **kwargs)
            if self.first:
                self.gate = "no candidate"
                if any(self.near(int(i)) for i in found.index):
                    self.gate = "later"  # until a verdict says otherwise
            return found

        return wrapped

    def prune(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(points: list[int], n: int, judge: Any, test: Any = None) -> Any:
            if not self.first:
                return real(points, n, judge, test)

            def judged(a: int, i: int, b: int) -> seeded.Judged:
                verdict = judge(a, i, b)
                if self.near(i) and verdict.passes is False:
                    small = verdict.effect < search.DEFAULT_MIN_EFFECT
                    self.gate = "small" if small else "cost"
                return verdict

            def tested(verdict: seeded.Judged) -> bool:
                passes = bool(test(verdict))
                if self.near(verdict.index) and not passes:
                    self.gate = "test"
                return passes

            kept, gone = real(points, n, judged, tested)
            if any(self.near(k.index) for k in kept):
                self.gate = "later"
            return kept, gone

        return wrapped


def diagnose(
    n: int, d: float, reps: int, phi: float = 0.0
) -> tuple[int, collections.Counter[str], list[float]]:
    hits, gates, cap_share = 0, collections.Counter[str](), [0.0, 0.0]
    counts = [0, 0]
    cap = robust.memory_cap(n, 1)
    real_run = level._Practical.run
    real_candidates, real_prune = seeded.seeded_candidates, seeded.prune
    for seed in range(reps):
        x = step_series(n, d, seed, phi)
        recorder = Recorder(n // 2)

        def run(self: Any, *args: Any, recorder: Recorder = recorder, **kwargs: Any) -> Any:
            out = real_run(self, *args, **kwargs)
            recorder.first = False
            return out

        level._Practical.run = run  # type: ignore[method-assign]
        seeded.seeded_candidates = recorder.candidates(real_candidates)
        seeded.prune = recorder.prune(real_prune)
        try:
            found = find_change_points(x).indices
        finally:
            level._Practical.run = real_run  # type: ignore[method-assign]
            seeded.seeded_candidates, seeded.prune = real_candidates, real_prune
        hit = any(abs(i - n // 2) <= 1 for i in found)
        hits += hit
        at_cap = robust.long_run_noise(x, max_block=1)[0] >= cap - 1e-9
        counts[hit] += 1
        cap_share[hit] += at_cap
        if not hit:
            gates[recorder.gate] += 1
    return hits, gates, [c / max(k, 1) for c, k in zip(cap_share, counts, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--sizes", default="10,12,20,30,60")
    parser.add_argument("--steps", default="3,4,6")
    parser.add_argument("--phi", type=float, default=0.0, help="AR(1) noise instead (φ > 0)")
    args = parser.parse_args()
    print(f"hits of {args.reps} series, and each miss's first losing gate (step 5, no slope)")
    print("| n | d (σ) | hits | " + " | ".join(GATES) + " | φ̂ at cap: misses / hits |")
    print("|---" * (len(GATES) + 4) + "|")
    for n in (int(v) for v in args.sizes.split(",")):
        for d in (float(v) for v in args.steps.split(",")):
            hits, gates, caps = diagnose(n, d, args.reps, args.phi)
            cells = " | ".join(str(gates[g]) for g in GATES)
            print(f"| {n} | {d:g} | {hits} | {cells} | {caps[0]:.2f} / {caps[1]:.2f} |")


if __name__ == "__main__":
    main()
