"""An anomaly's edges by the likelihood of its excess (perfsleuth.segments.kernels.excess)."""

from __future__ import annotations

import numpy as np
import pytest

from perfsleuth.segments.kernels.excess import excess_stretch, stretch_spread


def _noise(seed: int, n: int, sd: float = 0.01) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, sd, n)


@pytest.mark.parametrize("seed", range(5))
def test_a_steady_hog_is_found_to_the_window(seed: int) -> None:
    rate = _noise(seed, 300)
    rate[120:180] += 0.5
    assert excess_stretch(rate, 0.01, 0, 300) == (120, 180)


@pytest.mark.parametrize("seed", range(5))
def test_a_hog_that_varies_keeps_its_mild_windows(seed: int) -> None:
    # 0.1 to 0.9 of a core, redrawn every window, mildest at both ends: a window of 0.1 is
    # far likelier under the hog's spread than under the model's noise
    rate = _noise(seed, 300)
    hog = np.random.default_rng(100 + seed).uniform(0.1, 0.9, 60)
    hog[0] = hog[-1] = 0.1
    rate[120:180] += hog
    assert excess_stretch(rate, 0.01, 0, 300) == (120, 180)


def test_windows_below_the_model_are_no_edge() -> None:
    # a noisy hog followed by two windows the model over-predicts: they stay out
    rate = _noise(0, 200)
    rate[50:100] += np.random.default_rng(1).uniform(0.25, 0.45, 50)
    rate[100:102] = -0.04
    assert excess_stretch(rate, 0.008, 0, 200) == (50, 100)


def test_the_search_stays_in_its_region_and_needs_an_excess() -> None:
    rate = _noise(0, 200)
    rate[20:40] += 1.0
    rate[120:160] += 0.5
    assert excess_stretch(rate, 0.01, 100, 200) == (120, 160)
    assert excess_stretch(-np.abs(rate), 0.01, 0, 200) == (0, 0)


def test_stretch_spread_is_the_spread_of_running_means() -> None:
    rate = _noise(3, 4000, sd=0.2)
    width = np.ones(4000)
    # independent windows: the mean of 16 has a spread of sd / 4
    assert stretch_spread(rate, width, 16) == pytest.approx(0.05, rel=0.1)
    # a level that moves for whole stretches is what the spread of long stretches measures
    rate += np.repeat(np.random.default_rng(4).normal(0.0, 0.1, 40), 100)
    assert stretch_spread(rate, width, 100) == pytest.approx(0.1, rel=0.35)
    assert np.isnan(stretch_spread(rate[:150], width[:150], 100))
