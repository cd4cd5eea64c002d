"""Processes by period, for many nodes at once: the shape every check works on.

Kaminski's checks look at "24 one-hour periods each day": per process, the CPU it consumed in
each hour. :func:`build` turns the rows of any number of nodes (:class:`Columns`: a process
frame as numpy columns) into one :class:`Periods`, in one pass over the columns — no group per
node — so a fleet of thousands of nodes is checked as fast as one big node:

* a **process** is ``node + pid + start time`` (``start_time``, Unix seconds, as the collector
  records it); without start times, ``node + pid + name``. Two processes that shared a pid are
  two processes, and a process keeps its identity when it changes its name (exec);
* ``cpu[p, t]``: cores process ``p`` used on average over period ``t`` of its node. A process
  absent from some of the node's sample instants counts 0 there (it used no CPU), so a process
  that ran at one full CPU for 10 of 60 minutes has 1/6 for the hour — CPU seconds / period,
  as in the paper; ``wait[p, t]`` the same for the time it waited in a run queue (NaN where the
  source has no wait): ``cpu + wait`` is the CPU it *wanted*;
* ``columns[c][p, t]`` (``rss_bytes``, ``file_bytes``): the mean of the samples present, NaN
  when absent;
* ``busy[n, t]``: cores busy on the whole machine (``machine_cpu`` when the source has it —
  the collector, /proc/stat, node-exporter; without it, Σ process CPU);
* ``saturated[n, t]``: ``busy / ncpu`` at least ``settings.saturation``, or within
  ``settings.saturation_margin`` below it in a stretch of such periods that touches one at
  or above it (hysteresis: a machine hovering at the threshold is not saturated one period
  in two);
* the review window (day) of period ``t`` of node ``n`` is ``(first[n] + t) // per_window``,
  aligned to the Unix epoch (UTC midnight for whole days).

Each node's periods run from its first to its last period with data (``length[n]``; holes are
explicit: ``covered`` is False there and no check counts them). Only processes present in at
least ``min_life`` periods get rows — the fewest any chosen check needs of one process: the
rest are *churn* (short-lived processes), counted per node, and still in the machine's
totals, the groups' sums and the series of groups the rules aggregate by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from perfsleuth.errors import DataError

if TYPE_CHECKING:
    from perfsleuth.processes.rules import ProcessRules

__all__ = [
    "MAX_CELLS",
    "Columns",
    "NodePeriods",
    "Periods",
    "RepeatedRows",
    "build",
    "codes_of",
    "dense_codes",
]


class RepeatedRows(DataError):
    """Rows repeat a (process, time): :func:`perfsleuth.frames.normalise` drops identical ones
    and names the line of conflicting ones."""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

MAX_CELLS = 20_000_000
"""Most process × period cells one node may need (each matrix: 8 bytes a cell): beyond, the
scan refuses with advice instead of exhausting memory."""

_NEEDED = ("time", "node", "pid", "name", "user", "cpu", "rss_bytes")
_OPTIONAL = ("start_time", "cpu_wait", "machine_cpu", "volume", "file_bytes", "ncpu")
_SERIES = ("rss_bytes", "file_bytes")
# unknown for some rows (the process exited while read, or is not ours to read): identity
# by name, no wait, no file size there
_MAY_BE_NAN = ("start_time", "cpu_wait", "file_bytes")

Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class Columns:
    """A process frame as numpy columns; text columns as codes into their lists of values."""

    node: Int
    nodes: list[str]
    """Sorted: node codes follow node names."""
    time: Int
    """Nanoseconds since the Unix epoch."""
    pid: Int
    name: Int
    names: list[str]
    user: Int
    users: list[str]
    cpu: Float
    rss_bytes: Float
    optional: dict[str, Float] = field(default_factory=dict)
    """``start_time``, ``cpu_wait``, ``machine_cpu``, ``volume``, ``file_bytes``, ``ncpu``,
    those the source has."""
    os: Int | None = None
    os_names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.time)

    @classmethod
    def of(cls, frame: pd.DataFrame) -> Columns:
        """The columns of a normalised process frame (its values are not checked again)."""
        absent = [c for c in _NEEDED if c not in frame.columns]
        if absent:
            raise DataError(f"process frame is missing column(s) {', '.join(map(repr, absent))}")
        node, nodes = _factorize(frame["node"])
        name, names = _factorize(frame["name"])
        user, users = _factorize(frame["user"])
        os_codes, os_names = _factorize(frame["os"]) if "os" in frame.columns else (None, [])
        optional = {
            c: frame[c].to_numpy(dtype=np.float64, na_value=np.nan)
            for c in _OPTIONAL
            if c in frame.columns
        }
        for column in ("cpu", "rss_bytes", *(c for c in optional if c not in _MAY_BE_NAN)):
            values = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
            bad = ~np.isfinite(values)
            if bad.any():
                raise DataError(
                    f"process frame: column {column!r}: missing or infinite value at row "
                    f"{int(np.flatnonzero(bad)[0])} (normalise(frame, 'process', "
                    "missing='drop') skips such rows)"
                )
        return cls(
            node=node,
            nodes=nodes,
            time=pd.DatetimeIndex(frame["time"]).as_unit("ns").asi8,
            pid=frame["pid"].to_numpy(dtype=np.int64),
            name=name,
            names=names,
            user=user,
            users=users,
            cpu=frame["cpu"].to_numpy(dtype=np.float64),
            rss_bytes=frame["rss_bytes"].to_numpy(dtype=np.float64),
            optional=optional,
            os=os_codes,
            os_names=os_names,
        )

    def take(self, rows: Int | slice) -> Columns:
        """The columns of some rows (nodes renumbered to those present; other code lists are
        shared)."""
        node = self.node[rows]
        present = np.flatnonzero(np.bincount(node, minlength=len(self.nodes)))
        renumber = np.full(len(self.nodes), -1, dtype=np.int64)
        renumber[present] = np.arange(len(present), dtype=np.int64)
        return Columns(
            node=renumber[node],
            nodes=[self.nodes[i] for i in present],
            time=self.time[rows],
            pid=self.pid[rows],
            name=self.name[rows],
            names=self.names,
            user=self.user[rows],
            users=self.users,
            cpu=self.cpu[rows],
            rss_bytes=self.rss_bytes[rows],
            optional={k: v[rows] for k, v in self.optional.items()},
            os=None if self.os is None else self.os[rows],
            os_names=self.os_names,
        )


def _factorize(values: pd.Series) -> tuple[Int, list[str]]:
    """Codes (int64) of a text column and its values, sorted (codes follow the values' order)."""
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.int64, copy=False), [str(v) for v in uniques]


