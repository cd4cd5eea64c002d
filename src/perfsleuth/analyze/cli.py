"""``perfsleuth analyze`` and ``perfsleuth watch``: Typer functions; work is imported lazily."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["analyze_command", "watch_command"]

ConfigPath = Annotated[
    Path, typer.Argument(help="perfsleuth.toml naming sources, detectors, store, output.")
]


def analyze_command(
    ctx: typer.Context,
    config: ConfigPath = Path("perfsleuth.toml"),
    notify: Annotated[
        bool, typer.Option(help="Send the [notify] notifications (when configured).")
    ] = True,
    report: Annotated[bool, typer.Option(help="Write the HTML report and findings.jsonl.")] = True,
) -> None:
    """Run every configured source and detector family: store, notify, report, print findings.

    Exits 1 when a finding is at or above --fail-on (a global option, before the command).
    """
    from perfsleuth.analyze.run import analyze
    from perfsleuth.cli import _emit, _note
    from perfsleuth.config import load_config

    settings = load_config(config)
    result = analyze(
        settings,
        base=config.resolve().parent,
        command=f"perfsleuth analyze {config}",
        send=notify,
        report=report,
    )
    for info in result.loaded.sources:
        _note(f"read: {info.label}: {info.rows:,} row(s) of {info.contract}")
    for note in result.notes:
        _note(note)
    if result.report is not None:
        _note(f"report:   {result.report}")
        _note(f"findings: {result.jsonl}")
    _note(f"store:    {result.store} (run {result.run_id})")
    ran = sum(1 for r in result.detectors if r.status == "ran")
    _emit(
        ctx,
        result.findings,
        title=f"{len(result.findings)} finding(s) from {ran} detector(s)",
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
    --fail-on.
    """
    import json
    import signal
    import threading

    from perfsleuth.analyze.watch import AlertEvent, Watcher
    from perfsleuth.cli import FailOn, FindingsAtOrAbove, Format, Options, _note
    from perfsleuth.config import format_duration, load_config, parse_duration
    from perfsleuth.errors import ConfigError

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
            typer.echo(event.line())
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
            on_status=_note,
        ) as watcher:
            held = sum(1 for state, _ in watcher.alerts().values() if state == "open")
            every_text = format_duration(watcher.every)
            _note(
                f"watch {watcher.name!r}: {len(settings.sources)} source(s), "
                f"{len(watcher.planned)} detector(s), a check every {every_text}; "
                f"{held} open alert(s) in {watcher.store_path}"
            )
            try:
                watcher.run(checks=checks or None, stop=stop)
            except KeyboardInterrupt:
                _note("watch: interrupted; alert state is saved")
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    if options.fail_on is not FailOn.none:
        from perfsleuth.findings import Severity

        threshold = Severity.parse(options.fail_on.value)
        if any(e.state == "raised" and e.severity >= threshold for e in watcher.events):
            raise FindingsAtOrAbove
