"""Per-transaction records → workload frames, and the machinery the log sources share.

A **transaction record** is one completed request: its time, its type and its latency in
seconds. Readers of logs (:mod:`~perfsleuth.sources.weblog`, :mod:`~perfsleuth.sources.pgbench`)
and of generic tables (:func:`read_transactions`) return :class:`Transactions`: the records plus
an account of the lines they could not use (:class:`Rejects`). :func:`window_transactions` (also
:meth:`Transactions.workload`) turns records into the **workload** frame of DESIGN §1, one row per
window. Pre-aggregated per-window tables go straight to a workload frame with
:func:`read_aggregated`.

Bad lines are counted, not fatal, by default: a log of a million lines with three torn ones is
still worth modelling, and the report says which lines were left out and why. ``strict=True``
raises :class:`~perfsleuth.errors.DataError` naming ``file:line`` on the first bad one instead.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfsleuth.durations import parse_duration
from perfsleuth.errors import ConfigError, DataError, SourceError, located
from perfsleuth.frames import MAX_VALUE, TimeUnit, as_utc, normalise, parse_times
from perfsleuth.sources.files import input_name, is_stdin, read_table
from perfsleuth.units import to_base

__all__ = [
    "DEFAULT_WINDOW",
    "BadLine",
    "RejectCounter",
    "Rejects",
    "Transactions",
    "TransactionsBuilder",
    "read_aggregated",
    "read_line_chunks",
    "read_transactions",
    "utc_ns",
    "window_seconds",
    "window_transactions",
]

log = logging.getLogger(__name__)

DEFAULT_WINDOW = timedelta(minutes=5)
"""Window width used when none is given (the 5-minute windows of Kelly's paper)."""

WindowLike = timedelta | str | float | int
"""A window width: a timedelta, a duration string (``"30s"``, ``"5m"``) or seconds."""

_MAX_CELLS = 20_000_000  # windows x types: beyond this the dense frame would not fit in memory
_SNIPPET = 200  # characters of a rejected line kept as an example
_CHUNK_BYTES = 64 << 20  # a chunk also ends at this size, whatever its line count
_GZIP = b"\x1f\x8b"
# 1900-01-01 and 2100-01-01 in µs: the frames' range (two times less than 292 years apart)
_US_MIN, _US_MAX = -2_208_988_800_000_000, 4_102_444_800_000_000


# -- rejected lines ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BadLine:
    """One rejected line (or row, for Parquet) and why it was rejected."""

    source: str
    line: int
    reason: str
    text: str = ""
    field: str | None = None
    row: bool = False  # True: ``line`` is a 1-based row of a table without lines (Parquet)

    def where(self) -> str:
        """``file:line: column 'x': reason``, the form compilers use."""
        if self.row:
            where = f"{self.source}: row {self.line}"
            if self.field is not None:
                where += f": column {self.field!r}"
            return f"{where}: {self.reason}"
        return located(self.reason, source=self.source, line=self.line, field=self.field)


@dataclass(frozen=True, slots=True)
class Rejects:
    """The lines a reader left out: how many, why, and the first few of them.

    Attributes
    ----------
    count
        Lines rejected in total.
    by_reason
        Rejected lines per reason (reasons are short fixed phrases, so this stays small).
    examples
        The first rejected lines, in file order, capped at the reader's ``max_examples``.
    """

    count: int = 0
    by_reason: Mapping[str, int] = field(default_factory=dict)
    examples: tuple[BadLine, ...] = ()

    def summary(self) -> str:
        """A few lines of plain text: counts per reason, then the examples with line numbers."""
        if not self.count:
            return "no lines rejected"
        lines = [f"{self.count} line(s) rejected:"]
        lines += [f"  {n:>9}  {reason}" for reason, n in sorted(self.by_reason.items())]
        if self.examples:
            lines.append("first rejected lines:")
            for bad in self.examples:
                lines.append(f"  {bad.where()}")
                if bad.text:
                    lines.append(f"      {bad.text!r}")
        shown = len(self.examples)
        if shown < self.count:
            lines.append(f"  ... and {self.count - shown} more")
        return "\n".join(lines)


class RejectCounter:
    """Collects rejected lines for :class:`Rejects`, or raises on the first one when strict.

    Readers work a chunk of lines at a time and describe the chunk with one small integer per
    line: 0 = accepted, ``k`` = rejected for ``reasons[k - 1]``.
    """

    def __init__(self, *, strict: bool = False, max_examples: int = 20) -> None:
        if max_examples < 0:
            raise ConfigError(f"max_examples must be >= 0, got {max_examples}")
        self.strict = strict
        self.max_examples = max_examples
        self.count = 0
        self._by_reason: dict[str, int] = {}
        self._examples: list[BadLine] = []

    def add(self, bad: BadLine) -> None:
        """Reject one line (raises :class:`DataError` when strict)."""
        if self.strict:
            raise DataError(_with_text(bad))
        self.count += 1
        self._by_reason[bad.reason] = self._by_reason.get(bad.reason, 0) + 1
        if len(self._examples) < self.max_examples:
            self._examples.append(bad)

    def add_chunk(
        self,
        source: str,
        line_of: Callable[[int], int],
        codes: npt.NDArray[np.int8],
        reasons: Sequence[str],
        *,
        texts: Sequence[str] | None = None,
        detail: Callable[[int, int], tuple[str, str | None]] | None = None,
        row: bool = False,
    ) -> None:
        """Reject the lines of a chunk whose code is not 0.

        ``line_of(i)`` is element ``i``'s line number; ``detail(i, code)`` may return a more
        specific ``(reason, field)`` for element ``i`` (used for the strict error and the
        examples only, so it can be slow).
        """
        bad = np.flatnonzero(codes)
        if not len(bad):
            return
        take = len(bad) if self.strict else min(len(bad), self.max_examples - len(self._examples))
        for i in bad[: max(take, 0)]:
            code = int(codes[i])
            reason, column = detail(int(i), code) if detail else (reasons[code - 1], None)
            text = _snippet(texts[i]) if texts is not None else ""
            example = BadLine(source, line_of(int(i)), reason, text, column, row)
            if self.strict:
                raise DataError(_with_text(example))
            self._examples.append(example)
        counts = np.bincount(codes[bad], minlength=len(reasons) + 1)
        for k, reason in enumerate(reasons, start=1):
            if counts[k]:
                self._by_reason[reason] = self._by_reason.get(reason, 0) + int(counts[k])
        self.count += len(bad)

    def result(self) -> Rejects:
        return Rejects(self.count, dict(self._by_reason), tuple(self._examples))


def _snippet(text: str) -> str:
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "…"


def _with_text(bad: BadLine) -> str:
    message = bad.where()
    return f"{message}: {bad.text!r}" if bad.text else message


# -- reading lines -----------------------------------------------------------------------------


def read_line_chunks(
    path: str | Path, rejects: RejectCounter, *, chunk_lines: int = 100_000
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(first_line_number, lines)`` chunks of a text file, gzip or not.

    A chunk holds ``chunk_lines`` lines or 64 MiB, whichever comes first.

    Gzip is recognised by its magic bytes, not the file name. Lines lose their line ending
    (``\\n`` or ``\\r\\n``); bytes that are not UTF-8 become U+FFFD rather than failing the file
    (access logs carry whatever clients send). A gzip stream cut short or corrupt — a log
    rotated while being written — is one rejected "line" after the last complete one.
    """
    path = Path(path)
    name = input_name(path)
    try:
        opened = _open_lines(path)
    except OSError as exc:
        raise SourceError(f"{name}: cannot read: {exc.strerror or exc}") from exc
    number = 1
    chunk: list[bytes] = []
    size = 0
    broken: Exception | None = None
    try:
        with opened as handle:
            for raw in handle:
                chunk.append(raw)
                size += len(raw)
                if len(chunk) >= chunk_lines or size >= _CHUNK_BYTES:
                    yield number, _decode(chunk)
                    number += len(chunk)
                    chunk, size = [], 0
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        broken = exc  # report it after the lines before it, so strict mode names the first
    except OSError as exc:
        raise SourceError(f"{name}: cannot read: {exc.strerror or exc}") from exc
    if chunk:
        yield number, _decode(chunk)
    if broken is not None:
        reason = f"gzip data ends early or is corrupt ({broken})"
        rejects.add(BadLine(name, number + len(chunk), reason))


def _open_lines(path: Path) -> contextlib.AbstractContextManager[Iterable[bytes]]:
    """The file as bytes, gunzipped when it starts with gzip's magic bytes (not by its name).

    ``-`` is standard input, streamed (a piped log is never held whole) and left open.
    """
    if not is_stdin(path):
        with path.open("rb") as probe:
            magic = probe.read(2)
        return gzip.open(path, "rb") if magic == _GZIP else path.open("rb")
    stream = sys.stdin.buffer
    if isinstance(stream, io.BufferedReader):
        buffered = stream
    else:  # a stand-in for stdin (tests): buffer it so the magic bytes can be peeked
        buffered = io.BufferedReader(cast(io.RawIOBase, stream))
    if buffered.peek(2)[:2] == _GZIP:
        return gzip.GzipFile(fileobj=buffered)  # closing it leaves stdin open
    return contextlib.nullcontext(buffered)


def _decode(chunk: list[bytes]) -> list[str]:
    text = b"".join(chunk).decode("utf-8", "replace")
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


# -- transaction records -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Transactions:
    """Per-transaction records read from one or more files, and what was left out.

    Attributes
    ----------
    records
        One row per transaction: ``time`` (datetime64[ns, UTC]), ``type`` (categorical),
        ``latency`` (float seconds, >= 0). Rows keep file order (not sorted by time).
    rejects
        Lines that could not be used (see :class:`Rejects`).
    sources
        The files read, in order.
    lines
        Non-blank lines (or table rows) read, accepted or not.
    untimed
        Transactions the source logged without a latency, by status — pgbench's ``skipped``
        (``--rate`` with ``--latency-limit``) and ``failed`` / ``serialization`` /
        ``deadlock``. They are not in ``records``: a workload window counts completed work.
    """

    records: pd.DataFrame
    rejects: Rejects
    sources: tuple[str, ...] = ()
    lines: int = 0
    untimed: Mapping[str, int] = field(default_factory=dict)

    @property
    def types(self) -> list[str]:
        """Transaction types present, sorted."""
        return sorted(map(str, self.records["type"].cat.categories))

    def between(
        self, since: datetime | None, until: datetime | None, *, tz: str = "UTC"
    ) -> Transactions:
        """The transactions that started in ``[since, until)`` (a time without a zone is in
        ``tz``); all of them when both are None."""
        if since is None and until is None:
            return self
        times = self.records["time"]
        keep = np.ones(len(times), dtype=bool)
        start, end = as_utc(since, tz=tz, what="since"), as_utc(until, tz=tz, what="until")
        if start is not None:
            keep &= (times >= start).to_numpy()
        if end is not None:
            keep &= (times < end).to_numpy()
        records = self.records.loc[keep].reset_index(drop=True)
        records["type"] = records["type"].cat.remove_unused_categories()
        return replace(self, records=records)

    def workload(self, window: WindowLike = DEFAULT_WINDOW) -> pd.DataFrame:
        """The workload frame at ``window`` width (see :func:`window_transactions`)."""
        source = self.sources[0] if len(self.sources) == 1 else f"{len(self.sources)} files"
        return window_transactions(self.records, window, source=source)

    def summary(self) -> str:
        """Plain text: files, lines, transactions per type, time range, rejected lines."""
        from perfsleuth.report.console import one_line  # a type's name may hold a line break

        rec = self.records
        out = [
            f"{len(self.sources)} file(s), {self.lines} line(s), {len(rec)} transaction(s)",
        ]
        if len(rec):
            out.append(f"time {rec['time'].min().isoformat()} .. {rec['time'].max().isoformat()}")
            stats = rec.groupby("type", observed=True)["latency"].agg(["count", "mean"])
            for name, row in stats.sort_index().iterrows():
                shown = one_line(str(name))
                out.append(f"  {row['count']:>9.0f}  mean {row['mean'] * 1e3:10.3f} ms  {shown}")
        for status, n in sorted(self.untimed.items()):
            out.append(f"{n} transaction(s) logged as {status} (no latency; not counted)")
        out.append(self.rejects.summary())
        return "\n".join(out)


class TransactionsBuilder:
    """Accumulates records chunk by chunk (numpy arrays, no per-record Python objects)."""

    def __init__(self) -> None:
        self._times: list[npt.NDArray[np.int64]] = []
        self._codes: list[npt.NDArray[np.int32]] = []
        self._latency: list[npt.NDArray[np.float64]] = []
        self._names: dict[str, int] = {}
        self.untimed: dict[str, int] = {}

    def add(
        self,
        times_ns: npt.NDArray[np.int64],
        type_codes: npt.ArrayLike,
        type_names: Sequence[str],
        latency_s: npt.NDArray[np.float64],
    ) -> None:
        """Add records whose types are ``type_names[type_codes]`` (chunk-local names)."""
        codes = np.asarray(type_codes, dtype=np.int64)
        if not len(codes):
            return
        mapping = np.full(len(type_names), -1, dtype=np.int32)
        for used in np.unique(codes):  # only names that occur become categories
            mapping[used] = self._names.setdefault(str(type_names[used]), len(self._names))
        self._times.append(np.asarray(times_ns, dtype=np.int64))
        self._codes.append(mapping[codes])
        self._latency.append(np.asarray(latency_s, dtype=np.float64))

    def count_untimed(self, status: str, n: int) -> None:
        if n:
            self.untimed[status] = self.untimed.get(status, 0) + n

    def records(self) -> pd.DataFrame:
        def cat(parts: Sequence[npt.NDArray[np.generic]], dtype: type) -> npt.NDArray[np.generic]:
            return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)

        names = list(self._names)
        return pd.DataFrame(
            {
                "time": pd.to_datetime(cat(self._times, np.int64), unit="ns", utc=True),
                "type": pd.Categorical.from_codes(cat(self._codes, np.int32), categories=names),
                "latency": cat(self._latency, np.float64),
            }
        )

    def build(self, rejects: RejectCounter, sources: Sequence[str], lines: int) -> Transactions:
        """The :class:`Transactions`; raises :class:`DataError` if nothing usable was read."""
        result = Transactions(
            self.records(), rejects.result(), tuple(sources), lines, dict(self.untimed)
        )
        if len(result.records) == 0 and not self.untimed:
            where = ", ".join(sources) if len(sources) <= 3 else f"{len(sources)} files"
            if lines == 0:
                raise DataError(f"{where}: empty (no lines to read)")
            first = result.rejects.examples[0].where() if result.rejects.examples else ""
            raise DataError(
                f"{where}: no usable transactions in {lines} line(s); "
                f"all were rejected (first: {first})"
            )
        return result


# -- windowing ---------------------------------------------------------------------------------


def window_seconds(window: WindowLike) -> float:
    """The width of ``window`` in seconds (``"5m"`` → 300.0); raises :class:`ConfigError`."""
    try:
        return parse_duration(window).total_seconds()
    except ValueError as exc:
        raise ConfigError(f"window: {exc}") from None


def window_transactions(
    records: pd.DataFrame,
    window: WindowLike = DEFAULT_WINDOW,
    *,
    source: str = "<records>",
    max_windows: int = 1_000_000,
) -> pd.DataFrame:
    """Aggregate per-transaction records into a workload frame.

    Parameters
    ----------
    records
        Columns ``time`` (datetimes; naive ones are taken as UTC), ``type`` (names, any dtype,
        categorical is fastest) and ``latency`` (seconds, finite, >= 0).
    window
        Window width: a timedelta, ``"30s"``/``"5m"``/``"1h"``, or seconds. Default 5 minutes.
    source
        Name used in error messages.
    max_windows
        Refuse to make more windows than this (a stray timestamp years away would otherwise
        allocate a huge, nearly empty frame).

    Returns
    -------
    pandas.DataFrame
        The workload frame (validated by :func:`perfsleuth.frames.normalise`): ``time``
        (window start, UTC), ``window_s``, then ``n[<type>]`` for every type, ``rt_sum[<type>]``
        (seconds), ``rt_mean[<type>]`` (seconds). Types are in sorted (Python string) order,
        so the columns do not depend on the order of files or lines.

    Notes
    -----
    Windows are aligned to the Unix epoch: a 5-minute window starts at a multiple of 5 minutes
    past midnight UTC, so frames from different sources line up. Every window from the one
    holding the first record to the one holding the last is present; windows inside that range
    with no transactions are kept with zero counts and zero sums (for the model an idle window
    is data, not a gap). ``rt_mean`` is ``rt_sum / n`` where ``n > 0`` and **0 where n = 0** (the
    frame contract allows no NaN): weight means by ``n`` or mask ``n == 0``. The first and last
    windows are usually partial (the log starts and ends inside them). A record belongs to the
    window its ``time`` falls in; the log readers put the transaction's start there by default,
    since Kelly's model counts the transactions that *began* in a window.
    """
    width_s = window_seconds(window)
    width = round(width_s * 1e9)
    missing = [c for c in ("time", "type", "latency") if c not in records.columns]
    if missing:
        raise DataError(f"{source}: transaction records lack column(s) {', '.join(missing)}")
    if len(records) == 0:
        raise DataError(f"{source}: no transactions to put in windows")
    ns = _utc_ns(records["time"], source)
    latency = pd.to_numeric(records["latency"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(latency) | (latency < 0) | (latency > MAX_VALUE)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{source}: row {pos}: latency must be a finite number of seconds in 0..{MAX_VALUE:g}, "
            f"got {records['latency'].iat[pos]!r}"
        )
    codes, names = _type_codes(records["type"], source)

    index = ns // width  # floor division: epoch-aligned, also before 1970
    first = int(index.min())
    nwin = int(index.max()) - first + 1
    k = len(names)
    if nwin > max_windows or nwin * k > _MAX_CELLS:
        lo = pd.Timestamp(int(ns.min()), tz="UTC").isoformat()
        hi = pd.Timestamp(int(ns.max()), tz="UTC").isoformat()
        raise DataError(
            f"{source}: records from {lo} to {hi} make {nwin} windows of {width_s:g} s "
            f"x {k} types, too many; use a wider window or look for stray timestamps"
        )
    flat = (index - first) * k + codes
    counts = np.bincount(flat, minlength=nwin * k).reshape(nwin, k).astype(np.float64)
    sums = np.bincount(flat, weights=latency, minlength=nwin * k).reshape(nwin, k)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)

    starts = (first + np.arange(nwin, dtype=np.int64)) * width
    columns: dict[str, object] = {
        "time": pd.to_datetime(starts, unit="ns", utc=True),
        "window_s": np.full(nwin, width / 1e9),
    }
    columns.update({f"n[{t}]": counts[:, j] for j, t in enumerate(names)})
    columns.update({f"rt_sum[{t}]": sums[:, j] for j, t in enumerate(names)})
    columns.update({f"rt_mean[{t}]": means[:, j] for j, t in enumerate(names)})
    return normalise(pd.DataFrame(columns), "workload", source=source)


def _utc_ns(times: pd.Series, source: str) -> npt.NDArray[np.int64]:
    if not pd.api.types.is_datetime64_any_dtype(times):
        raise DataError(f"{source}: column 'time' must hold datetimes, got {times.dtype}")
    index = pd.DatetimeIndex(times)
    if index.hasnans:
        pos = int(np.flatnonzero(index.isna())[0])
        raise DataError(f"{source}: row {pos}: column 'time': missing time")
    if index.tz is None:
        index = index.tz_localize("UTC")
    return np.asarray(index.tz_convert("UTC").as_unit("ns").asi8, dtype=np.int64)


def _type_codes(types: pd.Series, source: str) -> tuple[npt.NDArray[np.int64], list[str]]:
    if isinstance(types.dtype, pd.CategoricalDtype):
        cat = types.cat.remove_unused_categories()
        raw = cat.cat.codes.to_numpy(dtype=np.int64)
        names = [str(c) for c in cat.cat.categories]
        if (raw < 0).any():
            pos = int(np.flatnonzero(raw < 0)[0])
            raise DataError(f"{source}: row {pos}: column 'type': missing type")
        order = sorted(range(len(names)), key=names.__getitem__)
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names))
        merged = [names[i] for i in order]
        if len(set(merged)) != len(merged):  # categories that differ but print the same
            return _type_codes(types.astype(str), source)
        return rank[raw], merged
    codes, uniques = pd.factorize(types.astype("str"), sort=True)
    if (codes < 0).any():
        pos = int(np.flatnonzero(codes < 0)[0])
        raise DataError(f"{source}: row {pos}: column 'type': missing type")
    names = [str(u) for u in uniques]
    if any(not n for n in names):
        pos = int(np.flatnonzero(types.astype("str").to_numpy() == "")[0])
        raise DataError(f"{source}: row {pos}: column 'type': empty type name")
    return codes.astype(np.int64), names


# -- generic tables ----------------------------------------------------------------------------


def read_transactions(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    unit: str = "s",
    strict: bool = False,
    max_examples: int = 20,
    time_unit: TimeUnit = "auto",
    tz: str = "UTC",
) -> Transactions:
    """Read a CSV or Parquet table of transactions: one row per transaction.

    Parameters
    ----------
    path
        A ``.csv`` (header line first; any other suffix is read as CSV too) or ``.parquet``.
    columns
        Renames source columns to ``time``, ``type``, ``latency`` and optionally ``unit``
        (``{"ts": "time", "endpoint": "type", "elapsed_ms": "latency"}``).
    unit
        Unit of ``latency`` when there is no ``unit`` column: ``s``, ``ms``, ``us``/``µs``,
        ``ns``. A ``unit`` column, when present, gives the unit row by row.
    strict
        Raise :class:`DataError` on the first bad row instead of counting it.
    max_examples
        Rejected rows kept as examples in :attr:`Transactions.rejects`.
    time_unit, tz
        Unit of numeric (Unix) times and time zone of times without an offset, as
        :func:`perfsleuth.frames.parse_times` reads them.

    Times are ISO 8601 (with an offset, or taken in ``tz``) or Unix times. Bad rows — a time
    that does not parse, a latency that is not a finite number >= 0, an empty type, an unknown
    unit — are rejected with their line number (CSV) or 1-based row number (Parquet) and column.
    A CSV row with the wrong number of fields stops the read (the columns cannot be trusted).
    """
    path = Path(path)
    source = input_name(path)
    base = _latency_factor(unit, "unit")
    table, line_of, is_parquet = _table_rows(path, columns)
    need = [c for c in ("time", "type", "latency") if c not in table.columns]
    if need:
        have = ", ".join(map(str, table.columns))
        raise DataError(
            f"{source}: missing column(s) {', '.join(map(repr, need))} (columns present: "
            f"{have}); map yours with columns={{'your_name': 'time', ...}}"
        )
    times = _parse_times(table["time"], time_unit, tz)
    latency = _to_float(table["latency"])
    factor = np.full(len(table), base)
    unit_bad = np.zeros(len(table), dtype=bool)
    if "unit" in table.columns:
        units = table["unit"].astype("str").fillna("")
        for value in pd.unique(units):
            try:
                base_unit, f = to_base(str(value))
            except KeyError:
                base_unit, f = "?", np.nan
            mask = (units == value).to_numpy()
            unit_bad |= mask & (base_unit != "s")
            factor[mask] = f
    type_text = table["type"].astype("str")
    # Checks in order: the first that fails names the row.
    checks = [
        (np.isnat(times), "not a time (ISO 8601 or Unix times, years 1900 to 2099)", "time"),
        (_blank(table["type"]), "empty type", "type"),
        (unit_bad, "unknown latency unit", "unit"),
        (~np.isfinite(latency), "latency is not a number", "latency"),
        (latency < 0, "latency is negative", "latency"),
        (latency > MAX_VALUE, f"latency out of range (above {MAX_VALUE:g})", "latency"),
    ]
    codes = np.zeros(len(table), dtype=np.int8)
    for k in range(len(checks), 0, -1):
        codes[checks[k - 1][0]] = k
    reasons = [reason for _, reason, _ in checks]

    def detail(i: int, code: int) -> tuple[str, str | None]:
        _, reason, column = checks[code - 1]
        return f"{reason}: {table[column].iat[i]!r}", column

    rejects = RejectCounter(strict=strict, max_examples=max_examples)
    rejects.add_chunk(source, line_of, codes, reasons, detail=detail, row=is_parquet)
    ok = codes == 0
    builder = TransactionsBuilder()
    tcodes, tnames = pd.factorize(type_text[ok])
    builder.add(
        times[ok].astype(np.int64), tcodes, [str(t) for t in tnames], latency[ok] * factor[ok]
    )
    return builder.build(rejects, [source], len(table))


def _table_rows(
    path: Path, columns: Mapping[str, str] | None
) -> tuple[pd.DataFrame, Callable[[int], int], bool]:
    """The table without blank CSV rows, a row → line (CSV) or 1-based row (Parquet) map."""
    table, locate = read_table(path, columns=columns)
    if locate is None:
        return table, lambda pos: pos + 1, True
    return table, lambda pos: locate(pos) or 0, False


def _blank(values: pd.Series) -> npt.NDArray[np.bool_]:
    return np.asarray(values.isna() | (values.astype("str").str.strip() == ""), dtype=bool)


def _latency_factor(unit: str, what: str) -> float:
    try:
        base, factor = to_base(unit)
    except KeyError:
        base, factor = "?", 0.0
    if base != "s":
        raise ConfigError(f"{what}: {unit!r} is not a time unit (use s, ms, us, ns)")
    return factor


def _to_float(values: pd.Series) -> npt.NDArray[np.float64]:
    if pd.api.types.is_bool_dtype(values):
        return np.full(len(values), np.nan)
    if not pd.api.types.is_numeric_dtype(values):
        values = pd.to_numeric(values.astype("str").str.strip(), errors="coerce")
    return np.asarray(values.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)


def _parse_times(values: pd.Series, time_unit: TimeUnit, tz: str) -> npt.NDArray[np.datetime64]:
    """Naive UTC datetimes (ns) with NaT where a value is not a time (the frames' reading)."""
    try:
        parsed = parse_times(values, time_unit=time_unit, tz=tz)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return utc_ns(parsed.times)


def utc_ns(values: pd.Series | pd.Index) -> npt.NDArray[np.datetime64]:
    """Datetimes as naive UTC datetime64[ns]; NaT where missing or outside 1900..2099.

    The range keeps nanoseconds from overflowing (they end in 2262) and catches times that
    are a unit mistake or a corrupt field rather than a transaction. Naive input is UTC.
    """
    index = pd.DatetimeIndex(values)
    if index.tz is not None:
        index = index.tz_convert(None)
    micros = np.asarray(index.as_unit("us").asi8, dtype=np.int64)
    ok = ~np.asarray(index.isna()) & (micros >= _US_MIN) & (micros < _US_MAX)
    out = np.full(len(micros), np.datetime64("NaT"), dtype="M8[ns]")
    out[ok] = (micros[ok] * 1000).astype("M8[ns]")
    return out


# -- pre-aggregated tables ---------------------------------------------------------------------


def read_aggregated(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    window: WindowLike | None = None,
    unit: str = "s",
    time_unit: TimeUnit = "auto",
    tz: str = "UTC",
    since: datetime | None = None,
    until: datetime | None = None,
) -> pd.DataFrame:
    """Read a per-window, per-type table (long form) into a workload frame.

    Parameters
    ----------
    path
        CSV or Parquet with columns ``time`` (window start), ``type``, ``count`` and either
        ``rt_sum`` (total response time of the window's transactions of that type) or
        ``rt_mean`` (their mean); ``rt_sum`` wins when both are there.
    columns
        Renames source columns to those names.
    window
        Window width. By default, the most common step between consecutive window starts.
    unit
        Unit of ``rt_sum`` / ``rt_mean`` (``s``, ``ms``, ``us``, ``ns``).
    time_unit, tz, since, until
        As :func:`perfsleuth.frames.normalise` takes them: unit of numeric times, time zone
        of times without an offset, and the windows kept (those starting in ``[since, until)``).

    Returns
    -------
    pandas.DataFrame
        The workload frame, types in sorted order, with ``n``, ``rt_sum`` and ``rt_mean``
        columns as :func:`window_transactions` makes them.

    Notes
    -----
    Unlike the log readers this one fails on the first bad row (naming file, line and
    column): a row here is a whole window of one type, too much to drop quietly. Rows with the
    same time and type are added up (one row per server, say). A type with no row in a window
    has zero transactions there; windows with no rows at all are not invented (unlike
    :func:`window_transactions`): the table's producer decides which windows exist.
    """
    path = Path(path)
    source = input_name(path)
    factor = _latency_factor(unit, "unit")
    table, line_of, is_parquet = _table_rows(path, columns)
    has_sum, has_mean = "rt_sum" in table.columns, "rt_mean" in table.columns
    need = [repr(c) for c in ("time", "type", "count") if c not in table.columns]
    if not (has_sum or has_mean):
        need.append("'rt_sum' or 'rt_mean'")
    if need:
        have = ", ".join(map(str, table.columns))
        raise DataError(f"{source}: missing column(s) {', '.join(need)} (columns present: {have})")

    def fail(mask: npt.NDArray[np.bool_], reason: str, column: str) -> None:
        if mask.any():
            pos = int(np.flatnonzero(mask)[0])
            value = table[column].iat[pos]
            bad = BadLine(source, line_of(pos), f"{reason}: {value!r}", "", column, is_parquet)
            raise DataError(bad.where())

    times = _parse_times(table["time"], time_unit, tz)
    fail(np.isnat(times), "not a time (ISO 8601 or Unix times, years 1900 to 2099)", "time")
    fail(_blank(table["type"]), "empty type", "type")
    count = _to_float(table["count"])
    fail(~np.isfinite(count) | (count < 0), "count must be a number >= 0", "count")
    rt_column = "rt_sum" if has_sum else "rt_mean"
    rt = _to_float(table[rt_column])
    fail(~np.isfinite(rt) | (rt < 0), "must be a number of seconds >= 0", rt_column)
    rt_sum = rt * factor if has_sum else rt * factor * count
    type_text = table["type"].astype("str")

    step = _window_step(times, window, source)
    long = pd.DataFrame({"time": times, "type": type_text.to_numpy(), "n": count, "rt_sum": rt_sum})
    wide = (
        long.groupby(["time", "type"], sort=True)[["n", "rt_sum"]]
        .sum()
        .unstack("type", fill_value=0.0)
    )
    names = [str(t) for t in wide.columns.get_level_values("type").unique()]
    names.sort()
    counts = wide["n"][names].to_numpy(dtype=np.float64)
    sums = wide["rt_sum"][names].to_numpy(dtype=np.float64)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    frame: dict[str, object] = {
        "time": pd.to_datetime(wide.index.to_numpy(), utc=True),
        "window_s": np.full(len(wide), step),
    }
    frame.update({f"n[{t}]": counts[:, j] for j, t in enumerate(names)})
    frame.update({f"rt_sum[{t}]": sums[:, j] for j, t in enumerate(names)})
    frame.update({f"rt_mean[{t}]": means[:, j] for j, t in enumerate(names)})
    return normalise(pd.DataFrame(frame), "workload", source=source, since=since, until=until)


def _window_step(
    times: npt.NDArray[np.datetime64], window: WindowLike | None, source: str
) -> float:
    if window is not None:
        return window_seconds(window)
    starts = np.unique(times)
    if len(starts) < 2:
        raise DataError(f"{source}: one window only; pass window= to give its width")
    steps = np.diff(starts).astype("m8[ns]").astype(np.int64)
    values, counts = np.unique(steps, return_counts=True)
    return float(values[np.argmax(counts)]) / 1e9
