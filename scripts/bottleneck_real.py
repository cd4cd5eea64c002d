"""Real bottleneck scenarios on this machine: record the corpus, or run the live experiment.

Each scenario (``tests/support/bottleneck_scenarios.py``) runs a workload in its own cgroup
beside a co-tenant load (stress-ng or fio in another cgroup, on top of whatever else the
shared machine runs), while perfsleuth's own collector samples the machine and the workload's
cgroup at 1 Hz.

    record   write each repetition's counters to DIR/corpus-r<N>.parquet and its labels to
             DIR/labels.csv (the committed corpus: tests/data/bottleneck/)
    live     record, then infer each recording at once with the built-in model's defaults and
             print the confusion table (the live experiment; docs/bottleneck.md keeps results)

Run as root, with fio and stress-ng, not niced (the workload and its co-tenant run at nice 0;
whoever else uses the machine should be niced to 19, and /work/notes/recording.lock taken):
    .venv/bin/python scripts/bottleneck_real.py record --repetitions 1 2 3 4 \\
        --out tests/data/bottleneck
    .venv/bin/python scripts/bottleneck_real.py record --repetitions 5 6 7 8 --seconds 18 \\
        --out tests/data/bottleneck/controlled
    .venv/bin/python scripts/bottleneck_real.py live [--repetitions 1] [--only idle,cpu-bound]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

# the scenarios are a test harness (tests/support), not part of the library
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.bottleneck_scenarios import (
    RealScenario,
    Recording,
    record_all,
    scenarios,
    unavailable,
)

LABELS = (
    "entity",
    "scenario",
    "expected",
    "repetition",
    "half",
    "started",
    "load1",
    "fio_iops",
    "fio_bw_bytes",
    "note",
)
TUNING = (1, 2, 5, 6, 10, 11)
"""Repetitions the model may be tuned on (1-2 of the heavy-load corpus, 5-6 of the controlled
one, 10-11 of the shared one); every other one is held out."""


def _half(repetition: int) -> str:
    return "tune" if repetition in TUNING else "held-out"


def _label(rec: Recording, repetition: int) -> dict[str, object]:
    return {
        "entity": rec.entity,
        "scenario": rec.scenario.name,
        "expected": rec.scenario.expected,
        "repetition": repetition,
        "half": _half(repetition),
        "started": datetime.fromtimestamp(rec.started, UTC).isoformat(timespec="seconds"),
        "load1": round(rec.load[0], 2),
        "fio_iops": round(rec.fio.get("iops", float("nan")), 1),
        "fio_bw_bytes": round(rec.fio.get("bw_bytes", float("nan")), 0),
        "note": rec.scenario.note,
    }


def _chosen(
    only: str | None, cotenant: str | None = None, flat: bool = False
) -> list[RealScenario]:
    every = list(scenarios())
    if cotenant is not None:  # instead of the default co-tenant (a scenario's own one stays)
        default = RealScenario("", "").cotenant
        every = [
            replace(s, cotenant=tuple(cotenant.split())) if s.cotenant == default else s
            for s in every
        ]
    if flat:
        every = [replace(s, cotenant_grouped=False) for s in every]
    if only is None:
        return every
    names = only.split(",")
    unknown = sorted(set(names) - {s.name for s in every})
    if unknown:
        raise SystemExit(f"unknown scenario(s): {', '.join(unknown)}")
    return [s for s in every if s.name in names]


def _show(rec: Recording) -> None:
    print(
        f"{datetime.now(UTC):%H:%M:%S} {rec.entity:24s} load {rec.load[0]:5.2f} "
        f"{len(rec.frame):6d} rows fio {rec.fio.get('iops', 0):9.0f} IOPS",
        file=sys.stderr,
        flush=True,
    )


def record_corpus(
    out: Path, repetitions: list[int], chosen: list[RealScenario], seconds: float
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    labels = out / "labels.csv"
    for repetition in repetitions:
        recs = record_all(chosen, [repetition], seconds=seconds, progress=_show)
        frame = pd.concat([r.frame for r in recs], ignore_index=True)
        frame.to_parquet(out / f"corpus-r{repetition}.parquet", index=False, compression="zstd")
        fresh = not labels.exists()
        with labels.open("a", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=LABELS)
            if fresh:
                writer.writeheader()
            writer.writerows(_label(r, repetition) for r in recs)


def live(repetitions: list[int], chosen: list[RealScenario], seconds: float) -> None:
    from perfsleuth.bottleneck.detector import BottleneckDetector

    detector = BottleneckDetector()
    rows = []
    started = time.monotonic()
    for rec in record_all(chosen, repetitions, seconds=seconds, progress=_show):
        analysis = detector.analyse(rec.frame)
        (entity,) = analysis.entities
        state = entity.state
        rows.append((rec.scenario.name, rec.scenario.expected, state))
        mark = "ok  " if state == rec.scenario.expected else "MISS"
        print(f"{mark} {rec.entity:24s} expected {rec.scenario.expected:6s} got {state:6s}")
    states = ("none", *detector.resources())
    print(f"\n{'scenario (expected)':34s}" + "".join(f"{s:>8s}" for s in states))
    for name in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == name]
        counts = [sum(r[2] == s for r in mine) for s in states]
        print(f"{name + ' (' + mine[0][1] + ')':34s}" + "".join(f"{c:8d}" for c in counts))
    right = sum(r[1] == r[2] for r in rows)
    print(
        f"correct: {right} of {len(rows)} ({time.monotonic() - started:.0f} s; load average "
        f"{os.getloadavg()[0]:.2f} at the end)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("record", "live"))
    parser.add_argument("--repetitions", type=int, nargs="+", default=[1])
    parser.add_argument("--only", help="comma-separated scenario names")
    parser.add_argument("--seconds", type=float, default=24.0, help="sampled per recording")
    parser.add_argument("--out", type=Path, default=Path("tests/data/bottleneck"))
    parser.add_argument(
        "--cotenant",
        help="command line of the co-tenant instead of 'stress-ng --cpu 2 -q' (scenarios "
        "with a co-tenant of their own keep it)",
    )
    parser.add_argument(
        "--flat",
        action="store_true",
        help="co-tenants beside the recorder, not in a cgroup of their own (each of their "
        "threads then competes with the workload's whole cgroup)",
    )
    args = parser.parse_args()
    why = unavailable()
    if why is not None:
        print(f"cannot run: {why}", file=sys.stderr)
        return 2
    chosen = _chosen(args.only, args.cotenant, args.flat)
    if args.mode == "record":
        record_corpus(args.out, args.repetitions, chosen, args.seconds)
    else:
        live(args.repetitions, chosen, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
