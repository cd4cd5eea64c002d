"""Counters of other sources in the built-in Linux model's names and units.

The local collector (:mod:`perfsleuth.collect.collector`, ``perfsleuth collect``) stores the
machine's OS counters in the store's counter frame under the names of
:mod:`perfsleuth.sources.procfs`, already as rates per second:

=====================================  ================================================
collector                              model column
=====================================  ================================================
``cpu.user`` + ``cpu.nice``            ``cpu.user`` (cores)
``cpu.system`` + ``cpu.irq`` +         ``cpu.system`` (cores)
``cpu.softirq``
``disk.<dev>.reads`` / ``writes``      ``disk.reads`` / ``disk.writes`` (requests/s)
``disk.<dev>.read_bytes``              ``disk.read_bytes`` (bytes/s)
``disk.<dev>.write_bytes``             ``disk.write_bytes`` (bytes/s)
``disk.<dev>.io_ms`` / 1000            ``disk.busy`` (share of time with I/O in flight)
``disk.<dev>.weighted_ms`` / 1000      ``disk.inflight`` (average requests in flight)
``vmstat.workingset_refault_file``     ``mem.refault`` (pages/s; ``workingset_refault``
                                       on kernels before 5.9)
``vmstat.pgmajfault``                  ``mem.majfault`` (faults/s)
``psi.<cpu|memory|io>.some``           ``psi.cpu``, ``psi.memory``, ``psi.io`` (share of
                                       time some task stalled)
``mem.Dirty`` / ``mem.Writeback``      ``mem.dirty`` / ``mem.writeback`` (bytes)
``mem.MemTotal``                       ``mem.total`` (bytes: the machine's memory)
``stat.procs_running``                 ``cpu.runqueue`` (threads running or runnable)
``workload.<name>``                    ``cg.<name>``: the workload cgroup's counters
                                       (``perfsleuth collect --cgroup``), already in the
                                       model's units
=====================================  ================================================

One block device is used: the one asked for, else the whole disk (not a partition) that moved
the most bytes. The collector's ``cgroup.*`` counters are its *own* cgroup's, not a workload's,
so they are not mapped; a workload's come from ``--cgroup`` (``workload.*``). Without them the
inference uses the machine counters it gets: it tells CPU from disk and sees memory pressure
through refaults and the disk traffic they cause, but cannot tell the workload from its
neighbours.

From ``sar`` (:func:`perfsleuth.sources.sysstat.read_sar`; entities ``<host>:cpu=all``,
``<host>:cpu=<n>`` and ``<host>:disk-device=<dev>``): ``cpu.user`` = (``cpu-load.user`` or, from
``sar -u ALL``, ``cpu-load.usr`` + ``cpu-load.nice``) × CPUs and ``cpu.system`` =
``cpu-load.system`` (or ``cpu-load.sys``) × CPUs (sar's shares are of
all CPUs; their number is that of the per-CPU entities, so record with ``-P ALL``),
``disk.read_bytes`` / ``disk.write_bytes`` = ``disk.rkB`` / ``disk.wkB``, ``disk.busy`` =
``disk.util-percent`` and ``disk.inflight`` = ``disk.aqu-sz`` of one disk (chosen as above),
``cpu.runqueue`` = ``queue.runq-sz`` (``sar -q``), ``mem.majfault`` = ``paging.majflt``
(``sar -B``); ``entity`` becomes the host.

For Prometheus with node-exporter, :func:`prometheus_queries` gives the PromQL of each model
counter node-exporter publishes (CPU by mode, diskstats, major faults, the run queue
``node_procs_running`` and, where the vmstat collector is told to export it,
``workingset_refault_file``); pass it to
:func:`perfsleuth.sources.prometheus.counter_frame` and the frame is in the model's names.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import numpy as np
import pandas as pd

from perfsleuth.errors import DataError

__all__ = [
    "COLLECTOR_MARK",
    "by_entity",
    "from_collector",
    "from_sar",
    "is_collector_frame",
    "is_sar_frame",
    "prometheus_queries",
    "to_model_counters",
]

log = logging.getLogger(__name__)

COLLECTOR_MARK = "collector.interval_s"
"""A counter only the collector writes: a frame holding it uses the collector's names."""

