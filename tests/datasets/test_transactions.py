"""The transactional-service simulator: contract, determinism, ground truth, injected faults."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from perfsleuth.datasets.transactions import (
    DEFAULT_TYPES,
    Fault,
    TransactionType,
    WorkloadShift,
    simulate_transactions,
    transaction_scenario,
)
from perfsleuth.errors import ConfigError
from perfsleuth.frames import coverage_of, normalise, workload_types


def totals(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    types = workload_types(frame)
    counts = frame[[f"n[{t}]" for t in types]].to_numpy()
    rt = frame[[f"rt_sum[{t}]" for t in types]].to_numpy()
    return counts, rt


def test_frame_honours_the_workload_contract() -> None:
    run = simulate_transactions(288, seed=1)
    frame = run.frame
    coverage = coverage_of(frame)
    assert coverage is not None and coverage.contract == "workload" and coverage.rows == 288
    assert workload_types(frame) == [t.name for t in DEFAULT_TYPES] == list(run.types)
    assert str(frame["time"].dtype) == "datetime64[ns, UTC]"
    assert (frame["time"].diff().dropna() == pd.Timedelta(minutes=5)).all()
    assert (frame["window_s"] == 300.0).all() and (frame["cpu_cores"] == 4.0).all()
    assert frame["cpu_util"].between(0.0, 1.0).all()
    counts, rt = totals(frame)
    assert (counts >= 0).all() and (counts == np.round(counts)).all()
    assert ((rt > 0) == (counts > 0)).all()
    pd.testing.assert_frame_equal(normalise(frame, "workload"), frame)


def test_same_seed_same_frame_other_seed_other_frame() -> None:
    a = simulate_transactions(100, seed=3).frame
    pd.testing.assert_frame_equal(a, simulate_transactions(100, seed=3).frame)
    assert not a.equals(simulate_transactions(100, seed=4).frame)


def test_load_follows_the_day_and_peaks_at_the_requested_utilisation() -> None:
    run = simulate_transactions(288, peak_util=0.3, seed=2)
    hours = run.frame["time"].dt.hour.to_numpy()
    counts, _ = totals(run.frame)
    per_window = counts.sum(axis=1)
    assert per_window[(hours >= 14) & (hours < 18)].mean() > 4 * per_window[hours < 5].mean()
    work_util = counts @ np.array(run.service_times) / (300.0 * 4)
    assert work_util.max() == pytest.approx(0.3, rel=0.15)


def test_the_mix_drifts() -> None:
    counts, _ = totals(simulate_transactions(288, seed=5).frame)
    shares = counts / counts.sum(axis=1, keepdims=True)
    assert (shares.max(axis=0) / shares.min(axis=0) > 2.0).all()


def test_faults_change_exactly_what_they_say() -> None:
    clean = simulate_transactions(200, seed=9)
    faults = (
        Fault("bottleneck", 20, 5),
        Fault("too_fast", 60, 3, magnitude=0.5),
        Fault("stuck_pool", 100, 4, magnitude=0.2),
    )
    run = simulate_transactions(200, seed=9, faults=faults)
    c0, rt0 = totals(clean.frame)
    c1, rt1 = totals(run.frame)
    np.testing.assert_array_equal(c0, c1)  # faults do not change the workload
    np.testing.assert_allclose(rt1[20:25], 3.0 * rt0[20:25])
    np.testing.assert_allclose(rt1[60:63], (0.5 + 0.5 * 0.05) * rt0[60:63])
    extra = (rt1[100:104] - rt0[100:104]).sum() / c1[100:104].sum()
    assert extra == pytest.approx(0.2, rel=0.05)  # mean wait per transaction
    untouched = np.ones(200, dtype=bool)
    untouched[[*range(20, 25), *range(60, 63), *range(100, 104)]] = False
    np.testing.assert_allclose(rt1[untouched], rt0[untouched])
    util0, util1 = clean.frame["cpu_util"].to_numpy(), run.frame["cpu_util"].to_numpy()
    assert (util1[20:25] > util0[20:25] + 0.3).all()  # the bottleneck's hog shows on the CPU
    assert (util1[60:63] < util0[60:63]).all()


def test_ground_truth_episodes_name_windows_and_times() -> None:
    run = transaction_scenario(seed=0)
    assert len(run.frame) == 864 and run.window_s == 300.0
    kinds = {e.kind: e for e in run.faults}
    assert set(kinds) == {"bottleneck", "stuck_pool", "too_fast"}
    bottleneck = kinds["bottleneck"]
    assert (bottleneck.first, bottleneck.last) == (120, 125)
    assert bottleneck.start == pd.Timestamp("2024-05-01 10:00", tz="UTC")
    assert bottleneck.end == pd.Timestamp("2024-05-01 10:30", tz="UTC")
    for episode in run.faults:
        assert run.frame["time"].iat[episode.first] == episode.start
        assert run.frame["time"].iat[episode.last] + pd.Timedelta(minutes=5) == episode.end
    (change,) = run.workload_changes
    assert (change.first, change.last) == (288, 863)
    assert run.fault_windows().sum() == sum(e.last - e.first + 1 for e in run.faults)


def test_scenario_keeps_clock_times_for_other_window_widths() -> None:
    run = transaction_scenario(seed=0, window_s=60.0)
    assert len(run.frame) == 3 * 1440
    bottleneck = next(e for e in run.faults if e.kind == "bottleneck")
    assert bottleneck.start == pd.Timestamp("2024-05-01 10:00", tz="UTC")
    assert bottleneck.end == pd.Timestamp("2024-05-01 10:30", tz="UTC")
    assert bottleneck.last - bottleneck.first + 1 == 30


def test_workload_shift_raises_load_and_the_share_of_expensive_types() -> None:
    run = simulate_transactions(576, seed=4, shifts=(WorkloadShift(288),))
    counts, _ = totals(run.frame)
    before, after = counts[:288], counts[288:]  # same hours of day on both sides
    assert after.sum() / before.sum() == pytest.approx(1.2, rel=0.05)
    service = np.array(run.service_times)
    per_tx_before = (before @ service).sum() / before.sum()
    per_tx_after = (after @ service).sum() / after.sum()
    assert per_tx_after / per_tx_before == pytest.approx(1.37, rel=0.1)
    assert run.frame["cpu_util"].max() < 0.7  # still far from saturation: no queueing blow-up


def test_random_types_and_custom_types() -> None:
    run = simulate_transactions(50, types=12, seed=0)
    assert len(run.types) == 12 and all(0.002 <= s <= 1.0 for s in run.service_times)
    custom = (TransactionType("a", 0.01, 1.0), TransactionType("b", 0.1, 1.0))
    run = simulate_transactions(
        50, types=custom, window_s=60.0, seed=0, start=datetime(2024, 1, 1, 12, tzinfo=UTC)
    )
    assert run.types == ("a", "b") and run.service_time("b") == 0.1
    assert run.frame["time"].iat[0] == pd.Timestamp("2024-01-01 12:00", tz="UTC")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"peak_util": 1.0}, "peak_util"),
        ({"window_s": 0.0}, "positive"),
        ({"types": 0}, "at least one"),
        ({"types": (TransactionType("a", 0.1, 1), TransactionType("a", 0.2, 1))}, "unique"),
        ({"types": (TransactionType("a", -0.1, 1),)}, "positive"),
        ({"faults": (Fault("bottleneck", 95, 10),)}, "outside"),
        ({"faults": (Fault("bottleneck", 5, 2, magnitude=0.5),)}, "factor > 1"),
        ({"faults": (Fault("too_fast", 5, 2, magnitude=1.5),)}, "share"),
        ({"faults": (Fault("stuck_pool", 5, 2, magnitude=0.0),)}, "wait"),
        ({"faults": (Fault("meltdown", 5, 2),)}, "unknown fault"),  # type: ignore[arg-type]
        ({"shifts": (WorkloadShift(10, mix=(1.0, 2.0)),)}, "2 factors"),
        ({"start": datetime(2024, 1, 1)}, "timezone"),
    ],
)
def test_bad_parameters_are_config_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        simulate_transactions(100, **kwargs)  # type: ignore[arg-type]


def test_no_windows_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="n_windows"):
        simulate_transactions(0)
