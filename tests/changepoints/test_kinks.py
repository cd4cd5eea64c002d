"""Changes of growth rate (kinks): found on a trending series whose slope bends, never on a
straight line in AR(1) noise, shown as a change of growth in findings."""

from __future__ import annotations

import functools
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.signal import lfilter

from perfsleuth import find_change_points
from perfsleuth.changepoints.detector import ChangePointDetector
from perfsleuth.changepoints.kernels import kinks
from perfsleuth.findings import Kind
from perfsleuth.frames import normalise

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    e = rng.standard_normal(n)
    e[0] /= math.sqrt(1 - phi * phi)
    return lfilter([1.0], [1.0, -phi], e)


def bent(n: int = 150, at: int = 90, seed: int = 7, phi: float = 0.5) -> np.ndarray:
    """A line rising 0.5 a reading that rises 2.0 a reading from ``at`` on, in AR(1) noise."""
    t = np.arange(n, dtype=float)
    return 100 + 0.5 * t + 1.5 * np.maximum(t - at, 0) + ar1(np.random.default_rng(seed), n, phi)


def test_a_bend_in_a_trend_is_a_slope_point_with_both_growth_rates() -> None:
    cp = find_change_points(bent())
    assert len(cp.points) == 1
    (point,) = cp.points
    assert point.kind == "slope" and abs(point.index - 90) <= 3
    assert point.slope_before[0] == pytest.approx(0.5, abs=0.15)
    assert point.slope_after[0] == pytest.approx(2.0, abs=0.3)
    assert point.shift == (0.0,) and point.statistic > point.critical_value
    assert cp.indices == (point.index,) and [s.stop for s in cp.segments] == [point.index, 150]
    # the model drawn is the broken line: residuals are the noise, not a ramp
    assert cp.fitted is not None
    assert np.std(bent() - cp.fitted[:, 0]) < 2.0


@pytest.mark.parametrize("n", [40, 120])
@pytest.mark.parametrize("phi", [0.0, 0.5, 0.8, 0.9])
def test_a_straight_line_in_ar1_noise_has_no_slope_point(n: int, phi: float) -> None:
    t = np.arange(n, dtype=float)
    for seed in range(10):
        x = 50 + 0.05 * t + ar1(np.random.default_rng([seed, n, round(100 * phi)]), n, phi)
        assert not any(p.kind == "slope" for p in find_change_points(x).points), seed


def test_a_bend_in_persistent_noise_is_judged_at_its_effective_count() -> None:
    """The level points and the broken line compete by BIC at ν = n (1 − φ)/(1 + φ), as the
    trend's two starts do: counted as n, this bend (series 142 of
    `benchmarks/changepoints_kinks.py --power`'s n = 120, φ = .5, Δ = 4 cell, kink at 72) was
    two level steps at 44 and 95, the noise's wander taken for signal."""
    rng = np.random.default_rng([18, 120, 50, 4])
    for _ in range(142):
        ar1(rng, 120, 0.5)
    t = np.arange(120, dtype=float)
    x = 100 + 0.05 * t + 0.2 * np.maximum(t - 72, 0) + ar1(rng, 120, 0.5)
    cp = find_change_points(x)
    assert [(p.index, p.kind) for p in cp.points] == [(75, "slope")]


def test_a_level_shift_without_a_trend_stays_a_level_point() -> None:
    """No trend kept: the broken line alone competes with the level points, and loses."""
    rng = np.random.default_rng(3)
    x = np.r_[np.full(60, 10.0), np.full(60, 16.0)] + rng.standard_normal(120)
    assert [p.kind for p in find_change_points(x).points] == ["level"]


def turn(shape: str, n: int = 100) -> np.ndarray:
    """A bend at mid-series with no overall trend: the line moves 8 over each side."""
    t = np.arange(n, dtype=float)
    at = n // 2
    shapes = {
        "V": np.abs(t - at),
        "Λ": -np.abs(t - at),
        "flat, then a ramp": np.maximum(t - at, 0.0),
        "a ramp, then flat": np.minimum(t, at),
    }
    return 100 + 8 / at * shapes[shape]


