"""The report's opening: one section per incident — its story, its chain, its timeline.

An incident (:mod:`perfsleuth.incidents`) of two findings or more is drawn as it was found:
the paragraph that tells it, the chain link by link with its strength, and, when its findings
are not all at one time and question, one timeline of them with a row per question (when,
workload, application, process, resource). Incidents of one finding share one short note:
each would be a box repeating its finding's card beside questions no finding answers (a
change-point run on one file of 11 findings opened with 11 such boxes, before the summary that
lists them all). Nothing is recomputed here.
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
    """One section per incident of two findings or more, in the order given (most severe
    first) and numbered in it, then a note for the incidents of a single finding."""
    told = [incident for incident in incidents if not incident.alone]
    alone = [incident for incident in incidents if incident.alone]
    sections = [_section(number, incident) for number, incident in enumerate(told, 1)]
    if alone:
        sections.append(_alone(alone))
    return sections


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
    # a timeline places findings against each other: all at one place on it, it shows nothing
    # the chain does not say (a change point and its spike at one instant)
    places = {(link.step, f.start, f.end) for link in incident.chain for f in link.findings}
    figures = (_timeline(incident),) if len(places) > 1 else ()
    return Section(heading, intro=shown(incident.story), tables=(chain,), figures=figures)


def _alone(incidents: Sequence[Incident]) -> Section:
    """A note for the incidents of one finding each: the summary and their family's sections
    already show those findings. What the other questions lack is said when it is the same for
    all (one file's series); across entities it would be a sentence per entity."""
    count, one = len(incidents), len(incidents) == 1
    intro = (
        f"{'This finding relates' if one else f'These {count:,} findings relate'} to no other "
        f"finding of the run by entity and time: {'it is' if one else 'each is'} in the summary "
        f"below and in its family's section."
    )
    lacking = {incident.unanswered for incident in incidents}
    if len(lacking) == 1 and (said := lacking.pop()):
        names = {*incidents[0].entities, incidents[0].findings[0].entity}
        intro += " " + names_shown(said, names, HTML_NAME_SHOWN, by_its_ends)
    title = f"{count:,} finding{'' if one else 's'} on {'its' if one else 'their'} own"
    return Section(title, intro=intro)


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
