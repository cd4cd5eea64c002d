"""``import_command``: sar, pidstat and perfmon files into the store."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from perfsleuth.collect.cli import import_command
from perfsleuth.store import Store

DATA = Path(__file__).resolve().parents[1] / "data"


def _app() -> typer.Typer:
    # the command as perfsleuth.cli registers it (app.command("import")(import_command))
    app = typer.Typer()
    app.command("import")(import_command)
    app.command("unused")(lambda: None)  # two commands: Typer keeps the command name
    return app


def test_import_each_format_into_one_store(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    runner = CliRunner()
    calls = [
        ["sar", str(DATA / "sysstat" / "sar.json")],
        ["pidstat", str(DATA / "sysstat" / "pidstat-epoch.txt"), "--node", "vm-pidstat"],
        ["perfmon", str(DATA / "perfmon" / "relog.csv")],
    ]
    answers = []
    for call in calls:
        result = runner.invoke(_app(), ["import", *call, "--store", str(store)])
        assert result.exit_code == 0, result.output
        answers.append(json.loads(result.stdout))
    assert answers[0]["rows"] == {"counter": 240}
    assert answers[1]["rows"] == {"process": 15}
    assert answers[2]["rows"] == {"counter": 100, "process": 16}
    with Store(store, read_only=True) as db:
        processes = db.read_frame("process")
        counters = db.read_frame("counter")
    assert set(processes["node"]) == {"vm-pidstat", "WEB01"}
    assert set(counters["entity"]) >= {"vm", "WEB01"}
    again = runner.invoke(_app(), ["import", *calls[0], "--store", str(store)])
    assert again.exit_code == 0
    with Store(store, read_only=True) as db:
        assert len(db.read_frame("counter")) == len(counters)  # replaced, not stored twice
