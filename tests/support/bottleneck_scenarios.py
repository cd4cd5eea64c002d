"""Real bottleneck scenarios on this machine: a workload in its own cgroup beside co-tenants
that keep the machine busy, recorded at 1 Hz by perfsleuth's own collector.

Each :class:`RealScenario` is a workload whose bottleneck is known by construction (and checked
against what fio and the device report), a co-tenant load (stress-ng or fio in a cgroup of its
own, on top of whatever else the shared machine runs), and the cgroup limits the workload runs
under:

* ``idle`` (a sleeping process) → none; direct I/O — ``seq-read``, ``seq-write``,
  ``rand-read``, ``rand-write`` (fio, O_DIRECT, 4 threads) → disk;
* ``cpu-bound`` (two busy threads) and ``cpu-starved`` (the same among 16 co-tenant threads),
  ``cpu-quota`` (the same held to a tenth of a core by the cgroup's CPU quota) → cpu;
* ``memcg-thrash`` (random reads through a memory map of a 1 GiB file in a 128 MiB cgroup: major
  faults) and ``cache-thrash`` (buffered random reads of the same file in the same cgroup:
  page-cache refaults) → memory;
* ``buffered-write`` (sequential writes through the page cache, written back every 8 MiB:
  the writer waits for write-back) → disk; ``cached-read`` (random reads of a file the page
  cache holds whole: copying is the work) → cpu;
* mixes: ``idle-io-neighbour`` (nothing, beside a co-tenant doing direct reads) → none;
  ``cpu-with-reads`` (a busy thread and a trickle of direct reads) → cpu; ``reads-with-cpu``
  (direct random reads at depth 8 and a thread at a fifth of a core) → disk.

:func:`record` runs one scenario and returns the collector's counter frame (one entity per
recording) with fio's own numbers; ``scripts/bottleneck_real.py`` records the corpus
(``tests/data/bottleneck/``) and runs the live experiment. Needs root (cgroups), fio and
stress-ng; every process and cgroup it starts is stopped and removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from perfsleuth.bottleneck.linux import add_to_cgroup, temporary_cgroup
from perfsleuth.bottleneck.workloads import Job, _layout, fio_path
from perfsleuth.collect import Collector
from perfsleuth.sources.procfs import block_device_of
from perfsleuth.store import Store
from tests.support.processes import die_with_parent

__all__ = [
    "KEPT",
    "RealScenario",
    "Recording",
    "record",
    "scenarios",
    "unavailable",
]

_KIB, _MIB, _GIB = 1024, 1 << 20, 1 << 30

KEPT = ("collector.interval_s", "cpu.", "vmstat.", "mem.", "psi.", "stat.procs", "workload.")
"""Collector counters a recording keeps (with the workload's disk): what the model reads."""


@dataclass(frozen=True)
class RealScenario:
    """A workload (a fio job or a command), its co-tenant and its cgroup's limits."""

    name: str
    expected: str
    """The bottleneck by construction: ``none``, ``cpu``, ``disk`` or ``memory``."""
    job: Job | None = None
    command: tuple[str, ...] = ()
    cotenant: tuple[str, ...] = ("stress-ng", "--cpu", "2", "-q")
    cotenant_grouped: bool = True
    """The co-tenant in a cgroup of its own (the kernel shares the CPUs between the two
    groups); else beside the recorder, each of its threads a peer of the workload's group."""
    memory_limit: int | None = None
    cpu_limit: float | None = None
    warmup: float = 4.0
    warm_cache: bool = False
    """Read the job's file once before it starts (its pages in the page cache)."""
    note: str = ""


def scenarios(directory: str = "/var/tmp") -> tuple[RealScenario, ...]:
    """Every scenario, with fio's files under ``directory``."""
    data = f"{directory}/perfsleuth-real.bin"
    written = f"{directory}/perfsleuth-real-written.bin"
    small = f"{directory}/perfsleuth-real-small.bin"
    stream = f"{directory}/perfsleuth-real-stream.bin"
    base = Job("read", file=data, file_size=_GIB, engine="psync")
    direct = replace(base, depth=4)
    burner = ("stress-ng", "--cpu", "2", "-q")
    thrash = replace(base, kind="randread", size=4 * _KIB, depth=2, direct=False)
    neighbour_reads = (
        "fio",
        "--name=neighbour",
        f"--filename={data}",
        f"--size={_GIB}",
        "--rw=randread",
        "--bs=64k",
        "--direct=1",
        "--ioengine=psync",
        "--numjobs=4",
        "--time_based",
        "--runtime=3600",
        "--output=/dev/null",
    )
    return (
        RealScenario("idle", "none", command=("sleep", "3600")),
        RealScenario("seq-read", "disk", replace(direct, size=_MIB)),
        RealScenario("seq-write", "disk", replace(direct, kind="write", size=_MIB, file=written)),
        RealScenario("rand-read", "disk", replace(direct, kind="randread", size=32 * _KIB)),
        RealScenario(
            "rand-write",
            "disk",
            replace(direct, kind="randwrite", size=32 * _KIB, file=written),
        ),
        RealScenario("cpu-bound", "cpu", command=burner),
        RealScenario(
            "cpu-starved",
            "cpu",
            command=burner,
            cotenant=("stress-ng", "--cpu", "16", "-q"),
            note="16 co-tenant threads: the workload's 2 get about 2/18 of the machine",
        ),
        RealScenario(
            "cpu-quota",
            "cpu",
            command=burner,
            cpu_limit=0.1,
            note="cgroup CPU quota of a tenth of a core",
        ),
        RealScenario(
            "memcg-thrash",
            "memory",
            replace(thrash, engine="mmap"),
            memory_limit=128 * _MIB,
            warmup=8.0,
            note="reads through a memory map: major faults",
        ),
        RealScenario(
            "cache-thrash",
            "memory",
            replace(thrash, random_map=False),
            memory_limit=128 * _MIB,
            warmup=8.0,
            note="buffered reads: page-cache refaults",
        ),
        RealScenario(
            "buffered-write",
            "disk",
            Job(
                "write",
                size=_MIB,
                depth=1,
                direct=False,
                file=stream,
                file_size=64 * _GIB,
                fsync_every=8,
            ),
            note="through the page cache, written back every 8 MiB (fsync): the writer waits "
            "for write-back",
        ),
        RealScenario(
            "cached-read",
            "cpu",
            Job(
                "randread",
                size=16 * _KIB,
                depth=2,
                direct=False,
                file=small,
                file_size=256 * _MIB,
                random_map=False,
                invalidate=False,
            ),
            warm_cache=True,
            note="the file is in the page cache: no device reads",
        ),
        RealScenario(
            "idle-io-neighbour",
            "none",
            command=("sleep", "3600"),
            cotenant=neighbour_reads,
            note="a co-tenant does direct random reads",
        ),
        RealScenario(
            "cpu-with-reads",
            "cpu",
            command=(
                "sh",
                "-c",
                "stress-ng --cpu 1 -q & exec fio --name=trickle "
                f"--filename={data} --size={_GIB} --rw=randread --bs=16k --direct=1 "
                "--ioengine=psync --rate_iops=50 --time_based --runtime=3600 --output=/dev/null",
            ),
            note="one busy thread and 50 direct reads per second",
        ),
        RealScenario(
            "reads-with-cpu",
            "disk",
            replace(direct, kind="randread", size=16 * _KIB, depth=8),
            command=("stress-ng", "--cpu", "1", "--cpu-load", "20", "-q"),
            note="depth-8 direct random reads beside a thread at a fifth of a core",
        ),
    )


@dataclass(frozen=True, eq=False)
class Recording:
    """One scenario run: the collector's counters and what fio reported."""

    scenario: RealScenario
    entity: str
    frame: pd.DataFrame
    fio: dict[str, float] = field(default_factory=dict)
    started: float = 0.0
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)


