"""The report's family sections and the workload section (Kelly's transaction-mix model),
drawn from a MixAnalysis alone."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from markupsafe import Markup

from perfsleuth.datasets import transaction_scenario
from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.frames import coverage_of, workload_types
from perfsleuth.report import Section, Table, render_html, write_html
from perfsleuth.workload import FAMILY
from perfsleuth.workload.detector import MixAnalysis, MixAnomalyDetector
from perfsleuth.workload.report import section
from tests.support.chromium import body_tag, browse
from tests.test_report import XSS, XSS_ESCAPED, decode, figures, finding, metric_frame, scripts

DETECTOR = MixAnomalyDetector()
TITLE = "Workload (service): response time explained by the transaction mix"


@lru_cache(maxsize=4)
def _scenario(window_s: float = 300.0) -> pd.DataFrame:
    return transaction_scenario(0, window_s=window_s).frame


def scenario(window_s: float = 300.0) -> pd.DataFrame:
    return _scenario(window_s).copy()


@lru_cache(maxsize=4)
def analysed(window_s: float = 300.0) -> MixAnalysis:
    """The scenario analysed by the default detector (frozen, so shared between tests)."""
    return DETECTOR.analyse(scenario(window_s))


def section_of(frame: pd.DataFrame) -> Section:
    """The section of ``frame`` analysed by the default detector."""
    return section(DETECTOR.analyse(frame))


def strict_json(text: str) -> Any:
    """JSON as a browser's JSON.parse reads it: NaN and Infinity are errors."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def hostile(frame: pd.DataFrame) -> pd.DataFrame:
    """The scenario with its first type renamed to a script element."""
    first = workload_types(frame)[0]
    renamed = frame.rename(
        columns={f"n[{first}]": f"n[{XSS}]", f"rt_sum[{first}]": f"rt_sum[{XSS}]"}
    )
    renamed.attrs = {}  # the coverage names the old columns: normalise again
    return renamed


# ---------------------------------------------------------------------------- the workload section


def test_workload_section_has_three_plots_and_the_summary() -> None:
    frame = scenario()
    analysis = analysed()
    part = section(analysis)
    assert part.title == TITLE
    assert part.family == "workload" == FAMILY.name  # shown in that family's block
    assert FAMILY.render(analysis).intro == part.intro  # the descriptor draws the same section
    assert len(part.figures) == 3
    assert "864 windows, 7 transaction types" in part.intro
    assert "14 windows slower and 4 faster" in part.intro
    assert "Transaction-mix model (LAR, no intercept)" in str(part.fragment)
    assert isinstance(part.fragment, Markup)

    page = render_html([], sections=[part])
    assert 'data-plots-expected="3"' in page
    assert "No findings." in page
    assert "Transaction-mix model (LAR, no intercept)" in page
    assert "<td>report</td>" in page  # a per-type service time from the summary
    figs = figures(page)
    assert sorted(figs) == [f"section-1-figure-{k}" for k in (1, 2, 3)]
    for attrs, text in scripts(page):
        if attrs.get("type") == "application/json":
            strict_json(text)

    scatter, cdf, timeline = (figs[f"section-1-figure-{k}"] for k in (1, 2, 3))
    # (a) y vs ŷ, log-log, y = ŷ line, slow and too-fast windows in their own colours
    assert scatter["layout"]["xaxis"]["type"] == scatter["layout"]["yaxis"]["type"] == "log"
    assert scatter["layout"]["xaxis"]["range"] == scatter["layout"]["yaxis"]["range"]
    names = [t["name"] for t in scatter["data"]]
    assert names == ["y = ŷ", "windows", "slow (anomalous)", "too fast (anomalous)"]
    colours = {t["name"]: t["marker"]["color"] for t in scatter["data"][1:]}
    assert len(set(colours.values())) == 3
    judged = analysis.windows
    assert len(decode(scatter["data"][2]["y"])) == sum(j.verdict == "slow" for j in judged)
    assert len(decode(scatter["data"][3]["y"])) == sum(j.verdict == "too_fast" for j in judged)
    drawn = sum(len(decode(t["y"])) for t in scatter["data"][1:])
    assert drawn == len(frame)
    # (b) the |e|/y CDF of LAR and OLS, in percent, NAE in the legend
    lar, ols = cdf["data"]
    assert re.fullmatch(r"LAR \(NAE \d+\.\d%\)", lar["name"])
    assert re.fullmatch(r"OLS \(NAE \d+\.\d%\)", ols["name"])
    for trace in (lar, ols):
        x, share = decode(trace["x"]), decode(trace["y"])
        assert np.all(np.diff(x) >= 0) and np.all(np.diff(share) > 0)
        assert share[-1] == 1.0 and x.max() > 10  # percent, not a fraction
    assert cdf["layout"]["xaxis"]["ticksuffix"] == "%"
    # (c) observed and fitted over time, anomalous windows marked
    assert timeline["layout"]["xaxis"]["type"] == "date"
    assert [t["name"] for t in timeline["data"]] == [
        "observed",
        "fitted (LAR)",
        "slow (anomalous)",
        "too fast (anomalous)",
    ]
    assert timeline["data"][0]["x"][0] == "2024-05-01T00:00:00.000"
    # the tables: LAR vs OLS, and the anomalous windows (the farthest off)
    comparison, anomalies = part.tables
    assert [row[0] for row in comparison.rows] == ["LAR", "OLS"]
    assert anomalies.caption == "Anomalous windows (18): the 12 farthest off"
    assert len(anomalies.rows) == 12
    assert "2024-05-01 10:00" in page


