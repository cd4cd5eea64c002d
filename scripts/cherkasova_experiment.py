#!/usr/bin/env python3
"""Cherkasova et al.'s experiment (2008, §6) for real, on a busy shared host: record a run.

A throw-away PostgreSQL (tests/support/postgres.py) on 127.0.0.1 serves five pgbench scripts
of different CPU cost, the transaction types ``t0`` … ``t4`` (their sizes are drawn per run,
so costs differ from run to run). While co-tenants (``stress-ng --cpu``, load redrawn every
15–40 s) keep the machine busy, pgbench runs

* nine phases of about ``--phase-seconds`` (45–55 s by default), each with its own mix and
  rate (**workload changes**);
* a **CPU hog** for 60 s, starting 15–35 s into phase 2, 3 or 4, so it always spans a mix
  change (**anomaly**, visible only in the CPU that includes it);
* from the start of phase 6, 7, 8 or 9 (the last: an application change near the end of the
  data), one type — or two with ``--change t1,t3`` — made about **twice as heavy**: its script
  runs its statements twice (**application change**).

A sampler reads /proc once a second (at a random sub-second offset, as a monitoring agent
would) and keeps cumulative CPU seconds of the database (postmaster, live backends, reaped
ones), of pgbench, of the hog, of the co-tenants and of the whole machine (``cpu_raw.csv``).

What it writes to ``--out`` — the recorded run, in the formats users give perfsleuth:

* ``agg_1s.csv``, ``agg_5s.csv``: per-window, per-type tables (``time`` window start in Unix
  seconds, ``type``, ``count``, ``rt_sum`` in seconds) from pgbench's ``-l`` logs, windows on
  the epoch grid, the first and last partial as logs make them;
* ``cpu_db.csv`` (the database's own CPU), ``cpu_all.csv`` (database + pgbench + hog),
  ``cpu_host.csv`` (the whole machine): ``time`` (the sample time: the end of the second it
  describes), ``cpu_util`` (fraction of the machine), ``cpu_cores``;
* ``truth.json``: phases (UTC start/end, weights, rate), the hog's edges, the application
  change's time and types, the scripts, the co-tenant schedule, load averages;
* ``evaluation.json`` / ``summary.txt``: perfsleuth's verdict on the four configurations
  (1 s and 5 s windows × database CPU or database + pgbench + hog), each run through the
  command users run, ``perfsleuth workload FILE --source aggregated --segments --cpu CPU``,
  and scored by :func:`perfsleuth.datasets.segments.score_run`.

Usage::

    .venv/bin/python scripts/cherkasova_experiment.py --out build/ch1 --seed 1 --change t2
    .venv/bin/python scripts/cherkasova_experiment.py --out build/ch1 --reanalyse
    .venv/bin/python scripts/cherkasova_experiment.py --out build/ch1 --record-only

About 8 minutes a run. Exit 0 when every configuration passes, 1 when one misses, 2 on error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support

from tests.support.postgres import PostgresServer, temporary_postgres  # noqa: E402

from perfsleuth.datasets.segments import RunTruth, score_run  # noqa: E402
from perfsleuth.errors import PerfsleuthError  # noqa: E402
from perfsleuth.findings import read_jsonl  # noqa: E402
from perfsleuth.sources.pgbench import read_pgbench  # noqa: E402

log = logging.getLogger("cherkasova_experiment")

TYPES = ("t0", "t1", "t2", "t3", "t4")
WINDOWS = (1, 5)
CPU_TABLES = {"db": "database", "all": "database + pgbench + hog"}
SETTINGS = {  # the server's CPU is the transactions' (the paper's testbed was quiet too)
    "autovacuum": "off",
    "checkpoint_timeout": "1h",
    "max_wal_size": "4GB",
    "fsync": "off",
    "synchronous_commit": "off",
    "shared_buffers": "128MB",
}


# --------------------------------------------------------------------------------------------
# The transaction types and the plan
# --------------------------------------------------------------------------------------------


def scripts(rng: np.random.Generator) -> dict[str, str]:
    """The five scripts; the rows each reads are drawn, so CPU costs differ between runs.

    Each reads thousands of rows at least, so that running its statements twice (the
    application change) about doubles its CPU: with a few hundred, a statement's CPU is mostly
    its fixed part (wake-up, parse, plan), which the warm second run does more cheaply
    (``benchmarks/segments_cost.py``: 1.4–1.6× for 500–1,500 rows). Each type then holds about
    a tenth to two fifths of the server's CPU at the base mix."""
    ranges = ((3_000, 6_000), (4_000, 8_000), (10_000, 20_000), (15_000, 35_000), (30_000, 60_000))
    s0, s1, s2, s3, s4 = (int(rng.integers(lo, hi)) for lo, hi in ranges)
    return {
        "t0": f"\\set aid random(1, 100000 * :scale - {s0})\n"
        "SELECT count(*), sum(abalance) FROM pgbench_accounts\n"
        f"  WHERE aid BETWEEN :aid AND :aid + {s0};\n",
        "t1": f"\\set aid random(1, 100000 * :scale - {s1})\n"
        "\\set delta random(-5000, 5000)\n"
        "BEGIN;\n"
        "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n"
        f"SELECT max(abalance) FROM pgbench_accounts WHERE aid BETWEEN :aid AND :aid + {s1};\n"
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)\n"
        "  VALUES (1, 1, :aid, :delta, CURRENT_TIMESTAMP);\n"
        "END;\n",
        "t2": f"\\set aid random(1, 100000 * :scale - {s2})\n"
        "SELECT count(*), sum(abalance) FROM pgbench_accounts\n"
        f"  WHERE aid BETWEEN :aid AND :aid + {s2};\n",
        "t3": f"\\set aid random(1, 100000 * :scale - {s3})\n"
        "SELECT count(*), sum(abalance), min(abalance), max(abalance) FROM pgbench_accounts\n"
        f"  WHERE aid BETWEEN :aid AND :aid + {s3};\n",
        "t4": f"\\set aid random(1, 100000 * :scale - {s4})\n"
        "SELECT bid, count(*), avg(abalance), stddev(abalance) FROM pgbench_accounts\n"
        f"  WHERE aid BETWEEN :aid AND :aid + {s4} GROUP BY bid ORDER BY bid;\n",
    }


