"""Berry & Hellerstein (1991) §4 on M/M/1 FCFS simulations, as fast seeded checks.

Built on the functions of ``scripts/reproduce_berry_hellerstein.py`` (loaded from its file), so
the tests and the report measure the same thing: response times (or queue lengths seen by
arrivals) of successive customers, λ = 1, s = ρ, 60,000 customers of warm-up, a change of the
mean service time at mid-series (the paper's §4.1: with λ = 1, ρ moves through s; §4.4's
comparison of queue lengths and response times is about arrival-rate changes, and uses those),
the top-level test of FindChangePoints at α = .05. Everything is seeded, so
each check is deterministic; the replicate counts below are chosen so that each assertion also
holds with a margin of ≥ 2.5 binomial standard errors around the rates the full script measures.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reproduce_berry_hellerstein.py"


@pytest.fixture(scope="module")
def bh() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reproduce_berry_hellerstein", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_f_distribution_false_positives_far_above_alpha(bh: ModuleType) -> None:
    # Paper (figure 5): with the F distribution, ≈ .95 false positives at N = 1000, ρ = .1.
    # We measure .84 (100 reps). Anything above .5 is "far off" — ten times α.
    rates = bh.false_positives(1000, 0.1, 100, methods=("f",), metrics=("response",))
    assert rates["f", "response"].p > 0.5


@pytest.mark.xfail(
    strict=True,
    reason=(
        "The paper's test on raw M/M/1 response times (robust=False) is ~3x alpha: .135 "
        "(54/400) at N=100, rho=.5; .08-.16 at N=100 and .11-.24 at N=1000 for rho in "
        "{.2,.5,.8}, as is the paper's Eq. 8. The noise is skewed (exponential) and more "
        "persistent than AR(1); the default search (robust=True) transforms the skewness away, "
        "see test_default_false_positive_rate_on_mm1."
    ),
)
def test_fpa_false_positive_rate_on_mm1_near_alpha(bh: ModuleType) -> None:
    # 400 reps: under a true rate of .05 the binomial SE is .011, so [.017, .083] is ±3 SE
    # (a correct detector fails this with probability ≈ .003). It also contains DESIGN's .03–.07.
    rate = bh.false_positives(100, 0.5, 400, methods=("fpa",), metrics=("response",))
    assert 0.017 <= rate["fpa", "response"].p <= 0.083


@pytest.mark.parametrize(
    ("n", "rho"),
    [
        (100, 0.2),
        (100, 0.5),
        (100, 0.8),
        (1000, 0.2),
        (1000, 0.5),
        (1000, 0.8),
    ],
)
def test_default_false_positive_rate_on_mm1(bh: ModuleType, n: int, rho: float) -> None:
    """perfsleuth's default search (``find_change_points(x)``: seeded candidates, each point
    judged between its neighbours by the FPA test with its segment's null φ, practical floors
    and penalty, Yeo–Johnson transform against skewness) on M/M/1 response times with no change.

    Measured with the script's seeds (400 series per cell, ``docs/changepoints-history.md``,
    M/M/1): ρ = .8 gives .052 at N = 100 and .092 at N = 1000 since the test's null φ is the
    larger of the segment's lag-1 autocorrelations on the symmetrised scale and the series'
    own (before: .098 and .177, expected failures: the transform lowers the lag-1
    autocorrelation of M/M/1 response times more than their persistence, .88 against .96).
    The bound is α + 3 binomial SE (.083), and the issue's bar (.10) at N = 1000, ρ = .8.
    Since a point's cost follows its scale (penalty × 2 ln(e n / m), raised for a long-run
    scale resting on few independent observations): .050 and .0975 (the history's power
    round; the current cells: ``docs/changepoints.md``, "M/M/1").
    """
    rate = bh.false_positives(n, rho, 400, methods=("defaults",), metrics=("response",))
    assert rate["defaults", "response"].p <= (0.10 if (n, rho) == (1000, 0.8) else 0.083)


def test_delta_rho_is_a_change_of_service_time_by_default(bh: ModuleType) -> None:
    # §4.1: λ = 1, so ρ .2 → .3 is s .2 → .3: the mean response time s/(1 − ρ) rises by
    # 71% (.25 → .43); carried by the arrival rate (§4.4), by 14% (.25 → .29)
    for factor, rise in (("service", 0.3 / 0.7 / 0.25), ("arrival", 0.2 / 0.7 / 0.25)):
        x = bh.run(20_000, 0.2, 0.1, 7, factor).response
        assert x[10_000:].mean() / x[:10_000].mean() == pytest.approx(rise, rel=0.08)
    with pytest.raises(ValueError, match="factor"):
        bh.run(100, 0.2, 0.1, 7, "both")


def test_power_increases_with_delta_rho(bh: ModuleType) -> None:
    # Figure 9: P(accept H0) falls as Δρ grows. N = 1000, ρ = .2, a change of service time;
    # the script measures about .12, .60, 1.0 for Δρ = 0, .05, .1 (100 reps; SE ≤ .035 each
    # at 200 reps). (Carried by the arrival rate, Δρ = .1 and .3 give .22 and .82.)
    powers = [
        bh.power_and_accuracy(1000, 0.2, d, 200, metrics=("response",))[0]["response"].p
        for d in (0.0, 0.05, 0.1)
    ]
    assert powers[0] < powers[1] < powers[2]
    assert powers[2] - powers[0] > 0.4


def test_default_power_on_mm1_response_times(bh: ModuleType) -> None:
    """The issue's bar for the defaults (``find_change_points(x)``): power ≥ .8 at N = 1000,
    ρ .2 → .3 (a change of service time at mid-series) on response times. Measured .843 with
    400 series (``--defaults-power``); .34 with the previous cost of a point (5 ln n + mBIC's
    length term), which charged a change of half the series like a one-observation bump."""
    rates, _ = bh.power_and_accuracy(1000, 0.2, 0.1, 400, metrics=("response",), method="defaults")
    assert rates["response"].p >= 0.8


def test_queue_length_more_sensitive_than_response_time(bh: ModuleType) -> None:
    # §4.4: for an arrival-rate change, queue lengths are more sensitive than response times.
    # N = 1000, ρ = .2 → .3: .52 on queue lengths against .22 on response times (100 reps).
    rates, _ = bh.power_and_accuracy(1000, 0.2, 0.1, 200, factor="arrival")
    assert rates["queue_length"].p > rates["response"].p + 0.1


def test_candidate_accuracy_improves_with_delta_rho(bh: ModuleType) -> None:
    # Figure 10: the optimal split lands nearer the true f = .5 for a larger Δρ (N = 1000, ρ = .2,
    # a change of service time; the script measures P(|f̂ − f| ≤ .1) = .56 for Δρ = .05 against
    # .91 for Δρ = .3, 400 reps; with the arrival rate carrying Δρ = .1 and .3: .22 and .58).
    near = []
    for d in (0.05, 0.3):
        _, fhat = bh.power_and_accuracy(1000, 0.2, d, 100, metrics=())
        near.append(bh.accuracy_summary(fhat)["p_within_0.10"])
    assert near[1] > near[0] + 0.15
