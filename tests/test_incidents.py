"""Incidents: findings of several families that overlap in time and relate by entity."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email import message_from_string
from email.policy import default
from pathlib import Path

import pytest

from perfsleuth.findings import Evidence, Finding, Kind, Severity
from perfsleuth.incidents import (
    STEPS,
    Covered,
    Topology,
    find_incidents,
    node_name,
    revealed,
    scope_of,
)

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def finding(
    kind: Kind,
    entity: str,
    detector: str,
    *,
    minutes: float = 0,
    length: float = 0,
    severity: Severity = Severity.WARNING,
    text: str = "",
    evidence: tuple[Evidence, ...] = (),
) -> Finding:
    start = T0 + timedelta(minutes=minutes)
    return Finding(
        kind=kind,
        entity=entity,
        metric="m",
        start=start,
        end=start + timedelta(minutes=length),
        severity=severity,
        explanation=text or f"{detector} on {entity}",
        evidence=evidence,
        detector=detector,
    )


CHANGE = finding(
    Kind.CHANGE_POINT,
    "checkout",
    "changepoint",
    minutes=2,
    severity=Severity.ERROR,
    text="checkout/latency: mean rose from 40 ms to 95 ms (+138%) at 09:02 UTC (p < 0.001)",
    evidence=(Evidence("relative_change", 1.38), Evidence("p_value", 1e-9)),
)
SLOW = finding(
    Kind.WORKLOAD_ANOMALY,
    "checkout",
    "workload_mix",
    minutes=0,
    length=30,
    severity=Severity.ERROR,
    text="checkout: response time 2.4× what the transaction mix explains",
)
RELEASE = finding(
    Kind.APPLICATION_CHANGE,
    "checkout",
    "workload_segments",
    minutes=0,
    length=60,
    text="checkout: home costs 2 ms more CPU per transaction since 09:00",
    evidence=(Evidence("p_value", 0.001),),
)
SATURATED = finding(
    Kind.BOTTLENECK,
    "db-1",
    "bottleneck",
    minutes=5,
    length=20,
    severity=Severity.ERROR,
    text="CPU is the bottleneck (P = 0.90)",
    evidence=(Evidence("bottleneck", "cpu"), Evidence("p.cpu", 0.9)),
)
UPGRADE = finding(Kind.UPGRADE, "db-1", "bottleneck", minutes=5, length=20, text="buy 2 cores")
LOOP = finding(
    Kind.CPU_LOOP,
    "batch-7/spin[42]",
    "cpu_loop",
    minutes=-300,
    length=60,
    evidence=(Evidence("node", "batch-7"),),
)
TOPOLOGY = Topology({"checkout": ("web-1", "db-1")})


def test_one_cause_in_several_families_is_one_incident_with_the_full_chain() -> None:
    incidents = find_incidents([LOOP, SATURATED, UPGRADE, RELEASE, SLOW, CHANGE], topology=TOPOLOGY)
    assert len(incidents) == 2  # the loop on an unrelated node stands alone
    story = incidents[0]
    assert {f.id for f in story.findings} == {
        f.id for f in (CHANGE, SLOW, RELEASE, SATURATED, UPGRADE)
    }
    assert [link.step for link in story.chain] == list(STEPS)
    when, workload, application, process, resource = story.chain
    assert when.findings == (CHANGE,) and "+138%" in when.text
    assert workload.findings == (SLOW,) and "transaction mix" in workload.text
    assert application.findings == (RELEASE,) and "home" in application.text
    assert process.missing and process.text == "no process data for db-1, web-1"
    assert set(resource.findings) == {SATURATED, UPGRADE}
    assert resource.text.startswith("CPU is the bottleneck") and resource.strength == 0.9
    assert story.entities == ("checkout", "db-1", "web-1")
    assert story.severity is Severity.ERROR
    assert story.title.startswith("checkout/latency: mean rose")
    assert story.story.index("+138%") < story.story.index("transaction mix")
    assert story.story.index("home costs") < story.story.index("CPU is the bottleneck")
    alone = incidents[1]
    assert alone.findings == (LOOP,) and alone.entities == ("batch-7",)
    assert alone.story.startswith(
        "No change-point, transaction-mix or CPU-per-transaction data for batch-7. "
    )
    assert alone.story.endswith("No OS counter data for batch-7.")


def test_without_topology_entities_relate_by_name_only() -> None:
    incidents = find_incidents([CHANGE, SLOW, SATURATED])
    assert sorted(len(i.findings) for i in incidents) == [1, 2]


def test_findings_far_apart_in_time_are_separate_incidents() -> None:
    later = finding(Kind.CHANGE_POINT, "checkout", "changepoint", minutes=120)
    incidents = find_incidents([CHANGE, later], tolerance=timedelta(minutes=10))
    assert len(incidents) == 2
    assert len(find_incidents([CHANGE, later], tolerance=timedelta(hours=3))) == 1


@pytest.mark.parametrize(
    ("kind", "entity", "detector", "evidence", "keys"),
    [
        (Kind.CPU_LOOP, "n1/spin[7]", "cpu_loop", (Evidence("node", "n1"),), {"node:n1"}),
        (Kind.BOTTLENECK, "db-1", "bottleneck", (), {"node:db-1"}),
        (Kind.WORKLOAD_ANOMALY, "shop", "workload_mix", (), {"service:shop"}),
        (Kind.APPLICATION_CHANGE, "shop", "workload_segments", (), {"service:shop"}),
        (Kind.CHANGE_POINT, "db-1", "changepoint", (), {"service:db-1", "node:db-1"}),
    ],
)
def test_scope_of_each_family(
    kind: Kind, entity: str, detector: str, evidence: tuple[Evidence, ...], keys: set[str]
) -> None:
    assert scope_of(finding(kind, entity, detector, evidence=evidence)) == keys


def test_a_missing_link_says_whether_the_family_looked() -> None:
    covered = [
        Covered("processes", frozenset({"node:db-1"}), T0, T0 + timedelta(hours=1)),
        Covered("bottleneck", frozenset({"node:elsewhere"}), T0, T0 + timedelta(hours=1)),
    ]
    (incident,) = find_incidents([CHANGE], topology=TOPOLOGY, covered=covered)
    process, resource = incident.chain[3], incident.chain[4]
    assert process.text == "no process pathology on db-1"
    assert resource.text == "no OS counter data for db-1, web-1"


def test_incidents_are_stable_and_serialisable() -> None:
    first = find_incidents([CHANGE, SLOW, SATURATED], topology=TOPOLOGY)
    again = find_incidents([SATURATED, SLOW, CHANGE], topology=TOPOLOGY)
    assert [i.id for i in first] == [i.id for i in again]
    data = first[0].to_dict()
    assert set(data["findings"]) == {f.id for f in first[0].findings}  # type: ignore[arg-type]
    assert [link["step"] for link in data["chain"]] == list(STEPS)  # type: ignore[union-attr]


def test_topologies_merge() -> None:
    merged = Topology({"a": ("n1",)}).merged(Topology({"a": ("n2",), "b": ("n3",)}))
    assert merged.services == {"a": ("n1", "n2"), "b": ("n3",)}


def test_topology_of_joins_a_service_named_twice_and_drops_ports() -> None:
    topology = Topology.of([("a", ["n1:9100"]), ("a", ["n2", "n1"]), ("b", ["n3"])])
    assert topology.services == {"a": ("n1", "n2"), "b": ("n3",)}
    assert node_name(" db-1:9100 ") == "db-1" and node_name("db-1") == "db-1"


def test_a_prometheus_instance_is_the_node_without_its_port() -> None:
    exporter = finding(Kind.BOTTLENECK, "db-1:9100", "bottleneck", minutes=5, length=20)
    (incident,) = find_incidents([CHANGE, exporter], topology=TOPOLOGY)
    assert incident.entities == ("checkout", "db-1", "web-1")


def test_one_node_in_the_data_reveals_where_the_services_run() -> None:
    span = (T0, T0 + timedelta(hours=1))
    one = [
        Covered("segments", frozenset({"service:shop"}), *span),
        Covered("bottleneck", frozenset({"node:app-1"}), *span),
        Covered("processes", frozenset({"node:app-1"}), *span),
    ]
    assert revealed(one).services == {"shop": ("app-1",)}
    two = [*one, Covered("processes", frozenset({"node:app-2"}), *span)]
    assert revealed(two).services == {}


def test_an_incident_of_several_families_is_one_message_of_its_own(tmp_path: Path) -> None:
    from perfsleuth.notify import notify
    from perfsleuth.notify.outbox import Outbox
    from perfsleuth.notify.settings import NotifySettings

    findings = [LOOP, SATURATED, RELEASE, CHANGE]
    incidents = find_incidents(findings, topology=TOPOLOGY)
    settings = NotifySettings(recipients=("ops@example.org",))  # no SMTP host: kept
    notify(findings, settings, outbox=tmp_path / "box", now=T0, incidents=incidents)
    mails = [
        message_from_string(str(item.payload["message"]), policy=default)
        for _, item in Outbox(tmp_path / "box").pending()
        if item.channel == "email"
    ]
    assert len(mails) == 2  # the incident's, and one summary of the rest
    (story,) = [m for m in mails if "incident on" in str(m["Subject"])]
    text = story.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert " ".join(incidents[0].story.split()) in " ".join(text.split())
    assert "batch-7" not in text
    (rest,) = [m for m in mails if m is not story]
    assert "batch-7" in rest.get_body(("plain",)).get_content()  # type: ignore[union-attr]


def test_a_node_named_with_a_line_break_gets_a_one_line_subject(tmp_path: Path) -> None:
    """A name from the data (a process may rename itself, an exporter label holds anything)
    cannot break the subject header: e-mail refuses a header with a line break, and the
    message would be lost."""
    from perfsleuth.notify import notify
    from perfsleuth.notify.outbox import Outbox
    from perfsleuth.notify.settings import NotifySettings

    hostile = "db-1\nBcc: evil@example.org" + "x" * 300
    saturated = finding(
        Kind.BOTTLENECK, hostile, "bottleneck", minutes=5, length=20, severity=Severity.ERROR
    )
    incidents = find_incidents(
        [CHANGE, saturated], topology=Topology({"checkout": ("web-1", hostile)})
    )
    assert hostile in incidents[0].story
    settings = NotifySettings(recipients=("ops@example.org",))  # no SMTP host: kept
    notify([CHANGE, saturated], settings, outbox=tmp_path / "box", now=T0, incidents=incidents)
    (item,) = [item for _, item in Outbox(tmp_path / "box").pending() if item.channel == "email"]
    mail = message_from_string(str(item.payload["message"]), policy=default)
    subject = str(mail["Subject"])
    assert "incident on" in subject and "db-1\\nBcc" in subject and "\n" not in subject
    assert "(326 characters)" in subject and len(subject) < 300
    assert mail["Bcc"] is None and mail["To"] == "ops@example.org"


def test_a_link_is_as_strong_as_its_finding() -> None:
    same_app = finding(
        Kind.WORKLOAD_CHANGE,
        "checkout",
        "workload_segments",
        severity=Severity.INFO,
        evidence=(Evidence("p_value", 0.9),),  # the test of an application change, not taken
    )
    (incident,) = find_incidents([CHANGE, same_app, RELEASE], topology=TOPOLOGY)
    strengths = {link.step: link.strength for link in incident.chain if not link.missing}
    assert strengths["when"] == pytest.approx(1.0, abs=1e-6)
    assert strengths["application"] == pytest.approx(0.999)
    assert strengths["workload"] == 0.5  # from its severity, not 1 − p


def test_the_webhook_carries_the_incident_and_it_is_one_ticket(tmp_path: Path) -> None:
    from perfsleuth.notify import notify
    from perfsleuth.notify.outbox import Outbox
    from perfsleuth.notify.settings import NotifySettings

    findings = [LOOP, SATURATED, RELEASE, CHANGE]
    incidents = find_incidents(findings, topology=TOPOLOGY)
    told = [i for i in incidents if len(i.findings) > 1]
    settings = NotifySettings(webhook="http://127.0.0.1:9/hook", tickets=str(tmp_path / "t"))
    notify(findings, settings, outbox=tmp_path / "box", now=T0, incidents=incidents)
    items = [item for _, item in Outbox(tmp_path / "box").pending()]
    (hook,) = [item.payload["body"] for item in items if item.channel == "webhook"]
    assert isinstance(hook, dict)
    assert [i["incident"] for i in hook["incidents"]] == [i.id for i in told]
    assert set(hook["incidents"][0]["findings"]) == {f.id for f in told[0].findings}
    assert {f["id"] for f in hook["findings"]} == {f.id for f in findings}  # all still there
    tickets = [json.loads(p.read_text()) for p in sorted((tmp_path / "t").iterdir())]
    (story,) = [t for t in tickets if "story" in t]
    assert story["story"] == told[0].story and story["priority"] == "high"
    alone = [t for t in tickets if "story" not in t]
    assert sorted(t["id"] for t in alone) == sorted(
        f.id for f in findings if f not in told[0].findings
    )

    # a stealthy finding keeps its incident's story from the public channels
    stealthy = NotifySettings(
        webhook="http://127.0.0.1:9/hook", stealth_kinds=(told[0].findings[0].kind.value,)
    )
    notify(findings, stealthy, outbox=tmp_path / "box2", now=T0, incidents=incidents)
    (hook,) = [
        item.payload["body"]
        for _, item in Outbox(tmp_path / "box2").pending()
        if item.channel == "webhook"
    ]
    assert isinstance(hook, dict) and hook["incidents"] == []


def test_the_reports_incident_shows_a_long_name_by_its_ends() -> None:
    from perfsleuth.report.incidents import incident_sections

    long = "db-" + "x" * 5_000
    saturated = finding(Kind.BOTTLENECK, long, "bottleneck", minutes=5, length=20)
    (incident,) = find_incidents([CHANGE, saturated], topology=Topology({"checkout": (long,)}))
    assert long in incident.story  # the incident keeps it whole...
    (section,) = incident_sections([incident])
    texts = [section.title, section.intro, *(str(c) for row in section.tables[0].rows for c in row)]
    assert not any(long in text for text in texts)  # ...the page shows it by its ends
    assert all("...(5,003 characters)..." in text for text in (section.title, section.intro))


def test_the_report_draws_incidents_of_several_findings_and_notes_the_lone_ones() -> None:
    from perfsleuth.report.incidents import incident_sections

    incidents = find_incidents([LOOP, SATURATED, UPGRADE, RELEASE, SLOW, CHANGE], topology=TOPOLOGY)
    told, alone = incident_sections(incidents)
    assert told.title.startswith("Incident 1 · error · checkout, db-1, web-1 ·")
    assert told.tables[0].rows[0][0] == "when" and len(told.figures) == 1  # chain, timeline
    # the loop alone: no box of empty questions, one note of what they lack
    assert alone.title == "1 finding on its own" and not alone.tables and not alone.figures
    assert "in the summary below" in alone.intro
    assert alone.intro.endswith(incidents[1].unanswered)
    # the story less the loop's own sentence, the four lacking families in one sentence
    assert incidents[1].unanswered == (
        "No change-point, transaction-mix, CPU-per-transaction or OS counter data for batch-7."
    )
    assert incidents[0].unanswered == "No process data for db-1, web-1."

    # one file's change points: one note, whatever their count
    changes = [
        finding(Kind.CHANGE_POINT, "mt", "changepoint", minutes=60 * k, severity=Severity.ERROR)
        for k in range(11)
    ]
    (note,) = incident_sections(find_incidents(changes))
    assert note.title == "11 findings on their own"
    assert note.intro.count("No transaction-mix, CPU-per-transaction, process or OS counter") == 1
    assert incident_sections([]) == []

    # two findings at one instant of one question: nothing for a timeline to place
    spike = finding(Kind.SPIKE, "checkout", "changepoint", minutes=2)
    (pair,) = incident_sections(find_incidents([CHANGE, spike]))
    assert pair.title.endswith("2 findings") and not pair.figures
