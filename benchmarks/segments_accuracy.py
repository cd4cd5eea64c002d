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
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from perfsleuth.datasets.segments import RunScore, RunTruth, score_run
from perfsleuth.findings import Finding
from perfsleuth.segments.detector import SegmentDetector

CORPUS = Path(__file__).resolve().parent / "data" / "segments"
WINDOWS = (1, 5)
CPUS = ("db", "all")


@dataclass(frozen=True)
class Outcome:
    run: str
    half: str
    window_s: int
    cpu: str
    score: RunScore
    findings: tuple[Finding, ...]
    seconds: float


def halves(corpus: Path) -> dict[str, str]:
    """Run name → ``tune`` or ``held``, from the corpus's ``halves.json`` (all ``tune``
    without one)."""
    path = corpus / "halves.json"
    if not path.exists():
        return {p.name: "tune" for p in sorted(corpus.iterdir()) if (p / "truth.json").exists()}
    raw = json.loads(path.read_text())
    return {run: half for half, runs in raw.items() for run in runs}


def analyse_run(folder: Path, window_s: int, cpu: str) -> tuple[tuple[Finding, ...], float]:
    """The segments family's findings on one configuration, read as the CLI reads it."""
    from perfsleuth.cli.inputs import WorkloadFormat, workload_source
    from perfsleuth.sources.load import read_source

    spec = workload_source(
        [folder / f"agg_{window_s}s.csv"],
        WorkloadFormat.aggregated,
        cpu=folder / f"cpu_{cpu}.csv",
    )
    started = time.process_time()
    frame, _ = read_source(spec)
    findings = SegmentDetector().detect(frame)
    return tuple(findings), time.process_time() - started


def run_all(corpus: Path, half: str | None, only: list[str]) -> list[Outcome]:
    out = []
    for run, part in sorted(halves(corpus).items()):
        if (half is not None and part != half) or (only and run not in only):
            continue
        truth = RunTruth.read(corpus / run / "truth.json")
        for window_s in WINDOWS:
            for cpu in CPUS:
                findings, seconds = analyse_run(corpus / run, window_s, cpu)
                score = score_run(findings, truth, hog_in_cpu=cpu == "all")
                out.append(Outcome(run, part, window_s, cpu, score, findings, seconds))
    return out


def _edges(score: RunScore) -> str:
    if score.hog_edges_s is None:
        return "-" if not score.hog_required else "missed"
    return f"{score.hog_edges_s[0]:+.0f}/{score.hog_edges_s[1]:+.0f}"


def table(outcomes: list[Outcome], truths: dict[str, RunTruth]) -> str:
    row = "{:<5} {:<4} {:>3} {:<3} {:<7} {:>7} {:<16} {:<5} {:<5} {:>9} {:>5} {:>5} {:<4}"
    header = ["run", "half", "win", "cpu", "changed", "change", "named", "first", "all", "hog"]
    header += ["fapp", "fanom", "pass"]
    lines = [row.format(*header)]
    for o in outcomes:
        s = o.score
        lines.append(
            row.format(
                o.run,
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
    for part in sorted({o.half for o in outcomes}):
        mine = [o for o in outcomes if o.half == part]
        lines.append(
            f"{part}: {sum(o.score.passed for o in mine)}/{len(mine)} configurations pass; "
            f"change within 10 s {sum(o.score.change_found for o in mine)}, changed type first "
            f"{sum(o.score.first_right for o in mine)}, hog edges within 10 s "
            f"{sum(o.score.hog_found for o in mine if o.score.hog_required)}/"
            f"{sum(o.score.hog_required for o in mine)}, false application changes "
            f"{sum(o.score.false_application for o in mine)}, false anomalies "
            f"{sum(o.score.false_anomalies for o in mine)}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=CORPUS, help="corpus folder")
    parser.add_argument("--half", choices=("tune", "held"), default=None)
    parser.add_argument("--only", nargs="*", default=[], help="run names")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each finding")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    outcomes = run_all(args.runs, args.half, args.only)
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
