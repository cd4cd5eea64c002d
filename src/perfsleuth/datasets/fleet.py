"""A seeded fleet of nodes with business-hours work and injected process pathologies.

Each node gets one scenario (round-robin over :data:`SCENARIOS`, so every pathology has the
same number of examples) on top of ordinary life: daemons, a nightly backup, business-hours
workers whose CPU and memory follow the node's business volume (peaking at 13:00 UTC on
weekdays). CPU is shared as a scheduler shares it: when demand exceeds the node's CPUs, every
runnable process gets an equal share and processes needing less keep what they need
(water-filling), so loops on a full machine become *constrained* loops. The OS accounts a
spinning process as ``loop_mean`` of a CPU (1.00 on Linux, 0.92 on Windows 2000, as in the
paper's parameter lines). Samples carry measurement noise.

Scenarios and their ground truth (``FleetRun.truth``; keys as the checks report them):

===================  =========================================================================
normal               nothing to find
cpu_loop             a process spins from some hour on day 0 to the end (→ ``cpu_loop``)
short_loop           a process spins for 4–6 hours, then dies (below 8 h: nothing to find)
constrained_busy     ncpu + 1 loops on a node with business work (→ ``constrained_loop`` each)
constrained_dormant  ncpu + 1…3 loops on an otherwise idle node (→ ``constrained_loop`` each)
hum                  a poller at a steady 0.15–0.6 CPU around the clock (→ ``hum``)
leak                 one worker's memory grows 60–300% over the run, bumpily (→ ``memory_ramp``)
saw_restart          a leaking cache restarted every 4–8 h, new pid each time (→ ``saw_tooth``
                     of the name: :func:`fleet_rules` follows ``cachesrv`` by name)
saw_file             a log writer's file grows and is truncated every 4–8 h (→ ``saw_tooth``)
cap                  an antivirus scan at 15–30% of the box for 2–5 hours (→ ``cap_exceeded``)
exception            ``statpkg`` busy at one CPU 10–14 h a day (exception list: +8 h) and
                     ``render`` spinning all day (never-alert list): nothing may be reported
capture              a quarter to a half of the machine's CPU is not in the process data
                     (→ ``capture_ratio``)
cache_warm           a cache fills over 2–6 hours, then stays full (not a leak: nothing)
batch                a single-threaded batch job at one CPU for 5–7 h each night (nothing)
===================  =========================================================================

Use the rules of :func:`fleet_rules` (the defaults plus the exception and never-alert entries
and the by-name group of the restarted cache).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from perfsleuth.durations import parse_duration
from perfsleuth.findings import Finding
from perfsleuth.processes.rules import (
    DEFAULT_RULES,
    ExceptionRule,
    Group,
    NeverAlert,
    ProcessRules,
)

__all__ = ["SCENARIOS", "FleetRun", "Score", "fleet_rules", "score", "simulate_fleet", "subject"]

SCENARIOS: tuple[str, ...] = (
    "normal",
    "cpu_loop",
    "short_loop",
    "constrained_busy",
    "constrained_dormant",
    "hum",
    "leak",
    "saw_restart",
    "saw_file",
    "cap",
    "exception",
    "capture",
    "cache_warm",
    "batch",
)

_MIB = 2.0**20
_LOOP_MEAN = {"Linux": 1.00, "Windows 2000": 0.92}


def fleet_rules(base: ProcessRules = DEFAULT_RULES) -> ProcessRules:
    """The rules the simulated fleet is scanned with: ``base`` plus its exception lists and
    the ``cachesrv`` service followed by name (it is restarted under new pids)."""
    return base.model_copy(
        update={
            "groups": (*base.groups, Group(name="cache", processes=("cachesrv",), by_name=True)),
            "exceptions": (*base.exceptions, ExceptionRule(process="statpkg", extra_hours=8)),
            "never_alert": NeverAlert(
                processes=(*base.never_alert.processes, "render*"),
                users=base.never_alert.users,
                nodes=base.never_alert.nodes,
            ),
        }
    )


@dataclass(frozen=True, slots=True, eq=False)
class FleetRun:
    """A simulated fleet: the process frame, its node table and the ground truth."""

    frame: pd.DataFrame
    """Process frame with ``ncpu``, ``os``, ``machine_cpu``, ``volume`` and ``file_bytes``."""
    nodes: pd.DataFrame
    """node, ncpu, os, scenario."""
    truth: pd.DataFrame
    """kind, node, subject: one row per pathology to find (subject as in :func:`subject`)."""
    protected: pd.DataFrame
    """node, name: legitimate busy jobs on the exception lists, never to be reported."""
    rules: ProcessRules


@dataclass
class _Proc:
    pid: int
    name: str
    user: str
    demand: NDArray[np.float64]
    rss: NDArray[np.float64]
    files: NDArray[np.float64] | None = None
    alive: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))


@dataclass
class _Node:
    name: str
    ncpu: int
    os: str
    scenario: str
    procs: list[_Proc] = field(default_factory=list)
    truth: list[tuple[str, str]] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    uncaptured: float = 0.0
    next_pid: int = 300

    def pid(self, rng: np.random.Generator) -> int:
        self.next_pid += int(rng.integers(1, 200))
        return self.next_pid


def _volume(hours: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
    """Business volume in 0..1: a weekday bump peaking at 13:00 UTC, a quieter weekend."""
    hod = hours % 24
    weekday = (hours // 24) % 7 < 5
    bump = 0.08 + 0.92 * np.exp(-0.5 * ((hod - 13.0) / 3.0) ** 2)
    # day-to-day and hour-to-hour wobble, smooth within the hour
    hourly = rng.lognormal(0.0, 0.08, size=int(hours.max()) + 2)[hours.astype(np.int64)]
    return bump * np.where(weekday, 1.0, 0.4) * hourly


def _water_fill(demand: NDArray[np.float64], ncpu: float) -> NDArray[np.float64]:
    """CPU each process gets per instant: equal shares, capped at its demand (rows = instants)."""
    total = demand.sum(axis=1)
    full = total > ncpu
    if not full.any():
        return demand.copy()
    d = demand[full]
    s = np.sort(d, axis=1)
    n = s.shape[1]
    before = np.concatenate([np.zeros((len(s), 1)), np.cumsum(s, axis=1)[:, :-1]], axis=1)
    levels = (ncpu - before) / (n - np.arange(n))
    # the level is the first k whose k-th smallest demand reaches the equal share of the rest
    k = np.argmax(s >= levels, axis=1)
    level = levels[np.arange(len(s)), k]
    out = demand.copy()
    out[full] = np.minimum(d, level[:, np.newaxis])
    return out


def _spans(hours: NDArray[np.float64], start: float, stop: float) -> NDArray[np.bool_]:
    return (hours >= start) & (hours < stop)


def _ordinary(
    node: _Node,
    hours: NDArray[np.float64],
    volume: NDArray[np.float64],
    work_peak: float,
    rng: np.random.Generator,
) -> None:
    t = len(hours)
    for name in ("sshd", "cron", "syslogd", "snmpd", "ntpd")[: int(rng.integers(3, 6))]:
        level = rng.uniform(0.002, 0.02)
        node.procs.append(
            _Proc(
                node.pid(rng),
                name,
                "root",
                level * rng.lognormal(0, 0.3, t),
                rng.uniform(5, 60) * _MIB * (1 + rng.normal(0, 0.01, t)),
            )
        )
    backup = (hours % 24 >= 1) & (hours % 24 < 2)
    node.procs.append(
        _Proc(
            node.pid(rng),
            "backup_agent",
            "backup",
            np.where(backup, 0.04 * node.ncpu, 0.001) * rng.lognormal(0, 0.1, t),
            80 * _MIB * (1 + rng.normal(0, 0.01, t)),
        )
    )
    if work_peak <= 0:
        return
    workers = max(1, math.ceil(work_peak / 0.5))
    for w in range(workers):
        name = ("httpd", "java", "postgres")[w % 3]
        base = rng.uniform(150, 600) * _MIB
        alloc = rng.uniform(0.1, 0.4) * base
        node.procs.append(
            _Proc(
                node.pid(rng),
                name,
                "app",
                work_peak / workers * volume * rng.lognormal(0, 0.1, t),
                (base + alloc * volume) * (1 + rng.normal(0, 0.01, t)),
            )
        )


def _loop(
    node: _Node,
    hours: NDArray[np.float64],
    start: float,
    stop: float,
    name: str,
    rng: np.random.Generator,
) -> _Proc:
    alive = _spans(hours, start, stop)
    proc = _Proc(
        node.pid(rng),
        name,
        "ops",
        np.where(alive, 1.0, 0.0),
        rng.uniform(4, 40) * _MIB * (1 + rng.normal(0, 0.005, len(hours))),
    )
    proc.alive = alive
    node.procs.append(proc)
    return proc


def _scenario(
    node: _Node, hours: NDArray[np.float64], volume: NDArray[np.float64], rng: np.random.Generator
) -> float:
    """Add the scenario's processes; return the business work peak (cores) for the node."""
    end = float(hours[-1]) + 1
    t = len(hours)
    kind = node.scenario
    ncpu = node.ncpu
    if kind == "cpu_loop":
        name = str(rng.choice(["mailcheck", "report_gen", "perl", "cobolrun", "java"]))
        proc = _loop(node, hours, rng.uniform(0, 12), end, name, rng)
        node.truth.append(("cpu_loop", f"{name}[{proc.pid}]"))
        return rng.uniform(0.1, 0.35) * ncpu
    if kind == "short_loop":
        start = rng.uniform(0, end - 8)
        _loop(node, hours, start, start + rng.uniform(4, 6), "stuckjob", rng)
        return rng.uniform(0.1, 0.35) * ncpu
    if kind in ("constrained_busy", "constrained_dormant"):
        extra = 1 if kind == "constrained_busy" else int(rng.integers(1, 4))
        start = rng.uniform(0, 4)
        for k in range(ncpu + extra):
            name = ("spinner", "mailpoll", "perl", "ksh")[k % 4]
            proc = _loop(node, hours, start + k * 0.05, end, name, rng)
            node.truth.append(("constrained_loop", f"{name}[{proc.pid}]"))
        return rng.uniform(0.3, 0.5) * ncpu if kind == "constrained_busy" else 0.0
    if kind == "hum":
        level = rng.uniform(0.15, 0.6)
        proc = _Proc(
            node.pid(rng),
            "pollerd",
            "app",
            level * rng.lognormal(0, 0.05, t),
            rng.uniform(20, 80) * _MIB * (1 + rng.normal(0, 0.005, t)),
        )
        node.procs.append(proc)
        node.truth.append(("hum", f"pollerd[{proc.pid}]"))
        return rng.uniform(0.1, 0.4) * ncpu
    if kind == "leak":
        base = rng.uniform(150, 500) * _MIB
        growth = rng.uniform(0.6, 3.0) * base
        bump = rng.uniform(0.05, 0.3) * base
        frac = (hours - hours[0]) / (end - hours[0])
        rss = base + growth * frac + bump * volume + rng.normal(0, 0.01 * base, t)
        proc = _Proc(
            node.pid(rng), "leakyd", "app", 0.05 + 0.2 * volume * rng.lognormal(0, 0.1, t), rss
        )
        node.procs.append(proc)
        node.truth.append(("memory_ramp", f"leakyd[{proc.pid}]"))
        return rng.uniform(0.1, 0.4) * ncpu
    if kind == "saw_restart":
        every = float(rng.choice([4.0, 6.0, 8.0]))
        peak = rng.uniform(300, 900) * _MIB
        offset = rng.uniform(0, every)
        phase = ((hours - offset) % every) / every
        life = np.floor((hours - offset) / every).astype(np.int64)
        for number in np.unique(life):
            alive = life == number
            rss = (40 * _MIB + peak * phase) * (1 + rng.normal(0, 0.01, t))
            proc = _Proc(node.pid(rng), "cachesrv", "app", np.where(alive, 0.03, 0.0), rss)
            proc.alive = alive
            node.procs.append(proc)
        node.truth.append(("saw_tooth", "cachesrv"))
        return rng.uniform(0.1, 0.4) * ncpu
    if kind == "saw_file":
        every = float(rng.choice([4.0, 6.0, 8.0]))
        size = rng.uniform(50, 500) * _MIB
        phase = ((hours - rng.uniform(0, every)) % every) / every
        proc = _Proc(
            node.pid(rng),
            "logwriter",
            "app",
            0.01 * rng.lognormal(0, 0.2, t),
            30 * _MIB * (1 + rng.normal(0, 0.005, t)),
            files=size * phase * (1 + rng.normal(0, 0.005, t)),
        )
        node.procs.append(proc)
        node.truth.append(("saw_tooth", f"logwriter[{proc.pid}]"))
        return rng.uniform(0.1, 0.4) * ncpu
    if kind == "cap":
        start = rng.uniform(8, 18)
        alive = _spans(hours, start, start + rng.uniform(2, 5))
        proc = _Proc(
            node.pid(rng),
            "antivirus_scan",
            "system",
            np.where(alive, rng.uniform(0.15, 0.3) * ncpu, 0.0) * rng.lognormal(0, 0.05, t),
            120 * _MIB * (1 + rng.normal(0, 0.01, t)),
        )
        proc.alive = alive
        node.procs.append(proc)
        node.truth.append(("cap_exceeded", "tools"))
        return rng.uniform(0.1, 0.3) * ncpu
    if kind == "exception":
        # statpkg: an analyst's statistics job, one CPU 10-14 h a night (exception list, +8 h)
        hod = hours % 24
        length = rng.uniform(10, 14)
        on = (hod >= 18) | (hod < (18 + length) - 24)
        proc = _Proc(
            node.pid(rng),
            "statpkg",
            "analyst",
            np.where(on, 1.0, 0.0),
            rng.uniform(200, 900) * _MIB * (1 + rng.normal(0, 0.005, t)),
        )
        node.procs.append(proc)
        render = _loop(node, hours, 0.0, end, "render_farm", rng)  # never-alert list
        render.user = "render"
        node.protected += ["statpkg", "render_farm"]
        return rng.uniform(0.05, 0.2) * ncpu
    if kind == "cache_warm":
        size = rng.uniform(300, 1500) * _MIB
        fill = np.clip((hours - hours[0]) / rng.uniform(2, 6), 0, 1)
        node.procs.append(
            _Proc(
                node.pid(rng),
                "memcached",
                "app",
                0.02 + 0.1 * volume,
                (20 * _MIB + size * fill) * (1 + rng.normal(0, 0.01, t)),
            )
        )
        return rng.uniform(0.1, 0.4) * ncpu
    if kind == "batch":
        hod = hours % 24
        start = rng.uniform(0, 2)
        on = (hod >= start) & (hod < start + rng.uniform(5, 7))
        node.procs.append(
            _Proc(
                node.pid(rng),
                "nightly_etl",
                "batch",
                np.where(on, 1.0, 0.0),
                rng.uniform(200, 900) * _MIB * (1 + rng.normal(0, 0.005, t)),
            )
        )
        return rng.uniform(0.1, 0.35) * ncpu
    if kind == "capture":
        node.uncaptured = rng.uniform(0.35, 1.0)  # of the captured CPU: ratio 0.5..0.75
        node.truth.append(("capture_ratio", node.name))
        return rng.uniform(0.2, 0.5) * ncpu
    return rng.uniform(0.1, 0.45) * ncpu


