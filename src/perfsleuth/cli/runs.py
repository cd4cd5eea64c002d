"""Whole runs: ``demo``, ``analyze``, ``watch``, ``detect``, ``report``, and ``config``.

Typer functions only; the work is imported inside each command.
"""

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
    TimeUnitOption,
    TzOption,
    UntilOption,
    source_spec,
)
from perfsleuth.cli.output import (
    FailOn,
    FindingsAtOrAbove,
    Format,
    Options,
    ReportOption,
    StoreOption,
    emit,
    execute,
    note,
)

__all__ = [
    "analyze_command",
    "config_app",
    "demo_command",
    "detect_command",
    "report_command",
    "watch_command",
]

ConfigPath = Annotated[
    Path, typer.Argument(help="perfsleuth.toml naming sources, families, store, output.")
]

config_app = typer.Typer(
    help="Validate a config file or print its JSON schema.", no_args_is_help=True
)


def demo_command(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option(help="Folder for report.html and findings.jsonl.")] = Path(
        "perfsleuth-demo"
    ),
    store: Annotated[Path, typer.Option("--store", help="Store file (created if missing).")] = (
        Path("perfsleuth.duckdb")
    ),
    seed: Annotated[int, typer.Option(help="Seed of the simulations.")] = 7,
) -> None:
    """Run every family on seeded data: store, report, JSON lines; no network."""
    from perfsleuth.demo import demo_plan
    from perfsleuth.families import family

    result = execute(demo_plan(out, store, seed=seed))
    for step in result.steps:
        note(f"{family(step.family).title}: {len(step.findings)} finding(s)")
    emit(
        ctx,
        result.findings,
        incidents=result.incidents,
        title=f"{len(result.findings)} finding(s) in the demo data",
    )


def analyze_command(
    ctx: typer.Context,
    config: ConfigPath = Path("perfsleuth.toml"),
    notify: Annotated[
        bool, typer.Option(help="Send the [notify] notifications (when configured).")
    ] = True,
    report: Annotated[bool, typer.Option(help="Write the HTML report and findings.jsonl.")] = True,
) -> None:
    """Run every configured source and family: store, notify, report, print findings.

    Exits 1 when a finding is at or above --fail-on (a global option, before the command).
    """
    import dataclasses

    from perfsleuth.config import load_config
    from perfsleuth.pipeline import Outputs, plan_from_config

    plan = plan_from_config(
        load_config(config), base=config.resolve().parent, command=f"perfsleuth analyze {config}"
    )
    if not report:
        plan = dataclasses.replace(plan, outputs=Outputs(store=plan.outputs.store))
    if not notify:
        plan = dataclasses.replace(plan, notify=None)
    result = execute(plan)
    for info in result.loaded.sources:
        note(f"read: {info.label}: {info.rows:,} row(s) of {info.contract}")
    ran = sum(1 for s in result.steps if s.status == "ran")
    emit(
        ctx,
        result.findings,
        incidents=result.incidents,
        title=f"{len(result.findings)} finding(s) from {ran} famil{'y' if ran == 1 else 'ies'}",
    )


def watch_command(
    ctx: typer.Context,
    config: ConfigPath = Path("perfsleuth.toml"),
    every: Annotated[
        str | None, typer.Option(help="Check once per window of this length ([watch] every).")
    ] = None,
    checks: Annotated[
        int, typer.Option(help="Stop after this many checks (0: run until interrupted).", min=0)
    ] = 0,
    notify: Annotated[
        bool, typer.Option(help="Send raised alerts as [notify] says (when configured).")
    ] = True,
) -> None:
    """Poll the sources every window, run the checks, raise and clear alerts.

    Alert state is kept in the store, so a restart does not raise again what was already
    raised. When a source fails, watch backs off (doubling up to [watch] backoff_max), says
    so on stderr, and resumes when it answers. Alerts are printed on stdout as they are raised
    and cleared. With --checks, exits 1 when an alert raised during the run is at or above
    --fail-on, and 2 when every check failed.
    """
    import json
    import signal
    import threading

    from perfsleuth.config import load_config
    from perfsleuth.durations import format_duration, parse_duration
    from perfsleuth.errors import ConfigError
    from perfsleuth.watch import AlertEvent, Watcher

    settings = load_config(config)
    interval = None
    if every is not None:
        try:
            interval = parse_duration(every)
        except ValueError as exc:
            raise ConfigError(f"--every: {exc}") from None
    options: Options = ctx.obj

    def show(event: AlertEvent) -> None:
        if options.format is Format.table:
            from perfsleuth.report.console import printable

            typer.echo(printable(event.line()))
        else:
            typer.echo(json.dumps(event.to_dict()))

    stop = threading.Event()

    def interrupted(signum: int, frame: object) -> None:
        stop.set()

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, interrupted) if main_thread else None
    try:
        with Watcher(
            settings,
            base=config.resolve().parent,
            every=interval,
            send=notify,
            on_event=show,
            on_status=note,
        ) as watcher:
            held = sum(1 for state, _ in watcher.alerts().values() if state == "open")
            every_text = format_duration(watcher.every)
            note(
                f"watch {watcher.name!r}: {len(settings.sources)} source(s), "
                f"{len(watcher.plan.steps)} famil{'y' if len(watcher.plan.steps) == 1 else 'ies'}, "
                f"a check every {every_text}; "
                f"{held} open alert(s) in {watcher.store_path}"
            )
            try:
                watcher.run(checks=checks or None, stop=stop)
            except KeyboardInterrupt:
                note("watch: interrupted; alert state is saved")
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    if watcher.failures and not watcher.answered:
        from perfsleuth.errors import SourceError

        raise SourceError(
            f"watch: all {watcher.failures} check(s) failed, the sources never answered; "
            f"last failure: {watcher.last_error}"
        )
    if options.fail_on is not FailOn.none:
        from perfsleuth.findings import Severity

        threshold = Severity.parse(options.fail_on.value)
        if any(e.state == "raised" and e.severity >= threshold for e in watcher.events):
            raise FindingsAtOrAbove


