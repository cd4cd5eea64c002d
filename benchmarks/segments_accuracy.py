#!/usr/bin/env python3
"""Workload segments on recorded real runs: the per-run outcome table (DESIGN §6).

Each run of the corpus (``benchmarks/data/segments/<run>/``, recorded on this 2-core machine
with co-tenants by ``scripts/cherkasova_experiment.py --record-only``; its README says how and
what the truth is) is read the way users give it to perfsleuth — the per-window table with
``--source aggregated`` and a CPU table with ``--cpu`` — in four configurations: 1 s and 5 s
windows × the database's own CPU (``db``) or the database + pgbench + hog (``all``). The
segments family's default detector analyses each, and :func:`score_run` judges the findings:

* **change**: the application change found, its start minus the real change (s), within 10 s;
* **named**: the types the finding names, in order; **first** whether the first is a changed
  type (and **all** whether every changed type is named);
* **hog**: the anomaly's edges minus the hog's (start, end; s), required within 10 s when the
  hog's CPU is in the series (``all``);
* **false app** / **false anom**: application changes away from the real one (at mix changes,
  under the hog) and anomalies away from the hog.

Runs are split in two halves: ``tune`` (looked at while the detector was developed) and
``held`` (not looked at until the end). Both are printed, with a summary per half.

Usage::

    .venv/bin/python benchmarks/segments_accuracy.py                  # the committed corpus
    .venv/bin/python benchmarks/segments_accuracy.py --runs build/corpus --half tune -v
    .venv/bin/python benchmarks/segments_accuracy.py --cpu-evidence   # what the CPU alone says
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from perfsleuth.cli.inputs import WorkloadFormat, workload_source
from perfsleuth.datasets.segments import RunScore, RunTruth, score_run
from perfsleuth.findings import Finding
from perfsleuth.segments.detector import SegmentDetector, _read
from perfsleuth.segments.kernels.cpumodel import ShiftTest, shift_test
from perfsleuth.segments.model import Windows
from perfsleuth.sources.load import read_source

CORPUS = Path(__file__).resolve().parent / "data" / "segments"
WINDOWS = (1, 5)
CPUS = ("db", "all")


@dataclass(frozen=True)
class Outcome:
    run: str
    group: str
    half: str
    window_s: int
    cpu: str
    score: RunScore
    findings: tuple[Finding, ...]
    seconds: float


def halves(corpus: Path) -> dict[str, tuple[str, str]]:
    """Run name → (group, half), from the corpus's ``halves.json``: ``{group: {"tune": [runs],
    "held": [runs]}}``; every run ``("runs", "tune")`` without one."""
    path = corpus / "halves.json"
    if not path.exists():
        runs = [p.name for p in sorted(corpus.iterdir()) if (p / "truth.json").exists()]
        return {run: ("runs", "tune") for run in runs}
    raw = json.loads(path.read_text())
    return {
        run: (group, half) for group, parts in raw.items() for half, runs in parts.items()
        for run in runs
    }  # fmt: skip


def configurations(
    corpus: Path, half: str | None, runs: list[str]
) -> Iterator[tuple[str, int, str, RunTruth]]:
    """(run, window, CPU table, truth) for every configuration of the corpus, in run order;
    only ``half``'s runs when given, only ``runs`` when any are named (the traces' selection)."""
    for run, (_, run_half) in sorted(halves(corpus).items()):
        if (half and run_half != half) or (runs and run not in runs):
            continue
        truth = RunTruth.read(corpus / run / "truth.json")
        for window_s in WINDOWS:
            for cpu in CPUS:
                yield run, window_s, cpu, truth


def analyse_run(folder: Path, window_s: int, cpu: str) -> tuple[tuple[Finding, ...], float]:
    """The segments family's findings on one configuration, read as the CLI reads it."""
    spec = workload_source(
        [folder / f"agg_{window_s}s.csv"],
        WorkloadFormat.aggregated,
        cpu=folder / f"cpu_{cpu}.csv",
    )
    started = time.process_time()
    frame, _ = read_source(spec)
    findings = SegmentDetector().detect(frame)
    return tuple(findings), time.process_time() - started


