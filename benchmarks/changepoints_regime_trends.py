"""Could a per-regime trend recover the short corpus's missed annotated points? (issue 17)

The default search describes a trending series by level points under one slope common to all
segments, plus kinks (a continuous change of slope) and hidden steps (a jump against the
segment's own line). A regime change that is a jump *and* a change of slope at once (Perron's
model C, "a crash followed by a bend"; presidential approval, declining within each term and
jumping at each new president) is none of these. This oracle asks whether such a model would
pay at all on the annotated points the defaults miss (no found point within 5):

* the annotated segmentation fitted with a line per segment (a level and a slope per regime):
  its residuals' AR(1) φ, beside φ about the piecewise-*constant* annotation;
* for each missed point i on the segment [a, e) between its annotated neighbours: z², the
  explained sum of squares of a jump and a change of slope at i over the segment's single
  line, in AR(1) long-run units (plug-in φ of the residuals about the two lines), and the sup
  of that z² over every position at least ``SIDE`` readings from either end (what a search
  would have to use);
* the bars: the largest over φ ∈ {0, .3, .5, .7, .8, .9} of the simulated upper quantile of
  each statistic on a straight line in stationary Gaussian AR(1) noise (as
  ``scripts/make_kink_table.py`` builds the kinks' and hidden steps' tables), at the level the
  search spends on the segment (α · (e − a) / n) and at half of it (the hidden steps' level).

``--found``: the detector's own final segments instead (on the scale it chose), each one's best
jump and bend against the bar at half the level spent — near an annotated point or not.
``--kink-stage``: on series whose trend the detector kept, each segment between its *level*
points, the best jump and bend beside the best kink, each against its own bar (a third kind
beside kinks and hidden steps would compete there).

The scan is O(n²) a series (fine for the short corpus; longer series are skipped).

Run: ``machine heavy .venv/bin/python benchmarks/changepoints_regime_trends.py [--half tune]
[--groups short,machine] [--reps 2000] [--log] [--per-phi] [--found | --kink-stage]``
(``--log``: positive series also on log y, the better verdict of the two scales counted; about
30 s a half).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.signal import lfilter

sys.path.insert(0, str(Path(__file__).parent))

import changepoints_accuracy as ca

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels import kinks

PHIS = (0.0, 0.3, 0.5, 0.7, 0.8, 0.9)
SIDE = kinks.MIN_SIDE
SEED = 20261129


@functools.cache
def _design(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each position k: the jump 1(t ≥ k) and the bend (t − k)₊, each less its projection
    on the line (1, t) — arrays (n, n) indexed [k, t] — and their 2 × 2 Gram inverses (n, 2, 2)."""
    t = np.arange(n, dtype=np.float64)
    tc = t - t.mean()
    stt = float(tc @ tc)
    k = t[:, None]
    jump = (t[None, :] >= k).astype(np.float64)
    bend = np.maximum(t[None, :] - k, 0.0)

    def less_line(v: np.ndarray) -> np.ndarray:
        return v - v.mean(axis=1, keepdims=True) - np.outer(v @ tc / stt, tc)

    jump, bend = less_line(jump), less_line(bend)
    gram = np.stack(
        [
            np.stack([np.einsum("kt,kt->k", jump, jump), np.einsum("kt,kt->k", jump, bend)], 1),
            np.stack([np.einsum("kt,kt->k", jump, bend), np.einsum("kt,kt->k", bend, bend)], 1),
        ],
        1,
    )
    inverse = np.full_like(gram, np.nan)
    ok = np.linalg.det(gram) > 1e-9 * np.maximum(gram[:, 0, 0] * gram[:, 1, 1], 1e-300)
    inverse[ok] = np.linalg.inv(gram[ok])
    return jump, bend, inverse


