"""Frames from files: CSV (with line-accurate errors) and Parquet, long or wide, or stdin.

Bytes in, frames out; all validation is :func:`perfsleuth.frames.normalise`'s job. Line numbers
are worked out only when an error needs one, so the fast path stays pandas' C parser. A path of
``-`` is standard input (CSV, or Parquet recognised by its magic bytes), named ``<stdin>`` in
errors.
"""

from __future__ import annotations

import codecs
import csv
import importlib
import io
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal, TextIO

import numpy as np
import pandas as pd

from perfsleuth.errors import DataError, SourceError, located
from perfsleuth.frames import CONTRACTS, METRIC, Contract, TimeUnit, normalise

__all__ = [
    "CsvRecords",
    "input_name",
    "is_stdin",
    "read_bytes",
    "read_frame",
    "read_metric",
    "read_table",
    "read_text",
]

LineOf = Callable[[int], int | None]  # a row's line in a CSV file (a Locate that says lines)
_PANDAS_LINE = re.compile(r"line (\d+)")
_PANDAS_OPEN_QUOTE = re.compile(r"EOF inside string starting at row (\d+)")
_SNIFF = 1 << 16  # bytes of a CSV file looked at for binary data before parsing
# Field separators, in the order the header line is searched for them: a header with a comma is
# comma-separated; else a tab (TSV) or a semicolon (the CSV of locales whose decimal mark is a
# comma) separates its fields.
_DELIMITERS = (",", "\t", ";")
# A number written with a decimal comma (in a semicolon-separated file): "10,5", "-0,25".
# Bytes no text file has (controls other than tab, line feed and carriage return): binary data.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_DECIMAL_COMMA = re.compile(r"^\s*[+-]?\d+,\d+\s*$")
_TIME_NAMES = ("time", "timestamp", "ts", "datetime", "date", "year")  # a wide file's time column
_STDIN: list[tuple[object, bytes]] = []  # (stream, its bytes): standard input is read once


def is_stdin(path: str | Path) -> bool:
    """Whether ``path`` is ``-``: standard input."""
    return str(path) == "-"


