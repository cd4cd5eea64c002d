"""What every command shares: the global options, printing findings, and running a plan.

Results go to stdout (``--format table|json|jsonl``), everything for people to stderr. Every
command that analyses data builds a :class:`~perfsleuth.pipeline.Plan` and hands it to
:func:`execute`, which runs it, says what was read and written, and prints the findings.
Only Typer is imported at module level: ``perfsleuth --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from datetime import datetime

    from perfsleuth.findings import Finding
    from perfsleuth.incidents import Incident
    from perfsleuth.notify.settings import NotifySettings
    from perfsleuth.pipeline import Plan, RunResult

__all__ = [
    "FailOn",
    "FindingsAtOrAbove",
    "Format",
    "Options",
    "ReportOption",
    "StoreOption",
    "emit",
    "execute",
    "note",
    "notify_settings",
    "time_option",
]


class Format(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"


class FailOn(StrEnum):
    none = "none"
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"
    critical = "critical"


@dataclass
class Options:
    """The global options (given before the command)."""

    format: Format = Format.table
    fail_on: FailOn = FailOn.none


class FindingsAtOrAbove(Exception):
    """Raised after output is written, to exit 1."""


StoreOption = Annotated[
    Path | None, typer.Option("--store", help="Also keep the data and findings in this store.")
]
ReportOption = Annotated[Path | None, typer.Option(help="Write an HTML report here.")]


def notify_settings(path: Path | None) -> NotifySettings | None:
    """The ``[notify]`` table of a TOML file (a perfsleuth.toml will do); None without a file."""
    if path is None:
        return None
    from perfsleuth.errors import ConfigError
    from perfsleuth.notify.settings import NotifySettings
    from perfsleuth.tomlfile import read_toml, validate

    document = read_toml(path, what="notification settings")
    table = document.data.get("notify")
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: no [notify] table")
    return validate(
        NotifySettings, table, source=document.source, locate=document.line, prefix="notify"
    )


def time_option(text: str | None, option: str) -> datetime | None:
    """An ISO 8601 time with a zone from the command line (None when not given)."""
    if text is None:
        return None
    from datetime import datetime

    from perfsleuth.errors import ConfigError

    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"{option}: not an ISO 8601 time: {text!r}") from None
    if when.tzinfo is None:
        raise ConfigError(f"{option}: give a time zone (e.g. {text}+00:00)")
    return when


def note(message: str) -> None:
    """Human-oriented messages go to stderr so stdout stays machine-readable; control
    characters from data (a process name's escape sequence) are shown, not obeyed."""
    from perfsleuth.report.console import printable

    typer.echo(printable(message), err=True)


def emit(
    ctx: typer.Context,
    findings: Sequence[Finding],
    *,
    incidents: Sequence[Incident] | None = None,
    title: str | None = None,
) -> None:
    """Print findings in the chosen format, then exit 1 if any reach ``--fail-on``.

    ``json`` is one object, ``{"findings": [...], "incidents": [...]}``: the run's
    ``incidents``, or (for commands that do not run a plan) the findings grouped by
    :func:`perfsleuth.incidents.find_incidents`. ``jsonl`` stays one finding per line.
    """
    from perfsleuth.report import render_findings, render_json

    options: Options = ctx.obj
    if options.format is Format.table and title:
        typer.echo(title)
    if options.format is Format.json:
        if incidents is None:
            from perfsleuth.incidents import find_incidents

            incidents = find_incidents(findings)
        typer.echo(render_json(findings, [i.to_dict() for i in incidents]), nl=False)
    else:
        text = render_findings(
            list(findings), "jsonl" if options.format is Format.jsonl else "table"
        )
        typer.echo(text, nl=False)
    if options.fail_on is not FailOn.none:
        from perfsleuth.findings import Severity

        threshold = Severity.parse(options.fail_on.value)
        if any(f.severity >= threshold for f in findings):
            raise FindingsAtOrAbove


def execute(plan: Plan, *, now: datetime | None = None, quiet: bool = False) -> RunResult:
    """Run ``plan`` and say on stderr what was read, skipped and written (then :func:`emit`).

    ``now`` is the time of the run (notification repeats); ``quiet`` leaves out the readers'
    own accounts of what they read (files, lines, types).
    """
    from perfsleuth.pipeline import run

    result = run(plan, now=now)
    for info in result.loaded.sources:
        if info.note and not quiet:
            note(info.note)
    for line in result.notes:
        note(line)
    if result.report is not None:
        note(f"report:   {result.report}")
    if result.jsonl is not None:
        note(f"findings: {result.jsonl}")
        note(f"incidents: {result.jsonl.with_name('incidents.json')}")
    # numbered as the report numbers them: the incidents of two findings or more
    told = [incident for incident in result.incidents if not incident.alone]
    for number, incident in enumerate(told, 1):
        if len({link.step for link in incident.chain if not link.missing}) > 1:
            note(f"incident {number} ({', '.join(incident.entities)}): {incident.title}")
    if plan.outputs.store is not None:
        note(f"store:    {plan.outputs.store} (run {result.run_id})")
    return result
