"""The report section of the bottleneck family (DESIGN §2.5): what the counters say the
workload is, how full each resource is, and what an upgrade would buy.

Per entity: resource utilisation over the windows (most probable workload, with its 90%
interval) and, for the whole period, utilisation bars with each resource's probability of being
the bottleneck, the inferred workload, and observed against predicted counters. With an upgrade
analysis, the options table (maximum throughput, cost per unit of added throughput). A second
builder, :func:`verification_section`, draws ``perfsleuth verify``'s one-dimensional sweeps:
predicted and observed counters against the swept parameter (the paper's figures 3–4).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from perfsleuth.report.html import _PLOT_TEMPLATE, Section, Table

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from perfsleuth.bottleneck.detector import BottleneckDetector, WindowResult
    from perfsleuth.bottleneck.infer import Inference
    from perfsleuth.bottleneck.model import Model
    from perfsleuth.bottleneck.upgrades import UpgradeAnalysis

__all__ = ["bottleneck_section", "verification_section"]

_COLOURS = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2")
_MAX_ENTITIES = 6
_LEGEND = {"orientation": "h", "x": 0, "y": 1.01, "yanchor": "bottom", "font": {"size": 11}}


def bottleneck_section(
    frame: pd.DataFrame,
    *,
    detector: BottleneckDetector | None = None,
    upgrades: Mapping[str, UpgradeAnalysis] | None = None,
    title: str = "Bottlenecks: resource use inferred from OS counters",
) -> Section:
    """The bottleneck analysis of a counter frame, for :func:`~perfsleuth.report.render_html`.

    Parameters
    ----------
    frame
        A counter frame (``perfsleuth.frames``).
    detector
        The detector whose model, calibration and windows to use (default
        ``BottleneckDetector()``).
    upgrades
        Upgrade analyses by entity (``perfsleuth.bottleneck.upgrades.analyse_upgrades``).
    title
        The section's heading.
    """
    from perfsleuth.bottleneck.detector import BottleneckDetector, load_setup

    judge = BottleneckDetector() if detector is None else detector
    model, errors = load_setup(judge.model, judge.calibration, judge.error_model)
    windows = judge.analyse(frame)
    entities = sorted({w.entity for w in windows})
    figures: list[Figure] = []
    tables: list[Table] = []
    overall: dict[str, Inference] = {}
    for entity in entities[:_MAX_ENTITIES]:
        mine = [w for w in windows if w.entity == entity]
        whole = judge.overall(mine)
        overall[entity] = whole
        figures.append(_timeline(model, entity, mine))
        figures.append(_bars(model, entity, whole))
    for entity, whole in list(overall.items())[:2]:
        tables.append(_workload_table(model, entity, whole))
        tables.append(_counter_table(model, entity, whole))
    for entity, analysis in (upgrades or {}).items():
        tables.append(_upgrade_table(entity, analysis))
    calibrated = "calibrated" if judge.calibration else "uncalibrated (nominal values)"
    intro = (
        f"{len(windows):,} window(s) of {_duration(judge.window.total_seconds())} for "
        f"{len(entities)} entit{'y' if len(entities) == 1 else 'ies'}"
        + (f" (the first {_MAX_ENTITIES} drawn)" if len(entities) > _MAX_ENTITIES else "")
        + f". Model {model.name!r}, {calibrated}; error model: {errors.source}"
        + (f" ({errors.cases} cases)" if errors.cases else "")
        + ". For each window the most probable workload given the counters is found "
        "(Blake & Breese 1995) and each resource's utilisation computed from it: 100% is "
        "saturated. The bottleneck is the most utilised resource; its probability comes from "
        "the posterior's spread."
    )
    return Section(
        title=title, intro=intro, figures=figures, tables=tables, family="bottleneck"
    )


def _layout(**extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "template": _PLOT_TEMPLATE,
        "height": 380,
        "margin": {"l": 10, "r": 10, "t": 64, "b": 10},
    }
    layout.update(extra)
    return layout


def _title(text: str) -> dict[str, Any]:
    return {
        "text": html.escape(text),
        "x": 0,
        "xanchor": "left",
        "y": 1,
        "yref": "container",
        "yanchor": "top",
        "pad": {"t": 8, "l": 4},
        "font": {"size": 13},
    }


def _timeline(model: Model, entity: str, windows: Sequence[WindowResult]) -> Figure:
    import plotly.graph_objects as go

    times = [w.start.isoformat() for w in windows]
    traces = []
    for j, resource in enumerate(model.resources):
        colour = _COLOURS[j % len(_COLOURS)]
        util = [100 * float(w.inference.utilisation[j]) for w in windows]
        low = [100 * float(w.inference.util_low[j]) for w in windows]
        high = [100 * float(w.inference.util_high[j]) for w in windows]
        label = html.escape(resource.label)
        traces.append(
            go.Scatter(
                x=times + times[::-1],
                y=high + low[::-1],
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
                y=util,
                mode="lines+markers",
                name=label,
                line={"color": colour, "width": 2},
                marker={"size": 5},
                hovertemplate=f"{label}: %{{y:.0f}}%<extra></extra>",
            )
        )
    return go.Figure(
        traces,
        layout=_layout(
            title=_title(f"{entity}: utilisation per window (band: 90% interval)"),
            showlegend=True,
            legend=_LEGEND,
            xaxis={"type": "date", "title": {"text": "window start (UTC)"}},
            yaxis={"title": {"text": "% of capacity"}, "rangemode": "tozero"},
            shapes=[
                {
                    "type": "line",
                    "xref": "paper",
                    "x0": 0,
                    "x1": 1,
                    "y0": 100,
                    "y1": 100,
                    "line": {"color": "#6b7280", "width": 1, "dash": "dash"},
                }
            ],
        ),
    )


def _bars(model: Model, entity: str, inference: Inference) -> Figure:
    import plotly.graph_objects as go

    labels = [html.escape(r.label) for r in model.resources]
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
        layout=_layout(
            title=_title(f"{entity}: utilisation over the whole period, 90% intervals"),
            yaxis={"title": {"text": "% of capacity"}, "rangemode": "tozero"},
            shapes=[
                {
                    "type": "line",
                    "xref": "paper",
                    "x0": 0,
                    "x1": 1,
                    "y0": 100,
                    "y1": 100,
                    "line": {"color": "#6b7280", "width": 1, "dash": "dash"},
                }
            ],
        ),
    )


def _fade(colour: str) -> str:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},0.15)"


def _workload_table(model: Model, entity: str, inference: Inference) -> Table:
    from perfsleuth.bottleneck.explain import format_value

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
            name = html.escape(counter)
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
                layout=_layout(
                    title=_title(f"{sweep}: counters against {parameter}"),
                    showlegend=True,
                    legend=_LEGEND,
                    height=420,
                    xaxis={"type": "log", "title": {"text": html.escape(parameter)}},
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
