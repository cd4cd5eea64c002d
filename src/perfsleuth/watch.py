"""``perfsleuth watch``: the online mode — at each window close, check again, raise and clear.

Every ``[watch] every``, a :class:`Watcher` reads the configured sources (their trailing
``range``), runs the chosen detector families (Kelly's and Cherkasova's "at each window close":
the models are refitted on the trailing history and the newest windows judged), stores the
findings, and compares them with the alerts it already holds:

* an **alert** is one episode of one finding: kind, entity, metric, detector and start. A
  finding seen again with a later end is the same alert (nothing new is raised);
* it is **raised** when first seen while it still holds (its end within ``grace`` of the newest
  data) or, for instantaneous findings (change points: start = end), when first seen at all.
  An episode first seen after it ended is recorded, not raised (history is not news);
* it is **cleared** when it no longer holds: its end falls more than ``grace`` behind the newest
  data ("ended"), or the detectors no longer report it although the data still cover its start
  ("no longer found"). An alert whose start has left the trailing range expires silently;
* the alert state lives in the store (table ``watch_alerts``), written after the check's
  findings and before anything is printed or sent, so a restarted watch neither raises again
  what it already raised nor forgets what is open (notifications wait in the outbox).

When a source fails (Prometheus down, a file missing, the store locked), the check is
abandoned without touching the alerts; the watcher says so, waits ``every``, then twice as long
each further failure up to ``backoff_max``, and says when the sources answer again.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from perfsleuth.config import WATCH_EVERY, Config
from perfsleuth.durations import format_duration
from perfsleuth.errors import ConfigError, PerfsleuthError, SourceError
from perfsleuth.families import family_of
from perfsleuth.findings import Finding, ordered, read_jsonl, write_jsonl
from perfsleuth.pipeline import Plan, analyse_steps, keep_frames, plan_from_config, read_inputs
from perfsleuth.sources.load import Loaded
from perfsleuth.store import Store

__all__ = ["AlertEvent", "CheckResult", "Watcher", "alert_id"]

log = logging.getLogger(__name__)

_TABLE = """CREATE TABLE IF NOT EXISTS watch_alerts (
    watch VARCHAR NOT NULL,
    alert_id VARCHAR NOT NULL,
    state VARCHAR NOT NULL,
    finding VARCHAR NOT NULL,
    raised TIMESTAMPTZ,
    changed TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (watch, alert_id)
)"""

State = Literal["open", "cleared", "ended", "expired"]


def alert_id(finding: Finding) -> str:
    """What stays the same while one episode lasts: kind, entity, metric, detector, start."""
    key = "\x1f".join(
        [
            finding.kind.value,
            finding.entity,
            finding.metric,
            finding.detector,
            finding.start.isoformat(),
        ]
    )
    return hashlib.blake2b(key.encode(), digest_size=10).hexdigest()


@dataclass(frozen=True, slots=True)
class AlertEvent:
    """An alert raised or cleared."""

    state: Literal["raised", "cleared"]
    alert_id: str
    finding: Finding
    time: datetime
    reason: str = ""

    @property
    def severity(self) -> int:
        return int(self.finding.severity)

    def line(self) -> str:
        """One line for a terminal."""
        f = self.finding
        head = f"{self.time:%Y-%m-%d %H:%M:%S} {self.state.upper():<7} {f.severity.name:<8}"
        tail = f" ({self.reason})" if self.reason else ""
        return f"{head} {f.kind.value} {f.entity}/{f.metric}: {f.explanation}{tail}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "event": self.state,
            "alert": self.alert_id,
            "time": self.time.isoformat(),
            "reason": self.reason,
            "finding": self.finding.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check: whether the sources answered, the findings, and the alert events."""

    ok: bool
    findings: tuple[Finding, ...] = ()
    events: tuple[AlertEvent, ...] = ()
    error: str = ""


@dataclass(slots=True)
class _Alert:
    state: State
    finding: Finding
    raised: datetime | None


