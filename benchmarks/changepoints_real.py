"""Change points on real operational series: perfsleuth against ruptures, scored on known truth.

The series are collected on a real machine with injected changes by
``scripts/collect_operational_series.py`` (``benchmarks/data/changepoints``: one CSV per series
and ``truth.json``): pgbench latency and throughput under a CPU hog, a client-count change, an
arrival-rate change, a periodic background job, a growing table, bursts of report queries, a
release, a dropped index, a configuration change; machine CPU and memory from ``/proc``; and
series with no change at all.

Every method uses the same settings on every series (no per-series tuning):

* ``perfsleuth`` — ``find_change_points(values)`` with its defaults; extra variants (named
  keyword sets in :data:`PERFSLEUTH_VARIANTS`, or any callable in :data:`EXTRA_METHODS`) are run
  when they accept a probe series and listed as unavailable when they raise ``TypeError``.
* ``binseg-l2`` / ``pelt-l2`` — ruptures ``Binseg(model="l2")`` and ``Pelt(model="l2")`` with
  ``min_size=5`` (perfsleuth's ``min_size``) and ``jump=1`` (every split is a candidate),
  with the usual penalties for a mean shift in Gaussian noise: ``σ̂² ln n`` (SIC/BIC, one
  parameter per change) and ``2 σ̂² ln n`` (BIC counting location and level); σ̂ is estimated
  robustly from first differences, ``1.4826 · MAD(diff) / √2``, which level shifts hardly move.
* ``pelt-rbf`` — ruptures ``Pelt(model="rbf")`` (median-heuristic kernel, so scale-free) with
  ``pen=10``, the value of ruptures' own basic-usage example, ``min_size=5``, ``jump=1``.

Scoring: a detected index is a true positive when it is within ``±max(3, round(n / 100))`` rows of
an injected change not already matched (a one-to-one matching of largest size, so two detections
of one change count one true and one false positive). Precision = TP / detected, recall = TP /
injected; on a series with no change, no detection is a perfect score and any detection is a
false alarm. Per series and in summary: TP, FP, FN, precision, recall, F1, mean location error
of the matches, and the time of each call.

Run: ``.venv/bin/python benchmarks/changepoints_real.py [--data DIR] [--method NAME] [--brief]``
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import pandas as pd  # noqa: E402

FloatArray = npt.NDArray[np.float64]
Detector = Callable[[FloatArray], Sequence[int]]

DATA = Path(__file__).resolve().parent / "data" / "changepoints"
MIN_SIZE = 5  # perfsleuth's default min_size, given to ruptures too
RBF_PENALTY = 10.0
STRUCTURES = ("none", "cycle", "trend", "outliers")

# Extra perfsleuth settings to compare with the defaults: name -> keyword arguments. A variant
# whose keywords find_change_points does not accept (TypeError) is reported and skipped.
PERFSLEUTH_VARIANTS: dict[str, dict[str, Any]] = {
    "perfsleuth raw": {"robust": False},
}
# Any other detector: name -> callable(values) -> indices (0-based first index of each new
# segment), run after the perfsleuth ones; one that raises TypeError on a probe is skipped too.
EXTRA_METHODS: dict[str, Detector] = {}


# -- scoring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    tp: int
    fp: int
    fn: int
    matches: tuple[tuple[int, int], ...]  # (true index, detected index)

    @property
    def precision(self) -> float:
        detected = self.tp + self.fp
        return self.tp / detected if detected else 1.0

    @property
    def recall(self) -> float:
        injected = self.tp + self.fn
        return self.tp / injected if injected else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    @property
    def location_error(self) -> float:
        """Mean |detected − true| over the matches (NaN without any)."""
        if not self.matches:
            return math.nan
        return float(np.mean([abs(d - t) for t, d in self.matches]))


def margin_for(n: int) -> int:
    """Tolerance in rows: ±max(3, 1% of n)."""
    return max(3, round(0.01 * n))


def score(
    truth: Sequence[int], detected: Sequence[int], n: int, margin: int | None = None
) -> Score:
    """Match detections to injected changes one-to-one within ``margin`` rows.

    Every window ``[t − m, t + m]`` has the same width, so taking the windows in order and giving
    each the earliest unused detection inside it is a largest matching. Detections left over are
    false positives (also a second detection of an already matched change, or a duplicate);
    injected changes left over are false negatives.
    """
    m = margin_for(n) if margin is None else margin
    found = sorted(int(d) for d in detected)
    used = [False] * len(found)
    matches = []
    for t in sorted(int(t) for t in truth):
        for j, d in enumerate(found):
            if not used[j] and t - m <= d <= t + m:
                used[j] = True
                matches.append((t, d))
                break
    tp = len(matches)
    return Score(tp, len(found) - tp, len(truth) - tp, tuple(matches))


# -- methods ----------------------------------------------------------------------------------


def noise_sigma(x: FloatArray) -> float:
    """Robust σ of the noise from first differences (1.4826 · MAD / √2), never 0."""
    d = np.diff(np.asarray(x, dtype=float))
    centred = np.abs(d - np.median(d))
    for spread in (1.4826 * np.median(centred), 1.2533 * np.mean(centred), np.std(d)):
        if spread > 0:  # counts and gauges can have a MAD of 0 (most differences equal)
            return float(spread / math.sqrt(2))
    return 1.0


def _ruptures_indices(bkps: Sequence[int], n: int) -> list[int]:
    """ruptures ends every segment (the last at n): drop n, the rest are first indices."""
    return [int(b) for b in bkps if b < n]


def ruptures_l2(search: str, factor: float) -> Detector:
    import ruptures as rpt

    cls = {"binseg": rpt.Binseg, "pelt": rpt.Pelt}[search]

    def detect(x: FloatArray) -> list[int]:
        pen = factor * noise_sigma(x) ** 2 * math.log(len(x))
        algo = cls(model="l2", min_size=MIN_SIZE, jump=1).fit(x)
        return _ruptures_indices(algo.predict(pen=pen), len(x))

    return detect


def ruptures_rbf(x: FloatArray) -> list[int]:
    import ruptures as rpt

    algo = rpt.Pelt(model="rbf", min_size=MIN_SIZE, jump=1).fit(x.reshape(-1, 1))
    return _ruptures_indices(algo.predict(pen=RBF_PENALTY), len(x))


def perfsleuth_detector(**options: Any) -> Detector:
    from perfsleuth import find_change_points

    def detect(x: FloatArray) -> list[int]:
        return list(find_change_points(x, **options).indices)

    return detect


def methods(selected: Sequence[str] | None = None) -> tuple[dict[str, Detector], list[str]]:
    """The methods to compare (name → detector) and notes on variants that are unavailable."""
    table: dict[str, Detector] = {"perfsleuth": perfsleuth_detector()}
    notes = []
    probe = np.r_[np.zeros(30), np.ones(30)] + np.tile([0.1, -0.1], 30)
    candidates = {name: perfsleuth_detector(**kw) for name, kw in PERFSLEUTH_VARIANTS.items()}
    for name, detector in {**candidates, **EXTRA_METHODS}.items():
        try:
            detector(probe)
        except TypeError as exc:
            notes.append(f"{name} {PERFSLEUTH_VARIANTS.get(name, '')}: not available ({exc})")
            continue
        table[name] = detector
    table.update(
        {
            "binseg-l2 σ²ln n": ruptures_l2("binseg", 1.0),
            "binseg-l2 2σ²ln n": ruptures_l2("binseg", 2.0),
            "pelt-l2 σ²ln n": ruptures_l2("pelt", 1.0),
            "pelt-l2 2σ²ln n": ruptures_l2("pelt", 2.0),
            "pelt-rbf pen=10": ruptures_rbf,
        }
    )
    if selected:
        table = {k: v for k, v in table.items() if any(s.lower() in k.lower() for s in selected)}
    return table, notes


# -- data -------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    values: FloatArray
    truth: list[int]
    info: dict[str, Any]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def structure(self) -> list[str]:
        return list(self.info.get("structure", ["none"]))


def load(data: Path = DATA) -> list[Case]:
    """Every series listed in ``truth.json`` with its values and injected change indices."""
    truth = json.loads((data / "truth.json").read_text())
    cases = []
    for name, info in truth["series"].items():
        frame = pd.read_csv(data / info["file"])
        if list(frame.columns) != ["time", "value"]:
            raise ValueError(f"{info['file']}: columns {list(frame.columns)}, not time, value")
        values = frame["value"].to_numpy(dtype=float)
        if len(values) != info["rows"] or not np.isfinite(values).all():
            raise ValueError(f"{info['file']}: {len(values)} rows or non-finite values")
        cases.append(Case(name, values, [int(i) for i in info["change_indices"]], info))
    return cases


# -- running and printing ---------------------------------------------------------------------


@dataclass
class Result:
    detected: list[int]
    score: Score
    seconds: float


@dataclass
class Totals:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    seconds: float = 0.0
    f1_change: list[float] = field(default_factory=list)
    alarms_quiet: int = 0  # false positives on series without an injected change
    quiet_hit: int = 0  # of those series, how many had any
    errors: list[float] = field(default_factory=list)
    fp_by_structure: dict[str, int] = field(default_factory=dict)
    f1_by_structure: dict[str, list[float]] = field(default_factory=dict)

    def add(self, case: Case, result: Result) -> None:
        s = result.score
        self.tp, self.fp, self.fn = self.tp + s.tp, self.fp + s.fp, self.fn + s.fn
        self.seconds += result.seconds
        self.errors += [abs(d - t) for t, d in s.matches]
        if case.truth:
            self.f1_change.append(s.f1)
        else:
            self.alarms_quiet += s.fp
            self.quiet_hit += s.fp > 0
        for kind in case.structure:
            self.fp_by_structure[kind] = self.fp_by_structure.get(kind, 0) + s.fp
            self.f1_by_structure.setdefault(kind, []).append(s.f1)


def run(cases: list[Case], table: dict[str, Detector]) -> dict[str, dict[str, Result]]:
    warm = np.r_[np.zeros(40), np.ones(40)] + np.tile([0.1, -0.1], 40)
    for detect in table.values():  # load tables and imports outside the timing
        detect(warm)
    results: dict[str, dict[str, Result]] = {}
    for case in cases:
        results[case.name] = {}
        for name, detect in table.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                started = time.perf_counter()
                found = sorted(int(i) for i in detect(case.values))
                seconds = time.perf_counter() - started
            results[case.name][name] = Result(found, score(case.truth, found, case.n), seconds)
    return results


def _fmt_list(values: Sequence[int], width: int = 44) -> str:
    text = ",".join(map(str, values)) or "-"
    return text if len(text) <= width else text[: width - 5] + f"… ({len(values)})"


def _ratio(x: float) -> str:
    return f"{x:.2f}"


def print_case(case: Case, results: dict[str, Result]) -> None:
    info = case.info
    effects = ", ".join(
        f"{c['index']} ({c.get('effect_sigma', '?')}σ)" for c in info.get("changes", [])
    )
    extra = []
    if info.get("cycle_period_rows"):
        extra.append(f"period {info['cycle_period_rows']} rows")
    if info.get("outlier_rows"):
        extra.append(f"{len(info['outlier_rows'])} burst rows")
    structure = "+".join(case.structure) + (f" ({', '.join(extra)})" if extra else "")
    print(f"\n== {case.name}: n={case.n}, {info.get('unit', '')}, margin ±{margin_for(case.n)}")
    print(f"   {info.get('metric', '')}")
    print(f"   truth: [{effects or 'no change'}]   structure: {structure}")
    head = f"   {'method':20s} {'detected':44s} {'TP':>3s} {'FP':>3s} {'FN':>3s}"
    print(head + f" {'P':>5s} {'R':>5s} {'F1':>5s} {'ms':>8s}")
    for name, r in results.items():
        s = r.score
        print(
            f"   {name:20s} {_fmt_list(r.detected):44s} {s.tp:3d} {s.fp:3d} {s.fn:3d} "
            f"{_ratio(s.precision):>5s} {_ratio(s.recall):>5s} {_ratio(s.f1):>5s} "
            f"{1e3 * r.seconds:8.1f}"
        )


def print_summary(cases: list[Case], results: dict[str, dict[str, Result]]) -> None:
    names = list(next(iter(results.values())))
    totals = {name: Totals() for name in names}
    for case in cases:
        for name in names:
            totals[name].add(case, results[case.name][name])
    n_change = sum(1 for c in cases if c.truth)
    n_quiet = len(cases) - n_change
    injected = sum(len(c.truth) for c in cases)
    print(
        f"\n== summary: {len(cases)} series, {injected} injected changes in {n_change} series, "
        f"{n_quiet} series without a change"
    )
    print(
        f"   {'method':20s} {'TP':>4s} {'FP':>4s} {'FN':>4s} {'P':>5s} {'R':>5s} {'F1':>5s} "
        f"{'meanF1':>6s} {'quiet FP':>9s} {'loc err':>7s} {'ms':>8s}"
    )
    for name, t in totals.items():
        s = Score(t.tp, t.fp, t.fn, ())
        mean_f1 = float(np.mean(t.f1_change)) if t.f1_change else math.nan
        loc = float(np.mean(t.errors)) if t.errors else math.nan
        print(
            f"   {name:20s} {t.tp:4d} {t.fp:4d} {t.fn:4d} {_ratio(s.precision):>5s} "
            f"{_ratio(s.recall):>5s} {_ratio(s.f1):>5s} {mean_f1:6.2f} "
            f"{f'{t.alarms_quiet} in {t.quiet_hit}/{n_quiet}':>9s} {loc:7.2f} "
            f"{1e3 * t.seconds:8.1f}"
        )
    print("   P, R, F1 pooled over all series; meanF1 over series with a change; quiet FP: false")
    print("   alarms on series without a change (in how many of them); loc err: mean |Δ| rows.")
    kinds = [k for k in STRUCTURES if any(k in c.structure for c in cases)]
    counts = {k: sum(1 for c in cases if k in c.structure) for k in kinds}
    print("\n== by structure: false positives (mean F1)")
    print(f"   {'method':20s} " + " ".join(f"{f'{k} ({counts[k]})':>16s}" for k in kinds))
    for name, t in totals.items():
        cells = [
            f"{t.fp_by_structure.get(k, 0):4d} ({np.mean(t.f1_by_structure.get(k, [np.nan])):.2f})"
            for k in kinds
        ]
        print(f"   {name:20s} " + " ".join(f"{c:>16s}" for c in cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder with truth.json")
    parser.add_argument(
        "--method", action="append", help="only methods whose name contains this (repeatable)"
    )
    parser.add_argument("--brief", action="store_true", help="summary tables only")
    args = parser.parse_args(argv)
    cases = load(args.data)
    table, notes = methods(args.method)
    if not table:
        parser.error("no method matches --method")
    for note in notes:
        print(note)
    results = run(cases, table)
    if not args.brief:
        for case in cases:
            print_case(case, results[case.name])
    print_summary(cases, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
