"""The local collector: per-process samples and OS counters into the store, in batches.

Each sample reads cumulative counters (:mod:`perfsleuth.sources.procfs`) and turns them into
rates over the interval since the previous sample: process CPU in cores, I/O in bytes per
interval, OS counters per second. Samples accumulate in memory and are committed every
``batch`` samples in **one** transaction together with the *cursor* (the cumulative values of
the last sample), so after a crash the store holds whole batches and the cursor that matches
them. On restart the collector resumes from that cursor: its first sample covers the whole
time since the last committed one (no gap), and the rows' keys (node, pid, name, time) are
inserted only when absent (no duplicates). Processes are identified by ``(pid, start time)``,
so a reused pid never inherits another process's CPU.

:meth:`Collector.rollup` folds raw rows older than a cut-off into hourly aggregates
(``processes_hourly``, ``samples_hourly``) and deletes them, in one transaction.

With a workload's cgroup (``cgroup``), each sample also reads that cgroup's counters — the
ones the bottleneck model needs to tell a workload from its neighbours — as ``workload.*``
counters: ``workload.cpu.user`` / ``system`` (cores), ``workload.psi.io`` (share of time
stalled on I/O), ``workload.io.read_bytes`` / ``write_bytes`` / ``reads`` / ``writes`` (its
io.stat line of the block device; without one, Σ /proc/<pid>/io bytes of its processes),
``workload.app.read_ops`` / ``read_bytes`` / ``write_ops`` / ``write_bytes`` (Σ /proc/<pid>/io
syscalls and bytes of its processes), ``workload.mem.refault`` (pages/s), ``workload.mem.anon``
and ``workload.mem.limit`` (bytes; MemTotal when unlimited).
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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

import duckdb
import pandas as pd

from perfsleuth.errors import ConfigError, SourceError
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
)
from perfsleuth.store import Store

__all__ = ["Collector", "Commit", "Rollup"]

logger = logging.getLogger(__name__)

_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS collect_cursor (
        node VARCHAR NOT NULL,
        pid BIGINT NOT NULL,
        start_ticks BIGINT NOT NULL,
        cpu_ticks DOUBLE NOT NULL,
        io_bytes DOUBLE,
        PRIMARY KEY (node, pid, start_ticks)
    )""",
    """CREATE TABLE IF NOT EXISTS collect_meta (
        node VARCHAR NOT NULL,
        key VARCHAR NOT NULL,
        value DOUBLE NOT NULL,
        PRIMARY KEY (node, key)
    )""",
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

# /proc/<pid>/io of the workload's processes → workload counter names
_APP_IO: Final = {key: f"workload.app.{name}" for key, name in IO_SYSCALLS.items()}
_PID_IO: Final = {"read_bytes": "workload.io.read_bytes", "write_bytes": "workload.io.write_bytes"}


