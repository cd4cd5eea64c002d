"""The report section of the segments family: anomaly, workload change or application change
(Cherkasova et al.; DESIGN §2.3).

Two plots, as the paper draws them: CPU utilisation per window, observed and as the CPU model of
each reconciled period predicts it, with the anomalous stretches shaded and every boundary
labelled by kind (figures 10 and 11); and the application signature of each period — service
time per transaction type with its confidence interval — side by side (figure 12). Tables list
the segments and the boundaries; the CPU model of each period is shown with its ``summary()``.
Everything is drawn from a :class:`~perfsleuth.segments.detector.SegmentAnalysis`: nothing is
segmented or fitted again here. Only the drawing is downsampled.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from markupsafe import Markup

from perfsleuth.report.html import Section, Table
from perfsleuth.report.plots import LEGEND, downsample_indices, layout, plot_text, title
from perfsleuth.units import format_seconds

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from perfsleuth.segments.detector import SegmentAnalysis

__all__ = ["TITLE", "section"]

TITLE = "Workload: anomaly, workload change or application change"
"""The section's heading."""

_OBSERVED = "#2563eb"
_MODEL = "#f59e0b"
_ANOMALY = "#dc2626"
_WORKLOAD = "#059669"
_APPLICATION = "#7c3aed"
_BREAK = "#9ca3af"
_PERIODS = ("#2563eb", "#dc2626", "#f59e0b", "#059669", "#7c3aed", "#db2777", "#0891b2")
_HEIGHT = 460


def section(analysis: SegmentAnalysis, *, max_points: int = 5000) -> Section:
    """The segments of ``analysis``, for :func:`~perfsleuth.report.render_html`.

    The section holds the utilisation plot (observed and modelled CPU, anomalies shaded,
    boundaries labelled), the signature plot, the tables of segments, boundaries and
    signatures, and each period's CPU model summary. It belongs to the ``"segments"`` family.

    Parameters
    ----------
    analysis
        What :meth:`~perfsleuth.segments.detector.SegmentDetector.analyse` returned.
    max_points
        The utilisation plot draws at most about this many windows.
    """
    segmentation = analysis.segmentation
    if segmentation is None:
        return Section(title=TITLE, intro="No windows: nothing to segment.", family="segments")
    kinds = [b.kind for b in analysis.boundaries]
    intro = (
        f"{analysis.n_windows:,} windows, {len(analysis.types)} transaction types. CPU time per "
        "window is modelled as idle overhead + Σ (CPU per transaction × transactions) by "
        "non-negative least squares; the time axis is cut where the model changes (dynamic "
        f"programming, allowed error {100 * analysis.detector.allowed_error:g}% → "
        f"{segmentation.n_segments} segments). "
        f"{len(analysis.episodes)} anomalous stretch(es), "
        f"{kinds.count('workload_change')} workload change(s) and "
        f"{kinds.count('application_change')} application change(s)."
    )
    fragment = "\n".join(
        f"<h3>Period {i}</h3>" + model.summary().html  # summary() escapes every name
        for i, model in enumerate(analysis.models, 1)
    )
    return Section(
        title=TITLE,
        intro=intro,
        fragment=Markup(fragment),
        figures=(_utilisation(analysis, max_points), _signatures(analysis)),
        tables=(_segments(analysis), _boundaries(analysis), _signature_table(analysis)),
        family="segments",
    )


# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------


def _times(result: SegmentAnalysis) -> npt.NDArray[np.str_]:
    return np.datetime_as_string(result.times, unit="ms")


def _edge(result: SegmentAnalysis, i: int) -> str:
    """Plot time of the start of window i (or the end of the last window when i = M)."""
    return str(np.datetime_as_string(result.edge(i), unit="ms"))


def _utilisation(result: SegmentAnalysis, max_points: int) -> Figure:
    import plotly.graph_objects as go

    capacity = result.width * result.cores
    observed = result.cpu / capacity
    modelled = result.fitted / capacity
    times = _times(result)
    keep = np.union1d(
        downsample_indices(observed, max(2, max_points // 2)),
        downsample_indices(np.nan_to_num(modelled, nan=0.0), max(2, max_points // 2)),
    ).astype(np.intp)
    traces = [
        go.Scatter(
            x=times[keep].tolist(),
            y=observed[keep],
            mode="lines",
            name="observed",
            line={"color": _OBSERVED, "width": 1.3},
            hovertemplate="%{x}<br>observed %{y:.1%}<extra></extra>",
        ),
        go.Scatter(
            x=times[keep].tolist(),
            y=modelled[keep],
            mode="lines",
            name="CPU model of the period",
            line={"color": _MODEL, "width": 1.3},
            connectgaps=False,
            hovertemplate="%{x}<br>model %{y:.1%}<extra></extra>",
        ),
    ]
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for a, b in result.episodes:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": _edge(result, a),
                "x1": _edge(result, b),
                "y0": 0,
                "y1": 1,
                "fillcolor": _ANOMALY,
                "opacity": 0.12,
                "line": {"width": 0},
            }
        )
        annotations.append(_label(_edge(result, a), "anomaly", _ANOMALY, 1.0))
    for cut in result.segmentation.indices if result.segmentation is not None else ():
        shapes.append(_line(_edge(result, cut), _BREAK, "dot", 0.7))
    for n, boundary in enumerate(result.boundaries):
        colour = _APPLICATION if boundary.kind == "application_change" else _WORKLOAD
        text = "application change" if boundary.kind == "application_change" else "workload change"
        x = _edge(result, boundary.index)
        shapes.append(_line(x, colour, "solid" if colour == _APPLICATION else "dash", 1.6))
        annotations.append(_label(x, text, colour, 0.94 - 0.06 * (n % 2)))
    # legend entries for the shapes, which plotly does not list
    for name, colour, dash in (
        ("application change", _APPLICATION, "solid"),
        ("workload change", _WORKLOAD, "dash"),
        ("segment boundary", _BREAK, "dot"),
    ):
        traces.append(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                name=name,
                line={"color": colour, "dash": dash, "width": 1.6},
            )
        )
    traces.append(
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name="anomaly",
            marker={"color": _ANOMALY, "opacity": 0.3, "size": 12, "symbol": "square"},
        )
    )
    return go.Figure(
        traces,
        layout=layout(
            height=_HEIGHT,
            title=title("CPU utilisation: observed and as each period's CPU model explains it"),
            showlegend=True,
            legend=LEGEND,
            shapes=shapes,
            annotations=annotations,
            xaxis={"type": "date", "title": {"text": "window start (UTC)"}},
            yaxis={
                "title": {"text": "share of the machine"},
                "tickformat": ".0%",
                "rangemode": "tozero",
            },
        ),
    )


