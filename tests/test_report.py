"""The report package: HTML page, console table and text formats."""

from __future__ import annotations

import base64
import html
import json
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from plotly.offline import get_plotlyjs

from perfsleuth.errors import DataError
from perfsleuth.findings import Evidence, Finding, Kind, Severity, read_jsonl
from perfsleuth.frames import Coverage, Gap, coverage_of, normalise
from perfsleuth.report import findings_table, render_findings, render_html, write_html
from perfsleuth.report.console import summary_counts
from perfsleuth.report.html import downsample_indices, script_json
from tests.support.chromium import body_tag, browse

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
XSS = "<script>alert(1)</script>"
XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def finding(
    *,
    kind: Kind = Kind.CHANGE_POINT,
    entity: str = "web-1",
    metric: str = "latency",
    start: datetime = T0,
    end: datetime | None = None,
    severity: Severity = Severity.WARNING,
    explanation: str = "Latency rose from 0.2 s to 0.5 s.",
    evidence: tuple[Evidence, ...] = (Evidence("before", 0.2, "s"), Evidence("after", 0.5, "s")),
    detector: str = "test",
) -> Finding:
    return Finding(
        kind=kind,
        entity=entity,
        metric=metric,
        start=start,
        end=start if end is None else end,
        severity=severity,
        explanation=explanation,
        evidence=evidence,
        detector=detector,
    )


def metric_frame(
    n: int,
    *,
    entity: str = "web-1",
    metric: str = "latency",
    start: datetime = T0 - timedelta(hours=1),
) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "time": pd.date_range(start, periods=n, freq="1s"),
            "entity": entity,
            "metric": metric,
            "value": 0.2 + 0.01 * rng.standard_normal(n),
            "unit": "s",
        }
    )


class _Scripts(HTMLParser):
    """Collects <script> elements the way a browser splits them (raw text up to '</script')."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._attrs: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._attrs, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._attrs is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._attrs is not None:
            self.scripts.append((self._attrs, "".join(self._text)))
            self._attrs = None


def scripts(page: str) -> list[tuple[dict[str, str | None], str]]:
    parser = _Scripts()
    parser.feed(page)
    parser.close()
    return parser.scripts


def figures(page: str) -> dict[str, dict[str, Any]]:
    """The figure JSON blocks of a page, by element id."""
    return {
        str(attrs["id"]): json.loads(text)
        for attrs, text in scripts(page)
        if attrs.get("type") == "application/json"
    }


def decode(array: Any) -> np.ndarray:
    """A plotly JSON array: a list, or {"dtype", "bdata"} base64 typed array."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"]))
    return np.asarray(array)


# ---------------------------------------------------------------------------- self-contained


def test_plotlyjs_inlined_once_and_nothing_external() -> None:
    page = render_html(
        [finding(), finding(kind=Kind.CPU_LOOP, entity="db-1", metric="cpu")],
        series=metric_frame(100),
    )
    bundle = get_plotlyjs()
    assert page.count(bundle[:500]) == 1
    assert page.count(bundle[-500:]) == 1
    head, _, body = page.partition("</head>")
    assert bundle[:500] in head
    assert not re.search(r"<script\b[^>]*\bsrc\s*=", page, re.IGNORECASE)
    assert not re.search(r"@import|url\(\s*['\"]?\s*(?:https?:)?//", page, re.IGNORECASE)
    # the page's own markup, without script bodies (plotly.js holds links in strings)
    markup = re.sub(r"(<script\b[^>]*>).*?(</script>)", r"\1\2", page, flags=re.S | re.I)
    assert not re.search(r"<(?:link|img|iframe|object|embed)\b", markup, re.IGNORECASE)
    assert not re.search(r"(?:src|href)\s*=\s*['\"]?\s*(?:https?:)?//", markup, re.IGNORECASE)
    # one error hook and plotly.js in the head, the timeline (two families), one figure block
    # per finding, one drawing script
    kinds = [attrs.get("type") for attrs, _ in scripts(page)]
    assert kinds == [None, None, *["application/json"] * 3, None]
    assert 'data-plots-expected="3"' in body


