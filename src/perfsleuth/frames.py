"""The frame contracts (DESIGN §1) and the one place where input is validated and normalised.

Four contracts — **metric**, **workload**, **process**, **counter** — plus the per-node table
that goes with process frames. :func:`normalise` turns any DataFrame that claims a contract into
one that honours it:

* times become timezone-aware UTC: naive times are taken in ``tz`` (UTC by default), numbers
  as Unix times in ``time_unit`` or as calendar years (``"auto"``: years when every number is
  in 1900..2099, else seconds, milliseconds, microseconds or nanoseconds, whichever the
  column's values are), kept to the microsecond (the store's resolution); times outside the
  years 1900 to 2099 are refused, and so are numbers whose guessed unit puts them within ten
  days of 1970 (an index or a count, not a clock);
* ``since`` / ``until`` keep the rows in ``[since, until)``, before anything else is checked;
* numbers must parse, be finite and no larger than ±1e100 (squaring larger ones overflows;
  no measurement is that large); missing values (NaN, empty, a blank time) are an error unless
  ``missing="drop"``;
* within a series, a time earlier than the one before is an error unless ``disorder="sort"``;
* repeated (series, time) keys: identical repeats are dropped, conflicting ones are an error
  unless ``duplicates="first"``;
* a ``unit`` column (metric and counter frames) is converted to base units (s, bytes, fraction);
* the result is sorted by series then time, with a fresh index, and carries a :class:`Coverage`
  in ``frame.attrs["coverage"]`` as plain JSON (read it back with :func:`coverage_of`).

Errors name the source, the line (when the frame came from a text file) and the column, and
say which option accepts what they refuse: the same name on the command line (``--missing
drop``), in a config source (``missing = "drop"``) and in Python (``missing="drop"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from perfsleuth.durations import MAX_SECONDS
from perfsleuth.errors import DataError, located
from perfsleuth.units import to_base

__all__ = [
    "CONTRACTS",
    "COUNTER",
    "MAX_VALUE",
    "METRIC",
    "NODE",
    "PROCESS",
    "TIME_BOUNDS_NS",
    "TIME_UNITS",
    "WORKLOAD",
    "Contract",
    "Coverage",
    "Gap",
    "Locate",
    "ParsedTimes",
    "TimeUnit",
    "as_utc",
    "coverage_of",
    "normalise",
    "parse_times",
    "time_zone",
    "workload_types",
]

Locate = Callable[[int], int | str | None]
"""Maps a row position in the frame to where it is in the source file: its line number, or
for a file without lines to speak of (JSON) the path to its value (or None)."""

TimeUnit = Literal["auto", "s", "ms", "us", "ns", "year"]
"""Unit of numeric times (Unix epoch, or calendar years: 1950 is 1950-01-01 00:00 UTC);
``"auto"`` picks it from the column's values."""
TIME_UNITS: tuple[TimeUnit, ...] = ("auto", "s", "ms", "us", "ns", "year")

MAX_VALUE = 1e100
"""Largest magnitude a value may have: no measurement is larger, and squares of values much
larger overflow (1e155² is infinite), which no statistic survives."""

_NS_PER = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_UNIT_NAMES = {
    "s": "seconds",
    "ms": "milliseconds",
    "us": "microseconds",
    "ns": "nanoseconds",
    "year": "years",
}
# A number that a guessed unit puts within this many seconds of 1970-01-01 (ten days) is an
# index or a count, not a clock (a year column read as seconds: 1950 is 00:32:30 on 1 January
# 1970): no recording starts then. A unit given explicitly is taken at its word.
_EPOCH_NEAR_S = 10 * 86_400
# Times are kept within 1900-01-01 .. 2100-01-01 UTC: a time outside is a unit mistake or a
# corrupt field, and two times must be less than 292 years apart for their difference to fit
# in nanoseconds (pandas' unit), or every step, gap and duration computed later overflows.
_FIRST_NS = -2_208_988_800 * 10**9
_END_NS = 4_102_444_800 * 10**9
_YEARS = "the years 1900 to 2099"
TIME_BOUNDS_NS = (_FIRST_NS, _END_NS)
"""The times a frame may hold, as nanoseconds since 1970 (UTC): [1900-01-01, 2100-01-01)."""
# an ISO 8601 time that says its own offset (after a time of day: "2024-01-01" has none)
_OFFSET = r"[Tt ]\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d+)?)?)?\s*(?:[zZ]|[+-]\d{2}(?::?\d{2})?)$"


