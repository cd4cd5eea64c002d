"""``perfsleuth processes scan DATA --rules R [--notify CONFIG]`` and ``perfsleuth processes
rules``."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.datasets.fleet import SCENARIOS, simulate_fleet
from perfsleuth.findings import read_jsonl
from perfsleuth.processes.rules import DEFAULT_RULES, ProcessRules
from perfsleuth.store import Store
from tests.test_cli import run

RULES = """
[[exceptions]]
process = "statpkg"
extra_hours = 8

[never_alert]
processes = ["render*"]
"""

NOTIFY = """
[notify]
analysts = ["ron@example.com"]
tickets = "{tickets}"
"""


@pytest.fixture(scope="module")
def fleet_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("fleet")
    run_ = simulate_fleet(len(SCENARIOS), interval="30m", seed=6)
    data = folder / "fleet.parquet"
    run_.frame.drop(columns=["ncpu", "os"]).to_parquet(data)
    nodes = folder / "nodes.csv"
    run_.nodes[["node", "ncpu", "os"]].to_csv(nodes, index=False)
    return data, nodes


def test_scan_with_rules_store_report_and_notify(
    fleet_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, nodes = fleet_files
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    config = tmp_path / "perfsleuth.toml"  # notifications are the config's, not the rules'
    config.write_text(NOTIFY.format(tickets=tmp_path / "tickets"))
    store, report = tmp_path / "s.duckdb", tmp_path / "r.html"
    args = ("--format", "jsonl", "processes", "scan", str(data), "--rules", str(rules))
    code, out, err = run(
        capsys,
        *args,
        "--nodes",
        str(nodes),
        "--store",
        str(store),
        "--report",
        str(report),
        "--notify",
        str(config),
        "--now",
        "2024-03-06T06:00:00+00:00",
    )
    assert code == 0, err
    findings = read_jsonl(out)
    assert {f.kind.value for f in findings} == {
        "cpu_loop",
        "constrained_loop",
        "hum",
        "memory_ramp",
        "saw_tooth",
        "cap_exceeded",
        "capture_ratio",
    }
    assert not [f for f in findings if f.evidence_dict().get("process") in ("statpkg",)]
    assert "notify:" in err and "kept in" in err  # no smtp_host: the e-mail waits in the outbox
    assert list((tmp_path / "tickets").glob("*.json"))
    assert list(Path(str(store) + ".outbox", "pending").glob("*.json"))
    with Store(store, read_only=True) as db:
        assert len(db.findings()) == len(findings)
        assert len(db.history()) == len(findings)
        assert len(db.read_frame("node")) == len(SCENARIOS)
    html = report.read_text()
    assert "Process pathologies" in html and "constrained_loop" in html
    # a second run the same day notifies nothing new
    code, _, err = run(
        capsys,
        *args,
        "--nodes",
        str(nodes),
        "--store",
        str(store),
        "--notify",
        str(config),
        "--now",
        "2024-03-06T12:00:00+00:00",
    )
    assert code == 0 and f"0 due, {len({(f.kind, f.entity, f.metric) for f in findings})}" in err


def test_errors_exit_2_and_name_the_problem(
    fleet_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = fleet_files
    code, _, err = run(capsys, "processes", "scan", str(data))
    assert code == 2 and "ncpu" in err  # the loop checks need the CPU count
    rules = tmp_path / "bad.toml"
    rules.write_text("[hum]\nhourz = 3\n")
    code, _, err = run(capsys, "processes", "scan", str(data), "--rules", str(rules))
    assert code == 2 and "hum.hourz" in err
    csv = tmp_path / "bad.csv"
    frame = pd.read_parquet(data).head(50)
    frame["cpu"] = frame["cpu"].astype(object)
    frame.loc[7, "cpu"] = "lots"
    frame.to_csv(csv, index=False)
    code, _, err = run(capsys, "processes", "scan", str(csv), "--check", "memory_ramp")
    assert code == 2 and "bad.csv:9" in err and "cpu" in err


def test_notify_table_in_the_rules_file_says_where_it_goes(
    fleet_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = fleet_files
    rules = tmp_path / "old.toml"
    rules.write_text(RULES + NOTIFY.format(tickets=tmp_path / "tickets"))
    code, _, err = run(capsys, "processes", "scan", str(data), "--rules", str(rules))
    assert code == 2 and f"{rules}:9: notify: " in err and "[notify] section of the config" in err


def test_rules_command_prints_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "processes", "rules")
    assert code == 0
    assert ProcessRules.model_validate(tomllib.loads(out)) == DEFAULT_RULES
