"""``perfsleuth processes``: scan process frames for pathologies, print the default rules.

Only Typer is imported at module level; the work happens inside the commands (``--help`` stays
fast). The shared output helpers live in :mod:`perfsleuth.cli`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["processes_app"]

processes_app = typer.Typer(
    help="Process pathologies (Kaminski): loops, constrained loops, hums, ramps, caps.",
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
        list[Path], typer.Argument(help="Process frame(s): CSV or Parquet.", show_default=False)
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
        bool, typer.Option("--notify", help="Send the run's summary as the rules' [notify] says.")
    ] = False,
    outbox: Annotated[
        Path | None,
        typer.Option(help="Outbox folder (default: next to --store, else perfsleuth-outbox)."),
    ] = None,
    now: Annotated[
        str | None, typer.Option(help="Time of the run for the repeat policy (ISO 8601).")
    ] = None,
    store: Annotated[
        Path | None, typer.Option("--store", help="Keep the frame, findings and node history.")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="Write an HTML report here.")] = None,
) -> None:
    """Scan DATA for CPU loops, constrained loops, hums, ramps, saw-tooths, caps, capture."""
    import pandas as pd

    from perfsleuth.cli import _emit, _note
    from perfsleuth.errors import ConfigError
    from perfsleuth.frames import coverage_of, normalise
    from perfsleuth.process.rules import load_rules
    from perfsleuth.process.scanner import attach_nodes, scan
    from perfsleuth.sources.files import read_frame, read_table

    chosen_rules = load_rules(rules)
    frames = [read_frame(path, "process") for path in data]
    source = ", ".join(map(str, data))
    frame = normalise(pd.concat(frames, ignore_index=True), "process", source=source)
    if nodes is not None:
        table, _ = read_table(nodes)
        frame = attach_nodes(frame, table, source=str(nodes))
    kinds = [c.value for c in check] if check else None
    findings = scan(frame, chosen_rules, kinds)
    when = None
    if now is not None:
        try:
            when = datetime.fromisoformat(now)
        except ValueError:
            raise ConfigError(f"--now: not an ISO 8601 time: {now!r}") from None
        if when.tzinfo is None:
            raise ConfigError(f"--now: give a timezone (e.g. {now}+00:00)")

    db = None
    if store is not None:
        from perfsleuth.store import Store

        db = Store(store)
    try:
        if db is not None:
            run_id = db.begin_run(f"perfsleuth processes scan {source}")
            db.write_frame(frame, "process", source=source)
            node_cols = [c for c in ("ncpu", "os") if c in frame.columns]
            if len(node_cols) == 2:
                db.write_frame(
                    frame[["node", "ncpu", "os"]].drop_duplicates("node"), "node", source=source
                )
            db.write_findings(findings, run_id=run_id)
            db.finish_run(run_id, status="ok", n_findings=len(findings))
        if notify:
            from perfsleuth.notify import notify as send
            from perfsleuth.process.graphs import graphs

            folder = outbox or (
                store.with_name(store.name + ".outbox") if store else Path("perfsleuth-outbox")
            )
            result = send(
                findings,
                chosen_rules.notify,
                outbox=folder,
                store=db,
                graphs=graphs(frame, findings, chosen_rules),
                now=when,
            )
            _note(
                f"notify: {len(result.due)} due, {result.not_due} already notified, "
                f"{result.suppressed_duplicates} duplicate(s) suppressed; "
                f"{len(result.delivered)} delivered, {len(result.kept)} kept in {folder}"
            )
            for error in sorted(set(result.errors)):
                _note(f"notify: {error}")
    finally:
        if db is not None:
            db.close()
    if report is not None:
        from perfsleuth.report import write_html
        from perfsleuth.report.process import process_section

        coverage = coverage_of(frame)
        write_html(
            report,
            findings,
            coverage=() if coverage is None else (coverage,),
            sections=[process_section(frame, findings, rules=chosen_rules)],
            title="perfsleuth process pathologies",
        )
        _note(f"report: {report}")
    _emit(ctx, findings)


@processes_app.command("rules")
def rules_command() -> None:
    """Print the built-in rules file (a commented starting point for your own)."""
    from perfsleuth.process.rules import default_rules_text

    typer.echo(default_rules_text(), nl=False)
