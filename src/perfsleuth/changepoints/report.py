"""The report section of the change-point family: one plot per series, its evidence folded.

For every (entity, metric) series with a significant change point, **one** plot: the series,
the mean of each segment as a step line (or the model, when a trend or cycle was removed), a
dashed line at each change point (the first observation of the new segment), the spikes as
markers, a range slider to zoom in, and a logarithmic value axis when the data are skewed. Under
the plots, a table of every change point (largest effect first) and, folded, the whole evidence
of each. The search ran on all points (in the detector); only the drawing is downsampled.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from markupsafe import Markup

from perfsleuth.report.console import long_words_by_their_ends
from perfsleuth.report.plots import LEGEND, downsample_indices, layout, plot_text, title
from perfsleuth.report.section import Section, Table
from perfsleuth.units import format_growth, format_quantity

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from perfsleuth.changepoints.detector import ChangePointAnalysis, SeriesChanges
    from perfsleuth.changepoints.kernels.results import ChangePoint

__all__ = ["MAX_SERIES", "section"]

MAX_SERIES = 12
"""Series plotted at most in one section."""

_SERIES = "#2563eb"
_MEAN = "#f59e0b"
_CHANGE = "#dc2626"
_SPIKE = "#7c3aed"
_MAX_SPIKES = 400  # spike markers drawn per series (the largest)
_SKEW_RATIO = 3.0  # upper tail this many times the lower one: log axis (see _skewed)


def section(analysis: ChangePointAnalysis, *, max_points: int = 5000) -> Section:
    """The series of ``analysis`` that have change points, each in one plot with all of them.

    At most :data:`MAX_SERIES` series are plotted, the largest change first; the rest are
    counted. The section belongs to the ``"changepoints"`` family.
    """
    detector = analysis.detector
    found = analysis.changed
    shown = found[:MAX_SERIES]
    robust = (
        f"cycles, trends and skewness handled, spikes kept as data; shifts under "
        f"{detector.min_effect:g} σ or {_relative_floor(detector.min_relative_change)} dropped"
        if detector.robust
        else "raw values"
    )
    intro = (
        f"{len(analysis.series)} series searched ({detector.method}, α = {detector.alpha:g}; "
        f"{robust}); {len(found)} with change points"
        + (f", the {len(shown)} with the largest shown." if len(found) > len(shown) else ".")
        + _adjustments(found)
    )
    return Section(
        title="Change points: series, segments and means",
        intro=intro,
        fragment=_evidence(found) if found else None,
        figures=[_figure(s, max_points) for s in shown],
        tables=[_table(found)] if found else [],
        family="changepoints",
    )


def _relative_floor(floor: float | None) -> str:
    """The relative floor as the section's intro says it (``None``: the search's default)."""
    from perfsleuth.changepoints.kernels.search import DEFAULT_MIN_RELATIVE_CHANGE, LONG_SERIES

    if floor is None:
        return (
            f"{DEFAULT_MIN_RELATIVE_CHANGE:.0%} of the level "
            f"(series of {LONG_SERIES:,} readings or more)"
        )
    return f"{floor:.0%} of the level"


def _adjustments(found: Sequence[SeriesChanges]) -> str:
    """What the robust search removed, or kept as spikes, in a sentence (empty when nothing)."""
    notes = []
    for series in found:
        entity, metric, result = series.entity, series.metric, series.result
        parts = []
        if result.trend and result.trend[0] and result.scale == "log":
            growth = format_growth(result.trend[0], "", relative=True)
            parts.append(f"a growth of {growth} (on the log scale)")
        elif result.trend and result.trend[0]:
            parts.append(f"a trend of {result.trend[0]:+.3g} per observation")
        if result.periods:
            cycles = " and ".join(str(p) for p in result.periods)
            parts.append(
                f"{'cycles' if len(result.periods) > 1 else 'a cycle'} of {cycles} observations"
            )
        if result.spikes:
            parts.append(f"{len(result.spikes)} spike(s), kept in the data")
        if parts:
            notes.append(f"{entity}/{metric}: {', '.join(parts)}")
    return (" Removed or marked before the search — " + "; ".join(notes) + ".") if notes else ""


def _skewed(values: np.ndarray) -> bool:
    """Positive data whose upper tail (99th percentile above the median) is at least
    ``_SKEW_RATIO`` times its lower one (median above the 1st percentile): a log axis shows
    both ends."""
    if values.size == 0 or not np.all(values > 0):
        return False
    low, median, top = np.quantile(values, [0.01, 0.5, 0.99])
    return bool(top - median >= _SKEW_RATIO * (median - low))


def _figure(series: SeriesChanges, max_points: int) -> Figure:
    import plotly.graph_objects as go

    entity, metric, unit, result = series.entity, series.metric, series.unit, series.result
    values = series.values
    times = series.times.dt.strftime("%Y-%m-%dT%H:%M:%SZ").to_numpy()
    keep = downsample_indices(values, max_points)
    structured = bool(result.period or any(result.trend))
    # segment means as a step line: one point at each segment start and one at its end
    step_x: list[str | None] = []
    step_y: list[float | None] = []
    for segment in result.segments:
        step_x += [times[segment.start], times[segment.stop - 1], None]
        step_y += [segment.mean[0], segment.mean[0], None]
    label = f"{metric} ({unit})" if unit else metric
    traces = [
        go.Scatter(
            x=times[keep].tolist(),
            y=values[keep],
            mode="lines",
            name="series",
            line={"color": _SERIES, "width": 1},
        ),
        # with a trend or cycle removed, the model is segment levels + trend + cycle
        go.Scatter(
            x=times[keep].tolist(),
            y=result.fitted[keep, 0],
            mode="lines",
            name="model (segment levels + trend + cycle)",
            line={"color": _MEAN, "width": 2},
        )
        if structured and result.fitted is not None
        else go.Scatter(
            x=step_x,
            y=step_y,
            mode="lines",
            name="segment mean",
            line={"color": _MEAN, "width": 2.5},
        ),
    ]
    if result.spikes:
        spikes = np.asarray(result.spikes)
        if spikes.size > _MAX_SPIKES and result.fitted is not None:
            size = np.abs(values[spikes] - result.fitted[spikes, 0])
            spikes = np.sort(spikes[np.argsort(-size, kind="stable")[:_MAX_SPIKES]])
        traces.append(
            go.Scatter(
                x=times[spikes].tolist(),
                y=values[spikes],
                mode="markers",
                name="spike (kept in the data)",
                marker={"color": _SPIKE, "size": 5},
            )
        )
    figure = go.Figure(
        traces,
        layout=layout(
            height=400,
            title=title(f"{entity} · {label}"),
            showlegend=True,
            legend=LEGEND,
            xaxis={
                "type": "date",
                "title": {"text": "time (UTC)"},
                "rangeslider": {"visible": True},
            },
            yaxis={
                "title": {"text": plot_text(label)},
                # a series described on its log scale is drawn on one: its growth a line
                "type": "log" if result.scale == "log" or _skewed(values) else "linear",
            },
        ),
    )
    for point in result.points:
        figure.add_vline(x=times[point.index], line={"color": _CHANGE, "dash": "dash", "width": 1})
    return figure


def _change(point: ChangePoint) -> float:
    before, after = point.before_after
    return (after - before) / abs(before) if before else float("inf")


def _shown(value: float, unit: str, like: float, point: ChangePoint) -> str:
    if point.kind == "slope":
        return format_growth(value, unit, like=like, relative=point.scale == "log")
    return format_quantity(value, unit, like=like)


def _table(found: Sequence[SeriesChanges]) -> Table:
    rows = []
    for series in found:
        entity, metric, unit = series.entity, series.metric, series.unit
        for point in series.result.ranked():
            before, after = point.before_after
            like = max(abs(before), abs(after))
            rows.append(
                (
                    f"{entity}/{metric}",
                    series.times.iat[point.index].strftime("%Y-%m-%d %H:%M:%S"),
                    _shown(before, unit, like, point),
                    _shown(after, unit, like, point),
                    f"{_change(point):+.0%}",
                    round(point.effect, 1),
                    f"{point.p_value:.2g}",
                )
            )
    return Table(
        columns=("series", "time (UTC)", "before", "after", "change", "effect (σ)", "p"),
        rows=tuple(rows),
        caption=f"{len(rows)} change point(s), largest effect first",
    )


_EVIDENCE = (
    ("index", "index"),
    ("kind", "kind"),
    ("statistic", "T"),
    ("critical_value", "critical T"),
    ("p_value", "p"),
    ("alpha", "α spent"),
    ("phi", "φ (null)"),
    ("phi_residual", "φ (residual)"),
    ("strength", "z² (long-run σ²)"),
    ("effect", "effect (σ)"),
    ("level", "scale"),
    ("start", "tested from"),
    ("stop", "tested to"),
)


def _evidence(found: Sequence[SeriesChanges]) -> Markup:
    """Every change point's evidence, folded: one row each, every number the test used."""
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in _EVIDENCE)
    rows = []
    for series in found:
        name = html.escape(long_words_by_their_ends(f"{series.entity}/{series.metric}"))
        for point in series.result.ranked():
            cells = "".join(f"<td>{_number(getattr(point, attr))}</td>" for attr, _ in _EVIDENCE)
            rows.append(f"<tr><td>{name}</td>{cells}</tr>")
    return Markup(
        "<details class='more'><summary>Evidence for each change point "
        f"({len(rows)})</summary><table><thead><tr><th>series</th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></details>"
    )


def _number(value: object) -> str:
    if isinstance(value, float):
        return html.escape(f"{value:.4g}")
    return html.escape(str(value))