def test_lar_nae_in_legend_matches_the_fit() -> None:
    from perfsleuth.workload.kernels import fit_mix_model

    frame = scenario()
    analysis = analysed()
    types = workload_types(frame)
    # the models are fitted on the windows the detector judged by (the anomalous ones set aside)
    rows = analysis.reference
    counts = frame[[f"n[{t}]" for t in types]].to_numpy()[rows]
    y = frame[[f"rt_sum[{t}]" for t in types]].to_numpy().sum(axis=1)[rows]
    cdf = section(analysis).figures[1]
    expected = [f"LAR (NAE {100 * fit_mix_model(counts, y).nae:.1f}%)"]
    expected.append(f"OLS (NAE {100 * fit_mix_model(counts, y, method='ols').nae:.1f}%)")
    assert [t.name for t in cdf.data] == expected


def test_the_sections_nae_is_the_findings_nae() -> None:
    # The report once showed "NAE 99.0%" while the finding said nae 0.263: one fit now.
    analysis = analysed()
    part = section(analysis)
    assert analysis.findings
    for found in analysis.findings:
        nae = found.evidence_dict()["nae"]
        assert isinstance(nae, float)
        shown = f"{100 * nae:.1f}%"
        assert part.figures[1].data[0].name == f"LAR (NAE {shown})"
        assert part.tables[0].rows[0][:2] == ("LAR", shown)
        assert f"<th>NAE = Σ|e|/Σy</th><td>{shown}</td>" in str(part.fragment)


def test_the_section_never_fits_or_judges_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from perfsleuth.workload import detector, kernels

    analysis = DETECTOR.analyse(scenario())

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report fitted a model")

    monkeypatch.setattr(kernels, "fit_mix_model", refuse)
    monkeypatch.setattr(detector, "fit_mix_model", refuse)
    monkeypatch.setattr(detector.MixAnomalyDetector, "analyse", refuse)
    part = section(analysis)
    assert len(part.figures) == 3 and part.tables[1].caption.startswith("Anomalous windows (18)")


