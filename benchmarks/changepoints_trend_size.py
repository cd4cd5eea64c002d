"""Size of the defaults on straight lines in AR(1) noise: how often a trend becomes a change point.

A line rising ``--rises`` noise σ (the AR(1) noise's own standard deviation, not its
innovations') over the whole series, in stationary Gaussian AR(1) noise, φ ∈ {0, .3, .5, .7,
.8, .9}, n ∈ {40, 120, 400}; ``--reps`` seeded series a cell. Each cell prints the share of
series with at least one level point, and (in brackets) with at least one point of any kind:
there is no change, so every point is false, and the search promises α = .05 for the whole
series.

``--explain`` also tells, for the series with a level point, which path of the trend step
(reference step 6) made it, by wrapping the search's functions (counts per cell):

* ``flat``: the first search (no slope) already had the point;
* ``zero``: the no-slope start's alternation ended with points (``slope`` when it removed a
  significant slope, ``none`` when not);
* ``line``: the straight-line start was tried (and ``won`` BIC);
* ``final trend``: the final result removes a trend.

Run: ``machine heavy .venv/bin/python benchmarks/changepoints_trend_size.py --reps 200``
(``--explain``; ``--sizes 120 --phis .5,.8`` for a few cells).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.signal import lfilter

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels import search as search_mod
from perfsleuth.stats.robust import within_slope

PHIS = (0.0, 0.3, 0.5, 0.7, 0.8, 0.9)
SIZES = (40, 120, 400)
RISES = (2.0, 4.0)
SEED = 1717


def series(rng: np.random.Generator, n: int, phi: float, rise: float) -> np.ndarray:
    """A line rising ``rise`` marginal noise σ over ``n`` readings, plus stationary AR(1) noise
    of unit marginal σ."""
    e = rng.standard_normal(n) * math.sqrt(1 - phi * phi)
    e[0] /= math.sqrt(1 - phi * phi)
    return 100.0 + rise * np.arange(n) / n + lfilter([1.0], [1.0, -phi], e)


class Trace:
    """Wraps the trend step's functions to record which path a search took."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self._alternate = search_mod._alternate
        self._negligible = search_mod._negligible

        def alternate(searched, y, slope, accepted, rejected, min_effect):  # type: ignore[no-untyped-def]
            self.calls.append(("start", (bool(np.any(slope)), len(accepted))))
            out = self._alternate(searched, y, slope, accepted, rejected, min_effect)
            self.calls.append(("end", (bool(np.any(out[0])), len(out[1]), out)))
            return out

        def negligible(y, slope, accepted, min_effect):  # type: ignore[no-untyped-def]
            out = self._negligible(y, slope, accepted, min_effect)
            self.calls.append(("negligible", out))
            return out

        search_mod._alternate = alternate  # type: ignore[assignment]
        search_mod._negligible = negligible  # type: ignore[assignment]

    def path(self, cp: object, y: np.ndarray) -> tuple[str, ...]:
        starts = [c for c in self.calls if c[0] == "start"]
        ends = [c for c in self.calls if c[0] == "end"]
        tags = []
        if starts:
            tags.append(f"flat {starts[0][1][1]}")  # type: ignore[index]
            zslope, zpoints, _ = ends[0][1]  # type: ignore[misc]
            tags.append(f"zero {zpoints} {'slope' if zslope else 'none'}")
            if len(starts) > 1:
                tags.append(f"line {ends[1][1][1]}")  # type: ignore[index]
            else:
                t = within_slope(y, [])[1]
                tags.append("line not tried: " + ("its |t| > 3" if abs(t) > 3 else "|t| <= 3"))
        if any(c == ("negligible", True) for c in self.calls):
            tags.append("negligible")
        tags.append("final trend" if any(cp.trend) else "final flat")  # type: ignore[attr-defined]
        self.calls.clear()
        return tuple(tags)


def run(sizes: tuple[int, ...], phis: tuple[float, ...], rises: tuple[float, ...], reps: int,
        explain: bool) -> None:  # fmt: skip
    trace = Trace() if explain else None
    print(f"lines rising R noise σ over n readings in AR(1) noise, {reps} series a cell: "
          "share with a level point (any point)")  # fmt: skip
    for rise in rises:
        print(f"R = {rise:g}")
        print("n     " + "  ".join(f"φ={p:<12}" for p in phis))
        for n in sizes:
            cells = []
            paths: Counter[tuple[str, ...]] = Counter()
            for phi in phis:
                rng = np.random.default_rng([SEED, n, round(phi * 100), round(rise * 10)])
                level = points = 0
                for _ in range(reps):
                    y = series(rng, n, phi, rise)
                    cp = find_change_points(y)
                    has_level = any(p.kind == "level" for p in cp.points)
                    level += has_level
                    points += bool(cp.points)
                    if trace is not None:
                        path = trace.path(cp, y)
                        if has_level:
                            paths[(f"φ={phi}", *path)] += 1
                cells.append(f"{level / reps:.3f} ({points / reps:.3f})")
            print(f"{n:<5} " + "  ".join(f"{c:<14}" for c in cells), flush=True)
            for path, count in sorted(paths.items()):
                print(f"      {count:4d}  {' | '.join(path)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--phis", default=",".join(map(str, PHIS)))
    parser.add_argument("--rises", default=",".join(map(str, RISES)))
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    run(
        tuple(int(v) for v in args.sizes.split(",")),
        tuple(float(v) for v in args.phis.split(",")),
        tuple(float(v) for v in args.rises.split(",")),
        args.reps,
        args.explain,
    )


if __name__ == "__main__":
    main()
