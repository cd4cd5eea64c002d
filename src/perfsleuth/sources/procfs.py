"""Read what Linux publishes under ``/proc``, ``/sys/block`` and the cgroup mount.

The one module of perfsleuth that opens and parses these files. Pure readers: each call returns
what the kernel says now — cumulative counters and levels as plain dataclasses and dicts, in the
kernel's units unless a name says otherwise (``_usec``, ``_sectors``, ``_ms``, jiffies); turning
them into rates over an interval is the caller's job (the collector, the bottleneck model's
:class:`~perfsleuth.bottleneck.linux.LinuxCounters`). The proc root, the ``/sys`` root and the
cgroup root are parameters, so tests point them at fixture trees.

What cannot be read:

* a process's files (it vanished between listing ``/proc`` and reading, or is not ours to
  read): the process, or the value, is left out — never an error;
* a cgroup's files (no such controller, no permission): that counter is ``None`` or absent;
* the machine-wide files (``/proc/stat``, ``meminfo``, ``vmstat``): :class:`SourceError`
  naming the file (``diskstats`` may be absent in containers: no disks).

Per-process reads use ``os.open``/``os.read`` on bytes: at one sample a second over hundreds of
processes the reading is most of the collector's cost.
"""

from __future__ import annotations

import contextlib
import os
import stat as _stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from perfsleuth.errors import SourceError

__all__ = [
    "CPU_FIELDS",
    "IGNORED_DEVICES",
    "IO_SYSCALLS",
    "PAGE",
    "SECTOR",
    "TICKS",
    "Cgroup",
    "CgroupCounters",
    "DiskStats",
    "ProcStat",
    "ProcessReading",
    "block_device_number",
    "block_device_of",
    "boot_time",
    "io_growth",
    "parse_keyed",
    "parse_stat",
    "read_cgroup_counters",
    "read_diskstats",
    "read_meminfo",
    "read_os",
    "read_own_cgroup",
    "read_pressure",
    "read_process_io",
    "read_processes",
    "read_stat",
    "read_task_schedstat",
    "read_vmstat",
    "runnable_growth",
]

TICKS = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
"""Clock ticks (jiffies) per second: the unit of /proc/stat and /proc/<pid>/stat CPU times."""
PAGE = float(os.sysconf("SC_PAGE_SIZE")) if hasattr(os, "sysconf") else 4096.0
SECTOR = 512.0
"""Bytes per sector of /proc/diskstats (always 512, whatever the device's sector size)."""

IGNORED_DEVICES = ("loop", "ram")
"""Block devices the collector leaves out (prefixes): loop and RAM disks."""

CPU_FIELDS = (
    "user",
    "nice",
    "system",
    "idle",
    "iowait",
    "irq",
    "softirq",
    "steal",
    "guest",
    "guest_nice",
)
"""The fields of /proc/stat's ``cpu`` line, in order (guest time is also in user time)."""

# /proc/vmstat counters the collector keeps (cumulative event counts). Refaults: the file
# page cache's on kernels >= 5.9, all of them (one counter) before.
_VMSTAT = frozenset(
    {
        "pgpgin",
        "pgpgout",
        "pswpin",
        "pswpout",
        "pgfault",
        "pgmajfault",
        "oom_kill",
        "workingset_refault_file",
        "workingset_refault",
    }
)
# /proc/meminfo gauges the collector keeps (kB in the file; bytes here).
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
        "Writeback",
        "Shmem",
        "Slab",
    }
)
IO_SYSCALLS = {
    "syscr": "read_ops",
    "rchar": "read_bytes",
    "syscw": "write_ops",
    "wchar": "write_bytes",
}
"""/proc/<pid>/io's counts of what a process asked for (read/write calls, bytes through them,
cache hits included), in plain words."""
# cgroup v2 io.stat keys, in plain words
_IO_STAT = {"rbytes": "read_bytes", "wbytes": "write_bytes", "rios": "reads", "wios": "writes"}
_STAT_COUNTS = frozenset({"ctxt", "intr", "processes", "procs_running", "procs_blocked", "btime"})
_WRITING = os.O_WRONLY | os.O_RDWR


