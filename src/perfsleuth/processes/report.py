"""The report section of the process family: one plot per flagged process, group or node.

Each plot is the series behind a finding, per period (:mod:`perfsleuth.processes.graphs`): CPU
with the loop band for loops, memory or open-file size for ramps and saw-tooths, the group's
share of the box with its cap, the capture ratio with its allowed range. The finding's periods
are shaded. A table lists every finding with its key evidence, and one says what each check
could see on each node (periods available against periods needed), so a section without
findings says whether there could have been any. Everything is drawn from a
:class:`~perfsleuth.processes.detector.ProcessAnalysis`: the periods its detector computed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from perfsleuth.durations import format_duration
from perfsleuth.findings import Finding
from perfsleuth.processes.graphs import finding_graph
from perfsleuth.report.html import Section, Table
from perfsleuth.report.plots import downsample_indices, layout, plot_text, title

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from perfsleuth.notify.summary import Graph
    from perfsleuth.processes.detector import ProcessAnalysis

__all__ = ["MAX_PLOTS", "section"]

MAX_PLOTS = 16
"""Findings plotted at most in one section (the most severe first)."""

_LINE = "#2563eb"
_MARK = "#dc2626"
_SHADE = "#fde68a"
_KEYS = (
    "mean_cpu",
    "looping_periods",
    "shared_periods",
    "partners",
    "slope_per_day",
    "period",
    "peak",
    "median_ratio",
    "periods_over",
)


def section(analysis: ProcessAnalysis, *, max_points: int = 5000) -> Section:
    """The series behind each finding of ``analysis`` and a table of the findings.

    At most :data:`MAX_PLOTS` findings are plotted, most severe first; series longer than
    ``max_points`` periods are downsampled for drawing. The section belongs to the
    ``"processes"`` family.
    """
    rules = analysis.detector.rules
    items = analysis.findings
    shown = items[:MAX_PLOTS]
    figures = []
    for finding in shown:
        data = analysis.periods_of(finding)
        graph = None if data is None else finding_graph(data, finding, rules)
        if data is not None and graph is not None:
            figures.append(_figure(finding, graph, data.starts, max_points))
    flagged = sum(1 for n in analysis.nodes if n.findings)
    settings = rules.settings
    intro = (
        f"{len(analysis.nodes)} node(s) checked; periods of {format_duration(settings.period)}, "
        f"review windows of {format_duration(settings.review_window)}"
        + (
            f"; {len(analysis.skipped)} node(s) on the never-alert list skipped"
            if analysis.skipped
            else ""
        )
        + f". {len(items)} finding(s) on {flagged} node(s)"
        + (f"; the {len(shown)} most severe plotted." if len(items) > len(shown) else ".")
        + "".join(f" {line[0].upper()}{line[1:]}." for line in analysis.coverage_lines(limit=3))
    )
    tables = [_table(items)] if items else []
    return Section(
        title="Process pathologies: the series behind each finding",
        intro=intro,
        figures=figures,
        tables=[*tables, _coverage_table(analysis)],
        family="processes",
    )


_COVERAGE_ROWS = 50


def _coverage_table(analysis: ProcessAnalysis) -> Table:
    """Per node (those that could not run every check first): periods, saturation, churn,
    and each check's periods available / needed."""
    nodes = sorted(analysis.nodes, key=lambda n: (all(c.possible for c in n.coverage), n.node))
    checks = analysis.detector.checks
    rows = []
    for node in nodes[:_COVERAGE_ROWS]:
        cells = {
            c.check: f"{c.available}/{c.needed}" + ("" if c.possible else " ✗")
            for c in node.coverage
        }
        rows.append(
            (
                node.node,
                str(node.covered),
                f"{node.saturated_share:.0%}",
                str(node.churn),
                *(cells.get(check, "") for check in checks),
            )
        )
    more = len(nodes) - len(rows)
    return Table(
        columns=("node", "periods with data", "saturated", "short-lived", *checks),
        rows=tuple(rows),
        caption=(
            "What each check could see: periods available / needed (✗: too few to find "
            "anything)" + (f"; {more} more node(s) not shown" if more > 0 else "")
        ),
    )


def _kept(values: NDArray[np.float64], max_points: int) -> NDArray[np.intp]:
    """Positions to draw: the finite values downsampled, and the first period of each gap (so
    lines still break there)."""
    if len(values) <= max_points:
        return np.arange(len(values), dtype=np.intp)
    finite = np.isfinite(values)
    where = np.flatnonzero(finite)
    kept = where[downsample_indices(values[where], max_points)] if len(where) else where
    gaps = np.flatnonzero(~finite[1:] & finite[:-1]) + 1
    return np.union1d(kept, gaps).astype(np.intp)


def _figure(finding: Finding, graph: Graph, starts: pd.DatetimeIndex, max_points: int) -> Figure:
    import plotly.graph_objects as go

    times = np.array(starts.strftime("%Y-%m-%dT%H:%M:%SZ").tolist(), dtype=object)
    values = np.array(graph.values, dtype=np.float64)
    keep = _kept(values, max_points)
    figure = go.Figure(
        [
            go.Scatter(
                x=times[keep].tolist(),
                y=[float(v) if np.isfinite(v) else None for v in values[keep]],
                mode="lines+markers",
                marker={"size": 3},
                line={"color": _LINE, "width": 1.5},
                name=plot_text(finding.metric),
            )
        ],
        layout=layout(
            height=300,
            title=title(f"{finding.kind.value} · {finding.entity}"),
            showlegend=False,
            xaxis={"type": "date", "title": {"text": "period start (UTC)"}},
            yaxis={"title": {"text": plot_text(graph.unit)}},
        ),
    )
    for mark in graph.marks:
        figure.add_hline(y=mark, line={"color": _MARK, "dash": "dash", "width": 1})
    if graph.highlight is not None and len(times):
        a, b = graph.highlight
        figure.add_vrect(
            x0=times[a],
            x1=times[min(b, len(times) - 1)],
            fillcolor=_SHADE,
            opacity=0.4,
            line_width=0,
        )
    return figure


def _table(items: tuple[Finding, ...]) -> Table:
    rows = []
    for f in items:
        ev = f.evidence_dict()
        facts = "; ".join(f"{k} {ev[k]}" for k in _KEYS if k in ev)
        rows.append(
            (
                f.kind.value,
                f.entity,
                f.metric,
                f"{f.start:%Y-%m-%d %H:%M}",
                f"{f.end:%Y-%m-%d %H:%M}",
                f.severity.name.lower(),
                facts,
            )
        )
    return Table(
        columns=("kind", "entity", "metric", "start (UTC)", "end (UTC)", "severity", "evidence"),
        rows=tuple(rows),
        caption=f"{len(rows)} finding(s)",
    )
