#!/usr/bin/env python3
"""Does the designed application change show in the database's own CPU? A controlled probe.

Starts the experiment's PostgreSQL (``scripts/cherkasova_experiment.py``: same settings, scale,
scripts drawn from ``--seed``) on 127.0.0.1 and runs each transaction type **alone** at a fixed
rate for ``--seconds``, first its plain script, then its heavier one (the application change),
``--repeats`` times each, alternating. For each run: transactions processed, the database's CPU
seconds (postmaster, backends, reaped backends: ``/proc``) and pgbench's, hence CPU
milliseconds per transaction. ``--cotenants N`` keeps ``N`` ``stress-ng --cpu`` workers at
100% beside it (nice 0, as the database), so the host is near 100% busy.

Prints per type: ms of database CPU per transaction, plain and heavy, their ratio, and the
same for pgbench. Run it under ``machine record``: its numbers depend on the load.

Usage::

    .venv/bin/python benchmarks/segments_cost.py --seed 201 --cotenants 0
    .venv/bin/python benchmarks/segments_cost.py --seed 201 --cotenants 2 --rate 60
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import cherkasova_experiment as experiment  # noqa: E402
from tests.support.postgres import PostgresServer, temporary_postgres  # noqa: E402


def run_one(
    server: PostgresServer, script: Path, rate: float, seconds: int, postmaster: int
) -> tuple[int, float, float]:
    """(processed, database CPU s, pgbench CPU s) of one pgbench run of ``script`` alone."""
    db_before = experiment._tree_seconds(postmaster)
    args = [
        str(server.tool("pgbench")),
        "-n",
        "--client=8",
        "--jobs=1",
        f"--time={seconds}",
        f"--rate={rate:g}",
        f"--file={script}",
    ]
    sink = server.root / "probe" / "pgbench.out"
    with sink.open("wb") as f:
        process = subprocess.Popen(args, env=server.env(), stdout=f, stderr=subprocess.STDOUT)
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    out = sink.read_bytes()
    time.sleep(0.5)  # the backends exit and are reaped into the postmaster's cutime
    db = experiment._tree_seconds(postmaster) - db_before
    processed = 0
    for line in out.decode(errors="replace").splitlines():
        if "processed:" in line:
            processed = int(line.split(":")[1].split("/")[0])
    return processed, db, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=201)
    parser.add_argument("--rate", type=float, default=60.0)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cotenants", type=int, default=0)
    parser.add_argument("--types", default=",".join(experiment.TYPES))
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    scripts = experiment.scripts(rng)
    stress = None
    print(f"load {os.getloadavg()}", flush=True)
    with temporary_postgres(settings=experiment.SETTINGS) as server:
        server.run("pgbench", ["-i", "-s", "4", "-q"], timeout=900)
        server.psql("VACUUM ANALYZE")
        postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        folder = server.root / "probe"
        folder.mkdir()
        if args.cotenants:
            stress = subprocess.Popen(
                ["stress-ng", "--cpu", str(args.cotenants), "--quiet"],
                start_new_session=True,
                stdin=subprocess.DEVNULL,
            )
            time.sleep(1.0)
        try:
            print(f"{'type':4} {'kind':5} {'tx':>6} {'db ms/tx':>9} {'pgb ms/tx':>9}", flush=True)
            summary = {}
            for t in args.types.split(","):
                plain, heavy = folder / f"{t}.sql", folder / f"{t}_heavy.sql"
                plain.write_text(scripts[t])
                heavy.write_text(experiment.heavier(scripts[t]))
                for kind, path in (("plain", plain), ("heavy", heavy)) * args.repeats:
                    # a short and a long run: their difference is the transactions' own
                    # cost, without the 8 connections' start and end
                    short = run_one(server, path, args.rate, 2, postmaster)
                    n, db, pg = run_one(server, path, args.rate, 2 + args.seconds, postmaster)
                    n, db, pg = n - short[0], db - short[1], pg - short[2]
                    summary.setdefault((t, kind), []).append((n, db, pg))
                    print(
                        f"{t:4} {kind:5} {n:6d} {1e3 * db / max(n, 1):9.3f} "
                        f"{1e3 * pg / max(n, 1):9.3f}  (connections etc.: {short[1]:.3f} s)",
                        flush=True,
                    )
            print("\ntype  db plain  db heavy  ratio   tps plain/heavy")
            for t in args.types.split(","):
                p = np.array(summary[(t, "plain")])
                h = np.array(summary[(t, "heavy")])
                cp, ch = p[:, 1].sum() / p[:, 0].sum(), h[:, 1].sum() / h[:, 0].sum()
                print(
                    f"{t:4} {1e3 * cp:8.3f} {1e3 * ch:9.3f} {ch / cp:6.2f}   "
                    f"{p[:, 0].mean() / args.seconds:.0f}/{h[:, 0].mean() / args.seconds:.0f}"
                )
        finally:
            if stress is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(stress.pid, signal.SIGTERM)
                stress.wait()
    print(f"load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
