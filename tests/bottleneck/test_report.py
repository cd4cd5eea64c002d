"""The bottleneck report section and the verification section render."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfsleuth.bottleneck import FAMILY, detector
from perfsleuth.bottleneck.detector import BottleneckDetector
from perfsleuth.bottleneck.report import section, verification_section
from perfsleuth.datasets.counters import simulate_scenario
from perfsleuth.report import render_html

EXAMPLE = Path(__file__).parents[2] / "src/perfsleuth/bottleneck/examples/upgrades.toml"


def test_section_with_upgrades_renders_and_escapes() -> None:
    frame = simulate_scenario("rand_read", seed=1, samples=12, entity="<db>&1").frame
    judge = BottleneckDetector(window="30s", upgrades=str(EXAMPLE), target_factor=1.3)
    drawn = section(judge.analyse(frame))
    assert drawn.family == "bottleneck"
    assert len(drawn.figures) == 2
    captions = [t.caption for t in drawn.tables]
    assert any("inferred workload" in c for c in captions)
    assert any("observed and predicted counters" in c for c in captions)
    assert any("upgrades for random reads" in c for c in captions)
    page = render_html([], sections=[drawn])
    assert "<db>&1" not in page
    assert 'data-plots-expected="2"' in page


def test_section_draws_the_analysis_without_inferring_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frame = simulate_scenario("memory", seed=2, samples=12, entity="cache-1").frame
    analysis = BottleneckDetector(upgrades=str(EXAMPLE), target_factor=1.2).analyse(frame)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report must draw the analysis, not infer again")

    for name in ("infer_many", "analyse_upgrades", "load_setup", "load_catalogue"):
        monkeypatch.setattr(detector, name, refuse)
    drawn = FAMILY.render(analysis)
    assert len(drawn.figures) == 2
    table = next(t for t in drawn.tables if "upgrades for" in t.caption)
    recommended = analysis.upgrades["cache-1"].recommended
    assert recommended is not None
    assert any(row[0] == f"{recommended.name} ← recommended" for row in table.rows)


def test_long_timelines_are_downsampled() -> None:
    frame = simulate_scenario("cpu", seed=3, samples=24).frame
    analysis = BottleneckDetector(window="10s", min_window="10s").analyse(frame)
    assert len(analysis.windows) == 12
    full = section(analysis).figures[0]
    assert len(full.data[1].x) == 12
    short = section(analysis, max_points=6).figures[0]
    assert 2 <= len(short.data[1].x) <= 6
    # each resource keeps its first and last window
    assert short.data[1].x[0] == full.data[1].x[0]
    assert short.data[1].x[-1] == full.data[1].x[-1]


def test_verification_section() -> None:
    rows = []
    for level in (4096.0, 65536.0):
        for counter, value in (("disk.reads", 1000.0), ("cpu.system", 0.2)):
            rows.append(
                {
                    "sweep": "direct random reads",
                    "parameter": "rand_read_size",
                    "level": level,
                    "counter": counter,
                    "observed": value * 1.1,
                    "predicted": value,
                    "error": float(np.log(1.1)),
                }
            )
    section = verification_section(pd.DataFrame(rows))
    assert len(section.figures) == 1
    assert section.tables[0].rows[0][0] == "direct random reads"
    assert 'data-plots-expected="1"' in render_html([], sections=[section])
