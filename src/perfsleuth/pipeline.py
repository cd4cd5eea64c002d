"""The one run path: plan → sources → frames → analyses → store / report / notify.

``perfsleuth analyze``, ``demo``, every family command and :func:`diagnose` build a
:class:`Plan` and call :func:`run`:

1. each :class:`Input` is read (its sources, through :mod:`perfsleuth.sources.load`) or taken
   as given (an in-memory frame);
2. each :class:`Step` runs its family's detector once on its input: ``analyse(frame)`` gives an
   analysis (the findings and what they rest on). A step whose input is empty does not run
   ("no data"); one whose data are unsuitable (too few, no ``cpu_util``) is skipped and says
   why: one family cannot stop the others;
3. the findings are connected into incidents (:mod:`perfsleuth.incidents`: findings that
   overlap in time and relate by service, node, process and resource tell one story);
4. the frames read, the findings and the incidents are stored as one run, notifications are
   sent, and the report opens with the incidents and draws every analysis (it never fits or
   searches again), with ``findings.jsonl`` and ``incidents.json`` beside it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from perfsleuth.analysis import Analysis, Detector, Family
from perfsleuth.errors import ConfigError, DataError, PerfsleuthError
from perfsleuth.families import create, family
from perfsleuth.findings import Finding, ordered, write_jsonl
from perfsleuth.incidents import Covered, Incident, Topology, covered_by, find_incidents, revealed
from perfsleuth.progress import PROGRESS
from perfsleuth.sources.load import Loaded, SourceInfo, load

if TYPE_CHECKING:
    from perfsleuth.config import Config
    from perfsleuth.notify import NotifyReport
    from perfsleuth.notify.settings import NotifySettings
    from perfsleuth.notify.summary import Graph
    from perfsleuth.report.section import Section
    from perfsleuth.sources.specs import Source
    from perfsleuth.store import Store

__all__ = [
    "Input",
    "Outputs",
    "Plan",
    "RunResult",
    "Step",
    "StepResult",
    "analyse_steps",
    "check_outputs",
    "diagnose",
    "keep_frames",
    "plan_from_config",
    "read_inputs",
    "run",
    "same_file",
]

log = logging.getLogger(__name__)

Status = Literal["ran", "no data", "skipped"]


@dataclass(frozen=True, eq=False)
class Input:
    """One frame a run reads: from ``sources`` (read when the run starts) or ``frame`` (given).

    ``label`` names a given frame in the store and the report (sources name themselves).
    """

    name: str
    contract: str
    sources: tuple[Source, ...] = ()
    frame: pd.DataFrame | None = None
    label: str = ""


@dataclass(frozen=True, eq=False)
class Step:
    """One family's detector run on one input."""

    detector: Detector
    input: str

    @property
    def family(self) -> Family:
        return family(self.detector.name)


@dataclass(frozen=True, slots=True)
class Outputs:
    """Where a run's results go; ``None`` writes nothing there."""

    store: Path | None = None
    report: Path | None = None
    jsonl: Path | None = None
    title: str = "perfsleuth analysis"
    max_points: int = 5000


@dataclass(frozen=True, eq=False)
class Plan:
    """What a run reads, which families it runs on what, and where results go.

    Parameters
    ----------
    inputs, steps
        The frames and the detector steps reading them (by input name).
    outputs
        Store, report, JSON lines.
    notify
        Notification settings (none sent without them); ``outbox`` is their folder (default:
        beside the store, ``<store>.outbox``).
    base
        Folder relative source paths are taken from (the config file's).
    command
        How the run is recorded in the store.
    skip_unsuitable
        A step whose data do not suit its detector (too few, a column missing) is skipped and
        says why, so one family cannot stop the others; ``False`` makes that an error (a
        one-family command has nothing else to show).
    topology
        Which nodes each service runs on (the config's ``[[topology]]``), to connect findings
        into incidents; what the data reveal is added to it.
    """

    inputs: tuple[Input, ...]
    steps: tuple[Step, ...]
    outputs: Outputs = field(default_factory=Outputs)
    notify: NotifySettings | None = None
    outbox: Path | None = None
    base: Path | None = None
    command: str = "perfsleuth"
    skip_unsuitable: bool = True
    topology: Topology = field(default_factory=Topology)


