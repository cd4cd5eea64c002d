"""The process family's report section for a simulated fleet, drawn in headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from perfsleuth.datasets.fleet import SCENARIOS, simulate_fleet
from perfsleuth.findings import Finding, Kind
from perfsleuth.frames import coverage_of, normalise
from perfsleuth.processes import FAMILY, scanner
from perfsleuth.processes.detector import ProcessDetector
from perfsleuth.processes.report import MAX_PLOTS, section
from perfsleuth.report import Section, render_html
from tests.support.chromium import body_tag, browse


@pytest.fixture(scope="module")
def scanned() -> tuple[list[Finding], Section, str]:
    """One node per scenario, built as ``perfsleuth processes scan --report`` builds its page."""
    fleet = simulate_fleet(len(SCENARIOS), days=2, seed=3)
    frame = normalise(fleet.frame, "process", source="simulated fleet")
    analysis = ProcessDetector(rules=fleet.rules).analyse(frame)
    findings = list(analysis.findings)
    drawn = section(analysis)
    coverage = coverage_of(frame)
    assert coverage is not None
    page = render_html(
        findings, coverage=[coverage], sections=[drawn], title="perfsleuth process pathologies"
    )
    return findings, drawn, page


def test_process_section_opens_the_process_block(
    scanned: tuple[list[Finding], Section, str],
) -> None:
    findings, section, page = scanned
    assert {Kind.CPU_LOOP, Kind.MEMORY_RAMP, Kind.SAW_TOOTH} <= {f.kind for f in findings}
    assert section.family == "processes"
    assert len(findings) <= MAX_PLOTS
    assert len(section.figures) == len(findings)  # every finding plotted (fewer than MAX_PLOTS)
    blocks = re.findall(r'<section class="family-block" id="family-(\w+)">', page)
    assert blocks == ["processes"]
    block = page.split('id="family-processes"', 1)[1]
    assert block.index('id="section-1"') < block.index('id="finding-')


@pytest.mark.integration
@pytest.mark.slow
def test_process_section_draws_every_graph_in_chromium(
    scanned: tuple[list[Finding], Section, str], tmp_path: Path
) -> None:
    _, section, page = scanned
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    dom, console = browse(path, tmp_path)
    body = body_tag(dom)
    expected = re.search(r'data-plots-expected="(\d+)"', body)
    assert expected and int(expected.group(1)) >= len(section.figures), body
    assert f'data-plots="{expected.group(1)}"' in body, f"not every figure was drawn: {body}"
    assert "data-errors" not in body and 'id="ps-error"' not in dom
    block = dom.split('id="family-processes"', 1)[1]
    plots = block.split('class="ps-figure"', 1)[0]  # the divs, without the figures' JSON
    graphs = re.split(r'id="section-1-plot-\d+"', plots)[1:]
    assert len(graphs) == len(section.figures)
    for graph, figure in zip(graphs, section.figures, strict=True):
        assert 'class="main-svg"' in graph, "a per-process graph was not drawn"
        assert figure.layout.title.text in graph  # its title: kind · node/process
    errors = [line for line in console if re.search(r"uncaught|error", line, re.IGNORECASE)]
    assert not errors, "\n".join(errors)


def test_section_is_drawn_from_the_analysis_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The section and the graphs never aggregate periods or run a check again."""
    fleet = simulate_fleet(len(SCENARIOS), days=2, seed=3)
    analysis = ProcessDetector(rules=fleet.rules).analyse(fleet.frame)

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("periods computed again")

    monkeypatch.setattr(scanner, "build", forbidden)
    monkeypatch.setattr(scanner, "CHECKS", {})
    drawn = FAMILY.render(analysis)
    assert len(drawn.figures) == min(len(analysis.findings), MAX_PLOTS)
    assert set(analysis.graphs()) == {f.id for f in analysis.findings}
    table, seen = drawn.tables  # the findings, then what each check could see per node
    assert [row[1] for row in table.rows] == [f.entity for f in analysis.findings]
    assert sorted(row[0] for row in seen.rows) == sorted(n.node for n in analysis.nodes)
    assert seen.columns[4:] == analysis.detector.checks
    assert f"{len(analysis.nodes)} node(s) checked" in drawn.intro


def test_long_series_are_downsampled_but_keep_their_gaps() -> None:
    from perfsleuth.processes.report import _kept

    values = np.sin(np.arange(20_000) / 50.0)
    values[5000:5100] = np.nan
    keep = _kept(values, 1000)
    assert len(keep) <= 1002 and keep[0] == 0 and keep[-1] == len(values) - 1
    assert 5000 in keep  # the first missing period: the line breaks there
    assert np.isfinite(values[keep]).sum() >= 990
    assert _kept(values[:500], 1000).tolist() == list(range(500))