def heavier(body: str) -> str:
    """The application change: the script's work done twice (its variables drawn again)."""
    return body + "\n" + body


BASE_WEIGHTS = {"t0": 35, "t1": 25, "t2": 18, "t3": 13, "t4": 9}


@dataclass
class Phase:
    """One pgbench run: a mix and a rate for ``seconds``."""

    seconds: int
    rate: float
    weights: dict[str, int]
    seed: int
    changed: bool = False
    start: str = ""
    end: str = ""
    processed: int = 0


@dataclass
class Plan:
    seed: int
    scripts: dict[str, str]
    phases: list[Phase]
    hog_phase: int  # 0-based phase in which the hog starts
    hog_offset: float  # seconds into that phase
    hog_seconds: float
    hog_share: float  # of one core
    change_phase: int  # 0-based first phase with the heavier script(s)
    changed: list[str]
    cotenants: list[tuple[float, int, int]] = field(default_factory=list)  # (s, workers, load%)


def make_plan(
    seed: int, changed: list[str], phase_seconds: float, change_phase: int | None
) -> Plan:
    """Mixes (lognormal around :data:`BASE_WEIGHTS`, σ 0.6), rates (uniform 70–170 tps, which
    the server serves without falling behind on a busy host),
    phase lengths (±10%), the hog and the change phase, all drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    body = scripts(rng)
    phases = []
    for _ in range(9):
        noise = np.exp(0.6 * rng.standard_normal(len(TYPES)))
        weights = {
            t: max(1, round(BASE_WEIGHTS[t] * float(f))) for t, f in zip(TYPES, noise, strict=True)
        }
        seconds = round(phase_seconds * float(rng.uniform(0.9, 1.1)))
        rate = float(round(rng.uniform(70, 170)))
        phases.append(Phase(seconds, rate, weights, int(rng.integers(1, 2**31))))
    hog_phase = int(rng.integers(1, 4))
    hog_offset = float(rng.uniform(15, 35))
    hog_share = float(rng.uniform(0.6, 1.0))
    at = change_phase if change_phase is not None else int(rng.integers(5, 9))
    for p in phases[at:]:
        p.changed = True
    total = sum(p.seconds for p in phases) + 60
    cotenants, clock = [], 0.0
    while clock < total:
        length = float(rng.uniform(15, 40))
        cotenants.append((length, int(rng.integers(1, 3)), int(rng.integers(50, 101))))
        clock += length
    return Plan(seed, body, phases, hog_phase, hog_offset, 60.0, hog_share, at, changed, cotenants)


# --------------------------------------------------------------------------------------------
# CPU: the database, pgbench, the hog, the co-tenants, the machine
# --------------------------------------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def _ticks(pid: int) -> tuple[int, int]:
    """(utime + stime, cutime + cstime) of a process, in clock ticks."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _tree_seconds(pid: int) -> float:
    """CPU seconds of a process, its reaped children and its live children (one level)."""
    own, reaped = _ticks(pid)
    total = own + reaped
    for child in _children(pid):
        with contextlib.suppress(OSError):  # exited since listed: in cutime next time
            total += _ticks(child)[0]
    return total / _TICK