class Watcher:
    """Poll, detect, raise and clear, with the alert state kept in the store.

    Parameters
    ----------
    config
        The validated config (sources, families, detectors, ``[watch]``, ``[notify]``).
    base
        Folder relative paths in ``config`` are taken from.
    every
        Overrides ``[watch] every``.
    send
        Send raised alerts as ``[notify]`` says (when the config has that table).
    on_event
        Called with each :class:`AlertEvent` as it happens.
    on_status
        Called with one-line messages about outages and recoveries (also logged).
    load
        Reads the sources (tests pass a stand-in); default: the plan's inputs
        (:func:`perfsleuth.pipeline.read_inputs`).
    sleep
        ``sleep(seconds) -> stopped``; default waits on the stop event.
    clock
        Wall-clock time of events and notifications (default: now, UTC).
    """

    def __init__(
        self,
        config: Config,
        *,
        base: Path | None = None,
        every: timedelta | None = None,
        send: bool = True,
        on_event: Callable[[AlertEvent], None] | None = None,
        on_status: Callable[[str], None] | None = None,
        load: Callable[[], Loaded] | None = None,
        sleep: Callable[[float], bool] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.config = config
        self.base = base
        self.name = config.watch.name
        self.every = every if every is not None else config.watch.every
        low, high = WATCH_EVERY
        if not low <= self.every <= high:
            raise ConfigError(
                f"every: {format_duration(self.every)} is out of range: give "
                f"{format_duration(low)} to {format_duration(high)}"
            )
        self.backoff_max = config.watch.backoff_max
        self.grace = config.watch.grace if config.watch.grace is not None else 2 * self.every
        self.plan: Plan = plan_from_config(
            config, base=base, command=f"perfsleuth watch {self.name}"
        )
        self.settings = self.plan.notify if send else None
        self._on_event = on_event
        self._on_status = on_status
        self._load = load
        self._sleep = sleep
        self._clock = clock or (lambda: datetime.now(UTC))
        self.events: list[AlertEvent] = []
        self.failures = 0
        # checks done, how many found the sources answering, and what the last failure was
        self.checks = 0
        self.answered = 0
        self.last_error = ""
        self._outage_since: datetime | None = None
        assert self.plan.outputs.store is not None  # a config always names its store
        self.store_path: Path = self.plan.outputs.store
        self._store: Store | None = None

    # -- lifetime -------------------------------------------------------------------------------

    def open(self) -> Watcher:
        """Open the store and create the alert table if needed."""
        if self._store is None:
            self._store = Store(self.store_path)
            with self._store.transaction("create the watch table") as con:
                con.execute(_TABLE)
        return self

    def close(self) -> None:
        if self._store is not None:
            store, self._store = self._store, None
            store.close()

    def __enter__(self) -> Watcher:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def store(self) -> Store:
        if self._store is None:
            self.open()
        assert self._store is not None
        return self._store

    # -- the loop -------------------------------------------------------------------------------

    def run(self, *, checks: int | None = None, stop: threading.Event | None = None) -> None:
        """Check every window until ``stop`` is set (or after ``checks`` checks)."""
        stop = stop or threading.Event()
        done = 0
        while not stop.is_set():
            started = _time.monotonic()
            result = self.check()
            done += 1
            if checks is not None and done >= checks:
                break
            if result.ok:
                delay = self.every.total_seconds() - (_time.monotonic() - started)
            else:
                delay = self.backoff().total_seconds()
            if self._wait(max(0.0, delay), stop):
                break

    def backoff(self) -> timedelta:
        """The wait before the next attempt after ``failures`` failed checks in a row."""
        if self.failures == 0:
            return self.every
        grown: timedelta = self.every * int(2 ** min(self.failures - 1, 30))
        return min(grown, self.backoff_max)

    def _wait(self, seconds: float, stop: threading.Event) -> bool:
        if self._sleep is not None:
            return self._sleep(seconds) or stop.is_set()
        return stop.wait(seconds)

    def check(self) -> CheckResult:
        """One check: read, detect, store, raise and clear. A failing source changes nothing."""
        now = self._clock()
        self.checks += 1
        try:
            loaded = self._read(now)
        except ConfigError:
            raise
        except (PerfsleuthError, OSError) as exc:
            return self._failed(now, exc)
        if self.failures:
            outage = now - self._outage_since if self._outage_since else timedelta(0)
            self._status(
                f"watch: sources answer again after {self.failures} failed attempt(s) "
                f"({_span(outage)} of outage); resuming"
            )
            self.failures = 0
            self._outage_since = None
        if not loaded.frames:
            return self._failed(now, SourceError("the sources answered but gave no data"))
        self.answered += 1
        steps = analyse_steps(self.plan.steps, loaded.frames)
        findings = ordered(f for step in steps for f in step.findings)
        ran = {step.family for step in steps if step.status == "ran"}
        events = self._judge(findings, loaded, ran, now)
        if events and self.settings is not None:
            self._notify([e.finding for e in events if e.state == "raised"], now)
        for event in events:
            self.events.append(event)
            log.info("%s", event.line())
            if self._on_event is not None:
                self._on_event(event)
        return CheckResult(True, tuple(findings), tuple(events))

    def _read(self, now: datetime) -> Loaded:
        if self._load is not None:
            return self._load()
        # watch holds the store, so a collector beside it cannot fold its segments in: we do
        self.store.compact()
        return read_inputs(self.plan, now=now, store=self.store)

    def _failed(self, now: datetime, exc: BaseException) -> CheckResult:
        self.failures += 1
        self.last_error = str(exc)
        if self._outage_since is None:
            self._outage_since = now
        wait = self.backoff()
        self._status(
            f"watch: source unavailable (attempt {self.failures} failed): {exc}; "
            f"alerts unchanged; retrying in {_span(wait)}"
        )
        return CheckResult(False, error=str(exc))

    def _status(self, message: str) -> None:
        if self._on_status is None:
            log.warning("%s", message)
        else:  # the caller shows it; a log line too would say it twice on one terminal
            log.info("%s", message)
            self._on_status(message)

    # -- alerts ---------------------------------------------------------------------------------

    def alerts(self) -> dict[str, tuple[str, Finding]]:
        """Stored alerts of this watch: id → (state, the finding last seen)."""
        return {key: (a.state, a.finding) for key, a in self._alerts().items()}

    def _alerts(self) -> dict[str, _Alert]:
        with self.store.transaction("read the watch alerts") as con:
            rows = con.execute(
                "SELECT alert_id, state, finding, epoch_us(raised) FROM watch_alerts "
                "WHERE watch = ?",
                [self.name],
            ).fetchall()
        out: dict[str, _Alert] = {}
        for key, state, text, raised in rows:
            finding = read_jsonl(text, source=f"{self.store_path}: watch_alerts {key}")[0]
            when = None if raised is None else datetime.fromtimestamp(raised / 1e6, tz=UTC)
            out[key] = _Alert(state, finding, when)
        return out

    def _grace(self, finding: Finding) -> timedelta:
        grace = self.grace
        found_by = family_of(finding)
        if found_by is not None and found_by.name == "processes":
            # process checks judge whole periods: a finding ends at the last complete one
            for step in self.plan.steps:
                rules = getattr(step.detector, "rules", None)
                if step.detector.name == "processes" and rules is not None:
                    grace = max(grace, rules.settings.period + self.every)
                    break
        return grace

    def _match(self, current: dict[str, Finding], stored: dict[str, _Alert]) -> dict[str, Finding]:
        """Re-key findings that are a stored alert seen again with its start moved a little.

        Refitting on a trailing window that moves can place the same change (or the first
        window of the same episode) a sample or two away; within ``grace`` of a stored alert
        of the same kind, entity, metric and detector that no exact match claims, it is that
        alert.
        """
        claimed = set(current) & set(stored)
        out: dict[str, Finding] = {}
        for key, finding in sorted(current.items(), key=lambda item: item[1].start):
            if key in stored:
                out[key] = finding
                continue
            best: tuple[timedelta, str] | None = None
            for other, alert in stored.items():
                held = alert.finding
                if other in claimed or (held.kind, held.entity, held.metric, held.detector) != (
                    finding.kind,
                    finding.entity,
                    finding.metric,
                    finding.detector,
                ):
                    continue
                distance = abs(held.start - finding.start)
                if distance <= self._grace(finding) and (best is None or distance < best[0]):
                    best = (distance, other)
            if best is None:
                out[key] = finding
            else:
                claimed.add(best[1])
                out[best[1]] = finding
        return out

    def _judge(
        self, findings: list[Finding], loaded: Loaded, ran: set[str], now: datetime
    ) -> list[AlertEvent]:
        spans: dict[str, tuple[datetime, datetime]] = {}
        for info in loaded.sources:
            if info.first is None or info.last is None:
                continue
            first, last = spans.get(info.contract, (info.first, info.last))
            spans[info.contract] = (min(first, info.first), max(last, info.last))

        def span(f: Finding) -> tuple[datetime, datetime] | None:
            found_by = family_of(f)
            return None if found_by is None else spans.get(found_by.contract)

        current: dict[str, Finding] = {}
        for finding in findings:
            key = alert_id(finding)
            held = current.get(key)
            if held is None or (finding.severity, finding.end) > (held.severity, held.end):
                current[key] = finding
        stored = self._alerts()
        events: list[AlertEvent] = []
        changes: dict[str, _Alert] = {}
        current = self._match(current, stored)

        def holds(f: Finding) -> bool:
            covered = span(f)
            return f.start == f.end or covered is None or f.end >= covered[1] - self._grace(f)

        for key, finding in current.items():
            alert = stored.get(key)
            live = holds(finding)
            instant = finding.start == finding.end
            if alert is None:
                if live:
                    events.append(AlertEvent("raised", key, finding, now))
                    changes[key] = _Alert("open", finding, now)
                else:
                    log.info("past episode, not raised: %s", finding.explanation)
                    changes[key] = _Alert("ended", finding, None)
            elif alert.state == "open":
                if not live:
                    reason = f"ended {finding.end:%Y-%m-%d %H:%M:%S} UTC"
                    events.append(AlertEvent("cleared", key, finding, now, reason))
                    changes[key] = _Alert("cleared", finding, alert.raised)
                elif finding != alert.finding:
                    changes[key] = _Alert("open", finding, alert.raised)
            elif live and not instant and finding.end > alert.finding.end:
                events.append(AlertEvent("raised", key, finding, now, "holds again"))
                changes[key] = _Alert("open", finding, now)
        for key, alert in stored.items():
            if alert.state != "open" or key in current:
                continue
            covered = span(alert.finding)
            found_by = family_of(alert.finding)
            if found_by is None or found_by.name not in ran or covered is None:
                continue  # its family did not run this time (no data, or skipped): unknown
            if alert.finding.start >= covered[0]:
                events.append(AlertEvent("cleared", key, alert.finding, now, "no longer found"))
                changes[key] = _Alert("cleared", alert.finding, alert.raised)
            else:
                log.info("alert expired (out of the trailing range): %s", key)
                changes[key] = _Alert("expired", alert.finding, alert.raised)
        self._save(loaded, findings, changes, now, len(events))
        return events

    def _save(
        self,
        loaded: Loaded,
        findings: list[Finding],
        changes: dict[str, _Alert],
        now: datetime,
        n_events: int,
    ) -> None:
        db = self.store
        run_id = db.begin_run(f"perfsleuth watch {self.name}")
        if self._load is None:
            keep_frames(db, self.plan, loaded)
        db.write_findings(findings, run_id=run_id, at=now)
        with db.transaction("save the watch alerts") as con:
            for key, alert in changes.items():
                con.execute(
                    "INSERT OR REPLACE INTO watch_alerts VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        self.name,
                        key,
                        alert.state,
                        write_jsonl([alert.finding]),
                        alert.raised,
                        now,
                    ],
                )
        db.finish_run(run_id, status="ok", n_findings=len(findings))
        log.debug("check stored: %d finding(s), %d event(s)", len(findings), n_events)

    def _notify(self, raised: list[Finding], now: datetime) -> None:
        if not raised or self.settings is None:
            return
        from perfsleuth.notify import notify

        result = notify(
            raised,
            self.settings,
            outbox=self.store_path.with_name(self.store_path.name + ".outbox"),
            store=self.store,
            now=now,
            title="perfsleuth watch",
        )
        for error in sorted(set(result.errors)):
            self._status(f"watch: notification kept for retry: {error}")


def _span(value: timedelta) -> str:
    seconds = value.total_seconds()
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
