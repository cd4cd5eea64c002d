"""MixAnomalyDetector: workload frame in, a MixAnalysis (one WORKLOAD_ANOMALY finding per
episode, and what it rests on) out."""

from __future__ import annotations

import math
import tomllib
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest
import tomli_w
from pydantic import TypeAdapter, ValidationError

from perfsleuth.analysis import Analysis, Detector, params_of
from perfsleuth.datasets.transactions import (
    Episode,
    Fault,
    TransactionRun,
    WorkloadShift,
    simulate_transactions,
    transaction_scenario,
)
from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.findings import Finding, Kind, Severity
from perfsleuth.frames import workload_types
from perfsleuth.workload import FAMILY
from perfsleuth.workload.detector import (
    CHECK,
    MixAnalysis,
    MixAnomalyDetector,
    OnlineEvent,
    _episodes,
    _noise_model,
    _Windows,
)
from perfsleuth.workload.kernels import fit_mix_model

DETECTOR = MixAnomalyDetector()


def overlaps(finding: Finding, episode: Episode) -> bool:
    return finding.start < episode.end and finding.end > episode.start


@pytest.fixture(scope="module")
def scenario() -> TransactionRun:
    return transaction_scenario(seed=0)


@pytest.fixture(scope="module")
def analysis(scenario: TransactionRun) -> MixAnalysis:
    return DETECTOR.analyse(scenario.frame)


# -- what it finds -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_every_fault_is_flagged_and_the_workload_change_is_not(seed: int) -> None:
    run = transaction_scenario(seed=seed)
    findings = DETECTOR.detect(run.frame)
    for episode in run.faults:
        hits = [f for f in findings if overlaps(f, episode)]
        assert len(hits) == 1, (episode, findings)
        direction = "too_fast" if episode.kind == "too_fast" else "slow"
        assert hits[0].evidence_dict()["direction"] == direction
    # nothing else: the day-2 workload shift (more load, heavier mix) is explained by the mix
    assert all(any(overlaps(f, e) for e in run.faults) for f in findings)


@pytest.mark.parametrize("seed", range(6))
def test_no_false_alarms_on_a_workload_change_alone(seed: int) -> None:
    run = simulate_transactions(864, seed=100 + seed, shifts=(WorkloadShift(288),))
    assert DETECTOR.detect(run.frame) == []


def test_findings_say_what_happened_in_the_users_units(scenario: TransactionRun) -> None:
    findings = {f.evidence_dict()["direction"]: f for f in DETECTOR.detect(scenario.frame)}
    slow = min(
        (f for f in DETECTOR.detect(scenario.frame) if f.evidence_dict()["direction"] == "slow"),
        key=lambda f: f.start,
    )
    assert slow.kind is Kind.WORKLOAD_ANOMALY and slow.detector == "workload_mix" == CHECK
    assert (slow.entity, slow.metric) == ("service", "response_time")
    assert slow.start == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert slow.end == datetime(2024, 5, 1, 10, 30, tzinfo=UTC)
    assert slow.severity is Severity.ERROR  # response times × 3
    text = slow.explanation
    assert text.startswith("service: response time 3.")
    assert "× what the transaction mix explains (mean " in text
    assert " ms per transaction vs " in text and " ms expected, " in text
    assert "for 6 windows from 2024-05-01 10:00 to 10:30 UTC" in text
    ev = slow.evidence_dict()
    assert ev["ratio"] == pytest.approx(3.0, rel=0.15)
    assert ev["observed"] == pytest.approx(ev["ratio"] * ev["fitted"])
    assert ev["windows"] == ev["span_windows"] == 6
    assert ev["robust_z"] > 5 and 0 < ev["nae"] < 0.2
    assert ev["cpu_util"] > 0.7  # the hog shows
    assert ev["worst_window"].startswith("2024-05-01T10:")
    assert {e.name: e.unit for e in slow.evidence}["observed"] == "s"
    fast = findings["too_fast"]
    assert fast.start == datetime(2024, 5, 3, 9, 0, tzinfo=UTC)
    assert fast.end == datetime(2024, 5, 3, 9, 20, tzinfo=UTC)
    assert "much faster than the transaction mix explains (0.2" in fast.explanation
    assert fast.explanation.endswith("aborted or failing transactions?")
    assert fast.severity is Severity.ERROR
    for finding in findings.values():
        for evidence in finding.evidence:
            assert not (isinstance(evidence.value, float) and math.isnan(evidence.value))