def _node_rows(
    node: _Node,
    times: pd.DatetimeIndex,
    hours: NDArray[np.float64],
    volume: NDArray[np.float64],
    rng: np.random.Generator,
) -> pd.DataFrame:
    t = len(hours)
    for proc in node.procs:
        if len(proc.alive) == 0:
            proc.alive = np.ones(t, dtype=bool)
    alive = np.stack([p.alive for p in node.procs], axis=1)
    demand = np.stack([p.demand for p in node.procs], axis=1) * alive
    got = _water_fill(demand, float(node.ncpu))
    accounting = _LOOP_MEAN[node.os]
    cpu = np.clip(got * accounting * (1 + rng.normal(0, 0.02, got.shape)), 0.0, None)
    captured = cpu.sum(axis=1)
    overhead = 1.0 + rng.uniform(0.0, 0.04, t) + node.uncaptured
    machine = np.minimum(captured * overhead, float(node.ncpu))
    frames = []
    for j, proc in enumerate(node.procs):
        rows = np.flatnonzero(proc.alive & (rng.random(t) >= 0.01))  # 1% of samples lost
        if not len(rows):
            continue
        files = np.zeros(len(rows)) if proc.files is None else np.clip(proc.files[rows], 0, None)
        frames.append(
            pd.DataFrame(
                {
                    "time": times[rows],
                    "node": node.name,
                    "pid": proc.pid,
                    "name": proc.name,
                    "user": proc.user,
                    "cpu": cpu[rows, j],
                    "rss_bytes": np.clip(proc.rss[rows], 0, None),
                    "file_bytes": files,
                    "machine_cpu": machine[rows],
                    "volume": np.round(1000 * volume[rows], 1),
                }
            )
        )
    out = pd.concat(frames, ignore_index=True)
    out["ncpu"] = float(node.ncpu)
    out["os"] = node.os
    return out


