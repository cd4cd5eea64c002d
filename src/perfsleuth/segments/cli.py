"""``perfsleuth segments``: anomaly, workload change or application change? (Cherkasova et al.)

A one-family plan over one workload source (with CPU utilisation) built from the flags;
``perfsleuth workload --segments`` runs this family beside the transaction-mix model.
"""

from __future__ import annotations

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
from perfsleuth.cli.output import ReportOption, StoreOption, emit, execute

__all__ = ["segments_command"]


def segments_command(
    ctx: typer.Context,
    files: Files,
    source: FormatOption,
    window: WindowOption = None,
    strict: StrictOption = False,
    rules: RulesOption = None,
    scripts: ScriptsOption = None,
    columns: ColumnsOption = None,
    unit: UnitOption = None,
    cpu: CpuOption = None,
    cpu_unit: CpuUnitOption = "fraction",
    cpu_of: CpuOfOption = None,
    cpu_url: CpuUrlOption = None,
    entity: Annotated[str, typer.Option(help="Name of the service in findings.")] = "service",
    allowed_error: Annotated[
        float, typer.Option(help="Allowed CPU-model error, share of mean CPU.")
    ] = 0.03,
    idle_util: Annotated[float, typer.Option(help="Expected idle CPU, share of the machine.")] = (
        0.05
    ),
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
    """Explain CPU by the transactions; report anomalies, workload and application changes."""
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
    params = {"allowed_error": allowed_error, "idle_util": idle_util, "entity": entity}
    plan = Plan(
        (Input("workload", "workload", (spec,)),),
        (Step(from_options("segments", params), "workload"),),
        Outputs(store=store, report=report, title=f"perfsleuth segments: {entity}"),
        command="perfsleuth segments",
        skip_unsuitable=False,
    )
    result = execute(plan)
    emit(ctx, result.findings, incidents=result.incidents)
