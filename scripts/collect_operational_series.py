#!/usr/bin/env python3
"""Real operational series with known, injected changes, for judging change-point detectors.

Runs short experiments on this machine and writes one CSV per series (``time`` ISO-8601 UTC,
``value``; one row per second) plus ``truth.json`` to ``--out`` (default
``benchmarks/data/changepoints``). ``benchmarks/changepoints_real.py`` scores detectors on them.

Most experiments drive a throw-away PostgreSQL (:func:`perfsleuth.sources.postgres.
temporary_postgres`, 127.0.0.1, stopped at the end) with pgbench, logging every transaction
(``-l``); the logs are read with :func:`perfsleuth.sources.pgbench.read_pgbench` and binned by
completion time into 1-second rows: mean latency (ms) or transactions per second. One experiment
reads machine counters from ``/proc/stat`` and ``/proc/meminfo`` instead.

Experiments (times for the full run; ``--quick`` scales every duration by 0.2). Busy loops run
each in a session of their own, like separate programs (see :class:`Hog`):

==================  ======  ======================================================================
run                 rows    what is injected
==================  ======  ======================================================================
os_steps            150     busy loops 0 → 1 → 2 → 1 → 0 (every 30 s): CPU utilisation and run
                            queue; 3 GiB allocated at 20 s and 70 s, all freed at 110 s: used
                            memory
pg_quiet            120     nothing (select-only at 300 tps): latency and TPS, false-alarm check
pg_hog              120     2 busy loops from 40 s to 80 s: latency of a select-only stream
                            (--rate 300) and TPS of a concurrent closed-loop report client
pg_clients          100     clients 2 → 6 at 50 s (closed loop, 5 ms think time): TPS
pg_rate             100     arrival rate 200 → 400 tps at 50 s (pgbench ``--rate``): TPS
pg_cycle            150     a background job (2 busy loops) 15 s on / 15 s off: cycle, no change
pg_cycle_change     150     the same cycle, and at 68 s a release: each transaction also sums
                            5,000 rows (``CREATE OR REPLACE FUNCTION``)
pg_trend            120     a table growing by ~1,500 rows/s, seq-scanned by each transaction:
                            latency trend, no change
pg_trend_change     120     the same, and at 65 s the index of a second lookup is dropped
pg_spikes           100     writes (pgbench -N) with bursts of two ~1 s report queries every
                            8–14 s (seeded): outliers, no change
pg_spikes_change    100     the same, and at 55 s ``synchronous_commit = off`` (reload)
==================  ======  ======================================================================

Truth: each injected change is timed by this script's own clock, from just before the action to
just after it returned, and mapped to the row that holds the middle of that interval,
``round(t - t0)`` (the first row mostly after an instantaneous action); row k covers
``[t0 + k, t0 + k + 1)``. Most actions take milliseconds; writing 3 GiB can take seconds here (the
first touch of guest memory is slow in this VM), so memory steps are short ramps. Cycle edges and
burst rows are recorded as structure, not changes.
The machine has other users: their load is in the series as realistic background noise.

Usage::

    .venv/bin/python scripts/collect_operational_series.py                  # ~23 minutes
    .venv/bin/python scripts/collect_operational_series.py --quick --out /tmp/cp   # ~5 minutes
    .venv/bin/python scripts/collect_operational_series.py --only pg_hog --only os_steps
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import logging
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from perfsleuth.errors import PerfsleuthError, SourceError
from perfsleuth.sources.pgbench import read_pgbench

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support
from tests.support.postgres import PostgresServer, temporary_postgres

log = logging.getLogger("collect_operational_series")

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "data" / "changepoints"
SCALE = 5  # pgbench scale
ACCOUNTS = 100_000 * SCALE  # custom scripts do not get :scale (it is 1 unless -s is given)
WARMUP_S = 1.0  # pgbench connects and settles before row 0
TICKS = 20  # machine counters are sampled this many times a second
# A growing table must not flip to a parallel plan halfway (a change nobody injected).
SERVER_SETTINGS = {"max_parallel_workers_per_gather": "0"}
BUSY_LOOP = [sys.executable, "-c", "while True: pass"]
ALLOCATOR = """\
import sys
blocks = []
for line in sys.stdin:
    command, _, size = line.strip().partition(" ")
    if command == "alloc":
        blocks.append(b"\\x01" * (int(size) << 20))  # written, so resident
    elif command == "free":
        blocks.clear()
    print("ok", flush=True)
