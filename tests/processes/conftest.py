"""Builders of small process frames for the rule tests: one row per process per hour."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from perfsleuth.findings import Finding
from perfsleuth.processes.checks import CheckName
from perfsleuth.processes.detector import ProcessDetector
from perfsleuth.processes.rules import DEFAULT_RULES, ProcessRules

START = pd.Timestamp("2024-03-04", tz="UTC")


def frame(
    procs: Mapping[tuple[str, int], Sequence[float]],
    *,
    ncpu: float = 4.0,
    os: str = "Linux",
    machine: Sequence[float] | None = None,
    rss: dict[tuple[str, int], Sequence[float]] | None = None,
    files: dict[tuple[str, int], Sequence[float]] | None = None,
    volume: Sequence[float] | None = None,
    node: str = "n1",
    users: dict[str, str] | None = None,
    step: str = "1h",
) -> pd.DataFrame:
    """A process frame: ``procs[(name, pid)]`` is the CPU (cores) per step; NaN = not running."""
    rows = []
    length = max(len(v) for v in procs.values())
    times = pd.date_range(START, periods=length, freq=step)
    total = np.zeros(length)
    for values in procs.values():
        total += np.nan_to_num(np.asarray(values, dtype=float))
    for (name, pid), values in procs.items():
        for i, cpu in enumerate(values):
            if not np.isfinite(cpu):
                continue
            row = {
                "time": times[i],
                "node": node,
                "pid": pid,
                "name": name,
                "user": (users or {}).get(name, "app"),
                "cpu": float(cpu),
                "rss_bytes": float(rss[(name, pid)][i]) if rss and (name, pid) in rss else 1e7,
                "ncpu": ncpu,
                "os": os,
                "machine_cpu": float(machine[i]) if machine is not None else float(total[i]),
            }
            if files is not None:
                row["file_bytes"] = float(files.get((name, pid), [0.0] * length)[i])
            if volume is not None:
                row["volume"] = float(volume[i])
            rows.append(row)
    return pd.DataFrame(rows)


def detect(
    data: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    *checks: CheckName,
) -> list[Finding]:
    """The findings of :class:`ProcessDetector` with ``rules`` and ``checks`` (default: all)."""
    if checks:
        return ProcessDetector(rules=rules, checks=checks).detect(data)
    return ProcessDetector(rules=rules).detect(data)
