"""The report section of the bottleneck family (DESIGN §2.5): what the counters say the
workload is, how full each resource is, and what an upgrade would buy.

:func:`section` draws a :class:`~perfsleuth.bottleneck.detector.BottleneckAnalysis` and nothing
else (it never infers again). Per entity: resource utilisation over the windows (most probable
workload, with its 90% interval) and, for the whole period, utilisation bars with each
resource's probability of being the bottleneck, the inferred workload, and observed against
predicted counters. With an upgrade catalogue, the options table of each entity (maximum
throughput, cost per unit of added throughput). A second builder, :func:`verification_section`,
draws ``perfsleuth verify``'s one-dimensional sweeps: predicted and observed counters against
the swept parameter (the paper's figures 3–4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfsleuth.bottleneck.explain import format_value
from perfsleuth.report.html import Section, Table
from perfsleuth.report.plots import LEGEND, downsample_indices, layout, plot_text
from perfsleuth.report.plots import title as figure_title

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from perfsleuth.bottleneck.detector import (
        BottleneckAnalysis,
        Inference,
        Model,
        UpgradeAnalysis,
        WindowResult,
    )

__all__ = ["MAX_ENTITIES", "section", "verification_section"]

MAX_ENTITIES = 6
"""Entities drawn at most in one section (the first by name); the rest are counted."""

_TABLED = 2  # entities whose workload and counter tables are shown
_COLOURS = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2")
_SATURATED = {
    "type": "line",
    "xref": "paper",
    "x0": 0,
    "x1": 1,
    "y0": 100,
    "y1": 100,
    "line": {"color": "#6b7280", "width": 1, "dash": "dash"},
}


def section(analysis: BottleneckAnalysis, *, max_points: int = 5000) -> Section:
    """The bottleneck analysis of a counter frame: per entity, utilisation per window and
    over the whole period, the inferred workload, the counters and the upgrade options.

    At most :data:`MAX_ENTITIES` entities are drawn; timelines longer than ``max_points``
    windows are downsampled (each resource keeps its peaks). The section belongs to the
    ``"bottleneck"`` family.
    """
    detector = analysis.detector
    model = analysis.model
    errors = analysis.error_model
    entities = analysis.entities
    drawn = entities[:MAX_ENTITIES]
    figures: list[Figure] = []
    for entity in drawn:
        figures.append(_timeline(model, entity.entity, entity.windows, max_points))
        figures.append(_bars(model, entity.entity, entity.overall))
    tables: list[Table] = []
    for entity in drawn[:_TABLED]:
        tables.append(_workload_table(model, entity.entity, entity.overall))
        tables.append(_counter_table(model, entity.entity, entity.overall))
    tables += [_upgrade_table(e.entity, e.upgrades) for e in entities if e.upgrades is not None]
    windows = sum(len(e.windows) for e in entities)
    calibrated = "calibrated" if analysis.calibrated else "uncalibrated (nominal values)"
    intro = (
        f"{windows:,} window(s) of {_duration(detector.window.total_seconds())} for "
        f"{len(entities)} entit{'y' if len(entities) == 1 else 'ies'}"
        + (f" (the first {MAX_ENTITIES} drawn)" if len(entities) > MAX_ENTITIES else "")
        + f". Model {model.name!r}, {calibrated}; error model: {errors.source}"
        + (f" ({errors.cases} cases)" if errors.cases else "")
        + ". For each window the most probable workload given the counters is found "
        "(Blake & Breese 1995) and each resource's utilisation computed from it: 100% is "
        "saturated. The bottleneck is the most utilised resource; its probability comes from "
        "the posterior's spread."
    )
    return Section(
        title="Bottlenecks: resource use inferred from OS counters",
        intro=intro,
        figures=figures,
        tables=tables,
        family="bottleneck",
    )


def _timeline(
    model: Model, entity: str, windows: Sequence[WindowResult], max_points: int
) -> Figure:
    import plotly.graph_objects as go

    util = np.array([w.inference.utilisation for w in windows], dtype=float).reshape(
        len(windows), len(model.resources)
    )
    low = np.array([w.inference.util_low for w in windows], dtype=float).reshape(util.shape)
    high = np.array([w.inference.util_high for w in windows], dtype=float).reshape(util.shape)
    keep = _downsample(util, max_points)
    times = [windows[i].start.isoformat() for i in keep]
    traces = []
    for j, resource in enumerate(model.resources):
        colour = _COLOURS[j % len(_COLOURS)]
        label = plot_text(resource.label)
        upper = (100 * high[keep, j]).tolist()
        lower = (100 * low[keep, j]).tolist()
        traces.append(
            go.Scatter(
                x=times + times[::-1],
                y=upper + lower[::-1],
                fill="toself",
                fillcolor=_fade(colour),
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
            )
        )
        traces.append(
            go.Scatter(
                x=times,
                y=(100 * util[keep, j]).tolist(),
                mode="lines+markers",
                name=label,
                line={"color": colour, "width": 2},
                marker={"size": 5},
                hovertemplate=f"{label}: %{{y:.0f}}%<extra></extra>",
            )
        )
    return go.Figure(
        traces,
        layout=layout(
            height=380,
            title=figure_title(f"{entity}: utilisation per window (band: 90% interval)"),
            showlegend=True,
            legend=LEGEND,
            xaxis={"type": "date", "title": {"text": "window start (UTC)"}},
            yaxis={"title": {"text": "% of capacity"}, "rangemode": "tozero"},
            shapes=[_SATURATED],
        ),
    )


def _downsample(util: npt.NDArray[np.float64], max_points: int) -> list[int]:
    """Windows to draw: all of them, or each resource's share of ``max_points`` (its peaks
    and dips kept)."""
    n, resources = util.shape
    if n <= max_points or resources == 0:
        return list(range(n))
    share = max(max_points // resources, 2)
    clean = np.nan_to_num(util, nan=0.0, posinf=0.0, neginf=0.0)
    keep = np.unique(
        np.concatenate([downsample_indices(clean[:, j], share) for j in range(resources)])
    )
    return [int(i) for i in keep]


def _bars(model: Model, entity: str, inference: Inference) -> Figure:
    import plotly.graph_objects as go

    labels = [plot_text(r.label) for r in model.resources]
    util = 100 * inference.utilisation
    traces = [
        go.Bar(
            x=labels,
            y=util,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": np.maximum(100 * inference.util_high - util, 0),
                "arrayminus": np.maximum(util - 100 * inference.util_low, 0),
            },
            marker={"color": [_COLOURS[j % len(_COLOURS)] for j in range(len(labels))]},
            text=[f"P = {p:.2f}" for p in inference.p_bottleneck],
            textposition="outside",
            hovertemplate="%{x}: %{y:.0f}% (%{text} of being the bottleneck)<extra></extra>",
        )
    ]
    return go.Figure(
        traces,
        layout=layout(
            height=380,
            title=figure_title(f"{entity}: utilisation over the whole period, 90% intervals"),
            yaxis={"title": {"text": "% of capacity"}, "rangemode": "tozero"},
            shapes=[_SATURATED],
        ),
    )


def _fade(colour: str) -> str:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},0.15)"


def _workload_table(model: Model, entity: str, inference: Inference) -> Table:
    rows = []
    for j, name in enumerate(model.parameters):
        unit = model.spec.parameters[name].unit
        rows.append(
            (
                name,
                format_value(float(inference.w[j]), unit),
                format_value(float(inference.w_low[j]), unit),
                format_value(float(inference.w_high[j]), unit),
                model.spec.parameters[name].description,
            )
        )
    return Table(
        columns=("parameter", "most probable", "5%", "95%", "meaning"),
        rows=tuple(rows),
        caption=f"{entity}: inferred workload",
    )


def _counter_table(model: Model, entity: str, inference: Inference) -> Table:
    units = {c.column: c.unit_text for c in model.counters}
    rows = tuple(
        (column, units[column], float(f"{obs:.4g}"), float(f"{pred:.4g}"), round(float(z), 2))
        for column, obs, pred, z in zip(
            inference.columns,
            inference.observed,
            inference.predicted,
            inference.residual_sd,
            strict=True,
        )
    )
    return Table(
        columns=("counter", "unit", "observed", "predicted", "error (sd)"),
        rows=rows,
        caption=f"{entity}: observed and predicted counters",
    )


def _upgrade_table(entity: str, analysis: UpgradeAnalysis) -> Table:
    unit = f"{analysis.unit}/s"
    rows = [
        (
            "(now)",
            0.0,
            float(f"{analysis.base_max_throughput:.4g}"),
            0.0,
            "",
            analysis.base_limit,
            "",
        )
    ]
    for r in analysis.results:
        rows.append(
            (
                r.name + (" ← recommended" if r is analysis.recommended else ""),
                r.price,
                float(f"{r.max_throughput:.4g}"),
                float(f"{r.added:.4g}"),
                f"{r.cost_per_unit:.4g}" if math.isfinite(r.cost_per_unit) else "n/a",
                r.limit,
                "yes" if r.meets_target else ("no" if analysis.target is not None else ""),
            )
        )
    target = "" if analysis.target is None else f", target {analysis.target:.4g} {unit}"
    return Table(
        columns=(
            "option",
            f"price ({analysis.currency})",
            f"max {unit}",
            f"added {unit}",
            f"{analysis.currency} per added {unit}",
            "then limited by",
            "meets target",
        ),
        rows=tuple(rows),
        caption=f"{entity}: upgrades for {analysis.unit} (now {analysis.throughput:.4g} "
        f"{unit}{target}): {analysis.reason()}",
    )


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def verification_section(
    table: pd.DataFrame,
    *,
    counters: Sequence[str] = (
        "disk.reads",
        "disk.read_bytes",
        "disk.writes",
        "cpu.system",
        "cg.cpu.user",
        "mem.refault",
    ),
    title: str = "Verification: predicted and observed counters along one-dimensional sweeps",
) -> Section:
    """``perfsleuth verify``'s sweeps (``perfsleuth.bottleneck.verify.sweep_table``): per
    sweep, each counter observed (markers) and predicted (line) against the swept parameter."""
    import plotly.graph_objects as go

    figures = []
    rows = []
    for sweep, part in table.groupby("sweep", sort=False):
        parameter = str(part["parameter"].iat[0])
        traces = []
        for j, counter in enumerate(c for c in counters if c in set(part["counter"])):
            data = part[part["counter"] == counter].sort_values("level")
            colour = _COLOURS[j % len(_COLOURS)]
            name = plot_text(counter)
            traces.append(
                go.Scatter(
                    x=data["level"],
                    y=data["predicted"],
                    mode="lines",
                    name=f"{name} model",
                    line={"color": colour, "dash": "dash"},
                )
            )
            traces.append(
                go.Scatter(
                    x=data["level"],
                    y=data["observed"],
                    mode="markers",
                    name=f"{name} observed",
                    marker={"color": colour, "size": 8},
                )
            )
        figures.append(
            go.Figure(
                traces,
                layout=layout(
                    height=420,
                    title=figure_title(f"{sweep}: counters against {parameter}"),
                    showlegend=True,
                    legend=LEGEND,
                    xaxis={"type": "log", "title": {"text": plot_text(parameter)}},
                    yaxis={"type": "log", "title": {"text": "counter value (its unit)"}},
                ),
            )
        )
        errors = part["error"].to_numpy(dtype=float)
        rows.append(
            (
                str(sweep),
                parameter,
                int(part["level"].nunique()),
                round(float(np.sqrt(np.mean(errors**2))), 3),
                round(float(np.median(errors)), 3),
            )
        )
    return Section(
        title=title,
        intro="Each sweep varies one workload parameter of a real synthetic workload; the model "
        "is given the same workload. Errors are on the asinh(value / scale) scale the error "
        "model uses (about relative above the counter's scale).",
        figures=figures,
        tables=(
            Table(
                columns=("sweep", "parameter", "levels", "rms error", "median error"),
                rows=tuple(rows),
                caption="Model error per sweep",
            ),
        ),
    )
