"""Imports of Windows Performance Monitor logs in CSV (``relog <log.blg> -f csv -o out.csv``).

The first header cell names the format and the clock, ``(PDH-CSV 4.0) (<zone name>)(<bias>)``,
where the bias is the minutes to add to the local times to get UTC; each other header cell is
a counter path ``\\\\HOST\\Object(Instance)\\Counter``. Times are ``MM/DD/YYYY HH:MM:SS.fff``;
a blank cell (relog writes ``" "``) is a missing sample.

* :func:`read_perfmon` — a counter frame: ``entity`` = the host, ``counter`` =
  ``Object(Instance)\\Counter``; ``%`` counters become fractions (``unit`` = fraction).
  Missing samples are left out.
* :func:`perfmon_processes` — a process frame from the ``Process(<name>)`` counters, the way
  the process checks want it: ``cpu`` = ``% Processor Time`` / 100 (cores), ``rss_bytes`` =
  ``Working Set``, ``pid`` = ``ID Process`` (0 without it), ``io_bytes`` = ``IO Data
  Bytes/sec`` × the interval, ``ncpu`` = the number of ``Processor(<n>)`` instances,
  ``machine_cpu`` from ``Processor(_Total)``; ``user`` is ``-`` (perfmon has none) and the
  ``_Total`` and ``Idle`` instances are left out.

Malformed input raises :class:`~perfsleuth.errors.DataError` naming file, line and column. A path
of ``-`` reads standard input.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from perfsleuth.errors import DataError, located
from perfsleuth.frames import normalise
from perfsleuth.sources.files import input_name, is_stdin, read_bytes

__all__ = ["perfmon_processes", "read_perfmon"]

_FIRST = re.compile(r"^\(PDH-CSV [\d.]+\)\s*\((?P<zone>[^)]*)\)\((?P<bias>-?\d+)\)$")
_PATH = re.compile(
    r"^\\\\(?P<host>[^\\]+)\\(?P<object>[^\\(]+)(?:\((?P<instance>.*)\))?\\(?P<counter>.+)$"
)
_TIME_FORMATS = ("%m/%d/%Y %H:%M:%S.%f", "%m/%d/%Y %H:%M:%S")


@dataclass(frozen=True, slots=True)
class _Column:
    host: str
    object: str
    instance: str | None
    counter: str

    @property
    def name(self) -> str:
        inner = f"({self.instance})" if self.instance is not None else ""
        return f"{self.object}{inner}\\{self.counter}"


@dataclass(frozen=True, slots=True)
class _Log:
    source: str
    times: list[datetime]
    lines: list[int]
    columns: list[_Column]
    values: np.ndarray  # rows x columns, NaN where blank


def _read(path: str | Path) -> _Log:
    source = input_name(path)
    text = read_bytes(path).decode("utf-8-sig", errors="replace")
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise DataError(f"{source}: not CSV: {exc}") from exc
    if not rows:
        raise DataError(f"{source}: empty file")
    header = rows[0]
    first = _FIRST.match(header[0].strip()) if header else None
    if first is None:
        raise DataError(
            located(
                "first header cell is not '(PDH-CSV 4.0) (<zone>)(<bias>)': not a perfmon CSV "
                "(write one with relog -f csv)",
                source=source,
                line=1,
                field=header[0] if header else None,
            )
        )
    bias = timedelta(minutes=int(first["bias"]))
    columns = []
    for cell in header[1:]:
        match = _PATH.match(cell.strip())
        if match is None:
            raise DataError(
                located(r"not a counter path \\HOST\Object(Instance)\Counter", source=source,
                        line=1, field=cell)
            )  # fmt: skip
        columns.append(_Column(match["host"], match["object"], match["instance"], match["counter"]))
    times, lines, values = [], [], []
    for number, row in enumerate(rows[1:], 2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise DataError(
                located(f"{len(row)} fields, the header has {len(header)}", source=source,
                        line=number)
            )  # fmt: skip
        times.append(_time(row[0], bias, source, number, header[0]))
        lines.append(number)
        parsed = []
        for column, cell in zip(header[1:], row[1:], strict=True):
            text = cell.strip()
            try:
                value = float(text) if text else np.nan
                if text and np.isnan(value):  # a blank cell is a missing sample; "NaN" no number
                    raise ValueError(text)
            except ValueError:
                raise DataError(
                    located(f"not a number: {cell!r}", source=source, line=number, field=column)
                ) from None
            parsed.append(value)
        values.append(parsed)
    if not times:
        raise DataError(f"{source}: no samples after the header")
    return _Log(source, times, lines, columns, np.asarray(values, dtype=np.float64))


def _time(text: str, bias: timedelta, source: str, line: int, column: str) -> datetime:
    for pattern in _TIME_FORMATS:
        try:
            local = datetime.strptime(text.strip(), pattern)
        except ValueError:
            continue
        return (local + bias).replace(tzinfo=UTC)
    raise DataError(
        located(f"not a time: {text!r} (expected MM/DD/YYYY HH:MM:SS.fff)", source=source,
                line=line, field=column)
    )  # fmt: skip


def read_perfmon(
    path: str | Path,
    *,
    missing: Literal["error", "drop"] = "error",
    disorder: Literal["error", "sort"] = "error",
    duplicates: Literal["error", "first"] = "error",
    since: datetime | None = None,
    until: datetime | None = None,
) -> pd.DataFrame:
    """Read a perfmon CSV into a normalised counter frame (missing samples left out).

    ``missing``, ``disorder``, ``duplicates``, ``since`` and ``until`` are
    :func:`perfsleuth.frames.normalise`'s.
    """
    log = _read(path)
    n_rows, n_cols = log.values.shape
    frame = pd.DataFrame(
        {
            "time": pd.DatetimeIndex(log.times).repeat(n_cols),
            "entity": np.tile([c.host for c in log.columns], n_rows),
            "counter": np.tile([c.name for c in log.columns], n_rows),
            "value": log.values.ravel(),
            "unit": np.tile(["%" if c.counter.startswith("%") else "" for c in log.columns],
                            n_rows),
            "_line": np.repeat(log.lines, n_cols),
        }
    )  # fmt: skip
    frame = frame[frame["value"].notna()].reset_index(drop=True)
    lines = frame.pop("_line").to_numpy()
    return normalise(
        frame,
        "counter",
        source=log.source,
        locate=lambda pos: int(lines[pos]),
        missing=missing,
        disorder=disorder,
        duplicates=duplicates,
        since=since,
        until=until,
    )


def has_processes(path: str | Path) -> bool:
    """Whether a perfmon CSV's header names any ``Process(<name>)`` counter."""
    try:
        if is_stdin(path):
            header = read_bytes(path).decode("utf-8-sig", errors="replace").split("\n", 1)[0]
        else:
            with Path(path).open(encoding="utf-8-sig", errors="replace") as handle:
                header = handle.readline()
    except OSError:
        return False  # the reader itself says why the file cannot be read
    return "\\Process(" in header and any(
        part not in ("_Total", "Idle") for part in re.findall(r"\\Process\(([^)]*)\)", header)
    )


