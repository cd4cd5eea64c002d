"""The report section of the change-point family: each series with its segments and means.

For every (entity, metric) series with a significant change point, one plot: the series, the
mean of each segment as a step line, and a dashed line at each change point (the first
observation of the new segment). The search runs on all points; only the drawing is downsampled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from perfsleuth.detectors.changepoint import ChangePointDetector, format_quantity
from perfsleuth.frames import coverage_of, normalise
from perfsleuth.report.html import _PLOT_TEMPLATE, Section, Table, _text, downsample_indices
from perfsleuth.stats.changepoint import ChangePoints

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

__all__ = ["changepoint_section"]

_SERIES = "#2563eb"
_MEAN = "#f59e0b"
_CHANGE = "#dc2626"


def changepoint_section(
    frame: pd.DataFrame,
    *,
    detector: ChangePointDetector | None = None,
    max_series: int = 12,
    max_points: int = 5000,
    title: str = "Change points: series, segments and means",
) -> Section:
    """A :class:`Section` plotting the series of a metric frame that have change points.

    The section belongs to the ``"changepoint"`` family, so the report shows it in that block.

    Parameters
    ----------
    frame
        A metric frame (normalised here if it is not already).
    detector
        Its parameters (alpha, min_segment, method) drive the search; default settings if None.
    max_series
        Series plotted at most, those with the most change points first; the rest are counted.
    """
    detector = detector or ChangePointDetector()
    if coverage_of(frame) is None:
        frame = normalise(frame, "metric", source="report")
    found: list[tuple[str, str, pd.DataFrame, ChangePoints]] = []
    for (entity, metric), series in frame.groupby(["entity", "metric"], sort=True):
        result = detector.search(series["value"].to_numpy(dtype=np.float64))
        if result.indices:
            found.append((str(entity), str(metric), series, result))
    found.sort(key=lambda item: -len(item[3].indices))
    total = frame.groupby(["entity", "metric"]).ngroups
    shown = found[:max_series]
    robust = (
        f"outliers clipped, cycles and trends removed, shifts under {detector.min_effect:g} σ "
        "dropped"
        if detector.robust
        else "raw values"
    )
    intro = (
        f"{total} series searched ({detector.method}, α = {detector.alpha:g}, at least "
        f"{detector.min_segment} observations per segment; {robust}); {len(found)} with change "
        "points"
        + (f", the {len(shown)} with the most shown." if len(found) > len(shown) else ".")
        + _adjustments(found)
    )
    return Section(
        title=title,
        intro=intro,
        figures=[_figure(e, m, s, r, max_points) for e, m, s, r in shown],
        tables=[_table(found)] if found else [],
        family="changepoint",
    )


def _adjustments(found: list[tuple[str, str, pd.DataFrame, ChangePoints]]) -> str:
    """What the robust search removed, in a sentence (empty when nothing)."""
    notes = []
    for entity, metric, _, result in found:
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


def _unit(series: pd.DataFrame) -> str:
    return str(series["unit"].iat[0]) if "unit" in series.columns and len(series) else ""


def _figure(
    entity: str, metric: str, series: pd.DataFrame, result: ChangePoints, max_points: int
) -> Figure:
    import plotly.graph_objects as go

    values = series["value"].to_numpy(dtype=np.float64)
    times = series["time"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ").to_numpy()
    keep = downsample_indices(values, max_points)
    structured = bool(result.period or any(result.trend))
    # segment means as a step line: one point at each segment start and one at its end
    step_x, step_y = [], []
    for segment in result.segments:
        step_x += [times[segment.start], times[segment.stop - 1], None]
        step_y += [segment.mean[0], segment.mean[0], None]
    unit = _unit(series)
    label = f"{_text(metric)} ({_text(unit)})" if unit else _text(metric)
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
        layout={
            "template": _PLOT_TEMPLATE,
            "height": 360,
            "margin": {"l": 10, "r": 10, "t": 56, "b": 10},
            "title": {"text": f"{_text(entity)} · {label}", "x": 0, "font": {"size": 13}},
            "showlegend": True,
            "legend": {"orientation": "h", "x": 0, "y": 1.01, "yanchor": "bottom"},
            "xaxis": {"type": "date", "title": {"text": "time (UTC)"}},
            "yaxis": {"title": {"text": label}},
        },
    )
    for point in result.points:
        figure.add_vline(x=times[point.index], line={"color": _CHANGE, "dash": "dash", "width": 1})
    return figure


def _table(found: list[tuple[str, str, pd.DataFrame, ChangePoints]]) -> Table:
    rows = []
    for entity, metric, series, result in found:
        unit = _unit(series)
        for point in result.points:
            before, after = point.mean_before[0], point.mean_after[0]
            change = (after - before) / abs(before) if before else float("inf")
            rows.append(
                (
                    f"{entity}/{metric}",
                    series["time"].iat[point.index].strftime("%Y-%m-%d %H:%M:%S"),
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
