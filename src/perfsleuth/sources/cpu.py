"""CPU samples → the ``cpu_util`` column of a workload frame.

The segment detector (Cherkasova et al.) needs the CPU the service used in each window, which
transaction logs do not carry. Monitoring does: ``sar``, node-exporter, process-exporter, the
collector. **Which CPU** matters: the model explains CPU by the transactions served, so give
the service's own processes' CPU (:func:`service_cpu` sums them by name from a process table or
the collector's store; :func:`prometheus_service_cpu` from process-exporter). The whole
machine's CPU on a shared host is mostly other work, and once it saturates it says nothing of
what the transactions cost.

A CPU table has a ``time`` column and ``cpu_util`` (a fraction of the whole machine, 0..1; a
``%`` column can be mapped with ``unit="%"``), optionally ``cpu_cores`` and ``window_s``.

**Alignment by time overlap.** A sample describes an interval, not an instant. With
``window_s`` a row covers ``[time, time + window_s)`` (a per-window table). Otherwise a sample
covers the time since the previous one, ``(previous, time]`` — as a sampler, ``sar``, the
collector and a rate over a counter report it — the first one sample step, and none more than
two steps (a gap in monitoring leaves its windows uncovered). Each window gets the CPU of the
time it shares with each sample: ``cpu_util`` is the overlap-weighted mean, so samples need
not be on the windows' grid, nor as fine as the windows. Samples stamped exactly on the
windows' grid are ambiguous — window starts (a per-window table) or ends (a rate evaluated
on the grid) — and both readings are tried: the one whose CPU the windows' transactions
explain better (one non-negative linear model over every window, judged by the median
relative residual) is kept. Windows the samples do not wholly cover (the first and last of a
log usually, and gaps) are dropped, and counted: a window whose CPU and transactions cover
different spans would look like an anomaly.
"""

from __future__ import annotations

import fnmatch
import logging
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.optimize import nnls

from perfsleuth.errors import ConfigError, DataError, located
from perfsleuth.frames import coverage_of, normalise
from perfsleuth.sources.files import read_table

__all__ = [
    "Stamps",
    "attach_cpu",
    "prometheus_service_cpu",
    "read_cpu",
    "service_cpu",
]

log = logging.getLogger(__name__)

Stamps = Literal["auto", "end", "start"]
FloatArray = NDArray[np.float64]

_CLEARLY_BETTER = 0.8  # "start" must fit with at most this share of the error of "end"
_FULL = 0.999  # share of a window the samples must cover (float rounding of the edges)
_GAP = 2.0  # a sample covers at most this many typical steps before its time


def read_cpu(
    path: str | Path, *, columns: Mapping[str, str] | None = None, unit: str = "fraction"
) -> pd.DataFrame:
    """Read a CPU table (CSV or Parquet): ``time``, ``cpu_util`` [, ``cpu_cores``, ``window_s``].

    Parameters
    ----------
    path
        The file.
    columns
        Renames source columns (``{"ts": "time", "busy_pct": "cpu_util"}``).
    unit
        ``"fraction"`` (0..1) or ``"%"`` (0..100) for ``cpu_util``.

    Errors name the file, the line (CSV) or row (Parquet) and the column.
    """
    if unit not in ("fraction", "%"):
        raise ConfigError(f"unit must be 'fraction' or '%', got {unit!r}")
    table, locate = read_table(path, columns=columns)
    source = str(Path(path))
    aliases = {target: name for name, target in (columns or {}).items()}
    absent = [c for c in ("time", "cpu_util") if c not in table.columns]
    if absent:
        raise DataError(
            f"{source}: missing column(s) {', '.join(map(repr, absent))} (columns present: "
            f"{', '.join(map(str, table.columns))}); map yours with columns="
        )
    optional = [c for c in ("cpu_cores", "window_s") if c in table.columns]
    frame = table[["time", "cpu_util", *optional]].copy()
    # the metric contract validates times and numbers and names lines; one series per column
    long = normalise(
        frame.melt(id_vars="time", var_name="metric", value_name="value").assign(entity="cpu"),
        "metric",
        source=source,
        locate=(lambda pos: locate(pos % len(frame))) if locate is not None else None,
        aliases={**aliases, "value": aliases.get("cpu_util", "cpu_util")},
    )
    wide = long.pivot_table(index="time", columns="metric", values="value", aggfunc="mean")
    out = wide.reset_index()
    out.columns.name = None
    if unit == "%":
        out["cpu_util"] = out["cpu_util"] / 100.0
    for column, ok in (
        ("cpu_util", out["cpu_util"].between(0.0, 1.0)),
        *((c, out[c] > 0) for c in optional),
    ):
        bad = ~ok.to_numpy(dtype=bool)
        if bad.any():
            at = out["time"].iat[int(np.flatnonzero(bad)[0])]
            what = (
                "utilisation must be within 0..1 (or 0..100 with unit='%')"
                if column == "cpu_util"
                else "must be positive"
            )
            raise DataError(
                located(
                    f"{what}, at {at.isoformat()}", source=source, field=aliases.get(column, column)
                )
            )
    return out


