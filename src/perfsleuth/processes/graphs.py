"""The series behind each process finding, by period, for alert sparklines and the report.

A CPU finding shows its process's CPU per period (with the loop band), a ramp or saw-tooth the
name's memory or file size, a cap the group's share of the box (with the cap), a capture-ratio
finding the ratio (with its allowed range). Values are in the finding's units (cores, MiB,
fraction); the finding's own periods are highlighted.

:func:`finding_graph` draws from the periods a detector already computed (a
:class:`~perfsleuth.processes.detector.ProcessAnalysis` keeps them; its ``graphs()`` maps every
finding through here): nothing here aggregates a frame again.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from perfsleuth.findings import Finding, Kind
from perfsleuth.notify.summary import Graph
from perfsleuth.processes.periods import NodePeriods
from perfsleuth.processes.rules import ProcessRules

__all__ = ["finding_graph"]

_MIB = 2.0**20


def _highlight(data: NodePeriods, finding: Finding) -> tuple[int, int]:
    starts = data.starts
    inside = np.flatnonzero((starts >= finding.start) & (starts < finding.end))
    if not len(inside):
        return (0, 0)
    return (int(inside[0]), int(inside[-1]))


def _process_row(data: NodePeriods, finding: Finding) -> int | None:
    ev = finding.evidence_dict()
    for p in range(len(data.name)):
        if data.name[p] == ev.get("process") and int(data.pid[p]) == ev.get("pid"):
            return p
    return None


def _name_row(data: NodePeriods, finding: Finding) -> int | None:
    name = finding.evidence_dict().get("process")
    return next((k for k, n in enumerate(data.by_name.name) if n == name), None)


def finding_graph(data: NodePeriods, finding: Finding, rules: ProcessRules) -> Graph | None:
    """The graph of one finding about ``data``'s node (None when its series is not there)."""
    ev = finding.evidence_dict()
    values: NDArray[np.float64]
    marks: tuple[float, ...] = ()
    if finding.kind in (Kind.CPU_LOOP, Kind.CONSTRAINED_LOOP, Kind.HUM):
        p = _process_row(data, finding)
        if p is None:
            return None
        values = np.where(data.covered, data.cpu[p], np.nan)
        if finding.kind is Kind.CPU_LOOP:
            rule = rules.os_rule(data.os)
            marks = (rule.low, rule.high)
        unit = "cores"
    elif finding.kind in (Kind.MEMORY_RAMP, Kind.SAW_TOOTH):
        column = finding.metric
        if "pid" in ev:  # one process over its life
            p = _process_row(data, finding)
            if p is None or column not in data.columns:
                return None
            values = data.columns[column][p] / _MIB
        else:  # a name of a group followed by name
            k = _name_row(data, finding)
            if k is None or column not in data.by_name.columns:
                return None
            values = data.by_name.columns[column][k] / _MIB
        unit = "MiB"
    elif finding.kind is Kind.CAP_EXCEEDED:
        group = next((g for g in rules.groups if g.name == ev.get("group")), None)
        series = None if group is None else data.groups.get(group.name)
        if group is None or series is None:
            return None
        if finding.metric == "cpu":
            values = series.cpu[0] / data.ncpu
            marks, unit = (group.max_cpu_fraction,), "fraction of the box"
        else:
            values = series.rss[0] / _MIB
            marks, unit = (group.max_rss_bytes / _MIB,), "MiB"
    elif finding.kind is Kind.CAPTURE_RATIO:
        with np.errstate(invalid="ignore", divide="ignore"):
            values = np.where(
                data.busy >= rules.capture.min_busy, data.captured / data.busy, np.nan
            )
        marks, unit = (rules.capture.low, rules.capture.high), "ratio"
    else:
        return None
    return Graph(
        values=tuple(float(v) for v in values),
        marks=marks,
        highlight=_highlight(data, finding),
        unit=unit,
        label=f"{finding.entity} {finding.metric} ({unit}) per {data.period}",
    )