def test_zero_findings() -> None:
    page = render_html([], generated=T0)
    assert "No findings." in page
    assert 'data-plots-expected="0"' in page
    assert figures(page) == {}
    assert "2024-05-01 12:00:00 UTC" in page
    assert page.count(get_plotlyjs()[:500]) == 1


# ---------------------------------------------------------------------------- escaping


def test_data_strings_are_escaped() -> None:
    planted = finding(
        kind=Kind.CPU_LOOP,
        entity=f"node{XSS}",
        metric=f"cpu{XSS}",
        explanation=f"pid 7 {XSS} spins.",
        evidence=(Evidence(f"cpu{XSS}", 1.0, f"cores{XSS}"), Evidence("name", XSS)),
        detector=f"det{XSS}",
    )
    gap = Gap(
        f"series{XSS}", pd.Timestamp("2024-05-01", tz="UTC"), pd.Timestamp("2024-05-02", tz="UTC")
    )
    cov = Coverage(
        contract="metric",
        source=f"/data/{XSS}.csv",
        rows=10,
        series=1,
        start=pd.Timestamp("2024-05-01", tz="UTC"),
        end=pd.Timestamp("2024-05-03", tz="UTC"),
        gaps=(gap,),
    )
    page = render_html([planted], coverage=[cov], title=f"report {XSS}")
    assert XSS not in page
    assert "<script>alert" not in page.lower()
    # title x2, entity x2, metric x2, explanation x2, evidence name, unit, value, detector,
    # coverage source, gap series
    assert page.count(XSS_ESCAPED) >= 14
    # the evidence bar chart carries the names for plotly.js, escaped for its HTML-like text
    (fig,) = figures(page).values()
    assert fig["data"][0]["type"] == "bar"
    assert fig["data"][0]["y"] == [html.escape(f"cpu{XSS} (cores{XSS})", quote=False)]


def test_script_end_tags_cannot_leave_the_json_blocks() -> None:
    breakout = "x</script><script>alert(1)</script><!--"
    frame = metric_frame(50, entity=breakout, metric=breakout)
    page = render_html(
        [finding(entity=breakout, metric=breakout, start=T0 - timedelta(minutes=59))],
        series=frame,
    )
    found = scripts(page)
    assert len(found) == 4  # error hook, plotly.js, the one figure, the drawing script
    (fig,) = figures(page).values()
    assert fig["layout"]["yaxis"]["title"]["text"] == html.escape(f"{breakout} (s)", quote=False)
    for attrs, text in found:
        if attrs.get("type") == "application/json":
            assert "</" not in text and "<!--" not in text


def test_script_json_escapes_what_could_end_the_element() -> None:
    data = {"name": "</script><!-- a & b > c \u2028", "n": [1, 2]}
    safe = script_json(json.dumps(data, ensure_ascii=False))
    assert not set("<>&") & set(safe)
    assert "\u2028" not in safe
    assert json.loads(safe) == data


# ---------------------------------------------------------------------------- plots


def test_change_point_with_series_gets_a_line_and_marker() -> None:
    cp = finding(start=T0 - timedelta(minutes=30))
    page = render_html([cp], series=metric_frame(3600))
    fig = figures(page)["figure-1"]
    trace = fig["data"][0]
    assert trace["type"] == "scatter"
    # a close-up: a tenth of the series either side of the finding, not the whole series
    assert len(trace["x"]) == 721 == len(decode(trace["y"]))
    assert (trace["x"][0], trace["x"][-1]) == ("2024-05-01T11:24:00.000", "2024-05-01T11:36:00.000")
    assert "readings 1,441–2,161 of 3,600" in page
    (shape,) = fig["layout"]["shapes"]
    assert shape["type"] == "line"
    assert shape["x0"] == shape["x1"] == "2024-05-01T11:30:00.000"
    assert fig["layout"]["yaxis"]["title"]["text"] == "latency (s)"
    assert fig["layout"]["xaxis"]["type"] == "date"
    assert 'class="plot plot-series"' in page


