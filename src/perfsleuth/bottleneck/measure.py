"""``perfsleuth calibrate``: measure this machine's maxima and fit a calibration profile.

"Calibration is carried out while the system is otherwise idle" (Blake & Breese §3.1): the
machine's CPU is sampled first. A shared host is rarely idle, so a busy one is not refused: the
calibration warns, records how busy the machine was, and the profile carries an error scale of
1 + the busy share (:data:`~perfsleuth.bottleneck.kernels.calibration.ERROR_SCALE`): the
inference widens the error model by it, since other work only ever lowers what a run achieves.
:func:`from_fio` reads fio's JSON results a user already has instead of running anything.

Otherwise fio (or the built-in O_DIRECT generator) runs each request kind — random and
sequential, reads and writes, direct — at several sizes and depths, plus buffered sequential
reads and writes whose block-device counts give the read-ahead and write-back request sizes;
:func:`~perfsleuth.bottleneck.kernels.calibration.fit_profile` fits the regressions.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfsleuth.bottleneck.kernels.calibration import (
    ERROR_SCALE,
    Measurement,
    Profile,
    fit_profile,
)
from perfsleuth.bottleneck.kernels.model import Model
from perfsleuth.bottleneck.linux import LinuxCounters
from perfsleuth.bottleneck.workloads import Job, builtin_io, fio_path, fio_version, run_job
from perfsleuth.errors import DataError, SourceError
from perfsleuth.sources.procfs import PAGE, block_device_of, read_meminfo, read_stat

__all__ = [
    "Plan",
    "calibrate",
    "contradictions",
    "from_fio",
    "machine_busy",
    "machine_facts",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """What to measure: sizes (bytes) and depths per request kind, seconds per run."""

    random_sizes: tuple[int, ...] = (4096, 65536, 1 << 20)
    random_depths: tuple[int, ...] = (1, 4, 16)
    sequential_sizes: tuple[int, ...] = (131072, 1 << 20)
    sequential_depths: tuple[int, ...] = (1, 16)
    seconds: float = 2.0
    file_size: int = 1 << 30
    cpu_runs: bool = True
    repeats: int = 2
    """Runs per device point; the best is kept (see :func:`best_device_runs`)."""
    retries: int = 2
    """Extra runs of a point that contradicts its neighbours (a larger request done faster)."""

    @classmethod
    def quick(cls) -> Plan:
        return cls(
            random_sizes=(4096, 1 << 20),
            random_depths=(1, 8),
            sequential_sizes=(131072, 1 << 20),
            sequential_depths=(1, 8),
            seconds=1.0,
            file_size=512 << 20,
        )

    def device_runs(self) -> list[tuple[str, int, int]]:
        """(kind, size, depth) of the direct AIO runs that measure the device."""
        out = [
            (kind, size, depth)
            for kind in ("randread", "randwrite")
            for depth in self.random_depths
            for size in self.random_sizes
        ]
        out += [
            (kind, size, depth)
            for kind in ("read", "write")
            for depth in self.sequential_depths
            for size in self.sequential_sizes
        ]
        return out

    def cpu_jobs(self, file: str) -> list[tuple[Job, int | None, float]]:
        """(job, cgroup memory limit, warm-up seconds) of the synchronous runs that measure
        the kernel's CPU: direct requests of two sizes, cache hits of two sizes, buffered
        sequential reads and writes, and cache misses in a small cgroup."""
        if not self.cpu_runs:
            return []
        kib, mib = 1024, 1 << 20
        base = Job("read", file=file, file_size=self.file_size, engine="psync")
        hot = min(64 * mib, self.file_size // 4)
        buffered = replace(base, direct=False)
        return [
            (replace(base, kind="randread", size=4 * kib, depth=2), None, 0.3),
            (replace(base, kind="randread", size=256 * kib, depth=2), None, 0.3),
            (replace(base, kind="randwrite", size=4 * kib, depth=2), None, 0.3),
            (replace(base, kind="randwrite", size=256 * kib, depth=2), None, 0.3),
            (replace(buffered, kind="randread", extent=hot, random_map=False), None, 2.0),
            (
                replace(buffered, kind="randread", size=64 * kib, extent=hot, random_map=False),
                None,
                2.0,
            ),
            (replace(buffered, size=4 * kib), None, 0.3),
            (replace(buffered, size=mib), None, 0.3),
            (
                replace(buffered, kind="randread", extent=self.file_size // 2, random_map=False),
                64 * mib,
                3.0,
            ),
            (replace(buffered, kind="write", size=64 * kib, fsync_end=True), None, 0.3),
            (replace(buffered, kind="write", size=mib, fsync_end=True), None, 0.3),
        ]


def machine_busy(seconds: float = 1.0, proc: Path = Path("/proc")) -> float:
    """Share of all CPUs' time not idle over ``seconds`` (from /proc/stat)."""
    busy0, total0 = read_stat(proc).busy_and_total()
    time.sleep(seconds)
    busy1, total1 = read_stat(proc).busy_and_total()
    if total1 <= total0:
        return 0.0
    return (busy1 - busy0) / (total1 - total0)


