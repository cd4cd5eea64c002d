"""The frame contracts (DESIGN §1) and the one place where input is validated and normalised.

Four contracts — **metric**, **workload**, **process**, **counter** — plus the per-node table
that goes with process frames. :func:`normalise` turns any DataFrame that claims a contract into
one that honours it:

* times become timezone-aware UTC (naive times are taken as UTC; numbers as Unix seconds);
* numbers must parse and be finite; missing values (NaN, empty) are an error unless
  ``missing="drop"``;
* within a series, a time earlier than the one before is an error unless ``disorder="sort"``;
* repeated (series, time) keys: identical repeats are dropped, conflicting ones are an error
  unless ``duplicates="first"``;
* a ``unit`` column (metric and counter frames) is converted to base units (s, bytes, fraction);
* the result is sorted by series then time, with a fresh index, and carries a :class:`Coverage`
  in ``frame.attrs["coverage"]`` as plain JSON (read it back with :func:`coverage_of`).

Errors name the source, the line (when the frame came from a text file) and the column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from perfsleuth.errors import DataError, located
from perfsleuth.units import to_base

__all__ = [
    "CONTRACTS",
    "COUNTER",
    "METRIC",
    "NODE",
    "PROCESS",
    "WORKLOAD",
    "Contract",
    "Coverage",
    "Gap",
    "Locate",
    "coverage_of",
    "normalise",
    "workload_types",
]

Locate = Callable[[int], int | None]
"""Maps a row position in the frame to its line number in the source file (or None)."""


@dataclass(frozen=True, slots=True)
class Contract:
    """Columns a frame must have and what each must hold."""

    name: str
    required: tuple[str, ...]
    numeric: tuple[str, ...] = ()
    optional_numeric: tuple[str, ...] = ()
    nonnegative: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    optional_text: tuple[str, ...] = ()
    integer: tuple[str, ...] = ()
    series: tuple[str, ...] = ()
    has_time: bool = True
    has_units: bool = False


METRIC = Contract(
    "metric",
    required=("time", "entity", "metric", "value"),
    numeric=("value",),
    text=("entity", "metric"),
    series=("entity", "metric"),
    has_units=True,
)
COUNTER = Contract(
    "counter",
    required=("time", "entity", "counter", "value"),
    numeric=("value",),
    text=("entity", "counter"),
    series=("entity", "counter"),
    has_units=True,
)
PROCESS = Contract(
    "process",
    required=("time", "node", "pid", "name", "user", "cpu", "rss_bytes"),
    numeric=("cpu", "rss_bytes"),
    # Optional per-row node context (denormalised so one node's rows are self-contained):
    # ncpu, machine_cpu (cores busy on the whole machine in the interval), volume (business
    # volume per interval), file_bytes (size of the files the process holds open for writing).
    optional_numeric=("io_bytes", "ncpu", "machine_cpu", "volume", "file_bytes"),
    nonnegative=("cpu", "rss_bytes", "io_bytes", "ncpu", "machine_cpu", "volume", "file_bytes"),
    text=("node", "name", "user"),
    optional_text=("os",),
    integer=("pid",),
    series=("node", "pid", "name"),
)
WORKLOAD = Contract(
    "workload",
    required=("time", "window_s"),
    numeric=("window_s",),
    optional_numeric=("cpu_util", "cpu_cores"),
    nonnegative=("window_s", "cpu_cores"),
)
NODE = Contract(
    "node",
    required=("node", "ncpu", "os"),
    numeric=("ncpu",),
    nonnegative=("ncpu",),
    text=("node", "os"),
    series=("node",),
    has_time=False,
)
CONTRACTS = {c.name: c for c in (METRIC, COUNTER, PROCESS, WORKLOAD, NODE)}

_TYPED = re.compile(r"^(n|rt_sum|rt_mean)\[(.+)\]$")


@dataclass(frozen=True, slots=True)
class Gap:
    """A stretch of one series with no samples, longer than twice its usual step."""

    series: str
    start: pd.Timestamp
    end: pd.Timestamp


@dataclass(frozen=True, slots=True)
class Coverage:
    """What a normalised frame holds and what normalisation did to get there."""

    contract: str
    source: str
    rows: int
    series: int
    start: pd.Timestamp | None
    end: pd.Timestamp | None
    dropped_duplicates: int = 0
    dropped_missing: int = 0
    sorted_rows: int = 0
    gaps: tuple[Gap, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: frames carry this in ``attrs``, which Parquet writes as JSON."""
        data = asdict(self)
        data["start"], data["end"] = _iso(self.start), _iso(self.end)
        data["gaps"] = [[g.series, _iso(g.start), _iso(g.end)] for g in self.gaps]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Coverage:
        times = {k: None if data[k] is None else pd.Timestamp(data[k]) for k in ("start", "end")}
        gaps = tuple(Gap(s, pd.Timestamp(a), pd.Timestamp(b)) for s, a, b in data["gaps"])
        return cls(**{**data, **times, "gaps": gaps})


