"""``perfsleuth analyze``: every configured source and detector family, end to end.

One run reads every source (:mod:`perfsleuth.analyze.sources`), runs each chosen family's
detectors on the frame of its contract, stores the frames and findings as one run, sends the
``[notify]`` notifications, and writes the HTML report (every family's section, and a section
saying what was read and what ran) with ``findings.jsonl`` beside it.

A detector whose frame is absent does not run; one whose data are too few or unsuitable (e.g.
segments without ``cpu_util``) is skipped and says why, in the log and the report: one family
cannot stop the others.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

from perfsleuth.analyze.sources import Loaded, load_sources
from perfsleuth.config import FAMILIES, FAMILIES_OF, Config, notify_settings
from perfsleuth.detectors.base import Detector
from perfsleuth.errors import DataError, PerfsleuthError
from perfsleuth.findings import Finding, ordered, write_jsonl

if TYPE_CHECKING:
    from perfsleuth.notify import NotifyReport, NotifySettings
    from perfsleuth.report.html import Section
    from perfsleuth.store import Store

__all__ = [
    "AnalysisResult",
    "DetectorRun",
    "PlannedDetector",
    "analyze",
    "plan",
    "run_detectors",
]

log = logging.getLogger(__name__)

_D = TypeVar("_D")


@dataclass(frozen=True, slots=True)
class PlannedDetector:
    """A detector to run, with its family."""

    family: str
    detector: Detector


@dataclass(frozen=True, slots=True)
class DetectorRun:
    """What happened to one detector: ``ran``, ``no data`` (no frame) or ``skipped`` (why)."""

    name: str
    family: str
    contract: str
    status: str
    findings: int = 0
    note: str = ""


@dataclass(eq=False)
class Detected:
    """Findings of a set of detectors, what each did, and results the report reuses."""

    findings: list[Finding]
    runs: list[DetectorRun]
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class AnalysisResult:
    """Everything one ``analyze`` run produced."""

    findings: list[Finding]
    loaded: Loaded
    detectors: list[DetectorRun]
    run_id: str | None
    report: Path | None
    jsonl: Path | None
    notified: NotifyReport | None
    notes: list[str]
    store: Path


def plan(config: Config) -> list[PlannedDetector]:
    """The detectors of the chosen families, minus ``analyze.skip``, with their parameters."""
    from perfsleuth.registry import create

    out: list[PlannedDetector] = []
    skip = set(config.analyze.skip)
    for family in config.analyze.families:
        for name in FAMILIES[family]:
            if name in skip:
                continue
            params = config.detectors.get(name, {})
            out.append(PlannedDetector(family, create(name, params, source=f"detectors.{name}")))
    return out


def run_detectors(
    frames: Mapping[str, pd.DataFrame], planned: Sequence[PlannedDetector]
) -> Detected:
    """Run each planned detector on its contract's frame; unsuitable data skip it, logged."""
    from perfsleuth.detectors.segments import SegmentDetector

    findings: list[Finding] = []
    runs: list[DetectorRun] = []
    extras: dict[str, Any] = {}
    for item in planned:
        detector = item.detector
        frame = frames.get(detector.contract)
        if frame is None or len(frame) == 0:
            runs.append(DetectorRun(detector.name, item.family, detector.contract, "no data"))
            continue
        try:
            if isinstance(detector, SegmentDetector):
                if "cpu_util" not in frame.columns:
                    raise DataError("the workload frame has no cpu_util column")
                analysis = detector.analyse(frame)
                extras["workload_segments"] = analysis
                found = list(analysis.findings)
            else:
                found = detector.detect(frame)
        except DataError as exc:
            log.warning("%s skipped: %s", detector.name, exc)
            runs.append(
                DetectorRun(detector.name, item.family, detector.contract, "skipped", note=str(exc))
            )
            continue
        log.info("%s: %d finding(s)", detector.name, len(found))
        runs.append(DetectorRun(detector.name, item.family, detector.contract, "ran", len(found)))
        findings.extend(found)
    return Detected(ordered(findings), runs, extras)