def machine_facts(proc: Path = Path("/proc")) -> dict[str, float]:
    """What is read, not measured: CPUs, memory, page size."""
    meminfo = read_meminfo(proc)
    total = meminfo.get("MemTotal", 0.0)
    available = meminfo.get("MemAvailable", total)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "ncpu": float(cpus or 1),
        "mem_total": total,
        "mem_reserved": max(total - available, 256.0 * 2**20),
        "page_size": PAGE,
    }


def calibrate(
    model: Model,
    *,
    path: str | Path = "/var/tmp/perfsleuth-calibrate.bin",
    plan: Plan | None = None,
    max_busy: float = 0.2,
    use_fio: bool | None = None,
    progress: Callable[[str], None] | None = None,
    keep_file: bool = False,
) -> Profile:
    """Measure and fit a profile for ``model`` on this machine.

    When more than ``max_busy`` of the CPU is in use, a warning is logged and given to
    ``progress``, and the profile's error scale widens the inference's uncertainty. Raises
    :class:`SourceError` when the file system refuses O_DIRECT.
    """
    chosen = plan or Plan()
    say = progress or (lambda _: None)
    busy = machine_busy(1.0)
    if busy > max_busy:
        warning = (
            f"warning: the machine is {busy:.0%} busy (more than {max_busy:.0%}): the runs "
            f"measure what other work leaves; the profile widens the model's errors by "
            f"{1 + busy:.2f}x"
        )
        log.warning("%s", warning)
        say(warning)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    device = block_device_of(target.parent)
    fio = fio_path() if use_fio is None or use_fio else None
    if use_fio and fio is None:
        raise SourceError("fio is not installed (scripts/install-system-deps.sh installs it)")
    method = fio_version() if fio else "built-in O_DIRECT generator"
    _check_direct(target)
    say(f"calibrating device {device} with {method} on {target} (machine {busy:.0%} busy)")
    measurements: list[Measurement] = []
    device_runs = chosen.device_runs()
    cpu_jobs = chosen.cpu_jobs(str(target)) if fio else []
    total = len(device_runs) + len(cpu_jobs)
    try:
        best: dict[tuple[str, int, int], Measurement] = {}

        def measure_point(kind: str, size: int, depth: int, runs: int) -> Measurement:
            for _ in range(runs):
                m = _device_run(kind, size, depth, target, chosen, device, fio is not None)
                if (kind, size, depth) not in best or m.iops > best[kind, size, depth].iops:
                    best[kind, size, depth] = m
            return best[kind, size, depth]

        for number, (kind, size, depth) in enumerate(device_runs, 1):
            m = measure_point(kind, size, depth, max(chosen.repeats, 1))
            say(
                f"[{number}/{total}] device {kind:9s} {_size(size):>6s} depth {depth:>2d}: "
                f"{m.iops:,.0f} IOPS, {m.bw / 2**20:,.1f} MiB/s"
            )
        for _ in range(chosen.retries):
            suspects = contradictions(list(best.values()))
            if not suspects:
                break
            for m in suspects:
                before = m.iops
                again = measure_point(m.kind, int(m.size), int(m.depth), 1)
                say(
                    f"  again: device {m.kind:9s} {_size(int(m.size)):>6s} depth "
                    f"{int(m.depth):>2d} (a larger request went faster): {before:,.0f} -> "
                    f"{again.iops:,.0f} IOPS"
                )
        measurements.extend(best.values())
        for number, (job, limit, warmup) in enumerate(cpu_jobs, len(device_runs) + 1):
            m = _cpu_run(job, limit, warmup, chosen.seconds, device)
            measurements.append(m)
            say(
                f"[{number}/{total}] cpu    {job.kind:9s} {_size(job.size):>6s} "
                f"{'direct' if job.direct else 'buffered'}"
                f"{'' if limit is None else f' in {limit >> 20} MiB'}: {m.iops:,.0f} IOPS, "
                f"{m.sys:.3f} cores system"
            )
    finally:
        if not keep_file:
            target.unlink(missing_ok=True)
    info = {
        "machine": os.uname().nodename,
        "created": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "method": method,
        "device": device,
        "file": str(target),
        "busy_at_start": f"{busy:.3f}",
    }
    if busy > max_busy:
        info[ERROR_SCALE] = f"{1 + busy:.3f}"
    profile = fit_profile(model, measurements, machine=machine_facts(), info=info)
    return profile