def input_name(path: str | Path) -> str:
    """``path`` as errors name it (``<stdin>`` for ``-``)."""
    return "<stdin>" if is_stdin(path) else str(path)


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a file, or of standard input for ``-``.

    Standard input is read once; every reader of ``-`` in a process gets the same bytes.
    Raises :class:`SourceError` when the file cannot be read.
    """
    if is_stdin(path):
        stream = sys.stdin.buffer
        if not _STDIN or _STDIN[0][0] is not stream:
            _STDIN[:] = [(stream, stream.read())]
        return _STDIN[0][1]
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_text(path: str | Path) -> str:
    """The text of a UTF-8 file, or of standard input for ``-``; a byte-order mark is dropped.

    Raises :class:`SourceError` when the file cannot be read and :class:`DataError`, naming the
    line, when it is not UTF-8 text (a binary file).
    """
    raw = read_bytes(path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        message = f"not UTF-8 text (byte {exc.start}): a binary file?"
        raise DataError(located(message, source=input_name(path), line=line)) from None


def read_table(
    path: str | Path, *, columns: Mapping[str, str] | None = None
) -> tuple[pd.DataFrame, LineOf | None]:
    """Read a CSV or Parquet file (or ``-``, standard input) without validating its values.

    Returns the rows (CSV: every field a string, blank lines dropped) and a map from row
    position to line number in the file (``None`` for Parquet, whose errors name the row).
    ``columns`` renames source columns to contract names (``{"ts": "time"}``). Raises
    :class:`SourceError` when the file cannot be read and :class:`DataError` when it is empty,
    a CSV row has the wrong number of fields, or a header repeats a name.
    """
    name = input_name(path)
    data: bytes | None = None
    if is_stdin(path):
        data = read_bytes(path)
        parquet = data[:4] == b"PAR1"
    else:
        path = Path(path)
        if path.is_dir():
            raise SourceError(f"{path}: is a folder, not a file")
        if not path.is_file():
            raise SourceError(f"{path}: no such file")
        parquet = path.suffix.lower() in {".parquet", ".pq"}
    locate: LineOf | None = None
    if parquet:
        try:
            table = pd.read_parquet(io.BytesIO(data) if data is not None else path)
        except (OSError, ValueError) as exc:
            raise DataError(f"{name}: not a readable Parquet file: {exc}") from exc
    else:
        table, locate = _read_csv(name, data if data is not None else Path(path))
    if columns:
        table = table.rename(columns=dict(columns))
    if table.empty:
        raise DataError(f"{name}: no data rows")
    return table, locate


def _read_csv(name: str, content: bytes | Path) -> tuple[pd.DataFrame, LineOf]:
    empty = f"{name}: empty file (expected a header line and data rows)"
    size = len(content) if isinstance(content, bytes) else content.stat().st_size
    if size == 0:
        raise DataError(empty)
    _refuse_binary(name, content)
    delimiter = _delimiter(content)
    records = CsvRecords(content, delimiter)
    try:
        # header=None: the header line sets the field count, so pandas reports every longer
        # row with its line (with a header it would silently turn one extra field into an index).
        raw = pd.read_csv(
            io.BytesIO(content) if isinstance(content, bytes) else content,
            header=None,
            sep=delimiter,
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=False,
            on_bad_lines="error",
            encoding="utf-8",
        )
    except pd.errors.EmptyDataError:
        raise DataError(empty) from None
    except pd.errors.ParserError as exc:
        quote = _PANDAS_OPEN_QUOTE.search(str(exc))
        if quote:  # pandas counts records from 0 (the header); a quoted field may span lines
            raise DataError(
                located(
                    "malformed row: a quoted field opens here and is never closed",
                    source=name,
                    line=records.record(int(quote.group(1)))[0],
                )
            ) from None
        match = _PANDAS_LINE.search(str(exc))
        line = int(match.group(1)) if match else None
        raise DataError(
            located(f"malformed row: {_short(str(exc))}", source=name, line=line)
        ) from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{name}: not UTF-8 text at byte {exc.start}") from None
    header = [str(field).strip() for field in raw.iloc[0]]
    repeated = sorted({field for field in header if header.count(field) > 1})
    if repeated:
        raise DataError(located(f"header repeats column(s) {repeated}", source=name, line=1))
    table = raw.iloc[1:].reset_index(drop=True)
    table.columns = pd.Index(header)
    blank = (table == "").all(axis=1).to_numpy()
    # pandas pads short rows with "" silently; only rows ending in "" can be short.
    for pos in np.flatnonzero((table.iloc[:, -1] == "").to_numpy() & ~blank):
        line, fields = records.record(int(pos) + 1)
        if fields < len(header):
            raise DataError(
                located(
                    f"malformed row: expected {len(header)} fields, saw {fields}",
                    source=name,
                    line=line,
                )
            )
    kept = np.flatnonzero(~blank)
    table = table.iloc[kept].reset_index(drop=True)
    if delimiter == ";":  # its numbers may have a decimal comma
        table = table.apply(_decimal_point)

    def locate(pos: int) -> int | None:
        return records.record(int(kept[pos]) + 1)[0] if 0 <= pos < len(kept) else None

    return table, locate


def _delimiter(content: bytes | Path) -> str:
    """The field separator of a CSV file, from its header line (:data:`_DELIMITERS`)."""
    if isinstance(content, bytes):
        header = content[:_SNIFF].decode("utf-8", errors="replace").splitlines()[:1]
    else:
        with _open_text(content) as handle:
            header = [handle.readline()]
    line = header[0] if header else ""
    return next((d for d in _DELIMITERS if d in line), ",")


def _decimal_point(column: pd.Series) -> pd.Series:
    """``column`` (text) with each number written with a decimal comma rewritten with a point."""
    comma = column.str.match(_DECIMAL_COMMA).fillna(False).to_numpy(bool)
    if not comma.any():
        return column
    return column.where(~comma, column.str.replace(",", ".", regex=False))


def _refuse_binary(name: str, content: bytes | Path) -> None:
    """Refuse a file whose first bytes are not text (a NUL byte, or not UTF-8), naming the line:
    pandas would read such bytes as rows of the wrong length or as values."""
    if isinstance(content, bytes):
        head = content[:_SNIFF]
    else:
        with content.open("rb") as handle:
            head = handle.read(_SNIFF)
        if any(head.startswith(magic) for magic, _ in _COMPRESSED):
            return  # pandas decompresses it; its text is checked as it is parsed
    bad = head.find(b"\0")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head[: bad if bad >= 0 else None])
    except UnicodeDecodeError as exc:
        bad = exc.start
    if bad >= 0:
        line = head[:bad].count(b"\n") + 1
        message = f"binary data, not CSV text (at byte {bad})"
        if not _CONTROL.search(head):  # text, in a single-byte encoding
            message = (
                f"not UTF-8 text (byte {bad} is 0x{head[bad]:02x}): a Latin-1 or Windows-1252 "
                "file? Save it as UTF-8"
            )
        raise DataError(located(message, source=name, line=line))


# What pandas' read_csv decompresses by itself (compression="infer"), by the file's first bytes.
_COMPRESSED: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "lzma"),
)


def _open_text(path: Path) -> TextIO:
    """``path`` as text, decompressed the way pandas read it (gzip, bzip2, xz)."""
    with path.open("rb") as raw:
        magic = raw.read(6)
    for prefix, module in _COMPRESSED:
        if magic.startswith(prefix):
            opener = importlib.import_module(module).open
            handle: TextIO = opener(path, "rt", newline="", encoding="utf-8")
            return handle
    return path.open(newline="", encoding="utf-8")


def _short(message: str) -> str:
    return message.replace("Error tokenizing data. C error: ", "").strip()


class CsvRecords:
    """Where each CSV record starts and how many fields it has, read on first use.

    Records (not lines) because a quoted field may span lines. Record 0 is the header. Only
    error paths and rows pandas may have padded need this, so the fast path never pays for a
    second read of the file; a file without quotes or carriage returns (most machine-written
    CSV) is counted in numpy, one record per line, instead of by the csv module.
    """

    def __init__(self, content: Path | bytes, delimiter: str = ",") -> None:
        self.content = content
        self.delimiter = delimiter
        self._lines: np.ndarray | None = None
        self._fields: np.ndarray | None = None

    def record(self, number: int) -> tuple[int, int]:
        """``(first line, field count)`` of record ``number`` (0 = header)."""
        if self._lines is None or self._fields is None:
            plain = _plain_records(self.content, self.delimiter)
            self._lines, self._fields = plain or self._parsed()
        return int(self._lines[number]), int(self._fields[number])

    def _parsed(self) -> tuple[np.ndarray, np.ndarray]:
        handle: TextIO
        if isinstance(self.content, bytes):
            handle = io.StringIO(self.content.decode("utf-8"), newline="")
        else:
            handle = _open_text(self.content)
        with handle:
            reader = csv.reader(handle, delimiter=self.delimiter)
            lines, fields, start = [], [], 1
            for record in reader:
                lines.append(start)
                fields.append(len(record))
                start = reader.line_num + 1
        return np.array(lines, dtype=np.int64), np.array(fields, dtype=np.int64)


def _plain_records(
    content: Path | bytes, delimiter: str = ","
) -> tuple[np.ndarray, np.ndarray] | None:
    """First line and field count of each record of a CSV without quotes, carriage returns or
    NUL bytes (None for any other, or a compressed file): each line is a record with one field
    more than its ``delimiter`` s, a blank line none, as the csv module reads it."""
    if isinstance(content, bytes):
        raw = content
    else:
        with content.open("rb") as handle:
            raw = handle.read()
        if any(raw.startswith(magic) for magic, _ in _COMPRESSED):
            return None
    if b'"' in raw or b"\r" in raw or b"\0" in raw:
        return None
    data = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(data == ord("\n"))
    if len(data) and data[-1] != ord("\n"):
        ends = np.append(ends, len(data))  # the last line has no newline
    starts = np.concatenate(([0], ends[:-1] + 1))[: len(ends)]
    separators = np.flatnonzero(data == ord(delimiter))
    fields = np.searchsorted(separators, ends) - np.searchsorted(separators, starts) + 1
    fields[starts == ends] = 0  # a blank line is a record of no fields
    return np.arange(1, len(ends) + 1, dtype=np.int64), fields.astype(np.int64)


def read_frame(
    path: str | Path,
    contract: Contract | str,
    *,
    columns: Mapping[str, str] | None = None,
    missing: Literal["error", "drop"] = "error",
    disorder: Literal["error", "sort"] = "error",
    duplicates: Literal["error", "first"] = "error",
    time_unit: TimeUnit = "auto",
    tz: str = "UTC",
    since: datetime | str | None = None,
    until: datetime | str | None = None,
) -> pd.DataFrame:
    """Read ``path`` (CSV or Parquet; ``-`` for standard input) and normalise it to ``contract``.

    A metric file may be wide (see :func:`read_metric`). ``missing``, ``disorder``,
    ``duplicates``, ``time_unit``, ``tz``, ``since`` and ``until`` are
    :func:`perfsleuth.frames.normalise`'s. Errors name the file, the line (CSV) or row
    (Parquet), and the column.
    """
    spec = CONTRACTS[contract] if isinstance(contract, str) else contract
    if spec.name == "metric":
        return read_metric(
            path, columns=columns, missing=missing, disorder=disorder, duplicates=duplicates,
            time_unit=time_unit, tz=tz, since=since, until=until,
        )  # fmt: skip
    table, locate = read_table(path, columns=columns)
    return normalise(
        table,
        spec,
        source=input_name(path),
        locate=locate,
        aliases={target: source for source, target in (columns or {}).items()},
        missing=missing,
        disorder=disorder,
        duplicates=duplicates,
        time_unit=time_unit,
        tz=tz,
        since=since,
        until=until,
    )


def read_metric(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    values: Sequence[str] = (),
    time_column: str | None = None,
    entity: str | None = None,
    unit: str = "",
    missing: Literal["error", "drop"] = "error",
    disorder: Literal["error", "sort"] = "error",
    duplicates: Literal["error", "first"] = "error",
    time_unit: TimeUnit = "auto",
    tz: str = "UTC",
    since: datetime | str | None = None,
    until: datetime | str | None = None,
) -> pd.DataFrame:
    """A metric frame from a long file (the contract's columns) or a wide one.

    A **wide** file has a time column and one column per metric: each column of ``values``
    becomes the series ``(entity, column)``, ``entity`` defaulting to the file name without
    its suffix. Without ``values`` a file that lacks the contract's ``entity``, ``metric`` and
    ``value`` columns is read as wide when that is unambiguous: a time column and exactly one
    other column, a numeric one. ``time_column`` defaults to ``time``, else the one column
    named ``timestamp``, ``ts``, ``datetime``, ``date`` or ``year``; ``unit`` is the unit of a wide
    file's values. The other options are :func:`perfsleuth.frames.normalise`'s.
    """
    name = input_name(path)
    table, locate = read_table(path, columns=columns)
    absent = [c for c in (time_column, *values) if c is not None and c not in table.columns]
    if absent:
        raise DataError(
            f"{name}: no column(s) {', '.join(map(repr, absent))} (columns present: {_list(table)})"
        )
    explicit = bool(values) or time_column is not None
    if not explicit and set(METRIC.required) <= set(table.columns):
        found = None
    else:
        found = _wide_columns(name, table, values, time_column)
    if found is None and explicit:
        raise DataError(
            f"{name}: not a wide file: it needs a time column (time, timestamp, ts, datetime, "
            f"date or year, or name it with time_column) and numeric value columns (columns "
            f"present: {_list(table)})"
        )
    absent = [c for c in METRIC.required if c not in table.columns]
    if found is None and absent:  # neither a metric frame nor a wide file we can recognise
        raise DataError(
            f"{name}: metric frame is missing column(s) {', '.join(map(repr, absent))} "
            f"(columns present: {_list(table)}){_text_values(table, locate)}; to read it as a "
            "wide file, name its time column with --time-column (time_column in a config) and "
            f"its value columns with -c/--column (values){_values_alone(table)}"
        )
    if found is None:
        return normalise(
            table,
            "metric",
            source=name,
            locate=locate,
            aliases={target: source for source, target in (columns or {}).items()},
            missing=missing,
            disorder=disorder,
            duplicates=duplicates,
            time_unit=time_unit,
            tz=tz,
            since=since,
            until=until,
        )
    time_name, value_names = found
    written = {target: source for source, target in (columns or {}).items()}  # as in the file
    return pd.concat(
        [
            normalise(
                pd.DataFrame(
                    {
                        "time": table[time_name],
                        "entity": entity or _stem(path),
                        "metric": column,
                        "value": table[column],
                        "unit": unit,
                    }
                ),
                "metric",
                source=name,
                locate=locate,
                aliases={
                    "time": written.get(time_name, time_name),
                    "value": written.get(column, column),
                },
                missing=missing,
                disorder=disorder,
                duplicates=duplicates,
                time_unit=time_unit,
                tz=tz,
                since=since,
                until=until,
            )
            for column in value_names
        ],
        ignore_index=True,
    )


def _text_values(table: pd.DataFrame, locate: LineOf | None) -> str:
    """Why a file of a time column and one other column was not read as wide: that column's
    first value that is not a number (thousands separators, units), e.g. ``; its column
    'value' is not numeric: line 2 holds '10,386.5'``; empty for other files."""
    time_column = _time_column(table)
    others = [c for c in table.columns if c != time_column]
    if time_column is None or len(others) != 1:
        return ""
    text, filled, numbers = _cells(table[others[0]])
    bad = (filled & ~numbers).to_numpy()
    if not bad.any():
        return ""
    row = int(np.flatnonzero(bad)[0])
    line = locate(row) if locate is not None else None
    where = f"line {line}" if line is not None else f"row {row + 1}"
    return f"; its column {others[0]!r} is not numeric: {where} holds {text.iloc[row]!r}"


def _values_alone(table: pd.DataFrame) -> str:
    """What a file of numbers alone lacks (empty for other files): a time per reading."""
    if len(table.columns) == 0 or not all(_numeric(table[c]) for c in table.columns):
        return ""
    return (
        "; if it holds values alone, add a time to each reading (findings and the store are "
        "placed in time), or search the values in Python: "
        "perfsleuth.find_change_points(values)"
    )


def _list(table: pd.DataFrame) -> str:
    return ", ".join(map(str, table.columns)) or "none"


def _stem(path: str | Path) -> str:
    return "stdin" if is_stdin(path) else Path(path).stem


def _wide_columns(
    name: str, table: pd.DataFrame, values: Sequence[str], time_column: str | None
) -> tuple[str, list[str]] | None:
    """``(time column, value columns)`` of a wide file, or None when it is not one.

    Without ``values``, every column but the time column must be numeric and there must be
    exactly one (several would be a guess): a text column means a long file missing columns.
    """
    time_column = time_column or _time_column(table)
    if time_column is None:
        return None
    if values:
        return time_column, list(values)
    others = [str(c) for c in table.columns if c != time_column]
    numeric = [c for c in others if _numeric(table[c])]
    if len(numeric) != len(others) or not numeric:
        return None
    if len(numeric) > 1:
        raise DataError(
            f"{name}: a wide file with {len(numeric)} value columns ({', '.join(numeric)}): name "
            "those to read with values = [...] in a config, -c/--column on the command line"
        )
    return time_column, numeric


def _time_column(table: pd.DataFrame) -> str | None:
    """A file's time column when it is not named: ``time``, else its one column named like a
    time (:data:`_TIME_NAMES`)."""
    if "time" in table.columns:
        return "time"
    named = [c for c in table.columns if str(c).lower() in _TIME_NAMES]
    return str(named[0]) if len(named) == 1 else None


def _numeric(column: pd.Series) -> bool:
    """Mostly numbers (a few bad cells are the frame check's to report, with their line)."""
    if pd.api.types.is_bool_dtype(column):
        return False
    if pd.api.types.is_numeric_dtype(column):
        return True
    _, filled, numbers = _cells(column)
    return bool(filled.any()) and float(numbers[filled].mean()) > 0.5


def _cells(column: pd.Series) -> tuple[pd.Series, pd.Series, pd.Series]:
    """A column's cells as stripped text, which of them are filled, and which are numbers."""
    text = column.astype("string").str.strip()
    filled = (text.notna() & (text != "")).fillna(False).astype(bool)
    return text, filled, pd.to_numeric(text.where(filled), errors="coerce").notna()