def test_hostile_type_names_are_escaped() -> None:
    part = section_of(hostile(scenario()))
    page = render_html([], sections=[part], title="t")
    assert XSS not in page
    assert "<script>alert" not in page.lower()
    assert XSS_ESCAPED in page  # in the summary's service-time table
    for attrs, text in scripts(page):
        if attrs.get("type") == "application/json":
            assert "</" not in text and "<!--" not in text
            strict_json(text)


def test_section_text_is_escaped_and_only_markup_is_trusted() -> None:
    part = Section(
        title=f"title {XSS}",
        intro=f"intro {XSS}",
        fragment=f"fragment {XSS}",  # a str, not Markup: escaped
        tables=(Table(columns=(f"col {XSS}",), rows=((XSS,), (1.5,)), caption=f"cap {XSS}"),),
    )
    page = render_html([], sections=[part])
    assert XSS not in page
    assert page.count(XSS_ESCAPED) == 6
    trusted = render_html([], sections=[Section("t", fragment=Markup("<em>fit</em>"))])
    assert "<em>fit</em>" in trusted


def test_zero_response_windows() -> None:
    frame = scenario()
    types = workload_types(frame)
    quiet = [10, 11, 12]  # no transactions at all
    dead = [400, 401]  # transactions, but no response time (all aborted at once)
    for t in types:
        frame.loc[quiet, f"n[{t}]"] = 0.0
        frame.loc[quiet + dead, f"rt_sum[{t}]"] = 0.0
    frame.attrs = {}
    part = section_of(frame)
    page = render_html([], sections=[part])
    figs = figures(page)
    for attrs, text in scripts(page):
        if attrs.get("type") == "application/json":
            strict_json(text)
    scatter, cdf, timeline = (figs[f"section-1-figure-{k}"] for k in (1, 2, 3))
    assert "5 with y or ŷ = 0 not shown" in scatter["layout"]["title"]["text"]
    points = np.concatenate([decode(t["y"]) for t in scatter["data"][1:]])
    assert len(points) == len(frame) - 5 and np.all(points > 0)
    assert all(v > 0 for t in scatter["data"] for v in decode(t["x"]))
    for trace in cdf["data"]:
        x = decode(trace["x"])
        assert np.all(np.isfinite(x)) and decode(trace["y"])[-1] == 1.0
    observed = decode(timeline["data"][0]["y"])
    assert np.all(np.isfinite(observed)) and (observed == 0).sum() >= 1
    fast = [t for t in timeline["data"] if t["name"] == "too fast (anomalous)"]
    assert fast and {"2024-05-02T09:20:00.000", "2024-05-02T09:25:00.000"} <= set(fast[0]["x"])


def test_long_frames_are_downsampled_but_fitted_on_every_window() -> None:
    frame = scenario(60.0)  # 4,320 one-minute windows
    analysis = DETECTOR.analyse(frame)
    part = section(analysis, max_points=400)
    assert "4,320 windows" in part.intro
    # fitted on every window it judged normal, not on a downsample
    fit = analysis.fit
    assert fit is not None
    assert fit.n_windows == len(analysis.reference) == int((analysis.verdict == "normal").sum())
    assert fit.n_windows > 4000 and f"<td>{fit.n_windows:,}</td>" in str(part.fragment)
    scatter, cdf, timeline = part.figures
    assert sum(len(t.y) for t in scatter.data[1:]) <= 400 + 100
    assert all(len(t.x) <= 400 for t in cdf.data)
    assert len(timeline.data[0].x) <= 400 + 100
    slow = [t for t in timeline.data if t.name == "slow (anomalous)"]
    judged = analysis.windows
    assert slow and len(slow[0].x) == sum(j.verdict == "slow" for j in judged)


def test_detector_and_entity_are_used() -> None:
    frame = scenario()
    lenient = MixAnomalyDetector(threshold=1000.0, entity="Checkout service")
    part = section(lenient.analyse(frame))
    assert (
        part.title == "Workload (Checkout service): response time explained by the transaction mix"
    )
    assert "finds 0 windows slower and 0 faster" in part.intro
    assert [t.name for t in part.figures[0].data] == ["y = ŷ", "windows"]
    assert part.tables[1].rows == ()
    assert '<td class="none" colspan="6">none</td>' in render_html([], sections=[part])


