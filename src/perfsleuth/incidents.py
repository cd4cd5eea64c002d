"""Incidents: findings of several families that tell one story (DESIGN §7).

Each family answers one question; an operator paged at 3 a.m. wants one answer. Findings that
overlap in time (give or take ``tolerance``) and relate by entity — service → node → process →
resource — form one **incident**, told as a causal chain in the order of the questions:

1. **when** — the change point(s): what moved, by how much, when;
2. **workload** — does the transaction mix explain it (Kelly), did the workload change
   (Cherkasova)?
3. **application** — which transaction type got more expensive, or is something else using
   the CPU (Cherkasova)?
4. **process** — which process misbehaves on the nodes involved (Kaminski)?
5. **resource** — which resource is the bottleneck, and the cheapest upgrade (Blake & Breese).

Each link carries its finding, a sentence and a strength; a link with no finding says plainly
why: the family found nothing there (it looked), or it had no data for those entities.

**Relating entities.** A finding's *scope* is a set of keys ``service:<name>`` and
``node:<name>``: workload and segment findings name a service, process findings a node (and
the process), bottleneck findings a host, change points a series' entity (a service or a node:
both keys). A node is named without a port (a Prometheus ``instance`` ``db-1:9100`` is the node
``db-1``). A :class:`Topology` adds the nodes each service runs on: the config's
``[[topology]]`` entries, and what the run reveals (:func:`revealed`: when a run's data name
one node only — one machine's collector, one exporter — every service the run analyses runs on
it). Two findings relate when their scopes share a key after that expansion and their spans
overlap within the tolerance; incidents are the connected groups.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

from perfsleuth.families import FAMILIES, family_of
from perfsleuth.findings import Finding, Kind, Severity, ordered

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "STEPS",
    "Covered",
    "Incident",
    "Link",
    "Topology",
    "covered_by",
    "find_incidents",
    "node_name",
    "revealed",
    "scope_of",
]

Step = Literal["when", "workload", "application", "process", "resource"]

STEPS: tuple[Step, ...] = ("when", "workload", "application", "process", "resource")
"""The links of a causal chain, in the order an operator asks the questions."""

_FAMILY_OF_STEP: dict[Step, str] = {
    "when": "changepoints",
    "workload": "workload",
    "application": "segments",
    "process": "processes",
    "resource": "bottleneck",
}

_WHAT: dict[Step, str] = {
    "when": "change-point",
    "workload": "transaction-mix",
    "application": "CPU-per-transaction",
    "process": "process",
    "resource": "OS counter",
}


@dataclass(frozen=True, slots=True)
class Topology:
    """Which nodes each service runs on (``service → nodes``), declared or revealed."""

    services: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, entries: Iterable[tuple[str, Sequence[str]]]) -> Topology:
        """From ``(service, nodes)`` pairs; a service named twice runs on both lists' nodes."""
        services: dict[str, tuple[str, ...]] = {}
        for service, nodes in entries:
            joined = (*services.get(service, ()), *(node_name(n) for n in nodes))
            services[service] = tuple(dict.fromkeys(joined))
        return cls(services)

    def expand(self, keys: Iterable[str]) -> frozenset[str]:
        """``keys`` plus the nodes of every service among them."""
        out = set(keys)
        for key in list(out):
            kind, _, name = key.partition(":")
            if kind == "service":
                out.update(f"node:{node}" for node in self.services.get(name, ()))
        return frozenset(out)

    def merged(self, other: Topology) -> Topology:
        """Both topologies' services, their node lists joined."""
        services = {k: tuple(v) for k, v in self.services.items()}
        for name, nodes in other.services.items():
            services[name] = tuple(dict.fromkeys((*services.get(name, ()), *nodes)))
        return Topology(services)


@dataclass(frozen=True, slots=True)
class Covered:
    """What one family looked at in a run: the entities (scope keys) and the time span."""

    family: str
    keys: frozenset[str]
    start: datetime
    end: datetime


