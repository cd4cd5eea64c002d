"""``perfsleuth collect`` (this machine, into the store or a counter file) and
``perfsleuth import`` (sar, pidstat, perfmon files into the store)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from perfsleuth.cli.inputs import (
    DisorderOption,
    DuplicatesOption,
    Messy,
    MissingOption,
    SinceOption,
    TzOption,
    UntilOption,
    source_spec,
)

__all__ = ["ImportFormat", "collect_command", "import_command"]


def collect_command(
    store: Annotated[
        Path | None,
        typer.Option("--store", help="Store file to write into [default: perfsleuth.duckdb]."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Counter frame file (.csv, .parquet) instead of a store."),
    ] = None,
    interval: Annotated[str, typer.Option(help="Time between samples, e.g. 1s, 500ms.")] = "1s",
    seconds: Annotated[
        str | None, typer.Option(help="Stop after this long, e.g. 60, 5m (default: when stopped).")
    ] = None,
    samples: Annotated[int | None, typer.Option(help="Stop after this many samples.")] = None,
    cgroup: Annotated[
        str | None,
        typer.Option(help="Also a workload's cgroup (relative to /sys/fs/cgroup)."),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(help="Only this disk's counters (and the cgroup's I/O on it)."),
    ] = None,
    batch: Annotated[int, typer.Option(help="Samples per committed transaction.")] = 10,
    node: Annotated[str | None, typer.Option(help="Node name (default: the host name).")] = None,
    keep_raw: Annotated[
        str | None,
        typer.Option(help="Roll raw samples older than this up to hourly, e.g. 7d."),
    ] = None,
    no_io: Annotated[bool, typer.Option("--no-io", help="Do not read /proc/<pid>/io.")] = False,
    commits: Annotated[
        bool, typer.Option("--commits", help="Print one JSON line per committed batch on stdout.")
    ] = False,
    compact: Annotated[
        str, typer.Option(help="How often to fold batches into the store, when free.")
    ] = "5m",
) -> None:
    """Sample this machine's processes (CPU, memory, I/O) and OS counters into the store.

    Runs until stopped (SIGTERM, Ctrl-C), --seconds or --samples. With --cgroup, a workload's
    counters are sampled too, as `perfsleuth bottleneck infer STORE` needs them. Other
    commands read the store meanwhile (batches wait beside it, in STORE.segments/).
    """
    import json
    import signal
    import tempfile
    import threading

    from perfsleuth.collect.collector import Collector, Commit
    from perfsleuth.durations import parse_duration
    from perfsleuth.errors import ConfigError
    from perfsleuth.store import Store

    every = _seconds(interval, "--interval")
    until = None if seconds is None else _seconds(seconds, "--seconds")
    folding = _seconds(compact, "--compact")
    try:
        keep = None if keep_raw is None else parse_duration(keep_raw)
    except ValueError as exc:
        raise ConfigError(f"--keep-raw: {exc}") from exc
    if out is not None:
        if store is not None:
            raise ConfigError("--store and --out: give one (a store, or a counter file)")
        if out.suffix.lower() not in (".csv", ".parquet"):
            raise ConfigError(f"--out {out}: write a .csv or a .parquet file")

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

    def _collect(path: Path) -> None:
        # the collector does not hold the store: other commands read it meanwhile
        collector = Collector(
            path, node=node, batch=batch, with_io=not no_io, cgroup=cgroup, device=device
        )
        stop = threading.Event()
        before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
        for sig in before:  # a stop commits what is pending, then returns
            signal.signal(sig, lambda signum, frame: stop.set())
        try:
            collector.run(
                every,
                stop,
                keep_raw=keep,
                on_commit=_print,
                samples=samples,
                seconds=until,
                compact_every=folding,
            )
        finally:
            for sig, handler in before.items():
                if handler is not None:
                    signal.signal(sig, handler)

    if out is None:
        _collect(Path("perfsleuth.duckdb") if store is None else store)
        return
    with tempfile.TemporaryDirectory(prefix="perfsleuth-collect-") as scratch:
        _collect(Path(scratch) / "collect.duckdb")
        with Store(Path(scratch) / "collect.duckdb", read_only=True) as db:
            frame = db.read_frame("counter")
    _write_counters(frame, out)


def _seconds(text: str, option: str) -> float:
    """A number of seconds (``60``, ``0.5``) or a duration (``500ms``, ``5m``)."""
    from perfsleuth.durations import parse_duration
    from perfsleuth.errors import ConfigError

    try:
        return parse_duration(float(text) if _is_number(text) else text).total_seconds()
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}") from exc


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _write_counters(frame: object, out: Path) -> None:
    import pandas as pd

    from perfsleuth.errors import SourceError

    assert isinstance(frame, pd.DataFrame)
    try:
        if out.suffix.lower() == ".parquet":
            frame.to_parquet(out, index=False)
        else:
            frame.to_csv(out, index=False)
    except OSError as exc:
        raise SourceError(f"{out}: cannot write: {exc.strerror or exc}") from exc
    counters = frame["counter"].nunique()
    typer.echo(f"{len(frame):,} rows ({counters} counters) → {out}", err=True)


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
    files: Annotated[
        list[Path], typer.Argument(help="Files to import (- for stdin).", show_default=False)
    ],
    store: Annotated[Path, typer.Option("--store", help="Store file to write into.")] = Path(
        "perfsleuth.duckdb"
    ),
    node: Annotated[
        str | None, typer.Option(help="pidstat: node name (default: the banner's host).")
    ] = None,
    missing: MissingOption = None,
    disorder: DisorderOption = None,
    duplicates: DuplicatesOption = None,
    tz: TzOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
) -> None:
    """Import existing sar, pidstat or perfmon data into the store (one JSON line per file).

    --tz applies to pidstat's clock times (sar and perfmon files say their own zone).
    """
    import json

    from perfsleuth.pipeline import Input, Outputs, Plan, run
    from perfsleuth.sources.perfmon import has_processes
    from perfsleuth.sources.specs import Source

    messy = Messy(missing, disorder, duplicates, None, tz, since, until)
    for path in files:
        sources: list[Source]
        if format is ImportFormat.sar:
            sources = [source_spec({"kind": "sar", "path": path}, messy)]
        elif format is ImportFormat.pidstat:
            sources = [source_spec({"kind": "pidstat", "path": path, "node": node}, messy)]
        else:
            spec = {"kind": "perfmon", "path": path, "contract": "counter"}
            sources = [source_spec(spec, messy)]
            if has_processes(path):
                sources.append(source_spec({**spec, "contract": "process"}, messy))
        plan = Plan(
            tuple(Input(s.contract, s.contract, (s,)) for s in sources),
            (),
            Outputs(store=store),
            command=f"perfsleuth import {format.value} {path}",
        )
        loaded = run(plan).loaded
        written = {info.contract: info.rows for info in loaded.sources}
        typer.echo(json.dumps({"file": str(path), "format": format.value, "rows": written}))
