"""Changes of growth rate (kinks, ``perfsleuth.changepoints.kernels.kinks``): their size and
power with the defaults, and where the corpus gets them.

* ``--null``: straight lines (a rise of 3 noise σ of the innovations per 100 readings) in
  stationary Gaussian AR(1) noise, φ ∈ {0, .3, .5, .7, .8, .9} and a random walk (φ = 1), n ∈
  {40, 120}: the share of series whose defaults report a slope point (any point) — the whole
  detector, every gate, against α = .05;
* ``--power``: the same lines with a kink at 60% of the series whose slope rises by ``Δ`` times
  the original (a 5 σ-per-100-readings rise bending to 1 + Δ times it): the share with a slope
  point within 5 readings of it;
* ``--corpus``: every series of ``benchmarks/changepoints_accuracy.py``'s groups (``--half``)
  whose defaults report a slope point: its slopes, z² against its bar, φ, and the annotation;
* ``--competitions``: in the ``--power`` cells, the BIC competitions of the level points
  against the broken line alone, decided at the noise's effective count ν (the detector) and
  at n (wrapping ``search._bic``), and the series where the two differ;
* ``--gates``: whether the kinks' own gates hold back the corpus's slope changes: the
  ``--groups`` series (both halves) with each gate loosened alone — the test's bar × .4 (about
  the bar at φ .5 instead of .9, what a bar at an upper confidence bound of φ would give at
  40–120 readings), the cost × .3, the effect floor × .5 — F1 and cover per group and half
  against the defaults, and the series whose points move.

Run: ``machine heavy .venv/bin/python benchmarks/changepoints_kinks.py --null --power``
(``--reps 200`` series a cell; ``--competitions``); ``.venv/bin/python
benchmarks/changepoints_kinks.py --corpus --half tune``; ``.venv/bin/python
benchmarks/changepoints_kinks.py --gates --groups short,machine,events``
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.signal import lfilter

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfsleuth import find_change_points

PHIS = (0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0)
SEED = 17


def noise(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    e = rng.standard_normal(n)
    if phi >= 1.0:
        return np.cumsum(e)
    e[0] /= math.sqrt(1 - phi * phi)
    return lfilter([1.0], [1.0, -phi], e)


def line(n: int, bend: float = 0.0, rise: float = 3.0) -> np.ndarray:
    t = np.arange(n, dtype=float)
    at = round(0.6 * n)
    return 100.0 + rise / 100 * t + bend * rise / 100 * np.maximum(t - at, 0.0)


def null(reps: int) -> None:
    print(f"straight lines in AR(1) noise, {reps} series per cell: share with a slope point "
          "(with any point)")  # fmt: skip
    print("n     " + "  ".join(f"φ={p:<12}" for p in PHIS))
    for n in (40, 120):
        cells = []
        for phi in PHIS:
            rng = np.random.default_rng([SEED, n, round(phi * 100)])
            slope = points = 0
            for _ in range(reps):
                cp = find_change_points(line(n) + noise(rng, n, phi))
                slope += any(p.kind == "slope" for p in cp.points)
                points += bool(cp.points)
            cells.append(f"{slope / reps:.3f} ({points / reps:.3f})")
        print(f"{n:<5} " + "  ".join(f"{c:<14}" for c in cells), flush=True)


def power(reps: int) -> None:
    print(f"a kink at 60% (slope × (1 + Δ)), {reps} series per cell: share with a slope point "
          "within 5 readings")  # fmt: skip
    for n in (40, 120):
        for phi in (0.0, 0.5, 0.9):
            cells = []
            for bend in (1.0, 2.0, 4.0, 8.0):
                rng = np.random.default_rng([SEED + 1, n, round(phi * 100), round(bend)])
                at = round(0.6 * n)
                hits = 0
                for _ in range(reps):
                    cp = find_change_points(line(n, bend, rise=5.0) + noise(rng, n, phi))
                    hits += any(p.kind == "slope" and abs(p.index - at) <= 5 for p in cp.points)
                cells.append(f"Δ={bend:g}: {hits / reps:.3f}")
            print(f"n={n:<4} φ={phi:<4} " + "  ".join(cells), flush=True)


def competitions(reps: int) -> None:
    """The ``--power`` cells' competitions of the level points against the broken line alone
    (``bends._with_kinks``): how many, and how many the broken line wins counted at the
    noise's effective count ν (the detector) and at n (as before the kink-ν round)."""
    from kernel_patch import patched

    from perfsleuth.changepoints.kernels import bends, trend

    bic, with_kinks = trend._bic, bends._with_kinks
    scored: list[tuple[np.ndarray, int, float | None, np.ndarray | None]] = []
    inside = [False]
    alone = [False]  # whether the competition has a broken line alone

    def recorded(
        resid: np.ndarray,
        params: int,
        independent: float | None = None,
        resolution: np.ndarray | None = None,
        bounded: bool = True,
    ) -> float:
        if inside[0] and bounded:  # (the log-or-linear choice's are not the kinks')
            scored.append((resid, params, independent, resolution))
        return bic(resid, params, independent, resolution, bounded)

    def watched(*args, **kwargs):  # type: ignore[no-untyped-def]
        inside[0] = True
        judged = args[3]
        alone[0] = bool(args[2]) and bool(judged(args[0], [0, args[0].size]))
        try:
            return with_kinks(*args, **kwargs)
        finally:
            inside[0] = False

    print(f"kink competitions in the --power cells, {reps} series per cell: "
          "competitions, broken line wins at ν, at n (series decided differently)")  # fmt: skip
    with patched({"_bic": recorded, "_with_kinks": watched}):
        for n in (40, 120):
            for phi in (0.0, 0.5, 0.9):
                cells = []
                for bend in (1.0, 2.0, 4.0, 8.0):
                    rng = np.random.default_rng([SEED + 1, n, round(phi * 100), round(bend)])
                    held = [0, 0, 0]
                    differ = []
                    for rep in range(reps):
                        scored.clear()
                        find_change_points(line(n, bend, rise=5.0) + noise(rng, n, phi))
                        if len(scored) < 2 or not alone[0]:
                            continue  # no broken line alone (a third: steps beside it)
                        (levels, k_levels, nu, floor), (broken, k_broken, _, _) = scored[:2]
                        at_nu = bic(broken, k_broken, nu, floor) < bic(levels, k_levels, nu, floor)
                        at_n = bic(broken, k_broken, None, floor) < bic(
                            levels, k_levels, None, floor
                        )
                        held = [held[0] + 1, held[1] + at_nu, held[2] + at_n]
                        if at_nu != at_n:
                            differ.append(rep)
                    cells.append(f"Δ={bend:g}: {held[0]} {held[1]} {held[2]} {differ}")
                print(f"n={n:<4} φ={phi:<4} " + "  ".join(cells), flush=True)