@dataclass(frozen=True, slots=True)
class Contract:
    """Columns a frame must have and what each must hold."""

    name: str
    required: tuple[str, ...]
    numeric: tuple[str, ...] = ()
    optional_numeric: tuple[str, ...] = ()
    sparse: tuple[str, ...] = ()
    """Optional numeric columns that may be unknown (NaN, kept) in some rows."""
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
    # volume per interval), file_bytes (size of the files the process holds open for writing);
    # and per process: start_time (Unix seconds: node + pid + start time is its identity),
    # cpu_wait (cores it spent waiting in a run queue over the interval).
    optional_numeric=(
        *("io_bytes", "ncpu", "machine_cpu", "volume", "file_bytes"),
        *("start_time", "cpu_wait"),
    ),
    # a collector that is not root cannot read every /proc/<pid>/io: those rows have no I/O;
    # nor can it list the open files, the run-queue wait or the start of one that just exited
    sparse=("io_bytes", "file_bytes", "start_time", "cpu_wait"),
    nonnegative=(
        *("cpu", "rss_bytes", "io_bytes", "ncpu", "machine_cpu", "volume", "file_bytes"),
        *("start_time", "cpu_wait"),
    ),
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

# a type's name may hold any character (a newline too: a URL path decoded from a log)
_TYPED = re.compile(r"(n|rt_sum|rt_mean)\[(.+)\]", re.DOTALL)


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
    return [
        m.group(2) for c in frame.columns if (m := _TYPED.fullmatch(str(c))) and m.group(1) == "n"
    ]


def coverage_of(frame: pd.DataFrame) -> Coverage | None:
    """The :class:`Coverage` that :func:`normalise` attached, if any."""
    data = frame.attrs.get("coverage")
    return Coverage.from_dict(data) if isinstance(data, dict) else None


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (``"UTC"``, ``"Europe/Paris"``); ``ValueError`` if unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r} (an IANA name, e.g. 'Europe/Paris')"
        ) from None


# Why a time could not be read (ParsedTimes.codes); 0 is a good time.
_MISSING, _NOT_A_TIME, _OUT_OF_RANGE, _SKIPPED, _REPEATED, _NEAR_EPOCH, _NOT_A_YEAR = range(1, 8)


