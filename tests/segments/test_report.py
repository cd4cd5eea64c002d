"""The report section of the segments family and ``perfsleuth workload --segments``."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfsleuth.datasets.segments import cherkasova_scenario
from perfsleuth.findings import Kind, read_jsonl
from perfsleuth.report import render_html
from perfsleuth.segments import FAMILY
from perfsleuth.segments.detector import SegmentAnalysis, SegmentDetector
from perfsleuth.segments.report import TITLE, section
from tests.support.chromium import body_tag
from tests.test_cli import run
from tests.test_report import XSS, XSS_ESCAPED, figures


@lru_cache(maxsize=1)
def _paper() -> pd.DataFrame:
    return cherkasova_scenario(0, windows=40).frame


def paper() -> pd.DataFrame:
    return _paper().copy()


@lru_cache(maxsize=1)
def analysed() -> SegmentAnalysis:
    return SegmentDetector().analyse(_paper())


def test_section_plots_utilisation_with_labelled_boundaries_and_signatures() -> None:
    part = section(analysed())
    assert part.family == FAMILY.name == "segments"
    assert len(part.figures) == 2
    utilisation, signature = (fig.to_plotly_json() for fig in part.figures)
    labels = [a["text"] for a in utilisation["layout"]["annotations"]]
    assert labels.count("anomaly") == 1
    assert labels.count("application change") == 2
    assert labels.count("workload change") >= 1  # mix and load steps; noise may cut more
    bars = signature["data"]
    assert [b["name"] for b in bars] == ["period 1 (baseline)", "period 2", "period 3"]
    assert list(bars[0]["x"]) == ["home", "new_products", "best_sellers", "product_detail",
                                  "search", "cart", "buy"]  # fmt: skip
    captions = [t.caption for t in part.tables]
    assert any("Reconciliation" in c for c in captions)
    assert "Period 3" in str(part.fragment)


def test_section_draws_from_the_analysis_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    analysis = analysed()

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the report must not segment or fit again")

    monkeypatch.setattr(SegmentDetector, "analyse", refuse)
    for target in (
        "perfsleuth.segments.kernels.segmentation.segment_regression",
        "perfsleuth.segments.kernels.cpumodel.fit_cpu_model",
        "perfsleuth.segments.detector.segment_regression",
        "perfsleuth.segments.detector.fit_cpu_model",
        "perfsleuth.segments.model.fit_cpu_model",
    ):
        monkeypatch.setattr(target, refuse)
    part = FAMILY.render(analysis, max_points=100)
    assert part.title == TITLE and len(part.figures) == 2
    observed = part.figures[0].to_plotly_json()["data"][0]
    assert len(observed["x"]) <= 100 < analysis.n_windows


def test_empty_analysis_gives_a_section_that_says_so() -> None:
    empty = SegmentDetector().analyse(paper().iloc[0:0])
    part = section(empty)
    assert (part.title, part.family) == (TITLE, "segments")
    assert part.intro == "No windows: nothing to segment." and not part.figures


def test_rendered_page_draws_both_figures_and_escapes_type_names() -> None:
    frame = paper().rename(columns={"n[home]": f"n[{XSS}]", "rt_sum[home]": f"rt_sum[{XSS}]"})
    detector = SegmentDetector()
    analysis = detector.analyse(frame)
    page = render_html(analysis.findings, sections=[section(analysis)])
    assert XSS not in page
    assert XSS_ESCAPED in page
    summary = analysis.summary()
    assert XSS in summary.text and XSS not in summary.html  # home, renamed, is named changed
    expected = len(analysis.findings) + 2  # an evidence chart per finding, two in the section
    assert f'data-plots-expected="{expected}"' in body_tag(page)
    assert len(figures(page)) == expected


def test_cli_workload_segments_on_a_saved_frame(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "w.parquet"
    frame = paper()
    frame.attrs.clear()
    frame.to_parquet(path)
    code, out, err = run(
        capsys,
        "--format",
        "jsonl",
        "workload",
        str(path),
        "--source",
        "frame",
        "--segments",
        "--report",
        str(tmp_path / "r.html"),
    )
    assert code == 0, err
    kinds = [f.kind for f in read_jsonl(out)]
    assert kinds.count(Kind.APPLICATION_CHANGE) == 2
    assert Kind.WORKLOAD_ANOMALY in kinds
    assert TITLE == "Workload: anomaly, workload change or application change"
    assert TITLE in (tmp_path / "r.html").read_text()


def test_cli_cpu_samples_join_transaction_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A transaction table and a CPU table (percent) make a frame the detector can read."""
    frame = paper()
    types = [c[2:-1] for c in frame.columns if c.startswith("n[")]
    rng = np.random.default_rng(0)
    rows, cpu_rows = [], []
    for t, row in frame.iterrows():
        start = row["time"]
        for name in types:
            n = int(row[f"n[{name}]"])
            if n:
                offsets = np.sort(rng.uniform(0, 60, min(n, 3)))
                mean = row[f"rt_sum[{name}]"] / n
                rows += [(start + pd.Timedelta(seconds=o), name, mean) for o in offsets]
        # stamped at the end of the minute it describes, as a sampler reports it
        cpu_rows.append((start + pd.Timedelta(seconds=60), 100 * row["cpu_util"], 2))
        assert t is not None
    table = pd.DataFrame(rows, columns=["time", "type", "latency"])
    table.to_csv(tmp_path / "tx.csv", index=False)
    cpu = pd.DataFrame(cpu_rows, columns=["time", "busy", "cpu_cores"])
    cpu.to_csv(tmp_path / "cpu.csv", index=False)
    code, out, err = run(
        capsys,
        "--format",
        "json",
        "workload",
        str(tmp_path / "tx.csv"),
        "--source",
        "table",
        "--window",
        "1m",
        "--cpu",
        str(tmp_path / "cpu.csv"),
        "--cpu-unit",
        "%",
        "--segments",
        "--save",
        str(tmp_path / "w.parquet"),
    )
    # the CPU column is called busy here: the error names it
    assert code == 2 and "cpu_util" in err
    cpu.rename(columns={"busy": "cpu_util"}).to_csv(tmp_path / "cpu.csv", index=False)
    code, out, err = run(
        capsys,
        "--format",
        "json",
        "workload",
        str(tmp_path / "tx.csv"),
        "--source",
        "table",
        "--window",
        "1m",
        "--cpu",
        str(tmp_path / "cpu.csv"),
        "--cpu-unit",
        "%",
        "--segments",
        "--save",
        str(tmp_path / "w.parquet"),
    )
    assert code == 0, err
    saved = pd.read_parquet(tmp_path / "w.parquet")
    np.testing.assert_allclose(saved["cpu_util"], frame["cpu_util"], rtol=1e-9)
    assert any(f["kind"] == "workload_anomaly" for f in json.loads(out)["findings"])