def corpus(half: str | None, groups: str) -> None:
    from changepoints_accuracy import NAB_DEFAULT, STRUCCHANGE_DEFAULT
    from changepoints_accuracy import corpus as cases_of

    cases, _ = cases_of(NAB_DEFAULT, STRUCCHANGE_DEFAULT, groups.split(","))
    for case in cases:
        if half and case.half != half:
            continue
        cp = find_change_points(case.values)
        slopes = [p for p in cp.points if p.kind == "slope"]
        if not slopes:
            continue
        truth = case.points if case.points is not None else case.windows
        levels = [p.index for p in cp.points if p.kind == "level"]
        print(f"{case.group} {case.half} {case.name} n={case.n} annotated={truth} level={levels}")
        for p in slopes:
            growth = f"{p.slope_before[0]:+.4g} → {p.slope_after[0]:+.4g}/reading"
            test = f"z² {p.statistic:.1f} > {p.critical_value:.1f}"
            test += f" (p {p.p_value:.2g}, α {p.alpha:.3g})"
            print(f"    slope {p.index} on [{p.start}, {p.stop}): {growth}, {test}, "
                  f"φ {p.phi:.2f}, effect {p.effect:.1f} σ")  # fmt: skip


def gates(groups: str) -> None:
    from changepoints_accuracy import NAB_DEFAULT, STRUCCHANGE_DEFAULT, covering, f1_margin
    from changepoints_accuracy import corpus as cases_of
    from kernel_patch import patched

    from perfsleuth.changepoints.kernels import kinks

    bar, judge = kinks.critical_z2, kinks.judge

    def lower_bar(length: int, alpha: float, table: kinks.Table = kinks.TABLE_Z2) -> float:
        return bar(length, alpha, table) * (0.4 if table is kinks.TABLE_Z2 else 1.0)

    def loosened(cost: float = 1.0, effect: float = 1.0):  # type: ignore[no-untyped-def]
        def judged(y: np.ndarray, **options):  # type: ignore[no-untyped-def]
            paid = options["cost"]
            options["cost"] = lambda *a: cost * paid(*a)
            options["min_effect"] *= effect
            return judge(y, **options)

        return {"judge": judged}

    variants = {
        "defaults": {},
        "bar × .4": {"critical_z2": lower_bar},
        "cost × .3": loosened(cost=0.3),
        "effect × .5": loosened(effect=0.5),
    }
    cases = [c for c in cases_of(NAB_DEFAULT, STRUCCHANGE_DEFAULT, groups.split(","))[0]
             if c.points is not None]  # fmt: skip
    found: dict[str, list[tuple[int, ...]]] = {}
    for name, values in variants.items():
        with patched(values):
            found[name] = [find_change_points(c.values).indices for c in cases]
    print("F1 / cover per group and half; the series whose points move")
    for name, points in found.items():
        cells = []
        for group in dict.fromkeys(c.group for c in cases):
            for half in ("tune", "held-out"):
                rows = [(c, p) for c, p in zip(cases, points, strict=True)
                        if c.group == group and c.half == half]  # fmt: skip
                f1 = np.mean([f1_margin(c.points, p) for c, p in rows])
                cover = np.mean([covering(c.points, p, c.n) for c, p in rows])
                cells.append(f"{group} {half} {f1:.3f} / {cover:.3f}")
        pairs = zip(cases, found["defaults"], points, strict=True)
        moved = [f"{c.name} {list(a)} → {list(b)}" for c, a, b in pairs if a != b]
        print(f"{name}: " + ", ".join(cells))
        print("    moved: " + ("; ".join(moved) or "none"), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--null", action="store_true")
    parser.add_argument("--power", action="store_true")
    parser.add_argument("--corpus", action="store_true")
    parser.add_argument("--competitions", action="store_true")
    parser.add_argument("--gates", action="store_true")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--half", choices=("tune", "held-out"))
    parser.add_argument("--groups", default="short,machine,events,nab")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.null:
        null(args.reps)
    if args.power:
        power(args.reps)
    if args.competitions:
        competitions(args.reps)
    if args.corpus:
        corpus(args.half, args.groups)
    if args.gates:
        gates(args.groups)


if __name__ == "__main__":
    main()