def dense_codes(key: Int, size: int) -> tuple[Int, Int]:
    """``(codes, uniques)`` of non-negative integer keys below ``size``: uniques sorted, codes
    index them. A dense table when ``size`` is small, else hashing."""
    if size <= 2 * len(key) + 4096:
        seen = np.zeros(size, dtype=np.bool_)
        seen[key] = True
        lookup = np.cumsum(seen, dtype=np.int64) - 1
        return lookup[key], np.flatnonzero(seen).astype(np.int64)
    codes, uniques = pd.factorize(key, sort=True)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class GroupSeries:
    """A rules group's totals per node and period (every member process, short-lived ones
    too): ``cpu`` in cores, ``rss`` the sum of the members' mean RSS; and each member name's
    CPU over the whole data per node (``load[(node, name)]``), for naming the top members."""

    cpu: Float
    rss: Float
    load: dict[tuple[int, str], float]


@dataclass(frozen=True, slots=True, eq=False)
class NameSeries:
    """Series of process *names* (pids summed) for the groups the rules aggregate by name."""

    node_of: Int
    name: list[str]
    user: list[str]
    pids: list[tuple[int, ...]]
    columns: dict[str, Float]
    """Σ over the name's processes of their mean per period; NaN where none ran."""


@dataclass(frozen=True, slots=True, eq=False)
class Periods:
    """Many nodes' processes by period (see the module docstring for the conventions)."""

    period: timedelta
    per_window: int
    nodes: list[str]
    os: list[str]
    ncpu: Float
    """CPU count per node (NaN when the frame has none)."""
    first: Int
    """Absolute period number (since the epoch) of each node's first period."""
    length: Int
    covered: Bool
    busy: Float
    captured: Float
    has_machine: bool
    volume: Float | None
    saturated: Bool
    processes: Int
    """Distinct processes per node (short-lived ones included)."""
    churn: Int
    """Processes per node present in fewer than ``min_life`` periods (no rows here)."""
    min_life: int
    seconds: Float
    """Seconds from each node's first sample to its last."""
    measured_wait: Bool
    """Nodes whose data has run-queue wait (``cpu_wait``) at all."""
    node_of: Int
    bounds: Int
    """Processes of node ``n``: rows ``bounds[n]:bounds[n + 1]`` (rows are grouped by node)."""
    pid: Int
    start_time: Float
    name_code: Int
    names: list[str]
    user_code: Int
    users: list[str]
    cpu: Float
    wait: Float | None
    present: Bool
    columns: dict[str, Float]
    groups: dict[str, GroupSeries]
    by_name: NameSeries

    @property
    def width(self) -> int:
        return int(self.covered.shape[1])

    def name(self, p: int) -> str:
        return self.names[int(self.name_code[p])]

    def user(self, p: int) -> str:
        return self.users[int(self.user_code[p])]

    def label(self, p: int) -> str:
        """``name[pid]``: how people name process row ``p``."""
        return f"{self.name(p)}[{self.pid[p]}]"

    def start(self, n: int, t: int) -> datetime:
        """When period ``t`` of node ``n`` starts."""
        return _EPOCH + (int(self.first[n]) + t) * self.period

    def end(self, n: int, t: int) -> datetime:
        """When period ``t`` of node ``n`` ends."""
        return _EPOCH + (int(self.first[n]) + t + 1) * self.period

    def window(self) -> Int:
        """Window number of each (node, period), relative to the node's first window."""
        absolute = self.first[:, np.newaxis] + np.arange(self.width, dtype=np.int64)
        window: Int = absolute // self.per_window
        return window - window[:, :1]

    def runnable(self) -> Float:
        """Cores each process wanted per period: CPU + run-queue wait (CPU where no wait). A
        loop wants a whole CPU however little of one it gets."""
        if self.wait is None:
            return self.cpu
        wanted: Float = self.cpu + np.where(np.isfinite(self.wait), self.wait, 0.0)
        return wanted

    def uncontended(self) -> Float:
        """The CPU each process would have used with a CPU to itself (CPU where no wait).

        A process runs, waits for a CPU, or sleeps; with the CPU to itself it would have run
        and slept the same: ``cpu / (cpu + sleep) = cpu / (1 - wait)``. A poller starved to a
        third of its usual CPU still shows its usual share here; a loop shows 1.
        """
        if self.wait is None:
            return self.cpu
        with np.errstate(invalid="ignore", divide="ignore"):
            alone = self.cpu / np.maximum(1.0 - self.wait, self.cpu)
        estimate: Float = np.where(np.isfinite(self.wait) & (self.cpu > 0), alone, self.cpu)
        return estimate

    def has_wait(self) -> Bool:
        """Periods in which a process's run-queue wait is known (it was present and measured)."""
        if self.wait is None:
            return np.zeros_like(self.present)
        known: Bool = self.present & np.isfinite(self.wait)
        return known

    def node(self, n: int) -> NodePeriods:
        """The periods of node ``n`` alone (views of these arrays)."""
        rows = slice(int(self.bounds[n]), int(self.bounds[n + 1]))
        cols = slice(0, int(self.length[n]))
        step = int(self.period.total_seconds() * 1e9)
        starts = pd.DatetimeIndex(
            pd.to_datetime(
                (int(self.first[n]) + np.arange(int(self.length[n]), dtype=np.int64)) * step,
                unit="ns",
                utc=True,
            )
        )
        named = np.flatnonzero(self.by_name.node_of == n)
        return NodePeriods(
            node=self.nodes[n],
            os=self.os[n],
            ncpu=float(self.ncpu[n]),
            period=self.period,
            starts=starts,
            window=(int(self.first[n]) + np.arange(int(self.length[n]))) // self.per_window
            - int(self.first[n]) // self.per_window,
            covered=self.covered[n, cols],
            pid=self.pid[rows],
            start_time=self.start_time[rows],
            name=[self.names[c] for c in self.name_code[rows]],
            user=[self.users[c] for c in self.user_code[rows]],
            cpu=self.cpu[rows, cols],
            wait=None if self.wait is None else self.wait[rows, cols],
            present=self.present[rows, cols],
            columns={k: v[rows, cols] for k, v in self.columns.items()},
            busy=self.busy[n, cols],
            captured=self.captured[n, cols],
            has_machine=self.has_machine,
            volume=None if self.volume is None else self.volume[n, cols],
            saturated=self.saturated[n, cols],
            groups={
                g: GroupSeries(
                    s.cpu[n : n + 1, cols],
                    s.rss[n : n + 1, cols],
                    {k: v for k, v in s.load.items() if k[0] == n},
                )
                for g, s in self.groups.items()
            },
            by_name=NameSeries(
                node_of=np.zeros(len(named), dtype=np.int64),
                name=[self.by_name.name[k] for k in named],
                user=[self.by_name.user[k] for k in named],
                pids=[self.by_name.pids[k] for k in named],
                columns={c: v[named][:, cols] for c, v in self.by_name.columns.items()},
            ),
            processes=int(self.processes[n]),
            churn=int(self.churn[n]),
            seconds=float(self.seconds[n]),
        )


