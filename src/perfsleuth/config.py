"""Configuration: TOML validated by pydantic v2; unknown keys are errors that name their path."""

from __future__ import annotations

import re
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PlainSerializer,
    Tag,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from perfsleuth.errors import ConfigError

if TYPE_CHECKING:
    from perfsleuth.notify.settings import NotifySettings

__all__ = [
    "FAMILIES",
    "AnalyzeSection",
    "Config",
    "Duration",
    "FileSource",
    "PrometheusSource",
    "Source",
    "StoreSource",
    "WatchSection",
    "config_schema",
    "format_duration",
    "load_config",
    "notify_settings",
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


ContractName = Literal["metric", "counter", "process", "workload"]

FamilyName = Literal["changepoint", "workload_mix", "workload_segments", "process", "bottleneck"]

FAMILIES: dict[str, tuple[str, ...]] = {
    "changepoint": ("changepoint",),
    "workload_mix": ("workload_mix",),
    "workload_segments": ("workload_segments",),
    "process": (
        "cpu_loop",
        "constrained_loop",
        "hum",
        "memory_ramp",
        "saw_tooth",
        "cap_exceeded",
        "capture_ratio",
    ),
    "bottleneck": ("bottleneck",),
}
"""Detector family (one per paper) → the registered detectors it runs."""


class FileSource(_Strict):
    """A CSV or Parquet file holding one of the frame contracts."""

    kind: Literal["file"] = Field(
        default="file", description="file (the default), prometheus, store"
    )
    path: Path
    contract: ContractName = "metric"
    columns: dict[str, str] = Field(default_factory=dict, description="source → contract names")
    missing: Literal["error", "drop"] = "error"
    disorder: Literal["error", "sort"] = "error"
    duplicates: Literal["error", "first"] = "error"
    nodes: Path | None = Field(
        default=None, description="process: CSV/Parquet node table (node, ncpu, os) to attach"
    )


class PrometheusSource(_Strict):
    """Range queries against a Prometheus server, turned into one frame contract.

    * ``metric`` / ``counter``: ``queries`` maps a name to PromQL; the name may use labels
      (``"latency.{handler}"``), the query ``{w}`` (a rate window of four steps);
      ``entity_label`` names the entity of metric series (counters: ``instance``). A counter
      source may use ``preset = "node"`` (node-exporter CPU, disk, network, memory) instead.
    * ``process``: process-exporter groups (CPU in cores, resident memory).
    * ``workload``: the ``metric`` histogram's ``_count``/``_sum`` increase per ``label`` value.
    """

    kind: Literal["prometheus"]
    url: str = Field(pattern=r"^https?://", description="base URL, e.g. http://127.0.0.1:9090")
    contract: ContractName = "metric"
    queries: dict[str, str] = Field(default_factory=dict, description="name → PromQL")
    preset: Literal["node"] | None = Field(default=None, description="counter: node-exporter set")
    metric: str = Field(default="", description="workload: histogram base name")
    label: str = Field(default="handler", description="workload: label naming transaction types")
    selector: str = Field(
        default="", description='workload, process: extra label matchers, e.g. job="web"'
    )
    entity_label: str = Field(default="instance", description="metric: label naming the entity")
    unit: str = Field(default="", description="metric: unit of the queried values")
    node_context: bool = Field(
        default=True,
        description="process: add ncpu and machine CPU from node-exporter on the same host",
    )
    step: Duration = Field(default=timedelta(seconds=15), description="resolution of the query")
    range: Duration = Field(default=timedelta(hours=1), description="trailing span read")
    timeout: Duration = Field(default=timedelta(seconds=10), description="per HTTP request")
    retries: int = Field(default=3, ge=0, description="retries of a failed request")

    @model_validator(mode="after")
    def _consistent(self) -> PrometheusSource:
        if self.contract in ("metric", "counter"):
            if self.contract == "metric" and self.preset is not None:
                raise ValueError("preset: only counter sources have presets")
            if not self.queries and self.preset is None:
                raise ValueError(f"queries: a {self.contract} source needs at least one query")
        elif self.queries or self.preset is not None:
            raise ValueError(f"queries: a {self.contract} source takes no queries or preset")
        if self.contract == "workload" and not self.metric:
            raise ValueError("metric: a workload source needs the histogram's base name")
        if self.range < self.step:
            raise ValueError("range: must be at least one step")
        return self


class StoreSource(_Strict):
    """Frames already in a perfsleuth store (e.g. what ``perfsleuth collect`` wrote)."""

    kind: Literal["store"]
    path: Path | None = Field(default=None, description="store file (default: [store] path)")
    contract: ContractName = "metric"
    source: str | None = Field(default=None, description="workload: which stored workload")
    range: Duration | None = Field(
        default=None, description="only this trailing span, back from the newest stored time"
    )


def _source_kind(value: Any) -> str:
    kind = value.get("kind", "file") if isinstance(value, dict) else getattr(value, "kind", "file")
    return kind if isinstance(kind, str) else ""


_SOURCE_KINDS = ("file", "prometheus", "store")

Source = Annotated[
    Annotated[FileSource, Tag("file")]
    | Annotated[PrometheusSource, Tag("prometheus")]
    | Annotated[StoreSource, Tag("store")],
    Discriminator(
        _source_kind,
        custom_error_type="source_kind",
        custom_error_message="kind: expected 'file', 'prometheus' or 'store'",
    ),
]
"""One ``[[sources]]`` entry; ``kind`` picks which (``file`` when absent)."""


def _all_families() -> list[FamilyName]:
    return ["changepoint", "workload_mix", "workload_segments", "process", "bottleneck"]


class AnalyzeSection(_Strict):
    """What ``perfsleuth analyze`` (and ``watch``) runs."""

    families: list[FamilyName] = Field(
        default_factory=_all_families,
        description="detector families to run (each runs when its frame is present)",
    )
    skip: list[str] = Field(default_factory=list, description="detectors not to run")
    title: str = Field(default="perfsleuth analysis", description="report title")
    report: str = Field(default="report.html", description="report file name in [output] dir")


class WatchSection(_Strict):
    """How ``perfsleuth watch`` polls."""

    name: str = Field(default="watch", min_length=1, description="alert state key in the store")
    every: Duration = Field(default=timedelta(minutes=1), description="one check per window")
    backoff_max: Duration = Field(
        default=timedelta(minutes=10), description="longest wait between attempts in an outage"
    )
    grace: Duration | None = Field(
        default=None,
        description="a finding ending this long before the newest data has ended "
        "(default: two windows)",
    )


class Config(_Strict):
    """The whole ``perfsleuth.toml``."""

    store: StoreSection = Field(default_factory=StoreSection)
    output: OutputSection = Field(default_factory=OutputSection)
    sources: list[Source] = Field(default_factory=list)
    analyze: AnalyzeSection = Field(default_factory=AnalyzeSection)
    watch: WatchSection = Field(default_factory=WatchSection)
    notify: dict[str, Any] | None = Field(
        default=None,
        description="notification settings (recipients, smtp_host, webhook, tickets, ...); "
        "none sent without this table",
    )
    detectors: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="detector name → its parameters (see `perfsleuth config schema`)",
    )


