"""The segment detector (Cherkasova et al. 2008) on simulated services with known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfsleuth.datasets.segments import Phase, cherkasova_scenario, simulate_segments
from perfsleuth.detectors.segments import SegmentDetector, _agree
from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.findings import Kind, Severity

SHOP = {"home": 0.2, "new_products": 0.1, "best_sellers": 0.1, "product_detail": 0.2,
        "search": 0.2, "cart": 0.12, "buy": 0.08}  # fmt: skip


@pytest.fixture(scope="module")
def paper() -> tuple[object, object]:
    scenario = cherkasova_scenario(0)
    return scenario, SegmentDetector().analyse(scenario.frame)


def test_paper_experiment_anomaly_workload_and_application_changes(paper: tuple) -> None:
    scenario, analysis = paper
    assert scenario.boundaries == (60, 120, 180, 240, 300, 360)
    assert analysis.episodes == ((60, 120),)
    kinds = [(b.at, b.kind) for b in analysis.boundaries]
    assert kinds == [
        (120, "workload_change"),
        (300, "application_change"),
        (360, "application_change"),
    ]
    findings = analysis.findings
    assert [f.kind for f in findings].count(Kind.WORKLOAD_ANOMALY) == 1
    changes = [f for f in findings if f.kind == Kind.APPLICATION_CHANGE]
    for finding in changes:
        evidence = finding.evidence_dict()
        assert evidence["changed_types"] == "home"
        assert finding.severity == Severity.ERROR
        assert "home" in finding.explanation
        assert evidence["service_time_ratio[home]"] > 1.2


def test_signature_says_by_how_much(paper: tuple) -> None:
    _, analysis = paper
    first, second = (b for b in analysis.boundaries if b.kind == "application_change")
    home = {c.name: c for c in first.changes}["home"]
    # home: 8 ms CPU + 2 ms wait = 10 ms, then +5 ms: +50%; then +5 ms more: 15 → 20 ms
    assert home.before == pytest.approx(0.010, rel=0.1)
    assert home.after == pytest.approx(0.015, rel=0.1)
    assert {c.name: c for c in second.changes}["home"].after == pytest.approx(0.020, rel=0.1)
    others = [c for c in first.changes + second.changes if c.name != "home"]
    assert not any(c.changed for c in others)


def test_models_of_reconciled_periods_are_non_negative(paper: tuple) -> None:
    _, analysis = paper
    assert len(analysis.models) == 3
    for model in analysis.models:
        assert model.idle >= 0 and np.all(model.coef[~np.isnan(model.coef)] >= 0)
    assert np.isnan(analysis.fitted[60:120]).all()
    assert np.isfinite(analysis.fitted[:60]).all()


def test_idle_rule_flags_a_long_steady_background_process() -> None:
    phases = [
        Phase(60, SHOP, [30.0], wander=0.5),
        Phase(60, SHOP, [30.0], wander=0.5, hog=(0.5, 0.5)),  # steady: one long segment
        Phase(60, SHOP, [30.0], wander=0.5),
    ]
    analysis = SegmentDetector().analyse(simulate_segments(phases, seed=3).frame)
    assert analysis.episodes == ((60, 120),)
    (anomaly,) = [f for f in analysis.findings if f.kind == Kind.WORKLOAD_ANOMALY]
    evidence = anomaly.evidence_dict()
    assert "idle" in str(evidence["rules"]).split(",")
    assert evidence["unexplained_util"] == pytest.approx(0.25, abs=0.03)  # 0.5 of 2 cores
    assert not [f for f in analysis.findings if f.kind == Kind.APPLICATION_CHANGE]


def test_idle_rule_flags_a_background_process_that_never_stops() -> None:
    phases = [
        Phase(60, SHOP, [30.0], wander=0.5),
        Phase(60, SHOP, [30.0], wander=0.5, hog=(0.4, 0.6)),  # to the end: one neighbour only
    ]
    analysis = SegmentDetector().analyse(simulate_segments(phases, seed=5).frame)
    assert analysis.episodes == ((60, 120),)
    (anomaly,) = analysis.findings
    assert anomaly.kind == Kind.WORKLOAD_ANOMALY
    assert "idle" in str(anomaly.evidence_dict()["rules"]).split(",")


def test_short_rule_with_residuals_flags_a_brief_spike() -> None:
    phases = [
        Phase(80, SHOP, [30.0], wander=0.5),
        Phase(4, SHOP, [30.0], wander=0.5, hog=(0.6, 0.9)),
        Phase(80, SHOP, [30.0], wander=0.5),
    ]
    analysis = SegmentDetector().analyse(simulate_segments(phases, seed=4).frame)
    assert analysis.episodes == ((80, 84),)
    (anomaly,) = [f for f in analysis.findings if f.kind == Kind.WORKLOAD_ANOMALY]
    assert "residual" in str(anomaly.evidence_dict()["rules"])
    assert anomaly.severity == Severity.ERROR


def test_mix_and_load_changes_are_not_application_changes() -> None:
    browse = {**SHOP, "home": 0.4, "buy": 0.02}
    order = {**SHOP, "cart": 0.3, "buy": 0.3, "home": 0.05}
    phases = [
        Phase(60, browse, [10.0, 30.0, 50.0]),
        Phase(60, order, [20.0, 40.0]),
        Phase(60, SHOP, [30.0], wander=0.6),
    ]
    for seed in range(3):
        analysis = SegmentDetector().analyse(simulate_segments(phases, seed=seed).frame)
        kinds = {b.kind for b in analysis.boundaries}
        assert "application_change" not in kinds
        assert analysis.episodes == ()
        assert all(f.kind == Kind.WORKLOAD_CHANGE for f in analysis.findings)


@pytest.mark.parametrize(
    ("verdicts", "fires"),
    [
        ([(5.0, 10.0, 0.2), (4.0, 8.0, 0.15)], True),  # both neighbours: far above
        ([(5.0, 10.0, 0.2)], True),  # one neighbour only
        ([(5.0, 10.0, 0.2), (-3.0, -6.0, -0.1)], False),  # between two regimes: a transition
        ([(5.0, 10.0, 0.2), (1.0, 2.0, 0.05)], False),  # one neighbour explains it
        ([(5.0, 10.0, 0.01)], False),  # significant but below allowed_error: too small
        ([(-5.0, -10.0, -0.2), (-4.0, -9.0, -0.2)], True),  # far below both: less CPU
        ([(np.nan, np.nan, np.nan)], False),  # no usable neighbour
    ],
)
def test_residual_rule_table(verdicts: list[tuple[float, float, float]], fires: bool) -> None:
    assert _agree(verdicts, threshold=4.0, share=0.03)[0] is fires


def test_empty_frame_gives_nothing() -> None:
    frame = cherkasova_scenario(0, windows=5).frame
    assert SegmentDetector().detect(frame.iloc[0:0]) == []


def test_too_few_windows() -> None:
    frame = cherkasova_scenario(0, windows=5).frame.iloc[:10]
    with pytest.raises(NotEnoughDataError, match="min_windows"):
        SegmentDetector().detect(frame)


def test_missing_cpu_is_a_clear_error() -> None:
    frame = cherkasova_scenario(0, windows=5).frame.drop(columns="cpu_util")
    with pytest.raises(DataError, match="cpu_util"):
        SegmentDetector().detect(frame)


def test_nan_names_column_and_window() -> None:
    frame = cherkasova_scenario(0, windows=5).frame.copy()
    frame.loc[frame.index[7], "cpu_cores"] = np.nan
    with pytest.raises(DataError, match=r"'cpu_cores'.*2024-06-03T00:07"):
        SegmentDetector().detect(frame)


def test_signature_column_must_exist() -> None:
    frame = cherkasova_scenario(0, windows=5).frame
    with pytest.raises(DataError, match="machine_util"):
        SegmentDetector(signature_util="machine_util").detect(frame)


def test_deterministic_and_order_independent(paper: tuple) -> None:
    scenario, analysis = paper
    shuffled = scenario.frame.sample(frac=1.0, random_state=1)
    again = SegmentDetector().detect(normalise_sorted(shuffled))
    assert again == list(analysis.findings)


def normalise_sorted(frame: pd.DataFrame) -> pd.DataFrame:
    from perfsleuth.frames import normalise

    return normalise(frame, "workload", disorder="sort")
