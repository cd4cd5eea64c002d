"""One combined summary per run: plain text and HTML (with an inline SVG graph per finding).

Kaminski: "combine notifications into a minimal set of messages", each with "most, if not all,
information needed to address the pathology", and "graphic evidence ... is indispensable".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from perfsleuth.findings import Finding, ordered
from perfsleuth.notify.svg import sparkline
from perfsleuth.report.console import one_line, shown_name

__all__ = ["Graph", "Summary", "render_summary"]

# characters of an incident's story and of each node name in a subject line (ASCII dots where
# cut, as shown_name's: see there)
_SUBJECT_STORY = 120
_SUBJECT_NAME = 40


@dataclass(frozen=True, slots=True)
class Graph:
    """A small series to draw with a finding (values in ``unit``; NaN = no data)."""

    values: tuple[float, ...]
    marks: tuple[float, ...] = ()
    highlight: tuple[int, int] | None = None
    unit: str = ""
    label: str = ""

    def svg(self, *, width: int = 240, height: int = 48) -> str:
        return sparkline(
            self.values,
            width=width,
            height=height,
            marks=self.marks,
            highlight=self.highlight,
            label=self.label,
        )


@dataclass(frozen=True, slots=True)
class Summary:
    """A rendered summary: subject line, plain text and HTML bodies."""

    subject: str
    text: str
    html: str
    findings: tuple[Finding, ...]


def _node(finding: Finding) -> str:
    node = finding.evidence_dict().get("node")
    return str(node) if node is not None else finding.entity


def _evidence_text(finding: Finding) -> str:
    return ", ".join(
        f"{e.name}={e.value}{(' ' + e.unit) if e.unit else ''}"
        for e in finding.evidence
        if e.name not in ("node",)
    )


def render_summary(
    findings: Sequence[Finding],
    *,
    title: str,
    graphs: Mapping[str, Graph] | None = None,
    repeats: frozenset[str] = frozenset(),
    story: str = "",
) -> Summary:
    """Render ``findings`` grouped by node, most severe first.

    ``repeats`` holds the ids of findings already notified on an earlier run (marked
    "still present"), so people see what is new. ``story`` (an incident's) opens the message
    and makes it its subject.
    """
    graphs = graphs or {}
    items = ordered(findings)
    nodes = sorted({_node(f) for f in items})
    # the subject is one header line: names from the data (a process may name itself with a
    # line break) are shown on one line, long ones by their ends
    if story:
        head = one_line(story)
        head = head if len(head) <= _SUBJECT_STORY else head[: _SUBJECT_STORY - 3].rstrip() + "..."
        where = ", ".join(shown_name(node, _SUBJECT_NAME) for node in nodes)
        subject = f"{title}: incident on {where}: {head}"
    else:
        subject = (
            f"{title}: {len(items)} patholog{'y' if len(items) == 1 else 'ies'} on "
            f"{len(nodes)} node{'' if len(nodes) == 1 else 's'}"
        )
    lines = [subject, ""]
    html = [
        '<!DOCTYPE html><html><body style="font-family: sans-serif; font-size: 14px">',
        f'<h2 style="font-size: 16px">{escape(subject)}</h2>',
    ]
    if story:
        lines += [story, ""]
        html.append(f"<p>{escape(story)}</p>")
    for node in nodes:
        lines.append(f"== {one_line(node)}")
        html.append(f'<h3 style="font-size: 15px">{escape(node)}</h3><ul>')
        for f in (f for f in items if _node(f) == node):
            state = "still present" if f.id in repeats else "new"
            lines.append(
                f"- [{f.severity.name}] {f.kind.value} ({state}): {f.explanation}\n"
                f"  {f.start:%Y-%m-%d %H:%M} to {f.end:%Y-%m-%d %H:%M} UTC; "
                f"{_evidence_text(f)}\n  id {f.id}"
            )
            graph = graphs.get(f.id)
            html.append(
                '<li style="margin-bottom: 12px">'
                f"<b>{escape(f.severity.name)}</b> {escape(f.kind.value)} "
                f"<i>({escape(state)})</i>: {escape(f.explanation)}<br>"
                f"<small>{f.start:%Y-%m-%d %H:%M} to {f.end:%Y-%m-%d %H:%M} UTC · "
                f"{escape(_evidence_text(f))} · id {escape(f.id)}</small>"
                + (
                    f"<br>{graph.svg()}<br><small>{escape(graph.label)}</small>"
                    if graph is not None
                    else ""
                )
                + "</li>"
            )
        lines.append("")
        html.append("</ul>")
    html.append("</body></html>")
    return Summary(
        subject=subject, text="\n".join(lines), html="".join(html), findings=tuple(items)
    )
