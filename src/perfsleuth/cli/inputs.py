"""Command-line input options turned into source specs (:mod:`perfsleuth.sources.specs`).

The workload commands (``workload``, ``segments``) read the same kinds of file with the same
flags; this module turns those flags into the one source model the config also uses.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from perfsleuth.sources.specs import Source

__all__ = [
    "ColumnsOption",
    "CpuOption",
    "CpuUnitOption",
    "Files",
    "FormatOption",
    "RulesOption",
    "ScriptsOption",
    "StrictOption",
    "UnitOption",
    "WindowOption",
    "WorkloadFormat",
    "mapping",
    "workload_source",
]


class WorkloadFormat(StrEnum):
    weblog = "weblog"
    pgbench = "pgbench"
    table = "table"
    aggregated = "aggregated"
    frame = "frame"


Files = Annotated[
    list[Path], typer.Argument(help="Log files (or a pgbench log folder).", show_default=False)
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
) -> Source:
    """The source spec the workload flags describe (validated: errors name the flag)."""
    from pydantic import TypeAdapter, ValidationError

    from perfsleuth.errors import ConfigError
    from perfsleuth.sources.specs import Source

    common: dict[str, object] = {"strict": strict, "cpu_unit": cpu_unit}
    if window is not None or fmt is not WorkloadFormat.aggregated:
        common["window"] = window or "5m"
    if cpu is not None:
        common["cpu"] = cpu
    one = files[0]
    if fmt is not WorkloadFormat.weblog and fmt is not WorkloadFormat.pgbench and len(files) != 1:
        raise ConfigError(f"--source {fmt.value} reads one file at a time")
    spec: dict[str, object]
    if fmt is WorkloadFormat.frame:
        spec = {"kind": "file", "path": one, "contract": "workload"}
        if cpu is not None:
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
    try:
        return TypeAdapter(Source).validate_python(spec)
    except ValidationError as exc:
        problems = "; ".join(
            f"--{'-'.join(str(p) for p in e['loc'][1:]).replace('_', '-')}: "
            + e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        )
        raise ConfigError(problems) from None
