#!/usr/bin/env python3
"""One cause, several families, for real: record the incident scenario of issue 21.

A throw-away PostgreSQL (tests/support/postgres.py) on 127.0.0.1 serves three pgbench scripts
(``lookup``, ``update``, ``report``) while perfsleuth's own collector samples the machine
(``perfsleuth collect --node db-1``: processes and OS counters, one sample a second). pgbench
runs a steady rate in short segments whose mix wanders (as real traffic does, which keeps the
per-type costs identifiable); after ``--before`` seconds a **release** deploys a heavier
``report`` (its query runs ``--factor`` times) at the same rate, and the database's CPU
saturates. What a user would then run is ``perfsleuth analyze`` on what was recorded.

What it writes to ``--out`` (the recorded run, in the formats users give perfsleuth):

* ``aggregated.csv``: per 5-second window and type, ``time`` (window start, Unix s),
  ``type``, ``count``, ``rt_sum`` (s), from pgbench's ``-l`` logs;
* ``latency.csv``: the mean response time each second (a metric frame: ``bench``/``latency``);
* ``counters.parquet``, ``processes.parquet``: the collector's counter and process frames. This
  server's processes (the postmaster and every backend, by pid) are named ``bench-db``, so the
  database's own CPU (``cpu_of = ["bench-db"]``) leaves out other PostgreSQL servers on a
  shared machine; processes that never used 1% of a core are left out (the file stays small);
* ``perfsleuth.toml``: the config that analyses them (``[[topology]]``: ``bench`` on ``db-1``);
* ``truth.json``: the release time, the changed type, rates, load averages.

Usage::

    .venv/bin/python scripts/incident_scenario.py --out build/incident      # about 6 minutes
    .venv/bin/perfsleuth analyze build/incident/perfsleuth.toml

``tests/data/incidents/pgbench_release/`` is one such recording (its README says when and on
what); ``tests/test_incidents_real.py`` checks the incident perfsleuth tells from it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support

from tests.support.postgres import temporary_postgres  # noqa: E402
from tests.support.processes import die_with_parent  # noqa: E402

from perfsleuth.sources.pgbench import read_pgbench  # noqa: E402
from perfsleuth.store import Store  # noqa: E402

log = logging.getLogger("incident_scenario")

TYPES = ("lookup", "update", "report")
WEIGHTS = {"lookup": 50, "update": 30, "report": 20}
SCRIPTS = {
    "lookup": "\\set aid random(1, 100000 * :scale)\n"
    "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    "update": "\\set aid random(1, 100000 * :scale)\n"
    "\\set delta random(-5000, 5000)\n"
    "BEGIN;\n"
    "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n"
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)\n"
    "  VALUES (1, 1, :aid, :delta, CURRENT_TIMESTAMP);\n"
    "END;\n",
    "report": "\\set aid random(1, 100000 * :scale - 100000)\n"
    "SELECT count(*), sum(abalance) FROM pgbench_accounts\n"
    "  WHERE aid BETWEEN :aid AND :aid + 100000;\n",
}
CONFIG = """\
# perfsleuth analyze on the recorded incident scenario (scripts/incident_scenario.py)
[store]
path = "incident.duckdb"

[output]
dir = "report"

[analyze]
title = "pgbench release on db-1"

[[sources]]
kind = "aggregated"
path = "aggregated.csv"
window = "5s"
cpu = "processes.parquet"
cpu_of = ["bench-db"]

[[sources]]
kind = "file"
path = "latency.csv"

[[sources]]
kind = "file"
path = "counters.parquet"
contract = "counter"

[[sources]]
kind = "file"
path = "processes.parquet"
contract = "process"

[detectors.workload]
entity = "bench"

[detectors.segments]
entity = "bench"

