"""Where the short corpus's cover is lost against binary segmentation's default, series by series.

For every series of one half of ``benchmarks/changepoints_accuracy.py``'s ``short`` group, one
line: the annotated changes, perfsleuth's points and ``binseg-default``'s, and the covering
score of each. Then what the search saw: the first noise round's φ and long-run σ (AR(1) from
first differences, φ capped at the correlation length ``robust._LONGEST_MEMORY``) beside the
series' own standard deviation — when σ_LR exceeds it no split of the series can be a seeded
candidate — and every candidate the judgement dropped, with the gates it fails: ``sig`` (the
paper's T against the FPA table at the φ tested, p above the spent level; the lone jump not
either), ``cost`` (z² under the modified BIC), ``eff`` (under ``min_effect``), ``rel`` (under
``min_relative_change`` of the larger level). ``--trend-oracle`` adds, for the annotated and
binary segmentation's points, the noise about one intercept per segment plus a common slope
(least squares, raw values): its φ and σ_LR (in white-noise σ of the differences) and each
shift's z² in long-run units against its cost. ``--memory`` re-runs with another correlation
length cap (a what-if; the defaults use 16).

Run: ``.venv/bin/python benchmarks/changepoints_cover.py --half tune [--trend-oracle]``
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from changepoints_accuracy import (
    MIRROR_DEFAULT,
    NAB_DEFAULT,
    STRUCCHANGE_DEFAULT,
    binseg_default,
    corpus,
    covering,
)

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels import search
from perfsleuth.changepoints.kernels.search import (
    DEFAULT_MIN_EFFECT,
    DEFAULT_PENALTY,
)
from perfsleuth.stats import robust


def _cost(n: int, nl: int, nr: int) -> float:
    return DEFAULT_PENALTY * math.log(n) + math.log(n * (nl + nr) / (nl * nr))


def _relative(before: tuple[float, ...], after: tuple[float, ...]) -> float:
    top = max(abs(before[0]), abs(after[0]))
    return abs(after[0] - before[0]) / top if top > 0 else 0.0


def first_round(x: np.ndarray) -> str:
    """The first noise round's φ and σ_LR (AR(1) alone) against the series' spread."""
    sym = search._symmetrised(search._centre(x.reshape(-1, 1)))[:, 0]
    phi, scale, _ = robust.long_run_noise(sym, max_block=1)
    d = np.diff(x)
    lag1 = float(np.corrcoef(d[1:], d[:-1])[0, 1]) if d.size > 2 else math.nan
    return (
        f"round 1: φ={phi:.2f} σ_LR/sd={scale / float(np.std(sym)):.2f} "
        f"(lag-1 autocorrelation of the differences {lag1:.2f})"
    )


def trend_oracle(x: np.ndarray, cuts: list[int]) -> str:
    """The noise about one intercept per segment and a common slope, and each shift's z²."""
    n = len(x)
    bounds = [0, *cuts, n]
    t = np.arange(n)
    design = np.column_stack(
        [((t >= a) & (t < b)).astype(float) for a, b in itertools.pairwise(bounds)]
        + [t.astype(float)]
    )
    beta, *_ = np.linalg.lstsq(design, x, rcond=None)
    resid = x - design @ beta
    phi, scale, _ = robust.long_run_noise(resid)
    d = np.diff(resid)
    white = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2) or 1.0
    parts = [f"φ={phi:.2f} σ_LR/σ_white={scale / white:.1f}"]
    for cut, shift in zip(cuts, np.diff(beta[: len(cuts) + 1]), strict=True):
        z2 = shift * shift * cut * (n - cut) / n / scale**2
        parts.append(f"{cut}: z²={z2:.1f}, cost {_cost(n, cut, n - cut):.1f}")
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", default="tune", choices=("tune", "held-out"))
    parser.add_argument("--trend-oracle", action="store_true")
    parser.add_argument("--memory", type=int, default=None, help="correlation length cap")
    args = parser.parse_args()
    if args.memory is not None:
        robust._LONGEST_MEMORY = args.memory  # a what-if, this process only
    cases, notes = corpus(
        Path(NAB_DEFAULT), Path(STRUCCHANGE_DEFAULT), ["short"], Path(MIRROR_DEFAULT)
    )
    for note in notes:
        print("#", note)
    totals = {"perfsleuth": 0.0, "binseg": 0.0}
    count = 0
    for case in cases:
        if case.half != args.half:
            continue
        x = np.asarray(case.values, dtype=float).reshape(len(case.values), -1)[:, 0]
        n, truth = len(x), list(case.points or [])
        found = find_change_points(x)
        ours, theirs = list(found.indices), binseg_default(x)
        cover_ours, cover_theirs = covering(truth, ours, n), covering(truth, theirs, n)
        totals["perfsleuth"] += cover_ours
        totals["binseg"] += cover_theirs
        count += 1
        print(
            f"{case.name:34} n={n:4} truth={truth} perfsleuth={ours} binseg={theirs} "
            f"cover {cover_ours:.3f} / {cover_theirs:.3f} (gap {cover_theirs - cover_ours:+.3f})"
        )
        print("    " + first_round(x))
        for r in found.rejected:
            fails = [
                name
                for name, bad in (
                    ("sig", not r.p_value <= r.alpha),
                    ("cost", r.strength < _cost(n, r.index - r.start, r.stop - r.index)),
                    ("eff", r.effect < DEFAULT_MIN_EFFECT),
                    ("rel", _relative(r.mean_before, r.mean_after) < found.min_relative_change),
                )
                if bad
            ]
            print(
                f"    dropped {r.index} on [{r.start}, {r.stop}): p={r.p_value:.3g} at "
                f"{r.alpha:.3g} (φ {r.phi:.2f}), z²={r.strength:.1f}, effect {r.effect:.2f} σ, "
                f"relative {_relative(r.mean_before, r.mean_after):.3f}; "
                f"fails {'+'.join(fails) or 'none (the lone jump or a spike)'}"
            )
        if args.trend_oracle and n >= 20:
            for label, cuts in (("annotated", truth), ("binseg", theirs)):
                if cuts:
                    print(f"    trend oracle, {label}: {trend_oracle(x, cuts)}")
    print(
        f"# {args.half}: mean cover perfsleuth {totals['perfsleuth'] / max(count, 1):.3f}, "
        f"binseg-default {totals['binseg'] / max(count, 1):.3f} ({count} series)"
    )


if __name__ == "__main__":
    main()