@dataclass(frozen=True, slots=True, eq=False)
class ParsedTimes:
    """A column of times read as UTC: the times (NaT where bad) and why each bad one is bad."""

    times: pd.Series
    codes: np.ndarray  # int8 per row: 0 good, else one of the _MISSING ... _REPEATED codes
    unit: str  # the unit numeric times were read in ("" when there were none)
    guessed: bool  # whether ``unit`` was picked from the values (time_unit="auto")
    tz: str

    def reason(self, pos: int, raw: object) -> str:
        """Why the time at row ``pos`` (``raw`` as written) was refused."""
        code = int(self.codes[pos])
        if code == _MISSING:
            return "missing time"
        if code == _SKIPPED:
            return f"{_show(raw)} does not exist in {self.tz} (a daylight-saving change skips it)"
        if code == _REPEATED:
            return (
                f"{_show(raw)} happens twice in {self.tz} (a daylight-saving change repeats it) "
                "and the order of the rows does not say which; write times with their offset"
            )
        guess = (
            f"; the column's unit was taken to be {_UNIT_NAMES[self.unit]} from its values: "
            "give time_unit (--time-unit) if it is not"
            if self.guessed and self.unit
            else ""
        )
        if code == _NEAR_EPOCH:
            return (
                f"not a clock time: {_show(raw)} as Unix {_UNIT_NAMES[self.unit]} is within "
                "10 days of 1970-01-01 (an index or a count?); give time_unit (--time-unit): "
                "year for calendar years, s (or ms, us, ns) to read it as a Unix time anyway"
            )
        if code == _NOT_A_YEAR:
            return f"not a whole year: {_show(raw)}{guess}"
        if code == _OUT_OF_RANGE and self.unit == "year" and _is_number(raw):
            return f"year {_show(raw)} is outside {_YEARS}{guess}"
        if code == _OUT_OF_RANGE and self.unit and _is_number(raw):
            return (
                f"not a Unix time in {_UNIT_NAMES[self.unit]}: {_show(raw)} "
                f"(outside {_YEARS}{guess})"
            )
        if code == _OUT_OF_RANGE:
            return f"time {_show(raw)} is outside {_YEARS}"
        return f"not a time: {_show(raw)} (expected ISO 8601 or Unix times)"


def parse_times(values: pd.Series, *, time_unit: TimeUnit = "auto", tz: str = "UTC") -> ParsedTimes:
    """Read a column of times as UTC, without raising: bad times are NaT with a reason.

    Parameters
    ----------
    values
        Datetimes (zone-aware or naive), numbers (Unix times), or text: ISO 8601 times and
        numbers, each value read as what it is.
    time_unit
        Unit of numeric times: ``"s"``, ``"ms"``, ``"us"``, ``"ns"``, ``"year"`` (whole
        calendar years, each read as 1 January 00:00 UTC), or ``"auto"``: years when every
        number is in 1900..2099 (as Unix seconds they would all fall on the first hour of
        1970), else the unit that puts the numbers' median in a plausible year (seconds below
        1e11, milliseconds below 1e14, microseconds below 1e17, else nanoseconds); numbers the
        guessed unit puts within ten days of 1970-01-01 are refused (an index or a count).
    tz
        Time zone of times written without an offset (an IANA name).
    """
    zone = time_zone(tz)
    if time_unit not in TIME_UNITS:
        raise ValueError(f"time_unit must be one of {', '.join(TIME_UNITS)}, got {time_unit!r}")
    values = values.reset_index(drop=True)
    codes = np.zeros(len(values), dtype=np.int8)
    unit, guessed = "", False
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        ns, good = _ns_in_range(pd.DatetimeIndex(values).tz_convert("UTC"), codes)
    elif pd.api.types.is_datetime64_dtype(values.dtype):
        index = pd.DatetimeIndex(values).tz_localize("UTC")
        ns, good = _ns_in_range(_localise(index, ~np.asarray(index.isna()), zone, codes), codes)
    elif pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values):
        index, unit, guessed = _epoch(values, time_unit, codes)
        ns, good = _ns_in_range(index, codes)
    else:
        text = values.astype("string").str.strip()
        blank = (text.isna() | (text == "")).to_numpy()
        # No number has a colon and most written times do: only the rest may be Unix times
        # (a failed parse is what costs in to_numeric, 16 ms for 18,000 ISO times)
        clock = text.str.contains(":", regex=False).fillna(False).to_numpy(bool)
        numbers = pd.to_numeric(text.mask(blank | clock), errors="coerce")
        number = numbers.notna().to_numpy()
        ns, good = np.zeros(len(values), dtype=np.int64), np.zeros(len(values), dtype=bool)
        if number.any():
            index, unit, guessed = _epoch(numbers, time_unit, codes)
            ns_n, good_n = _ns_in_range(index, codes)
            ns, good = np.where(number, ns_n, ns), good | (good_n & number)
        other = ~number & ~blank
        if other.any():  # ISO 8601, each value with its offset or in ``zone``
            index = pd.DatetimeIndex(
                pd.to_datetime(text.where(other), utc=True, format="ISO8601", errors="coerce")
            )
            codes[other & np.asarray(index.isna())] = _NOT_A_TIME
            if str(zone) != "UTC":  # (pandas read the naive ones as UTC already)
                offset = text.str.contains(_OFFSET, regex=True).fillna(False).to_numpy(bool)
                index = _localise(index, other & ~offset & (codes == 0), zone, codes)
            ns_t, good_t = _ns_in_range(index, codes)
            ns, good = np.where(other, ns_t, ns), good | (good_t & other)
        codes[blank] = _MISSING
    codes[~good & (codes == 0)] = _MISSING  # NaN numbers, NaT datetimes
    # Whole microseconds (truncated), the resolution of the store and of Python's datetime: a
    # nanosecond part would be lost, with a warning, wherever a time leaves pandas.
    ns -= ns % 1000
    times = pd.Series(pd.to_datetime(ns, unit="ns", utc=True)).mask(codes != 0)
    return ParsedTimes(times, codes, unit, guessed, tz)