[[topology]]
service = "bench"
nodes = ["db-1"]
"""


def _server_pids(data_dir: Path, found: set[int], stop: threading.Event) -> None:
    """Collect the pids of one PostgreSQL server: its postmaster and every child it forks."""
    postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
    found.add(postmaster)
    while not stop.wait(0.2):
        for task in Path(f"/proc/{postmaster}/task").glob("*/children"):
            try:
                found.update(int(pid) for pid in task.read_text().split())
            except OSError:
                continue


def _unix(times: pd.Series) -> pd.Series:
    """UTC times as Unix seconds (whatever resolution pandas keeps them in)."""
    return (times - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1)


def _export(frame: pd.DataFrame, path: Path) -> None:
    """A frame as Parquet (zstd: a few hundred kB for six minutes of a busy machine)."""
    out = pd.DataFrame(frame)
    out.attrs = {}  # the frame's coverage is not Parquet metadata
    out.to_parquet(path, index=False, compression="zstd")


def write_tables(windows: pd.DataFrame, seconds: pd.DataFrame, out: Path) -> None:
    """``aggregated.csv`` from the 5-second workload frame, ``latency.csv`` (the mean response
    time each second, as a latency exporter scraped every second would give) from the 1-second
    one."""
    rows = [
        pd.DataFrame(
            {
                "time": _unix(windows["time"]).round().astype(int),
                "type": name,
                "count": windows[f"n[{name}]"].astype(int),
                "rt_sum": windows[f"rt_sum[{name}]"].round(6),
            }
        )
        for name in TYPES
    ]
    pd.concat(rows).sort_values(["time", "type"]).to_csv(out / "aggregated.csv", index=False)
    n = sum(seconds[f"n[{t}]"] for t in TYPES)
    rt = sum(seconds[f"rt_sum[{t}]"] for t in TYPES)
    latency = pd.DataFrame(
        {"time": _unix(seconds["time"]).round().astype(int), "entity": "bench", "metric": "latency"}
    )
    latency["value"] = (rt / n.where(n > 0)).round(6)
    latency["unit"] = "s"
    latency.dropna().to_csv(out / "latency.csv", index=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=float, default=60.0, help="transactions per second")
    parser.add_argument("--before", type=int, default=180, help="seconds before the release")
    parser.add_argument("--after", type=int, default=180, help="seconds after it")
    parser.add_argument("--segment", type=int, default=15, help="seconds per pgbench run")
    parser.add_argument("--factor", type=int, default=6, help="the release's report: × work")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "logs"
    logs.mkdir(exist_ok=True)
    scripts = out / "scripts"
    scripts.mkdir(exist_ok=True)
    for name, body in SCRIPTS.items():
        (scripts / f"{name}.sql").write_text(body)
    heavy = "\n".join([SCRIPTS["report"]] * args.factor)
    (scripts / "report_release.sql").write_text(heavy)

    rng = np.random.default_rng(args.seed)
    store = out / "collect.duckdb"
    perfsleuth = str(Path(sys.executable).parent / "perfsleuth")
    collector = subprocess.Popen(
        [perfsleuth, "collect", "--store", str(store), "--node", "db-1"],
        preexec_fn=die_with_parent,  # noqa: PLW1509 - no threads yet; the child must not outlive us
    )
    truth: dict[str, object] = {"rate": args.rate, "factor": args.factor, "seed": args.seed}
    ours: set[int] = set()
    stop = threading.Event()
    try:
        with temporary_postgres(settings={"autovacuum": "off"}) as server:
            watcher = threading.Thread(target=_server_pids, args=(server.data_dir, ours, stop))
            watcher.start()
            server.run("pgbench", ["-i", "-q", "-s", "5"], timeout=600)
            time.sleep(5)  # a quiet start for the collector's first samples
            clock = 0
            k = 0
            while clock < args.before + args.after:
                released = clock >= args.before
                if released and "release" not in truth:
                    truth["release"] = datetime.now(UTC).isoformat()
                    log.info("release: report is now %d× heavier", args.factor)
                weights = {
                    t: max(1, round(w * float(np.exp(0.5 * rng.standard_normal()))))
                    for t, w in WEIGHTS.items()
                }
                run_args = [
                    "-n",
                    "--scale=5",  # :scale in the scripts
                    "--client=8",
                    "--jobs=2",
                    f"--time={args.segment}",
                    f"--rate={args.rate:g}",
                    f"--random-seed={int(rng.integers(1, 2**31))}",
                    "--log",
                    f"--log-prefix=seg{k:03d}",
                ]
                for name in TYPES:
                    file = "report_release" if released and name == "report" else name
                    run_args.append(f"--file={scripts / file}.sql@{weights[name]}")
                server.run("pgbench", run_args, cwd=logs, timeout=args.segment + 300)
                clock += args.segment
                k += 1
            truth["end"] = datetime.now(UTC).isoformat()
            truth["load_average"] = os.getloadavg()
            stop.set()
            watcher.join()
    finally:
        stop.set()
        collector.send_signal(signal.SIGTERM)
        collector.wait(timeout=60)

    tx = read_pgbench(logs, scripts=list(TYPES))
    write_tables(tx.workload("5s"), tx.workload("1s"), out)
    with Store(store, read_only=True) as db:
        _export(db.read_frame("counter"), out / "counters.parquet")
        processes = db.read_frame("process")
    processes.loc[processes["pid"].isin(ours), "name"] = "bench-db"
    busy = processes.groupby(["pid", "name"])["cpu"].transform("max") >= 0.01
    _export(processes[busy | (processes["name"] == "bench-db")], out / "processes.parquet")
    (out / "perfsleuth.toml").write_text(CONFIG)
    truth["changed"] = "report"
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    log.info("recorded in %s: %s", out, ", ".join(p.name for p in sorted(out.iterdir())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
