"""Real synthetic workloads for calibration, verification and the real scenarios.

A :class:`Job` describes one fio job (request kind, size, depth, direct or buffered, threads,
file, an optional CPU burner) and :func:`run_job` runs it — in its own cgroup when asked, while
:class:`~perfsleuth.bottleneck.linux.LinuxCounters` samples the counters — and returns fio's
own numbers with the counter frame. Without fio, :func:`builtin_io` is a small O_DIRECT
generator (threads doing ``pread``/``pwrite`` on aligned buffers), slower than fio but enough
to calibrate a device that is not very fast.
"""

from __future__ import annotations

import json
import logging
import math
import mmap
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perfsleuth.bottleneck.linux import LinuxCounters, add_to_cgroup, temporary_cgroup
from perfsleuth.errors import SourceError
from perfsleuth.sources.procfs import Cgroup

__all__ = ["Job", "JobResult", "builtin_io", "fio_path", "fio_version", "run_job"]

log = logging.getLogger(__name__)


_SYNCHRONOUS = ("psync", "sync", "mmap")


def fio_path() -> str | None:
    return shutil.which("fio")


def fio_version() -> str:
    fio = fio_path()
    if fio is None:
        return ""
    out = subprocess.run([fio, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip()


@dataclass(frozen=True)
class Job:
    """One synthetic workload.

    ``kind`` is fio's ``rw`` (read, write, randread, randwrite) or ``cpu`` (a CPU burner:
    ``threads`` busy loops at ``cpu_load`` percent); ``depth`` is requests in flight: with
    ``engine="libaio"`` one thread's queue depth, with a synchronous engine (``psync``, or
    ``mmap``: the file mapped and copied from, so reads are page faults) the number of
    threads. ``rate_iops`` caps the rate (0 = as fast as it goes). ``extent`` limits random
    offsets to the first bytes of the file; ``random_map=False`` lets random requests repeat
    (needed for cache re-use), as real workloads do. ``invalidate=False`` keeps what the page
    cache holds of the file when the job starts (cached reads).
    """

    kind: str
    size: int = 4096
    depth: int = 1
    direct: bool = True
    engine: str = "psync"
    file: str = "/var/tmp/perfsleuth-bottleneck.bin"
    file_size: int = 1 << 30
    extent: int | None = None
    rate_iops: int = 0
    cpu_load: int = 100
    threads: int = 1
    random_map: bool = True
    fsync_end: bool = False
    invalidate: bool = True
    fsync_every: int = 0
    """Buffered writes: fsync after this many requests (0: never)."""

    @property
    def threads_used(self) -> int:
        """fio threads the job runs (synchronous engines: one per request in flight)."""
        if self.kind == "cpu":
            return self.threads
        return self.depth if self.engine in _SYNCHRONOUS else 1

    def command(self, fio: str, seconds: float) -> list[str]:
        args = [
            fio,
            "--name=perfsleuth",
            "--output-format=json",
            "--thread",
            f"--runtime={seconds:g}",
            "--time_based",
            "--group_reporting",
        ]
        if self.kind == "cpu":
            return [
                *args,
                "--ioengine=cpuio",
                f"--cpuload={self.cpu_load}",
                f"--numjobs={self.threads}",
                "--cpumode=noop",
            ]
        args += [
            f"--filename={self.file}",
            f"--size={self.file_size}",
            f"--rw={self.kind}",
            f"--bs={self.size}",
            f"--direct={int(self.direct)}",
            f"--ioengine={self.engine}",
            f"--invalidate={int(self.invalidate)}",
        ]
        if self.engine in _SYNCHRONOUS:
            args.append(f"--numjobs={self.depth}")
        else:
            args += [f"--iodepth={self.depth}", "--numjobs=1"]
        if self.extent is not None:  # only the first `extent` bytes of the file
            args[args.index(f"--size={self.file_size}")] = f"--size={self.extent}"
        if not self.random_map:
            args.append("--norandommap")
        if self.rate_iops > 0:
            args.append(f"--rate_iops={max(1, self.rate_iops // max(1, self.depth))}")
        if self.fsync_end:
            args.append("--end_fsync=1")
        if self.fsync_every > 0:
            args.append(f"--fsync={self.fsync_every}")
        return args


@dataclass(frozen=True)
class JobResult:
    """What fio reported (rates per second over its run, CPU in cores) and the counters."""

    job: Job
    iops: float
    bw: float
    usr: float
    sys: float
    seconds: float
    frame: pd.DataFrame
    fio: dict[str, Any] = field(repr=False, default_factory=dict)

    def counters(self) -> dict[str, float]:
        """Mean of each counter over the sampled interval."""
        if self.frame.empty:
            return {}
        means = self.frame.groupby("counter")["value"].mean()
        return {str(k): float(v) for k, v in means.items()}


def _parse_fio(text: str, job: Job) -> tuple[float, float, float, float, float, dict[str, Any]]:
    start = text.find("{")
    if start < 0:
        raise SourceError(f"fio printed no JSON: {text[:300]!r}")
    data = json.loads(text[start:])
    entry = data["jobs"][0]
    threads = job.threads_used
    # with group_reporting, fio sums run times over threads and averages CPU percentages
    seconds = float(entry.get("job_runtime", 0)) / 1000.0 / threads
    usr = float(entry.get("usr_cpu", 0.0)) / 100.0
    sys_ = float(entry.get("sys_cpu", 0.0)) / 100.0
    usr *= threads
    sys_ *= threads
    if job.kind == "cpu":
        return 0.0, 0.0, usr, sys_, seconds, data
    side = entry["read"] if "read" in job.kind else entry["write"]
    return float(side["iops"]), float(side["bw_bytes"]), usr, sys_, seconds, data


def run_job(
    job: Job,
    *,
    seconds: float = 5.0,
    warmup: float = 1.0,
    interval: float = 1.0,
    cgroup: str | None = None,
    memory_limit: int | None = None,
    device: str | None = None,
    prepare: bool = True,
) -> JobResult:
    """Run ``job`` for ``warmup + seconds`` (in cgroup ``cgroup`` if given), sampling counters
    for the last ``seconds``. The file is laid out first (not measured)."""
    fio = fio_path()
    if fio is None:
        raise SourceError("fio is not installed (scripts/install-system-deps.sh installs it)")
    if prepare and job.kind != "cpu":
        _layout(job)
    command = job.command(fio, warmup + seconds)
    if cgroup is None:
        return _run(command, job, seconds, warmup, interval, None, device)
    with temporary_cgroup(cgroup, memory_limit=memory_limit) as group:
        return _run(command, job, seconds, warmup, interval, group, device)


def _layout(job: Job) -> None:
    path = Path(job.file)
    want = job.file_size
    if path.exists() and path.stat().st_size >= want:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    block = os.urandom(1 << 20)  # incompressible, so a thin-provisioned disk really stores it
    with open(path, "wb") as out:
        for _ in range(math.ceil(want / len(block))):
            out.write(block)
        out.flush()
        os.fsync(out.fileno())


def _run(
    command: list[str],
    job: Job,
    seconds: float,
    warmup: float,
    interval: float,
    group: Cgroup | None,
    device: str | None,
) -> JobResult:
    # A shell waits for a line on stdin before exec'ing fio (same pid), so the workload is in
    # its cgroup before it does anything.
    shell = ["/bin/sh", "-c", 'read go && exec "$@"', "perfsleuth-job", *command]
    process = subprocess.Popen(
        shell, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        if group is not None:
            add_to_cgroup(group, process.pid)
        counters = LinuxCounters(cgroup=group, device=device)
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
        time.sleep(warmup)
        frame = counters.collect(seconds, interval)
        out, err = process.communicate(timeout=seconds + warmup + 120)
    except BaseException:
        process.kill()
        process.wait()
        raise
    if process.returncode != 0:
        raise SourceError(f"fio failed ({process.returncode}): {err.strip()[:500]}")
    iops, bw, usr, sys_, ran, data = _parse_fio(out, job)
    return JobResult(job, iops, bw, usr, sys_, ran, frame, data)


# ---------------------------------------------------------------------------------------------
# The built-in generator (no fio)
# ---------------------------------------------------------------------------------------------


def builtin_io(
    path: str | Path,
    *,
    kind: str,
    size: int,
    depth: int,
    seconds: float,
    file_size: int = 1 << 30,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Direct I/O with ``depth`` threads for ``seconds``: (IOPS, bytes/s, CPU cores used).

    Raises :class:`SourceError` when the file system refuses O_DIRECT (tmpfs, overlay).
    """
    target = Path(path)
    if not target.exists() or target.stat().st_size < file_size:
        _layout(Job(kind="read", file=str(target), file_size=file_size))
    flags = os.O_RDWR | getattr(os, "O_DIRECT", 0)
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        raise SourceError(
            f"{target}: O_DIRECT not supported here ({exc.strerror}); put the "
            "file on a real file system"
        ) from exc
    blocks = file_size // size
    count = [0] * depth
    stop = time.monotonic() + seconds
    write = "write" in kind
    sequential = not kind.startswith("rand")

    def worker(number: int) -> None:
        buffer = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT needs
        rng = np.random.default_rng(seed + number)
        position = number * (blocks // max(depth, 1))
        while time.monotonic() < stop:
            if sequential:
                position = (position + 1) % blocks
                offset = position * size
            else:
                offset = int(rng.integers(blocks)) * size
            if write:
                os.pwritev(fd, [buffer], offset)
            else:
                os.preadv(fd, [buffer], offset)
            count[number] += 1
        buffer.close()

    cpu0 = time.process_time()
    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(depth)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    cpu = (time.process_time() - cpu0) / elapsed
    os.close(fd)
    iops = sum(count) / elapsed
    return iops, iops * size, cpu
