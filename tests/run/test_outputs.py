"""Outputs never overwrite inputs, and a store is a store: every such mistake is refused
before anything is read or written, with one line and exit 2, and the data are untouched."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.cli import main
from perfsleuth.config import load_config
from perfsleuth.errors import ConfigError
from perfsleuth.pipeline import Input, Outputs, Plan, run
from perfsleuth.sources.specs import FileSource


@pytest.fixture
def data(tmp_path: Path) -> Path:
    times = pd.date_range("2024-05-01", periods=120, freq="min", tz="UTC")
    values = [20.0 + (k % 3) for k in range(60)] + [40.0 + (k % 3) for k in range(60)]
    path = tmp_path / "data.csv"
    pd.DataFrame({"time": times, "entity": "api", "metric": "rt", "value": values}).to_csv(
        path, index=False
    )
    return path


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    _, err = capsys.readouterr()
    code = exit_.value.code
    return (code if isinstance(code, int) else 0), err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--report", "{data}"], r"data\.csv: the report would overwrite an input of this run"),
        (["--store", "{data}"], r"data\.csv: the store would overwrite an input of this run"),
        (["--store", "{other}"], r"other\.csv: not a DuckDB database file \(it looks like a CSV"),
        (["--store", "{tmp}/s.duckdb", "--report", "{tmp}/s.duckdb"], "would overwrite the store"),
    ],
)
def test_an_output_that_is_an_input_is_refused(
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    message: str,
) -> None:
    other = tmp_path / "other.csv"
    other.write_bytes(data.read_bytes())
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    args = [o.format(data=data, other=other, tmp=tmp_path) for o in options]
    code, err = cli(["changepoints", str(data), *args], capsys)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert pd.Series([err]).str.contains(message).all(), err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing written


def test_config_report_name_stays_in_the_output_folder(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "cfg" / "o.toml"
    config.parent.mkdir()
    config.write_text(
        '[store]\npath = "o.duckdb"\n[[sources]]\npath = "../data.csv"\n'
        '[output]\ndir = "."\n[analyze]\nfamilies = ["changepoints"]\nreport = "../data.csv"\n'
    )
    before = data.read_bytes()
    code, err = cli(["analyze", str(config)], capsys)
    assert code == 2
    assert "o.toml:9: analyze.report: '../data.csv': a file name in [output] dir" in err
    assert data.read_bytes() == before
    # the way to write elsewhere is explicit: [output] dir; onto the data, even so, is refused
    config.write_text(config.read_text().replace('report = "../data.csv"', 'report = "data.csv"'))
    config.write_text(config.read_text().replace('dir = "."', 'dir = ".."'))
    code, err = cli(["analyze", str(config)], capsys)
    assert code == 2 and "the report would overwrite an input of this run" in err
    assert data.read_bytes() == before


def test_findings_file_and_report_must_differ_from_each_other(tmp_path: Path, data: Path) -> None:
    plan = Plan(
        (Input("metric", "metric", (FileSource(path=data, contract="metric"),)),),
        (),
        Outputs(report=tmp_path / "x.html", jsonl=tmp_path / "x.html"),
    )
    with pytest.raises(ConfigError, match="the report and the findings file are one file"):
        run(plan)
    assert not (tmp_path / "x.html").exists()


def test_a_hard_link_to_the_input_is_the_input(
    tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "report.html"
    link.hardlink_to(data)
    code, err = cli(["changepoints", str(data), "--report", str(link)], capsys)
    assert code == 2 and "would overwrite an input" in err
    assert data.read_text().startswith("time,entity,metric,value")


def test_report_command_does_not_write_over_its_store(
    tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.duckdb"
    code, _ = cli(["changepoints", str(data), "--store", str(store)], capsys)
    assert code == 0
    before = store.read_bytes()
    code, err = cli(["report", "--store", str(store), "-o", str(store)], capsys)
    assert code == 2 and "the report would overwrite its store" in err
    assert store.read_bytes() == before
    findings = tmp_path / "f.jsonl"
    findings.write_text("")
    code, err = cli(["report", "--findings", str(findings), "-o", str(findings)], capsys)
    assert code == 2 and "would overwrite its findings file" in err


def test_load_config_keeps_a_plain_report_name(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[analyze]\nreport = "daily.html"\n')
    assert load_config(path).analyze.report == "daily.html"
