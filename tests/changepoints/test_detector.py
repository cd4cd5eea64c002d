"""ChangePointDetector: metric frame in, one CHANGE_POINT finding per change point out."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from perfsleuth.analysis import Detector, params_of
from perfsleuth.changepoints.detector import ChangePointDetector
from perfsleuth.errors import ConfigError, DataError
from perfsleuth.families import create
from perfsleuth.findings import Kind, Severity
from perfsleuth.frames import normalise
from perfsleuth.units import format_quantity

T0 = pd.Timestamp("2024-05-01 13:00", tz="UTC")


def metric_frame(
    levels: list[tuple[int, float]],
    *,
    entity: str = "web",
    metric: str = "response_time",
    unit: str = "ms",
    noise: float = 1.0,
    seed: int = 0,
) -> pd.DataFrame:
    """One series: (count, level) pieces, one sample a minute, Gaussian noise."""
    rng = np.random.default_rng(seed)
    values = np.concatenate([np.full(count, level) for count, level in levels])
    values = values + noise * rng.standard_normal(len(values))
    return pd.DataFrame(
        {
            "time": pd.date_range(T0, periods=len(values), freq="1min"),
            "entity": entity,
            "metric": metric,
            "value": values,
            "unit": unit,
        }
    )


def test_finds_a_shift_and_reports_its_timestamp_in_the_users_units() -> None:
    frame = normalise(metric_frame([(65, 12.0), (55, 30.0)]), "metric")
    findings = ChangePointDetector().detect(frame)
    assert len(findings) == 1
    f = findings[0]
    assert f.kind is Kind.CHANGE_POINT and f.detector == "changepoint"
    assert (f.entity, f.metric) == ("web", "response_time")
    assert f.start == f.end == datetime(2024, 5, 1, 14, 5, tzinfo=UTC)
    assert f.start.tzinfo is not None
    assert f.severity is Severity.ERROR
    assert f.explanation.startswith("web/response_time: mean rose from 12")
    assert " ms to 30" in f.explanation and "at 2024-05-01 14:05 UTC (p < 0.001)" in f.explanation
    assert re.search(r"\(\+1[45]\d%\)", f.explanation)  # about +150%
    ev = f.evidence_dict()
    assert ev["index"] == 65 and ev["level"] == 0
    assert ev["mean_before"] == pytest.approx(0.012, abs=5e-4)
    assert ev["mean_after"] == pytest.approx(0.030, abs=5e-4)
    assert {e.name: e.unit for e in f.evidence}["mean_before"] == "s"
    assert ev["relative_change"] == pytest.approx(1.5, abs=0.1)
    assert ev["p_value"] < 0.001 < ev["alpha"]
    assert ev["statistic"] > ev["critical_value"] > 1


def test_the_largest_spike_runs_are_info_findings_and_the_mean_is_unchanged_by_them() -> None:
    frame = metric_frame([(65, 12.0), (55, 30.0)])
    frame.loc[[20, 90, 91], "value"] += [60.0, 45.0, 50.0]
    frame.loc[100, "value"] += 20.0
    findings = ChangePointDetector().detect(normalise(frame, "metric"))
    changes = [f for f in findings if f.kind is Kind.CHANGE_POINT]
    spikes = [f for f in findings if f.kind is Kind.SPIKE]
    assert [f.evidence_dict()["index"] for f in changes] == [65]
    assert len(spikes) == 3  # the default top_spikes: the three largest runs, largest first
    assert all(f.severity is Severity.INFO and f.detector == "changepoint" for f in spikes)
    first, second, third = (f.evidence_dict() for f in spikes)
    assert first["size_sd"] >= second["size_sd"] >= third["size_sd"] > 5.0
    assert third["index"] == 100
    assert {first["index"], second["index"]} == {20, 91}
    burst = next(f for f in spikes if f.evidence_dict()["index"] == 91)
    minute = pd.Timedelta(minutes=1)
    assert (burst.start, burst.end) == (T0 + 90 * minute, T0 + 91 * minute)
    assert burst.evidence_dict()["spikes"] == 2
    assert burst.explanation.startswith("web/response_time: spike to 8")
    assert "UTC, the level being 3" in burst.explanation
    assert burst.explanation.endswith("; 2 spikes within 2 readings")
    assert not [f for f in ChangePointDetector(top_spikes=0).detect(frame) if f.kind is Kind.SPIKE]


def test_accepts_a_raw_frame_and_reports_only_the_series_that_changed() -> None:
    raw = pd.concat(
        [
            metric_frame([(100, 50.0)], entity="db", metric="queue", unit="count", seed=1),
            metric_frame(
                [(40, 0.2), (60, 0.6)],
                entity="host",
                metric="cpu",
                unit="fraction",
                noise=0.02,
                seed=2,
            ),
        ]
    )
    raw["time"] = raw["time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")  # as read from a file
    findings = ChangePointDetector().detect(raw)
    assert [(f.entity, f.metric) for f in findings] == [("host", "cpu")]
    assert "from 20% to 60% (+40.0 percentage points)" in findings[0].explanation


@pytest.mark.parametrize(
    "frame",
    [pd.DataFrame(), pd.DataFrame({"time": [], "entity": [], "metric": [], "value": []})],
)
def test_empty_frame_gives_no_findings(frame: pd.DataFrame) -> None:
    assert ChangePointDetector().detect(frame) == []


def test_short_series_step_is_found_and_flat_series_gives_no_findings() -> None:
    # A step of 8 σ after 6 of 9 observations: too short for a finding while the first noise
    # round counted the step as noise; now found at the step (as the paper's 4-point example).
    findings = ChangePointDetector().detect(metric_frame([(6, 1.0), (3, 9.0)]))
    assert [f.start for f in findings] == [T0 + pd.Timedelta(minutes=6)]
    assert ChangePointDetector().detect(metric_frame([(200, 5.0)], noise=0.0)) == []


def test_missing_values_are_a_data_error() -> None:
    frame = metric_frame([(50, 1.0)])
    frame.loc[10, "value"] = np.nan
    with pytest.raises(DataError, match="missing value"):
        ChangePointDetector().detect(frame)


def test_deterministic() -> None:
    frame = metric_frame([(80, 10.0), (50, 13.0), (70, 8.0)], seed=5)
    detector = ChangePointDetector()
    first = detector.detect(frame)
    assert len(first) >= 2
    assert detector.detect(frame.copy()) == first
    assert [f.id for f in detector.detect(frame)] == [f.id for f in first]


@pytest.mark.parametrize(
    ("before", "after", "floor", "expected"),
    [
        (1000.0, 1030.0, 0.0, Severity.INFO),  # +3%: real but minor
        (1000.0, 1300.0, 0.0, Severity.WARNING),  # +30%
        (1000.0, 400.0, 0.0, Severity.ERROR),  # −60%, overwhelming evidence
        (1000.0, 1030.0, 0.05, None),  # below the effect-size floor: not reported
    ],
)
def test_severity_and_effect_size_floor(
    before: float, after: float, floor: float, expected: Severity | None
) -> None:
    frame = metric_frame([(100, before), (100, after)], unit="count", noise=1.0)
    findings = ChangePointDetector(min_relative_change=floor).detect(frame)
    assert [f.severity for f in findings] == ([] if expected is None else [expected])


def test_paper_method_explains_with_the_statistic() -> None:
    findings = ChangePointDetector(method="paper").detect(metric_frame([(100, 12.0), (100, 20.0)]))
    assert len(findings) == 1
    assert re.search(r"\(T = \d+\.\d{3} > \d\.\d{3}\)$", findings[0].explanation)


def test_is_a_detector_and_parameters_round_trip() -> None:
    for detector in (
        ChangePointDetector(),
        ChangePointDetector(
            alpha=0.01,
            min_size=10,
            method="f",
            min_relative_change=0.2,
            warn_relative_change=0.05,
            error_relative_change=1.0,
        ),
    ):
        assert isinstance(detector, Detector)
        params = params_of(detector)
        assert create("changepoints", params) == detector
    assert params_of(ChangePointDetector())["alpha"] == 0.05


@pytest.mark.parametrize(
    "params",
    [
        {"alpha": 0},
        {"min_size": 0},
        {"method": "bayes"},
        {"treshold": 1},
        {"method": "paper", "alpha": 0.01},
    ],
)
def test_bad_parameters_are_config_errors(params: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        create("changepoints", params)


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0.0121, "s", "12.1 ms"),
        (0.0000042, "s", "4.2 µs"),
        (1.5, "s", "1.5 s"),
        (90.0, "s", "90 s"),
        (300.0, "s", "5 min"),
        (7200.0, "s", "2 h"),
        (1536.0 * 1024, "bytes", "1.5 MiB"),
        (512.0, "bytes", "512 B"),
        (0.452, "fraction", "45.2%"),
        (12.0, "/s", "12/s"),
        (15000.0, "count", "15,000"),
        (2.5, "cores", "2.5 cores"),
        (0.5, "", "0.5"),
    ],
)
def test_format_quantity(value: float, unit: str, text: str) -> None:
    assert format_quantity(value, unit) == text


def test_format_quantity_shares_a_scale() -> None:
    assert format_quantity(0.9, "s", like=1.5) == "0.9 s"
    assert format_quantity(0.0005, "s", like=0.03) == "0.5 ms"
