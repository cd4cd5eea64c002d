from __future__ import annotations

import re

import numpy as np
import pandas as pd
from plotly.offline import get_plotlyjs

from perfsleuth.changepoints.detector import ChangePointDetector
from perfsleuth.changepoints.report import section
from perfsleuth.findings import Kind
from perfsleuth.report import Section, render_html

HOSTILE = "<script>alert(1)</script>"


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    times = pd.date_range("2024-05-01", periods=400, freq="min", tz="UTC")
    rows = []
    for entity, shift in ((HOSTILE, 10.0), ("quiet", 0.0)):
        values = rng.normal(50, 2, 400) + np.where(np.arange(400) >= 250, shift, 0.0)
        rows.append(
            pd.DataFrame(
                {"time": times, "entity": entity, "metric": "rt", "value": values, "unit": "ms"}
            )
        )
    return pd.concat(rows, ignore_index=True)


def _one_series(
    values: np.ndarray, *, freq: str, entity: str, metric: str, unit: str
) -> pd.DataFrame:
    """One series in the long metric contract, a reading every ``freq`` from 2024-05-01."""
    times = pd.date_range("2024-05-01", periods=len(values), freq=freq, tz="UTC")
    return pd.DataFrame(
        {"time": times, "entity": entity, "metric": metric, "value": values, "unit": unit}
    )


def changepoint_section(
    frame: pd.DataFrame, *, detector: ChangePointDetector | None = None
) -> Section:
    """The section drawn from the detector's analysis (the report never searches again)."""
    return section((detector or ChangePointDetector()).analyse(frame))


def test_section_plots_series_with_change_points_only() -> None:
    section = changepoint_section(_frame())
    assert len(section.figures) == 1  # the quiet series has none
    figure = section.figures[0]
    series, means = figure.data
    assert series.name == "series" and means.name == "segment mean"
    levels = [m for m in means.y if m is not None]
    assert levels[0] < levels[-1]
    assert len(section.tables[0].rows) == 1
    assert "2 series searched" in section.intro
    assert section.family == "changepoints"  # shown in that family's block


def test_section_respects_detector_parameters_and_escapes_names() -> None:
    strict = changepoint_section(_frame(), detector=ChangePointDetector(alpha=1e-12))
    assert len(strict.figures) <= 1
    html = render_html([], sections=[changepoint_section(_frame())])
    assert HOSTILE not in html
    assert 'data-plots-expected="1"' in html


def test_the_sections_table_and_evidence_show_a_long_name_by_its_ends() -> None:
    """A 5,000-character entity fills neither the series column nor the folded evidence; the
    page's text holds the whole name nowhere (the figures' data keep it, titles aside)."""
    long = "h" * 2_500 + "t" * 2_500
    frame = _frame().replace({"entity": {HOSTILE: long}})
    part = changepoint_section(frame)
    (row,) = part.tables[0].rows
    assert long in str(row[0])  # the section keeps the name; the page shortens it
    page = render_html([], sections=[part])
    shown = re.sub(r"<script.*?</script>", "", page, flags=re.S)  # no figures' data
    # the table's cell and the evidence's row ("name/rt": 5,003 characters)
    assert len(re.findall(r"\.\.\.\(5,00\d characters\)\.\.\.", shown)) >= 2
    assert long not in shown


def test_trend_and_cycle_are_drawn_as_the_model_and_named_in_the_intro() -> None:
    t = np.arange(600)
    values = (
        0.01 * t
        + np.where((t // 20) % 2 == 0, 0.0, 3.0)
        + np.where(t >= 400, 3.0, 0.0)
        + np.random.default_rng(1).standard_normal(600)
    )
    frame = _one_series(values, freq="min", entity="db", metric="rt", unit="ms")
    section = changepoint_section(frame)
    (figure,) = section.figures
    series, model = figure.data
    assert model.name.startswith("model")
    residual = np.asarray(series.y) - np.asarray(model.y)  # both in seconds after normalise
    assert float(np.std(residual)) < 1.2e-3  # the model follows trend and cycle (noise 1 ms)
    assert "a cycle of 40 observations" in section.intro and "a trend of" in section.intro
    assert any(row[1].startswith("2024-05-01 06:4") for row in section.tables[0].rows)  # t ≈ 400


def test_section_draws_the_analysis_without_searching_again(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    analysis = ChangePointDetector().analyse(_frame())

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report searched again")

    monkeypatch.setattr(ChangePointDetector, "search", forbidden)
    drawn = section(analysis)
    assert len(drawn.figures) == 1
    changes = [f for f in analysis.findings if f.kind is Kind.CHANGE_POINT]
    assert len(drawn.tables[0].rows) == len(changes)


def _long_skewed_frame(n: int = 16_000) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    level = np.where(np.arange(n) < n // 2, 20.0, 45.0)
    values = level * rng.lognormal(0.0, 0.6, n)
    values[rng.random(n) < 0.002] *= 30.0  # spikes
    return _one_series(values, freq="5min", entity="api", metric="latency", unit="ms")


def test_one_plot_per_series_with_slider_log_axis_spikes_and_folded_evidence() -> None:
    analysis = ChangePointDetector().analyse(_long_skewed_frame())
    drawn = section(analysis)
    (figure,) = drawn.figures  # one plot for the series, whatever its number of points
    assert figure.layout.xaxis.rangeslider.visible is True
    assert figure.layout.yaxis.type == "log"  # skewed, positive data
    names = [trace.name for trace in figure.data]
    assert "spike (kept in the data)" in names
    assert drawn.fragment is not None and "<details" in str(drawn.fragment)
    changes = [f for f in analysis.findings if f.kind is Kind.CHANGE_POINT]
    assert str(drawn.fragment).count("<tr>") == 1 + len(changes)


def test_a_16k_point_series_report_stays_under_3_mb() -> None:
    # what the series adds to a report: plotly.js (4.8 MB, inlined so that the file works
    # offline) is the same in every report and not counted
    analysis = ChangePointDetector().analyse(_long_skewed_frame())
    html = render_html(list(analysis.findings), sections=[section(analysis)])
    bundle = len(get_plotlyjs().encode())
    assert len(html.encode()) - bundle <= 3_000_000


def test_a_change_of_growth_is_tabled_as_growth_per_reading() -> None:
    t = np.arange(150, dtype=float)
    noise = np.random.default_rng(7).standard_normal(150)
    values = 100 + 0.5 * t + 1.5 * np.maximum(t - 90, 0) + noise
    frame = _one_series(values, freq="min", entity="db", metric="rows", unit="")
    drawn = changepoint_section(frame)
    (table,) = drawn.tables
    (row,) = table.rows
    assert table.columns[2:4] == ("before", "after")
    assert row[2].startswith("+0.") and row[2].endswith("/reading")
    assert row[3].startswith("+") and row[3].endswith("/reading")


def test_section_names_every_cycle_removed() -> None:
    # hourly readings: a daily cycle, weekends 2 σ lower and a level shift of 3 σ; both cycles
    # are removed in turn (stats/test_robust.py) and the intro names them
    t = np.arange(168 * 8)
    values = (
        50.0
        + np.sin(2 * np.pi * t / 24)
        - 2.0 * ((t // 24) % 7 >= 5)
        + np.where(t >= 806, 3.0, 0.0)
        + np.random.default_rng(2).standard_normal(t.size)
    )
    frame = _one_series(values, freq="h", entity="web", metric="rps", unit="1/s")
    section = changepoint_section(frame)
    assert "cycles of 24 and 168 observations" in section.intro
    assert len(section.tables[0].rows) == 1
