"""One node's process frame as period matrices: the shape every check works on.

Kaminski's checks look at "24 one-hour periods each day": per process, the CPU it consumed in
each hour. :func:`node_periods` turns one node's rows into

* ``cpu[p, b]``: cores process ``p`` used on average over period ``b``. A process absent from
  some of the node's sample instants counts 0 there (it used no CPU), so a process that ran at
  one full CPU for 10 of 60 minutes has 1/6 for the hour — CPU seconds / period, as in the paper;
* ``rss[p, b]`` (and ``files[p, b]``): the mean of the samples present, NaN when absent;
* ``busy[b]``: cores busy on the whole machine (``machine_cpu``; without it, Σ process CPU);
* ``saturated[b]``: ``busy / ncpu >= settings.saturation``;
* ``window[b]``: the review window (day) the period falls in, aligned to the Unix epoch (UTC
  midnight for whole days).

Periods run from the first to the last period with data, so holes are explicit
(``covered[b]`` is False there and no check counts them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from perfsleuth.errors import DataError

__all__ = ["NodePeriods", "node_periods"]

_NEEDED = ("time", "node", "pid", "name", "user", "cpu", "rss_bytes")
_NUMERIC = ("cpu", "rss_bytes", "machine_cpu", "ncpu", "volume", "file_bytes")


@dataclass(frozen=True, slots=True, eq=False)
class NodePeriods:
    """One node's processes by period (see the module docstring for the conventions)."""

    node: str
    os: str
    ncpu: float
    """CPU count (NaN when the frame has no ``ncpu`` column)."""
    period: timedelta
    starts: pd.DatetimeIndex
    window: NDArray[np.int64]
    covered: NDArray[np.bool_]
    pid: NDArray[np.int64]
    name: list[str]
    user: list[str]
    cpu: NDArray[np.float64]
    present: NDArray[np.bool_]
    columns: dict[str, NDArray[np.float64]]
    """Per-process means of ``rss_bytes`` (and ``file_bytes`` when given), NaN when absent."""
    busy: NDArray[np.float64]
    captured: NDArray[np.float64]
    has_machine: bool
    volume: NDArray[np.float64] | None
    saturated: NDArray[np.bool_]

    @property
    def n_periods(self) -> int:
        return len(self.starts)

    def label(self, p: int) -> str:
        """``name[pid]``: how people name a process."""
        return f"{self.name[p]}[{self.pid[p]}]"

    def start(self, b: int) -> datetime:
        value: datetime = self.starts[b].to_pydatetime()
        return value

    def end(self, b: int) -> datetime:
        value: datetime = (self.starts[b] + self.period).to_pydatetime()
        return value


def _check(frame: pd.DataFrame) -> None:
    absent = [c for c in _NEEDED if c not in frame.columns]
    if absent:
        raise DataError(f"process frame is missing column(s) {', '.join(map(repr, absent))}")
    for column in _NUMERIC:
        if column in frame.columns:
            values = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
            bad = ~np.isfinite(values)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"process frame: column {column!r}: missing or infinite value at row {row} "
                    "(normalise(frame, 'process', missing='drop') skips such rows)"
                )


def node_periods(
    frame: pd.DataFrame, *, period: timedelta, per_window: int, saturation: float
) -> NodePeriods:
    """Aggregate one node's rows (all with the same ``node``) into :class:`NodePeriods`."""
    _check(frame)
    nodes = frame["node"].unique()
    if len(nodes) != 1:
        raise DataError(f"node_periods takes one node's rows, got {len(nodes)} nodes")
    step = int(period.total_seconds() * 1e9)
    times = pd.DatetimeIndex(frame["time"]).as_unit("ns").asi8
    bucket_abs = times // step
    first = int(bucket_abs.min())
    n_periods = int(bucket_abs.max()) - first + 1
    bucket = (bucket_abs - first).astype(np.int64)

    instants, first_row = np.unique(times, return_index=True)
    instant_bucket = instants // step - first
    n_inst = np.bincount(instant_bucket, minlength=n_periods).astype(np.float64)
    covered = n_inst > 0
    per_inst = np.where(covered, n_inst, 1.0)

    # one key per (pid, name), numbered in sorted order; numpy on factorised names is several
    # times faster than groupby(["pid", "name"]).ngroup() and gives the same numbers
    name_codes, name_values = pd.factorize(frame["name"], sort=True)
    pid_values = frame["pid"].to_numpy(dtype=np.int64)
    combined = (pid_values - pid_values.min()) * max(1, len(name_values)) + name_codes
    keys = np.unique(combined, return_inverse=True)[1].reshape(-1)
    n_proc = int(keys.max()) + 1
    first_of = np.full(n_proc, -1, dtype=np.int64)
    first_of[keys[::-1]] = np.arange(len(keys))[::-1]  # first row of each process
    flat = keys * n_periods + bucket
    size = n_proc * n_periods

    cpu_values = frame["cpu"].to_numpy(dtype=np.float64)
    cpu: NDArray[np.float64] = (
        np.bincount(flat, weights=cpu_values, minlength=size).reshape(n_proc, n_periods) / per_inst
    )
    count = np.bincount(flat, minlength=size).reshape(n_proc, n_periods)
    present = count > 0
    columns = {}
    for column in ("rss_bytes", "file_bytes"):
        if column in frame.columns:
            sums = np.bincount(
                flat, weights=frame[column].to_numpy(dtype=np.float64), minlength=size
            ).reshape(n_proc, n_periods)
            with np.errstate(invalid="ignore", divide="ignore"):
                columns[column] = np.where(present, sums / np.maximum(count, 1), np.nan)

    captured = cpu.sum(axis=0)
    has_machine = "machine_cpu" in frame.columns
    if has_machine:
        machine = frame["machine_cpu"].to_numpy(dtype=np.float64)[first_row]
        busy = np.bincount(instant_bucket, weights=machine, minlength=n_periods) / per_inst
    else:
        busy = captured.copy()
    volume = None
    if "volume" in frame.columns:
        vol = frame["volume"].to_numpy(dtype=np.float64)[first_row]
        volume = np.bincount(instant_bucket, weights=vol, minlength=n_periods) / per_inst

    ncpu = float("nan")
    if "ncpu" in frame.columns:
        values = np.unique(frame["ncpu"].to_numpy(dtype=np.float64))
        if len(values) != 1 or not values[0] > 0:
            raise DataError(
                f"node {nodes[0]!r}: column 'ncpu' must be one positive number per node, "
                f"got {values[:5].tolist()}"
            )
        ncpu = float(values[0])
    os_name = str(frame["os"].iat[0]) if "os" in frame.columns else "default"
    saturated = (
        (busy >= saturation * ncpu) & covered if np.isfinite(ncpu) else np.zeros_like(covered)
    )

    period_ns = (first + np.arange(n_periods, dtype=np.int64)) * step
    starts = pd.DatetimeIndex(pd.to_datetime(period_ns, unit="ns", utc=True))
    rows = first_of
    return NodePeriods(
        node=str(nodes[0]),
        os=os_name,
        ncpu=ncpu,
        period=period,
        starts=starts,
        window=(first + np.arange(n_periods, dtype=np.int64)) // per_window,
        covered=covered,
        pid=frame["pid"].to_numpy(dtype=np.int64)[rows],
        name=[str(v) for v in frame["name"].to_numpy()[rows]],
        user=[str(v) for v in frame["user"].to_numpy()[rows]],
        cpu=cpu,
        present=present,
        columns=columns,
        busy=busy,
        captured=captured,
        has_machine=has_machine,
        volume=volume,
        saturated=saturated,
    )