def z2_all(y: np.ndarray, only: int | None = None) -> np.ndarray:
    """z² of a jump and a bend at every position (rows of ``y``: series; NaN where there are
    fewer than ``SIDE`` readings either side), in AR(1) long-run units about the two lines."""
    y = np.atleast_2d(y)
    reps, n = y.shape
    t = np.arange(n, dtype=np.float64)
    tc = t - t.mean()
    resid = y - y.mean(axis=1, keepdims=True) - np.outer(y @ tc / float(tc @ tc), tc)
    jump, bend, inverse = _design(n)
    u = np.stack([resid @ jump.T, resid @ bend.T], axis=2)  # (reps, k, 2)
    beta = np.einsum("kij,rkj->rki", inverse, u)
    explained = np.einsum("rki,rki->rk", u, beta)
    out = np.full((reps, n), np.nan)
    positions = np.arange(SIDE, n - SIDE + 1) if only is None else [only]
    for k in positions:
        r = resid - beta[:, k, :1] * jump[k] - beta[:, k, 1:] * bend[k]
        rr = np.einsum("ij,ij->i", r, r)
        phi = np.clip(np.einsum("ij,ij->i", r[:, 1:], r[:, :-1]) / rr, 0.0, 0.99)
        variance = rr / (n - 4) * (1 + phi) / (1 - phi)
        out[:, k] = explained[:, k] / variance
    return out


def _ar1(rng: np.random.Generator, reps: int, n: int, phi: float) -> np.ndarray:
    e = rng.standard_normal((reps, n))
    e[:, 0] /= np.sqrt(1 - phi * phi)
    return lfilter([1.0], [1.0, -phi], e, axis=1)


@functools.cache
def null(n: int, reps: int) -> np.ndarray:
    """The sup over positions of z² of straight lines in AR(1) noise: (len(PHIS), reps)."""
    rng = np.random.default_rng(SEED + n)
    sup = []
    for phi in PHIS:
        z = np.concatenate(
            [z2_all(_ar1(rng, min(500, reps - i), n, phi)) for i in range(0, reps, 500)]
        )
        sup.append(np.nanmax(z, axis=1))
    return np.array(sup)


def bar(samples: np.ndarray, level: float) -> float:
    """The largest over φ of the upper ``level`` quantile."""
    return float(np.max(np.quantile(samples, 1 - level, axis=1)))


def pointwise_null(n: int, k: int, reps: int) -> np.ndarray:
    """z² at the one position ``k`` of straight lines in AR(1) noise: (len(PHIS), reps)."""
    rng = np.random.default_rng(SEED + 7 * n + k)
    out = []
    for phi in PHIS:
        z = np.concatenate(
            [z2_all(_ar1(rng, min(500, reps - i), n, phi), k)[:, k] for i in range(0, reps, 500)]
        )
        out.append(z)
    return np.array(out)


def phi_about(x: np.ndarray, cuts: list[int], slope: bool) -> float:
    """Lag-1 autocorrelation of the residuals about the annotated segments (a line each, or a
    mean each)."""
    b = [0, *cuts, x.size]
    r = np.empty_like(x)
    for a, e in itertools.pairwise(b):
        seg = x[a:e]
        if slope and e - a >= 3:
            t = np.arange(e - a, dtype=float)
            r[a:e] = seg - np.polyval(np.polyfit(t, seg, 1), t)
        else:
            r[a:e] = seg - seg.mean()
    return float(r[1:] @ r[:-1] / (r @ r)) if r @ r > 0 else 0.0


def _row(name: str, n: int, i: int, a: int, e: int, scale: str, rest: str) -> str:
    return f"{name:32} {n:4} {i:5} {f'[{a},{e})':>10} {scale:5} {rest}"


ORDER = (
    "missed",
    "sup-half",
    "sup",
    "known-only",
    "at-plug-in-φ",
    "sup-elsewhere",
    "not",
    "untestable",
)


