"""Linux counters for the bottleneck model: /proc, one block device, and a workload's cgroup.

:class:`LinuxCounters` reads cumulative counters and levels; two readings give one row per
counter of the counter frame (rates per second, in the built-in model's units):

=====================  ==========================================================================
``cpu.user``           cores: Δ(user + nice) of /proc/stat
``cpu.system``         cores: Δ(system + irq + softirq)
``disk.reads`` …       /proc/diskstats of the device: reads/s, bytes/s, writes/s, bytes/s,
                       ``disk.busy`` (share of time with I/O in flight), ``disk.inflight``
                       (average requests in flight, aqu-sz)
``mem.refault``        pages/s: Δ workingset_refault_file
``cg.cpu.*``           the cgroup's cpu.stat user/system (cgroup v2; v1 cpuacct.stat)
``cg.io.*``            io.stat of the device (v2 io controller), else Σ /proc/<pid>/io of the
                       cgroup's processes (bytes only)
``cg.app.*``           Σ /proc/<pid>/io syscr, rchar, syscw, wchar of the cgroup's processes
``cg.mem.*``           memory.stat: ``anon`` (bytes), ``refault`` (pages/s); ``cg.mem.limit``
                       (bytes, MemTotal if unlimited)
``cg.psi.io``          io.pressure "some": share of time stalled
``cg.psi.cpu``,        cpu.pressure and memory.pressure "some": share of time some task of the
``cg.psi.memory``      workload waited for a CPU, or stalled on memory (reclaim, thrashing)
``cg.cpu.wait``        cores waiting in a run queue: Σ over the cgroup's threads of the growth of
                       /proc/<tid>/schedstat's run delay per second
``cg.cpu.runnable``    share of time the workload's threads are running or waiting to run,
                       each thread weighted by that share (1: CPU-bound threads)
``cg.cpu.throttled``   share of time the CPU quota held the cgroup back; ``cg.cpu.limit`` the
                       quota in cores (the CPUs online when there is none)
``cg.mem.majfault``    major page faults per second (memory.stat pgmajfault)
``cg.mem.current``,    bytes charged to the cgroup, page cache included; the page cache, and
``cg.mem.file``,       its dirty and under-write-back parts (levels)
``cg.mem.dirty``,
``cg.mem.writeback``
``cg.mem.limit_hits``  times per second the memory limit was hit (memory.events max + high, v1
                       memory.failcnt)
``psi.cpu``,           the machine's pressure (/proc/pressure, "some"); ``mem.majfault`` (major
``psi.memory``,        faults/s), ``mem.dirty`` and ``mem.writeback`` (bytes, /proc/meminfo)
``psi.io``
=====================  ==========================================================================

Every raw reading comes from :mod:`perfsleuth.sources.procfs` (the one reader of /proc, /sys
and the cgroup mount); this module turns readings into the model's rates, and makes the
cgroups the calibration and verification workloads run in. Hosts with both hierarchies (cgroup
v1 controllers, v2 mounted at ``/sys/fs/cgroup/unified``) are handled: cpu.stat and pressure
come from the unified hierarchy, memory from the v1 memory controller. A counter that cannot
be read (no such file, no permission) is left out, not guessed; processes that exit between
readings are skipped.

Not collected, because they do not count what they seem to on current kernels: page-cache
insertions (memcg ``pgpgin`` counts folios, not pages, and pages dropped by invalidation are
never "stolen"), and memory pressure, which counts only refaults of pages that were active.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from perfsleuth.errors import SourceError
from perfsleuth.sources.procfs import (
    CPU_FIELDS,
    IO_SYSCALLS,
    SECTOR,
    TICKS,
    Cgroup,
    DiskStats,
    block_device_number,
    block_device_of,
    io_growth,
    read_cgroup_counters,
    read_diskstats,
    read_meminfo,
    read_pressure,
    read_process_io,
    read_stat,
    read_task_schedstat,
    read_vmstat,
    runnable_growth,
)

__all__ = [
    "Cgroup",
    "LinuxCounters",
    "Reading",
    "add_to_cgroup",
    "create_cgroup",
    "remove_cgroup",
    "temporary_cgroup",
]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Reading:
    """Raw values at one instant: cumulative counters and levels, by name."""

    monotonic: float
    wall: datetime
    values: dict[str, float]
    pids: dict[int, dict[str, float]] = field(default_factory=dict)
    tasks: dict[int, dict[str, float]] = field(default_factory=dict)
    """/proc/<tid>/schedstat of the cgroup's threads (``run_ns``, ``delay_ns``)."""