"""
HEAVY_QUERY = (
    "SELECT sum(a.abalance + g) FROM pgbench_accounts a CROSS JOIN generate_series(1, 30) g"
)

APP_V1 = """\
CREATE OR REPLACE FUNCTION app_tx(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r int;
BEGIN
  SELECT abalance INTO r FROM pgbench_accounts WHERE aid = p;
  RETURN r;
END $$"""
APP_V2 = """\
CREATE OR REPLACE FUNCTION app_tx(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r int; total bigint;
BEGIN
  SELECT abalance INTO r FROM pgbench_accounts WHERE aid = p;
  SELECT sum(abalance) INTO total FROM pgbench_accounts WHERE aid BETWEEN p AND p + 5000;
  RETURN r;
END $$"""

SCRIPTS = {
    "app": f"\\set aid random(1, {ACCOUNTS})\nSELECT app_tx(:aid);\n",
    "report": (
        f"\\set aid random(1, {ACCOUNTS - 200000})\n"
        "SELECT sum(abalance) FROM pgbench_accounts WHERE aid BETWEEN :aid AND :aid + 200000;\n"
    ),
    "think": (
        f"\\set aid random(1, {ACCOUNTS})\n"
        "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
        "\\sleep 5 ms\n"
    ),
    "insert": (
        "INSERT INTO events (k, payload)\n"
        "  SELECT (random() * 999)::int, md5(random()::text) FROM generate_series(1, 30);\n"
    ),
    "scan": "\\set k random(0, 999)\nSELECT count(*) FROM events WHERE k = :k;\n",
    "scan_lookup": (
        "\\set k random(0, 999)\n\\set key random(1, 100000)\n"
        "SELECT count(*) FROM events WHERE k = :k;\n"
        "SELECT v FROM lookup WHERE key = :key;\n"
    ),
}
TREND_SETUP = """\
DROP TABLE IF EXISTS events, lookup;
CREATE TABLE events (k int NOT NULL, payload text NOT NULL);
INSERT INTO events SELECT (random() * 999)::int, md5(i::text) FROM generate_series(1, 50000) i;
CREATE TABLE lookup (key int NOT NULL, v int NOT NULL);
INSERT INTO lookup SELECT i, i % 97 FROM generate_series(1, 100000) i;
CREATE INDEX lookup_key ON lookup (key);"""


# -- bookkeeping ------------------------------------------------------------------------------


@dataclass
class Event:
    """Done at ``offset`` s after row 0: begun at ``started``, finished at ``actual`` (s)."""

    offset: float
    what: str
    action: Callable[[], None]
    change: bool = False  # an injected change (truth) rather than cycle / burst structure
    started: float | None = None
    actual: float | None = None

    @property
    def middle(self) -> float:
        """Middle of the action: a slow one (writing 3 GiB) is a ramp, not a step."""
        assert self.started is not None and self.actual is not None
        return (self.started + self.actual) / 2


@dataclass
class Series:
    name: str
    metric: str
    unit: str
    values: npt.NDArray[np.float64]
    decimals: int
    structure: list[str]
    changes: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Context:
    work: Path
    factor: float
    seed: int
    server: PostgresServer | None = None
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    benches: list[subprocess.Popen[bytes]] = field(default_factory=list)
    end: float = 0.0  # Unix time at which the current pgbench runs stop
    threads: list[threading.Thread] = field(default_factory=list)

    def seconds(self, full: float) -> int:
        """A duration of the full run, scaled for ``--quick`` (whole seconds)."""
        return max(1, round(full * self.factor))

    def spawn(self, command: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(list(command), **kwargs)
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        """Stop every process this script started and is still running (by pid)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                log.warning("process %d did not exit", proc.pid)
        self.procs.clear()
        for thread in self.threads:
            thread.join(timeout=120)
        self.threads.clear()


def wait_until(t: float) -> None:
    while (left := t - time.time()) > 0:
        time.sleep(min(left, 0.2))


def row_of(t0: float, t: float) -> int:
    """First row mostly after the moment ``t`` (row k covers ``[t0 + k, t0 + k + 1)``)."""
    return math.floor(t - t0 + 0.5)


def run_events(t0: float, events: list[Event]) -> None:
    for ev in sorted(events, key=lambda e: e.offset):
        wait_until(t0 + ev.offset)
        ev.started = time.time() - t0
        ev.action()
        ev.actual = time.time() - t0
        log.info("  %6.2f–%.2f s  %s", ev.started, ev.actual, ev.what)


def change_records(t0: float, events: list[Event]) -> list[dict[str, Any]]:
    return [
        {
            "index": row_of(t0, t0 + ev.middle),
            "planned_s": ev.offset,
            "started_s": round(ev.started, 3),
            "done_s": round(ev.actual, 3),
            "what": ev.what,
        }
        for ev in events
        if ev.change and ev.started is not None and ev.actual is not None
    ]


class Hog:
    """``k`` busy-loop processes that can be started and stopped on cue."""

    def __init__(self, ctx: Context, k: int) -> None:
        self.ctx, self.k = ctx, k
        self.running: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        # Each loop in a session of its own, like a separate program: with the kernel's
        # autogroup scheduling a session is one scheduling entity, and PostgreSQL backends each
        # have their own, so loops sharing one session would weigh like a single backend.
        self.running += [self.ctx.spawn(BUSY_LOOP, start_new_session=True) for _ in range(self.k)]

    def stop(self) -> None:
        for proc in self.running:
            proc.kill()
            proc.wait()
        self.running.clear()


# -- pgbench ----------------------------------------------------------------------------------


@dataclass
class Bench:
    """One pgbench process: its log prefix (None: not logged) and options."""

    prefix: str | None
    args: list[str]


def start_bench(ctx: Context, bench: Bench, logs: Path) -> None:
    """Start pgbench now, to run until ``ctx.end``."""
    assert ctx.server is not None
    seconds = max(1, math.ceil(ctx.end - time.time()))
    command = [str(ctx.server.tool("pgbench")), "-n", f"--time={seconds}"]
    command += [f"--random-seed={ctx.seed}", *bench.args]
    if bench.prefix is not None:
        command += ["--log", f"--log-prefix={bench.prefix}"]
    with (logs / f"stderr-{len(ctx.benches)}.txt").open("wb") as errors:
        ctx.benches.append(
            ctx.spawn(
                command, cwd=logs, env=ctx.server.env(), stdout=subprocess.DEVNULL, stderr=errors
            )
        )


def later_bench(ctx: Context, bench: Bench, logs: Path) -> Callable[[], None]:
    """An event action that starts ``bench`` (until the end of the run)."""
    return lambda: start_bench(ctx, bench, logs)


def run_pgbench(
    ctx: Context, name: str, n: int, main: list[Bench], events: list[Event]
) -> tuple[float, dict[str, npt.NDArray[np.float64]], dict[str, npt.NDArray[np.float64]]]:
    """Run ``main`` for ``n`` rows with ``events``; per-second TPS and mean latency per prefix.

    Returns ``t0`` (Unix time of row 0), and for every logged prefix the count and the mean
    latency (ms) of transactions completed in each row (NaN when none).
    """
    logs = ctx.work / name
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    t0 = math.ceil(time.time() + WARMUP_S)
    ctx.end = t0 + n + 1.0  # one spare second so the last row is complete
    ctx.benches.clear()
    for bench in main:
        start_bench(ctx, bench, logs)
    run_events(t0, events)
    for proc in ctx.benches:
        try:
            code = proc.wait(timeout=max(60.0, ctx.end - time.time() + 60))
        except subprocess.TimeoutExpired:
            proc.kill()
            raise SourceError(f"{name}: pgbench did not finish") from None
        if code != 0:
            errors = " | ".join(p.read_text()[-400:] for p in logs.glob("stderr-*.txt"))
            raise SourceError(f"{name}: pgbench failed (exit {code}): {errors}")
    counts: dict[str, npt.NDArray[np.float64]] = {}
    means: dict[str, npt.NDArray[np.float64]] = {}
    prefixes = {p.name.split(".")[0] for p in logs.iterdir() if not p.name.startswith("stderr")}
    for prefix in sorted(prefixes):
        files = sorted(logs.glob(f"{prefix}.*"))
        records = read_pgbench(files, at="end", strict=True).records
        t = records["time"].astype("int64").to_numpy() / 1e9 - t0
        keep = (t >= 0) & (t < n)
        row = np.floor(t[keep]).astype(np.int64)
        count = np.bincount(row, minlength=n).astype(np.float64)
        total = np.bincount(row, weights=records["latency"].to_numpy()[keep], minlength=n)
        counts[prefix] = count
        with np.errstate(invalid="ignore", divide="ignore"):
            means[prefix] = 1e3 * total / count
    return float(t0), counts, means


def fill_gaps(values: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], list[int]]:
    """Rows with no completed transaction (NaN mean) take the previous (else next) row's value."""
    ok = np.isfinite(values)
    gaps = [int(i) for i in np.flatnonzero(~ok)]
    if not ok.any():
        raise SourceError("no transaction completed in any row")
    last = np.maximum.accumulate(np.where(ok, np.arange(len(values)), -1))
    last[last < 0] = np.flatnonzero(ok)[0]
    return values[last], gaps


def script(ctx: Context, name: str) -> str:
    path = ctx.work / "scripts" / f"{name}.sql"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SCRIPTS[name])
    return str(path)