def test_stuck_pool_names_the_type_hit_hardest(scenario: TransactionRun) -> None:
    episode = next(e for e in scenario.faults if e.kind == "stuck_pool")
    (finding,) = [f for f in DETECTOR.detect(scenario.frame) if overlaps(f, episode)]
    # a fixed wait per transaction hurts the quickest type most, relative to its service time
    assert finding.evidence_dict()["top_type"] == "browse"
    assert "largest excess in browse (" in finding.explanation
    assert finding.severity is Severity.WARNING  # about 2.4×, under error_ratio = 3


def test_too_fast_windows_are_flagged_alone() -> None:
    run = simulate_transactions(576, seed=8, faults=(Fault("too_fast", 400, 2, magnitude=0.9),))
    (finding,) = DETECTOR.detect(run.frame)
    assert finding.evidence_dict()["direction"] == "too_fast"
    assert finding.evidence_dict()["windows"] == 2
    assert finding.evidence_dict()["ratio"] < 0.2


def test_judge_reports_every_window(scenario: TransactionRun) -> None:
    verdicts = DETECTOR.judge(scenario.frame)
    assert len(verdicts) == len(scenario.frame)
    flagged = {v.index for v in verdicts if v.verdict in ("slow", "too_fast")}
    assert flagged == set(np.flatnonzero(scenario.fault_windows()))
    normal = [v for v in verdicts if v.verdict == "normal"]
    assert all(0.5 < v.ratio < 1.5 for v in normal)
    assert verdicts[0].time == datetime(2024, 5, 1, tzinfo=UTC)


# -- the analysis: one computation, everything drawn from it -------------------------------------


def test_analysis_holds_the_findings_and_every_window(
    scenario: TransactionRun, analysis: MixAnalysis
) -> None:
    assert isinstance(analysis, Analysis)
    assert analysis.detector is DETECTOR
    assert list(analysis.findings) == DETECTOR.detect(scenario.frame)
    assert list(analysis.windows) == DETECTOR.judge(scenario.frame)
    n = len(scenario.frame)
    assert analysis.n_windows == n and analysis.types == tuple(workload_types(scenario.frame))
    for array in (analysis.observed, analysis.fitted, analysis.ratio, analysis.z):
        assert array.shape == (n,) and not array.flags.writeable
    assert analysis.start[0] == np.datetime64("2024-05-01T00:00", "ns")
    assert np.all(analysis.width == 300.0)
    assert set(analysis.verdict.tolist()) == {"slow", "too_fast", "normal"}
    assert set(np.flatnonzero(analysis.flagged)) == set(np.flatnonzero(scenario.fault_windows()))
    window = analysis.window(120)  # day 1, 10:00: the bottleneck
    assert window.verdict == "slow" and window.ratio == pytest.approx(analysis.ratio[120])
    assert window.fitted == analysis.fitted[120] and window.observed == analysis.observed[120]


def test_the_fit_is_the_one_the_findings_were_judged_with(
    scenario: TransactionRun, analysis: MixAnalysis
) -> None:
    fit, comparison = analysis.fit, analysis.comparison
    assert fit is not None and comparison is not None
    assert (fit.method, comparison.method) == ("lar", "ols")
    assert analysis.lar is fit and analysis.ols is comparison
    # fitted on the judged windows less the anomalous ones (fit, flag, refit)
    assert not analysis.flagged[analysis.reference].any()
    assert len(analysis.reference) == analysis.n_windows - int(analysis.flagged.sum())
    assert fit.n_windows == comparison.n_windows == len(analysis.reference)
    for finding in analysis.findings:
        assert finding.evidence_dict()["nae"] == fit.nae
    # an independent refit on the same windows gives the same models
    types = analysis.types
    counts = scenario.frame[[f"n[{t}]" for t in types]].to_numpy()[analysis.reference]
    y = analysis.observed[analysis.reference]
    assert fit_mix_model(counts, y).nae == pytest.approx(fit.nae, rel=1e-9)
    assert fit_mix_model(counts, y, method="ols").nae == pytest.approx(comparison.nae, rel=1e-9)
    np.testing.assert_allclose(analysis.fitted[analysis.reference], fit.fitted, rtol=1e-12)
    judged = analysis.verdict != "unjudged"
    np.testing.assert_allclose(
        analysis.ratio[judged], analysis.observed[judged] / analysis.fitted[judged], rtol=1e-9
    )


