"""Workload regimes: where each type's arrival rate changes (perfsleuth.segments.kernels.mix)."""

from __future__ import annotations

import numpy as np
import pytest

from perfsleuth.segments.kernels.mix import mix_regimes

from .test_ownstep import busy_host


def _starts(labels: np.ndarray) -> list[int]:
    return [int(i) for i in np.flatnonzero(np.diff(labels)) + 1]


@pytest.mark.parametrize("seed", range(5))
def test_each_new_mix_starts_a_regime(seed: int) -> None:
    # the busy host draws a new mix and rate every 45 windows
    _, counts = busy_host(seed)
    labels = mix_regimes(counts, np.ones(300), least=30)
    starts = _starts(labels)
    assert len(starts) == 6
    assert all(abs(a - b) <= 1 for a, b in zip(starts, range(45, 300, 45), strict=True))
    assert labels[0] == 0 and labels[-1] == 6


@pytest.mark.parametrize("width", [1.0, 5.0])
def test_the_same_mix_is_one_regime_however_its_counts_scatter(width: float) -> None:
    rng = np.random.default_rng(7)
    rate = np.array([40.0, 10.0, 25.0, 5.0, 3.0]) * width
    # bursts of arrivals that every type shares (a client's think time, a stall), up to
    # three times the Poisson scatter
    burst = rng.gamma(8.0, 1.0 / 8.0, size=(600, 1))
    counts = rng.poisson(rate * burst)
    assert _starts(mix_regimes(counts, np.full(600, width), least=30)) == []


def test_a_regime_lasts_at_least_least_windows() -> None:
    rng = np.random.default_rng(1)
    counts = np.vstack([rng.poisson([50, 5], size=(100, 2)), rng.poisson([5, 50], size=(10, 2))])
    counts = np.vstack([counts, rng.poisson([50, 5], size=(100, 2))])
    # a 10-window mix is shorter than a regime may be: its edges are not both cuts
    starts = _starts(mix_regimes(counts, np.ones(210), least=30))
    assert all(b - a >= 30 for a, b in zip([0, *starts], [*starts, 210], strict=True))


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="width"):
        mix_regimes(np.ones((10, 2)), np.ones(9), least=2)
