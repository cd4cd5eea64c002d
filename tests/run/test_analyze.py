"""``perfsleuth analyze``: files of every contract → findings of every family, stored, reported."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.cli import main
from perfsleuth.config import Config, load_config
from perfsleuth.findings import read_jsonl
from perfsleuth.pipeline import Outputs, RunResult, plan_from_config, run
from perfsleuth.store import Store
from tests.run.conftest import DataFiles

ALL_FILES = """
[store]
path = "out/store.duckdb"

[output]
dir = "out"

[[sources]]
path = "{d.metric}"

[[sources]]
path = "{d.workload}"
contract = "workload"

[[sources]]
path = "{d.process}"
contract = "process"

[[sources]]
path = "{d.counter}"
contract = "counter"

[analyze]
title = "analyze <all> families"

[detectors.changepoints]
alpha = 0.01

[notify]
tickets = "{tickets}"
"""


def analyze(
    config: Config, *, base: Path, command: str = "perfsleuth analyze", report: bool = True
) -> RunResult:
    """What ``perfsleuth analyze`` runs: the config's plan through the one run path."""
    import dataclasses

    plan = plan_from_config(config, base=base, command=command)
    if not report:
        plan = dataclasses.replace(plan, outputs=Outputs(store=plan.outputs.store))
    return run(plan)


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    out, err = capsys.readouterr()
    code = exit_.value.code
    return (code if isinstance(code, int) else 0), out, err


@pytest.fixture(scope="module")
def all_families(
    data_files: DataFiles, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[str]]:
    """One analyze run of every family (module-wide: it is the expensive part)."""
    folder = tmp_path_factory.mktemp("analyze")
    tickets = folder / "tickets"
    config = folder / "perfsleuth.toml"
    config.write_text(ALL_FILES.format(d=data_files, tickets=tickets), encoding="utf-8")
    result = analyze(load_config(config), base=folder, command="test analyze")
    assert result.report is not None
    return folder, sorted({f.kind.value for f in result.findings})


def test_every_family_finds_something(all_families: tuple[Path, list[str]]) -> None:
    _, kinds = all_families
    for kind in (
        "change_point",  # Berry & Hellerstein
        "workload_anomaly",  # Kelly (and Cherkasova's anomalous segments)
        "workload_change",  # Cherkasova
        "cpu_loop",  # Kaminski
        "memory_ramp",
        "bottleneck",  # Blake & Breese
    ):
        assert kind in kinds


def test_findings_are_stored_as_one_run(all_families: tuple[Path, list[str]]) -> None:
    folder, _ = all_families
    with Store(folder / "out" / "store.duckdb", read_only=True) as db:
        runs = db.runs()
        assert list(runs["command"]) == ["test analyze"]
        assert list(runs["status"]) == ["ok"]
        stored = db.findings()
        assert int(runs["n_findings"].iloc[0]) == len(stored) > 10
        assert len(db.read_frame("process")) > 0 and len(db.read_frame("counter")) > 0
    jsonl = (folder / "out" / "findings.jsonl").read_text(encoding="utf-8")
    assert {f.id for f in read_jsonl(jsonl)} == {f.id for f in stored}


def test_report_has_every_family_section(all_families: tuple[Path, list[str]]) -> None:
    folder, _ = all_families
    page = (folder / "out" / "report.html").read_text(encoding="utf-8")
    assert "analyze &lt;all&gt; families" in page
    for title in (
        "Change points",
        "response time explained by the transaction mix",
        "Workload: anomaly, workload change or application change",
        "Process pathologies",
        "Bottlenecks",
        "This run: sources and families",
    ):
        assert title in page, title


def test_notifications_go_out(all_families: tuple[Path, list[str]]) -> None:
    folder, _ = all_families
    tickets = list((folder / "tickets").glob("*.json"))
    assert tickets, "no ticket files written"
    kinds = set()
    for path in tickets:
        ticket = json.loads(path.read_text(encoding="utf-8"))
        # a finding's ticket, or one for an incident of several families with its findings
        details = ticket["details"] if "incident" in ticket else [ticket]
        kinds |= {detail["kind"] for detail in details}
    assert "cpu_loop" in kinds and "change_point" in kinds


