"""The real operational series for change points (benchmarks/data/changepoints) and the scoring of
benchmarks/changepoints_real.py."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "changepoints"
STRUCTURES = {"none", "cycle", "trend", "outliers"}


def _harness() -> ModuleType:
    path = ROOT / "benchmarks" / "changepoints_real.py"
    spec = importlib.util.spec_from_file_location("changepoints_real", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


bench = _harness()


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    return dict(json.loads((DATA / "truth.json").read_text()))


# -- the data files ---------------------------------------------------------------------------


def test_every_series_parses_with_one_row_per_second(truth: dict[str, Any]) -> None:
    series = truth["series"]
    assert len(series) >= 8
    for name, info in series.items():
        path = DATA / info["file"]
        frame = pd.read_csv(path)
        assert list(frame.columns) == ["time", "value"], name
        assert 20 <= len(frame) == info["rows"] <= 3000, name
        times = pd.to_datetime(frame["time"], utc=True, format="ISO8601")
        assert str(times.dt.tz) == "UTC"
        assert (times.diff().dropna() == pd.Timedelta(seconds=1)).all(), name
        assert times.iloc[0] == pd.Timestamp(info["start"]), name
        values = frame["value"].to_numpy(dtype=float)
        assert np.isfinite(values).all(), name
        assert np.ptp(values) > 0, name
        assert info["unit"] and info["metric"], name


def test_truth_indices_are_in_range_and_described(truth: dict[str, Any]) -> None:
    for name, info in truth["series"].items():
        n, indices = info["rows"], info["change_indices"]
        assert indices == sorted(set(indices)), name
        assert all(isinstance(i, int) and 0 < i < n for i in indices), name
        assert [c["index"] for c in info["changes"]] == indices, name
        for change in info["changes"]:
            assert change["what"], name
            assert 0 <= change["started_s"] <= change["done_s"] < n, name
            assert change["index"] == math.floor((change["started_s"] + change["done_s"]) / 2 + 0.5)
        structure = set(info["structure"])
        assert structure and structure <= STRUCTURES, name
        if "cycle" in structure:
            assert 2 <= info["cycle_period_rows"] < n / 2, name
            assert all(0 < e < n for e in info["cycle_edges"]), name
        if "outliers" in structure:
            assert all(0 <= r < n for r in info["outlier_rows"]), name


def test_the_set_covers_quiet_series_and_every_structure(truth: dict[str, Any]) -> None:
    series = truth["series"].values()
    assert sum(1 for s in series if not s["change_indices"]) >= 3  # false-alarm checks
    for kind in ("cycle", "trend", "outliers"):
        kinds = [s for s in series if kind in s["structure"]]
        assert any(s["change_indices"] for s in kinds), kind
        assert any(not s["change_indices"] for s in kinds), kind


def test_the_harness_loads_the_committed_data() -> None:
    cases = bench.load(DATA)
    assert {c.name for c in cases} == set(json.loads((DATA / "truth.json").read_text())["series"])
    assert all(c.values.dtype == np.float64 and c.n == len(c.values) for c in cases)


# -- scoring ----------------------------------------------------------------------------------


def test_margin_is_three_rows_or_one_percent() -> None:
    assert bench.margin_for(100) == 3
    assert bench.margin_for(300) == 3
    assert bench.margin_for(1000) == 10
    assert bench.margin_for(2500) == 25


@pytest.mark.parametrize(
    ("truth", "detected", "tp", "fp", "fn"),
    [
        ([40, 80], [40, 80], 2, 0, 0),  # exact
        ([40, 80], [43, 77], 2, 0, 0),  # at the margin
        ([40, 80], [44, 76], 0, 2, 2),  # one past it
        ([40], [39, 41], 1, 1, 0),  # two detections of one change: one of them is false
        ([40], [40, 40], 1, 1, 0),  # a duplicate is not a second hit
        ([40, 42], [41], 1, 0, 1),  # one detection cannot serve two changes
        ([10, 14], [12, 17], 2, 0, 0),  # nearest-first would match 14-12 and lose 10
        ([], [], 0, 0, 0),
        ([], [50], 0, 1, 0),
        ([50], [], 0, 0, 1),
    ],
)
def test_score_counts(truth: list[int], detected: list[int], tp: int, fp: int, fn: int) -> None:
    s = bench.score(truth, detected, 100)
    assert (s.tp, s.fp, s.fn) == (tp, fp, fn)


def test_score_ratios_and_conventions() -> None:
    s = bench.score([40, 80], [41, 60, 80], 100)
    assert (s.precision, s.recall) == pytest.approx((2 / 3, 1.0))
    assert s.f1 == pytest.approx(0.8)
    assert s.location_error == pytest.approx(0.5)
    quiet = bench.score([], [], 100)
    assert (quiet.precision, quiet.recall, quiet.f1) == (1.0, 1.0, 1.0)
    alarm = bench.score([], [7], 100)
    assert (alarm.precision, alarm.f1) == (0.0, 0.0)
    missed = bench.score([50], [], 100)
    assert (missed.recall, missed.f1) == (0.0, 0.0)
    assert math.isnan(missed.location_error)
    assert bench.score([500], [509], 1000).tp == 1  # ±10 rows at n = 1000
    assert bench.score([500], [509], 1000, margin=3).tp == 0


def test_ruptures_output_becomes_first_indices_and_sigma_is_robust() -> None:
    assert bench._ruptures_indices([40, 80, 120], 120) == [40, 80]
    rng = np.random.default_rng(0)
    x = rng.normal(0.0, 2.0, 2000) + np.repeat([0.0, 50.0], 1000)
    assert bench.noise_sigma(x) == pytest.approx(2.0, rel=0.1)  # the shift does not inflate it
    assert bench.noise_sigma(np.r_[np.zeros(50), np.ones(50)]) > 0  # MAD 0: falls back
    assert bench.noise_sigma(np.ones(10)) == 1.0


def test_methods_find_an_obvious_step_and_unknown_variants_are_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def needs_more(values: np.ndarray, extra: int) -> list[int]:
        return []

    monkeypatch.setattr(bench, "PERFSLEUTH_VARIANTS", {"bogus": {"no_such_option": 1}})
    monkeypatch.setattr(bench, "EXTRA_METHODS", {"two-args": needs_more})
    table, notes = bench.methods()
    assert "bogus" not in table and "two-args" not in table
    assert "bogus" in notes[0] and "two-args" in notes[1]
    x = np.r_[np.zeros(60), np.full(60, 10.0)] + np.tile([0.3, -0.2, 0.1, -0.4], 30)
    case = bench.Case("step", x, [60], {"structure": ["none"]})
    results = bench.run([case], table)["step"]
    for name, result in results.items():
        assert result.score.tp == 1, (name, result.detected)
