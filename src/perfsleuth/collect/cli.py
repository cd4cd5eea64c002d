"""``perfsleuth collect``: run the local collector until stopped (SIGTERM/SIGINT)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from perfsleuth.errors import DataError

__all__ = ["ImportFormat", "collect_command", "import_command"]


def collect_command(
    store: Annotated[Path, typer.Option("--store", help="Store file to write into.")] = Path(
        "perfsleuth.duckdb"
    ),
    interval: Annotated[str, typer.Option(help="Time between samples, e.g. 1s, 500ms.")] = "1s",
    batch: Annotated[int, typer.Option(help="Samples per committed transaction.")] = 10,
    node: Annotated[str | None, typer.Option(help="Node name (default: the host name).")] = None,
    keep_raw: Annotated[
        str | None,
        typer.Option(help="Roll raw samples older than this up to hourly aggregates, e.g. 7d."),
    ] = None,
    samples: Annotated[
        int | None, typer.Option(help="Stop after this many samples (default: run until stopped).")
    ] = None,
    no_io: Annotated[bool, typer.Option("--no-io", help="Do not read /proc/<pid>/io.")] = False,
    commits: Annotated[
        bool, typer.Option("--commits", help="Print one JSON line per committed batch on stdout.")
    ] = False,
) -> None:
    """Sample per-process CPU, memory and I/O and the OS counters into the store."""
    import json
    import signal
    import threading

    from perfsleuth.collect.collector import Collector, Commit
    from perfsleuth.config import parse_duration
    from perfsleuth.errors import ConfigError
    from perfsleuth.store import Store

    text = interval.strip().lower()
    try:
        seconds = (
            float(text[:-2]) / 1000.0
            if text.endswith("ms")
            else parse_duration(text).total_seconds()
        )
        keep = None if keep_raw is None else parse_duration(keep_raw)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    stop = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    def _print(commit: Commit) -> None:
        if commits:
            line = {
                "samples": commit.samples,
                "first": commit.first.isoformat(),
                "last": commit.last.isoformat(),
                "process_rows": commit.process_rows,
                "counter_rows": commit.counter_rows,
            }
            typer.echo(json.dumps(line))

    with Store(store) as db:
        collector = Collector(db, node=node, batch=batch, with_io=not no_io)
        collector.run(seconds, stop, keep_raw=keep, on_commit=_print, samples=samples)


class ImportFormat(StrEnum):
    sar = "sar"
    pidstat = "pidstat"
    perfmon = "perfmon"


def import_command(
    format: Annotated[
        ImportFormat,
        typer.Argument(
            help="sar: sadf -j JSON or a binary sa file; pidstat: pidstat -h output; "
            "perfmon: Windows perfmon CSV (relog -f csv).",
            show_default=False,
        ),
    ],
    files: Annotated[list[Path], typer.Argument(help="Files to import.", show_default=False)],
    store: Annotated[Path, typer.Option("--store", help="Store file to write into.")] = Path(
        "perfsleuth.duckdb"
    ),
    node: Annotated[
        str | None, typer.Option(help="pidstat: node name (default: the banner's host).")
    ] = None,
    tz: Annotated[str, typer.Option(help="pidstat: time zone of clock times.")] = "UTC",
) -> None:
    """Import existing sar, pidstat or perfmon data into the store (one JSON line per file)."""
    import json

    from perfsleuth.store import Store

    with Store(store) as db:
        for path in files:
            written: dict[str, int] = {}
            if format is ImportFormat.sar:
                from perfsleuth.sources.sysstat import read_sar

                written["counter"] = db.write_frame(read_sar(path), "counter", source=str(path))
            elif format is ImportFormat.pidstat:
                from perfsleuth.sources.sysstat import read_pidstat

                frame = read_pidstat(path, node=node, tz=tz)
                written["process"] = db.write_frame(frame, "process", source=str(path))
            else:
                from perfsleuth.sources.perfmon import perfmon_processes, read_perfmon

                counters = read_perfmon(path)
                written["counter"] = db.write_frame(counters, "counter", source=str(path))
                try:
                    processes = perfmon_processes(path)
                except DataError:  # a log without Process(*) counters: counters only
                    processes = None
                if processes is not None:
                    written["process"] = db.write_frame(processes, "process", source=str(path))
            typer.echo(json.dumps({"file": str(path), "format": format.value, "rows": written}))