def _unit(name: str, cumulative: bool) -> str:
    """Base unit (perfsleuth.units) of a counter, so the store's counter frame needs no
    conversion. Cumulative counters are stored as rates per second."""
    if name.startswith(("cgroup.cpu", "workload.cpu")):
        return "cores"
    if name == "workload.psi.io":
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
        An open, writable store; the collector adds its own tables to it.
    node
        Node name on every row (default: the host name).
    batch
        Samples per committed transaction.
    with_io
        Read ``/proc/<pid>/io`` (bytes read and written; for a workload, also its syscalls);
        unreadable files give no value.
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
        store: Store,
        *,
        node: str | None = None,
        batch: int = 10,
        with_io: bool = True,
        cgroup: str | None = None,
        device: str | None = None,
        proc: Path = Path("/proc"),
        sys_root: Path = Path("/sys"),
        cgroup_root: Path = Path("/sys/fs/cgroup"),
    ) -> None:
        if batch < 1:
            raise ConfigError(f"batch must be at least 1 sample, got {batch}")
        self.store = store
        self.node = socket.gethostname() if node is None else node
        self.batch = batch
        self.proc = proc
        self.with_io = with_io
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
        self._boot = boot_time(proc)
        self._users: dict[int, str] = {}
        self._pending = _Pending()
        with store.transaction("create the collector's tables") as con:
            for statement in _TABLES:
                con.execute(statement)
        self._last_time, self._procs, self._os = self._load_cursor()

    # -- cursor -----------------------------------------------------------------------------------

    def _load_cursor(
        self,
    ) -> tuple[float | None, dict[tuple[int, int], tuple[float, float | None]], dict[str, float]]:
        with self.store.transaction("read the collector's cursor") as con:
            meta = dict(
                con.execute(
                    "SELECT key, value FROM collect_meta WHERE node = ?", [self.node]
                ).fetchall()
            )
            rows = con.execute(
                "SELECT pid, start_ticks, cpu_ticks, io_bytes FROM collect_cursor WHERE node = ?",
                [self.node],
            ).fetchall()
        if "time" not in meta or meta.get("boot_time") != self._boot:
            if meta:
                logger.info(
                    "%s: machine rebooted since the last sample; starting afresh", self.node
                )
            return None, {}, {}
        procs = {
            (int(p), int(s)): (float(c), None if i is None else float(i)) for p, s, c, i in rows
        }
        counters = {k[3:]: v for k, v in meta.items() if k.startswith("os.")}
        logger.info("%s: resuming after the sample of %s", self.node, _stamp(meta["time"]))
        return float(meta["time"]), procs, counters

    # -- sampling ---------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Samples taken but not committed yet."""
        return len(self._pending.times)

    def sample(self, now: float | None = None) -> Commit | None:
        """Take one sample (``now``: Unix seconds, default the clock); commit a full batch.

        The first sample ever only sets the cursor. Returns the commit when one happened.
        """
        readings = read_processes(self.proc, with_io=self.with_io)
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
        if self.workload is not None:
            counters, levels, pids = self._read_workload(gauges.get("mem.MemTotal"))
            gauges.update(levels)
            workload = counters, pids
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
            for r in readings:
                key = (r.pid, r.start_ticks)
                procs[key] = (r.cpu_ticks, r.io_bytes)
                row = self._process_row(r, key, last, interval, ts)
                if row is not None:
                    pending.processes.append(row)
            self._rates(self._os, cumulative, interval, ts)
            if workload is not None and self._workload_last is not None:
                self._rates(self._workload_last, workload[0], interval, ts)
                self._app_rates(workload, interval, ts)
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
        self._os = cumulative
        if workload is not None:
            self._workload_last, self._workload_pids = workload
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
        self, mem_total: float | None
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
            cumulative["workload.mem.refault"] = got.mem_refault or 0.0
        if got.mem_limit is not None:  # unlimited: what the machine has
            levels["workload.mem.limit"] = (
                got.mem_limit if mem_total is None else min(got.mem_limit, mem_total)
            )
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
        for the cgroup's device I/O when io.stat gave none."""
        counters, pids = workload
        names = dict(_APP_IO)
        if "workload.io.read_bytes" not in counters:
            names |= _PID_IO
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
        if before is None:
            if started < last - 1.0 / TICKS:
                return None  # existed before the last sample but unseen: no baseline
            before = (0.0, 0.0)  # born in this interval: everything it used is new
        cpu = max(r.cpu_ticks - before[0], 0.0) / TICKS / interval
        io: float | None = None
        if r.io_bytes is not None and before[1] is not None:
            io = max(r.io_bytes - before[1], 0.0)
        user = self._user(r.uid)
        seen = self._pending.starts.get(key)
        self._pending.starts[key] = (r.name, user, started, seen[3] if seen else ts.timestamp())
        return (self.node, r.pid, r.name, ts, user, cpu, r.rss_bytes, io)

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
        """Commit the pending samples and the cursor in one transaction."""
        pending = self._pending
        if self._last_time is None:
            return None
        procs = pd.DataFrame(
            pending.processes,
            columns=["node", "pid", "name", "time", "user", "cpu", "rss_bytes", "io_bytes"],
        )
        counters = pd.DataFrame(
            pending.counters, columns=["entity", "name", "time", "value", "unit"]
        )
        cursor = pd.DataFrame(
            [(self.node, p, s, c, i) for (p, s), (c, i) in self._procs.items()],
            columns=["node", "pid", "start_ticks", "cpu_ticks", "io_bytes"],
        )
        meta = pd.DataFrame(
            [(self.node, "time", self._last_time), (self.node, "boot_time", self._boot)]
            + [(self.node, f"os.{k}", v) for k, v in self._os.items()],
            columns=["node", "key", "value"],
        )
        starts = pd.DataFrame(
            [
                (self.node, pid, _stamp(st), name, user, _stamp(seen), _stamp(seen))
                for (pid, _), (name, user, st, seen) in pending.starts.items()
            ],
            columns=["node", "pid", "start_time", "name", "user", "first_seen", "last_seen"],
        )
        if pending.times:
            starts["last_seen"] = _stamp(max(pending.times))
        ncpu = float(os.cpu_count() or 1)
        with self.store.transaction("commit collected samples") as con:
            # A replayed batch (sample times at or before the committed cursor) adds nothing,
            # not even a process born since: that time is already on record.
            rows = con.execute(
                "SELECT value FROM collect_meta WHERE node = ? AND key = 'time'", [self.node]
            ).fetchall()
            if rows:
                committed = pd.Timestamp(round(float(rows[0][0]) * 1e6), unit="us", tz=UTC)
                procs = procs[procs["time"] > committed]
                counters = counters[counters["time"] > committed]
            n_proc = _insert_new(con, "processes", procs, ("node", "pid", "name", "time"))
            n_count = _insert_new(
                con, "samples", counters, ("entity", "name", "time"), frame="counter"
            )
            con.execute("DELETE FROM collect_cursor WHERE node = ?", [self.node])
            _register_insert(con, "collect_cursor", cursor)
            con.execute("DELETE FROM collect_meta WHERE node = ?", [self.node])
            _register_insert(con, "collect_meta", meta)
            if len(starts):
                con.register("_collect_starts", starts)
                try:
                    con.execute(
                        "INSERT INTO process_starts SELECT * FROM _collect_starts "
                        "ON CONFLICT DO UPDATE SET last_seen = excluded.last_seen"
                    )
                finally:
                    con.unregister("_collect_starts")
            con.execute(
                "INSERT INTO nodes VALUES (?, ?, 'Linux') ON CONFLICT DO UPDATE "
                "SET ncpu = excluded.ncpu, os = excluded.os",
                [self.node, ncpu],
            )
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

    def rollup(self, older_than: timedelta, *, now: datetime | None = None) -> Rollup:
        """Fold this node's raw rows older than ``now - older_than`` (to the hour) into hourly
        aggregates and delete them; merging with an hour already rolled up adds to it."""
        if older_than < timedelta(0):
            raise ConfigError(f"older_than must not be negative, got {older_than}")
        moment = datetime.now(UTC) if now is None else now
        cutoff = pd.Timestamp(moment - older_than).floor("h").to_pydatetime()
        with self.store.transaction("roll up old samples") as con:
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
    ) -> None:
        """Sample every ``interval`` seconds (on a fixed grid) until ``stop`` is set,
        ``samples`` samples were taken or ``seconds`` have passed (the last sample is taken
        then); commit what is pending on the way out. With ``keep_raw``, raw rows older than
        that are rolled up once an hour."""
        if not interval > 0:
            raise ConfigError(f"interval must be positive, got {interval}")
        if seconds is not None and not seconds > 0:
            raise ConfigError(f"seconds must be positive, got {seconds}")
        origin = _time.monotonic()
        taken = 0
        next_rollup = 0.0
        try:
            while not stop.is_set() and (samples is None or taken < samples):
                commit = self.sample()
                taken += 1
                if commit is not None and on_commit is not None:
                    on_commit(commit)
                if keep_raw is not None and _time.monotonic() >= next_rollup:
                    done = self.rollup(keep_raw)
                    logger.info("rolled up %d process rows", done.process_rows)
                    next_rollup = _time.monotonic() + 3600.0
                elapsed = _time.monotonic() - origin
                wait = interval - elapsed % interval
                if seconds is not None:
                    if seconds - elapsed <= 0.01 * interval:
                        break
                    wait = min(wait, seconds - elapsed)
                stop.wait(wait)
        finally:
            commit = self.flush()
            if commit is not None and on_commit is not None:
                on_commit(commit)