def test_too_little_data() -> None:
    with pytest.raises(NotEnoughDataError):
        DETECTOR.analyse(scenario().iloc[:5])  # the analysis refuses; nothing to draw
    with pytest.raises(ValueError, match="max_points"):
        section(analysed(), max_points=1)
    empty = section(DETECTOR.analyse(scenario().iloc[0:0]))
    assert empty.title == TITLE and empty.family == "workload"
    assert empty.intro == "No windows: nothing to model."
    assert empty.figures == () and empty.tables == ()


def test_unsorted_frames_are_normalised_like_the_detector_does() -> None:
    from perfsleuth.frames import normalise

    shuffled = scenario().sample(frac=1.0, random_state=3)
    shuffled.attrs = {}
    with pytest.raises(DataError, match="time goes backwards"):
        DETECTOR.analyse(shuffled)
    a = section_of(scenario()).figures[2].data[0].y
    b = section_of(normalise(shuffled, "workload", disorder="sort")).figures[2].data[0].y
    assert np.array_equal(a, b)


# ---------------------------------------------------------------------------- sections in general


def test_sections_go_after_findings_and_before_coverage_and_count_as_plots() -> None:
    from perfsleuth.frames import normalise

    cov = coverage_of(normalise(metric_frame(10), "metric", source="m.csv"))
    assert cov is not None
    page = render_html(
        [finding()],
        series=metric_frame(100),
        coverage=[cov],
        sections=[section(analysed()), Section("Empty family", intro="nothing here")],
    )
    assert 'data-plots-expected="4"' in page
    at = [
        page.index(s)
        for s in ('id="findings"', 'id="section-1"', 'id="section-2"', 'id="coverage"')
    ]
    assert at == sorted(at)
    assert "nothing here" in page


def test_section_and_table_validation() -> None:
    with pytest.raises(ValueError, match="row 2 has 1 cell"):
        Table(columns=("a", "b"), rows=(("x", 1), ("y",)))
    with pytest.raises(TypeError, match="Section"):
        render_html([], sections=["not a section"])  # type: ignore[list-item]
    part = Section("t", figures=[], tables=[Table(("a",), [("x",)])])  # type: ignore[arg-type]
    assert part.figures == () and part.tables[0].rows == (("x",),)


def test_write_html_with_sections(tmp_path: Path) -> None:
    target = write_html(tmp_path / "r.html", [], sections=[section(analysed())])
    assert 'data-plots-expected="3"' in target.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------- in a browser


@pytest.mark.integration
def test_workload_section_renders_in_chromium(tmp_path: Path) -> None:
    frame = hostile(scenario())
    analysis = DETECTOR.analyse(frame)
    findings = list(analysis.findings)
    assert findings
    page = write_html(
        tmp_path / "report.html",
        findings,
        sections=[section(analysis)],
        title="perfsleuth demo",
    )
    dom, console = browse(page, tmp_path)
    body = body_tag(dom)
    expected = len(findings) + 3  # one evidence chart per finding, three workload plots
    assert f'data-plots-expected="{expected}"' in body
    assert f'data-plots="{expected}"' in body, f"not every figure was drawn: {body}"
    assert "data-errors" not in body and 'id="ps-error"' not in dom
    drawn = dom.split('id="section-1"', 1)[1]
    assert drawn.count('class="main-svg"') >= 3
    assert "LAR (NAE " in drawn and "OLS (NAE " in drawn  # legend text drawn
    errors = [line for line in console if re.search(r"uncaught|error", line, re.IGNORECASE)]
    assert not errors, "\n".join(errors)
    assert "<script>alert(1)</script>" not in dom
