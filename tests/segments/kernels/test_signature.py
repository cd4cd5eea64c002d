"""Application signatures: S = median R·(1 − U) with order-statistic intervals, compared."""

from __future__ import annotations

import numpy as np
import pytest

from perfsleuth.errors import DataError
from perfsleuth.segments.kernels.signature import application_signature, compare_signatures


def test_median_and_its_order_statistic_interval() -> None:
    # 10 windows at U = 0: S = R. The 95% interval of a median of 10 is [x_(2), x_(9)]
    # (coverage 97.9%, the textbook table).
    latency = np.arange(1.0, 11.0)[:, None] * 1e-3
    sig = application_signature(latency, np.zeros(10), names=["a"])
    assert sig.median[0] == pytest.approx(5.5e-3)
    assert (sig.low[0], sig.high[0]) == pytest.approx((2e-3, 9e-3))
    assert sig.windows[0] == 10


def test_utilisation_is_taken_out() -> None:
    util = np.array([0.0, 0.5, 0.75, 0.9])
    latency = (0.004 / (1 - util))[:, None]  # R = S / (1 − U) exactly
    sig = application_signature(latency, util, names=["a"])
    assert sig.median[0] == pytest.approx(0.004)
    assert sig.low[0] == pytest.approx(0.004) and sig.high[0] == pytest.approx(0.004)


def test_windows_without_transactions_are_skipped() -> None:
    latency = np.array([[0.001, np.nan], [0.002, np.nan]])
    sig = application_signature(latency, [0.1, 0.2], names=["a", "b"])
    assert sig.windows.tolist() == [2, 0]
    assert np.isnan(sig.median[1])


def test_only_the_changed_type_is_named() -> None:
    rng = np.random.default_rng(0)
    util = rng.uniform(0.1, 0.6, 60)
    base = np.array([0.002, 0.010, 0.040])
    noise = np.exp(rng.normal(0, 0.1, (60, 3)))
    before = application_signature(base / (1 - util[:, None]) * noise, util, names=["a", "b", "c"])
    after_s = base * np.array([1.0, 1.5, 1.02])
    after = application_signature(
        after_s / (1 - util[:, None]) * noise, util, names=["a", "b", "c"]
    )
    changes = {c.name: c for c in compare_signatures(before, after, min_change=0.1)}
    assert [n for n, c in changes.items() if c.changed] == ["b"]
    assert changes["b"].change == pytest.approx(0.5, rel=0.05)
    assert changes["b"].ratio_low > 1.1
    assert not changes["c"].changed


@pytest.mark.parametrize(
    ("latency", "util", "match"),
    [
        ([[0.1]], [0.1, 0.2], "utilisation has 2"),
        ([[0.1]], [1.5], "fraction"),
    ],
)
def test_bad_input(latency: object, util: object, match: str) -> None:
    with pytest.raises(DataError, match=match):
        application_signature(latency, util, names=["a"])  # type: ignore[arg-type]


def test_a_type_is_judged_against_the_others_slow_down_not_its_own() -> None:
    # Contention stretches the short types more than the long one; home's code got slower on
    # top. With home's own ratio in the median, the yardstick moves towards it (1.7 instead
    # of 1.5) and a 47% change beyond the others' shared slow-down reads as 29%.
    rng = np.random.default_rng(1)
    names = ["home", "lookup", "report", "scan", "update"]
    base = np.array([0.002, 0.0003, 0.005, 0.001, 0.0005])
    ratio = np.array([2.2, 1.9, 1.05, 1.3, 1.7])
    util = np.zeros(40)
    before = application_signature(base * np.exp(rng.normal(0, 0.05, (40, 5))), util, names=names)
    after = application_signature(
        base * ratio * np.exp(rng.normal(0, 0.05, (40, 5))), util, names=names
    )
    changes = {c.name: c for c in compare_signatures(before, after, min_change=0.35)}
    assert changes["home"].changed
    assert changes["home"].common == pytest.approx(1.5, rel=0.05)  # median of the other four
    assert changes["home"].own_change == pytest.approx(2.2 / 1.5 - 1, rel=0.1)
    assert changes["lookup"].common == pytest.approx((1.7 + 1.3) / 2, rel=0.05)
    assert not changes["update"].changed
