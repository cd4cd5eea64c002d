"""The process family's detector: every chosen check on every node, in one pass.

:class:`ProcessDetector` holds the rules (:class:`ProcessRules`, the built-in ones by default)
and the checks to run (all seven by default). ``analyse(frame)`` normalises the **process**
frame once, turns every node's rows into their periods in one pass over the columns
(:func:`perfsleuth.processes.scanner.scan_nodes`, the computation the fleet runner runs too)
and runs every chosen check on them. The :class:`ProcessAnalysis` it returns keeps the
findings, what each check could see on each node (its *coverage*: periods available against
periods needed, so a scan that finds nothing says whether it could have) and what the report
and the notification graphs draw, so neither computes periods again.

In TOML the parameters are ``[detectors.processes]`` with ``checks = [...]`` and the rules
file's tables under ``[detectors.processes.rules]``; ``perfsleuth processes scan --rules``
reads a rules file directly.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass as dataclass_std
from typing import TYPE_CHECKING, ClassVar

import pandas as pd
from pydantic import Field, field_validator
from pydantic.dataclasses import dataclass

from perfsleuth.analysis import PARAMS, DetectorMixin, Summary
from perfsleuth.durations import format_duration
from perfsleuth.findings import Finding, ordered
from perfsleuth.processes.checks import CHECKS, CheckName
from perfsleuth.processes.coverage import CheckCoverage, describe
from perfsleuth.processes.periods import NodePeriods
from perfsleuth.processes.rules import DEFAULT_RULES, ProcessRules
from perfsleuth.processes.scanner import NodeCheck, scan_nodes

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
    """Distinct processes seen (node + pid + start time, or + name without start times)."""
    periods: int
    """Periods from the node's first to its last sample."""
    covered: int
    """Periods with samples."""
    saturated: int
    """Covered periods in which the machine was saturated."""
    findings: int
    churn: int = 0
    """Processes seen in too few periods to be the subject of any check (short-lived)."""
    coverage: tuple[CheckCoverage, ...] = ()
    """What each check could see: periods available against periods needed."""
    seconds: float = 0.0
    """Seconds from the node's first sample to its last."""

    @classmethod
    def of(cls, checked: NodeCheck) -> NodeScan:
        """The counts of one node as scanned."""
        data = checked.periods
        return cls(
            node=data.node,
            os=data.os,
            ncpu=data.ncpu,
            processes=data.processes,
            periods=data.n_periods,
            covered=checked.covered,
            saturated=checked.saturated,
            findings=len(checked.findings),
            churn=data.churn,
            coverage=checked.coverage,
            seconds=data.seconds,
        )

    @property
    def saturated_share(self) -> float:
        """Share of the periods with data in which the machine was saturated."""
        return self.saturated / self.covered if self.covered else 0.0

    def to_dict(self) -> dict[str, object]:
        """Plain JSON values (``--coverage`` writes these)."""
        return {
            "node": self.node,
            "os": self.os,
            "ncpu": None if self.ncpu != self.ncpu else self.ncpu,
            "processes": self.processes,
            "churn": self.churn,
            "seconds": round(self.seconds, 3),
            "periods": self.periods,
            "covered": self.covered,
            "saturated": self.saturated,
            "saturated_share": round(self.saturated_share, 4),
            "findings": self.findings,
            "checks": [c.to_dict() for c in self.coverage],
        }


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

    def coverage_lines(self, *, limit: int = 5) -> list[str]:
        """What the checks could see, for people: for one node, its periods and blind spots;
        for several, each check that lacked periods somewhere and on which nodes."""
        rules = self.detector.rules
        period = rules.settings.period
        if len(self.nodes) == 1:
            (node,) = self.nodes
            seconds = node.seconds
            return [
                f"{node.node}: {node.covered} period(s) of {format_duration(period)} with data, "
                f"{node.saturated_share:.0%} saturated, {node.churn} short-lived process(es); "
                + describe(node.coverage, seconds=seconds, rules=rules)
            ]
        lines = []
        for i, check in enumerate(self.detector.checks):
            blind = [n for n in self.nodes if not n.coverage[i].possible]
            if not blind:
                continue
            first = blind[0].coverage[i]
            shown = ", ".join(f"{n.node} ({n.coverage[i].available})" for n in blind[:limit])
            more = f" and {len(blind) - limit} more" if len(blind) > limit else ""
            why = f"; {first.why}" if first.why else ""
            lines.append(
                f"{check} lacked periods on {len(blind)} of {len(self.nodes)} node(s) (needs "
                f"{first.needed} {first.unit}{why}): {shown}{more}"
            )
        if not lines and self.nodes:
            covered = max(1, sum(n.covered for n in self.nodes))
            share = sum(n.saturated for n in self.nodes) / covered
            lines.append(
                f"every check had the periods it needs on all {len(self.nodes)} node(s) "
                f"({share:.0%} of the periods saturated)"
            )
        return lines

    def coverage_dict(self) -> dict[str, object]:
        """The coverage of every node, as plain JSON values."""
        settings = self.detector.rules.settings
        return {
            "period": format_duration(settings.period),
            "window": format_duration(settings.review_window),
            "ramp_min_periods": self.detector.rules.ramp_periods,
            "checks": list(self.detector.checks),
            "skipped": list(self.skipped),
            "nodes": [n.to_dict() for n in self.nodes],
        }

    def summary(self) -> Summary:
        """The nodes checked, the periods, what the checks could see, and each finding."""
        settings = self.detector.rules.settings
        checks = self.detector.checks
        which = "every check" if checks == tuple(CHECKS) else ", ".join(checks)
        covered = sum(n.covered for n in self.nodes)
        saturated = sum(n.saturated for n in self.nodes)
        flagged = sum(1 for n in self.nodes if n.findings)
        head = (
            f"{len(self.nodes)} node(s) checked ({which}); periods of "
            f"{format_duration(settings.period)} in review windows of "
            f"{format_duration(settings.review_window)}: {covered} period(s) with data, "
            f"{saturated} saturated."
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
        seen = [f"coverage: {line}" for line in self.coverage_lines()]
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        return Summary(
            text="\n".join([head, count, *(f"  {line}" for line in lines), *seen]),
            html=f"<p>{html.escape(head)}</p><p>{html.escape(count)}</p>"
            + (f"<ul>{items}</ul>" if items else "")
            + "".join(f"<p>{html.escape(line)}</p>" for line in seen),
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
            nodes.append(NodeScan.of(checked))
            if checked.findings:
                periods[node] = checked.periods
                findings.extend(checked.findings)
        return ProcessAnalysis(
            self, tuple(nodes), tuple(skipped), periods, tuple(ordered(findings))
        )
