"""The bottleneck report section and the verification section render."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from perfsleuth.bottleneck.detector import BottleneckDetector, load_setup
from perfsleuth.bottleneck.upgrades import analyse_upgrades, load_catalogue
from perfsleuth.datasets.counters import simulate_scenario
from perfsleuth.report import render_html
from perfsleuth.report.bottleneck import bottleneck_section, verification_section

EXAMPLE = Path(__file__).parents[2] / "src/perfsleuth/bottleneck/examples/upgrades.toml"


def test_section_with_upgrades_renders_and_escapes() -> None:
    frame = simulate_scenario("rand_read", seed=1, samples=12, entity="<db>&1").frame
    detector = BottleneckDetector(window="30s")
    model, _ = load_setup()
    whole = detector.overall(detector.analyse(frame))
    analysis = analyse_upgrades(model, whole.w, load_catalogue(EXAMPLE, model), target_factor=1.3)
    section = bottleneck_section(frame, detector=detector, upgrades={"<db>&1": analysis})
    assert len(section.figures) == 2
    captions = [t.caption for t in section.tables]
    assert any("inferred workload" in c for c in captions)
    assert any("observed and predicted counters" in c for c in captions)
    assert any("upgrades for random reads" in c for c in captions)
    page = render_html([], sections=[section])
    assert "<db>&1" not in page
    assert 'data-plots-expected="2"' in page


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
