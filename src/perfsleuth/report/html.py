"""The self-contained HTML report: one file, works offline, every data string escaped.

plotly.js is inlined once in the head; each figure travels as JSON in a
``<script type="application/json">`` block and one small inline script draws them all. The page
shows a red banner when anything fails to render and records the number of figures drawn in
``<body data-plots="...">`` so a headless browser can check it.

The page reads top-down: a **summary** of what happened and what to do first (most severe
first, one row per finding with its family and entity), a **timeline** of every finding when
they come from more than one detector family, then one block per **family** (change points,
transaction mix, workload segments, process pathologies, bottlenecks) holding that family's
sections and its findings with their evidence, and last the **data coverage**.

A :class:`Section` is plain data — title, text, an optional HTML fragment our own code escaped,
plotly figures and small tables — so each family builds its own
(``perfsleuth.workload.report.workload_section``) and the page renders them all the same way.
A section whose ``family`` is set goes into that family's block; others follow the blocks.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from perfsleuth.errors import DataError
from perfsleuth.findings import EvidenceValue, Finding, Kind, Severity, ordered
from perfsleuth.frames import Coverage
from perfsleuth.outputs import write_text
from perfsleuth.report.common import (
    FAMILIES,
    SEVERITY_ORDER,
    family_of,
    format_time,
    format_value,
    next_step,
    summary_counts,
)
from perfsleuth.report.console import (
    HTML_NAME_SHOWN,
    by_its_ends,
    explanation_shown,
    long_words_by_their_ends,
)
from perfsleuth.report.plots import PLOT_TEMPLATE, downsample_indices, plot_text, plot_time
from perfsleuth.report.section import Cell, Section, Table

if TYPE_CHECKING:
    from perfsleuth.sources.transactions import Rejects

__all__ = [
    "Section",
    "SeriesLookup",
    "SeriesSource",
    "Table",
    "render_html",
    "script_json",
    "write_html",
]

logger = logging.getLogger(__name__)

SeriesLookup: TypeAlias = Callable[[str, str], pd.DataFrame | None]
"""``(entity, metric) -> frame with time, value[, unit]`` (or None when there is no series)."""

SeriesSource: TypeAlias = pd.DataFrame | SeriesLookup | None

TEMPLATES = Path(__file__).parent / "templates"

SEVERITY_COLOURS: dict[Severity, str] = {
    Severity.CRITICAL: "#991b1b",
    Severity.ERROR: "#dc2626",
    Severity.WARNING: "#d97706",
    Severity.INFO: "#2563eb",
    Severity.DEBUG: "#6b7280",
}


def render_html(
    findings: Iterable[Finding],
    *,
    series: SeriesSource = None,
    coverage: Iterable[Coverage] = (),
    sections: Iterable[Section] = (),
    title: str = "perfsleuth report",
    generated: datetime | None = None,
    max_points: int = 5000,
    rejected: Mapping[str, Rejects] | None = None,
    opening: Sequence[Section] = (),
) -> str:
    """Render findings as one self-contained HTML page.

    Parameters
    ----------
    findings
        What to report: in the summary most severe first, then by start time, each with its
        family and what to do first; on a timeline when they come from more than one
        family; and in their family's block with their evidence.
    series
        Data to plot behind each finding: a metric frame (``time, entity, metric, value[,
        unit]``) or a callable ``(entity, metric) -> frame | None`` (e.g. a store lookup). A
        finding whose (entity, metric) has a series gets a line plot of the readings around it
        (its own and, either side, as many again, at least a tenth of the series and 100
        readings), with the finding marked; any other finding gets a bar chart of its numeric
        evidence.
    coverage
        What the data held (``perfsleuth.frames.coverage_of(frame)``), listed at the end.
    sections
        Detector-family sections (:class:`Section`): one with a ``family`` opens that
        family's block, before its findings; the others follow the blocks, in order, before
        the data coverage.
    title
        Page title and heading.
    generated
        When the report was made (timezone-aware); default now.
    max_points
        A finding's plot draws at most a fifth of this many points (it sits beside its
        evidence), downsampling longer stretches so that each bucket keeps its minimum and
        maximum and spikes survive. (Section figures come ready-made: their builders
        downsample to ``max_points``.)
    rejected
        Input lines the readers left out, by source (``Transactions.rejects`` of
        :mod:`perfsleuth.sources.transactions`): counted per reason, with the first few lines,
        in the data coverage.
    opening
        Sections the page opens with, before the summary (the incidents: one per story the
        findings tell together, :mod:`perfsleuth.report.incidents`).
    """
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, got {max_points}")
    when = datetime.now(UTC) if generated is None else generated
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"generated must be timezone-aware, got naive {when.isoformat()}")
    parts = list(sections)
    for part in parts:
        if isinstance(part, Section) and part.family and part.family not in FAMILIES:
            known = ", ".join(FAMILIES)
            raise ValueError(f"section {part.title!r}: unknown family {part.family!r}; {known}")
    rendered = [_family(number, part) for number, part in enumerate(parts, 1)]
    leads = [_family(number, part, "incident") for number, part in enumerate(opening, 1)]
    items = ordered(findings)
    lookup = _SeriesIndex(series)
    cards = [
        _section(number, finding, lookup, max_points) for number, finding in enumerate(items, 1)
    ]
    blocks = _blocks(items, cards, parts, rendered)
    loose = [f for part, f in zip(parts, rendered, strict=True) if not part.family]
    timeline = _timeline(items) if len({c["family"] for c in cards}) > 1 else None
    counts = summary_counts(items)
    context = {
        "title": title,
        "generated": when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "total": len(items),
        "counts": [
            {"name": s.name.lower(), "count": counts[s.name.lower()]}
            for s in SEVERITY_ORDER
            if counts[s.name.lower()]
        ],
        "sections": cards,
        "first": cards[:_SUMMARY_ROWS],
        "rest": cards[_SUMMARY_ROWS:],
        "timeline": timeline,
        "charted": _CHARTED,
        "blocks": blocks,
        "families": loose,
        "incidents": leads,
        "coverage": [_coverage_row(c) for c in coverage],
        "rejected": [_rejected_row(source, r) for source, r in (rejected or {}).items()],
        "figures": sum(1 for s in cards if s["figure"] is not None)
        + sum(len(f["figures"]) for f in [*rendered, *leads])
        + (timeline is not None),
        "colours": {s.name.lower(): c for s, c in SEVERITY_COLOURS.items()},
        "plotlyjs": _plotlyjs(),
    }
    return _environment().get_template("report.html.j2").render(context)


def write_html(
    path: str | os.PathLike[str],
    findings: Iterable[Finding],
    *,
    series: SeriesSource = None,
    coverage: Iterable[Coverage] = (),
    sections: Iterable[Section] = (),
    title: str = "perfsleuth report",
    generated: datetime | None = None,
    max_points: int = 5000,
    rejected: Mapping[str, Rejects] | None = None,
    opening: Sequence[Section] = (),
) -> Path:
    """Render with :func:`render_html` and write the page to ``path``; returns the path.

    The page is rendered in full before anything is written, and replaces ``path`` atomically,
    so a failure never leaves a half-written report behind.
    """
    text = render_html(
        findings,
        series=series,
        coverage=coverage,
        sections=sections,
        title=title,
        generated=generated,
        max_points=max_points,
        rejected=rejected,
        opening=opening,
    )
    target = write_text(path, text, what="report")
    logger.debug("wrote %s (%d bytes)", target, len(text))
    return target


def script_json(text: str) -> Markup:
    """JSON text made safe to place inside ``<script type="application/json">``.

    ``<``, ``>`` and ``&`` only occur inside JSON strings, where their ``\\uXXXX`` escapes mean
    the same thing, so no data string can close the script element or open a comment.
    """
    safe = (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
    return Markup(safe)  # escaped above for the script-data context


# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env


@lru_cache(maxsize=1)
def _plotlyjs() -> Markup:
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    # The bundle has no "</script" today; if a later one does, "<\/" means the same in JS.
    js = js.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
    return Markup(js)  # trusted library code, inlined on purpose


@dataclass(frozen=True, slots=True)
class _Series:
    t: npt.NDArray[np.datetime64]  # UTC wall clock, sorted
    y: npt.NDArray[np.float64]
    unit: str


@dataclass(frozen=True, slots=True)
class _CloseUp:
    """The readings drawn on a finding's card: a window around it, downsampled."""

    x: list[str]
    y: npt.NDArray[np.float64]
    unit: str
    note: str