# -- a workload's cgroup: making one, moving processes in, removing it -----------------------
# (reading a cgroup is perfsleuth.sources.procfs's job; these write, for the workloads that
# calibration, verification and the real scenarios run)


def create_cgroup(
    name: str,
    *,
    memory_limit: int | None = None,
    cpu_limit: float | None = None,
    root: Path = Path("/sys/fs/cgroup"),
) -> Cgroup:
    """Make the cgroup in every hierarchy that takes it (v2; v1 memory, cpuacct, cpu and blkio
    on hybrid hosts), with an optional memory limit in bytes and CPU quota in cores."""
    name = name.strip("/")
    pure_v2 = (root / "cgroup.controllers").exists()
    period = 100_000  # µs: the kernel's default CFS period
    try:
        if pure_v2:
            (root / name).mkdir(parents=True, exist_ok=True)
            if memory_limit is not None:
                (root / name / "memory.max").write_text(str(int(memory_limit)))
            if cpu_limit is not None:
                (root / name / "cpu.max").write_text(f"{round(cpu_limit * period)} {period}")
        else:
            (root / "unified" / name).mkdir(parents=True, exist_ok=True)
            for hierarchy in ("memory", "cpuacct", "cpu", "blkio"):
                if (root / hierarchy).is_dir():
                    (root / hierarchy / name).mkdir(parents=True, exist_ok=True)
            if memory_limit is not None:
                (root / "memory" / name / "memory.limit_in_bytes").write_text(
                    str(int(memory_limit))
                )
            if cpu_limit is not None:
                (root / "cpu" / name / "cpu.cfs_period_us").write_text(str(period))
                (root / "cpu" / name / "cpu.cfs_quota_us").write_text(
                    str(round(cpu_limit * period))
                )
    except OSError as exc:
        raise SourceError(f"cannot create cgroup {name!r}: {exc.strerror or exc}") from exc
    return Cgroup.find(name, root)


def add_to_cgroup(group: Cgroup, pid: int) -> None:
    """Move process ``pid`` into ``group`` in every hierarchy."""
    for directory in group.directories():
        try:
            (directory / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            raise SourceError(f"cannot move {pid} into {directory}: {exc.strerror}") from exc


def remove_cgroup(group: Cgroup) -> None:
    """Remove the (empty) cgroup directories; best effort."""
    for directory in group.directories():
        for _ in range(50):  # processes may take a moment to leave after exit
            try:
                directory.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)


@contextmanager
def temporary_cgroup(
    name: str,
    *,
    memory_limit: int | None = None,
    cpu_limit: float | None = None,
    root: Path = Path("/sys/fs/cgroup"),
) -> Iterator[Cgroup]:
    """A cgroup for the duration of a block (created, then removed)."""
    group = create_cgroup(name, memory_limit=memory_limit, cpu_limit=cpu_limit, root=root)
    try:
        yield group
    finally:
        remove_cgroup(group)


