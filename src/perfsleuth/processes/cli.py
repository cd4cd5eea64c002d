"""``perfsleuth processes scan`` (a one-family plan) and ``perfsleuth processes rules``."""

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
    ReportOption,
    StoreOption,
    emit,
    execute,
    note,
    notify_settings,
    time_option,
)

__all__ = ["Check", "processes_app"]

processes_app = typer.Typer(
    help="Process pathologies: loops, hums, ramps, saw-tooths, caps (Kaminski).",
    no_args_is_help=True,
)


class Check(StrEnum):
    cpu_loop = "cpu_loop"
    constrained_loop = "constrained_loop"
    hum = "hum"
    memory_ramp = "memory_ramp"
    saw_tooth = "saw_tooth"
    cap_exceeded = "cap_exceeded"
    capture_ratio = "capture_ratio"


@processes_app.command("scan")
def scan_command(
    ctx: typer.Context,
    data: Annotated[
        list[Path],
        typer.Argument(help="Process frame(s): CSV or Parquet (- for stdin).", show_default=False),
    ],
    rules: Annotated[
        Path | None, typer.Option(help="Rules file (TOML); default: the built-in rules.")
    ] = None,
    nodes: Annotated[
        Path | None, typer.Option(help="Node table (node, ncpu, os) if DATA lacks ncpu/os.")
    ] = None,
    check: Annotated[
        list[Check] | None, typer.Option("--check", help="Check to run (repeatable; default all).")
    ] = None,
    notify: Annotated[
        Path | None,
        typer.Option(help="Send the run's summary as this file's [notify] table says."),
    ] = None,
    outbox: Annotated[
        Path | None,
        typer.Option(help="Outbox folder (default: next to --store, else perfsleuth-outbox)."),
    ] = None,
    now: Annotated[
        str | None, typer.Option(help="Time of the run for the repeat policy (ISO 8601).")
    ] = None,
    coverage: Annotated[
        Path | None,
        typer.Option(
            help="Write what each check could see per node (periods available / needed, "
            "saturated share, short-lived processes) to this JSON file."
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
    """Scan DATA for CPU loops, constrained loops, hums, ramps, saw-tooths, caps, capture.

    Says on stderr what each check could see (periods available against periods needed), so
    "No findings." also says whether anything could have been found.
    """
    from perfsleuth.pipeline import Input, Outputs, Plan, Step
    from perfsleuth.processes.checks import CHECKS
    from perfsleuth.processes.detector import ProcessAnalysis, ProcessDetector
    from perfsleuth.processes.rules import load_rules

    chosen = {c.value for c in check or Check}
    detector = ProcessDetector(
        rules=load_rules(rules), checks=tuple(name for name in CHECKS if name in chosen)
    )
    messy = Messy(missing, disorder, duplicates, time_unit, tz, since, until)
    sources = tuple(
        source_spec({"kind": "file", "path": p, "contract": "process", "nodes": nodes}, messy)
        for p in data
    )
    plan = Plan(
        (Input("process", "process", sources),),
        (Step(detector, "process"),),
        Outputs(store=store, report=report, title="perfsleuth process pathologies"),
        notify=notify_settings(notify),
        outbox=outbox,
        command=f"perfsleuth processes scan {', '.join(map(str, data))}",
        skip_unsuitable=False,
    )
    result = execute(plan, now=time_option(now, "--now"))
    analysis = result.analysis("processes")
    if isinstance(analysis, ProcessAnalysis):
        from perfsleuth.report.console import one_line

        for line in analysis.coverage_lines():  # a line each: node names may hold line breaks
            note(f"coverage: {one_line(line)}")
        if coverage is not None:
            write_json(coverage, analysis.coverage_dict())
    emit(ctx, result.findings, incidents=result.incidents)


def write_json(path: Path, data: object) -> None:
    """``data`` as indented JSON in ``path`` (:class:`OutputError` when it cannot be written)."""
    import json

    from perfsleuth.outputs import write_text

    write_text(path, json.dumps(data, indent=1, allow_nan=False) + "\n", what="coverage file")
    note(f"coverage: {path}")


@processes_app.command("rules")
def rules_command() -> None:
    """Print the built-in rules file (a commented starting point for your own)."""
    from perfsleuth.processes.rules import default_rules_text

    typer.echo(default_rules_text(), nl=False)
