#!/usr/bin/env python3
"""Real transactional load with a changing mix: PostgreSQL + pgbench → a workload frame.

Starts a throw-away PostgreSQL on 127.0.0.1 (perfsleuth.sources.postgres), initialises the
pgbench tables at a small scale, and runs pgbench in phases. Every phase runs the same four
custom transaction scripts of clearly different cost, in the same ``-f`` order (so script
numbers mean the same thing in every log), with different weights, client counts and target
rates — the workload changes, the application does not (unless ``--app-change``, which adds a
last phase where one script is swapped for a 5 ms slower version, as in Cherkasova et al.).
Each phase is cut into segments of ``--segment`` seconds (one pgbench run each) whose weights
and rate wander around the phase's (``--jitter``), as real traffic does within a regime; that
keeps the per-type costs identifiable by a mix model. Everything random is seeded (``--seed``,
passed on to ``pgbench --random-seed``). pgbench writes per-transaction logs (``-l``); the
pgbench source turns them into a workload frame. While pgbench runs, the server's own CPU
time is sampled from /proc and added as ``cpu_util`` (the PostgreSQL processes' CPU as a
fraction of the machine) and ``cpu_cores``.

Output folder (``--out``):

    logs/             pgbench -l logs, phase<k>_<name>_<segment>.<pid>[.<thread>]
    scripts/          the transaction scripts (.sql)
    workload.parquet  the workload frame (perfsleuth frames contract "workload")
    phases.json       the plan as run: phases and their segments (UTC start/end, clients,
                      rate, weights, seed, pgbench's own summary lines)
    summary.txt       what was read, per type and per phase

Usage::

    .venv/bin/python scripts/pgbench_mix.py --out build/pgbench-mix            # ~4 minutes
    .venv/bin/python scripts/pgbench_mix.py --out /tmp/mix --duration 40 --window 5s
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from perfsleuth.errors import PerfsleuthError
from perfsleuth.sources.pgbench import read_pgbench

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support
from tests.support.postgres import PostgresServer, temporary_postgres

from perfsleuth.sources.transactions import Transactions, window_seconds

log = logging.getLogger("pgbench_mix")

# Four scripts, cheapest first. Costs on an idle 2-core machine at scale 2: ~0.5 ms, ~1.5 ms,
# ~4 ms, ~12 ms. Names become the transaction types.
SCRIPTS: dict[str, str] = {
    "point_select": """\
\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
""",
    "small_update": """\