@pytest.mark.parametrize("shape", ["V", "Λ", "flat, then a ramp", "a ramp, then flat"])
def test_a_bend_without_an_overall_trend_is_a_slope_point(shape: str) -> None:
    """A V, a Λ or a hockey stick keeps no common slope; it got no point, or a level point in
    mid-ramp, when only a kept slope was searched for kinks."""
    for seed in range(5):
        x = turn(shape) + np.random.default_rng(seed).standard_normal(100)
        cp = find_change_points(x)
        assert [p.kind for p in cp.points] == ["slope"], (seed, cp.points)
        assert abs(cp.points[0].index - 50) <= 5, seed
    noise_free = find_change_points(turn(shape))
    assert [(p.index, p.kind) for p in noise_free.points] == [(50, "slope")]


def test_a_busy_period_is_no_bend() -> None:
    """M/M/1 response times at ρ = .8 rise and fall with a busy period: in 100 readings, a
    broken line alone passes the kink test (z² 46 against 22) but leaves noise whose memory is
    at the most the series can measure — the noise's own wander, not a change."""
    from perfsleuth.datasets import simulate_mm1

    seed = int(np.random.SeedSequence([1000, 100_000, 800, 11_000]).generate_state(1)[0])
    # series 11 of `scripts/reproduce_berry_hellerstein.py --defaults-fp`'s N = 100, ρ = .8 cell
    run = simulate_mm1(100, arrival_rate=1.0, service_time=0.8, seed=seed, warmup=60_000)
    assert find_change_points(np.asarray(run.response, dtype=float)).points == ()


@pytest.mark.parametrize("shape", ["flat, ramp, flat", "ramp, flat, ramp"])
def test_two_bends_that_undo_each_other_are_two_slope_points(shape: str) -> None:
    """A load moved gradually from one level to another (bends at 30 and 70 of 100): no
    one-kink line fits it, so binary segmentation on slopes found nothing (a trend, or a
    staircase of level points when noise-free); each two-thirds window holds one bend."""
    t = np.arange(100.0)
    middle = np.clip(t - 30, 0.0, 40.0)
    x = middle if shape == "flat, ramp, flat" else t - middle
    noise_free = find_change_points(x)
    assert [(p.index, p.kind) for p in noise_free.points] == [(30, "slope"), (70, "slope")]
    for seed in range(8):
        cp = find_change_points(x + np.random.default_rng(seed).standard_normal(100))
        bends = [p.index for p in cp.points if p.kind == "slope"]
        assert len(bends) == 2, (seed, cp.points)
        assert abs(bends[0] - 30) <= 2 and abs(bends[1] - 70) <= 2, (seed, cp.points)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rise", [20.0, 100.0])
def test_a_curve_that_bends_one_way_is_no_polygon_of_kinks(rise: float, seed: int) -> None:
    """A quadratic rise of 20 or 100 noise σ over 2,000 readings, AR(1) noise of φ .5: its
    slope grows at every reading, so no reading is where the growth changed (2d986cd: one
    kink a series at 20 σ, two to four at 100 σ, wherever the polygon fit best)."""
    t = np.linspace(0.0, 1.0, 2000)
    x = 50 + rise * t**2 + ar1(np.random.default_rng(seed), 2000, 0.5) * math.sqrt(0.75)
    assert [p for p in find_change_points(x).points if p.kind == "slope"] == []


def test_a_curve_drawn_by_one_kink_loses_it() -> None:
    """A quadratic rise of 20 noise σ over 400 readings (AR(1) noise of φ .5) is often drawn
    by one kink, each side holding half the curve and a quarter of its bend: neither side
    alone bent beyond two standard errors, so 11 of these 20 series kept a kink; both sides'
    evidence pooled, one does."""
    kinked = 0
    u = np.linspace(0.0, 1.0, 400)
    for seed in range(20):
        x = 50 + 20 * u * u + ar1(np.random.default_rng(seed), 400, 0.5) * math.sqrt(0.75)
        kinked += any(p.kind == "slope" for p in find_change_points(x).points)
    assert kinked <= 2


