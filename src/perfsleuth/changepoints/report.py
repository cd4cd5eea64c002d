"""The report section of the change-point family: each series with its segments and means.

For every (entity, metric) series with a significant change point, one plot: the series, the
mean of each segment as a step line, and a dashed line at each change point (the first
observation of the new segment). The search ran on all points (in the detector); only the
drawing is downsampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from perfsleuth.report.plots import LEGEND, downsample_indices, layout, plot_text, title
from perfsleuth.report.section import Section, Table
from perfsleuth.units import format_quantity

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from perfsleuth.changepoints.detector import ChangePointAnalysis, SeriesChanges

__all__ = ["MAX_SERIES", "section"]

MAX_SERIES = 12
"""Series plotted at most in one section."""

_SERIES = "#2563eb"
_MEAN = "#f59e0b"
_CHANGE = "#dc2626"


def section(analysis: ChangePointAnalysis, *, max_points: int = 5000) -> Section:
    """The series of ``analysis`` that have change points, each with its segments and means.

    At most :data:`MAX_SERIES` series are plotted, those with the most change points first;
    the rest are counted. The section belongs to the ``"changepoints"`` family.
    """
    detector = analysis.detector
    found = analysis.changed
    shown = found[:MAX_SERIES]
    robust = (
        f"outliers clipped, cycles and trends removed, shifts under {detector.min_effect:g} σ "
        "dropped"
        if detector.robust
        else "raw values"
    )
    intro = (
        f"{len(analysis.series)} series searched ({detector.method}, α = {detector.alpha:g}, "
        f"at least {detector.min_size} observations per segment; {robust}); {len(found)} with "
        "change points"
        + (f", the {len(shown)} with the most shown." if len(found) > len(shown) else ".")
        + _adjustments(found)
    )
    return Section(
        title="Change points: series, segments and means",
        intro=intro,
        figures=[_figure(s, max_points) for s in shown],
        tables=[_table(found)] if found else [],
        family="changepoints",
    )


def _adjustments(found: Sequence[SeriesChanges]) -> str:
    """What the robust search removed, in a sentence (empty when nothing)."""
    notes = []
    for series in found:
        entity, metric, result = series.entity, series.metric, series.result
        parts = []
        if result.trend and result.trend[0]:
            parts.append(f"a trend of {result.trend[0]:+.3g} per observation")
        if result.period:
            parts.append(f"a cycle of {result.period} observations")
        if result.outliers:
            parts.append(f"{result.outliers} outlier(s) clipped")
        if parts:
            notes.append(f"{entity}/{metric}: {', '.join(parts)}")
    return (" Removed before the search — " + "; ".join(notes) + ".") if notes else ""


def _figure(series: SeriesChanges, max_points: int) -> Figure:
    import plotly.graph_objects as go

    entity, metric, unit, result = series.entity, series.metric, series.unit, series.result
    values = series.values
    times = series.times.dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ").to_numpy()
    keep = downsample_indices(values, max_points)
    structured = bool(result.period or any(result.trend))
    # segment means as a step line: one point at each segment start and one at its end
    step_x, step_y = [], []
    for segment in result.segments:
        step_x += [times[segment.start], times[segment.stop - 1], None]
        step_y += [segment.mean[0], segment.mean[0], None]
    label = f"{metric} ({unit})" if unit else metric
    figure = go.Figure(
        [
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
        ],
        layout=layout(
            height=360,
            title=title(f"{entity} · {label}"),
            showlegend=True,
            legend=LEGEND,
            xaxis={"type": "date", "title": {"text": "time (UTC)"}},
            yaxis={"title": {"text": plot_text(label)}},
        ),
    )
    for point in result.points:
        figure.add_vline(x=times[point.index], line={"color": _CHANGE, "dash": "dash", "width": 1})
    return figure


def _table(found: Sequence[SeriesChanges]) -> Table:
    rows = []
    for series in found:
        entity, metric, unit = series.entity, series.metric, series.unit
        for point in series.result.points:
            before, after = point.mean_before[0], point.mean_after[0]
            change = (after - before) / abs(before) if before else float("inf")
            rows.append(
                (
                    f"{entity}/{metric}",
                    series.times.iat[point.index].strftime("%Y-%m-%d %H:%M:%S"),
                    format_quantity(before, unit, like=max(abs(before), abs(after))),
                    format_quantity(after, unit, like=max(abs(before), abs(after))),
                    f"{change:+.0%}",
                    f"{point.p_value:.2g}",
                    round(point.phi, 3),
                    point.level,
                )
            )
    return Table(
        columns=("series", "time (UTC)", "mean before", "mean after", "change", "p", "φ", "level"),
        rows=tuple(rows),
        caption=f"{len(rows)} change point(s)",
    )
