"""CPU utilisation samples → the ``cpu_util`` column of a workload frame.

The segment detector (Cherkasova et al.) needs the server's CPU utilisation per window, which
transaction logs do not carry. Monitoring does: ``sar``, node-exporter, a collector. A CPU table
has a ``time`` column and ``cpu_util`` (a fraction of the whole machine, 0..1; a ``%`` column can
be mapped with ``unit="%"``) and optionally ``cpu_cores``. Each sample counts for the window its
time falls in; a window's ``cpu_util`` is the mean of its samples, so samples should be at least
as fine as the windows (a sample's time stamp is taken as a point inside the period it
describes). Windows with no sample are dropped, and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from perfsleuth.errors import ConfigError, DataError, located
from perfsleuth.frames import coverage_of, normalise
from perfsleuth.sources.files import read_table

__all__ = ["attach_cpu", "read_cpu"]

log = logging.getLogger(__name__)


def read_cpu(
    path: str | Path, *, columns: Mapping[str, str] | None = None, unit: str = "fraction"
) -> pd.DataFrame:
    """Read a CPU table (CSV or Parquet): ``time``, ``cpu_util`` [, ``cpu_cores``].

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
    keep = ["time", "cpu_util", *(["cpu_cores"] if "cpu_cores" in table.columns else [])]
    frame = table[keep].copy()
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
    bad = ~out["cpu_util"].between(0.0, 1.0)
    if bad.any():
        at = out["time"].iat[int(np.flatnonzero(bad.to_numpy())[0])]
        column = aliases.get("cpu_util", "cpu_util")
        raise DataError(
            located(
                f"utilisation must be within 0..1 (or 0..100 with unit='%'), at {at.isoformat()}",
                source=source,
                field=column,
            )
        )
    return out


def attach_cpu(frame: pd.DataFrame, cpu: pd.DataFrame) -> pd.DataFrame:
    """The workload ``frame`` with ``cpu_util`` (and ``cpu_cores``) averaged from ``cpu``.

    ``cpu`` is what :func:`read_cpu` returns. Windows with no CPU sample are dropped (logged).
    """
    coverage = coverage_of(frame)
    source = coverage.source if coverage is not None else "<workload frame>"
    if coverage is None:
        frame = normalise(frame, "workload")
    if len(frame) == 0:
        return frame
    start = frame["time"].astype("int64").to_numpy()
    end = start + np.round(frame["window_s"].to_numpy() * 1e9).astype(np.int64)
    t = cpu["time"].astype("int64").to_numpy()
    order = np.argsort(start, kind="stable")
    slot = np.searchsorted(start[order], t, side="right") - 1
    inside = slot >= 0
    slot = np.where(inside, order[np.maximum(slot, 0)], -1)
    inside &= t < end[np.maximum(slot, 0)]
    replaced = [c for c in ("cpu_util", "cpu_cores") if c in cpu.columns and c in frame.columns]
    out = frame.drop(columns=replaced)
    samples = pd.DataFrame({"slot": slot[inside]})
    for column in ("cpu_util", "cpu_cores"):
        if column in cpu.columns:
            samples[column] = cpu[column].to_numpy()[inside]
    means = samples.groupby("slot").mean()
    covered = np.isin(np.arange(len(out)), means.index.to_numpy())
    for column in means.columns:
        values = np.full(len(out), np.nan)
        values[means.index.to_numpy()] = means[column].to_numpy()
        out[column] = values
    dropped = int((~covered).sum())
    if dropped:
        log.info("%d window(s) without a CPU sample dropped", dropped)
    out = out.loc[covered].reset_index(drop=True)
    return normalise(out, "workload", source=source)