\\set aid random(1, 100000 * :scale)
\\set tid random(1, 10 * :scale)
\\set bid random(1, :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
  VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
""",
    "range_scan": """\
\\set aid random(1, 100000 * :scale - 20000)
SELECT count(*), sum(abalance), min(abalance), max(abalance)
  FROM pgbench_accounts WHERE aid BETWEEN :aid AND :aid + 20000;
""",
    "branch_report": """\
\\set aid random(1, 100000 * :scale - 60000)
SELECT bid, count(*), avg(abalance), stddev(abalance)
  FROM pgbench_accounts WHERE aid BETWEEN :aid AND :aid + 60000
  GROUP BY bid ORDER BY bid;
""",
}
# --app-change: the update transaction gets 5 ms slower (the paper's "+5 ms" on one type).
SLOW_UPDATE = SCRIPTS["small_update"].replace("END;", "SELECT pg_sleep(0.005);\nEND;")


@dataclass(frozen=True)
class Phase:
    name: str
    share: float  # of the total duration
    clients: int
    rate: float  # target transactions per second (pgbench --rate), all clients together
    weights: dict[str, int]  # script -> weight (0: not run in this phase)
    latency_limit_ms: float | None = None  # pgbench --latency-limit: late ones are "skipped"
    slow_update: bool = False


PHASES: tuple[Phase, ...] = (
    Phase("steady", 0.25, 4, 120, {"point_select": 70, "small_update": 20, "range_scan": 8,
                                   "branch_report": 2}),
    Phase("read_heavy", 0.20, 4, 250, {"point_select": 90, "small_update": 5, "range_scan": 5,
                                       "branch_report": 0}),
    Phase("write_heavy", 0.20, 6, 120, {"point_select": 30, "small_update": 60, "range_scan": 8,
                                        "branch_report": 2}),
    Phase("reports", 0.20, 4, 50, {"point_select": 40, "small_update": 15, "range_scan": 30,
                                   "branch_report": 15}),
    Phase("surge", 0.15, 8, 350, {"point_select": 65, "small_update": 25, "range_scan": 8,
                                  "branch_report": 2}, latency_limit_ms=250),
)  # fmt: skip
APP_CHANGE = Phase("slower_update", 0.20, 4, 120, dict(PHASES[0].weights), slow_update=True)


@dataclass
class Segment:
    """One pgbench run: a stretch of a phase with its own jittered weights and rate."""

    seconds: int
    rate: float
    weights: dict[str, int]
    seed: int
    log_prefix: str = ""
    start: str = ""
    end: str = ""
    pgbench_summary: list[str] = field(default_factory=list)


@dataclass
class PhaseRun:
    name: str
    seconds: int
    clients: int
    jobs: int
    rate: float
    weights: dict[str, int]
    latency_limit_ms: float | None
    slow_update: bool
    segments: list[Segment] = field(default_factory=list)

    @property
    def start(self) -> str:
        return self.segments[0].start

    @property
    def end(self) -> str:
        return self.segments[-1].end


def plan(
    duration: float, app_change: bool, *, segment: float = 12.0, jitter: float = 0.5, seed: int = 1
) -> list[PhaseRun]:
    """Phases with whole-second durations adding up to about ``duration``.

    Each phase is cut into segments of about ``segment`` seconds whose weights and rate are the
    phase's times lognormal noise (sigma ``jitter`` for weights, half that for the rate), as
    traffic wanders within a regime. Without it every window of a phase has the same mix in
    expectation, and the per-type costs a mix model estimates are poorly identified.
    """
    rng = np.random.default_rng(seed)
    phases = [*PHASES, APP_CHANGE] if app_change else list(PHASES)
    total = sum(p.share for p in phases)
    runs = []
    for p in phases:
        seconds = max(2, round(duration * p.share / total))
        run = PhaseRun(
            p.name,
            seconds,
            p.clients,
            min(2, p.clients),
            p.rate,
            dict(p.weights),
            p.latency_limit_ms,
            p.slow_update,
        )
        pieces = max(1, round(seconds / segment))
        lengths = [seconds // pieces + (i < seconds % pieces) for i in range(pieces)]
        for length in lengths:
            noise = np.exp(jitter * rng.standard_normal(len(p.weights)))
            weights = {
                name: (max(1, round(w * f)) if w > 0 else 0)
                for (name, w), f in zip(p.weights.items(), noise, strict=True)
            }
            rate = round(p.rate * float(np.exp(0.5 * jitter * rng.standard_normal())), 1)
            run.segments.append(Segment(length, rate, weights, int(rng.integers(1, 2**31))))
        runs.append(run)
    return runs


class ServerCpu:
    """Samples the CPU time of the PostgreSQL server's processes once a second."""

    def __init__(self, server: PostgresServer, interval: float = 1.0) -> None:
        pid_file = server.data_dir / "postmaster.pid"
        self.postmaster = int(pid_file.read_text().split()[0])
        self.interval = interval
        self.tick = os.sysconf("SC_CLK_TCK")
        self.samples: list[tuple[float, float]] = []  # (unix time, CPU seconds since last)
        self._seen: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="server-cpu", daemon=True)

    def __enter__(self) -> ServerCpu:
        self._sample()  # baseline
        self.samples.clear()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        ticks = 0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            try:
                raw = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue  # gone since scandir
            fields = raw[raw.rindex(")") + 2 :].split()
            ppid, used = int(fields[1]), int(fields[11]) + int(fields[12])
            if self.postmaster not in (pid, ppid):
                continue
            ticks += used - self._seen.get(pid, 0)
            self._seen[pid] = used
        self.samples.append((time.time(), ticks / self.tick))

    def per_window(self, starts: pd.Series, width_s: float) -> np.ndarray:
        """CPU seconds in each window (samples filed by their time, epoch-aligned)."""
        if not self.samples:
            return np.zeros(len(starts))
        times, cpu = np.array(self.samples).T
        index = np.floor(times / width_s).astype(np.int64)
        first = starts.astype("int64").to_numpy() // round(width_s * 1e9)
        series = pd.Series(cpu).groupby(index).sum()
        out: np.ndarray = series.reindex(first, fill_value=0.0).to_numpy(dtype=np.float64)
        return out