_FIO_KINDS = {"read": "read", "write": "write", "randread": "randread", "randwrite": "randwrite"}
_FIO_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$", re.IGNORECASE)


def _fio_size(text: str) -> float | None:
    """fio's block size (``4k``, ``1M``, ``65536``; powers of 1024, its default ``kb_base``);
    None for a range or a split read/write size."""
    match = _FIO_SIZE.match(text.strip())
    if match is None:
        return None
    power = "kmgt".find(match[2].lower()) + 1 if match[2] else 0
    return float(match[1]) * 1024.0**power


def from_fio(directory: str | Path) -> tuple[list[Measurement], list[str]]:
    """Device runs from fio's JSON results (``fio --output-format=json``) in ``directory``,
    and a note for each job left out.

    A job is a run when it did one kind of direct I/O (``rw`` read, write, randread or
    randwrite; ``direct=1``) at one block size; jobs of one name in a file (``numjobs``
    without ``group_reporting``) are one run, their rates summed and their depths added.
    Buffered and mixed jobs are left out: their device request sizes are not in fio's output.

    Raises
    ------
    DataError
        ``directory`` holds no ``.json`` file, or a file is not fio's JSON (named, with the
        key that is missing).
    """
    root = Path(directory)
    files = sorted(root.glob("*.json")) if root.is_dir() else []
    if not files:
        raise DataError(f"{root}: no fio JSON results (*.json) here")
    runs: list[Measurement] = []
    skipped: list[str] = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:  # fio may print warnings before the JSON
            document = json.loads(text[text.index("{") :])
            jobs = document["jobs"]
        except (ValueError, KeyError, TypeError):
            raise DataError(f"{path}: not fio's JSON output (no 'jobs')") from None
        defaults = document.get("global options", {})
        grouped: dict[str, list[dict[str, Any]]] = {}
        for job in jobs:
            grouped.setdefault(str(job.get("jobname", "")), []).append(job)
        for name, same in grouped.items():
            run = _fio_run(path, name, same, defaults)
            if isinstance(run, str):
                skipped.append(run)
            else:
                runs.append(run)
    return runs, skipped


def _fio_run(
    path: Path, name: str, jobs: Sequence[dict[str, Any]], defaults: dict[str, Any]
) -> Measurement | str:
    """One fio job (its entries in one file) as a device run, or why it is left out."""
    options = {**defaults, **jobs[0].get("job options", {})}
    where = f"{path.name}: job {name!r}"
    kind = _FIO_KINDS.get(str(options.get("rw", options.get("readwrite", "read"))))
    if kind is None:
        return f"{where}: mixed or trim I/O left out"
    if str(options.get("direct", "0")) != "1":
        return f"{where}: buffered I/O left out (needs direct=1)"
    size = _fio_size(str(options.get("bs", options.get("blocksize", "4k"))))
    if size is None or size <= 0:
        return f"{where}: block size {options.get('bs')!r} is a range; left out"
    side = "read" if "read" in kind else "write"
    try:
        iops = sum(float(j[side]["iops"]) for j in jobs)
        bw = sum(float(j[side]["bw_bytes"]) for j in jobs)
        usr = sum(float(j["usr_cpu"]) for j in jobs) / 100
        sys = sum(float(j["sys_cpu"]) for j in jobs) / 100
        seconds = max(float(j[side]["runtime"]) for j in jobs) / 1000
        numjobs = int(options.get("numjobs", 1)) if len(jobs) == 1 else len(jobs)
        depth = float(options.get("iodepth", 1)) * max(numjobs, 1)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{where}: not fio's JSON output (missing or bad {exc})") from None
    if not (iops > 0 and seconds > 0 and math.isfinite(depth) and depth > 0):
        return f"{where}: no {side}s done; left out"
    engine = str(options.get("ioengine", "psync"))
    return Measurement(kind, size, depth, True, iops, bw, usr, sys, seconds, engine=engine)


