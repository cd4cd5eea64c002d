"""``perfsleuth bottleneck …``, ``perfsleuth calibrate`` and ``perfsleuth verify``.

Only Typer is imported at module level; the work happens inside the commands (``--help`` stays
fast). The shared output helpers live in :mod:`perfsleuth.cli`.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    import pandas as pd

    from perfsleuth.bottleneck.upgrades import UpgradeAnalysis

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
            help="Counter frame(s): CSV or Parquet, a store (.duckdb) that perfsleuth "
            "collect wrote, or sar's JSON (sadf -j, .json).",
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
    store: Annotated[
        Path | None, typer.Option("--store", help="Also keep the frame and findings here.")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="Write an HTML report here.")] = None,
) -> None:
    """Which resource limits the workload? Infer it from COUNTERS (and advise upgrades)."""
    import pandas as pd

    from perfsleuth.cli import _emit, _keep, _note
    from perfsleuth.frames import coverage_of, normalise
    from perfsleuth.registry import create

    goal, factor = _target(target)
    detector = create(
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
        source="options",
    )
    frames = [_read_counters(path, device) for path in counters]
    source = ", ".join(map(str, counters))
    frame = normalise(pd.concat(frames, ignore_index=True), "counter", source=source)
    findings = detector.detect(frame)
    if store is not None:
        _keep(store, f"perfsleuth bottleneck infer {source}", frame, "counter", source, findings)
    if report is not None:
        from perfsleuth.bottleneck.detector import BottleneckDetector
        from perfsleuth.report import write_html
        from perfsleuth.report.bottleneck import bottleneck_section

        assert isinstance(detector, BottleneckDetector)
        analyses = _upgrade_analyses(detector, frame) if upgrades is not None else None
        coverage = coverage_of(frame)
        write_html(
            report,
            findings,
            coverage=() if coverage is None else (coverage,),
            sections=[bottleneck_section(frame, detector=detector, upgrades=analyses)],
            title="perfsleuth bottlenecks",
        )
        _note(f"report: {report}")
    _emit(ctx, findings)


def _read_counters(path: Path, device: str | None) -> pd.DataFrame:
    """A counter frame from a file, or every counter row of a store; the local collector's
    counters (and sar's) are translated to the Linux model's."""
    from perfsleuth.bottleneck.importers import to_model_counters
    from perfsleuth.sources.files import read_frame

    if path.suffix.lower() in (".duckdb", ".db"):
        from perfsleuth.store import Store

        with Store(path, read_only=True) as kept:
            frame = kept.read_frame("counter")
        return to_model_counters(frame, device=device)
    if path.suffix.lower() == ".json":  # sadf -j output
        from perfsleuth.sources.sysstat import read_sar

        return to_model_counters(read_sar(path), device=device)
    return to_model_counters(read_frame(path, "counter"), device=device)


def _upgrade_analyses(detector: object, frame: pd.DataFrame) -> dict[str, UpgradeAnalysis]:
    """Upgrade analysis of each entity's whole period, for the report."""
    from perfsleuth.bottleneck.detector import BottleneckDetector

    assert isinstance(detector, BottleneckDetector)
    return detector.upgrade_analyses(frame)


@bottleneck_app.command("collect")
def collect_command(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Counter frame to write (.csv, .parquet).")
    ],
    seconds: Annotated[float, typer.Option(help="How long to sample.")] = 60.0,
    interval: Annotated[float, typer.Option(help="Seconds between samples.")] = 1.0,
    cgroup: Annotated[
        str | None, typer.Option(help="The workload's cgroup (relative to /sys/fs/cgroup).")
    ] = None,
    device: Annotated[str | None, typer.Option(help="Block device (default: the one of /).")] = (
        None
    ),
    entity: Annotated[str | None, typer.Option(help="Entity name (default: host[/cgroup]).")] = (
        None
    ),
) -> None:
    """Sample /proc and the cgroup's counters into a counter frame the model reads."""
    from perfsleuth.bottleneck.linux import LinuxCounters
    from perfsleuth.cli import _note

    counters = LinuxCounters(device=device, cgroup=cgroup, entity=entity)
    frame = counters.collect(seconds, interval)
    _write(frame, out)
    _note(f"{len(frame):,} rows ({frame['counter'].nunique()} counters) → {out}")


