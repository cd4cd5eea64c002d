from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel

from perfsleuth.config import config_schema, load_config
from perfsleuth.durations import Duration, format_duration, parse_duration
from perfsleuth.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("2h", 7200),
        ("1h30m", 5400),
        ("1d", 86400),
        ("250ms", 0.25),
        (" 1 h ", 3600),
        (90, 90),
        (1.5, 1.5),
        (timedelta(minutes=2), 120),
    ],
)
def test_parse_duration(text: object, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "5", "5 minutes", "m5", "-5m", "0s", "1x", True, None])
def test_parse_duration_rejects(text: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize("seconds", [0.25, 1, 59, 60, 90, 3600, 5400, 86400, 7 * 86400])
def test_format_duration_round_trips(seconds: float) -> None:
    value = timedelta(seconds=seconds)
    assert parse_duration(format_duration(value)) == value


def test_duration_in_a_model_serialises_as_text() -> None:
    class M(BaseModel):
        every: Duration

    model = M(every="5m")  # type: ignore[arg-type]
    assert model.every == timedelta(minutes=5)
    assert model.model_dump(mode="json") == {"every": "5m"}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "perfsleuth.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_valid_config(tmp_path: Path) -> None:
    config = load_config(
        _write(
            tmp_path,
            """
[store]
path = "x.duckdb"

[[sources]]
path = "rt.csv"
columns = { ts = "time" }

[detectors.changepoints]
alpha = 0.01
""",
        )
    )
    assert config.detectors.changepoints.alpha == 0.01
    assert config.store.path == Path("x.duckdb")
    assert config.sources[0].columns == {"ts": "time"}


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("[store]\npth = 'x'\n", r"perfsleuth\.toml:2: store\.pth: Extra inputs are not permitted"),
        ("[[sources]]\npath = 'a'\ncontract = 'nope'\n", r"sources\.0\.contract"),
        ("[detectors.nope]\n", r"detectors\.nope: Extra inputs are not permitted"),
        ("[detectors.changepoints]\nalpha = 'high'\n", r"toml:2: detectors\.changepoints\.alpha"),
        ("[store\n", r"not valid TOML"),
    ],
)
def test_invalid_config_names_the_key_path(tmp_path: Path, text: str, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        load_config(_write(tmp_path, text))


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.toml")


def test_schema_includes_detector_parameters() -> None:
    schema = config_schema()
    assert schema["additionalProperties"] is False
    text = str(schema)
    assert "changepoint" in text and "alpha" in text


# -- issue 16: defaults the schema's own patterns accept; TOML that is not text or too deep -----


def _defaults(node: object) -> list[tuple[str, object]]:
    """(pattern, default) of every schema property that has both."""
    out: list[tuple[str, object]] = []
    if isinstance(node, dict):
        if "pattern" in node and "default" in node:
            out.append((node["pattern"], node["default"]))
        for value in node.values():
            out += _defaults(value)
    elif isinstance(node, list):
        for value in node:
            out += _defaults(value)
    return out


def test_schema_defaults_match_their_own_patterns() -> None:
    import re

    found = _defaults(config_schema())
    durations = [d for p, d in found if "ms|s|m|h|d|w" in p]
    assert len(durations) >= 10 and "15s" in durations and "1h" in durations
    for pattern, default in found:
        assert isinstance(default, str) and re.fullmatch(pattern, default), (pattern, default)
    assert "PT" not in str(config_schema())  # pydantic's ISO 8601 ("PT15S") was the default


@pytest.mark.parametrize("seconds", [0, -1, float("inf"), float("nan"), 100 * 365 * 86400 + 1])
def test_parse_duration_bounds(seconds: float) -> None:
    with pytest.raises(ValueError, match=r"a duration must be positive|longer than a century"):
        parse_duration(seconds)
    with pytest.raises(ValueError, match="longer than a century"):
        parse_duration("99999999999w")


BAD_TOML = {
    "not UTF-8": b'[store]\npath = "\xff\xfe.duckdb"\n',
    "nested 5000 deep": b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
    "inline tables 3000 deep": b"a = " + b"{b = " * 3000 + b"1" + b"}" * 3000 + b"\n",
}
LOADERS = {
    "config": ["config", "check", "{file}"],
    "process rules": ["processes", "scan", "{data}", "--rules", "{file}"],
    "model": ["bottleneck", "check", "{file}"],
    "calibration": ["bottleneck", "infer", "{data}", "--calibration", "{file}"],
    "error model": ["bottleneck", "infer", "{data}", "--error-model", "{file}"],
    "upgrades": ["bottleneck", "infer", "{data}", "--upgrades", "{file}"],
    "web-log rules": ["workload", "{data}", "--source", "weblog", "--rules", "{file}"],
    "notify settings": ["processes", "scan", "{data}", "--notify", "{file}"],
}


@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize("case", sorted(BAD_TOML))
def test_every_toml_loader_refuses_bad_text_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], loader: str, case: str
) -> None:
    from perfsleuth.cli import main

    path = tmp_path / "bad.toml"
    path.write_bytes(BAD_TOML[case])
    data = tmp_path / "data.csv"  # read (or not) before the file: a counter, a process, a log
    data.write_text("time,entity,counter,value\n1700000000,h,cpu.user,1\n")
    args = [a.format(file=path, data=data) for a in LOADERS[loader]]
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perfsleuth: error: {path}"), err
    expected = "not UTF-8 text" if case == "not UTF-8" else "nested too deeply"
    assert expected in lines[0]


def test_topology_joins_a_service_named_twice_and_bad_entries_name_their_line(
    tmp_path: Path,
) -> None:
    from perfsleuth.pipeline import plan_from_config

    good = tmp_path / "good.toml"
    good.write_text(
        '[[topology]]\nservice = "shop"\nnodes = ["app-1:9100"]\n'
        '[[topology]]\nservice = "shop"\nnodes = ["db-1"]\n',
        encoding="utf-8",
    )
    plan = plan_from_config(load_config(good), base=tmp_path)
    assert plan.topology.services == {"shop": ("app-1", "db-1")}
    bad = tmp_path / "bad.toml"
    bad.write_text('[[topology]]\nservice = "shop"\nnodes = []\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.toml:3: topology\.0\.nodes"):
        load_config(bad)
    bad.write_text('[[topology]]\nservice = ""\nnode = ["a"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"topology\.0\.node: Extra inputs"):
        load_config(bad)
