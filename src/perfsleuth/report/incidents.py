"""The report's opening: one section per incident — its story, its chain, its timeline.

An incident (:mod:`perfsleuth.incidents`) is drawn as it was found: the paragraph that tells
it, the chain link by link with its strength, and, when it holds two findings or more, one
timeline of them with a row per question (when, workload, application, process, resource).
Nothing is recomputed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from perfsleuth.findings import Severity
from perfsleuth.report.common import format_time
from perfsleuth.report.console import HTML_NAME_SHOWN, by_its_ends, names_shown
from perfsleuth.report.plots import layout, plot_text, plot_time, title
from perfsleuth.report.section import Section, Table

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from perfsleuth.incidents import Incident

__all__ = ["incident_sections"]

_ROWS = {
    "when": "when",
    "workload": "workload",
    "application": "application",
    "process": "process",
    "resource": "resource",
}
_COLOURS = {
    Severity.CRITICAL: "#7f1d1d",
    Severity.ERROR: "#dc2626",
    Severity.WARNING: "#d97706",
    Severity.INFO: "#2563eb",
    Severity.DEBUG: "#6b7280",
}


def incident_sections(incidents: Sequence[Incident]) -> list[Section]:
    """One section per incident, in the order given (most severe first)."""
    return [_section(number, incident) for number, incident in enumerate(incidents, 1)]


def _section(number: int, incident: Incident) -> Section:
    span = f"{format_time(incident.start)} → {format_time(incident.end)}"
    where = ", ".join(by_its_ends(e, HTML_NAME_SHOWN) for e in incident.entities) or "—"
    names = {*incident.entities, *(n for f in incident.findings for n in (f.entity, f.metric))}

    def shown(text: str) -> str:
        return names_shown(text, names, HTML_NAME_SHOWN, by_its_ends)

    heading = (
        f"Incident {number} · {incident.severity.name.lower()} · {where} · {span} · "
        f"{len(incident.findings)} finding{'' if len(incident.findings) == 1 else 's'}"
    )
    rows = tuple(
        (
            link.step,
            shown(link.text),
            "—" if link.missing else f"{link.strength:.2f}",
            ", ".join(f.id[:12] for f in link.findings) or "—",
        )
        for link in incident.chain
    )
    chain = Table(("question", "what the data say", "strength", "findings"), rows)
    # one finding has nothing to be placed against: its time is in the chain's first row
    figures = (_timeline(incident),) if len(incident.findings) > 1 else ()
    return Section(heading, intro=shown(incident.story), tables=(chain,), figures=figures)


def _timeline(incident: Incident) -> Figure:
    """The incident's findings on one time axis, a row per question, coloured by severity."""
    import plotly.graph_objects as go

    figure = go.Figure()
    for link in incident.chain:
        for finding in link.findings:
            row = _ROWS[link.step]
            start, end = plot_time(finding.start), plot_time(finding.end)
            colour = _COLOURS.get(finding.severity, "#6b7280")
            entity = by_its_ends(finding.entity, HTML_NAME_SHOWN)
            text = (
                f"<b>{plot_text(finding.kind.value)}</b> · {plot_text(entity)}<br>"
                f"{format_time(finding.start)}<br>{plot_text(finding.explanation[:160])}"
            )
            figure.add_trace(
                go.Scatter(
                    x=[start, end] if end != start else [start],
                    y=[row, row] if end != start else [row],
                    mode="lines+markers",
                    line={"color": colour, "width": 8},
                    marker={"color": colour, "size": 11, "symbol": "diamond"},
                    opacity=0.8,
                    text=[text] * (2 if end != start else 1),
                    hovertemplate="%{text}<extra></extra>",
                )
            )
    figure.update_layout(
        layout(height=120 + 36 * len(_ROWS), title=title("What happened, question by question")),
        yaxis={
            "categoryorder": "array",
            "categoryarray": list(reversed(_ROWS.values())),
            "range": [-0.5, len(_ROWS) - 0.5],
        },
        xaxis={"type": "date"},
    )
    return figure
