"""Bottleneck inference on the recorded real corpus: confusion table and calibration.

The corpus (``tests/data/bottleneck/``, recorded by ``scripts/bottleneck_real.py record``) holds
real counters of workloads run in cgroups on this shared 2-core machine beside co-tenant
load, recorded at 1 Hz by perfsleuth's own collector, each labelled with the bottleneck it was
built to have. Repetitions 1–2 are the half the model may be tuned on; 3–4 are held out. Each
recording goes through the detector with the built-in Linux model's defaults (no
calibration) and its headline state — ``none``, ``cpu``, ``disk`` or ``memory`` — is compared
with the label.

Printed per half: the confusion table (rows: label, columns: headline), the share right, and
how honest the probabilities are: the Brier score of the state probabilities (mean over
recordings of Σ_states (p − [state = label])², 0 is perfect, 2 the worst; beside it the score
of always answering with the half's label frequencies), the mean probability given to the
headline against the share of headlines that are right, and a reliability table (headline
probability bins: mean probability against the share right). Each miss is listed with the
measurement that explains it: the share of time the workload's threads ran or waited to run
(``runnable``) beside the share of time the device was busy.

Labels by construction assume the machine gives the workload the CPU it asks for. On this
shared machine it often does not: I/O workloads whose threads wait in the run queue longer than
their requests keep the device busy are CPU-starved, whatever they were built to do. A second
score uses the measured label: ``cpu`` for a recording labelled ``disk`` whose threads were
runnable a larger share of the time than the device was busy (both measured by the collector:
schedstat and /proc/diskstats), the construction label otherwise.

Run: .venv/bin/python benchmarks/bottleneck_accuracy.py [--half tune|held-out|both]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from perfsleuth.bottleneck.detector import BottleneckDetector  # noqa: E402
from perfsleuth.bottleneck.importers import to_model_counters  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "bottleneck"
STATES = ("none", "cpu", "disk", "memory")


def load_corpus(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every recording's counters (one entity each) and the labels."""
    labels = pd.read_csv(directory / "labels.csv")
    frames = [pd.read_parquet(path) for path in sorted(directory.glob("corpus-r*.parquet"))]
    return pd.concat(frames, ignore_index=True), labels


def judge(frame: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """One row per recording: label, headline, the probability of each state, and the
    measurements a miss is read with."""
    analysis = BottleneckDetector().analyse(frame)
    mapped = to_model_counters(frame)
    means = mapped.pivot_table(index="entity", columns="counter", values="value")
    rows = []
    by_entity = {e.entity: e for e in analysis.entities}
    for label in labels.itertuples():
        entity = by_entity[label.entity]
        p = dict(zip(entity.overall.states, entity.overall.p_state, strict=True))
        runnable = float(means.at[label.entity, "cg.cpu.runnable"])
        busy = float(means.at[label.entity, "disk.busy"])
        starved = label.expected == "disk" and runnable > busy
        rows.append(
            {
                "entity": label.entity,
                "scenario": label.scenario,
                "half": label.half,
                "built": label.expected,
                "measured": "cpu" if starved else label.expected,
                "headline": entity.state,
                "windows": len(entity.windows),
                **{f"p.{s}": float(p.get(s, 0.0)) for s in STATES},
                "runnable": runnable,
                "device_busy": busy,
                "load1": label.load1,
            }
        )
    return pd.DataFrame(rows)


def confusion(table: pd.DataFrame) -> str:
    lines = ["label \\ headline".ljust(18) + "".join(s.rjust(8) for s in STATES)]
    for state in STATES:
        mine = table[table["expected"] == state]
        if len(mine) == 0:
            continue
        counts = [int((mine["headline"] == s).sum()) for s in STATES]
        lines.append(f"{state} ({len(mine)})".ljust(18) + "".join(f"{c:8d}" for c in counts))
    return "\n".join(lines)


def brier(table: pd.DataFrame) -> tuple[float, float]:
    """The Brier score of the state probabilities, and of the label frequencies."""
    p = table[[f"p.{s}" for s in STATES]].to_numpy()
    truth = np.array([[float(e == s) for s in STATES] for e in table["expected"]])
    frequencies = truth.mean(axis=0)
    return float(np.mean(np.sum((p - truth) ** 2, axis=1))), float(
        np.mean(np.sum((frequencies - truth) ** 2, axis=1))
    )


def reliability(table: pd.DataFrame) -> str:
    """Headline probability bins: recordings, mean probability, share right."""
    p_head = np.array([row[f"p.{row['headline']}"] for _, row in table.iterrows()])
    right = (table["headline"] == table["expected"]).to_numpy()
    lines = ["  P(headline)   n   mean P   share right"]
    for low, high in ((0.0, 0.5), (0.5, 0.8), (0.8, 0.95), (0.95, 1.0001)):
        mask = (p_head >= low) & (p_head < high)
        if mask.any():
            lines.append(
                f"  [{low:.2f}, {min(high, 1):.2f}) {int(mask.sum()):3d}   "
                f"{p_head[mask].mean():.3f}    {right[mask].mean():.3f}"
            )
    return "\n".join(lines)


def report(table: pd.DataFrame, title: str, labels: str) -> None:
    table = table.assign(expected=table[labels])
    right = int((table["headline"] == table["expected"]).sum())
    score, baseline = brier(table)
    p_head = np.array([row[f"p.{row['headline']}"] for _, row in table.iterrows()])
    print(f"\n{title}, labels {labels}: {right} of {len(table)} right ({right / len(table):.0%})")
    print(confusion(table))
    print(
        f"Brier score {score:.3f} (label frequencies: {baseline:.3f}); mean P(headline) "
        f"{p_head.mean():.3f} against {right / len(table):.3f} right"
    )
    print(reliability(table))
    misses = table[table["headline"] != table["expected"]]
    for _, row in misses.iterrows():
        p = ", ".join(f"{s} {row[f'p.{s}']:.2f}" for s in STATES)
        print(
            f"  miss {row['entity']:22s} label {row['expected']:6s} headline "
            f"{row['headline']:6s} ({p}); threads runnable {row['runnable']:.2f}, device "
            f"busy {row['device_busy']:.2f}, load {row['load1']:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument(
        "--half", choices=("tune", "held-out", "both"), default="both", help="which to judge"
    )
    args = parser.parse_args()
    frame, labels = load_corpus(args.corpus)
    if args.half != "both":
        labels = labels[labels["half"] == args.half]
        frame = frame[frame["entity"].isin(set(labels["entity"]))]
    started = time.perf_counter()
    table = judge(frame, labels)
    elapsed = time.perf_counter() - started
    print(
        f"bottleneck accuracy on {len(table)} real recordings ({args.corpus}); built-in model, "
        f"defaults; analysed in {elapsed:.1f} s, load average {os.getloadavg()[0]:.2f}"
    )
    for labels in ("built", "measured"):
        for half, title in (("tune", "tuning half (repetitions 1-2)"), ("held-out", "held-out")):
            if (table["half"] == half).any():
                report(table[table["half"] == half], title, labels)
        if args.half == "both":
            report(table, "both halves", labels)


if __name__ == "__main__":
    main()