# -- parsing helpers (one of each) -----------------------------------------------------------


def parse_keyed(text: str) -> dict[str, float]:
    """``key value`` lines (vmstat, cpu.stat, memory.stat, cpuacct.stat) and ``key: value``
    lines (meminfo, /proc/<pid>/io) as numbers; a unit after the value (``kB``) is ignored,
    lines without a number are skipped."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                continue
    return out


def _machine_file(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise SourceError(f"{path}: cannot read it: {reason}") from exc


def _optional_file(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _read(path: bytes) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


# -- /proc/stat ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcStat:
    """What /proc/stat says now.

    ``cpu``: jiffies of all CPUs together by field (:data:`CPU_FIELDS`; fields an old kernel
    lacks are absent); ``ncpu``: the number of ``cpuN`` lines; ``counts``: ``ctxt``, ``intr``
    (all interrupts), ``processes`` (forks since boot), ``procs_running`` and
    ``procs_blocked`` (the run queue and tasks blocked on I/O, levels), ``btime`` (boot time,
    Unix seconds).
    """

    cpu: dict[str, float]
    ncpu: int
    counts: dict[str, float] = field(default_factory=dict)

    def busy_and_total(self) -> tuple[float, float]:
        """``(busy, total)`` jiffies of all CPUs: total = user … steal (guest time is already
        in user), busy = total − idle − iowait."""
        total = sum(self.cpu.get(name, 0.0) for name in CPU_FIELDS[:8])
        idle = self.cpu.get("idle", 0.0) + self.cpu.get("iowait", 0.0)
        return total - idle, total


def parse_stat(text: str) -> ProcStat:
    """/proc/stat's text as a :class:`ProcStat` (unparsable lines are skipped)."""
    cpu: dict[str, float] = {}
    counts: dict[str, float] = {}
    ncpu = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        key = parts[0]
        try:
            if key == "cpu":
                cpu = {name: float(v) for name, v in zip(CPU_FIELDS, parts[1:], strict=False)}
            elif key.startswith("cpu"):
                ncpu += 1
            elif key in _STAT_COUNTS:
                counts[key] = float(parts[1])
        except (ValueError, IndexError):
            continue
    return ProcStat(cpu, ncpu, counts)


def read_stat(proc: Path = Path("/proc")) -> ProcStat:
    """/proc/stat now (:class:`SourceError` when it cannot be read)."""
    return parse_stat(_machine_file(proc / "stat"))


def boot_time(proc: Path = Path("/proc")) -> float:
    """Boot time (Unix seconds) from /proc/stat; process start ticks count from it."""
    return read_stat(proc).counts.get("btime", 0.0)


# -- memory, vmstat, disks -------------------------------------------------------------------


def read_meminfo(proc: Path = Path("/proc")) -> dict[str, float]:
    """/proc/meminfo: values given in kB in bytes, the others (``HugePages_Total``) as is."""
    out: dict[str, float] = {}
    for line in _machine_file(proc / "meminfo").splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if not parts:
            continue
        try:
            value = float(parts[0])
        except ValueError:
            continue
        out[name.strip()] = value * 1024.0 if parts[1:2] == ["kB"] else value
    return out


def read_vmstat(proc: Path = Path("/proc")) -> dict[str, float]:
    """/proc/vmstat: every counter (cumulative event counts, and a few levels)."""
    return parse_keyed(_machine_file(proc / "vmstat"))


PRESSURE = ("cpu", "memory", "io")
"""The resources of pressure stall information (PSI, /proc/pressure and cgroup v2 files)."""


def read_pressure(proc: Path = Path("/proc")) -> dict[str, dict[str, float]]:
    """/proc/pressure/{cpu,memory,io}: per resource, the ``some`` and ``full`` lines'
    ``total=`` (µs, cumulative: time some / all non-idle tasks were stalled on it). Empty
    where the kernel has no PSI (``psi=0`` or before 4.20)."""
    out: dict[str, dict[str, float]] = {}
    for resource in PRESSURE:
        totals = _pressure(_optional_file(proc / "pressure" / resource))
        if totals:
            out[resource] = totals
    return out


