"""``perfsleuth workload``: logs in, workload frame, Kelly model, findings out."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perfsleuth.findings import read_jsonl
from tests.test_cli import run


def _weblog(path: Path, *, bad_line: bool = False, slow_from: int | None = None) -> Path:
    """Two hours of a two-type service in Combined format with %D (µs) last."""
    rng = np.random.default_rng(3)
    lines = []
    for second in range(0, 7200, 3):
        minute = second // 60
        kind = "/api/orders/7" if rng.random() < 0.3 + 0.2 * np.sin(minute / 9) else "/static/a.css"
        base = 0.080 if kind.startswith("/api") else 0.004
        slow = 4.0 if slow_from is not None and slow_from <= minute < slow_from + 10 else 1.0
        micros = int(base * slow * rng.lognormal(0, 0.2) * 1e6)
        hh, mm, ss = second // 3600, minute % 60, second % 60
        lines.append(
            f"10.0.0.{second % 250} - - [01/May/2024:{9 + hh:02d}:{mm:02d}:{ss:02d} +0000] "
            f'"GET {kind}?q=1 HTTP/1.1" 200 512 "-" "curl/8" {micros}'
        )
    if bad_line:
        lines.insert(5, "this is not a log line")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_weblog_to_findings_store_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _weblog(tmp_path / "access.log", bad_line=True, slow_from=70)
    code, out, err = run(
        capsys,
        "--format",
        "jsonl",
        "workload",
        str(log),
        "--source",
        "weblog",
        "--window",
        "1m",
        "--store",
        str(tmp_path / "s.duckdb"),
        "--report",
        str(tmp_path / "r.html"),
        "--save",
        str(tmp_path / "w.parquet"),
    )
    assert code == 0, err
    assert "1 line(s) rejected" in err and ":6:" in err  # counted, with its line number
    findings = read_jsonl(out)
    assert findings, "the 4x slow-down from 10:10 to 10:20 is not explained by the mix"
    slow = findings[0]
    assert slow.start.hour == 10 and 8 <= slow.start.minute <= 12
    assert (tmp_path / "r.html").exists() and (tmp_path / "w.parquet").exists()


def test_online_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _weblog(tmp_path / "access.log", slow_from=90)
    code, out, err = run(
        capsys,
        "--format",
        "json",
        "workload",
        str(log),
        "--source",
        "weblog",
        "--window",
        "1m",
        "--online",
        "--history",
        "1h",
    )
    assert code == 0, err
    assert "opened" in err
    assert json.loads(out)["findings"]


def test_strict_fails_on_the_first_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _weblog(tmp_path / "access.log", bad_line=True)
    code, out, err = run(capsys, "workload", str(log), "--source", "weblog", "--strict")
    assert code == 2 and out == ""
    assert "access.log:6" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--window", "soon"], "--window: not a duration"),
        (["--unit", "furlongs"], "--unit: Input should be 'auto', 's', 'ms' or 'us'"),
    ],
)
def test_bad_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    log = _weblog(tmp_path / "access.log")
    code, _, err = run(capsys, "workload", str(log), "--source", "weblog", *args)
    assert code == 2
    assert message in err


def test_report_lists_the_rejected_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _weblog(tmp_path / "access.log", bad_line=True)
    page = tmp_path / "r.html"
    code, _, err = run(
        capsys, "workload", str(log), "--source", "weblog", "--window", "1m", "--report", str(page)
    )
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    coverage = html.split('<section id="coverage">', 1)[1]
    assert "Rejected input lines" in coverage
    assert f"{log}:6:" in coverage  # the file and the line number
    assert "this is not a log line" in coverage
