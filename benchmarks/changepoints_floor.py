"""Which annotated changes does the relative floor (``min_relative_change``) cost?

For every annotated change point (``short``, ``machine``, ``events``) or labelled window
(``nab``) of the chosen half of ``benchmarks/changepoints_accuracy.py``'s corpus, one line:
whether the defaults find it (a point within the scoring margin, or inside the window), whether
the search with the floor off (``min_relative_change=0``) finds it, and the nearest candidate the
defaults rejected with the gates it fails — ``rel`` (its relative change, of the larger level,
below the floor), ``eff`` (under ``min_effect`` noise σ), ``cost`` (z² under the modified BIC
``penalty · ln n + ln(n (nl + nr) / (nl nr))``), ``sig`` (not significant); none listed: no
candidate was judged within reach in the final round. Per series
also its scale: min, median and the spread (median absolute deviation from the median, × 1.4826)
of the values, and whether zero is "within reach" (min ≥ 0 and min ≤ ``k`` spreads). For point
annotations also the oracle view: the noise measured about the *annotated* segmentation (raw
values, no transform or trend removed; ``perfsleuth.stats.robust.long_run_scale``: its φ and
σ_LR, and the white-noise σ from first differences), and each annotated split's z² on the
segment between its annotated neighbours in σ_LR and in white units, beside the cost it must
pay (the modified BIC above).

Run: ``.venv/bin/python benchmarks/changepoints_floor.py --groups short,machine,events,nab
--half tune``
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from changepoints_accuracy import MARGIN, MIRROR_DEFAULT, NAB_DEFAULT, STRUCCHANGE_DEFAULT, corpus

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels.search import (
    DEFAULT_MIN_EFFECT,
    DEFAULT_PENALTY,
)
from perfsleuth.stats import robust


def _relative(before: tuple[float, ...], after: tuple[float, ...]) -> float:
    b, a = np.asarray(before), np.asarray(after)
    top = np.maximum(np.abs(b), np.abs(a))
    return float(np.max(np.where(top > 0, np.abs(a - b) / np.where(top > 0, top, 1.0), 0.0)))


def _cost(n: int, nl: int, nr: int) -> float:
    return DEFAULT_PENALTY * math.log(n) + math.log(n * (nl + nr) / (nl * nr))


def oracle(x: np.ndarray, points: list[int]) -> str:
    """The noise about the annotated segmentation and each annotated split's z² in it."""
    n = len(x)
    cuts = [0, *sorted(t for t in points if 0 < t < n), n]
    resid = x.copy()
    for a, b in itertools.pairwise(cuts):
        resid[a:b] -= x[a:b].mean()
    phi, long_run = robust.long_run_scale(resid)
    d = np.diff(resid)
    white = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2)
    white = white or float(np.std(d)) / math.sqrt(2) or 1.0
    splits = []
    for a, t, b in zip(cuts[:-2], cuts[1:-1], cuts[2:], strict=True):
        nl, nr = t - a, b - t
        z2 = (x[a:t].mean() - x[t:b].mean()) ** 2 * nl * nr / (nl + nr)
        cost = _cost(n, nl, nr)
        in_units = f"z²={z2 / long_run**2:.1f} (white {z2 / white**2:.1f})"
        splits.append(f"{t}: {in_units}, cost {cost:.1f}")
    return f"oracle φ={phi:.2f} σ_LR/σ_white={long_run / white:.1f}; " + "; ".join(splits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="short,machine,events,nab")
    parser.add_argument("--half", default="tune", choices=("tune", "held-out"))
    parser.add_argument("--reach", type=float, default=3.0, help="k of 'zero within reach'")
    args = parser.parse_args()
    cases, notes = corpus(
        Path(NAB_DEFAULT), Path(STRUCCHANGE_DEFAULT), args.groups.split(","), Path(MIRROR_DEFAULT)
    )
    for note in notes:
        print("#", note)
    counts = {"annotated": 0, "found": 0, "found_floor_off": 0, "missed_for_the_floor_alone": 0}
    for case in cases:
        if case.half != args.half:
            continue
        x = np.asarray(case.values, dtype=float)
        res = find_change_points(x)
        off = find_change_points(x, min_relative_change=0.0)
        flat = x.reshape(len(x), -1)[:, 0]
        med = float(np.median(flat))
        spread = 1.4826 * float(np.median(np.abs(flat - med)))
        lo = float(flat.min())
        ratio_like = lo >= 0 and lo <= args.reach * spread
        print(
            f"{case.group:8} {case.name:40} n={len(x):6} min={lo:.4g} median={med:.4g} "
            f"spread={spread:.4g} ratio-like={ratio_like} points={list(res.indices)} "
            f"floor-off={list(off.indices)}"
        )
        if case.windows is not None:
            targets = [(a, b) for a, b in case.windows]
        else:
            print("    " + oracle(flat, case.points or []))
            targets = [(t - MARGIN, t + MARGIN) for t in case.points or [] if t > 0]
        for a, b in targets:
            counts["annotated"] += 1
            hit = any(a <= i <= b for i in res.indices)
            hit_off = any(a <= i <= b for i in off.indices)
            counts["found"] += hit
            counts["found_floor_off"] += hit_off
            near = [r for r in res.rejected if a <= r.index <= b]
            gates = []
            for r in near:
                rel = _relative(r.mean_before, r.mean_after)
                nl, nr = r.index - r.start, r.stop - r.index
                cost = _cost(len(x), nl, nr)
                fails = [
                    name
                    for name, bad in (
                        ("rel", rel < res.min_relative_change),
                        ("eff", r.effect < DEFAULT_MIN_EFFECT),
                        ("cost", r.strength < cost),
                        ("sig", r.p_value > r.alpha),
                    )
                    if bad
                ]
                gates.append(
                    f"{r.index}:rel={rel:.3f},eff={r.effect:.2f},p={r.p_value:.3g}"
                    f"/{r.alpha:.3g} fails={'+'.join(fails) or '-'}"
                )
            only_floor = not hit and any(g.endswith("fails=rel") for g in gates)
            counts["missed_for_the_floor_alone"] += only_floor
            print(f"    [{a}, {b}] found={hit} floor-off={hit_off} rejected: {'; '.join(gates)}")
    print("#", args.half, counts)


if __name__ == "__main__":
    main()
