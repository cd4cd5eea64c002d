"""The ``perfsleuth`` command line.

Results go to stdout (``--format table|json|jsonl``), logs to stderr. Exit codes: 0 when no
finding is at or above ``--fail-on``, 1 when one is, 2 for usage, configuration and data errors.
Heavy libraries (pandas, DuckDB, Plotly) are imported inside commands so ``--help`` is fast.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from perfsleuth.errors import PerfsleuthError

if TYPE_CHECKING:
    import pandas as pd

    from perfsleuth.findings import Finding
    from perfsleuth.report.html import Section

__all__ = ["app", "main"]

app = typer.Typer(
    name="perfsleuth",
    help="Automated performance diagnosis: when did performance change, why, and what to fix.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
config_app = typer.Typer(
    help="Validate a config file or print its JSON schema.", no_args_is_help=True
)
app.add_typer(config_app, name="config")

from perfsleuth.process.cli import processes_app  # noqa: E402  (Typer only; work is lazy)

app.add_typer(processes_app, name="processes")

from perfsleuth.bottleneck.cli import (  # noqa: E402  (Typer only; work is lazy)
    bottleneck_app,
    calibrate_command,
    verify_command,
)

app.add_typer(bottleneck_app, name="bottleneck")
app.command("calibrate")(calibrate_command)
app.command("verify")(verify_command)

from perfsleuth.collect.cli import (  # noqa: E402  (Typer only; work is lazy)
    collect_command,
    import_command,
)
from perfsleuth.fleet.cli import fleet_app  # noqa: E402  (Typer only; work is lazy)

app.command("collect")(collect_command)
app.command("import")(import_command)
app.add_typer(fleet_app, name="fleet")

from perfsleuth.analyze.cli import analyze_command, watch_command  # noqa: E402  (Typer only; work is lazy)

app.command("analyze")(analyze_command)
app.command("watch")(watch_command)

log = logging.getLogger("perfsleuth")


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


class Contract(StrEnum):
    metric = "metric"
    counter = "counter"
    process = "process"
    workload = "workload"


@dataclass
class Options:
    format: Format = Format.table
    fail_on: FailOn = FailOn.none


class FindingsAtOrAbove(Exception):
    """Raised after output is written, to exit 1."""


StorePath = Annotated[Path, typer.Option("--store", help="DuckDB store file (created if missing).")]


@app.callback()
def _global(
    ctx: typer.Context,
    fmt: Annotated[Format, typer.Option("--format", help="How findings are printed.")] = (
        Format.table
    ),
    fail_on: Annotated[
        FailOn, typer.Option(help="Exit 1 when a finding is at or above this severity.")
    ] = FailOn.none,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More logs.")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only errors on stderr.")] = False,
) -> None:
    level = (
        logging.ERROR if quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    )
    logging.basicConfig(
        level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    ctx.obj = Options(format=fmt, fail_on=fail_on)


def _emit(ctx: typer.Context, findings: Sequence[Finding], *, title: str | None = None) -> None:
    """Print findings in the chosen format, then exit 1 if any reach ``--fail-on``."""
    from perfsleuth.report import render_findings

    options: Options = ctx.obj
    if options.format is Format.table and title:
        typer.echo(title)
    typer.echo(render_findings(list(findings), options.format.value), nl=False)
    if options.fail_on is not FailOn.none:
        from perfsleuth.findings import Severity

        threshold = Severity.parse(options.fail_on.value)
        if any(f.severity >= threshold for f in findings):
            raise FindingsAtOrAbove


def _keep(
    store: Path,
    command: str,
    frame: pd.DataFrame,
    contract: str,
    source: str,
    findings: Sequence[Finding],
) -> None:
    """Store the frame and the findings as one run of ``command``."""
    from perfsleuth.store import Store

    with Store(store) as db:
        run_id = db.begin_run(command)
        db.write_frame(frame, contract, source=source)
        db.write_findings(findings, run_id=run_id)
        db.finish_run(run_id, status="ok", n_findings=len(findings))


def _note(message: str) -> None:
    """Human-oriented messages go to stderr so stdout stays machine-readable."""
    typer.echo(message, err=True)


@app.command()
def demo(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option(help="Folder for report.html and findings.jsonl.")] = Path(
        "perfsleuth-demo"
    ),
    store: StorePath = Path("perfsleuth.duckdb"),
    seed: Annotated[int, typer.Option(help="Seed of the simulations.")] = 7,
) -> None:
    """Run every detector family on seeded data: store, report, JSON lines; no network."""
    from perfsleuth.demo import run_demo
    from perfsleuth.report._common import FAMILIES, family_of

    result = run_demo(out, store, seed=seed)
    for family in result.families:
        count = sum(1 for f in result.findings if family_of(f) == family)
        _note(f"{FAMILIES[family]}: {count} finding(s)")
    _note(f"report:   {result.report}")
    _note(f"findings: {result.jsonl}")
    _note(f"store:    {result.store}")
    _emit(ctx, result.findings, title=f"{len(result.findings)} finding(s) in the demo data")


@app.command()
def detect(
    ctx: typer.Context,
    files: Annotated[list[Path], typer.Argument(help="CSV or Parquet files.", show_default=False)],
    contract: Annotated[Contract, typer.Option(help="Frame contract the files hold.")] = (
        Contract.metric
    ),
    detector: Annotated[
        list[str] | None,
        typer.Option("--detector", "-d", help="Detector to run (repeatable; default: all)."),
    ] = None,
    store: Annotated[
        Path | None, typer.Option("--store", help="Also keep samples and findings here.")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="Write an HTML report here.")] = None,
) -> None:
    """Validate FILES, run detectors on them, print findings (optionally store and report)."""
    import pandas as pd

    from perfsleuth.diagnose import diagnose
    from perfsleuth.frames import coverage_of, normalise
    from perfsleuth.registry import create, detector_class, names
    from perfsleuth.sources.files import read_frame

    frames = [read_frame(path, contract.value) for path in files]
    frame = normalise(
        pd.concat(frames, ignore_index=True), contract.value, source=", ".join(map(str, files))
    )
    chosen = detector or [n for n in names() if detector_class(n).contract == contract.value]
    findings = diagnose({contract.value: frame}, [create(name) for name in chosen])
    if store is not None:
        sources = ", ".join(map(str, files))
        _keep(store, f"perfsleuth detect {sources}", frame, contract.value, sources, findings)
    if report is not None:
        from perfsleuth.report import write_html

        coverage = tuple(c for f in frames if (c := coverage_of(f)) is not None)
        write_html(
            report,
            findings,
            series=frame if contract is Contract.metric else None,
            coverage=coverage,
        )
        _note(f"report: {report}")
    _emit(ctx, findings)


@app.command()
def changepoints(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="CSV or Parquet with a time column.")],
    column: Annotated[
        list[str], typer.Option("--column", "-c", help="Value column to search (repeatable).")
    ],
    time_column: Annotated[str, typer.Option(help="Name of the time column.")] = "time",
    entity: Annotated[
        str | None, typer.Option(help="Entity name in findings (default: the file name).")
    ] = None,
    unit: Annotated[str, typer.Option(help="Unit of the columns, e.g. ms, s, %, bytes.")] = "",
    alpha: Annotated[float, typer.Option(help="False-positive rate per series.")] = 0.05,
    min_segment: Annotated[int, typer.Option(help="Fewest observations per segment.")] = 5,
    method: Annotated[str, typer.Option(help="fpa (default), paper or f.")] = "fpa",
    raw: Annotated[
        bool,
        typer.Option(help="Search the raw values (no outlier clipping, cycle or trend removal)."),
    ] = False,
    min_effect: Annotated[
        float, typer.Option(help="Drop shifts smaller than this many noise standard deviations.")
    ] = 0.5,
    store: Annotated[
        Path | None, typer.Option("--store", help="Also keep samples and findings here.")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="Write an HTML report here.")] = None,
) -> None:
    """When did the mean of COLUMN change? (Berry & Hellerstein, FPA significance tests)"""
    import pandas as pd

    from perfsleuth.errors import DataError
    from perfsleuth.frames import coverage_of, normalise
    from perfsleuth.registry import create
    from perfsleuth.sources.files import read_table

    detector = create(
        "changepoint",
        {
            "alpha": alpha,
            "min_segment": min_segment,
            "method": method,
            "robust": not raw,
            "min_effect": min_effect,
        },
        source="options",
    )
    table, locate = read_table(file)
    absent = [c for c in (time_column, *column) if c not in table.columns]
    if absent:
        raise DataError(
            f"{file}: no column(s) {', '.join(map(repr, absent))} "
            f"(columns present: {', '.join(map(str, table.columns))})"
        )
    name = entity or file.stem
    frame = pd.concat(
        [
            normalise(
                pd.DataFrame(
                    {
                        "time": table[time_column],
                        "entity": name,
                        "metric": c,
                        "value": table[c],
                        "unit": unit,
                    }
                ),
                "metric",
                source=str(file),
                locate=locate,
                aliases={"time": time_column, "value": c},
            )
            for c in column
        ],
        ignore_index=True,
    )
    findings = detector.detect(frame)
    if store is not None:
        _keep(store, f"perfsleuth changepoints {file}", frame, "metric", str(file), findings)
    if report is not None:
        from perfsleuth.report import changepoint_section, write_html

        coverage = coverage_of(frame)
        write_html(
            report,
            findings,
            series=frame,
            coverage=() if coverage is None else (coverage,),
            sections=[changepoint_section(frame, detector=detector)],  # type: ignore[arg-type]
            title=f"perfsleuth change points: {name}",
        )
        _note(f"report: {report}")
    _emit(ctx, findings)


class WorkloadSource(StrEnum):
    weblog = "weblog"
    pgbench = "pgbench"
    table = "table"
    aggregated = "aggregated"
    frame = "frame"


def _mapping(pairs: str | None, option: str) -> dict[str, str] | None:
    """``"ts=time,kind=type"`` → ``{"ts": "time", "kind": "type"}``."""
    if not pairs:
        return None
    from perfsleuth.errors import ConfigError

    mapping = {}
    for pair in pairs.split(","):
        source, sep, target = pair.partition("=")
        if not sep or not source.strip() or not target.strip():
            raise ConfigError(f"{option}: expected source=target pairs, got {pair!r}")
        mapping[source.strip()] = target.strip()
    return mapping


@app.command()
def workload(
    ctx: typer.Context,
    files: Annotated[list[Path], typer.Argument(help="Log files (or a pgbench log folder).")],
    source: Annotated[WorkloadSource, typer.Option(help="What the files are.")],
    window: Annotated[str, typer.Option(help="Window width, e.g. 30s, 5m, 1h.")] = "5m",
    strict: Annotated[bool, typer.Option(help="Fail on the first bad line.")] = False,
    rules: Annotated[
        Path | None, typer.Option(help="weblog: TOML [[rule]] method + path → type.")
    ] = None,
    scripts: Annotated[
        str | None, typer.Option(help="pgbench: script names in -f order, comma-separated.")
    ] = None,
    columns: Annotated[
        str | None, typer.Option(help="table/aggregated: renames, e.g. ts=time,kind=type.")
    ] = None,
    unit: Annotated[
        str | None,
        typer.Option(help="Latency unit: weblog auto|s|ms|us (default auto); tables s, ms, us."),
    ] = None,
    entity: Annotated[str, typer.Option(help="Name of the service in findings.")] = "service",
    online: Annotated[
        bool, typer.Option(help="Replay window by window as if live (refit on --history).")
    ] = False,
    history: Annotated[str, typer.Option(help="Online: trailing history to fit on.")] = "7d",
    store: Annotated[
        Path | None, typer.Option("--store", help="Also keep the frame and findings here.")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="Write an HTML report here.")] = None,
    save: Annotated[Path | None, typer.Option(help="Save the workload frame (Parquet).")] = None,
    segments: Annotated[
        bool,
        typer.Option(
            help="Also tell anomalies, workload and application changes apart (Cherkasova; "
            "needs cpu_util: a frame source or --cpu)."
        ),
    ] = False,
    cpu: Annotated[
        Path | None,
        typer.Option(help="CSV/Parquet of time, cpu_util[, cpu_cores] samples for the windows."),
    ] = None,
    cpu_unit: Annotated[str, typer.Option(help="Unit of cpu_util: fraction or %.")] = "fraction",
    allowed_error: Annotated[
        float, typer.Option(help="--segments: allowed CPU-model error, share of mean CPU.")
    ] = 0.03,
    idle_util: Annotated[
        float, typer.Option(help="--segments: expected idle CPU, share of the machine.")
    ] = 0.05,
) -> None:
    """Explain response time by the transaction mix (Kelly); flag windows it cannot explain.

    With --segments, also explain CPU by the transactions (Cherkasova et al.) and report
    anomalous periods, workload changes and application changes (naming the transaction types
    whose service time changed).
    """
    from perfsleuth.config import parse_duration
    from perfsleuth.detectors.workload import MixAnomalyDetector
    from perfsleuth.errors import ConfigError
    from perfsleuth.frames import coverage_of
    from perfsleuth.sources import pgbench, transactions, weblog

    try:
        width = parse_duration(window)
    except ValueError as exc:
        raise ConfigError(f"--window: {exc}") from None
    renames = _mapping(columns, "--columns")
    rejected: dict[str, transactions.Rejects] = {}  # log lines left out, for the report
    if source is WorkloadSource.frame:
        from perfsleuth.sources.files import read_frame

        if len(files) != 1:
            raise ConfigError("--source frame reads one file at a time")
        frame = read_frame(files[0], "workload")
    elif source is WorkloadSource.aggregated:
        frame = transactions.read_aggregated(
            files[0], columns=renames, window=width, unit=unit or "s"
        )
    else:
        if source is WorkloadSource.weblog:
            units: dict[str, Literal["auto", "s", "ms", "us"]] = {
                "auto": "auto",
                "s": "s",
                "ms": "ms",
                "us": "us",
            }
            latency_unit = units.get(unit or "auto")
            if latency_unit is None:
                raise ConfigError(f"--unit: weblog takes auto, s, ms or us, got {unit!r}")
            tx = weblog.read_weblog(
                files,
                rules=weblog.load_rules(rules) if rules else None,
                latency_unit=latency_unit,
                strict=strict,  # type: ignore[arg-type]
            )
        elif source is WorkloadSource.pgbench:
            names = [n.strip() for n in scripts.split(",")] if scripts else None
            paths = files[0] if len(files) == 1 else files
            tx = pgbench.read_pgbench(paths, scripts=names, strict=strict)
        else:
            if len(files) != 1:
                raise ConfigError("--source table reads one file at a time")
            tx = transactions.read_transactions(
                files[0], columns=renames, unit=unit or "s", strict=strict
            )
        _note(tx.summary())
        if tx.rejects.count:
            rejected[", ".join(tx.sources)] = tx.rejects
        frame = tx.workload(width)
    if cpu is not None:
        from perfsleuth.sources.cpu import attach_cpu, read_cpu

        before = len(frame)
        frame = attach_cpu(frame, read_cpu(cpu, unit=cpu_unit))
        if len(frame) < before:
            _note(f"{before - len(frame)} window(s) without a CPU sample in {cpu} left out")
    if save is not None:
        frame.to_parquet(save)
        _note(f"workload frame: {save}")
    detector = MixAnomalyDetector(entity=entity)
    if online:
        findings = []
        for event in detector.judge_online(frame, history=history):
            _note(f"{event.time:%Y-%m-%d %H:%M} UTC  {event.state:<7}  {event.finding.explanation}")
            if event.state != "opened":
                findings.append(event.finding)
    else:
        findings = detector.detect(frame)
    sections: list[Section] = []
    if segments:
        from perfsleuth.detectors.segments import SegmentDetector
        from perfsleuth.registry import create
        from perfsleuth.report.segments import segments_section

        by_segment = create(
            "workload_segments",
            {"allowed_error": allowed_error, "idle_util": idle_util, "entity": entity},
            source="options",
        )
        assert isinstance(by_segment, SegmentDetector)
        analysis = by_segment.analyse(frame)
        findings = [*findings, *analysis.findings]
        if report is not None:
            sections.append(segments_section(frame, detector=by_segment, analysis=analysis))
    if store is not None:
        _keep(store, "perfsleuth workload", frame, "workload", entity, findings)
    if report is not None:
        from perfsleuth.report import workload_section, write_html

        coverage = coverage_of(frame)
        write_html(
            report,
            findings,
            coverage=() if coverage is None else (coverage,),
            sections=[workload_section(frame, detector=detector), *sections],
            title=f"perfsleuth workload: {entity}",
            rejected=rejected,
        )
        _note(f"report: {report}")
    _emit(ctx, findings)


@app.command("report")
def report_command(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="HTML file to write.")] = Path(
        "report.html"
    ),
    store: StorePath = Path("perfsleuth.duckdb"),
    findings_file: Annotated[
        Path | None,
        typer.Option("--findings", help="Read findings from this JSON-lines file, not the store."),
    ] = None,
) -> None:
    """Write the HTML report of stored findings (or of a findings.jsonl file)."""
    from perfsleuth.findings import read_jsonl
    from perfsleuth.report import write_html

    if findings_file is not None:
        try:
            text = findings_file.read_text(encoding="utf-8")
        except OSError as exc:
            from perfsleuth.errors import SourceError

            raise SourceError(f"{findings_file}: cannot read: {exc.strerror or exc}") from exc
        found = read_jsonl(text, source=str(findings_file))
        write_html(out, found)
    else:
        from perfsleuth.errors import SourceError
        from perfsleuth.store import Store

        if not store.exists():
            raise SourceError(f"{store}: no such store (run a command with --store first)")
        with Store(store, read_only=True) as db:
            found = db.findings()
            write_html(out, found, series=db.series)
    _note(f"report: {out}")
    _emit(ctx, found)


@config_app.command("check")
def config_check(
    path: Annotated[Path, typer.Argument(help="perfsleuth.toml to validate.")],
) -> None:
    """Validate a config file; errors name the key path."""
    from perfsleuth.config import load_config

    config = load_config(path)
    typer.echo(f"{path}: ok ({len(config.sources)} source(s), {len(config.detectors)} detector(s))")


@config_app.command("schema")
def config_schema() -> None:
    """Print the JSON schema of the config file (for editor completion)."""
    import json

    from perfsleuth.config import config_schema as schema

    typer.echo(json.dumps(schema(), indent=2))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``perfsleuth`` console script; always exits via ``SystemExit``."""
    try:
        # Standalone mode: Typer handles --help and usage errors (exit 2) itself.
        app(args=list(argv) if argv is not None else None, prog_name="perfsleuth")
    except FindingsAtOrAbove:
        sys.exit(1)
    except PerfsleuthError as exc:
        typer.echo(f"perfsleuth: error: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