def test_interval_finding_gets_a_shaded_span() -> None:
    ramp = finding(
        kind=Kind.MEMORY_RAMP, start=T0 - timedelta(minutes=40), end=T0 - timedelta(minutes=10)
    )
    fig = figures(render_html([ramp], series=metric_frame(3600)))["figure-1"]
    (shape,) = fig["layout"]["shapes"]
    assert shape["type"] == "rect"
    assert (shape["x0"], shape["x1"]) == ("2024-05-01T11:20:00.000", "2024-05-01T11:50:00.000")


def test_finding_without_series_gets_its_numeric_evidence() -> None:
    loop = finding(
        kind=Kind.CPU_LOOP,
        entity="db-1",
        metric="cpu",
        evidence=(
            Evidence("cpu", 0.98, "cores"),
            Evidence("hours", 9, "h"),
            Evidence("name", "java"),
            Evidence("saturated", False),
            Evidence("ratio", float("nan")),
        ),
    )
    page = render_html([loop], series=metric_frame(10))  # the frame holds another series only
    trace = figures(page)["figure-1"]["data"][0]
    assert trace["type"] == "bar"
    assert trace["orientation"] == "h"
    assert trace["y"] == ["cpu (cores)", "hours (h)"]
    assert decode(trace["x"]).tolist() == [0.98, 9.0]
    assert 'class="plot plot-evidence"' in page
    assert "java" in page  # non-numeric evidence still listed in the table


def test_finding_with_nothing_to_plot() -> None:
    bare = finding(evidence=(Evidence("name", "java"),))
    page = render_html([bare])
    assert figures(page) == {}
    assert "Nothing to plot" in page
    assert 'data-plots-expected="0"' in page


def test_series_from_a_callable() -> None:
    asked: list[tuple[str, str]] = []
    frame = metric_frame(500)
    shuffled = frame.sample(frac=1.0, random_state=1)[["time", "value"]]
    shuffled["time"] = shuffled["time"].dt.tz_localize(None)  # naive times are read as UTC

    def lookup(entity: str, metric: str) -> pd.DataFrame | None:
        asked.append((entity, metric))
        if entity == "web-1":
            return shuffled
        return pd.DataFrame() if entity == "web-2" else None

    found = [finding(), finding(entity="web-1"), finding(entity="web-2"), finding(entity="web-3")]
    page = render_html(found, series=lookup)
    figs = figures(page)
    assert [f["data"][0]["type"] for f in figs.values()] == ["scatter", "scatter", "bar", "bar"]
    assert sorted(set(asked)) == [("web-1", "latency"), ("web-2", "latency"), ("web-3", "latency")]
    assert len(asked) == 3  # prepared once per series
    x = figs["figure-1"]["data"][0]["x"]
    assert x == sorted(x)
    # the finding comes after the data: its close-up is the series' last 100 readings
    assert (x[0], x[-1]) == ("2024-05-01T11:06:40.000", "2024-05-01T11:08:19.000")


def test_long_series_is_downsampled_keeping_spikes() -> None:
    frame = metric_frame(10_000)
    frame.loc[3000, "value"] = 50.0
    frame.loc[4200, "value"] = -50.0
    # the finding at reading 3,600; its card: readings 2,600–4,600, with a fifth of max_points
    page = render_html([finding()], series=frame, max_points=2500)
    trace = figures(page)["figure-1"]["data"][0]
    y = decode(trace["y"])
    assert len(y) <= 500 and len(trace["x"]) == len(y)
    assert y.max() == 50.0 and y.min() == -50.0
    assert y[0] == frame["value"].iat[2600] and y[-1] == frame["value"].iat[4600]
    assert trace["x"][0] == "2024-05-01T11:43:20.000"
    assert trace["x"][-1] == "2024-05-01T12:16:40.000"
    assert f"readings 2,601–4,601 of 10,000, {len(y)} drawn" in page