def _write(frame: object, out: Path) -> None:
    import pandas as pd

    from perfsleuth.errors import SourceError

    assert isinstance(frame, pd.DataFrame)
    try:
        if out.suffix == ".parquet":
            frame.to_parquet(out)
        else:
            frame.to_csv(out, index=False)
    except OSError as exc:
        raise SourceError(f"{out}: cannot write: {exc.strerror or exc}") from exc


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
    from perfsleuth.cli import _note
    from perfsleuth.datasets.counters import simulate_scenario

    chosen, _ = load_setup(model, None if calibration is None else str(calibration), None)
    run = simulate_scenario(
        scenario.value, model=chosen, seed=seed, samples=samples, interval_s=interval
    )
    _write(run.frame, out)
    utils = ", ".join(f"{k} {v:.0%}" for k, v in run.utilisation.items())
    _note(f"{scenario.value}: bottleneck {run.bottleneck} ({utils}) → {out}")


@bottleneck_app.command("check")
def check_command(
    model: Annotated[str, typer.Argument(help="Model file (or 'linux').")] = "linux",
) -> None:
    """Load and check a model file: names, cycles, units, priors, golden cases."""
    from perfsleuth.bottleneck.model import load_model

    loaded = load_model(model)
    typer.echo(
        f"{loaded.source}: ok — model {loaded.name!r}: {len(loaded.parameters)} parameters, "
        f"{len(loaded.spec.formula)} formulas, {len(loaded.counters)} counters, "
        f"{len(loaded.resources)} resources, {len(loaded.spec.golden)} golden case(s) pass"
    )


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
    force: Annotated[bool, typer.Option(help="Calibrate even if the machine is busy.")] = False,
    max_busy: Annotated[
        float, typer.Option(help="Refuse when more than this share of the CPU is in use.")
    ] = 0.2,
    builtin: Annotated[
        bool, typer.Option(help="Use the built-in O_DIRECT generator, not fio.")
    ] = False,
) -> None:
    """Measure this machine's maxima (fio, or a built-in generator) and fit a profile."""
    import dataclasses

    from perfsleuth.bottleneck.measure import Plan, calibrate
    from perfsleuth.bottleneck.model import load_model
    from perfsleuth.cli import _note

    plan = Plan.quick() if quick else Plan()
    if seconds is not None:
        plan = dataclasses.replace(plan, seconds=seconds)
    profile = calibrate(
        load_model(model),
        path=file,
        plan=plan,
        force=force,
        max_busy=max_busy,
        use_fio=not builtin,
        progress=_note,
    )
    profile.save(out)
    _note(f"calibration profile: {out}")


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
    from perfsleuth.cli import _note

    chosen, _ = load_setup(model, None if calibration is None else str(calibration), None)
    try:
        cases = run_sweeps(
            chosen, default_sweeps(str(file), quick=quick), seconds=seconds, progress=_note
        )
    finally:
        file.unlink(missing_ok=True)
    errors = learn_from_cases(chosen, cases, source=f"perfsleuth verify ({len(cases)} cases)")
    errors.save(out)
    frame = sweep_table(chosen, cases)
    if table is not None:
        frame.to_csv(table, index=False)
    if report is not None:
        from perfsleuth.report import write_html
        from perfsleuth.report.bottleneck import verification_section

        write_html(
            report,
            [],
            sections=[verification_section(frame)],
            title="perfsleuth model verification",
        )
        _note(f"report: {report}")
    worst = frame.assign(abs_error=frame["error"].abs()).groupby("counter")["abs_error"].mean()
    for counter, value in worst.sort_values(ascending=False).head(5).items():
        _note(f"  mean |error| {value:.2f} on {counter}")
    _note(f"error model ({len(cases)} cases): {out}")