def _line(x: str, colour: str, dash: str, width: float) -> dict[str, Any]:
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "line": {"color": colour, "dash": dash, "width": width},
    }


def _label(x: str, text: str, colour: str, y: float) -> dict[str, Any]:
    return {
        "x": x,
        "y": y,
        "xref": "x",
        "yref": "paper",
        "text": text,
        "showarrow": False,
        "xanchor": "left",
        "font": {"size": 10, "color": colour},
        "bgcolor": "rgba(255,255,255,.8)",
    }


def _signatures(result: SegmentAnalysis) -> Figure:
    """Figure 12: service time per type and period, with confidence intervals."""
    import plotly.graph_objects as go

    names = [plot_text(n) for n in result.types]
    traces = []
    for i, sig in enumerate(result.signatures):
        ms = sig.median * 1e3
        traces.append(
            go.Bar(
                x=names,
                y=ms,
                name=f"period {i + 1}" + (" (baseline)" if i == 0 else ""),
                marker={"color": _PERIODS[i % len(_PERIODS)]},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": (sig.high - sig.median) * 1e3,
                    "arrayminus": (sig.median - sig.low) * 1e3,
                    "thickness": 1.2,
                },
                hovertemplate="%{x}: %{y:.3~g} ms<extra>" + f"period {i + 1}</extra>",
            )
        )
    return go.Figure(
        traces,
        layout=layout(
            height=_HEIGHT,
            title=title(
                "Application signature per period: service time S = median R·(1 − U) "
                f"({100 * _confidence(result):g}% intervals)"
            ),
            barmode="group",
            showlegend=True,
            legend=LEGEND,
            xaxis={"title": {"text": "transaction type"}},
            yaxis={"title": {"text": "service time (ms)"}, "rangemode": "tozero"},
        ),
    )


def _confidence(result: SegmentAnalysis) -> float:
    return result.signatures[0].confidence if result.signatures else math.nan


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


def _clock(result: SegmentAnalysis, i: int) -> str:
    return _edge(result, i).replace("T", " ")[:19]


def _segments(result: SegmentAnalysis) -> Table:
    rows = []
    rel = result.segmentation.relative_rmse() if result.segmentation is not None else ()
    for p, err in zip(result.pieces, rel, strict=True):
        status: str = p.label
        if p.absorbed_into >= 0:
            status = "joined a neighbour"
        rows.append(
            (
                _clock(result, p.start),
                p.windows,
                status,
                ", ".join(p.rules),
                "n/a" if math.isnan(p.idle_util) else f"{100 * p.idle_util:.1f}%",
                f"{100 * float(err):.1f}%",
            )
        )
    return Table(
        columns=("start (UTC)", "windows", "verdict", "rules", "idle C0", "rel. error"),
        rows=tuple(rows),
        caption=f"Segments of the optimal segmentation ({len(rows)})",
    )


def _boundaries(result: SegmentAnalysis) -> Table:
    rows = []
    for b in result.boundaries:
        changed = ", ".join(
            f"{c.name} {100 * (c.ratio - 1):+.0f}%" for c in b.changes if c.name in b.named
        )
        shift = ", ".join(
            f"{c.name} {'+' if c.shift >= 0 else '−'}{format_seconds(abs(c.shift))} "
            f"({'+' if c.low >= 0 else '−'}{format_seconds(abs(c.low))} to "
            f"{'+' if c.high >= 0 else '−'}{format_seconds(abs(c.high))})"
            for c in b.costs
        )
        rows.append(
            (
                _clock(result, b.index),
                b.kind.replace("_", " "),
                f"{100 * b.excess:.1f}%",
                f"{b.p_value:.2g}",
                changed + (" (tentative)" if b.tentative else ""),
                shift,
            )
        )
    return Table(
        columns=(
            "at (UTC)",
            "verdict",
            "extra error",
            "p-value",
            "service time changed",
            "CPU per transaction changed (CI)",
        ),
        rows=tuple(rows),
        caption="Reconciliation of consecutive normal periods",
    )


def _signature_table(result: SegmentAnalysis) -> Table:
    rows = []
    for name in result.types:
        cells: list[str | int | float] = [name]
        for sig in result.signatures:
            median, low, high = sig.of(name)
            cells.append(
                "n/a"
                if math.isnan(median)
                else f"{format_seconds(median)} [{format_seconds(low)}, {format_seconds(high)}]"
            )
        rows.append(tuple(cells))
    columns = ("type", *(f"period {i}" for i in range(1, len(result.signatures) + 1)))
    return Table(
        columns=columns,
        rows=tuple(rows),
        caption="Service time per period (median [interval])",
    )