def service_cpu(
    processes: pd.DataFrame, names: Sequence[str], *, source: str = "processes"
) -> pd.DataFrame:
    """The CPU table of a service: the CPU of the processes named ``names``, per sample time.

    Parameters
    ----------
    processes
        A process frame (``time``, ``node``, ``pid``, ``name``, ``cpu`` in cores over the
        interval ending at ``time``, and the node's ``ncpu``): what the collector stores, what
        process-exporter gives per group.
    names
        Process names (``comm``, e.g. ``postgres``) or shell patterns (``postgres*``).
    source
        Named in errors.

    Returns
    -------
    pandas.DataFrame
        ``time``, ``cpu_util`` (the named processes' CPU as a fraction of the machine) and
        ``cpu_cores``, one row per sample time of the frame (0 where none of them ran).
    """
    if not names:
        raise ConfigError("which processes? give at least one name")
    for column in ("time", "node", "name", "cpu"):
        if column not in processes.columns:
            raise DataError(f"{source}: not a process table: no column {column!r}")
    if "ncpu" not in processes.columns:
        raise DataError(
            f"{source}: no 'ncpu' column: the machine's CPU count is needed to turn cores into "
            "a share of the machine (a collector store has it; a table can add a node table)"
        )
    mask = np.zeros(len(processes), dtype=bool)
    text = processes["name"].astype(str)
    for name in names:
        mask |= text.map(lambda value, pattern=name: fnmatch.fnmatchcase(value, pattern)).to_numpy()
    if not mask.any():
        seen = ", ".join(sorted(set(text))[:8])
        raise DataError(f"{source}: no process named {', '.join(names)} (names seen: {seen} …)")
    nodes = sorted(set(processes.loc[mask, "node"].astype(str)))
    if len(nodes) > 1:
        raise DataError(
            f"{source}: processes named {', '.join(names)} on several nodes "
            f"({', '.join(nodes[:5])}): give one node's processes"
        )
    on_node = processes[processes["node"].astype(str) == nodes[0]]
    mine = processes[mask]
    # every sample time of the node is a sample: the service used 0 where none of it ran
    times = np.sort(on_node["time"].unique())
    used = mine.groupby("time")["cpu"].sum().reindex(times, fill_value=0.0)
    ncpu = on_node.groupby("time")["ncpu"].max().reindex(times)
    out = pd.DataFrame(
        {
            "time": times,
            "cpu_util": np.clip(used.to_numpy() / ncpu.to_numpy(), 0.0, 1.0),
            "cpu_cores": ncpu.to_numpy(dtype=np.float64),
        }
    )
    log.info("%s: CPU of %s on %s, %d samples", source, ", ".join(names), nodes[0], len(out))
    return out