def _machine() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


class Group:
    """Cumulative CPU seconds of a changing set of processes: the live one's tree, plus the
    exact total (``wait4``'s rusage) of each that has ended."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.done = 0.0
        self.lock = threading.Lock()

    def seconds(self) -> float:
        with self.lock:
            if self.pid is None:
                return self.done
            try:
                return self.done + _tree_seconds(self.pid)
            except OSError:
                return self.done

    def start(self, process: subprocess.Popen[bytes]) -> None:
        with self.lock:
            self.pid = process.pid

    def reap(self, process: subprocess.Popen[bytes]) -> int:
        """Wait for ``process`` and add its whole CPU time; returns its exit status."""
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        with self.lock:
            self.done += usage.ru_utime + usage.ru_stime
            self.pid = None
        return process.returncode


class Sampler:
    """Once a second: the time, and cumulative CPU seconds of each group and of the machine."""

    COLUMNS = ("time", "db_s", "pgbench_s", "hog_s", "cotenant_s", "busy", "jiffies")

    def __init__(self, postmaster: int, groups: dict[str, Group], offset: float) -> None:
        self.postmaster = postmaster
        self.groups = groups
        self.offset = offset
        self.rows: list[tuple[float, ...]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cpu-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        time.sleep(self.offset)
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        # A sampler starved by other work (the test suite at nice 19 beside a co-tenant) can
        # be seconds behind: a last sample covers the run's end, whatever the load.
        self.sample()

    def _loop(self) -> None:
        due = time.monotonic()
        while True:
            due += 1.0
            if self._stop.wait(max(0.0, due - time.monotonic())):
                return
            self.sample()

    def sample(self) -> None:
        db = _tree_seconds(self.postmaster)
        parts = [self.groups[g].seconds() for g in ("pgbench", "hog", "cotenant")]
        busy, total = _machine()
        self.rows.append((time.time(), db, *parts, busy, total))

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(self.COLUMNS))


def cpu_tables(raw: pd.DataFrame, cores: int) -> dict[str, pd.DataFrame]:
    """Per-sample utilisation tables from the cumulative samples (each row: the second that
    ends at its time). An interval in which the kernel's clock did not tick (the sampler's last
    sample at exit can follow the one before within a tick) measures nothing and is left out."""
    ticked = np.concatenate([[True], np.diff(raw["jiffies"].to_numpy()) > 0])
    raw = raw[ticked]
    dt = raw["time"].diff().to_numpy()[1:]
    d = raw.drop(columns="time").diff().iloc[1:]
    stamp = raw["time"].to_numpy()[1:].round(3)
    used = {
        "db": d["db_s"].to_numpy(),
        "all": (d["db_s"] + d["pgbench_s"] + d["hog_s"]).to_numpy(),
    }
    out = {
        name: pd.DataFrame(
            {
                "time": stamp,
                "cpu_util": np.clip(v / (dt * cores), 0, 1).round(5),
                "cpu_cores": cores,
            }
        )
        for name, v in used.items()
    }
    host = np.clip(d["busy"].to_numpy() / d["jiffies"].to_numpy(), 0, 1)
    out["host"] = pd.DataFrame({"time": stamp, "cpu_util": host.round(5), "cpu_cores": cores})
    return out


# --------------------------------------------------------------------------------------------
# Running it
# --------------------------------------------------------------------------------------------


class Cotenants:
    """stress-ng ``--cpu`` workers whose number and load change on the plan's schedule."""

    def __init__(self, schedule: list[tuple[float, int, int]], group: Group) -> None:
        self.schedule = schedule
        self.group = group
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cotenants", daemon=True)
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Cotenants:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGTERM)
        self._thread.join()

    def _loop(self) -> None:
        for seconds, workers, load in self.schedule:
            if self._stop.is_set():
                return
            command = [
                "stress-ng",
                "--cpu",
                str(workers),
                "--cpu-load",
                str(load),
                "--timeout",
                f"{seconds:.0f}s",
                "--quiet",
            ]
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, start_new_session=True
            )
            self.group.start(self._process)
            self.group.reap(self._process)


