"""One notification run: decide what is due, build one summary per audience, deliver or keep.

The policy (Kaminski §2.1 and §3):

* **one combined summary per run** and audience, never one message per finding — except that
  an incident whose findings come from more than one family (:mod:`perfsleuth.incidents`: one
  story, e.g. a latency change, the transaction that got slower and the CPU it saturates) gets
  a message of its own that opens with its story; likewise the webhook body carries such
  incidents (story and finding ids) beside the findings, and such an incident is one ticket,
  not one per finding;
* **duplicates within a run are suppressed**: findings about the same pathology (kind, entity,
  metric) are notified once, the most severe kept;
* **repeat while it persists**: a pathology notified less than ``repeat`` ago (default a day,
  with 10% slack for schedules that drift) is not sent again; once that has passed and it is
  still found, it is sent again (marked "still present"), daily until someone fixes it;
* **stealth** (FYEO): with ``stealth = true`` everything goes only to the analysts; otherwise
  kinds in ``stealth_kinds`` and findings with evidence ``stealth = true`` (groups run in
  stealth) do. The analysts get every due finding, the recipients the public ones; webhook
  and tickets carry the public ones only ("don't write tickets for yourself");
* every due finding is appended to its **node history** in the store;
* every delivery goes through the **outbox**: kept until delivered, retried first on the next
  run, never lost.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from os import PathLike
from typing import TYPE_CHECKING

from perfsleuth.findings import Finding, Severity
from perfsleuth.notify.channels import DeliveryError, build_email, deliver
from perfsleuth.notify.outbox import Outbox, OutboxItem
from perfsleuth.notify.settings import NotifySettings
from perfsleuth.notify.summary import Graph, render_summary

if TYPE_CHECKING:
    from perfsleuth.incidents import Incident
    from perfsleuth.store import Store

__all__ = ["NotifyReport", "flush", "notify", "pathology_key"]

log = logging.getLogger(__name__)


@dataclass
class NotifyReport:
    """What a notification run did."""

    due: list[Finding] = field(default_factory=list)
    suppressed_duplicates: int = 0
    not_due: int = 0
    delivered: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def pathology_key(finding: Finding) -> str:
    """What stays the same while a pathology persists: kind, entity and metric."""
    return f"{finding.kind.value}|{finding.entity}|{finding.metric}"


def _stealthy(finding: Finding, settings: NotifySettings) -> bool:
    return (
        settings.stealth
        or finding.kind.value in settings.stealth_kinds
        or finding.evidence_dict().get("stealth") is True
    )


def _node(finding: Finding) -> str:
    node = finding.evidence_dict().get("node")
    return str(node) if node is not None else finding.entity


def flush(
    outbox: Outbox, settings: NotifySettings, *, store: Store | None, report: NotifyReport
) -> None:
    """Try to deliver everything pending, oldest first."""
    for path, item in outbox.pending():
        try:
            deliver(
                item,
                smtp_host=settings.smtp_host,
                smtp_port=settings.smtp_port,
                timeout=settings.smtp_timeout.total_seconds(),
                store=store,
                webhook=settings.webhook,
            )
        except DeliveryError as exc:
            outbox.failed(path, item, str(exc))
            report.kept.append(f"{item.channel}:{item.id}")
            report.errors.append(str(exc))
            log.warning("kept in the outbox (%s, attempt %d): %s", item.channel, item.attempts, exc)
        else:
            outbox.delivered(path)
            report.delivered.append(f"{item.channel}:{item.id}")


def notify(
    findings: Sequence[Finding],
    settings: NotifySettings,
    *,
    outbox: str | PathLike[str] | Outbox,
    store: Store | None = None,
    graphs: Mapping[str, Graph] | None = None,
    now: datetime | None = None,
    title: str = "perfsleuth process pathologies",
    incidents: Sequence[Incident] = (),
) -> NotifyReport:
    """Queue this run's notifications and deliver everything pending (see the module docstring).

    Parameters
    ----------
    outbox
        Folder of the outbox (created if missing), or an :class:`Outbox`.
    store
        Where node history is appended (none is written without one). A history item that
        cannot be written waits in the outbox for the next run with a store.
    graphs
        Finding id → :class:`Graph`, drawn inline in the e-mail.
    now
        The run's time (tests and replays); default: the clock.
    incidents
        The run's incidents: one that spans several families gets a message of its own.
    """
    box = outbox if isinstance(outbox, Outbox) else Outbox(outbox)
    when = (now or datetime.now(UTC)).astimezone(UTC)
    report = NotifyReport()

    best: dict[str, Finding] = {}
    for finding in findings:
        key = pathology_key(finding)
        held = best.get(key)
        if held is None or (finding.severity, finding.end) > (held.severity, held.end):
            best[key] = finding
    report.suppressed_duplicates = len(findings) - len(best)

    state = box.state()
    limit = settings.repeat * 0.9
    repeats: set[str] = set()
    for key, finding in sorted(best.items()):
        last = state.get(key)
        if last is not None:
            if when - datetime.fromisoformat(last) < limit:
                report.not_due += 1
                continue
            repeats.add(finding.id)
        report.due.append(finding)

    if report.due:
        _queue(
            box,
            settings,
            report.due,
            frozenset(repeats),
            graphs or {},
            when,
            title,
            store is not None,
            incidents,
        )
        for finding in report.due:
            state[pathology_key(finding)] = when.isoformat()
        box.save_state(state)  # queued counts as notified: the outbox will deliver it
    flush(box, settings, store=store, report=report)
    return report


def _queue(
    box: Outbox,
    settings: NotifySettings,
    due: list[Finding],
    repeats: frozenset[str],
    graphs: Mapping[str, Graph],
    when: datetime,
    title: str,
    history: bool,
    incidents: Sequence[Incident] = (),
) -> None:
    public = [f for f in due if not _stealthy(f, settings)]
    # a story that mentions a stealthy finding is for the analysts only
    open_incidents = [i for i in incidents if not any(_stealthy(f, settings) for f in i.findings)]
    audiences = [(list(settings.analysts), due, f"{title} (FYEO)", incidents)]
    if not settings.stealth:
        audiences.append((list(settings.recipients), public, title, open_incidents))
    for to, chosen, heading, stories in audiences:
        if not to or not chosen:
            continue
        for group, incident in _messages(chosen, stories):
            summary = render_summary(
                group,
                title=heading,
                graphs=graphs,
                repeats=repeats,
                story=incident.story if incident else "",
            )
            box.put(
                OutboxItem(
                    "email",
                    build_email(
                        sender=settings.sender,
                        to=to,
                        subject=summary.subject,
                        text=summary.text,
                        html=summary.html,
                    ),
                )
            )
    told = _messages(public, open_incidents)
    if settings.webhook and public and not settings.stealth:
        body = {
            "title": title,
            "time": when.isoformat(),
            "findings": [
                {**f.to_dict(), "repeat": f.id in repeats, "node": _node(f)} for f in public
            ],
            "incidents": [_told(incident, group) for group, incident in told if incident],
        }
        # the URL (and any secret in it) stays in the settings: delivery takes it from there
        box.put(OutboxItem("webhook", {"body": body}))
    if settings.tickets and not settings.stealth:
        for group, incident in told:
            for f in group if incident is None else ():
                digest = hashlib.blake2b(pathology_key(f).encode(), digest_size=6).hexdigest()
                name = f"{when:%Y%m%dT%H%M%S}-{f.kind.value}-{_safe(_node(f))}-{digest}.json"
                ticket = {
                    **f.to_dict(),
                    "node": _node(f),
                    "repeat": f.id in repeats,
                    "priority": _priority(f.severity),
                }
                box.put(
                    OutboxItem(
                        "ticket", {"folder": settings.tickets, "file": name, "ticket": ticket}
                    )
                )
            if incident is not None:
                name = f"{when:%Y%m%dT%H%M%S}-incident-{incident.id}.json"
                ticket = {
                    **_told(incident, group),
                    "repeat": all(f.id in repeats for f in group),
                    "priority": _priority(max(f.severity for f in group)),
                    "details": [{**f.to_dict(), "node": _node(f)} for f in group],
                }
                box.put(
                    OutboxItem(
                        "ticket", {"folder": settings.tickets, "file": name, "ticket": ticket}
                    )
                )
    for f in due if history else ():
        box.put(
            OutboxItem(
                "history",
                {
                    "node": _node(f),
                    "kind": f.kind.value,
                    "text": f"{'still present' if f.id in repeats else 'new'}: {f.explanation} "
                    f"[{f.id}]",
                    "time": when.isoformat(),
                },
            )
        )


def _messages(
    chosen: Sequence[Finding], incidents: Sequence[Incident]
) -> list[tuple[list[Finding], Incident | None]]:
    """The messages for ``chosen``: one per incident with findings of several families (told
    by its story), then the rest together (``None``: one combined summary)."""
    from perfsleuth.families import family_of

    out: list[tuple[list[Finding], Incident | None]] = []
    taken: set[str] = set()
    ids = {f.id for f in chosen}
    for incident in incidents:
        mine = [f for f in incident.findings if f.id in ids]
        families = {found.name if (found := family_of(f)) else "" for f in incident.findings}
        if len(families) > 1 and mine:
            out.append((mine, incident))
            taken.update(f.id for f in mine)
    rest = [f for f in chosen if f.id not in taken]
    if rest:
        out.append((rest, None))
    return out


def _told(incident: Incident, group: Sequence[Finding]) -> dict[str, object]:
    """An incident as a webhook or ticket carries it: its story and the ids of the findings
    this audience may see (a stealthy finding's id stays out)."""
    return {
        "incident": incident.id,
        "title": incident.title,
        "story": incident.story,
        "start": incident.start.isoformat(),
        "end": incident.end.isoformat(),
        "findings": [f.id for f in group],
    }


def _priority(severity: Severity) -> str:
    return "high" if severity >= Severity.ERROR else "normal"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:64] or "node"
