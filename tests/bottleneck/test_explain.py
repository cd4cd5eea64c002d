"""The one-sentence explanation of an inference."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from perfsleuth.bottleneck.explain import explain
from perfsleuth.bottleneck.kernels.infer import Inference, infer
from perfsleuth.bottleneck.kernels.model import load_model
from perfsleuth.datasets.counters import simulate_scenario

MODEL = load_model()


@functools.cache
def inferred(scenario: str) -> Inference:
    run = simulate_scenario(scenario, model=MODEL, seed=1)
    window = {str(k): float(v) for k, v in run.frame.groupby("counter")["value"].mean().items()}
    return infer(MODEL, window, seed=1)


def test_names_the_bottleneck_its_main_component_and_the_runner_up() -> None:
    text = explain(MODEL, inferred("rand_read"))
    assert text.startswith("disk is the bottleneck (P = ")
    assert "of the calibrated device time, mostly reads bypassing the cache" in text
    assert "; next: " in text
    assert "calibrated maximum" not in text


def test_more_than_the_calibrated_maximum_asks_for_a_recalibration() -> None:
    base = inferred("rand_read")
    j = base.resources.index("disk")
    over = base.utilisation.copy()
    over[j] = 2.3
    text = explain(MODEL, replace(base, utilisation=over))
    assert "230% of the calibrated device time" in text
    assert "did more than its calibrated maximum: recalibrate" in text


def test_memory_demand_beyond_capacity_is_not_a_calibration_problem() -> None:
    base = inferred("memory")
    assert base.bottleneck == "memory"
    assert float(np.max(base.utilisation)) > 1.25  # a working set larger than the memory
    assert "calibrated maximum" not in explain(MODEL, base)