def test_an_ols_detector_compares_with_lar(scenario: TransactionRun) -> None:
    analysis = MixAnomalyDetector(method="ols").analyse(scenario.frame)
    assert analysis.fit is not None and analysis.fit.method == "ols"
    assert analysis.lar is analysis.comparison and analysis.ols is analysis.fit
    assert analysis.lar is not None and analysis.lar.nae <= analysis.fit.nae


def test_summary_is_the_fit_and_a_line_per_episode(analysis: MixAnalysis) -> None:
    assert analysis.fit is not None
    summary = analysis.summary()
    assert summary.text.startswith(analysis.fit.summary().text)
    assert "864 windows judged against the LAR fit: 14 slower and 4 faster" in summary.text
    assert f"{len(analysis.findings)} episode(s)" in summary.text
    assert summary.html.startswith(analysis.fit.summary().html)
    for finding in analysis.findings:
        assert f"  {finding.explanation}" in summary.text
    assert summary.html.count("<li>") == len(analysis.findings) == 3


def test_the_family_names_the_detector_and_its_check() -> None:
    assert MixAnomalyDetector.name == FAMILY.name == "workload"
    assert FAMILY.checks == (CHECK,)
    assert FAMILY.detector_class() is MixAnomalyDetector


# -- rules ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "z", "verdict"),
    [
        (3.0, 20.0, 1),  # far off on both counts: slow
        (1.6, 5.0, 1),  # just over both thresholds
        (1.4, 30.0, 0),  # very unusual but small: a 40% excess pages nobody
        (2.0, 4.9, 0),  # large but within this window's noise
        (0.3, -20.0, -1),  # too fast
        (0.6, -20.0, 0),  # faster, but not half
        (0.4, -4.0, 0),  # half, but within noise
        (1.0, 0.0, 0),
    ],
)
def test_a_window_must_be_far_off_in_both_ratio_and_robust_z(
    ratio: float, z: float, verdict: int
) -> None:
    got = DETECTOR._classify(np.array([ratio]), np.array([z]))
    assert got.tolist() == [verdict]


def _data(n: int, *, hole_after: int | None = None) -> _Windows:
    start = np.datetime64("2024-05-01T00:00", "ns") + np.arange(n) * np.timedelta64(300, "s")
    if hole_after is not None:
        start[hole_after + 1 :] += np.timedelta64(3600, "s")
    return _Windows(
        start=start,
        width=np.full(n, 300.0),
        types=("a",),
        counts=np.ones((n, 1)),
        rt=np.ones((n, 1)),
        cpu_util=None,
    )


@pytest.mark.parametrize(
    ("verdicts", "max_gap", "episodes"),
    [
        ("..SS..S.", 1, [[2, 3], [6]]),
        ("..S.S...", 1, [[2, 3, 4]]),  # one normal window between: bridged
        ("..S..S..", 1, [[2], [5]]),
        ("..S..S..", 2, [[2, 3, 4, 5]]),
        ("..SF....", 1, [[2], [3]]),  # direction flips: two episodes
        ("S.......", 0, [[0]]),
        ("........", 1, []),
        ("FF.FF...", 0, [[0, 1], [3, 4]]),
    ],
)
def test_flagged_windows_group_into_episodes(
    verdicts: str, max_gap: int, episodes: list[list[int]]
) -> None:
    codes = np.array([{"S": 1, "F": -1, ".": 0}[c] for c in verdicts], dtype=np.int8)
    assert _episodes(_data(len(codes)), codes, max_gap) == episodes


def test_episodes_never_bridge_a_hole_in_the_data() -> None:
    codes = np.array([0, 1, 0, 1, 0], dtype=np.int8)
    assert _episodes(_data(5), codes, 1) == [[1, 2, 3]]
    assert _episodes(_data(5, hole_after=1), codes, 1) == [[1], [3]]


def test_noise_model_recovers_window_and_per_transaction_noise() -> None:
    rng = np.random.default_rng(0)
    inv_neff = 1.0 / rng.uniform(20, 5000, 4000)
    sd = np.sqrt(0.05**2 + 1.0 * inv_neff)  # σ = 5%, τ = 1 (exponential response times)
    centre, (sigma2, tau2) = _noise_model(0.1 + sd * rng.standard_normal(4000), inv_neff)
    assert centre == pytest.approx(0.1, abs=0.01)
    assert math.sqrt(sigma2) == pytest.approx(0.05, rel=0.2)
    assert tau2 == pytest.approx(1.0, rel=0.25)


