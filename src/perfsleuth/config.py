"""Configuration: TOML validated by pydantic v2; unknown keys are errors that name their path."""

from __future__ import annotations

import re
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    WithJsonSchema,
)

from perfsleuth.errors import ConfigError

__all__ = [
    "Config",
    "Duration",
    "FileSource",
    "config_schema",
    "format_duration",
    "load_config",
    "parse_duration",
    "validation_message",
]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: object) -> timedelta:
    """Parse ``"30s"``, ``"5m"``, ``"2h"``, ``"1h30m"``, a number of seconds, or a timedelta."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        parts = _DURATION.findall(text)
        if not text or "".join(n + u for n, u in parts) != text:
            raise ValueError(f"not a duration: {value!r} (write e.g. '30s', '5m', '2h', '1h30m')")
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    else:
        raise ValueError(f"not a duration: {value!r}")
    if not seconds > 0:
        raise ValueError(f"a duration must be positive, got {value!r}")
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The shortest ``parse_duration`` spelling: ``timedelta(minutes=90)`` → ``"90m"``."""
    seconds = value.total_seconds()
    for unit in ("w", "d", "h", "m", "s"):
        count = seconds / _UNIT_SECONDS[unit]
        if count >= 1 and count == int(count):
            return f"{int(count)}{unit}"
    return f"{round(seconds * 1000)}ms"


Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": r"^(\d+(\.\d+)?(ms|s|m|h|d|w))+$",
            "examples": ["30s", "5m", "2h"],
        }
    ),
]
"""A positive time span written as ``"30s"``, ``"5m"``, ``"2h"`` (or seconds as a number)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreSection(_Strict):
    path: Path = Field(default=Path("perfsleuth.duckdb"), description="DuckDB file of the store")


class OutputSection(_Strict):
    dir: Path = Field(default=Path("perfsleuth-out"), description="where reports are written")
    max_points: int = Field(default=5000, ge=100, description="points per plotted series")


class FileSource(_Strict):
    """A CSV or Parquet file holding one of the frame contracts."""

    path: Path
    contract: Literal["metric", "counter", "process", "workload"] = "metric"
    columns: dict[str, str] = Field(default_factory=dict, description="source → contract names")
    missing: Literal["error", "drop"] = "error"
    disorder: Literal["error", "sort"] = "error"
    duplicates: Literal["error", "first"] = "error"


class Config(_Strict):
    """The whole ``perfsleuth.toml``."""

    store: StoreSection = Field(default_factory=StoreSection)
    output: OutputSection = Field(default_factory=OutputSection)
    sources: list[FileSource] = Field(default_factory=list)
    detectors: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="detector name → its parameters (see `perfsleuth config schema`)",
    )


def validation_message(exc: ValidationError, *, source: str) -> str:
    """One line per problem, each naming the key path (``detectors.changepoint.alpha``)."""
    lines = []
    for error in exc.errors():
        path = ".".join(str(p) for p in error["loc"]) or "(top level)"
        lines.append(f"{source}: {path}: {error['msg']}")
    return "\n".join(lines)


def load_config(path: str | Path) -> Config:
    """Read and validate a TOML config, including every detector's parameters."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, source=str(path))) from exc
    from perfsleuth.registry import create  # detectors are imported only when configured

    for name, params in config.detectors.items():
        create(name, params, source=f"{path}: detectors.{name}")
    return config


def config_schema() -> dict[str, Any]:
    """JSON schema of ``perfsleuth.toml``, with every registered detector's parameters."""
    from pydantic import create_model

    from perfsleuth.registry import detector_class, names

    fields: dict[str, Any] = {
        name: (detector_class(name) | None, Field(default=None)) for name in names()
    }
    detectors = create_model(  # type: ignore[call-overload]
        "Detectors", __config__=ConfigDict(extra="forbid"), **fields
    )
    typed = create_model(
        "PerfsleuthConfig",
        __base__=Config,
        detectors=(detectors, Field(default_factory=detectors)),
    )
    schema: dict[str, Any] = typed.model_json_schema()
    schema["title"] = "perfsleuth.toml"
    return schema