def _stamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(round(seconds * 1e6) / 1e6, UTC)


def _count(con: duckdb.DuckDBPyConnection, sql: str, node: str, cutoff: datetime) -> int:
    row = con.execute(sql, [node, cutoff]).fetchone()
    return 0 if row is None else int(row[0])


def _register_insert(con: duckdb.DuckDBPyConnection, table: str, rows: pd.DataFrame) -> None:
    con.register("_collect_rows", rows)
    try:
        con.execute(f"INSERT INTO {table} SELECT * FROM _collect_rows")
    finally:
        con.unregister("_collect_rows")


def _insert_new(
    con: duckdb.DuckDBPyConnection,
    table: str,
    rows: pd.DataFrame,
    keys: tuple[str, ...],
    *,
    frame: str | None = None,
) -> int:
    """Insert the rows whose key is not stored yet (a replayed batch adds nothing)."""
    if not len(rows):
        return 0
    columns = list(rows.columns)
    if frame is not None:
        rows = rows.assign(frame=frame)
        columns = ["frame", *columns]
    rows = rows[columns]
    bounds = [rows["time"].min().to_pydatetime(), rows["time"].max().to_pydatetime()]
    match = " AND ".join(f't."{k}" = b."{k}"' for k in keys)
    if frame is not None:
        match += " AND t.frame = b.frame"
    names = ", ".join(f'"{c}"' for c in columns)
    con.register("_collect_batch", rows)
    try:
        row = con.execute(
            f"INSERT INTO {table} ({names}) SELECT {names} FROM _collect_batch b "
            f"WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {match} "
            "AND t.time BETWEEN ? AND ?)",
            bounds,
        ).fetchone()
    finally:
        con.unregister("_collect_batch")
    return 0 if row is None else int(row[0])
