"""The segment detector (Cherkasova et al. 2008) on simulated services with known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfsleuth.datasets.segments import (
    Phase,
    SegmentScenario,
    cherkasova_scenario,
    simulate_segments,
)
from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.findings import Kind, Severity
from perfsleuth.segments import FAMILY
from perfsleuth.segments.detector import CHECK, SegmentAnalysis, SegmentDetector, _agree, _read

Paper = tuple[SegmentScenario, SegmentAnalysis]

SHOP = {"home": 0.2, "new_products": 0.1, "best_sellers": 0.1, "product_detail": 0.2,
        "search": 0.2, "cart": 0.12, "buy": 0.08}  # fmt: skip


@pytest.fixture(scope="module")
def paper() -> Paper:
    scenario = cherkasova_scenario(0)
    return scenario, SegmentDetector().analyse(scenario.frame)


def test_paper_experiment_anomaly_workload_and_application_changes(paper: Paper) -> None:
    scenario, analysis = paper
    assert scenario.boundaries == (60, 120, 180, 240, 300, 360)
    assert analysis.episodes == ((60, 120),)
    kinds = [(b.index, b.kind) for b in analysis.boundaries]
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
        assert float(evidence["service_time_ratio[home]"]) > 1.2


def test_signature_says_by_how_much(paper: Paper) -> None:
    _, analysis = paper
    first, second = (b for b in analysis.boundaries if b.kind == "application_change")
    home = {c.name: c for c in first.changes}["home"]
    # home: 8 ms CPU + 2 ms wait = 10 ms, then +5 ms: +50%; then +5 ms more: 15 → 20 ms. The
    # signature is a service-time index with the windows' common conditions taken out, so its
    # levels are relative: the ratios are what it measures.
    assert home.ratio == pytest.approx(1.5, rel=0.1)
    assert home.ratio_low <= 1.5 * 1.05 and home.ratio_high >= 1.5 * 0.95
    assert {c.name: c for c in second.changes}["home"].ratio == pytest.approx(20 / 15, rel=0.1)
    assert first.named == second.named == ("home",)


def test_models_of_reconciled_periods_are_non_negative(paper: Paper) -> None:
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
    ((start, stop),) = analysis.episodes
    assert start == 80 and abs(stop - 84) <= 1  # the spike's last window may be mild
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
    empty = SegmentDetector().analyse(frame.iloc[0:0])
    assert empty.findings == () and empty.n_windows == 0
    assert empty.segmentation is None and empty.pieces == () and empty.boundaries == ()
    assert str(empty.summary()).startswith("0 windows")


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


def test_signature_columns_must_exist() -> None:
    frame = cherkasova_scenario(0, windows=5).frame.drop(columns="rt_sum[home]")
    with pytest.raises(DataError, match=r"rt_sum\[home\]"):
        SegmentDetector().detect(frame)


def test_deterministic_and_order_independent(paper: Paper) -> None:
    scenario, analysis = paper
    shuffled = scenario.frame.sample(frac=1.0, random_state=1)
    again = SegmentDetector().detect(normalise_sorted(shuffled))
    assert again == list(analysis.findings)


def normalise_sorted(frame: pd.DataFrame) -> pd.DataFrame:
    from perfsleuth.frames import normalise

    return normalise(frame, "workload", disorder="sort")


def _two_phases_costs_up(seed: int) -> pd.DataFrame:
    """A period whose CPU is 30% higher while no latency moved: every cost is up, no type's
    service time is: the linear model's error under another workload, as far as the
    signature can tell (the frame is altered after simulation)."""
    phases = [Phase(60, SHOP, [30.0], wander=0.5), Phase(60, SHOP, [30.0], wander=0.5)]
    frame = simulate_segments(phases, seed=seed).frame.copy()
    frame.loc[frame.index[60:], "cpu_util"] *= 1.3
    return frame


@pytest.mark.parametrize("seed", range(3))
def test_more_cpu_with_no_type_slower_is_an_anomaly_under_either_rule(seed: int) -> None:
    # Every cost 30% up, no latency moved: CPU the transactions do not account for. The residual
    # rule finds the excess against the model before, and the signature rule finds no type
    # slower: work outside the application, an anomaly — whether or not reconciliation asks
    # the signature to confirm (``confirm``), since anomalies are found before it.
    frame = _two_phases_costs_up(seed)
    for confirm in (True, False):
        analysis = SegmentDetector(confirm=confirm).analyse(frame)
        assert analysis.episodes == ((60, 120),)
        assert analysis.boundaries == ()
        (finding,) = analysis.findings
        assert finding.kind == Kind.WORKLOAD_ANOMALY
        assert {"residual", "signature"} <= set(analysis.pieces[-1].rules)


def test_noise_alone_does_not_keep_one_period_from_reconciling() -> None:
    # A stationary period with few, noisy transactions per window, cut in halves: the joint
    # model fits each half worse than its own only by the own fit's optimism (σ² per
    # coefficient), which the extra error discounts.
    detector = SegmentDetector()
    extra = []
    for seed in range(20):
        scenario = simulate_segments([Phase(24, SHOP, [0.5], wander=0.5)], seed=seed, cv=1.0)
        data = _read(scenario.frame)
        assert data.model(np.arange(24), detector.alpha).relative_rmse > 0.03  # noisy
        extra.append(detector._joins(data, [(0, 12)], [(12, 24)])[0])
    assert float(np.median(extra)) < 0.01
    assert np.mean(np.array(extra) <= detector.allowed_error) >= 0.65


@pytest.mark.parametrize("at", [52, 56, 57, 63, 64, 68])
def test_application_change_moves_to_where_the_two_models_fit_best(at: int) -> None:
    phases = [Phase(60, SHOP, [30.0], wander=0.5),
              Phase(60, SHOP, [30.0], wander=0.5, extra={"home": 0.005})]  # fmt: skip
    data = _read(simulate_segments(phases, seed=1).frame)
    groups = [[(0, at)], [(at, 120)]]
    SegmentDetector()._relocate(data, groups)
    assert groups == [[(0, 60)], [(60, 120)]]


def test_the_whole_later_period_counts_not_only_its_first_span() -> None:
    # noise cut the later period once more (at 66) and reconciliation joined it again: the
    # boundary, pushed early by the segmentation's minimum segment, is judged with all of it
    phases = [Phase(60, SHOP, [30.0], wander=0.5),
              Phase(60, SHOP, [30.0], wander=0.5, extra={"home": 0.005})]  # fmt: skip
    data = _read(simulate_segments(phases, seed=2).frame)
    groups = [[(0, 57)], [(57, 66), (66, 120)]]
    SegmentDetector()._relocate(data, groups)
    assert groups == [[(0, 60)], [(60, 66), (66, 120)]]


def test_no_move_across_an_anomaly() -> None:
    phases = [Phase(60, SHOP, [30.0], wander=0.5),
              Phase(60, SHOP, [30.0], wander=0.5, extra={"home": 0.005})]  # fmt: skip
    data = _read(simulate_segments(phases, seed=1).frame)
    groups = [[(0, 50)], [(57, 120)]]  # windows 50..56 were found anomalous
    SegmentDetector()._relocate(data, groups)
    assert groups == [[(0, 50)], [(57, 120)]]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("hog", [(0.8, 1.0), (0.3, 0.5)])
@pytest.mark.parametrize(
    ("first", "most"),
    [(22, 3), (24, 4), (17, 4)],  # the segmentation's edge 2 or 4 windows late, 3 early
)
def test_anomaly_edges_are_moved_to_the_data(
    seed: int, hog: tuple[float, float], first: int, most: int
) -> None:
    # Hog windows at the end of a short normal span, judged one at a time against a model
    # fitted with the others, mask each other (each inflates the noise the others are judged
    # by), and let the span grow further into the hog; judged against the span's core, they
    # join the anomaly, and the span then grows only over the windows its model explains.
    phases = [Phase(20, SHOP, [30.0], wander=0.5),
              Phase(12, SHOP, [30.0], wander=0.5, hog=hog),
              Phase(20, SHOP, [30.0], wander=0.5)]  # fmt: skip
    data = _read(simulate_segments(phases, seed=seed).frame)
    refined = SegmentDetector()._refine(data, [(0, first), (32, 52)], most)
    assert refined == [(0, 20), (32, 52)]


def test_the_type_named_first_is_the_one_that_moved_the_cpu() -> None:
    # home (20% of the mix) +8 ms; buy (8%) made faster, 15 → 6 ms: both changed, but home's
    # change moves twice the CPU, so it is named first though buy's ratio is further from 1.
    # The CPU went up: only types that got slower are named (buy, faster, is in the evidence).
    change = {"home": 0.008, "buy": -0.009}
    phases = [Phase(60, SHOP, [30.0], wander=0.5),
              Phase(60, SHOP, [30.0], wander=0.5, extra=change)]  # fmt: skip
    analysis = SegmentDetector().analyse(simulate_segments(phases, seed=0).frame)
    (finding,) = [f for f in analysis.findings if f.kind == Kind.APPLICATION_CHANGE]
    evidence = finding.evidence_dict()
    assert evidence["changed_types"] == "home"
    assert float(evidence["service_time_ratio[home]"]) > 1.2
    (boundary,) = [b for b in analysis.boundaries if b.kind == "application_change"]
    ratio = {c.name: c.ratio for c in boundary.changes}
    assert ratio["buy"] < 1.0
    assert abs(np.log(ratio["buy"])) > abs(np.log(ratio["home"]))


# seed 6 was a strict xfail until issue 18's fifth round (home's own latency stepped +12%,
# t = 4.4 above the bar 4.2, ten windows after the first change: a third application change);
# with the searched step's error allowing for shocks neighbouring blocks share, it passes
@pytest.mark.parametrize("seed", range(1, 7))
def test_paper_experiment_across_seeds(seed: int) -> None:
    analysis = SegmentDetector().analyse(cherkasova_scenario(seed).frame)
    assert analysis.episodes == ((60, 120),)
    changes = [b.index for b in analysis.boundaries if b.kind == "application_change"]
    assert len(changes) == 2
    assert all(abs(at - truth) <= 2 for at, truth in zip(changes, (300, 360), strict=True))
    for finding in (f for f in analysis.findings if f.kind == Kind.APPLICATION_CHANGE):
        assert str(finding.evidence_dict()["changed_types"]).split(",")[0] == "home"


@pytest.mark.parametrize("seed", range(3))
def test_a_hog_that_came_and_went_is_an_anomaly_by_the_residual_rule(seed: int) -> None:
    # The middle uses more CPU than the models on either side predict, and the excess came
    # and went: an anomaly, found with the idle rule out of reach (idle_util 0.9). (A release
    # rolled back looks the same in the CPU; its own-latency steps are what tell it, see
    # test_a_release_that_is_rolled_back_is_two_application_changes.)
    hog = [Phase(60, SHOP, [30.0], wander=0.5),
           Phase(60, SHOP, [30.0], wander=0.5, hog=(0.3, 0.5)),
           Phase(60, SHOP, [30.0], wander=0.5)]  # fmt: skip
    analysis = SegmentDetector(idle_util=0.9).analyse(simulate_segments(hog, seed=seed).frame)
    assert analysis.episodes == ((60, 120),)
    middle = analysis.pieces[1]
    assert (middle.start, middle.stop, middle.label) == (60, 120, "anomaly")
    assert set(middle.rules) == {"residual"}


@pytest.mark.xfail(
    strict=True,
    reason="known regression (issue 18): a change that is undone later is not found by the "
    "located search, whose 'lasting' test compares the far ends of the whole stretch",
)
@pytest.mark.parametrize("seed", range(3))
def test_a_release_that_is_rolled_back_is_two_application_changes(seed: int) -> None:
    release = [Phase(60, SHOP, [30.0], wander=0.5),
               Phase(60, SHOP, [30.0], wander=0.5, extra={"home": 0.008}),
               Phase(60, SHOP, [30.0], wander=0.5)]  # fmt: skip
    analysis = SegmentDetector(idle_util=0.9).analyse(simulate_segments(release, seed=seed).frame)
    assert analysis.episodes == ()
    assert [(b.index, b.kind) for b in analysis.boundaries] == [
        (60, "application_change"),
        (120, "application_change"),
    ]
    named = [f.evidence_dict()["changed_types"] for f in analysis.findings]
    assert named == ["home", "home"]


@pytest.mark.parametrize(
    "seed",
    [
        pytest.param(
            6,
            marks=pytest.mark.xfail(
                strict=True,
                reason="issue 18: a type's latency that steps up for good against the other "
                "types' is an application change without the CPU's corroboration, which on a "
                "busy host's real runs is too noisy to require (docs/segments.md)",
            ),
        ),
        pytest.param(
            11,
            marks=pytest.mark.xfail(
                strict=True,
                reason="known regression (issue 18): the located search cuts one window off "
                "the halves, where the Chow test is just significant",
            ),
        ),
    ],
)
def test_a_difference_within_the_noise_is_no_application_change(seed: int) -> None:
    # Few, noisy transactions per window; nothing changed in the CPU, only home's latency
    # (contention on one type): the signature names home first, the joint model's extra error is
    # above the allowed 3%, but the Chow test finds the two fits no more different than their
    # noise. No application change.
    phases = [Phase(14, SHOP, [0.5], wander=0.5), Phase(14, SHOP, [0.5], wander=0.5)]
    frame = simulate_segments(phases, seed=seed, cv=1.0).frame.copy()
    frame.loc[frame.index[14:], "rt_sum[home]"] *= 1.6
    detector = SegmentDetector()
    _, _, (boundary,) = detector._reconcile(_read(frame), [(0, 14), (14, 28)])
    assert boundary.kind == "workload_change" and boundary.unconfirmed
    assert boundary.excess > detector.allowed_error
    assert boundary.p_value >= detector.alpha
    data = _read(frame)
    changes = detector._service_changes(data, np.arange(14), np.arange(14, 28))
    assert "home" in {c.name for c in changes if c.changed}
    assert max(changes, key=lambda c: abs(c.score)).name == "home"


def test_analysis_holds_its_detector_and_findings_carry_the_check(paper: Paper) -> None:
    _, analysis = paper
    assert analysis.detector == SegmentDetector()
    assert SegmentDetector.name == FAMILY.name == "segments"
    assert CHECK == "workload_segments" and FAMILY.checks == (CHECK,)
    assert {f.detector for f in analysis.findings} == {CHECK}
    assert analysis.n_windows == len(analysis.times) == len(analysis.fitted) == 420
    assert not analysis.cpu.flags.writeable and not analysis.fitted.flags.writeable


def test_boundaries_name_the_types_their_findings_name(paper: Paper) -> None:
    _, analysis = paper
    changes = [f for f in analysis.findings if f.kind == Kind.APPLICATION_CHANGE]
    boundaries = [b for b in analysis.boundaries if b.kind == "application_change"]
    assert [b.named for b in boundaries] == [("home",), ("home",)]
    assert [",".join(b.named) for b in boundaries] == [
        f.evidence_dict()["changed_types"] for f in changes
    ]
    assert all(b.named == () for b in analysis.boundaries if b.kind == "workload_change")


def test_summary_lists_segments_labels_and_boundaries(paper: Paper) -> None:
    _, analysis = paper
    summary = analysis.summary()
    text = summary.text
    assert text.splitlines()[0].startswith("420 windows, 7 transaction types")
    assert "1 anomalous stretch(es), 1 workload change(s), 2 application change(s)" in text
    segments = text.split("Segments:\n", 1)[1].split("Boundaries:\n", 1)[0].splitlines()
    assert len(segments) == len(analysis.pieces)
    assert sum("anomaly (" in line for line in segments) == sum(
        p.label == "anomaly" for p in analysis.pieces
    )
    boundaries = text.split("Boundaries:\n", 1)[1].splitlines()
    assert boundaries == [
        "  2024-06-03 02:00:00 UTC: workload change",
        "  2024-06-03 05:00:00 UTC: application change (changed: home)",
        "  2024-06-03 06:00:00 UTC: application change (changed: home)",
    ]
    assert "<li>2024-06-03 05:00:00 UTC: application change (changed: home)</li>" in summary.html


def test_min_size_sets_the_shortest_segment() -> None:
    frame = cherkasova_scenario(0, windows=40).frame
    analysis = SegmentDetector(min_size=12).analyse(frame)
    assert analysis.segmentation is not None
    assert min(b - a for a, b in analysis.segmentation.segments()) >= 12
    assert min(p.windows for p in analysis.pieces) >= 12
    with pytest.raises(ValueError, match="min_segment"):
        SegmentDetector(min_segment=12)  # type: ignore[call-arg]  # renamed min_size


# -- a saturated host: response times are the queue, the CPU names the changed type ---------

MIX2 = {"home": 0.08, "new_products": 0.16, "best_sellers": 0.2, "product_detail": 0.12,
        "search": 0.04, "cart": 0.24, "buy": 0.16}  # fmt: skip


def _queued(changed: tuple[str, ...], seed: int) -> pd.DataFrame:
    """Four phases of two mixes; from window 120 the ``changed`` types cost twice their CPU.
    Every transaction's response time is the same queueing delay, drawn per window, whatever
    its type: no service time can stand out."""
    demand = {"home": 0.008, "new_products": 0.012, "best_sellers": 0.020, "search": 0.010,
              "cart": 0.006, "buy": 0.015}  # fmt: skip
    extra = {name: demand[name] for name in changed}
    phases = [Phase(60, SHOP, [20.0, 30.0], wander=0.3), Phase(60, MIX2, [25.0], wander=0.3),
              Phase(60, SHOP, [20.0, 30.0], wander=0.3, extra=extra),
              Phase(60, MIX2, [25.0], wander=0.3, extra=extra)]  # fmt: skip
    frame = simulate_segments(phases, seed=seed).frame.copy()
    queue = np.random.default_rng(seed + 1000).lognormal(0.0, 0.5, len(frame))
    for name in SHOP:
        frame[f"rt_sum[{name}]"] = frame[f"n[{name}]"] * queue
    return frame


@pytest.mark.xfail(
    strict=True,
    reason="issue 18: an application change is found where a type's latency steps against "
    "the other types'; here every type's response time is the same queue, so none can, and "
    "the CPU-only search was removed (on the recorded runs it found no change and added a "
    "false one; docs/segments.md)",
)
@pytest.mark.parametrize(
    ("changed", "seed"),
    [(("home",), 0), (("search",), 0), (("cart",), 0), (("buy",), 1), (("home", "buy"), 1)],
)
def test_on_a_saturated_host_the_cpu_names_each_changed_type(
    changed: tuple[str, ...], seed: int
) -> None:
    analysis = SegmentDetector().analyse(_queued(changed, seed))
    assert analysis.episodes == ()
    (boundary,) = analysis.boundaries
    assert (boundary.index, boundary.kind) == (120, "application_change")
    assert set(boundary.named) == set(changed) and not boundary.tentative
    for cost in boundary.costs:
        assert cost.low > 0 and cost.relative == pytest.approx(1.0, abs=0.3)  # twice as heavy


def test_on_a_saturated_host_a_change_of_mix_alone_is_no_application_change() -> None:
    analysis = SegmentDetector().analyse(_queued((), 0))
    assert not [b for b in analysis.boundaries if b.kind == "application_change"]
    assert analysis.episodes == ()


def test_a_burst_of_a_few_seconds_is_counted_not_reported() -> None:
    # 1 s windows: three seconds of 0.6-0.9 of a core (a client reconnecting) is a burst,
    # counted in a warning; a hog of a minute in the same run is still an anomaly
    phases = [
        Phase(120, SHOP, [30.0], wander=0.5),
        Phase(3, SHOP, [30.0], wander=0.5, hog=(0.6, 0.9)),
        Phase(120, SHOP, [30.0], wander=0.5),
        Phase(60, SHOP, [30.0], wander=0.5, hog=(0.6, 0.9)),
        Phase(120, SHOP, [30.0], wander=0.5),
    ]
    for seed in range(3):
        frame = simulate_segments(phases, window_s=1.0, seed=seed).frame
        analysis = SegmentDetector().analyse(frame)
        ((start, stop),) = analysis.episodes
        assert abs(start - 243) <= 2 and abs(stop - 303) <= 2
        (burst,) = [w for w in analysis.warnings if "burst" in w]
        assert burst.startswith("1 burst(s)")
        short = SegmentDetector(min_anomaly=0.0).analyse(frame)
        assert short.episodes[0][0] in range(119, 124)  # with no floor it is an anomaly
