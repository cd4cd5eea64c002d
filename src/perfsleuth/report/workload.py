"""The report section of the workload family: Kelly's transaction-mix model drawn (DESIGN §2.2).

Three plots, as the paper shows them: observed against fitted summed response time per window
(log-log, with y = x), the distribution of ``|e|/y`` for LAR and OLS, and the two over time. The
windows :class:`~perfsleuth.detectors.workload.MixAnomalyDetector` judges anomalous are marked in
the first and last. The models are fitted on every window; only the drawing is downsampled.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from markupsafe import Markup

from perfsleuth.errors import DataError
from perfsleuth.frames import coverage_of, normalise, workload_types
from perfsleuth.report.html import (
    _PLOT_TEMPLATE,
    Section,
    Table,
    _text,
    downsample_indices,
)

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from perfsleuth.detectors.workload import MixAnomalyDetector, WindowJudgement
    from perfsleuth.stats.mixmodel import MixFit

__all__ = ["workload_section"]

FloatArray = npt.NDArray[np.float64]

_NORMAL = "#2563eb"
_SLOW = "#dc2626"
_FAST = "#7c3aed"
_FITTED = "#f59e0b"
_GUIDE = "#6b7280"
_OLS = "#059669"
_TABLE_ROWS = 12  # anomalous windows listed (the farthest off); the rest are counted
_LEGEND = {"orientation": "h", "x": 0, "y": 1.01, "yanchor": "bottom", "font": {"size": 11}}


def workload_section(
    frame: pd.DataFrame,
    *,
    detector: MixAnomalyDetector | None = None,
    title: str = "Workload: response time explained by the transaction mix",
    max_points: int = 5000,
) -> Section:
    """The transaction-mix model of a workload frame, for :func:`~perfsleuth.report.render_html`.

    Fits LAR and OLS on every window (counts = the ``n[<type>]`` columns, response = the
    window's Σ ``rt_sum[<type>]``) and asks ``detector`` (default ``MixAnomalyDetector()``)
    which windows are slow or too fast. The section holds the LAR summary (per-type service
    times, NAE, ``|e|/y`` quantiles), a LAR/OLS comparison, the anomalous windows, and three
    plots: y against ŷ (log-log), the ``|e|/y`` CDFs, and observed and fitted over time. It
    belongs to the ``"workload_mix"`` family, so the report shows it in that block.

    Parameters
    ----------
    frame
        A workload frame (``perfsleuth.frames``); normalised here unless it already was.
    detector
        Judges the windows; its ``method`` does not change the fits drawn (both are).
    title
        The section's heading.
    max_points
        Plots draw at most about this many windows each (anomalous ones always).

    Raises
    ------
    NotEnoughDataError
        Too few windows (with enough transactions) to fit the model.
    DataError
        The frame is not a usable workload frame.
    """
    from perfsleuth.detectors.workload import MixAnomalyDetector
    from perfsleuth.stats.mixmodel import fit_mix_model

    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, got {max_points}")
    coverage = coverage_of(frame)
    if coverage is None or coverage.contract != "workload":
        frame = normalise(frame, "workload")
    judge = MixAnomalyDetector() if detector is None else detector
    judgements = judge.judge(frame)  # validates the frame (NaN, negative values, rt_sum columns)

    # The detector sorts by time (stable) and so do we: its window i is our row i.
    frame = frame.sort_values("time", kind="stable")
    types = workload_types(frame)
    counts = frame[[f"n[{t}]" for t in types]].to_numpy(dtype=np.float64)
    y = frame[[f"rt_sum[{t}]" for t in types]].to_numpy(dtype=np.float64).sum(axis=1)
    start = frame["time"].dt.tz_convert("UTC").dt.tz_localize(None).to_numpy("datetime64[ns]")
    judged_at = pd.DatetimeIndex([j.time for j in judgements]).tz_convert(None).as_unit("ns")
    if not np.array_equal(judged_at.to_numpy(), start):
        raise DataError("the detector's windows do not match the frame's (unexpected reordering)")

    lar = fit_mix_model(counts, y, method="lar", names=types)
    ols = fit_mix_model(counts, y, method="ols", names=types)
    verdict = np.array([j.verdict for j in judgements], dtype=object)
    times = np.datetime_as_string(start, unit="ms")

    slow = int((verdict == "slow").sum())
    fast = int((verdict == "too_fast").sum())
    unjudged = int((verdict == "unjudged").sum())
    intro = (
        f"{len(y):,} windows, {len(types)} transaction types. Each window's summed response "
        "time is modelled as Σ (service time of type × transactions of that type), fitted by "
        "least absolute residuals (LAR) and, for comparison, least squares (OLS). "
        f"The detector ({judge.name}, {judge.method.upper()}) finds {slow} window"
        f"{'' if slow == 1 else 's'} slower and {fast} faster than the mix explains"
        + (f"; {unjudged} had too few transactions to judge" if unjudged else "")
        + "."
    )
    return Section(
        title=title,
        intro=intro,
        fragment=Markup(lar.summary().html),  # MixFit.summary escapes every name it shows
        figures=(
            _scatter(y, lar.fitted, verdict, times, max_points),
            _cdf(lar, ols, max_points),
            _timeline(y, lar.fitted, verdict, times, max_points),
        ),
        tables=(_comparison(lar, ols), _anomalies(judgements)),
        family="workload_mix",
    )


# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------


def _layout(**extra: Any) -> dict[str, Any]:
    # room at the top for the title and, under it, the legend
    layout: dict[str, Any] = {
        "template": _PLOT_TEMPLATE,
        "height": 440,
        "margin": {"l": 10, "r": 10, "t": 64, "b": 10},
    }
    layout.update(extra)
    return layout


def _title(text: str) -> dict[str, Any]:
    return {
        "text": text,
        "x": 0,
        "xanchor": "left",
        "y": 1,
        "yref": "container",
        "yanchor": "top",
        "pad": {"t": 8, "l": 4},
        "font": {"size": 13},
    }


def _kept(
    values: FloatArray, flagged: npt.NDArray[np.bool_], max_points: int
) -> npt.NDArray[np.intp]:
    """Rows to draw: a min/max downsample of ``values``, plus every flagged row."""
    keep = downsample_indices(values, max_points)
    return np.union1d(keep, np.flatnonzero(flagged)).astype(np.intp)


def _scatter(
    y: FloatArray,
    fitted: FloatArray,
    verdict: npt.NDArray[Any],
    times: npt.NDArray[np.str_],
    max_points: int,
) -> Figure:
    import plotly.graph_objects as go

    positive = (y > 0) & (fitted > 0)  # a log axis cannot place the others
    hidden = int((~positive).sum())
    traces = []
    hover = "%{text}<br>observed %{y:.4~g} s<br>fitted %{x:.4~g} s<extra></extra>"
    groups = (
        ("normal", "windows", _NORMAL, 5, 0.45),
        ("slow", "slow (anomalous)", _SLOW, 8, 0.9),
        ("too_fast", "too fast (anomalous)", _FAST, 8, 0.9),
    )
    for key, name, colour, size, opacity in groups:
        rows = np.flatnonzero(
            positive & (verdict == key if key != "normal" else ~_flagged(verdict))
        )
        if key == "normal" and len(rows):
            rows = rows[downsample_indices(y[rows] / fitted[rows], max_points)]
        if key != "normal" and not len(rows):
            continue
        traces.append(
            go.Scatter(
                x=fitted[rows],
                y=y[rows],
                text=times[rows].tolist(),
                mode="markers",
                name=name,
                marker={"color": colour, "size": size, "opacity": opacity},
                hovertemplate=hover,
            )
        )
    axis: dict[str, Any] = {"type": "log", "dtick": "D2"}
    if positive.any():
        low = float(min(y[positive].min(), fitted[positive].min()))
        high = float(max(y[positive].max(), fitted[positive].max()))
        traces.insert(
            0,
            go.Scatter(
                x=[low, high],
                y=[low, high],
                mode="lines",
                name="y = ŷ",
                line={"color": _GUIDE, "width": 1, "dash": "dash"},
                hoverinfo="skip",
            ),
        )
        # the same range on both axes, so y = ŷ is the diagonal and distances read alike
        axis["range"] = [math.log10(low) - 0.05, math.log10(high) + 0.05]
    title = "Observed vs fitted per window (LAR, log-log)"
    if hidden:
        title += f"; {hidden:,} with y or ŷ = 0 not shown"
    return go.Figure(
        traces,
        layout=_layout(
            title=_title(title),
            showlegend=True,
            legend=_LEGEND,
            xaxis={**axis, "title": {"text": "fitted ŷ (s per window)"}},
            yaxis={**axis, "title": {"text": "observed y (s per window)"}},
        ),
    )


def _cdf(lar: MixFit, ols: MixFit, max_points: int) -> Figure:
    import plotly.graph_objects as go

    traces = []
    tail = 0.0
    for fit, colour in ((lar, _NORMAL), (ols, _OLS)):
        errors = np.sort(fit.abs_rel_error[np.isfinite(fit.abs_rel_error)]) * 100.0
        if not len(errors):
            continue
        share = np.arange(1, len(errors) + 1, dtype=np.float64) / len(errors)
        keep = downsample_indices(share, max_points)  # monotone: evenly spaced ranks
        nae = "n/a" if math.isnan(fit.nae) else f"{100 * fit.nae:.1f}%"
        tail = max(tail, float(np.quantile(errors, 0.99)))
        traces.append(
            go.Scatter(
                x=errors[keep],
                y=share[keep],
                mode="lines",
                line={"color": colour, "width": 2, "shape": "hv"},
                name=f"{fit.method.upper()} (NAE {nae})",
                hovertemplate=f"{fit.method.upper()}: %{{y:.1%}} of windows within %{{x:.3~g}}%"
                "<extra></extra>",
            )
        )
    xaxis: dict[str, Any] = {"ticksuffix": "%", "rangemode": "tozero"}
    axis_title = "|e| / y per window"
    if tail > 0:
        # the worst windows (the anomalies) would squash the body of the curves into the left edge
        xaxis["range"] = [0, 1.15 * tail]
        axis_title += " (axis cut near the 99th percentile: zoom out for the rest)"
    xaxis["title"] = {"text": axis_title}
    title = "Relative error |e|/y, cumulative: LAR vs OLS"
    return go.Figure(
        traces,
        layout=_layout(
            title=_title(title),
            showlegend=True,
            legend={
                **_LEGEND,
                "x": 1,
                "xanchor": "right",
                "y": 0.02,
                "yanchor": "bottom",
                "orientation": "v",
                "bgcolor": "rgba(255,255,255,.85)",
            },
            xaxis=xaxis,
            yaxis={"title": {"text": "share of windows"}, "tickformat": ".0%", "range": [0, 1.02]},
        ),
    )


def _flagged(verdict: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    return np.asarray((verdict == "slow") | (verdict == "too_fast"), dtype=bool)


def _timeline(
    y: FloatArray,
    fitted: FloatArray,
    verdict: npt.NDArray[Any],
    times: npt.NDArray[np.str_],
    max_points: int,
) -> Figure:
    import plotly.graph_objects as go

    flagged = _flagged(verdict)
    keep = np.union1d(
        _kept(y, flagged, max(2, max_points // 2)),
        downsample_indices(fitted, max(2, max_points // 2)),
    ).astype(np.intp)
    traces = [
        go.Scatter(
            x=times[keep].tolist(),
            y=y[keep],
            mode="lines",
            name="observed",
            line={"color": _NORMAL, "width": 1.2},
            hovertemplate="%{x}<br>observed %{y:.4~g} s<extra></extra>",
        ),
        go.Scatter(
            x=times[keep].tolist(),
            y=fitted[keep],
            mode="lines",
            name="fitted (LAR)",
            line={"color": _FITTED, "width": 1.2},
            hovertemplate="%{x}<br>fitted %{y:.4~g} s<extra></extra>",
        ),
    ]
    for key, name, colour, symbol in (
        ("slow", "slow (anomalous)", _SLOW, "circle"),
        ("too_fast", "too fast (anomalous)", _FAST, "diamond"),
    ):
        rows = np.flatnonzero(verdict == key)
        if len(rows):
            traces.append(
                go.Scatter(
                    x=times[rows].tolist(),
                    y=y[rows],
                    mode="markers",
                    name=name,
                    marker={"color": colour, "size": 7, "symbol": symbol},
                    hovertemplate=f"%{{x}}<br>{_text(name)}: observed %{{y:.4~g}} s<extra></extra>",
                )
            )
    return go.Figure(
        traces,
        layout=_layout(
            title=_title("Summed response time per window: observed and fitted"),
            showlegend=True,
            legend=_LEGEND,
            xaxis={"type": "date", "title": {"text": "window start (UTC)"}},
            yaxis={"title": {"text": "s per window"}, "rangemode": "tozero"},
        ),
    )


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


def _percent(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.1f}%"


def _comparison(lar: MixFit, ols: MixFit) -> Table:
    rows = []
    for fit in (lar, ols):
        q = fit.error_quantiles()
        rows.append(
            (
                fit.method.upper(),
                _percent(fit.nae),
                _percent(q[0.5]),
                _percent(q[0.9]),
                _percent(q[0.99]),
            )
        )
    return Table(
        columns=("fit", "NAE", "|e|/y median", "90th pct", "99th pct"),
        rows=tuple(rows),
        caption="LAR and OLS on the same windows",
    )


def _anomalies(judgements: list[WindowJudgement]) -> Table:
    flagged = [j for j in judgements if j.verdict in ("slow", "too_fast")]
    farthest = sorted(flagged, key=lambda j: -abs(j.z))[:_TABLE_ROWS]
    shown = sorted(farthest, key=lambda j: j.index)
    caption = f"Anomalous windows ({len(flagged):,})"
    if len(flagged) > len(shown):
        caption += f": the {len(shown)} farthest off"
    return Table(
        columns=("window start (UTC)", "verdict", "observed (s)", "fitted (s)", "ratio", "z"),
        rows=tuple(
            (
                j.time.strftime("%Y-%m-%d %H:%M" if j.time.second == 0 else "%Y-%m-%d %H:%M:%S"),
                j.verdict.replace("_", " "),
                float(f"{j.observed:.4g}"),
                float(f"{j.fitted:.4g}"),
                round(j.ratio, 2),
                round(j.z, 1),
            )
            for j in shown
        ),
        caption=caption,
    )