# -- experiments ------------------------------------------------------------------------------


def os_steps(ctx: Context) -> list[Series]:
    """Machine CPU utilisation and run queue under 0 → 1 → 2 → 1 → 0 busy loops; used memory.

    On a 2-CPU machine that other work already keeps busy, utilisation saturates and hides the
    loops; the run queue (``procs_running``, averaged over 20 samples a second, as ``sar -q``
    reports it) still counts them. Used memory moves with everything else on the machine, so
    the steps are large (3 GiB in the full run).
    """
    n = ctx.seconds(150)
    step = n / 5
    hogs = [Hog(ctx, 1) for _ in range(2)]
    allocator = ctx.spawn(
        [sys.executable, "-c", ALLOCATOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )

    def tell(command: str) -> Callable[[], None]:
        def act() -> None:
            assert allocator.stdin is not None and allocator.stdout is not None
            allocator.stdin.write(f"{command}\n".encode())
            allocator.stdin.flush()
            if allocator.stdout.readline().strip() != b"ok":
                raise SourceError("the memory allocator process died")

        return act

    size = 3072 if ctx.factor >= 1 else 256
    cpu_events = [
        Event(round(step), "1 busy loop started (0 → 1)", hogs[0].start, True),
        Event(round(2 * step), "2nd busy loop started (1 → 2)", hogs[1].start, True),
        Event(round(3 * step), "a busy loop stopped (2 → 1)", hogs[1].stop, True),
        Event(round(4 * step), "last busy loop stopped (1 → 0)", hogs[0].stop, True),
    ]
    mem_events = [
        Event(round(n * 20 / 150), f"{size} MiB allocated, written", tell(f"alloc {size}"), True),
        Event(round(n * 70 / 150), f"{size} MiB more allocated", tell(f"alloc {size}"), True),
        Event(round(n * 110 / 150), "all freed", tell("free"), True),
    ]
    t0 = float(math.ceil(time.time() + WARMUP_S))
    samples: list[tuple[float, int, int, int, float]] = []  # time, busy, total, running, mem

    def sample() -> None:
        for j in range(-1, (n + 1) * TICKS + 1):
            wait_until(t0 + j / TICKS)
            (busy, total), running = _proc_stat()
            samples.append((time.time(), busy, total, running - 1, _mem_used_mib()))  # less us

    wait_until(t0)
    sampler = threading.Thread(target=sample, name="proc-sampler", daemon=True)
    sampler.start()
    ctx.threads.append(sampler)
    run_events(t0, sorted(cpu_events + mem_events, key=lambda e: e.offset))
    sampler.join()
    for hog in hogs:
        hog.stop()
    cpu, runq, mem, late = per_second(np.array(samples), t0, n)
    return [
        Series(
            "os_cpu_util",
            "machine CPU utilisation per second from /proc/stat (1 − idle − iowait), "
            f"{os.cpu_count()} CPUs",
            "fraction",
            cpu,
            4,
            ["none"],
            change_records(t0, cpu_events),
            {"t0": t0, "late_samples": late},
        ),
        Series(
            "os_runqueue",
            "machine run queue: runnable tasks (procs_running in /proc/stat, less the sampler), "
            f"mean of {TICKS} samples per second, {os.cpu_count()} CPUs",
            "tasks",
            runq,
            3,
            ["none"],
            change_records(t0, cpu_events),
            {"t0": t0},
        ),
        Series(
            "os_mem_used",
            "used memory (MemTotal − MemAvailable, /proc/meminfo) at mid-second",
            "MiB",
            mem,
            1,
            ["none"],
            change_records(t0, mem_events),
            {"t0": t0},
        ),
    ]


def per_second(
    samples: npt.NDArray[np.float64], t0: float, n: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64], int]:
    """Rows from counter samples taken at their actual times (a busy machine delays some).

    Utilisation: cumulative busy and total ticks interpolated at the row edges (how a rate over
    counters is computed), so a sample taken late spreads its interval over the rows it spans
    instead of leaving one row empty. Run queue: mean of the samples inside the row (the nearest
    one when none is). Memory: the sample nearest the middle of the row. Also returns how many
    samples were more than 0.25 s late.
    """
    times, busy, total, running, mem = samples.T
    edges = t0 + np.arange(n + 1)
    util = np.diff(np.interp(edges, times, busy)) / np.diff(np.interp(edges, times, total))
    row = np.floor(times - t0).astype(np.int64)
    inside = (row >= 0) & (row < n)
    count = np.bincount(row[inside], minlength=n)
    runq = np.bincount(row[inside], weights=running[inside], minlength=n)
    middle = edges[:-1] + 0.5
    nearest = np.abs(times[None, :] - middle[:, None]).argmin(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        runq = np.where(count > 0, runq / count, running[nearest])
    ideal = t0 + (np.arange(len(times)) - 1) / TICKS  # the first sample is one tick early
    late = int(np.sum(times - ideal > 0.25))
    return util, np.asarray(runq, dtype=np.float64), mem[nearest], late


def _proc_stat() -> tuple[tuple[int, int], int]:
    """(busy, total) CPU ticks since boot, and the number of runnable tasks now."""
    lines = Path("/proc/stat").read_text().splitlines()
    fields = [int(v) for v in lines[0].split()[1:9]]  # user .. steal (guest is inside user)
    idle = fields[3] + fields[4]  # idle + iowait
    running = next(int(line.split()[1]) for line in lines if line.startswith("procs_running"))
    return (sum(fields) - idle, sum(fields)), running


def _mem_used_mib() -> float:
    info = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        info[key] = int(rest.split()[0])
    return (info["MemTotal"] - info["MemAvailable"]) / 1024


def pg_quiet(ctx: Context) -> list[Series]:
    n = ctx.seconds(120)
    t0, counts, means = run_pgbench(
        ctx, "quiet", n, [Bench("q", ["-S", "-R", "300", "-c", "2"])], []
    )
    what = "pgbench select-only, 2 clients, --rate 300 (Poisson arrivals)"
    return [
        _latency("pg_quiet_latency", what, means["q"], ["none"], t0, []),
        _tps("pg_quiet_tps", what, counts["q"], ["none"], t0, []),
    ]


def pg_hog(ctx: Context) -> list[Series]:
    n = ctx.seconds(120)
    hog = Hog(ctx, 2)
    events = [
        Event(ctx.seconds(40), "2 busy-loop processes started", hog.start, True),
        Event(ctx.seconds(80), "busy loops stopped", hog.stop, True),
    ]
    main = [
        Bench("h", ["-S", "-R", "300", "-c", "2"]),
        Bench("b", ["-f", script(ctx, "report"), "-c", "1"]),
    ]
    t0, counts, means = run_pgbench(ctx, "hog", n, main, events)
    hog.stop()
    changes = change_records(t0, events)
    both = (
        "two concurrent workloads: select-only at --rate 300 (2 clients) and a closed-loop "
        "report client (1 client, no think time, sum over a 200,000-row index range)"
    )
    return [
        _latency(
            "pg_hog_latency", f"select-only stream; {both}", means["h"], ["none"], t0, changes
        ),
        _tps("pg_hog_tps", f"report client; {both}", counts["b"], ["none"], t0, changes),
    ]


def pg_clients(ctx: Context) -> list[Series]:
    n = ctx.seconds(100)
    extra = Bench("c2", ["-f", script(ctx, "think"), "-c", "4", "-j", "2"])
    start_extra = later_bench(ctx, extra, ctx.work / "clients")
    events = [Event(ctx.seconds(50), "4 more clients connected (2 → 6)", start_extra, True)]
    main = [Bench("c1", ["-f", script(ctx, "think"), "-c", "2"])]
    t0, counts, _ = run_pgbench(ctx, "clients", n, main, events)
    tps = counts["c1"] + counts.get("c2", np.zeros(n))
    what = "closed loop with 5 ms think time (select by key), all clients"
    return [_tps("pg_clients_tps", what, tps, ["none"], t0, change_records(t0, events))]


def pg_rate(ctx: Context) -> list[Series]:
    n = ctx.seconds(100)
    start_extra = later_bench(ctx, Bench("r2", ["-S", "-R", "200", "-c", "2"]), ctx.work / "rate")
    what = "arrival rate 200 → 400 tps (a second Poisson stream of 200 tps)"
    events = [Event(ctx.seconds(50), what, start_extra, True)]
    t0, counts, _ = run_pgbench(
        ctx, "rate", n, [Bench("r1", ["-S", "-R", "200", "-c", "2"])], events
    )
    tps = counts["r1"] + counts.get("r2", np.zeros(n))
    what = "pgbench select-only with --rate (open system, Poisson arrivals)"
    return [_tps("pg_rate_tps", what, tps, ["none"], t0, change_records(t0, events))]


def _cycle_events(ctx: Context, n: int) -> tuple[list[Event], int]:
    half = max(2, ctx.seconds(15))
    hog = Hog(ctx, 2)
    events = []
    for start in range(half, n, 2 * half):
        events.append(Event(start, "background job on (2 busy loops)", hog.start))
        if start + half < n:
            events.append(Event(start + half, "background job off", hog.stop))
    events.append(Event(n + 0.5, "background job off (end)", hog.stop))
    return events, 2 * half


def _cycle(ctx: Context, name: str, change: bool) -> list[Series]:
    assert ctx.server is not None
    n = ctx.seconds(150)
    ctx.server.psql(APP_V1)
    events, period = _cycle_events(ctx, n)
    server = ctx.server

    def release() -> None:
        server.psql(APP_V2)

    if change:
        what = "release: app_tx also sums 5,000 rows (CREATE OR REPLACE FUNCTION)"
        events.append(Event(ctx.seconds(68), what, release, True))
    main = [Bench("y", ["-f", script(ctx, "app"), "-R", "300", "-c", "2"])]
    t0, _, means = run_pgbench(ctx, name, n, main, events)
    ctx.server.psql(APP_V1)
    edges = sorted({row_of(t0, t0 + e.middle) for e in events if not e.change and e.middle < n})
    what = "pgbench: SELECT app_tx(aid) (plpgsql, a key lookup), 2 clients, --rate 300"
    return [
        _latency(
            f"pg_{name}_latency",
            what,
            means["y"],
            ["cycle"],
            t0,
            change_records(t0, events),
            cycle_period_rows=period,
            cycle_edges=edges,
        )
    ]


def pg_cycle(ctx: Context) -> list[Series]:
    return _cycle(ctx, "cycle", change=False)


def pg_cycle_change(ctx: Context) -> list[Series]:
    return _cycle(ctx, "cycle_change", change=True)


def _trend(ctx: Context, name: str, change: bool) -> list[Series]:
    assert ctx.server is not None
    n = ctx.seconds(120)
    server = ctx.server
    server.psql(TREND_SETUP, timeout=300)
    server.psql("VACUUM ANALYZE events")
    server.psql("VACUUM ANALYZE lookup")
    events = []

    def drop_index() -> None:
        server.psql("DROP INDEX lookup_key")

    if change:
        what = "DROP INDEX lookup_key (the lookup becomes a 100,000-row seq scan)"
        events.append(Event(ctx.seconds(65), what, drop_index, True))
    main = [
        Bench("t", ["-f", script(ctx, "scan_lookup" if change else "scan"), "-R", "25", "-c", "1"]),
        Bench(None, ["-f", script(ctx, "insert"), "-R", "50", "-c", "1"]),  # ~1,500 rows/s
    ]
    t0, _, means = run_pgbench(ctx, name, n, main, events)
    rows = int(server.psql("SELECT count(*) FROM events").strip())
    what = (
        "pgbench: count(*) of a table growing by ~1,500 rows/s (seq scan)"
        + (" + a key lookup in a 100,000-row table" if change else "")
        + ", --rate 25"
    )
    return [
        _latency(
            f"pg_{name}_latency",
            what,
            means["t"],
            ["trend"],
            t0,
            change_records(t0, events),
            events_rows_at_end=rows,
        )
    ]


def pg_trend(ctx: Context) -> list[Series]:
    return _trend(ctx, "trend", change=False)


def pg_trend_change(ctx: Context) -> list[Series]:
    return _trend(ctx, "trend_change", change=True)


def _spikes(ctx: Context, name: str, change: bool) -> list[Series]:
    assert ctx.server is not None
    server = ctx.server
    n = ctx.seconds(100)
    rng = np.random.default_rng(ctx.seed)
    change_at = ctx.seconds(55)
    bursts: list[tuple[float, float]] = []  # (start, end), Unix time
    lock = threading.Lock()

    def heavy() -> None:
        start = time.time()
        server.psql(HEAVY_QUERY, timeout=120)
        with lock:
            bursts.append((start, time.time()))

    def burst() -> None:
        for _ in range(2):
            thread = threading.Thread(target=heavy, name="heavy-query")
            thread.start()
            ctx.threads.append(thread)

    events = []
    gap = max(ctx.factor, 0.4)  # --quick: denser, or there would be none
    at = float(rng.uniform(4, 10)) * gap
    while at < n - 2:
        # Bursts keep clear of the change (both variants, so they stay comparable): a burst on
        # top of it would make the truth ambiguous.
        if abs(at - change_at) > 4 * gap:
            events.append(Event(round(at, 1), "burst: 2 report queries", burst))
        at += float(rng.uniform(8, 14)) * gap
    if change:

        def async_commit() -> None:
            server.psql("ALTER SYSTEM SET synchronous_commit = off")
            server.psql("SELECT pg_reload_conf()")

        what = "synchronous_commit = off (ALTER SYSTEM, reload)"
        events.append(Event(change_at, what, async_commit, True))
    main = [Bench("s", ["-N", "-R", "200", "-c", "2"])]
    try:
        t0, _, means = run_pgbench(ctx, name, n, main, events)
        for thread in ctx.threads:
            thread.join(timeout=120)
    finally:
        server.psql("ALTER SYSTEM RESET synchronous_commit")
        server.psql("SELECT pg_reload_conf()")
    outliers = sorted(
        {
            k
            for s, e in bursts
            for k in range(math.floor(s - t0), math.floor(e - t0) + 1)
            if 0 <= k < n
        }
    )
    what = "pgbench -N (simple update), 2 clients, --rate 200, fsync on"
    return [
        _latency(
            f"pg_{name}_latency",
            what,
            means["s"],
            ["outliers"],
            t0,
            change_records(t0, events),
            outlier_rows=outliers,
            burst_seconds=[round(e - s, 2) for s, e in sorted(bursts)],
        )
    ]


def pg_spikes(ctx: Context) -> list[Series]:
    return _spikes(ctx, "spikes", change=False)


def pg_spikes_change(ctx: Context) -> list[Series]:
    return _spikes(ctx, "spikes_change", change=True)


def _latency(
    name: str,
    what: str,
    values: npt.NDArray[np.float64],
    structure: list[str],
    t0: float,
    changes: list[dict[str, Any]],
    **extra: Any,
) -> Series:
    filled, gaps = fill_gaps(values)
    return Series(
        name,
        f"mean latency of the transactions completed in each second; {what}",
        "ms",
        filled,
        4,
        structure,
        changes,
        {"t0": t0, "empty_rows_filled": gaps, **extra},
    )


def _tps(
    name: str,
    what: str,
    counts: npt.NDArray[np.float64],
    structure: list[str],
    t0: float,
    changes: list[dict[str, Any]],
) -> Series:
    return Series(
        name,
        f"transactions completed per second; {what}",
        "tx/s",
        counts,
        0,
        structure,
        changes,
        {"t0": t0},
    )


EXPERIMENTS: dict[str, Callable[[Context], list[Series]]] = {
    "os_steps": os_steps,
    "pg_quiet": pg_quiet,
    "pg_hog": pg_hog,
    "pg_clients": pg_clients,
    "pg_rate": pg_rate,
    "pg_cycle": pg_cycle,
    "pg_cycle_change": pg_cycle_change,
    "pg_trend": pg_trend,
    "pg_trend_change": pg_trend_change,
    "pg_spikes": pg_spikes,
    "pg_spikes_change": pg_spikes_change,
}


# -- output -----------------------------------------------------------------------------------


def write_series(out: Path, experiment: str, series: Series, seconds: float) -> dict[str, Any]:
    if not np.isfinite(series.values).all():
        raise SourceError(f"{series.name}: non-finite values after collection")
    t0 = float(series.extra.pop("t0"))
    path = out / f"{series.name}.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["time", "value"])
        for k, value in enumerate(series.values):
            stamp = datetime.fromtimestamp(t0 + k, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            text = f"{value:.{series.decimals}f}" if series.decimals else str(round(value))
            writer.writerow([stamp, text])
    series.changes = [dict(c) for c in series.changes]  # two series of one run share them
    indices = [c["index"] for c in series.changes]
    bounds = [0, *indices, len(series.values)]
    sigma = noise_sigma(series.values)
    for change, (before, at, after) in zip(
        series.changes, zip(bounds, bounds[1:], bounds[2:], strict=False), strict=True
    ):
        # Measured, not injected: how big the step looks in the data (up to 15 rows a side).
        effect = float(
            np.median(series.values[at : min(after, at + 15)])
            - np.median(series.values[max(before, at - 15) : at])
        )
        change["effect"] = round(effect, series.decimals + 2)
        change["effect_sigma"] = round(effect / sigma, 1) if sigma > 0 else None
    medians = [
        round(float(np.median(series.values[a:b])), series.decimals + 2)
        for a, b in itertools.pairwise(bounds)
        if b > a
    ]
    return {
        "file": path.name,
        "experiment": experiment,
        "metric": series.metric,
        "unit": series.unit,
        "rows": len(series.values),
        "resolution_s": 1.0,
        "start": datetime.fromtimestamp(t0, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "change_indices": indices,
        "changes": series.changes,
        "structure": series.structure,
        "segment_medians": medians,
        "noise_sigma": round(sigma, series.decimals + 2),
        "experiment_seconds": round(seconds, 1),
        **series.extra,
    }


def noise_sigma(values: npt.NDArray[np.float64]) -> float:
    """Robust noise σ from first differences: 1.4826 · MAD(diff) / √2 (never 0 unless constant).

    A gauge sampled faster than it moves (used memory) has a MAD of 0; then the mean absolute
    deviation, then the standard deviation, stand in.
    """
    d = np.diff(values)
    centred = np.abs(d - np.median(d))
    for spread in (1.4826 * np.median(centred), 1.2533 * np.mean(centred), np.std(d)):
        if spread > 0:
            return float(spread / math.sqrt(2))
    return 0.0


def postgres_version(server: PostgresServer) -> str:
    return server.psql("SHOW server_version").strip()


def collect(out: Path, names: list[str], factor: float, seed: int) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    truth_path = out / "truth.json"
    truth: dict[str, Any] = {}
    if truth_path.exists() and set(names) != set(EXPERIMENTS):
        truth = json.loads(truth_path.read_text())  # --only: keep the other experiments' truth
    series_truth: dict[str, Any] = truth.get("series", {})
    pg_names = [n for n in names if n.startswith("pg_")]
    with tempfile.TemporaryDirectory(prefix="perfsleuth-cp-") as tmp:
        ctx = Context(Path(tmp), factor, seed)
        try:
            for name in [n for n in names if not n.startswith("pg_")]:
                series_truth.update(_one(ctx, out, name))
            if pg_names:
                with temporary_postgres(settings=SERVER_SETTINGS) as server:
                    ctx.server = server
                    server.run("pgbench", ["-i", "-s", str(SCALE), "-q"], timeout=600)
                    server.psql("VACUUM ANALYZE")
                    truth["postgres"] = postgres_version(server)
                    for name in pg_names:
                        series_truth.update(_one(ctx, out, name))
                    ctx.stop_all()
        finally:
            ctx.stop_all()
    truth.update(
        {
            "generated_by": "scripts/collect_operational_series.py",
            "collected_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": {"cpus": os.cpu_count(), "kernel": platform.release()},
            "quick_factor": factor,
            "seed": seed,
            "truth_rule": (
                "change index = round(t - t0), t the middle of the script's action "
                "(started_s .. done_s); row k covers [t0 + k, t0 + k + 1) s"
            ),
            "series": dict(sorted(series_truth.items())),
        }
    )
    truth_path.write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def _one(ctx: Context, out: Path, name: str) -> dict[str, Any]:
    log.info("%s ...", name)
    started = time.monotonic()
    try:
        series = EXPERIMENTS[name](ctx)
    finally:
        ctx.stop_all()
    seconds = time.monotonic() - started
    written = {s.name: write_series(out, name, s, seconds) for s in series}
    for sname, info in written.items():
        steps = ", ".join(f"{c['index']} ({c['effect_sigma']}σ)" for c in info["changes"])
        print(
            f"{sname:26s} {info['rows']:4d} rows  {info['unit']:8s} "
            f"changes at [{steps}]  {'+'.join(info['structure'])}  "
            f"segment medians {info['segment_medians']}  ({seconds:.0f} s)",
            flush=True,
        )
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--quick", action="store_true", help="every duration × 0.2 (smoke test)")
    parser.add_argument(
        "--only", action="append", choices=list(EXPERIMENTS), help="run only these (repeatable)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of pgbench and of burst times")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(message)s",
        stream=sys.stderr,
    )
    names = args.only or list(EXPERIMENTS)
    started = time.monotonic()
    try:
        collect(args.out, names, 0.2 if args.quick else 1.0, args.seed)
    except PerfsleuthError as exc:
        print(f"collect_operational_series: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}/*.csv and truth.json in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