def test_a_curve_steep_at_its_start_is_no_polygon_of_kinks() -> None:
    """A √ rising 100 noise σ over 400 readings (AR(1) noise of φ .5): no cubic draws its
    steep start, so its two or three kinks stayed in all of these 10 series; every stretch
    between them bends their way, and at most a few series keep any."""
    kinked = 0
    u = np.linspace(0.0, 1.0, 400)
    for seed in range(10):
        x = 50 + 100 * np.sqrt(u) + ar1(np.random.default_rng(seed), 400, 0.5) * math.sqrt(0.75)
        kinked += any(p.kind == "slope" for p in find_change_points(x).points)
    assert kinked <= 3


def test_a_curve_drawn_by_a_step_among_kinks_has_no_point() -> None:
    """A √ rising 100 noise σ over 2,000 readings (AR(1) noise of φ .5): the level search
    draws it by a step near its middle, where nothing jumps, and three kinks inside its
    segments; 9 of these 10 series kept them (bf95f06). Two rules take them: the broken line
    alone, the step's rival, may bend as often as the description it rivals (it needs four
    or five kinks, and was capped at three: 5 of 10 series then kept them), and a step that
    is no real step beside kinks turning one way goes with them when every stretch between
    the kinks bends their way (1 of 10 keeps any point)."""
    u = np.linspace(0.0, 1.0, 2000)
    kept = 0
    for seed in range(10):
        x = 50 + 100 * np.sqrt(u) + ar1(np.random.default_rng(seed), 2000, 0.5) * math.sqrt(0.75)
        kept += bool(find_change_points(x).points)
    assert kept <= 2


@pytest.mark.parametrize("seed", range(3))
def test_a_real_step_on_that_curve_stays(seed: int) -> None:
    """The same √ with a step of 10 noise σ at reading 1,200: the step is real beside the
    kinks' broken line, so it stays when the kinks go as the curve's."""
    u = np.linspace(0.0, 1.0, 2000)
    step = 10.0 * (np.arange(2000) >= 1200)
    noise = ar1(np.random.default_rng(seed), 2000, 0.5) * math.sqrt(0.75)
    points = find_change_points(50 + 100 * np.sqrt(u) + step + noise).points
    assert any(p.kind == "level" and abs(p.index - 1200) <= 5 for p in points), points


@pytest.mark.parametrize("seed", range(4))
def test_sharp_bends_the_same_way_are_kept(seed: int) -> None:
    """Growth that speeds up twice, 0.1 → 0.3 → 0.9 a reading at 150 and 300 of 450: a cubic
    rounds both corners off, so the polygon describes the series better and keeps them."""
    t = np.arange(450.0)
    mean = 0.1 * t + 0.2 * np.maximum(t - 150, 0) + 0.6 * np.maximum(t - 300, 0)
    cp = find_change_points(mean + ar1(np.random.default_rng(seed), 450, 0.3))
    bends = [p.index for p in cp.points if p.kind == "slope"]
    assert len(bends) == 2 and abs(bends[0] - 150) <= 5 and abs(bends[1] - 300) <= 5, cp.points


def test_each_kink_is_judged_again_between_its_final_neighbours() -> None:
    """A gentle ramp between flats in a long series (rising 4 noise σ over the middle 40% of
    10,000 readings): the whole series' best kink falls at 79%, between the ramp's end and the
    series' end, and binary segmentation kept it beside the two bends found after it in 10 of
    10 series. Judged again between its final neighbours (flat there) it goes, and the bends
    move to the best kink between theirs."""
    n = 10_000
    t = np.arange(float(n))
    for seed in range(3):
        x = np.clip(t - 0.3 * n, 0.0, 0.4 * n) * (10.0 / n)
        cp = find_change_points(x + np.random.default_rng(seed).standard_normal(n))
        assert [p.kind for p in cp.points] == ["slope", "slope"], (seed, cp.indices)
        assert abs(cp.indices[0] - 3_000) <= 200 and abs(cp.indices[1] - 7_000) <= 200, seed


