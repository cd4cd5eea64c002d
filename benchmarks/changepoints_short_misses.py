"""Which gate of the search decides each miss and each false point on real annotated series
(issue 17): `changepoints_short_gates.py`'s attribution, on the short corpus instead of
synthetic steps.

A **miss** is an annotated change with no reported point within the F1 margin (5); a **false
point** is a reported point with no annotation within 5. Each is put down to a gate two ways.

*Trace* (the first gate that lost it, the search instrumented as it runs with the defaults):

* ``scale``: the other scale's description (raw or log, step 6) had a point there, and lost
  the raw-vs-log comparison;
* ``no candidate``: in the last noise round of the search with no slope, no seeded interval
  proposed a split within 5 (``rounds`` says if an earlier round had one);
* ``greedy``: proposed, but the greedy pass kept a stronger split whose interval holds it;
* ``small`` / ``cost`` / ``one observation`` / ``test``: pruned between its neighbours for its
  effect (under ``min_effect`` σ, or the relative floor), its z² under its cost, resting on one
  observation, or not significant (FPA and lone jump; its p and φ are printed);
* ``re-placement``: kept, then moved more than 5 away to the best split between its neighbours;
* ``trend``: kept by the search with no slope, lost in the trend stage (the start chosen by BIC,
  ``_prune_with_trend``, kinks).

A false point is put down to the stage that placed it (the search with no slope, a trend start,
a kink) with its margins: z² over its cost, p, effect in noise σ.

*Counterfactual* (the gates off one at a time, the whole search run again): a miss is
``recovered`` when some point then lies within 5 of it, a false point ``gone`` when none does.
A threshold off shows what that threshold alone holds back; a stage off (cycle, transform, trend,
log scale, re-placement) what it costs or brings.

Run: ``.venv/bin/python benchmarks/changepoints_short_misses.py [--half tune] [--per-series]``
(about 20 s). The held-out half (``--half held-out``) is for reading once, not for tuning.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import changepoints_accuracy as ca
from kernel_patch import bindings, patched

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels import level, search, seeded

MARGIN = ca.MARGIN
GATES = (
    "scale", "no candidate", "greedy", "small", "cost", "one observation", "test",
    "re-placement", "trend",
)  # fmt: skip


@dataclasses.dataclass
class Round:
    """One noise round of one search: what the seeded candidates, the greedy pass and each
    pruning made of it."""

    candidates: list[int] = dataclasses.field(default_factory=list)
    found: list[int] = dataclasses.field(default_factory=list)
    # per pruning pass: (points in, kept, {index: reason dropped}, points re-placed)
    passes: list[tuple[list[int], list[int], dict[int, str], list[int]]] = dataclasses.field(
        default_factory=list
    )
    costs: dict[int, float] = dataclasses.field(default_factory=dict)
    noise: tuple[float, float, float] = (np.nan, np.nan, np.nan)  # (φ, long-run σ, implied φ)
    independent: float = np.nan  # the observations the cost counts


@dataclasses.dataclass
class Run:
    slope: bool
    sym: np.ndarray | None = None  # the symmetrised series searched
    rounds: list[Round] = dataclasses.field(default_factory=list)
    kept: list[int] = dataclasses.field(default_factory=list)
    dropped: dict[int, Any] = dataclasses.field(default_factory=dict)  # index: ChangePoint


@dataclasses.dataclass
class Description:
    scale: str
    min_size: int = 5
    runs: list[Run] = dataclasses.field(default_factory=list)
    before_trend_pruning: list[int] | None = None
    after_trend_pruning: list[int] | None = None
    before_kinks: list[int] | None = None
    accepted: list[int] = dataclasses.field(default_factory=list)
    kinks: list[int] = dataclasses.field(default_factory=list)


class Tracer:
    """Wraps the search's stages (module attributes looked up at call time) and records each
    description, search, noise round and pruning pass."""

    def __init__(self) -> None:
        self.descriptions: list[Description] = []
        self.min_effect = search.DEFAULT_MIN_EFFECT

    @property
    def run(self) -> Run:
        return self.descriptions[-1].runs[-1]

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        # the methods patched on their class, the functions in every kernel module binding them
        run_of = level._Practical.run
        names = (
            "_describe", "seeded_candidates", "greedy", "prune", "refine", "_cost",
            "_beyond_one_observation", "_prune_with_trend", "_with_kinks", "_symmetrised",
            "_long_run_scale", "_independent",
        )  # fmt: skip
        tracer = self
        real: dict[str, Any] = {name: vars(bindings(name)[0])[name] for name in names}
        real["run"] = run_of
        one_observation: list[tuple[int, int, int, bool]] = []

        def describe(x: Any, practical: Any, *rest: Any) -> Any:
            scale = "log" if practical.log_levels else "linear"
            tracer.descriptions.append(Description(scale, practical.min_size))
            out = real["_describe"](x, practical, *rest)
            record = tracer.descriptions[-1]
            record.accepted = sorted(p.index for p in out.accepted)
            record.kinks = sorted(k.index for k in out.bends)
            return out

        def run(
            self: Any, level: Any, slope: Any = None, previous: Any = None, measured: Any = None
        ) -> Any:
            tracer.descriptions[-1].runs.append(Run(slope is not None and bool(np.any(slope))))
            kept, dropped = real["run"](self, level, slope, previous, measured)
            tracer.run.kept = sorted(p.index for p in kept)
            tracer.run.dropped = {p.index: p for p in dropped}
            return kept, dropped

        def candidates(*args: Any, **kwargs: Any) -> Any:
            out = real["seeded_candidates"](*args, **kwargs)
            # the yardstick of this round: (φ, σ, implied φ) and the cost's independent count
            noise, count = (pending[0], pending[1]) if len(pending) == 2 else ((np.nan,) * 3, 0)
            tracer.run.rounds.append(
                Round(candidates=sorted(int(i) for i in out.index), noise=noise, independent=count)
            )
            return out

        def greedy(found: Any) -> Any:
            out = real["greedy"](found)
            tracer.run.rounds[-1].found = sorted(int(i) for i in out.index)
            return out

        def cost(penalty: float, n: int, shorter: int, independent: float) -> float:
            value = float(real["_cost"](penalty, n, shorter, independent))
            if tracer.descriptions and tracer.descriptions[-1].runs and tracer.run.rounds:
                tracer.run.rounds[-1].costs[shorter] = value
            return value

        def beyond(
            z: Any, columns: Any, a: int, i: int, b: int, paid: float, short: int = 0
        ) -> bool:
            out = bool(real["_beyond_one_observation"](z, columns, a, i, b, paid, short))
            one_observation.append((a, i, b, out))
            return out

        def prune(points: list[int], n: int, judge: Any, test: Any = None) -> Any:
            reasons: dict[int, str] = {}
            costs = tracer.run.rounds[-1].costs

            def judged(a: int, i: int, b: int) -> seeded.Judged:
                one_observation.clear()
                verdict: seeded.Judged = judge(a, i, b)
                if verdict.passes is False:
                    paid = costs.get(min(i - a, b - i), np.inf)
                    if not verdict.effect >= tracer.min_effect:
                        reasons[i] = "small"
                    elif verdict.strength < paid:
                        reasons[i] = "cost"
                    elif one_observation and not one_observation[-1][3]:
                        reasons[i] = "one observation"
                    else:
                        reasons[i] = "small"  # the relative floor (long series only)
                return verdict

            def tested(verdict: seeded.Judged) -> bool:
                passes = bool(test(verdict))
                if not passes:
                    reasons[verdict.index] = "test"
                return passes

            kept, gone = real["prune"](points, n, judged, tested if test else None)
            why = {g.index: reasons.get(g.index, "?") for g in gone}
            tracer.run.rounds[-1].passes.append((list(points), [k.index for k in kept], why, []))
            return kept, gone

        def refine(
            prefix: Any, points: list[int], min_size: int, pinned: Any = (), best: Any = None
        ) -> list[int]:
            out: list[int] = real["refine"](prefix, points, min_size, pinned, best)
            if tracer.run.rounds and tracer.run.rounds[-1].passes:
                tracer.run.rounds[-1].passes[-1][3][:] = out
            return out

        def prune_with_trend(y: Any, slope: Any, accepted: Any, resolution: Any) -> Any:
            record = tracer.descriptions[-1]
            record.before_trend_pruning = sorted(p.index for p in accepted)
            out = real["_prune_with_trend"](y, slope, accepted, resolution)
            record.after_trend_pruning = sorted(p.index for p in out[1])
            return out

        def with_kinks(y: Any, slope: Any, accepted: Any, judged: Any, search: Any) -> Any:
            tracer.descriptions[-1].before_kinks = sorted(p.index for p in accepted)
            return real["_with_kinks"](y, slope, accepted, judged, search)

        def symmetrised(xc: Any, unit: Any = None) -> Any:
            out = real["_symmetrised"](xc, unit)
            if tracer.descriptions and tracer.descriptions[-1].runs:
                tracer.run.sym = out[:, 0].copy()
            return out

        pending: list[Any] = []

        def long_run_scale(*args: Any) -> Any:
            out = real["_long_run_scale"](*args)
            pending[:] = [out]
            return out

        def independent(*args: Any) -> float:
            out = float(real["_independent"](*args))
            pending.append(out)
            return out

        wrappers: dict[str, Callable[..., Any]] = {
            "_describe": describe, "run": run, "seeded_candidates": candidates,
            "greedy": greedy, "prune": prune, "refine": refine, "_cost": cost,
            "_beyond_one_observation": beyond, "_prune_with_trend": prune_with_trend,
            "_with_kinks": with_kinks, "_symmetrised": symmetrised,
            "_long_run_scale": long_run_scale, "_independent": independent,
        }  # fmt: skip
        level._Practical.run = wrappers.pop("run")  # type: ignore[method-assign]
        try:
            with patched(wrappers):
                yield
        finally:
            level._Practical.run = run_of  # type: ignore[method-assign]


def near(points: list[int], at: int) -> bool:
    return any(abs(p - at) <= MARGIN for p in points)


def split_at(run: Run, at: int, min_size: int) -> str:
    """The best split within the margin of ``at`` on the segment between the search's kept
    points, judged by the last noise round's yardstick: its z² against its cost, the noise's φ."""
    last, sym = run.rounds[-1], run.sym
    if sym is None or not np.isfinite(last.noise[1]) or last.noise[1] <= 0:
        return ""
    n = sym.size
    cuts = [p for p in run.kept if abs(p - at) > MARGIN]
    a = max([0, *(p for p in cuts if p < at)])
    b = min([n, *(p for p in cuts if p > at)])
    best = (-1.0, at)
    for i in range(max(at - MARGIN, a + min_size), min(at + MARGIN, b - min_size) + 1):
        nl, nr = i - a, b - i
        z2 = nl * nr / (nl + nr) * (sym[a:i].mean() - sym[i:b].mean()) ** 2 / last.noise[1] ** 2
        best = max(best, (float(z2), i))
    if best[0] < 0:
        return f"no room on [{a}, {b})"
    z2, i = best
    paid = search._cost(search.DEFAULT_PENALTY, n, min(i - a, b - i), last.independent)
    return f"z² {z2:.1f} at {i} on [{a}, {b}), cost {paid:.1f}, φ {last.noise[0]:.2f}"


def deciding_run(described: Description) -> Run:
    """The search whose points the description ended with: the chosen trend start's last
    search when a trend was kept, else the search with no slope."""
    ends = [r for r in described.runs if r.kept == described.before_trend_pruning]
    return ends[-1] if described.before_trend_pruning is not None and ends else described.runs[0]


def oracle(described: Description, truth: list[int], at: int) -> tuple[float, float]:
    """(z², cost) of the annotated change at ``at`` between its annotated neighbours, on the
    scale the search judged it (symmetrised; less the slope when a trend was kept), in units
    of the white-noise σ of the first differences (MAD / √2: no persistence counted) — whether
    the change is in the data as a shift at all."""
    sym = deciding_run(described).sym
    if sym is None:
        return np.nan, np.nan
    n = sym.size
    a = max([0, *(t for t in truth if t < at)])
    b = min([n, *(t for t in truth if t > at)])
    diffs = np.diff(sym)
    sigma = 1.4826 * float(np.median(np.abs(diffs - np.median(diffs)))) / np.sqrt(2)
    if not sigma > 0:
        sigma = float(np.std(diffs)) / np.sqrt(2)
    nl, nr = at - a, b - at
    z2 = nl * nr / (nl + nr) * (sym[a:at].mean() - sym[at:b].mean()) ** 2 / sigma**2
    return float(z2), float(search._cost(search.DEFAULT_PENALTY, n, min(nl, nr), n))


def first_losing_gate(described: Description, at: int) -> tuple[str, str]:
    """(gate, detail) of a change at ``at`` that ``described`` does not report."""
    run = described.runs[0]  # the search with no slope
    if near(run.kept, at):
        for stage, points in (
            ("the start chosen by BIC", described.before_trend_pruning),
            ("_prune_with_trend", described.after_trend_pruning),
            ("kinks", described.accepted),
        ):
            if points is not None and not near(points, at):
                return "trend", stage
        return "trend", "?"
    chosen = deciding_run(described)
    if chosen is not run:  # a trend kept: judge the miss in the search the chosen start ended
        gate, detail = judged_in(chosen, at, described.min_size)
        return gate, ", ".join(s for s in ("with the slope removed", detail) if s)
    return judged_in(run, at, described.min_size)


def judged_in(run: Run, at: int, min_size: int) -> tuple[str, str]:
    """(gate, detail) of a change at ``at`` that the search ``run`` does not keep."""
    last = run.rounds[-1]
    rounds = ""
    for k, earlier in reversed(list(enumerate(run.rounds[:-1]))):
        if earlier.passes and near(earlier.passes[-1][1], at):
            rounds = f"kept in noise round {k + 1} of {len(run.rounds)}"
            break
        reasons = [why[i] for _, _, why, _ in earlier.passes for i in why if abs(i - at) <= MARGIN]
        if reasons:
            rounds = f"{reasons[-1]} in noise round {k + 1} of {len(run.rounds)}"
            break
    if not near(last.candidates, at):
        picture = split_at(run, at, min_size)
        return "no candidate", ", ".join(s for s in (picture, rounds) if s)
    if not near(last.found, at):
        return "greedy", rounds
    for points, kept, why, placed in last.passes:
        if not near(points, at):
            break
        lost = [i for i in why if abs(i - at) <= MARGIN]
        if lost and not near(kept, at):
            i = lost[-1]
            p: Any
            detail = f"at {i}"
            if why[i] == "test" and i in run.dropped:
                p = run.dropped[i]
                detail += f", p {p.p_value:.2g} φ {p.phi:.2f}"
            elif i in run.dropped:
                p = run.dropped[i]
                paid = last.costs.get(min(i - p.start, p.stop - i), np.nan)
                detail += f" on [{p.start}, {p.stop}), z² {p.strength:.1f}, cost {paid:.1f}"
                detail += f", {p.effect:.2f} σ" if why[i] == "small" else ""
            return why[i], ", ".join(s for s in (detail, rounds) if s)
        if placed and not near(placed, at):
            return "re-placement", rounds
    return "?", rounds


# -- the counterfactuals: one gate off, the whole search again ---------------------------------


def _no_cycle(x: Any, min_size: int, first: Any = None) -> Any:
    return x, (), np.zeros_like(x)


OFF: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "cycle": ({}, {"_without_cycle": _no_cycle}),
    "transform": ({}, {"_symmetrised": lambda xc, unit=None: xc.copy()}),
    "min_effect": ({"min_effect": 0.0}, {}),
    "cost": ({"penalty": 0.0}, {}),
    "one observation": ({}, {"_beyond_one_observation": lambda *a: True}),
    "test": ({}, {"_rejects": lambda *a: True}),
    "re-placement": ({}, {"refine": lambda prefix, points, m, pinned=(), best=None: list(points)}),
    "noise rounds": ({}, {"_NOISE_ROUNDS": 1}),
    "trend": ({}, {"_TREND_MIN_LENGTH": 10**12}),
    "log scale": ({}, {"_may_grow": lambda *a: False}),
    "judgement (all four)": (
        {"min_effect": 0.0, "penalty": 0.0},
        {"_beyond_one_observation": lambda *a: True, "_rejects": lambda *a: True},
    ),
}


def found_without(x: np.ndarray, gate: str) -> list[int]:
    kwargs, patches = OFF[gate]
    with patched(patches):
        return list(find_change_points(x, **kwargs).indices)


@dataclasses.dataclass
class Verdicts:
    # (series, annotated index, gate, detail, gates whose removal recovers it, oracle z², cost)
    misses: list[tuple[str, int, str, str, list[str], float, float]] = field(default_factory=list)
    # (series, index, stage, detail, gates whose removal drops it)
    false: list[tuple[str, int, str, str, list[str]]] = field(default_factory=list)
    annotated: int = 0
    reported: int = 0


def diagnose(case: ca.Case, verdicts: Verdicts) -> None:
    x = np.asarray(case.values, float)
    tracer = Tracer()
    with tracer.active():
        result = find_change_points(x)
    found = list(result.indices)
    truth = list(case.points or [])
    verdicts.annotated += len(truth)
    verdicts.reported += len(found)
    by_scale = {d.scale: d for d in tracer.descriptions}
    chosen = by_scale[result.scale]
    other = [d for d in tracer.descriptions if d.scale != result.scale]
    missed = [t for t in truth if not near(found, t)]
    false = [f for f in found if not near(truth, f)]
    if not missed and not false:
        return
    alternatives = {gate: found_without(x, gate) for gate in OFF}
    for t in missed:
        if other and near(other[0].accepted, t):
            gate, detail = "scale", f"the {other[0].scale} description had it"
        else:
            gate, detail = first_losing_gate(chosen, t)
        recovered = [g for g, pts in alternatives.items() if near(pts, t)]
        z2, paid = oracle(chosen, truth, t)
        verdicts.misses.append((case.name, t, gate, detail, recovered, z2, paid))
    for f in false:
        point = next(p for p in result.points if p.index == f)
        first = chosen.runs[0]
        if point.kind == "slope":
            stage = "kink"
        elif f in first.kept:
            stage = "level search (no slope)"
        else:
            stage = "trend start"
        bar = deciding_run(chosen).rounds[-1].costs.get(min(f - point.start, point.stop - f))
        margin = f"z²/cost {point.strength / bar:.2f}, " if bar else ""
        detail = f"{stage}, {result.scale}; {margin}p {point.p_value:.2g}, {point.effect:.1f} σ"
        gone = [g for g, pts in alternatives.items() if not near(pts, f)]
        verdicts.false.append((case.name, f, stage, detail, gone))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", default="tune", choices=("tune", "held-out", "both"))
    parser.add_argument("--per-series", action="store_true", help="one line per miss/false point")
    parser.add_argument("--groups", default="short", help="annotated groups: short, machine")
    parser.add_argument("--mirror", type=Path, default=ca.MIRROR_DEFAULT)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    groups = args.groups.split(",")
    cases, notes = ca.corpus(ca.NAB_DEFAULT, ca.STRUCCHANGE_DEFAULT, groups, args.mirror)
    for note in notes:
        print("note:", note)
    verdicts = Verdicts()
    for case in cases:
        if args.half in ("both", case.half):
            diagnose(case, verdicts)
    print(
        f"{args.groups}, {args.half}: {verdicts.annotated} annotated changes, "
        f"{len(verdicts.misses)} missed; {verdicts.reported} points reported, "
        f"{len(verdicts.false)} false (margin {MARGIN})"
    )
    if args.per_series:
        print(
            "\n| series | annotated | oracle z² / cost | first losing gate | detail | "
            "recovered, off |"
        )
        print("|---|---|---|---|---|---|")
        for name, t, gate, detail, recovered, z2, paid in verdicts.misses:
            print(
                f"| {name} | {t} | {z2:.1f} / {paid:.1f} | {gate} | {detail} | "
                f"{', '.join(recovered) or '–'} |"
            )
        print("\n| series | point | placed by | margins | gone with off |")
        print("|---|---|---|---|---|")
        for name, f, _, detail, gone in verdicts.false:
            print(f"| {name} | {f} | {detail.split(';')[0]} | {detail.split('; ')[1]} | "
                  f"{', '.join(gone) or '–'} |")  # fmt: skip
    gates = collections.Counter(m[2] for m in verdicts.misses)
    shown = collections.Counter(m[2] for m in verdicts.misses if m[5] >= m[6])
    print("\nmisses by first losing gate (of them, the annotated shift worth its cost as white")
    print("noise between its annotated neighbours):")
    print(", ".join(f"{g} {gates[g]} ({shown[g]})" for g in GATES if gates[g]))
    stages = collections.Counter(f[2] for f in verdicts.false)
    print("false points by stage:", ", ".join(f"{s} {c}" for s, c in stages.most_common()))
    print("\n| gate off | misses recovered | false points gone |")
    print("|---|---|---|")
    for gate in OFF:
        rec = sum(gate in m[4] for m in verdicts.misses)
        dropped = sum(gate in f[4] for f in verdicts.false)
        print(f"| {gate} | {rec} of {len(verdicts.misses)} | {dropped} of {len(verdicts.false)} |")


if __name__ == "__main__":
    main()
