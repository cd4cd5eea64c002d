"""Fleet scan benchmark: 2,000 nodes x 24 h x 200 processes (9.6 M rows), seeded.

Generates hourly process samples (vectorised; a quarter of the nodes carry a CPU loop, a
leak or a saw-tooth), writes them as Parquet partitioned by node, then times
``perfsleuth.fleet`` on one machine (local process pool, read included) and on a 2-worker Dask
LocalCluster, and checks both give the same findings. With ``--reference SRC`` it also scans
the same files with another version of perfsleuth (its ``src`` folder, e.g. the last commit's:
``git archive HEAD src | tar -x -C /tmp/before``) in its own process, times it the same way
and compares the findings (kind, node, process, metric, start, end: ramps and saw-tooths are
now about one process, ``name[pid]``, where they were about a name). Wall times depend on
what else the machine runs (the load average is printed beside each); the CPU milliseconds
per node, measured the same way for both versions, much less so.

    .venv/bin/python benchmarks/fleet.py [--nodes 2000] [--procs 200] [--workers 2]
        [--reference /tmp/before/src]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from perfsleuth.fleet import plan, scan_fleet, scan_task
from perfsleuth.processes.rules import ProcessRules


def node_table(i: int, seed: int, hours: int, procs: int) -> pa.Table:
    rng = np.random.default_rng([seed, i])
    start = np.datetime64("2024-03-04T00:00:00", "us")
    times = start + np.arange(hours) * np.timedelta64(3600, "s")
    ncpu = float(rng.choice([2, 4, 8]))
    cpu = rng.gamma(0.5, 0.02, (hours, procs))
    rss = rng.uniform(1e7, 5e8, procs)[None, :] * (1 + rng.normal(0, 0.01, (hours, procs)))
    kind = i % 8
    if kind == 1:  # a CPU loop
        cpu[:, 0] = rng.normal(1.0, 0.01, hours)
    elif kind == 2:  # a leak
        rss[:, 1] *= np.linspace(1.0, 3.0, hours)
    elif kind == 3:  # a saw-tooth: leak restarted every 6 hours
        rss[:, 2] = 1e8 + 5e7 * (np.arange(hours) % 6)
    machine = np.minimum(cpu.sum(axis=1) * 1.03, ncpu)
    names = np.array([f"proc{j:03d}" for j in range(procs)])
    return pa.table(
        {
            "time": pa.array(np.repeat(times, procs), pa.timestamp("us", tz="UTC")),
            "pid": np.tile(np.arange(1000, 1000 + procs, dtype=np.int64), hours),
            "name": np.tile(names, hours),
            "user": np.full(hours * procs, "svc"),
            "cpu": np.clip(cpu, 0, None).ravel(),
            "rss_bytes": rss.ravel(),
            "machine_cpu": np.repeat(machine, procs),
            "ncpu": np.full(hours * procs, ncpu),
            "os": np.full(hours * procs, "Linux"),
        }
    )


def _warm() -> str | None:
    importlib.import_module("perfsleuth.fleet.runner")
    return os.environ.get("MALLOC_TRIM_THRESHOLD_")


def generate(root: Path, nodes: int, hours: int, procs: int, seed: int) -> int:
    rows = 0
    for i in range(nodes):
        table = node_table(i, seed, hours, procs)
        folder = root / f"node=node{i:04d}"
        folder.mkdir(parents=True)
        pq.write_table(table, folder / "part-0.parquet", compression="snappy")
        rows += table.num_rows
    return rows


# run by the reference version in its own process: the same plan and pool, findings as JSON
_REFERENCE = """
import json, sys, time
from pathlib import Path
from perfsleuth.fleet import plan, scan_fleet, scan_task
root, workers, nodes = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
sample = plan(root, tasks=nodes // 50 or 1)[:2]
c0 = time.process_time()
for task in sample:
    scan_task(task)
cpu_ms = 1000 * (time.process_time() - c0) / sum(len(task.files) for task in sample)
t0 = time.perf_counter()
found = scan_fleet(plan(root, tasks=workers * 16), workers=workers)
seconds = time.perf_counter() - t0
keys = [_key(f) for f in found]
print(json.dumps({"seconds": seconds, "cpu_ms": cpu_ms, "findings": keys}))
"""


def _key(finding: object) -> list[str]:
    """What a finding is about and when, comparable across versions."""
    f = finding
    evidence = f.evidence_dict()  # type: ignore[attr-defined]
    node = str(evidence.get("node", ""))
    process = str(evidence.get("process", evidence.get("group", "")))
    return [
        f.kind.value,  # type: ignore[attr-defined]
        node,
        process,
        f.metric,  # type: ignore[attr-defined]
        f.start.isoformat(),  # type: ignore[attr-defined]
        f.end.isoformat(),  # type: ignore[attr-defined]
    ]


def reference(
    source: Path, root: Path, workers: int, nodes: int
) -> tuple[float, float, list[list[str]]]:
    """Scan ``root`` with the perfsleuth of ``source`` (seconds, CPU ms per node measured as
    this version's is, finding keys)."""
    import inspect

    program = inspect.getsource(_key) + _REFERENCE
    env = {**os.environ, "PYTHONPATH": str(source)}
    out = subprocess.run(
        [sys.executable, "-c", program, str(root), str(workers), str(nodes)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    got = json.loads(out.splitlines()[-1])
    return float(got["seconds"]), float(got["cpu_ms"]), got["findings"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--procs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--reference", type=Path, help="another version's src folder")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="perfsleuth-fleet-"))
    try:
        t0 = time.perf_counter()
        rows = generate(root, args.nodes, args.hours, args.procs, args.seed)
        print(f"generated {rows:,} rows ({args.nodes} nodes) in {time.perf_counter() - t0:.1f} s")

        # per-node cost: CPU seconds of the whole per-task work (read, validation, checks) in
        # this process, over the first tasks; independent of how busy the machine is
        sample = plan(root, tasks=args.nodes // 50 or 1)[:2]
        sample_nodes = sum(len(task.files) for task in sample)
        c0 = time.process_time()
        for task in sample:
            scan_task(task)
        cpu_ms = 1000 * (time.process_time() - c0) / sample_nodes
        print(
            f"per-node cost: {cpu_ms:.2f} ms CPU per node (one process, {sample_nodes} nodes, "
            f"read included) -> {cpu_ms * args.nodes / 1000:.1f} CPU-s for the fleet; "
            f"load average before the scan: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
        )

        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        tasks = plan(root, tasks=args.workers * 16)
        local = scan_fleet(tasks, workers=args.workers)
        local_s = time.perf_counter() - t0
        print(
            f"local pool ({args.workers} processes), read included: {local_s:.2f} s, "
            f"{1000 * local_s / args.nodes:.2f} ms per node wall, "
            f"{1000 * local_s * args.workers / args.nodes:.2f} ms per node per process; "
            f"{len(local)} findings; load average before: {load:.2f}"
        )
        if args.reference is not None:
            load = os.getloadavg()[0]
            before_s, before_ms, before = reference(args.reference, root, args.workers, args.nodes)
            now = sorted(map(_key, local))
            print(
                f"reference {args.reference}: {before_s:.2f} s ({len(before)} findings; load "
                f"average before: {load:.2f}): {before_s / local_s:.1f}x the time; "
                f"{before_ms:.2f} ms CPU per node: {before_ms / cpu_ms:.1f}x the CPU; same "
                f"findings: {now == sorted(before)}"
            )
            if now != sorted(before):
                missing = [k for k in sorted(before) if k not in now][:5]
                extra = [k for k in now if k not in before][:5]
                print(f"  only in the reference: {missing}\n  only now: {extra}")
                # the reference classifies saturation without hysteresis: so does this scan
                sharp = ProcessRules.model_validate({"settings": {"saturation_margin": 0.0}})
                plain = scan_fleet(tasks, rules=sharp, workers=args.workers)
                print(
                    "  without the saturation hysteresis (saturation_margin = 0): same "
                    f"findings as the reference: {sorted(map(_key, plain)) == sorted(before)}"
                )
        if not args.no_dask:
            import dask
            from distributed import Client, LocalCluster

            # distributed's nannies give workers MALLOC_TRIM_THRESHOLD_=64 KiB (to hand memory
            # back to the OS); with a scan's many short-lived arrays that nearly doubles the CPU
            # time per task (measured here: 0.64 s vs 0.36 s for the same 60 nodes), so the
            # workers keep glibc's default, as the local pool does
            environ = {
                key: value
                for key, value in dask.config.get("distributed.nanny.pre-spawn-environ").items()
                if key != "MALLOC_TRIM_THRESHOLD_"
            }
            with (
                dask.config.set({"distributed.nanny.pre-spawn-environ": environ}),
                LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=args.workers,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                ) as cluster,
                Client(cluster) as client,  # type: ignore[no-untyped-call]
            ):
                # workers start cold: import the runner (pandas, pyarrow) before the clock
                # starts, as the forked local pool inherits it
                trim = client.run(_warm)
                assert not any(trim.values()), f"MALLOC_TRIM_THRESHOLD_ still set: {trim}"
                load = os.getloadavg()[0]
                t0 = time.perf_counter()
                remote = scan_fleet(plan(root, tasks=args.workers * 16), client=client)
                dask_s = time.perf_counter() - t0
            print(
                f"dask LocalCluster ({args.workers} workers), read included: {dask_s:.2f} s, "
                f"{1000 * dask_s / args.nodes:.2f} ms per node; {len(remote)} findings; "
                f"identical to local: {remote == local}; load average before: {load:.2f}"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
