"""Collector overhead at a 1 s interval with ~300 processes present.

Spawns idle processes (``sleep``) until the machine has about ``--processes`` of them, starts
``perfsleuth collect`` as its own process, lets it warm up, then reads its CPU time from
``/proc/<pid>/stat`` over a steady window and prints it as a percentage of one core.

    .venv/bin/python benchmarks/collector.py [--processes 300] [--seconds 30]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    rest = stat[stat.rindex(")") + 2 :].split()
    return (int(rest[11]) + int(rest[12])) / TICKS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--processes", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--batch", type=int, default=10)
    args = parser.parse_args()
    present = sum(1 for p in os.listdir("/proc") if p.isdigit())
    idle = [subprocess.Popen(["sleep", "3600"]) for _ in range(max(0, args.processes - present))]
    folder = Path(tempfile.mkdtemp(prefix="perfsleuth-collect-"))
    collector = subprocess.Popen(
        [sys.executable, "-c", "from perfsleuth.cli import main; main()", "collect",
         "--store", str(folder / "bench.duckdb"), "--interval", "1s",
         "--batch", str(args.batch)],
    )  # fmt: skip
    try:
        time.sleep(args.warmup)
        processes = sum(1 for p in os.listdir("/proc") if p.isdigit())
        c0, t0 = cpu_seconds(collector.pid), time.monotonic()
        time.sleep(args.seconds)
        c1, t1 = cpu_seconds(collector.pid), time.monotonic()
        share = (c1 - c0) / (t1 - t0)
        print(
            f"collector at 1 s, batch {args.batch}, {processes} processes present: "
            f"{100 * share:.2f}% of one core over {t1 - t0:.0f} s "
            f"({1000 * (c1 - c0) / (t1 - t0):.1f} ms CPU per sample); target <= 3%"
        )
    finally:
        collector.terminate()
        collector.wait(timeout=30)
        for proc in idle:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