def test_cli_exit_code_follows_fail_on(
    data_files: DataFiles, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "perfsleuth.toml"
    config.write_text(
        f"""
[store]
path = "store.duckdb"
[[sources]]
path = "{data_files.metric}"
[analyze]
families = ["changepoints", "processes"]
""",
        encoding="utf-8",
    )
    code, out, err = cli(["--format", "json", "--fail-on", "error", "analyze", str(config)], capsys)
    assert code == 1, err
    answer = json.loads(out)
    findings = answer["findings"]
    kinds = {f["kind"] for f in findings}  # the change-point family's: changes and spikes
    assert findings and "change_point" in kinds and kinds <= {"change_point", "spike"}
    # the incidents name their findings by id, every finding is in exactly one
    grouped = [ident for incident in answer["incidents"] for ident in incident["findings"]]
    assert sorted(grouped) == sorted(f["id"] for f in findings)
    assert all(incident["chain"] and incident["story"] for incident in answer["incidents"])
    assert "report:" in err and (tmp_path / "perfsleuth-out" / "report.html").exists()
    assert "processes" not in {f["detector"] for f in findings}

    code, _, err = cli(["--fail-on", "critical", "analyze", str(config), "--no-report"], capsys)
    assert code == 0, err
    with Store(tmp_path / "store.duckdb", read_only=True) as db:
        assert len(db.runs()) == 2


def test_unsuitable_data_skip_a_detector_and_say_why(
    data_files: DataFiles, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pandas as pd

    workload = pd.read_parquet(data_files.workload).drop(columns=["cpu_util", "cpu_cores"])
    workload.to_parquet(tmp_path / "no-cpu.parquet")
    config = tmp_path / "perfsleuth.toml"
    config.write_text(
        """
[[sources]]
path = "no-cpu.parquet"
contract = "workload"
[analyze]
families = ["workload", "segments"]
""",
        encoding="utf-8",
    )
    code, out, err = cli(["--format", "jsonl", "analyze", str(config)], capsys)
    assert code == 0, err
    assert "segments skipped: the segment detector needs CPU utilisation" in err
    assert "no 'cpu_util' column" in err
    kinds = {json.loads(line)["kind"] for line in out.splitlines()}
    assert kinds == {"workload_anomaly"}
    page = (tmp_path / "perfsleuth-out" / "report.html").read_text(encoding="utf-8")
    assert "no &#39;cpu_util&#39; column" in page


def test_analyze_runs_each_family_once_per_frame(
    data_files: DataFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One analysis per family and frame: the report and notifications draw from it, they
    never search or fit again (every detector's analyse and every search kernel counted)."""
    from perfsleuth.families import FAMILIES

    calls: dict[str, int] = {}
    for family in FAMILIES:
        cls = family.detector_class()
        original = cls.analyse

        def counted(self, frame, _original=original, _name=family.name):  # type: ignore[no-untyped-def]
            calls[_name] = calls.get(_name, 0) + 1
            return _original(self, frame)

        monkeypatch.setattr(cls, "analyse", counted)
    config = tmp_path / "perfsleuth.toml"
    tickets = tmp_path / "tickets"
    config.write_text(ALL_FILES.format(d=data_files, tickets=tickets), encoding="utf-8")
    result = analyze(load_config(config), base=tmp_path)
    assert result.report is not None and result.report.exists()
    assert calls == {f.name: 1 for f in FAMILIES}, calls


def test_a_missing_source_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "perfsleuth.toml"
    config.write_text("[[sources]]\npath = 'absent.csv'\n", encoding="utf-8")
    code, _, err = cli(["analyze", str(config)], capsys)
    assert code == 2
    assert f"{tmp_path / 'absent.csv'}: no such file" in err


def test_store_source_reads_what_is_stored(
    data_files: DataFiles, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from perfsleuth.sources.files import read_frame

    frame = read_frame(data_files.metric, "metric")
    with Store(tmp_path / "collected.duckdb") as db:
        db.write_frame(frame, "metric", source="collector")
    config = tmp_path / "perfsleuth.toml"
    config.write_text(
        """
[store]
path = "collected.duckdb"
[[sources]]
kind = "store"
contract = "metric"
range = "3m"
[analyze]
families = ["changepoints"]
""",
        encoding="utf-8",
    )
    result = analyze(load_config(config), base=tmp_path, report=False)
    (info,) = result.loaded.sources
    assert info.label.startswith("store ") and 0 < info.rows < len(frame)
    assert info.last is not None and info.first is not None
    assert info.last - info.first <= pd.Timedelta(minutes=3)
    kinds = {f.kind.value for f in result.findings}  # the change-point family's
    assert "change_point" in kinds and kinds <= {"change_point", "spike"}
    with Store(tmp_path / "collected.duckdb", read_only=True) as db:
        assert len(db.read_frame("metric")) == len(frame)  # read, not written again
        assert len(db.findings()) == len(result.findings)


@pytest.mark.integration
def test_all_families_report_renders_in_chromium(
    all_families: tuple[Path, list[str]], tmp_path: Path
) -> None:
    import re

    from tests.support.chromium import body_tag, browse

    folder, _ = all_families
    dom, console = browse(folder / "out" / "report.html", tmp_path)
    body = body_tag(dom)
    expected = re.search(r'data-plots-expected="(\d+)"', body)
    assert expected and int(expected.group(1)) >= 10, body
    assert f'data-plots="{expected.group(1)}"' in body, f"not every figure was drawn: {body}"
    assert "data-errors" not in body and 'id="ps-error"' not in dom
    errors = [line for line in console if re.search(r"uncaught|error", line, re.IGNORECASE)]
    assert not errors, "\n".join(errors)