@dataclass(frozen=True, slots=True)
class DiskStats:
    """One block device's cumulative counters from /proc/diskstats."""

    reads: float
    read_sectors: float
    writes: float
    write_sectors: float
    io_ms: float
    """Milliseconds with at least one request in flight."""
    weighted_ms: float
    """Σ over requests of milliseconds in flight (its rate is the average queue, aqu-sz)."""


def read_diskstats(proc: Path = Path("/proc")) -> dict[str, DiskStats]:
    """/proc/diskstats by device name (partitions, loop and ram devices included); empty when
    the file is absent (some containers)."""
    text = _optional_file(proc / "diskstats")
    out: dict[str, DiskStats] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) < 14:
            continue
        try:
            f = [float(v) for v in parts[3:14]]
        except ValueError:
            continue
        out[parts[2]] = DiskStats(f[0], f[2], f[4], f[6], f[9], f[10])
    return out


def block_device_of(path: str | Path, sys_root: Path = Path("/sys")) -> str:
    """The whole-disk name (``vda``, ``nvme0n1``) holding ``path``.

    Raises :class:`SourceError` when no block device is behind it (overlay, tmpfs).
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror or exc}") from exc
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    link = sys_root / "dev" / "block" / f"{major}:{minor}"
    try:
        target = link.resolve(strict=True)
    except OSError as exc:
        raise SourceError(
            f"{path}: no block device behind it ({major}:{minor}, e.g. overlay or "
            "tmpfs); pass the device name"
        ) from exc
    if (target / "partition").exists():
        target = target.parent
    return target.name


def block_device_number(device: str, sys_root: Path = Path("/sys")) -> str | None:
    """``MAJ:MIN`` of a block device (as cgroup io.stat names it); None if unknown."""
    text = _optional_file(sys_root / "block" / device / "dev")
    return text.strip() if text else None


# -- processes -------------------------------------------------------------------------------


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
    file_bytes: float | None = None
    """Σ sizes of the regular files it holds open for writing (a growing log shows here);
    None when not asked for or unreadable."""
    wait_ns: float | None = None
    """Run-queue wait of its main thread since it started, ns (/proc/<pid>/schedstat's second
    field: time runnable but not running); None when not asked for or unreadable. CPU time +
    wait is the time it wanted a CPU: a spinning process starved by others still wants all."""


def _process_io(base: bytes) -> dict[str, float] | None:
    try:
        text = _read(base + b"/io")
    except OSError:
        return None
    values = parse_keyed(text.decode("ascii", "replace"))
    return values or None


def read_process_io(pid: int, proc: Path = Path("/proc")) -> dict[str, float] | None:
    """/proc/<pid>/io (``rchar``, ``wchar``, ``syscr``, ``syscw``, ``read_bytes``,
    ``write_bytes``, …); None when the process is gone or not ours to read."""
    return _process_io(os.fsencode(proc) + b"/" + str(pid).encode())


def _files_for_writing(base: bytes) -> float | None:
    try:
        fds = os.listdir(base + b"/fd")
    except OSError:
        return None
    total = 0.0
    for fd in fds:
        try:
            info = _read(base + b"/fdinfo/" + fd)
            flags = int(info.split(b"flags:", 1)[1].split()[0], 8)
            if flags & _WRITING:
                st = os.stat(base + b"/fd/" + fd)
                if _stat.S_ISREG(st.st_mode):
                    total += st.st_size
        except (OSError, IndexError, ValueError):
            continue  # closed meanwhile
    return total


def _run_delay(base: bytes) -> float | None:
    try:
        return float(_read(base + b"/schedstat").split()[1])
    except (OSError, IndexError, ValueError):
        return None  # no CONFIG_SCHED_INFO, or vanished


def _process(
    base: bytes, pid: int, with_io: bool, with_files: bool, with_wait: bool = False
) -> ProcessReading | None:
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
        values = _process_io(base)
        if values is not None and "read_bytes" in values and "write_bytes" in values:
            io = values["read_bytes"] + values["write_bytes"]
    files = _files_for_writing(base) if with_files else None
    wait = _run_delay(base) if with_wait else None
    return ProcessReading(pid, start, name, uid, cpu, rss, io, files, wait)


def read_processes(
    proc: Path = Path("/proc"),
    *,
    with_io: bool = True,
    with_files: bool = False,
    with_wait: bool = False,
    pids: Iterable[int] | None = None,
) -> list[ProcessReading]:
    """Every process visible in ``proc`` (or those of ``pids``), skipping those that vanish
    while being read.

    ``with_io`` reads /proc/<pid>/io (bytes read and written), ``with_files`` the sizes of the
    files each holds open for writing, ``with_wait`` the run-queue wait of /proc/<pid>/schedstat
    (each costs a few more reads per process).
    """
    root = os.fsencode(proc)
    if pids is None:
        entries = [(int(e), e) for e in os.listdir(root) if e.isdigit()]
    else:
        entries = [(int(p), str(int(p)).encode()) for p in pids]
    out: list[ProcessReading] = []
    for pid, entry in entries:
        got = _process(root + b"/" + entry, pid, with_io, with_files, with_wait)
        if got is not None:
            out.append(got)
    return out


def io_growth(
    before: Mapping[int, Mapping[str, float]],
    after: Mapping[int, Mapping[str, float]],
    keys: Iterable[str],
) -> dict[str, float]:
    """Σ over the processes of ``after`` (pid → /proc/<pid>/io) of how much each counter of
    ``keys`` grew since ``before``: a process new in ``after`` counts from 0, a counter that
    went back counts 0, a process gone by ``after`` is not counted. Empty when ``after`` is."""
    if not after:
        return {}
    totals = dict.fromkeys(keys, 0.0)
    for pid, now in after.items():
        then = before.get(pid, {})
        for key in totals:
            if key in now:
                totals[key] += max(now[key] - then.get(key, 0.0), 0.0)
    return totals


def runnable_growth(
    before: Mapping[int, Mapping[str, float]],
    after: Mapping[int, Mapping[str, float]],
    seconds: float,
) -> tuple[float, float] | None:
    """From two :func:`read_task_schedstat` readings ``seconds`` apart: ``(wait, runnable)``,
    the cores the tasks spent waiting in a run queue, and the share of time a task spent
    running or waiting to run, each task weighted by that share (1 when every busy task is
    CPU-bound, near 0 when they mostly sleep or wait for I/O). None when ``after`` is empty.

    A task not in ``before`` counts from 0 if it can have been born in the interval (it ran
    and waited less than ``seconds``), else it is left out (it joined the group meanwhile).
    """
    if not after or seconds <= 0:
        return None
    wait = 0.0
    shares: list[float] = []
    for tid, now in after.items():
        then = before.get(tid)
        if then is None:
            if now["run_ns"] + now["delay_ns"] > seconds * 1e9:
                continue
            then = {"run_ns": 0.0, "delay_ns": 0.0}
        delay = max(now["delay_ns"] - then["delay_ns"], 0.0)
        run = max(now["run_ns"] - then["run_ns"], 0.0)
        wait += delay / 1e9 / seconds
        shares.append(min((run + delay) / 1e9 / seconds, 1.0))
    total = sum(shares)
    return wait, (sum(x * x for x in shares) / total if total > 0 else 0.0)


# -- the collector's view of the machine -----------------------------------------------------


def read_os(proc: Path = Path("/proc")) -> tuple[dict[str, float], dict[str, float]]:
    """OS counters now, as the collector names them: ``(cumulative, gauges)``.

    Cumulative: ``cpu.<field>`` in CPU-seconds (all CPUs; user … steal), ``stat.ctxt``,
    ``stat.intr``, ``stat.processes`` (forks), ``vmstat.<name>`` (page-ins and -outs, swaps,
    faults, OOM kills, refaults), ``psi.<cpu|memory|io>.<some|full>`` (seconds stalled, where
    the kernel has PSI), ``disk.<dev>.read_bytes`` / ``write_bytes`` / ``reads`` /
    ``writes`` / ``io_ms`` / ``weighted_ms`` (loop and ram devices left out). Gauges:
    ``cpu.count``, ``stat.procs_running`` / ``procs_blocked`` (run queue), ``mem.<name>`` in
    bytes.
    """
    cumulative: dict[str, float] = {}
    gauges: dict[str, float] = {}
    stat = read_stat(proc)
    for name in CPU_FIELDS[:8]:
        if name in stat.cpu:
            cumulative[f"cpu.{name}"] = stat.cpu[name] / TICKS
    for name, value in stat.counts.items():
        if name in ("ctxt", "intr", "processes"):
            cumulative[f"stat.{name}"] = value
        elif name in ("procs_running", "procs_blocked"):
            gauges[f"stat.{name}"] = value
    gauges["cpu.count"] = float(stat.ncpu)
    for name, value in read_meminfo(proc).items():
        if name in _MEMINFO:
            gauges[f"mem.{name}"] = value
    for name, value in read_vmstat(proc).items():
        if name in _VMSTAT:
            cumulative[f"vmstat.{name}"] = value
    for resource, totals in read_pressure(proc).items():
        for line, usec in totals.items():
            cumulative[f"psi.{resource}.{line}"] = usec / 1e6
    for dev, disk in read_diskstats(proc).items():
        if dev.startswith(IGNORED_DEVICES):
            continue
        cumulative[f"disk.{dev}.read_bytes"] = disk.read_sectors * SECTOR
        cumulative[f"disk.{dev}.write_bytes"] = disk.write_sectors * SECTOR
        cumulative[f"disk.{dev}.reads"] = disk.reads
        cumulative[f"disk.{dev}.writes"] = disk.writes
        cumulative[f"disk.{dev}.io_ms"] = disk.io_ms
        cumulative[f"disk.{dev}.weighted_ms"] = disk.weighted_ms
    return cumulative, gauges


# -- cgroups ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cgroup:
    """Where one cgroup lives in each hierarchy: v2 (``unified``) and, on hybrid hosts (v1
    controllers, v2 mounted at ``<root>/unified``), the v1 memory, cpuacct, cpu (quota and
    throttling) and blkio controllers."""

    name: str
    unified: Path | None
    memory_v1: Path | None
    cpuacct_v1: Path | None
    cpu_v1: Path | None = None
    blkio_v1: Path | None = None

    @classmethod
    def find(cls, name: str, root: Path = Path("/sys/fs/cgroup")) -> Cgroup:
        """The existing cgroup ``name``, relative to ``root`` (:class:`SourceError` if there
        is none)."""
        name = name.strip("/")
        if ".." in Path(name).parts:
            raise SourceError(f"cgroup {name!r}: give a path under {root}, without '..'")
        pure_v2 = (root / "cgroup.controllers").exists()
        unified = root / name if pure_v2 else root / "unified" / name
        v1 = {c: root / c / name for c in ("memory", "cpuacct", "cpu", "blkio")}
        mounted = {c: None if pure_v2 or not d.is_dir() else d for c, d in v1.items()}
        found = cls(
            name,
            unified if unified.is_dir() else None,
            mounted["memory"],
            mounted["cpuacct"],
            mounted["cpu"],
            mounted["blkio"],
        )
        if found.unified is None and found.memory_v1 is None:
            raise SourceError(f"no cgroup {name!r} under {root}")
        return found

    def directories(self) -> list[Path]:
        places = (self.unified, self.memory_v1, self.cpuacct_v1, self.cpu_v1, self.blkio_v1)
        return [p for p in places if p is not None]

    def pids(self) -> list[int]:
        """The processes in the cgroup now (empty when it cannot be read)."""
        directory = self.unified or self.memory_v1
        text = None if directory is None else _optional_file(directory / "cgroup.procs")
        return [int(p) for p in (text or "").split() if p.isdigit()]

    def threads(self) -> list[int]:
        """The threads (task ids) in the cgroup now (empty when it cannot be read)."""
        if self.unified is not None:
            text = _optional_file(self.unified / "cgroup.threads")
        else:
            text = None if self.memory_v1 is None else _optional_file(self.memory_v1 / "tasks")
        return [int(t) for t in (text or "").split() if t.isdigit()]


def read_task_schedstat(
    tids: Iterable[int], proc: Path = Path("/proc")
) -> dict[int, dict[str, float]]:
    """/proc/<tid>/schedstat of each task: ``run_ns`` (time on a CPU) and ``delay_ns`` (time
    runnable but waiting in a run queue), cumulative nanoseconds. Tasks that are gone (or a
    kernel without schedstat) are left out."""
    root = os.fsencode(proc)
    out: dict[int, dict[str, float]] = {}
    for tid in tids:
        try:
            parts = _read(root + b"/" + str(int(tid)).encode() + b"/schedstat").split()
            out[int(tid)] = {"run_ns": float(parts[0]), "delay_ns": float(parts[1])}
        except (OSError, IndexError, ValueError):
            continue
    return out


@dataclass(frozen=True, slots=True)
class CgroupCounters:
    """One cgroup's counters now; None (or absent from ``io``) where they cannot be read.

    Cumulative: ``user_usec`` / ``system_usec`` (v2 cpu.stat, else v1 cpuacct.stat),
    ``io_some_usec`` (io.pressure: time some task was stalled on I/O), ``io`` (the io.stat line
    of one device: ``read_bytes``, ``write_bytes``, ``reads``, ``writes``), ``mem_refault`` (pages:
    ``workingset_refault_file`` of memory.stat, None on kernels without it). Levels:
    ``mem_anon`` (bytes: v2 ``anon``, v1 ``rss``), ``mem_limit`` (bytes, ``inf`` when
    unlimited). ``cpu_stat`` is the whole v2 cpu.stat (throttling: ``nr_throttled``,
    ``throttled_usec``).

    Pressure and contention (cumulative µs): ``cpu_some_usec``, ``memory_some_usec``,
    ``memory_full_usec`` (cpu.pressure, memory.pressure), ``throttled_usec`` (time the CPU
    quota held the cgroup back: v2 cpu.stat, v1 cpu.stat ``throttled_time``). Memory:
    ``mem_current`` (bytes charged, page cache included: memory.current, v1
    memory.usage_in_bytes), ``mem_file``, ``mem_dirty``, ``mem_writeback`` (page cache, and the
    part of it dirty or under write-back, bytes), ``mem_majfault`` (cumulative major faults),
    ``mem_limit_hits`` (cumulative times the limit was hit: memory.events ``max`` + ``high``,
    v1 memory.failcnt). ``cpu_limit``: the CPU quota in cores (``inf`` when none).
    """

    user_usec: float | None = None
    system_usec: float | None = None
    io_some_usec: float | None = None
    io: dict[str, float] = field(default_factory=dict)
    mem_anon: float | None = None
    mem_refault: float | None = None
    mem_limit: float | None = None
    cpu_stat: dict[str, float] = field(default_factory=dict)
    cpu_some_usec: float | None = None
    memory_some_usec: float | None = None
    memory_full_usec: float | None = None
    throttled_usec: float | None = None
    cpu_limit: float | None = None
    mem_current: float | None = None
    mem_file: float | None = None
    mem_dirty: float | None = None
    mem_writeback: float | None = None
    mem_majfault: float | None = None
    mem_limit_hits: float | None = None


def _pressure(text: str | None) -> dict[str, float]:
    """The ``some`` and ``full`` lines' ``total=`` (µs) of a PSI file (``{}`` if none)."""
    out: dict[str, float] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if parts and parts[0] in ("some", "full"):
            for part in parts[1:]:
                if part.startswith("total="):
                    with contextlib.suppress(ValueError):
                        out[parts[0]] = float(part[6:])
    return out


