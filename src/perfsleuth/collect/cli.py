"""``perfsleuth collect``: run the local collector until stopped (SIGTERM/SIGINT)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["collect_command"]


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
