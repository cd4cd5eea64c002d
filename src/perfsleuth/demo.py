"""``perfsleuth demo``: every detector family that exists, on seeded data, end to end.

Nothing touches the network: data come from :mod:`perfsleuth.datasets`, go through the same
frame validation, store, detectors, report and JSON-lines output that real data do.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from perfsleuth.datasets import simulate_mm1, transaction_scenario
from perfsleuth.diagnose import diagnose
from perfsleuth.findings import Finding, write_jsonl
from perfsleuth.frames import Coverage, coverage_of, normalise
from perfsleuth.registry import create
from perfsleuth.store import Store

__all__ = ["DemoResult", "demo_frames", "run_demo"]

START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class DemoResult:
    findings: list[Finding]
    report: Path
    jsonl: Path
    store: Path
    coverage: tuple[Coverage, ...]


def demo_frames(seed: int = 7) -> dict[str, pd.DataFrame]:
    """Seeded frames for every contract a detector family reads, with known changes.

    The M/M/1 services are reported as 2-second means, as a monitoring agent would:

    * ``checkout``: M/M/1, arrival rate up 60% at customer 1,500 of 3,000 (ρ .5 → .8);
    * ``search``: M/M/1, mean service time up 50% at customer 2,000 of 4,000 (ρ .3 → .45),
      the signature of a slower release;
    * ``inventory``: M/M/1 at ρ .6 with no change (a control: nothing should be reported);
    * ``workload``: three days of a 7-type web shop in 5-minute windows: a bottleneck (day 1
      10:00–10:30), a stuck connection pool (day 2 14:00–14:40), aborted transactions (day 3
      09:00–09:20), and a workload shift on day 2 that must not be flagged.
    """
    runs = [
        (
            "checkout",
            simulate_mm1(
                3000,
                arrival_rate=25.0,
                service_time=0.020,
                change_at=1500,
                new_arrival_rate=40.0,
                seed=seed,
            ),
        ),
        (
            "search",
            simulate_mm1(
                4000,
                arrival_rate=15.0,
                service_time=0.020,
                change_at=2000,
                new_service_time=0.030,
                seed=seed + 1,
            ),
        ),
        ("inventory", simulate_mm1(3000, arrival_rate=30.0, service_time=0.020, seed=seed + 2)),
    ]
    metric = pd.concat(
        [run.to_metric_frame(entity=name, start=START, interval_s=2.0) for name, run in runs]
    )
    return {
        "metric": normalise(metric, "metric", source="demo:mm1"),
        "workload": transaction_scenario(seed).frame,
    }


def run_demo(out_dir: Path, store_path: Path, *, seed: int = 7) -> DemoResult:
    """Simulate, store, detect, and write ``report.html`` and ``findings.jsonl`` to ``out_dir``."""
    from perfsleuth.registry import names
    from perfsleuth.report import changepoint_section, workload_section, write_html

    frames = demo_frames(seed)
    detectors = [create(name) for name in names()]
    out_dir.mkdir(parents=True, exist_ok=True)
    with Store(store_path) as store:
        run_id = store.begin_run("perfsleuth demo")
        for contract, frame in frames.items():
            store.write_frame(frame, contract, source="demo")
        findings = diagnose(frames, detectors)
        store.write_findings(findings, run_id=run_id)
        store.finish_run(run_id, status="ok", n_findings=len(findings))
    coverage = tuple(c for f in frames.values() if (c := coverage_of(f)) is not None)
    report = write_html(
        out_dir / "report.html",
        findings,
        series=frames["metric"],
        coverage=coverage,
        sections=[changepoint_section(frames["metric"]), workload_section(frames["workload"])],
        title="perfsleuth demo",
    )
    jsonl = out_dir / "findings.jsonl"
    jsonl.write_text(write_jsonl(findings), encoding="utf-8")
    return DemoResult(findings, Path(report), jsonl, store_path, coverage)