def unavailable() -> str | None:
    """Why real scenarios cannot run here (None when they can)."""
    if fio_path() is None or shutil.which("stress-ng") is None:
        return "fio and stress-ng are needed (scripts/install-system-deps.sh)"
    if os.geteuid() != 0:
        return "creating cgroups needs root"
    root = Path("/sys/fs/cgroup")
    if not ((root / "cgroup.controllers").exists() or (root / "memory").is_dir()):
        return "no cgroup memory controller"
    return None


def _start(
    command: Sequence[str],
    group_name: str | None,
    *,
    memory_limit: int | None = None,
    cpu_limit: float | None = None,
) -> tuple[Any, Any]:
    """Start ``command`` inside a fresh cgroup (it runs nothing before it is in there), or in
    the recorder's own when ``group_name`` is None."""
    shell = ["/bin/sh", "-c", 'read go && exec "$@"', "perfsleuth-real", *command]
    context: Any = (
        contextlib.nullcontext()
        if group_name is None
        else temporary_cgroup(group_name, memory_limit=memory_limit, cpu_limit=cpu_limit)
    )
    group = context.__enter__()
    try:
        process = subprocess.Popen(
            shell,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # one process group: stopped together
            preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
        )
        if group is not None:
            add_to_cgroup(group, process.pid)
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    except BaseException:
        context.__exit__(None, None, None)
        raise
    return process, context


