"""What a source is, written once: the ``[[sources]]`` entries of the config, and what every
command's input options build.

Each kind of source is a small validated model (unknown keys are errors that name their path);
:func:`perfsleuth.sources.load.read_source` turns one into a frame. The command line builds the
same models from its flags, so a file read by ``perfsleuth workload access.log --source weblog``
and by ``[[sources]] kind = "weblog"`` goes through the same code.

How messy input is accepted is said one way everywhere: the keys ``missing``, ``disorder``,
``duplicates``, ``time_unit``, ``tz``, ``since`` and ``until`` of a source are the command
line's ``--missing``, ``--disorder``, ``--duplicates``, ``--time-unit``, ``--tz``, ``--since``
and ``--until`` and the keyword arguments of :func:`perfsleuth.frames.normalise`, with the same
meaning. A source takes those that apply to it (a web log's times carry their own zone).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, cast, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    model_validator,
)

from perfsleuth.durations import Duration
from perfsleuth.frames import TimeUnit, time_zone

__all__ = [
    "KINDS",
    "AggregatedSource",
    "ContractName",
    "FileSource",
    "PerfmonSource",
    "PgbenchSource",
    "PidstatSource",
    "PrometheusSource",
    "SarSource",
    "Source",
    "StoreSource",
    "TransactionsSource",
    "WeblogSource",
    "validate_source",
]

ContractName = Literal["metric", "counter", "process", "workload"]


class _Strict(BaseModel):
    # defer_build: a kind's validator is built when it is first used, not at import (a
    # command reads one or two kinds of source; building all took 20 ms of each start)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def _known_zone(name: str) -> str:
    time_zone(name)  # ValueError naming the zone when it is not one
    return name


ZoneName = Annotated[str, AfterValidator(_known_zone)]
"""An IANA time zone name (``"UTC"``, ``"Europe/Paris"``)."""


class _Repairs(_Strict):
    """What a frame source repairs instead of refusing (the default refuses, naming the line)."""

    missing: Literal["error", "drop"] = Field(
        default="error", description="drop: leave out rows with a missing value or time"
    )
    disorder: Literal["error", "sort"] = Field(
        default="error", description="sort: accept times that go backwards within a series"
    )
    duplicates: Literal["error", "first"] = Field(
        default="error",
        description="first: of rows with the same series and time but different values, "
        "keep the first",
    )


class _Times(_Strict):
    """How times written as numbers, or without a zone, are read."""

    time_unit: TimeUnit = Field(
        default="auto",
        description="unit of numeric times: s, ms, us, ns (Unix), year (calendar years), or auto "
        "(from their size)",
    )
    tz: ZoneName = Field(default="UTC", description="time zone of times written without one")


class _Span(_Strict):
    """Only the rows in [since, until)."""

    since: datetime | None = Field(
        default=None, description="only rows at or after this time (ISO 8601)"
    )
    until: datetime | None = Field(default=None, description="only rows before this time")

    @model_validator(mode="after")
    def _ordered(self) -> _Span:
        if self.since is not None and self.until is not None:
            zone = time_zone(getattr(self, "tz", "UTC"))
            since, until = (
                t if t.tzinfo else t.replace(tzinfo=zone) for t in (self.since, self.until)
            )
            if since.astimezone(UTC) >= until.astimezone(UTC):
                raise ValueError("until: must be later than since")
        return self


class FileSource(_Repairs, _Times, _Span):
    """A CSV or Parquet file holding one of the frame contracts (``-``: standard input).

    A metric file may be wide: a time column and one column per series (``values``); one
    with a time column and a single numeric column is read as wide without saying so. A
    counter file is wide when ``values`` names its counter columns (``columns`` renames the
    file's columns first, e.g. ``{usr = "cpu.user"}``: a wide CSV mapped onto a model).
    """

    kind: Literal["file"] = Field(
        default="file",
        description="file (the default), prometheus, store, weblog, pgbench, transactions, "
        "aggregated, sar, pidstat, perfmon",
    )
    path: Path
    contract: ContractName = "metric"
    columns: dict[str, str] = Field(default_factory=dict, description="source → contract names")
    nodes: Path | None = Field(
        default=None, description="process: CSV/Parquet node table (node, ncpu, os) to attach"
    )
    values: list[str] = Field(
        default_factory=list,
        description="metric: a wide file's value columns, one series each (default: the "
        "metric contract's columns, else the file's one numeric column)",
    )
    time_column: str | None = Field(
        default=None,
        description="metric, wide file: its time column (default: time, else the one column "
        "named timestamp, ts, datetime, date or year)",
    )
    entity: str | None = Field(
        default=None, description="metric, wide file: entity of its series (default: file name)"
    )
    unit: str = Field(default="", description="metric, wide file: unit of the value columns")

    @model_validator(mode="after")
    def _wide_is_metric(self) -> FileSource:
        if self.values and self.contract not in ("metric", "counter"):
            raise ValueError("values: only metric and counter files can be wide")
        return self


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


class _TransactionLog(_Strict):
    """What every per-transaction source shares: windows, and the CPU measured beside them."""

    contract: Literal["workload"] = "workload"
    window: Duration = Field(default=timedelta(minutes=5), description="window width")
    strict: bool = Field(default=False, description="stop at the first bad line")
    cpu: Path | None = Field(
        default=None,
        description="CPU for the windows: CSV/Parquet of time, cpu_util[, cpu_cores, window_s]; "
        "with cpu_of, a process table or a perfsleuth store (the collector's)",
    )
    cpu_unit: Literal["fraction", "%"] = Field(default="fraction", description="of cpu_util")
    cpu_of: list[str] = Field(
        default_factory=list,
        description="the service's own processes by name (e.g. postgres): their CPU, from cpu "
        "or cpu_url, is what the segments model explains",
    )
    cpu_url: str | None = Field(
        default=None,
        pattern=r"^https?://",
        description="Prometheus with process-exporter: the CPU of the groups named in cpu_of",
    )

    @model_validator(mode="after")
    def _one_cpu(self) -> _TransactionLog:
        if self.cpu_url is not None and not self.cpu_of:
            raise ValueError("cpu_url: say whose CPU with cpu_of")
        if self.cpu_url is not None and self.cpu is not None:
            raise ValueError("cpu_url: give cpu or cpu_url, not both")
        if self.cpu_of and self.cpu is None and self.cpu_url is None:
            raise ValueError("cpu_of: from where? give cpu (a store or process table) or cpu_url")
        return self


class WeblogSource(_TransactionLog, _Span):
    """Access logs (Common/Combined format with the response time last)."""

    kind: Literal["weblog"]
    paths: list[Path] = Field(min_length=1)
    rules: Path | None = Field(default=None, description="TOML [[rule]] method + path → type")
    unit: Literal["auto", "s", "ms", "us"] = Field(default="auto", description="latency unit")


class PgbenchSource(_TransactionLog, _Span):
    """pgbench per-transaction logs (``-l``): files, or a folder of them."""

    kind: Literal["pgbench"]
    paths: list[Path] = Field(min_length=1)
    scripts: list[str] = Field(
        default_factory=list, description="script names in -f order (default: script ids)"
    )


class TransactionsSource(_TransactionLog, _Times, _Span):
    """A CSV/Parquet table with one row per transaction (time, type, latency)."""

    kind: Literal["transactions"]
    path: Path
    columns: dict[str, str] = Field(default_factory=dict, description="source → time/type/latency")
    unit: str = Field(default="s", description="latency unit: s, ms, us, ns")


class AggregatedSource(_TransactionLog, _Times, _Span):
    """A CSV/Parquet table per window and type (time, type, count, rt_sum or rt_mean)."""

    kind: Literal["aggregated"]
    path: Path
    columns: dict[str, str] = Field(default_factory=dict, description="source → contract names")
    unit: str = Field(default="s", description="unit of rt_sum / rt_mean: s, ms, us, ns")
    window: Duration | None = Field(  # type: ignore[assignment]
        default=None, description="window width (default: the most common step between windows)"
    )


class SarSource(_Repairs, _Span):
    """sar's data: ``sadf -j`` JSON, or a binary sa file (read with the machine's sadf)."""

    kind: Literal["sar"]
    path: Path
    contract: Literal["counter"] = "counter"


class PidstatSource(_Repairs, _Span):
    """``pidstat -h`` output (per-process CPU and memory)."""

    kind: Literal["pidstat"]
    path: Path
    contract: Literal["process"] = "process"
    node: str | None = Field(default=None, description="node name (default: the banner's host)")
    tz: ZoneName = Field(default="UTC", description="time zone of clock times")


class PerfmonSource(_Repairs, _Span):
    """A Windows perfmon log as CSV (``relog -f csv``): its counters or its processes."""

    kind: Literal["perfmon"]
    path: Path
    contract: Literal["counter", "process"] = "counter"


def _source_kind(value: Any) -> str:
    kind = value.get("kind", "file") if isinstance(value, dict) else getattr(value, "kind", "file")
    return kind if isinstance(kind, str) else ""


KINDS = (
    "file",
    "prometheus",
    "store",
    "weblog",
    "pgbench",
    "transactions",
    "aggregated",
    "sar",
    "pidstat",
    "perfmon",
)
"""Every kind of source (the tag of :data:`Source`)."""

Source = Annotated[
    Annotated[FileSource, Tag("file")]
    | Annotated[PrometheusSource, Tag("prometheus")]
    | Annotated[StoreSource, Tag("store")]
    | Annotated[WeblogSource, Tag("weblog")]
    | Annotated[PgbenchSource, Tag("pgbench")]
    | Annotated[TransactionsSource, Tag("transactions")]
    | Annotated[AggregatedSource, Tag("aggregated")]
    | Annotated[SarSource, Tag("sar")]
    | Annotated[PidstatSource, Tag("pidstat")]
    | Annotated[PerfmonSource, Tag("perfmon")],
    Discriminator(
        _source_kind,
        custom_error_type="source_kind",
        custom_error_message="kind: expected one of " + ", ".join(map(repr, KINDS)),
    ),
]
"""One ``[[sources]]`` entry; ``kind`` picks which (``file`` when absent)."""

_MODELS: dict[str, type[BaseModel]] = {
    get_args(member)[1].tag: get_args(member)[0] for member in get_args(get_args(Source)[0])
}
"""The model of each kind (read from :data:`Source`, so the two cannot disagree)."""


def validate_source(spec: Mapping[str, Any]) -> Source:
    """``spec`` validated as the kind of source it names (``file`` when it names none).

    The same model and errors as ``TypeAdapter(Source)``, but only that kind's validator is
    built; an error's ``loc`` starts at the key (not at the kind).
    """
    model = _MODELS.get(_source_kind(spec))
    if model is None:  # not a kind: Source's own error names the kinds
        source: Source = TypeAdapter(Source).validate_python(spec)
        return source
    return cast("Source", model.model_validate(spec))