def test_refit_keeps_a_long_episode_from_dragging_the_model() -> None:
    # Six hours at 1.7×: the first fit is pulled toward the episode and flags only 68 of its
    # 72 windows; the refit without them flags all 72.
    run = simulate_transactions(864, seed=0, faults=(Fault("bottleneck", 400, 72, 1.7),))
    (finding,) = DETECTOR.detect(run.frame)
    assert finding.evidence_dict()["windows"] == finding.evidence_dict()["span_windows"] == 72
    assert finding.evidence_dict()["ratio"] == pytest.approx(1.7, rel=0.1)


# -- input handling ------------------------------------------------------------------------------


def test_empty_frame_gives_no_findings(scenario: TransactionRun) -> None:
    assert DETECTOR.detect(scenario.frame.iloc[0:0]) == []
    assert DETECTOR.judge(scenario.frame.iloc[0:0]) == []
    assert list(DETECTOR.judge_online(scenario.frame.iloc[0:0])) == []
    empty = DETECTOR.analyse(scenario.frame.iloc[0:0])
    assert empty.findings == () and empty.n_windows == 0
    assert empty.fit is None and empty.comparison is None and empty.lar is None
    assert empty.summary().text == "No windows: nothing to model."


def test_too_few_windows_is_not_enough_data(scenario: TransactionRun) -> None:
    with pytest.raises(NotEnoughDataError, match="needs at least 24"):
        DETECTOR.detect(scenario.frame.iloc[:10])


def test_missing_counts_are_rejected_with_the_window_named(scenario: TransactionRun) -> None:
    frame = scenario.frame.copy()
    frame.loc[5, "rt_sum[checkout]"] = np.nan
    with pytest.raises(DataError, match=r"rt_sum\[checkout\].*2024-05-01T00:25:00"):
        DETECTOR.detect(frame)


def test_missing_resource_columns_are_skipped(scenario: TransactionRun) -> None:
    frame = scenario.frame.copy()
    frame.loc[frame.index[::7], ["cpu_cores", "cpu_util"]] = np.nan
    frame.loc[frame.index[120:126], "cpu_util"] = np.nan  # the whole bottleneck episode
    findings = DETECTOR.detect(frame)
    assert len(findings) == 3
    for finding in findings:
        assert all(
            not (isinstance(e.value, float) and math.isnan(e.value)) for e in finding.evidence
        )
    assert "cpu_util" not in findings[0].evidence_dict()