class _SeriesIndex:
    """Finds and prepares (once per key) the series behind a finding."""

    def __init__(self, source: SeriesSource) -> None:
        self._source = source
        self._groups: dict[tuple[str, str], npt.NDArray[np.intp]] | None = None
        self._cache: dict[tuple[str, str], _Series | None] = {}
        if isinstance(source, pd.DataFrame):
            _require(source, ("time", "entity", "metric", "value"), "series frame")
        elif source is not None and not callable(source):
            raise TypeError(
                f"series must be a metric frame or a callable, got {type(source).__name__}"
            )

    def get(self, entity: str, metric: str) -> _Series | None:
        key = (entity, metric)
        if key not in self._cache:
            frame = self._find(entity, metric)
            self._cache[key] = None if frame is None else _prepare(frame)
        return self._cache[key]

    def _find(self, entity: str, metric: str) -> pd.DataFrame | None:
        source = self._source
        if source is None:
            return None
        if isinstance(source, pd.DataFrame):
            if self._groups is None:
                grouped = source.groupby(["entity", "metric"], sort=False, observed=True)
                self._groups = {(str(k[0]), str(k[1])): v for k, v in grouped.indices.items()}
            positions = self._groups.get((entity, metric))
            return None if positions is None else source.iloc[positions]
        found = source(entity, metric)
        if found is None:
            return None
        if not isinstance(found, pd.DataFrame):
            raise DataError(
                f"series lookup for {entity!r}/{metric!r} returned {type(found).__name__}, "
                "expected a DataFrame or None"
            )
        if found.empty:  # a store answers an unknown series with an empty frame
            return None
        _require(found, ("time", "value"), f"series for {entity!r}/{metric!r}")
        return found