def run_all(
    corpus: Path, half: str | None, only: list[str], group: str | None = None
) -> list[Outcome]:
    out = []
    for run, (kind, part) in sorted(halves(corpus).items()):
        if (half is not None and part != half) or (only and run not in only):
            continue
        if group is not None and kind != group:
            continue
        truth = RunTruth.read(corpus / run / "truth.json")
        for window_s in WINDOWS:
            for cpu in CPUS:
                findings, seconds = analyse_run(corpus / run, window_s, cpu)
                score = score_run(findings, truth, hog_in_cpu=cpu == "all")
                out.append(Outcome(run, kind, part, window_s, cpu, score, findings, seconds))
    return out


def _edges(score: RunScore) -> str:
    if score.hog_edges_s is None:
        return "-" if not score.hog_required else "missed"
    return f"{score.hog_edges_s[0]:+.0f}/{score.hog_edges_s[1]:+.0f}"


def table(outcomes: list[Outcome], truths: dict[str, RunTruth]) -> str:
    row = "{:<5} {:<5} {:<4} {:>3} {:<3} {:<7} {:>7} {:<16} {:<5} {:<5} {:>9} {:>5} {:>5} {:<4}"
    header = [
        "run",
        "group",
        "half",
        "win",
        "cpu",
        "changed",
        "change",
        "named",
        "first",
        "all",
        "hog",
    ]
    header += ["fapp", "fanom", "pass"]
    lines = [row.format(*header)]
    for o in outcomes:
        s = o.score
        lines.append(
            row.format(
                o.run,
                o.group,
                o.half,
                f"{o.window_s}s",
                o.cpu,
                ",".join(truths[o.run].changed),
                "-" if s.change_offset_s is None else f"{s.change_offset_s:+.1f}",
                ",".join(s.named[:3]) or "-",
                "yes" if s.first_right else "no",
                "yes" if s.all_named else "no",
                _edges(s),
                s.false_application,
                s.false_anomalies,
                "yes" if s.passed else "NO",
            )
        )
    for group, part in sorted({(o.group, o.half) for o in outcomes}):
        mine = [o for o in outcomes if (o.group, o.half) == (group, part)]
        lines.append(
            f"{group} {part}: {sum(o.score.passed for o in mine)}/{len(mine)} configurations pass; "
            f"change within 10 s {sum(o.score.change_found for o in mine)}, changed type first "
            f"{sum(o.score.first_right for o in mine)}, hog edges within 10 s "
            f"{sum(o.score.hog_found for o in mine if o.score.hog_required)}/"
            f"{sum(o.score.hog_required for o in mine)}, false application changes "
            f"{sum(o.score.false_application for o in mine)}, false anomalies "
            f"{sum(o.score.false_anomalies for o in mine)}"
        )
    return "\n".join(lines)


