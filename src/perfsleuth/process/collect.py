"""A small /proc sampler producing process-frame rows (Linux only; standard library only).

Per sample and process: CPU in cores over the interval since the previous sample (Δ(utime +
stime) / clock ticks / Δt), RSS (``VmRSS``), the size of the regular files it holds open for
writing (``file_bytes``: a growing log shows here), and for the machine: cores busy over the
interval from ``/proc/stat`` (``machine_cpu``) and the CPU count. A process that vanishes
mid-sample is skipped, not an error.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["ProcSampler"]

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_WRITE = os.O_WRONLY | os.O_RDWR


def _machine_ticks(proc: Path) -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    fields = (proc / "stat").read_text().split("\n", 1)[0].split()[1:]
    values = [float(v) for v in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
    total = sum(values[:8])
    return total - idle, total


def _process(proc: Path, pid: int) -> tuple[str, str, float, float, float] | None:
    """(name, user, cpu seconds, rss bytes, bytes of files open for writing) or None if gone."""
    base = proc / str(pid)
    try:
        stat = (base / "stat").read_text()
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2 :].split()
        seconds = (float(rest[11]) + float(rest[12])) / _TICKS  # utime, stime
        rss = float(rest[21]) * _PAGE
        uid = (base / "status").read_text().split("Uid:", 1)[1].split()[0]
        files = 0.0
        for fd in (base / "fd").iterdir():
            try:
                info = (base / "fdinfo" / fd.name).read_text()
                flags = int(info.split("flags:", 1)[1].split()[0], 8)
                if flags & _WRITE:
                    st = fd.stat()
                    if (st.st_mode & 0o170000) == 0o100000:  # regular file
                        files += st.st_size
            except (OSError, IndexError, ValueError):
                continue
    except (OSError, IndexError, ValueError):
        return None
    try:
        import pwd

        user = pwd.getpwuid(int(uid)).pw_name
    except (KeyError, ImportError, ValueError):
        user = uid
    return name, user, seconds, rss, files


@dataclass
class ProcSampler:
    """Sample ``pids`` (all processes when None) from ``/proc``; rows accumulate in ``rows``."""

    node: str
    pids: Iterable[int] | None = None
    proc: Path = Path("/proc")
    rows: list[dict[str, Any]] = field(default_factory=list)
    _last: dict[int, tuple[float, float]] = field(default_factory=dict)
    _machine: tuple[float, float, float] | None = None

    def _pids(self) -> list[int]:
        if self.pids is not None:
            return list(self.pids)
        return [int(p.name) for p in self.proc.iterdir() if p.name.isdigit()]

    def sample(self, when: datetime | None = None) -> int:
        """Take one sample; returns the rows added (none on the first call: no interval yet)."""
        now = time.monotonic()
        stamp = when or datetime.now(UTC)
        busy, total = _machine_ticks(self.proc)
        ncpu = float(os.cpu_count() or 1)
        machine = None
        if self._machine is not None:
            _, b0, tot0 = self._machine
            if total > tot0:
                machine = ncpu * (busy - b0) / (total - tot0)
        self._machine = (now, busy, total)
        added = 0
        for pid in self._pids():
            got = _process(self.proc, pid)
            if got is None:
                self._last.pop(pid, None)
                continue
            name, user, seconds, rss, files = got
            before = self._last.get(pid)
            self._last[pid] = (now, seconds)
            if before is None or machine is None or now <= before[0]:
                continue
            self.rows.append(
                {
                    "time": stamp,
                    "node": self.node,
                    "pid": pid,
                    "name": name,
                    "user": user,
                    "cpu": max(seconds - before[1], 0.0) / (now - before[0]),
                    "rss_bytes": rss,
                    "file_bytes": files,
                    "machine_cpu": min(max(machine, 0.0), ncpu),
                    "ncpu": ncpu,
                    "os": "Linux",
                }
            )
            added += 1
        return added