def _pressure_some(text: str | None) -> float | None:
    """The ``some`` line's ``total=`` (µs) of a PSI file (io.pressure, cpu.pressure, …)."""
    return _pressure(text).get("some")


def _io_stat(text: str | None, device: str | None) -> dict[str, float]:
    """The io.stat line of ``device`` (``MAJ:MIN rbytes=… wbytes=… rios=… wios=…``) as
    ``read_bytes``, ``write_bytes``, ``reads``, ``writes``."""
    if device is None:
        return {}
    for line in (text or "").splitlines():
        parts = line.split()
        if parts and parts[0] == device:
            out: dict[str, float] = {}
            for part in parts[1:]:
                key, _, value = part.partition("=")
                if key in _IO_STAT:
                    with contextlib.suppress(ValueError):
                        out[_IO_STAT[key]] = float(value)
            return out
    return {}


def _value(text: str | None) -> float | None:
    """A file holding one number (memory.current), or ``max`` (memory.max: ``inf``)."""
    if text is None:
        return None
    raw = text.strip()
    if raw == "max":
        return float("inf")
    try:
        return float(raw)
    except ValueError:
        return None


def read_cgroup_counters(group: Cgroup, device_number: str | None = None) -> CgroupCounters:
    """The counters of ``group`` now; ``device_number`` (``MAJ:MIN``) picks the io.stat line.

    On hybrid hosts cpu.stat and pressure come from the unified hierarchy, memory from the v1
    memory controller, and CPU from v1 cpuacct when the unified cpu.stat has no user time.
    """
    user = system = some = anon = refault = limit = None
    io: dict[str, float] = {}
    cpu: dict[str, float] = {}
    if group.unified is not None:
        cpu = parse_keyed(_optional_file(group.unified / "cpu.stat") or "")
        if "user_usec" in cpu:
            user, system = cpu["user_usec"], cpu.get("system_usec", 0.0)
        some = _pressure_some(_optional_file(group.unified / "io.pressure"))
        io = _io_stat(_optional_file(group.unified / "io.stat"), device_number)
        if group.memory_v1 is None:
            mem = parse_keyed(_optional_file(group.unified / "memory.stat") or "")
            if "anon" in mem:  # a kernel without the refault field says nothing, not 0
                anon = mem["anon"]
                refault = mem.get("workingset_refault_file", mem.get("workingset_refault"))
            limit = _value(_optional_file(group.unified / "memory.max"))
    if group.memory_v1 is not None:
        mem = parse_keyed(_optional_file(group.memory_v1 / "memory.stat") or "")
        if "rss" in mem:
            anon = mem["rss"]
            refault = mem.get("workingset_refault_file", mem.get("workingset_refault"))
        limit = _value(_optional_file(group.memory_v1 / "memory.limit_in_bytes"))
    if user is None and group.cpuacct_v1 is not None:
        acct = parse_keyed(_optional_file(group.cpuacct_v1 / "cpuacct.stat") or "")
        if "user" in acct:  # USER_HZ ticks
            user = acct["user"] / TICKS * 1e6
            system = acct.get("system", 0.0) / TICKS * 1e6
    if not io and group.blkio_v1 is not None:
        io = _blkio_v1(group.blkio_v1, device_number)
    return CgroupCounters(
        user, system, some, io, anon, refault, limit, cpu, **_contention(group, cpu)
    )


