"""Plot helpers every report section shares: one look, one way to escape and downsample.

Figures are plotly figures; their text is read by plotly.js as a small subset of HTML, so every
data string goes through :func:`plot_text`. Long series are drawn from
:func:`downsample_indices` (each bucket keeps its minimum and maximum, so spikes stay).
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from perfsleuth.report.console import HTML_NAME_SHOWN, by_its_ends

__all__ = [
    "LEGEND",
    "PLOT_TEMPLATE",
    "downsample_indices",
    "layout",
    "plot_text",
    "plot_time",
    "title",
]

_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
_AXIS = {
    "gridcolor": "#e5e7eb",
    "linecolor": "#9ca3af",
    "zeroline": False,
    "automargin": True,
    "exponentformat": "SI",  # 3G, not plotly's default 3B, which reads as bytes
}
# A small template of our own: plotly's default one adds ~10 kB of JSON to every figure.
PLOT_TEMPLATE: dict[str, Any] = {
    "layout": {
        "font": {"family": _FONT, "size": 12, "color": "#1f2937"},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "colorway": ["#2563eb"],
        "xaxis": _AXIS,
        "yaxis": _AXIS,
        "margin": {"l": 10, "r": 10, "t": 28, "b": 10},
        "hoverlabel": {"font": {"family": _FONT}},
        "showlegend": False,
    }
}


LEGEND: dict[str, Any] = {
    "orientation": "h",
    "x": 0,
    "y": 1.01,
    "yanchor": "bottom",
    "font": {"size": 11},
}
"""A horizontal legend above the plot, under its title."""


def layout(*, height: int = 440, **extra: Any) -> dict[str, Any]:
    """A figure layout with the shared template and room at the top for a title and legend."""
    out: dict[str, Any] = {
        "template": PLOT_TEMPLATE,
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 64, "b": 10},
    }
    out.update(extra)
    return out


def title(text: str) -> dict[str, Any]:
    """A left-aligned figure title; ``text`` is escaped here (do not escape it before), and a
    long one is shown by its ends (a plotly title is one line: it does not wrap)."""
    return {
        "text": plot_text(by_its_ends(text, HTML_NAME_SHOWN)),
        "x": 0,
        "xanchor": "left",
        "y": 1,
        "yref": "container",
        "yanchor": "top",
        "pad": {"t": 8, "l": 4},
        "font": {"size": 13},
    }


def plot_text(value: str) -> str:
    """Escape a data string for plotly.js, which reads text as a small subset of HTML."""
    return html.escape(value, quote=False)


def plot_time(value: datetime) -> str:
    """A time as plotly.js reads it: UTC wall clock, no offset (plotly.js has no time zones)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def downsample_indices(values: npt.ArrayLike, max_points: int) -> npt.NDArray[np.intp]:
    """Positions to keep so a plot of ``values`` has at most ``max_points`` points.

    The first and last points are kept; the points between are cut into ``(max_points - 2) // 2``
    consecutive buckets and each bucket keeps its minimum and its maximum, so spikes and dips
    survive. Returned positions are sorted and unique. ``values`` must be finite.
    """
    array = np.asarray(values, dtype=float)
    n = len(array)
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, got {max_points}")
    if n <= max_points:
        return np.arange(n, dtype=np.intp)
    buckets = (max_points - 2) // 2
    ends_only = np.array([0, n - 1], dtype=np.intp)
    if buckets == 0:
        return ends_only
    inner = n - 2
    # bucket numbers never decrease and, as inner > buckets, every bucket gets a point
    bucket = np.arange(inner, dtype=np.int64) * buckets // inner
    order = np.lexsort((array[1:-1], bucket))  # by bucket, then by value within each bucket
    stop = np.cumsum(np.bincount(bucket, minlength=buckets))
    start = np.concatenate(([0], stop[:-1]))
    keep = np.concatenate((ends_only, order[start] + 1, order[stop - 1] + 1))
    return np.unique(keep).astype(np.intp)