def _stop(process: subprocess.Popen[str], context: Any) -> str:
    """Stop ``process`` and everything it started; remove its cgroup; its output."""
    out = ""
    try:
        if process.poll() is None:
            os.killpg(process.pid, 15)
        try:
            out, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            out, _ = process.communicate()
    finally:
        context.__exit__(None, None, None)
    return out or ""


def _prepare(job: Job) -> None:
    if job.direct or job.kind.startswith("rand") or job.engine == "mmap":
        _layout(job)  # reads need data; direct writes, allocated blocks
    else:
        Path(job.file).unlink(missing_ok=True)  # a buffered stream starts an empty file


def _warm(path: str) -> None:
    with open(path, "rb") as handle:
        while handle.read(1 << 20):
            pass


def _fio_numbers(text: str, job: Job) -> dict[str, float]:
    start = text.find("{")
    if start < 0:
        return {}
    try:
        entry = json.loads(text[start:])["jobs"][0]
    except (ValueError, KeyError, IndexError):
        return {}
    side = entry["read"] if "read" in job.kind else entry["write"]
    return {
        "iops": float(side["iops"]),
        "bw_bytes": float(side["bw_bytes"]),
        "usr_cores": float(entry["usr_cpu"]) / 100 * job.threads_used,
        "sys_cores": float(entry["sys_cpu"]) / 100 * job.threads_used,
        "majf": float(entry.get("majf", 0.0)),
    }


def record(
    scenario: RealScenario,
    *,
    entity: str,
    seconds: float = 24.0,
    interval: float = 1.0,
    tag: str = "",
) -> Recording:
    """Run ``scenario`` with its co-tenant; sample ``seconds`` after the warm-up at
    ``interval`` with :class:`perfsleuth.collect.Collector` watching the workload's cgroup."""
    job = scenario.job
    if job is not None:
        _prepare(job)
        if scenario.warm_cache:
            _warm(job.file)
    fio = fio_path()
    total = scenario.warmup + seconds + 5.0
    if job is not None:
        assert fio is not None
        command: list[str] = job.command(fio, total)
        if scenario.command:  # a second process beside the fio job, in the same cgroup
            command = ["sh", "-c", '"$@" & exec ' + " ".join(scenario.command), "sh", *command]
    else:
        command = list(scenario.command)
    group = f"perfsleuth-real-{tag or os.getpid()}"
    device = block_device_of(Path(job.file).parent if job is not None else "/var/tmp")
    neighbour, neighbour_cg = _start(
        scenario.cotenant, f"{group}-cotenant" if scenario.cotenant_grouped else None
    )
    worker = context = None
    try:
        time.sleep(1.0)
        worker, context = _start(
            command,
            f"{group}-workload",
            memory_limit=scenario.memory_limit,
            cpu_limit=scenario.cpu_limit,
        )
        time.sleep(scenario.warmup)
        load = os.getloadavg()
        started = time.time()
        frame = _collect(f"{group}-workload", entity, device, seconds, interval)
    finally:
        out = _stop(worker, context) if worker is not None else ""
        _stop(neighbour, neighbour_cg)
        if job is not None and not job.direct and job.kind == "write":
            Path(job.file).unlink(missing_ok=True)  # tens of GB of a stream
    numbers = {} if job is None else _fio_numbers(out, job)
    return Recording(scenario, entity, frame, numbers, started, load)


def _collect(group: str, entity: str, device: str, seconds: float, interval: float) -> pd.DataFrame:
    with (
        tempfile.TemporaryDirectory(prefix="perfsleuth-real-") as scratch,
        Store(Path(scratch) / "collect.duckdb") as store,
    ):
        collector = Collector(store, node=entity, batch=1000, cgroup=group, device=device)
        collector.run(interval, threading.Event(), seconds=seconds)
        frame = store.read_frame("counter")
    names = frame["counter"].astype(str)
    keep = names.str.startswith(KEPT) | names.str.startswith(f"disk.{device}.")
    out = frame[keep].reset_index(drop=True)
    return out


def record_all(
    chosen: Sequence[RealScenario],
    repetitions: Sequence[int],
    *,
    seconds: float = 24.0,
    progress: Callable[[Recording], None] | None = None,
) -> list[Recording]:
    """Every scenario of ``chosen`` once per repetition (interleaved: all of one repetition,
    then the next), entities ``<scenario>#<repetition>``."""
    out = []
    for repetition in repetitions:
        for scenario in chosen:
            rec = record(
                scenario,
                entity=f"{scenario.name}#{repetition}",
                seconds=seconds,
                tag=f"{os.getpid()}",
            )
            out.append(rec)
            if progress is not None:
                progress(rec)
    return out