def _contention(group: Cgroup, cpu_stat: Mapping[str, float]) -> dict[str, float | None]:
    """Pressure, CPU quota and throttling, and memory use beyond ``anon`` of ``group``."""
    out: dict[str, float | None] = {}
    if group.unified is not None:
        cpu = _pressure(_optional_file(group.unified / "cpu.pressure"))
        memory = _pressure(_optional_file(group.unified / "memory.pressure"))
        out |= {
            "cpu_some_usec": cpu.get("some"),
            "memory_some_usec": memory.get("some"),
            "memory_full_usec": memory.get("full"),
        }
        if "throttled_usec" in cpu_stat:
            out["throttled_usec"] = cpu_stat["throttled_usec"]
        quota = (_optional_file(group.unified / "cpu.max") or "").split()
        if len(quota) == 2:
            out["cpu_limit"] = _quota(quota[0], quota[1], "max")
    if group.cpu_v1 is not None:
        stat = parse_keyed(_optional_file(group.cpu_v1 / "cpu.stat") or "")
        if "throttled_time" in stat:  # nanoseconds
            out["throttled_usec"] = stat["throttled_time"] / 1e3
        quota_us = (_optional_file(group.cpu_v1 / "cpu.cfs_quota_us") or "").strip()
        period_us = (_optional_file(group.cpu_v1 / "cpu.cfs_period_us") or "").strip()
        if quota_us and period_us:
            out["cpu_limit"] = _quota(quota_us, period_us, "-1")
    if group.memory_v1 is not None:
        mem = parse_keyed(_optional_file(group.memory_v1 / "memory.stat") or "")

        def total(key: str) -> float | None:  # hierarchical (total_*) where written
            return mem.get(f"total_{key}", mem.get(key))

        out |= {
            "mem_current": _value(_optional_file(group.memory_v1 / "memory.usage_in_bytes")),
            "mem_file": total("cache"),
            "mem_dirty": total("dirty"),
            "mem_writeback": total("writeback"),
            "mem_majfault": total("pgmajfault"),
            "mem_limit_hits": _value(_optional_file(group.memory_v1 / "memory.failcnt")),
        }
    elif group.unified is not None:
        mem = parse_keyed(_optional_file(group.unified / "memory.stat") or "")
        events = parse_keyed(_optional_file(group.unified / "memory.events") or "")
        out |= {
            "mem_current": _value(_optional_file(group.unified / "memory.current")),
            "mem_file": mem.get("file"),
            "mem_dirty": mem.get("file_dirty"),
            "mem_writeback": mem.get("file_writeback"),
            "mem_majfault": mem.get("pgmajfault"),
            "mem_limit_hits": (events["max"] + events.get("high", 0.0))
            if "max" in events
            else None,
        }
    return out


