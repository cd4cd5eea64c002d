"""The report section of the process family: one plot per flagged process, group or node.

Each plot is the series behind a finding, per period (:mod:`perfsleuth.process.graphs`): CPU
with the loop band for loops, memory or open-file size for ramps and saw-tooths, the group's
share of the box with its cap, the capture ratio with its allowed range. The finding's periods
are shaded. A table lists every finding with its key evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from perfsleuth.findings import Finding, ordered
from perfsleuth.process.graphs import finding_graph
from perfsleuth.process.rules import DEFAULT_RULES, ProcessRules
from perfsleuth.process.scanner import periods_of
from perfsleuth.report.html import _PLOT_TEMPLATE, Section, Table, _text

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from perfsleuth.notify.summary import Graph

__all__ = ["process_section"]

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


def process_section(
    frame: pd.DataFrame,
    findings: Sequence[Finding],
    *,
    rules: ProcessRules = DEFAULT_RULES,
    max_plots: int = 16,
    title: str = "Process pathologies: the series behind each finding",
) -> Section:
    """A :class:`Section` with a plot per finding (most severe first, at most ``max_plots``).

    The section belongs to the ``"process"`` family, so the report shows it in that block.
    """
    items = [f for f in ordered(findings) if "node" in f.evidence_dict()]
    shown = items[:max_plots]
    figures = []
    periods: dict[str, object] = {}
    for finding in shown:
        node = str(finding.evidence_dict()["node"])
        if node not in periods:
            rows = frame[frame["node"] == node]
            periods[node] = periods_of(rows, rules) if len(rows) else None
        data = periods[node]
        if data is None:
            continue
        graph = finding_graph(data, finding, rules)  # type: ignore[arg-type]
        if graph is not None:
            figures.append(_figure(finding, graph, data.starts))  # type: ignore[attr-defined]
    nodes = frame["node"].nunique() if len(frame) else 0
    intro = (
        f"{len(items)} finding(s) on {nodes} node(s) scanned; periods of "
        f"{rules.settings.period}, review windows of {rules.settings.window}"
        + (f"; the {len(shown)} most severe plotted." if len(items) > len(shown) else ".")
    )
    return Section(
        title=title,
        intro=intro,
        figures=figures,
        tables=[_table(items)] if items else [],
        family="process",
    )


def _figure(finding: Finding, graph: Graph, starts: pd.DatetimeIndex) -> Figure:
    import plotly.graph_objects as go

    times = starts.strftime("%Y-%m-%dT%H:%M:%SZ").tolist()
    values = np.array(graph.values, dtype=np.float64)
    figure = go.Figure(
        [
            go.Scatter(
                x=times,
                y=[None if not np.isfinite(v) else float(v) for v in values],
                mode="lines+markers",
                marker={"size": 3},
                line={"color": _LINE, "width": 1.5},
                name=_text(finding.metric),
            )
        ],
        layout={
            "template": _PLOT_TEMPLATE,
            "height": 300,
            "margin": {"l": 10, "r": 10, "t": 56, "b": 10},
            "title": {
                "text": f"{_text(finding.kind.value)} · {_text(finding.entity)}",
                "x": 0,
                "font": {"size": 13},
            },
            "showlegend": False,
            "xaxis": {"type": "date", "title": {"text": "period start (UTC)"}},
            "yaxis": {"title": {"text": _text(graph.unit)}},
        },
    )
    for mark in graph.marks:
        figure.add_hline(y=mark, line={"color": _MARK, "dash": "dash", "width": 1})
    if graph.highlight is not None and times:
        a, b = graph.highlight
        figure.add_vrect(
            x0=times[a],
            x1=times[min(b, len(times) - 1)],
            fillcolor=_SHADE,
            opacity=0.4,
            line_width=0,
        )
    return figure


def _table(items: list[Finding]) -> Table:
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
