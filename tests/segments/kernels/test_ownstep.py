"""A type's own latency and its lasting steps (perfsleuth.segments.kernels.ownstep)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import t as t_dist

from perfsleuth.errors import DataError
from perfsleuth.segments.kernels.mix import mix_regimes
from perfsleuth.segments.kernels.ownstep import (
    _shared_error,
    _wls,
    history_bar,
    joint_steps,
    own_latency,
    own_steps,
    regime_steps,
    step_at,
    step_bar,
    window_gain,
)

NAMES = ("t0", "t1", "t2", "t3", "t4")
SERVICE = np.array([0.002, 0.004, 0.005, 0.009, 0.040])  # seconds, cheapest first


def busy_host(
    seed: int,
    *,
    m: int = 300,
    changed: tuple[str, ...] = (),
    at: int = 200,
    factor: float = 2.0,
    sensitivity: dict[str, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean latency and counts per window on a host whose conditions move every type together:
    a stretch and a tilt redrawn every 30 windows (co-tenants come and go), a new mix every
    45 windows, and per-window noise that shrinks with the transactions. A type's
    ``sensitivity`` (default 1) multiplies the stretch it feels (a type that is mostly round
    trips waits more per unit of contention). From window ``at`` the types ``changed`` do
    ``factor`` times the work."""
    feel = np.array([(sensitivity or {}).get(name, 1.0) for name in NAMES])
    rng = np.random.default_rng(seed)
    counts = np.zeros((m, len(NAMES)))
    latency = np.zeros((m, len(NAMES)))
    level = np.log(SERVICE) - np.log(SERVICE).mean()
    for start in range(0, m, 45):
        mix = rng.dirichlet(np.ones(len(NAMES)) * 2.0)
        rate = rng.uniform(40, 120)
        counts[start : start + 45] = rng.poisson(rate * mix, size=(min(45, m - start), len(NAMES)))
    for start in range(0, m, 30):
        stretch, tilt = rng.normal(0.0, 0.5), rng.normal(0.0, 0.25)
        block = slice(start, start + 30)
        latency[block] = np.exp(np.log(SERVICE) + stretch * feel + tilt * level)
    work = np.ones((m, len(NAMES)))
    for name in changed:
        work[at:, NAMES.index(name)] = factor
    noise = rng.normal(0.0, 1.0, size=(m, len(NAMES))) * 0.3 / np.sqrt(np.maximum(counts, 1))
    latency = latency * work * np.exp(noise)
    latency[counts == 0] = np.nan
    return latency, counts


@pytest.mark.parametrize("name", NAMES)
def test_each_type_made_twice_as_heavy_steps_at_the_change(name: str) -> None:
    latency, counts = busy_host(3, changed=(name,))
    steps = own_steps(latency, counts, np.arange(300), names=NAMES, block=20, least=30)
    top = steps[0]
    assert top.name == name and top.index == 200
    assert top.lasting and 1.6 <= top.ratio <= 2.5
    assert top.score >= step_bar(0.05, len(NAMES), 30 / 300, top.dof)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("pair", [("t1", "t3"), ("t0", "t2")])
def test_two_types_changed_at_once_step_together_at_the_change(
    seed: int, pair: tuple[str, str]
) -> None:
    latency, counts = busy_host(seed, changed=pair, factor=1.3)
    rows = np.arange(300)
    (joint,) = joint_steps(latency, counts, rows, [pair], names=NAMES, block=20, least=30)
    assert joint.name == "+".join(pair) and abs(joint.index - 200) <= 1
    assert joint.lasting and joint.ratio >= 1.2
    # the pairs' bar: Bonferroni over the ten pairs of five types
    assert joint.score >= step_bar(0.05, 10, 30 / 300, joint.dof, one_sided=True)


@pytest.mark.parametrize("seed", [0, 1, 3, 4, 5])
def test_the_dearest_type_changed_with_another_steps_once_that_one_is_no_yardstick(
    seed: int,
) -> None:
    # t3's rise tilts t4's yardstick: alone, t4 seems to get faster; paired with t3 (each no
    # yardstick for the other) both step up at the change
    latency, counts = busy_host(seed, changed=("t3", "t4"), factor=1.3)
    rows = np.arange(300)
    alone = {s.name: s for s in own_steps(latency, counts, rows, names=NAMES, block=20, least=30)}
    assert not (alone["t4"].index == 200 and alone["t4"].shift > 0)
    (joint,) = joint_steps(latency, counts, rows, [("t3", "t4")], names=NAMES, block=20, least=30)
    assert abs(joint.index - 200) <= 1 and joint.lasting and joint.ratio >= 1.2
    assert joint.score >= step_bar(0.05, 10, 30 / 300, joint.dof, one_sided=True)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("sensitivity", [None, {"t1": 1.8}])