class LinuxCounters:
    """Reads the counters of the built-in Linux model.

    Parameters
    ----------
    device
        Whole-disk name (``vda``); default: the device holding ``/``.
    cgroup
        The workload's cgroup (name relative to the cgroup root), for ``cg.*`` counters.
    entity
        Entity of the rows; default: the host name, with ``/<cgroup>`` when one is given.
    proc, sys_root, cgroup_root
        Where /proc, /sys and the cgroup mount are (tests point these at fixtures).
    """

    def __init__(
        self,
        *,
        device: str | None = None,
        cgroup: str | Cgroup | None = None,
        entity: str | None = None,
        proc: Path = Path("/proc"),
        sys_root: Path = Path("/sys"),
        cgroup_root: Path = Path("/sys/fs/cgroup"),
    ) -> None:
        self.proc = proc
        self.sys_root = sys_root
        self.device = device or block_device_of("/", sys_root)
        if isinstance(cgroup, Cgroup) or cgroup is None:
            self.cgroup = cgroup
        else:
            self.cgroup = Cgroup.find(cgroup, cgroup_root)
        host = os.uname().nodename
        self.entity = entity or (host if self.cgroup is None else f"{host}/{self.cgroup.name}")
        self._last: Reading | None = None
        if self.device not in read_diskstats(proc):
            raise SourceError(f"{proc / 'diskstats'}: no device {self.device!r}")
        # the io.stat line of the device (cgroup v2): its MAJ:MIN
        self._device_number = block_device_number(self.device, sys_root)

    # -- reading ------------------------------------------------------------------------------

    def read(self) -> Reading:
        values: dict[str, float] = {}
        stat = _optional(read_stat, self.proc)
        cpu = {} if stat is None else stat.cpu
        if cpu:
            ticks = [cpu.get(name, 0.0) for name in CPU_FIELDS]
            values["cpu.user_ticks"] = ticks[0] + ticks[1]
            values["cpu.system_ticks"] = ticks[2] + ticks[5] + ticks[6]
            values["cpu.iowait_ticks"] = ticks[4]
        disk = read_diskstats(self.proc).get(self.device)
        if disk is not None:
            values.update(_disk_values(disk))
        vm = _optional(read_vmstat, self.proc) or {}
        if "pgmajfault" in vm:
            values["vm.pgmajfault"] = vm["pgmajfault"]
        refault = vm.get("workingset_refault_file", vm.get("workingset_refault"))
        if refault is not None:
            values["vm.refault"] = refault
        meminfo = _optional(read_meminfo, self.proc) or {}
        for key, name in _MEMINFO.items():
            if key in meminfo:
                values[name] = meminfo[key]
        for resource, totals in read_pressure(self.proc).items():
            if "some" in totals:
                values[f"psi.{resource}_usec"] = totals["some"]
        if stat is not None:
            values["cpu.count"] = float(stat.ncpu)
        pids: dict[int, dict[str, float]] = {}
        tasks: dict[int, dict[str, float]] = {}
        if self.cgroup is not None:
            values.update(self._cgroup(values.get("mem.total"), values.get("cpu.count")))
            pids = self._pid_io()
            tasks = read_task_schedstat(self.cgroup.threads(), self.proc)
        return Reading(time.monotonic(), datetime.now(UTC), values, pids, tasks)

    def _cgroup(self, mem_total: float | None, ncpu: float | None) -> dict[str, float]:
        assert self.cgroup is not None
        got = read_cgroup_counters(self.cgroup, self._device_number)
        out: dict[str, float] = {}
        for name in _CGROUP_CUMULATIVE + _CGROUP_LEVELS:
            value = getattr(got, name)
            if value is not None:
                out[f"cg.{name}"] = value
        if got.cpu_limit is not None:  # no quota: the CPUs online
            out["cg.cpu.limit"] = got.cpu_limit if ncpu is None else min(got.cpu_limit, ncpu)
        if got.user_usec is not None:
            out["cg.user_usec"] = got.user_usec
            out["cg.system_usec"] = got.system_usec or 0.0
        if got.io_some_usec is not None:
            out["cg.psi_io_usec"] = got.io_some_usec
        out.update({f"cg.io.{name}": value for name, value in got.io.items()})
        if got.mem_anon is not None:
            out["cg.mem.anon"] = got.mem_anon
        if got.mem_refault is not None:
            out["cg.refault"] = got.mem_refault
        if got.mem_limit is not None:  # unlimited: what the machine has
            out["cg.mem.limit"] = (
                min(got.mem_limit, mem_total) if mem_total is not None else got.mem_limit
            )
        return out

    def _pid_io(self) -> dict[int, dict[str, float]]:
        assert self.cgroup is not None
        out = {}
        for pid in self.cgroup.pids():
            io = read_process_io(pid, self.proc)
            if io:
                out[pid] = io
        return out

    # -- rates ------------------------------------------------------------------------------

    def rates(self, before: Reading, after: Reading) -> dict[str, float]:
        """Counter values for the interval between two readings (model units)."""
        dt = after.monotonic - before.monotonic
        if dt <= 0:
            raise SourceError("readings out of order (no time passed between them)")
        a, b = before.values, after.values
        out: dict[str, float] = {}

        def delta(key: str) -> float | None:
            if key in a and key in b:
                return (b[key] - a[key]) / dt
            return None

        def put(name: str, value: float | None, factor: float = 1.0) -> None:
            if value is not None:  # a counter that went backwards was reset: count 0, not < 0
                out[name] = max(value * factor, 0.0)

        put("cpu.user", delta("cpu.user_ticks"), 1.0 / TICKS)
        put("cpu.system", delta("cpu.system_ticks"), 1.0 / TICKS)
        put("cpu.iowait", delta("cpu.iowait_ticks"), 1.0 / TICKS)
        put("disk.reads", delta("disk.reads_n"))
        put("disk.read_bytes", delta("disk.read_sectors"), SECTOR)
        put("disk.writes", delta("disk.writes_n"))
        put("disk.write_bytes", delta("disk.write_sectors"), SECTOR)
        put("disk.busy", delta("disk.io_ms"), 1e-3)
        put("disk.inflight", delta("disk.weighted_ms"), 1e-3)
        put("mem.refault", delta("vm.refault"))
        put("mem.majfault", delta("vm.pgmajfault"))
        for resource in ("cpu", "memory", "io"):
            put(f"psi.{resource}", delta(f"psi.{resource}_usec"), 1e-6)
        for name in ("mem.available", *_MEMINFO.values()):
            if name in b:
                out[name] = b[name]
        put("cg.cpu.user", delta("cg.user_usec"), 1e-6)
        put("cg.cpu.system", delta("cg.system_usec"), 1e-6)
        put("cg.psi.io", delta("cg.psi_io_usec"), 1e-6)
        for key in ("cg.io.read_bytes", "cg.io.write_bytes", "cg.io.reads", "cg.io.writes"):
            put(key, delta(key))
        if "cg.mem.anon" in b:
            out["cg.mem.anon"] = b["cg.mem.anon"]
        if "cg.mem.limit" in b:
            out["cg.mem.limit"] = b["cg.mem.limit"]
        put("cg.mem.refault", delta("cg.refault"))
        put("cg.psi.cpu", delta("cg.cpu_some_usec"), 1e-6)
        put("cg.psi.memory", delta("cg.memory_some_usec"), 1e-6)
        put("cg.cpu.throttled", delta("cg.throttled_usec"), 1e-6)
        put("cg.mem.majfault", delta("cg.mem_majfault"))
        put("cg.mem.limit_hits", delta("cg.mem_limit_hits"))
        for name in _CGROUP_LEVELS:
            if f"cg.{name}" in b:
                out["cg." + name.replace("_", ".", 1)] = b[f"cg.{name}"]
        if "cg.cpu.limit" in b:
            out["cg.cpu.limit"] = b["cg.cpu.limit"]
        if self.cgroup is not None:
            out.update(_pid_rates(before.pids, after.pids, dt, out))
            runnable = runnable_growth(before.tasks, after.tasks, dt)
            if runnable is not None:
                out["cg.cpu.wait"], out["cg.cpu.runnable"] = runnable
        return out

    def sample(self) -> list[dict[str, Any]]:
        """Read now; rows for the interval since the previous call (none on the first)."""
        reading = self.read()
        rows: list[dict[str, Any]] = []
        if self._last is not None:
            rates = self.rates(self._last, reading)
            rows = [
                {"time": reading.wall, "entity": self.entity, "counter": k, "value": v}
                for k, v in sorted(rates.items())
            ]
        self._last = reading
        return rows

    def collect(self, seconds: float, interval: float = 1.0) -> pd.DataFrame:
        """Sample every ``interval`` seconds for ``seconds``; a counter frame."""
        rows: list[dict[str, Any]] = []
        self.sample()
        deadline = time.monotonic() + seconds
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            time.sleep(min(interval, deadline - now))
            rows += self.sample()
        return pd.DataFrame(rows, columns=["time", "entity", "counter", "value"])


