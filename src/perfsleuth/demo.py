"""``perfsleuth demo``: every detector family on seeded data, end to end.

Nothing touches the network: data come from :mod:`perfsleuth.datasets`, go through the same
frame validation, run path (:mod:`perfsleuth.pipeline`), store, report and JSON-lines output
that real data do. The five
families share one calendar (2024-05-01 to 2024-05-04 UTC), so the report's timeline reads as
the story of one estate:

* **change points** (Berry & Hellerstein): three M/M/1 services, 2-second means, 2024-05-01
  09:00 — ``checkout`` gets 60% more traffic half-way, ``search`` a 50% slower release,
  ``inventory`` nothing (a control: nothing may be reported);
* **transaction mix** (Kelly): three days of the 7-type ``webshop`` in 5-minute windows — a
  bottleneck (day 1 10:00–10:30), a stuck connection pool (day 2 14:00–14:40), aborted
  transactions (day 3 09:00–09:20) and a harmless workload shift on day 2;
* **workload segments** (Cherkasova et al.): the paper's seven-phase experiment on the
  ``bookstore`` from 2024-05-02 06:00, one-minute windows — load steps, a CPU hog (anomaly),
  new mixes (workload changes) and two releases that make ``home`` slower (application changes);
* **process pathologies** (Kaminski): a fleet of 14 nodes, two days in 5-minute samples, one
  scenario each — loops, constrained loops, a hum, a leak, saw-tooths, a capped group, missing
  capture, and busy but legitimate jobs that must not be reported;
* **bottlenecks** (Blake & Breese): five minutes of OS counters on 2024-05-03 12:00 from
  ``db-1`` (random reads: disk), ``web-1`` (CPU) and ``cache-1`` (page-cache thrashing:
  memory), with the upgrade catalogue and a target of twice today's throughput;
* **one incident across families**: the ``shop`` service on node ``app-1``, 2024-05-04
  08:00–11:00 in one-minute windows; at 09:00 a release makes ``checkout`` three times as
  expensive. Its latency rises (change points), the mix no longer explains it (Kelly), the
  ``checkout`` type costs more CPU (Cherkasova et al.), and ``app-1``'s counters from 09:30
  show the CPU saturated (Blake & Breese): one incident, one chain. ``[[topology]]`` says
  ``shop`` runs on ``app-1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from perfsleuth.datasets import simulate_mm1, transaction_scenario
from perfsleuth.frames import normalise
from perfsleuth.incidents import Topology
from perfsleuth.pipeline import Input, Outputs, Plan, RunResult, Step, run

if TYPE_CHECKING:
    from perfsleuth.processes.rules import ProcessRules

__all__ = ["DemoData", "demo_data", "demo_frames", "demo_plan", "run_demo"]

START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
BOOKSTORE_START = datetime(2024, 5, 2, 6, 0, tzinfo=UTC)
COUNTERS_START = datetime(2024, 5, 3, 12, 0, tzinfo=UTC)
FLEET_START = "2024-05-01"
SHOP_START = datetime(2024, 5, 4, 8, 0, tzinfo=UTC)
SHOP_RELEASE_MINUTE = 60
"""The ``shop`` release: ``checkout`` costs three times as much from 09:00."""
SHOP_TOPOLOGY = Topology.of([("shop", ["app-1"])])

#: (entity, scenario) of the bottleneck family: the scenario fixes the bottleneck.
COUNTER_HOSTS: tuple[tuple[str, str], ...] = (
    ("db-1", "rand_read"),
    ("web-1", "cpu"),
    ("cache-1", "memory"),
)


@dataclass(frozen=True, slots=True, eq=False)
class DemoData:
    """The seeded frames of every family, normalised, and the process rules of the fleet."""

    metric: pd.DataFrame
    webshop: pd.DataFrame
    bookstore: pd.DataFrame
    processes: pd.DataFrame
    counters: pd.DataFrame
    shop: pd.DataFrame
    rules: ProcessRules


def demo_data(seed: int = 7) -> DemoData:
    """Every family's seeded frame (see the module docstring for what each holds)."""
    from perfsleuth.datasets.counters import simulate_scenario
    from perfsleuth.datasets.fleet import simulate_fleet
    from perfsleuth.datasets.segments import cherkasova_scenario

    runs = [
        (
            "checkout",
            simulate_mm1(
                6000,
                arrival_rate=25.0,
                service_time=0.020,
                change_at=3000,
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
    shop = _shop(seed)
    metric = pd.concat(
        [
            *(run.to_metric_frame(entity=name, start=START, interval_s=2.0) for name, run in runs),
            _latency(shop, "shop"),
        ]
    )
    webshop = transaction_scenario(seed).frame
    paper = cherkasova_scenario(seed, windows=40).frame
    shift = pd.Timestamp(BOOKSTORE_START) - paper["time"].iloc[0]
    bookstore = pd.DataFrame(paper)  # a copy without the old coverage
    bookstore.attrs = {}
    bookstore["time"] = paper["time"] + shift
    fleet = simulate_fleet(14, days=2, seed=seed, start=FLEET_START)
    counters = pd.concat(
        [
            simulate_scenario(
                scenario,
                seed=seed + k,
                samples=60,
                interval_s=5.0,
                entity=entity,
                start=COUNTERS_START,
            ).frame
            for k, (entity, scenario) in enumerate(COUNTER_HOSTS)
        ]
        + [
            simulate_scenario(
                "cpu",
                seed=seed + 10,
                samples=60,
                interval_s=5.0,
                entity="app-1",
                start=SHOP_START + pd.Timedelta(minutes=90),
            ).frame
        ],
        ignore_index=True,
    )
    return DemoData(
        metric=normalise(metric, "metric", source="demo: M/M/1 services"),
        webshop=normalise(webshop, "workload", source="demo: webshop transaction log"),
        bookstore=normalise(bookstore, "workload", source="demo: bookstore (Cherkasova et al.)"),
        processes=normalise(fleet.frame, "process", source="demo: fleet of 14 nodes"),
        counters=normalise(counters, "counter", source="demo: OS counters"),
        shop=shop,
        rules=fleet.rules,
    )


def _shop(seed: int) -> pd.DataFrame:
    """Three hours of the ``shop`` in one-minute windows, with the 09:00 release."""
    from perfsleuth.datasets.transactions import Release, simulate_transactions

    return simulate_transactions(
        180,
        window_s=60.0,
        peak_util=0.3,
        cpu_cores=4,
        mix_drift=1.0,  # a shop's mix swings over the day: what tells the types' costs apart
        releases=(Release(SHOP_RELEASE_MINUTE, "checkout", 3.0),),
        start=SHOP_START,
        seed=seed,
    ).frame


def _latency(workload: pd.DataFrame, service: str) -> pd.DataFrame:
    """Mean response time per window of a workload frame, as a metric frame (seconds)."""
    total = sum(workload[c] for c in workload.columns if str(c).startswith("rt_sum["))
    count = sum(workload[c] for c in workload.columns if str(c).startswith("n["))
    return pd.DataFrame(
        {
            "time": workload["time"],
            "entity": service,
            "metric": "latency",
            "value": total / count,
            "unit": "s",
        }
    )


def demo_frames(seed: int = 7) -> dict[str, pd.DataFrame]:
    """One seeded frame per contract (the web shop is the workload frame)."""
    data = demo_data(seed)
    return {
        "metric": data.metric,
        "workload": data.webshop,
        "process": data.processes,
        "counter": data.counters,
    }


def demo_plan(out_dir: Path, store_path: Path, *, seed: int = 7) -> Plan:
    """Every family on its own seeded data, with the parameters its command would use: the
    store, ``report.html`` and ``findings.jsonl`` in ``out_dir``."""
    from perfsleuth.bottleneck.detector import BottleneckDetector
    from perfsleuth.changepoints.detector import ChangePointDetector
    from perfsleuth.processes.detector import ProcessDetector
    from perfsleuth.segments.detector import SegmentDetector
    from perfsleuth.workload.detector import MixAnomalyDetector

    data = demo_data(seed)
    inputs = (
        Input("metric", "metric", frame=data.metric, label="demo"),
        Input("webshop", "workload", frame=data.webshop, label="webshop"),
        Input("bookstore", "workload", frame=data.bookstore, label="bookstore"),
        Input("process", "process", frame=data.processes, label="demo"),
        Input("counter", "counter", frame=data.counters, label="demo"),
        Input("shop", "workload", frame=data.shop, label="shop"),
    )
    steps = (
        Step(ChangePointDetector(), "metric"),
        Step(MixAnomalyDetector(entity="webshop"), "webshop"),
        Step(SegmentDetector(entity="bookstore"), "bookstore"),
        Step(ProcessDetector(rules=data.rules), "process"),
        Step(BottleneckDetector(upgrades=str(_upgrade_catalogue()), target_factor=2.0), "counter"),
        Step(MixAnomalyDetector(entity="shop"), "shop"),
        Step(SegmentDetector(entity="shop"), "shop"),
    )
    outputs = Outputs(
        store=store_path,
        report=out_dir / "report.html",
        jsonl=out_dir / "findings.jsonl",
        title="perfsleuth demo",
    )
    return Plan(inputs, steps, outputs, command="perfsleuth demo", topology=SHOP_TOPOLOGY)


def run_demo(out_dir: Path, store_path: Path, *, seed: int = 7) -> RunResult:
    """Simulate, store, analyse, and write ``report.html`` and ``findings.jsonl``."""
    return run(demo_plan(out_dir, store_path, seed=seed))


def _upgrade_catalogue() -> Path:
    import perfsleuth.bottleneck

    return Path(perfsleuth.bottleneck.__file__).parent / "examples" / "upgrades.toml"