def prometheus_service_cpu(
    url: str,
    names: Sequence[str],
    start: datetime,
    end: datetime,
    step: timedelta,
    *,
    timeout: float = 10.0,
) -> pd.DataFrame:
    """The CPU table of a service from process-exporter: the groups ``names`` (regular
    expressions of ``groupname``), their CPU counter read at every ``step`` and differenced,
    so each sample is the CPU of exactly the step that ends at its time."""
    from perfsleuth.sources.prometheus import Prometheus

    client = Prometheus(url, timeout=timeout)
    groups = "|".join(names)
    early = start - 2 * step
    used = client.query_range(
        f'sum(namedprocess_namegroup_cpu_seconds_total{{groupname=~"{groups}"}})', early, end, step
    )
    cores = client.query_range('count(node_cpu_seconds_total{mode="idle"})', early, end, step)
    if not used or len(used[0].times) < 2:
        raise DataError(f"{url}: no process-exporter CPU for groupname=~{groups!r} in range")
    if not cores or not len(cores[0].values):
        raise DataError(f"{url}: no node-exporter CPU count (node_cpu_seconds_total)")
    t, v = used[0].times, used[0].values
    grown = np.diff(v)
    grown = np.where(grown < 0, v[1:], grown)  # a drop is a restart of the counter
    ncpu = float(np.max(cores[0].values))
    stamps = pd.to_datetime(np.round(t[1:] * 1000).astype(np.int64), unit="ms", utc=True)
    return pd.DataFrame(
        {
            "time": stamps,
            "cpu_util": np.clip(grown / np.diff(t) / ncpu, 0.0, 1.0),
            "cpu_cores": ncpu,
        }
    )


def attach_cpu(frame: pd.DataFrame, cpu: pd.DataFrame, *, stamps: Stamps = "auto") -> pd.DataFrame:
    """The workload ``frame`` with ``cpu_util`` (and ``cpu_cores``) from the samples ``cpu``.

    ``cpu`` is what :func:`read_cpu` or :func:`service_cpu` returns. ``stamps`` says what a
    sample's time is when the table has no ``window_s``: ``"end"`` of the interval it
    describes, ``"start"``, or ``"auto"`` (see the module docstring). Windows the samples do not
    wholly cover are dropped (logged).
    """
    coverage = coverage_of(frame)
    source = coverage.source if coverage is not None else "<workload frame>"
    if coverage is None:
        frame = normalise(frame, "workload")
    if len(frame) == 0:
        return frame
    if stamps not in ("auto", "end", "start"):
        raise ConfigError(f"stamps must be 'auto', 'end' or 'start', got {stamps!r}")
    if len(cpu) == 0:
        raise DataError(f"{source}: no CPU samples to attach")
    origin = int(frame["time"].iloc[0].value)
    a = (frame["time"].astype("int64").to_numpy() - origin) / 1e9
    b = a + frame["window_s"].to_numpy(dtype=np.float64)
    t = (cpu["time"].astype("int64").to_numpy() - origin) / 1e9
    order = np.argsort(t, kind="stable")
    t = t[order]
    util = cpu["cpu_util"].to_numpy(dtype=np.float64)[order]
    cores = (
        cpu["cpu_cores"].to_numpy(dtype=np.float64)[order]
        if "cpu_cores" in cpu.columns
        else np.full(len(t), math.nan)
    )
    if "window_s" in cpu.columns:
        width = cpu["window_s"].to_numpy(dtype=np.float64)[order]
        choice = _align(t, t + width, util, cores, a, b)
        how = "rows cover [time, time + window_s)"
    else:
        readings = {"end": _ends(t), "start": _starts(t)}
        if stamps == "auto":
            stamps = _reading(t, a, b, util, cores, readings, frame)
        low, high = readings[stamps]
        choice = _align(low, high, util, cores, a, b)
        how = f"sample times taken as the {stamps}s of their intervals"
    used, share, mean_cores = choice
    covered = share >= _FULL * (b - a)
    replaced = ("cpu_util", "cpu_cores") if "cpu_cores" in cpu.columns else ("cpu_util",)
    out = frame.drop(columns=[c for c in replaced if c in frame.columns])
    with np.errstate(divide="ignore", invalid="ignore"):
        if "cpu_cores" in cpu.columns:  # core-seconds over the cores the samples had
            out["cpu_util"] = np.clip(used / (share * mean_cores), 0.0, 1.0)
            out["cpu_cores"] = mean_cores
        else:  # utilisation-seconds; the frame's cores, if any, stay
            out["cpu_util"] = np.clip(used / share, 0.0, 1.0)
    dropped = int((~covered).sum())
    log.info("%s: CPU attached (%s)", source, how)
    if dropped:
        log.info("%d window(s) not wholly covered by CPU samples dropped", dropped)
    out = out.loc[covered].reset_index(drop=True)
    return normalise(out, "workload", source=source)


