"""Read cumulative process and OS counters from ``/proc`` (Linux; standard library only).

Pure readers: each call returns what the kernel says now, as cumulative values; turning them
into rates over an interval is the collector's job. A process that vanishes between listing
``/proc`` and reading its files is left out, never an error. Reads use ``os.open``/``os.read``
on bytes: at one sample a second over hundreds of processes the reading is most of the cost.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "TICKS",
    "ProcessReading",
    "boot_time",
    "read_cgroup",
    "read_os",
    "read_processes",
]

TICKS = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
PAGE = float(os.sysconf("SC_PAGE_SIZE")) if hasattr(os, "sysconf") else 4096.0

# /proc/stat cpu line fields, in order.
_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# /proc/vmstat counters worth keeping (cumulative event counts).
_VMSTAT = frozenset({"pgpgin", "pgpgout", "pswpin", "pswpout", "pgfault", "pgmajfault", "oom_kill"})
# /proc/meminfo gauges (kB in the file; stored in bytes).
_MEMINFO = frozenset(
    {
        "MemTotal",
        "MemFree",
        "MemAvailable",
        "Buffers",
        "Cached",
        "SwapTotal",
        "SwapFree",
        "Dirty",
        "Shmem",
        "Slab",
    }
)
_SECTOR = 512.0


@dataclass(frozen=True, slots=True)
class ProcessReading:
    """One process's cumulative counters; ``(pid, start_ticks)`` identifies it across pid reuse."""

    pid: int
    start_ticks: int
    name: str
    uid: int
    cpu_ticks: float
    rss_bytes: float
    io_bytes: float | None  # read_bytes + write_bytes of /proc/<pid>/io, None when unreadable


def _read(path: bytes) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _process(base: bytes, pid: int, with_io: bool) -> ProcessReading | None:
    try:
        stat = _read(base + b"/stat")
        uid = os.stat(base).st_uid
    except OSError:
        return None  # vanished, or not ours to read
    try:
        left = stat.index(b"(")
        right = stat.rindex(b")")
        name = stat[left + 1 : right].decode("utf-8", "replace")
        rest = stat[right + 2 :].split()
        cpu = float(int(rest[11]) + int(rest[12]))  # utime + stime
        start = int(rest[19])
        rss = float(rest[21]) * PAGE
    except (ValueError, IndexError):
        return None  # torn read of a dying process
    io: float | None = None
    if with_io:
        try:
            text = _read(base + b"/io")
            values = dict(line.split(b": ", 1) for line in text.splitlines() if b": " in line)
            io = float(int(values[b"read_bytes"]) + int(values[b"write_bytes"]))
        except (OSError, KeyError, ValueError):
            io = None
    return ProcessReading(pid, start, name, uid, cpu, rss, io)


def read_processes(proc: Path = Path("/proc"), *, with_io: bool = True) -> list[ProcessReading]:
    """Every process visible in ``proc``, skipping those that vanish while being read."""
    root = os.fsencode(proc)
    out: list[ProcessReading] = []
    for entry in os.listdir(root):
        if not entry.isdigit():
            continue
        got = _process(root + b"/" + entry, int(entry), with_io)
        if got is not None:
            out.append(got)
    return out


def boot_time(proc: Path = Path("/proc")) -> float:
    """Boot time (Unix seconds) from ``/proc/stat``; process start ticks count from it."""
    for line in (proc / "stat").read_bytes().splitlines():
        if line.startswith(b"btime "):
            return float(line.split()[1])
    return 0.0


def read_os(proc: Path = Path("/proc")) -> tuple[dict[str, float], dict[str, float]]:
    """OS counters now: ``(cumulative, gauges)``, both keyed by counter name.

    Cumulative: ``cpu.<field>`` in CPU-seconds (all CPUs), ``stat.ctxt``, ``stat.intr``,
    ``stat.processes`` (forks), ``vmstat.<name>``, ``disk.<dev>.read_bytes`` /
    ``write_bytes`` / ``io_ms``. Gauges: ``cpu.count``, ``stat.procs_running`` /
    ``procs_blocked``, ``mem.<name>`` in bytes.
    """
    cumulative: dict[str, float] = {}
    gauges: dict[str, float] = {}
    ncpu = 0
    for line in (proc / "stat").read_bytes().splitlines():
        parts = line.split()
        if not parts:
            continue
        key = parts[0]
        if key == b"cpu":
            for field, value in zip(_CPU_FIELDS, parts[1:], strict=False):
                cumulative[f"cpu.{field}"] = float(value) / TICKS
        elif key.startswith(b"cpu"):
            ncpu += 1
        elif key in (b"ctxt", b"processes", b"intr"):
            cumulative[f"stat.{key.decode()}"] = float(parts[1])
        elif key in (b"procs_running", b"procs_blocked"):
            gauges[f"stat.{key.decode()}"] = float(parts[1])
    gauges["cpu.count"] = float(ncpu)
    for line in (proc / "meminfo").read_bytes().splitlines():
        name, _, rest = line.partition(b":")
        text = name.decode()
        if text in _MEMINFO:
            gauges[f"mem.{text}"] = float(rest.split()[0]) * 1024.0
    for line in (proc / "vmstat").read_bytes().splitlines():
        name, _, value = line.partition(b" ")
        text = name.decode()
        if text in _VMSTAT:
            cumulative[f"vmstat.{text}"] = float(value)
    try:
        disks = (proc / "diskstats").read_bytes().splitlines()
    except OSError:
        disks = []
    for line in disks:
        parts = line.split()
        if len(parts) < 14:
            continue
        dev = parts[2].decode()
        if dev.startswith(("loop", "ram")):
            continue
        cumulative[f"disk.{dev}.read_bytes"] = float(parts[5]) * _SECTOR
        cumulative[f"disk.{dev}.write_bytes"] = float(parts[9]) * _SECTOR
        cumulative[f"disk.{dev}.io_ms"] = float(parts[12])
    return cumulative, gauges


def _cgroup2_root(proc: Path) -> Path | None:
    """Mount point of the cgroup v2 hierarchy, if there is one."""
    try:
        mounts = (proc / "self" / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            return Path(left.split()[4])
    return None


def read_cgroup(proc: Path = Path("/proc")) -> tuple[dict[str, float], dict[str, float]]:
    """cgroup v2 counters of the collector's own cgroup: ``(cumulative, gauges)``.

    Empty where the machine has no cgroup v2 hierarchy (or only controllers elsewhere).
    Cumulative: ``cgroup.cpu.usage`` / ``user`` / ``system`` (CPU-seconds),
    ``cgroup.cpu.throttled`` (seconds). Gauges: ``cgroup.memory.current`` (bytes).
    """
    cumulative: dict[str, float] = {}
    gauges: dict[str, float] = {}
    root = _cgroup2_root(proc)
    if root is None:
        return cumulative, gauges
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return cumulative, gauges
    relative = next((ln[3:] for ln in lines if ln.startswith("0::")), None)
    if relative is None:
        return cumulative, gauges
    group = root / relative.lstrip("/")
    names = {
        "usage_usec": "cgroup.cpu.usage",
        "user_usec": "cgroup.cpu.user",
        "system_usec": "cgroup.cpu.system",
        "throttled_usec": "cgroup.cpu.throttled",
    }
    try:
        for line in (group / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key in names:
                cumulative[names[key]] = float(value) / 1e6
    except (OSError, ValueError):
        pass
    with contextlib.suppress(OSError, ValueError):
        gauges["cgroup.memory.current"] = float((group / "memory.current").read_text())
    return cumulative, gauges
