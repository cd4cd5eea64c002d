"""``perfsleuth changepoints FILE --column C``: wide files in, change points out."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from perfsleuth.findings import read_jsonl
from tests.test_cli import run


def _wide(path: Path, *, bad: str | None = None) -> Path:
    rng = np.random.default_rng(1)
    lines = ["ts,latency_ms,cpu"]
    for i in range(500):
        latency = (20 if i < 300 else 32) + rng.normal(0, 3)
        cpu = (0.4 if i < 200 else 0.55) + rng.normal(0, 0.03)
        lines.append(f"{1714550400 + 60 * i},{latency:.2f},{cpu:.3f}")
    if bad is not None:
        lines[120] = f"{1714550400 + 60 * 119},{bad},0.4"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_change_points_per_column_with_report_and_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _wide(tmp_path / "host.csv")
    code, out, err = run(
        capsys,
        "--format",
        "jsonl",
        "changepoints",
        str(path),
        "-c",
        "latency_ms",
        "-c",
        "cpu",
        "--time-column",
        "ts",
        "--unit",
        "ms",
        "--report",
        str(tmp_path / "r.html"),
        "--store",
        str(tmp_path / "s.duckdb"),
    )
    assert code == 0, err
    found = {(f.entity, f.metric): f.evidence_dict()["index"] for f in read_jsonl(out)}
    assert found == {("host", "latency_ms"): 300, ("host", "cpu"): 200}
    html = (tmp_path / "r.html").read_text()
    assert "Change points: series, segments and means" in html


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["--bad", "fast"], r"host\.csv:121: column 'latency_ms': not a number: 'fast'"),
        (["--bad", ""], r"host\.csv:121: column 'latency_ms': missing value"),
        (["-c", "nope"], r"no column\(s\) 'nope' \(columns present: ts, latency_ms, cpu\)"),
        (["--method", "magic"], r"options: --method: "),
        (["--alpha", "2"], r"options: --alpha: "),
        # the flag as typed, where it is not the parameter's name (min_relative_change)
        (["--min-change", "-1"], r"options: --min-change: .*greater than or equal to 0"),
    ],
)
def test_bad_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], pattern: str
) -> None:
    bad = args[1] if args[0] == "--bad" else None
    extra = [] if bad is not None else args
    path = _wide(tmp_path / "host.csv", bad=bad)
    code, out, err = run(
        capsys, "changepoints", str(path), "-c", "latency_ms", "--time-column", "ts", *extra
    )
    assert code == 2 and out == ""
    assert re.search(pattern, err), err


def test_raw_search_cuts_a_trend_the_default_removes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(3)
    rows = [f"{1714550400 + 60 * i},{10 + 0.02 * i + rng.normal(0, 1):.3f}" for i in range(600)]
    path = tmp_path / "growing.csv"
    path.write_text("time,latency_ms\n" + "\n".join(rows) + "\n")
    code, out, _ = run(capsys, "--format", "jsonl", "changepoints", str(path), "-c", "latency_ms")
    assert code == 0 and out.strip() == ""  # one trend, no change points
    code, out, _ = run(
        capsys, "--format", "jsonl", "changepoints", str(path), "-c", "latency_ms", "--raw"
    )
    assert len(out.strip().splitlines()) >= 3  # the paper's search sees a staircase


def test_top_and_min_change_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(2)
    lines = ["ts,latency_ms"]
    for i in range(600):
        level = 20.0 if i < 200 else (26.0 if i < 400 else 60.0)
        lines.append(f"{1714550400 + 60 * i},{level + rng.normal(0, 1):.2f}")
    path = tmp_path / "api.csv"
    path.write_text("\n".join(lines) + "\n")
    args = [
        "--format",
        "jsonl",
        "changepoints",
        str(path),
        "-c",
        "latency_ms",
        "--time-column",
        "ts",
    ]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    found = [f.evidence_dict()["index"] for f in read_jsonl(out)]
    assert found == [400, 200]  # largest effect first
    code, out, err = run(capsys, *args, "--top", "1")
    assert [f.evidence_dict()["index"] for f in read_jsonl(out)] == [400]
    code, out, err = run(capsys, *args, "--min-change", "0.5")  # +30% is not enough
    assert [f.evidence_dict()["index"] for f in read_jsonl(out)] == [400]


def test_top_spikes_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    lines = ["ts,latency_ms"]
    for i in range(300):
        spike = {50: 40.0, 120: 30.0, 250: 20.0}.get(i, 0.0)
        lines.append(f"{1714550400 + 60 * i},{20.0 + spike + rng.normal(0, 1):.2f}")
    path = tmp_path / "api.csv"
    path.write_text("\n".join(lines) + "\n")
    args = ["--format", "jsonl", "changepoints", str(path), "-c", "latency_ms", "--time-column",
            "ts"]  # fmt: skip

    def spikes(*more: str) -> list[int]:
        code, out, err = run(capsys, *args, *more)
        assert code == 0, err
        return [f.evidence_dict()["index"] for f in read_jsonl(out) if f.kind == "spike"]

    assert spikes() == [50, 120, 250]  # the three largest, largest first
    assert spikes("--top-spikes", "2") == [50, 120]
    assert spikes("--top-spikes", "0") == []