def perfmon_processes(
    path: str | Path,
    *,
    missing: Literal["error", "drop"] = "error",
    disorder: Literal["error", "sort"] = "error",
    duplicates: Literal["error", "first"] = "error",
    since: datetime | None = None,
    until: datetime | None = None,
) -> pd.DataFrame:
    """Read the ``Process(*)`` counters of a perfmon CSV into a normalised process frame.

    ``missing``, ``disorder``, ``duplicates``, ``since`` and ``until`` are
    :func:`perfsleuth.frames.normalise`'s.
    """
    log = _read(path)
    times = pd.DatetimeIndex(log.times)
    seconds = np.diff(times.asi8) / 1e9
    interval = float(np.median(seconds)) if len(seconds) else 1.0
    parts = []
    for host in sorted({c.host for c in log.columns}):
        index = {
            (c.object, c.instance, c.counter): i
            for i, c in enumerate(log.columns)
            if c.host == host
        }
        cpus = [
            inst
            for (obj, inst, counter) in index
            if obj == "Processor" and counter == "% Processor Time" and inst not in (None, "_Total")
        ]
        total = index.get(("Processor", "_Total", "% Processor Time"))
        instances = sorted(
            {
                inst
                for (obj, inst, counter) in index
                if obj == "Process" and inst not in (None, "_Total", "Idle")
            }
        )
        for instance in instances:
            assert instance is not None  # filtered above
            cpu_at = index.get(("Process", instance, "% Processor Time"))
            rss_at = index.get(("Process", instance, "Working Set"))
            if cpu_at is None or rss_at is None:
                raise DataError(
                    f"{log.source}: line 1: Process({instance}) needs '% Processor Time' and "
                    "'Working Set' columns"
                )
            part = pd.DataFrame(
                {
                    "time": times,
                    "node": host,
                    "pid": _column(log, index.get(("Process", instance, "ID Process")), 0.0),
                    # perfmon tells same-named processes apart as name#1, name#2
                    "name": instance.split("#", 1)[0],
                    "user": "-",
                    "cpu": log.values[:, cpu_at] / 100.0,
                    "rss_bytes": log.values[:, rss_at],
                    "_line": log.lines,
                }
            )
            io_at = index.get(("Process", instance, "IO Data Bytes/sec"))
            if io_at is not None:
                part["io_bytes"] = log.values[:, io_at] * interval
            if cpus:
                part["ncpu"] = float(len(cpus))
                if total is not None:
                    part["machine_cpu"] = log.values[:, total] / 100.0 * len(cpus)
            part["os"] = "Windows"
            # a process that is not running has blank cells: no sample, not an error
            parts.append(part[part["cpu"].notna() & part["rss_bytes"].notna()])
    if not parts:
        raise DataError(f"{log.source}: no Process(<name>) counters in this log")
    frame = pd.concat(parts, ignore_index=True)
    lines = frame.pop("_line").to_numpy()
    return normalise(
        frame,
        "process",
        source=log.source,
        locate=lambda pos: int(lines[pos]),
        missing=missing,
        disorder=disorder,
        duplicates=duplicates,
        since=since,
        until=until,
    )


def _column(log: _Log, at: int | None, default: float) -> np.ndarray:
    if at is None:
        return np.full(len(log.times), default)
    values: np.ndarray = np.nan_to_num(log.values[:, at], nan=default)
    return values
