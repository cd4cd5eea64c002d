"""A user's wide counter CSV (a time column, one column per counter, named as the user's tool
names them) mapped onto a model's counters: ``perfsleuth bottleneck infer FILE --map
usr=cpu.user --map util=disk.busy`` or ``--map columns.toml``::

    time_column = "ts"          # optional: time, else timestamp, ts, datetime, date or year
    entity = "web-1"            # optional: the file's name
    [columns]
    usr = "cpu.user"
    util = "disk.busy"

Values must already be in the model's units (cores, bytes/s, operations/s, shares of time);
every target must be a counter or input of the model, and each column is mapped once.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from perfsleuth.errors import ConfigError
from perfsleuth.tomlfile import read_toml, validate

__all__ = ["ColumnMap", "check_columns", "column_map"]


class _MapFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    columns: dict[str, str] = Field(min_length=1)
    time_column: str | None = None
    entity: str | None = None


@dataclass(frozen=True)
class ColumnMap:
    """File column → model counter, and where the file keeps its time and entity."""

    columns: dict[str, str]
    time_column: str | None = None
    entity: str | None = None


def column_map(
    items: Sequence[str],
    known: Sequence[str],
    *,
    time_column: str | None = None,
    entity: str | None = None,
) -> ColumnMap:
    """The mapping ``--map`` gives (``COLUMN=COUNTER`` pairs and TOML files, in order), with
    every target checked against the model's counter and input names ``known``."""
    columns: dict[str, str] = {}
    for item in items:
        if "=" in item:
            column, _, counter = (part.strip() for part in item.partition("="))
            if not column or not counter:
                raise ConfigError(f"--map {item!r}: expected COLUMN=COUNTER, e.g. usr=cpu.user")
            pairs = {column: counter}
            where = f"--map {item!r}"
        else:
            document = read_toml(Path(item), what="column map")
            mapped = validate(_MapFile, document.data, source=document.source, locate=document.line)
            pairs = mapped.columns
            time_column = time_column or mapped.time_column
            entity = entity or mapped.entity
            where = f"{document.source}: columns"
        for column, counter in pairs.items():
            if counter not in known:
                raise ConfigError(
                    f"{where}: {counter!r} is not a counter of the model (one of "
                    f"{', '.join(sorted(known))})"
                )
            if column in columns and columns[column] != counter:
                raise ConfigError(
                    f"{where}: column {column!r} is already mapped to {columns[column]!r}"
                )
            columns[column] = counter
    targets = list(columns.values())
    twice = sorted({t for t in targets if targets.count(t) > 1})
    if twice:
        raise ConfigError(f"--map: more than one column mapped to {', '.join(twice)}")
    return ColumnMap(columns, time_column, entity)


def check_columns(path: Path, mapping: ColumnMap) -> None:
    """A plain CSV's header holds every mapped column (else an error naming the flag's
    column and the file's); other files are checked when they are read."""
    if path.suffix.lower() != ".csv" or not path.is_file():
        return
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError):
        return  # the reader says what is wrong with the file
    names = [name.strip() for name in header]
    missing = [column for column in mapping.columns if column not in names]
    if missing:
        raise ConfigError(
            f"--map: {path} has no column {', '.join(map(repr, missing))} "
            f"(its columns: {', '.join(names)})"
        )
