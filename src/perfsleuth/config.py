"""Configuration: ``perfsleuth.toml`` validated by pydantic v2; unknown keys are errors.

Every section is typed: the sources (:mod:`perfsleuth.sources.specs`), the families to run and
each family's detector parameters (read from :data:`perfsleuth.families.FAMILIES`, so a new
family needs no change here), ``[notify]``, ``[watch]``, the store and the output folder.
Errors name the file, the line and the key path (``perfsleuth.toml:12:
detectors.changepoints.alpha: …``).
"""

from __future__ import annotations

from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    create_model,
)
from pydantic.json_schema import GenerateJsonSchema

from perfsleuth import tomlfile
from perfsleuth.durations import Duration, format_duration
from perfsleuth.errors import ConfigError
from perfsleuth.families import FAMILIES, RENAMED, names
from perfsleuth.notify.settings import NotifySettings, within
from perfsleuth.sources.specs import KINDS, Source

if TYPE_CHECKING:
    from perfsleuth.analysis import Detector

__all__ = [
    "AnalyzeSection",
    "Config",
    "OutputSection",
    "StoreSection",
    "TopologyEntry",
    "WatchSection",
    "config_schema",
    "detectors_of",
    "load_config",
    "parse_config",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreSection(_Strict):
    path: Path = Field(default=Path("perfsleuth.duckdb"), description="DuckDB file of the store")


class OutputSection(_Strict):
    dir: Path = Field(default=Path("perfsleuth-out"), description="where reports are written")
    max_points: int = Field(default=5000, ge=100, description="points per plotted series")


def _known_family(name: str) -> str:
    if name not in names():
        hint = f" (now {RENAMED[name]!r})" if name in RENAMED else ""
        raise ValueError(f"unknown family {name!r}{hint}; known: {', '.join(names())}")
    return name


FamilyName = Annotated[
    str, AfterValidator(_known_family), WithJsonSchema({"type": "string", "enum": names()})
]
"""The name of a family (:data:`perfsleuth.families.FAMILIES`)."""


def _all_families() -> list[str]:
    return names()


def _report_name(name: str) -> str:
    if not name or name in (".", "..") or Path(name).name != name or "\\" in name:
        raise ValueError(
            f"{name!r}: a file name in [output] dir, without folders (set [output] dir to "
            "write elsewhere)"
        )
    return name


class AnalyzeSection(_Strict):
    """What ``perfsleuth analyze`` (and ``watch``) runs."""

    families: list[FamilyName] = Field(
        default_factory=_all_families,
        description="detector families to run (each runs when its frame is present): "
        + ", ".join(names()),
    )
    title: str = Field(default="perfsleuth analysis", description="report title")
    report: Annotated[str, AfterValidator(_report_name)] = Field(
        default="report.html", description="report file name in [output] dir (no folders)"
    )


WATCH_EVERY: Final = (timedelta(milliseconds=10), timedelta(days=1))
"""Shortest and longest window of ``perfsleuth watch`` (and longest wait in an outage)."""


class WatchSection(_Strict):
    """How ``perfsleuth watch`` polls."""

    name: str = Field(default="watch", min_length=1, description="alert state key in the store")
    every: Annotated[Duration, within(*WATCH_EVERY)] = Field(
        default=timedelta(minutes=1), description="one check per window (10ms to 1d)"
    )
    backoff_max: Annotated[Duration, within(*WATCH_EVERY)] = Field(
        default=timedelta(minutes=10),
        description="longest wait between attempts in an outage (10ms to 1d)",
    )
    grace: Annotated[Duration, within(timedelta(seconds=1), timedelta(days=30))] | None = Field(
        default=None,
        description="a finding ending this long before the newest data has ended "
        "(default: two windows)",
    )


class TopologyEntry(_Strict):
    """``[[topology]]``: the nodes a service runs on, so findings about the service and about
    those nodes (processes, resources) are connected into one incident."""

    service: str = Field(min_length=1, description="the service (a workload entity)")
    nodes: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1, description="the nodes it runs on (process nodes, counter hosts)"
    )


@cache
def _detectors_section() -> type[BaseModel]:
    """``[detectors]``: one optional table per family, typed by its detector class."""
    fields: dict[str, Any] = {
        f.name: (f.detector_class() | None, Field(default=None, description=f.title))
        for f in FAMILIES
    }
    section: type[BaseModel] = create_model(  # type: ignore[call-overload]
        "Detectors", __config__=ConfigDict(extra="forbid", frozen=True), **fields
    )
    return section