def analyze(
    config: Config,
    *,
    base: Path | None = None,
    command: str = "perfsleuth analyze",
    now: datetime | None = None,
    send: bool = True,
    report: bool = True,
) -> AnalysisResult:
    """Read, detect, store, notify and report, as ``config`` says.

    Parameters
    ----------
    base
        Folder relative paths in ``config`` are taken from (the config file's).
    command
        How the run is recorded in the store.
    now
        End of Prometheus ranges and time of the notifications (default: the clock).
    send
        Send the ``[notify]`` notifications (when the config has that table).
    report
        Write the HTML report and ``findings.jsonl`` to ``[output] dir``.
    """
    from perfsleuth.store import Store

    store_path = _resolve(config.store.path, base)
    planned = plan(config)
    settings = resolved_notify(config, base)
    notes: list[str] = []
    notified = None
    with Store(store_path) as db:
        loaded = load_sources(config, base=base, now=now, store_path=store_path, store=db)
        if not loaded.frames:
            raise DataError("the sources gave no data; nothing to analyse")
        detected = run_detectors(loaded.frames, planned)
        findings = detected.findings
        run_id = db.begin_run(command)
        try:
            keep_frames(db, loaded)
            db.write_findings(findings, run_id=run_id)
            if send and settings is not None:
                notified = _notify(db, store_path, settings, loaded, findings, planned, now)
                notes.append(
                    f"notify: {len(notified.due)} due, {notified.not_due} already notified; "
                    f"{len(notified.delivered)} delivered, {len(notified.kept)} kept"
                )
                notes.extend(f"notify: {e}" for e in sorted(set(notified.errors)))
        except BaseException:
            with contextlib.suppress(PerfsleuthError):  # keep the first error, not this one
                db.finish_run(run_id, status="failed", n_findings=len(findings))
            raise
        db.finish_run(run_id, status="ok", n_findings=len(findings))
    notes.extend(f"{r.name} skipped: {r.note}" for r in detected.runs if r.status == "skipped")
    page = jsonl = None
    if report:
        out_dir = _resolve(config.output.dir, base)
        out_dir.mkdir(parents=True, exist_ok=True)
        page = write_report(
            out_dir / config.analyze.report,
            config,
            loaded,
            planned,
            detected,
            notes=notes,
        )
        jsonl = out_dir / "findings.jsonl"
        jsonl.write_text(write_jsonl(findings), encoding="utf-8")
    return AnalysisResult(
        findings, loaded, detected.runs, run_id, page, jsonl, notified, notes, store_path
    )


def _resolve(path: Path, base: Path | None) -> Path:
    path = path.expanduser()
    return path if base is None or path.is_absolute() else base / path


def resolved_notify(config: Config, base: Path | None) -> NotifySettings | None:
    """``[notify]``, with a relative ``tickets`` folder taken from ``base`` like other paths."""
    settings = notify_settings(config)
    if settings is None or not settings.tickets or base is None:
        return settings
    return settings.model_copy(update={"tickets": str(_resolve(Path(settings.tickets), base))})


def keep_frames(db: Store, loaded: Loaded) -> None:
    """Store the frames read (not those read from a store), keyed by their sources."""
    for contract, frame in loaded.frames.items():
        labels = [s.label for s in loaded.sources if s.contract == contract]
        if all(label.startswith("store ") for label in labels):
            continue  # already stored
        source = ", ".join(labels)
        db.write_frame(frame, contract, source=source)
        if contract == "process" and {"ncpu", "os"} <= set(frame.columns):
            nodes = frame[["node", "ncpu", "os"]].drop_duplicates("node")
            db.write_frame(nodes, "node", source=source)


def _notify(
    db: Store,
    store_path: Path,
    settings: NotifySettings,
    loaded: Loaded,
    findings: Sequence[Finding],
    planned: Sequence[PlannedDetector],
    now: datetime | None,
) -> NotifyReport:
    from perfsleuth.notify import notify

    graphs = {}
    process = loaded.frames.get("process")
    rules = _process_rules(planned)
    if process is not None and rules is not None:
        from perfsleuth.process.graphs import graphs as process_graphs

        mine = [f for f in findings if FAMILIES_OF.get(f.detector) == "process"]
        try:
            graphs = process_graphs(process, mine, rules)
        except PerfsleuthError as exc:  # a graph is a nicety; the alert must still go
            log.warning("no graphs in the notification: %s", exc)
    return notify(
        findings,
        settings,
        outbox=store_path.with_name(store_path.name + ".outbox"),
        store=db,
        graphs=graphs,
        now=now,
        title="perfsleuth analyze",
    )


def _process_rules(planned: Sequence[PlannedDetector]) -> Any:
    for item in planned:
        if item.family == "process":
            return getattr(item.detector, "rules", None)
    return None