_BLAMED = re.compile(r"^([A-Za-z_]\w*): ")


def validation_message(exc: ValidationError, *, source: str) -> str:
    """One line per problem, each naming the key path (``detectors.changepoint.alpha``)."""
    lines = []
    for error in exc.errors():
        loc = list(error["loc"])
        if len(loc) > 2 and loc[0] == "sources" and loc[2] in _SOURCE_KINDS:
            del loc[2]  # the union's tag, not a key the user wrote
        message = error["msg"]
        if error["type"] == "value_error":
            message = message.removeprefix("Value error, ")
            # a model validator names the key it blames first: "queries: ..."
            key = _BLAMED.match(message)
            if key:
                loc.append(key.group(1))
                message = message[key.end() :]
        path = ".".join(str(p) for p in loc) or "(top level)"
        lines.append(f"{source}: {path}: {message}")
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
    from perfsleuth.registry import create, names  # detectors are imported only when configured

    for name, params in config.detectors.items():
        create(name, params, source=f"{path}: detectors.{name}")
    known = set(names())
    for i, name in enumerate(config.analyze.skip):
        if name not in known:
            raise ConfigError(
                f"{path}: analyze.skip.{i}: unknown detector {name!r}; "
                f"known: {', '.join(sorted(known))}"
            )
    chosen = {d for family in config.analyze.families for d in FAMILIES[family]}
    for name in config.detectors:
        if name in FAMILIES_OF and name not in chosen:
            raise ConfigError(
                f"{path}: detectors.{name}: its family {FAMILIES_OF[name]!r} is not in "
                "analyze.families"
            )
    if config.notify is not None:
        notify_settings(config, source=str(path))
    return config


FAMILIES_OF: dict[str, str] = {d: family for family, ds in FAMILIES.items() for d in ds}
"""Detector name → its family."""


def notify_settings(config: Config, *, source: str = "") -> NotifySettings | None:
    """The validated ``[notify]`` table, or None when there is none.

    (Validated here rather than typed on :class:`Config`: ``perfsleuth.notify`` itself uses
    :data:`Duration` from this module, so importing it at the top would be circular.)
    """
    if config.notify is None:
        return None
    from perfsleuth.notify.settings import NotifySettings

    try:
        return NotifySettings.model_validate(config.notify)
    except ValidationError as exc:
        message = validation_message(exc, source=f"{source}: notify" if source else "notify")
        raise ConfigError(message.replace(": notify: ", ": notify.")) from exc


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
    from perfsleuth.notify.settings import NotifySettings

    typed = create_model(
        "PerfsleuthConfig",
        __base__=Config,
        detectors=(detectors, Field(default_factory=detectors)),
        notify=(NotifySettings | None, Field(default=None)),
    )
    schema: dict[str, Any] = typed.model_json_schema()
    schema["title"] = "perfsleuth.toml"
    return schema