def test_windows_are_searched_only_when_asked_and_only_in_short_memory_noise() -> None:
    t = np.arange(200.0)
    x = np.clip(t - 60, 0.0, 80.0) + np.random.default_rng(3).standard_normal(200)
    judged = functools.partial(
        kinks.find_kinks, alpha=0.05, spend=True, min_size=5, min_effect=0.25,
        min_relative_change=0.0, cost=lambda n, shorter, nu: 0.0,
    )  # fmt: skip
    assert judged(x, [0, 200]) == []
    assert [k.index for k in judged(x, [0, 200], windows=True)] == [60, 140]
    # M/M/1 response times at ρ = .8 (series 137 of the N = 1,000 false-positive cell): a
    # busy period's rise and fall is a bend in a window, z² 74 against 12.5, but the noise
    # about it has the memory of the queue (φ implied ≥ .9), not one the bars hold for
    from perfsleuth.datasets import simulate_mm1

    seed = int(np.random.SeedSequence([1000, 1_000_000, 800, 137_000]).generate_state(1)[0])
    run = simulate_mm1(1000, arrival_rate=1.0, service_time=0.8, seed=seed, warmup=60_000)
    assert not any(p.kind == "slope" for p in find_change_points(run.response).points)


def test_the_bar_and_its_tail_probability_invert_each_other() -> None:
    for n in (25, 80, 300, 4000):
        for p in (0.0005, 0.003, 0.05):
            bar = kinks.critical_z2(n, p)
            assert kinks.tail_probability(n, bar) == pytest.approx(p, rel=1e-6)
    assert kinks.critical_z2(40, 0.05) > kinks.critical_z2(400, 0.05)  # shorter: higher bar


def test_the_table_script_computes_the_kernels_statistic() -> None:
    """The simulated null is of the statistic the detector judges (vectorised the same way)."""
    sys.path.insert(0, str(SCRIPTS))
    from make_kink_table import kink_z2

    rng = np.random.default_rng(11)
    y = np.vstack([ar1(rng, 60, 0.6) for _ in range(5)])
    for row, z2 in zip(y, kink_z2(y, kinks.MIN_SIDE), strict=True):
        scan = kinks.best_kink(row, kinks.MIN_SIDE)
        assert scan is not None
        beta = scan.numerator / scan.denominator
        variance, _ = kinks.long_run(scan.residual - beta * scan.hinge)
        assert scan.numerator**2 / scan.denominator / variance == pytest.approx(z2, rel=1e-9)


def test_a_slope_point_finding_says_how_growth_changed() -> None:
    values = bent()
    frame = pd.DataFrame(
        {
            "time": pd.date_range("2024-05-01 13:00", periods=len(values), freq="1min", tz="UTC"),
            "entity": "db",
            "metric": "disk_used",
            "value": values,
            "unit": "GB",
        }
    )
    (finding,) = ChangePointDetector().detect(normalise(frame, "metric"))
    assert finding.kind is Kind.CHANGE_POINT
    assert finding.explanation.startswith("db/disk_used: growth rose from +0.")
    # (GB is normalised to bytes, shown in binary units)
    assert re.search(r"GiB/reading to \+[12]\.\d+ GiB/reading \(\+\d+%\)", finding.explanation)
    evidence = finding.evidence_dict()
    assert evidence["kind"] == "slope"
    assert evidence["slope_after"] == pytest.approx(2.0 * 1e9, rel=0.15)  # bytes per reading


def saturating(n: int, shift: float, noise: float, seed: int) -> np.ndarray:
    """A rise of 20 that saturates (1 − e^(−4t/n)), a step of ``shift`` at 60%, noise σ."""
    u = np.arange(n) / n
    mean = 10 + 20 * -np.expm1(-4 * u) / -math.expm1(-4) + shift * (u >= 0.6)
    return mean + np.random.default_rng(seed).normal(0, noise, n)