@dataclass(frozen=True, eq=False)
class StepResult:
    """What one step did: ``ran`` (with its analysis), ``no data``, or ``skipped`` (why)."""

    family: str
    input: str
    contract: str
    status: Status
    analysis: Analysis | None = None
    note: str = ""

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.analysis.findings if self.analysis is not None else ()


@dataclass(eq=False)
class RunResult:
    """Everything one run produced."""

    findings: list[Finding]
    steps: tuple[StepResult, ...]
    loaded: Loaded
    run_id: str | None = None
    report: Path | None = None
    jsonl: Path | None = None
    notified: NotifyReport | None = None
    notes: list[str] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)

    def analysis(self, family_name: str) -> Analysis | None:
        """The analysis of the first step of ``family_name`` that ran (None if none did)."""
        for step in self.steps:
            if step.family == family_name and step.analysis is not None:
                return step.analysis
        return None


# --------------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------------


def plan_from_config(config: Config, *, base: Path | None = None, command: str = "") -> Plan:
    """The plan ``perfsleuth analyze`` runs: every source (joined per contract), every chosen
    family on the frame of its contract, the store, the report and the notifications."""
    from perfsleuth.config import detectors_of

    contracts = sorted({s.contract for s in config.sources})
    inputs = tuple(
        Input(c, c, tuple(s for s in config.sources if s.contract == c)) for c in contracts
    )
    steps = tuple(Step(d, d.contract) for d in detectors_of(config).values())
    out_dir = _resolve(config.output.dir, base)
    store = _resolve(config.store.path, base)
    settings = config.notify
    if settings is not None and settings.tickets and base is not None:
        tickets = str(_resolve(Path(settings.tickets), base))
        settings = settings.model_copy(update={"tickets": tickets})
    return Plan(
        inputs,
        steps,
        Outputs(
            store=store,
            report=out_dir / config.analyze.report,
            jsonl=out_dir / "findings.jsonl",
            title=config.analyze.title,
            max_points=config.output.max_points,
        ),
        notify=settings,
        base=base,
        command=command or "perfsleuth analyze",
        topology=Topology.of((e.service, e.nodes) for e in config.topology),
    )


def _resolve(path: Path, base: Path | None) -> Path:
    path = path.expanduser()
    return path if base is None or path.is_absolute() else base / path


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def read_inputs(plan: Plan, *, now: datetime | None = None, store: Store | None = None) -> Loaded:
    """Every input of ``plan`` as a normalised frame (keyed by input name)."""
    frames: dict[str, pd.DataFrame] = {}
    infos: list[SourceInfo] = []
    store_path = plan.outputs.store
    for item in plan.inputs:
        if item.frame is not None:
            frame = _normalised(item.frame, item.contract, item.label or item.name)
            infos.append(_given(item, frame))
        else:
            loaded = load(item.sources, base=plan.base, now=now, store_path=store_path, store=store)
            frame = loaded.frames.get(item.contract, pd.DataFrame())
            infos.extend(loaded.sources)
        if len(frame):
            frames[item.name] = frame
    return Loaded(frames, tuple(infos))


def _normalised(frame: pd.DataFrame, contract: str, label: str) -> pd.DataFrame:
    from perfsleuth.frames import coverage_of, normalise

    coverage = coverage_of(frame)
    if coverage is not None and coverage.contract == contract:
        return frame
    return normalise(frame, contract, source=label)


def _given(item: Input, frame: pd.DataFrame) -> SourceInfo:
    label = item.label or item.name
    if len(frame) == 0:
        return SourceInfo(label, item.contract, 0, None, None)
    times = frame["time"]
    return SourceInfo(
        label,
        item.contract,
        len(frame),
        times.min().floor("us").to_pydatetime(),
        times.max().floor("us").to_pydatetime(),
    )


