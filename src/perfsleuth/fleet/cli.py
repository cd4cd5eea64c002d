"""``perfsleuth fleet``: the process checks over a fleet, locally or on a Dask cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfsleuth.processes.cli import Check

__all__ = ["fleet_app"]

fleet_app = typer.Typer(help="Fleet runs: process checks per node, locally or on Dask.")


@fleet_app.command("scan")
def fleet_scan_command(
    ctx: typer.Context,
    source: Annotated[
        Path,
        typer.Argument(
            help="Parquet partitioned by node (node=<name>/...), a Parquet file or folder, "
            "or a .duckdb store.",
            show_default=False,
        ),
    ],
    rules: Annotated[
        Path | None, typer.Option(help="Rules file (TOML); default: the built-in rules.")
    ] = None,
    check: Annotated[
        list[Check] | None, typer.Option("--check", help="Check to run (repeatable; default all).")
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option(help="Dask scheduler address, e.g. tcp://10.0.0.5:8786.")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Local worker processes (default: one per CPU).")
    ] = None,
    tasks: Annotated[int, typer.Option(help="Tasks to split the fleet into.")] = 64,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")
    ] = True,
) -> None:
    """Scan every node of SOURCE for loops, constrained loops, hums, ramps, saw-tooths, caps."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from perfsleuth.cli.output import emit, note
    from perfsleuth.fleet.runner import Coverage, plan, scan_fleet
    from perfsleuth.processes.rules import load_rules

    chosen_rules = load_rules(rules)
    kinds = None if not check else [c.value for c in check]
    work = plan(source, tasks=tasks)
    console = Console(stderr=True)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not progress,
        transient=False,
    ) as bar:
        task_id = bar.add_task("scanning", total=len(work))

        def _advance(done: int, total: int) -> None:
            bar.update(task_id, completed=done, total=total)

        seen: list[Coverage] = []
        findings = scan_fleet(
            work,
            chosen_rules,
            kinds,
            scheduler=scheduler,
            workers=workers,
            progress=_advance,
            seen=seen.append,
        )
    # what the checks could see, so "0 findings" also says whether there could have been any
    from perfsleuth.errors import DataError
    from perfsleuth.report.console import one_line

    seen_all = sum(seen, Coverage())
    if seen_all.nodes == 0:  # as every reader of one file refuses a file without data rows
        raise DataError(f"{source}: no process samples (no data rows)")
    for line in seen_all.lines():  # a line each: node names may hold line breaks
        note(f"coverage: {one_line(line)}")
    emit(ctx, findings, title=f"{len(findings)} finding(s) on {source}")