def run_mix(
    out: Path,
    *,
    duration: float,
    window: str,
    scale: int,
    app_change: bool,
    pg_parent: Path | None,
    segment: float = 12.0,
    jitter: float = 0.5,
    seed: int = 1,
) -> tuple[pd.DataFrame, Transactions, list[PhaseRun]]:
    out.mkdir(parents=True, exist_ok=True)
    logs, script_dir = out / "logs", out / "scripts"
    for folder in (logs, script_dir):
        folder.mkdir(exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
    names = list(SCRIPTS)
    for name, body in SCRIPTS.items():
        (script_dir / f"{name}.sql").write_text(body)
    (script_dir / "small_update_slow.sql").write_text(SLOW_UPDATE)
    runs = plan(duration, app_change, segment=segment, jitter=jitter, seed=seed)

    with temporary_postgres(pg_parent) as server:
        log.info("PostgreSQL on 127.0.0.1:%d; pgbench -i -s %d", server.port, scale)
        server.run("pgbench", ["-i", "-s", str(scale), "-q"], timeout=600)
        server.psql("VACUUM ANALYZE")
        with ServerCpu(server) as cpu:
            for k, run in enumerate(runs, start=1):
                log.info(
                    "phase %d/%d %s: %d s, %d clients, %g tps, weights %s",
                    k, len(runs), run.name, run.seconds, run.clients, run.rate, run.weights,
                )  # fmt: skip
                for j, seg in enumerate(run.segments, start=1):
                    seg.log_prefix = f"phase{k}_{run.name}_{j:02d}"
                    _run_segment(server, run, seg, names, script_dir, logs)

    tx = read_pgbench(logs, scripts=names)
    frame = tx.workload(window)
    width = window_seconds(window)
    ncpu = os.cpu_count() or 1
    used = cpu.per_window(frame["time"], width)
    frame["cpu_util"] = np.clip(used / (frame["window_s"].to_numpy() * ncpu), 0.0, 1.0)
    frame["cpu_cores"] = float(ncpu)

    stored = frame.copy()
    stored.attrs.clear()  # the Coverage in attrs is not JSON, which pandas' Parquet writer wants
    stored.to_parquet(out / "workload.parquet", index=False)
    phases = [asdict(r) | {"start": r.start, "end": r.end} for r in runs]
    (out / "phases.json").write_text(json.dumps(phases, indent=2) + "\n")
    (out / "summary.txt").write_text(summary(tx, frame, runs) + "\n")
    return frame, tx, runs


def _run_segment(
    server: PostgresServer,
    run: PhaseRun,
    seg: Segment,
    names: list[str],
    script_dir: Path,
    logs: Path,
) -> None:
    args = [
        "-n",  # no vacuum of the standard tables before the run
        f"--client={run.clients}",
        f"--jobs={run.jobs}",
        f"--time={seg.seconds}",
        f"--rate={seg.rate:g}",
        f"--random-seed={seg.seed}",
        "--log",
        f"--log-prefix={seg.log_prefix}",
    ]
    if run.latency_limit_ms is not None:
        args.append(f"--latency-limit={run.latency_limit_ms:g}")
    for name in names:  # the same -f order every time: script_no = index in names
        file = "small_update_slow" if run.slow_update and name == "small_update" else name
        args.append(f"--file={script_dir / file}.sql@{seg.weights[name]}")
    log.info("  %s: %d s, %g tps, weights %s", seg.log_prefix, seg.seconds, seg.rate, seg.weights)
    seg.start = datetime.now(UTC).isoformat()
    done = server.run("pgbench", args, cwd=logs, timeout=seg.seconds + 120)
    seg.end = datetime.now(UTC).isoformat()
    seg.pgbench_summary = [
        line for line in done.stdout.splitlines() if "tps" in line or "latency" in line
    ]


def summary(tx: Transactions, frame: pd.DataFrame, runs: list[PhaseRun]) -> str:
    lines = [
        tx.summary(),
        "",
        f"workload frame: {len(frame)} windows of {frame['window_s'].iat[0]:g} s",
    ]
    rec = tx.records
    lines.append("mean latency (ms) and share of transactions per phase:")
    for run in runs:
        inside = (rec["time"] >= pd.Timestamp(run.start)) & (rec["time"] <= pd.Timestamp(run.end))
        part = rec[inside]
        stats = part.groupby("type", observed=False)["latency"].agg(["count", "mean"])
        cells = [
            f"{name} {1e3 * row['mean']:.2f} ({row['count'] / max(len(part), 1):.0%})"
            for name, row in stats.iterrows()
        ]
        lines.append(f"  {run.name:>13}: {len(part):6d} tx  " + ", ".join(cells))
    lines.append(_fit_note(frame))
    return "\n".join(lines)


def _fit_note(frame: pd.DataFrame) -> str:
    """NAE of the Kelly model (LAR and OLS) when perfsleuth has it (issue 4, built in parallel)."""
    try:
        from perfsleuth.workload.kernels import fit_mix_model
    except ImportError:
        return "(perfsleuth.workload.kernels.fit_mix_model not available: no model fit)"
    from perfsleuth.frames import workload_types

    types = workload_types(frame)
    counts = frame[[f"n[{t}]" for t in types]].to_numpy()
    response = frame[[f"rt_sum[{t}]" for t in types]].to_numpy().sum(axis=1)
    busy = counts.sum(axis=1) > 0
    notes = []
    for method in ("lar", "ols"):
        fit = fit_mix_model(counts[busy], response[busy], method=method, names=types)
        coef = ", ".join(f"{t} {1e3 * c:.2f} ms" for t, c in zip(types, fit.coef, strict=True))
        notes.append(f"{method.upper()}: NAE {fit.nae:.3f}; per-type time {coef}")
    return "Kelly mix model on busy windows: " + " | ".join(notes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/pgbench-mix"), help="output folder")
    parser.add_argument("--duration", type=float, default=240.0, help="seconds of load in all")
    parser.add_argument("--window", default=None, help="window width (default 10s, 1m if > 10 min)")
    parser.add_argument("--scale", type=int, default=2, help="pgbench scale factor (>= 1)")
    parser.add_argument("--app-change", action="store_true", help="add a slower-update phase")
    parser.add_argument(
        "--segment", type=float, default=12.0, help="seconds per pgbench run within a phase"
    )
    parser.add_argument(
        "--jitter", type=float, default=0.5, help="lognormal sigma of weights per segment (0: none)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the jitter and of pgbench")
    parser.add_argument("--pg-parent", type=Path, default=None, help="folder for the server data")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.scale < 1 or args.duration < 10 or args.segment < 2 or args.jitter < 0:
        parser.error("need --scale >= 1, --duration >= 10, --segment >= 2, --jitter >= 0")
    window = args.window or ("10s" if args.duration <= 600 else "1m")
    started = time.monotonic()
    try:
        frame, _, _ = run_mix(
            args.out,
            duration=args.duration,
            window=window,
            scale=args.scale,
            app_change=args.app_change,
            pg_parent=args.pg_parent,
            segment=args.segment,
            jitter=args.jitter,
            seed=args.seed,
        )
    except PerfsleuthError as exc:
        print(f"pgbench_mix: {exc}", file=sys.stderr)
        return 2
    print((args.out / "summary.txt").read_text(), file=sys.stderr, end="")
    print(
        f"wrote {args.out / 'workload.parquet'} ({len(frame)} windows) and {args.out / 'logs'} "
        f"in {time.monotonic() - started:.0f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