def _require(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        have = ", ".join(map(str, frame.columns)) or "none"
        raise DataError(
            f"{what} is missing column(s) {', '.join(map(repr, absent))} (columns present: {have})"
        )


def _prepare(frame: pd.DataFrame) -> _Series | None:
    times = pd.to_datetime(frame["time"], utc=True, errors="coerce")
    t = times.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")
    y = pd.to_numeric(frame["value"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    ok = ~np.isnat(t) & np.isfinite(y)
    t, y = t[ok], y[ok]
    if len(t) == 0:
        return None
    if (np.diff(t) < np.timedelta64(0, "ns")).any():
        order = np.argsort(t, kind="stable")
        t, y = t[order], y[order]
    unit = ""
    if "unit" in frame.columns:
        units = sorted({str(u) for u in frame["unit"].dropna().unique()} - {""})
        unit = ", ".join(units)
    return _Series(t=t, y=y, unit=unit)


def _close_up(finding: Finding, data: _Series, max_points: int) -> _CloseUp:
    """The readings around ``finding``: its own and, either side, as many again, at least a
    tenth of the series and ``_CONTEXT`` readings.

    Not the whole series once per finding: a series with 44 findings drew 44 near-identical
    plots (12 MB). Where the finding sits in the whole series is the timeline's and the
    family section's to show (change points: one plot per series with all its points).
    """
    n = len(data.t)
    first = int(np.searchsorted(data.t, _wall_clock(finding.start), side="left"))
    stop = max(first, int(np.searchsorted(data.t, _wall_clock(finding.end), side="right")))
    context = max(stop - first, -(-n // 10), _CONTEXT)
    lo, hi = max(0, min(first, n) - context), min(n, stop + context)
    keep = lo + downsample_indices(data.y[lo:hi], max_points)
    shown = f", {len(keep):,} drawn" if len(keep) < hi - lo else ""
    where = f"{n:,} points" if hi - lo == n else f"readings {lo + 1:,}–{hi:,} of {n:,}"
    x = np.datetime_as_string(data.t[keep], unit="ms").tolist()
    return _CloseUp(x=x, y=data.y[keep], unit=data.unit, note=where + shown)


def _wall_clock(value: datetime) -> np.datetime64:
    return np.datetime64(value.astimezone(UTC).replace(tzinfo=None), "ns")


def _line_figure(finding: Finding, data: _CloseUp) -> str:
    import plotly.graph_objects as go

    colour = SEVERITY_COLOURS[finding.severity]
    start = plot_time(finding.start)
    marker: dict[str, Any]
    if finding.kind is Kind.CHANGE_POINT or finding.start == finding.end:
        marker = {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": start,
            "x1": start,
            "y0": 0,
            "y1": 1,
            "line": {"color": colour, "width": 2, "dash": "dash"},
        }
    else:
        marker = {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": start,
            "x1": plot_time(finding.end),
            "y0": 0,
            "y1": 1,
            "fillcolor": colour,
            "opacity": 0.15,
            "line": {"width": 0},
            "layer": "below",
        }
    label = finding.kind.value.replace("_", " ")
    y_title = f"{finding.metric} ({data.unit})" if data.unit else finding.metric
    figure = go.Figure(
        go.Scatter(
            x=data.x,
            y=data.y,
            mode="lines+markers" if len(data.x) <= 200 else "lines",
            line={"width": 1.5},
            marker={"size": 4},
            name=plot_text(finding.metric),
            hovertemplate="%{x|%Y-%m-%d %H:%M:%S}<br>%{y:.6~g}<extra></extra>",
        ),
        layout={
            "template": PLOT_TEMPLATE,
            "height": 320,
            "shapes": [marker],
            "annotations": [
                {
                    "x": start,
                    "xref": "x",
                    "y": 1,
                    "yref": "paper",
                    "text": plot_text(label),
                    "showarrow": False,
                    "xanchor": "left",
                    "yanchor": "bottom",
                    "font": {"color": colour},
                }
            ],
            "xaxis": {"type": "date", "title": {"text": "time (UTC)"}},
            "yaxis": {"title": {"text": plot_text(y_title)}},
        },
    )
    return str(figure.to_json())


def _numeric(value: EvidenceValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value)


def _bar_figure(finding: Finding) -> str | None:
    numeric = [e for e in finding.evidence if _numeric(e.value)]
    if not numeric:
        return None
    import plotly.graph_objects as go

    labels: list[str] = []
    for item in numeric:
        label = f"{item.name} ({item.unit})" if item.unit else item.name
        # equal labels would share one bar on a category axis
        base, copy = label, 1
        while label in labels:
            copy += 1
            label = f"{base} #{copy}"
        labels.append(label)
    values = [float(e.value) for e in numeric]
    figure = go.Figure(
        go.Bar(
            x=values,
            y=[plot_text(label) for label in labels],
            orientation="h",
            marker={"color": SEVERITY_COLOURS[finding.severity]},
            text=[format_value(e.value) for e in numeric],
            textposition="auto",
            hovertemplate="%{y}: %{x:.6~g}<extra></extra>",
        ),
        layout={
            "template": PLOT_TEMPLATE,
            "height": max(180, 90 + 34 * len(numeric)),
            "title": {"text": "evidence", "x": 0, "font": {"size": 12}},
            "xaxis": {"title": {"text": "value"}},
            "yaxis": {"type": "category", "autorange": "reversed"},
        },
    )
    return str(figure.to_json())


def _section(
    number: int, finding: Finding, lookup: _SeriesIndex, max_points: int
) -> dict[str, Any]:
    plot: str | None
    data = None if number > _CHARTED else lookup.get(finding.entity, finding.metric)
    if number > _CHARTED:
        # thousands of charts (a fleet scan) would make the page too slow to open
        plot, plot_kind = None, "evidence"
        note = f"plots are drawn for the {_CHARTED} most severe findings only"
    elif data is not None:
        close_up = _close_up(finding, data, max(2, max_points // 5))
        plot, plot_kind, note = _line_figure(finding, close_up), "series", close_up.note
    else:
        plot, plot_kind = _bar_figure(finding), "evidence"
        note = "no series for this entity and metric; numeric evidence shown instead"
    family = family_of(finding)
    return {
        "number": number,
        "anchor": f"finding-{number}",
        "family": family,
        "family_name": _short(family),
        "next_step": next_step(finding),
        "kind": finding.kind.value,
        # a name from the data may be thousands of characters: shown by its ends (JSON has it)
        "entity": by_its_ends(finding.entity, HTML_NAME_SHOWN),
        "metric": by_its_ends(finding.metric, HTML_NAME_SHOWN),
        "start": format_time(finding.start),
        "end": format_time(finding.end),
        "severity": finding.severity.name.lower(),
        "explanation": explanation_shown(finding, HTML_NAME_SHOWN, by_its_ends),
        "detector": finding.detector,
        "evidence": [
            {"name": e.name, "value": format_value(e.value), "unit": e.unit}
            for e in finding.evidence
        ],
        "figure": None
        if plot is None
        else {
            "id": f"figure-{number}",
            "target": f"plot-{number}",
            "kind": plot_kind,
            "json": script_json(plot),
        },
        "plot_note": note,
    }


_SUMMARY_ROWS = 10  # the summary lists these first; the rest fold under "more"
_CHARTED = 100  # findings that get a chart of their own (the most severe)
_CONTEXT = 100  # readings at least either side of a finding on its card (a short series: whole)
_TIMELINE_MAX = 2000  # findings drawn in the timeline at most (the most severe)
_WRAP = 90  # characters per line of a timeline hover label


def _title_of(family: str) -> str:
    return FAMILIES.get(family, "Other findings")


def _short(family: str) -> str:
    """``"Change points (Berry & Hellerstein)"`` → ``"Change points"``."""
    return _title_of(family).split(" (", 1)[0]


def _blocks(
    items: Sequence[Finding],
    cards: Sequence[dict[str, Any]],
    parts: Sequence[Section],
    rendered: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    """One block per family with findings or sections, in :data:`FAMILIES` order."""
    present = {c["family"] for c in cards} | {p.family for p in parts if p.family}
    order = [k for k in FAMILIES if k in present] + (["other"] if "other" in present else [])
    blocks = []
    for key in order:
        mine = [c for c in cards if c["family"] == key]
        counts = summary_counts(f for f, c in zip(items, cards, strict=True) if c["family"] == key)
        blocks.append(
            {
                "key": key,
                "anchor": f"family-{key}",
                "title": _title_of(key),
                "short": _short(key),
                "cards": mine,
                "counts": [
                    {"name": s.name.lower(), "count": counts[s.name.lower()]}
                    for s in SEVERITY_ORDER
                    if counts[s.name.lower()]
                ],
                "parts": [f for p, f in zip(parts, rendered, strict=True) if p.family == key],
            }
        )
    return blocks


def _wrap(text: str, width: int = _WRAP) -> str:
    """Escaped for plotly.js, cut into lines of about ``width`` characters with ``<br>``."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "<br>".join(plot_text(part) for part in lines)


def _timeline(items: Sequence[Finding]) -> dict[str, Any]:
    """Every finding on one time axis, a row per family, coloured by severity.

    A finding is a marker at its start (click: jump to its card); one with a duration also
    gets a bar to its end. At most :data:`_TIMELINE_MAX` findings, the most severe.
    """
    import plotly.graph_objects as go

    shown = list(enumerate(items, 1))[:_TIMELINE_MAX]
    keys = [k for k in [*FAMILIES, "other"] if any(family_of(f) == k for _, f in shown)]
    rows = [_short(k) for k in keys]
    traces = []
    for severity in sorted(Severity):  # most severe drawn last, on top
        mine = [(n, f) for n, f in shown if f.severity is severity]
        if not mine:
            continue
        colour = SEVERITY_COLOURS[severity]
        name = severity.name.lower()
        span_x: list[str | None] = []
        span_y: list[str | None] = []
        for _, f in mine:
            if f.end > f.start:
                span_x += [plot_time(f.start), plot_time(f.end), None]
                span_y += [_short(family_of(f)), _short(family_of(f)), None]
        if span_x:
            traces.append(
                go.Scatter(
                    x=span_x,
                    y=span_y,
                    mode="lines",
                    line={"color": colour, "width": 8},
                    opacity=0.45,
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=name,
                )
            )
        traces.append(
            go.Scatter(
                x=[plot_time(f.start) for _, f in mine],
                y=[_short(family_of(f)) for _, f in mine],
                mode="markers",
                marker={
                    "color": colour,
                    "size": 11,
                    "symbol": "diamond",
                    "line": {"color": "#ffffff", "width": 1},
                },
                name=name,
                legendgroup=name,
                customdata=[f"finding-{n}" for n, _ in mine],
                text=[
                    f"<b>#{n} {plot_text(f.kind.value)}</b> · {plot_text(f.entity)}<br>"
                    f"{format_time(f.start)}"
                    + (f" → {format_time(f.end)}" if f.end > f.start else "")
                    + f"<br>{_wrap(f.explanation)}"
                    for n, f in mine
                ],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    figure = go.Figure(
        traces,
        layout={
            "template": PLOT_TEMPLATE,
            "height": 110 + 48 * len(rows),
            "showlegend": True,
            "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
            "margin": {"l": 10, "r": 10, "t": 36, "b": 10},
            "xaxis": {"type": "date", "title": {"text": "time (UTC)"}},
            "yaxis": {
                "type": "category",
                "categoryorder": "array",
                "categoryarray": rows[::-1],  # the first family on top
                "range": [-0.6, len(rows) - 0.4],
            },
            "hovermode": "closest",
        },
    )
    return {
        "id": "timeline-figure",
        "target": "timeline-plot",
        "json": script_json(str(figure.to_json())),
        "shown": len(shown),
        "total": len(items),
    }


def _cell(value: Cell) -> dict[str, Any]:
    if isinstance(value, str):
        return {"text": long_words_by_their_ends(value), "numeric": False}
    return {"text": format_value(value), "numeric": True}


def _family(number: int, part: Section, prefix: str = "section") -> dict[str, Any]:
    if not isinstance(part, Section):
        raise TypeError(f"sections must hold Section objects, got {type(part).__name__}")
    anchor = f"{prefix}-{number}"
    return {
        "anchor": anchor,
        # a family's text may name a series in passing: a long name is shown by its ends
        "title": long_words_by_their_ends(part.title),
        "intro": long_words_by_their_ends(part.intro),
        "fragment": part.fragment,
        "tables": [
            {
                "caption": long_words_by_their_ends(table.caption),
                "columns": table.columns,
                "rows": [[_cell(value) for value in row] for row in table.rows],
            }
            for table in part.tables
        ],
        "figures": [
            {
                "id": f"{anchor}-figure-{k}",
                "target": f"{anchor}-plot-{k}",
                "json": script_json(str(figure.to_json())),
            }
            for k, figure in enumerate(part.figures, 1)
        ],
    }


def _timestamp(value: pd.Timestamp | None) -> str:
    if value is None or pd.isna(value):
        return "—"
    stamp = pd.Timestamp(value)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    # floor first: to_pydatetime warns when it drops nanoseconds
    return format_time(stamp.floor("s").to_pydatetime())


def _duration(seconds: float) -> str:
    whole = round(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days}d"] if days else []
    parts += [f"{hours}h"] if hours else []
    parts += [f"{minutes}m"] if minutes else []
    parts += [f"{secs}s"] if secs or not parts else []
    return " ".join(parts)


_GAPS_SHOWN = 5


def _coverage_row(cov: Coverage) -> dict[str, Any]:
    return {
        "source": cov.source,
        "contract": cov.contract,
        "rows": f"{cov.rows:,}",
        "series": f"{cov.series:,}",
        "start": _timestamp(cov.start),
        "end": _timestamp(cov.end),
        "dropped_duplicates": cov.dropped_duplicates,
        "dropped_missing": cov.dropped_missing,
        "sorted_rows": cov.sorted_rows,
        "gaps": len(cov.gaps),
        "first_gaps": [
            {
                "series": gap.series,
                "start": _timestamp(gap.start),
                "end": _timestamp(gap.end),
                "length": _duration((gap.end - gap.start).total_seconds()),
            }
            for gap in cov.gaps[:_GAPS_SHOWN]
        ],
    }


def _rejected_row(source: str, rejects: Rejects) -> dict[str, Any]:
    return {
        "source": source,
        "count": f"{rejects.count:,}",
        "reasons": [f"{n:,} × {reason}" for reason, n in sorted(rejects.by_reason.items())],
        "examples": [
            {"where": bad.where(), "text": bad.text} for bad in rejects.examples[:_GAPS_SHOWN]
        ],
        "more": rejects.count - len(rejects.examples[:_GAPS_SHOWN]),
    }