def _is_number(value: object) -> bool:
    try:
        float(str(value))
    except ValueError:
        return False
    return True


def _epoch(
    numbers: pd.Series, time_unit: TimeUnit, codes: np.ndarray
) -> tuple[pd.DatetimeIndex, str, bool]:
    """Unix times in ``time_unit`` (or the unit the values suggest) as UTC datetimes."""
    exact = pd.api.types.is_integer_dtype(numbers.dtype)
    floats = numbers.to_numpy(dtype="float64", na_value=np.nan)
    finite = np.isfinite(floats)
    guessed = time_unit == "auto"
    unit = _guess_unit(floats[finite]) if guessed else time_unit
    if unit == "year":
        return _years(floats, codes), unit, guessed
    per = _NS_PER[unit]
    with np.errstate(invalid="ignore"):
        good = finite & (floats >= _FIRST_NS / per) & (floats < _END_NS / per)
    codes[~good & ~np.isnan(floats)] = _OUT_OF_RANGE
    if guessed:
        with np.errstate(invalid="ignore"):
            near = good & (np.abs(floats) < _EPOCH_NEAR_S * 10**9 / per)
        codes[near] = _NEAR_EPOCH
        good &= ~near
    ns = np.zeros(len(floats), dtype=np.int64)
    if exact:
        ns[good] = numbers.to_numpy(dtype="int64", na_value=0)[good] * per
    elif per >= 1000:  # whole microseconds: 1700000000.123 s is .123000 s, not .123000064
        ns[good] = np.round(floats[good] * (per // 1000)).astype(np.int64) * 1000
    else:
        ns[good] = np.round(floats[good]).astype(np.int64)
    index = pd.DatetimeIndex(pd.to_datetime(ns, unit="ns", utc=True))
    return index.where(good), unit, guessed


def _years(floats: np.ndarray, codes: np.ndarray) -> pd.DatetimeIndex:
    """Whole calendar years as 1 January 00:00 UTC of each (NaT elsewhere, with its code)."""
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(floats) & (floats == np.round(floats))
        good = whole & (floats >= 1900) & (floats < 2100)
    codes[~whole & ~np.isnan(floats)] = _NOT_A_YEAR
    codes[whole & ~good] = _OUT_OF_RANGE
    years = np.where(good, floats, 1970).astype(np.int64)
    index = pd.DatetimeIndex((years - 1970).astype("datetime64[Y]")).tz_localize("UTC")
    return index.where(good)


def _guess_unit(values: np.ndarray) -> str:
    if not len(values):
        return "s"
    if ((values >= 1900) & (values < 2100)).all():
        return "year"
    middle = float(np.median(np.abs(values)))
    return "s" if middle < 1e11 else "ms" if middle < 1e14 else "us" if middle < 1e17 else "ns"


def _localise(
    index: pd.DatetimeIndex, rows: np.ndarray, zone: ZoneInfo, codes: np.ndarray
) -> pd.DatetimeIndex:
    """The times at ``rows`` (wall clocks, read as UTC) taken in ``zone`` instead."""
    if str(zone) == "UTC" or not rows.any():
        return index
    wall = index[rows].tz_localize(None)
    try:  # a repeated hour in time order is its first pass, then its second
        local = wall.tz_localize(zone, ambiguous="infer", nonexistent="NaT")
    except ValueError:  # pandas cannot tell which is which: refuse those times, not the file
        local = wall.tz_localize(zone, ambiguous="NaT", nonexistent="NaT")
    lost = np.asarray(local.isna())
    if lost.any():
        skipped = wall[lost].tz_localize(zone, ambiguous=True, nonexistent="NaT").isna()
        codes[np.flatnonzero(rows)[lost]] = np.where(np.asarray(skipped), _SKIPPED, _REPEATED)
    series = pd.Series(index)
    series.iloc[np.flatnonzero(rows)] = local.tz_convert("UTC")
    return pd.DatetimeIndex(series)


def _ns_in_range(index: pd.DatetimeIndex, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nanoseconds since 1970 of the good times within 1900..2099 (those outside are coded),
    and which rows are good."""
    per = _NS_PER[str(index.unit)]  # compare in the index's own unit: nothing overflows
    stamps = index.asi8
    valid = ~np.asarray(index.isna())
    outside = valid & ((stamps < _FIRST_NS // per) | (stamps >= _END_NS // per))
    codes[outside & (codes == 0)] = _OUT_OF_RANGE
    good = valid & (codes == 0)
    ns = np.zeros(len(index), dtype=np.int64)
    ns[good] = index[good].as_unit("ns").asi8
    return ns, good


def _show(value: object) -> str:
    """A value for an error message: ``1e+155``, ``'fast'`` (numpy scalars as plain numbers)."""
    if isinstance(value, np.datetime64):
        value = pd.Timestamp(value)
    if isinstance(value, datetime):  # a Timestamp too: its ISO form, not its repr
        return repr(value.isoformat())
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


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
        if isinstance(line, str):
            message, line = f"{message} (at {line})", None
        elif line is None and pos is not None:
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
    time_unit: TimeUnit = "auto",
    tz: str = "UTC",
    since: datetime | str | None = None,
    until: datetime | str | None = None,
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
        What to do with missing values (``"drop"`` the rows), times that go backwards within a
        series (``"sort"`` them), and conflicting repeats of a (series, time) key (keep the
        ``"first"``). The defaults refuse: silently repairing monitoring data hides the
        problems people need to see. The command line's ``--missing``, ``--disorder`` and
        ``--duplicates`` and a config source's keys of the same names mean the same.
    time_unit
        Unit of numeric times: ``"s"``, ``"ms"``, ``"us"``, ``"ns"`` since 1970, or
        ``"auto"`` (see :func:`parse_times`).
    tz
        Time zone of times written without an offset (an IANA name; default UTC).
    since, until
        Keep only rows with ``since <= time < until`` (a time without a zone is in ``tz``);
        the rows outside are left out before any other check.
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

    dropped_missing = 0
    if spec.has_time:
        out, dropped_missing = _time(out, where, time_unit=time_unit, tz=tz, missing=missing)
        out = _between(out, as_utc(since, tz=tz, what="since"), as_utc(until, tz=tz, what="until"))
    numeric = list(spec.numeric) + [c for c in spec.optional_numeric if c in out.columns]
    if spec.name == "workload":
        numeric += _check_workload_columns(out, where)
    for column in (*spec.text, *(c for c in spec.optional_text if c in out.columns)):
        _text(out, column, where)
    for column in spec.integer:
        _integer(out, column, where)
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
                _at(out, pos),
                "cpu_util",
            )
    if spec.name == "workload":
        width = out["window_s"]
        bad = ~((width > 0) & (width <= MAX_SECONDS)) & width.notna()
        if bad.any():
            pos = int(np.flatnonzero(bad.to_numpy())[0])
            raise where.error(
                f"a window must last more than 0 s and at most a century, got {width.iat[pos]:g}",
                _at(out, pos),
                "window_s",
            )

    numeric = [c for c in numeric if c not in spec.sparse]
    if numeric:
        nan_rows = out[numeric].isna().any(axis=1).to_numpy()
        if nan_rows.any():
            if missing == "error":
                pos = int(np.flatnonzero(nan_rows)[0])
                column = next(c for c in numeric if pd.isna(out[c].iat[pos]))
                raise where.error(
                    "missing value (NaN or empty)" + _advice("missing", "drop", "skip such rows"),
                    _at(out, pos),
                    column,
                )
            dropped_missing += int(nan_rows.sum())
            out = out.loc[~nan_rows].reset_index(drop=True)

    keys = list(spec.series)
    sorted_rows = dropped_duplicates = 0
    gaps: tuple[Gap, ...] = ()
    if spec.has_time:
        # Each row's series, found once: grouping by the text keys is what costs, and the
        # order check, the gaps and the count below all group by series.
        series = ["_series"] if keys else []
        if keys:
            out["_series"] = out.groupby(keys, sort=False).ngroup()
        sorted_rows = _order(out, series, where, disorder, duplicates)
        out = out.sort_values([*keys, "time"], kind="stable").reset_index(drop=True)
        out, dropped_duplicates = _dedupe(out, [*keys, "time"], where, duplicates)
        gaps = _gaps(out, keys, series, gap_factor)
        nseries = int(out["_series"].nunique()) if keys else int(len(out) > 0)
        out = out.drop(columns=["_pos", *series])
    else:
        if keys:
            out, dropped_duplicates = _dedupe(out, keys, where, duplicates)
        nseries = (
            int(out.groupby(keys, sort=False).ngroups) if keys and len(out) else int(len(out) > 0)
        )
        out = out.drop(columns="_pos")
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
    m = _TYPED.fullmatch(column)
    return m is not None


def _check_workload_columns(out: pd.DataFrame, where: _Where) -> list[str]:
    typed = [str(c) for c in out.columns if _TYPED.fullmatch(str(c))]
    types = workload_types(out)
    if not types:
        raise where.error("workload frame needs at least one n[<type>] column")
    for column in typed:
        m = _TYPED.fullmatch(column)
        assert m is not None  # filtered above
        if m.group(1) != "n" and m.group(2) not in types:
            raise where.error(
                f"{column} has no matching n[{m.group(2)}] count column", None, column
            )
    return typed


def _at(out: pd.DataFrame, pos: int) -> int:
    """The source position of row ``pos`` of ``out`` (rows may have been left out)."""
    return int(out["_pos"].iat[pos])


def _advice(key: str, value: str, effect: str) -> str:
    """How to accept what an error refuses, wherever the user is."""
    return f"; to {effect}, use --{key} {value} ({key} = {value!r} in a config or in Python)"


def _text(out: pd.DataFrame, column: str, where: _Where) -> None:
    values = out[column]
    empty = values.isna().to_numpy() | (values.astype(str).str.len() == 0).to_numpy()
    if empty.any():
        raise where.error("empty name", _at(out, int(np.flatnonzero(empty)[0])), column)
    out[column] = values.astype(str)


def _integer(out: pd.DataFrame, column: str, where: _Where) -> None:
    parsed = pd.to_numeric(out[column], errors="coerce")
    floats = parsed.to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(floats) | (floats % 1 != 0) | (np.abs(floats) >= 2.0**63)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise where.error(f"not an integer: {_show(out[column].iat[pos])}", _at(out, pos), column)
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
            raise where.error(f"not a number: {_show(raw.iat[pos])}", _at(out, pos), column)
        values = parsed.astype("float64")
    elif pd.api.types.is_bool_dtype(raw) or not pd.api.types.is_numeric_dtype(raw):
        raise where.error(f"expected numbers, got {raw.dtype}", None, column)
    else:
        values = raw.astype("float64")
    array = values.to_numpy()
    with np.errstate(invalid="ignore"):
        huge = np.abs(array) > MAX_VALUE  # NaN compares False: missing values are checked later
    if huge.any():
        pos = int(np.flatnonzero(huge)[0])
        raise where.error(
            f"value out of range: {_show(raw.iat[pos])} (magnitudes above {MAX_VALUE:g} are "
            "refused)",
            _at(out, pos),
            column,
        )
    if nonneg and (array < 0).any():
        pos = int(np.flatnonzero(array < 0)[0])
        raise where.error(f"must not be negative, got {_show(raw.iat[pos])}", _at(out, pos), column)
    out[column] = values


def _time(
    out: pd.DataFrame, where: _Where, *, time_unit: TimeUnit, tz: str, missing: str
) -> tuple[pd.DataFrame, int]:
    """``out`` with its times in UTC, and how many rows without a time were dropped."""
    raw = out["time"]
    try:
        parsed = parse_times(raw, time_unit=time_unit, tz=tz)
    except ValueError as exc:
        raise where.error(str(exc), None, "time") from None
    codes = parsed.codes
    refused = codes > (_MISSING if missing == "drop" else 0)
    if refused.any():
        pos = int(np.flatnonzero(refused)[0])
        reason = parsed.reason(pos, raw.iat[pos])
        if codes[pos] == _MISSING:
            reason += _advice("missing", "drop", "skip such rows")
        raise where.error(reason, _at(out, pos), "time")
    out["time"] = parsed.times.array  # a DatetimeArray: no object Timestamps
    blank = codes == _MISSING
    if not blank.any():
        return out, 0
    return out.loc[~blank].reset_index(drop=True), int(blank.sum())


def as_utc(
    value: datetime | str | None, *, tz: str = "UTC", what: str = "time"
) -> pd.Timestamp | None:
    """A time (``since``, ``until``) as UTC; one without a zone is in ``tz`` (None stays None).

    Raises :class:`DataError` naming ``what`` when ``value`` is not a time.
    """
    if value is None:
        return None
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError, OverflowError):
        raise DataError(f"{what}: not a time: {value!r} (expected ISO 8601)") from None
    if pd.isna(stamp):
        raise DataError(f"{what}: not a time: {value!r} (expected ISO 8601)")
    try:
        local = stamp if stamp.tzinfo is not None else stamp.tz_localize(time_zone(tz))
    except ValueError as exc:
        raise DataError(f"{what}: {exc}") from None
    return local.tz_convert("UTC")


def _between(
    out: pd.DataFrame, since: pd.Timestamp | None, until: pd.Timestamp | None
) -> pd.DataFrame:
    keep = np.ones(len(out), dtype=bool)
    if since is not None:
        keep &= (out["time"] >= since).to_numpy()
    if until is not None:
        keep &= (out["time"] < until).to_numpy()
    return out if keep.all() else out.loc[keep].reset_index(drop=True)


def _units(out: pd.DataFrame, where: _Where) -> None:
    units = out["unit"].fillna("").astype(str)
    codes, names = pd.factorize(units)  # each distinct unit once, in order of appearance
    factors = np.ones(len(names))
    base = np.empty(len(names), dtype=object)
    for i, unit in enumerate(names):
        try:
            base[i], factors[i] = to_base(unit)
        except KeyError:
            pos = int(np.flatnonzero(codes == i)[0])
            raise where.error(f"unknown unit {unit!r}", _at(out, pos), "unit") from None
    out["value"] = out["value"] * factors[codes]
    out["unit"] = pd.Series(base[codes], index=units.index, dtype=units.dtype)


def _order(
    out: pd.DataFrame, series: list[str], where: _Where, disorder: str, duplicates: str
) -> int:
    """How many times go backwards within their series (``series``: the column naming each
    row's series; none: one series); an error unless ``disorder`` is "sort". The error also
    says when sorting would meet a time repeated with another value that ``duplicates``
    refuses: a clock set back repeats its times, and the user should learn both fixes at once,
    not one per run."""
    if len(out) < 2:
        return 0
    steps = out.groupby(series, sort=False)["time"].diff() if series else out["time"].diff()
    back = (steps < pd.Timedelta(0)).to_numpy()
    if not back.any():
        return 0
    if disorder == "error":
        pos = int(np.flatnonzero(back)[0])
        repeated = duplicates == "error" and _repeats(out, [*series, "time"])[1].any()
        raise where.error(
            f"time goes backwards to {out['time'].iat[pos].isoformat()} within a series"
            + _advice("disorder", "sort", "accept unsorted input")
            + (
                "; it also repeats times with different values"
                + _advice("duplicates", "first", "keep the first")
                if repeated
                else ""
            ),
            _at(out, pos),
            "time",
        )
    return int(back.sum())


def _repeats(out: pd.DataFrame, keys: list[str]) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """The rows that repeat an earlier row's ``keys``, and those of them with a different
    value."""
    repeated: NDArray[np.bool_] = out.duplicated(keys, keep="first").to_numpy(dtype=bool)
    if not repeated.any():
        return repeated, repeated
    values = [c for c in out.columns if c not in (*keys, "_pos", "_series")]
    same: NDArray[np.bool_] = out.duplicated([*keys, *values], keep="first").to_numpy(dtype=bool)
    return repeated, repeated & ~same


def _dedupe(
    out: pd.DataFrame, keys: list[str], where: _Where, duplicates: str
) -> tuple[pd.DataFrame, int]:
    repeated, conflicting = _repeats(out, keys)
    if not repeated.any():
        return out, 0
    if conflicting.any() and duplicates == "error":
        pos = int(np.flatnonzero(conflicting)[0])
        key = ", ".join(f"{k}={out[k].iat[pos]}" for k in keys)
        first = out.loc[(out[keys] == out.loc[pos, keys]).all(axis=1), "_pos"].iat[0]
        line = where.locate(int(first)) if where.locate else None
        if isinstance(line, str):  # a JSON path
            before = line
        else:
            before = f"line {line}" if line is not None else f"row {int(first)}"
        raise where.error(
            f"duplicate {key} with a different value than {before}"
            + _advice("duplicates", "first", "keep the first"),
            _at(out, pos),
            keys[-1],
        )
    return out.loc[~repeated].reset_index(drop=True), int(repeated.sum())


def _gaps(
    out: pd.DataFrame, keys: list[str], series: list[str], factor: float, limit: int = 100
) -> tuple[Gap, ...]:
    """Steps longer than ``factor`` times their series' median step (``series``: the column
    naming each row's series, whose ``keys`` label the gaps; none: one series)."""
    if len(out) < 3:
        return ()
    grouped = out.groupby(series, sort=False)["time"] if series else None
    steps = grouped.diff() if grouped is not None else out["time"].diff()
    seconds = steps.dt.total_seconds()
    if grouped is not None:
        typical = seconds.groupby(out[series[0]], sort=False).transform("median")
    else:
        typical = pd.Series(np.nanmedian(seconds.to_numpy()), index=out.index)
    is_gap = (seconds > factor * typical) & (typical > 0)
    gaps = []
    for pos in np.flatnonzero(is_gap.to_numpy())[:limit]:
        label = "/".join(str(out[k].iat[pos]) for k in keys) or "all"
        gaps.append(Gap(label, out["time"].iat[pos - 1], out["time"].iat[pos]))
    return tuple(gaps)