def test_contention_and_mix_changes_alone_step_no_pair(
    seed: int, sensitivity: dict[str, float] | None
) -> None:
    latency, counts = busy_host(seed, sensitivity=sensitivity)
    pairs = list(itertools.combinations(NAMES, 2))
    for joint in joint_steps(
        latency, counts, np.arange(300), pairs, names=NAMES, block=20, least=30
    ):
        bar = step_bar(0.05, len(pairs), 30 / 300, joint.dof, one_sided=True)
        assert not (joint.score >= bar and joint.lasting and joint.ratio >= 1.1), joint


@pytest.mark.parametrize("seed", range(5))
def test_contention_and_mix_changes_alone_step_no_type(seed: int) -> None:
    latency, counts = busy_host(seed)
    steps = own_steps(latency, counts, np.arange(300), names=NAMES, block=20, least=30)
    for step in steps:
        # the detector's bar: one-sided, the lower of the two
        bar = step_bar(0.05, len(NAMES), 30 / 300, step.dof, one_sided=True)
        assert not (step.score >= bar and step.lasting and step.ratio >= 1.1), step


@pytest.mark.parametrize("seed", range(5))
def test_a_type_that_feels_contention_more_does_not_step_with_it(seed: int) -> None:
    # t1 is mostly round trips: a phase of heavy contention stretches it 1.8 times as much
    latency, counts = busy_host(seed, sensitivity={"t1": 1.8})
    steps = own_steps(latency, counts, np.arange(300), names=NAMES, block=20, least=30)
    for step in steps:
        bar = step_bar(0.05, len(NAMES), 30 / 300, step.dof, one_sided=True)
        assert not (step.score >= bar and step.lasting and step.ratio >= 1.1), step


@pytest.mark.parametrize("seed", range(3))
def test_a_type_that_feels_contention_more_steps_when_its_code_changes(seed: int) -> None:
    latency, counts = busy_host(seed, sensitivity={"t1": 1.5}, changed=("t1",), factor=1.5)
    steps = own_steps(latency, counts, np.arange(300), names=NAMES, block=20, least=30)
    top = steps[0]
    assert top.name == "t1" and abs(top.index - 200) <= 2 and top.lasting
    assert top.score >= step_bar(0.05, len(NAMES), 30 / 300, top.dof)


@pytest.mark.parametrize("name", NAMES)
def test_a_change_45_windows_before_the_end_steps_at_the_change(name: str) -> None:
    # the searched step is measured on all the windows after it, not their first half
    latency, counts = busy_host(3, changed=(name,), at=255)
    steps = own_steps(latency, counts, np.arange(300), names=NAMES, block=20, least=30)
    top = steps[0]
    assert top.name == name and top.index == 255 and top.lasting
    assert top.score >= step_bar(0.05, len(NAMES), 30 / 300, top.dof, one_sided=True)


@pytest.mark.parametrize("name", NAMES)
def test_a_change_45_windows_before_the_end_passes_the_runs_own_history(name: str) -> None:
    # the end-of-data bar by the run's own history: the steps its own mixes make at the end
    latency, counts = busy_host(3, changed=(name,), at=255)
    top = own_steps(latency, counts, np.arange(300), names=NAMES, block=20, least=30)[0]
    bar = history_bar(latency, counts, np.arange(300), 255, names=NAMES, block=20, least=30)
    assert top.name == name and top.score >= bar
    again = history_bar(latency, counts, np.arange(300), 255, names=NAMES, block=20, least=30)
    assert again == bar  # seeded


@pytest.mark.parametrize("seed", range(5))
def test_a_type_whose_own_latency_moves_with_every_mix_raises_the_history_bar(
    seed: int,
) -> None:
    # t1 mostly round trips: each mix (45 windows) moves its own latency by ~30%; the steps
    # it makes at the run's own seams are the bar a step at the end must pass
    latency, counts = busy_host(seed)
    quiet = history_bar(latency, counts, np.arange(300), 255, names=NAMES, block=20, least=30)
    rng = np.random.default_rng(seed)
    for start in range(0, 300, 45):
        latency[start : start + 45, 1] *= math.exp(rng.normal(0.0, 0.3))
    noisy = history_bar(latency, counts, np.arange(300), 255, names=NAMES, block=20, least=30)
    assert noisy > max(quiet, 2.0)


