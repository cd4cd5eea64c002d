"""The report section of the workload family: Kelly's transaction-mix model drawn (DESIGN §2.2).

Three plots, as the paper shows them: observed against fitted summed response time per window
(log-log, with y = x), the distribution of ``|e|/y`` for LAR and OLS, and the two over time; and
two tables, LAR against OLS and the anomalous windows. Everything is drawn from a
:class:`~perfsleuth.workload.detector.MixAnalysis`: the fits are the ones the detector judged
with (and its comparison fit), so the NAE shown is the ``nae`` of the findings. Only the
drawing is downsampled.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from markupsafe import Markup

from perfsleuth.report.html import Section, Table
from perfsleuth.report.plots import LEGEND, downsample_indices, layout, plot_text, title

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

    from perfsleuth.workload.detector import MixAnalysis

__all__ = ["section"]

FloatArray = npt.NDArray[np.float64]

_NORMAL = "#2563eb"
_SLOW = "#dc2626"
_FAST = "#7c3aed"
_FITTED = "#f59e0b"
_GUIDE = "#6b7280"
_OLS = "#059669"
_TABLE_ROWS = 12  # anomalous windows listed (the farthest off); the rest are counted
_COLOURS = {"lar": _NORMAL, "ols": _OLS}


def section(analysis: MixAnalysis, *, max_points: int = 5000) -> Section:
    """The transaction-mix model of ``analysis``, for :func:`~perfsleuth.report.render_html`.

    The section holds the judged fit's summary (per-type service times, NAE, ``|e|/y``
    quantiles), a LAR/OLS comparison on the same windows, the anomalous windows, and three
    plots: y against ŷ (log-log), the ``|e|/y`` CDFs, and observed and fitted over time. It
    belongs to the ``"workload"`` family.

    Parameters
    ----------
    analysis
        What :meth:`~perfsleuth.workload.detector.MixAnomalyDetector.analyse` returned.
    max_points
        Plots draw at most about this many windows each (anomalous ones always).
    """
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, got {max_points}")
    detector = analysis.detector
    heading = f"Workload ({detector.entity}): response time explained by the transaction mix"
    fit = analysis.fit
    if fit is None:
        return Section(title=heading, intro="No windows: nothing to model.", family="workload")
    verdict = analysis.verdict
    times = np.datetime_as_string(analysis.start, unit="ms")
    flagged = analysis.flagged
    slow = int((verdict == "slow").sum())
    fast = int((verdict == "too_fast").sum())
    unjudged = int((verdict == "unjudged").sum())
    reference = len(analysis.reference)
    aside = (
        ", less the anomalous ones"
        if flagged.any() and not flagged[analysis.reference].any()
        else ""
    )
    intro = (
        f"{analysis.n_windows:,} windows, {len(analysis.types)} transaction types. Each window's "
        "summed response time is modelled as Σ (service time of type × transactions of that "
        "type), fitted by least absolute residuals (LAR) and, for comparison, least squares "
        f"(OLS) on {reference:,} windows (those with at least {detector.min_transactions} "
        f"transactions{aside}). The detector ({detector.name}, {fit.method.upper()}) finds "
        f"{slow} window{'' if slow == 1 else 's'} slower and {fast} faster than the mix explains"
        + (f"; {unjudged} had too few transactions to judge" if unjudged else "")
        + "."
    )
    return Section(
        title=heading,
        intro=intro,
        fragment=Markup(fit.summary().html),  # MixFit.summary escapes every name it shows
        figures=(
            _scatter(analysis, times, max_points),
            _cdf(analysis, max_points),
            _timeline(analysis, times, max_points),
        ),
        tables=(_comparison(analysis), _anomalies(analysis)),
        family="workload",
    )


# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------


def _finite(values: FloatArray) -> FloatArray:
    """``values`` with NaN as 0, to choose the rows to draw (a downsample needs finite values)."""
    return np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)


def _scatter(analysis: MixAnalysis, times: npt.NDArray[np.str_], max_points: int) -> Figure:
    import plotly.graph_objects as go

    y, fitted, verdict = analysis.observed, analysis.fitted, analysis.verdict
    flagged = analysis.flagged
    with np.errstate(invalid="ignore"):
        positive = (y > 0) & (fitted > 0)  # a log axis cannot place the others (nor NaN)
    hidden = int((~positive).sum())
    traces = []
    hover = "%{text}<br>observed %{y:.4~g} s<br>fitted %{x:.4~g} s<extra></extra>"
    groups = (
        ("normal", "windows", _NORMAL, 5, 0.45),
        ("slow", "slow (anomalous)", _SLOW, 8, 0.9),
        ("too_fast", "too fast (anomalous)", _FAST, 8, 0.9),
    )
    for key, name, colour, size, opacity in groups:
        rows = np.flatnonzero(positive & (verdict == key if key != "normal" else ~flagged))
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
    text = f"Observed vs fitted per window ({_method(analysis)}, log-log)"
    if hidden:
        text += f"; {hidden:,} with y or ŷ = 0 not shown"
    return go.Figure(
        traces,
        layout=layout(
            title=title(text),
            showlegend=True,
            legend=LEGEND,
            xaxis={**axis, "title": {"text": "fitted ŷ (s per window)"}},
            yaxis={**axis, "title": {"text": "observed y (s per window)"}},
        ),
    )


def _cdf(analysis: MixAnalysis, max_points: int) -> Figure:
    import plotly.graph_objects as go

    traces = []
    tail = 0.0
    for fit in (analysis.lar, analysis.ols):
        if fit is None:
            continue
        errors = np.sort(fit.abs_rel_error[np.isfinite(fit.abs_rel_error)]) * 100.0
        if not len(errors):
            continue
        share = np.arange(1, len(errors) + 1, dtype=np.float64) / len(errors)
        keep = downsample_indices(share, max_points)  # monotone: evenly spaced ranks
        method = fit.method.upper()
        tail = max(tail, float(np.quantile(errors, 0.99)))
        traces.append(
            go.Scatter(
                x=errors[keep],
                y=share[keep],
                mode="lines",
                line={"color": _COLOURS[fit.method], "width": 2, "shape": "hv"},
                name=f"{method} (NAE {_percent(fit.nae)})",
                hovertemplate=f"{method}: %{{y:.1%}} of windows within %{{x:.3~g}}%<extra></extra>",
            )
        )
    xaxis: dict[str, Any] = {"ticksuffix": "%", "rangemode": "tozero"}
    axis_title = "|e| / y per window"
    if tail > 0:
        # the worst windows would squash the body of the curves into the left edge
        xaxis["range"] = [0, 1.15 * tail]
        axis_title += " (axis cut near the 99th percentile: zoom out for the rest)"
    xaxis["title"] = {"text": axis_title}
    return go.Figure(
        traces,
        layout=layout(
            title=title("Relative error |e|/y, cumulative: LAR vs OLS"),
            showlegend=True,
            legend={
                **LEGEND,
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


def _timeline(analysis: MixAnalysis, times: npt.NDArray[np.str_], max_points: int) -> Figure:
    import plotly.graph_objects as go

    y, fitted, verdict = analysis.observed, analysis.fitted, analysis.verdict
    half = max(2, max_points // 2)
    keep = np.union1d(
        np.union1d(downsample_indices(y, half), np.flatnonzero(analysis.flagged)),
        downsample_indices(_finite(fitted), half),
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
            name=f"fitted ({_method(analysis)})",
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
                    hovertemplate=f"%{{x}}<br>{plot_text(name)}: observed %{{y:.4~g}} s"
                    "<extra></extra>",
                )
            )
    return go.Figure(
        traces,
        layout=layout(
            title=title("Summed response time per window: observed and fitted"),
            showlegend=True,
            legend=LEGEND,
            xaxis={"type": "date", "title": {"text": "window start (UTC)"}},
            yaxis={"title": {"text": "s per window"}, "rangemode": "tozero"},
        ),
    )


def _method(analysis: MixAnalysis) -> str:
    return "" if analysis.fit is None else analysis.fit.method.upper()


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


def _percent(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.1f}%"


def _comparison(analysis: MixAnalysis) -> Table:
    rows = []
    for fit in (analysis.lar, analysis.ols):
        if fit is None:
            continue
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
        caption=f"LAR and OLS on the same {len(analysis.reference):,} windows",
    )


def _anomalies(analysis: MixAnalysis) -> Table:
    flagged = np.flatnonzero(analysis.flagged)
    farthest = flagged[np.argsort(-np.abs(analysis.z[flagged]), kind="stable")[:_TABLE_ROWS]]
    shown = [analysis.window(int(i)) for i in np.sort(farthest)]
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
