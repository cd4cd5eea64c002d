"""Incidents on a real recording: a pgbench release on db-1 (tests/data/incidents/)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from perfsleuth.config import load_config
from perfsleuth.findings import Kind
from perfsleuth.pipeline import RunResult, plan_from_config, run

RECORDING = Path(__file__).parent / "data" / "incidents" / "pgbench_release"


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    folder = tmp_path_factory.mktemp("incident") / "run"
    shutil.copytree(RECORDING, folder)
    config = folder / "perfsleuth.toml"
    return run(plan_from_config(load_config(config), base=folder), send=False)


def test_the_release_is_one_incident_that_links_latency_application_and_cpu(
    analysed: RunResult,
) -> None:
    truth = json.loads((RECORDING / "truth.json").read_text(encoding="utf-8"))
    (incident,) = [i for i in analysed.incidents if "db-1" in i.entities and len(i.findings) > 1]
    links = {link.step: link for link in incident.chain}
    # the latency change leads the step (its spike findings, INFO, come as "and N more"; a
    # sentence starts with a capital, hence lower())
    when = links["when"].text.lower()
    assert not links["when"].missing and when.startswith("bench/latency: mean rose"), when
    released = links["when"].findings[0].start.isoformat()
    assert abs(_seconds(released) - _seconds(truth["release"])) <= 30
    assert any(
        f.kind is Kind.BOTTLENECK and f.evidence_dict().get("bottleneck") == "cpu"
        for f in links["resource"].findings
    ), links["resource"].text
    # the resource that held the workload back longest leads (not a 30 s disk window before)
    assert links["resource"].text.startswith("CPU is the bottleneck"), links["resource"].text
    assert set(incident.entities) == {"bench", "db-1"}
    assert not links["process"].no_data  # the collector's process data covered db-1


def test_the_application_link_names_the_released_transaction(analysed: RunResult) -> None:
    truth = json.loads((RECORDING / "truth.json").read_text(encoding="utf-8"))
    (incident,) = [i for i in analysed.incidents if "db-1" in i.entities and len(i.findings) > 1]
    application = next(link for link in incident.chain if link.step == "application")
    assert any(
        f.kind is Kind.APPLICATION_CHANGE and truth["changed"] in f.explanation
        for f in application.findings
    ), application.text


def test_the_report_and_the_json_carry_the_incident(analysed: RunResult) -> None:
    assert analysed.report is not None and analysed.jsonl is not None
    page = analysed.report.read_text(encoding="utf-8")
    assert page.index('id="incidents"') < page.index('id="summary"')
    written = json.loads(analysed.jsonl.with_name("incidents.json").read_text(encoding="utf-8"))
    assert [i["id"] for i in written] == [i.id for i in analysed.incidents]


def _seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp).timestamp()