def _quota(quota: str, period: str, unlimited: str) -> float | None:
    """A CPU quota in cores (``inf`` when ``quota`` is ``unlimited``)."""
    if quota == unlimited:
        return float("inf")
    try:
        cores = float(quota) / float(period)
    except (ValueError, ZeroDivisionError):
        return None
    return cores if cores > 0 else None


def _blkio_v1(directory: Path, device: str | None) -> dict[str, float]:
    """The v1 blkio controller's reads of ``device`` (``MAJ:MIN``), as io.stat's
    ``read_bytes`` and ``reads`` (absent until it shows a line for the device: kernels that do
    not account there never do). Its writes are left out: in v1 the write-back of buffered
    writes is the flusher's, not the cgroup's, so /proc/<pid>/io says more about what the
    cgroup writes."""
    if device is None:
        return {}
    out: dict[str, float] = {}
    for name, key in (
        ("blkio.throttle.io_service_bytes_recursive", "read_bytes"),
        ("blkio.throttle.io_serviced_recursive", "reads"),
    ):
        text = _optional_file(directory / name)
        for line in (text or "").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == device and parts[1] == "Read":
                with contextlib.suppress(ValueError):
                    out[key] = float(parts[2])
    return out


def _cgroup2_root(proc: Path) -> Path | None:
    """Mount point of the cgroup v2 hierarchy, if there is one."""
    text = _optional_file(proc / "self" / "mountinfo")
    for line in (text or "").splitlines():
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            return Path(left.split()[4])
    return None


def read_own_cgroup(proc: Path = Path("/proc")) -> tuple[dict[str, float], dict[str, float]]:
    """cgroup v2 counters of the reading process's own cgroup: ``(cumulative, gauges)``.

    Empty where the machine has no cgroup v2 hierarchy (or only controllers elsewhere).
    Cumulative: ``cgroup.cpu.usage`` / ``user`` / ``system`` (CPU-seconds),
    ``cgroup.cpu.throttled`` (seconds). Gauges: ``cgroup.memory.current`` (bytes).
    """
    cumulative: dict[str, float] = {}
    gauges: dict[str, float] = {}
    root = _cgroup2_root(proc)
    if root is None:
        return cumulative, gauges
    lines = (_optional_file(proc / "self" / "cgroup") or "").splitlines()
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
    for key, value in parse_keyed(_optional_file(group / "cpu.stat") or "").items():
        if key in names:
            cumulative[names[key]] = value / 1e6
    current = _value(_optional_file(group / "memory.current"))
    if current is not None:
        gauges["cgroup.memory.current"] = current
    return cumulative, gauges