def analyse_steps(
    steps: Sequence[Step], frames: Mapping[str, pd.DataFrame], *, skip_unsuitable: bool = True
) -> tuple[StepResult, ...]:
    """Run each step's detector once on its input; unsuitable data skip a step (logged), or
    raise when ``skip_unsuitable`` is false."""
    results: list[StepResult] = []
    for step in steps:
        name, contract = step.family.name, step.detector.contract
        frame = frames.get(step.input)
        if frame is None or len(frame) == 0:
            results.append(StepResult(name, step.input, contract, "no data"))
            continue
        # progress (a terminal sees it by default): searches take a while
        log.info("%s: analysing %d row(s) ...", name, len(frame), extra=PROGRESS)
        try:
            analysis = step.detector.analyse(frame)
        except DataError as exc:
            if not skip_unsuitable:
                raise
            log.warning("%s skipped: %s", name, exc)
            results.append(StepResult(name, step.input, contract, "skipped", note=str(exc)))
            continue
        log.info("%s: %d finding(s)", name, len(analysis.findings))
        results.append(StepResult(name, step.input, contract, "ran", analysis))
    return tuple(results)


def run(plan: Plan, *, now: datetime | None = None, send: bool = True) -> RunResult:
    """Read, analyse, store, notify and report, as ``plan`` says (see the module docstring).

    Parameters
    ----------
    now
        End of Prometheus ranges and time of the notifications (default: the clock).
    send
        Send the plan's notifications (when it has settings).
    """
    check_outputs(plan)
    store_path = plan.outputs.store
    notes: list[str] = []
    with contextlib.ExitStack() as stack:
        db: Store | None = None
        if store_path is not None:
            from perfsleuth.store import Store  # duckdb only when a store is used

            db = stack.enter_context(Store(store_path))
        loaded = read_inputs(plan, now=now, store=db)
        if not loaded.frames:
            raise DataError("the sources gave no data; nothing to analyse")
        steps = analyse_steps(plan.steps, loaded.frames, skip_unsuitable=plan.skip_unsuitable)
        findings = ordered(f for step in steps for f in step.findings)
        result = RunResult(findings, steps, loaded, notes=notes)
        result.incidents = incidents_of(plan, steps, loaded.frames, findings)
        if db is not None:
            result.run_id = db.begin_run(plan.command)
            try:
                keep_frames(db, plan, loaded)
                db.write_findings(findings, run_id=result.run_id)
                db.write_incidents(result.incidents, run_id=result.run_id)
                if send and plan.notify is not None:
                    result.notified = _notify(db, plan, plan.notify, result, now)
            except BaseException as exc:
                status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
                with contextlib.suppress(PerfsleuthError):  # keep the first error, not this one
                    db.finish_run(result.run_id, status=status, n_findings=len(findings))
                raise
            db.finish_run(result.run_id, status="ok", n_findings=len(findings))
        elif send and plan.notify is not None:
            result.notified = _notify(None, plan, plan.notify, result, now)
    notes.extend(f"{s.family} skipped: {s.note}" for s in steps if s.status == "skipped")
    if plan.outputs.report is not None:
        result.report = write_report(plan.outputs.report, plan, result)
    if plan.outputs.jsonl is not None:
        from perfsleuth.outputs import write_text

        result.jsonl = write_text(plan.outputs.jsonl, write_jsonl(findings), what="findings")
        incidents = [i.to_dict() for i in result.incidents]
        text = json.dumps(incidents, indent=2, ensure_ascii=False, allow_nan=False)
        write_text(result.jsonl.with_name("incidents.json"), text + "\n", what="incidents")
    return result


def incidents_of(
    plan: Plan,
    steps: Sequence[StepResult],
    frames: Mapping[str, pd.DataFrame],
    findings: Sequence[Finding],
) -> list[Incident]:
    """The run's findings connected into incidents, with what each family looked at (so a
    missing link can say "found nothing" rather than "no data")."""
    covered: list[Covered] = []
    for step, done in zip(plan.steps, steps, strict=True):
        frame = frames.get(step.input)
        if done.status == "ran" and frame is not None and "time" in frame:
            service = str(getattr(step.detector, "entity", ""))  # workload families name one
            covered.append(covered_by(done.family, frame, service=service))
    topology = plan.topology.merged(revealed(covered))
    return find_incidents(findings, topology=topology, covered=covered)