def contradictions(runs: Sequence[Measurement], tolerance: float = 0.1) -> list[Measurement]:
    """Device runs a neighbour contradicts: at the same kind and depth, a larger request took
    less device time (``1 / iops``) than a smaller one by more than ``tolerance``.

    A larger request cannot be served faster than a smaller one of the same kind; when it
    seemingly was, other work disturbed the smaller one's run (this happens on shared
    machines), so the smaller one is returned to be measured again. The best of all runs of a
    point is kept, because interference only ever lowers a device's rate.
    """
    out: dict[tuple[str, float, float], Measurement] = {}
    groups: dict[tuple[str, float], list[Measurement]] = {}
    for m in runs:
        if m.role == "device" and m.iops > 0:
            groups.setdefault((m.kind, m.depth), []).append(m)
    for group in groups.values():
        group.sort(key=lambda m: m.size)
        for i, small in enumerate(group):
            if any(1 / big.iops < (1 - tolerance) / small.iops for big in group[i + 1 :]):
                out[small.kind, small.size, small.depth] = small
    return list(out.values())


def _check_direct(target: Path) -> None:
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_DIRECT", 0)
    try:
        fd = os.open(target, flags, 0o600)
    except OSError as exc:
        raise SourceError(
            f"{target}: this file system refuses O_DIRECT ({exc.strerror}); "
            "calibrate on a file of a real disk file system"
        ) from exc
    os.close(fd)


def _device_run(
    kind: str, size: int, depth: int, target: Path, plan: Plan, device: str, with_fio: bool
) -> Measurement:
    counters = LinuxCounters(device=device)
    before = counters.read()
    if not with_fio:
        iops, bw, cpu = builtin_io(
            target,
            kind=kind,
            size=size,
            depth=depth,
            seconds=plan.seconds,
            file_size=plan.file_size,
        )
        rates = counters.rates(before, counters.read())
        return Measurement(
            kind,
            size,
            depth,
            True,
            iops,
            bw,
            0.0,
            cpu,
            plan.seconds,
            engine="threads",
            device_reads=rates.get("disk.reads", math.nan),
            device_read_bytes=rates.get("disk.read_bytes", math.nan),
            device_writes=rates.get("disk.writes", math.nan),
            device_write_bytes=rates.get("disk.write_bytes", math.nan),
        )
    job = Job(
        kind=kind,
        size=size,
        depth=depth,
        engine="libaio",
        file=str(target),
        file_size=plan.file_size,
    )
    result = run_job(job, seconds=plan.seconds, warmup=0.3, interval=plan.seconds, device=device)
    rates = counters.rates(before, counters.read())
    return Measurement(
        kind,
        size,
        depth,
        True,
        result.iops,
        result.bw,
        result.usr,
        result.sys,
        result.seconds,
        engine="libaio",
        device_reads=rates.get("disk.reads", math.nan),
        device_read_bytes=rates.get("disk.read_bytes", math.nan),
        device_writes=rates.get("disk.writes", math.nan),
        device_write_bytes=rates.get("disk.write_bytes", math.nan),
    )


def _cpu_run(
    job: Job, limit: int | None, warmup: float, seconds: float, device: str
) -> Measurement:
    # device counts over the whole run, end_fsync included: buffered writes reach the device
    # only when written back, often after the timed part
    counters = LinuxCounters(device=device)
    before = counters.read()
    result = run_job(
        job,
        seconds=seconds,
        warmup=warmup,
        interval=seconds,
        device=device,
        cgroup="perfsleuth-calibrate",
        memory_limit=limit,
    )
    rates = counters.rates(before, counters.read())
    group = result.counters()
    return Measurement(
        job.kind,
        job.size,
        job.depth,
        job.direct,
        result.iops,
        result.bw,
        group.get("cg.cpu.user", result.usr),
        group.get("cg.cpu.system", result.sys),
        result.seconds,
        engine=job.engine,
        role="cpu",
        extent=float(job.extent or job.file_size),
        memory_limit=float("nan") if limit is None else float(limit),
        app_ram=group.get("cg.mem.anon", float("nan")),
        device_reads=rates.get("disk.reads", math.nan),
        device_read_bytes=rates.get("disk.read_bytes", math.nan),
        device_writes=rates.get("disk.writes", math.nan),
        device_write_bytes=rates.get("disk.write_bytes", math.nan),
    )


def _size(size: int) -> str:
    return f"{size >> 20}M" if size >= 1 << 20 else f"{size >> 10}K"


def summary(profile: Profile, names: Sequence[str] = ("read_a", "read_b")) -> str:
    """A few lines saying what the profile measured (for the CLI)."""
    lines = []
    for name in names:
        if name in profile.tables:
            x, y = profile.tables[name]
            lines.append(
                f"{name}: " + ", ".join(f"depth {a:g}: {b:.3g}" for a, b in zip(x, y, strict=True))
            )
    return "\n".join(lines)