def cpu_evidence(corpus: Path, half: str | None, only: list[str]) -> str:
    """What the CPU alone says, run by run, against the truth (``--cpu-evidence``).

    Per configuration, the per-type CPU-cost shift test
    (:func:`~perfsleuth.segments.kernels.cpumodel.shift_test`, HAC lag 20 s) at the real change
    (all windows before against all after, the hog's windows ±2 s left out) and at every mix
    change more than 20 s before it (on the windows before the real change): the changed
    types' ``t``, the type with the largest ``|t|``, and what the test names
    (:meth:`~perfsleuth.segments.kernels.cpumodel.ShiftTest.changed` at the detector's
    defaults; ``-``: nothing). Then the hog's CPU as the ``all`` series holds it (``all`` −
    ``db``, cores).
    """
    lines = ["run   win cpu changed  t of changed | largest |t| | named; named at each mix change"]
    for run, (_, part) in sorted(halves(corpus).items()):
        if (half is not None and part != half) or (only and run not in only):
            continue
        truth = RunTruth.read(corpus / run / "truth.json")
        hog = truth.hog or (truth.change_at, truth.change_at)
        hog0, hog1 = hog[0].timestamp(), hog[1].timestamp()
        change = truth.change_at.timestamp()
        for window_s in WINDOWS:
            for cpu in CPUS:
                spec = workload_source(
                    [corpus / run / f"agg_{window_s}s.csv"],
                    WorkloadFormat.aggregated,
                    cpu=corpus / run / f"cpu_{cpu}.csv",
                )
                data = _read(read_source(spec)[0])
                stamps = data.start.astype("datetime64[ms]").astype(np.float64) / 1e3
                rows = np.flatnonzero(~((stamps + data.width > hog0 - 2) & (stamps < hog1 + 2)))
                test, named = _shift_at(data, rows, stamps[rows] >= change)
                ts = {s.name: s.t for s in test.shifts}
                mine = " ".join(f"{c}:{ts.get(c, math.nan):+.1f}" for c in truth.changed)
                top = f"{test.shifts[0].name}:{test.shifts[0].t:+.1f}" if test.shifts else "-"
                early = rows[stamps[rows] < change]
                mixes = []
                for phase in truth.phase_starts[1:]:
                    edge = phase.timestamp()
                    n_before = int(np.sum(stamps[early] < edge))
                    if edge < change - 20 and min(n_before, len(early) - n_before) >= 10:
                        mixes.append(_shift_at(data, early, stamps[early] >= edge)[1])
                lines.append(
                    f"{run:<5} {window_s}s  {cpu:<3} {','.join(truth.changed):<8} {mine:<12} | "
                    f"{top:<11} | {named}; {' '.join(mixes)}"
                )
        share = json.loads((corpus / run / "truth.json").read_text())["hog_share"]
        both = pd.read_csv(corpus / run / "cpu_all.csv").merge(
            pd.read_csv(corpus / run / "cpu_db.csv"), on="time", suffixes=("_all", "_db")
        )
        during = (both["time"] > hog0 + 2) & (both["time"] < hog1 - 2)
        extra = (both["cpu_util_all"] - both["cpu_util_db"]) * both["cpu_cores_all"]
        inside, outside = float(extra[during].mean()), float(extra[~during].mean())
        lines.append(
            f"{run:<5} the hog: planned {share:.2f} of a core; all − db during it "
            f"{inside:.2f} cores, outside it {outside:.2f}"
        )
    return "\n".join(lines)


def _shift_at(
    data: Windows, rows: NDArray[np.intp], late: NDArray[np.bool_]
) -> tuple[ShiftTest, str]:
    """The shift test of ``rows`` split by ``late``, and the types it names (``-``: none)."""
    det = SegmentDetector()
    test = shift_test(
        data.counts[rows],
        data.cpu[rows],
        data.width[rows],
        late,
        names=data.types,
        lag=max(2, round(20 / float(np.median(data.width)))),
    )
    direction = det._direction(data, rows[~late], rows[late])
    return test, ",".join(test.changed(det.alpha, det.min_change, direction)) or "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=CORPUS, help="corpus folder")
    parser.add_argument("--half", choices=("tune", "held"), default=None)
    parser.add_argument("--group", default=None, help="runs of this group only (halves.json)")
    parser.add_argument("--only", nargs="*", default=[], help="run names")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each finding")
    parser.add_argument(
        "--cpu-evidence", action="store_true", help="what the CPU alone says (cpu_evidence)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    if args.cpu_evidence:
        logging.getLogger("perfsleuth").setLevel(logging.ERROR)
        print(cpu_evidence(args.runs, args.half, args.only))
        return 0
    outcomes = run_all(args.runs, args.half, args.only, args.group)
    truths = {o.run: RunTruth.read(args.runs / o.run / "truth.json") for o in outcomes}
    print(table(outcomes, truths))
    if args.verbose:
        for o in outcomes:
            print(f"\n{o.run} {o.window_s}s {o.cpu} ({o.seconds:.1f} s CPU):")
            for f in o.findings:
                print(f"  {f.kind.value:<20} {f.start:%H:%M:%S}-{f.end:%H:%M:%S} {f.explanation}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
