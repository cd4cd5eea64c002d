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
