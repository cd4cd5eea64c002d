"""The ramp and saw-tooth kernels against an independent reference and on shapes that are not
teeth."""

from __future__ import annotations

import numpy as np
import pytest

from perfsleuth.processes.kernels import find_saw_tooth, trend

MIB = 2.0**20
HOURS = 48


def test_trend_matches_scipy_theil_sen() -> None:
    from scipy.stats import theilslopes

    rng = np.random.default_rng(0)
    x = np.arange(60, dtype=float)
    y = 3 * x + rng.normal(0, 10, 60)
    ours = trend(x, y)
    assert ours.slope == pytest.approx(theilslopes(y, x)[0])
    assert ours.p_value < 1e-6
    flat = trend(x, rng.normal(0, 1, 60))
    assert flat.p_value > 0.01


def test_steps_are_not_teeth() -> None:
    hod = np.arange(HOURS) % 24
    rss = np.where((hod >= 8) & (hod < 18), 400 * MIB, 100 * MIB)  # business hours, stepwise
    assert (
        find_saw_tooth(
            rss, reset_drop=0.5, min_teeth=2, min_tooth_periods=3, min_rise=16 * MIB, max_step=0.6
        )
        is None
    )