def test_a_raw_frame_is_validated_and_accepted(scenario: TransactionRun) -> None:
    raw = scenario.frame.copy()
    raw["time"] = raw["time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    raw.attrs = {}
    assert DETECTOR.detect(raw) == DETECTOR.detect(scenario.frame)


def test_a_frame_without_summed_response_times_is_rejected() -> None:
    frame = pd.DataFrame(
        {
            "time": pd.date_range("2024-05-01", periods=30, freq="5min", tz="UTC"),
            "window_s": 300.0,
            "n[a]": 10.0,
        }
    )
    with pytest.raises(DataError, match=r"rt_sum\[a\]"):
        DETECTOR.detect(frame)


def test_windows_with_few_transactions_are_not_judged() -> None:
    run = simulate_transactions(288, seed=2, faults=(Fault("bottleneck", 200, 3, 5.0),))
    frame = run.frame.copy()
    types = [c for c in frame.columns if c.startswith("n[")]
    frame.loc[201, types] = 0.0
    frame.loc[201, "n[browse]"] = 3.0
    verdicts = MixAnomalyDetector(max_gap=0).judge(frame)
    assert verdicts[201].verdict == "unjudged" and math.isnan(verdicts[201].z)
    assert [v.verdict for v in verdicts[200:203:2]] == ["slow", "slow"]


def test_deterministic(scenario: TransactionRun) -> None:
    assert DETECTOR.detect(scenario.frame) == DETECTOR.detect(scenario.frame.copy())


def test_ols_also_works(scenario: TransactionRun) -> None:
    findings = MixAnomalyDetector(method="ols").detect(scenario.frame)
    assert all(any(overlaps(f, e) for f in findings) for e in scenario.faults)


# -- parameters ----------------------------------------------------------------------------------


def test_is_a_detector_whose_parameters_round_trip_through_toml() -> None:
    detector = MixAnomalyDetector(threshold=4.5, method="ols", entity="shop", max_gap=0)
    assert isinstance(detector, Detector)
    text = tomli_w.dumps({"detectors": {"workload": params_of(detector)}})
    params = tomllib.loads(text)["detectors"]["workload"]
    assert TypeAdapter(MixAnomalyDetector).validate_python(params) == detector
    assert params_of(MixAnomalyDetector()) == {
        "method": "lar",
        "threshold": 5.0,
        "min_ratio": 1.5,
        "too_fast_ratio": 0.5,
        "error_ratio": 3.0,
        "min_windows": 24,
        "min_transactions": 10,
        "max_gap": 1,
        "entity": "service",
    }


@pytest.mark.parametrize(
    "params",
    [
        {"no_such_parameter": 1},
        {"threshold": 0},
        {"min_ratio": 1.0},
        {"too_fast_ratio": 1.0},
        {"method": "l1"},
        {"min_windows": 1},
        {"entity": ""},
    ],
)
def test_bad_parameters_are_rejected(params: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        TypeAdapter(MixAnomalyDetector).validate_python(params)


# -- online --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def online_run() -> TransactionRun:
    return transaction_scenario(seed=1)


@pytest.fixture(scope="module")
def online_events(online_run: TransactionRun) -> list[OnlineEvent]:
    return list(DETECTOR.judge_online(online_run.frame, history="1d"))


def test_online_opens_and_closes_one_episode_per_fault(
    online_run: TransactionRun, online_events: list[OnlineEvent]
) -> None:
    events = online_events
    states = [e.state for e in events]
    assert states == ["opened", "closed"] * 3
    offline = DETECTOR.detect(online_run.frame)
    for episode, (opened, closed) in zip(
        online_run.faults, zip(events[::2], events[1::2], strict=True), strict=True
    ):
        assert opened.index == episode.first
        assert opened.finding.start == episode.start
        assert closed.finding.start == episode.start and closed.finding.end == episode.end
        # known to be over at the close of the second normal window after it (max_gap = 1)
        assert closed.index == episode.last + 2
        (match,) = [f for f in offline if overlaps(f, episode)]
        direction = closed.finding.evidence_dict()["direction"]
        assert match.evidence_dict()["direction"] == direction
        # the same form as offline: kind, check, entity, metric, evidence names and units
        online = closed.finding
        assert (online.kind, online.detector, online.entity, online.metric) == (
            match.kind,
            match.detector,
            match.entity,
            match.metric,
        )
        assert [(e.name, e.unit) for e in online.evidence] == [
            (e.name, e.unit) for e in match.evidence
        ]


def test_online_history_as_a_window_count_matches_the_duration(
    online_run: TransactionRun, online_events: list[OnlineEvent]
) -> None:
    by_count = list(DETECTOR.judge_online(online_run.frame, history=288))
    assert by_count == online_events


def test_online_reports_an_episode_still_open_at_the_end() -> None:
    run = simulate_transactions(150, seed=4, faults=(Fault("stuck_pool", 145, 5),))
    events = list(DETECTOR.judge_online(run.frame, history=100))
    assert [e.state for e in events] == ["opened", "ongoing"]
    assert events[-1].finding.end == run.faults[0].end


def test_online_closes_an_episode_at_a_hole_in_the_data() -> None:
    run = simulate_transactions(200, seed=6, faults=(Fault("bottleneck", 150, 6),))
    frame = run.frame.drop(index=range(153, 160)).reset_index(drop=True)  # 35 minutes lost
    events = list(DETECTOR.judge_online(frame, history=100))
    assert [e.state for e in events] == ["opened", "closed"]
    assert events[1].index == 153  # the first window after the hole
    assert events[1].finding.end == datetime(2024, 5, 1, 12, 45, tzinfo=UTC)  # window 152's end


def test_online_waits_for_enough_history() -> None:
    run = simulate_transactions(60, seed=5, faults=(Fault("bottleneck", 5, 3),))
    events = list(MixAnomalyDetector(min_windows=24).judge_online(run.frame, history="1d"))
    assert events == []  # the fault came before the model could be fitted


@pytest.mark.parametrize(
    ("history", "match"),
    [(1, "at least 2"), ("soon", "not a duration"), (True, "duration or a number")],
)
def test_online_rejects_bad_history(
    history: object, online_run: TransactionRun, match: str
) -> None:
    with pytest.raises(DataError, match=match):
        next(DETECTOR.judge_online(online_run.frame, history=history))  # type: ignore[arg-type]