def simulate_fleet(
    n_nodes: int = 48,
    *,
    days: int = 2,
    interval: str | timedelta = "5m",
    seed: int = 0,
    start: str = "2024-03-04",
    scenarios: tuple[str, ...] = SCENARIOS,
) -> FleetRun:
    """Simulate ``n_nodes`` nodes for ``days`` days sampled every ``interval``.

    Nodes take the scenarios in turn (node ``i`` gets ``scenarios[i % len(scenarios)]``), so
    ``n_nodes = k * len(scenarios)`` gives ``k`` examples of each. Deterministic in ``seed``.
    """
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        raise ValueError(f"unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}")
    if n_nodes < 1 or days < 1:
        raise ValueError("n_nodes and days must be at least 1")
    step = parse_duration(interval)
    rng = np.random.default_rng(seed)
    origin = pd.Timestamp(start, tz="UTC")
    count = int(timedelta(days=days) / step)
    times = pd.date_range(origin, periods=count, freq=step)
    hours = np.arange(count, dtype=np.float64) * (step.total_seconds() / 3600.0)
    frames, nodes, truth, protected = [], [], [], []
    for i in range(n_nodes):
        kind = scenarios[i % len(scenarios)]
        node_rng = np.random.default_rng([seed, i])
        if kind in ("constrained_busy", "constrained_dormant"):
            ncpu = int(node_rng.choice([2, 4]))
        elif kind in ("cpu_loop", "exception", "short_loop", "batch"):
            ncpu = int(node_rng.choice([4, 8]))
        else:
            ncpu = int(node_rng.choice([2, 4, 8]))
        os_name = "Windows 2000" if node_rng.random() < 0.3 else "Linux"
        node = _Node(f"node{i:04d}", ncpu, os_name, kind)
        volume = _volume(hours, node_rng)
        work = _scenario(node, hours, volume, node_rng)
        _ordinary(node, hours, volume, work, node_rng)
        frames.append(_node_rows(node, times, hours, volume, node_rng))
        nodes.append((node.name, float(ncpu), os_name, kind))
        truth += [(k, node.name, s) for k, s in node.truth]
        protected += [(node.name, n) for n in node.protected]
    del rng
    frame = pd.concat(frames, ignore_index=True)
    return FleetRun(
        frame=frame,
        nodes=pd.DataFrame(nodes, columns=["node", "ncpu", "os", "scenario"]),
        truth=pd.DataFrame(truth, columns=["kind", "node", "subject"]),
        protected=pd.DataFrame(protected, columns=["node", "name"]),
        rules=fleet_rules(),
    )