@dataclass(frozen=True, slots=True, eq=False)
class NodePeriods:
    """One node's periods: what the report and the notification graphs draw."""

    node: str
    os: str
    ncpu: float
    period: timedelta
    starts: pd.DatetimeIndex
    window: Int
    covered: Bool
    pid: Int
    start_time: Float
    name: list[str]
    user: list[str]
    cpu: Float
    wait: Float | None
    present: Bool
    columns: dict[str, Float]
    busy: Float
    captured: Float
    has_machine: bool
    volume: Float | None
    saturated: Bool
    groups: dict[str, GroupSeries]
    by_name: NameSeries
    processes: int
    churn: int
    seconds: float
    """Seconds from the node's first sample to its last."""

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


def build(cols: Columns, rules: ProcessRules, *, min_life: int = 1) -> Periods:
    """The :class:`Periods` of every node in ``cols``, in one pass over its columns.

    Raises :class:`DataError` when a node has more than one ``ncpu`` or would need more than
    :data:`MAX_CELLS` process × period cells.
    """
    settings = rules.settings
    step = round(settings.period.total_seconds() * 1e9)
    n = len(cols.nodes)
    bucket = cols.time // step
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(first, cols.node, bucket)
    np.maximum.at(last, cols.node, bucket)
    earliest = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    latest_time = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(earliest, cols.node, cols.time)
    np.maximum.at(latest_time, cols.node, cols.time)
    length = last - first + 1
    width = int(length.max())
    t = bucket - first[cols.node]
    cell = cols.node * width + t  # (node, period)
    size = n * width

    # sample instants per (node, period): a process absent from an instant used no CPU there
    time_code, times = codes_of(cols.time)
    instant, instant_keys = dense_codes(cols.node * len(times) + time_code, n * len(times))
    rows_per_instant = np.bincount(instant, minlength=len(instant_keys))
    instant_cell = cell[_first_rows(instant, len(instant_keys))]
    n_inst = np.bincount(instant_cell, minlength=size).reshape(n, width).astype(np.float64)
    covered = n_inst > 0
    per_inst = np.where(covered, n_inst, 1.0)

    def per_node(values: Float) -> Float:
        """Mean over each (node, period)'s instants of a per-instant value given on its rows."""
        at_instant = np.bincount(instant, weights=values, minlength=len(instant_keys))
        mean = np.bincount(instant_cell, weights=at_instant / rows_per_instant, minlength=size)
        shaped: Float = mean.reshape(n, width) / per_inst
        return shaped

    ncpu = _ncpu(cols, n)
    os_names = _node_os(cols, n)
    captured = (np.bincount(cell, weights=cols.cpu, minlength=size).reshape(n, width)) / per_inst
    has_machine = "machine_cpu" in cols.optional
    busy = per_node(cols.optional["machine_cpu"]) if has_machine else captured.copy()
    volume = per_node(cols.optional["volume"]) if "volume" in cols.optional else None
    saturated = _saturated(busy, ncpu, covered, settings.saturation, settings.saturation_margin)

    # processes: node + pid + start time (or name), and the periods each is present in
    pid_code, pids = codes_of(cols.pid)
    node_pid, node_pid_keys = dense_codes(cols.node * len(pids) + pid_code, n * len(pids))
    starts = cols.optional.get("start_time")
    if starts is not None:
        start_code, start_values = float_codes(starts)
        third = np.where(start_code >= 0, start_code, len(start_values) + cols.name)
        n_third = len(start_values) + len(cols.names)
    else:
        third, n_third = cols.name, len(cols.names)
    # a pid is one process (one start time, or one name) nearly always: then it is the key
    first_third = third[_first_rows(node_pid, len(node_pid_keys))]
    if (third == first_third[node_pid]).all():
        proc, n_proc = node_pid, len(node_pid_keys)
    else:
        key = node_pid * n_third + third
        proc, proc_keys = dense_codes(key, len(node_pid_keys) * n_third)
        n_proc = len(proc_keys)
    if len(dense_codes(proc * len(times) + time_code, n_proc * len(times))[1]) < len(cols):
        raise RepeatedRows("a process has two rows for the same time (normalise the frame)")
    pair, pair_keys = dense_codes(proc * width + t, n_proc * width)
    rows_per_pair = np.bincount(pair, minlength=len(pair_keys)).astype(np.float64)
    life = np.bincount(pair_keys // width, minlength=n_proc)
    proc_node = cols.node[_first_rows(proc, n_proc)]
    processes = np.bincount(proc_node, minlength=n)

    kept = np.flatnonzero(life >= min_life)
    churn = processes - np.bincount(proc_node[kept], minlength=n)
    # rows grouped by node, then pid, then start (or name): deterministic, node-contiguous
    # the name a process has now (it may have changed it: exec), when names are not its key
    latest = (
        _latest_rows(proc, cols.time, n_proc) if starts is not None else _first_rows(proc, n_proc)
    )
    key_pid = cols.pid[latest]
    key_start = starts[latest] if starts is not None else np.zeros(n_proc)
    order = kept[np.lexsort((key_start[kept], cols.name[latest][kept], key_pid[kept]))]
    order = order[np.argsort(proc_node[order], kind="stable")]
    n_rows = len(order)
    heaviest = np.bincount(proc_node[order], minlength=n) * length
    if n_rows and int(heaviest.max()) > MAX_CELLS:
        worst = int(np.argmax(heaviest))
        raise DataError(
            f"node {cols.nodes[worst]!r}: {int(heaviest[worst] // length[worst]):,} processes × "
            f"{int(length[worst]):,} periods of {settings.period} is more than perfsleuth holds "
            f"({MAX_CELLS:,} cells): use a longer [settings] period or a shorter time range"
        )
    dense = np.full(n_proc, -1, dtype=np.int64)
    dense[order] = np.arange(n_rows, dtype=np.int64)
    row_of = dense[proc]
    mine = row_of >= 0
    flat = row_of[mine] * width + t[mine]
    node_of = proc_node[order]
    inst_of = per_inst[node_of]
    shape = (n_rows, width)

    def matrix(values: Float) -> Float:
        sums = np.bincount(flat, weights=values[mine], minlength=n_rows * width)
        shaped: Float = sums.reshape(shape).astype(np.float64, copy=False)
        return shaped

    count = np.bincount(flat, minlength=n_rows * width).reshape(shape).astype(np.float64)
    present = count > 0
    cpu = matrix(cols.cpu) / inst_of
    wait = None
    if "cpu_wait" in cols.optional:
        raw = cols.optional["cpu_wait"]
        unknown = matrix((~np.isfinite(raw)).astype(np.float64)) > 0
        wait = np.where(unknown, np.nan, matrix(np.nan_to_num(raw, nan=0.0)) / inst_of)
    columns: dict[str, Float] = {}
    for column in _SERIES:
        values = cols.rss_bytes if column == "rss_bytes" else cols.optional.get(column)
        if values is None:
            continue
        known = np.isfinite(values)
        if known.all():
            total, seen = matrix(values), count
        else:  # the mean of the samples that have it
            total, seen = matrix(np.where(known, values, 0.0)), matrix(known.astype(np.float64))
        with np.errstate(invalid="ignore", divide="ignore"):
            columns[column] = np.where(seen > 0, total / seen, np.nan)

    latest_kept = latest[order]
    return Periods(
        period=settings.period,
        per_window=settings.periods_per_window,
        nodes=cols.nodes,
        os=os_names,
        ncpu=ncpu,
        first=first,
        length=length,
        covered=covered,
        busy=busy,
        captured=captured,
        has_machine=has_machine,
        volume=volume,
        saturated=saturated,
        processes=processes,
        churn=churn,
        seconds=(latest_time - earliest) / 1e9,
        measured_wait=(
            np.bincount(cols.node[np.isfinite(cols.optional["cpu_wait"])], minlength=n) > 0
            if "cpu_wait" in cols.optional
            else np.zeros(n, dtype=np.bool_)
        ),
        min_life=min_life,
        node_of=node_of,
        bounds=np.searchsorted(node_of, np.arange(n + 1)).astype(np.int64),
        pid=cols.pid[latest_kept],
        start_time=(starts[latest_kept] if starts is not None else np.full(n_rows, np.nan)),
        name_code=cols.name[latest_kept],
        names=cols.names,
        user_code=cols.user[latest_kept],
        users=cols.users,
        cpu=cpu,
        wait=wait,
        present=present,
        columns=columns,
        groups=_groups(cols, rules, cell, size, per_inst, pair, rows_per_pair),
        by_name=_by_name(cols, rules, t, width, pair, rows_per_pair),
    )


def codes_of(values: Int) -> tuple[Int, Int]:
    """Codes of arbitrary int64 values (sorted uniques)."""
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=np.int64)