@dataclass(frozen=True, slots=True)
class Link:
    """One step of an incident's causal chain.

    ``findings`` back it (empty when the step has nothing to say); ``text`` says it in one
    sentence; ``strength`` is in [0, 1] (how sure the link is: 1 − p, a probability, or how
    far the evidence is from the threshold), NaN when it has no finding.
    """

    step: Step
    text: str
    findings: tuple[Finding, ...] = ()
    strength: float = math.nan
    no_data: str = ""
    """For a link without data: the entities no data covered (the story says it once)."""

    @property
    def missing(self) -> bool:
        return not self.findings


@dataclass(frozen=True, slots=True)
class Incident:
    """Findings that tell one story, and the story."""

    findings: tuple[Finding, ...]
    chain: tuple[Link, ...]
    keys: frozenset[str]

    @property
    def id(self) -> str:
        """Stable: the same findings make the same incident."""
        key = "\x1f".join(sorted(f.id for f in self.findings))
        return hashlib.blake2b(key.encode(), digest_size=10).hexdigest()

    @property
    def start(self) -> datetime:
        return min(f.start for f in self.findings)

    @property
    def end(self) -> datetime:
        return max(f.end for f in self.findings)

    @property
    def severity(self) -> Severity:
        return max(f.severity for f in self.findings)

    @property
    def entities(self) -> tuple[str, ...]:
        """Services first, then nodes, by name."""
        services = sorted(k.partition(":")[2] for k in self.keys if k.startswith("service:"))
        nodes = sorted(k.partition(":")[2] for k in self.keys if k.startswith("node:"))
        return tuple(dict.fromkeys([*services, *nodes]))

    @property
    def title(self) -> str:
        """The first link that has a finding, as a headline."""
        for link in self.chain:
            if not link.missing:
                return link.text
        return self.findings[0].explanation

    @property
    def story(self) -> str:
        """One paragraph: every link in order, the missing ones said plainly (the families
        without data for the same entities in one sentence)."""
        return _told(self.chain)

    @property
    def alone(self) -> bool:
        """Whether the incident is one finding related to no other: the report and the console
        tell only the others as incidents (the report notes these once)."""
        return len(self.findings) == 1

    @property
    def unanswered(self) -> str:
        """What the story says of the questions no finding answers (empty when none)."""
        return _told([link for link in self.chain if link.missing])

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "severity": self.severity.name.lower(),
            "entities": list(self.entities),
            "title": self.title,
            "story": self.story,
            "chain": [
                {
                    "step": link.step,
                    "text": link.text,
                    "findings": [f.id for f in link.findings],
                    "strength": None if math.isnan(link.strength) else round(link.strength, 4),
                }
                for link in self.chain
            ],
            "findings": [f.id for f in self.findings],
        }


_PORT = re.compile(r":\d{1,5}$")


def node_name(name: str) -> str:
    """A node's name without a port: ``"db-1:9100"`` → ``"db-1"``."""
    return _PORT.sub("", name.strip())


def scope_of(finding: Finding, topology: Topology | None = None) -> frozenset[str]:
    """The entity keys a finding is about (by its family's ``about``), expanded by
    ``topology``."""
    found_by = family_of(finding)
    about = found_by.about if found_by is not None else "series"
    entity = finding.entity
    keys: set[str]
    if about == "node":  # a host, or a process on one ("node/name[pid]")
        node = str(finding.evidence_dict().get("node", entity.split("/", 1)[0]))
        keys = {f"node:{node_name(node)}"}
    elif about == "service" or entity in (topology or Topology()).services:
        keys = {f"service:{entity}"}  # a workload's entity, or a series named after a service
    else:  # a series' entity may be a service or a host
        keys = {f"service:{entity}", f"node:{node_name(entity)}"}
    return (topology or Topology()).expand(keys)


def _about(name: str) -> str:
    """What family ``name``'s entities name (``"series"`` for an unknown family)."""
    return next((f.about for f in FAMILIES if f.name == name), "series")


def _keys_of(family: str, frame: pd.DataFrame, service: str) -> frozenset[str]:
    """The entity keys a family's input frame covers (see :func:`scope_of`)."""
    about = _about(family)
    if about == "node":
        column = "node" if "node" in frame else "entity"
        return frozenset(f"node:{node_name(str(n))}" for n in frame[column].unique())
    if about == "service":
        return frozenset({f"service:{service}"})
    if "entity" in frame:
        names = [str(e) for e in frame["entity"].unique()]
        return frozenset(
            [*(f"service:{e}" for e in names), *(f"node:{node_name(e)}" for e in names)]
        )
    return frozenset()