_SUMS: dict[str, tuple[str, ...]] = {
    "cpu.user": ("cpu.user", "cpu.nice"),
    "cpu.system": ("cpu.system", "cpu.irq", "cpu.softirq"),
}
_DISK = re.compile(
    r"^disk\.(?P<dev>.+)\.(?P<what>read_bytes|write_bytes|reads|writes|io_ms|weighted_ms)$"
)
# the chosen disk's counters: collector's field → (model column, divisor: ms/s → share)
_DISK_COLUMNS: dict[str, tuple[str, float]] = {
    "reads": ("disk.reads", 1.0),
    "read_bytes": ("disk.read_bytes", 1.0),
    "writes": ("disk.writes", 1.0),
    "write_bytes": ("disk.write_bytes", 1.0),
    "io_ms": ("disk.busy", 1000.0),
    "weighted_ms": ("disk.inflight", 1000.0),
}
_REFAULTS = ("vmstat.workingset_refault_file", "vmstat.workingset_refault")
# machine counters renamed as they are: collector name → model column
_RENAMED = {
    "vmstat.pgmajfault": "mem.majfault",
    "psi.cpu.some": "psi.cpu",
    "psi.memory.some": "psi.memory",
    "psi.io.some": "psi.io",
    "mem.Dirty": "mem.dirty",
    "mem.Writeback": "mem.writeback",
    "mem.MemTotal": "mem.total",
    "stat.procs_running": "cpu.runqueue",
}
# the workload cgroup's counters (perfsleuth collect --cgroup), in the model's units already
_WORKLOAD = tuple(
    f"{group}.{name}"
    for group, names in (
        ("cpu", ("user", "system", "wait", "runnable", "throttled", "limit")),
        ("psi", ("io", "cpu", "memory")),
        ("io", ("read_bytes", "write_bytes", "reads", "writes")),
        ("app", ("read_ops", "read_bytes", "write_ops", "write_bytes")),
        (
            "mem",
            (
                "anon",
                "limit",
                "refault",
                "majfault",
                "current",
                "file",
                "dirty",
                "writeback",
                "limit_hits",
            ),
        ),
    )
    for name in names
)
_PARTITION_SUFFIX = re.compile(r"^p?\d+$")
_USED = frozenset(
    [source for sources in _SUMS.values() for source in sources]
    + list(_REFAULTS)
    + list(_RENAMED)
    + [f"workload.{name}" for name in _WORKLOAD]
)


def to_model_counters(frame: pd.DataFrame, *, device: str | None = None) -> pd.DataFrame:
    """``frame`` in the Linux model's counter names: the local collector's and sar's frames
    are translated (:func:`from_collector`, :func:`from_sar`), any other is returned as is."""
    if is_collector_frame(frame):
        return from_collector(frame, device=device)
    if is_sar_frame(frame):
        return from_sar(frame, device=device)
    return frame


