"""ProcessDetector: one detector, every check in one pass, periods computed once per node."""

from __future__ import annotations

import tomllib
from typing import get_args

import pandas as pd
import pytest
import tomli_w
from pydantic import ValidationError

from perfsleuth.analysis import Analysis, Detector, params_of
from perfsleuth.datasets.fleet import FleetRun, simulate_fleet
from perfsleuth.findings import ordered
from perfsleuth.processes import FAMILY, scanner
from perfsleuth.processes.checks import CHECKS, CheckName
from perfsleuth.processes.detector import ProcessAnalysis, ProcessDetector
from perfsleuth.processes.graphs import finding_graph
from perfsleuth.processes.periods import Columns, build
from perfsleuth.processes.rules import DEFAULT_RULES, NeverAlert, ProcessRules
from perfsleuth.processes.scanner import check_node, scan_node
from perfsleuth.tomlfile import validate
from tests.processes.conftest import frame


@pytest.fixture(scope="module")
def fleet() -> FleetRun:
    return simulate_fleet(14, days=2, seed=7, start="2024-05-01")


@pytest.fixture(scope="module")
def analysis(fleet: FleetRun) -> ProcessAnalysis:
    return ProcessDetector(rules=fleet.rules).analyse(fleet.frame)


def test_one_detector_for_the_family() -> None:
    detector = ProcessDetector()
    assert isinstance(detector, Detector)
    assert (detector.name, detector.contract) == ("processes", "process")
    assert FAMILY.detector_class() is ProcessDetector
    assert detector.rules == DEFAULT_RULES
    assert detector.checks == tuple(CHECKS) == FAMILY.checks == get_args(CheckName)


# (checks, text the error must contain)
BAD_CHECKS = [
    (("cpu_loop", "leak"), "'cpu_loop', 'constrained_loop', 'hum', 'memory_ramp', 'saw_tooth'"),
    (("hum", "hum"), "more than once: hum"),
    ((), "at least 1 item"),
]


@pytest.mark.parametrize(("checks", "message"), BAD_CHECKS)
def test_bad_checks_are_validation_errors(checks: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ProcessDetector(checks=checks)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ProcessDetector(rulez=DEFAULT_RULES)  # type: ignore[call-arg]


def test_parameters_round_trip_through_toml(fleet: FleetRun) -> None:
    detector = ProcessDetector(rules=fleet.rules, checks=("saw_tooth", "cpu_loop"))
    text = tomli_w.dumps(params_of(detector))
    again = validate(ProcessDetector, tomllib.loads(text), source="detectors.processes")
    assert again == detector
    assert again.rules.settings.period == fleet.rules.settings.period


def test_periods_are_computed_once_per_node(
    fleet: FleetRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every node's periods are built in one pass over the columns (no group per node): each
    # node is in exactly one build, and the frame's nodes in one build when it is small
    calls: list[str] = []
    real = build

    def counted(cols: Columns, *args: object, **kwargs: object) -> object:
        calls.extend(cols.nodes)
        return real(cols, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scanner, "build", counted)
    found = ProcessDetector(rules=fleet.rules).analyse(fleet.frame)
    assert sorted(calls) == sorted(set(calls)) == sorted(fleet.nodes["node"])
    assert {f.kind.value for f in found.findings} == set(CHECKS)  # all seven ran


def test_analysis_holds_what_the_report_draws(fleet: FleetRun, analysis: ProcessAnalysis) -> None:
    assert isinstance(analysis, Analysis)
    assert list(analysis.findings) == ordered(analysis.findings)
    assert [n.node for n in analysis.nodes] == sorted(fleet.nodes["node"])
    assert not analysis.skipped
    flagged = {str(f.evidence_dict()["node"]) for f in analysis.findings}
    assert set(analysis.periods) == flagged == {n.node for n in analysis.nodes if n.findings}
    assert sum(n.findings for n in analysis.nodes) == len(analysis.findings)
    for node in analysis.nodes:
        assert node.periods == 48 and node.covered == 48 and node.processes > 0
        assert 0 <= node.saturated <= node.covered
    graphs = analysis.graphs()
    assert set(graphs) == {f.id for f in analysis.findings}
    for finding in analysis.findings:
        data = analysis.periods_of(finding)
        assert data is not None and data.node == finding.evidence_dict()["node"]
        assert graphs[finding.id] == finding_graph(data, finding, fleet.rules)


def test_scan_node_is_the_same_computation(fleet: FleetRun, analysis: ProcessAnalysis) -> None:
    node = next(iter(analysis.periods))
    rows = fleet.frame[fleet.frame["node"] == node]
    checked = check_node(rows, fleet.rules)
    assert checked is not None
    assert ordered(checked.findings) == ordered(scan_node(rows, fleet.rules))
    assert set(checked.findings) == {
        f for f in analysis.findings if f.evidence_dict()["node"] == node
    }


def test_never_alert_nodes_are_skipped_not_checked(fleet: FleetRun) -> None:
    node = sorted(fleet.nodes["node"])[0]
    rules = fleet.rules.model_copy(update={"never_alert": NeverAlert(nodes=(node,))})
    found = ProcessDetector(rules=rules).analyse(fleet.frame)
    assert found.skipped == (node,)
    assert node not in {n.node for n in found.nodes}
    assert "1 node(s) on the never-alert list skipped" in found.summary().text


def test_empty_frame() -> None:
    found = ProcessDetector().analyse(frame({("spin", 1): [1.0] * 24}).iloc[:0])
    assert found.findings == () and found.nodes == () and not found.periods
    assert ProcessDetector().detect(pd.DataFrame()) == []
    assert found.summary().text.startswith("0 node(s) checked")


def test_summary_lists_nodes_periods_and_each_finding(analysis: ProcessAnalysis) -> None:
    summary = analysis.summary()
    # the findings, then what the checks could not see (coverage lines close the summary)
    lines = [line for line in summary.text.splitlines() if not line.startswith("coverage: ")]
    seen = summary.text.splitlines()[len(lines) :]
    assert seen == [f"coverage: {line}" for line in analysis.coverage_lines()]
    assert any("cpu_loop lacked periods on 2 of 14 node(s)" in line for line in seen)
    assert lines[0].startswith("14 node(s) checked (every check); periods of 1h in review")
    assert "windows of 1d: 672 period(s) with data" in lines[0]
    assert lines[1] == f"17 finding(s) on {len(analysis.periods)} node(s):"
    assert len(lines) == 2 + len(analysis.findings)
    for line, finding in zip(lines[2:], analysis.findings, strict=True):
        assert finding.explanation in line and finding.kind.value in line
    assert summary.html.count("<li>") == len(analysis.findings)


def test_summary_html_escapes_process_names() -> None:
    data = frame({("<script>x", 10): [1.0] * 24})
    found = ProcessDetector(rules=ProcessRules(), checks=("cpu_loop",)).analyse(data)
    assert found.findings
    summary = found.summary()
    assert "<script>x" in summary.text
    assert "<script>" not in summary.html and "&lt;script&gt;x" in summary.html
    assert "(cpu_loop)" in summary.text