def test_cli_cpu_of_takes_the_services_own_cpu_from_a_process_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--cpu-of postgres``: the named processes' CPU, not the busy neighbour's, per window."""
    frame = paper().iloc[:60]
    types = [c[2:-1] for c in frame.columns if c.startswith("n[")]
    start = frame["time"].astype("int64") // 10**9
    long = pd.concat(
        [
            pd.DataFrame(
                {
                    "time": start,
                    "type": t,
                    "count": frame[f"n[{t}]"],
                    "rt_sum": frame[f"rt_sum[{t}]"],
                }
            )
            for t in types
        ]
    )
    long.to_csv(tmp_path / "agg.csv", index=False)
    ends = frame["time"] + pd.Timedelta(seconds=60)  # each sample: the minute that ends there
    cores = frame["cpu_util"] * 2  # the frame's CPU on a 2-core machine, in cores
    pairs = list(zip(ends, cores, strict=True))
    pg = [(t, "n1", 100, "postgres", "postgres", c / 2, 2, 1e8) for t, c in pairs]
    pg += [(t, "n1", 101, "postgres", "postgres", c / 2, 2, 1e8) for t, c in pairs]
    pg += [(t, "n1", 200, "stress-ng", "root", 1.5, 2, 1e6) for t in ends]
    columns = ["time", "node", "pid", "name", "user", "cpu", "ncpu", "rss_bytes"]
    table = pd.DataFrame(pg, columns=columns)
    table.to_csv(tmp_path / "proc.csv", index=False)
    code, _, err = run(
        capsys,
        "workload",
        str(tmp_path / "agg.csv"),
        "--source",
        "aggregated",
        "--cpu",
        str(tmp_path / "proc.csv"),
        "--cpu-of",
        "postgres",
        "--save",
        str(tmp_path / "w.parquet"),
    )
    assert code == 0, err
    saved = pd.read_parquet(tmp_path / "w.parquet")
    assert len(saved) == 60 and (saved["cpu_cores"] == 2).all()
    np.testing.assert_allclose(saved["cpu_util"], frame["cpu_util"], rtol=1e-6)
