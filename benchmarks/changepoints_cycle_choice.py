"""Which cycle to remove when several qualify: the choices measured in the periods round.

On the hourly two-cycle series of ``changepoints_cycles.py --only two`` (a daily sine, weekends
lower, AR(1) noise on a trend, with or without a 3 σ shift at 60%), the search is run with its
cycle stage (``search._without_cycle``) replaced by one of:

* ``first`` — the first octave's qualifying period, shortest first, removed alone (the search
  before the periods round);
* ``contrast`` — of every octave's qualifying period, the one with the largest autocorrelation
  contrast at full resolution (about its octave's slow part), removed alone;
* ``explained`` — the one whose median profile explains the most of the variation about the
  running median, less what a median profile of noise explains ((π/2) P / n), removed alone;
* ``turn`` — the search's own: cycles removed in turn, shortest first (the kept choice).

Printed per choice (``changepoints_cycles.py``'s two-cycle table): the cycles removed (how
many series), the share in which the shift is found (a level point within 5 readings) and
the other points per series.

Run: ``.venv/bin/python benchmarks/changepoints_cycle_choice.py [--reps 10]``
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import numpy.typing as npt
from changepoints_cycles import two_table

from perfsleuth.changepoints.kernels import search
from perfsleuth.stats import robust

FloatArray = npt.NDArray[np.float64]
KEPT = search._without_cycle


def octave_periods(x: FloatArray, min_period: int) -> list[tuple[int, int]]:
    """Every octave's qualifying period (shortest first), with the octave's longest period."""
    max_period = min(x.size // 3, robust.MAX_PERIOD)
    centre = robust.median(x)
    centred = (centre, robust._centred_sums(x, centre=centre))
    out, lo = [], max(min_period, 2)
    while lo <= max_period:
        hi = min(2 * lo - 1, max_period)
        found = robust._period_in_octave(x, centred, lo, hi, 0.3, False)
        if found is not None:
            out.append((found, hi))
        lo *= 2
    return out


def contrast(x: FloatArray, period: int, hi: int) -> float:
    r = robust._cycle_residual(x, robust._SLOW_PERIODS * hi + 1, False)
    acf = robust._autocorrelation(r, min(r.size - 1, 2 * period))
    return float(robust._contrast(acf, np.array([period]))[0])


def explained(x: FloatArray, period: int) -> float:
    window = period if period % 2 else period + 1
    detail = x - robust.running_median(x, window)
    rest = detail - np.resize(robust.remove_cycle(x, period)[1], x.size)
    share = 1.0 - float(np.var(rest) / np.var(detail))
    return share - math.pi / 2 * period / x.size * (1.0 - share)


def one_cycle(choose):  # type: ignore[no-untyped-def]
    def without_cycle(x: FloatArray, min_size: int, first: object = None):  # type: ignore[no-untyped-def]
        found = [octave_periods(x[:, j], 2 * min_size) for j in range(x.shape[1])]
        picks = [choose(x[:, j], c) for j, c in enumerate(found) if c]
        if not picks:
            return x, (), np.zeros_like(x)
        period = max(picks)
        flat = np.column_stack([robust.remove_cycle(x[:, j], period)[0] for j in range(x.shape[1])])
        return flat, (period,), x - flat

    return without_cycle


CHOICES = {
    "first": one_cycle(lambda x, c: c[0][0]),
    "contrast": one_cycle(lambda x, c: max(c, key=lambda t: contrast(x, *t))[0]),
    "explained": one_cycle(lambda x, c: max(c, key=lambda t: explained(x, t[0]))[0]),
    "turn": KEPT,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    try:
        for name, stage in CHOICES.items():
            print(f"\n## {name}")
            search._without_cycle = stage
            two_table(args.reps)  # the cycles benchmark's table, with this cycle stage
    finally:
        search._without_cycle = KEPT


if __name__ == "__main__":
    main()
