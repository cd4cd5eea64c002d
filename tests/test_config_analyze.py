"""The config sections ``analyze`` and ``watch`` read: sources of every kind, families, notify."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfsleuth.cli import app, main
from perfsleuth.config import config_schema, load_config
from perfsleuth.errors import ConfigError
from perfsleuth.sources.specs import FileSource, PrometheusSource, StoreSource

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "perfsleuth.toml"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "perfsleuth.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_source_kind(tmp_path: Path) -> None:
    config = load_config(
        _write(
            tmp_path,
            """
[[sources]]
path = "rt.csv"

[[sources]]
kind = "prometheus"
url = "http://127.0.0.1:9090"
contract = "counter"
preset = "node"
step = "5s"
range = "30m"

[[sources]]
kind = "prometheus"
url = "http://127.0.0.1:9090"
contract = "workload"
metric = "http_request_duration_seconds"

[[sources]]
kind = "store"
contract = "process"
range = "1d"

[analyze]
families = ["changepoints", "processes"]

[detectors.processes]
checks = ["cpu_loop", "memory_ramp"]

[watch]
every = "30s"
backoff_max = "5m"

[notify]
recipients = ["ops@example.com"]
tickets = "tickets"
""",
        )
    )
    file, counters, workload, stored = config.sources
    assert isinstance(file, FileSource) and file.kind == "file"
    assert isinstance(counters, PrometheusSource) and counters.range == timedelta(minutes=30)
    assert isinstance(workload, PrometheusSource) and workload.contract == "workload"
    assert isinstance(stored, StoreSource) and stored.range == timedelta(days=1)
    assert config.analyze.families == ["changepoints", "processes"]
    assert config.detectors.processes.checks == ("cpu_loop", "memory_ramp")
    assert config.watch.every == timedelta(seconds=30)
    settings = config.notify
    assert settings is not None and settings.recipients == ("ops@example.com",)


def test_defaults_keep_old_configs_working(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, "[[sources]]\npath = 'a.csv'\n"))
    assert config.analyze.families == [
        "changepoints",
        "workload",
        "segments",
        "processes",
        "bottleneck",
    ]
    assert config.notify is None
    assert config.watch.grace is None


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        # the key path, not pydantic's union tag
        ("[[sources]]\npath = 'a'\ncontract = 'nope'\n", r": sources\.0\.contract: "),
        ("[[sources]]\nkind = 'prometheus'\n", r": sources\.0\.url: Field required"),
        (
            "[[sources]]\nkind = 'prometheus'\nurl = 'http://x'\nstep = 'soon'\n",
            r": sources\.0\.step: .*not a duration",
        ),
        ("[[sources]]\nkind = 'prometheus'\nurl = 'ftp://x'\nqueries = {a = 'up'}\n", r"0\.url"),
        (
            "[[sources]]\nkind = 'prometheus'\nurl = 'http://x'\n",
            r"sources\.0\.queries: a metric source needs at least one query",
        ),
        (
            "[[sources]]\nkind = 'prometheus'\nurl = 'http://x'\ncontract = 'workload'\n",
            r"sources\.0\.metric: a workload source needs",
        ),
        ("[[sources]]\nkind = 'store'\nrnge = '1h'\n", r"sources\.0\.rnge: Extra inputs"),
        (
            "[[sources]]\nkind = 'kafka'\n",
            r"sources\.0: kind: expected one of 'file', 'prometheus'",
        ),
        ("[analyze]\nfamilies = ['changepoint']\n", r"analyze\.families\.0: .*now 'changepoints'"),
        ("[analyze]\nskip = ['humm']\n", r"analyze\.skip: removed; list the families"),
        ("[watch]\nevery = 'often'\n", r"watch\.every: "),
        ("[notify]\nsmtp_port = 0\n", r"perfsleuth\.toml:2: notify\.smtp_port: "),
        ("[notify]\nrecipent = ['a']\n", r"notify\.recipent: Extra inputs"),
        (
            "[analyze]\nfamilies = ['changepoints']\n[detectors.processes]\n",
            r"detectors\.processes: the family 'processes' is not in analyze\.families",
        ),
        ("[detectors.hum]\n", r"detectors\.hum: now \[detectors\.processes\]"),
        (
            "[detectors.changepoints]\nalpa = 1\n",
            r"perfsleuth\.toml:2: detectors\.changepoints\.alpa",
        ),
    ],
)
def test_errors_name_the_key_path(tmp_path: Path, text: str, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        load_config(_write(tmp_path, text))


def test_config_check_command_names_the_key_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "[[sources]]\nkind = 'prometheus'\nurl = 'http://x'\nqueries = {up = 'up'}\n"
    path = _write(tmp_path, text + "step = 3\nrange = 1\n")
    with pytest.raises(SystemExit) as exit_:
        main(["config", "check", str(path)])
    assert exit_.value.code == 2
    assert "sources.0.range: must be at least one step" in capsys.readouterr().err
    main_ok = _write(tmp_path, text)
    result = CliRunner().invoke(app, ["config", "check", str(main_ok)])
    assert result.exit_code == 0, result.output
    assert "1 source(s)" in result.output


def test_schema_covers_sources_sections_and_notify() -> None:
    schema = config_schema()
    text = json.dumps(schema)
    for word in ("PrometheusSource", "StoreSource", "FileSource", "backoff_max", "families"):
        assert word in text
    assert "smtp_host" in text  # [notify] typed in the schema for editors
    families = schema["$defs"]["AnalyzeSection"]["properties"]["families"]["items"]
    assert set(families["enum"]) == {
        "changepoints",
        "workload",
        "segments",
        "processes",
        "bottleneck",
    }


def test_example_config_is_valid() -> None:
    config = load_config(EXAMPLE)
    assert {s.kind for s in config.sources} >= {"file", "prometheus"}
