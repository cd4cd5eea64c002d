"""``perfsleuth bottleneck …``, ``perfsleuth calibrate`` and ``perfsleuth verify``.

Only Typer is imported at module level; the work happens inside the commands (``--help`` stays
fast). ``infer`` is a one-family plan (:mod:`perfsleuth.pipeline`); the others are the family's
tools: simulated counters, a model check, calibration and verification (this machine's
counters come from ``perfsleuth collect``).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
from perfsleuth.cli.output import ReportOption, StoreOption, emit, execute, note

if TYPE_CHECKING:
    from perfsleuth.bottleneck.widecsv import ColumnMap
    from perfsleuth.sources.specs import Source

__all__ = ["bottleneck_app", "calibrate_command", "verify_command"]

bottleneck_app = typer.Typer(
    help="Bottlenecks and upgrade advice from OS counters (Blake & Breese).",
    no_args_is_help=True,
)

ModelOption = Annotated[
    str, typer.Option("--model", help="Model file, or 'linux' for the built-in one.")
]
CalibrationOption = Annotated[
    Path | None, typer.Option(help="Calibration profile (perfsleuth calibrate).")
]
ErrorModelOption = Annotated[
    Path | None, typer.Option("--error-model", help="Error model (perfsleuth verify).")
]


def _target(text: str | None) -> tuple[float | None, float | None]:
    """``"2x"`` → factor 2; ``"5000"`` → 5000 operations per second."""
    from perfsleuth.errors import ConfigError

    if text is None:
        return None, None
    raw = text.strip().lower()
    try:
        if raw.endswith("x"):
            factor = float(raw[:-1])
            if not factor > 0:
                raise ValueError
            return None, factor
        value = float(raw)
        if not value > 0:
            raise ValueError
        return value, None
    except ValueError:
        raise ConfigError(
            f"--target: expected a throughput (5000) or a factor (2x), got {text!r}"
        ) from None


@bottleneck_app.command("infer")
def infer_command(
    ctx: typer.Context,
    counters: Annotated[
        list[Path],
        typer.Argument(
            help="Counter frame(s): CSV or Parquet (- for stdin), a store (.duckdb) that "
            "perfsleuth collect wrote, or sar's JSON (sadf -j, .json).",
            show_default=False,
        ),
    ],
    model: ModelOption = "linux",
    calibration: CalibrationOption = None,
    error_model: ErrorModelOption = None,
    window: Annotated[str, typer.Option(help="Counters are averaged over windows this long.")] = (
        "1m"
    ),
    min_utilisation: Annotated[
        float, typer.Option(help="No finding below this utilisation of the busiest resource.")
    ] = 0.5,
    upgrades: Annotated[Path | None, typer.Option(help="Upgrade catalogue (TOML).")] = None,
    target: Annotated[
        str | None, typer.Option(help="Throughput to reach: operations/s (5000) or a factor (2x).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the inference.")] = 0,
    device: Annotated[
        str | None,
        typer.Option(help="Disk of a collector's counters (default: the busiest whole disk)."),
    ] = None,
    mapping: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="A wide counter CSV: COLUMN=COUNTER maps one of its columns onto a model "
            "counter (repeatable; e.g. usr=cpu.user), or a TOML file with a [columns] table.",
        ),
    ] = None,
    time_column: Annotated[
        str | None, typer.Option(help="With --map: the CSV's time column (default: time, ts …).")
    ] = None,
    entity: Annotated[
        str | None, typer.Option(help="With --map: the entity its counters describe (file name).")
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
    """Which resource limits the workload? Infer it from COUNTERS (and advise upgrades)."""
    from perfsleuth.families import from_options
    from perfsleuth.pipeline import Input, Outputs, Plan, Step

    goal, factor = _target(target)
    messy = Messy(missing, disorder, duplicates, time_unit, tz, since, until)
    wide = _wide(mapping, model, time_column, entity)
    detector = from_options(
        "bottleneck",
        {
            "model": model,
            "calibration": "" if calibration is None else str(calibration),
            "error_model": "" if error_model is None else str(error_model),
            "window": window,
            "min_utilisation": min_utilisation,
            "upgrades": "" if upgrades is None else str(upgrades),
            "target": goal or 0.0,
            "target_factor": factor or 0.0,
            "device": device or "",
            "seed": seed,
        },
        flags={"target_factor": "--target"},
    )
    plan = Plan(
        (
            Input(
                "counter",
                "counter",
                tuple(_counter_source(path, messy, wide) for path in counters),
            ),
        ),
        (Step(detector, "counter"),),
        Outputs(store=store, report=report, title="perfsleuth bottlenecks"),
        command=f"perfsleuth bottleneck infer {', '.join(map(str, counters))}",
        skip_unsuitable=False,
    )
    result = execute(plan)
    emit(ctx, result.findings, incidents=result.incidents)


def _wide(
    mapping: list[str] | None, model: str, time_column: str | None, entity: str | None
) -> ColumnMap | None:
    """The ``--map`` of a wide counter CSV, checked against the model's counters."""
    from perfsleuth.errors import ConfigError

    if not mapping:
        if time_column is not None or entity is not None:
            raise ConfigError("--time-column and --entity describe a wide CSV: give --map too")
        return None
    from perfsleuth.bottleneck.kernels.model import load_model
    from perfsleuth.bottleneck.widecsv import column_map

    chosen = load_model(model)
    known = [*chosen.counter_columns, *(i.counter for i in chosen.inputs)]
    return column_map(mapping, known, time_column=time_column, entity=entity)


