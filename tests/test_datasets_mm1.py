from __future__ import annotations

import numpy as np
import pytest

from perfsleuth.datasets import simulate_mm1
from perfsleuth.errors import ConfigError
from perfsleuth.frames import normalise


@pytest.mark.parametrize("rho", [0.2, 0.5, 0.8])
def test_means_match_queueing_theory(rho: float) -> None:
    run = simulate_mm1(200_000, arrival_rate=rho, service_time=1.0, seed=3)
    # M/M/1: E[R] = 1/(mu - lambda); arrivals see E[N] = rho/(1-rho) (PASTA).
    assert run.response.mean() == pytest.approx(1 / (1 - rho), rel=0.06)
    assert run.queue_length.mean() == pytest.approx(rho / (1 - rho), rel=0.08)


def test_same_seed_same_run_and_different_seed_differs() -> None:
    a = simulate_mm1(100, arrival_rate=0.5, service_time=1.0, seed=1)
    b = simulate_mm1(100, arrival_rate=0.5, service_time=1.0, seed=1)
    c = simulate_mm1(100, arrival_rate=0.5, service_time=1.0, seed=2)
    np.testing.assert_array_equal(a.response, b.response)
    assert not np.array_equal(a.response, c.response)


def test_change_in_arrival_rate_shows_after_the_change_point() -> None:
    run = simulate_mm1(
        40_000, arrival_rate=0.3, service_time=1.0, change_at=20_000, new_arrival_rate=0.7, seed=5
    )
    assert run.rho_before == pytest.approx(0.3) and run.rho_after == pytest.approx(0.7)
    before, after = run.response[:20_000].mean(), run.response[25_000:].mean()
    assert before == pytest.approx(1 / 0.7, rel=0.1)
    assert after == pytest.approx(1 / 0.3, rel=0.15)


def test_lindley_matches_a_plain_loop() -> None:
    run = simulate_mm1(500, arrival_rate=0.9, service_time=1.0, seed=11, warmup=0)
    gaps = np.diff(run.arrival)
    wait = [run.response[0] - run.service[0]]
    for i in range(1, 500):
        wait.append(max(0.0, wait[-1] + run.service[i - 1] - gaps[i - 1]))
    np.testing.assert_allclose(run.response - run.service, wait, atol=1e-9)
    # the queue length an arrival sees counts the earlier customers not yet departed
    departure = run.arrival + run.response
    seen = [int(np.sum(departure[:i] > run.arrival[i])) for i in range(500)]
    np.testing.assert_array_equal(run.queue_length, seen)


def test_metric_frame_satisfies_the_contract() -> None:
    frame = normalise(
        simulate_mm1(50, arrival_rate=1, service_time=0.5).to_metric_frame(), "metric"
    )
    assert set(frame["metric"]) == {"response_time", "queue_length"}
    assert len(frame) == 100


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n": 0},
        {"arrival_rate": 2.0},
        {"service_time": -1.0},
        {"change_at": 0},
        {"change_at": 10},
        {"new_arrival_rate": float("nan"), "change_at": 5},
        {"warmup": -1},
    ],
)
def test_bad_parameters(kwargs: dict[str, float]) -> None:
    params: dict[str, float] = {"n": 10, "arrival_rate": 0.5, "service_time": 1.0, **kwargs}
    with pytest.raises(ConfigError):
        simulate_mm1(**params)  # type: ignore[arg-type]


def test_interval_means() -> None:
    run = simulate_mm1(2000, arrival_rate=5.0, service_time=0.1, seed=4)
    frame = run.to_metric_frame(interval_s=10.0)
    rt = frame[frame["metric"] == "response_time"]
    first = run.arrival < 10.0
    assert rt["value"].iloc[0] == pytest.approx(run.response[first].mean())
    steps = rt["time"].diff().dropna().dt.total_seconds()
    assert (steps % 10 == 0).all()
    with pytest.raises(ConfigError):
        run.to_metric_frame(interval_s=0)