def test_each_finding_of_a_long_series_gets_its_own_close_up() -> None:
    """Not the whole series once per finding (44 near-identical plots made a 12 MB page)."""
    frame = metric_frame(20_000)
    times = frame["time"].iloc[::1000].iloc[1:]
    found = [finding(start=t.to_pydatetime()) for t in times]
    figs = figures(render_html(found, series=frame))
    assert len(figs) == len(found) == 19
    windows = set()
    for number, when in enumerate(times, 1):
        fig = figs[f"figure-{number}"]
        x = fig["data"][0]["x"]
        assert len(x) <= 1000  # a fifth of the default 5,000 points
        (shape,) = fig["layout"]["shapes"]
        assert x[0] < shape["x0"] < x[-1]
        assert pd.Timestamp(x[-1]) - pd.Timestamp(x[0]) <= pd.Timedelta(seconds=4000)
        assert shape["x0"] == when.strftime("%Y-%m-%dT%H:%M:%S.000")
        windows.add((x[0], x[-1]))
    assert len(windows) == len(found)


@pytest.mark.parametrize("max_points", [2, 3, 4, 5, 10, 101, 1000])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 100, 1001, 5000])
def test_downsample_indices(n: int, max_points: int) -> None:
    values = np.random.default_rng(n + max_points).standard_normal(n)
    keep = downsample_indices(values, max_points)
    assert np.all(np.diff(keep) > 0)
    if n <= max_points:
        assert keep.tolist() == list(range(n))
        return
    assert keep[0] == 0 and keep[-1] == n - 1
    assert len(keep) <= max_points
    if max_points >= 4:
        assert int(np.argmax(values)) in keep and int(np.argmin(values)) in keep
        assert len(keep) >= max_points - 2  # buckets are used, not wasted


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_points"):
        render_html([], max_points=1)
    with pytest.raises(ValueError, match="timezone-aware"):
        render_html([], generated=datetime(2024, 5, 1))  # naive on purpose
    with pytest.raises(DataError, match="'value'"):
        render_html([finding()], series=metric_frame(5).drop(columns="value"))
    with pytest.raises(DataError, match="expected a DataFrame"):
        render_html([finding()], series=lambda e, m: [1, 2])  # type: ignore[arg-type,return-value]


# ---------------------------------------------------------------------------- layout


def test_summary_order_counts_and_coverage() -> None:
    found = [
        finding(severity=Severity.INFO, entity="late-info", start=T0 + timedelta(hours=2)),
        finding(severity=Severity.CRITICAL, entity="crit", start=T0 + timedelta(hours=3)),
        finding(severity=Severity.INFO, entity="early-info", start=T0),
    ]
    raw = metric_frame(60)
    raw = pd.concat([raw.iloc[:20], raw.iloc[40:]])  # a 20 s hole
    frame = normalise(raw, "metric", source="latency.csv")
    page = render_html(found, coverage=[coverage_of(frame)], generated=T0)
    assert page.index("crit") < page.index("early-info") < page.index("late-info")
    assert "3 findings:" in page
    assert '<span class="badge sev-critical">1 critical</span>' in page
    assert '<span class="badge sev-info">2 info</span>' in page
    assert "warning</span>" not in page.split("<section", 1)[0]
    coverage = page.split('id="coverage"', 1)[1]
    assert "latency.csv" in coverage
    assert "web-1/latency: 2024-05-01T11:00:19Z → 2024-05-01T11:00:40Z (21s)" in coverage


