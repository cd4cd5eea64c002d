"""Seeded data files for ``analyze`` and ``watch``: one per frame contract."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.datasets import transaction_scenario
from perfsleuth.datasets.counters import simulate_scenario
from perfsleuth.datasets.fleet import simulate_fleet
from perfsleuth.demo import demo_frames


@dataclass(frozen=True)
class DataFiles:
    folder: Path
    metric: Path
    workload: Path
    process: Path
    counter: Path


@pytest.fixture(scope="session")
def data_files(tmp_path_factory: pytest.TempPathFactory) -> DataFiles:
    """Change points (M/M/1), a web shop's transaction mix, a process fleet, OS counters."""
    folder = tmp_path_factory.mktemp("data")
    metric = folder / "latency.csv"
    latency = demo_frames(7)["metric"]
    latency[latency["entity"] != "shop"].to_csv(metric, index=False)  # the 2-second series
    workload = folder / "workload.parquet"
    transaction_scenario(7).frame.to_parquet(workload)
    process = folder / "processes.parquet"
    simulate_fleet(14, days=2, seed=3).frame.to_parquet(process)
    counter = folder / "counters.csv"
    simulate_scenario("cpu", seed=1, samples=24).frame.to_csv(counter, index=False)
    return DataFiles(folder, metric, workload, process, counter)


def workload_until(end: str, path: Path) -> Path:
    """The seeded workload up to (not including) ``end``, as if that were the newest data."""
    frame = transaction_scenario(7).frame
    frame[frame["time"] < pd.Timestamp(end, tz="UTC")].to_parquet(path)
    return path
