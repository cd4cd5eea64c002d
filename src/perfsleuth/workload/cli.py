"""``perfsleuth workload``: is response time explained by the transaction mix? (Kelly)

A one-family plan (two with ``--segments``) over one workload source built from the flags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfsleuth.cli.inputs import (
    ColumnsOption,
    CpuOfOption,
    CpuOption,
    CpuUnitOption,
    CpuUrlOption,
    DisorderOption,
    DuplicatesOption,
    Files,
    FormatOption,
    Messy,
    MissingOption,
    RulesOption,
    ScriptsOption,
    SinceOption,
    StrictOption,
    TimeUnitOption,
    TzOption,
    UnitOption,
    UntilOption,
    WindowOption,
    workload_source,
)
from perfsleuth.cli.output import ReportOption, StoreOption, emit, execute, note

__all__ = ["workload_command"]


def workload_command(
    ctx: typer.Context,
    files: Files,
    source: FormatOption,
    window: WindowOption = None,
    strict: StrictOption = False,
    rules: RulesOption = None,
    scripts: ScriptsOption = None,
    columns: ColumnsOption = None,
    unit: UnitOption = None,
    entity: Annotated[str, typer.Option(help="Name of the service in findings.")] = "service",
    online: Annotated[
        bool, typer.Option("--online", help="Replay as if live, refitting on --history.")
    ] = False,
    history: Annotated[str, typer.Option(help="Online: trailing history to fit on.")] = "7d",
    store: StoreOption = None,
    report: ReportOption = None,
    save: Annotated[Path | None, typer.Option(help="Save the workload frame (Parquet).")] = None,
    segments: Annotated[
        bool, typer.Option("--segments", help="Also run the segments family (needs CPU).")
    ] = False,
    cpu: CpuOption = None,
    cpu_unit: CpuUnitOption = "fraction",
    cpu_of: CpuOfOption = None,
    cpu_url: CpuUrlOption = None,
    allowed_error: Annotated[
        float, typer.Option(help="--segments: allowed CPU-model error, share of mean CPU.")
    ] = 0.03,
    idle_util: Annotated[
        float, typer.Option(help="--segments: expected idle CPU, share of the machine.")
    ] = 0.05,
    missing: MissingOption = None,
    disorder: DisorderOption = None,
    duplicates: DuplicatesOption = None,
    time_unit: TimeUnitOption = None,
    tz: TzOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
) -> None:
    """Explain response time by the transaction mix (Kelly); flag windows it cannot explain.

    With --segments, also tell anomalies, workload and application changes apart (Cherkasova
    et al.; needs cpu_util: a frame source or --cpu).
    """
    from perfsleuth.families import from_options
    from perfsleuth.pipeline import Input, Outputs, Plan, Step

    spec = workload_source(
        files,
        source,
        window=window,
        strict=strict,
        rules=rules,
        scripts=scripts,
        columns=columns,
        unit=unit,
        cpu=cpu,
        cpu_unit=cpu_unit,
        cpu_of=cpu_of,
        cpu_url=cpu_url,
        messy=Messy(missing, disorder, duplicates, time_unit, tz, since, until),
    )
    mix = from_options(
        "workload",
        {"entity": entity, "online": history if online else None},
        flags={"online": "--history"},
    )
    steps = [Step(mix, "workload")]
    if segments:
        params = {"allowed_error": allowed_error, "idle_util": idle_util, "entity": entity}
        steps.append(Step(from_options("segments", params), "workload"))
    plan = Plan(
        (Input("workload", "workload", (spec,)),),
        tuple(steps),
        Outputs(store=store, report=report, title=f"perfsleuth workload: {entity}"),
        command="perfsleuth workload",
        skip_unsuitable=False,
    )
    result = execute(plan)
    analysis = result.analysis("workload")
    for event in getattr(analysis, "events", ()):
        note(f"{event.time:%Y-%m-%d %H:%M} UTC  {event.state:<7}  {event.finding.explanation}")
    if save is not None and "workload" in result.loaded.frames:
        from perfsleuth.outputs import writing

        with writing(save, what="workload frame") as tmp:
            result.loaded.frames["workload"].to_parquet(tmp)
        note(f"workload frame: {save}")
    emit(ctx, result.findings, incidents=result.incidents)