@pytest.mark.parametrize("seed", range(3))
def test_a_real_shift_on_a_bending_curve_is_one_step_beside_the_bends(seed: int) -> None:
    # main: the staircase without the shift, or bends that swallowed it (found in .15 of 20)
    cp = find_change_points(saturating(1000, 5.0, 0.3, seed))
    levels = [p.index for p in cp.points if p.kind == "level"]
    assert any(abs(i - 600) <= 25 for i in levels)
    assert any(p.kind == "slope" for p in cp.points)


@pytest.mark.parametrize("seed", range(3))
def test_a_bending_curve_without_a_shift_gets_no_step_beside_its_bends(seed: int) -> None:
    # a step beside the broken line passes a hidden step's gates: without the relative floor
    # and the cost, curvature the bends leave took .55 level points per series
    cp = find_change_points(saturating(1000, 0.0, 0.3, seed))
    assert [p for p in cp.points if p.kind == "level"] == []


@pytest.mark.parametrize("seed", range(2))
def test_no_fit_has_more_kinks_than_a_staircase_needs(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A gauge (not exponentiated) with a trend, 10 steps of 3-6 σ and heavy-tailed AR(1)
    # noise: the broken line alone drew the staircase with 34-38 kinks, and the steps' joint
    # fits took one column each (10⁶ readings: 24 of 32 s). A broken line has at most two
    # kinks a step and one more, and one beside the steps one kink more than its bends.
    rng = np.random.default_rng(seed)
    n, k = 50_000, 10
    cuts = np.sort(rng.choice(np.arange(2_000, n - 2_000, 1_000), k, replace=False))
    steps = np.zeros(n)
    for cut in cuts:
        steps[cut:] += rng.choice([-1.0, 1.0]) * rng.uniform(3.0, 6.0)
    noise = lfilter([1.0], [1.0, -0.6], rng.standard_t(3, n) * 0.5)
    x = steps + 2.0 * np.arange(n) / n + noise
    widest = [0]
    fits = {"lstsq": np.linalg.lstsq, "qr": np.linalg.qr}

    def counted(name: str, design: np.ndarray, *args: object, **kwargs: object) -> object:
        widest[0] = max(widest[0], design.shape[1] if design.ndim == 2 else 1)
        return fits[name](design, *args, **kwargs)

    for name in fits:
        monkeypatch.setattr(np.linalg, name, functools.partial(counted, name))
    found = find_change_points(x)
    assert sum(any(abs(i - c) <= 50 for i in found.indices) for c in cuts) >= k - 1
    assert widest[0] <= 2 * k + 3  # intercept, slope, at most 2k + 1 hinges


def test_a_staircase_that_turns_often_is_not_searched_for_a_broken_line_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A trend with 10 steps of 3-6 σ alternating up and down: a line drawing the staircase
    bends at every turn, so, as for a flat series, a broken line alone is no rival once the
    steps turn more than a few times, and it is not searched for (the speed benchmark's
    10⁶ × 10 readings: 22 kinks, more than it may have, in .29 of 2.6 s). Only the kinks
    beside the steps are looked for, one at most."""
    rng = np.random.default_rng(1)
    n = 20_000
    cuts = np.sort(rng.choice(np.arange(1_000, n - 1_000, 500), 10, replace=False))
    steps = np.zeros(n)
    for j, cut in enumerate(cuts):
        steps[cut:] += (-1.0) ** j * rng.uniform(3.0, 6.0)
    x = steps + 2.0 * np.arange(n) / n + lfilter([1.0], [1.0, -0.5], rng.standard_normal(n))
    asked: list[object] = []
    find = kinks.find_kinks

    def counted(y: np.ndarray, bounds: list[int], **kwargs: object) -> list[kinks.Kink]:
        if bounds == [0, y.size]:
            asked.append(kwargs.get("most"))
        return find(y, bounds, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(kinks, "find_kinks", counted)
    found = find_change_points(x)
    assert list(found.indices) == cuts.tolist()
    assert [p.kind for p in found.points] == ["level"] * cuts.size
    assert asked == [1]