def covered_by(family: str, frame: pd.DataFrame, *, service: str = "") -> Covered:
    """What ``family`` looked at when it ran on ``frame``: its entities and time span.

    ``service`` names the service a workload frame describes (the detector's ``entity``).
    """
    times = frame["time"]
    start = times.min().floor("us").to_pydatetime()  # floor: to_pydatetime warns on ns
    end = times.max().ceil("us").to_pydatetime()
    return Covered(family, _keys_of(family, frame, service), start, end)


def revealed(covered: Sequence[Covered]) -> Topology:
    """What a run's data say of where services run: when the run names one node only (one
    machine's collector or exporter), every service it analyses runs on that node.

    Several nodes reveal nothing: which service runs where is then the config's to say.
    """
    nodes = {k.partition(":")[2] for c in covered if _about(c.family) == "node" for k in c.keys}
    if len(nodes) != 1:
        return Topology()
    services = {
        k.partition(":")[2] for c in covered if _about(c.family) == "service" for k in c.keys
    }
    node = next(iter(nodes))
    return Topology({service: (node,) for service in sorted(services)})


def find_incidents(
    findings: Sequence[Finding],
    *,
    topology: Topology | None = None,
    covered: Sequence[Covered] = (),
    tolerance: timedelta = timedelta(minutes=10),
) -> list[Incident]:
    """Group ``findings`` into incidents, most severe (then earliest) first.

    Parameters
    ----------
    topology
        Services and their nodes (see the module docstring); entities relate by name without.
    covered
        What each family looked at, so a chain can tell "found nothing" from "had no data".
    tolerance
        Findings whose spans are at most this far apart still relate.
    """
    topology = topology or Topology()
    # A family that looked at a service looked at the nodes it runs on.
    covered = [Covered(c.family, topology.expand(c.keys), c.start, c.end) for c in covered]
    items = ordered(findings)
    scopes = [scope_of(f, topology) for f in items]
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # Pairs are few (findings of one run): the plain double loop is clear and fast enough.
    for i, a in enumerate(items):
        for j in range(i + 1, len(items)):
            b = items[j]
            near = a.start - tolerance <= b.end and b.start - tolerance <= a.end
            if near and scopes[i] & scopes[j]:
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(root(i), []).append(i)
    incidents = []
    for members in groups.values():
        mine = tuple(items[i] for i in members)
        keys = frozenset().union(*(scopes[i] for i in members))
        incidents.append(Incident(mine, _chain(mine, keys, covered), keys))
    return sorted(incidents, key=lambda x: (-x.severity, x.start, x.id))


# --------------------------------------------------------------------------------------------
# The chain
# --------------------------------------------------------------------------------------------


def _chain(
    findings: Sequence[Finding], keys: frozenset[str], covered: Sequence[Covered]
) -> tuple[Link, ...]:
    by_step: dict[Step, list[Finding]] = {step: [] for step in STEPS}
    for finding in findings:
        by_step[_step_of(finding)].append(finding)
    start = min(f.start for f in findings)
    end = max(f.end for f in findings)
    links = []
    for step in STEPS:
        mine = by_step[step]
        if mine:
            links.append(_link(step, mine))
        else:
            links.append(_absent(step, keys, start, end, covered))
    return tuple(links)


def _step_of(finding: Finding) -> Step:
    if finding.kind in (Kind.CHANGE_POINT, Kind.SPIKE):
        return "when"
    if finding.kind is Kind.APPLICATION_CHANGE:
        return "application"
    found_by = family_of(finding)
    name = found_by.name if found_by is not None else ""
    if name == "segments" and finding.kind is Kind.WORKLOAD_ANOMALY:
        return "application"  # CPU the transactions do not explain: someone else uses it
    if name in ("workload", "segments"):
        return "workload"
    if name == "processes":
        return "process"
    return "resource"


