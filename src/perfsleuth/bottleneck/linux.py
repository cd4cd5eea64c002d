"""Linux counters for the bottleneck model: /proc, one block device, and a workload's cgroup.

:class:`LinuxCounters` reads cumulative counters and levels; two readings give one row per
counter of the counter frame (rates per second, in the built-in model's units):

=====================  ==========================================================================
``cpu.user``           cores: Δ(user + nice) of /proc/stat
``cpu.system``         cores: Δ(system + irq + softirq)
``disk.reads`` …       /proc/diskstats of the device: reads/s, bytes/s, writes/s, bytes/s,
                       ``disk.busy`` (share of time with I/O in flight), ``disk.inflight``
                       (average requests in flight, aqu-sz)
``mem.refault``        pages/s: Δ workingset_refault_file
``cg.cpu.*``           the cgroup's cpu.stat user/system (cgroup v2; v1 cpuacct.stat)
``cg.io.*``            io.stat of the device (v2 io controller), else Σ /proc/<pid>/io of the
                       cgroup's processes (bytes only)
``cg.app.*``           Σ /proc/<pid>/io syscr, rchar, syscw, wchar of the cgroup's processes
``cg.mem.*``           memory.stat: ``anon`` (bytes), ``refault`` (pages/s); ``cg.mem.limit``
                       (bytes, MemTotal if unlimited)
``cg.psi.*``           io.pressure / memory.pressure "some": share of time stalled
=====================  ==========================================================================

Hosts with both hierarchies (cgroup v1 controllers, v2 mounted at ``/sys/fs/cgroup/unified``)
are handled: cpu.stat and pressure come from the unified hierarchy, memory from the v1 memory
controller. A counter that cannot be read (no such file, no permission) is left out, not
guessed; processes that exit between readings are skipped.

Not collected, because they do not count what they seem to on current kernels: page-cache
insertions (memcg ``pgpgin`` counts folios, not pages, and pages dropped by invalidation are
never "stolen"), and memory pressure, which counts only refaults of pages that were active.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from perfsleuth.errors import SourceError

__all__ = ["Cgroup", "LinuxCounters", "Reading", "block_device_of"]

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_SECTOR = 512


@dataclass(frozen=True)
class Reading:
    """Raw values at one instant: cumulative counters and levels, by name."""

    monotonic: float
    wall: datetime
    values: dict[str, float]
    pids: dict[int, dict[str, float]] = field(default_factory=dict)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, ValueError):
        return None


def _keyed(text: str | None) -> dict[str, float]:
    """``key value`` lines (vmstat, memory.stat, cpu.stat, /proc/<pid>/io with ':')."""
    out: dict[str, float] = {}
    for line in (text or "").splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                continue
    return out


def block_device_of(path: str | Path, sys_root: Path = Path("/sys")) -> str:
    """The whole-disk name (``vda``, ``nvme0n1``) holding ``path``."""
    st = os.stat(path)
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


@dataclass(frozen=True)
class Cgroup:
    """Where one workload's cgroup lives in each hierarchy (v2 and, on hybrid hosts, v1)."""

    name: str
    unified: Path | None
    memory_v1: Path | None
    cpuacct_v1: Path | None

    @classmethod
    def find(cls, name: str, root: Path = Path("/sys/fs/cgroup")) -> Cgroup:
        name = name.strip("/")
        pure_v2 = (root / "cgroup.controllers").exists()
        unified = root / name if pure_v2 else root / "unified" / name
        memory = root / "memory" / name
        cpuacct = root / "cpuacct" / name
        found = cls(
            name,
            unified if unified.is_dir() else None,
            None if pure_v2 or not memory.is_dir() else memory,
            None if pure_v2 or not cpuacct.is_dir() else cpuacct,
        )
        if found.unified is None and found.memory_v1 is None:
            raise SourceError(f"no cgroup {name!r} under {root}")
        return found

    @classmethod
    def create(
        cls, name: str, *, memory_limit: int | None = None, root: Path = Path("/sys/fs/cgroup")
    ) -> Cgroup:
        """Make the cgroup in every hierarchy that takes it (v2; v1 memory and cpuacct on
        hybrid hosts), with an optional memory limit in bytes."""
        name = name.strip("/")
        pure_v2 = (root / "cgroup.controllers").exists()
        try:
            if pure_v2:
                (root / name).mkdir(parents=True, exist_ok=True)
                if memory_limit is not None:
                    (root / name / "memory.max").write_text(str(int(memory_limit)))
            else:
                (root / "unified" / name).mkdir(parents=True, exist_ok=True)
                for hierarchy in ("memory", "cpuacct"):
                    if (root / hierarchy).is_dir():
                        (root / hierarchy / name).mkdir(parents=True, exist_ok=True)
                if memory_limit is not None:
                    (root / "memory" / name / "memory.limit_in_bytes").write_text(
                        str(int(memory_limit))
                    )
        except OSError as exc:
            raise SourceError(f"cannot create cgroup {name!r}: {exc.strerror or exc}") from exc
        return cls.find(name, root)

    def directories(self) -> list[Path]:
        return [p for p in (self.unified, self.memory_v1, self.cpuacct_v1) if p is not None]

    def add(self, pid: int) -> None:
        """Move process ``pid`` into the cgroup in every hierarchy."""
        for directory in self.directories():
            try:
                (directory / "cgroup.procs").write_text(str(pid))
            except OSError as exc:
                raise SourceError(f"cannot move {pid} into {directory}: {exc.strerror}") from exc

    def pids(self) -> list[int]:
        directory = self.unified or self.memory_v1
        assert directory is not None
        text = _read(directory / "cgroup.procs") or ""
        return [int(p) for p in text.split() if p.isdigit()]

    def remove(self) -> None:
        """Remove the (empty) cgroup directories; best effort."""
        for directory in self.directories():
            for _ in range(50):  # processes may take a moment to leave after exit
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