# --------------------------------------------------------------------------------------------
# Internals
# --------------------------------------------------------------------------------------------


def _typical_step(t: FloatArray) -> float:
    steps = np.diff(t)
    steps = steps[steps > 0]
    return float(np.median(steps)) if len(steps) else math.inf


def _ends(t: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Intervals ``(previous, t]``: the first one step long, none longer than ``_GAP`` steps."""
    step = _typical_step(t)
    if not math.isfinite(step):
        raise DataError("one CPU sample: cannot tell the interval it describes")
    low = np.empty_like(t)
    low[0] = t[0] - step
    low[1:] = np.maximum(t[:-1], t[1:] - _GAP * step)
    return low, t.copy()


def _starts(t: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Intervals ``[t, next)``: the last one step long, none longer than ``_GAP`` steps."""
    step = _typical_step(t)
    if not math.isfinite(step):
        raise DataError("one CPU sample: cannot tell the interval it describes")
    high = np.empty_like(t)
    high[-1] = t[-1] + step
    high[:-1] = np.minimum(t[1:], t[:-1] + _GAP * step)
    return t.copy(), high


def _align(
    low: FloatArray,
    high: FloatArray,
    util: FloatArray,
    cores: FloatArray,
    a: FloatArray,
    b: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per window ``[a, b)``: the samples' CPU in it (core-seconds; utilisation-seconds where
    the cores are unknown), the time the samples cover of it and their mean core count.

    The intervals are sorted and do not overlap; each quantity is a piecewise-constant rate
    whose integral, piecewise linear, is exact when interpolated at the window edges.
    """
    known = np.isfinite(cores)
    c = np.where(known, cores, 1.0)
    xp = np.column_stack([low, high]).ravel()
    length = high - low

    def integral(rate: FloatArray) -> FloatArray:
        cum = np.concatenate([[0.0], np.cumsum(rate * length)])
        values = np.column_stack([cum[:-1], cum[1:]]).ravel()
        out: FloatArray = np.interp(b, xp, values) - np.interp(a, xp, values)
        return out

    share = integral(np.ones_like(util))
    used = integral(util * c)  # core-seconds (utilisation-seconds when cores are unknown)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_cores = integral(c) / share
    return used, share, mean_cores


def _reading(
    t: FloatArray,
    a: FloatArray,
    b: FloatArray,
    util: FloatArray,
    cores: FloatArray,
    readings: dict[str, tuple[FloatArray, FloatArray]],
    frame: pd.DataFrame,
) -> Literal["end", "start"]:
    """``"end"`` unless the samples sit on the windows' grid and reading them as starts lets
    the transactions explain the CPU clearly better."""
    width = float(np.median(b - a))
    phase = np.mod(t - a[0], width)
    on_grid = bool(np.all(np.minimum(phase, width - phase) < 1e-3 * width))
    if not on_grid:
        return "end"
    counts = frame[[c for c in frame.columns if c.startswith("n[")]].to_numpy(dtype=np.float64)
    errors = {}
    for name, (low, high) in readings.items():
        used, share, _ = _align(low, high, util, cores, a, b)
        ok = share >= _FULL * (b - a)
        if ok.sum() < counts.shape[1] + 2:
            errors[name] = math.inf
            continue
        design = np.column_stack([b - a, counts])[ok]
        y = used[ok]
        scale = np.sqrt(np.mean(design * design, axis=0))
        scale[scale == 0] = 1.0
        beta, _ = nnls(design / scale, y)
        residual = np.abs(y - (design / scale) @ beta)
        level = float(np.median(y))
        errors[name] = float(np.median(residual)) / level if level > 0 else math.inf
    # a smooth workload fits nearly as well one window off: only a clear gain overturns "end",
    # the convention of samplers and of rates over counters
    clear = errors["start"] < _CLEARLY_BETTER * errors["end"]
    choice: Literal["end", "start"] = "start" if clear else "end"
    log.info(
        "CPU samples on the windows' grid, read as interval %ss (median relative error: as "
        "ends %.3g, as starts %.3g)",
        choice,
        errors["end"],
        errors["start"],
    )
    return choice