# /proc/meminfo levels kept (bytes) under the model's names
_MEMINFO = {
    "MemTotal": "mem.total",
    "MemAvailable": "mem.available",
    "Dirty": "mem.dirty",
    "Writeback": "mem.writeback",
}
# CgroupCounters fields: cumulative ones become rates, levels are kept as they are
_CGROUP_CUMULATIVE = (
    "cpu_some_usec",
    "memory_some_usec",
    "throttled_usec",
    "mem_majfault",
    "mem_limit_hits",
)
_CGROUP_LEVELS = ("mem_current", "mem_file", "mem_dirty", "mem_writeback")


def _optional(read: Callable[[Path], _T], proc: Path) -> _T | None:
    """A machine-wide file that cannot be read gives no counters, not an error."""
    try:
        return read(proc)
    except SourceError:
        return None


def _disk_values(disk: DiskStats) -> dict[str, float]:
    return {
        "disk.reads_n": disk.reads,
        "disk.read_sectors": disk.read_sectors,
        "disk.writes_n": disk.writes,
        "disk.write_sectors": disk.write_sectors,
        "disk.io_ms": disk.io_ms,
        "disk.weighted_ms": disk.weighted_ms,
    }


def _pid_rates(
    before: Mapping[int, Mapping[str, float]],
    after: Mapping[int, Mapping[str, float]],
    dt: float,
    have: Mapping[str, float],
) -> dict[str, float]:
    """Σ over the cgroup's processes of /proc/<pid>/io deltas (new processes count from 0);
    their bytes read and written stand for the cgroup's device I/O absent from ``have``."""
    keys = {key: f"cg.app.{name}" for key, name in IO_SYSCALLS.items()}
    for key in ("read_bytes", "write_bytes"):
        if f"cg.io.{key}" not in have:
            keys[key] = f"cg.io.{key}"
    growth = io_growth(before, after, keys)
    return {keys[key]: total / dt for key, total in growth.items()}