def _counter_source(path: Path, messy: Messy, wide: ColumnMap | None = None) -> Source:
    """A counter file, every counter row of a store, or sar's JSON (the detector translates
    the collector's and sar's counter names into the model's); with ``wide``, a wide CSV whose
    columns it maps onto the model's counters."""
    suffix = path.suffix.lower()
    if wide is not None:
        from perfsleuth.bottleneck.widecsv import check_columns

        check_columns(path, wide)
        spec: dict[str, object] = {
            "kind": "file",
            "path": path,
            "contract": "counter",
            "columns": wide.columns,
            "values": list(wide.columns.values()),
        }
        if wide.time_column is not None:
            spec["time_column"] = wide.time_column
        if wide.entity is not None:
            spec["entity"] = wide.entity
        return source_spec(spec, messy)
    if suffix in (".duckdb", ".db"):
        return source_spec({"kind": "store", "path": path, "contract": "counter"}, messy)
    if suffix == ".json":  # sadf -j output
        return source_spec({"kind": "sar", "path": path}, messy)
    return source_spec({"kind": "file", "path": path, "contract": "counter"}, messy)


def _write(frame: object, out: Path) -> None:
    import pandas as pd

    from perfsleuth.outputs import writing

    assert isinstance(frame, pd.DataFrame)
    with writing(out, what="counter frame") as tmp:
        if out.suffix == ".parquet":
            frame.to_parquet(tmp)
        else:
            frame.to_csv(tmp, index=False)


class Scenario(StrEnum):
    seq_read = "seq_read"
    seq_write = "seq_write"
    rand_read = "rand_read"
    rand_write = "rand_write"
    cpu = "cpu"
    memory = "memory"


@bottleneck_app.command("simulate")
def simulate_command(
    scenario: Annotated[Scenario, typer.Argument(help="Which bottleneck to simulate.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Counter frame to write.")],
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
    samples: Annotated[int, typer.Option(help="Samples (one per interval).")] = 60,
    interval: Annotated[float, typer.Option(help="Seconds between samples.")] = 5.0,
    model: ModelOption = "linux",
    calibration: CalibrationOption = None,
) -> None:
    """Write a simulated counter frame (forward model + error-model noise) with a known
    bottleneck."""
    from perfsleuth.bottleneck.detector import load_setup
    from perfsleuth.datasets.counters import simulate_scenario

    chosen, _ = load_setup(model, None if calibration is None else str(calibration), None)
    run = simulate_scenario(
        scenario.value, model=chosen, seed=seed, samples=samples, interval_s=interval
    )
    _write(run.frame, out)
    utils = ", ".join(f"{k} {v:.0%}" for k, v in run.utilisation.items())
    note(f"{scenario.value}: bottleneck {run.bottleneck} ({utils}) → {out}")


@bottleneck_app.command("check")
def check_command(
    model: Annotated[str, typer.Argument(help="Model file (or 'linux').")] = "linux",
) -> None:
    """Load and check a model file: names, cycles, units, priors, golden cases."""
    from perfsleuth.bottleneck.kernels.model import load_model

    loaded = load_model(model)
    typer.echo(
        f"{loaded.source}: ok — model {loaded.name!r}: {len(loaded.parameters)} parameters, "
        f"{len(loaded.spec.formula)} formulas, {len(loaded.counters)} counters, "
        f"{len(loaded.resources)} resources, {len(loaded.spec.golden)} golden case(s) pass"
    )
    inputs = ", ".join(i.counter for i in loaded.inputs)
    typer.echo(f"counters: {', '.join(loaded.counter_columns)}; inputs: {inputs}")


