"""The process family's detector: every chosen check on every node, in one pass.

:class:`ProcessDetector` holds the rules (:class:`ProcessRules`, the built-in ones by default)
and the checks to run (all seven by default). ``analyse(frame)`` normalises the **process**
frame once, turns each node's rows into its periods once
(:func:`perfsleuth.processes.scanner.check_node`, the same per-node function the fleet runner
maps) and runs every chosen check on them. The :class:`ProcessAnalysis` it returns keeps the
findings and what the report and the notification graphs draw, so neither computes periods
again.

In TOML the parameters are ``[detectors.processes]`` with ``checks = [...]`` and the rules
file's tables under ``[detectors.processes.rules]``; ``perfsleuth processes scan --rules``
reads a rules file directly.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass as dataclass_std
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pandas as pd
from pydantic import Field, field_validator
from pydantic.dataclasses import dataclass

from perfsleuth.analysis import PARAMS, DetectorMixin, Summary
from perfsleuth.durations import format_duration
from perfsleuth.findings import Finding, ordered
from perfsleuth.processes.checks import CHECKS, CheckName
from perfsleuth.processes.periods import NodePeriods
from perfsleuth.processes.rules import DEFAULT_RULES, ProcessRules
from perfsleuth.processes.scanner import scan_nodes

if TYPE_CHECKING:
    from perfsleuth.notify.summary import Graph

__all__ = ["NodeScan", "ProcessAnalysis", "ProcessDetector"]


@dataclass_std(frozen=True, slots=True)
class NodeScan:
    """One node as scanned: what it held, how busy it was, and how many findings it got."""

    node: str
    os: str
    ncpu: float
    """CPU count (NaN when the frame had none)."""
    processes: int
    """Distinct (pid, name) pairs seen."""
    periods: int
    """Periods from the node's first to its last sample."""
    covered: int
    """Periods with samples."""
    saturated: int
    """Covered periods in which the machine was saturated."""
    findings: int

    @classmethod
    def of(cls, data: NodePeriods, findings: int) -> NodeScan:
        """The counts of one node's periods."""
        return cls(
            node=data.node,
            os=data.os,
            ncpu=data.ncpu,
            processes=len(data.name),
            periods=data.n_periods,
            covered=int(np.count_nonzero(data.covered)),
            saturated=int(np.count_nonzero(data.saturated)),
            findings=findings,
        )


@dataclass_std(frozen=True, slots=True, eq=False)
class ProcessAnalysis:
    """Every node of a process frame checked: the findings and what the report draws.

    ``periods`` holds the period matrices of the nodes with findings — the series behind each
    finding's plot and notification graph. Nodes without findings are summarised in ``nodes``
    only, so the analysis of a fleet stays small.
    """

    detector: ProcessDetector
    nodes: tuple[NodeScan, ...]
    """Every node checked, in node order."""
    skipped: tuple[str, ...]
    """Nodes the never-alert list covers (not checked)."""
    periods: Mapping[str, NodePeriods]
    """Node → its periods, for the nodes with findings."""
    findings: tuple[Finding, ...]
    """Most severe first (:func:`perfsleuth.findings.ordered`)."""

    def periods_of(self, finding: Finding) -> NodePeriods | None:
        """The periods of the node ``finding`` is about (None when it is not one of ours)."""
        node = finding.evidence_dict().get("node")
        return self.periods.get(node) if isinstance(node, str) else None

    def graphs(self) -> dict[str, Graph]:
        """Finding id → the series behind it (from the kept periods), for notification
        sparklines."""
        from perfsleuth.processes.graphs import finding_graph

        out: dict[str, Graph] = {}
        for finding in self.findings:
            data = self.periods_of(finding)
            graph = None if data is None else finding_graph(data, finding, self.detector.rules)
            if graph is not None:
                out[finding.id] = graph
        return out

    def summary(self) -> Summary:
        """The nodes checked, the periods, and each finding in a line."""
        settings = self.detector.rules.settings
        checks = self.detector.checks
        which = "every check" if checks == tuple(CHECKS) else ", ".join(checks)
        covered = sum(n.covered for n in self.nodes)
        saturated = sum(n.saturated for n in self.nodes)
        flagged = sum(1 for n in self.nodes if n.findings)
        head = (
            f"{len(self.nodes)} node(s) checked ({which}); periods of "
            f"{format_duration(settings.period)} in review windows of "
            f"{format_duration(settings.window)}: {covered} period(s) with data, {saturated} "
            f"saturated."
        )
        if self.skipped:
            head += f" {len(self.skipped)} node(s) on the never-alert list skipped."
        count = f"{len(self.findings)} finding(s) on {flagged} node(s)" + (
            ":" if self.findings else "."
        )
        lines = [
            f"[{f.severity.name.lower()}] {f.kind.value} {f.entity}: {f.explanation}"
            for f in self.findings
        ]
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        return Summary(
            text="\n".join([head, count, *(f"  {line}" for line in lines)]),
            html=f"<p>{html.escape(head)}</p><p>{html.escape(count)}</p>"
            + (f"<ul>{items}</ul>" if items else ""),
        )


@dataclass(frozen=True, config=PARAMS)
class ProcessDetector(DetectorMixin):
    """Process pathologies (Kaminski 2003): loops, constrained loops, hums, ramps, saw-tooths,
    caps and capture ratio, per node.

    Parameters
    ----------
    rules
        The rules file's contents: per-OS loop lines, exceptions, never-alert lists, groups
        and the policies of each check (default: the built-in rules).
    checks
        The checks to run, by name (default: all seven, in
        :data:`perfsleuth.processes.checks.CHECKS` order). Each check's findings carry its
        name as ``kind`` and ``detector``.
    """

    name: ClassVar[str] = "processes"
    contract: ClassVar[str] = "process"

    rules: ProcessRules = Field(default_factory=lambda: DEFAULT_RULES)
    checks: tuple[CheckName, ...] = Field(default=tuple(CHECKS), min_length=1)

    @field_validator("checks")
    @classmethod
    def _once_each(cls, checks: tuple[CheckName, ...]) -> tuple[CheckName, ...]:
        twice = sorted({c for c in checks if checks.count(c) > 1})
        if twice:
            raise ValueError(f"check(s) listed more than once: {', '.join(twice)}")
        return checks

    def analyse(self, frame: pd.DataFrame) -> ProcessAnalysis:
        """Each node's periods computed once, and every chosen check run on them."""
        nodes: list[NodeScan] = []
        skipped: list[str] = []
        periods: dict[str, NodePeriods] = {}
        findings: list[Finding] = []
        for node, checked in scan_nodes(frame, self.rules, self.checks):
            if checked is None:
                skipped.append(node)
                continue
            nodes.append(NodeScan.of(checked.periods, len(checked.findings)))
            if checked.findings:
                periods[node] = checked.periods
                findings.extend(checked.findings)
        return ProcessAnalysis(
            self, tuple(nodes), tuple(skipped), periods, tuple(ordered(findings))
        )