def float_codes(values: Float) -> tuple[Int, Float]:
    """Codes of float values, -1 for NaN."""
    codes, uniques = pd.factorize(values, sort=True, use_na_sentinel=True)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=np.float64)


def _first_rows(codes: Int, size: int) -> Int:
    """A row of each code (the first)."""
    rows = np.empty(size, dtype=np.int64)
    rows[codes[::-1]] = np.arange(len(codes) - 1, -1, -1, dtype=np.int64)
    return rows


def _latest_rows(codes: Int, time: Int, size: int) -> Int:
    """The row of each code with the latest time (its name now, if it changed it)."""
    newest = np.full(size, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(newest, codes, time)
    rows = np.flatnonzero(time == newest[codes])
    out = np.empty(size, dtype=np.int64)
    out[codes[rows]] = rows
    return out


def _ncpu(cols: Columns, n: int) -> Float:
    if "ncpu" not in cols.optional:
        return np.full(n, np.nan)
    values = cols.optional["ncpu"]
    low = np.full(n, np.inf)
    high = np.full(n, -np.inf)
    np.minimum.at(low, cols.node, values)
    np.maximum.at(high, cols.node, values)
    bad = np.flatnonzero((low != high) | ~(low > 0))
    if len(bad):
        b = int(bad[0])
        got = np.unique(values[cols.node == b])
        raise DataError(
            f"node {cols.nodes[b]!r}: column 'ncpu' must be one positive number per node, "
            f"got {got[:5].tolist()}"
        )
    return low


def _node_os(cols: Columns, n: int) -> list[str]:
    if cols.os is None:
        return ["default"] * n
    first = np.full(n, -1, dtype=np.int64)
    first[cols.node[::-1]] = cols.os[::-1]
    return [cols.os_names[c] for c in first]


def _saturated(busy: Float, ncpu: Float, covered: Bool, level: float, margin: float) -> Bool:
    """At or above ``level`` of the CPUs, or within ``margin`` below it in a stretch of such
    periods that reaches ``level`` somewhere (symmetric hysteresis)."""
    if not np.isfinite(ncpu).all():
        return np.zeros_like(covered)
    with np.errstate(invalid="ignore", divide="ignore"):
        use = busy / ncpu[:, np.newaxis]
    strict = covered & (use >= level)
    near = covered & (use >= level - margin)
    # stretches of near periods, numbered along each node's periods
    stretch = np.cumsum(~near, axis=1) + (np.arange(len(near)) * (near.shape[1] + 1))[:, None]
    hot = np.zeros(int(stretch.max()) + 1 if stretch.size else 0, dtype=np.bool_)
    hot[stretch[strict]] = True
    saturated: Bool = near & hot[stretch]
    return saturated


def _member_rows(cols: Columns, processes: tuple[str, ...], users: tuple[str, ...]) -> Bool:
    from perfsleuth.processes.rules import matches

    by_name = np.array([matches(v, processes) for v in cols.names], dtype=np.bool_)
    by_user = np.array([matches(v, users) for v in cols.users], dtype=np.bool_)
    rows: Bool = by_name[cols.name] | by_user[cols.user]
    return rows


def _groups(
    cols: Columns,
    rules: ProcessRules,
    cell: Int,
    size: int,
    per_inst: Float,
    pair: Int,
    rows_per_pair: Float,
) -> dict[str, GroupSeries]:
    out: dict[str, GroupSeries] = {}
    n, width = per_inst.shape
    for group in rules.groups:
        if not (group.max_cpu_fraction > 0 or group.max_rss_bytes > 0):
            continue
        rows = np.flatnonzero(_member_rows(cols, group.processes, group.users))
        cpu = np.bincount(cell[rows], weights=cols.cpu[rows], minlength=size)
        rss = np.bincount(
            cell[rows], weights=cols.rss_bytes[rows] / rows_per_pair[pair[rows]], minlength=size
        )
        names = len(cols.names)
        load = np.bincount(
            cols.node[rows] * names + cols.name[rows], weights=cols.cpu[rows], minlength=n * names
        )
        where = np.flatnonzero(np.bincount(cols.node[rows] * names + cols.name[rows]))
        out[group.name] = GroupSeries(
            cpu.reshape(n, width) / per_inst,
            rss.reshape(n, width).astype(np.float64),
            {(int(k // names), cols.names[int(k % names)]): float(load[k]) for k in where},
        )
    return out


def _by_name(
    cols: Columns,
    rules: ProcessRules,
    t: Int,
    width: int,
    pair: Int,
    rows_per_pair: Float,
) -> NameSeries:
    """The series of each (node, name) of the groups the rules aggregate by name."""
    patterns = [g for g in rules.groups if g.by_name]
    empty = NameSeries(np.zeros(0, dtype=np.int64), [], [], [], {})
    if not patterns:
        return empty
    mask = np.zeros(len(cols), dtype=np.bool_)
    for group in patterns:
        mask |= _member_rows(cols, group.processes, group.users)
    rows = np.flatnonzero(mask)
    if not len(rows):
        return empty
    names = len(cols.names)
    key, keys = dense_codes(cols.node[rows] * names + cols.name[rows], len(cols.nodes) * names)
    k = len(keys)
    flat = key * width + t[rows]
    seen = np.bincount(flat, minlength=k * width).reshape(k, width) > 0
    columns: dict[str, Float] = {}
    for column in _SERIES:
        values = cols.rss_bytes if column == "rss_bytes" else cols.optional.get(column)
        if values is None:
            continue
        # Σ over the name's processes of each one's mean in the period (unknown counts 0)
        weights = np.nan_to_num(values[rows]) / rows_per_pair[pair[rows]]
        sums = np.bincount(flat, weights=weights, minlength=k * width)
        columns[column] = np.where(seen, sums.reshape(k, width), np.nan)
    first = _first_rows(key, k)
    pids: list[set[int]] = [set() for _ in range(k)]
    for code, pid in zip(key.tolist(), cols.pid[rows].tolist(), strict=True):
        pids[code].add(pid)
    return NameSeries(
        node_of=keys // names,
        name=[cols.names[int(c % names)] for c in keys],
        user=[cols.users[c] for c in cols.user[rows][first]],
        pids=[tuple(sorted(p)) for p in pids],
        columns=columns,
    )
