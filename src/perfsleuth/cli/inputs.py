"""Command-line input options turned into source specs (:mod:`perfsleuth.sources.specs`).

Every command that reads files takes the same options for messy input — ``--missing``,
``--disorder``, ``--duplicates``, ``--time-unit``, ``--tz``, ``--since``, ``--until`` — with the
names and meaning of a config source's keys and of :func:`perfsleuth.frames.normalise`'s
arguments, so the advice an error gives can be followed wherever the user is. They are defined
once here (:class:`Messy`); a command lists them and passes what it got to :func:`source_spec`,
which validates the spec the config would hold and names the flag of any problem. The workload
commands (``workload``, ``segments``) also share their file-format flags
(:func:`workload_source`). A FILE of ``-`` is standard input.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from perfsleuth.sources.specs import Source

__all__ = [
    "ColumnsOption",
    "CpuOption",
    "CpuUnitOption",
    "DisorderOption",
    "DuplicatesOption",
    "Files",
    "FormatOption",
    "Messy",
    "MissingOption",
    "RulesOption",
    "ScriptsOption",
    "SinceOption",
    "StrictOption",
    "TimeUnitOption",
    "TzOption",
    "UnitOption",
    "UntilOption",
    "WindowOption",
    "WorkloadFormat",
    "mapping",
    "source_spec",
    "workload_source",
]

_PANEL = "Messy input (the same keys in a config source)"


class Missing(StrEnum):
    error = "error"
    drop = "drop"


class Disorder(StrEnum):
    error = "error"
    sort = "sort"


class Duplicates(StrEnum):
    error = "error"
    first = "first"


class TimeUnit(StrEnum):
    auto = "auto"
    s = "s"
    ms = "ms"
    us = "us"
    ns = "ns"
    year = "year"


MissingOption = Annotated[
    Missing | None,
    typer.Option(
        help="drop: leave out rows with a missing value or time [default: error, naming the line]",
        rich_help_panel=_PANEL,
        show_default=False,
    ),
]
DisorderOption = Annotated[
    Disorder | None,
    typer.Option(
        help="sort: accept times that go backwards within a series [default: error]",
        rich_help_panel=_PANEL,
        show_default=False,
    ),
]
DuplicatesOption = Annotated[
    Duplicates | None,
    typer.Option(
        help="first: keep the first of rows with the same series and time but different "
        "values [default: error]",
        rich_help_panel=_PANEL,
        show_default=False,
    ),
]
TimeUnitOption = Annotated[
    TimeUnit | None,
    typer.Option(
        help="Unit of numeric times: Unix s, ms, us, ns, or calendar years "
        "[default: auto, from their size]",
        rich_help_panel=_PANEL,
        show_default=False,
    ),
]
TzOption = Annotated[
    str | None,
    typer.Option(
        help="Time zone of times written without one, e.g. Europe/Paris [default: UTC]",
        rich_help_panel=_PANEL,
        show_default=False,
    ),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        help="Only rows at or after this time (ISO 8601).",
        rich_help_panel=_PANEL,
        show_default=False,
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        help="Only rows before this time (ISO 8601).", rich_help_panel=_PANEL, show_default=False
    ),
]


@dataclass(frozen=True, slots=True)
class Messy:
    """The messy-input options a command was given (None: not given, the source's default)."""

    missing: Missing | None = None
    disorder: Disorder | None = None
    duplicates: Duplicates | None = None
    time_unit: TimeUnit | None = None
    tz: str | None = None
    since: str | None = None
    until: str | None = None

    def keys(self) -> dict[str, str]:
        """The options given, as source keys (``{"missing": "drop"}``)."""
        given = {
            "missing": self.missing,
            "disorder": self.disorder,
            "duplicates": self.duplicates,
            "time_unit": self.time_unit,
            "tz": self.tz,
            "since": self.since,
            "until": self.until,
        }
        return {key: str(value) for key, value in given.items() if value is not None}


# Source keys that a command's flag spells differently.
_FLAGS = {"values": "--column", "paths": "FILES", "path": "FILE", "kind": "--source"}


def source_spec(spec: dict[str, Any], messy: Messy | None = None) -> Source:
    """The source ``spec`` (plus the messy-input options given) describes, validated.

    Problems name the flag (``--since: Input should be a valid datetime``); an option that
    does not apply to the kind of input says so.
    """
    from pydantic import ValidationError

    from perfsleuth.errors import ConfigError
    from perfsleuth.sources.specs import validate_source

    full = {**spec, **(messy.keys() if messy is not None else {})}
    try:
        return validate_source(full)
    except ValidationError as exc:
        kind = str(full.get("kind", "file"))
        problems = []
        for error in exc.errors():
            keys = [str(p) for p in error["loc"]]
            message = error["msg"].removeprefix("Value error, ")
            blamed, sep, rest = message.partition(": ")
            if not keys and sep and blamed.replace("_", "").isalnum():
                keys, message = [blamed], rest  # a model validator names the key it blames
            if error["type"] == "extra_forbidden":
                message = f"does not apply to {kind} input"
            name = keys[0] if keys else ""
            flag = _FLAGS.get(name, "--" + "-".join(keys).replace("_", "-")) if keys else kind
            problems.append(f"{flag}: {message}")
        raise ConfigError("; ".join(problems)) from None


class WorkloadFormat(StrEnum):
    weblog = "weblog"
    pgbench = "pgbench"
    table = "table"
    aggregated = "aggregated"
    frame = "frame"


Files = Annotated[
    list[Path],
    typer.Argument(help="Log files (or a pgbench log folder); - for stdin.", show_default=False),
]
FormatOption = Annotated[WorkloadFormat, typer.Option("--source", help="What the files are.")]
WindowOption = Annotated[
    str | None,
    typer.Option(help="Window width, e.g. 30s, 5m, 1h (default 5m; aggregated: its own step)."),
]
StrictOption = Annotated[bool, typer.Option("--strict", help="Fail on the first bad line.")]
RulesOption = Annotated[
    Path | None, typer.Option(help="weblog: TOML [[rule]] method + path → type.")
]
ScriptsOption = Annotated[
    str | None, typer.Option(help="pgbench: script names in -f order, comma-separated.")
]
ColumnsOption = Annotated[
    str | None, typer.Option(help="table/aggregated: renames, e.g. ts=time,kind=type.")
]
UnitOption = Annotated[
    str | None,
    typer.Option(help="Latency unit: weblog auto|s|ms|us (default auto); tables s, ms, us."),
]
CpuOption = Annotated[
    Path | None,
    typer.Option(help="CSV/Parquet of time, cpu_util[, cpu_cores] samples for the windows."),
]
CpuUnitOption = Annotated[str, typer.Option(help="Unit of cpu_util: fraction or %.")]
CpuOfOption = Annotated[
    list[str] | None,
    typer.Option(
        "--cpu-of",
        help="The service's own processes by name (e.g. postgres; repeatable): their CPU, from "
        "--cpu (the collector's store or a process table) or --cpu-url, is what --segments "
        "explains.",
    ),
]
CpuUrlOption = Annotated[
    str | None,
    typer.Option(help="Prometheus with process-exporter: the CPU of the --cpu-of groups."),
]


def mapping(pairs: str | None, option: str) -> dict[str, str]:
    """``"ts=time,kind=type"`` → ``{"ts": "time", "kind": "type"}``."""
    if not pairs:
        return {}
    from perfsleuth.errors import ConfigError

    out = {}
    for pair in pairs.split(","):
        source, sep, target = pair.partition("=")
        if not sep or not source.strip() or not target.strip():
            raise ConfigError(f"{option}: expected source=target pairs, got {pair!r}")
        out[source.strip()] = target.strip()
    return out


def workload_source(
    files: list[Path],
    fmt: WorkloadFormat,
    *,
    window: str | None = None,
    strict: bool = False,
    rules: Path | None = None,
    scripts: str | None = None,
    columns: str | None = None,
    unit: str | None = None,
    cpu: Path | None = None,
    cpu_unit: str = "fraction",
    cpu_of: list[str] | None = None,
    cpu_url: str | None = None,
    messy: Messy | None = None,
) -> Source:
    """The source spec the workload flags describe (validated: errors name the flag)."""
    from perfsleuth.errors import ConfigError

    common: dict[str, object] = {"strict": strict, "cpu_unit": cpu_unit}
    if window is not None or fmt is not WorkloadFormat.aggregated:
        common["window"] = window or "5m"
    if cpu is not None:
        common["cpu"] = cpu
    if cpu_of:
        common["cpu_of"] = list(cpu_of)
    if cpu_url is not None:
        common["cpu_url"] = cpu_url
    one = files[0]
    if fmt is not WorkloadFormat.weblog and fmt is not WorkloadFormat.pgbench and len(files) != 1:
        raise ConfigError(f"--source {fmt.value} reads one file at a time")
    spec: dict[str, object]
    if fmt is WorkloadFormat.frame:
        spec = {"kind": "file", "path": one, "contract": "workload"}
        if cpu is not None or cpu_of or cpu_url is not None:
            raise ConfigError("--cpu: a workload frame carries its own cpu_util column")
    elif fmt is WorkloadFormat.weblog:
        spec = {"kind": "weblog", "paths": files, "rules": rules, "unit": unit or "auto", **common}
    elif fmt is WorkloadFormat.pgbench:
        names = [n.strip() for n in scripts.split(",")] if scripts else []
        spec = {"kind": "pgbench", "paths": files, "scripts": names, **common}
    else:
        kind = "transactions" if fmt is WorkloadFormat.table else "aggregated"
        spec = {
            "kind": kind,
            "path": one,
            "columns": mapping(columns, "--columns"),
            "unit": unit or "s",
            **common,
        }
    return source_spec(spec, messy)