@contextmanager
def temporary_cgroup(
    name: str, *, memory_limit: int | None = None, root: Path = Path("/sys/fs/cgroup")
) -> Iterator[Cgroup]:
    """A cgroup for the duration of a block (created, then removed)."""
    group = Cgroup.create(name, memory_limit=memory_limit, root=root)
    try:
        yield group
    finally:
        group.remove()


class LinuxCounters:
    """Reads the counters of the built-in Linux model.

    Parameters
    ----------
    device
        Whole-disk name (``vda``); default: the device holding ``/``.
    cgroup
        The workload's cgroup (name relative to the cgroup root), for ``cg.*`` counters.
    entity
        Entity of the rows; default: the host name, with ``/<cgroup>`` when one is given.
    proc, sys_root, cgroup_root
        Where /proc, /sys and the cgroup mount are (tests point these at fixtures).
    """

    def __init__(
        self,
        *,
        device: str | None = None,
        cgroup: str | Cgroup | None = None,
        entity: str | None = None,
        proc: Path = Path("/proc"),
        sys_root: Path = Path("/sys"),
        cgroup_root: Path = Path("/sys/fs/cgroup"),
    ) -> None:
        self.proc = proc
        self.sys_root = sys_root
        self.device = device or block_device_of("/", sys_root)
        if isinstance(cgroup, Cgroup) or cgroup is None:
            self.cgroup = cgroup
        else:
            self.cgroup = Cgroup.find(cgroup, cgroup_root)
        host = os.uname().nodename
        self.entity = entity or (host if self.cgroup is None else f"{host}/{self.cgroup.name}")
        self._last: Reading | None = None
        if self._disk(_read(proc / "diskstats")) is None:
            raise SourceError(f"{proc / 'diskstats'}: no device {self.device!r}")

    # -- reading ------------------------------------------------------------------------------

    def read(self) -> Reading:
        values: dict[str, float] = {}
        stat = (_read(self.proc / "stat") or "").split("\n", 1)[0].split()
        if stat and stat[0] == "cpu":
            ticks = [float(v) for v in stat[1:]] + [0.0] * 10
            values["cpu.user_ticks"] = ticks[0] + ticks[1]
            values["cpu.system_ticks"] = ticks[2] + ticks[5] + ticks[6]
            values["cpu.iowait_ticks"] = ticks[4]
        disk = self._disk(_read(self.proc / "diskstats"))
        if disk is not None:
            values.update(disk)
        vm = _keyed(_read(self.proc / "vmstat"))
        if "pgmajfault" in vm:
            values["vm.pgmajfault"] = vm["pgmajfault"]
        refault = vm.get("workingset_refault_file", vm.get("workingset_refault"))
        if refault is not None:
            values["vm.refault"] = refault
        meminfo = _keyed(_read(self.proc / "meminfo"))
        if "MemTotal" in meminfo:
            values["mem.total"] = meminfo["MemTotal"] * 1024
        if "MemAvailable" in meminfo:
            values["mem.available"] = meminfo["MemAvailable"] * 1024
        pids: dict[int, dict[str, float]] = {}
        if self.cgroup is not None:
            values.update(self._cgroup(values.get("mem.total")))
            pids = self._pid_io()
        return Reading(time.monotonic(), datetime.now(UTC), values, pids)

    def _disk(self, text: str | None) -> dict[str, float] | None:
        for line in (text or "").splitlines():
            parts = line.split()
            if len(parts) >= 14 and parts[2] == self.device:
                f = [float(v) for v in parts[3:14]]
                return {
                    "disk.reads_n": f[0],
                    "disk.read_sectors": f[2],
                    "disk.writes_n": f[4],
                    "disk.write_sectors": f[6],
                    "disk.io_ms": f[9],
                    "disk.weighted_ms": f[10],
                }
        return None

    def _cgroup(self, mem_total: float | None) -> dict[str, float]:
        assert self.cgroup is not None
        out: dict[str, float] = {}
        group = self.cgroup
        if group.unified is not None:
            cpu = _keyed(_read(group.unified / "cpu.stat"))
            if "user_usec" in cpu:
                out["cg.user_usec"] = cpu["user_usec"]
                out["cg.system_usec"] = cpu.get("system_usec", 0.0)
            some = _pressure(_read(group.unified / "io.pressure"))
            if some is not None:
                out["cg.psi_io_usec"] = some
            io = _io_stat(_read(group.unified / "io.stat"), self._device_number())
            out.update(io)
            if group.memory_v1 is None:
                mem = _keyed(_read(group.unified / "memory.stat"))
                if "anon" in mem:
                    out["cg.mem.anon"] = mem["anon"]
                    out["cg.refault"] = mem.get("workingset_refault_file", 0.0)
                limit = _read(group.unified / "memory.max")
                if limit is not None:
                    out["cg.mem.limit"] = _limit(limit, mem_total)
        if group.memory_v1 is not None:
            mem = _keyed(_read(group.memory_v1 / "memory.stat"))
            if "rss" in mem:
                out["cg.mem.anon"] = mem["rss"]
                out["cg.refault"] = mem.get(
                    "workingset_refault_file", mem.get("workingset_refault", 0.0)
                )
            limit = _read(group.memory_v1 / "memory.limit_in_bytes")
            if limit is not None:
                out["cg.mem.limit"] = _limit(limit, mem_total)
        if "cg.user_usec" not in out and group.cpuacct_v1 is not None:
            acct = _keyed(_read(group.cpuacct_v1 / "cpuacct.stat"))
            if "user" in acct:
                out["cg.user_usec"] = acct["user"] / _TICKS * 1e6
                out["cg.system_usec"] = acct.get("system", 0.0) / _TICKS * 1e6
        return out

    def _device_number(self) -> str | None:
        text = _read(self.sys_root / "block" / self.device / "dev")
        return text.strip() if text else None

    def _pid_io(self) -> dict[int, dict[str, float]]:
        assert self.cgroup is not None
        out = {}
        for pid in self.cgroup.pids():
            io = _keyed(_read(self.proc / str(pid) / "io"))
            if io:
                out[pid] = io
        return out

    # -- rates ------------------------------------------------------------------------------

    def rates(self, before: Reading, after: Reading) -> dict[str, float]:
        """Counter values for the interval between two readings (model units)."""
        dt = after.monotonic - before.monotonic
        if dt <= 0:
            raise SourceError("readings out of order (no time passed between them)")
        a, b = before.values, after.values
        out: dict[str, float] = {}

        def delta(key: str) -> float | None:
            if key in a and key in b:
                return (b[key] - a[key]) / dt
            return None

        def put(name: str, value: float | None, factor: float = 1.0) -> None:
            if value is not None:  # a counter that went backwards was reset: count 0, not < 0
                out[name] = max(value * factor, 0.0)

        put("cpu.user", delta("cpu.user_ticks"), 1.0 / _TICKS)
        put("cpu.system", delta("cpu.system_ticks"), 1.0 / _TICKS)
        put("cpu.iowait", delta("cpu.iowait_ticks"), 1.0 / _TICKS)
        put("disk.reads", delta("disk.reads_n"))
        put("disk.read_bytes", delta("disk.read_sectors"), _SECTOR)
        put("disk.writes", delta("disk.writes_n"))
        put("disk.write_bytes", delta("disk.write_sectors"), _SECTOR)
        put("disk.busy", delta("disk.io_ms"), 1e-3)
        put("disk.inflight", delta("disk.weighted_ms"), 1e-3)
        put("mem.refault", delta("vm.refault"))
        put("mem.majfault", delta("vm.pgmajfault"))
        if "mem.available" in b:
            out["mem.available"] = b["mem.available"]
        put("cg.cpu.user", delta("cg.user_usec"), 1e-6)
        put("cg.cpu.system", delta("cg.system_usec"), 1e-6)
        put("cg.psi.io", delta("cg.psi_io_usec"), 1e-6)
        for key in ("cg.io.read_bytes", "cg.io.write_bytes", "cg.io.reads", "cg.io.writes"):
            put(key, delta(key))
        if "cg.mem.anon" in b:
            out["cg.mem.anon"] = b["cg.mem.anon"]
        if "cg.mem.limit" in b:
            out["cg.mem.limit"] = b["cg.mem.limit"]
        put("cg.mem.refault", delta("cg.refault"))
        if self.cgroup is not None:
            out.update(_pid_rates(before.pids, after.pids, dt, "cg.io.read_bytes" not in out))
        return out

    def sample(self) -> list[dict[str, Any]]:
        """Read now; rows for the interval since the previous call (none on the first)."""
        reading = self.read()
        rows: list[dict[str, Any]] = []
        if self._last is not None:
            rates = self.rates(self._last, reading)
            rows = [
                {"time": reading.wall, "entity": self.entity, "counter": k, "value": v}
                for k, v in sorted(rates.items())
            ]
        self._last = reading
        return rows

    def collect(self, seconds: float, interval: float = 1.0) -> pd.DataFrame:
        """Sample every ``interval`` seconds for ``seconds``; a counter frame."""
        rows: list[dict[str, Any]] = []
        self.sample()
        deadline = time.monotonic() + seconds
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            time.sleep(min(interval, deadline - now))
            rows += self.sample()
        return pd.DataFrame(rows, columns=["time", "entity", "counter", "value"])