def write_report(
    path: Path,
    config: Config,
    loaded: Loaded,
    planned: Sequence[PlannedDetector],
    detected: Detected,
    *,
    notes: Sequence[str] = (),
) -> Path:
    """The HTML report: findings, one section per family that ran, and what the run did."""
    from perfsleuth.frames import coverage_of
    from perfsleuth.report.html import write_html

    sections = family_sections(loaded.frames, planned, detected, notes=list(notes))
    sections.append(_run_section(loaded, detected, notes))
    coverage = tuple(c for f in loaded.frames.values() if (c := coverage_of(f)) is not None)
    return write_html(
        path,
        detected.findings,
        series=loaded.frames.get("metric"),
        coverage=coverage,
        sections=sections,
        title=config.analyze.title,
        max_points=config.output.max_points,
    )


def family_sections(
    frames: Mapping[str, pd.DataFrame],
    planned: Sequence[PlannedDetector],
    detected: Detected,
    *,
    notes: list[str],
) -> list[Section]:
    """One report section per family whose detectors ran (a failing builder adds a note)."""
    ran = {r.name for r in detected.runs if r.status == "ran"}
    by_name = {item.detector.name: item.detector for item in planned}
    sections: list[Section] = []

    def build(what: str, make: Any) -> None:
        try:
            sections.append(make())
        except PerfsleuthError as exc:
            log.warning("no %s section: %s", what, exc)
            notes.append(f"no {what} section: {exc}")

    if "changepoint" in ran:
        from perfsleuth.detectors.changepoint import ChangePointDetector
        from perfsleuth.report.changepoint import changepoint_section

        cp = _typed(by_name, "changepoint", ChangePointDetector)
        build("change-point", lambda: changepoint_section(frames["metric"], detector=cp))
    if "workload_mix" in ran:
        from perfsleuth.detectors.workload import MixAnomalyDetector
        from perfsleuth.report.workload import workload_section

        mix = _typed(by_name, "workload_mix", MixAnomalyDetector)
        build("workload", lambda: workload_section(frames["workload"], detector=mix))
    if "workload_segments" in ran:
        from perfsleuth.detectors.segments import SegmentDetector
        from perfsleuth.report.segments import segments_section

        seg = _typed(by_name, "workload_segments", SegmentDetector)
        build(
            "segments",
            lambda: segments_section(
                frames["workload"],
                detector=seg,
                analysis=detected.extras.get("workload_segments"),
            ),
        )
    process = [item for item in planned if item.family == "process" and item.detector.name in ran]
    if process:
        from perfsleuth.report.process import process_section

        mine = [f for f in detected.findings if FAMILIES_OF.get(f.detector) == "process"]
        rules = _process_rules(process)
        build("process", lambda: process_section(frames["process"], mine, rules=rules))
    if "bottleneck" in ran:
        from perfsleuth.bottleneck.detector import BottleneckDetector
        from perfsleuth.report.bottleneck import bottleneck_section

        bn = _typed(by_name, "bottleneck", BottleneckDetector)
        build("bottleneck", lambda: bottleneck_section(frames["counter"], detector=bn))
    return sections


def _typed(by_name: Mapping[str, Detector], name: str, cls: type[_D]) -> _D | None:
    detector = by_name.get(name)
    return detector if isinstance(detector, cls) else None


def _run_section(loaded: Loaded, detected: Detected, notes: Sequence[str]) -> Section:
    from perfsleuth.report.html import Section, Table

    def stamp(value: datetime | None) -> str:
        return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")

    sources = Table(
        ("source", "contract", "rows", "first (UTC)", "last (UTC)"),
        tuple((s.label, s.contract, s.rows, stamp(s.first), stamp(s.last)) for s in loaded.sources),
        caption="Sources read",
    )
    detectors = Table(
        ("detector", "family", "reads", "status", "findings", "note"),
        tuple((r.name, r.family, r.contract, r.status, r.findings, r.note) for r in detected.runs),
        caption="Detectors",
    )
    ran = sum(1 for r in detected.runs if r.status == "ran")
    intro = (
        f"{len(loaded.sources)} source(s) read; {ran} of {len(detected.runs)} detector(s) ran, "
        f"{len(detected.findings)} finding(s)." + (" " + " ".join(notes) if notes else "")
    )
    return Section(
        title="This run: sources and detectors", intro=intro, tables=(sources, detectors)
    )