@pytest.mark.parametrize("name", NAMES)
def test_a_change_of_code_holds_in_every_later_mix(name: str) -> None:
    # the type runs at its own steady rate in every mix, so that each later mix can judge it
    latency, counts = busy_host(3, m=390, changed=(name,))
    j = NAMES.index(name)
    counts[:, j] = np.random.default_rng(j).poisson(30, size=390)
    rows = np.arange(390)
    regimes = mix_regimes(counts, np.ones(390), least=30)
    later = regime_steps(latency, counts, rows, 200, regimes, name=name, names=NAMES, block=20,
                         least=30)  # fmt: skip
    # of 225-270, 270-315, 315-360, 360-390 (200-225 is too short), those where the type shows
    assert len(later) >= 2
    (step,) = step_at(latency, counts, rows, 200, names=NAMES, block=20, only=[name])
    assert all(x >= 0.5 * step.shift for x in later), (later, step.shift)


@pytest.mark.parametrize("seed", range(5))
def test_a_type_that_slows_with_some_mixes_does_not_hold_in_every_later_mix(seed: int) -> None:
    # t1 writes: from the third mix on it waits 1.5 times as long on the log and the disk,
    # except in the fifth mix, which writes little (h19's t1: .63 of t2's latency, then .92,
    # and .59 in the seventh phase). It lasts by the later half of the windows after it, but
    # one later mix shows none of it
    latency, counts = busy_host(seed)
    counts[:, 1] = np.random.default_rng(seed).poisson(30, size=300)  # t1 in every mix
    latency[90:, 1] *= 1.5
    latency[180:225, 1] /= 1.5
    rows = np.arange(300)
    (step,) = step_at(latency, counts, rows, 90, names=NAMES, block=20, only=["t1"])
    assert step.lasting and step.ratio >= 1.2
    regimes = mix_regimes(counts, np.ones(300), least=30)
    later = regime_steps(latency, counts, rows, 90, regimes, name="t1", names=NAMES, block=20,
                         least=30)  # fmt: skip
    assert len(later) >= 3
    assert min(later) < 0.5 * step.shift
    assert sum(x < 0.5 * step.shift for x in later) == 1  # the fifth mix's only


def test_a_mix_that_shows_nothing_of_the_type_is_not_judged() -> None:
    # the load generator seconds behind its schedule for the mix after the change: every
    # type waits alike (gain ~0), so that mix shows nothing of t2's step and is not judged
    latency, counts = busy_host(3, changed=("t2",), at=180)
    latency[180:225] = 1.5 * (1.0 + 0.01 * np.arange(5))
    rows = np.arange(300)
    regimes = mix_regimes(counts, np.ones(300), least=30)
    later = regime_steps(latency, counts, rows, 180, regimes, name="t2", names=NAMES, block=20,
                         least=30)  # fmt: skip
    (step,) = step_at(latency, counts, rows, 225, names=NAMES, block=20, only=["t2"])
    assert 1 <= len(later) <= 2 and all(x >= 0.5 * step.shift for x in later), later


def test_regime_steps_needs_a_label_per_window() -> None:
    latency, counts = busy_host(0)
    with pytest.raises(ValueError, match="labels"):
        regime_steps(latency, counts, np.arange(300), 90, np.zeros(299), name="t1", names=NAMES)
    with pytest.raises(DataError, match="t9"):
        regime_steps(latency, counts, np.arange(300), 90, np.zeros(300), name="t9", names=NAMES)


def test_the_history_bar_needs_a_history() -> None:
    latency, counts = busy_host(0)
    with pytest.raises(ValueError, match="split"):
        history_bar(latency, counts, np.arange(300), 0, names=NAMES, block=20, least=30)


@pytest.mark.parametrize("after", [2, 3, 11])
def test_the_searched_steps_error_holds_its_level_when_neighbours_share_shocks(
    after: int,
) -> None:
    # 22 block means with no step, neighbouring blocks sharing a shock (correlation 1/2), a
    # step tested on the last ``after`` blocks: at 5% the searched step's error rejects about
    # 5% of the time; Newey-West's, read off residuals the step fits almost exactly, 12-13%
    rng = np.random.default_rng(after)
    n, draws = 22, 1000
    xs = np.column_stack([np.ones(n), (np.arange(n) >= n - after).astype(np.float64)])
    shared = newey_west = 0
    for _ in range(draws):
        shock = rng.normal(size=n + 1)
        ys = (shock[1:] + shock[:-1]) / math.sqrt(2.0)
        ours, theirs = _shared_error(xs, ys), _wls(xs, ys)
        assert ours is not None and theirs is not None
        step, se, dof = ours
        shared += abs(step / se) > t_dist.ppf(0.975, dof)
        step, se, dof = theirs[0]
        newey_west += abs(step / se) > t_dist.ppf(0.975, dof)
    assert shared / draws <= 0.07
    assert newey_west / draws >= 0.10