def annotated(cases: list[ca.Case], args: argparse.Namespace) -> None:
    """Each missed annotated point on the segment between its annotated neighbours."""
    tally: dict[str, int] = {}
    upper: list[tuple[float, float, float, float]] = []  # F1, cover: found; found + recovered
    print(
        f"{'series':32} {'n':>4} {'point':>5} {'segment':>10} {'scale':5} {'φconst':>6} "
        f"{'φline':>6} {'z²@i':>7} {'bar_i':>6} {'sup z²':>7} {'at':>4} {'bar':>6} "
        f"{'bar/2':>6} {'bar@φ':>6}  verdict"
    )
    for case in cases:
        raw = np.asarray(case.values, float)
        n = raw.size
        truth = sorted(t for t in (case.points or []) if 0 < t < n)
        found = list(find_change_points(raw).indices)
        recovered = list(found)
        scales = [("raw", raw)]
        if args.log and np.all(raw > 0):
            scales.append(("log", np.log(raw)))
        b = [0, *truth, n]
        for j in range(1, len(b) - 1):
            a, i, e = b[j - 1], b[j], b[j + 1]
            if any(abs(f - i) <= 5 for f in found):
                continue
            tally["missed"] = tally.get("missed", 0) + 1
            level = args.alpha * (e - a) / n
            best, where = "untestable", i
            for scale, x in scales:
                phi_const = phi_about(x, truth, slope=False)
                phi_line = phi_about(x, truth, slope=True)
                head = _row(case.name, n, i, a, e, scale, f"{phi_const:6.2f} {phi_line:6.2f}")
                if min(i - a, e - i) < SIDE:
                    print(f"{head}  untestable (a side < {SIDE})")
                    continue
                z = z2_all(x[a:e])[0]
                sup_null = null(e - a, args.reps)
                at = int(np.nanargmax(z))
                point_bar = bar(pointwise_null(e - a, i - a, args.reps), level)
                full, half = bar(sup_null, level), bar(sup_null, level / 2)
                zi, zs = float(z[i - a]), float(z[at])
                # optimistic: the bar at the tabulated φ just above the plug-in about the lines
                col = min(int(np.searchsorted(PHIS, max(phi_line, 0.0))), len(PHIS) - 1)
                at_phi = float(np.quantile(sup_null[col], 1 - level))
                near = abs(at - (i - a)) <= 5
                verdict = (
                    "sup-half"
                    if zs > half and near
                    else "sup"
                    if zs > full and near
                    else "sup-elsewhere"
                    if zs > full
                    else "known-only"
                    if zi > point_bar
                    else "at-plug-in-φ"
                    if zs > at_phi and near
                    else "not"
                )
                if ORDER.index(verdict) < ORDER.index(best):
                    best, where = verdict, a + at
                print(
                    f"{head} {zi:7.1f} {point_bar:6.1f} {zs:7.1f} {a + at:4} {full:6.1f} "
                    f"{half:6.1f} {at_phi:6.1f}  {verdict}"
                )
                if args.per_phi and verdict != "not":
                    cells = "  ".join(
                        f"φ {p}: {np.quantile(s, 1 - level):.1f}"
                        for p, s in zip(PHIS, sup_null, strict=True)
                    )
                    print(f"{'':40} sup bar at each φ (level {level:.4f}): {cells}")
            tally[best] = tally.get(best, 0) + 1
            if best in ("sup-half", "sup"):
                recovered.append(where)
        upper.append(
            (
                ca.f1_margin(truth, found),
                ca.covering(truth, found, n),
                ca.f1_margin(truth, recovered),
                ca.covering(truth, recovered, n),
            )
        )
    print(f"\n{args.half}: missed annotated points, the best verdict over scales")
    for key in ORDER:
        print(f"  {key:14} {tally.get(key, 0)}")
    f1, cover, f1_up, cover_up = np.mean(upper, axis=0)
    print(
        f"F1 / cover of the defaults {f1:.3f} / {cover:.3f}; with every sup or sup-half "
        f"position added to the found points {f1_up:.3f} / {cover_up:.3f}"
    )


