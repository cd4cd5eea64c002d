"""Frames from files: CSV (with line-accurate errors) and Parquet.

Bytes in, frames out; all validation is :func:`perfsleuth.frames.normalise`'s job. Line numbers
are worked out only when an error needs one, so the fast path stays pandas' C parser.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from perfsleuth.errors import DataError, SourceError, located
from perfsleuth.frames import Contract, Locate, normalise

__all__ = ["CsvRecords", "read_frame", "read_table", "read_wide"]

_PANDAS_LINE = re.compile(r"line (\d+)")


def read_table(
    path: str | Path, *, columns: Mapping[str, str] | None = None
) -> tuple[pd.DataFrame, Locate | None]:
    """Read a CSV or Parquet file without validating its values.

    Returns the rows (CSV: every field a string, blank lines dropped) and a map from row
    position to line number in the file (``None`` for Parquet, whose errors name the row).
    ``columns`` renames source columns to contract names (``{"ts": "time"}``). Raises
    :class:`SourceError` when the file cannot be read and :class:`DataError` when it is empty,
    a CSV row has the wrong number of fields, or a header repeats a name.
    """
    path = Path(path)
    if not path.is_file():
        raise SourceError(f"{path}: no such file")
    locate: Locate | None = None
    if path.suffix.lower() in {".parquet", ".pq"}:
        try:
            table = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a readable Parquet file: {exc}") from exc
    else:
        table, locate = _read_csv(path)
    if columns:
        table = table.rename(columns=dict(columns))
    if table.empty:
        raise DataError(f"{path}: no data rows")
    return table, locate


def _read_csv(path: Path) -> tuple[pd.DataFrame, Locate]:
    empty = f"{path}: empty file (expected a header line and data rows)"
    if path.stat().st_size == 0:
        raise DataError(empty)
    try:
        # header=None: the header line sets the field count, so pandas reports every longer
        # row with its line (with a header it would silently turn one extra field into an index).
        raw = pd.read_csv(
            path,
            header=None,
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=False,
            on_bad_lines="error",
            encoding="utf-8",
        )
    except pd.errors.EmptyDataError:
        raise DataError(empty) from None
    except pd.errors.ParserError as exc:
        match = _PANDAS_LINE.search(str(exc))
        line = int(match.group(1)) if match else None
        raise DataError(
            located(f"malformed row: {_short(str(exc))}", source=str(path), line=line)
        ) from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text at byte {exc.start}") from None
    header = [str(name).strip() for name in raw.iloc[0]]
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise DataError(located(f"header repeats column(s) {repeated}", source=str(path), line=1))
    records = CsvRecords(path)
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
                    source=str(path),
                    line=line,
                )
            )
    kept = np.flatnonzero(~blank)
    table = table.iloc[kept].reset_index(drop=True)

    def locate(pos: int) -> int | None:
        return records.record(int(kept[pos]) + 1)[0] if 0 <= pos < len(kept) else None

    return table, locate


def _short(message: str) -> str:
    return message.replace("Error tokenizing data. C error: ", "").strip()


class CsvRecords:
    """Where each CSV record starts and how many fields it has, read on first use.

    Records (not lines) because a quoted field may span lines. Record 0 is the header. Only
    error paths need this, so the fast path never pays for a second read of the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._records: list[tuple[int, int]] | None = None

    def record(self, number: int) -> tuple[int, int]:
        """``(first line, field count)`` of record ``number`` (0 = header)."""
        if self._records is None:
            with self.path.open(newline="", encoding="utf-8") as handle:
                reader = csv.reader(handle)
                records, start = [], 1
                for fields in reader:
                    records.append((start, len(fields)))
                    start = reader.line_num + 1
            self._records = records
        return self._records[number]


def read_frame(
    path: str | Path,
    contract: Contract | str,
    *,
    columns: Mapping[str, str] | None = None,
    missing: Literal["error", "drop"] = "error",
    disorder: Literal["error", "sort"] = "error",
    duplicates: Literal["error", "first"] = "error",
) -> pd.DataFrame:
    """Read ``path`` (CSV or Parquet) and normalise it to ``contract``.

    Errors name the file, the line (CSV) or row (Parquet), and the column.
    """
    table, locate = read_table(path, columns=columns)
    return normalise(
        table,
        contract,
        source=str(Path(path)),
        locate=locate,
        aliases={target: source for source, target in (columns or {}).items()},
        missing=missing,
        disorder=disorder,
        duplicates=duplicates,
    )


def read_wide(
    path: str | Path,
    *,
    values: list[str],
    time_column: str = "time",
    entity: str | None = None,
    unit: str = "",
    missing: Literal["error", "drop"] = "error",
    disorder: Literal["error", "sort"] = "error",
    duplicates: Literal["error", "first"] = "error",
) -> pd.DataFrame:
    """A metric frame from a wide file: a time column and one column per metric.

    Each column of ``values`` becomes the series ``(entity, column)``; ``entity`` defaults to
    the file name without its suffix. Errors name the file, the line and the column.
    """
    path = Path(path)
    table, locate = read_table(path)
    absent = [c for c in (time_column, *values) if c not in table.columns]
    if absent:
        raise DataError(
            f"{path}: no column(s) {', '.join(map(repr, absent))} "
            f"(columns present: {', '.join(map(str, table.columns))})"
        )
    name = entity or path.stem
    return pd.concat(
        [
            normalise(
                pd.DataFrame(
                    {
                        "time": table[time_column],
                        "entity": name,
                        "metric": column,
                        "value": table[column],
                        "unit": unit,
                    }
                ),
                "metric",
                source=str(path),
                locate=locate,
                aliases={"time": time_column, "value": column},
                missing=missing,
                disorder=disorder,
                duplicates=duplicates,
            )
            for column in values
        ],
        ignore_index=True,
    )