def test_two_types_at_once_both_step_when_neither_is_the_others_yardstick() -> None:
    latency, counts = busy_host(4, changed=("t1", "t3"))
    first = step_at(latency, counts, np.arange(300), 200, names=NAMES, block=20)
    assert first[0].name in {"t1", "t3"}
    second = step_at(
        latency, counts, np.arange(300), 200, names=NAMES, block=20, exclude=[first[0].name]
    )
    other = next(s for s in second if s.name != first[0].name)
    assert other.name in {"t1", "t3"} and other.ratio >= 1.6


@pytest.mark.parametrize("name", NAMES)
def test_windows_where_every_type_waits_alike_say_nothing_of_a_change(name: str) -> None:
    # the load generator 3 s behind its schedule for the 45 windows after the change (as in
    # r02, r07 and r09): every transaction's logged latency is mostly that lag, so the gain
    # is near 0 there (the ridge keeps it above 0) and those windows weigh little; the step
    # is still found and passes the bar, at the change or within the windows that cannot
    # tell (their own latency shows a fifth of the step: it lands near their end)
    latency, counts = busy_host(3, changed=(name,))
    lag = np.zeros(300)
    lag[200:245] = 3.0
    latency = latency + lag[:, None]
    gain = window_gain(latency, counts, names=NAMES, block=10)
    assert gain[200:245].max() < 0.3 and np.median(np.delete(gain, range(200, 245))) > 0.8
    top = own_steps(latency, counts, np.arange(300), names=NAMES, block=20, least=30)[0]
    assert top.name == name and 200 <= top.index <= 250 and top.lasting
    assert top.score >= step_bar(0.05, len(NAMES), 30 / 300, top.dof)


def test_the_common_stretch_and_tilt_are_taken_out() -> None:
    latency, counts = busy_host(5)
    own, weight = own_latency(latency, counts, names=NAMES, block=30)
    raw = np.log(latency)
    # each type's own latency varies far less than its latency, which the host stretches
    for j in range(len(NAMES)):
        seen = weight[:, j] > 0
        assert np.nanstd(own[seen, j]) < 0.35 * np.nanstd(raw[seen, j])


def test_the_bar_is_the_sup_of_a_brownian_bridge() -> None:
    # Andrews (1993): sup-Wald 5% critical value with 15% trimming, one parameter, is 8.85
    assert math.isclose(step_bar(0.05, 1, 0.15) ** 2, 8.85, rel_tol=0.03)
    # more types, shorter edges and fewer degrees of freedom each ask for more
    assert step_bar(0.05, 5, 0.15) > step_bar(0.05, 1, 0.15)
    assert step_bar(0.05, 1, 0.05) > step_bar(0.05, 1, 0.15)
    assert step_bar(0.05, 1, 0.15, dof=10) > step_bar(0.05, 1, 0.15)
    # one way only: half the two-sided level, a lower bar
    one = step_bar(0.05, 5, 0.1, dof=20, one_sided=True)
    assert math.isclose(one, step_bar(0.10, 5, 0.1, dof=20))
    assert one < step_bar(0.05, 5, 0.1, dof=20)
    # the splits near the end only: fewer splits searched, a lower bar, but above one split's
    full = step_bar(0.05, 5, 0.1, dof=20, one_sided=True)
    end = step_bar(0.05, 5, 0.1, dof=20, one_sided=True, last_share=0.2)
    assert float(t_dist.ppf(1 - 0.05 / 5, 20)) < end < full
    assert math.isclose(step_bar(0.05, 5, 0.1, last_share=0.9), step_bar(0.05, 5, 0.1))
    with pytest.raises(ValueError, match="last_share"):
        step_bar(0.05, 5, 0.1, last_share=0.05)


def test_bad_input_is_named() -> None:
    latency, counts = busy_host(1, m=60)
    with pytest.raises(DataError, match="shape"):
        own_latency(latency[:, :4], counts, names=NAMES)
    with pytest.raises(DataError, match="no type named t9"):
        own_latency(latency, counts, names=NAMES, exclude=["t9"])
    with pytest.raises(ValueError, match="alpha"):
        step_bar(1.5, 5, 0.1)