def _pressure(text: str | None) -> float | None:
    for line in (text or "").splitlines():
        if line.startswith("some"):
            for part in line.split():
                if part.startswith("total="):
                    return float(part[6:])
    return None


def _limit(text: str, mem_total: float | None) -> float:
    raw = text.strip()
    value = float("inf") if raw == "max" else float(raw)
    return min(value, mem_total) if mem_total is not None else value


def _io_stat(text: str | None, device: str | None) -> dict[str, float]:
    """cgroup v2 io.stat line of ``device`` (``MAJ:MIN rbytes=… wbytes=… rios=… wios=…``)."""
    if device is None:
        return {}
    for line in (text or "").splitlines():
        parts = line.split()
        if parts and parts[0] == device:
            fields = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
            names = {
                "rbytes": "read_bytes",
                "wbytes": "write_bytes",
                "rios": "reads",
                "wios": "writes",
            }
            return {f"cg.io.{names[k]}": float(v) for k, v in fields.items() if k in names}
    return {}


def _pid_rates(
    before: Mapping[int, Mapping[str, float]],
    after: Mapping[int, Mapping[str, float]],
    dt: float,
    with_io: bool,
) -> dict[str, float]:
    """Σ over the cgroup's processes of /proc/<pid>/io deltas (new processes count from 0)."""
    keys = {
        "syscr": "cg.app.read_ops",
        "rchar": "cg.app.read_bytes",
        "syscw": "cg.app.write_ops",
        "wchar": "cg.app.write_bytes",
    }
    if with_io:
        keys |= {"read_bytes": "cg.io.read_bytes", "write_bytes": "cg.io.write_bytes"}
    totals = dict.fromkeys(keys.values(), 0.0)
    for pid, now in after.items():
        then = before.get(pid, {})
        for key, name in keys.items():
            if key in now:
                totals[name] += max(now[key] - then.get(key, 0.0), 0.0)
    if not after:
        return {}
    return {name: total / dt for name, total in totals.items()}