def is_sar_frame(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` (a counter frame) came from ``sar`` (:mod:`perfsleuth.sources.sysstat`)."""
    if "counter" not in frame.columns or "entity" not in frame.columns or len(frame) == 0:
        return False
    return bool(
        frame["counter"].astype(str).str.startswith("cpu-load.").any()
        and frame["entity"].astype(str).str.contains(":cpu=", regex=False).any()
    )


def _pick_disk(entity: str, disks: dict[str, float], device: str | None) -> str | None:
    """The disk to use: ``device`` if given (an error if absent), else the busiest whole disk
    by ``disks`` (name → bytes moved)."""
    if device is not None:
        if device not in disks:
            raise DataError(
                f"{entity}: no disk {device!r} among the counters "
                f"(have {', '.join(sorted(disks)) or 'none'})"
            )
        return device
    whole = _whole_disks(set(disks))
    return max(whole, key=lambda d: (disks[d], d)) if whole else None


def from_sar(frame: pd.DataFrame, *, device: str | None = None) -> pd.DataFrame:
    """sar's counter frame as a counter frame of the Linux model's columns (see the module).

    Raises
    ------
    DataError
        ``device`` is not among a host's disks.
    """
    columns = ["time", "entity", "counter", "value"]
    if len(frame) == 0:
        return frame.reindex(columns=columns).iloc[:0]
    entity = frame["entity"].astype(str)
    host = entity.str.split(":", n=1).str[0]
    item = entity.str.split(":", n=1).str[1].fillna("")
    parts: list[pd.DataFrame] = []
    for name in sorted(host.unique()):
        mine = frame[host == name]
        kinds = item[host == name]
        out: dict[str, pd.Series] = {}
        ncpu = len({k for k in kinds if k.startswith("cpu=") and k != "cpu=all"})
        cpu = mine[kinds == "cpu=all"].pivot_table(
            index="time", columns="counter", values="value", aggfunc="mean"
        )
        # ``sar -u`` names the shares user/system, ``sar -u ALL`` usr/sys
        user = _first(cpu, ("cpu-load.user", "cpu-load.usr"))
        system = _first(cpu, ("cpu-load.system", "cpu-load.sys"))
        if ncpu > 0 and user is not None:
            nice = cpu["cpu-load.nice"] if "cpu-load.nice" in cpu.columns else 0.0
            out["cpu.user"] = (cpu[user] + nice) * ncpu
        if ncpu > 0 and system is not None:
            out["cpu.system"] = cpu[system] * ncpu
        if ncpu == 0 and len(cpu):
            log.warning("%s: sar recorded no per-CPU lines (-P ALL); CPU counters left out", name)
        machine = mine[kinds == ""].pivot_table(
            index="time", columns="counter", values="value", aggfunc="mean"
        )
        for source, target in (
            ("queue.runq-sz", "cpu.runqueue"),
            ("paging.majflt", "mem.majfault"),
        ):
            if source in machine.columns:
                out[target] = machine[source]
        disks: dict[str, pd.DataFrame] = {}
        for kind in sorted({k for k in kinds if k.startswith("disk-device=")}):
            disks[kind.split("=", 1)[1]] = mine[kinds == kind].pivot_table(
                index="time", columns="counter", values="value", aggfunc="mean"
            )
        moved = {
            d: float(sum(t[c].mean() for c in ("disk.rkB", "disk.wkB") if c in t.columns))
            for d, t in disks.items()
        }
        chosen = _pick_disk(name, moved, device)
        if chosen is not None:
            table = disks[chosen]
            for source, target in (
                ("disk.rkB", "disk.read_bytes"),
                ("disk.wkB", "disk.write_bytes"),
                ("disk.util-percent", "disk.busy"),
                ("disk.aqu-sz", "disk.inflight"),
            ):
                if source in table.columns:
                    out[target] = table[source]
        if not out:
            continue
        wide = pd.DataFrame(out)
        wide.index.name = "time"
        long = wide.reset_index().melt(id_vars="time", var_name="counter", value_name="value")
        long["entity"] = name
        parts.append(long[columns])
    if not parts:
        return frame.reindex(columns=columns).iloc[:0]
    result = pd.concat(parts, ignore_index=True).dropna(subset=["value"])
    return result.sort_values(["entity", "counter", "time"], kind="stable").reset_index(drop=True)


def by_entity(frame: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """Each entity's counters as a time × counter table (one reshape for all: it is the
    costly step), holding only the counters the entity has."""
    if len(frame) == 0:
        return
    table = frame.pivot_table(
        index=["entity", "time"], columns="counter", values="value", aggfunc="mean"
    )
    for entity, rows in table.groupby(level="entity", sort=True):
        yield str(entity), rows.droplevel("entity").dropna(axis=1, how="all")


def _first(table: pd.DataFrame, names: tuple[str, ...]) -> str | None:
    """The first of ``names`` that is a column of ``table``."""
    return next((name for name in names if name in table.columns), None)


def is_collector_frame(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` (a counter frame) was written by the local collector."""
    return "counter" in frame.columns and bool((frame["counter"] == COLLECTOR_MARK).any())


def _whole_disks(devices: set[str]) -> list[str]:
    """Devices that are not partitions of another listed device (vda1 of vda, nvme0n1p2)."""
    return sorted(
        d
        for d in devices
        if not any(
            d != o and d.startswith(o) and _PARTITION_SUFFIX.match(d[len(o) :]) for o in devices
        )
    )


def from_collector(frame: pd.DataFrame, *, device: str | None = None) -> pd.DataFrame:
    """The collector's counter frame as a counter frame of the Linux model's columns.

    Parameters
    ----------
    frame
        Counter frame (``time``, ``entity``, ``counter``, ``value``) as the store returns it.
    device
        Block device to use (``vda``, ``nvme0n1``); default: per entity, the whole disk that
        moved the most bytes.

    Returns
    -------
    pandas.DataFrame
        ``time``, ``entity``, ``counter``, ``value`` rows of the mapped counters, sorted by
        entity, counter and time. A sample missing a component of a sum gives no row.

    Raises
    ------
    DataError
        ``device`` is not among the collector's disks of an entity.
    """
    columns = ["time", "entity", "counter", "value"]
    if len(frame) == 0:
        return frame.reindex(columns=columns).iloc[:0]
    # only what is mapped is reshaped: the collector writes many more counters
    names = frame["counter"].astype(str)
    frame = frame[names.isin(_USED) | names.str.startswith("disk.")]
    if len(frame) == 0:
        return pd.DataFrame(columns=columns)
    # every entity at once (one reshape; per entity, a counter it never reports is absent)
    table = frame.pivot_table(
        index=["entity", "time"], columns="counter", values="value", aggfunc="mean"
    )
    entity_of = table.index.get_level_values("entity")
    has = table.notna().groupby(level="entity", sort=True).any()
    present = has.reindex(entity_of).to_numpy()  # row × counter: the row's entity has it
    where = {str(c): k for k, c in enumerate(table.columns)}
    out: dict[str, pd.Series] = {}
    for target, sources in _SUMS.items():
        if sources[0] not in where:
            continue
        parts = [(table[c], present[:, where[c]]) for c in sources if c in where]
        total = sum(x.where(mine, 0.0) for x, mine in parts)
        missing = np.any([mine & x.isna().to_numpy() for x, mine in parts], axis=0)
        out[target] = total.where(present[:, where[sources[0]]] & ~missing)
    disks: dict[str, dict[str, str]] = {}
    for name in where:
        match = _DISK.match(name)
        if match:
            disks.setdefault(match["dev"], {})[match["what"]] = name
    means = table.groupby(level="entity", sort=True).mean()
    chosen: dict[str, str | None] = {}
    for entity in has.index:
        mine = {d: n for d, n in disks.items() if any(has.at[entity, c] for c in n.values())}
        traffic = {
            d: float(sum(means.at[entity, n[k]] for k in ("read_bytes", "write_bytes") if k in n))
            for d, n in mine.items()
        }
        chosen[str(entity)] = _pick_disk(str(entity), traffic, device)
        if chosen[str(entity)] is not None:
            log.info("%s: disk counters of %s", entity, chosen[str(entity)])
    disk_of = np.array([chosen[str(e)] or "" for e in entity_of], dtype=object)
    for what, (column, divisor) in _DISK_COLUMNS.items():
        picked = [(disk_of == d, n[what]) for d, n in disks.items() if what in n]
        if picked:
            value = pd.Series(np.nan, index=table.index)
            for rows, name in picked:
                value = value.where(~rows, table[name] / divisor)
            out[column] = value
    # the first refault counter the entity reports (kernels before 5.9 name it otherwise)
    refault = pd.Series(np.nan, index=table.index)
    for name in reversed([c for c in _REFAULTS if c in where]):
        refault = refault.where(~present[:, where[name]], table[name])
    out["mem.refault"] = refault
    for source, target in _RENAMED.items():
        if source in where:
            out[target] = table[source]
    for name in _WORKLOAD:
        if f"workload.{name}" in where:
            out[f"cg.{name}"] = table[f"workload.{name}"]
    mapped = pd.DataFrame(out, index=table.index)
    mapped.columns.name = "counter"
    long = mapped.stack().rename("value").reset_index()
    result = long[columns].dropna(subset=["value"])
    result = result.assign(entity=result["entity"].astype(str))
    return result.sort_values(["entity", "counter", "time"], kind="stable").reset_index(drop=True)


def prometheus_queries(device: str | None = None) -> dict[str, str]:
    """Model counter column → PromQL over node-exporter's metrics (``{w}``: the rate window).

    ``device`` restricts the disk counters to one block device (a regular expression of
    node-exporter's ``device`` label, e.g. ``"vda"`` or ``"nvme0n1"``); by default they are
    summed over the disks node-exporter reports (it leaves partitions out), and ``disk.busy``
    is the busiest disk's share of time with I/O in flight.
    """
    if device is not None and ('"' in device or "\\" in device):
        raise DataError(f"device {device!r}: quotes and backslashes are not allowed")
    where = "" if device is None else f'{{device=~"{device}"}}'

    def disk(metric: str, combine: str = "sum") -> str:
        return f"{combine} by (instance) (rate(node_disk_{metric}{where}[{{w}}]))"

    cpu = 'sum by (instance) (rate(node_cpu_seconds_total{{mode=~"{}"}}[{{w}}]))'
    return {
        "cpu.user": cpu.format("user|nice"),
        "cpu.system": cpu.format("system|irq|softirq"),
        "disk.reads": disk("reads_completed_total"),
        "disk.read_bytes": disk("read_bytes_total"),
        "disk.writes": disk("writes_completed_total"),
        "disk.write_bytes": disk("written_bytes_total"),
        "disk.busy": disk("io_time_seconds_total", "max"),
        "disk.inflight": disk("io_time_weighted_seconds_total"),
        "mem.refault": "sum by (instance) (rate(node_vmstat_workingset_refault_file[{w}]))",
        "mem.majfault": "sum by (instance) (rate(node_vmstat_pgmajfault[{w}]))",
        "cpu.runqueue": "sum by (instance) (avg_over_time(node_procs_running[{w}]))",
    }
