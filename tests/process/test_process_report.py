"""The process family's report section for a simulated fleet, drawn in headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfsleuth.datasets.fleet import SCENARIOS, simulate_fleet
from perfsleuth.findings import Finding, Kind
from perfsleuth.frames import coverage_of, normalise
from perfsleuth.process.scanner import scan
from perfsleuth.report import Section, render_html
from perfsleuth.report.process import process_section
from tests.support.chromium import body_tag, browse


@pytest.fixture(scope="module")
def scanned() -> tuple[list[Finding], Section, str]:
    """One node per scenario, built as ``perfsleuth processes scan --report`` builds its page."""
    fleet = simulate_fleet(len(SCENARIOS), days=2, seed=3)
    frame = normalise(fleet.frame, "process", source="simulated fleet")
    findings = scan(frame, fleet.rules)
    section = process_section(frame, findings, rules=fleet.rules)
    coverage = coverage_of(frame)
    assert coverage is not None
    page = render_html(
        findings, coverage=[coverage], sections=[section], title="perfsleuth process pathologies"
    )
    return findings, section, page


def test_process_section_opens_the_process_block(
    scanned: tuple[list[Finding], Section, str],
) -> None:
    findings, section, page = scanned
    assert {Kind.CPU_LOOP, Kind.MEMORY_RAMP, Kind.SAW_TOOTH} <= {f.kind for f in findings}
    assert section.family == "process"
    assert len(section.figures) == len(findings)  # every finding plotted (fewer than max_plots)
    blocks = re.findall(r'<section class="family-block" id="family-(\w+)">', page)
    assert blocks == ["process"]
    block = page.split('id="family-process"', 1)[1]
    assert block.index('id="section-1"') < block.index('id="finding-')


@pytest.mark.integration
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
    block = dom.split('id="family-process"', 1)[1]
    plots = block.split('class="ps-figure"', 1)[0]  # the divs, without the figures' JSON
    graphs = re.split(r'id="section-1-plot-\d+"', plots)[1:]
    assert len(graphs) == len(section.figures)
    for graph, figure in zip(graphs, section.figures, strict=True):
        assert 'class="main-svg"' in graph, "a per-process graph was not drawn"
        assert figure.layout.title.text in graph  # its title: kind · node/process
    errors = [line for line in console if re.search(r"uncaught|error", line, re.IGNORECASE)]
    assert not errors, "\n".join(errors)