def _link(step: Step, findings: Sequence[Finding]) -> Link:
    lead = _lead(step, findings)
    text = lead.explanation
    others = len(findings) - 1
    if others:
        text = f"{_sentence(text)[:-1]} (and {others} more)"
    return Link(step, text, tuple(findings), _strength(lead))


def _lead(step: Step, findings: Sequence[Finding]) -> Finding:
    """The finding that speaks for a step: the most severe; for change points, the largest
    relative change; for resources, the longest bottleneck (before its upgrade advice)."""

    def change(f: Finding) -> float:
        value = f.evidence_dict().get("relative_change", 0.0)
        return abs(float(value)) if isinstance(value, int | float) else 0.0

    if step == "when":
        return max(findings, key=lambda f: (f.severity, change(f)))
    if step == "resource":  # the resource that held the workload back the longest
        bottlenecks = [f for f in findings if f.kind is Kind.BOTTLENECK] or list(findings)
        return max(bottlenecks, key=lambda f: (f.end - f.start, f.severity))
    return max(findings, key=lambda f: (f.severity, -f.start.timestamp()))


def _strength(finding: Finding) -> float:
    evidence = finding.evidence_dict()
    for name in ("probability", f"p.{evidence.get('bottleneck', '')}"):
        value = evidence.get(name)
        if isinstance(value, int | float) and math.isfinite(value):
            return float(min(max(value, 0.0), 1.0))
    value = evidence.get("p_value")
    # 1 − p where the p-value tests the finding itself (a shift, a changed cost); a workload
    # change's p-value tests the application change it is *not*
    tested = finding.kind in (Kind.CHANGE_POINT, Kind.APPLICATION_CHANGE)
    if tested and isinstance(value, int | float) and math.isfinite(value):
        return float(min(max(1.0 - value, 0.0), 1.0))
    return {Severity.CRITICAL: 0.95, Severity.ERROR: 0.9, Severity.WARNING: 0.7}.get(
        finding.severity, 0.5
    )


def _absent(
    step: Step, keys: frozenset[str], start: datetime, end: datetime, covered: Sequence[Covered]
) -> Link:
    family = _FAMILY_OF_STEP[step]
    what = _WHAT[step]
    looked = [
        c
        for c in covered
        if c.family == family and c.keys & keys and c.start <= end and c.end >= start
    ]
    names = _names(step, keys) or "these entities"
    if looked:
        seen = _names(step, frozenset().union(*(c.keys & keys for c in looked)))
        text = {
            "when": f"no change point in the series of {seen}",
            "workload": f"no workload anomaly in {seen}: its transaction-mix model leaves no "
            "response time unexplained",
            "application": f"no transaction type of {seen} changed its CPU cost",
            "process": f"no process pathology on {seen}",
            "resource": f"no saturated resource on {seen}",
        }[step]
        return Link(step, text)
    return Link(step, f"no {what} data for {names}", no_data=names)


_ENTITY_OF_STEP = {
    "when": "service:",  # a series' entity is a service key (and a node key without topology)
    "process": "node:",
    "resource": "node:",
    "workload": "service:",
    "application": "service:",
}


def _names(step: Step, keys: frozenset[str]) -> str:
    """The entities a step is about, by name: nodes for processes and resources, services
    for the others (all of ``keys`` when none is of the step's kind)."""
    prefix = _ENTITY_OF_STEP.get(step, "")
    wanted = [k for k in keys if k.startswith(prefix)] or list(keys)
    return ", ".join(sorted({k.partition(":")[2] for k in wanted}))


def _told(links: Sequence[Link]) -> str:
    """:attr:`Incident.story` of ``links``."""
    parts: list[str] = []
    pending: list[Link] = []
    for link in [*links, None]:
        if (
            link is not None
            and link.no_data
            and (not pending or pending[0].no_data == link.no_data)
        ):
            pending.append(link)
            continue
        if pending:
            kinds = [_WHAT[p.step] for p in pending]
            listed = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]
            parts.append(_sentence(f"no {listed} data for {pending[0].no_data}"))
            pending = []
        if link is not None and link.no_data:
            pending.append(link)
        elif link is not None:
            parts.append(_sentence(link.text))
    return " ".join(parts)


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