HOG = """
import random, sys, time
random.seed(int(sys.argv[1])); share = float(sys.argv[2])
while True:
    duty = min(1.0, max(0.05, random.gauss(share, 0.1)))
    end = time.monotonic() + 0.5
    while time.monotonic() < end - 0.5 * (1 - duty):
        pass
    time.sleep(max(0.0, end - time.monotonic()))
"""


def _hog(plan: Plan, group: Group, stop: threading.Event, edges: list[str]) -> None:
    """Start the hog at its planned time, stop it 60 s later; ``edges`` gets its UTC times."""
    process = subprocess.Popen(  # a stray process of its own session, as a co-tenant's
        [sys.executable, "-c", HOG, str(plan.seed), f"{plan.hog_share:.3f}"],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    group.start(process)
    edges.append(datetime.now(UTC).isoformat())
    stop.wait(plan.hog_seconds)
    edges.append(datetime.now(UTC).isoformat())
    process.send_signal(signal.SIGKILL)
    group.reap(process)


def _pgbench(
    server: PostgresServer, phase: Phase, k: int, files: list[Path], logs: Path, group: Group
) -> None:
    args = [
        str(server.tool("pgbench")),
        "-n",
        "--client=8",
        "--jobs=1",
        f"--time={phase.seconds}",
        f"--rate={phase.rate:g}",
        f"--random-seed={phase.seed}",
        "--log",
        f"--log-prefix=phase{k}",
    ]
    args += [f"--file={f}@{phase.weights[t]}" for t, f in zip(TYPES, files, strict=True)]
    log.info(
        "phase %d: %d s, %g tps, %s%s",
        k,
        phase.seconds,
        phase.rate,
        phase.weights,
        " (changed)" if phase.changed else "",
    )
    phase.start = datetime.now(UTC).isoformat()
    out = logs / f"phase{k}.out"
    with out.open("wb") as sink:
        process = subprocess.Popen(
            args, env=server.env(), cwd=logs, stdout=sink, stderr=subprocess.STDOUT
        )
        group.start(process)
        status = group.reap(process)
    phase.end = datetime.now(UTC).isoformat()
    text = out.read_text(errors="replace")
    if status != 0:
        raise RuntimeError(f"pgbench phase {k} failed (exit {status}): {text[-500:]}")
    for line in text.splitlines():
        if "processed:" in line:
            phase.processed = int(line.split(":")[1].split("/")[0])


def record(out: Path, plan: Plan, pg_parent: Path | None) -> dict[str, object]:
    """Run the plan against a fresh server; write the logs, tables and truth.json."""
    niceness = os.nice(0)  # the database runs at the priority a user would run it at
    group = Path("/proc/self/autogroup")  # Linux shares the CPU between these groups first
    autogroup = group.read_text().strip() if group.exists() else ""
    out = out.resolve()
    logs, script_dir = out / "logs", out / "scripts"
    for folder in (logs, script_dir):
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
    plain, heavy = [], []
    for name, body in plan.scripts.items():
        (script_dir / f"{name}.sql").write_text(body)
        (script_dir / f"{name}_heavy.sql").write_text(heavier(body))
        plain.append(script_dir / f"{name}.sql")
        heavy.append(script_dir / (f"{name}_heavy.sql" if name in plan.changed else f"{name}.sql"))
    groups = {g: Group() for g in ("pgbench", "hog", "cotenant")}
    load_before = os.getloadavg()
    hog_edges: list[str] = []
    with temporary_postgres(pg_parent, settings=SETTINGS) as server:
        server.run("pgbench", ["-i", "-s", "4", "-q"], timeout=900)
        server.psql("VACUUM ANALYZE")
        postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        offset = float(np.random.default_rng(plan.seed).uniform(0, 1))
        with (
            Cotenants(plan.cotenants, groups["cotenant"]),
            Sampler(postmaster, groups, offset) as sampler,
        ):
            time.sleep(3.0)  # co-tenants settle; the sampler sees idle seconds first
            stop_hog = threading.Event()
            hog: threading.Thread | None = None
            for k, phase in enumerate(plan.phases):
                if k == plan.hog_phase:
                    delay = threading.Timer(
                        plan.hog_offset,
                        lambda: _hog(plan, groups["hog"], stop_hog, hog_edges),
                    )
                    delay.start()
                    hog = delay
                _pgbench(
                    server, phase, k + 1, heavy if phase.changed else plain, logs, groups["pgbench"]
                )
            if hog is not None:
                hog.join()
            time.sleep(2.5)  # the sampler sees the load end
    raw = sampler.frame()
    raw.to_csv(out / "cpu_raw.csv", index=False)
    cores = os.cpu_count() or 1
    for name, table in cpu_tables(raw, cores).items():
        table.to_csv(out / f"cpu_{name}.csv", index=False)
    tx = read_pgbench(logs, scripts=list(TYPES))
    for width in WINDOWS:
        aggregated_table(tx.workload(f"{width}s")).to_csv(out / f"agg_{width}s.csv", index=False)
    change_at = plan.phases[plan.change_phase].start
    truth = {
        "seed": plan.seed,
        "types": list(TYPES),
        "changed": plan.changed,
        "change_at": change_at,
        "hog": hog_edges,
        "hog_share": plan.hog_share,
        "phases": [asdict(p) for p in plan.phases],
        "scripts": plan.scripts,
        "cotenants": plan.cotenants,
        "cores": cores,
        "niceness": niceness,
        "autogroup": autogroup,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "recorded": datetime.now(UTC).isoformat(),
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return truth


def aggregated_table(frame: pd.DataFrame) -> pd.DataFrame:
    """A workload frame in the long per-window, per-type form ``--source aggregated`` reads:
    Unix-second window starts; types with no transactions in a window are left out, except
    that every window keeps one row (windows are not invented by the reader)."""
    types = [c[2:-1] for c in frame.columns if c.startswith("n[")]
    start = frame["time"].astype("int64").to_numpy() // 10**9
    rows = []
    for t in types:
        part = pd.DataFrame(
            {
                "time": start,
                "type": t,
                "count": frame[f"n[{t}]"].astype(int),
                "rt_sum": frame[f"rt_sum[{t}]"].round(6),
            }
        )
        rows.append(part)
    long = pd.concat(rows, ignore_index=True).sort_values(["time", "type"], kind="stable")
    keep = (long["count"] > 0) | ~long["time"].duplicated(keep="first") & (
        long.groupby("time")["count"].transform("sum") == 0
    )
    return long[keep].reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# Judging it: the four configurations through the command users run
# --------------------------------------------------------------------------------------------


def evaluate(out: Path) -> dict[str, object]:
    truth = RunTruth.read(out / "truth.json")
    rows = []
    for width in WINDOWS:
        for cpu in CPU_TABLES:
            command = [
                str(ROOT / ".venv" / "bin" / "perfsleuth"),
                "--format",
                "jsonl",
                "workload",
                str(out / f"agg_{width}s.csv"),
                "--source",
                "aggregated",
                "--segments",
                "--cpu",
                str(out / f"cpu_{cpu}.csv"),
            ]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode not in (0, 1):
                raise RuntimeError(f"{' '.join(command)}: {done.stderr[-800:]}")
            findings = read_jsonl(done.stdout)
            score = score_run(findings, truth, hog_in_cpu=cpu == "all")
            rows.append(
                {
                    "window_s": width,
                    "cpu": cpu,
                    **asdict(score),
                    "passed": score.passed,
                    "warnings": done.stderr.strip()[-400:],
                }
            )
            (out / f"findings_{width}s_{cpu}.jsonl").write_text(done.stdout)
    result = {"configurations": rows, "passed": all(r["passed"] for r in rows)}
    (out / "evaluation.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    return result


def summary(truth: dict[str, object] | None, result: dict[str, object]) -> str:
    lines = []
    for row in result["configurations"]:  # type: ignore[attr-defined]
        lines.append(
            f"{row['window_s']} s, cpu {row['cpu']:<3}: change {row['change_offset_s']} s, "
            f"named {row['named']!r} (first right: {row['first_right']}), hog edges "
            f"{row['hog_edges_s']}, false app {row['false_application']}, false anomalies "
            f"{row['false_anomalies']} -> {'pass' if row['passed'] else 'MISS'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--change", default="t0", help="type(s) made heavier, comma-separated")
    parser.add_argument("--change-phase", type=int, default=None, help="1-based; default drawn")
    parser.add_argument("--phase-seconds", type=float, default=50.0)
    parser.add_argument("--pg-parent", type=Path, default=None, help="folder for the server")
    parser.add_argument("--reanalyse", action="store_true", help="judge the recorded run again")
    parser.add_argument("--record-only", action="store_true", help="record, do not judge")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    changed = [t.strip() for t in args.change.split(",") if t.strip()]
    if not changed or any(t not in TYPES for t in changed):
        parser.error(f"--change: types among {', '.join(TYPES)}")
    started = time.monotonic()
    truth = None
    try:
        if not args.reanalyse:
            phase = None if args.change_phase is None else args.change_phase - 1
            plan = make_plan(args.seed, changed, args.phase_seconds, phase)
            args.out.mkdir(parents=True, exist_ok=True)
            truth = record(args.out, plan, args.pg_parent.resolve() if args.pg_parent else None)
        if args.record_only:
            print(f"recorded {args.out} in {time.monotonic() - started:.0f} s", file=sys.stderr)
            return 0
        result = evaluate(args.out)
    except (PerfsleuthError, RuntimeError, OSError) as exc:
        print(f"cherkasova_experiment: {exc}", file=sys.stderr)
        return 2
    text = summary(truth, result)
    (args.out / "summary.txt").write_text(text + "\n")
    print(text, file=sys.stderr)
    print(f"done in {time.monotonic() - started:.0f} s: {args.out}", file=sys.stderr)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