def calibrate_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Calibration profile to write.")] = Path(
        "calibration.toml"
    ),
    file: Annotated[
        Path, typer.Option(help="Scratch file for the I/O runs (on the device to calibrate).")
    ] = Path("/var/tmp/perfsleuth-calibrate.bin"),
    model: ModelOption = "linux",
    quick: Annotated[bool, typer.Option(help="Fewer sizes and depths, shorter runs.")] = False,
    seconds: Annotated[float | None, typer.Option(help="Seconds per run.")] = None,
    max_busy: Annotated[
        float,
        typer.Option(
            help="Warn, and widen the profile's uncertainty, when more than this share of the "
            "CPU is in use."
        ),
    ] = 0.2,
    builtin: Annotated[
        bool, typer.Option(help="Use the built-in O_DIRECT generator, not fio.")
    ] = False,
    from_fio: Annotated[
        Path | None,
        typer.Option(
            "--from-fio",
            help="Fit the profile from fio JSON results in this directory; run nothing.",
        ),
    ] = None,
) -> None:
    """Measure this machine's maxima (fio, or a built-in generator) and fit a profile."""
    import dataclasses

    from perfsleuth.bottleneck.kernels.calibration import fit_profile
    from perfsleuth.bottleneck.kernels.model import load_model
    from perfsleuth.bottleneck.measure import Plan, calibrate, machine_facts
    from perfsleuth.bottleneck.measure import from_fio as read_fio

    if from_fio is not None:
        runs, skipped = read_fio(from_fio)
        for reason in skipped:
            note(reason)
        info = {"method": f"fio JSON results in {from_fio}", "runs": str(len(runs))}
        profile = fit_profile(load_model(model), runs, machine=machine_facts(), info=info)
        profile.save(out)
        note(f"calibration profile from {len(runs)} fio runs: {out}")
        return
    plan = Plan.quick() if quick else Plan()
    if seconds is not None:
        plan = dataclasses.replace(plan, seconds=seconds)
    profile = calibrate(
        load_model(model),
        path=file,
        plan=plan,
        max_busy=max_busy,
        use_fio=not builtin,
        progress=note,
    )
    profile.save(out)
    note(f"calibration profile: {out}")


def verify_command(
    calibration: CalibrationOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Error model to write.")] = Path(
        "error-model.toml"
    ),
    model: ModelOption = "linux",
    file: Annotated[Path, typer.Option(help="Scratch file for the I/O runs.")] = Path(
        "/var/tmp/perfsleuth-verify.bin"
    ),
    quick: Annotated[bool, typer.Option(help="Fewer levels per sweep.")] = False,
    seconds: Annotated[float, typer.Option(help="Seconds sampled per level.")] = 3.0,
    table: Annotated[
        Path | None, typer.Option(help="Also write predicted vs observed counters (CSV).")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="Write an HTML report of the sweeps.")] = (
        None
    ),
) -> None:
    """Run one-dimensional sweeps, compare counters with the model, learn the error model."""
    from perfsleuth.bottleneck.detector import load_setup
    from perfsleuth.bottleneck.verify import (
        default_sweeps,
        learn_from_cases,
        run_sweeps,
        sweep_table,
    )

    chosen, _ = load_setup(model, None if calibration is None else str(calibration), None)
    try:
        cases = run_sweeps(
            chosen, default_sweeps(str(file), quick=quick), seconds=seconds, progress=note
        )
    finally:
        file.unlink(missing_ok=True)
    errors = learn_from_cases(chosen, cases, source=f"perfsleuth verify ({len(cases)} cases)")
    errors.save(out)
    frame = sweep_table(chosen, cases)
    if table is not None:
        frame.to_csv(table, index=False)
    if report is not None:
        from perfsleuth.bottleneck.report import verification_section
        from perfsleuth.report import write_html

        write_html(
            report,
            [],
            sections=[verification_section(frame)],
            title="perfsleuth model verification",
        )
        note(f"report: {report}")
    worst = frame.assign(abs_error=frame["error"].abs()).groupby("counter")["abs_error"].mean()
    for counter, value in worst.sort_values(ascending=False).head(5).items():
        note(f"  mean |error| {value:.2f} on {counter}")
    note(f"error model ({len(cases)} cases): {out}")