def check_outputs(plan: Plan) -> None:
    """Refuse a plan whose report, findings file or store is one of its inputs, or another of
    its outputs: a run never overwrites the data it reads (checked before anything is read)."""
    inputs: dict[Path, str] = {}
    for item in plan.inputs:
        for source in item.sources:
            for path in _paths_of(source):
                inputs.setdefault(_resolve(path, plan.base), source.kind)
    outputs = plan.outputs
    written: list[tuple[str, Path]] = [
        (what, path)
        for what, path in (("report", outputs.report), ("findings file", outputs.jsonl))
        if path is not None
    ]
    for what, path in written:
        for read, kind in inputs.items():
            if same_file(path, read):
                raise ConfigError(
                    f"{path}: the {what} would overwrite an input of this run (a {kind} source); "
                    "choose another output path"
                )
        if outputs.store is not None and same_file(path, outputs.store):
            raise ConfigError(f"{path}: the {what} would overwrite the store; choose another path")
    if len(written) == 2 and same_file(written[0][1], written[1][1]):
        raise ConfigError(f"{written[0][1]}: the report and the findings file are one file")
    if outputs.store is not None:
        for read, kind in inputs.items():
            if kind != "store" and same_file(outputs.store, read):
                raise ConfigError(
                    f"{outputs.store}: the store would overwrite an input of this run "
                    f"(a {kind} source); choose another store path"
                )


def _paths_of(source: Source) -> list[Path]:
    """Every file or folder a source reads (``-``, stdin, is none)."""
    found: list[Path] = []
    for name in type(source).model_fields:
        value = getattr(source, name)
        values = value if isinstance(value, list | tuple) else [value]
        found.extend(v for v in values if isinstance(v, Path) and str(v) != "-")
    return found


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (the same path, a symbolic or a hard link)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)  # also through hard links
        return a.resolve() == b.resolve()
    except OSError:
        return False


def diagnose(
    frames: Mapping[str, pd.DataFrame],
    detectors: Iterable[Detector] | Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Finding]:
    """Run detectors over in-memory frames through the run path; return the findings, ordered.

    Parameters
    ----------
    frames
        Frames by contract name (``{"metric": frame, ...}``), normalised here if they are not.
    detectors
        Detector objects, or ``{family: params}`` as in the ``[detectors]`` table of the
        config; default: every family with default parameters. A detector whose contract has
        no frame is skipped (logged), not an error.
    """
    from perfsleuth.families import names

    if detectors is None:
        chosen = [create(name) for name in names()]
    elif isinstance(detectors, Mapping):
        chosen = [create(name, params) for name, params in detectors.items()]
    else:
        chosen = list(detectors)
    inputs = tuple(Input(c, c, frame=f, label=c) for c, f in frames.items())
    plan = Plan(inputs, tuple(Step(d, d.contract) for d in chosen), command="diagnose")
    loaded = read_inputs(plan)
    steps = analyse_steps(plan.steps, loaded.frames)
    return ordered(f for step in steps for f in step.findings)


# --------------------------------------------------------------------------------------------
# Store, notifications, report
# --------------------------------------------------------------------------------------------


def keep_frames(db: Store, plan: Plan, loaded: Loaded) -> None:
    """Store the frames read (not those read from a store), keyed by their sources."""
    for item in plan.inputs:
        frame = loaded.frames.get(item.name)
        if frame is None:
            continue
        if item.sources and all(s.kind == "store" for s in item.sources):
            continue  # already stored
        labels = [i.label for i in loaded.sources if i.contract == item.contract]
        source = item.label or ", ".join(labels) or item.name
        db.write_frame(frame, item.contract, source=source)
        if item.contract == "process" and {"ncpu", "os"} <= set(frame.columns):
            nodes = frame[["node", "ncpu", "os"]].drop_duplicates("node")
            db.write_frame(nodes, "node", source=source)


