"""A small /proc sampler producing process-frame rows (Linux only; standard library only).

Per sample and process: CPU in cores over the interval since the previous sample (Δ(utime +
stime) / clock ticks / Δt), RSS, the size of the regular files it holds open for writing
(``file_bytes``: a growing log shows here), and for the machine: cores busy over the interval
from ``/proc/stat`` (``machine_cpu``) and the CPU count. Every reading comes from
:mod:`perfsleuth.sources.procfs`; a process that vanishes mid-sample is skipped, not an error.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfsleuth.sources.procfs import TICKS, read_processes, read_stat

__all__ = ["ProcSampler"]


def _user(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (KeyError, ImportError):
        return str(uid)


@dataclass
class ProcSampler:
    """Sample ``pids`` (all processes when None) from ``/proc``; rows accumulate in ``rows``."""

    node: str
    pids: Iterable[int] | None = None
    proc: Path = Path("/proc")
    rows: list[dict[str, Any]] = field(default_factory=list)
    _last: dict[int, tuple[float, float]] = field(default_factory=dict)
    _machine: tuple[float, float, float] | None = None

    def sample(self, when: datetime | None = None) -> int:
        """Take one sample; returns the rows added (none on the first call: no interval yet)."""
        now = time.monotonic()
        stamp = when or datetime.now(UTC)
        busy, total = read_stat(self.proc).busy_and_total()
        ncpu = float(os.cpu_count() or 1)
        machine = None
        if self._machine is not None:
            _, b0, tot0 = self._machine
            if total > tot0:
                machine = ncpu * (busy - b0) / (total - tot0)
        self._machine = (now, busy, total)
        wanted = None if self.pids is None else list(self.pids)
        readings = read_processes(self.proc, with_io=False, with_files=True, pids=wanted)
        seen = set()
        added = 0
        for r in readings:
            if r.file_bytes is None:  # its open files could not be listed: as good as gone
                continue
            seen.add(r.pid)
            seconds = r.cpu_ticks / TICKS
            before = self._last.get(r.pid)
            self._last[r.pid] = (now, seconds)
            if before is None or machine is None or now <= before[0]:
                continue
            self.rows.append(
                {
                    "time": stamp,
                    "node": self.node,
                    "pid": r.pid,
                    "name": r.name,
                    "user": _user(r.uid),
                    "cpu": max(seconds - before[1], 0.0) / (now - before[0]),
                    "rss_bytes": r.rss_bytes,
                    "file_bytes": r.file_bytes,
                    "machine_cpu": min(max(machine, 0.0), ncpu),
                    "ncpu": ncpu,
                    "os": "Linux",
                }
            )
            added += 1
        for pid in set(wanted if wanted is not None else self._last) - seen:
            self._last.pop(pid, None)
        return added