def test_write_html(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    written = write_html(target, [finding()], series=metric_frame(20), generated=T0)
    assert written == target
    assert written.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


# ---------------------------------------------------------------------------- text formats


def three_findings() -> list[Finding]:
    return [
        finding(),
        finding(
            kind=Kind.CPU_LOOP,
            entity="node-[bold]7[/bold]",
            metric="cpu",
            severity=Severity.CRITICAL,
            end=T0 + timedelta(hours=9, microseconds=1500),
            evidence=(Evidence("cpu", 1.01, "cores"), Evidence("ratio", float("inf"))),
        ),
        finding(kind=Kind.HUM, entity="db-2", metric="cpu", severity=Severity.INFO),
    ]


def test_json_format() -> None:
    found = three_findings()
    parsed = json.loads(render_findings(found, "json"))
    assert parsed == [f.to_dict() for f in found]
    assert render_findings([], "json") == "[]\n"


def test_jsonl_format_round_trips() -> None:
    found = three_findings()
    text = render_findings(found, "jsonl")
    assert len(text.splitlines()) == 3
    assert read_jsonl(text) == found
    assert render_findings([], "jsonl") == ""


def test_table_format() -> None:
    text = render_findings(three_findings(), "table", width=200)
    assert "\x1b" not in text
    for name in ("web-1", "node-[bold]7[/bold]", "db-2"):
        assert name in text
    assert "2024-05-01T21:00:00Z" in text  # UTC, no microseconds
    assert text.index("critical") < text.index("warning") < text.index("info")
    narrow = render_findings(three_findings(), "table", width=80)
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert render_findings([], "table") == "No findings.\n"
    with pytest.raises(ValueError, match="unknown format"):
        render_findings([], "yaml")  # type: ignore[arg-type]


def test_table_shows_each_name_on_one_line_and_a_long_one_by_its_ends() -> None:
    """A name from the data cannot start a line of its own in the table (one that reads like
    an error) nor bury the rest under 5,000 characters; JSON keeps it whole."""
    forged = "web\nperfsleuth: error: forged"
    long = "h" * 2_500 + "t" * 2_500
    findings = [
        finding(entity=forged, metric="lat\tency", explanation=f"{forged}/lat\tency: rose"),
        finding(entity=long, explanation=f"{long}/latency: mean rose from 1 to 2"),
    ]
    text = render_findings(findings, "table", width=120)
    assert not any(line.lstrip("│ ").startswith("perfsleuth:") for line in text.splitlines())
    assert text.count("web\\nperfsleuth: error:") == 2  # entity column and explanation
    assert "lat\\tency" in text and "\t" not in text
    assert len(text.splitlines()) < 25
    wide = render_findings(findings, "table", width=400)
    assert wide.count("...(5,000 characters)...") == 2 and "hhhhhh" in wide and "tttttt" in wide
    lines = render_findings(findings, "jsonl").splitlines()
    assert sorted(json.loads(line)["entity"] for line in lines) == sorted([long, forged])


def test_the_page_shows_a_long_name_by_its_ends_and_wraps_it() -> None:
    long = "h" * 2_500 + "t" * 2_500
    page = render_html([finding(entity=long, explanation=f"{long}/latency: mean rose")])
    # the finding's heading, its summary row and its explanation (twice): by the ends
    assert page.count("...(5,000 characters)...") >= 4
    assert long not in page  # (the JSON and JSONL formats keep it whole)
    # break-word, not anywhere: that would break table headers inside words too
    assert re.search(r"main \{[^}]*overflow-wrap: break-word", page)


def test_findings_table_and_counts() -> None:
    table = findings_table(three_findings(), title="today")
    assert table.row_count == 3
    assert table.title == "today"
    assert summary_counts(three_findings()) == {
        "critical": 1,
        "error": 0,
        "warning": 1,
        "info": 1,
        "debug": 0,
    }


# ---------------------------------------------------------------------------- in a browser


@pytest.mark.integration
def test_report_renders_in_chromium(tmp_path: Path) -> None:
    series = pd.concat([metric_frame(10_000), metric_frame(300, entity=XSS, metric=XSS)])
    found = [
        *three_findings(),
        finding(kind=Kind.MEMORY_RAMP, start=T0 - timedelta(minutes=40), end=T0),
        finding(entity=XSS, metric=XSS, explanation=XSS, start=T0 - timedelta(minutes=58)),
    ]
    page = write_html(tmp_path / "report.html", found, series=series)
    dom, console = browse(page, tmp_path)
    body = body_tag(dom)
    assert 'data-plots-expected="6"' in body  # five findings and the timeline (two families)
    assert 'data-plots="6"' in body, f"not every figure was drawn: {body}"
    assert "data-errors" not in body and 'id="ps-error"' not in dom
    assert dom.count('class="main-svg"') >= 6  # plotly drew SVG for each figure
    errors = [line for line in console if re.search(r"uncaught|error", line, re.IGNORECASE)]
    assert not errors, "\n".join(errors)
    assert "<script>alert(1)</script>" not in dom


@pytest.mark.integration
def test_render_failures_show_a_banner_in_chromium(tmp_path: Path) -> None:
    page = render_html([finding(), finding(entity="db-1")], series=metric_frame(50))
    broken = page.replace('data-target="plot-1">{', 'data-target="plot-1">{oops', 1)
    assert broken != page
    path = tmp_path / "broken.html"
    path.write_text(broken, encoding="utf-8")
    dom, _ = browse(path, tmp_path)
    body = body_tag(dom)
    assert 'data-plots="1"' in body and 'data-errors="1"' in body
    assert 'id="ps-error"' in dom and "figure-1: SyntaxError" in dom


# ---------------------------------------------------------------------------- page structure


def _families_findings() -> list[Finding]:
    """One finding per family, severities mixed, times spread."""
    return [
        finding(severity=Severity.INFO, entity="cp-info", detector="changepoint"),
        finding(
            kind=Kind.WORKLOAD_ANOMALY,
            entity="shop",
            severity=Severity.ERROR,
            start=T0 + timedelta(hours=5),
            end=T0 + timedelta(hours=6),
            detector="workload_mix",
        ),
        finding(
            kind=Kind.APPLICATION_CHANGE,
            entity="books",
            severity=Severity.CRITICAL,
            start=T0 + timedelta(hours=9),
            detector="workload_segments",
        ),
        finding(
            kind=Kind.CPU_LOOP,
            entity="node1/java[42]",
            severity=Severity.WARNING,
            start=T0 + timedelta(hours=1),
            end=T0 + timedelta(hours=12),
            detector="cpu_loop",
        ),
        finding(
            kind=Kind.BOTTLENECK,
            entity="db-1",
            severity=Severity.ERROR,
            start=T0 + timedelta(hours=2),
            detector="bottleneck",
        ),
    ]


def _summary_rows(page: str) -> list[str]:
    summary = page.split('id="summary"', 1)[1].split("</section>", 1)[0]
    return re.findall(r"<tr>\s*<td class=\"num\">.*?</tr>", summary, flags=re.S)


def test_summary_says_what_happened_and_what_to_do_most_severe_first() -> None:
    page = render_html(_families_findings(), generated=T0)
    rows = _summary_rows(page)
    assert len(rows) == 5
    severities = [re.search(r"badge sev-(\w+)", row).group(1) for row in rows]  # type: ignore[union-attr]
    assert severities == ["critical", "error", "error", "warning", "info"]
    # one line each with its family and entity; equal severities by start time
    expected = [
        ("Workload segments", "books"),
        ("Bottlenecks and upgrades", "db-1"),
        ("Transaction mix", "shop"),
        ("Process pathologies", "node1/java[42]"),
        ("Change points", "cp-info"),
    ]
    for row, (family, entity) in zip(rows, expected, strict=True):
        assert f">{family}</a>" in row and f'<td class="name">{entity}<' in row
    assert "Review the release or configuration change" in rows[0]  # what to do first
    assert page.index('id="summary"') < page.index('id="timeline"') < page.index('id="findings"')


def test_summary_folds_the_rest_after_ten() -> None:
    found = [finding(entity=f"host-{i:02d}", start=T0 + timedelta(minutes=i)) for i in range(14)]
    page = render_html(found)
    assert len(_summary_rows(page)) == 14
    shown, folded = page.split('id="summary"', 1)[1].split('<details class="more">', 1)
    assert shown.count('<td class="num">') == 10
    assert "4 more findings" in folded


def test_timeline_shows_every_family_and_links_to_the_findings() -> None:
    page = render_html(_families_findings())
    fig = figures(page)["timeline-figure"]
    markers = [t for t in fig["data"] if t["mode"] == "markers"]
    rows = {y for t in markers for y in t["y"]}
    assert rows == {
        "Change points",
        "Transaction mix",
        "Workload segments",
        "Process pathologies",
        "Bottlenecks and upgrades",
    }
    assert fig["layout"]["yaxis"]["categoryarray"][-1] == "Change points"  # first family on top
    anchors = sorted(a for t in markers for a in t["customdata"])
    assert anchors == [f"finding-{n}" for n in range(1, 6)]
    assert all(f'id="{a}"' in page for a in anchors)
    spans = [t for t in fig["data"] if t["mode"] == "lines"]
    assert {y for t in spans for y in t["y"] if y} == {"Transaction mix", "Process pathologies"}
    assert [t["name"] for t in markers] == ["info", "warning", "error", "critical"]
    # hover text is escaped for plotly.js
    planted = finding(entity=XSS, detector="bottleneck", kind=Kind.BOTTLENECK)
    fig = figures(render_html([*_families_findings(), planted]))["timeline-figure"]
    text = " ".join(s for t in fig["data"] if t["mode"] == "markers" for s in t["text"])
    assert XSS not in text and html.escape(XSS, quote=False) in text


def test_no_timeline_for_one_family() -> None:
    page = render_html([finding(), finding(entity="web-2")], series=metric_frame(50))
    assert 'id="timeline"' not in page
    assert "timeline-figure" not in figures(page)


def test_family_sections_open_their_block_before_its_findings() -> None:
    from perfsleuth.report import Section

    found = _families_findings()
    parts = [
        Section("Loose part", intro="no family"),
        Section("Process plots", intro="graphs", family="processes"),
        Section("Quiet family", intro="no findings here", family="changepoints"),
    ]
    page = render_html(found[1:], sections=parts)  # no change-point finding
    blocks = re.findall(r'<section class="family-block" id="family-(\w+)">', page)
    assert blocks == [
        "changepoints",
        "workload",
        "segments",
        "processes",
        "bottleneck",
    ]
    process = page.split('id="family-processes"', 1)[1].split('class="family-block"', 1)[0]
    assert process.index("Process plots") < process.index("node1/java[42]")
    quiet = page.split('id="family-changepoints"', 1)[1].split('class="family-block"', 1)[0]
    assert "No findings in this family." in quiet
    # a section without a family comes after the blocks
    assert page.index('id="family-bottleneck"') < page.index("Loose part")
    with pytest.raises(ValueError, match="unknown family 'gpu'"):
        render_html([], sections=[Section("x", family="gpu")])


def test_coverage_lists_rejected_lines_escaped() -> None:
    from perfsleuth.sources.transactions import BadLine, Rejects

    bad = [
        BadLine("access.log", line, "no latency field", text=f"GET /{XSS} {line}")
        for line in (3, 9, 12, 40, 41, 77)
    ]
    rejects = Rejects(
        count=8, by_reason={"no latency field": 6, f"bad {XSS}": 2}, examples=tuple(bad)
    )
    page = render_html([finding()], rejected={f"access{XSS}.log": rejects, "ok.log": Rejects()})
    assert XSS not in page
    coverage = page.split('id="coverage"', 1)[1]
    assert "Rejected input lines" in coverage
    assert f"access{XSS_ESCAPED}.log" in coverage
    assert "6 × no latency field" in coverage and f"2 × bad {XSS_ESCAPED}" in coverage
    assert "access.log:3: no latency field" in coverage
    assert "access.log:41:" in coverage and "access.log:77:" not in coverage  # first five
    assert "and 3 more" in coverage
    assert '<a href="#coverage">Data coverage</a>' in page


def test_a_fleet_of_findings_stays_light() -> None:
    from perfsleuth.report import html as report_html

    found = [
        finding(kind=Kind.CPU_LOOP, entity=f"node{i:04d}/spin[{i}]", metric="cpu")
        for i in range(report_html._CHARTED + 30)
    ]
    page = render_html(found)
    figs = figures(page)
    assert len(figs) == report_html._CHARTED  # one family: no timeline
    assert f'data-plots-expected="{report_html._CHARTED}"' in page
    assert page.count('<article class="finding') == len(found)  # evidence for every one
    assert "Not plotted: plots are drawn for the 100 most severe findings only." in page
