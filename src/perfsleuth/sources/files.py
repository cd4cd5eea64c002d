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

__all__ = ["read_frame", "read_table"]

_PANDAS_LINE = re.compile(r"line (\d+)")


def read_table(path: str | Path, *, columns: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet file as raw strings/values, without validating it.

    ``columns`` renames source columns to contract names (``{"ts": "time"}``).
    Raises :class:`SourceError` when the file cannot be read and :class:`DataError` when it is
    empty or a CSV row has the wrong number of fields.
    """
    path = Path(path)
    if not path.is_file():
        raise SourceError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix in {".parquet", ".pq"}:
        try:
            table = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a readable Parquet file: {exc}") from exc
    else:
        table = _read_csv(path)
    if columns:
        table = table.rename(columns=dict(columns))
    if table.empty:
        raise DataError(f"{path}: no data rows")
    return table


def _read_csv(path: Path) -> pd.DataFrame:
    if path.stat().st_size == 0:
        raise DataError(f"{path}: empty file (expected a header line and data rows)")
    try:
        return pd.read_csv(
            path,
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=False,
            on_bad_lines="error",
            encoding="utf-8",
        )
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: empty file (expected a header line and data rows)") from None
    except pd.errors.ParserError as exc:
        match = _PANDAS_LINE.search(str(exc))
        line = int(match.group(1)) if match else None
        raise DataError(
            located(f"malformed row: {_short(str(exc))}", source=str(path), line=line)
        ) from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text at byte {exc.start}") from None


def _short(message: str) -> str:
    return message.replace("Error tokenizing data. C error: ", "").strip()


class _LineIndex:
    """Row position -> first line of that record, computed on first use (errors only)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: list[int] | None = None

    def __call__(self, pos: int) -> int | None:
        if self._lines is None:
            with self.path.open(newline="", encoding="utf-8") as handle:
                reader = csv.reader(handle)
                lines: list[int] = []
                start = 1
                for number, _ in enumerate(reader):
                    if number > 0:  # the header is not a data row
                        lines.append(start)
                    start = reader.line_num + 1
            self._lines = lines
        return self._lines[pos] if 0 <= pos < len(self._lines) else None


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
    path = Path(path)
    table = read_table(path, columns=columns)
    locate: Locate | None = None  # row position -> line in the file
    if path.suffix.lower() not in {".parquet", ".pq"}:
        # pandas keeps blank lines as all-empty rows (skip_blank_lines=False) so row positions
        # match records in the file; drop them now, remembering where each kept row came from.
        blank = (table == "").all(axis=1).to_numpy()
        if blank.all():
            raise DataError(f"{path}: no data rows")
        kept = np.flatnonzero(~blank)
        table = table.iloc[kept].reset_index(drop=True)
        lines = _LineIndex(path)

        def locate(pos: int) -> int | None:
            return lines(int(kept[pos])) if 0 <= pos < len(kept) else None

    return normalise(
        table,
        contract,
        source=str(path),
        locate=locate,
        missing=missing,
        disorder=disorder,
        duplicates=duplicates,
    )
