"""The bottleneck detector on counter frames: windows, episodes, findings, bad input."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfsleuth.bottleneck.detector import BottleneckDetector
from perfsleuth.datasets.counters import simulate_scenario
from perfsleuth.errors import DataError
from perfsleuth.findings import Kind, Severity

EXAMPLE = Path(__file__).parents[2] / "src/perfsleuth/bottleneck/examples/upgrades.toml"


def two_phases() -> pd.DataFrame:
    """One host: 2 minutes of random reads, then 2 minutes CPU-bound."""
    disk = simulate_scenario("rand_read", seed=4, samples=24, entity="db-1").frame
    cpu = simulate_scenario(
        "cpu",
        seed=4,
        samples=24,
        entity="db-1",
        start=disk["time"].max().to_pydatetime() + timedelta(seconds=5),
    ).frame
    return pd.concat([disk, cpu], ignore_index=True)


def test_episodes_follow_the_bottleneck() -> None:
    findings = BottleneckDetector(window="1m").detect(two_phases())
    assert [f.metric for f in findings] == ["disk", "cpu"]
    assert all(f.kind is Kind.BOTTLENECK and f.entity == "db-1" for f in findings)
    assert findings[0].end < findings[1].start
    assert findings[0].evidence_dict()["windows"] == 2
    assert findings[1].severity is Severity.ERROR  # the CPU scenario runs at 60-100%
    evidence = findings[0].evidence_dict()
    assert evidence["bottleneck"] == "disk"
    assert "observed.disk.reads" in evidence and "predicted.disk.reads" in evidence
    assert "w.rand_read_rate" in evidence
    assert "reads bypassing the cache" in findings[0].explanation


def test_quiet_windows_give_no_finding() -> None:
    frame = two_phases()
    assert BottleneckDetector(min_utilisation=5.0).detect(frame) == []


def test_upgrade_findings_come_with_a_catalogue() -> None:
    frame = simulate_scenario("memory", seed=2, samples=12).frame
    findings = BottleneckDetector(upgrades=str(EXAMPLE), target_factor=1.2).detect(frame)
    kinds = [f.kind for f in findings]
    assert kinds == [Kind.BOTTLENECK, Kind.UPGRADE]
    assert findings[0].metric == "memory"
    assert "twice the memory" in str(findings[1].evidence_dict())


def test_windows_need_enough_counters() -> None:
    frame = simulate_scenario("cpu", seed=1, samples=6).frame
    few = frame[frame["counter"].isin(["cpu.user", "cpu.system"])]
    assert BottleneckDetector().detect(few) == []


def test_nan_and_negative_counters_are_errors() -> None:
    frame = simulate_scenario("cpu", seed=1, samples=6).frame
    with_nan = frame.copy()
    with_nan.loc[3, "value"] = np.nan
    with pytest.raises(DataError, match=r"missing value|not a finite number"):
        BottleneckDetector().detect(with_nan)
    negative = frame.copy()
    row = negative.index[negative["counter"] == "disk.reads"][2]
    negative.loc[row, "value"] = -5.0
    with pytest.raises(
        DataError, match=r"'disk.reads' of 'sim-cpu' at .*negative value -5 .*reset"
    ):
        BottleneckDetector().detect(negative)


def test_unknown_counters_are_ignored_and_units_are_the_models() -> None:
    frame = simulate_scenario("seq_write", seed=3, samples=12).frame
    extra = frame.iloc[:5].assign(counter="something.else", value=-3.0)
    findings = BottleneckDetector().detect(pd.concat([frame, extra], ignore_index=True))
    assert [f.metric for f in findings] == ["disk"]


def test_analyse_returns_every_window() -> None:
    windows = BottleneckDetector(window="30s").analyse(two_phases())
    assert len(windows) == 8
    assert [w.index for w in windows] == list(range(8))
    assert windows[0].inference.bottleneck == "disk"
    assert windows[-1].inference.bottleneck == "cpu"