def subject(finding_entity: str, node: str) -> str:
    """What a finding is about, without its node: ``name[pid]``, ``name``, a group or the node."""
    prefix = node + "/"
    return finding_entity[len(prefix) :] if finding_entity.startswith(prefix) else finding_entity


@dataclass(frozen=True, slots=True)
class Score:
    """Precision and recall of one pathology type against the ground truth."""

    kind: str
    truth: int
    found: int
    hits: int

    @property
    def precision(self) -> float:
        return self.hits / self.found if self.found else 1.0

    @property
    def recall(self) -> float:
        return self.hits / self.truth if self.truth else 1.0


def score(findings: list[Finding], run: FleetRun) -> tuple[list[Score], int]:
    """Per-kind scores, and the number of findings about protected (exception-listed) jobs."""
    found: dict[str, set[tuple[str, str]]] = {}
    on_protected = 0
    protected = {(n, name) for n, name in run.protected.itertuples(index=False)}
    for f in findings:
        node = str(f.evidence_dict().get("node", f.entity))
        found.setdefault(f.kind.value, set()).add((node, subject(f.entity, node)))
        name = str(f.evidence_dict().get("process", ""))
        if (node, name) in protected:
            on_protected += 1
    expected: dict[str, set[tuple[str, str]]] = {}
    for kind, node, subj in run.truth.itertuples(index=False):
        expected.setdefault(kind, set()).add((node, subj))
    scores = []
    for kind in sorted(set(found) | set(expected)):
        f_set, t_set = found.get(kind, set()), expected.get(kind, set())
        scores.append(Score(kind, len(t_set), len(f_set), len(f_set & t_set)))
    return scores, on_protected
