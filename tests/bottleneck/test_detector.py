"""The bottleneck detector on counter frames: windows, episodes, findings, bad input."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfsleuth.analysis import Analysis
from perfsleuth.bottleneck.detector import CHECK, BottleneckDetector
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
    # the CPU scenario runs at 60-100%: this one at 88% of its threads' time, a warning
    # (the CPU's utilisation is now its threads' runnable share: ERROR needs 95%), found
    # within 5% of the simulated truth
    truth = simulate_scenario("cpu", seed=4, samples=24, entity="db-1").utilisation["cpu"]
    cpu_util = findings[1].evidence_dict()["util.cpu"]
    assert isinstance(cpu_util, float) and 0.8 <= cpu_util < 0.95
    assert abs(cpu_util - truth) < 0.05
    assert findings[1].severity is Severity.WARNING
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
    windows = BottleneckDetector(window="30s").analyse(two_phases()).windows
    assert len(windows) == 8
    assert [w.index for w in windows] == list(range(8))
    assert windows[0].inference.bottleneck == "disk"
    assert windows[-1].inference.bottleneck == "cpu"


def test_the_analysis_holds_what_the_findings_rest_on() -> None:
    frame = two_phases()
    detector = BottleneckDetector(window="1m", upgrades=str(EXAMPLE), target_factor=1.2)
    analysis = detector.analyse(frame)
    assert isinstance(analysis, Analysis)
    assert analysis.detector is detector
    assert analysis.findings == tuple(detector.detect(frame))
    assert all(f.detector == CHECK == "bottleneck" for f in analysis.findings)
    (entity,) = analysis.entities
    assert entity.entity == "db-1"
    assert [e.bottleneck for e in entity.episodes] == ["disk", "cpu"]
    assert [len(e.windows) for e in entity.episodes] == [2, 2]
    # one bottleneck and one upgrade finding per episode, in episode order
    assert [f.kind for f in analysis.findings] == [Kind.BOTTLENECK, Kind.UPGRADE] * 2
    assert [f.metric for f in analysis.findings[::2]] == ["disk", "cpu"]
    assert all(e.upgrades is not None for e in entity.episodes)
    # the whole period: its own inference and upgrade analysis, for the report
    assert set(analysis.overall) == set(analysis.upgrades) == {"db-1"}
    assert entity.overall is not entity.episodes[0].inference
    assert analysis.upgrades["db-1"].unit == "random reads"
    assert analysis.model.name == "linux" and not analysis.calibrated
    assert analysis.error_model.source == "model defaults"
    assert analysis.entity("db-1") is entity


def test_one_episode_over_the_whole_period_is_inferred_once() -> None:
    frame = simulate_scenario("memory", seed=2, samples=24).frame
    analysis = BottleneckDetector(upgrades=str(EXAMPLE), target_factor=1.2).analyse(frame)
    (entity,) = analysis.entities
    (episode,) = entity.episodes
    assert episode.windows == entity.windows
    assert entity.overall is episode.inference
    assert entity.upgrades is episode.upgrades


def test_summary_names_each_entitys_bottleneck_and_upgrade() -> None:
    busy = simulate_scenario("rand_read", seed=4, samples=12, entity="<db>").frame
    cpu = simulate_scenario("cpu", seed=4, samples=12, entity="web").frame
    frame = pd.concat([busy, cpu], ignore_index=True)
    # a target today's maximum already meets gets no upgrade: ask for twice the throughput
    analysis = BottleneckDetector(upgrades=str(EXAMPLE), target_factor=2.0).analyse(frame)
    summary = analysis.summary()
    lines = summary.text.splitlines()
    assert lines[0].startswith("2 entities, ")
    db = next(line for line in lines if line.strip().startswith("<db>:"))
    # the errors' heavy tails keep a clean simulated disk window just short of certainty
    assert re.search(r"bottleneck disk \(P = 0\.9\d|bottleneck disk \(P = 1\.00", db)

    # a likelihood temperature widens the probabilities, not the answer
    def p_disk(temperature: float) -> float:
        detector = BottleneckDetector(
            upgrades=str(EXAMPLE), target_factor=2.0, temperature=temperature
        )
        text = detector.analyse(frame).summary().text
        found = re.search(r"<db>: bottleneck disk \(P = (\d\.\d\d)", text)
        assert found is not None, text
        return float(found[1])

    assert p_disk(6.0) < p_disk(1.0) - 0.05
    recommended = analysis.upgrades["<db>"].recommended
    assert recommended is not None
    assert f"upgrade: {recommended.name} (" in db
    assert any(line.strip().startswith("web: bottleneck CPU (P = ") for line in lines)
    assert "&lt;db&gt;" in summary.html and "<db>" not in summary.html
    # nothing busy enough: no bottleneck, and the busiest resource named
    quiet = BottleneckDetector(min_utilisation=5.0).analyse(frame).summary().text
    assert "<db>: no bottleneck (busiest: disk at" in quiet
    assert "upgrade" not in quiet


def test_an_empty_frame_is_an_empty_analysis() -> None:
    frame = simulate_scenario("cpu", seed=1, samples=6).frame.iloc[:0]
    analysis = BottleneckDetector().analyse(frame)
    assert analysis.findings == () and analysis.entities == () and analysis.windows == ()
    assert analysis.summary().text.startswith("0 entities, 0 window(s)")


def test_nanosecond_times_give_findings_without_a_warning() -> None:
    """Issue 20: every finding warned ``Discarding nonzero nanoseconds`` (warnings are errors
    here); a finding's span is its windows' to the microsecond instead."""
    frame = simulate_scenario("rand_read", seed=2, samples=12).frame
    frame = frame.assign(time=frame["time"] + pd.Timedelta(nanoseconds=123))
    (finding,) = BottleneckDetector(window="10m").detect(frame)
    us = pd.Timedelta(microseconds=1)
    assert abs(finding.start - frame["time"].min()) < us
    assert abs(finding.end - frame["time"].max()) < us


def test_a_reader_starved_by_its_neighbours_names_its_disk_given_the_cpu() -> None:
    """The heavy corpus's rand-read#1 (direct reads at load 24): CPU now, its threads
    runnable 81% of the time; given the CPU it asks for, its disk would limit it (the same
    job ran 9x faster with more CPU); the explanation of a disk-bound reader, or of a memory
    thrash (memory limits no throughput), adds nothing."""
    corpus = Path(__file__).parents[1] / "data/bottleneck/corpus-r1.parquet"
    frame = pd.read_parquet(corpus)
    frame = frame[frame["entity"].isin(["rand-read#1", "seq-read#1", "memcg-thrash#1"])]
    findings = {f.entity: f for f in BottleneckDetector().detect(frame)}
    starved = findings["rand-read#1"]
    assert starved.metric == "cpu"
    assert "given the CPU it asks for, disk would limit it instead (at " in starved.explanation
    evidence = starved.evidence_dict()
    assert evidence["uncontended.limit"] == "disk"
    assert evidence["uncontended.load"] > 1.0
    reader = findings["seq-read#1"]
    assert reader.metric == "disk"
    assert "given the CPU" not in reader.explanation
    assert reader.evidence_dict()["uncontended.limit"] == "disk"
    thrash = findings["memcg-thrash#1"]
    assert thrash.metric == "memory"
    assert "given the CPU" not in thrash.explanation
