"""``perfsleuth changepoints``: when did the mean of a series change? (a one-family plan)"""

from __future__ import annotations

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
from perfsleuth.cli.output import ReportOption, StoreOption, emit, execute

__all__ = ["changepoints_command"]


def changepoints_command(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(help="CSV or Parquet: wide (-c) or a metric frame; - for stdin."),
    ],
    column: Annotated[
        list[str] | None,
        typer.Option(
            "--column",
            "-c",
            help="Value column of a wide file (repeatable; default: a metric "
            "frame with time, entity, metric, value, else the file's one numeric column).",
        ),
    ] = None,
    time_column: Annotated[
        str | None,
        typer.Option(
            help="Wide file: its time column [default: time, else the one named timestamp, "
            "ts, datetime, date or year]",
            show_default=False,
        ),
    ] = None,
    entity: Annotated[
        str | None, typer.Option(help="Wide file: entity in findings (default: the file name).")
    ] = None,
    unit: Annotated[str, typer.Option(help="Wide file: unit, e.g. ms, s, %, bytes.")] = "",
    alpha: Annotated[float, typer.Option(help="False-positive rate per series.")] = 0.05,
    min_size: Annotated[
        int | None,
        typer.Option(
            help="Fewest observations per segment [default: 5; a quarter of a short series]"
        ),
    ] = None,
    method: Annotated[str, typer.Option(help="fpa (default), paper or f.")] = "fpa",
    raw: Annotated[
        bool,
        typer.Option(
            help="The paper's search on the raw values (no cycle, trend or skew handling)."
        ),
    ] = False,
    min_effect: Annotated[
        float | None,
        typer.Option(
            help="Drop shifts smaller than this many noise standard deviations [default: 0.25]",
            show_default=False,
        ),
    ] = None,
    min_change: Annotated[
        float | None,
        typer.Option(
            help="Drop shifts smaller than this fraction of the level, e.g. 0.1 for 10% "
            "[default: 0.05 on series of 1,000 readings or more, none on shorter ones; "
            "0 for data whose zero is arbitrary]",
            show_default=False,
        ),
    ] = None,
    penalty: Annotated[
        float | None,
        typer.Option(
            help="Parsimony: each change point must explain penalty × 2 ln(e n / m) noise "
            "variances, m its shorter side [default: 5; 0 turns it off]",
            show_default=False,
        ),
    ] = None,
    top: Annotated[
        int | None,
        typer.Option(help="Report only the N largest change points of each series."),
    ] = None,
    top_spikes: Annotated[
        int | None,
        typer.Option(
            help="Report the N largest spike runs of each series as findings [default: 3]",
            show_default=False,
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
    """When did the mean of each series change? (Berry & Hellerstein, FPA significance tests)"""
    from perfsleuth.families import from_options
    from perfsleuth.pipeline import Input, Outputs, Plan, Step

    chosen = {
        "min_size": min_size,
        "min_effect": min_effect,
        "min_relative_change": min_change,
        "penalty": penalty,
        "top": top,
        "top_spikes": top_spikes,
    }
    detector = from_options(
        "changepoints",
        {
            "alpha": alpha,
            "method": method,
            "robust": not raw,
            # unset options keep the detector's defaults
            **{name: value for name, value in chosen.items() if value is not None},
        },
        flags={"min_relative_change": "--min-change", "robust": "--raw"},
    )
    source = source_spec(
        {
            "kind": "file",
            "path": file,
            "contract": "metric",
            "values": column or [],
            "time_column": time_column,
            "entity": entity,
            "unit": unit,
        },
        Messy(missing, disorder, duplicates, time_unit, tz, since, until),
    )
    plan = Plan(
        (Input("metric", "metric", (source,)),),
        (Step(detector, "metric"),),
        Outputs(store=store, report=report, title=f"perfsleuth change points: {file.name}"),
        command=f"perfsleuth changepoints {file}",
        skip_unsuitable=False,
    )
    result = execute(plan)
    emit(ctx, result.findings, incidents=result.incidents)
