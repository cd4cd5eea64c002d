"""The local collector: per-process samples and OS counters into the store, in batches.

Each sample reads cumulative counters (:mod:`perfsleuth.sources.procfs`) and turns them into
rates over the interval since the previous sample: process CPU in cores, I/O in bytes per
interval, OS counters per second. Samples accumulate in memory and are committed every
``batch`` samples as **one segment** beside the store (:func:`perfsleuth.store.append_segment`:
Parquet files and the *cursor*, the cumulative values of the last sample, renamed into place
whole), so the collector never holds the store: ``analyze``, ``watch`` and ``report`` read it
(and the segments) while the collector runs. After a crash there are whole segments and the
cursor that matches them. On restart the collector resumes from the newest segment's cursor:
its first sample covers the whole time since the last committed one (no gap), and it commits
only samples after that one (no duplicates). Processes are identified by ``(pid, start
time)``, so a reused pid never inherits another process's CPU. When the store is free (every
``compact_every`` of :meth:`Collector.run`, and on the way out), the collector opens it a
moment to fold its segments in (:meth:`perfsleuth.store.Store.compact`); whoever else writes
the store does so too.

:meth:`Collector.rollup` folds raw rows older than a cut-off into hourly aggregates
(``processes_hourly``, ``samples_hourly``) and deletes them, in one transaction.

With a workload's cgroup (``cgroup``), each sample also reads that cgroup's counters — the
ones the bottleneck model needs to tell a workload from its neighbours — as ``workload.*``
counters: ``workload.cpu.user`` / ``system`` (cores), ``workload.psi.io`` (share of time
stalled on I/O), ``workload.io.read_bytes`` / ``write_bytes`` / ``reads`` / ``writes`` (its
io.stat line of the block device; without one, Σ /proc/<pid>/io bytes of its processes),
``workload.app.read_ops`` / ``read_bytes`` / ``write_ops`` / ``write_bytes`` (Σ /proc/<pid>/io
syscalls and bytes of its processes), ``workload.mem.refault`` (pages/s), ``workload.mem.anon``
and ``workload.mem.limit`` (bytes; MemTotal when unlimited); and what contention and pressure
look like: ``workload.psi.cpu`` / ``memory`` (share of time stalled), ``workload.cpu.wait``
(cores waiting in a run queue, from its threads' /proc/<tid>/schedstat),
``workload.cpu.runnable`` (share of time its threads run or wait to run),
``workload.cpu.throttled`` (share of time held back by its CPU quota), ``workload.cpu.limit``
(the quota in cores; the CPUs when none), ``workload.mem.majfault`` and
``workload.mem.limit_hits`` (per second), ``workload.mem.current`` / ``file`` / ``dirty`` /
``writeback`` (bytes).
:mod:`perfsleuth.bottleneck.importers` maps them to the model's ``cg.*`` counters. Their
rates start afresh with each run of the collector (their last values are not in the cursor,
which knows no cgroup): the first interval after a (re)start has the levels only.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time as _time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

import duckdb
import pandas as pd

from perfsleuth.errors import ConfigError, SourceError, StoreError
from perfsleuth.sources.procfs import (
    IGNORED_DEVICES,
    IO_SYSCALLS,
    TICKS,
    Cgroup,
    ProcessReading,
    block_device_number,
    block_device_of,
    boot_time,
    io_growth,
    read_cgroup_counters,
    read_diskstats,
    read_os,
    read_own_cgroup,
    read_process_io,
    read_processes,
    read_task_schedstat,
    runnable_growth,
)
from perfsleuth.store import (
    DEFAULT_WAIT,
    Store,
    StoreInUseError,
    append_segment,
    check_store_file,
    list_segments,
    read_segment_state,
)

__all__ = ["Collector", "Commit", "Rollup"]

logger = logging.getLogger(__name__)

# (the cursor lives in the segments: perfsleuth.store.append_segment)
_TABLES: Final = (
    # Each process row also says which process it is (start time, Unix seconds: pid + start
    # time is a process's identity) and how long it waited for a CPU (cores, from
    # /proc/<pid>/schedstat): a starved loop still wants a whole CPU.
    "ALTER TABLE processes ADD COLUMN IF NOT EXISTS start_time DOUBLE",
    "ALTER TABLE processes ADD COLUMN IF NOT EXISTS cpu_wait DOUBLE",
    # Process lives: (pid, start time) tells two processes that shared a pid apart.
    """CREATE TABLE IF NOT EXISTS process_starts (
        node VARCHAR NOT NULL,
        pid BIGINT NOT NULL,
        start_time TIMESTAMPTZ NOT NULL,
        name VARCHAR NOT NULL,
        "user" VARCHAR NOT NULL,
        first_seen TIMESTAMPTZ NOT NULL,
        last_seen TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (node, pid, start_time)
    )""",
    """CREATE TABLE IF NOT EXISTS processes_hourly (
        node VARCHAR NOT NULL,
        pid BIGINT NOT NULL,
        name VARCHAR NOT NULL,
        hour TIMESTAMPTZ NOT NULL,
        "user" VARCHAR NOT NULL,
        n BIGINT NOT NULL,
        cpu_mean DOUBLE NOT NULL,
        cpu_max DOUBLE NOT NULL,
        rss_mean DOUBLE NOT NULL,
        rss_max DOUBLE NOT NULL,
        io_bytes DOUBLE,
        PRIMARY KEY (node, pid, name, hour)
    )""",
    """CREATE TABLE IF NOT EXISTS samples_hourly (
        frame VARCHAR NOT NULL,
        entity VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        hour TIMESTAMPTZ NOT NULL,
        unit VARCHAR NOT NULL,
        n BIGINT NOT NULL,
        mean DOUBLE NOT NULL,
        min DOUBLE NOT NULL,
        max DOUBLE NOT NULL,
        PRIMARY KEY (frame, entity, name, hour)
    )""",
)

# the workload cgroup's pressure, throttling and memory counters: field → name (, to seconds)
_WORKLOAD_CUMULATIVE: Final = (
    ("cpu_some_usec", "workload.psi.cpu", 1e-6),
    ("memory_some_usec", "workload.psi.memory", 1e-6),
    ("throttled_usec", "workload.cpu.throttled", 1e-6),
    ("mem_majfault", "workload.mem.majfault", 1.0),
    ("mem_limit_hits", "workload.mem.limit_hits", 1.0),
)
_WORKLOAD_LEVELS: Final = (
    ("mem_current", "workload.mem.current"),
    ("mem_file", "workload.mem.file"),
    ("mem_dirty", "workload.mem.dirty"),
    ("mem_writeback", "workload.mem.writeback"),
)
# /proc/<pid>/io of the workload's processes → workload counter names
_APP_IO: Final = {key: f"workload.app.{name}" for key, name in IO_SYSCALLS.items()}
_PID_IO: Final = {"read_bytes": "workload.io.read_bytes", "write_bytes": "workload.io.write_bytes"}


def _unit(name: str, cumulative: bool) -> str:
    """Base unit (perfsleuth.units) of a counter, so the store's counter frame needs no
    conversion. Cumulative counters are stored as rates per second."""
    if name in ("workload.cpu.throttled", "workload.cpu.runnable"):
        return "fraction"
    if name.startswith(("cgroup.cpu", "workload.cpu")):
        return "cores"
    if name.startswith(("workload.psi.", "psi.")):
        return "fraction"
    if name.startswith(("disk.", "workload.io.", "workload.app.")):
        if name.endswith("_bytes"):
            return "bytes/s"
        return "" if name.endswith("_ms") else "/s"  # _ms: milliseconds per second
    if name == "cpu.count":
        return "count"
    if name.startswith("cpu."):
        return "cores"
    if name.startswith(("mem.", "cgroup.memory", "workload.mem.")) and not cumulative:
        return "bytes"
    return "/s" if cumulative else ""


@dataclass(frozen=True, slots=True)
class Commit:
    """What one committed batch held."""

    samples: int
    first: datetime
    last: datetime
    process_rows: int
    counter_rows: int


@dataclass(frozen=True, slots=True)
class Rollup:
    """What one roll-up folded into the hourly tables (raw rows removed)."""

    cutoff: datetime
    process_rows: int
    counter_rows: int


@dataclass
class _Pending:
    times: list[float] = field(default_factory=list)
    processes: list[tuple[object, ...]] = field(default_factory=list)
    counters: list[tuple[object, ...]] = field(default_factory=list)
    starts: dict[tuple[int, int], tuple[str, str, float, float]] = field(default_factory=dict)


class Collector:
    """Sample this machine's processes and OS counters into ``store``.

    Parameters
    ----------
    store
        The store file (or an open store of a file) the samples are for. The collector does
        not hold it: it commits segments beside it and folds them in when the store is free.
    node
        Node name on every row (default: the host name).
    batch
        Samples per committed transaction.
    with_io
        Read ``/proc/<pid>/io`` (bytes read and written; for a workload, also its syscalls);
        unreadable files give no value.
    with_files
        Also record the size of the regular files each process holds open for writing
        (``file_bytes``: a log that grows and is truncated shows as a saw-tooth); it lists
        every process's open files at every sample, so it costs more.
    cgroup
        A workload's cgroup (relative to ``cgroup_root``) whose counters are sampled too.
    device
        Record only this block device's disk counters (and the workload's I/O on it); by
        default every disk's, and the workload's I/O on the disk holding ``/``.
    proc, sys_root, cgroup_root
        Where /proc, /sys and the cgroup mount are (tests point them at fixture trees).
    """

    def __init__(
        self,
        store: Store | str | os.PathLike[str],
        *,
        node: str | None = None,
        batch: int = 10,
        with_io: bool = True,
        with_files: bool = False,
        cgroup: str | None = None,
        device: str | None = None,
        proc: Path = Path("/proc"),
        sys_root: Path = Path("/sys"),
        cgroup_root: Path = Path("/sys/fs/cgroup"),
    ) -> None:
        if batch < 1:
            raise ConfigError(f"batch must be at least 1 sample, got {batch}")
        if isinstance(store, Store) and store.memory:
            raise ConfigError("the collector needs a store file, not an in-memory store")
        self.path = store.path if isinstance(store, Store) else Path(store)
        self.node = socket.gethostname() if node is None else node
        self.batch = batch
        self.proc = proc
        self.with_io = with_io
        self.with_files = with_files
        self.device = device
        if device is not None:
            disks = sorted(d for d in read_diskstats(proc) if not d.startswith(IGNORED_DEVICES))
            if device not in disks:
                raise ConfigError(
                    f"no block device {device!r} in {proc / 'diskstats'} "
                    f"(have {', '.join(disks) or 'none'})"
                )
        self.workload = None if cgroup is None else Cgroup.find(cgroup, cgroup_root)
        self._device_number: str | None = None
        if self.workload is not None:
            try:
                disk = device if device is not None else block_device_of("/", sys_root)
                self._device_number = block_device_number(disk, sys_root)
            except SourceError as exc:
                logger.info("%s; the workload's I/O is counted per process", exc)
        # the workload's cumulative counters and its processes' /proc/<pid>/io at the last
        # sample of this run (not kept in the cursor: they start afresh with each run)
        self._workload_last: dict[str, float] | None = None
        self._workload_pids: dict[int, dict[str, float]] = {}
        self._workload_tasks: dict[int, dict[str, float]] = {}
        self._boot = boot_time(proc)
        self._users: dict[int, str] = {}
        # run-queue wait (ns) of each (pid, start ticks) at the last sample of this run
        self._waits: dict[tuple[int, int], float] = {}
        self._pending = _Pending()
        # create or upgrade the store and fold what earlier runs left, if it is free now;
        # a store in use is still checked, so samples never go beside a CSV file
        if not self.compact(wait=0.0):
            check_store_file(self.path)
        self._last_time, self._procs, self._os = self._load_cursor()
        self._committed = self._last_time  # samples at or before it are on record already

    # -- cursor -----------------------------------------------------------------------------------

    def _load_cursor(
        self,
    ) -> tuple[float | None, dict[tuple[int, int], tuple[float, float | None]], dict[str, float]]:
        """The cursor of this node's newest segment (none: start afresh)."""
        state = None
        for segment in reversed(list_segments(self.path, node=self.node)):
            state = read_segment_state(segment)
            if state is not None and state.get("node") == self.node:
                break
            state = None
        if state is None or state.get("boot_time") != self._boot:
            if state is not None:
                logger.info(
                    "%s: machine rebooted since the last sample; starting afresh", self.node
                )
            return None, {}, {}
        procs = {
            (int(p), int(s)): (float(c), None if i is None else float(i))
            for p, s, c, i in state["procs"]
        }
        logger.info("%s: resuming after the sample of %s", self.node, _stamp(state["time"]))
        return float(state["time"]), procs, {str(k): float(v) for k, v in state["os"].items()}

    # -- sampling ---------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Samples taken but not committed yet."""
        return len(self._pending.times)

    def sample(self, now: float | None = None) -> Commit | None:
        """Take one sample (``now``: Unix seconds, default the clock); commit a full batch.

        The first sample ever only sets the cursor. Returns the commit when one happened.
        """
        readings = read_processes(
            self.proc, with_io=self.with_io, with_files=self.with_files, with_wait=True
        )
        cumulative, gauges = read_os(self.proc)
        if self.device is not None:
            mine = f"disk.{self.device}."
            cumulative = {
                k: v
                for k, v in cumulative.items()
                if not k.startswith("disk.") or k.startswith(mine)
            }
        more_cumulative, more_gauges = read_own_cgroup(self.proc)
        cumulative.update(more_cumulative)
        gauges.update(more_gauges)
        workload: tuple[dict[str, float], dict[int, dict[str, float]]] | None = None
        tasks: dict[int, dict[str, float]] = {}
        if self.workload is not None:
            counters, levels, pids = self._read_workload(
                gauges.get("mem.MemTotal"), gauges.get("cpu.count")
            )
            gauges.update(levels)
            workload = counters, pids
            tasks = read_task_schedstat(self.workload.threads(), self.proc)
        stamp = _time.time() if now is None else now
        last = self._last_time
        if last is not None and stamp <= last:
            logger.warning("%s: clock went back %.3f s; sample skipped", self.node, last - stamp)
            return None
        procs: dict[tuple[int, int], tuple[float, float | None]] = {}
        pending = self._pending
        if last is not None:
            interval = stamp - last
            ts = pd.Timestamp(round(stamp * 1e6), unit="us", tz=UTC)
            # the machine's busy cores over the interval, on every process row: saturation is
            # judged on what the machine did, not on the sum of the processes sampled
            machine = _busy_cores(self._os, cumulative, interval)
            ncpu = float(os.cpu_count() or 1)
            for r in readings:
                key = (r.pid, r.start_ticks)
                procs[key] = (r.cpu_ticks, r.io_bytes)
                row = self._process_row(r, key, last, interval, ts)
                if row is not None:
                    pending.processes.append((*row, machine, ncpu, "Linux"))
            self._rates(self._os, cumulative, interval, ts)
            if workload is not None and self._workload_last is not None:
                self._rates(self._workload_last, workload[0], interval, ts)
                self._app_rates(workload, interval, ts)
                runnable = runnable_growth(self._workload_tasks, tasks, interval)
                if runnable is not None:
                    for name, value in zip(("wait", "runnable"), runnable, strict=True):
                        unit = _unit(f"workload.cpu.{name}", False)
                        pending.counters.append(
                            (self.node, f"workload.cpu.{name}", ts, value, unit)
                        )
            for name, value in gauges.items():
                pending.counters.append((self.node, name, ts, value, _unit(name, False)))
            pending.counters.append((self.node, "collector.interval_s", ts, interval, "s"))
            pending.counters.append(
                (self.node, "collector.processes", ts, float(len(readings)), "count")
            )
            pending.times.append(stamp)
        else:
            procs = {(r.pid, r.start_ticks): (r.cpu_ticks, r.io_bytes) for r in readings}
        self._procs = procs
        self._waits = {(r.pid, r.start_ticks): r.wait_ns for r in readings if r.wait_ns is not None}
        self._os = cumulative
        if workload is not None:
            self._workload_last, self._workload_pids = workload
            self._workload_tasks = tasks
        self._last_time = stamp
        if last is None or len(pending.times) >= self.batch:
            return self.flush()
        return None

    def _rates(
        self, before: dict[str, float], now: dict[str, float], interval: float, ts: pd.Timestamp
    ) -> None:
        """Rows of the cumulative counters' rates (one that went back was reset: no row)."""
        for name, value in now.items():
            then = before.get(name)
            if then is not None and value >= then:
                rate = (value - then) / interval
                self._pending.counters.append((self.node, name, ts, rate, _unit(name, True)))

    def _read_workload(
        self, mem_total: float | None, ncpu: float | None
    ) -> tuple[dict[str, float], dict[str, float], dict[int, dict[str, float]]]:
        """The workload cgroup now: cumulative counters (seconds, bytes, counts), levels, and
        its processes' /proc/<pid>/io."""
        assert self.workload is not None
        got = read_cgroup_counters(self.workload, self._device_number)
        cumulative: dict[str, float] = {}
        levels: dict[str, float] = {}
        if got.user_usec is not None:
            cumulative["workload.cpu.user"] = got.user_usec / 1e6
            cumulative["workload.cpu.system"] = (got.system_usec or 0.0) / 1e6
        if got.io_some_usec is not None:
            cumulative["workload.psi.io"] = got.io_some_usec / 1e6
        for name, value in got.io.items():
            cumulative[f"workload.io.{name}"] = value
        if got.mem_anon is not None:
            levels["workload.mem.anon"] = got.mem_anon
        if got.mem_refault is not None:
            cumulative["workload.mem.refault"] = got.mem_refault
        if got.mem_limit is not None:  # unlimited: what the machine has
            levels["workload.mem.limit"] = (
                got.mem_limit if mem_total is None else min(got.mem_limit, mem_total)
            )
        if got.cpu_limit is not None:  # no quota: the CPUs online
            levels["workload.cpu.limit"] = (
                got.cpu_limit if ncpu is None else min(got.cpu_limit, ncpu)
            )
        for field_name, name, factor in _WORKLOAD_CUMULATIVE:
            value = getattr(got, field_name)
            if value is not None:
                cumulative[name] = value * factor
        for field_name, name in _WORKLOAD_LEVELS:
            value = getattr(got, field_name)
            if value is not None:
                levels[name] = value
        pids: dict[int, dict[str, float]] = {}
        if self.with_io:
            for pid in self.workload.pids():
                io = read_process_io(pid, self.proc)
                if io:
                    pids[pid] = io
        return cumulative, levels, pids

    def _app_rates(
        self,
        workload: tuple[dict[str, float], dict[int, dict[str, float]]],
        interval: float,
        ts: pd.Timestamp,
    ) -> None:
        """Σ /proc/<pid>/io growth of the workload's processes, per second; its bytes stand
        for the cgroup's device reads or writes that io.stat (v1: blkio) did not give."""
        counters, pids = workload
        names = dict(_APP_IO)
        names |= {key: name for key, name in _PID_IO.items() if name not in counters}
        growth = io_growth(self._workload_pids, pids, names)
        for key, total in growth.items():
            name = names[key]
            self._pending.counters.append(
                (self.node, name, ts, total / interval, _unit(name, True))
            )

    def _process_row(
        self,
        r: ProcessReading,
        key: tuple[int, int],
        last: float,
        interval: float,
        ts: pd.Timestamp,
    ) -> tuple[object, ...] | None:
        before = self._procs.get(key)
        started = self._boot + r.start_ticks / TICKS
        born = before is None
        if before is None:
            # the boot time is whole seconds (/proc/stat btime): a start up to a second
            # before the last sample may be after it
            if started < last - 1.0:
                return None  # existed before the last sample but unseen: no baseline
            before = (0.0, 0.0)  # born in this interval: everything it used is new
        cpu = max(r.cpu_ticks - before[0], 0.0) / TICKS / interval
        waited = 0.0 if born else self._waits.get(key)  # none after a restart: no rate
        wait = None
        if r.wait_ns is not None and waited is not None:
            wait = max(r.wait_ns - waited, 0.0) / 1e9 / interval
        io: float | None = None
        if r.io_bytes is not None and before[1] is not None:
            io = max(r.io_bytes - before[1], 0.0)
        user = self._user(r.uid)
        seen = self._pending.starts.get(key)
        self._pending.starts[key] = (r.name, user, started, seen[3] if seen else ts.timestamp())
        return (
            *(self.node, r.pid, r.name, ts, user, cpu, r.rss_bytes, io, started, wait),
            r.file_bytes,
        )

    def _user(self, uid: int) -> str:
        name = self._users.get(uid)
        if name is None:
            try:
                import pwd

                name = pwd.getpwuid(uid).pw_name
            except (KeyError, ImportError):
                name = str(uid)
            self._users[uid] = name
        return name

    # -- committing -------------------------------------------------------------------------------

    def flush(self) -> Commit | None:
        """Commit the pending samples and the cursor as one segment beside the store."""
        pending = self._pending
        if self._last_time is None:
            return None
        procs = pd.DataFrame(
            pending.processes,
            columns=[
                *("node", "pid", "name", "time", "user", "cpu", "rss_bytes", "io_bytes"),
                *("start_time", "cpu_wait", "file_bytes", "machine_cpu", "ncpu", "os"),
            ],
        )
        counters = pd.DataFrame(
            pending.counters, columns=["entity", "name", "time", "value", "unit"]
        )
        if self._committed is not None:
            # A replayed sample time adds nothing, not even a process born since: that time
            # is already on record.
            committed = pd.Timestamp(round(self._committed * 1e6), unit="us", tz=UTC)
            procs = procs[procs["time"] > committed]
            counters = counters[counters["time"] > committed]
        starts = pd.DataFrame(
            [
                (self.node, pid, _stamp(st), name, user, _stamp(seen), _stamp(seen))
                for (pid, _), (name, user, st, seen) in pending.starts.items()
            ],
            columns=["node", "pid", "start_time", "name", "user", "first_seen", "last_seen"],
        )
        if pending.times:
            starts["last_seen"] = _stamp(max(pending.times))
        nodes = pd.DataFrame(
            [(self.node, float(os.cpu_count() or 1), "Linux")], columns=["node", "ncpu", "os"]
        )
        state = {
            "node": self.node,
            "time": self._last_time,
            "boot_time": self._boot,
            "os": self._os,
            "procs": [[p, s, c, i] for (p, s), (c, i) in self._procs.items()],
        }
        append_segment(
            self.path,
            node=self.node,
            last=_stamp(self._last_time),
            parts={"processes": procs, "counters": counters, "nodes": nodes, "starts": starts},
            state=state,
        )
        self._committed = self._last_time
        n_proc, n_count = len(procs), len(counters)
        self._pending = _Pending()
        if not pending.times:
            return None
        return Commit(
            samples=len(pending.times),
            first=_stamp(min(pending.times)),
            last=_stamp(max(pending.times)),
            process_rows=n_proc,
            counter_rows=n_count,
        )

    # -- roll-up ----------------------------------------------------------------------------------

    @contextmanager
    def _store(self, wait: float) -> Iterator[Store]:
        """The store opened for writing (which folds the pending segments in), with the
        collector's tables."""
        with Store(self.path, wait=wait) as db:
            with db.transaction("create the collector's tables") as con:
                for statement in _TABLES:
                    con.execute(statement)
            yield db

    def compact(self, *, wait: float = 0.0, keep_raw: timedelta | None = None) -> bool:
        """Fold the segments into the store if it is free within ``wait`` seconds (and, with
        ``keep_raw``, roll up); False when another process holds it (the segments wait)."""
        try:
            with self._store(wait) as db:
                if keep_raw is not None:
                    done = self._rollup(db, keep_raw, None)
                    logger.info("rolled up %d process rows", done.process_rows)
        except StoreInUseError:
            logger.debug("%s: in use by another process; the segments wait", self.path)
            return False
        return True

    def rollup(self, older_than: timedelta, *, now: datetime | None = None) -> Rollup:
        """Fold this node's raw rows older than ``now - older_than`` (to the hour) into hourly
        aggregates and delete them; merging with an hour already rolled up adds to it."""
        with self._store(DEFAULT_WAIT) as db:
            return self._rollup(db, older_than, now)

    def _rollup(self, db: Store, older_than: timedelta, now: datetime | None) -> Rollup:
        if older_than < timedelta(0):
            raise ConfigError(f"older_than must not be negative, got {older_than}")
        moment = datetime.now(UTC) if now is None else now
        cutoff = pd.Timestamp(moment - older_than).floor("h").to_pydatetime()
        with db.transaction("roll up old samples") as con:
            n_proc = _count(
                con, "SELECT count(*) FROM processes WHERE node = ? AND time < ?", self.node, cutoff
            )
            n_count = _count(
                con,
                "SELECT count(*) FROM samples WHERE frame = 'counter' AND entity = ? AND time < ?",
                self.node,
                cutoff,
            )
            con.execute(
                """INSERT INTO processes_hourly
                SELECT node, pid, name, date_trunc('hour', time) AS hour, any_value("user"),
                       count(*), avg(cpu), max(cpu), avg(rss_bytes), max(rss_bytes), sum(io_bytes)
                FROM processes WHERE node = ? AND time < ?
                GROUP BY node, pid, name, hour
                ON CONFLICT DO UPDATE SET
                    cpu_mean = (cpu_mean * n + excluded.cpu_mean * excluded.n) / (n + excluded.n),
                    rss_mean = (rss_mean * n + excluded.rss_mean * excluded.n) / (n + excluded.n),
                    cpu_max = greatest(cpu_max, excluded.cpu_max),
                    rss_max = greatest(rss_max, excluded.rss_max),
                    io_bytes = coalesce(io_bytes, 0) + coalesce(excluded.io_bytes, 0),
                    n = n + excluded.n""",
                [self.node, cutoff],
            )
            con.execute(
                """INSERT INTO samples_hourly
                SELECT frame, entity, name, date_trunc('hour', time) AS hour, any_value(unit),
                       count(*), avg(value), min(value), max(value)
                FROM samples WHERE frame = 'counter' AND entity = ? AND time < ?
                GROUP BY frame, entity, name, hour
                ON CONFLICT DO UPDATE SET
                    mean = (mean * n + excluded.mean * excluded.n) / (n + excluded.n),
                    min = least(min, excluded.min),
                    max = greatest(max, excluded.max),
                    n = n + excluded.n""",
                [self.node, cutoff],
            )
            con.execute("DELETE FROM processes WHERE node = ? AND time < ?", [self.node, cutoff])
            con.execute(
                "DELETE FROM samples WHERE frame = 'counter' AND entity = ? AND time < ?",
                [self.node, cutoff],
            )
        return Rollup(cutoff=cutoff, process_rows=n_proc, counter_rows=n_count)

    # -- the loop ---------------------------------------------------------------------------------

    def run(
        self,
        interval: float,
        stop: threading.Event,
        *,
        keep_raw: timedelta | None = None,
        on_commit: Callable[[Commit], None] | None = None,
        samples: int | None = None,
        seconds: float | None = None,
        compact_every: float = 300.0,
    ) -> None:
        """Sample every ``interval`` seconds (on a fixed grid) until ``stop`` is set,
        ``samples`` samples were taken or ``seconds`` have passed (the last sample is taken
        then); commit what is pending on the way out. Every ``compact_every`` seconds (and on
        the way out) the segments are folded into the store if no other process holds it;
        with ``keep_raw``, raw rows older than that are then rolled up, once an hour."""
        if not interval > 0:
            raise ConfigError(f"interval must be positive, got {interval}")
        if seconds is not None and not seconds > 0:
            raise ConfigError(f"seconds must be positive, got {seconds}")
        if not compact_every > 0:
            raise ConfigError(f"compact_every must be positive, got {compact_every}")
        origin = _time.monotonic()
        taken = 0
        next_compact = origin + compact_every
        next_rollup = origin
        try:
            while not stop.is_set() and (samples is None or taken < samples):
                began = _time.monotonic() - origin
                commit = self.sample()
                taken += 1
                if commit is not None and on_commit is not None:
                    on_commit(commit)
                if commit is not None and _time.monotonic() >= next_compact:
                    rollup = keep_raw if _time.monotonic() >= next_rollup else None
                    if self._maintain(rollup) and rollup is not None:
                        next_rollup = _time.monotonic() + 3600.0
                    next_compact = _time.monotonic() + compact_every
                elapsed = _time.monotonic() - origin
                wait = interval - elapsed % interval
                if seconds is not None:
                    # the last sample is taken at the end, also when a slow one ran past it
                    if seconds - began <= 0.01 * interval:
                        break
                    wait = max(min(wait, seconds - elapsed), 0.0)
                stop.wait(wait)
        finally:
            commit = self.flush()
            if commit is not None and on_commit is not None:
                on_commit(commit)
            self._maintain(None)

    def _maintain(self, keep_raw: timedelta | None) -> bool:
        """:meth:`compact` without stopping the sampling when the store is damaged."""
        try:
            return self.compact(keep_raw=keep_raw)
        except StoreError as exc:  # the samples are safe in their segments: say so, go on
            logger.warning("%s: segments not folded in: %s", self.path, exc)
            return False


_BUSY: Final = ("cpu.user", "cpu.nice", "cpu.system", "cpu.irq", "cpu.softirq", "cpu.steal")


def _busy_cores(before: dict[str, float], now: dict[str, float], interval: float) -> float | None:
    """Cores the machine was busy over the interval (/proc/stat: all but idle and iowait;
    steal counts, as this machine wanted the CPU); None without a previous reading."""
    if not all(k in before and k in now for k in _BUSY[:3]):
        return None
    busy = sum(now.get(k, 0.0) - before.get(k, 0.0) for k in _BUSY)
    return max(busy, 0.0) / interval


def _stamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(round(seconds * 1e6) / 1e6, UTC)


def _count(con: duckdb.DuckDBPyConnection, sql: str, node: str, cutoff: datetime) -> int:
    row = con.execute(sql, [node, cutoff]).fetchone()
    return 0 if row is None else int(row[0])