def _iso(value: pd.Timestamp | None) -> str | None:
    return None if value is None else value.isoformat()


def workload_types(frame: pd.DataFrame) -> list[str]:
    """Transaction types of a workload frame, in column order (from its ``n[<type>]`` columns)."""
    return [m.group(2) for c in frame.columns if (m := _TYPED.match(str(c))) and m.group(1) == "n"]


def coverage_of(frame: pd.DataFrame) -> Coverage | None:
    """The :class:`Coverage` that :func:`normalise` attached, if any."""
    data = frame.attrs.get("coverage")
    return Coverage.from_dict(data) if isinstance(data, dict) else None


class _Where:
    """Turns a row position into 'file:line: column' for error messages."""

    def __init__(
        self, source: str, locate: Locate | None, aliases: Mapping[str, str] | None = None
    ) -> None:
        self.source = source
        self.locate = locate
        self.aliases = dict(aliases or {})

    def error(self, message: str, pos: int | None = None, column: str | None = None) -> DataError:
        line = self.locate(pos) if (self.locate is not None and pos is not None) else None
        if line is None and pos is not None:
            message = f"{message} (row {pos})"
        if column is not None:
            column = self.aliases.get(column, column)
        return DataError(located(message, source=self.source, line=line, field=column))


def normalise(
    frame: pd.DataFrame,
    contract: Contract | str,
    *,
    source: str = "<frame>",
    locate: Locate | None = None,
    missing: Literal["error", "drop"] = "error",
    disorder: Literal["error", "sort"] = "error",
    duplicates: Literal["error", "first"] = "error",
    gap_factor: float = 2.0,
    aliases: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Validate ``frame`` against ``contract`` and return a normalised copy.

    Parameters
    ----------
    frame
        Input rows, in source order (so errors can name lines).
    contract
        A :class:`Contract` or its name (``"metric"``, ``"workload"``, ``"process"``, ...).
    source
        Name used in error messages, typically the file path.
    locate
        Maps a row position to its line in ``source``; readers of text files pass one.
    missing, disorder, duplicates
        What to do with missing values, times that go backwards within a series, and
        conflicting repeats of a (series, time) key. The defaults refuse: silently repairing
        monitoring data hides the problems people need to see.
    aliases
        Contract column → the name it has in the source, so errors name the user's column
        (``{"time": "ts"}`` when the file's ``ts`` column was renamed to ``time``).
    gap_factor
        A step longer than ``gap_factor`` times the series' median step is reported as a gap.
    """
    spec = CONTRACTS[contract] if isinstance(contract, str) else contract
    where = _Where(source, locate, aliases)
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{source}: expected a pandas DataFrame, got {type(frame).__name__}")
    absent = [c for c in spec.required if c not in frame.columns]
    if absent:
        have = ", ".join(map(str, frame.columns)) or "none"
        raise DataError(
            f"{source}: {spec.name} frame is missing column(s) {', '.join(map(repr, absent))} "
            f"(columns present: {have})"
        )
    out = frame.reset_index(drop=True).copy()
    out["_pos"] = np.arange(len(out))  # source position, for error messages after reordering

    numeric = list(spec.numeric) + [c for c in spec.optional_numeric if c in out.columns]
    if spec.name == "workload":
        numeric += _check_workload_columns(out, where)
    for column in (*spec.text, *(c for c in spec.optional_text if c in out.columns)):
        _text(out, column, where)
    for column in spec.integer:
        _integer(out, column, where)
    if spec.has_time:
        _time(out, where)
    for column in numeric:
        _number(out, column, where, nonneg=column in spec.nonnegative or _is_sum(column))
    if spec.has_units and "unit" in out.columns:
        _units(out, where)
    if spec.name == "workload" and "cpu_util" in out.columns:
        bad = ~out["cpu_util"].between(0.0, 1.0) & out["cpu_util"].notna()
        if bad.any():
            pos = int(np.flatnonzero(bad.to_numpy())[0])
            raise where.error(
                f"must be a fraction of the machine in 0..1, got {out['cpu_util'].iat[pos]}",
                pos,
                "cpu_util",
            )

    dropped_missing = 0
    if numeric:
        nan_rows = out[numeric].isna().any(axis=1).to_numpy()
        if nan_rows.any():
            if missing == "error":
                pos = int(np.flatnonzero(nan_rows)[0])
                column = next(c for c in numeric if pd.isna(out[c].iat[pos]))
                raise where.error(
                    "missing value (NaN or empty); pass missing='drop' to skip such rows",
                    pos,
                    column,
                )
            dropped_missing = int(nan_rows.sum())
            out = out.loc[~nan_rows].reset_index(drop=True)

    keys = list(spec.series)
    sorted_rows = dropped_duplicates = 0
    if spec.has_time:
        sorted_rows = _order(out, keys, where, disorder)
        out = out.sort_values([*keys, "time"], kind="stable").reset_index(drop=True)
        out, dropped_duplicates = _dedupe(out, [*keys, "time"], where, duplicates)
    elif keys:
        out, dropped_duplicates = _dedupe(out, keys, where, duplicates)

    gaps = _gaps(out, keys, gap_factor) if spec.has_time else ()
    out = out.drop(columns="_pos")
    nseries = int(out.groupby(keys, sort=False).ngroups) if keys and len(out) else int(len(out) > 0)
    has_rows = spec.has_time and len(out) > 0
    out.attrs["coverage"] = Coverage(
        contract=spec.name,
        source=source,
        rows=len(out),
        series=nseries,
        start=out["time"].min() if has_rows else None,
        end=out["time"].max() if has_rows else None,
        dropped_duplicates=dropped_duplicates,
        dropped_missing=dropped_missing,
        sorted_rows=sorted_rows,
        gaps=gaps,
    ).to_dict()
    return out


def _is_sum(column: str) -> bool:
    m = _TYPED.match(column)
    return m is not None


def _check_workload_columns(out: pd.DataFrame, where: _Where) -> list[str]:
    typed = [str(c) for c in out.columns if _TYPED.match(str(c))]
    types = workload_types(out)
    if not types:
        raise where.error("workload frame needs at least one n[<type>] column")
    for column in typed:
        m = _TYPED.match(column)
        assert m is not None  # filtered above
        if m.group(1) != "n" and m.group(2) not in types:
            raise where.error(
                f"{column} has no matching n[{m.group(2)}] count column", None, column
            )
    return typed


def _text(out: pd.DataFrame, column: str, where: _Where) -> None:
    values = out[column]
    empty = values.isna().to_numpy() | (values.astype(str).str.len() == 0).to_numpy()
    if empty.any():
        raise where.error("empty name", int(np.flatnonzero(empty)[0]), column)
    out[column] = values.astype(str)


def _integer(out: pd.DataFrame, column: str, where: _Where) -> None:
    parsed = pd.to_numeric(out[column], errors="coerce")
    bad = parsed.isna().to_numpy() | (parsed.to_numpy(dtype=float, na_value=np.nan) % 1 != 0)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise where.error(f"not an integer: {out[column].iat[pos]!r}", pos, column)
    out[column] = parsed.astype("int64")


def _number(out: pd.DataFrame, column: str, where: _Where, *, nonneg: bool) -> None:
    raw = out[column]
    if raw.dtype == object or pd.api.types.is_string_dtype(raw):
        text = raw.astype("string").str.strip()
        blank = text.isna() | (text == "") | text.str.lower().isin(["nan", "na", "null", "none"])
        parsed = pd.to_numeric(text.mask(blank), errors="coerce")
        bad = (parsed.isna() & ~blank).to_numpy()
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise where.error(f"not a number: {raw.iat[pos]!r}", pos, column)
        values = parsed.astype("float64")
    elif pd.api.types.is_bool_dtype(raw) or not pd.api.types.is_numeric_dtype(raw):
        raise where.error(f"expected numbers, got {raw.dtype}", None, column)
    else:
        values = raw.astype("float64")
    array = values.to_numpy()
    infinite = np.isinf(array)
    if infinite.any():
        pos = int(np.flatnonzero(infinite)[0])
        raise where.error(f"value out of range: {raw.iat[pos]!r}", pos, column)
    if nonneg and (array < 0).any():
        pos = int(np.flatnonzero(array < 0)[0])
        raise where.error(f"must not be negative, got {raw.iat[pos]!r}", pos, column)
    out[column] = values


def _time(out: pd.DataFrame, where: _Where) -> None:
    raw = out["time"]
    if isinstance(raw.dtype, pd.DatetimeTZDtype):
        times = raw.dt.tz_convert("UTC")
    elif pd.api.types.is_datetime64_dtype(raw):
        times = raw.dt.tz_localize("UTC")
    elif pd.api.types.is_numeric_dtype(raw) and not pd.api.types.is_bool_dtype(raw):
        times = _epoch(raw.astype("float64"), where)
    else:
        text = raw.astype("string").str.strip()
        numeric = pd.to_numeric(text, errors="coerce")
        if numeric.notna().all() and len(text):
            times = _epoch(numeric.astype("float64"), where)
        else:
            times = pd.to_datetime(text, utc=True, errors="coerce", format="ISO8601")
            bad = times.isna().to_numpy()
            if bad.any():
                pos = int(np.flatnonzero(bad)[0])
                raise where.error(
                    f"not a time: {raw.iat[pos]!r} (expected ISO 8601 or Unix seconds)", pos, "time"
                )
    if times.isna().any():
        pos = int(np.flatnonzero(times.isna().to_numpy())[0])
        raise where.error("missing time", pos, "time")
    out["time"] = times.astype("datetime64[ns, UTC]")


def _epoch(seconds: pd.Series, where: _Where) -> pd.Series:
    array = seconds.to_numpy()
    # 1e11 s is the year 5138: anything beyond is a unit mistake (ms or µs), not a time.
    bad = ~np.isfinite(array) | (np.abs(array) > 1e11)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise where.error(f"not a Unix time in seconds: {array[pos]!r}", pos, "time")
    return pd.to_datetime(np.round(array * 1e6).astype("int64"), unit="us", utc=True).to_series(
        index=seconds.index
    )


def _units(out: pd.DataFrame, where: _Where) -> None:
    units = out["unit"].fillna("").astype(str)
    factors = np.ones(len(out))
    base = units.copy()
    for unit in units.unique():
        try:
            base_unit, factor = to_base(unit)
        except KeyError:
            pos = int(np.flatnonzero((units == unit).to_numpy())[0])
            raise where.error(f"unknown unit {unit!r}", pos, "unit") from None
        mask = (units == unit).to_numpy()
        factors[mask] = factor
        base[mask] = base_unit
    out["value"] = out["value"] * factors
    out["unit"] = base


def _order(out: pd.DataFrame, keys: list[str], where: _Where, disorder: str) -> int:
    if len(out) < 2:
        return 0
    steps = out.groupby(keys, sort=False)["time"].diff() if keys else out["time"].diff()
    back = (steps < pd.Timedelta(0)).to_numpy()
    if not back.any():
        return 0
    if disorder == "error":
        pos = int(np.flatnonzero(back)[0])
        raise where.error(
            f"time goes backwards to {out['time'].iat[pos].isoformat()} within a series; "
            "pass disorder='sort' to accept unsorted input",
            int(out["_pos"].iat[pos]),
            "time",
        )
    return int(back.sum())


def _dedupe(
    out: pd.DataFrame, keys: list[str], where: _Where, duplicates: str
) -> tuple[pd.DataFrame, int]:
    repeated = out.duplicated(keys, keep="first").to_numpy()
    if not repeated.any():
        return out, 0
    values = [c for c in out.columns if c not in (*keys, "_pos")]
    identical = out.duplicated([*keys, *values], keep="first").to_numpy()
    conflicting = repeated & ~identical
    if conflicting.any() and duplicates == "error":
        pos = int(np.flatnonzero(conflicting)[0])
        key = ", ".join(f"{k}={out[k].iat[pos]}" for k in keys)
        first = out.loc[(out[keys] == out.loc[pos, keys]).all(axis=1), "_pos"].iat[0]
        line = where.locate(int(first)) if where.locate else None
        before = f"line {line}" if line is not None else f"row {int(first)}"
        raise where.error(
            f"duplicate {key} with a different value than {before}; "
            "pass duplicates='first' to keep the first",
            int(out["_pos"].iat[pos]),
            keys[-1],
        )
    return out.loc[~repeated].reset_index(drop=True), int(repeated.sum())


def _gaps(out: pd.DataFrame, keys: list[str], factor: float, limit: int = 100) -> tuple[Gap, ...]:
    if len(out) < 3:
        return ()
    grouped = out.groupby(keys, sort=False)["time"] if keys else None
    steps = grouped.diff() if grouped is not None else out["time"].diff()
    seconds = steps.dt.total_seconds()
    if grouped is not None:
        typical = seconds.groupby([out[k] for k in keys], sort=False).transform("median")
    else:
        typical = pd.Series(np.nanmedian(seconds.to_numpy()), index=out.index)
    is_gap = (seconds > factor * typical) & (typical > 0)
    gaps = []
    for pos in np.flatnonzero(is_gap.to_numpy())[:limit]:
        label = "/".join(str(out[k].iat[pos]) for k in keys) or "all"
        gaps.append(Gap(label, out["time"].iat[pos - 1], out["time"].iat[pos]))
    return tuple(gaps)