def _notify(
    db: Store | None,
    plan: Plan,
    settings: NotifySettings,
    result: RunResult,
    now: datetime | None,
) -> NotifyReport:
    from perfsleuth.notify import notify

    if plan.outbox is not None:
        outbox = plan.outbox
    elif plan.outputs.store is not None:
        outbox = plan.outputs.store.with_name(plan.outputs.store.name + ".outbox")
    else:
        outbox = Path("perfsleuth-outbox")
    report = notify(
        result.findings,
        settings,
        outbox=outbox,
        store=db,
        graphs=_graphs(result.steps),
        now=now,
        title=plan.command,
        incidents=result.incidents,
    )
    result.notes.append(
        f"notify: {len(report.due)} due, {report.not_due} already notified; "
        f"{len(report.delivered)} delivered, {len(report.kept)} kept in {outbox}"
    )
    result.notes.extend(f"notify: {e}" for e in sorted(set(report.errors)))
    return report


def _graphs(steps: Sequence[StepResult]) -> dict[str, Graph]:
    """Sparklines for the e-mail, from the analyses that draw them (finding id → graph)."""
    out: dict[str, Graph] = {}
    for step in steps:
        draw = getattr(step.analysis, "graphs", None)  # analyses with series to show have it
        if callable(draw):
            try:
                out.update(draw())
            except PerfsleuthError as exc:  # a graph is a nicety; the alert must still go
                log.warning("no graphs in the notification: %s", exc)
    return out


def write_report(path: Path, plan: Plan, result: RunResult) -> Path:
    """The HTML report: every analysis's section, and what the run read and did."""
    from perfsleuth.frames import coverage_of
    from perfsleuth.report.html import write_html
    from perfsleuth.report.incidents import incident_sections

    log.info("writing the report %s ...", path, extra=PROGRESS)
    sections = family_sections(result, max_points=plan.outputs.max_points)
    sections.append(_run_section(result))
    frames = result.loaded.frames
    coverage = tuple(c for f in frames.values() if (c := coverage_of(f)) is not None)
    metric = [frames[i.name] for i in plan.inputs if i.contract == "metric" and i.name in frames]
    return write_html(
        path,
        result.findings,
        series=pd.concat(metric, ignore_index=True) if metric else None,
        coverage=coverage,
        sections=sections,
        title=plan.outputs.title,
        max_points=plan.outputs.max_points,
        rejected=result.loaded.rejected,
        opening=incident_sections(result.incidents),
    )


def family_sections(result: RunResult, *, max_points: int = 5000) -> list[Section]:
    """One report section per step that ran (a section that fails to draw adds a note)."""
    sections: list[Section] = []
    for step in result.steps:
        if step.analysis is None:
            continue
        try:
            sections.append(family(step.family).render(step.analysis, max_points=max_points))
        except PerfsleuthError as exc:
            log.warning("no %s section: %s", step.family, exc)
            result.notes.append(f"no {step.family} section: {exc}")
    return sections


def _run_section(result: RunResult) -> Section:
    from perfsleuth.report.section import Section, Table

    def stamp(value: datetime | None) -> str:
        return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")

    loaded = result.loaded
    sources = Table(
        ("source", "contract", "rows", "first (UTC)", "last (UTC)"),
        tuple((s.label, s.contract, s.rows, stamp(s.first), stamp(s.last)) for s in loaded.sources),
        caption="Sources read",
    )
    families = Table(
        ("family", "reads", "status", "findings", "note"),
        tuple((s.family, s.input, s.status, len(s.findings), s.note) for s in result.steps),
        caption="Families",
    )
    ran = sum(1 for s in result.steps if s.status == "ran")
    intro = (
        f"{len(loaded.sources)} source(s) read; {ran} of {len(result.steps)} famil"
        f"{'y' if len(result.steps) == 1 else 'ies'} ran, {len(result.findings)} finding(s)."
        + (" " + " ".join(result.notes) if result.notes else "")
    )
    return Section(title="This run: sources and families", intro=intro, tables=(sources, families))