def found_segments(cases: list[ca.Case], args: argparse.Namespace) -> None:
    """Where the best jump and bend of the detector's own final segments (on the scale it
    chose) passes at half the level spent on the segment: near an annotated point or not."""
    hits = other = 0
    for case in cases:
        raw = np.asarray(case.values, float)
        result = find_change_points(raw)
        x = np.log(raw) if result.scale == "log" else raw
        n = x.size
        b = [0, *sorted(result.indices), n]
        for a, e in itertools.pairwise(b):
            if e - a < kinks.MIN_LENGTH:
                continue
            z = z2_all(x[a:e])[0]
            at = int(np.nanargmax(z))
            half = bar(null(e - a, args.reps), args.alpha * (e - a) / n / 2)
            if z[at] <= half:
                continue
            near = any(abs(t - (a + at)) <= 5 for t in (case.points or []))
            hits, other = hits + near, other + (not near)
            print(
                f"{case.group:8} {case.name:34} n {n} {result.scale:6} found "
                f"{list(result.indices)} truth {case.points} segment [{a},{e}): at {a + at} "
                f"z² {z[at]:.1f} > {half:.1f}  {'an annotated point' if near else 'none near'}"
            )
    print(f"\n{args.half}: {hits} near an annotated point, {other} not")


def _mark(k: int | None, truth: list[int] | None) -> str:
    return "T" if k is not None and any(abs(t - k) <= 5 for t in truth or []) else "-"


def kink_stage(cases: list[ca.Case], args: argparse.Namespace) -> None:
    """Series whose trend the detector kept (its kink stage ran): on each segment between its
    *level* points, the best kink and the best jump and bend, each z² against its own bar at the
    level spent (a jump and bend beside the kink, a third kind, would compete there)."""
    print(
        "segment: jump and bend at, z² / bar | kink at, z² / bar (T: an annotated point within 5)"
    )
    for case in cases:
        raw = np.asarray(case.values, float)
        result = find_change_points(raw)
        if not np.any(np.asarray(result.trend) != 0):
            continue
        x = np.log(raw) if result.scale == "log" else raw
        n = x.size
        levels = sorted(p.index for p in result.points if p.kind == "level")
        b = [0, *levels, n]
        for a, e in itertools.pairwise(b):
            if e - a < kinks.MIN_LENGTH:
                continue
            seg, level = x[a:e], args.alpha * (e - a) / n
            z = z2_all(seg)[0]
            at = int(np.nanargmax(z))
            jump_bar = bar(null(e - a, args.reps), level)
            scan = kinks.best_kink(seg, kinks.MIN_SIDE)
            kink, kink_z2 = None, math.nan
            if scan is not None and scan.denominator > 0:
                variance, _ = kinks.long_run(
                    scan.residual - scan.numerator / scan.denominator * scan.hinge
                )
                kink, kink_z2 = a + scan.k, scan.numerator**2 / scan.denominator / variance

            kink_bar = kinks.critical_z2(e - a, level)
            print(
                f"{case.group:8} {case.name:32} {result.scale:6} points "
                f"{[(p.index, p.kind) for p in result.points]} truth {case.points} "
                f"[{a},{e}): {a + at} {z[at]:.1f} / {jump_bar:.1f} {_mark(a + at, case.points)} | "
                f"{kink} {kink_z2:.1f} / {kink_bar:.1f} {_mark(kink, case.points)}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("tune", "held-out"), default="tune")
    parser.add_argument("--groups", default="short", help="corpus groups (comma-separated)")
    parser.add_argument("--reps", type=int, default=2000, help="null series per (n, φ)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--log", action="store_true", help="positive series on log y too")
    parser.add_argument("--per-phi", action="store_true", help="the sup bar at each φ")
    parser.add_argument(
        "--found", action="store_true", help="the detector's own final segments instead"
    )
    parser.add_argument(
        "--kink-stage", action="store_true", help="beside the kink, where the trend was kept"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    cases, _ = ca.corpus(ca.NAB_DEFAULT, ca.STRUCCHANGE_DEFAULT, args.groups.split(","))
    # one-column series short enough for the O(n²) scan
    cases = [c for c in cases if c.half == args.half and np.ndim(c.values) == 1 and c.n <= 700]
    mode = kink_stage if args.kink_stage else found_segments if args.found else annotated
    mode(cases, args)


if __name__ == "__main__":
    main()