class Config(_Strict):
    """The whole ``perfsleuth.toml``."""

    store: StoreSection = Field(default_factory=StoreSection)
    output: OutputSection = Field(default_factory=OutputSection)
    sources: list[Source] = Field(default_factory=list)
    analyze: AnalyzeSection = Field(default_factory=AnalyzeSection)
    watch: WatchSection = Field(default_factory=WatchSection)
    notify: NotifySettings | None = Field(
        default=None,
        description="notification settings (recipients, smtp_host, webhook, tickets, ...); "
        "none sent without this table",
    )
    detectors: Any = Field(
        default=None, description="family name → its detector's parameters (config schema)"
    )
    topology: list[TopologyEntry] = Field(
        default_factory=list, description="services and the nodes they run on (incidents)"
    )


def detectors_of(config: Config) -> dict[str, Detector]:
    """The detector of every family ``analyze.families`` names, with its configured parameters."""
    section = config.detectors
    out: dict[str, Detector] = {}
    for family in FAMILIES:
        if family.name not in config.analyze.families:
            continue
        given = getattr(section, family.name, None) if section is not None else None
        out[family.name] = given if given is not None else family.detector_class()()
    return out


def parse_config(data: dict[str, Any], *, source: str, locate: Any = None) -> Config:
    """Validate a parsed config; every error names ``source``, the line and the key path."""
    detectors = data.get("detectors")
    if isinstance(detectors, dict):
        for name in detectors:
            if name in RENAMED:
                line = locate(("detectors", name)) if locate else None
                where = f"{source}:{line}" if line else source
                check = RENAMED[name] == "processes" and name != "process"
                raise ConfigError(
                    f"{where}: detectors.{name}: now [detectors.{RENAMED[name]}]"
                    + (f' (with checks = ["{name}"] to run only this check)' if check else "")
                )
    if "analyze" in data and isinstance(data["analyze"], dict) and "skip" in data["analyze"]:
        raise ConfigError(
            f"{source}: analyze.skip: removed; list the families to run in analyze.families "
            "(and the process checks in detectors.processes.checks)"
        )
    try:
        config = Config.model_validate(data)
        typed = tomlfile.validate(
            _detectors_section(),
            detectors if detectors is not None else {},
            source=source,
            locate=locate,
            prefix="detectors",
        )
    except ValidationError as exc:
        raise ConfigError(
            tomlfile.validation_message(exc, source=source, locate=locate, tags=KINDS)
        ) from None
    config = config.model_copy(update={"detectors": typed})
    _check_retries(config, source=source, locate=locate)
    chosen = set(config.analyze.families)
    for name in type(typed).model_fields:
        if getattr(typed, name) is not None and name not in chosen:
            raise ConfigError(
                f"{source}: detectors.{name}: the family {name!r} is not in analyze.families"
            )
    return config


def _check_retries(config: Config, *, source: str, locate: Any) -> None:
    """Network sources retry a bounded number of times (each wait doubles, up to a cap)."""
    from perfsleuth.sources.prometheus import MAX_RETRIES

    for index, spec in enumerate(config.sources):
        retries = getattr(spec, "retries", None)
        if isinstance(retries, int) and retries > MAX_RETRIES:
            line = locate(("sources", index, "retries")) if locate else None
            where = f"{source}:{line}" if line else source
            raise ConfigError(
                f"{where}: sources.{index}.retries: {retries} is out of range: give 0 to "
                f"{MAX_RETRIES}"
            )


def load_config(path: str | Path) -> Config:
    """Read and validate a TOML config, including every family's detector parameters."""
    document = tomlfile.read_toml(path, what="config")
    return parse_config(document.data, source=document.source, locate=document.line)


class _Schema(GenerateJsonSchema):
    """Defaults written as a user writes them: a duration's is "15s", as its pattern says
    (pydantic would write ISO 8601, "PT15S", which that pattern refuses)."""

    def encode_default(self, dft: Any) -> Any:
        if isinstance(dft, timedelta):
            return format_duration(dft)
        return super().encode_default(dft)


def config_schema() -> dict[str, Any]:
    """JSON schema of ``perfsleuth.toml``, with every family's detector parameters."""
    section = _detectors_section() | None
    typed = create_model(
        "PerfsleuthConfig",
        __base__=Config,
        detectors=(section, Field(default=None)),  # type: ignore[arg-type]
    )
    schema: dict[str, Any] = typed.model_json_schema(schema_generator=_Schema)
    schema["title"] = "perfsleuth.toml"
    return schema
