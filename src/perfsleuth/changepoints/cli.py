"""``perfsleuth changepoints``: when did the mean of a series change? (a one-family plan)"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfsleuth.cli.output import ReportOption, StoreOption, emit, execute

__all__ = ["changepoints_command"]


def changepoints_command(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="CSV or Parquet: wide (-c) or a metric frame.")],
    column: Annotated[
        list[str] | None,
        typer.Option(
            "--column",
            "-c",
            help="Value column of a wide file (repeatable; default: a metric "
            "frame with time, entity, metric, value).",
        ),
    ] = None,
    time_column: Annotated[str, typer.Option(help="Wide file: its time column.")] = "time",
    entity: Annotated[
        str | None, typer.Option(help="Wide file: entity in findings (default: the file name).")
    ] = None,
    unit: Annotated[str, typer.Option(help="Wide file: unit, e.g. ms, s, %, bytes.")] = "",
    alpha: Annotated[float, typer.Option(help="False-positive rate per series.")] = 0.05,
    min_size: Annotated[int, typer.Option(help="Fewest observations per segment.")] = 5,
    method: Annotated[str, typer.Option(help="fpa (default), paper or f.")] = "fpa",
    raw: Annotated[
        bool,
        typer.Option(help="Search the raw values (no outlier clipping, cycle or trend removal)."),
    ] = False,
    min_effect: Annotated[
        float, typer.Option(help="Drop shifts smaller than this many noise standard deviations.")
    ] = 0.5,
    store: StoreOption = None,
    report: ReportOption = None,
) -> None:
    """When did the mean of each series change? (Berry & Hellerstein, FPA significance tests)"""
    from perfsleuth.families import create
    from perfsleuth.run import Input, Outputs, Plan, Step
    from perfsleuth.sources.specs import FileSource

    detector = create(
        "changepoints",
        {
            "alpha": alpha,
            "min_size": min_size,
            "method": method,
            "robust": not raw,
            "min_effect": min_effect,
        },
        source="options",
        prefix="",
    )
    source = FileSource(
        path=file,
        contract="metric",
        values=column or [],
        time_column=time_column,
        entity=entity,
        unit=unit,
    )
    plan = Plan(
        (Input("metric", "metric", (source,)),),
        (Step(detector, "metric"),),
        Outputs(store=store, report=report, title=f"perfsleuth change points: {file.name}"),
        command=f"perfsleuth changepoints {file}",
        skip_unsuitable=False,
    )
    emit(ctx, execute(plan).findings)