class Contract(StrEnum):
    metric = "metric"
    counter = "counter"
    process = "process"
    workload = "workload"


def detect_command(
    ctx: typer.Context,
    files: Annotated[
        list[Path], typer.Argument(help="CSV or Parquet files (- for stdin).", show_default=False)
    ],
    contract: Annotated[Contract, typer.Option(help="Frame contract the files hold.")] = (
        Contract.metric
    ),
    family: Annotated[
        list[str] | None,
        typer.Option(
            "--family",
            "-f",
            help="Family to run (repeatable; default: all that read the contract).",
        ),
    ] = None,
    store: StoreOption = None,
    report: ReportOption = None,
    missing: MissingOption = None,
    disorder: DisorderOption = None,
    duplicates: DuplicatesOption = None,
    time_unit: TimeUnitOption = None,
    tz: TzOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
) -> None:
    """Validate FILES (one frame contract), run every family that reads it, print findings."""
    from perfsleuth.families import FAMILIES, create
    from perfsleuth.pipeline import Input, Outputs, Plan, Step

    chosen = family or [f.name for f in FAMILIES if f.contract == contract.value]
    detectors = [create(name, source="--family") for name in chosen]
    messy = Messy(missing, disorder, duplicates, time_unit, tz, since, until)
    sources = tuple(
        source_spec({"kind": "file", "path": path, "contract": contract.value}, messy)
        for path in files
    )
    plan = Plan(
        (Input(contract.value, contract.value, sources),),
        tuple(Step(d, contract.value) for d in detectors),
        Outputs(store=store, report=report, title="perfsleuth detect"),
        command=f"perfsleuth detect {' '.join(map(str, files))}",
    )
    result = execute(plan)
    emit(ctx, result.findings, incidents=result.incidents)


def report_command(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="HTML file to write.")] = Path(
        "report.html"
    ),
    store: Annotated[Path, typer.Option("--store", help="Store to report on.")] = Path(
        "perfsleuth.duckdb"
    ),
    findings_file: Annotated[
        Path | None,
        typer.Option("--findings", help="Read findings from this JSON-lines file, not the store."),
    ] = None,
) -> None:
    """Write the HTML report of stored findings (or of a findings.jsonl file)."""
    from perfsleuth.errors import ConfigError, SourceError
    from perfsleuth.findings import read_jsonl
    from perfsleuth.pipeline import same_file
    from perfsleuth.report import write_html

    read = ("findings file", findings_file) if findings_file is not None else ("store", store)
    if same_file(out, read[1]):
        raise ConfigError(f"{out}: the report would overwrite its {read[0]}; choose another -o")
    if findings_file is not None:
        from perfsleuth.sources.files import read_text

        found = read_jsonl(read_text(findings_file), source=str(findings_file))
        write_html(out, found)
    else:
        from perfsleuth.store import Store

        if not store.exists():
            raise SourceError(f"{store}: no such store (run a command with --store first)")
        with Store(store, read_only=True) as db:
            found = db.findings()
            write_html(out, found, series=db.series)
    note(f"report: {out}")
    emit(ctx, found)


@config_app.command("check")
def config_check(
    path: Annotated[Path, typer.Argument(help="perfsleuth.toml to validate.")],
) -> None:
    """Validate a config file; errors name the line and the key path."""
    from perfsleuth.config import load_config

    config = load_config(path)
    n = len(config.analyze.families)
    typer.echo(f"{path}: ok ({len(config.sources)} source(s), {n} famil{'y' if n == 1 else 'ies'})")


@config_app.command("schema")
def config_schema() -> None:
    """Print the JSON schema of the config file (for editor completion)."""
    import json

    from perfsleuth.config import config_schema as schema

    typer.echo(json.dumps(schema(), indent=2))
